//! Leader: appends a LeaderChange control batch as the first batch of its
//! epoch, announces itself with BeginQuorumEpoch (re-sent as a heartbeat to
//! voters that do not fetch), answers Fetch (records, a diverging epoch, or a
//! snapshot id; validated by `fetch.rs`) and parks empty fetches, advances
//! the high watermark from the voters' flushed offsets, accepts proposals,
//! appends voter changes and answers them once committed (KIP-853, the
//! requests are `voter_change.rs`), and resigns when check-quorum fails.
//! Must not count an unflushed offset (its own included) towards the high
//! watermark, nor expose one before a batch of its own epoch commits.
//!
//! Imports only the leaves (`core`, `output`, `membership`); the engine
//! performs the transitions this state asks for ([`Next::Resign`]).

mod parked;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::{
    ResponseError,
    messages::{
        BeginQuorumEpochRequest, FetchResponse, begin_quorum_epoch_request, fetch_response,
        leader_change_message,
    },
};

use super::{
    Command, ElectionState, METADATA_PARTITION, Proposed, RaftError, RaftRequest, RaftResponse,
    ReplicaStatus, Result,
    core::{Core, EpochView, Next, error_code, metadata_topic_id, topic_name},
    membership::{ChangeStage, PendingChange, reply_voter_change},
    output::{Output, RequestKind},
    proposal_bytes,
    voters::{ReplicaKey, VoterSet},
};
use crate::{
    log::{OffsetAndEpoch, ReplicatedLog},
    record::{
        ControlRecord, KRaftVersionRecord, LeaderChangeMessage, encode_control_batch,
        encode_data_batch,
    },
};
use parked::ParkedFetches;
pub(crate) use parked::{ParkedFetch, parked_wait};

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

/// Kafka's `LeaderState.OBSERVER_SESSION_TIMEOUT_MS`: an observer (a
/// replica that is not a voter) that has not fetched for 5 minutes is
/// forgotten: DescribeQuorum stops listing it and its progress is dropped.
pub(crate) const OBSERVER_SESSION_TIMEOUT_MS: u64 = 5 * 60 * 1000;

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
    parked: ParkedFetches,
    pub(crate) begin_epoch_inflight: BTreeSet<i32>,
    begin_epoch_next_ms: u64,
    check_quorum_deadline_ms: u64,
    fetched_since_check: BTreeSet<i32>,
    flush_due_ms: Option<u64>,
    /// KIP-853: the one voter change in flight.
    pub(crate) pending_change: Option<PendingChange>,
}

impl LeaderState {
    /// Leader of `epoch` elected by `granting`; its epoch starts at the log
    /// end (where its LeaderChange batch goes).
    pub(crate) fn new<L: ReplicatedLog>(
        core: &Core<L>,
        epoch: i32,
        granting: Vec<i32>,
        now_ms: u64,
    ) -> Self {
        Self {
            epoch,
            epoch_start_offset: core.log.end_offset().offset,
            granting,
            replicas: core
                .voters()
                .iter()
                .map(|v| (v.key.id, ReplicaProgress::new(v.key)))
                .collect(),
            parked: ParkedFetches::default(),
            begin_epoch_inflight: BTreeSet::new(),
            begin_epoch_next_ms: now_ms,
            check_quorum_deadline_ms: now_ms + core.config.check_quorum_timeout_ms(),
            fetched_since_check: BTreeSet::new(),
            flush_due_ms: Some(now_ms),
            pending_change: None,
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        self.check_quorum_deadline_ms
            .min(self.begin_epoch_next_ms)
            .min(
                self.pending_change
                    .as_ref()
                    .map_or(u64::MAX, PendingChange::wake_ms),
            )
            .min(self.flush_due_ms.unwrap_or(u64::MAX))
            .min(self.parked.next_deadline())
    }

    /// A leader has voted for itself and leads.
    pub(crate) fn election_state(&self, local: ReplicaKey) -> ElectionState {
        ElectionState {
            epoch: self.epoch,
            leader_id: Some(local.id),
            voted_key: Some(local),
        }
    }

    /// What responses say of this epoch: this node leads it.
    pub(crate) fn view<L: ReplicatedLog>(&self, core: &Core<L>) -> EpochView {
        core.view(self.epoch, Some(core.local.id), None)
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

    /// The observers that fetched within [`OBSERVER_SESSION_TIMEOUT_MS`] of
    /// `now_ms` (Kafka's `LeaderState.clearInactiveObservers`).
    pub(crate) fn observer_statuses(&self, voters: &VoterSet, now_ms: u64) -> Vec<ReplicaStatus> {
        self.replicas
            .values()
            .filter(|p| !voters.contains_key(&p.key) && observer_active(p, now_ms))
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

    /// Whether `key` (id and directory id) reached the log end at or after
    /// `since_ms`.
    pub(crate) fn caught_up_since(&self, key: &ReplicaKey, since_ms: u64) -> bool {
        self.replicas
            .get(&key.id)
            .is_some_and(|p| p.key == *key && p.last_caught_up_ms.is_some_and(|t| t >= since_ms))
    }

    /// Appends the LeaderChange batch, asks for its flush and announces the
    /// epoch to every other voter.
    pub(crate) fn on_enter<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Result<Option<Next>> {
        let epoch = self.epoch;
        // A new leader does not keep the high watermark it knew as a follower:
        // it exposes one only once a batch of its own epoch commits (Kafka's
        // `QuorumState.transitionToLeader`).
        core.high_watermark = None;
        let message = LeaderChangeMessage::default()
            .with_version(0)
            .with_leader_id(core.local.id.into())
            .with_voters(
                core.voters()
                    .iter()
                    // Version 0 of LeaderChangeMessage (what `record` encodes) has no
                    // directory ids.
                    .map(|v| leader_change_message::Voter::default().with_voter_id(v.key.id))
                    .collect(),
            )
            .with_granting_voters(
                self.granting
                    .iter()
                    .map(|id| leader_change_message::Voter::default().with_voter_id(*id))
                    .collect(),
            );
        let base = core.log.end_offset().offset;
        let mut records = vec![ControlRecord::LeaderChange(message)];
        if core.needs_bootstrap_records() {
            // KIP-853: the first leader of a kraft.version 1 quorum writes the
            // bootstrap voter set into the log, in its LeaderChange batch.
            records.push(ControlRecord::KRaftVersion(
                KRaftVersionRecord::default()
                    .with_version(0)
                    .with_k_raft_version(core.kraft_version),
            ));
            records.push(ControlRecord::Voters(core.voters().to_record()));
        }
        let batch = encode_control_batch(
            base,
            epoch,
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            &records,
        )?;
        core.log.append_as_leader(batch, epoch)?;
        core.scan_control_records(base)?;
        self.poll(core, out, now_ms)
    }

    fn begin_quorum_epoch_request<L: ReplicatedLog>(
        &self,
        core: &Core<L>,
        to: i32,
    ) -> BeginQuorumEpochRequest {
        let voter_directory = core
            .voters()
            .get(to)
            .map_or(uuid::Uuid::nil(), |v| v.key.directory_id_or_nil());
        BeginQuorumEpochRequest::default()
            .with_cluster_id(core.cluster_id_wire())
            .with_voter_id(to.into())
            .with_topics(vec![
                begin_quorum_epoch_request::TopicData::default()
                    .with_topic_name(topic_name())
                    .with_partitions(vec![
                        begin_quorum_epoch_request::PartitionData::default()
                            .with_partition_index(METADATA_PARTITION)
                            .with_voter_directory_id(voter_directory)
                            .with_leader_id(core.local.id.into())
                            .with_leader_epoch(self.epoch),
                    ]),
            ])
            .with_leader_endpoints(
                core.voters()
                    .get(core.local.id)
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

    /// Check-quorum, the lingering flush, BeginQuorumEpoch to quiet voters,
    /// expired parked fetches, and the pending voter change.
    pub(crate) fn poll<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Result<Option<Next>> {
        let majority = core.voters().majority();
        let local = core.local.id;
        let interval = core.config.begin_quorum_epoch_interval_ms();
        // Check-quorum: a majority of voters (this node counts if it is one)
        // must have fetched within 1.5 × the fetch timeout.
        // The window restarts as soon as a majority fetched (`record_fetch`),
        // as Kafka's `LeaderState.updateCheckQuorumForFollowingVoter`.
        if now_ms >= self.check_quorum_deadline_ms {
            let heard = self.fetched_since_check.len() + usize::from(core.is_voter());
            if heard >= majority {
                self.fetched_since_check.clear();
                self.check_quorum_deadline_ms = now_ms + core.config.check_quorum_timeout_ms();
            } else {
                tracing::info!(
                    node = local,
                    epoch = self.epoch,
                    heard,
                    majority,
                    "check-quorum failed; resigning"
                );
                return Ok(Some(Next::Resign));
            }
        }
        if let Some(due) = self.flush_due_ms
            && due <= now_ms
        {
            self.flush_due_ms = None;
            out.push(Command::Flush);
        }
        if now_ms >= self.begin_epoch_next_ms {
            self.begin_epoch_next_ms = now_ms + interval;
            let quiet: Vec<i32> = core
                .voters()
                .ids()
                .filter(|id| *id != local && !self.begin_epoch_inflight.contains(id))
                .filter(|id| {
                    self.replicas
                        .get(id)
                        .and_then(|p| p.last_fetch_ms)
                        .is_none_or(|t| now_ms.saturating_sub(t) >= interval)
                })
                .collect();
            self.begin_epoch_inflight.extend(quiet.iter().copied());
            for to in quiet {
                let request = self.begin_quorum_epoch_request(core, to);
                core.send(
                    out,
                    to,
                    RequestKind::BeginQuorumEpoch,
                    self.epoch,
                    RaftRequest::BeginQuorumEpoch(request),
                );
            }
        }
        for p in self.parked.take_expired(now_ms) {
            self.answer_parked(core, out, p)?;
        }
        Ok(self.check_membership(core, out, now_ms))
    }

    /// A BeginQuorumEpoch to `node_id` was answered or failed: it may be
    /// sent again at the next interval.
    pub(crate) fn on_begin_quorum_epoch_done(&mut self, node_id: i32) {
        self.begin_epoch_inflight.remove(&node_id);
    }

    /// The log was flushed: the high watermark may move.
    pub(crate) fn on_flush<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Result<()> {
        if self.update_high_watermark(core, out) {
            self.high_watermark_moved(core, out, now_ms)?;
        }
        Ok(())
    }

    /// The high watermark moved with no new data to send (decisions D22):
    /// with linger 0 every parked fetch is answered now, as Kafka's
    /// `onUpdateLeaderHighWatermark` does; with a linger, no parked fetch
    /// waits past the linger from now, and the next append answers them all
    /// at once with its data and the new high watermark.
    pub(crate) fn high_watermark_moved<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Result<()> {
        let linger = core.config.append_linger_ms;
        if linger == 0 {
            return self.complete_parked(core, out);
        }
        self.parked.answer_by(now_ms.saturating_add(linger));
        Ok(())
    }

    /// Before this leader resigns: a high watermark held back from parked
    /// fetches within the linger (decisions D22) is sent to them first, as
    /// without the linger they would have had it already; the resignation
    /// then reaches them through their next Fetch and EndQuorumEpoch.
    pub(crate) fn release_held_high_watermark<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
    ) -> Result<()> {
        if self.parked.holds_high_watermark() {
            self.complete_parked(core, out)?;
        }
        Ok(())
    }

    /// Recomputes the high watermark: the offset a majority of voters hold
    /// flushed (the leader's own flushed end offset if it is a voter), once
    /// it passes the epoch's LeaderChange batch. Returns whether it moved.
    pub(crate) fn update_high_watermark<L: ReplicatedLog>(
        &self,
        core: &mut Core<L>,
        out: &mut Output,
    ) -> bool {
        let mut offsets: Vec<i64> = core
            .voters()
            .iter()
            .filter_map(|v| {
                if v.key.id == core.local.id {
                    Some(core.log.flushed_end_offset())
                } else {
                    self.replicas
                        .get(&v.key.id)
                        .filter(|p| p.key.matches(&v.key))
                        .and_then(|p| p.end_offset)
                }
            })
            .collect();
        let majority = core.voters().majority();
        if offsets.len() < majority {
            return false;
        }
        offsets.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = offsets[majority - 1];
        if candidate > self.epoch_start_offset
            && core.high_watermark.is_none_or(|hw| candidate > hw)
        {
            core.advance_high_watermark(candidate, out);
            return true;
        }
        false
    }

    /// Check-quorum: voter `key` fetched (a Fetch or a FetchSnapshot, Kafka's
    /// `updateCheckQuorumForFollowingVoter`); the window restarts once a
    /// majority did.
    pub(crate) fn note_voter_fetch<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        key: ReplicaKey,
        now_ms: u64,
    ) {
        if key.id < 0 || key.id == core.local.id || !core.voters().contains_key(&key) {
            return;
        }
        self.fetched_since_check.insert(key.id);
        if self.fetched_since_check.len() + usize::from(core.is_voter()) >= core.voters().majority()
        {
            self.fetched_since_check.clear();
            self.check_quorum_deadline_ms = now_ms + core.config.check_quorum_timeout_ms();
        }
    }

    /// Replica `key` fetched at `fetch_offset`: its progress, and
    /// check-quorum for a voter.
    pub(crate) fn record_fetch<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        key: ReplicaKey,
        fetch_offset: i64,
        now_ms: u64,
    ) {
        if key.id < 0 || key.id == core.local.id {
            return;
        }
        self.note_voter_fetch(core, key, now_ms);
        let log_end = core.log.end_offset().offset;
        if !self.replicas.contains_key(&key.id) {
            // A new replica: first forget the observers whose session ended,
            // so the map holds only replicas heard from in 5 minutes.
            let voters = core.voters();
            self.replicas
                .retain(|_, p| voters.contains_key(&p.key) || observer_active(p, now_ms));
        }
        let progress = self
            .replicas
            .entry(key.id)
            .or_insert_with(|| ReplicaProgress::new(key));
        if progress.key != key {
            // Same id, another directory (a replaced disk): a new replica.
            *progress = ReplicaProgress::new(key);
        }
        progress.update(fetch_offset, log_end, now_ms);
    }

    /// Parks a Fetch with nothing to return yet; `behind_high_watermark`:
    /// it is owed the leader's high watermark (decisions D22).
    pub(crate) fn park(&mut self, fetch: ParkedFetch, behind_high_watermark: bool) {
        self.parked.park(fetch, behind_high_watermark);
    }

    fn answer_parked<L: ReplicatedLog>(
        &self,
        core: &Core<L>,
        out: &mut Output,
        p: ParkedFetch,
    ) -> Result<()> {
        let records = Some(core.log.read(p.fetch_offset, p.max_bytes)?.records);
        let resp = fetch_response(core, &self.view(core), None, None, records, None, None);
        out.reply(p.handle, RaftResponse::Fetch(resp));
        Ok(())
    }

    /// Answers every parked fetch now (new data; a new high watermark with
    /// linger 0, decisions D22; a resignation after a held one).
    pub(crate) fn complete_parked<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
    ) -> Result<()> {
        for p in self.parked.take_all() {
            self.answer_parked(core, out, p)?;
        }
        Ok(())
    }

    /// The state left Leader (`view`: the new state's): the pending change
    /// and parked fetches get NOT_LEADER_OR_FOLLOWER with the new leader and
    /// epoch.
    pub(crate) fn on_leave<L: ReplicatedLog>(
        mut self,
        core: &Core<L>,
        out: &mut Output,
        view: &EpochView,
    ) {
        if let Some(p) = self.pending_change.filter(|p| !p.answered) {
            reply_voter_change(
                out,
                view,
                p.kind,
                p.handle,
                Some(ResponseError::NotLeaderOrFollower),
                Some("the leader changed; retry on the new leader"),
            );
        }
        for p in self.parked.take_all() {
            let resp = fetch_response(
                core,
                view,
                None,
                Some(ResponseError::NotLeaderOrFollower),
                None,
                None,
                None,
            );
            out.reply(p.handle, RaftResponse::Fetch(resp));
        }
    }

    /// Appends `records` as one data batch of this epoch.
    pub(crate) fn propose<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        records: &[Bytes],
        now_ms: u64,
    ) -> Result<Proposed> {
        let epoch = self.epoch;
        let bytes = proposal_bytes(records);
        if records.is_empty() || bytes > core.config.max_batch_bytes {
            return Err(RaftError::InvalidProposal {
                records: records.len(),
                bytes,
                max: core.config.max_batch_bytes,
            });
        }
        let base = core.log.end_offset().offset;
        let batch = encode_data_batch(
            base,
            epoch,
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            records,
        )?;
        let info = core.log.append_as_leader(batch, epoch)?;
        self.appended(core, out, now_ms)?;
        Ok(Proposed {
            last_offset: info.last_offset,
            epoch,
        })
    }

    /// After any append as leader: schedule the flush after the linger,
    /// answer parked fetches (new data), and recompute the high watermark (a
    /// new voter set may move it).
    pub(crate) fn appended<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Result<()> {
        let linger = core.config.append_linger_ms;
        self.flush_due_ms = Some(self.flush_due_ms.unwrap_or(now_ms + linger));
        self.update_high_watermark(core, out);
        self.complete_parked(core, out)
    }

    /// Appends a `Voters` record with `next`; the set is in effect from now
    /// on. Returns the record's offset.
    pub(crate) fn append_voters<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        next: VoterSet,
        now_ms: u64,
    ) -> Result<i64> {
        let epoch = self.epoch;
        let base = core.log.end_offset().offset;
        let batch = encode_control_batch(
            base,
            epoch,
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            &[ControlRecord::Voters(next.to_record())],
        )?;
        core.log.append_as_leader(batch, epoch)?;
        core.push_voters(base, next);
        tracing::info!(node = core.local.id, offset = base, voters = ?core.voters().ids().collect::<Vec<_>>(), "voter set changed");
        self.appended(core, out, now_ms)?;
        Ok(base)
    }

    /// Answers a committed or timed-out voter change; asks to resign once
    /// this leader's own removal is committed.
    fn check_membership<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Option<Next> {
        let hw = core.high_watermark;
        if let Some(p) = self.pending_change.clone() {
            let committed = matches!(p.stage, ChangeStage::AwaitingCommit { offset } if hw.is_some_and(|hw| hw > offset));
            let view = self.view(core);
            if committed {
                self.pending_change = None;
                if !p.answered {
                    reply_voter_change(out, &view, p.kind, p.handle, None, None);
                }
            } else if now_ms >= p.deadline_ms && p.answered {
                self.pending_change = None;
            } else if now_ms >= p.deadline_ms {
                self.pending_change = None;
                let text = match p.stage {
                    ChangeStage::AwaitingApiVersions { .. } => {
                        "the new voter did not answer ApiVersions as a caught-up observer before the request's timeout; retry"
                    }
                    ChangeStage::AwaitingCommit { .. } => {
                        "the voter change did not commit in time; it may still commit"
                    }
                };
                reply_voter_change(
                    out,
                    &view,
                    p.kind,
                    p.handle,
                    Some(ResponseError::RequestTimedOut),
                    Some(text),
                );
            }
        }
        let removal_committed = !core.is_voter()
            && core
                .voter_history()
                .latest_offset()
                .is_some_and(|o| hw.is_some_and(|hw| hw > o));
        if removal_committed {
            tracing::info!(node = core.local.id, "own removal committed; resigning");
            return Some(Next::Resign);
        }
        None
    }

    /// The preferred successors when resigning: the other voters, most
    /// caught up first (Kafka's `LeaderState.nonLeaderVotersByDescendingFetchOffset`).
    pub(crate) fn successors<L: ReplicatedLog>(&self, core: &Core<L>) -> Vec<ReplicaKey> {
        let mut others: Vec<(i64, ReplicaKey)> = core
            .voters()
            .iter()
            .filter(|v| v.key.id != core.local.id)
            .map(|v| {
                let offset = self.replicas.get(&v.key.id).and_then(|p| p.end_offset);
                (offset.unwrap_or(-1), v.key)
            })
            .collect();
        others.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
        others.into_iter().map(|(_, k)| k).collect()
    }
}

/// A Fetch response in the epoch of `view`: the errors (top level,
/// partition), records, a diverging epoch or a snapshot id, with this node's
/// high watermark and log start.
pub(crate) fn fetch_response<L: ReplicatedLog>(
    core: &Core<L>,
    view: &EpochView,
    top_error: Option<ResponseError>,
    partition_error: Option<ResponseError>,
    records: Option<Bytes>,
    diverging: Option<OffsetAndEpoch>,
    snapshot: Option<OffsetAndEpoch>,
) -> FetchResponse {
    let mut partition = fetch_response::PartitionData::default()
        .with_partition_index(METADATA_PARTITION)
        .with_error_code(partition_error.map_or(0, error_code))
        .with_high_watermark(core.high_watermark.unwrap_or(-1))
        .with_log_start_offset(core.log.start_offset())
        .with_current_leader(
            fetch_response::LeaderIdAndEpoch::default()
                .with_leader_id(view.leader_id.unwrap_or(-1).into())
                .with_leader_epoch(view.epoch),
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
    let endpoints = view
        .leader_endpoint
        .clone()
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
                .with_topic(topic_name())
                .with_topic_id(metadata_topic_id())
                .with_partitions(vec![partition]),
        ])
        .with_node_endpoints(endpoints)
}

/// Whether an observer's last fetch is within [`OBSERVER_SESSION_TIMEOUT_MS`].
fn observer_active(p: &ReplicaProgress, now_ms: u64) -> bool {
    p.last_fetch_ms
        .is_some_and(|t| now_ms.saturating_sub(t) < OBSERVER_SESSION_TIMEOUT_MS)
}
