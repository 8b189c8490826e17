//! Unattached: no known leader in the current epoch, perhaps with a vote
//! granted (Kafka's `UnattachedState`, which since 4.0 also covers "voted").
//!
//! A voter waits out its randomised election timeout and becomes Prospective;
//! an observer never does. Both fetch from the bootstrap servers meanwhile
//! (one at a time, round robin) to discover the leader (KIP-853): the answer
//! names it. Must not send votes or accept writes.

use super::{
    RaftRequest, Result,
    engine::{EpochState, RaftEngine, RequestKind},
    follower::FetchLoop,
    prospective::ProspectiveState,
    voters::ReplicaKey,
};
use crate::log::ReplicatedLog;

/// State of an unattached replica.
#[derive(Debug)]
pub(crate) struct UnattachedState {
    pub(crate) epoch: i32,
    pub(crate) voted_key: Option<ReplicaKey>,
    /// `u64::MAX` for an observer.
    pub(crate) election_deadline_ms: u64,
    /// Fetches to bootstrap servers (observers), to learn the leader.
    pub(crate) fetch: FetchLoop,
}

impl UnattachedState {
    pub(crate) fn next_deadline(&self) -> u64 {
        self.election_deadline_ms.min(self.fetch.next_deadline())
    }
}

impl<L: ReplicatedLog> RaftEngine<L> {
    pub(crate) fn unattached_poll(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Unattached(s) = &self.state else {
            return Ok(());
        };
        if self.can_campaign() && now_ms >= s.election_deadline_ms {
            return self.become_prospective(now_ms);
        }
        if s.fetch.ready(now_ms) && !self.config.bootstrap_servers.is_empty() {
            let n = self.config.bootstrap_servers.len();
            let index = self.next_bootstrap % n;
            self.next_bootstrap = self.next_bootstrap.wrapping_add(1);
            let node_id = -(index as i32) - 1;
            let request = self.build_fetch_request();
            let id = self.send(node_id, RequestKind::Fetch, RaftRequest::Fetch(request));
            if let EpochState::Unattached(s) = &mut self.state {
                s.fetch.inflight = Some(id);
            }
        }
        Ok(())
    }

    /// Unattached/Follower/Candidate/Resigned(e) → Prospective(e), keeping
    /// the vote of the epoch and the last known leader.
    pub(crate) fn become_prospective(&mut self, now_ms: u64) -> Result<()> {
        let epoch = self.epoch();
        let voted = self.voted_key().or(self
            .persisted()
            .voted_key
            .filter(|_| self.persisted().epoch == epoch));
        let lost_leader = match &self.state {
            super::engine::EpochState::Prospective(p) => p.lost_leader,
            _ => self.leader_id().filter(|l| *l != self.local.id),
        };
        let mut next = self.new_prospective(epoch, voted, now_ms);
        next.lost_leader = lost_leader;
        self.transition(EpochState::Prospective(next), now_ms)
    }

    pub(crate) fn new_prospective(
        &mut self,
        epoch: i32,
        voted_key: Option<ReplicaKey>,
        now_ms: u64,
    ) -> ProspectiveState {
        let timeout = self.random_election_timeout();
        ProspectiveState {
            epoch,
            voted_key,
            lost_leader: None,
            election_deadline_ms: now_ms + timeout,
            granted: Default::default(),
            rejected: Default::default(),
            retry_at: Default::default(),
        }
    }
}
