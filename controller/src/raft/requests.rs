//! The requests every role answers, whatever its state: Vote and pre-vote
//! (KIP-595, KIP-996), BeginQuorumEpoch, EndQuorumEpoch and DescribeQuorum,
//! with Kafka's validation order and error codes: the checks that come
//! before any transition, and the responses in the epoch of a view. The
//! engine performs the transitions in between, and the role states decide
//! whether a vote is granted. Fetch is served by `fetch.rs`, voter changes
//! by `voter_change.rs`. A leaf: imports `core` and `output` only; keeps no
//! state of its own.

use kafka_protocol::{
    ResponseError,
    messages::{
        BeginQuorumEpochRequest, BeginQuorumEpochResponse, DescribeQuorumResponse,
        EndQuorumEpochRequest, EndQuorumEpochResponse, VoteRequest, VoteResponse,
        begin_quorum_epoch_response, describe_quorum_response, end_quorum_epoch_response,
        vote_response,
    },
};

use super::{
    METADATA_PARTITION, RaftResponse, RaftStatus, ReplicaStatus, ReplyHandle,
    core::{Core, EpochView, error_code, topic_name},
    log_is_up_to_date,
    output::Output,
    voters::{Endpoint, ReplicaKey},
};
use crate::log::{OffsetAndEpoch, ReplicatedLog};

/// A top-level and a partition-level error of a response.
pub(crate) type Errors = (Option<ResponseError>, Option<ResponseError>);

/// Whether a node could move to `epoch` and still have a next one: an epoch
/// of `i32::MAX` from a peer would leave no `epoch + 1` (the next election
/// would overflow), so requests carrying it are refused INVALID_REQUEST and
/// responses carrying it are ignored, before any transition (issue 19).
pub(crate) fn usable_epoch(epoch: i32) -> bool {
    epoch < i32::MAX
}

/// A Vote request that passed the checks: what the roles decide on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VoteArgs {
    pub(crate) candidate: ReplicaKey,
    pub(crate) candidate_epoch: i32,
    pub(crate) pre_vote: bool,
    /// The candidate's log is at least as up to date as this node's.
    pub(crate) up_to_date: bool,
    /// The candidate is in a voter set this node could elect in (see
    /// [`VoteHandler::check`]).
    pub(crate) known_member: bool,
}

/// Vote and pre-vote (KIP-595, KIP-996), as Kafka's `handleVoteRequest`:
/// [`Self::check`] before the engine moves to the candidate's epoch,
/// [`Self::answer`] after the roles decided.
pub(crate) struct VoteHandler<'a, L: ReplicatedLog> {
    pub(crate) core: &'a Core<L>,
    pub(crate) out: &'a mut Output,
    pub(crate) view: &'a EpochView,
}

impl<L: ReplicatedLog> VoteHandler<'_, L> {
    fn response(&self, errors: Errors, granted: bool) -> VoteResponse {
        let view = self.view;
        let partition = vote_response::PartitionData::default()
            .with_partition_index(METADATA_PARTITION)
            .with_error_code(errors.1.map_or(0, error_code))
            .with_leader_id(view.leader_id.unwrap_or(-1).into())
            .with_leader_epoch(view.epoch)
            .with_vote_granted(granted);
        VoteResponse::default()
            .with_error_code(errors.0.map_or(0, error_code))
            .with_topics(vec![
                vote_response::TopicData::default()
                    .with_topic_name(topic_name())
                    .with_partitions(vec![partition]),
            ])
            .with_node_endpoints(
                view.leader_endpoint
                    .clone()
                    .map(|(id, e)| {
                        vote_response::NodeEndpoint::default()
                            .with_node_id(id.into())
                            .with_host(e.host.into())
                            .with_port(e.port)
                    })
                    .into_iter()
                    .collect(),
            )
    }

    /// Answers with `errors`, or the vote (`granted`).
    pub(crate) fn answer(self, handle: ReplyHandle, errors: Errors, granted: bool) {
        let response = self.response(errors, granted);
        self.out.reply(handle, RaftResponse::Vote(response));
    }

    /// The checks before any transition: the cluster id, the request's
    /// shape, the epoch (FENCED_LEADER_EPOCH), and that it is addressed to
    /// this voter (INVALID_VOTER_KEY, KIP-853). Answers a failed check and
    /// returns `None`.
    pub(crate) fn check(self, handle: ReplyHandle, r: &VoteRequest) -> Option<VoteArgs> {
        let core = self.core;
        if !core.cluster_id_matches(r.cluster_id.as_ref()) {
            self.answer(
                handle,
                (Some(ResponseError::InconsistentClusterId), None),
                false,
            );
            return None;
        }
        let Some(p) = r.topics.first().and_then(|t| t.partitions.first()) else {
            self.answer(handle, (Some(ResponseError::InvalidRequest), None), false);
            return None;
        };
        let candidate = ReplicaKey::from_wire(p.replica_id.0, p.replica_directory_id);
        if !usable_epoch(p.replica_epoch) {
            self.answer(handle, (None, Some(ResponseError::InvalidRequest)), false);
            return None;
        }
        if p.replica_epoch < self.view.epoch {
            self.answer(
                handle,
                (None, Some(ResponseError::FencedLeaderEpoch)),
                false,
            );
            return None;
        }
        if candidate.id < 0 {
            self.answer(handle, (Some(ResponseError::InvalidRequest), None), false);
            return None;
        }
        // KIP-853: the request names the voter it is meant for.
        let addressed = ReplicaKey::from_wire(core.local.id, p.voter_directory_id);
        if (r.voter_id.0 >= 0 && r.voter_id.0 != core.local.id) || !addressed.matches(&core.local) {
            self.answer(handle, (None, Some(ResponseError::InvalidVoterKey)), false);
            return None;
        }
        let up_to_date = log_is_up_to_date(
            OffsetAndEpoch::new(p.last_offset, p.last_offset_epoch),
            core.log.end_offset(),
        );
        // Whoever the candidate addresses as a voter (the voter key check
        // above) answers by the log and the role, as Kafka 4 does, with one
        // addition: a candidate outside every set this replica could elect
        // in (its latest set, and the one before an uncommitted change) is
        // refused. Needed because `election_voters` lets a node removed by
        // an uncommitted `Voters` record campaign in the set before it: two
        // replicas whose logs stopped two changes back (set P, then P minus
        // a, then P minus a and b, committed by the newest set alone) could
        // otherwise elect one of the removed nodes with a majority of P that
        // misses every node of the newest set (found by the membership
        // simulation, seed 662 with snapshots on). A replica that knows no
        // set at all (an observer before its first fetch) does not check.
        let known_member = core.voters().is_empty()
            || core.voters().contains_key(&candidate)
            || core.election_voters().contains_key(&candidate);
        Some(VoteArgs {
            candidate,
            candidate_epoch: p.replica_epoch,
            pre_vote: p.pre_vote,
            up_to_date,
            known_member,
        })
    }
}

fn begin_quorum_epoch_response(view: &EpochView, errors: Errors) -> BeginQuorumEpochResponse {
    BeginQuorumEpochResponse::default()
        .with_error_code(errors.0.map_or(0, error_code))
        .with_topics(vec![
            begin_quorum_epoch_response::TopicData::default()
                .with_topic_name(topic_name())
                .with_partitions(vec![
                    begin_quorum_epoch_response::PartitionData::default()
                        .with_partition_index(METADATA_PARTITION)
                        .with_error_code(errors.1.map_or(0, error_code))
                        .with_leader_id(view.leader_id.unwrap_or(-1).into())
                        .with_leader_epoch(view.epoch),
                ]),
        ])
}

/// Answers a BeginQuorumEpoch in the epoch of `view`.
pub(crate) fn reply_begin_quorum_epoch(
    out: &mut Output,
    view: &EpochView,
    handle: ReplyHandle,
    errors: Errors,
) {
    let response = begin_quorum_epoch_response(view, errors);
    out.reply(handle, RaftResponse::BeginQuorumEpoch(response));
}

/// The leader a BeginQuorumEpoch announces.
#[derive(Debug, Clone)]
pub(crate) struct Announced {
    pub(crate) leader_id: i32,
    pub(crate) epoch: i32,
    pub(crate) endpoint: Option<Endpoint>,
}

/// BeginQuorumEpoch, a new leader announcing itself (also its heartbeat):
/// the checks before the engine follows it (the cluster id, the shape, the
/// epoch, the voter key).
pub(crate) fn check_begin_quorum_epoch<L: ReplicatedLog>(
    core: &Core<L>,
    epoch: i32,
    r: &BeginQuorumEpochRequest,
) -> Result<Announced, Errors> {
    if !core.cluster_id_matches(r.cluster_id.as_ref()) {
        return Err((Some(ResponseError::InconsistentClusterId), None));
    }
    let Some(p) = r.topics.first().and_then(|t| t.partitions.first()) else {
        return Err((Some(ResponseError::InvalidRequest), None));
    };
    if !usable_epoch(p.leader_epoch) {
        return Err((None, Some(ResponseError::InvalidRequest)));
    }
    if p.leader_epoch < epoch {
        return Err((None, Some(ResponseError::FencedLeaderEpoch)));
    }
    if !ReplicaKey::from_wire(core.local.id, p.voter_directory_id).matches(&core.local) {
        return Err((None, Some(ResponseError::InvalidVoterKey)));
    }
    Ok(Announced {
        leader_id: p.leader_id.0,
        epoch: p.leader_epoch,
        endpoint: r
            .leader_endpoints
            .first()
            .map(|e| Endpoint::new(e.name.as_str(), e.host.as_str(), e.port)),
    })
}

fn end_quorum_epoch_response(view: &EpochView, errors: Errors) -> EndQuorumEpochResponse {
    EndQuorumEpochResponse::default()
        .with_error_code(errors.0.map_or(0, error_code))
        .with_topics(vec![
            end_quorum_epoch_response::TopicData::default()
                .with_topic_name(topic_name())
                .with_partitions(vec![
                    end_quorum_epoch_response::PartitionData::default()
                        .with_partition_index(METADATA_PARTITION)
                        .with_error_code(errors.1.map_or(0, error_code))
                        .with_leader_id(view.leader_id.unwrap_or(-1).into())
                        .with_leader_epoch(view.epoch),
                ]),
        ])
}

/// Answers an EndQuorumEpoch in the epoch of `view`.
pub(crate) fn reply_end_quorum_epoch(
    out: &mut Output,
    view: &EpochView,
    handle: ReplyHandle,
    errors: Errors,
) {
    let response = end_quorum_epoch_response(view, errors);
    out.reply(handle, RaftResponse::EndQuorumEpoch(response));
}

/// The resignation an EndQuorumEpoch announces.
#[derive(Debug, Clone)]
pub(crate) struct Resignation {
    pub(crate) leader_id: i32,
    pub(crate) epoch: i32,
    /// The preferred successors, best first.
    pub(crate) successors: Vec<i32>,
}

/// EndQuorumEpoch, the leader resigning: the checks before the engine acts
/// on it (the cluster id, the shape, the epoch).
pub(crate) fn check_end_quorum_epoch<L: ReplicatedLog>(
    core: &Core<L>,
    epoch: i32,
    r: &EndQuorumEpochRequest,
) -> Result<Resignation, Errors> {
    if !core.cluster_id_matches(r.cluster_id.as_ref()) {
        return Err((Some(ResponseError::InconsistentClusterId), None));
    }
    let Some(p) = r.topics.first().and_then(|t| t.partitions.first()) else {
        return Err((Some(ResponseError::InvalidRequest), None));
    };
    if !usable_epoch(p.leader_epoch) {
        return Err((None, Some(ResponseError::InvalidRequest)));
    }
    if p.leader_epoch < epoch {
        return Err((None, Some(ResponseError::FencedLeaderEpoch)));
    }
    let successors = if p.preferred_candidates.is_empty() {
        p.preferred_successors.clone()
    } else {
        p.preferred_candidates
            .iter()
            .map(|c| c.candidate_id.0)
            .collect()
    };
    Ok(Resignation {
        leader_id: p.leader_id.0,
        epoch: p.leader_epoch,
        successors,
    })
}

/// The fetch timeout a preferred successor at `position` waits before it
/// campaigns (Kafka's `endEpochElectionBackoff`); `None` for a node that is
/// not one (it waits a random election timeout).
pub(crate) fn end_epoch_backoff<L: ReplicatedLog>(
    core: &mut Core<L>,
    position: Option<usize>,
) -> u64 {
    match position {
        Some(pos) => core
            .config
            .retry_backoff_ms
            .saturating_mul(1u64 << pos.min(16))
            .min(core.config.election_timeout_ms),
        None => core.random_election_timeout(),
    }
}

/// DescribeQuorum (55): answered by the leader only (`status` of a leader),
/// else NOT_LEADER_OR_FOLLOWER.
pub(crate) fn describe_quorum<L: ReplicatedLog>(
    core: &Core<L>,
    view: &EpochView,
    status: Option<&RaftStatus>,
) -> DescribeQuorumResponse {
    let to_state = |s: &ReplicaStatus| {
        describe_quorum_response::ReplicaState::default()
            .with_replica_id(s.key.id.into())
            .with_replica_directory_id(s.key.directory_id_or_nil())
            .with_log_end_offset(s.log_end_offset.unwrap_or(-1))
            .with_last_fetch_timestamp(s.last_fetch_ms.map_or(-1, |t| t as i64))
            .with_last_caught_up_timestamp(s.last_caught_up_ms.map_or(-1, |t| t as i64))
    };
    let mut partition = describe_quorum_response::PartitionData::default()
        .with_partition_index(METADATA_PARTITION)
        .with_leader_id(view.leader_id.unwrap_or(-1).into())
        .with_leader_epoch(view.epoch);
    match status {
        None => {
            partition = partition.with_error_code(error_code(ResponseError::NotLeaderOrFollower));
        }
        Some(status) => {
            partition = partition
                .with_high_watermark(core.high_watermark.unwrap_or(-1))
                .with_current_voters(status.voters.iter().map(to_state).collect())
                .with_observers(status.observers.iter().map(to_state).collect());
        }
    }
    let nodes = core
        .voters()
        .iter()
        .map(|v| {
            describe_quorum_response::Node::default()
                .with_node_id(v.key.id.into())
                .with_listeners(
                    v.endpoints
                        .iter()
                        .map(|e| {
                            describe_quorum_response::Listener::default()
                                .with_name(e.name.clone().into())
                                .with_host(e.host.clone().into())
                                .with_port(e.port)
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeQuorumResponse::default()
        .with_topics(vec![
            describe_quorum_response::TopicData::default()
                .with_topic_name(topic_name())
                .with_partitions(vec![partition]),
        ])
        .with_nodes(nodes)
}
