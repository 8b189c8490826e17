//! A read-only snapshot of the engine for DescribeQuorum, metrics and
//! `/readyz`. Owns no logic beyond shaping the values.

use super::{Role, voters::ReplicaKey};

/// What one replica is known to have, as the leader tracks it (Kafka's
/// `LeaderState.ReplicaState`, DescribeQuorum's `ReplicaState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaStatus {
    /// Node id and directory id.
    pub key: ReplicaKey,
    /// The replica's log end offset as last reported by its Fetch (flushed);
    /// `None` if it has not fetched in this epoch.
    pub log_end_offset: Option<i64>,
    /// When it last fetched (engine time, ms).
    pub last_fetch_ms: Option<u64>,
    /// When it last fetched at or past the leader's log end offset (ms).
    pub last_caught_up_ms: Option<u64>,
}

/// A snapshot of the engine's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftStatus {
    /// This node's id.
    pub node_id: i32,
    /// Current role.
    pub role: Role,
    /// Current epoch.
    pub epoch: i32,
    /// Known leader of the epoch.
    pub leader_id: Option<i32>,
    /// Whom this node voted for in the epoch.
    pub voted_key: Option<ReplicaKey>,
    /// The high watermark, once known.
    pub high_watermark: Option<i64>,
    /// The log end offset.
    pub log_end_offset: i64,
    /// Offset below which the log is flushed.
    pub flushed_end_offset: i64,
    /// Whether this node is in the voter set.
    pub is_voter: bool,
    /// The finalized kraft.version (0: static voters; 1: KIP-853 voters in the log).
    pub kraft_version: i16,
    /// Whether this node's log holds a `Voters` record above its high
    /// watermark (a voter change not yet committed; Kafka's
    /// `uncommitted-voter-change` metric).
    pub uncommitted_voter_change: bool,
    /// The voters; with fetch state when this node leads.
    pub voters: Vec<ReplicaStatus>,
    /// Observers the leader has heard from (empty on other nodes).
    pub observers: Vec<ReplicaStatus>,
}
