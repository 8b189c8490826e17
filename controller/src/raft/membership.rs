//! Dynamic voters (KIP-853): the one voter change a leader has in flight,
//! and how a voter change is answered.
//!
//! A change takes effect as soon as it is appended (the high watermark and
//! check-quorum use the new set at once) and is answered once it is
//! committed under that set, or with REQUEST_TIMED_OUT when its timeout
//! passes; a second change is refused while a `Voters` record is
//! uncommitted, whatever the timeouts. The voter-set history is in
//! [`super::voters`] (owned by the core), the requests (AddRaftVoter,
//! RemoveRaftVoter, UpdateRaftVoter) in `voter_change.rs`, the pending
//! change in the leader's state. A leaf: imports `core` and `output` only.
//! Must not decide elections: only which set is current.

use kafka_protocol::{
    ResponseError,
    messages::{
        AddRaftVoterResponse, RemoveRaftVoterResponse, UpdateRaftVoterResponse,
        update_raft_voter_response,
    },
    protocol::StrBytes,
};

use super::{
    RaftResponse, ReplyHandle, RequestId,
    core::{EpochView, error_code},
    output::Output,
    voters::Voter,
};

/// The name of the feature ApiVersions reports for the KRaft protocol version.
pub const KRAFT_VERSION_FEATURE: &str = "kraft.version";

/// Which RPC a pending change answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Add,
    Remove,
    Update,
}

#[derive(Debug, Clone)]
pub(crate) enum ChangeStage {
    /// AddRaftVoter: waiting for the new voter's ApiVersions.
    AwaitingApiVersions {
        voter: Voter,
        attempt: ApiVersionsAttempt,
    },
    /// The `Voters` record at `offset` must commit.
    AwaitingCommit { offset: i64 },
}

/// Where the ApiVersions of a voter being added stands. A request that
/// fails (no connection yet, a connection to the pod that was there before,
/// a timeout) is sent again after a backoff, until the AddRaftVoter's own
/// deadline: a re-created pod is reached as soon as it answers, instead of
/// the whole change failing on one lost request (Kafka's `AddVoterHandler`
/// waits for the answer within the request's timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ApiVersionsAttempt {
    /// The request in flight; `None` while waiting for `retry_at_ms`.
    pub(crate) request: Option<RequestId>,
    /// When the next request goes out while none is in flight, ms.
    pub(crate) retry_at_ms: u64,
    /// The wait before the next request should this one fail, ms.
    pub(crate) backoff_ms: u64,
    /// When the request in flight (or the last one) was sent, ms.
    pub(crate) sent_at_ms: u64,
    /// When the first request answered since the last failure was sent, ms.
    /// The node that answers may be a new incarnation of the id (a wiped
    /// volume, another directory id) while the key being added is the old
    /// one: only a fetch under the voter's key that reached the log end at
    /// or after this time shows the key itself is alive. A fixed point, so
    /// that a replica fetching once a second is not missed by requests
    /// answered just before each of its fetches.
    pub(crate) answered_since_ms: Option<u64>,
}

/// Longest wait between two ApiVersions to a voter being added, ms (Kafka's
/// `reconnect.backoff.max.ms` default, the cap of a peer's reconnect backoff).
pub(crate) const API_VERSIONS_BACKOFF_MAX_MS: u64 = 1_000;

/// The one voter change a leader has in flight.
#[derive(Debug, Clone)]
pub(crate) struct PendingChange {
    pub(crate) kind: ChangeKind,
    pub(crate) handle: ReplyHandle,
    pub(crate) deadline_ms: u64,
    pub(crate) stage: ChangeStage,
    /// KIP-1186 `AckWhenCommitted` of an AddRaftVoter (true for v0 and for
    /// the other changes): false answers the request as soon as the
    /// `Voters` record is appended (Kafka 4.4.0's
    /// `AddVoterHandler.handleApiVersionsResponse`), true once it commits.
    pub(crate) ack_when_committed: bool,
    /// The request was answered already (AckWhenCommitted false, at the
    /// append); the change stays pending until it commits or times out,
    /// so that no other change starts before, and nothing answers again.
    pub(crate) answered: bool,
}

impl PendingChange {
    /// When the leader must look at this change again: its deadline, or
    /// the next ApiVersions if one is due earlier (ms).
    pub(crate) fn wake_ms(&self) -> u64 {
        match self.stage {
            ChangeStage::AwaitingApiVersions {
                attempt:
                    ApiVersionsAttempt {
                        request: None,
                        retry_at_ms,
                        ..
                    },
                ..
            } => retry_at_ms.min(self.deadline_ms),
            _ => self.deadline_ms,
        }
    }
}

/// Answers voter change `kind` on `handle` with `error` (none: success) and
/// `text`, in the epoch of `view`.
pub(crate) fn reply_voter_change(
    out: &mut Output,
    view: &EpochView,
    kind: ChangeKind,
    handle: ReplyHandle,
    error: Option<ResponseError>,
    text: Option<&str>,
) {
    let code = error.map_or(0, error_code);
    let text = text.map(|t| StrBytes::from_string(t.to_owned()));
    let response = match kind {
        ChangeKind::Add => RaftResponse::AddRaftVoter(
            AddRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(text),
        ),
        ChangeKind::Remove => RaftResponse::RemoveRaftVoter(
            RemoveRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(text),
        ),
        ChangeKind::Update => {
            let mut leader = update_raft_voter_response::CurrentLeader::default()
                .with_leader_id(view.leader_id.unwrap_or(-1).into())
                .with_leader_epoch(view.epoch);
            if let Some((_, e)) = view.leader_endpoint.clone() {
                leader = leader.with_host(e.host.into()).with_port(i32::from(e.port));
            }
            RaftResponse::UpdateRaftVoter(
                UpdateRaftVoterResponse::default()
                    .with_error_code(code)
                    .with_current_leader(leader),
            )
        }
    };
    out.reply(handle, response);
}
