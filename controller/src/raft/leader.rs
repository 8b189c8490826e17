//! Leader: appends a LeaderChange control batch as the first batch of its
//! epoch, announces itself with BeginQuorumEpoch (re-sent as a heartbeat to
//! voters that do not fetch), answers Fetch (records, a diverging epoch, or a
//! snapshot id) and parks empty fetches, advances the high watermark from the
//! voters' flushed offsets, accepts proposals, and resigns when check-quorum
//! fails. Must not count an unflushed offset (its own included) towards the
//! high watermark, nor expose one before a batch of its own epoch commits.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::{
    ResponseError,
    messages::{
        BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchResponse,
        begin_quorum_epoch_request, end_quorum_epoch_request, fetch_response,
        leader_change_message,
    },
};

use super::{
    Proposed, RaftError, RaftRequest, RaftResponse, ReplicaStatus, ReplyHandle, Result, Role,
    engine::{EpochState, RaftEngine, RequestKind, error_code, metadata_topic_id},
    proposal_bytes,
    voters::ReplicaKey,
};
use crate::{
    log::{OffsetAndEpoch, ReplicatedLog},
    record::{
        ControlRecord, KRaftVersionRecord, LeaderChangeMessage, encode_control_batch,
        encode_data_batch,
    },
};

/// What the leader knows of one replica (Kafka's `LeaderState.ReplicaState`).
#[derive(Debug, Clone)]
pub(crate) struct ReplicaProgress {
    pub(crate) key: ReplicaKey,
    pub(crate) end_offset: Option<i64>,
    pub(crate) last_fetch_ms: Option<u64>,
    pub(crate) last_caught_up_ms: Option<u64>,
    /// The leader's log end offset at this replica's previous fetch.
    last_fetch_leader_end: Option<i64>,
}

impl ReplicaProgress {
    fn new(key: ReplicaKey) -> Self {
        Self {
            key,
            end_offset: None,
            last_fetch_ms: None,
            last_caught_up_ms: None,
            last_fetch_leader_end: None,
        }
    }

    /// Kafka's `ReplicaState.updateFetchState`: caught up now if it fetched at
    /// the leader's end; caught up as of its previous fetch if it reached the
    /// end the leader had then.
    fn update(&mut self, fetch_offset: i64, leader_end: i64, now_ms: u64) {
        if fetch_offset >= leader_end {
            self.last_caught_up_ms = Some(now_ms);
        } else if let (Some(prev_end), Some(prev_fetch)) =
            (self.last_fetch_leader_end, self.last_fetch_ms)
            && fetch_offset >= prev_end
        {
            self.last_caught_up_ms = Some(
                self.last_caught_up_ms
                    .map_or(prev_fetch, |t| t.max(prev_fetch)),
            );
        }
        self.end_offset = Some(fetch_offset);
        self.last_fetch_ms = Some(now_ms);
        self.last_fetch_leader_end = Some(leader_end);
    }

    fn status(&self) -> ReplicaStatus {
        ReplicaStatus {
            key: self.key,
            log_end_offset: self.end_offset,
            last_fetch_ms: self.last_fetch_ms,
            last_caught_up_ms: self.last_caught_up_ms,
        }
    }
}

/// A Fetch with nothing to return yet, answered when data arrives, the high
/// watermark moves, or its deadline passes.
#[derive(Debug, Clone)]
pub(crate) struct ParkedFetch {
    handle: ReplyHandle,
    fetch_offset: i64,
    max_bytes: usize,
    deadline_ms: u64,
}

/// State of the leader.
#[derive(Debug)]
pub(crate) struct LeaderState {
    pub(crate) epoch: i32,
    /// Offset of the LeaderChange batch: the high watermark must pass it.
    pub(crate) epoch_start_offset: i64,
    pub(crate) granting: Vec<i32>,
    /// Every replica that fetched in this epoch (voters are pre-filled);
    /// whether one is a voter is decided by the current voter set.
    pub(crate) replicas: BTreeMap<i32, ReplicaProgress>,
    parked: Vec<ParkedFetch>,
    pub(crate) begin_epoch_inflight: BTreeSet<i32>,
    begin_epoch_next_ms: u64,
    check_quorum_deadline_ms: u64,
    fetched_since_check: BTreeSet<i32>,
    flush_due_ms: Option<u64>,
    /// KIP-853: the one voter change in flight.
    pub(crate) pending_change: Option<super::membership::PendingChange>,
}

impl LeaderState {
    pub(crate) fn new<L: ReplicatedLog>(
        engine: &RaftEngine<L>,
        epoch: i32,
        granting: Vec<i32>,
        now_ms: u64,
    ) -> Self {
        Self {
            epoch,
            epoch_start_offset: engine.log.end_offset().offset,
            granting,
            replicas: engine
                .voters
                .iter()
                .map(|v| (v.key.id, ReplicaProgress::new(v.key)))
                .collect(),
            parked: Vec::new(),
            begin_epoch_inflight: BTreeSet::new(),
            begin_epoch_next_ms: now_ms,
            check_quorum_deadline_ms: now_ms + engine.config.check_quorum_timeout_ms(),
            fetched_since_check: BTreeSet::new(),
            flush_due_ms: Some(now_ms),
            pending_change: None,
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        let parked = self
            .parked
            .iter()
            .map(|p| p.deadline_ms)
            .min()
            .unwrap_or(u64::MAX);
        self.check_quorum_deadline_ms
            .min(self.begin_epoch_next_ms)
            .min(
                self.pending_change
                    .as_ref()
                    .map_or(u64::MAX, |p| p.deadline_ms),
            )
            .min(self.flush_due_ms.unwrap_or(u64::MAX))
            .min(parked)
    }

    pub(crate) fn replica_status<L: ReplicatedLog>(
        &self,
        key: &ReplicaKey,
        local: ReplicaKey,
        log: &L,
        now_ms: u64,
    ) -> ReplicaStatus {
        if key.id == local.id {
            // As Kafka's `LeaderState.describeQuorum`: the leader is always
            // fetched and caught up as of now.
            return ReplicaStatus {
                key: *key,
                log_end_offset: Some(log.end_offset().offset),
                last_fetch_ms: Some(now_ms),
                last_caught_up_ms: Some(now_ms),
            };
        }
        self.replicas
            .get(&key.id)
            .filter(|p| p.key.matches(key))
            .map_or_else(
                || ReplicaProgress::new(*key).status(),
                ReplicaProgress::status,
            )
    }

    pub(crate) fn observer_statuses(&self, voters: &super::VoterSet) -> Vec<ReplicaStatus> {
        self.replicas
            .values()
            .filter(|p| !voters.contains_key(&p.key))
            .map(ReplicaProgress::status)
            .collect()
    }

    /// Whether the replica fetched up to the leader's end within `window_ms`
    /// (the AddRaftVoter caught-up check).
    pub(crate) fn is_caught_up(&self, key: &ReplicaKey, now_ms: u64, window_ms: u64) -> bool {
        self.replicas.get(&key.id).is_some_and(|p| {
            p.key == *key
                && p.last_caught_up_ms
                    .is_some_and(|t| now_ms.saturating_sub(t) <= window_ms)
        })
    }
}

impl<L: ReplicatedLog> RaftEngine<L> {
    /// Appends the LeaderChange batch, asks for its flush and announces the
    /// epoch to every other voter.
    pub(crate) fn leader_on_enter(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Leader(l) = &self.state else {
            return Ok(());
        };
        let epoch = l.epoch;
        // A new leader does not keep the high watermark it knew as a follower:
        // it exposes one only once a batch of its own epoch commits (Kafka's
        // `QuorumState.transitionToLeader`).
        self.high_watermark = None;
        let message = LeaderChangeMessage::default()
            .with_version(0)
            .with_leader_id(self.local.id.into())
            .with_voters(
                self.voters
                    .iter()
                    // Version 0 of LeaderChangeMessage (what `record` encodes) has no
                    // directory ids.
                    .map(|v| leader_change_message::Voter::default().with_voter_id(v.key.id))
                    .collect(),
            )
            .with_granting_voters(
                l.granting
                    .iter()
                    .map(|id| leader_change_message::Voter::default().with_voter_id(*id))
                    .collect(),
            );
        let base = self.log.end_offset().offset;
        let mut records = vec![ControlRecord::LeaderChange(message)];
        if self.needs_bootstrap_records() {
            // KIP-853: the first leader of a kraft.version 1 quorum writes the
            // bootstrap voter set into the log, in its LeaderChange batch.
            records.push(ControlRecord::KRaftVersion(
                KRaftVersionRecord::default()
                    .with_version(0)
                    .with_k_raft_version(self.kraft_version),
            ));
            records.push(ControlRecord::Voters(self.voters.to_record()));
        }
        let batch = encode_control_batch(
            base,
            epoch,
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            &records,
        )?;
        self.log.append_as_leader(batch, epoch)?;
        self.scan_control_records(base)?;
        self.leader_poll(now_ms)
    }

    fn begin_quorum_epoch_request(&self, to: i32) -> BeginQuorumEpochRequest {
        let voter_directory = self
            .voters
            .get(to)
            .map_or(uuid::Uuid::nil(), |v| v.key.directory_id_or_nil());
        BeginQuorumEpochRequest::default()
            .with_cluster_id(self.cluster_id_wire())
            .with_voter_id(to.into())
            .with_topics(vec![
                begin_quorum_epoch_request::TopicData::default()
                    .with_topic_name(Self::topic_name())
                    .with_partitions(vec![
                        begin_quorum_epoch_request::PartitionData::default()
                            .with_partition_index(super::METADATA_PARTITION)
                            .with_voter_directory_id(voter_directory)
                            .with_leader_id(self.local.id.into())
                            .with_leader_epoch(self.epoch()),
                    ]),
            ])
            .with_leader_endpoints(
                self.voters
                    .get(self.local.id)
                    .into_iter()
                    .flat_map(|v| v.endpoints.iter())
                    .map(|e| {
                        begin_quorum_epoch_request::LeaderEndpoint::default()
                            .with_name(e.name.clone().into())
                            .with_host(e.host.clone().into())
                            .with_port(e.port)
                    })
                    .collect(),
            )
    }

    pub(crate) fn leader_poll(&mut self, now_ms: u64) -> Result<()> {
        let majority = self.voters.majority();
        let local = self.local.id;
        let local_is_voter = self.is_voter();
        let interval = self.config.begin_quorum_epoch_interval_ms();
        let check_window = self.config.check_quorum_timeout_ms();
        let EpochState::Leader(l) = &mut self.state else {
            return Ok(());
        };
        // Check-quorum: a majority of voters (this node counts if it is one)
        // must have fetched within 1.5 × the fetch timeout.
        // The window restarts as soon as a majority fetched (`record_fetch`),
        // as Kafka's `LeaderState.updateCheckQuorumForFollowingVoter`.
        if now_ms >= l.check_quorum_deadline_ms {
            let heard = l.fetched_since_check.len() + usize::from(local_is_voter);
            if heard >= majority {
                l.fetched_since_check.clear();
                l.check_quorum_deadline_ms = now_ms + check_window;
            } else {
                tracing::info!(
                    node = local,
                    epoch = l.epoch,
                    heard,
                    majority,
                    "check-quorum failed; resigning"
                );
                return self.resign(now_ms);
            }
        }
        if let Some(due) = l.flush_due_ms
            && due <= now_ms
        {
            l.flush_due_ms = None;
            self.out.push(super::Command::Flush);
        }
        let EpochState::Leader(l) = &mut self.state else {
            return Ok(());
        };
        if now_ms >= l.begin_epoch_next_ms {
            l.begin_epoch_next_ms = now_ms + interval;
            let quiet: Vec<i32> = self
                .voters
                .ids()
                .filter(|id| *id != local && !l.begin_epoch_inflight.contains(id))
                .filter(|id| {
                    l.replicas
                        .get(id)
                        .and_then(|p| p.last_fetch_ms)
                        .is_none_or(|t| now_ms.saturating_sub(t) >= interval)
                })
                .collect();
            l.begin_epoch_inflight.extend(quiet.iter().copied());
            for to in quiet {
                let request = self.begin_quorum_epoch_request(to);
                self.send(
                    to,
                    RequestKind::BeginQuorumEpoch,
                    RaftRequest::BeginQuorumEpoch(request),
                );
            }
        }
        let EpochState::Leader(l) = &mut self.state else {
            return Ok(());
        };
        let expired: Vec<ParkedFetch> = {
            let (expired, kept) = l.parked.drain(..).partition(|p| p.deadline_ms <= now_ms);
            l.parked = kept;
            expired
        };
        for p in expired {
            self.answer_parked(p)?;
        }
        self.leader_check_membership(now_ms)
    }

    pub(crate) fn leader_on_flush(&mut self, _now_ms: u64) -> Result<()> {
        if self.leader_update_high_watermark() {
            self.complete_parked()?;
        }
        Ok(())
    }

    /// Recomputes the high watermark: the offset a majority of voters hold
    /// flushed (the leader's own flushed end offset if it is a voter), once
    /// it passes the epoch's LeaderChange batch. Returns whether it moved.
    pub(crate) fn leader_update_high_watermark(&mut self) -> bool {
        let EpochState::Leader(l) = &self.state else {
            return false;
        };
        let mut offsets: Vec<i64> = self
            .voters
            .iter()
            .filter_map(|v| {
                if v.key.id == self.local.id {
                    Some(self.log.flushed_end_offset())
                } else {
                    l.replicas
                        .get(&v.key.id)
                        .filter(|p| p.key.matches(&v.key))
                        .and_then(|p| p.end_offset)
                }
            })
            .collect();
        let majority = self.voters.majority();
        if offsets.len() < majority {
            return false;
        }
        offsets.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = offsets[majority - 1];
        if candidate > l.epoch_start_offset && self.high_watermark.is_none_or(|hw| candidate > hw) {
            self.advance_high_watermark(candidate);
            return true;
        }
        false
    }

    fn fetch_response(
        &self,
        top_error: Option<ResponseError>,
        partition_error: Option<ResponseError>,
        records: Option<Bytes>,
        diverging: Option<OffsetAndEpoch>,
        snapshot: Option<OffsetAndEpoch>,
    ) -> FetchResponse {
        let mut partition = fetch_response::PartitionData::default()
            .with_partition_index(super::METADATA_PARTITION)
            .with_error_code(partition_error.map_or(0, error_code))
            .with_high_watermark(self.high_watermark.unwrap_or(-1))
            .with_log_start_offset(self.log.start_offset())
            .with_current_leader(
                fetch_response::LeaderIdAndEpoch::default()
                    .with_leader_id(self.leader_id().unwrap_or(-1).into())
                    .with_leader_epoch(self.epoch()),
            )
            .with_records(records);
        if let Some(d) = diverging {
            partition = partition.with_diverging_epoch(
                fetch_response::EpochEndOffset::default()
                    .with_epoch(d.epoch)
                    .with_end_offset(d.offset),
            );
        }
        if let Some(s) = snapshot {
            partition = partition.with_snapshot_id(
                fetch_response::SnapshotId::default()
                    .with_end_offset(s.offset)
                    .with_epoch(s.epoch),
            );
        }
        let endpoints = self
            .leader_endpoint()
            .map(|(id, e)| {
                fetch_response::NodeEndpoint::default()
                    .with_node_id(id.into())
                    .with_host(e.host.into())
                    .with_port(i32::from(e.port))
            })
            .into_iter()
            .collect();
        FetchResponse::default()
            .with_error_code(top_error.map_or(0, error_code))
            .with_responses(vec![
                fetch_response::FetchableTopicResponse::default()
                    .with_topic(Self::topic_name())
                    .with_topic_id(metadata_topic_id())
                    .with_partitions(vec![partition]),
            ])
            .with_node_endpoints(endpoints)
    }

    /// Fetch (1), as Kafka's `handleFetchRequest`: validate the epoch, then the
    /// offset against the log (diverging epoch, snapshot), record the replica's
    /// progress, and answer with records or park the request.
    pub(crate) fn handle_fetch_request(
        &mut self,
        handle: ReplyHandle,
        _api_version: i16,
        r: FetchRequest,
        now_ms: u64,
    ) -> Result<()> {
        if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            let resp = self.fetch_response(
                Some(ResponseError::InconsistentClusterId),
                None,
                None,
                None,
                None,
            );
            self.reply(handle, RaftResponse::Fetch(resp));
            return Ok(());
        }
        let Some(p) = r.topics.first().and_then(|t| t.partitions.first()).cloned() else {
            let resp =
                self.fetch_response(Some(ResponseError::InvalidRequest), None, None, None, None);
            self.reply(handle, RaftResponse::Fetch(resp));
            return Ok(());
        };
        let epoch_error = if p.current_leader_epoch < self.epoch() {
            Some(ResponseError::FencedLeaderEpoch)
        } else if p.current_leader_epoch > self.epoch() {
            Some(ResponseError::UnknownLeaderEpoch)
        } else if self.role() != Role::Leader {
            Some(ResponseError::NotLeaderOrFollower)
        } else if p.fetch_offset < 0
            || p.last_fetched_epoch < 0
            || p.last_fetched_epoch > p.current_leader_epoch
        {
            Some(ResponseError::InvalidRequest)
        } else {
            None
        };
        if let Some(e) = epoch_error {
            let resp = self.fetch_response(None, Some(e), None, None, None);
            self.reply(handle, RaftResponse::Fetch(resp));
            return Ok(());
        }
        // Offset validation (Kafka's `ReplicatedLog.validateOffsetAndEpoch`):
        // the latest snapshot for a fetch below the log start, at the log
        // start with another epoch than the earliest snapshot's, or with a
        // last fetched epoch older than it (the fetcher's tail diverges
        // below the log start: no diverging epoch could name where). An
        // empty follower gets it at once too, as in Kafka's
        // `tryCompleteFetchRequest` (the bootstrap `0-0` checkpoint is never
        // fetched).
        let latest_snapshot = self.log.latest_snapshot_id().filter(|s| s.offset > 0);
        let start = self.log.start_offset();
        let below_earliest = self.log.earliest_snapshot_id().is_some_and(|e| {
            (p.fetch_offset == start && p.last_fetched_epoch != e.epoch)
                || p.last_fetched_epoch < e.epoch
        });
        if p.fetch_offset < start
            || (p.fetch_offset == 0 && latest_snapshot.is_some())
            || below_earliest
        {
            let snapshot = latest_snapshot;
            let resp = self.fetch_response(None, None, None, None, snapshot);
            self.reply(handle, RaftResponse::Fetch(resp));
            return Ok(());
        }
        let end_of_epoch = self.log.end_offset_for_epoch(p.last_fetched_epoch);
        if end_of_epoch.epoch != p.last_fetched_epoch || p.fetch_offset > end_of_epoch.offset {
            let resp = self.fetch_response(None, None, None, Some(end_of_epoch), None);
            self.reply(handle, RaftResponse::Fetch(resp));
            return Ok(());
        }
        let replica_id = if r.replica_state.replica_id.0 >= 0 {
            r.replica_state.replica_id.0
        } else {
            r.replica_id.0
        };
        let key = ReplicaKey::from_wire(replica_id, p.replica_directory_id);
        self.record_fetch(key, p.fetch_offset, now_ms);
        if self.leader_update_high_watermark() {
            self.complete_parked()?;
        }
        let max_bytes = usize::try_from(p.partition_max_bytes.max(1))
            .unwrap_or(usize::MAX)
            .min(self.config.max_fetch_bytes);
        let info = self.log.read(p.fetch_offset, max_bytes)?;
        let max_wait = u64::try_from(r.max_wait_ms.max(0))
            .unwrap_or(0)
            .min(self.config.fetch_max_wait_ms);
        if info.records.is_empty() && max_wait > 0 {
            if let EpochState::Leader(l) = &mut self.state {
                l.parked.push(ParkedFetch {
                    handle,
                    fetch_offset: p.fetch_offset,
                    max_bytes,
                    deadline_ms: now_ms + max_wait,
                });
            }
            return Ok(());
        }
        let resp = self.fetch_response(None, None, Some(info.records), None, None);
        self.reply(handle, RaftResponse::Fetch(resp));
        Ok(())
    }

    /// Check-quorum: voter `key` fetched (a Fetch or a FetchSnapshot, Kafka's
    /// `updateCheckQuorumForFollowingVoter`); the window restarts once a
    /// majority did.
    pub(crate) fn note_voter_fetch(&mut self, key: ReplicaKey, now_ms: u64) {
        if key.id < 0 || key.id == self.local.id || !self.voters.contains_key(&key) {
            return;
        }
        let local_is_voter = self.is_voter();
        let majority = self.voters.majority();
        let check_window = self.config.check_quorum_timeout_ms();
        let EpochState::Leader(l) = &mut self.state else {
            return;
        };
        l.fetched_since_check.insert(key.id);
        if l.fetched_since_check.len() + usize::from(local_is_voter) >= majority {
            l.fetched_since_check.clear();
            l.check_quorum_deadline_ms = now_ms + check_window;
        }
    }

    fn record_fetch(&mut self, key: ReplicaKey, fetch_offset: i64, now_ms: u64) {
        if key.id < 0 || key.id == self.local.id {
            return;
        }
        self.note_voter_fetch(key, now_ms);
        let log_end = self.log.end_offset().offset;
        let EpochState::Leader(l) = &mut self.state else {
            return;
        };
        let progress = l
            .replicas
            .entry(key.id)
            .or_insert_with(|| ReplicaProgress::new(key));
        if progress.key != key {
            // Same id, another directory (a replaced disk): a new replica.
            *progress = ReplicaProgress::new(key);
        }
        progress.update(fetch_offset, log_end, now_ms);
    }

    fn answer_parked(&mut self, p: ParkedFetch) -> Result<()> {
        let records = if self.role() == Role::Leader {
            Some(self.log.read(p.fetch_offset, p.max_bytes)?.records)
        } else {
            None
        };
        let error = (self.role() != Role::Leader).then_some(ResponseError::NotLeaderOrFollower);
        let resp = self.fetch_response(None, error, records, None, None);
        self.reply(p.handle, RaftResponse::Fetch(resp));
        Ok(())
    }

    /// Answers every parked fetch now (new data, or a new high watermark).
    fn complete_parked(&mut self) -> Result<()> {
        let parked = match &mut self.state {
            EpochState::Leader(l) => std::mem::take(&mut l.parked),
            _ => return Ok(()),
        };
        for p in parked {
            self.answer_parked(p)?;
        }
        Ok(())
    }

    /// Called after the state left Leader: parked fetches get
    /// NOT_LEADER_OR_FOLLOWER with the new leader and epoch.
    pub(crate) fn on_leave_leader(&mut self, leader: LeaderState, _now_ms: u64) {
        self.fail_pending_change(leader.pending_change);
        for p in leader.parked {
            let resp = self.fetch_response(
                None,
                Some(ResponseError::NotLeaderOrFollower),
                None,
                None,
                None,
            );
            self.reply(p.handle, RaftResponse::Fetch(resp));
        }
    }

    pub(crate) fn leader_propose(&mut self, records: &[Bytes], now_ms: u64) -> Result<Proposed> {
        let EpochState::Leader(l) = &self.state else {
            return Err(RaftError::NotLeader {
                epoch: self.epoch(),
                leader_id: self.leader_id(),
            });
        };
        let epoch = l.epoch;
        let bytes = proposal_bytes(records);
        if records.is_empty() || bytes > self.config.max_batch_bytes {
            return Err(RaftError::InvalidProposal {
                records: records.len(),
                bytes,
                max: self.config.max_batch_bytes,
            });
        }
        let base = self.log.end_offset().offset;
        let batch = encode_data_batch(
            base,
            epoch,
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            records,
        )?;
        let info = self.log.append_as_leader(batch, epoch)?;
        self.leader_appended(now_ms)?;
        Ok(Proposed {
            last_offset: info.last_offset,
            epoch,
        })
    }

    /// After any append as leader: schedule the flush after the linger,
    /// answer parked fetches (new data), and recompute the high watermark (a
    /// new voter set may move it).
    pub(crate) fn leader_appended(&mut self, now_ms: u64) -> Result<()> {
        let linger = self.config.append_linger_ms;
        if let EpochState::Leader(l) = &mut self.state {
            l.flush_due_ms = Some(l.flush_due_ms.unwrap_or(now_ms + linger));
        }
        self.leader_update_high_watermark();
        self.complete_parked()
    }

    /// Leader(e) → Resigned(e): names the other voters as preferred successors,
    /// most caught up first (Kafka's `LeaderState.nonLeaderVotersByDescendingFetchOffset`).
    pub(crate) fn resign(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Leader(l) = &self.state else {
            return Ok(());
        };
        let mut others: Vec<(i64, ReplicaKey)> = self
            .voters
            .iter()
            .filter(|v| v.key.id != self.local.id)
            .map(|v| {
                let offset = l.replicas.get(&v.key.id).and_then(|p| p.end_offset);
                (offset.unwrap_or(-1), v.key)
            })
            .collect();
        others.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
        let successors = others.into_iter().map(|(_, k)| k).collect();
        let epoch = l.epoch;
        let next = self.new_resigned(epoch, successors, now_ms);
        self.transition(EpochState::Resigned(next), now_ms)
    }

    pub(crate) fn end_quorum_epoch_request(
        &self,
        successors: &[ReplicaKey],
    ) -> EndQuorumEpochRequest {
        EndQuorumEpochRequest::default()
            .with_cluster_id(self.cluster_id_wire())
            .with_topics(vec![
                end_quorum_epoch_request::TopicData::default()
                    .with_topic_name(Self::topic_name())
                    .with_partitions(vec![
                        end_quorum_epoch_request::PartitionData::default()
                            .with_partition_index(super::METADATA_PARTITION)
                            .with_leader_id(self.local.id.into())
                            .with_leader_epoch(self.epoch())
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
}
