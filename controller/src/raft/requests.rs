//! The requests every role answers, whatever its state: Vote and pre-vote
//! (KIP-595, KIP-996), BeginQuorumEpoch, EndQuorumEpoch and DescribeQuorum,
//! with Kafka's validation order and error codes. Fetch is answered in
//! `leader.rs`, voter changes in `membership.rs`. Must not keep state of its
//! own: it reads and moves the engine's epoch state.

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
    METADATA_PARTITION, RaftResponse, ReplicaStatus, ReplyHandle, Result, Role,
    engine::{EpochState, Inflight, RaftEngine, error_code},
    log_is_up_to_date,
    voters::{Endpoint, ReplicaKey},
};
use crate::log::{OffsetAndEpoch, ReplicatedLog};

impl<L: ReplicatedLog> RaftEngine<L> {
    pub(crate) fn vote_response(
        &self,
        error: Option<ResponseError>,
        partition_error: Option<ResponseError>,
        granted: bool,
    ) -> VoteResponse {
        let partition = vote_response::PartitionData::default()
            .with_partition_index(METADATA_PARTITION)
            .with_error_code(partition_error.map_or(0, error_code))
            .with_leader_id(self.leader_id().unwrap_or(-1).into())
            .with_leader_epoch(self.epoch())
            .with_vote_granted(granted);
        VoteResponse::default()
            .with_error_code(error.map_or(0, error_code))
            .with_topics(vec![
                vote_response::TopicData::default()
                    .with_topic_name(Self::topic_name())
                    .with_partitions(vec![partition]),
            ])
            .with_node_endpoints(
                self.leader_endpoint()
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

    /// Vote and pre-vote (KIP-595, KIP-996), as Kafka's `handleVoteRequest`.
    pub(crate) fn handle_vote_request(
        &mut self,
        handle: ReplyHandle,
        r: VoteRequest,
        now_ms: u64,
    ) -> Result<()> {
        if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            let resp = self.vote_response(Some(ResponseError::InconsistentClusterId), None, false);
            self.reply(handle, RaftResponse::Vote(resp));
            return Ok(());
        }
        let Some(p) = r.topics.first().and_then(|t| t.partitions.first()).cloned() else {
            let resp = self.vote_response(Some(ResponseError::InvalidRequest), None, false);
            self.reply(handle, RaftResponse::Vote(resp));
            return Ok(());
        };
        let candidate = ReplicaKey::from_wire(p.replica_id.0, p.replica_directory_id);
        if p.replica_epoch < self.epoch() {
            let resp = self.vote_response(None, Some(ResponseError::FencedLeaderEpoch), false);
            self.reply(handle, RaftResponse::Vote(resp));
            return Ok(());
        }
        if candidate.id < 0 {
            let resp = self.vote_response(Some(ResponseError::InvalidRequest), None, false);
            self.reply(handle, RaftResponse::Vote(resp));
            return Ok(());
        }
        // KIP-853: the request names the voter it is meant for.
        let addressed = ReplicaKey::from_wire(self.local.id, p.voter_directory_id);
        if (r.voter_id.0 >= 0 && r.voter_id.0 != self.local.id) || !addressed.matches(&self.local) {
            let resp = self.vote_response(None, Some(ResponseError::InvalidVoterKey), false);
            self.reply(handle, RaftResponse::Vote(resp));
            return Ok(());
        }
        if p.replica_epoch > self.epoch() && !p.pre_vote {
            self.become_unattached(p.replica_epoch, now_ms)?;
        }
        let up_to_date = log_is_up_to_date(
            OffsetAndEpoch::new(p.last_offset, p.last_offset_epoch),
            self.log.end_offset(),
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
        let known_member = self.voter_history.latest().is_empty()
            || self.voter_history.latest().contains_key(&candidate)
            || self.election_voters().contains_key(&candidate);
        let granted =
            known_member && self.can_grant_vote(candidate, up_to_date, p.pre_vote, now_ms);
        if granted
            && !p.pre_vote
            && let EpochState::Unattached(u) = &self.state
            && u.voted_key.is_none()
        {
            let next = self.new_unattached(self.epoch(), Some(candidate), now_ms);
            self.transition(EpochState::Unattached(next), now_ms)?;
        }
        if granted
            && !p.pre_vote
            && let EpochState::Prospective(s) = &mut self.state
            && s.voted_key.is_none()
        {
            // One vote per epoch, durable before the reply.
            s.voted_key = Some(candidate);
            self.persist_if_changed();
        }
        let resp = self.vote_response(None, None, granted);
        self.reply(handle, RaftResponse::Vote(resp));
        Ok(())
    }

    pub(crate) fn can_grant_vote(
        &self,
        candidate: ReplicaKey,
        up_to_date: bool,
        pre_vote: bool,
        now_ms: u64,
    ) -> bool {
        match &self.state {
            EpochState::Unattached(s) => match s.voted_key {
                Some(voted) if !pre_vote => voted.matches(&candidate) && voted.id == candidate.id,
                _ => up_to_date,
            },
            EpochState::Prospective(s) => match s.voted_key {
                _ if pre_vote => up_to_date,
                Some(voted) => voted.matches(&candidate) && voted.id == candidate.id,
                // It knew a leader in this epoch: no vote for another.
                None if s.lost_leader.is_some() => false,
                None => up_to_date,
            },
            EpochState::Candidate(_) => pre_vote && up_to_date,
            EpochState::Follower(s) => {
                pre_vote
                    && !s.has_fetched_recently(now_ms, self.config.fetch_timeout_ms)
                    && up_to_date
            }
            EpochState::Leader(_) | EpochState::Resigned(_) => false,
        }
    }

    pub(crate) fn begin_quorum_epoch_response(
        &self,
        error: Option<ResponseError>,
        partition_error: Option<ResponseError>,
    ) -> BeginQuorumEpochResponse {
        BeginQuorumEpochResponse::default()
            .with_error_code(error.map_or(0, error_code))
            .with_topics(vec![
                begin_quorum_epoch_response::TopicData::default()
                    .with_topic_name(Self::topic_name())
                    .with_partitions(vec![
                        begin_quorum_epoch_response::PartitionData::default()
                            .with_partition_index(METADATA_PARTITION)
                            .with_error_code(partition_error.map_or(0, error_code))
                            .with_leader_id(self.leader_id().unwrap_or(-1).into())
                            .with_leader_epoch(self.epoch()),
                    ]),
            ])
    }

    /// BeginQuorumEpoch: a new leader announces itself (also its heartbeat).
    pub(crate) fn handle_begin_quorum_epoch(
        &mut self,
        handle: ReplyHandle,
        r: BeginQuorumEpochRequest,
        now_ms: u64,
    ) -> Result<()> {
        let error = if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            Some((Some(ResponseError::InconsistentClusterId), None))
        } else {
            None
        };
        let partition = r.topics.first().and_then(|t| t.partitions.first()).cloned();
        let error = error.or(match &partition {
            None => Some((Some(ResponseError::InvalidRequest), None)),
            Some(p) if p.leader_epoch < self.epoch() => {
                Some((None, Some(ResponseError::FencedLeaderEpoch)))
            }
            Some(p)
                if !ReplicaKey::from_wire(self.local.id, p.voter_directory_id)
                    .matches(&self.local) =>
            {
                Some((None, Some(ResponseError::InvalidVoterKey)))
            }
            _ => None,
        });
        if let Some((top, part)) = error {
            let resp = self.begin_quorum_epoch_response(top, part);
            self.reply(handle, RaftResponse::BeginQuorumEpoch(resp));
            return Ok(());
        }
        if let Some(p) = partition {
            let hint = r
                .leader_endpoints
                .first()
                .map(|e| Endpoint::new(e.name.as_str(), e.host.as_str(), e.port));
            self.maybe_transition_from(Some(p.leader_id.0), p.leader_epoch, hint, true, now_ms)?;
        }
        let resp = self.begin_quorum_epoch_response(None, None);
        self.reply(handle, RaftResponse::BeginQuorumEpoch(resp));
        Ok(())
    }

    pub(crate) fn end_quorum_epoch_response(
        &self,
        error: Option<ResponseError>,
        partition_error: Option<ResponseError>,
    ) -> EndQuorumEpochResponse {
        EndQuorumEpochResponse::default()
            .with_error_code(error.map_or(0, error_code))
            .with_topics(vec![
                end_quorum_epoch_response::TopicData::default()
                    .with_topic_name(Self::topic_name())
                    .with_partitions(vec![
                        end_quorum_epoch_response::PartitionData::default()
                            .with_partition_index(METADATA_PARTITION)
                            .with_error_code(partition_error.map_or(0, error_code))
                            .with_leader_id(self.leader_id().unwrap_or(-1).into())
                            .with_leader_epoch(self.epoch()),
                    ]),
            ])
    }

    /// EndQuorumEpoch: the leader resigns; its preferred successors shorten
    /// their fetch timeout by their position (Kafka's `endEpochElectionBackoff`).
    pub(crate) fn handle_end_quorum_epoch(
        &mut self,
        handle: ReplyHandle,
        r: EndQuorumEpochRequest,
        now_ms: u64,
    ) -> Result<()> {
        if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            let resp =
                self.end_quorum_epoch_response(Some(ResponseError::InconsistentClusterId), None);
            self.reply(handle, RaftResponse::EndQuorumEpoch(resp));
            return Ok(());
        }
        let Some(p) = r.topics.first().and_then(|t| t.partitions.first()).cloned() else {
            let resp = self.end_quorum_epoch_response(Some(ResponseError::InvalidRequest), None);
            self.reply(handle, RaftResponse::EndQuorumEpoch(resp));
            return Ok(());
        };
        if p.leader_epoch < self.epoch() {
            let resp = self.end_quorum_epoch_response(None, Some(ResponseError::FencedLeaderEpoch));
            self.reply(handle, RaftResponse::EndQuorumEpoch(resp));
            return Ok(());
        }
        self.maybe_transition(Some(p.leader_id.0), p.leader_epoch, None, now_ms)?;
        let successors: Vec<i32> = if p.preferred_candidates.is_empty() {
            p.preferred_successors.clone()
        } else {
            p.preferred_candidates
                .iter()
                .map(|c| c.candidate_id.0)
                .collect()
        };
        let position = successors.iter().position(|id| *id == self.local.id);
        let backoff = match position {
            Some(pos) => self
                .config
                .retry_backoff_ms
                .saturating_mul(1u64 << pos.min(16))
                .min(self.config.election_timeout_ms),
            None => self.random_election_timeout(),
        };
        let local = self.local.id;
        if let EpochState::Follower(f) = &mut self.state
            && f.epoch == p.leader_epoch
            && f.leader_id == p.leader_id.0
            && f.leader_id != local
        {
            f.fetch_deadline_ms = f.fetch_deadline_ms.min(now_ms + backoff);
        }
        let resp = self.end_quorum_epoch_response(None, None);
        self.reply(handle, RaftResponse::EndQuorumEpoch(resp));
        Ok(())
    }

    pub(crate) fn handle_end_quorum_epoch_response(
        &mut self,
        inflight: Inflight,
        r: EndQuorumEpochResponse,
        now_ms: u64,
    ) -> Result<()> {
        let partition = r.topics.first().and_then(|t| t.partitions.first()).cloned();
        if let Some(p) = &partition
            && self.maybe_transition(Some(p.leader_id.0), p.leader_epoch, None, now_ms)?
        {
            return Ok(());
        }
        if let EpochState::Resigned(s) = &mut self.state
            && inflight.epoch == s.epoch
        {
            if r.error_code == 0 && partition.is_some_and(|p| p.error_code == 0) {
                s.unacked.remove(&inflight.node_id);
            } else {
                s.retry_at
                    .insert(inflight.node_id, now_ms + self.config.retry_backoff_ms);
            }
        }
        Ok(())
    }

    /// DescribeQuorum (55): answered by the leader only.
    pub(crate) fn describe_quorum(&self, now_ms: u64) -> DescribeQuorumResponse {
        let _ = now_ms;
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
            .with_leader_id(self.leader_id().unwrap_or(-1).into())
            .with_leader_epoch(self.epoch());
        if self.role() != Role::Leader {
            partition = partition.with_error_code(error_code(ResponseError::NotLeaderOrFollower));
        } else {
            let status = self.status();
            partition = partition
                .with_high_watermark(self.high_watermark.unwrap_or(-1))
                .with_current_voters(status.voters.iter().map(to_state).collect())
                .with_observers(status.observers.iter().map(to_state).collect());
        }
        let nodes = self
            .voters
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
                    .with_topic_name(Self::topic_name())
                    .with_partitions(vec![partition]),
            ])
            .with_nodes(nodes)
    }
}
