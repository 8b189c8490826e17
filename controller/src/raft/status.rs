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
    /// The high watermark, once known (on a follower: the leader's, capped
    /// at this node's log end, as Kafka's `FollowerState` keeps it).
    pub high_watermark: Option<i64>,
    /// Follower or observer: the high watermark its leader last sent, not
    /// capped; `None` elsewhere or before the leader knows one.
    pub leader_high_watermark: Option<i64>,
    /// Follower or observer: when a Fetch answer last showed it caught up
    /// (engine time, ms; see `caught_up`).
    pub last_caught_up_ms: Option<u64>,
    /// Whether this node is caught up with the leader of its epoch: a leader
    /// always; a follower or observer when, within
    /// `controller.quorum.fetch.timeout.ms`, a Fetch answer of the leader
    /// showed its log end at the leader's high watermark (or the leader had
    /// nothing past it) and its flushed log reaches that high watermark. The
    /// follower's side of what Kafka's leader reports as DescribeQuorum's
    /// `lastCaughtUpTimestamp`; never judged from the node's own log alone.
    pub caught_up: bool,
    /// Follower or observer that is `caught_up`: until when (engine time,
    /// ms) that holds without a newer Fetch answer, `last_caught_up_ms` plus
    /// the fetch timeout. Whoever reads a status later than it was taken (a
    /// paused or stalled process) judges with it, not with `caught_up`.
    pub caught_up_until_ms: Option<u64>,
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
