//! Resigned: a leader that stepped down (check-quorum failed, shutdown) or a
//! node restarting after it led its stored epoch. It tells the other voters
//! with EndQuorumEpoch (preferred successors first), accepts no write, grants
//! no vote in its epoch, and after the election timeout becomes Prospective.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    RaftRequest, Result,
    engine::{EpochState, RaftEngine, RequestKind},
    voters::ReplicaKey,
};
use crate::log::ReplicatedLog;

/// State of a resigned leader.
#[derive(Debug)]
pub(crate) struct ResignedState {
    pub(crate) epoch: i32,
    pub(crate) election_deadline_ms: u64,
    pub(crate) preferred_successors: Vec<ReplicaKey>,
    /// Voters that have not acknowledged EndQuorumEpoch.
    pub(crate) unacked: BTreeSet<i32>,
    pub(crate) retry_at: BTreeMap<i32, u64>,
}

impl ResignedState {
    pub(crate) fn next_deadline(&self) -> u64 {
        self.retry_at
            .iter()
            .filter(|(id, _)| self.unacked.contains(id))
            .map(|(_, at)| *at)
            .fold(self.election_deadline_ms, u64::min)
    }
}

impl<L: ReplicatedLog> RaftEngine<L> {
    pub(crate) fn new_resigned(
        &mut self,
        epoch: i32,
        preferred_successors: Vec<ReplicaKey>,
        now_ms: u64,
    ) -> ResignedState {
        let timeout = self.random_election_timeout();
        ResignedState {
            epoch,
            election_deadline_ms: now_ms + timeout,
            preferred_successors,
            unacked: self
                .voters
                .ids()
                .filter(|id| *id != self.local.id)
                .collect(),
            retry_at: BTreeMap::new(),
        }
    }

    pub(crate) fn resigned_on_enter(&mut self, now_ms: u64) {
        let EpochState::Resigned(s) = &mut self.state else {
            return;
        };
        for id in s.unacked.clone() {
            s.retry_at.insert(id, now_ms);
        }
        self.resigned_send_due(now_ms);
    }

    fn resigned_send_due(&mut self, now_ms: u64) {
        let EpochState::Resigned(s) = &mut self.state else {
            return;
        };
        let due: Vec<i32> = s
            .retry_at
            .iter()
            .filter(|(id, at)| **at <= now_ms && s.unacked.contains(id))
            .map(|(id, _)| *id)
            .collect();
        for id in &due {
            s.retry_at.remove(id);
        }
        let successors = s.preferred_successors.clone();
        for to in due {
            let request = self.end_quorum_epoch_request(&successors);
            self.send(
                to,
                RequestKind::EndQuorumEpoch,
                RaftRequest::EndQuorumEpoch(request),
            );
        }
    }

    pub(crate) fn resigned_poll(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Resigned(s) = &self.state else {
            return Ok(());
        };
        if now_ms >= s.election_deadline_ms && self.shutdown_deadline_ms.is_none() {
            // As Kafka 4's `pollResigned`: move to the next epoch without a
            // vote, so that late fetch responses of the old epoch are fenced; a
            // voter then campaigns after its election timeout, a removed
            // leader finds the new one through the bootstrap servers.
            let epoch = s.epoch + 1;
            return self.become_unattached(epoch, now_ms);
        }
        self.resigned_send_due(now_ms);
        Ok(())
    }
}
