//! Resigned: a leader that stepped down (check-quorum failed, shutdown) or a
//! node restarting after it led its stored epoch. It tells the other voters
//! with EndQuorumEpoch (preferred successors first), accepts no write, grants
//! no vote in its epoch, and after the election timeout becomes Unattached in
//! the next epoch. Imports only the leaves (`core`, `output`).

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{EndQuorumEpochRequest, end_quorum_epoch_request};

use super::{
    METADATA_PARTITION, RaftRequest,
    core::{Core, Next, topic_name},
    output::{Inflight, Output, RequestKind},
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
    /// Resigned in `epoch`, naming `preferred_successors`, with every other
    /// voter still to tell.
    pub(crate) fn new<L: ReplicatedLog>(
        core: &mut Core<L>,
        epoch: i32,
        preferred_successors: Vec<ReplicaKey>,
        now_ms: u64,
    ) -> Self {
        let timeout = core.random_election_timeout();
        Self {
            epoch,
            election_deadline_ms: now_ms + timeout,
            preferred_successors,
            unacked: core
                .voters()
                .ids()
                .filter(|id| *id != core.local.id)
                .collect(),
            retry_at: BTreeMap::new(),
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        self.retry_at
            .iter()
            .filter(|(id, _)| self.unacked.contains(id))
            .map(|(_, at)| *at)
            .fold(self.election_deadline_ms, u64::min)
    }

    /// Sends EndQuorumEpoch to every other voter.
    pub(crate) fn on_enter<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) {
        for id in self.unacked.clone() {
            self.retry_at.insert(id, now_ms);
        }
        self.send_due(core, out, now_ms);
    }

    fn send_due<L: ReplicatedLog>(&mut self, core: &Core<L>, out: &mut Output, now_ms: u64) {
        let due: Vec<i32> = self
            .retry_at
            .iter()
            .filter(|(id, at)| **at <= now_ms && self.unacked.contains(id))
            .map(|(id, _)| *id)
            .collect();
        for id in &due {
            self.retry_at.remove(id);
        }
        for to in due {
            let request = end_quorum_epoch_request(core, self.epoch, &self.preferred_successors);
            core.send(
                out,
                to,
                RequestKind::EndQuorumEpoch,
                self.epoch,
                RaftRequest::EndQuorumEpoch(request),
            );
        }
    }

    /// After the election timeout (unless shutting down), the next epoch;
    /// else the due EndQuorumEpoch retries.
    pub(crate) fn poll<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        shutting_down: bool,
        now_ms: u64,
    ) -> Option<Next> {
        if now_ms >= self.election_deadline_ms
            && !shutting_down
            && let Some(epoch) = self.epoch.checked_add(1)
        {
            // As Kafka 4's `pollResigned`: move to the next epoch without a
            // vote, so that late fetch responses of the old epoch are fenced; a
            // voter then campaigns after its election timeout, a removed
            // leader finds the new one through the bootstrap servers.
            return Some(Next::Unattached { epoch });
        }
        self.send_due(core, out, now_ms);
        None
    }

    /// An EndQuorumEpoch to `node_id` failed: ask again at `retry_at_ms`.
    pub(crate) fn on_end_quorum_epoch_failed(&mut self, node_id: i32, retry_at_ms: u64) {
        self.retry_at.insert(node_id, retry_at_ms);
    }

    /// The answer of an EndQuorumEpoch of this epoch: acknowledged when
    /// `ok`, else asked again at `retry_at_ms`.
    pub(crate) fn on_end_quorum_epoch_answer(
        &mut self,
        inflight: Inflight,
        ok: bool,
        retry_at_ms: u64,
    ) {
        if inflight.epoch != self.epoch {
            return;
        }
        if ok {
            self.unacked.remove(&inflight.node_id);
        } else {
            self.retry_at.insert(inflight.node_id, retry_at_ms);
        }
    }
}

/// EndQuorumEpoch of `epoch`, led by this node, naming `successors`.
fn end_quorum_epoch_request<L: ReplicatedLog>(
    core: &Core<L>,
    epoch: i32,
    successors: &[ReplicaKey],
) -> EndQuorumEpochRequest {
    EndQuorumEpochRequest::default()
        .with_cluster_id(core.cluster_id_wire())
        .with_topics(vec![
            end_quorum_epoch_request::TopicData::default()
                .with_topic_name(topic_name())
                .with_partitions(vec![
                    end_quorum_epoch_request::PartitionData::default()
                        .with_partition_index(METADATA_PARTITION)
                        .with_leader_id(core.local.id.into())
                        .with_leader_epoch(epoch)
                        .with_preferred_successors(successors.iter().map(|k| k.id).collect())
                        .with_preferred_candidates(
                            successors
                                .iter()
                                .map(|k| {
                                    end_quorum_epoch_request::ReplicaInfo::default()
                                        .with_candidate_id(k.id.into())
                                        .with_candidate_directory_id(k.directory_id_or_nil())
                                })
                                .collect(),
                        ),
                ]),
        ])
}
