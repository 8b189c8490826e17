//! Candidate: a voter that won a pre-vote and asks for votes at epoch + 1,
//! having voted for itself (persisted before any request goes out). A
//! majority makes it Leader; a lost or split election waits out the election
//! timeout and goes back to Prospective (no livelock: timeouts are
//! randomised). Must not accept writes.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::VoteResponse;

use super::{
    Result,
    engine::{EpochState, Inflight, RaftEngine, RequestKind},
    leader::LeaderState,
    voters::Endpoint,
};
use crate::log::ReplicatedLog;

/// State of a candidate.
#[derive(Debug)]
pub(crate) struct CandidateState {
    pub(crate) epoch: i32,
    pub(crate) election_deadline_ms: u64,
    pub(crate) granted: BTreeSet<i32>,
    pub(crate) rejected: BTreeSet<i32>,
    pub(crate) retry_at: BTreeMap<i32, u64>,
}

impl CandidateState {
    pub(crate) fn next_deadline(&self) -> u64 {
        self.retry_at
            .values()
            .copied()
            .fold(self.election_deadline_ms, u64::min)
    }
}

impl<L: ReplicatedLog> RaftEngine<L> {
    pub(crate) fn candidate_on_enter(&mut self, now_ms: u64) -> Result<()> {
        let local = self.local.id;
        if let EpochState::Candidate(s) = &mut self.state {
            s.granted.insert(local);
        }
        self.request_votes(false);
        self.candidate_check(now_ms)
    }

    fn candidate_check(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Candidate(s) = &self.state else {
            return Ok(());
        };
        let voters = self.election_voters();
        let granting: Vec<i32> = s
            .granted
            .iter()
            .copied()
            .filter(|id| voters.contains_id(*id))
            .collect();
        if granting.len() >= voters.majority() {
            let next = LeaderState::new(self, s.epoch, granting, now_ms);
            self.transition(EpochState::Leader(Box::new(next)), now_ms)?;
        }
        Ok(())
    }

    pub(crate) fn candidate_poll(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Candidate(s) = &mut self.state else {
            return Ok(());
        };
        if now_ms >= s.election_deadline_ms {
            return self.become_prospective(now_ms);
        }
        let due = super::prospective::take_due_retries(&mut s.retry_at, now_ms);
        self.send_vote_requests(due, false);
        Ok(())
    }

    /// A Vote response, for a Prospective (pre-vote) or a Candidate (vote).
    pub(crate) fn handle_vote_response(
        &mut self,
        inflight: Inflight,
        r: VoteResponse,
        now_ms: u64,
    ) -> Result<()> {
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
        let retry = now_ms + self.config.retry_backoff_ms;
        match (&mut self.state, inflight.kind) {
            (EpochState::Prospective(s), RequestKind::Vote { pre_vote: true })
                if s.epoch == inflight.epoch =>
            {
                match (ok, granted) {
                    (true, true) => {
                        s.granted.insert(inflight.node_id);
                    }
                    (true, false) => {
                        s.rejected.insert(inflight.node_id);
                    }
                    (false, _) => {
                        s.retry_at.insert(inflight.node_id, retry);
                    }
                }
                self.prospective_check(now_ms)
            }
            (EpochState::Candidate(s), RequestKind::Vote { pre_vote: false })
                if s.epoch == inflight.epoch =>
            {
                match (ok, granted) {
                    (true, true) => {
                        s.granted.insert(inflight.node_id);
                    }
                    (true, false) => {
                        s.rejected.insert(inflight.node_id);
                    }
                    (false, _) => {
                        s.retry_at.insert(inflight.node_id, retry);
                    }
                }
                self.candidate_check(now_ms)
            }
            _ => Ok(()),
        }
    }
}
