//! The engine: the current epoch state, the dispatch of events to the role
//! that handles them, transitions, and the helpers every role uses (sending,
//! replying, persisting). Role logic lives in the role files.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::{
    ResponseError,
    messages::{FetchRequest, TopicName},
    protocol::StrBytes,
};
use rand::RngCore;

use super::{
    Command, Destination, ElectionState, Event, METADATA_PARTITION, METADATA_TOPIC, Proposed,
    RaftConfig, RaftError, RaftRequest, RaftResponse, RaftStatus, ReplicaStatus, ReplyHandle,
    RequestFailure, RequestId, Result, Role,
    candidate::CandidateState,
    follower::{FetchLoop, FollowerState},
    leader::LeaderState,
    membership::VoterHistory,
    prospective::ProspectiveState,
    quorum_state::check_transition,
    resigned::ResignedState,
    unattached::UnattachedState,
    voters::{Endpoint, ReplicaKey, VoterSet},
};
use crate::log::{LogFetchInfo, ReplicatedLog};

/// The state of the current epoch: one variant per role file.
#[derive(Debug)]
pub(crate) enum EpochState {
    Unattached(UnattachedState),
    Prospective(ProspectiveState),
    Candidate(CandidateState),
    Follower(FollowerState),
    Leader(Box<LeaderState>),
    Resigned(ResignedState),
}

impl EpochState {
    pub(crate) fn role(&self) -> Role {
        match self {
            Self::Unattached(_) => Role::Unattached,
            Self::Prospective(_) => Role::Prospective,
            Self::Candidate(_) => Role::Candidate,
            Self::Follower(_) => Role::Follower,
            Self::Leader(_) => Role::Leader,
            Self::Resigned(_) => Role::Resigned,
        }
    }

    pub(crate) fn epoch(&self) -> i32 {
        match self {
            Self::Unattached(s) => s.epoch,
            Self::Prospective(s) => s.epoch,
            Self::Candidate(s) => s.epoch,
            Self::Follower(s) => s.epoch,
            Self::Leader(s) => s.epoch,
            Self::Resigned(s) => s.epoch,
        }
    }
}

/// What an outbound request was, to route its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    Vote { pre_vote: bool },
    BeginQuorumEpoch,
    EndQuorumEpoch,
    Fetch,
    FetchSnapshot,
    ApiVersions,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Inflight {
    pub(crate) kind: RequestKind,
    pub(crate) node_id: i32,
    pub(crate) epoch: i32,
}

/// The sans-IO KRaft engine over a log `L` (see the module doc of
/// [`crate::raft`] for the contract with the runtime).
pub struct RaftEngine<L: ReplicatedLog> {
    pub(crate) config: RaftConfig,
    pub(crate) local: ReplicaKey,
    pub(crate) voters: VoterSet,
    pub(crate) log: L,
    rng: Box<dyn RngCore + Send>,
    pub(crate) state: EpochState,
    persisted: ElectionState,
    next_request_id: u64,
    inflight: HashMap<RequestId, Inflight>,
    pub(crate) out: Vec<Command>,
    pub(crate) high_watermark: Option<i64>,
    committed_notified: i64,
    reported: Option<(Role, i32, Option<i32>)>,
    pub(crate) shutdown_deadline_ms: Option<u64>,
    shutdown_done: bool,
    /// A leader shutting down waits until a successor is known (Kafka's
    /// graceful shutdown), bounded by `shutdown_deadline_ms`.
    shutdown_awaits_successor: bool,
    pub(crate) next_bootstrap: usize,
    pub(crate) voter_history: VoterHistory,
    pub(crate) kraft_version: i16,
    /// The time of the latest event (ms), for `status()`.
    now_ms: u64,
    /// When the log is next checked against its retention (ms).
    next_clean_ms: u64,
}

impl<L: ReplicatedLog> std::fmt::Debug for RaftEngine<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftEngine")
            .field("local", &self.local)
            .field("state", &self.state)
            .field("high_watermark", &self.high_watermark)
            .field("log_end", &self.log.end_offset())
            .finish_non_exhaustive()
    }
}

pub(crate) fn error_code(e: ResponseError) -> i16 {
    e.code()
}

impl<L: ReplicatedLog> RaftEngine<L> {
    /// Starts an engine over `log`, from the election state read from the
    /// `quorum-state` file (`None` for a new node), as Kafka's
    /// `QuorumState.initialize`: a stored epoch below the log's last epoch
    /// becomes Unattached at the log's epoch; a node that led its stored epoch
    /// starts Resigned; a node that voted for itself starts Prospective with
    /// its vote kept; a node that voted for another starts Unattached with the
    /// vote; a node that knew a leader starts Follower.
    ///
    /// Returns the engine and the first commands to execute (in order).
    ///
    /// Errors: none today besides a log failure reading its end offset.
    pub fn new(
        config: RaftConfig,
        log: L,
        stored: Option<ElectionState>,
        rng: Box<dyn RngCore + Send>,
        now_ms: u64,
    ) -> Result<(Self, Vec<Command>)> {
        let local = ReplicaKey {
            id: config.node_id,
            directory_id: config.directory_id,
        };
        let stored = stored.unwrap_or_default();
        let voters = config.voters.clone();
        let config_voters = config.voters.clone();
        let config_kraft_version = config.kraft_version;
        let placeholder = EpochState::Unattached(UnattachedState {
            epoch: stored.epoch,
            voted_key: stored.voted_key,
            election_deadline_ms: u64::MAX,
            fetch: FetchLoop {
                next_fetch_ms: u64::MAX,
                ..Default::default()
            },
        });
        let mut engine = Self {
            config,
            local,
            voters,
            log,
            rng,
            state: placeholder,
            persisted: stored,
            next_request_id: 0,
            inflight: HashMap::new(),
            out: Vec::new(),
            high_watermark: None,
            committed_notified: 0,
            reported: None,
            shutdown_deadline_ms: None,
            shutdown_done: false,
            shutdown_awaits_successor: false,
            next_bootstrap: 0,
            voter_history: VoterHistory::new(config_voters),
            kraft_version: config_kraft_version,
            now_ms,
            next_clean_ms: now_ms,
        };
        // A crash between freezing a fetched snapshot and truncating the log
        // leaves the snapshot beyond the log (Kafka's `KafkaMetadataLog.apply`).
        engine.log.truncate_to_latest_snapshot()?;
        // The voter set at the latest snapshot, then the log after it
        // (Kafka's `KRaftControlRecordStateMachine`): the log below it may be
        // gone.
        let scan_from = engine.load_latest_snapshot_control_records()?;
        engine.scan_control_records(scan_from)?;
        let log_end = engine.log.end_offset();
        let is_voter = engine.can_campaign();
        let initial = if stored.epoch < log_end.epoch {
            EpochState::Unattached(engine.new_unattached(log_end.epoch, None, now_ms))
        } else if stored.leader_id == Some(local.id) && is_voter {
            EpochState::Resigned(engine.new_resigned(stored.epoch, Vec::new(), now_ms))
        } else if stored.voted_key.is_some_and(|k| k.id == local.id) && is_voter {
            EpochState::Prospective(engine.new_prospective(stored.epoch, stored.voted_key, now_ms))
        } else if let Some(leader) = stored
            .leader_id
            .filter(|l| *l != local.id && engine.voters.contains_id(*l))
        {
            EpochState::Follower(engine.new_follower(
                stored.epoch,
                leader,
                None,
                stored.voted_key,
                now_ms,
            ))
        } else {
            EpochState::Unattached(engine.new_unattached(stored.epoch, stored.voted_key, now_ms))
        };
        engine.state = initial;
        engine.persist_if_changed();
        engine.report_role();
        engine.on_enter(now_ms)?;
        engine.poll(now_ms)?;
        engine.report_role();
        let commands = std::mem::take(&mut engine.out);
        Ok((engine, commands))
    }

    // ---- public API -------------------------------------------------------

    /// Handles one event at time `now_ms` and returns the commands to execute,
    /// in order.
    ///
    /// Errors: fatal log or record errors (see [`RaftError`]).
    pub fn handle(&mut self, event: Event, now_ms: u64) -> Result<Vec<Command>> {
        self.now_ms = self.now_ms.max(now_ms);
        match event {
            Event::Request {
                handle,
                api_version,
                request,
            } => self.on_request(handle, api_version, request, now_ms)?,
            Event::Response { id, response } => {
                if let Some(inflight) = self.inflight.remove(&id) {
                    self.on_response(id, inflight, response, now_ms)?;
                }
            }
            Event::RequestFailed { id, failure } => {
                if let Some(inflight) = self.inflight.remove(&id) {
                    self.on_request_failed(id, inflight, failure, now_ms)?;
                }
            }
            Event::Tick => {}
            Event::Flush => self.on_flush(now_ms)?,
            Event::Shutdown { timeout_ms } => self.on_shutdown(timeout_ms, now_ms)?,
        }
        self.poll(now_ms)?;
        self.report_role();
        Ok(std::mem::take(&mut self.out))
    }

    /// Appends `records` as one data batch if this node is the leader, and
    /// returns where they went, with the commands to execute (the flush is
    /// scheduled after `append_linger_ms`; parked fetches are answered).
    ///
    /// Errors: [`RaftError::NotLeader`] when not the leader (or resigned);
    /// [`RaftError::InvalidProposal`] for no record or more than
    /// `max_batch_bytes`; fatal log errors.
    pub fn propose(&mut self, records: &[Bytes], now_ms: u64) -> Result<(Proposed, Vec<Command>)> {
        self.now_ms = self.now_ms.max(now_ms);
        let proposed = self.leader_propose(records, now_ms)?;
        self.poll(now_ms)?;
        self.report_role();
        Ok((proposed, std::mem::take(&mut self.out)))
    }

    /// When the runtime must next feed [`Event::Tick`] (engine time, ms);
    /// `u64::MAX` when nothing is scheduled.
    pub fn next_deadline_ms(&self) -> u64 {
        let role_deadline = match &self.state {
            EpochState::Unattached(s) => s.next_deadline(),
            EpochState::Prospective(s) => s.next_deadline(),
            EpochState::Candidate(s) => s.next_deadline(),
            EpochState::Follower(s) => s.next_deadline(),
            EpochState::Leader(s) => s.next_deadline(),
            EpochState::Resigned(s) => s.next_deadline(),
        };
        role_deadline
            .min(self.shutdown_deadline_ms.unwrap_or(u64::MAX))
            .min(self.next_clean_ms)
    }

    /// A snapshot of the state for DescribeQuorum, metrics and readiness.
    pub fn status(&self) -> RaftStatus {
        let (voters, observers) = match &self.state {
            EpochState::Leader(l) => (
                self.voters
                    .iter()
                    .map(|v| l.replica_status(&v.key, self.local, &self.log, self.now_ms))
                    .collect(),
                l.observer_statuses(&self.voters),
            ),
            _ => (
                self.voters
                    .iter()
                    .map(|v| ReplicaStatus {
                        key: v.key,
                        log_end_offset: None,
                        last_fetch_ms: None,
                        last_caught_up_ms: None,
                    })
                    .collect(),
                Vec::new(),
            ),
        };
        RaftStatus {
            node_id: self.local.id,
            role: self.state.role(),
            epoch: self.epoch(),
            leader_id: self.leader_id(),
            voted_key: self.voted_key(),
            high_watermark: self.high_watermark,
            log_end_offset: self.log.end_offset().offset,
            flushed_end_offset: self.log.flushed_end_offset(),
            is_voter: self.is_voter(),
            kraft_version: self.kraft_version,
            uncommitted_voter_change: self
                .voter_history
                .latest_offset()
                .is_some_and(|o| self.high_watermark.is_none_or(|hw| o >= hw)),
            voters,
            observers,
        }
    }

    /// Reads committed batches from `start_offset` (whole batches, at most
    /// `max_bytes` unless the first is larger), never past the high watermark.
    ///
    /// Errors: [`crate::log::LogError::OffsetOutOfRange`] outside the log.
    pub fn read_committed(&self, start_offset: i64, max_bytes: usize) -> Result<LogFetchInfo> {
        let hw = self.high_watermark.unwrap_or(self.log.start_offset());
        let mut info = self.log.read(start_offset, max_bytes)?;
        let mut keep = 0;
        for item in crate::record::iter_batches(&info.records, false) {
            let (header, bytes) = item?;
            if header.last_offset() >= hw {
                break;
            }
            keep += bytes.len();
        }
        info.records = info.records.slice(..keep);
        Ok(info)
    }

    /// The log (read-only).
    pub fn log(&self) -> &L {
        &self.log
    }

    /// The whole of snapshot `id` (for the state machine to load after
    /// [`Command::SnapshotInstalled`], or on start); `None` if the log holds
    /// no such snapshot.
    ///
    /// Errors: [`RaftError::Log`].
    pub fn read_snapshot(&self, id: crate::log::OffsetAndEpoch) -> Result<Option<Bytes>> {
        Ok(self.log.read_snapshot(id)?)
    }

    /// Writes snapshot `id` of the state machine (`bytes` in Kafka's
    /// framing, see `log::snapshot::encode_snapshot`) through the log and
    /// freezes it. `id.offset` must be committed (at or below the high
    /// watermark), at or above the log start offset and on a batch boundary.
    ///
    /// Errors: [`RaftError::SnapshotNotCommitted`] above the high watermark;
    /// [`RaftError::Log`].
    pub fn write_snapshot(&mut self, id: crate::log::OffsetAndEpoch, bytes: &[u8]) -> Result<()> {
        let hw = self.high_watermark.unwrap_or(self.log.start_offset());
        if id.offset > hw {
            return Err(RaftError::SnapshotNotCommitted {
                offset: id.offset,
                high_watermark: hw,
            });
        }
        self.log.write_snapshot(id, bytes)?;
        self.clean_log(self.now_ms)
    }

    /// Tells the engine (and its log) about snapshot `id`, written and
    /// frozen by the runtime off its event loop: it counts for log cleaning
    /// and for FetchSnapshot from then on. The log is checked against its
    /// retention at once (a new snapshot is what lets it be cleaned).
    ///
    /// Errors: [`RaftError::Log`] if no such frozen snapshot exists, or
    /// cleaning failed.
    pub fn register_snapshot(&mut self, id: crate::log::OffsetAndEpoch) -> Result<()> {
        self.log.register_snapshot(id)?;
        self.clean_log(self.now_ms)
    }

    /// Kafka's `maybeClean` against `retention`: deletes the oldest
    /// snapshots and the log below the next while the retention is exceeded.
    fn clean_log(&mut self, now_ms: u64) -> Result<()> {
        let retention = self.config.retention;
        if self.log.maybe_clean(&retention, now_ms)? {
            tracing::info!(
                node = self.local.id,
                log_start_offset = self.log.start_offset(),
                "metadata log cleaned"
            );
        }
        Ok(())
    }

    /// Gives the log back (on shutdown, or to simulate a crash in tests).
    pub fn into_log(self) -> L {
        self.log
    }

    /// Current role.
    pub fn role(&self) -> Role {
        self.state.role()
    }

    /// Current epoch.
    pub fn epoch(&self) -> i32 {
        self.state.epoch()
    }

    /// The high watermark, once known.
    pub fn high_watermark(&self) -> Option<i64> {
        self.high_watermark
    }

    /// Known leader of the current epoch.
    pub fn leader_id(&self) -> Option<i32> {
        match &self.state {
            EpochState::Follower(s) => Some(s.leader_id),
            EpochState::Leader(_) | EpochState::Resigned(_) => Some(self.local.id),
            _ => None,
        }
    }

    /// The current voter set.
    pub fn voters(&self) -> &VoterSet {
        &self.voters
    }

    /// The voter set in effect at `end_offset` (from the newest `Voters`
    /// record below it, else the bootstrap set): the set a snapshot with that
    /// end offset must hold (KIP-853).
    pub fn voters_at(&self, end_offset: i64) -> &VoterSet {
        self.voter_history.at(end_offset)
    }

    /// This node's key.
    pub fn local_key(&self) -> ReplicaKey {
        self.local
    }

    /// Whether this node is in the current voter set.
    pub fn is_voter(&self) -> bool {
        self.voters.contains_key(&self.local)
    }

    /// The voter set elections are held in: the current one, or, for a node
    /// that an uncommitted `Voters` record removed, the set before it (a
    /// node without that record would use it too; one-at-a-time changes keep
    /// every majority of the two sets overlapping, KIP-853). Without this, a
    /// removed leader that lost its leadership before the removal committed
    /// and the only voters missing the record could wait on each other forever
    /// (found by the membership simulation).
    pub fn election_voters(&self) -> &VoterSet {
        let latest = self.voter_history.latest();
        if latest.contains_key(&self.local) {
            return latest;
        }
        let uncommitted = self
            .voter_history
            .latest_offset()
            .is_some_and(|o| self.high_watermark.is_none_or(|hw| o >= hw));
        let previous = self.voter_history.previous();
        if uncommitted && previous.contains_key(&self.local) {
            previous
        } else {
            latest
        }
    }

    /// Whether this node may become Prospective, Candidate or Leader: it is
    /// in [`Self::election_voters`].
    pub fn can_campaign(&self) -> bool {
        self.election_voters().contains_key(&self.local)
    }

    // ---- crate-internal helpers ------------------------------------------

    pub(crate) fn voted_key(&self) -> Option<ReplicaKey> {
        match &self.state {
            EpochState::Unattached(s) => s.voted_key,
            EpochState::Prospective(s) => s.voted_key,
            EpochState::Candidate(_) | EpochState::Leader(_) => Some(self.local),
            EpochState::Follower(s) => s.voted_key,
            EpochState::Resigned(_) => self.persisted.voted_key,
        }
    }

    /// The election state this role implies; `None` for the soft roles
    /// (Prospective, Resigned), which keep what is persisted.
    fn election_state(&self) -> Option<ElectionState> {
        let epoch = self.epoch();
        match &self.state {
            EpochState::Unattached(s) => Some(ElectionState {
                epoch,
                leader_id: None,
                voted_key: s.voted_key,
            }),
            EpochState::Candidate(_) => Some(ElectionState {
                epoch,
                leader_id: None,
                voted_key: Some(self.local),
            }),
            EpochState::Follower(s) => Some(ElectionState {
                epoch,
                leader_id: Some(s.leader_id),
                voted_key: s.voted_key,
            }),
            EpochState::Leader(_) => Some(ElectionState {
                epoch,
                leader_id: Some(self.local.id),
                voted_key: Some(self.local),
            }),
            // Prospective keeps what was persisted, plus a vote it grants
            // in its epoch (Kafka's `prospectiveAddVotedState`).
            EpochState::Prospective(s) => Some(ElectionState {
                epoch,
                leader_id: s.lost_leader,
                voted_key: s.voted_key,
            }),
            EpochState::Resigned(_) => None,
        }
    }

    pub(crate) fn persist_if_changed(&mut self) {
        if let Some(state) = self.election_state()
            && state != self.persisted
        {
            self.persisted = state;
            self.out.push(Command::PersistElectionState(state));
        }
    }

    pub(crate) fn persisted(&self) -> ElectionState {
        self.persisted
    }

    fn report_role(&mut self) {
        let now = (self.role(), self.epoch(), self.leader_id());
        if self.reported != Some(now) {
            self.reported = Some(now);
            self.out.push(Command::RoleChanged {
                role: now.0,
                epoch: now.1,
                leader_id: now.2,
            });
        }
    }

    pub(crate) fn random_election_timeout(&mut self) -> u64 {
        let t = self.config.election_timeout_ms.max(1);
        t + self.rng.next_u64() % t
    }

    pub(crate) fn cluster_id_matches(&self, cluster_id: Option<&StrBytes>) -> bool {
        match (&self.config.cluster_id, cluster_id) {
            (Some(ours), Some(theirs)) => ours.as_str() == theirs.as_str(),
            _ => true,
        }
    }

    pub(crate) fn cluster_id_wire(&self) -> Option<StrBytes> {
        self.config.cluster_id.clone().map(StrBytes::from_string)
    }

    pub(crate) fn destination(&self, node_id: i32) -> Destination {
        if node_id < 0 {
            let index = usize::try_from(-(node_id + 1)).unwrap_or(usize::MAX);
            return Destination {
                node_id,
                endpoint: self.config.bootstrap_servers.get(index).cloned(),
            };
        }
        Destination {
            node_id,
            endpoint: self
                .voters
                .get(node_id)
                .and_then(|v| v.endpoints.first().cloned()),
        }
    }

    pub(crate) fn send(
        &mut self,
        node_id: i32,
        kind: RequestKind,
        request: RaftRequest,
    ) -> RequestId {
        self.next_request_id += 1;
        let id = RequestId(self.next_request_id);
        self.inflight.insert(
            id,
            Inflight {
                kind,
                node_id,
                epoch: self.epoch(),
            },
        );
        let destination = self.destination(node_id);
        self.out.push(Command::Send {
            id,
            destination,
            request,
            timeout_ms: self.config.request_timeout_ms,
        });
        id
    }

    pub(crate) fn send_to(
        &mut self,
        destination: Destination,
        kind: RequestKind,
        request: RaftRequest,
    ) -> RequestId {
        self.next_request_id += 1;
        let id = RequestId(self.next_request_id);
        self.inflight.insert(
            id,
            Inflight {
                kind,
                node_id: destination.node_id,
                epoch: self.epoch(),
            },
        );
        self.out.push(Command::Send {
            id,
            destination,
            request,
            timeout_ms: self.config.request_timeout_ms,
        });
        id
    }

    pub(crate) fn reply(&mut self, handle: ReplyHandle, response: RaftResponse) {
        self.out.push(Command::Reply { handle, response });
    }

    pub(crate) fn topic_name() -> TopicName {
        TopicName(StrBytes::from_static_str(METADATA_TOPIC))
    }

    /// Sets the high watermark if it grows, and tells the layer above.
    pub(crate) fn advance_high_watermark(&mut self, hw: i64) {
        if self.high_watermark.is_none_or(|old| hw > old) {
            self.high_watermark = Some(hw);
            if hw > self.committed_notified {
                self.committed_notified = hw;
                self.out.push(Command::Committed { high_watermark: hw });
            }
        }
    }

    /// Endpoint of the leader as this node knows it, for `node_endpoints`.
    pub(crate) fn leader_endpoint(&self) -> Option<(i32, Endpoint)> {
        let leader = self.leader_id()?;
        if let EpochState::Follower(f) = &self.state
            && let Some(e) = &f.leader_endpoint
        {
            return Some((leader, e.clone()));
        }
        self.voters
            .get(leader)
            .and_then(|v| v.endpoints.first().cloned())
            .map(|e| (leader, e))
    }

    // ---- transitions ------------------------------------------------------

    pub(crate) fn transition(&mut self, next: EpochState, now_ms: u64) -> Result<()> {
        let same_state_vote = matches!(
            (&self.state, &next),
            (EpochState::Unattached(a), EpochState::Unattached(b))
                if a.epoch == b.epoch && a.voted_key.is_none() && b.voted_key.is_some()
        );
        check_transition(
            self.role(),
            self.epoch(),
            next.role(),
            next.epoch(),
            self.can_campaign(),
            same_state_vote,
        )?;
        let previous = std::mem::replace(&mut self.state, next);
        match previous {
            EpochState::Leader(leader) => self.on_leave_leader(*leader, now_ms),
            // A snapshot half received belongs to that follower state
            // (Kafka's `FollowerState.fetchingSnapshot`).
            EpochState::Follower(f) if f.fetching_snapshot.is_some() => {
                self.log.abort_fetched_snapshot()?;
            }
            _ => {}
        }
        tracing::debug!(
            node = self.local.id,
            role = %self.role(),
            epoch = self.epoch(),
            "raft transition"
        );
        self.persist_if_changed();
        self.report_role();
        self.on_enter(now_ms)
    }

    /// Runs what a role does on entry (send votes, become leader, …).
    fn on_enter(&mut self, now_ms: u64) -> Result<()> {
        match self.role() {
            Role::Prospective => self.prospective_on_enter(now_ms),
            Role::Candidate => self.candidate_on_enter(now_ms),
            Role::Leader => self.leader_on_enter(now_ms),
            Role::Resigned => {
                self.resigned_on_enter(now_ms);
                Ok(())
            }
            Role::Unattached | Role::Follower => Ok(()),
        }
    }

    pub(crate) fn new_unattached(
        &mut self,
        epoch: i32,
        voted_key: Option<ReplicaKey>,
        now_ms: u64,
    ) -> UnattachedState {
        // A voter waits for its election timeout; meanwhile voters and
        // observers ask the bootstrap servers for the leader (KIP-853).
        let election_deadline_ms = if self.can_campaign() {
            now_ms + self.random_election_timeout()
        } else {
            u64::MAX
        };
        let next_fetch_ms = if self.config.bootstrap_servers.is_empty() {
            u64::MAX
        } else {
            now_ms
        };
        UnattachedState {
            epoch,
            voted_key,
            election_deadline_ms,
            fetch: FetchLoop {
                next_fetch_ms,
                ..Default::default()
            },
        }
    }

    pub(crate) fn become_unattached(&mut self, epoch: i32, now_ms: u64) -> Result<()> {
        let next = self.new_unattached(epoch, None, now_ms);
        self.transition(EpochState::Unattached(next), now_ms)
    }

    pub(crate) fn become_follower(
        &mut self,
        epoch: i32,
        leader_id: i32,
        endpoint_hint: Option<Endpoint>,
        now_ms: u64,
    ) -> Result<()> {
        let voted_key = if epoch == self.epoch() {
            self.voted_key()
        } else {
            None
        };
        let next = self.new_follower(epoch, leader_id, endpoint_hint, voted_key, now_ms);
        self.transition(EpochState::Follower(next), now_ms)
    }

    /// Kafka's `maybeTransition`: acts on a (leader, epoch) learned from any
    /// request or response. Returns whether the state changed.
    pub(crate) fn maybe_transition(
        &mut self,
        leader_id: Option<i32>,
        epoch: i32,
        endpoint_hint: Option<Endpoint>,
        now_ms: u64,
    ) -> Result<bool> {
        self.maybe_transition_from(leader_id, epoch, endpoint_hint, false, now_ms)
    }

    /// As [`Self::maybe_transition`]; `from_leader` marks a message sent by
    /// that leader itself (BeginQuorumEpoch, or a Fetch response from it).
    pub(crate) fn maybe_transition_from(
        &mut self,
        leader_id: Option<i32>,
        epoch: i32,
        endpoint_hint: Option<Endpoint>,
        from_leader: bool,
        now_ms: u64,
    ) -> Result<bool> {
        let current = self.epoch();
        let leader_id = leader_id.filter(|l| *l >= 0);
        if epoch < current {
            return Ok(false);
        }
        if epoch > current {
            match leader_id {
                Some(l) if l != self.local.id => {
                    self.become_follower(epoch, l, endpoint_hint, now_ms)?
                }
                _ => self.become_unattached(epoch, now_ms)?,
            }
            return Ok(true);
        }
        if let (EpochState::Prospective(p), Some(l)) = (&self.state, leader_id)
            && p.lost_leader == Some(l)
            && !from_leader
        {
            return Ok(false);
        }
        match (leader_id, self.role()) {
            (Some(l), Role::Unattached | Role::Prospective | Role::Candidate)
                if l != self.local.id =>
            {
                self.become_follower(epoch, l, endpoint_hint, now_ms)?;
                Ok(true)
            }
            (Some(l), Role::Follower) if self.leader_id() != Some(l) => {
                tracing::warn!(
                    node = self.local.id,
                    epoch,
                    leader = l,
                    known = ?self.leader_id(),
                    "two leaders claimed for one epoch; ignoring"
                );
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    // ---- dispatch ---------------------------------------------------------

    fn on_request(
        &mut self,
        handle: ReplyHandle,
        api_version: i16,
        request: RaftRequest,
        now_ms: u64,
    ) -> Result<()> {
        match request {
            RaftRequest::Vote(r) => self.handle_vote_request(handle, r, now_ms),
            RaftRequest::BeginQuorumEpoch(r) => self.handle_begin_quorum_epoch(handle, r, now_ms),
            RaftRequest::EndQuorumEpoch(r) => self.handle_end_quorum_epoch(handle, r, now_ms),
            RaftRequest::Fetch(r) => self.handle_fetch_request(handle, api_version, r, now_ms),
            RaftRequest::FetchSnapshot(r) => self.handle_fetch_snapshot_request(handle, r, now_ms),
            RaftRequest::DescribeQuorum(_) => {
                let response = self.describe_quorum(now_ms);
                self.reply(handle, RaftResponse::DescribeQuorum(response));
                Ok(())
            }
            RaftRequest::AddRaftVoter(r) => self.handle_add_raft_voter(handle, r, now_ms),
            RaftRequest::RemoveRaftVoter(r) => self.handle_remove_raft_voter(handle, r, now_ms),
            RaftRequest::UpdateRaftVoter(r) => self.handle_update_raft_voter(handle, r, now_ms),
            other => {
                self.reply_unsupported(handle, &other);
                Ok(())
            }
        }
    }

    fn reply_unsupported(&mut self, handle: ReplyHandle, request: &RaftRequest) {
        use kafka_protocol::messages::{
            AddRaftVoterResponse, FetchSnapshotResponse, RemoveRaftVoterResponse,
            UpdateRaftVoterResponse,
        };
        let code = error_code(ResponseError::UnsupportedVersion);
        let response = match request {
            RaftRequest::FetchSnapshot(_) => {
                RaftResponse::FetchSnapshot(FetchSnapshotResponse::default().with_error_code(code))
            }
            RaftRequest::AddRaftVoter(_) => {
                RaftResponse::AddRaftVoter(AddRaftVoterResponse::default().with_error_code(code))
            }
            RaftRequest::RemoveRaftVoter(_) => RaftResponse::RemoveRaftVoter(
                RemoveRaftVoterResponse::default().with_error_code(code),
            ),
            RaftRequest::UpdateRaftVoter(_) => RaftResponse::UpdateRaftVoter(
                UpdateRaftVoterResponse::default().with_error_code(code),
            ),
            _ => RaftResponse::ApiVersions(
                kafka_protocol::messages::ApiVersionsResponse::default().with_error_code(code),
            ),
        };
        self.reply(handle, response);
    }

    fn on_response(
        &mut self,
        id: RequestId,
        inflight: Inflight,
        response: RaftResponse,
        now_ms: u64,
    ) -> Result<()> {
        match response {
            RaftResponse::Vote(r) => self.handle_vote_response(inflight, r, now_ms),
            RaftResponse::BeginQuorumEpoch(r) => {
                let (leader, epoch) = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or((None, -1), |p| (Some(p.leader_id.0), p.leader_epoch));
                if let EpochState::Leader(l) = &mut self.state {
                    // Answered: it may be sent again at the next interval.
                    l.begin_epoch_inflight.remove(&inflight.node_id);
                }
                self.maybe_transition(leader, epoch, None, now_ms)?;
                Ok(())
            }
            RaftResponse::EndQuorumEpoch(r) => {
                self.handle_end_quorum_epoch_response(inflight, r, now_ms)
            }
            RaftResponse::Fetch(r) => self.handle_fetch_response(id, inflight, r, now_ms),
            RaftResponse::FetchSnapshot(r) => {
                self.handle_fetch_snapshot_response(id, inflight, r, now_ms)
            }
            RaftResponse::ApiVersions(r) => self.handle_api_versions_response(id, Some(r), now_ms),
            _ => Ok(()),
        }
    }

    fn on_request_failed(
        &mut self,
        id: RequestId,
        inflight: Inflight,
        failure: RequestFailure,
        now_ms: u64,
    ) -> Result<()> {
        tracing::debug!(
            node = self.local.id,
            to = inflight.node_id,
            ?failure,
            "request failed"
        );
        let retry_at = now_ms + self.config.retry_backoff_ms;
        match (&mut self.state, inflight.kind) {
            (EpochState::Prospective(s), RequestKind::Vote { pre_vote: true })
                if inflight.epoch == s.epoch =>
            {
                s.retry_at.insert(inflight.node_id, retry_at);
            }
            (EpochState::Candidate(s), RequestKind::Vote { pre_vote: false })
                if inflight.epoch == s.epoch =>
            {
                s.retry_at.insert(inflight.node_id, retry_at);
            }
            (EpochState::Follower(s), RequestKind::Fetch | RequestKind::FetchSnapshot)
                if s.fetch.inflight == Some(id) =>
            {
                s.fetch.inflight = None;
                s.fetch.next_fetch_ms = retry_at;
            }
            (EpochState::Unattached(s), RequestKind::Fetch) if s.fetch.inflight == Some(id) => {
                s.fetch.inflight = None;
                s.fetch.next_fetch_ms = retry_at;
            }
            (EpochState::Resigned(s), RequestKind::EndQuorumEpoch) => {
                s.retry_at.insert(inflight.node_id, retry_at);
            }
            (EpochState::Leader(s), RequestKind::BeginQuorumEpoch) => {
                s.begin_epoch_inflight.remove(&inflight.node_id);
            }
            (EpochState::Leader(_), RequestKind::ApiVersions) => {
                self.on_api_versions_failed(id, now_ms)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn on_flush(&mut self, now_ms: u64) -> Result<()> {
        self.log.flush()?;
        match self.role() {
            Role::Leader => self.leader_on_flush(now_ms),
            Role::Follower => {
                self.follower_on_flush(now_ms);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn on_shutdown(&mut self, timeout_ms: u64, now_ms: u64) -> Result<()> {
        self.shutdown_deadline_ms = Some(now_ms + timeout_ms);
        if self.role() == Role::Leader {
            // With other voters, wait for one of them to lead; alone, there
            // is nobody to hand over to.
            self.shutdown_awaits_successor = self.voters.iter().any(|v| v.key.id != self.local.id);
            self.resign(now_ms)?;
        }
        Ok(())
    }

    /// Runs every timer that is due, then the role's periodic work.
    fn poll(&mut self, now_ms: u64) -> Result<()> {
        if now_ms >= self.next_clean_ms {
            self.next_clean_ms = now_ms.saturating_add(self.config.log_clean_interval_ms.max(1));
            self.clean_log(now_ms)?;
        }
        if let Some(deadline) = self.shutdown_deadline_ms {
            // A resigned leader is done once another node leads a later epoch;
            // any other node has nothing to hand over.
            let handed_over = !self.shutdown_awaits_successor
                || self.leader_id().is_some_and(|l| l != self.local.id);
            if !self.shutdown_done && (handed_over || now_ms >= deadline) {
                self.shutdown_done = true;
                self.shutdown_deadline_ms = None;
                self.out.push(Command::ShutdownComplete);
            }
            if self.shutdown_done {
                return Ok(());
            }
        }
        if self.shutdown_done {
            return Ok(());
        }
        match self.role() {
            Role::Unattached => self.unattached_poll(now_ms),
            Role::Prospective => self.prospective_poll(now_ms),
            Role::Candidate => self.candidate_poll(now_ms),
            Role::Follower => self.follower_poll(now_ms),
            Role::Leader => self.leader_poll(now_ms),
            Role::Resigned => self.resigned_poll(now_ms),
        }
    }

    /// A Fetch request for this node's current fetch position, with `epoch`
    /// as its known leader epoch.
    pub(crate) fn build_fetch_request(&self) -> FetchRequest {
        use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
        let end = self.log.end_offset();
        FetchRequest::default()
            .with_cluster_id(self.cluster_id_wire())
            .with_replica_id(self.local.id.into())
            .with_replica_state(
                ReplicaState::default()
                    .with_replica_id(self.local.id.into())
                    .with_replica_epoch(-1),
            )
            .with_max_wait_ms(i32::try_from(self.config.fetch_max_wait_ms).unwrap_or(i32::MAX))
            .with_min_bytes(0)
            .with_max_bytes(i32::try_from(self.config.max_fetch_bytes).unwrap_or(i32::MAX))
            .with_session_epoch(-1)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(Self::topic_name())
                    .with_topic_id(metadata_topic_id())
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(METADATA_PARTITION)
                            .with_current_leader_epoch(self.epoch())
                            .with_fetch_offset(end.offset)
                            .with_last_fetched_epoch(end.epoch)
                            .with_log_start_offset(self.log.start_offset())
                            .with_partition_max_bytes(
                                i32::try_from(self.config.max_fetch_bytes).unwrap_or(i32::MAX),
                            )
                            .with_replica_directory_id(self.local.directory_id_or_nil())
                            .with_high_watermark(self.high_watermark.unwrap_or(-1)),
                    ]),
            ])
    }

    /// Truncates the log to `offset`, refusing to cut committed data.
    pub(crate) fn truncate_to(&mut self, offset: i64) -> Result<()> {
        if let Some(hw) = self.high_watermark
            && offset < hw
        {
            return Err(RaftError::TruncateBelowHighWatermark {
                offset,
                high_watermark: hw,
            });
        }
        self.log.truncate_to(offset)?;
        self.truncate_voter_history(offset);
        Ok(())
    }
}

/// Kafka's `Uuid.METADATA_TOPIC_ID` (`AAAAAAAAAAAAAAAAAAAAAQ`).
pub(crate) fn metadata_topic_id() -> uuid::Uuid {
    uuid::Uuid::from_u128(1)
}
