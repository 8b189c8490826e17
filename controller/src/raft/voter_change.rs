//! The voter-change requests (KIP-853), as Kafka's `AddVoterHandler`,
//! `RemoveVoterHandler` and `UpdateVoterHandler`: AddRaftVoter (with the new
//! voter's ApiVersions), RemoveRaftVoter and UpdateRaftVoter, validated in
//! Kafka 4.1's order. A [`VoterChangeHandler`] borrows the core, the output,
//! the epoch's view and, on a leader, the leader state (which appends the
//! `Voters` record and holds the pending change). Imports the leaves and the
//! leader state only. Must not decide elections: only which set is current.

use kafka_protocol::{
    ResponseError,
    messages::{
        ApiVersionsRequest, ApiVersionsResponse, RemoveRaftVoterRequest, UpdateRaftVoterRequest,
    },
    protocol::StrBytes,
};

use super::{
    Destination, RaftRequest, ReplyHandle, RequestId, Result,
    core::{Core, EpochView},
    leader::LeaderState,
    membership::{
        API_VERSIONS_BACKOFF_MAX_MS, ApiVersionsAttempt, ChangeKind, ChangeStage,
        KRAFT_VERSION_FEATURE, PendingChange, reply_voter_change,
    },
    output::{Output, RequestKind},
    voters::{Endpoint, ReplicaKey, Voter},
};
use crate::{log::ReplicatedLog, wire::own_messages::AddRaftVoterRequestV1};

/// One voter-change request being handled (see the module doc); `leader` is
/// `None` on any other role.
pub(crate) struct VoterChangeHandler<'a, L: ReplicatedLog> {
    pub(crate) core: &'a mut Core<L>,
    pub(crate) out: &'a mut Output,
    pub(crate) view: &'a EpochView,
    pub(crate) leader: Option<&'a mut LeaderState>,
}

impl<L: ReplicatedLog> VoterChangeHandler<'_, L> {
    fn reply(
        &mut self,
        kind: ChangeKind,
        handle: ReplyHandle,
        error: Option<ResponseError>,
        text: Option<&str>,
    ) {
        reply_voter_change(self.out, self.view, kind, handle, error, text);
    }

    /// The checks every voter change shares, in Kafka 4.1's order.
    fn precheck(&self) -> Option<(ResponseError, &'static str)> {
        let Some(leader) = self.leader.as_deref() else {
            return Some((ResponseError::NotLeaderOrFollower, "not the leader"));
        };
        if self.core.kraft_version < 1 {
            return Some((
                ResponseError::UnsupportedVersion,
                "kraft.version is 0: voters are static (controller.quorum.voters)",
            ));
        }
        let Some(hw) = self.core.high_watermark else {
            return Some((
                ResponseError::RequestTimedOut,
                "the leader has no high watermark yet; retry",
            ));
        };
        if leader.pending_change.is_some() {
            return Some((
                ResponseError::RequestTimedOut,
                "another voter change is in progress; retry",
            ));
        }
        if self
            .core
            .voter_history()
            .latest_offset()
            .is_some_and(|o| o >= hw)
        {
            return Some((
                ResponseError::RequestTimedOut,
                "the last voter change is not committed yet; retry",
            ));
        }
        None
    }

    /// Whether `key` (id and directory id) reached the leader's log end
    /// within `controller.quorum.fetch.timeout.ms` (Kafka's
    /// `LeaderState.isReplicaCaughtUp`).
    fn is_caught_up(&self, key: &ReplicaKey, now_ms: u64) -> bool {
        let window = self.core.config.fetch_timeout_ms;
        self.leader
            .as_deref()
            .is_some_and(|l| l.is_caught_up(key, now_ms, window))
    }

    /// Whether `key` reached the leader's log end at or after `since_ms`.
    fn caught_up_since(&self, key: &ReplicaKey, since_ms: u64) -> bool {
        self.leader
            .as_deref()
            .is_some_and(|l| l.caught_up_since(key, since_ms))
    }

    /// Sets the leader's pending change.
    fn pending(&mut self, change: PendingChange) {
        if let Some(leader) = self.leader.as_deref_mut() {
            leader.pending_change = Some(change);
        }
    }

    /// Appends `next` as leader (see [`LeaderState::append_voters`]).
    fn append_voters(&mut self, next: super::VoterSet, now_ms: u64) -> Result<Option<i64>> {
        match self.leader.as_deref_mut() {
            Some(leader) => leader
                .append_voters(self.core, self.out, next, now_ms)
                .map(Some),
            None => Ok(None),
        }
    }

    /// AddRaftVoter (80, v0-1): asks the new voter's ApiVersions first; the
    /// answer comes when the `Voters` record commits, or when it is
    /// appended for v1 with `AckWhenCommitted` false (KIP-1186).
    pub(crate) fn add(
        mut self,
        handle: ReplyHandle,
        r: AddRaftVoterRequestV1,
        now_ms: u64,
    ) -> Result<()> {
        let AddRaftVoterRequestV1 {
            request: r,
            ack_when_committed,
        } = r;
        let kind = ChangeKind::Add;
        if !self.core.cluster_id_matches(r.cluster_id.as_ref()) {
            self.reply(
                kind,
                handle,
                Some(ResponseError::InconsistentClusterId),
                None,
            );
            return Ok(());
        }
        if let Some((e, text)) = self.precheck() {
            self.reply(kind, handle, Some(e), Some(text));
            return Ok(());
        }
        let key = ReplicaKey::from_wire(r.voter_id, r.voter_directory_id);
        if key.id < 0 || key.directory_id.is_none() || r.listeners.is_empty() {
            self.reply(
                kind,
                handle,
                Some(ResponseError::InvalidRequest),
                Some("a voter needs a node id, a directory id and at least one listener"),
            );
            return Ok(());
        }
        if self.core.voters().contains_id(key.id) {
            self.reply(kind, handle, Some(ResponseError::DuplicateVoter), None);
            return Ok(());
        }
        if !self.is_caught_up(&key, now_ms) {
            self.reply(
                kind,
                handle,
                Some(ResponseError::RequestTimedOut),
                Some("the new voter is not a caught-up observer of the leader yet; retry"),
            );
            return Ok(());
        }
        let voter = Voter {
            key,
            endpoints: r
                .listeners
                .iter()
                .map(|l| Endpoint::new(l.name.as_str(), l.host.as_str(), l.port))
                .collect(),
            kraft_version: (0, 0),
        };
        let request = self.send_api_versions(&voter);
        let timeout = u64::try_from(r.timeout_ms)
            .ok()
            .filter(|t| *t > 0)
            .unwrap_or(self.core.config.request_timeout_ms);
        let backoff_ms = self.core.config.retry_backoff_ms;
        self.pending(PendingChange {
            kind,
            handle,
            deadline_ms: now_ms + timeout,
            ack_when_committed,
            answered: false,
            stage: ChangeStage::AwaitingApiVersions {
                voter,
                attempt: ApiVersionsAttempt {
                    request: Some(request),
                    retry_at_ms: now_ms,
                    backoff_ms,
                    sent_at_ms: now_ms,
                    answered_since_ms: None,
                },
            },
        });
        Ok(())
    }

    /// Sends ApiVersions to `voter`'s first endpoint (the one AddRaftVoter
    /// named: the runtime dials that name afresh on every new connection).
    fn send_api_versions(&mut self, voter: &Voter) -> RequestId {
        let destination = Destination {
            node_id: voter.key.id,
            endpoint: voter.endpoints.first().cloned(),
        };
        self.core.send_to(
            self.out,
            destination,
            RequestKind::ApiVersions,
            self.view.epoch,
            RaftRequest::ApiVersions(
                ApiVersionsRequest::default()
                    .with_client_software_name(StrBytes::from_static_str("kraft-controller"))
                    .with_client_software_version(StrBytes::from_static_str(env!(
                        "CARGO_PKG_VERSION"
                    ))),
            ),
        )
    }

    /// Sends the next ApiVersions of the voter being added once its retry
    /// is due (see [`ApiVersionsAttempt`]); the change's deadline is
    /// answered by the leader's own poll.
    pub(crate) fn poll(mut self, now_ms: u64) {
        let Some(pending) = self
            .leader
            .as_deref()
            .and_then(|l| l.pending_change.clone())
        else {
            return;
        };
        let ChangeStage::AwaitingApiVersions { voter, attempt } = pending.stage else {
            return;
        };
        if attempt.request.is_some()
            || now_ms < attempt.retry_at_ms
            || now_ms >= pending.deadline_ms
        {
            return;
        }
        let request = self.send_api_versions(&voter);
        self.pending(PendingChange {
            stage: ChangeStage::AwaitingApiVersions {
                voter,
                attempt: ApiVersionsAttempt {
                    request: Some(request),
                    sent_at_ms: now_ms,
                    ..attempt
                },
            },
            ..pending
        });
    }

    /// Schedules the next ApiVersions of `pending` after `attempt`'s
    /// backoff, which doubles up to [`API_VERSIONS_BACKOFF_MAX_MS`].
    fn retry_later(
        &mut self,
        pending: PendingChange,
        voter: Voter,
        attempt: ApiVersionsAttempt,
        now_ms: u64,
    ) {
        self.pending(PendingChange {
            stage: ChangeStage::AwaitingApiVersions {
                voter,
                attempt: ApiVersionsAttempt {
                    request: None,
                    retry_at_ms: now_ms + attempt.backoff_ms,
                    backoff_ms: (attempt.backoff_ms * 2).clamp(1, API_VERSIONS_BACKOFF_MAX_MS),
                    ..attempt
                },
            },
            ..pending
        });
    }

    /// The new voter's ApiVersions (`None`: the request failed): it must
    /// support the current kraft.version and its key must be caught up;
    /// then the `Voters` record is appended. A failed request is sent again
    /// after a backoff (doubling from `controller.quorum.retry.backoff.ms`
    /// up to [`API_VERSIONS_BACKOFF_MAX_MS`]) while the change's deadline
    /// allows, and so is it after an answer while the key has not fetched
    /// to the log end since the first answered request was sent
    /// ([`ApiVersionsAttempt::answered_since_ms`]);
    /// an answer with an error code ends the change (Kafka's
    /// `AddVoterHandler.handleApiVersionsResponse`).
    pub(crate) fn api_versions_answer(
        mut self,
        id: RequestId,
        r: Option<ApiVersionsResponse>,
        now_ms: u64,
    ) -> Result<()> {
        let Some(leader) = self.leader.as_deref_mut() else {
            return Ok(());
        };
        let Some(pending) = leader.pending_change.clone() else {
            return Ok(());
        };
        let ChangeStage::AwaitingApiVersions { mut voter, attempt } = pending.stage.clone() else {
            return Ok(());
        };
        if attempt.request != Some(id) {
            return Ok(());
        }
        let Some(r) = r else {
            tracing::info!(
                node = self.core.local.id,
                voter = voter.key.id,
                retry_in_ms = attempt.backoff_ms,
                "the new voter did not answer ApiVersions; asking again"
            );
            let attempt = ApiVersionsAttempt {
                answered_since_ms: None,
                ..attempt
            };
            self.retry_later(pending, voter, attempt, now_ms);
            return Ok(());
        };
        let Some(leader) = self.leader.as_deref_mut() else {
            return Ok(());
        };
        leader.pending_change = None;
        if r.error_code != 0 {
            let text = format!(
                "the new voter answered ApiVersions with error code {}; retry",
                r.error_code
            );
            self.reply(
                pending.kind,
                pending.handle,
                Some(ResponseError::RequestTimedOut),
                Some(&text),
            );
            return Ok(());
        }
        let kraft_version = self.core.kraft_version;
        let range = r
            .supported_features
            .iter()
            .find(|f| f.name.as_str() == KRAFT_VERSION_FEATURE)
            .map(|f| (f.min_version, f.max_version));
        let Some(range) = range.filter(|(min, max)| *min <= kraft_version && kraft_version <= *max)
        else {
            self.reply(
                pending.kind,
                pending.handle,
                Some(ResponseError::InvalidRequest),
                Some("the new voter does not support the cluster's kraft.version"),
            );
            return Ok(());
        };
        // Kafka's AddVoterHandler checks the key is caught up once the
        // answer is in. Stricter here: caught up since the first answered
        // request (since the last failure) was sent, else asked again. The
        // node that answered may be a new incarnation of the id (a wiped
        // volume, another directory id) while the key being added is the
        // old one, and retries widen that window from one round trip to the
        // request's timeout.
        let since_ms = attempt.answered_since_ms.unwrap_or(attempt.sent_at_ms);
        if !self.caught_up_since(&voter.key, since_ms) {
            let attempt = ApiVersionsAttempt {
                answered_since_ms: Some(since_ms),
                ..attempt
            };
            self.retry_later(pending, voter, attempt, now_ms);
            return Ok(());
        }
        voter.kraft_version = range;
        let next = self.core.voters().with_added(voter);
        if let Some(offset) = self.append_voters(next, now_ms)? {
            // KIP-1186: AckWhenCommitted false is answered now, at the
            // append; the change still blocks the next until it commits.
            let answer_now = !pending.ack_when_committed;
            if answer_now {
                self.reply(pending.kind, pending.handle, None, None);
            }
            self.pending(PendingChange {
                stage: ChangeStage::AwaitingCommit { offset },
                answered: answer_now,
                ..pending
            });
        }
        Ok(())
    }

    /// RemoveRaftVoter (81).
    pub(crate) fn remove(
        mut self,
        handle: ReplyHandle,
        r: RemoveRaftVoterRequest,
        now_ms: u64,
    ) -> Result<()> {
        let kind = ChangeKind::Remove;
        if !self.core.cluster_id_matches(r.cluster_id.as_ref()) {
            self.reply(
                kind,
                handle,
                Some(ResponseError::InconsistentClusterId),
                None,
            );
            return Ok(());
        }
        if let Some((e, text)) = self.precheck() {
            self.reply(kind, handle, Some(e), Some(text));
            return Ok(());
        }
        let key = ReplicaKey::from_wire(r.voter_id, r.voter_directory_id);
        if self.core.voters().get(key.id).is_none_or(|v| v.key != key) {
            self.reply(kind, handle, Some(ResponseError::VoterNotFound), None);
            return Ok(());
        }
        let Some(next) = self
            .core
            .voters()
            .with_removed(&key)
            .filter(|s| !s.is_empty())
        else {
            self.reply(
                kind,
                handle,
                Some(ResponseError::InvalidRequest),
                Some("cannot remove the last voter"),
            );
            return Ok(());
        };
        if let Some(offset) = self.append_voters(next, now_ms)? {
            let deadline_ms = now_ms + self.core.config.request_timeout_ms;
            self.pending(PendingChange {
                kind,
                handle,
                deadline_ms,
                stage: ChangeStage::AwaitingCommit { offset },
                ack_when_committed: true,
                answered: false,
            });
        }
        Ok(())
    }

    /// UpdateRaftVoter (82): a voter's new endpoints or kraft.version range.
    /// INVALID_REQUEST, nothing stored, for no listener, none named as the
    /// leader's own voter listener (Kafka's UpdateVoterHandler), or a
    /// kraft.version range without the finalized version.
    pub(crate) fn update(
        mut self,
        handle: ReplyHandle,
        r: UpdateRaftVoterRequest,
        now_ms: u64,
    ) -> Result<()> {
        let kind = ChangeKind::Update;
        if !self.core.cluster_id_matches(r.cluster_id.as_ref()) {
            self.reply(
                kind,
                handle,
                Some(ResponseError::InconsistentClusterId),
                None,
            );
            return Ok(());
        }
        if r.current_leader_epoch < self.view.epoch {
            self.reply(kind, handle, Some(ResponseError::FencedLeaderEpoch), None);
            return Ok(());
        }
        if r.current_leader_epoch > self.view.epoch {
            self.reply(kind, handle, Some(ResponseError::UnknownLeaderEpoch), None);
            return Ok(());
        }
        if let Some((e, text)) = self.precheck() {
            self.reply(kind, handle, Some(e), Some(text));
            return Ok(());
        }
        let key = ReplicaKey::from_wire(r.voter_id, r.voter_directory_id);
        if self.core.voters().get(key.id).is_none_or(|v| v.key != key) {
            self.reply(kind, handle, Some(ResponseError::VoterNotFound), None);
            return Ok(());
        }
        let kraft_version = self.core.kraft_version;
        let range = (
            r.k_raft_version_feature.min_supported_version,
            r.k_raft_version_feature.max_supported_version,
        );
        // Kafka's UpdateVoterHandler: the voter must keep an endpoint on the
        // listener the leader's voters speak (its own first endpoint's name).
        let leader_listener = self
            .core
            .voters()
            .get(self.core.local.id)
            .and_then(|v| v.endpoints.first())
            .map(|e| e.name.clone());
        let lacks_leader_listener = leader_listener
            .is_some_and(|name| !r.listeners.iter().any(|l| l.name.as_str() == name));
        if r.listeners.is_empty()
            || lacks_leader_listener
            || range.0 > kraft_version
            || range.1 < kraft_version
        {
            self.reply(kind, handle, Some(ResponseError::InvalidRequest), None);
            return Ok(());
        }
        let voter = Voter {
            key,
            endpoints: r
                .listeners
                .iter()
                .map(|l| Endpoint::new(l.name.as_str(), l.host.as_str(), l.port))
                .collect(),
            kraft_version: range,
        };
        if self.core.voters().get(key.id) == Some(&voter) {
            self.reply(kind, handle, None, None);
            return Ok(());
        }
        let next = self.core.voters().with_added(voter);
        if let Some(offset) = self.append_voters(next, now_ms)? {
            let deadline_ms = now_ms + self.core.config.request_timeout_ms;
            self.pending(PendingChange {
                kind,
                handle,
                deadline_ms,
                stage: ChangeStage::AwaitingCommit { offset },
                ack_when_committed: true,
                answered: false,
            });
        }
        Ok(())
    }
}
