//! Dynamic voters (KIP-853): the voter set as the log defines it, and the
//! leader's handling of AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter.
//!
//! Owns the voter-set history (the 0-0 bootstrap checkpoint's set, then one
//! entry per `Voters` control record in the log, dropped again when the log is
//! truncated under it) and the one pending change of a leader. A change takes
//! effect as soon as it is appended (the high watermark and check-quorum use
//! the new set at once) and is answered once it is committed under that set,
//! or with REQUEST_TIMED_OUT when its timeout passes; a second change is
//! refused while a `Voters` record is uncommitted, whatever the timeouts.
//! Must not decide elections: only which set is current.

use kafka_protocol::{
    ResponseError,
    messages::{
        AddRaftVoterRequest, AddRaftVoterResponse, ApiVersionsRequest, ApiVersionsResponse,
        RemoveRaftVoterRequest, RemoveRaftVoterResponse, UpdateRaftVoterRequest,
        UpdateRaftVoterResponse, update_raft_voter_response,
    },
    protocol::StrBytes,
};

use super::{
    Destination, RaftResponse, ReplyHandle, RequestId, Result, Role,
    engine::{EpochState, RaftEngine, RequestKind, error_code},
    voters::{Endpoint, ReplicaKey, Voter, VoterSet},
};
use crate::{
    log::ReplicatedLog,
    record::{ControlRecord, DecodedBatch, encode_control_batch, iter_batches},
};

/// The name of the feature ApiVersions reports for the KRaft protocol version.
pub const KRAFT_VERSION_FEATURE: &str = "kraft.version";

/// The voter sets in effect over the log: the bootstrap set, then the set of
/// each `Voters` record by its offset (Kafka's `VoterSetHistory`).
#[derive(Debug, Clone)]
pub(crate) struct VoterHistory {
    bootstrap: VoterSet,
    entries: Vec<(i64, VoterSet)>,
}

impl VoterHistory {
    pub(crate) fn new(bootstrap: VoterSet) -> Self {
        Self {
            bootstrap,
            entries: Vec::new(),
        }
    }

    pub(crate) fn latest(&self) -> &VoterSet {
        self.entries.last().map_or(&self.bootstrap, |(_, s)| s)
    }

    /// The set before the newest `Voters` record (the bootstrap set if there
    /// is one record or none).
    pub(crate) fn previous(&self) -> &VoterSet {
        match self.entries.len() {
            0 | 1 => &self.bootstrap,
            n => &self.entries[n - 2].1,
        }
    }

    /// The set in effect at `end_offset`: that of the newest `Voters` record
    /// below it, else the bootstrap set (what a snapshot ending there holds).
    pub(crate) fn at(&self, end_offset: i64) -> &VoterSet {
        self.entries
            .iter()
            .rev()
            .find(|(o, _)| *o < end_offset)
            .map_or(&self.bootstrap, |(_, s)| s)
    }

    /// Offset of the newest `Voters` record, if the log has one.
    pub(crate) fn latest_offset(&self) -> Option<i64> {
        self.entries.last().map(|(o, _)| *o)
    }

    fn push(&mut self, offset: i64, set: VoterSet) {
        if self.latest_offset().is_none_or(|o| offset > o) {
            self.entries.push((offset, set));
        }
    }

    /// The set a snapshot ending at `last_contained_offset + 1` holds: it
    /// replaces every entry from `last_contained_offset` on (a snapshot
    /// installed beyond the log, or loaded on start).
    pub(crate) fn reset_at(&mut self, last_contained_offset: i64, set: VoterSet) {
        self.entries.retain(|(o, _)| *o < last_contained_offset);
        self.entries.push((last_contained_offset, set));
    }

    fn truncate(&mut self, offset: i64) {
        self.entries.retain(|(o, _)| *o < offset);
    }
}

/// Which RPC a pending change answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Add,
    Remove,
    Update,
}

#[derive(Debug, Clone)]
pub(crate) enum ChangeStage {
    /// AddRaftVoter: waiting for the new voter's ApiVersions.
    AwaitingApiVersions { request: RequestId, voter: Voter },
    /// The `Voters` record at `offset` must commit.
    AwaitingCommit { offset: i64 },
}

/// The one voter change a leader has in flight.
#[derive(Debug, Clone)]
pub(crate) struct PendingChange {
    pub(crate) kind: ChangeKind,
    pub(crate) handle: ReplyHandle,
    pub(crate) deadline_ms: u64,
    pub(crate) stage: ChangeStage,
}

fn message(text: &str) -> Option<StrBytes> {
    Some(StrBytes::from_string(text.to_owned()))
}

impl<L: ReplicatedLog> RaftEngine<L> {
    /// Reads the control records of the log from `from_offset` on, and applies
    /// KRaftVersion and Voters records to the voter-set history.
    pub(crate) fn scan_control_records(&mut self, from_offset: i64) -> Result<()> {
        let start = from_offset.max(self.log.start_offset());
        let info = self.log.read(start, usize::MAX)?;
        for item in iter_batches(&info.records, false) {
            let (header, bytes) = item?;
            if !header.is_control() || header.next_offset() <= start {
                continue;
            }
            let batch = DecodedBatch::decode(bytes)?;
            for (record, control) in batch.records.iter().zip(batch.control_records()?) {
                match control {
                    ControlRecord::KRaftVersion(v) => {
                        self.kraft_version = self.kraft_version.max(v.k_raft_version);
                    }
                    ControlRecord::Voters(v) => {
                        self.voter_history
                            .push(record.offset, VoterSet::from_record(&v));
                    }
                    _ => {}
                }
            }
        }
        self.voters = self.voter_history.latest().clone();
        Ok(())
    }

    /// Drops voter sets whose record a truncation removed.
    pub(crate) fn truncate_voter_history(&mut self, offset: i64) {
        self.voter_history.truncate(offset);
        self.voters = self.voter_history.latest().clone();
    }

    /// Whether the bootstrap voter set still has to be written to the log
    /// (kraft.version 1 and no `Voters` record yet): the first leader writes
    /// KRaftVersion and Voters in the batch of its LeaderChange.
    pub(crate) fn needs_bootstrap_records(&self) -> bool {
        self.kraft_version >= 1 && self.voter_history.latest_offset().is_none()
    }

    fn membership_reply(
        &mut self,
        kind: ChangeKind,
        handle: ReplyHandle,
        error: Option<ResponseError>,
        text: Option<&str>,
    ) {
        let code = error.map_or(0, error_code);
        let text = text.and_then(message);
        let response = match kind {
            ChangeKind::Add => RaftResponse::AddRaftVoter(
                AddRaftVoterResponse::default()
                    .with_error_code(code)
                    .with_error_message(text),
            ),
            ChangeKind::Remove => RaftResponse::RemoveRaftVoter(
                RemoveRaftVoterResponse::default()
                    .with_error_code(code)
                    .with_error_message(text),
            ),
            ChangeKind::Update => {
                let mut leader = update_raft_voter_response::CurrentLeader::default()
                    .with_leader_id(self.leader_id().unwrap_or(-1).into())
                    .with_leader_epoch(self.epoch());
                if let Some((_, e)) = self.leader_endpoint() {
                    leader = leader.with_host(e.host.into()).with_port(i32::from(e.port));
                }
                RaftResponse::UpdateRaftVoter(
                    UpdateRaftVoterResponse::default()
                        .with_error_code(code)
                        .with_current_leader(leader),
                )
            }
        };
        self.reply(handle, response);
    }

    /// The checks every voter change shares, in Kafka 4.1's order.
    fn membership_precheck(&self) -> Option<(ResponseError, &'static str)> {
        let EpochState::Leader(l) = &self.state else {
            return Some((ResponseError::NotLeaderOrFollower, "not the leader"));
        };
        if self.kraft_version < 1 {
            return Some((
                ResponseError::UnsupportedVersion,
                "kraft.version is 0: voters are static (controller.quorum.voters)",
            ));
        }
        let Some(hw) = self.high_watermark else {
            return Some((
                ResponseError::RequestTimedOut,
                "the leader has no high watermark yet; retry",
            ));
        };
        if l.pending_change.is_some() {
            return Some((
                ResponseError::RequestTimedOut,
                "another voter change is in progress; retry",
            ));
        }
        if self.voter_history.latest_offset().is_some_and(|o| o >= hw) {
            return Some((
                ResponseError::RequestTimedOut,
                "the last voter change is not committed yet; retry",
            ));
        }
        None
    }

    /// AddRaftVoter (80).
    pub(crate) fn handle_add_raft_voter(
        &mut self,
        handle: ReplyHandle,
        r: AddRaftVoterRequest,
        now_ms: u64,
    ) -> Result<()> {
        let kind = ChangeKind::Add;
        if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            self.membership_reply(
                kind,
                handle,
                Some(ResponseError::InconsistentClusterId),
                None,
            );
            return Ok(());
        }
        if let Some((e, text)) = self.membership_precheck() {
            self.membership_reply(kind, handle, Some(e), Some(text));
            return Ok(());
        }
        let key = ReplicaKey::from_wire(r.voter_id, r.voter_directory_id);
        if key.id < 0 || key.directory_id.is_none() || r.listeners.is_empty() {
            self.membership_reply(
                kind,
                handle,
                Some(ResponseError::InvalidRequest),
                Some("a voter needs a node id, a directory id and at least one listener"),
            );
            return Ok(());
        }
        if self.voters.contains_id(key.id) {
            self.membership_reply(kind, handle, Some(ResponseError::DuplicateVoter), None);
            return Ok(());
        }
        let window = self.config.fetch_timeout_ms;
        let caught_up =
            matches!(&self.state, EpochState::Leader(l) if l.is_caught_up(&key, now_ms, window));
        if !caught_up {
            self.membership_reply(
                kind,
                handle,
                Some(ResponseError::RequestTimedOut),
                Some("the new voter is not a caught-up observer of the leader yet; retry"),
            );
            return Ok(());
        }
        let endpoints: Vec<Endpoint> = r
            .listeners
            .iter()
            .map(|l| Endpoint::new(l.name.as_str(), l.host.as_str(), l.port))
            .collect();
        let voter = Voter {
            key,
            endpoints: endpoints.clone(),
            kraft_version: (0, 0),
        };
        let destination = Destination {
            node_id: key.id,
            endpoint: endpoints.first().cloned(),
        };
        let request = self.send_to(
            destination,
            RequestKind::ApiVersions,
            super::RaftRequest::ApiVersions(
                ApiVersionsRequest::default()
                    .with_client_software_name(StrBytes::from_static_str("kraft-controller"))
                    .with_client_software_version(StrBytes::from_static_str(env!(
                        "CARGO_PKG_VERSION"
                    ))),
            ),
        );
        let timeout = u64::try_from(r.timeout_ms)
            .ok()
            .filter(|t| *t > 0)
            .unwrap_or(self.config.request_timeout_ms);
        if let EpochState::Leader(l) = &mut self.state {
            l.pending_change = Some(PendingChange {
                kind,
                handle,
                deadline_ms: now_ms + timeout,
                stage: ChangeStage::AwaitingApiVersions { request, voter },
            });
        }
        Ok(())
    }

    /// The new voter's ApiVersions: it must support the current kraft.version.
    pub(crate) fn handle_api_versions_response(
        &mut self,
        id: RequestId,
        r: Option<ApiVersionsResponse>,
        now_ms: u64,
    ) -> Result<()> {
        let EpochState::Leader(l) = &mut self.state else {
            return Ok(());
        };
        let Some(pending) = l.pending_change.clone() else {
            return Ok(());
        };
        let ChangeStage::AwaitingApiVersions { request, mut voter } = pending.stage else {
            return Ok(());
        };
        if request != id {
            return Ok(());
        }
        l.pending_change = None;
        let Some(r) = r.filter(|r| r.error_code == 0) else {
            self.membership_reply(
                pending.kind,
                pending.handle,
                Some(ResponseError::RequestTimedOut),
                Some("the new voter did not answer ApiVersions; retry"),
            );
            return Ok(());
        };
        let range = r
            .supported_features
            .iter()
            .find(|f| f.name.as_str() == KRAFT_VERSION_FEATURE)
            .map(|f| (f.min_version, f.max_version));
        let Some(range) =
            range.filter(|(min, max)| *min <= self.kraft_version && self.kraft_version <= *max)
        else {
            self.membership_reply(
                pending.kind,
                pending.handle,
                Some(ResponseError::InvalidRequest),
                Some("the new voter does not support the cluster's kraft.version"),
            );
            return Ok(());
        };
        voter.kraft_version = range;
        let next = self.voters.with_added(voter);
        let offset = self.append_voters(next, now_ms)?;
        if let EpochState::Leader(l) = &mut self.state {
            l.pending_change = Some(PendingChange {
                stage: ChangeStage::AwaitingCommit { offset },
                ..pending
            });
        }
        Ok(())
    }

    pub(crate) fn on_api_versions_failed(&mut self, id: RequestId, now_ms: u64) -> Result<()> {
        self.handle_api_versions_response(id, None, now_ms)
    }

    /// RemoveRaftVoter (81).
    pub(crate) fn handle_remove_raft_voter(
        &mut self,
        handle: ReplyHandle,
        r: RemoveRaftVoterRequest,
        now_ms: u64,
    ) -> Result<()> {
        let kind = ChangeKind::Remove;
        if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            self.membership_reply(
                kind,
                handle,
                Some(ResponseError::InconsistentClusterId),
                None,
            );
            return Ok(());
        }
        if let Some((e, text)) = self.membership_precheck() {
            self.membership_reply(kind, handle, Some(e), Some(text));
            return Ok(());
        }
        let key = ReplicaKey::from_wire(r.voter_id, r.voter_directory_id);
        if self.voters.get(key.id).is_none_or(|v| v.key != key) {
            self.membership_reply(kind, handle, Some(ResponseError::VoterNotFound), None);
            return Ok(());
        }
        let Some(next) = self.voters.with_removed(&key).filter(|s| !s.is_empty()) else {
            self.membership_reply(
                kind,
                handle,
                Some(ResponseError::InvalidRequest),
                Some("cannot remove the last voter"),
            );
            return Ok(());
        };
        let offset = self.append_voters(next, now_ms)?;
        let deadline_ms = now_ms + self.config.request_timeout_ms;
        if let EpochState::Leader(l) = &mut self.state {
            l.pending_change = Some(PendingChange {
                kind,
                handle,
                deadline_ms,
                stage: ChangeStage::AwaitingCommit { offset },
            });
        }
        Ok(())
    }

    /// UpdateRaftVoter (82): a voter's new endpoints or kraft.version range.
    pub(crate) fn handle_update_raft_voter(
        &mut self,
        handle: ReplyHandle,
        r: UpdateRaftVoterRequest,
        now_ms: u64,
    ) -> Result<()> {
        let kind = ChangeKind::Update;
        if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            self.membership_reply(
                kind,
                handle,
                Some(ResponseError::InconsistentClusterId),
                None,
            );
            return Ok(());
        }
        if r.current_leader_epoch < self.epoch() {
            self.membership_reply(kind, handle, Some(ResponseError::FencedLeaderEpoch), None);
            return Ok(());
        }
        if r.current_leader_epoch > self.epoch() {
            self.membership_reply(kind, handle, Some(ResponseError::UnknownLeaderEpoch), None);
            return Ok(());
        }
        if let Some((e, text)) = self.membership_precheck() {
            self.membership_reply(kind, handle, Some(e), Some(text));
            return Ok(());
        }
        let key = ReplicaKey::from_wire(r.voter_id, r.voter_directory_id);
        if self.voters.get(key.id).is_none_or(|v| v.key != key) {
            self.membership_reply(kind, handle, Some(ResponseError::VoterNotFound), None);
            return Ok(());
        }
        let range = (
            r.k_raft_version_feature.min_supported_version,
            r.k_raft_version_feature.max_supported_version,
        );
        if r.listeners.is_empty() || range.0 > self.kraft_version || range.1 < self.kraft_version {
            self.membership_reply(kind, handle, Some(ResponseError::InvalidRequest), None);
            return Ok(());
        }
        let voter = Voter {
            key,
            endpoints: r
                .listeners
                .iter()
                .map(|l| Endpoint::new(l.name.as_str(), l.host.as_str(), l.port))
                .collect(),
            kraft_version: range,
        };
        if self.voters.get(key.id) == Some(&voter) {
            self.membership_reply(kind, handle, None, None);
            return Ok(());
        }
        let next = self.voters.with_added(voter);
        let offset = self.append_voters(next, now_ms)?;
        let deadline_ms = now_ms + self.config.request_timeout_ms;
        if let EpochState::Leader(l) = &mut self.state {
            l.pending_change = Some(PendingChange {
                kind,
                handle,
                deadline_ms,
                stage: ChangeStage::AwaitingCommit { offset },
            });
        }
        Ok(())
    }

    /// Appends a `Voters` record with `next` as leader; the set is in effect
    /// from now on. Returns the record's offset.
    fn append_voters(&mut self, next: VoterSet, now_ms: u64) -> Result<i64> {
        let epoch = self.epoch();
        let base = self.log.end_offset().offset;
        let batch = encode_control_batch(
            base,
            epoch,
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            &[ControlRecord::Voters(next.to_record())],
        )?;
        self.log.append_as_leader(batch, epoch)?;
        self.voter_history.push(base, next);
        self.voters = self.voter_history.latest().clone();
        tracing::info!(node = self.local.id, offset = base, voters = ?self.voters.ids().collect::<Vec<_>>(), "voter set changed");
        self.leader_appended(now_ms)?;
        Ok(base)
    }

    /// Answers a committed or timed-out change; resigns once this leader's
    /// own removal is committed.
    pub(crate) fn leader_check_membership(&mut self, now_ms: u64) -> Result<()> {
        let hw = self.high_watermark;
        let EpochState::Leader(l) = &mut self.state else {
            return Ok(());
        };
        if let Some(p) = l.pending_change.clone() {
            let committed = matches!(p.stage, ChangeStage::AwaitingCommit { offset } if hw.is_some_and(|hw| hw > offset));
            if committed {
                l.pending_change = None;
                self.membership_reply(p.kind, p.handle, None, None);
            } else if now_ms >= p.deadline_ms {
                l.pending_change = None;
                self.membership_reply(
                    p.kind,
                    p.handle,
                    Some(ResponseError::RequestTimedOut),
                    Some("the voter change did not commit in time; it may still commit"),
                );
            }
        }
        let removal_committed = !self.is_voter()
            && self
                .voter_history
                .latest_offset()
                .is_some_and(|o| hw.is_some_and(|hw| hw > o));
        if removal_committed && self.role() == Role::Leader {
            tracing::info!(node = self.local.id, "own removal committed; resigning");
            self.resign(now_ms)?;
        }
        Ok(())
    }

    /// A leader that steps down answers its pending change.
    pub(crate) fn fail_pending_change(&mut self, pending: Option<PendingChange>) {
        if let Some(p) = pending {
            self.membership_reply(
                p.kind,
                p.handle,
                Some(ResponseError::NotLeaderOrFollower),
                Some("the leader changed; retry on the new leader"),
            );
        }
    }
}
