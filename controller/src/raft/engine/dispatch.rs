//! The engine's dispatch of each event to the role state or request
//! handler that handles it (a part of `engine.rs`, split off for size).

use kafka_protocol::{
    ResponseError,
    messages::{ApiVersionsResponse, EndQuorumEpochRequest, VoteRequest},
};

use super::{EpochState, RaftEngine};
use crate::{
    log::ReplicatedLog,
    raft::{
        Command, RaftRequest, RaftResponse, ReplyHandle, RequestFailure, RequestId, Result, Role,
        core::{EpochView, error_code},
        fetch::FetchHandler,
        fetch_snapshot::{self, FetchSnapshotHandler},
        output::{Inflight, RequestKind},
        requests::{self, VoteHandler},
        unattached::UnattachedState,
        voter_change::VoterChangeHandler,
        voters::Endpoint,
    },
};

impl<L: ReplicatedLog> RaftEngine<L> {
    // ---- dispatch ---------------------------------------------------------

    pub(super) fn on_request(
        &mut self,
        handle: ReplyHandle,
        request: RaftRequest,
        now_ms: u64,
    ) -> Result<()> {
        let view = self.view();
        match request {
            RaftRequest::Vote(r) => self.on_vote_request(handle, r, now_ms),
            RaftRequest::BeginQuorumEpoch(r) => {
                match requests::check_begin_quorum_epoch(&self.core, self.epoch(), &r) {
                    Err(errors) => {
                        requests::reply_begin_quorum_epoch(&mut self.out, &view, handle, errors);
                    }
                    Ok(a) => {
                        self.maybe_transition_from(
                            Some(a.leader_id),
                            a.epoch,
                            a.endpoint,
                            true,
                            now_ms,
                        )?;
                        let view = self.view();
                        requests::reply_begin_quorum_epoch(
                            &mut self.out,
                            &view,
                            handle,
                            (None, None),
                        );
                    }
                }
                Ok(())
            }
            RaftRequest::EndQuorumEpoch(r) => self.on_end_quorum_epoch(handle, r, now_ms),
            RaftRequest::Fetch(r) => FetchHandler {
                core: &mut self.core,
                out: &mut self.out,
                view: &view,
                leader: self.state.leader(),
            }
            .handle(handle, r, now_ms),
            RaftRequest::FetchSnapshot(r) => FetchSnapshotHandler {
                core: &self.core,
                out: &mut self.out,
                view: &view,
                leader: self.state.leader(),
            }
            .handle(handle, r, now_ms),
            RaftRequest::DescribeQuorum(_) => {
                let status = (self.role() == Role::Leader).then(|| self.status());
                let response = requests::describe_quorum(&self.core, &view, status.as_ref());
                self.out
                    .reply(handle, RaftResponse::DescribeQuorum(response));
                Ok(())
            }
            RaftRequest::AddRaftVoter(r) => self.voter_changes(&view).add(handle, r, now_ms),
            RaftRequest::RemoveRaftVoter(r) => self.voter_changes(&view).remove(handle, r, now_ms),
            RaftRequest::UpdateRaftVoter(r) => self.voter_changes(&view).update(handle, r, now_ms),
            RaftRequest::ApiVersions(_) => {
                // The runtime answers ApiVersions itself.
                let code = error_code(ResponseError::UnsupportedVersion);
                let response = ApiVersionsResponse::default().with_error_code(code);
                self.out.reply(handle, RaftResponse::ApiVersions(response));
                Ok(())
            }
        }
    }

    /// Vote and pre-vote: the checks, a newer epoch, the role's decision
    /// (one vote per epoch, durable before the reply), the answer.
    pub(super) fn on_vote_request(
        &mut self,
        handle: ReplyHandle,
        r: VoteRequest,
        now_ms: u64,
    ) -> Result<()> {
        let view = self.view();
        let handler = VoteHandler {
            core: &self.core,
            out: &mut self.out,
            view: &view,
        };
        let Some(args) = handler.check(handle, &r) else {
            return Ok(());
        };
        if args.candidate_epoch > self.epoch() && !args.pre_vote {
            self.become_unattached(args.candidate_epoch, now_ms)?;
        }
        let granted = args.known_member && self.grants_vote(&args, now_ms);
        if granted && !args.pre_vote {
            let epoch = self.epoch();
            match &mut self.state {
                EpochState::Unattached(u) if u.voted_key.is_none() => {
                    let next =
                        UnattachedState::new(&mut self.core, epoch, Some(args.candidate), now_ms);
                    self.transition(EpochState::Unattached(next), now_ms)?;
                }
                EpochState::Prospective(s) if s.voted_key.is_none() => {
                    s.voted_key = Some(args.candidate);
                    self.persist_if_changed();
                }
                _ => {}
            }
        }
        let view = self.view();
        VoteHandler {
            core: &self.core,
            out: &mut self.out,
            view: &view,
        }
        .answer(handle, (None, None), granted);
        Ok(())
    }

    /// EndQuorumEpoch: the leader resigns; its preferred successors shorten
    /// their fetch timeout by their position (Kafka's `endEpochElectionBackoff`).
    pub(super) fn on_end_quorum_epoch(
        &mut self,
        handle: ReplyHandle,
        r: EndQuorumEpochRequest,
        now_ms: u64,
    ) -> Result<()> {
        let resignation = match requests::check_end_quorum_epoch(&self.core, self.epoch(), &r) {
            Ok(resignation) => resignation,
            Err(errors) => {
                let view = self.view();
                requests::reply_end_quorum_epoch(&mut self.out, &view, handle, errors);
                return Ok(());
            }
        };
        let (leader_id, epoch) = (resignation.leader_id, resignation.epoch);
        self.maybe_transition(Some(leader_id), epoch, None, now_ms)?;
        let local = self.core.local.id;
        let position = resignation.successors.iter().position(|id| *id == local);
        let backoff = requests::end_epoch_backoff(&mut self.core, position);
        if let EpochState::Follower(f) = &mut self.state {
            f.on_end_quorum_epoch(epoch, leader_id, local, backoff, now_ms);
        }
        let view = self.view();
        requests::reply_end_quorum_epoch(&mut self.out, &view, handle, (None, None));
        Ok(())
    }

    pub(super) fn on_response(
        &mut self,
        id: RequestId,
        inflight: Inflight,
        response: RaftResponse,
        now_ms: u64,
    ) -> Result<()> {
        let retry_at = now_ms + self.core.config.retry_backoff_ms;
        match response {
            RaftResponse::Vote(r) => {
                let partition = r.topics.first().and_then(|t| t.partitions.first()).cloned();
                if let Some(p) = &partition {
                    let hint = r
                        .node_endpoints
                        .iter()
                        .find(|e| e.node_id == p.leader_id)
                        .map(|e| Endpoint::new("", e.host.as_str(), e.port));
                    if self.maybe_transition(Some(p.leader_id.0), p.leader_epoch, hint, now_ms)? {
                        return Ok(());
                    }
                }
                let ok = r.error_code == 0 && partition.as_ref().is_some_and(|p| p.error_code == 0);
                let granted = ok && partition.as_ref().is_some_and(|p| p.vote_granted);
                let next = match &mut self.state {
                    EpochState::Prospective(s) => {
                        s.on_vote_response(&self.core, inflight, ok, granted, now_ms)
                    }
                    EpochState::Candidate(s) => {
                        s.on_vote_response(&self.core, inflight, ok, granted, now_ms)
                    }
                    _ => None,
                };
                self.apply(next, now_ms)
            }
            RaftResponse::BeginQuorumEpoch(r) => {
                let (leader, epoch) = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or((None, -1), |p| (Some(p.leader_id.0), p.leader_epoch));
                if let Some(l) = self.state.leader() {
                    l.on_begin_quorum_epoch_done(inflight.node_id);
                }
                self.maybe_transition(leader, epoch, None, now_ms)?;
                Ok(())
            }
            RaftResponse::EndQuorumEpoch(r) => {
                let partition = r.topics.first().and_then(|t| t.partitions.first()).cloned();
                if let Some(p) = &partition
                    && self.maybe_transition(Some(p.leader_id.0), p.leader_epoch, None, now_ms)?
                {
                    return Ok(());
                }
                if let EpochState::Resigned(s) = &mut self.state {
                    let ok = r.error_code == 0 && partition.is_some_and(|p| p.error_code == 0);
                    s.on_end_quorum_epoch_answer(inflight, ok, retry_at);
                }
                Ok(())
            }
            RaftResponse::Fetch(r) => {
                let partition = r
                    .responses
                    .first()
                    .and_then(|t| t.partitions.first())
                    .cloned();
                if let Some(p) = &partition {
                    let leader = p.current_leader.leader_id.0;
                    let hint = crate::raft::follower::endpoint_in(&r, leader);
                    let from_leader = inflight.node_id == leader;
                    let epoch = p.current_leader.leader_epoch;
                    if self.maybe_transition_from(Some(leader), epoch, hint, from_leader, now_ms)? {
                        return Ok(());
                    }
                }
                match &mut self.state {
                    EpochState::Unattached(s) => s.on_fetch_done(id, retry_at),
                    EpochState::Follower(s) => s.on_fetch_response(
                        &mut self.core,
                        &mut self.out,
                        id,
                        &r,
                        partition,
                        now_ms,
                    )?,
                    _ => {}
                }
                Ok(())
            }
            RaftResponse::FetchSnapshot(r) => {
                if let Some((leader, epoch, hint)) = fetch_snapshot::response_leader(&r) {
                    let from_leader = inflight.node_id == leader;
                    if self.maybe_transition_from(Some(leader), epoch, hint, from_leader, now_ms)? {
                        return Ok(());
                    }
                }
                if let EpochState::Follower(s) = &mut self.state {
                    s.on_fetch_snapshot_response(&mut self.core, &mut self.out, id, r, now_ms)?;
                }
                Ok(())
            }
            RaftResponse::ApiVersions(r) => self.on_api_versions(id, Some(r), now_ms),
            _ => Ok(()),
        }
    }

    /// The answer (or failure) of the ApiVersions of a voter being added.
    pub(super) fn on_api_versions(
        &mut self,
        id: RequestId,
        r: Option<ApiVersionsResponse>,
        now_ms: u64,
    ) -> Result<()> {
        let view = self.view();
        self.voter_changes(&view).api_versions_answer(id, r, now_ms)
    }

    /// The voter-change handler over this engine, in the epoch of `view`.
    fn voter_changes<'a>(&'a mut self, view: &'a EpochView) -> VoterChangeHandler<'a, L> {
        VoterChangeHandler {
            core: &mut self.core,
            out: &mut self.out,
            view,
            leader: self.state.leader(),
        }
    }

    pub(super) fn on_request_failed(
        &mut self,
        id: RequestId,
        inflight: Inflight,
        failure: RequestFailure,
        now_ms: u64,
    ) -> Result<()> {
        tracing::debug!(
            node = self.core.local.id,
            to = inflight.node_id,
            ?failure,
            "request failed"
        );
        let retry_at = now_ms + self.core.config.retry_backoff_ms;
        let node = inflight.node_id;
        match (&mut self.state, inflight.kind) {
            (EpochState::Prospective(s), RequestKind::Vote { pre_vote: true })
                if inflight.epoch == s.epoch =>
            {
                s.round.record(node, false, false, retry_at);
            }
            (EpochState::Candidate(s), RequestKind::Vote { pre_vote: false })
                if inflight.epoch == s.epoch =>
            {
                s.round.record(node, false, false, retry_at);
            }
            (EpochState::Follower(s), RequestKind::Fetch | RequestKind::FetchSnapshot) => {
                s.fetch.done(id, retry_at);
            }
            (EpochState::Unattached(s), RequestKind::Fetch) => s.on_fetch_done(id, retry_at),
            (EpochState::Resigned(s), RequestKind::EndQuorumEpoch) => {
                s.on_end_quorum_epoch_failed(node, retry_at);
            }
            (EpochState::Leader(l), RequestKind::BeginQuorumEpoch) => {
                l.on_begin_quorum_epoch_done(node);
            }
            (EpochState::Leader(_), RequestKind::ApiVersions) => {
                self.on_api_versions(id, None, now_ms)?;
            }
            _ => {}
        }
        Ok(())
    }

    pub(super) fn on_flush(&mut self, now_ms: u64) -> Result<()> {
        self.core.log.flush()?;
        self.on_flushed(now_ms)
    }

    /// The log's flushed end offset moved (a flush, here or off the loop):
    /// the leader's high watermark may move, a follower fetches again.
    pub(super) fn on_flushed(&mut self, now_ms: u64) -> Result<()> {
        match &mut self.state {
            EpochState::Leader(l) => l.on_flush(&mut self.core, &mut self.out, now_ms),
            EpochState::Follower(s) => {
                s.fetch.flushed(now_ms);
                Ok(())
            }
            EpochState::Unattached(s) => {
                s.fetch.flushed(now_ms);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub(super) fn on_shutdown(&mut self, timeout_ms: u64, now_ms: u64) -> Result<()> {
        self.shutdown_deadline_ms = Some(now_ms + timeout_ms);
        if self.role() == Role::Leader {
            // With other voters, wait for one of them to lead; alone, there
            // is nobody to hand over to.
            let local = self.core.local.id;
            self.shutdown_awaits_successor = self.core.voters().iter().any(|v| v.key.id != local);
            self.resign(now_ms)?;
        }
        Ok(())
    }

    /// Runs every timer that is due, then the role's periodic work.
    pub(super) fn poll(&mut self, now_ms: u64) -> Result<()> {
        if now_ms >= self.next_clean_ms {
            self.next_clean_ms =
                now_ms.saturating_add(self.core.config.log_clean_interval_ms.max(1));
            self.core.clean_log(now_ms)?;
        }
        if let Some(deadline) = self.shutdown_deadline_ms {
            // A resigned leader is done once another node leads a later epoch;
            // any other node has nothing to hand over.
            let handed_over = !self.shutdown_awaits_successor
                || self.leader_id().is_some_and(|l| l != self.core.local.id);
            if !self.shutdown_done && (handed_over || now_ms >= deadline) {
                self.shutdown_done = true;
                self.shutdown_deadline_ms = None;
                self.out.push(Command::ShutdownComplete);
            }
        }
        if self.shutdown_done {
            return Ok(());
        }
        if matches!(self.state, EpochState::Leader(_)) {
            // A due ApiVersions retry of a voter being added (KIP-853).
            let view = self.view();
            self.voter_changes(&view).poll(now_ms);
        }
        let shutting_down = self.shutdown_deadline_ms.is_some();
        let (core, out) = (&mut self.core, &mut self.out);
        let next = match &mut self.state {
            EpochState::Unattached(s) => s.poll(core, out, now_ms),
            EpochState::Prospective(s) => s.poll(core, out, now_ms),
            EpochState::Candidate(s) => s.poll(core, out, now_ms),
            EpochState::Follower(s) => s.poll(core, out, now_ms),
            EpochState::Leader(l) => l.poll(core, out, now_ms)?,
            EpochState::Resigned(s) => s.poll(core, out, shutting_down, now_ms),
        };
        self.apply(next, now_ms)
    }
}
