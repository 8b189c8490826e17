//! Configuration of the Raft engine: identity, the initial voters and the
//! timings, with Apache Kafka's defaults (`QuorumConfig` / `controller.quorum.*`).
//!
//! Owns only values; it must not read files or the environment (the CLI and
//! the server build a [`RaftConfig`] from `controller.properties`).

use uuid::Uuid;

use super::voters::{Endpoint, VoterSet};
use crate::log::RetentionConfig;

/// Kafka's `controller.quorum.election.timeout.ms` default (ms).
pub const DEFAULT_ELECTION_TIMEOUT_MS: u64 = 1_000;
/// Kafka's `controller.quorum.fetch.timeout.ms` default (ms).
pub const DEFAULT_FETCH_TIMEOUT_MS: u64 = 2_000;
/// Kafka's `controller.quorum.request.timeout.ms` default (ms).
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 2_000;
/// Kafka's `controller.quorum.retry.backoff.ms` default (ms).
pub const DEFAULT_RETRY_BACKOFF_MS: u64 = 20;
/// Kafka's `controller.quorum.append.linger.ms` default (ms).
pub const DEFAULT_APPEND_LINGER_MS: u64 = 25;
/// Kafka's `KafkaRaftClient` fetch long-poll (`fetchMaxWaitMs`, ms).
pub const DEFAULT_FETCH_MAX_WAIT_MS: u64 = 500;
/// Kafka's `KafkaRaftClient.MAX_BATCH_SIZE_BYTES` and `MAX_FETCH_SIZE_BYTES` (8 MiB).
pub const DEFAULT_MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Kafka's `RaftMetadataLogCleanerManager` period: how often the log is
/// checked against its retention (ms).
pub const DEFAULT_LOG_CLEAN_INTERVAL_MS: u64 = 60_000;

/// Everything the engine needs to know at start besides the log and the
/// persisted election state.
#[derive(Debug, Clone)]
pub struct RaftConfig {
    /// This node's `node.id`.
    pub node_id: i32,
    /// This node's `directory.id` from `meta.properties` (KIP-853); `None` for
    /// a node without one (kraft.version 0 tests).
    pub directory_id: Option<Uuid>,
    /// The `cluster.id` sent in and checked on every Raft request
    /// (INCONSISTENT_CLUSTER_ID on a mismatch). `None` skips the check, as
    /// Kafka does for requests without one.
    pub cluster_id: Option<String>,
    /// The voter set this node starts with: the static
    /// `controller.quorum.voters`, or the one of the 0-0 bootstrap checkpoint
    /// (kraft.version 1). Empty for a node that knows only bootstrap servers.
    pub voters: VoterSet,
    /// The kraft.version the node starts with: 0 when `voters` is the static
    /// `controller.quorum.voters`; 1 when it comes from the 0-0 bootstrap
    /// checkpoint (the first leader then writes KRaftVersion and Voters into
    /// the log) or when the node was formatted `--no-initial-controllers`
    /// (empty `voters`: it learns them from the log as an observer).
    pub kraft_version: i16,
    /// `controller.quorum.bootstrap.servers`: where an observer (or a node
    /// without a known leader) sends Fetch to discover the leader. Given
    /// negative ids -1, -2, … in order, as Kafka's `RequestManager` does.
    pub bootstrap_servers: Vec<Endpoint>,
    /// Election timeout T (ms): randomised in `[T, 2T)` for each election.
    pub election_timeout_ms: u64,
    /// Fetch timeout F (ms): a follower that has not fetched from its leader
    /// successfully for F plus a jitter in `[0, F / 10)` becomes Prospective
    /// (the jitter is ours, decisions D20); it grants pre-votes once F has
    /// passed; a leader resigns when a majority has not fetched within
    /// 1.5 × F (check-quorum).
    pub fetch_timeout_ms: u64,
    /// Timeout of a request this engine sends (ms), passed to the runtime.
    pub request_timeout_ms: u64,
    /// Backoff before resending a failed request (ms).
    pub retry_backoff_ms: u64,
    /// How long the leader waits after an append before flushing (ms), so that
    /// proposals close together share one fsync (Kafka's append linger).
    pub append_linger_ms: u64,
    /// How long the leader parks a Fetch with no new data (ms; Kafka's
    /// `fetchMaxWaitMs`); the engine also caps the request's `max_wait_ms` at it.
    pub fetch_max_wait_ms: u64,
    /// Largest batch a proposal may produce (bytes).
    pub max_batch_bytes: usize,
    /// Largest number of record bytes in one Fetch response (bytes).
    pub max_fetch_bytes: usize,
    /// Largest chunk of a snapshot one FetchSnapshot asks for and the leader
    /// returns (bytes; Kafka 4.1 sends `MAX_FETCH_SIZE_BYTES`, 8 MiB).
    pub max_fetch_snapshot_bytes: usize,
    /// `metadata.max.retention.bytes` / `metadata.max.retention.ms`: how much
    /// of the log and its snapshots to keep (KIP-630 cleaning).
    pub retention: RetentionConfig,
    /// How often the engine checks the log against `retention` (ms).
    pub log_clean_interval_ms: u64,
}

impl RaftConfig {
    /// A configuration with Kafka's default timings.
    pub fn new(node_id: i32, voters: VoterSet) -> Self {
        Self {
            node_id,
            directory_id: None,
            cluster_id: None,
            voters,
            kraft_version: 0,
            bootstrap_servers: Vec::new(),
            election_timeout_ms: DEFAULT_ELECTION_TIMEOUT_MS,
            fetch_timeout_ms: DEFAULT_FETCH_TIMEOUT_MS,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            retry_backoff_ms: DEFAULT_RETRY_BACKOFF_MS,
            append_linger_ms: DEFAULT_APPEND_LINGER_MS,
            fetch_max_wait_ms: DEFAULT_FETCH_MAX_WAIT_MS,
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
            max_fetch_bytes: DEFAULT_MAX_BATCH_BYTES,
            max_fetch_snapshot_bytes: DEFAULT_MAX_BATCH_BYTES,
            retention: RetentionConfig::default(),
            log_clean_interval_ms: DEFAULT_LOG_CLEAN_INTERVAL_MS,
        }
    }

    /// Check-quorum window (ms): 1.5 × the fetch timeout.
    pub fn check_quorum_timeout_ms(&self) -> u64 {
        self.fetch_timeout_ms * 3 / 2
    }

    /// How often the leader re-sends BeginQuorumEpoch to voters that have not
    /// fetched (ms): half the fetch timeout, as Kafka's `LeaderState`.
    pub fn begin_quorum_epoch_interval_ms(&self) -> u64 {
        (self.fetch_timeout_ms / 2).max(1)
    }
}
