//! Candidate: a voter that won a pre-vote and asks for votes at epoch + 1,
//! having voted for itself (persisted before any request goes out). A
//! majority makes it Leader; a lost or split election waits out the election
//! timeout and goes back to Prospective (no livelock: timeouts are
//! randomised). Must not accept writes.
//!
//! Imports the leaves (`core`, `output`) and the vote round of
//! `prospective.rs`; the engine performs the transitions.

use super::{
    ElectionState,
    core::{Core, Next},
    output::{Inflight, Output, RequestKind},
    prospective::VoteRound,
    voters::ReplicaKey,
};
use crate::log::ReplicatedLog;

/// State of a candidate.
#[derive(Debug)]
pub(crate) struct CandidateState {
    pub(crate) epoch: i32,
    pub(crate) election_deadline_ms: u64,
    pub(crate) round: VoteRound,
}

impl CandidateState {
    /// Candidate at `epoch`, with a fresh election timeout.
    pub(crate) fn new<L: ReplicatedLog>(core: &mut Core<L>, epoch: i32, now_ms: u64) -> Self {
        let timeout = core.random_election_timeout();
        Self {
            epoch,
            election_deadline_ms: now_ms + timeout,
            round: VoteRound::default(),
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        self.round
            .retry_at
            .values()
            .copied()
            .fold(self.election_deadline_ms, u64::min)
    }

    /// A candidate has voted for itself.
    pub(crate) fn election_state(&self, local: ReplicaKey) -> ElectionState {
        ElectionState {
            epoch: self.epoch,
            leader_id: None,
            voted_key: Some(local),
        }
    }

    /// Sends the votes; a single voter wins at once.
    pub(crate) fn on_enter<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
    ) -> Option<Next> {
        self.round.start(core, out, self.epoch, false);
        self.check(core)
    }

    fn check<L: ReplicatedLog>(&self, core: &Core<L>) -> Option<Next> {
        self.round
            .won(core)
            .map(|granting| Next::Leader { granting })
    }

    /// Back to Prospective once the election timeout passed; else the due
    /// retries.
    pub(crate) fn poll<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Option<Next> {
        if now_ms >= self.election_deadline_ms {
            return Some(Next::Prospective);
        }
        self.round.retry_due(core, out, self.epoch, false, now_ms);
        None
    }

    /// The answer to a vote of this epoch.
    pub(crate) fn on_vote_response<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        inflight: Inflight,
        ok: bool,
        granted: bool,
        now_ms: u64,
    ) -> Option<Next> {
        if inflight.kind != (RequestKind::Vote { pre_vote: false }) || inflight.epoch != self.epoch
        {
            return None;
        }
        let retry = now_ms + core.config.retry_backoff_ms;
        self.round.record(inflight.node_id, ok, granted, retry);
        self.check(core)
    }

    /// A candidate grants pre-votes only (it voted for itself).
    pub(crate) fn grants_vote(up_to_date: bool, pre_vote: bool) -> bool {
        pre_vote && up_to_date
    }
}
