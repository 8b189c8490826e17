//! The KRaft consensus engine (KIP-595 Raft with KIP-996 pre-vote, as Apache
//! Kafka 4.1's `KafkaRaftClient` runs it), sans-IO.
//!
//! Owns every consensus decision: elections, replication through Fetch, the
//! high watermark, check-quorum, leader resignation. It owns the
//! [`ReplicatedLog`](crate::log::ReplicatedLog) and reads, appends and
//! truncates it through the trait. It must not do I/O of its own, read a
//! clock, sleep, or draw randomness other than from the injected RNG: the
//! runtime feeds it [`Event`]s with the current time (ms) and executes the
//! [`Command`]s it returns.
//!
//! # Contract with the runtime
//!
//! - [`RaftEngine::handle`] returns commands **in execution order**. The
//!   runtime executes them one after the other; a
//!   [`Command::PersistElectionState`] must be durable (temp file, fsync,
//!   rename, directory fsync) before the next command is executed, because the
//!   commands after it (a granted vote, a BeginQuorumEpoch) depend on it.
//! - [`Command::Flush`] asks the runtime to feed [`Event::Flush`] soon (it may
//!   coalesce several, and do other work first). The engine fsyncs the log
//!   through the trait while handling that event: appends are durable only
//!   after it. Or the runtime runs the fsyncs off its thread: it takes a job
//!   with [`RaftEngine::start_flush`], runs it, and hands the result to
//!   [`RaftEngine::finish_flush`], feeding other events meanwhile; the
//!   flushed end offset moves only then. A follower reports (fetches from)
//!   only flushed offsets, and asks for a flush first if its log has
//!   unflushed ones; the leader counts only its own flushed offset towards
//!   the high watermark.
//! - [`Command::Send`] carries a [`RequestId`]; the runtime answers it with
//!   exactly one [`Event::Response`] or [`Event::RequestFailed`] (after at most
//!   `timeout_ms`), or with nothing if the node restarted in between.
//! - An inbound request comes with an opaque [`ReplyHandle`]; the engine
//!   answers it with one [`Command::Reply`], at once or later (Fetch long
//!   polls are parked up to `fetch_max_wait_ms`).
//! - The runtime calls [`RaftEngine::handle`] with [`Event::Tick`] at
//!   [`RaftEngine::next_deadline_ms`] (or later).
//! - Any `Err` from the engine is fatal (the log failed): the runtime stops.
//!
//! The role-specific logic is in one file per role (`unattached.rs`,
//! `prospective.rs`, `candidate.rs`, `follower.rs`, `leader.rs`,
//! `resigned.rs`), as methods of the role's state over two leaves: `core.rs`
//! (the shared state: config, identity, log, voter history, high watermark,
//! kraft.version) and `output.rs` (commands, inflight requests, ids).
//! Requests are served by handler structs: `requests.rs` (Vote,
//! BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum), `fetch.rs`,
//! `fetch_snapshot.rs` (KIP-630) and `voter_change.rs` (KIP-853, with the
//! pending change in [`membership`]). `engine.rs` dispatches events and
//! performs the transitions the roles ask for; the legal transitions are
//! listed in [`quorum_state`].
//! The design and its decisions are in `docs/raft.md`.

mod candidate;
pub mod config;
mod core;
mod engine;
mod fetch;
mod fetch_snapshot;
mod follower;
mod leader;
pub mod listener;
pub mod membership;
mod output;
mod prospective;
pub mod quorum_state;
mod requests;
mod resigned;
mod status;
mod unattached;
mod voter_change;
pub mod voters;

use bytes::Bytes;
pub use config::RaftConfig;
pub use engine::{KRAFT_VERSION_MAX, KRaftUpgrade, KRaftUpgradeError, RaftEngine};
use kafka_protocol::messages::{
    AddRaftVoterResponse, ApiVersionsRequest, ApiVersionsResponse, BeginQuorumEpochRequest,
    BeginQuorumEpochResponse, DescribeQuorumRequest, DescribeQuorumResponse, EndQuorumEpochRequest,
    EndQuorumEpochResponse, FetchRequest, FetchResponse, FetchSnapshotRequest,
    FetchSnapshotResponse, RemoveRaftVoterRequest, RemoveRaftVoterResponse, UpdateRaftVoterRequest,
    UpdateRaftVoterResponse, VoteRequest, VoteResponse,
};
pub use quorum_state::{ElectionState, Role, TransitionError};
pub use status::{RaftStatus, ReplicaStatus};
pub use voters::{Endpoint, ReplicaKey, Voter, VoterSet};

use crate::{
    log::{LogError, OffsetAndEpoch},
    record::RecordError,
};

/// The metadata topic's name (`__cluster_metadata`), as Raft requests carry it.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
/// The metadata partition (0).
pub const METADATA_PARTITION: i32 = 0;

/// Identifies a request the engine sent, so that the runtime can route the
/// response (or the failure) back. Unique for the lifetime of an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// Opaque handle of an inbound request, chosen by the runtime (typically the
/// connection and correlation id); given back in [`Command::Reply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplyHandle(pub u64);

/// Where to send a request: a node id and, when known, its endpoint. Voters
/// come with the endpoint of the voter set; bootstrap servers have negative
/// ids (-1, -2, …, in `controller.quorum.bootstrap.servers` order) as in
/// Kafka's `RequestManager`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    /// Node id (negative for a bootstrap server).
    pub node_id: i32,
    /// Its endpoint, if known (else the runtime uses its own address book).
    pub endpoint: Option<Endpoint>,
}

/// A request of the Raft and quorum APIs, as a `kafka-protocol` message.
#[derive(Debug, Clone, PartialEq)]
pub enum RaftRequest {
    /// Vote (52); `pre_vote` set for KIP-996 pre-votes (v2+).
    Vote(VoteRequest),
    /// BeginQuorumEpoch (53).
    BeginQuorumEpoch(BeginQuorumEpochRequest),
    /// EndQuorumEpoch (54).
    EndQuorumEpoch(EndQuorumEpochRequest),
    /// Fetch (1) on `__cluster_metadata-0`.
    Fetch(FetchRequest),
    /// FetchSnapshot (59).
    FetchSnapshot(FetchSnapshotRequest),
    /// DescribeQuorum (55).
    DescribeQuorum(DescribeQuorumRequest),
    /// AddRaftVoter (80, v0-1): `kafka-protocol`'s v0 fields and KIP-1186's
    /// `AckWhenCommitted` (true at v0).
    AddRaftVoter(crate::wire::own_messages::AddRaftVoterRequestV1),
    /// RemoveRaftVoter (81).
    RemoveRaftVoter(RemoveRaftVoterRequest),
    /// UpdateRaftVoter (82).
    UpdateRaftVoter(UpdateRaftVoterRequest),
    /// ApiVersions (18): sent by the leader to a voter being added, to learn
    /// its kraft.version range.
    ApiVersions(ApiVersionsRequest),
}

/// A response of the Raft and quorum APIs, as a `kafka-protocol` message.
#[derive(Debug, Clone, PartialEq)]
pub enum RaftResponse {
    /// Vote (52).
    Vote(VoteResponse),
    /// BeginQuorumEpoch (53).
    BeginQuorumEpoch(BeginQuorumEpochResponse),
    /// EndQuorumEpoch (54).
    EndQuorumEpoch(EndQuorumEpochResponse),
    /// Fetch (1).
    Fetch(FetchResponse),
    /// FetchSnapshot (59).
    FetchSnapshot(FetchSnapshotResponse),
    /// DescribeQuorum (55).
    DescribeQuorum(DescribeQuorumResponse),
    /// AddRaftVoter (80).
    AddRaftVoter(AddRaftVoterResponse),
    /// RemoveRaftVoter (81).
    RemoveRaftVoter(RemoveRaftVoterResponse),
    /// UpdateRaftVoter (82).
    UpdateRaftVoter(UpdateRaftVoterResponse),
    /// ApiVersions (18).
    ApiVersions(ApiVersionsResponse),
}

/// Why an outbound request got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFailure {
    /// No response within the request's `timeout_ms`.
    Timeout,
    /// The connection could not be made or was lost.
    Disconnected,
    /// The peer does not support the API at a version the runtime can speak.
    UnsupportedVersion,
}

/// An input to the engine. Every event comes with the current time (ms, a
/// monotonic clock of the runtime's choosing) through [`RaftEngine::handle`].
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// An inbound request and the api version it was sent at.
    Request {
        /// Handle to give back in [`Command::Reply`].
        handle: ReplyHandle,
        /// The request's api version (after negotiation).
        api_version: i16,
        /// The request.
        request: RaftRequest,
    },
    /// The response to a [`Command::Send`].
    Response {
        /// The id of the send.
        id: RequestId,
        /// The response.
        response: RaftResponse,
    },
    /// A [`Command::Send`] that failed or timed out.
    RequestFailed {
        /// The id of the send.
        id: RequestId,
        /// Why.
        failure: RequestFailure,
    },
    /// A timer tick; due at [`RaftEngine::next_deadline_ms`].
    Tick,
    /// The runtime's answer to [`Command::Flush`]: the engine fsyncs the log
    /// now (or see [`RaftEngine::start_flush`] for fsyncs off the runtime's
    /// thread).
    Flush,
    /// Graceful shutdown: a leader resigns and sends EndQuorumEpoch to the
    /// voters; the engine emits [`Command::ShutdownComplete`] when done or when
    /// `timeout_ms` passed.
    Shutdown {
        /// Longest time to wait for the hand-over (ms).
        timeout_ms: u64,
    },
}

/// An output of the engine, to be executed in order (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Send a request; answer it with [`Event::Response`] or
    /// [`Event::RequestFailed`] carrying `id`.
    Send {
        /// Correlates the answer.
        id: RequestId,
        /// Where to.
        destination: Destination,
        /// What.
        request: RaftRequest,
        /// Give up (and feed [`RequestFailure::Timeout`]) after this long (ms).
        timeout_ms: u64,
    },
    /// Answer an inbound request.
    Reply {
        /// The handle from [`Event::Request`].
        handle: ReplyHandle,
        /// The response, to be encoded at the request's api version.
        response: RaftResponse,
    },
    /// Write the election state durably before executing the next command.
    PersistElectionState(ElectionState),
    /// Feed [`Event::Flush`] soon, or run a flush job
    /// ([`RaftEngine::start_flush`], [`RaftEngine::finish_flush`]): the log
    /// has unflushed appends.
    Flush,
    /// The high watermark advanced: records below `high_watermark` are
    /// committed and may be read ([`RaftEngine::read_committed`]) and applied
    /// by the state machine above. Never decreases within one engine lifetime.
    Committed {
        /// New high watermark (exclusive end offset of committed records).
        high_watermark: i64,
    },
    /// The role, epoch or known leader changed (for the state machine above,
    /// metrics and readiness).
    RoleChanged {
        /// New role.
        role: Role,
        /// Epoch.
        epoch: i32,
        /// Known leader of the epoch.
        leader_id: Option<i32>,
    },
    /// A snapshot fetched from the leader (KIP-630 FetchSnapshot) was
    /// installed: the log now starts at `snapshot_id.offset` and holds
    /// nothing below it. The state machine above must reload its state from
    /// this snapshot (read it with [`RaftEngine::read_snapshot`]) before it
    /// applies the next [`Command::Committed`], which follows at once.
    SnapshotInstalled {
        /// The snapshot's id (end offset, epoch).
        snapshot_id: OffsetAndEpoch,
    },
    /// The graceful shutdown finished; the runtime may exit.
    ShutdownComplete,
}

/// What a successful [`RaftEngine::propose`] appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proposed {
    /// Offset of the last record appended; committed once the high watermark
    /// passes it and the epoch did not change.
    pub last_offset: i64,
    /// The leader epoch the records were appended in.
    pub epoch: i32,
}

/// Errors of the engine. [`RaftError::Log`] and [`RaftError::Record`] are
/// fatal for the runtime; the others answer one call.
#[derive(Debug, thiserror::Error)]
pub enum RaftError {
    /// The log failed an append, read, truncation or flush.
    #[error("metadata log: {0}")]
    Log(#[from] LogError),
    /// A control record could not be built or read.
    #[error("control record: {0}")]
    Record(#[from] RecordError),
    /// A snapshot of the log (`<offset>-<epoch>.checkpoint` in the partition
    /// directory) does not decode: the node stops rather than start without
    /// the voter set it holds.
    #[error(
        "snapshot {file} of the metadata log is damaged: {reason} (byte positions are within that file); restore it from a backup, or remove this node's metadata log directory, format it again and add the node back as a new voter"
    )]
    DamagedSnapshot {
        /// The snapshot's file name.
        file: String,
        /// What is wrong, with the byte position in the file.
        reason: String,
    },
    /// An internal transition the state table does not allow (a bug).
    #[error(transparent)]
    Transition(#[from] TransitionError),
    /// A truncation below the high watermark was asked: committed data would
    /// be lost (Kafka treats this as fatal too).
    #[error("refusing to truncate to offset {offset} below the high watermark {high_watermark}")]
    TruncateBelowHighWatermark {
        /// Requested truncation offset.
        offset: i64,
        /// Current high watermark.
        high_watermark: i64,
    },
    /// A proposal on a node that is not the leader.
    #[error("not the leader (epoch {epoch}, leader {leader_id:?}): send proposals to the leader")]
    NotLeader {
        /// Current epoch.
        epoch: i32,
        /// Known leader, if any.
        leader_id: Option<i32>,
    },
    /// A snapshot of the state machine above the high watermark: its
    /// records are not all committed.
    #[error(
        "refusing a snapshot ending at offset {offset} above the high watermark {high_watermark}: snapshot committed state only"
    )]
    SnapshotNotCommitted {
        /// The snapshot's end offset.
        offset: i64,
        /// Current high watermark.
        high_watermark: i64,
    },
    /// A proposal larger than `max_batch_bytes` or with no record.
    #[error(
        "proposal of {records} records and {bytes} bytes is empty or above max_batch_bytes {max}"
    )]
    InvalidProposal {
        /// Number of records.
        records: usize,
        /// Total value bytes.
        bytes: usize,
        /// The configured limit.
        max: usize,
    },
}

/// Result alias of this module.
pub type Result<T, E = RaftError> = std::result::Result<T, E>;

/// The last (offset, epoch) a log ends at: used by vote up-to-date checks.
pub(crate) fn log_is_up_to_date(candidate: OffsetAndEpoch, local: OffsetAndEpoch) -> bool {
    (candidate.epoch, candidate.offset) >= (local.epoch, local.offset)
}

/// Values of `records` as one proposal's bytes (for size checks).
pub(crate) fn proposal_bytes(records: &[Bytes]) -> usize {
    records.iter().map(Bytes::len).sum()
}

#[cfg(test)]
mod tests;
