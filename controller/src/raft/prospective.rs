//! Prospective (KIP-996 pre-vote): a voter that lost its leader (fetch
//! timeout), or found none (election timeout), asks the other voters whether
//! they would vote for it, at its current epoch. A pre-vote persists nothing
//! on either side. A majority of grants makes it Candidate at epoch + 1; an
//! expired election timeout starts a new round. Must not raise the epoch.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{VoteRequest, vote_request};

use super::{
    RaftRequest, Result,
    candidate::CandidateState,
    engine::{EpochState, RaftEngine, RequestKind},
    voters::ReplicaKey,
};
use crate::log::ReplicatedLog;

/// State of a prospective voter.
#[derive(Debug)]
pub(crate) struct ProspectiveState {
    pub(crate) epoch: i32,
    /// The vote of this epoch, kept (one vote per epoch).
    pub(crate) voted_key: Option<ReplicaKey>,
    /// The leader of this epoch that this node stopped hearing from: other
    /// replicas naming it do not pull this node back to Follower (only a
    /// BeginQuorumEpoch from that leader itself does).
    pub(crate) lost_leader: Option<i32>,
    pub(crate) election_deadline_ms: u64,
    pub(crate) granted: BTreeSet<i32>,
    pub(crate) rejected: BTreeSet<i32>,
    /// Voters whose request failed, and when to ask again.
    pub(crate) retry_at: BTreeMap<i32, u64>,
}

impl ProspectiveState {
    pub(crate) fn next_deadline(&self) -> u64 {
        self.retry_at
            .values()
            .copied()
            .fold(self.election_deadline_ms, u64::min)
    }
}

impl<L: ReplicatedLog> RaftEngine<L> {
    pub(crate) fn build_vote_request(&self, to: i32, pre_vote: bool) -> VoteRequest {
        let end = self.log.end_offset();
        let voter_directory = self
            .election_voters()
            .get(to)
            .map_or(uuid::Uuid::nil(), |v| v.key.directory_id_or_nil());
        VoteRequest::default()
            .with_cluster_id(self.cluster_id_wire())
            .with_voter_id(to.into())
            .with_topics(vec![
                vote_request::TopicData::default()
                    .with_topic_name(Self::topic_name())
                    .with_partitions(vec![
                        vote_request::PartitionData::default()
                            .with_partition_index(super::METADATA_PARTITION)
                            .with_replica_epoch(self.epoch())
                            .with_replica_id(self.local.id.into())
                            .with_replica_directory_id(self.local.directory_id_or_nil())
                            .with_voter_directory_id(voter_directory)
                            .with_last_offset_epoch(end.epoch)
                            .with_last_offset(end.offset)
                            .with_pre_vote(pre_vote),
                    ]),
            ])
    }

    /// Sends a (pre-)vote request to every other voter.
    pub(crate) fn request_votes(&mut self, pre_vote: bool) {
        let others: Vec<i32> = self
            .election_voters()
            .ids()
            .filter(|id| *id != self.local.id)
            .collect();
        self.send_vote_requests(others, pre_vote);
    }

    /// Sends a Vote request (a pre-vote when `pre_vote`) to each of `to`.
    pub(crate) fn send_vote_requests(&mut self, to: Vec<i32>, pre_vote: bool) {
        for to in to {
            let request = self.build_vote_request(to, pre_vote);
            self.send(
                to,
                RequestKind::Vote { pre_vote },
                RaftRequest::Vote(request),
            );
        }
    }

    pub(crate) fn prospective_on_enter(&mut self, now_ms: u64) -> Result<()> {
        let local = self.local.id;
        if let EpochState::Prospective(s) = &mut self.state {
            s.granted.insert(local);
        }
        self.request_votes(true);
        self.prospective_check(now_ms)
    }

    pub(crate) fn prospective_check(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Prospective(s) = &self.state else {
            return Ok(());
        };
        let voters = self.election_voters();
        let granted = s
            .granted
            .iter()
            .filter(|id| voters.contains_id(**id))
            .count();
        if granted >= voters.majority() {
            let epoch = s.epoch + 1;
            let timeout = self.random_election_timeout();
            let next = CandidateState {
                epoch,
                election_deadline_ms: now_ms + timeout,
                granted: BTreeSet::new(),
                rejected: BTreeSet::new(),
                retry_at: BTreeMap::new(),
            };
            self.transition(EpochState::Candidate(next), now_ms)?;
        }
        Ok(())
    }

    pub(crate) fn prospective_poll(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Prospective(s) = &mut self.state else {
            return Ok(());
        };
        if now_ms >= s.election_deadline_ms {
            // A new pre-vote round, with a fresh randomised timeout.
            return self.become_prospective(now_ms);
        }
        let due = take_due_retries(&mut s.retry_at, now_ms);
        self.send_vote_requests(due, true);
        Ok(())
    }
}

/// Removes and returns the voters whose vote retry is due at `now_ms`
/// (`retry_at`: voter id -> ms), for a Prospective's or a Candidate's round.
pub(crate) fn take_due_retries(retry_at: &mut BTreeMap<i32, u64>, now_ms: u64) -> Vec<i32> {
    let due: Vec<i32> = retry_at
        .iter()
        .filter(|(_, at)| **at <= now_ms)
        .map(|(id, _)| *id)
        .collect();
    for id in &due {
        retry_at.remove(id);
    }
    due
}
