//! Prospective (KIP-996 pre-vote): a voter that lost its leader (fetch
//! timeout), or found none (election timeout), asks the other voters whether
//! they would vote for it, at its current epoch. A pre-vote persists nothing
//! on either side. A majority of grants makes it Candidate at epoch + 1; an
//! expired election timeout starts a new round. Must not raise the epoch.
//!
//! Also the vote round both Prospective and Candidate run ([`VoteRound`]:
//! grants, rejections, retries) and the Vote request they send. Imports only
//! the leaves (`core`, `output`); the engine performs the transitions.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{VoteRequest, vote_request};

use super::{
    ElectionState, METADATA_PARTITION, RaftRequest,
    core::{Core, Next, topic_name},
    output::{Inflight, Output, RequestKind},
    voters::ReplicaKey,
};
use crate::log::ReplicatedLog;

/// One round of (pre-)votes: who granted, who refused, whom to ask again.
#[derive(Debug, Default)]
pub(crate) struct VoteRound {
    pub(crate) granted: BTreeSet<i32>,
    pub(crate) rejected: BTreeSet<i32>,
    /// Voters whose request failed, and when to ask again.
    pub(crate) retry_at: BTreeMap<i32, u64>,
}

impl VoteRound {
    /// The earliest retry, or `deadline_ms`.
    fn next_deadline(&self, deadline_ms: u64) -> u64 {
        self.retry_at.values().copied().fold(deadline_ms, u64::min)
    }

    /// Counts an answer of `node_id`: granted, refused, or failed (ask again
    /// at `retry_at_ms`).
    pub(crate) fn record(&mut self, node_id: i32, ok: bool, granted: bool, retry_at_ms: u64) {
        match (ok, granted) {
            (true, true) => {
                self.granted.insert(node_id);
            }
            (true, false) => {
                self.rejected.insert(node_id);
            }
            (false, _) => {
                self.retry_at.insert(node_id, retry_at_ms);
            }
        }
    }

    /// The granting voters of the election set, if they are a majority.
    pub(crate) fn won<L: ReplicatedLog>(&self, core: &Core<L>) -> Option<Vec<i32>> {
        let voters = core.election_voters();
        let granting: Vec<i32> = self
            .granted
            .iter()
            .copied()
            .filter(|id| voters.contains_id(*id))
            .collect();
        (granting.len() >= voters.majority()).then_some(granting)
    }

    /// Votes for itself and asks every other voter of the election set.
    pub(crate) fn start<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        epoch: i32,
        pre_vote: bool,
    ) {
        self.granted.insert(core.local.id);
        let others: Vec<i32> = core
            .election_voters()
            .ids()
            .filter(|id| *id != core.local.id)
            .collect();
        send_vote_requests(core, out, epoch, others, pre_vote);
    }

    /// Asks again the voters whose retry is due at `now_ms`.
    pub(crate) fn retry_due<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        epoch: i32,
        pre_vote: bool,
        now_ms: u64,
    ) {
        let due: Vec<i32> = self
            .retry_at
            .iter()
            .filter(|(_, at)| **at <= now_ms)
            .map(|(id, _)| *id)
            .collect();
        for id in &due {
            self.retry_at.remove(id);
        }
        send_vote_requests(core, out, epoch, due, pre_vote);
    }
}

/// A Vote request (a pre-vote when `pre_vote`) to voter `to` in `epoch`.
fn vote_request<L: ReplicatedLog>(
    core: &Core<L>,
    epoch: i32,
    to: i32,
    pre_vote: bool,
) -> VoteRequest {
    let end = core.log.end_offset();
    let voter_directory = core
        .election_voters()
        .get(to)
        .map_or(uuid::Uuid::nil(), |v| v.key.directory_id_or_nil());
    VoteRequest::default()
        .with_cluster_id(core.cluster_id_wire())
        .with_voter_id(to.into())
        .with_topics(vec![
            vote_request::TopicData::default()
                .with_topic_name(topic_name())
                .with_partitions(vec![
                    vote_request::PartitionData::default()
                        .with_partition_index(METADATA_PARTITION)
                        .with_replica_epoch(epoch)
                        .with_replica_id(core.local.id.into())
                        .with_replica_directory_id(core.local.directory_id_or_nil())
                        .with_voter_directory_id(voter_directory)
                        .with_last_offset_epoch(end.epoch)
                        .with_last_offset(end.offset)
                        .with_pre_vote(pre_vote),
                ]),
        ])
}

/// Sends a Vote request (a pre-vote when `pre_vote`) to each of `to`.
fn send_vote_requests<L: ReplicatedLog>(
    core: &Core<L>,
    out: &mut Output,
    epoch: i32,
    to: Vec<i32>,
    pre_vote: bool,
) {
    for to in to {
        let request = vote_request(core, epoch, to, pre_vote);
        core.send(
            out,
            to,
            RequestKind::Vote { pre_vote },
            epoch,
            RaftRequest::Vote(request),
        );
    }
}

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
    pub(crate) round: VoteRound,
}

impl ProspectiveState {
    /// Prospective at `epoch`, keeping `voted_key` and the `lost_leader`,
    /// with a fresh election timeout.
    pub(crate) fn new<L: ReplicatedLog>(
        core: &mut Core<L>,
        epoch: i32,
        voted_key: Option<ReplicaKey>,
        lost_leader: Option<i32>,
        now_ms: u64,
    ) -> Self {
        let timeout = core.random_election_timeout();
        Self {
            epoch,
            voted_key,
            lost_leader,
            election_deadline_ms: now_ms + timeout,
            round: VoteRound::default(),
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        self.round.next_deadline(self.election_deadline_ms)
    }

    /// Prospective keeps what was persisted, plus a vote it grants in its
    /// epoch (Kafka's `prospectiveAddVotedState`).
    pub(crate) fn election_state(&self) -> ElectionState {
        ElectionState {
            epoch: self.epoch,
            leader_id: self.lost_leader,
            voted_key: self.voted_key,
        }
    }

    /// Sends the pre-votes; a single voter wins at once.
    pub(crate) fn on_enter<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
    ) -> Option<Next> {
        self.round.start(core, out, self.epoch, true);
        self.check(core)
    }

    fn check<L: ReplicatedLog>(&self, core: &Core<L>) -> Option<Next> {
        self.round.won(core).map(|_| Next::Candidate)
    }

    /// A new round once the election timeout passed; else the due retries.
    pub(crate) fn poll<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Option<Next> {
        if now_ms >= self.election_deadline_ms {
            // A new pre-vote round, with a fresh randomised timeout.
            return Some(Next::Prospective);
        }
        self.round.retry_due(core, out, self.epoch, true, now_ms);
        None
    }

    /// The answer to a pre-vote of this epoch.
    pub(crate) fn on_vote_response<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        inflight: Inflight,
        ok: bool,
        granted: bool,
        now_ms: u64,
    ) -> Option<Next> {
        if inflight.kind != (RequestKind::Vote { pre_vote: true }) || inflight.epoch != self.epoch {
            return None;
        }
        let retry = now_ms + core.config.retry_backoff_ms;
        self.round.record(inflight.node_id, ok, granted, retry);
        self.check(core)
    }

    /// Whether a (pre-)vote for `candidate` is granted.
    pub(crate) fn grants_vote(
        &self,
        candidate: ReplicaKey,
        up_to_date: bool,
        pre_vote: bool,
    ) -> bool {
        match self.voted_key {
            _ if pre_vote => up_to_date,
            Some(voted) => voted.matches(&candidate) && voted.id == candidate.id,
            // It knew a leader in this epoch: no vote for another.
            None if self.lost_leader.is_some() => false,
            None => up_to_date,
        }
    }
}
