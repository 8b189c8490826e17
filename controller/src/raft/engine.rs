//! The engine: the current epoch state, the dispatch of events to the role
//! state or request handler that handles them, and the transitions between
//! roles. This is the one file that names every role: the role files
//! (`unattached.rs`, `prospective.rs`, `candidate.rs`, `follower.rs`,
//! `leader.rs`, `resigned.rs`) and the request handlers (`requests.rs`,
//! `fetch.rs`, `fetch_snapshot.rs`, `voter_change.rs`) import the leaves
//! `core` (shared state) and `output` (commands, inflight requests) and never
//! this file; they ask for a transition with a [`Next`], which the engine
//! performs (checked against the table of `quorum_state.rs`).

use bytes::Bytes;
use rand::RngCore;

use super::{
    Command, ElectionState, Event, Proposed, RaftConfig, RaftError, RaftStatus, ReplicaStatus,
    Result, Role,
    candidate::CandidateState,
    core::{Core, EpochView, Next},
    follower::{FetchLoop, FollowerState},
    leader::LeaderState,
    output::Output,
    prospective::ProspectiveState,
    quorum_state::check_transition,
    requests::VoteArgs,
    resigned::ResignedState,
    unattached::UnattachedState,
    voters::{Endpoint, ReplicaKey, VoterSet},
};
use crate::log::{FlushDone, FlushJob, LogFetchInfo, ReplicatedLog};

mod dispatch;
mod kraft_upgrade;

pub use kraft_upgrade::{KRAFT_VERSION_MAX, KRaftUpgrade, KRaftUpgradeError};

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
    fn role(&self) -> Role {
        match self {
            Self::Unattached(_) => Role::Unattached,
            Self::Prospective(_) => Role::Prospective,
            Self::Candidate(_) => Role::Candidate,
            Self::Follower(_) => Role::Follower,
            Self::Leader(_) => Role::Leader,
            Self::Resigned(_) => Role::Resigned,
        }
    }

    fn epoch(&self) -> i32 {
        match self {
            Self::Unattached(s) => s.epoch,
            Self::Prospective(s) => s.epoch,
            Self::Candidate(s) => s.epoch,
            Self::Follower(s) => s.epoch,
            Self::Leader(s) => s.epoch,
            Self::Resigned(s) => s.epoch,
        }
    }

    fn next_deadline(&self) -> u64 {
        match self {
            Self::Unattached(s) => s.next_deadline(),
            Self::Prospective(s) => s.next_deadline(),
            Self::Candidate(s) => s.next_deadline(),
            Self::Follower(s) => s.next_deadline(),
            Self::Leader(s) => s.next_deadline(),
            Self::Resigned(s) => s.next_deadline(),
        }
    }

    fn leader(&mut self) -> Option<&mut LeaderState> {
        match self {
            Self::Leader(l) => Some(l),
            _ => None,
        }
    }
}

/// The sans-IO KRaft engine over a log `L` (see the module doc of
/// [`crate::raft`] for the contract with the runtime).
pub struct RaftEngine<L: ReplicatedLog> {
    core: Core<L>,
    out: Output,
    state: EpochState,
    persisted: ElectionState,
    reported: Option<(Role, i32, Option<i32>)>,
    shutdown_deadline_ms: Option<u64>,
    shutdown_done: bool,
    /// A leader shutting down waits until a successor is known (Kafka's
    /// graceful shutdown), bounded by `shutdown_deadline_ms`.
    shutdown_awaits_successor: bool,
    /// The time of the latest event (ms), for `status()`.
    now_ms: u64,
    /// When the log is next checked against its retention (ms).
    next_clean_ms: u64,
}

impl<L: ReplicatedLog> std::fmt::Debug for RaftEngine<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftEngine")
            .field("local", &self.core.local)
            .field("state", &self.state)
            .field("high_watermark", &self.core.high_watermark)
            .field("log_end", &self.core.log.end_offset())
            .finish_non_exhaustive()
    }
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
        let stored = stored.unwrap_or_default();
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
            core: Core::new(config, log, rng),
            out: Output::default(),
            state: placeholder,
            persisted: stored,
            reported: None,
            shutdown_deadline_ms: None,
            shutdown_done: false,
            shutdown_awaits_successor: false,
            now_ms,
            next_clean_ms: now_ms,
        };
        let core = &mut engine.core;
        let local = core.local;
        // A crash between freezing a fetched snapshot and truncating the log
        // leaves the snapshot beyond the log (Kafka's `KafkaMetadataLog.apply`).
        core.log.truncate_to_latest_snapshot()?;
        // The voter set at the latest snapshot, then the log after it
        // (Kafka's `KRaftControlRecordStateMachine`): the log below it may be
        // gone.
        let scan_from = core.load_latest_snapshot_control_records()?;
        core.scan_control_records(scan_from)?;
        let log_end = core.log.end_offset();
        let is_voter = core.can_campaign();
        let initial = if stored.epoch < log_end.epoch {
            EpochState::Unattached(UnattachedState::new(core, log_end.epoch, None, now_ms))
        } else if stored.leader_id == Some(local.id) && is_voter {
            EpochState::Resigned(ResignedState::new(core, stored.epoch, Vec::new(), now_ms))
        } else if stored.voted_key.is_some_and(|k| k.id == local.id) && is_voter {
            EpochState::Prospective(ProspectiveState::new(
                core,
                stored.epoch,
                stored.voted_key,
                None,
                now_ms,
            ))
        } else if let Some(leader) = stored
            .leader_id
            .filter(|l| *l != local.id && core.voters().contains_id(*l))
        {
            EpochState::Follower(FollowerState::new(
                core,
                stored.epoch,
                leader,
                None,
                stored.voted_key,
                now_ms,
            ))
        } else {
            EpochState::Unattached(UnattachedState::new(
                core,
                stored.epoch,
                stored.voted_key,
                now_ms,
            ))
        };
        engine.state = initial;
        engine.persist_if_changed();
        engine.report_role();
        engine.on_enter(now_ms)?;
        engine.poll(now_ms)?;
        engine.report_role();
        let commands = engine.out.take_commands();
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
                api_version: _,
                request,
            } => self.on_request(handle, request, now_ms)?,
            Event::Response { id, response } => {
                if let Some(inflight) = self.out.take_inflight(id) {
                    self.on_response(id, inflight, response, now_ms)?;
                }
            }
            Event::RequestFailed { id, failure } => {
                if let Some(inflight) = self.out.take_inflight(id) {
                    self.on_request_failed(id, inflight, failure, now_ms)?;
                }
            }
            Event::Tick => {}
            Event::Flush => self.on_flush(now_ms)?,
            Event::Shutdown { timeout_ms } => self.on_shutdown(timeout_ms, now_ms)?,
        }
        self.poll(now_ms)?;
        self.report_role();
        Ok(self.out.take_commands())
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
        let proposed = match &mut self.state {
            EpochState::Leader(l) => l.propose(&mut self.core, &mut self.out, records, now_ms)?,
            _ => {
                return Err(RaftError::NotLeader {
                    epoch: self.epoch(),
                    leader_id: self.leader_id(),
                });
            }
        };
        self.poll(now_ms)?;
        self.report_role();
        Ok((proposed, self.out.take_commands()))
    }

    /// When the runtime must next feed [`Event::Tick`] (engine time, ms);
    /// `u64::MAX` when nothing is scheduled.
    pub fn next_deadline_ms(&self) -> u64 {
        self.state
            .next_deadline()
            .min(self.shutdown_deadline_ms.unwrap_or(u64::MAX))
            .min(self.next_clean_ms)
    }

    /// A snapshot of the state for DescribeQuorum, metrics and readiness.
    pub fn status(&self) -> RaftStatus {
        let (voters, observers) = match &self.state {
            EpochState::Leader(l) => (
                self.core
                    .voters()
                    .iter()
                    .map(|v| l.replica_status(&v.key, self.core.local, &self.core.log, self.now_ms))
                    .collect(),
                l.observer_statuses(self.core.voters(), self.now_ms),
            ),
            _ => (
                self.core
                    .voters()
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
        let (leader_high_watermark, last_caught_up_ms, caught_up) = match &self.state {
            EpochState::Leader(_) => (None, None, true),
            EpochState::Follower(f) => (
                f.leader_high_watermark,
                f.last_caught_up_ms,
                f.is_caught_up(&self.core, self.now_ms),
            ),
            _ => (None, None, false),
        };
        RaftStatus {
            node_id: self.core.local.id,
            role: self.state.role(),
            epoch: self.epoch(),
            leader_id: self.leader_id(),
            voted_key: self.voted_key(),
            high_watermark: self.core.high_watermark,
            leader_high_watermark,
            last_caught_up_ms,
            caught_up,
            caught_up_until_ms: last_caught_up_ms
                .filter(|_| caught_up)
                .map(|t| t.saturating_add(self.core.config.fetch_timeout_ms)),
            log_end_offset: self.core.log.end_offset().offset,
            flushed_end_offset: self.core.log.flushed_end_offset(),
            is_voter: self.is_voter(),
            kraft_version: self.core.kraft_version,
            uncommitted_voter_change: self.core.uncommitted_voter_change(),
            voters,
            observers,
        }
    }

    /// Reads committed batches from `start_offset` (whole batches, at most
    /// `max_bytes` unless the first is larger), never past the high watermark.
    ///
    /// Errors: [`crate::log::LogError::OffsetOutOfRange`] outside the log.
    pub fn read_committed(&self, start_offset: i64, max_bytes: usize) -> Result<LogFetchInfo> {
        let hw = self
            .core
            .high_watermark
            .unwrap_or(self.core.log.start_offset());
        let mut info = self.core.log.read(start_offset, max_bytes)?;
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

    /// [`Command::Flush`] answered as a job (issue 23): the fsyncs of the
    /// returned job run where the runtime chooses ([`FlushJob::run`]; the
    /// server: a blocking thread for a leader with followers, while it goes
    /// on feeding other events, else its loop while the disk is fast);
    /// the runtime then hands the result to [`Self::finish_flush`]. The
    /// server's loop runs one job at a time and starts the next one after it
    /// for the [`Command::Flush`]es that came meanwhile (several at once
    /// would be safe: a job never moves the flushed end offset back). Equivalent to [`Event::Flush`] except for when the
    /// fsyncs run: the flushed end offset moves only at `finish_flush`.
    ///
    /// Errors: [`RaftError::Log`] (the log stopped).
    pub fn start_flush(&mut self) -> Result<FlushJob> {
        Ok(self.core.log.start_flush()?)
    }

    /// Ends a flush of [`Self::start_flush`] at `now_ms`: the log's flushed
    /// end offset moves to the job's end, then as on [`Event::Flush`] the
    /// leader's high watermark may move and a follower fetches again.
    /// Returns the commands to execute, in order.
    ///
    /// Errors: [`RaftError::Log`]: the job's fsync failed (the log stopped;
    /// the node must stop), or the log had stopped already.
    pub fn finish_flush(&mut self, done: FlushDone, now_ms: u64) -> Result<Vec<Command>> {
        self.now_ms = self.now_ms.max(now_ms);
        self.core.log.finish_flush(done)?;
        self.on_flushed(now_ms)?;
        self.poll(now_ms)?;
        self.report_role();
        Ok(self.out.take_commands())
    }

    /// The log (read-only).
    pub fn log(&self) -> &L {
        &self.core.log
    }

    /// The whole of snapshot `id` (for the state machine to load after
    /// [`Command::SnapshotInstalled`], or on start); `None` if the log holds
    /// no such snapshot.
    ///
    /// Errors: [`RaftError::Log`].
    pub fn read_snapshot(&self, id: crate::log::OffsetAndEpoch) -> Result<Option<Bytes>> {
        Ok(self.core.log.read_snapshot(id)?)
    }

    /// Writes snapshot `id` of the state machine (`bytes` in Kafka's
    /// framing, see `log::snapshot::encode_snapshot`) through the log and
    /// freezes it. `id.offset` must be committed (at or below the high
    /// watermark), at or above the log start offset and on a batch boundary.
    ///
    /// Errors: [`RaftError::SnapshotNotCommitted`] above the high watermark;
    /// [`RaftError::Log`].
    pub fn write_snapshot(&mut self, id: crate::log::OffsetAndEpoch, bytes: &[u8]) -> Result<()> {
        let hw = self
            .core
            .high_watermark
            .unwrap_or(self.core.log.start_offset());
        if id.offset > hw {
            return Err(RaftError::SnapshotNotCommitted {
                offset: id.offset,
                high_watermark: hw,
            });
        }
        self.core.log.write_snapshot(id, bytes)?;
        self.core.clean_log(self.now_ms)
    }

    /// Tells the engine (and its log) about snapshot `id`, written and
    /// frozen by the runtime off its event loop: it counts for log cleaning
    /// and for FetchSnapshot from then on. The log is checked against its
    /// retention at once (a new snapshot is what lets it be cleaned).
    ///
    /// Errors: [`RaftError::Log`] if no such frozen snapshot exists, or
    /// cleaning failed.
    pub fn register_snapshot(&mut self, id: crate::log::OffsetAndEpoch) -> Result<()> {
        self.core.log.register_snapshot(id)?;
        self.core.clean_log(self.now_ms)
    }

    /// Gives the log back (on shutdown, or to simulate a crash in tests).
    pub fn into_log(self) -> L {
        self.core.log
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
        self.core.high_watermark
    }

    /// Known leader of the current epoch.
    pub fn leader_id(&self) -> Option<i32> {
        match &self.state {
            EpochState::Follower(s) => Some(s.leader_id),
            EpochState::Leader(_) | EpochState::Resigned(_) => Some(self.core.local.id),
            _ => None,
        }
    }

    /// The current voter set.
    pub fn voters(&self) -> &VoterSet {
        self.core.voters()
    }

    /// The voter set in effect at `end_offset` (from the newest `Voters`
    /// record below it, else the bootstrap set): the set a snapshot with that
    /// end offset must hold (KIP-853).
    pub fn voters_at(&self, end_offset: i64) -> &VoterSet {
        self.core.voter_history().at(end_offset)
    }

    /// This node's key.
    pub fn local_key(&self) -> ReplicaKey {
        self.core.local
    }

    /// Whether this node is in the current voter set.
    pub fn is_voter(&self) -> bool {
        self.core.is_voter()
    }

    /// The voter set elections are held in: the current one, or, for a node
    /// that an uncommitted `Voters` record removed, the set before it (a
    /// node without that record would use it too; one-at-a-time changes keep
    /// every majority of the two sets overlapping, KIP-853). Without this, a
    /// removed leader that lost its leadership before the removal committed
    /// and the only voters missing the record could wait on each other forever
    /// (found by the membership simulation). Not Kafka's rule (its
    /// `QuorumState.isVoter` reads the latest set alone), so it is held to
    /// records truly uncommitted: one that the latest snapshot covers is
    /// committed (KIP-630) even while the high watermark is unknown, and the
    /// set before a snapshot's is not the bootstrap set the history falls back
    /// to (a removed node campaigning in that set was elected by stale voters
    /// that lacked the committed log: membership simulation seed 3978).
    pub fn election_voters(&self) -> &VoterSet {
        self.core.election_voters()
    }

    /// Whether this node may become Prospective, Candidate or Leader: it is
    /// in [`Self::election_voters`].
    pub fn can_campaign(&self) -> bool {
        self.core.can_campaign()
    }

    // ---- the epoch, as the role states say --------------------------------

    fn voted_key(&self) -> Option<ReplicaKey> {
        match &self.state {
            EpochState::Unattached(s) => s.voted_key,
            EpochState::Prospective(s) => s.voted_key,
            EpochState::Candidate(_) | EpochState::Leader(_) => Some(self.core.local),
            EpochState::Follower(s) => s.voted_key,
            EpochState::Resigned(_) => self.persisted.voted_key,
        }
    }

    /// What responses say of the current epoch.
    fn view(&self) -> EpochView {
        let hint = match &self.state {
            EpochState::Follower(f) => f.leader_endpoint.as_ref(),
            _ => None,
        };
        self.core.view(self.epoch(), self.leader_id(), hint)
    }

    /// The election state this role implies; `None` for Resigned, which
    /// keeps what is persisted.
    fn election_state(&self) -> Option<ElectionState> {
        let local = self.core.local;
        match &self.state {
            EpochState::Unattached(s) => Some(s.election_state()),
            EpochState::Prospective(s) => Some(s.election_state()),
            EpochState::Candidate(s) => Some(s.election_state(local)),
            EpochState::Follower(s) => Some(s.election_state()),
            EpochState::Leader(s) => Some(s.election_state(local)),
            EpochState::Resigned(_) => None,
        }
    }

    fn persist_if_changed(&mut self) {
        if let Some(state) = self.election_state()
            && state != self.persisted
        {
            self.persisted = state;
            self.out.push(Command::PersistElectionState(state));
        }
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

    /// Whether the role grants a (pre-)vote to a candidate that passed the
    /// checks of [`VoteHandler::check`].
    fn grants_vote(&self, args: &VoteArgs, now_ms: u64) -> bool {
        let (candidate, up_to_date, pre_vote) = (args.candidate, args.up_to_date, args.pre_vote);
        match &self.state {
            EpochState::Unattached(s) => s.grants_vote(candidate, up_to_date, pre_vote),
            EpochState::Prospective(s) => s.grants_vote(candidate, up_to_date, pre_vote),
            EpochState::Candidate(_) => CandidateState::grants_vote(up_to_date, pre_vote),
            EpochState::Follower(s) => s.grants_vote(
                up_to_date,
                pre_vote,
                now_ms,
                self.core.config.fetch_timeout_ms,
            ),
            EpochState::Leader(_) | EpochState::Resigned(_) => false,
        }
    }

    // ---- transitions ------------------------------------------------------

    fn transition(&mut self, next: EpochState, now_ms: u64) -> Result<()> {
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
            self.core.can_campaign(),
            same_state_vote,
        )?;
        let previous = std::mem::replace(&mut self.state, next);
        match previous {
            EpochState::Leader(leader) => {
                let view = self.view();
                leader.on_leave(&self.core, &mut self.out, &view);
            }
            // A snapshot half received belongs to that follower state
            // (Kafka's `FollowerState.fetchingSnapshot`).
            EpochState::Follower(f) if f.fetching_snapshot.is_some() => {
                self.core.log.abort_fetched_snapshot()?;
            }
            _ => {}
        }
        tracing::debug!(
            node = self.core.local.id,
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
        let next = match &mut self.state {
            EpochState::Prospective(s) => s.on_enter(&self.core, &mut self.out),
            EpochState::Candidate(s) => s.on_enter(&self.core, &mut self.out),
            EpochState::Leader(l) => l.on_enter(&mut self.core, &mut self.out, now_ms)?,
            EpochState::Resigned(s) => {
                s.on_enter(&self.core, &mut self.out, now_ms);
                None
            }
            EpochState::Unattached(_) | EpochState::Follower(_) => None,
        };
        self.apply(next, now_ms)
    }

    /// Performs the transition a role asked for.
    fn apply(&mut self, next: Option<Next>, now_ms: u64) -> Result<()> {
        match next {
            None => Ok(()),
            Some(Next::Prospective) => self.become_prospective(now_ms),
            Some(Next::Candidate) => {
                // Peers' epochs of i32::MAX are refused (requests::usable_epoch);
                // a stored one (written before that check) cannot campaign.
                let Some(epoch) = self.epoch().checked_add(1) else {
                    tracing::error!(
                        epoch = self.epoch(),
                        "cannot campaign: the epoch is i32::MAX"
                    );
                    return Ok(());
                };
                let next = CandidateState::new(&mut self.core, epoch, now_ms);
                self.transition(EpochState::Candidate(next), now_ms)
            }
            Some(Next::Leader { granting }) => {
                let next = LeaderState::new(&self.core, self.epoch(), granting, now_ms);
                self.transition(EpochState::Leader(Box::new(next)), now_ms)
            }
            Some(Next::Resign) => self.resign(now_ms),
            Some(Next::Unattached { epoch }) => self.become_unattached(epoch, now_ms),
        }
    }

    /// Unattached/Follower/Candidate/Resigned(e) → Prospective(e), keeping
    /// the vote of the epoch and the last known leader.
    fn become_prospective(&mut self, now_ms: u64) -> Result<()> {
        let epoch = self.epoch();
        let voted = self.voted_key().or(self
            .persisted
            .voted_key
            .filter(|_| self.persisted.epoch == epoch));
        let lost_leader = match &self.state {
            EpochState::Prospective(p) => p.lost_leader,
            _ => self.leader_id().filter(|l| *l != self.core.local.id),
        };
        let next = ProspectiveState::new(&mut self.core, epoch, voted, lost_leader, now_ms);
        self.transition(EpochState::Prospective(next), now_ms)
    }

    fn become_unattached(&mut self, epoch: i32, now_ms: u64) -> Result<()> {
        let next = UnattachedState::new(&mut self.core, epoch, None, now_ms);
        self.transition(EpochState::Unattached(next), now_ms)
    }

    fn become_follower(
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
        let next = FollowerState::new(
            &mut self.core,
            epoch,
            leader_id,
            endpoint_hint,
            voted_key,
            now_ms,
        );
        self.transition(EpochState::Follower(next), now_ms)
    }

    /// Leader(e) → Resigned(e), naming the other voters as preferred
    /// successors, most caught up first.
    fn resign(&mut self, now_ms: u64) -> Result<()> {
        let EpochState::Leader(l) = &mut self.state else {
            return Ok(());
        };
        l.release_held_high_watermark(&self.core, &mut self.out)?;
        let (epoch, successors) = (l.epoch, l.successors(&self.core));
        let next = ResignedState::new(&mut self.core, epoch, successors, now_ms);
        self.transition(EpochState::Resigned(next), now_ms)
    }

    /// Kafka's `maybeTransition`: acts on a (leader, epoch) learned from any
    /// request or response. Returns whether the state changed.
    fn maybe_transition(
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
    fn maybe_transition_from(
        &mut self,
        leader_id: Option<i32>,
        epoch: i32,
        endpoint_hint: Option<Endpoint>,
        from_leader: bool,
        now_ms: u64,
    ) -> Result<bool> {
        let current = self.epoch();
        let local = self.core.local.id;
        let leader_id = leader_id.filter(|l| *l >= 0);
        if epoch < current || !super::requests::usable_epoch(epoch) {
            return Ok(false);
        }
        if epoch > current {
            match leader_id {
                Some(l) if l != local => self.become_follower(epoch, l, endpoint_hint, now_ms)?,
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
            (Some(l), Role::Unattached | Role::Prospective | Role::Candidate) if l != local => {
                self.become_follower(epoch, l, endpoint_hint, now_ms)?;
                Ok(true)
            }
            (Some(l), Role::Follower) if self.leader_id() != Some(l) => {
                tracing::warn!(
                    node = local,
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
}
