//! What runs above consensus: the [`Listener`] trait, shaped like Apache
//! Kafka's `RaftClient.Listener` (`handleCommit`, `handleLoadSnapshot`,
//! `handleLeaderChange`), and the [`RaftClient`] handle it is called with
//! (Kafka's `RaftClient`: `scheduleAppend`, `leaderAndEpoch`, the log).
//!
//! The runtime (`server`) calls a listener when the engine's commands say so
//! ([`Command::Committed`], [`Command::SnapshotInstalled`],
//! [`Command::RoleChanged`]), gives it the inbound requests of the api keys
//! it answers, wakes it at its own deadlines and polls it after every input.
//! The listener answers through the client: what it proposes is appended at
//! once (the engine's commands are collected and executed by the runtime
//! after the callback returns, in order), what it replies is sent back to the
//! connection that asked.
//!
//! This module owns the interface only. It must not do I/O, read a clock
//! (the runtime passes `now_ms` in) or hold state of a listener; and a
//! listener must not reach the engine except through [`RaftClient`].

use std::task::{Context, Poll};

use bytes::Bytes;

use super::{
    Command, KRaftUpgrade, KRaftUpgradeError, Proposed, RaftEngine, RaftError, RaftStatus,
    ReplyHandle, Role, VoterSet,
};
use crate::{
    log::{OffsetAndEpoch, ReplicatedLog},
    wire::{Api, Request, Response},
};

/// A change of this node's role or of the known leader, as
/// [`Command::RoleChanged`] reports it (Kafka's `LeaderAndEpoch` passed to
/// `handleLeaderChange`, with the local role beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderChange {
    /// This node's role now.
    pub role: Role,
    /// The epoch (Kafka's `leaderEpoch`).
    pub epoch: i32,
    /// The leader of `epoch`, if known (Kafka's `leaderId`).
    pub leader_id: Option<i32>,
}

/// Where a snapshot given to [`Listener::handle_load_snapshot`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotSource {
    /// The newest snapshot of the local log, at start (before any commit).
    Local,
    /// Installed from the leader by FetchSnapshot (KIP-630), replacing the
    /// log below it ([`Command::SnapshotInstalled`]).
    Leader,
}

/// The state machine above Raft (Kafka's `RaftClient.Listener<T>`).
///
/// Every callback gets a [`RaftClient`] for the engine; an `Err` from any of
/// them is fatal, as an engine error is: the runtime stops the node (a
/// listener that cannot apply a committed record must not serve a wrong
/// state).
///
/// Call order: [`Self::handle_load_snapshot`] at start if the log holds a
/// snapshot; then, in the order the engine reports them,
/// [`Self::handle_commit`], [`Self::handle_load_snapshot`] (installed from
/// the leader, before the commit that follows it) and
/// [`Self::handle_leader_change`]; requests of [`Self::api_keys`] as they
/// arrive; [`Self::handle_wakeup`] when the runtime's timer fires (at the
/// earlier of the engine's and [`Self::next_deadline_ms`]); [`Self::poll`]
/// after every input; [`Self::handle_input`] for what
/// [`Self::poll_input`] yields.
pub trait Listener<L: ReplicatedLog> {
    /// Why the listener failed (fatal).
    type Error: std::error::Error + Send + Sync + 'static;
    /// What the listener's own background work (its connections, its
    /// snapshot writer) hands back to it through [`Self::poll_input`].
    type Input;

    /// Kafka's `handleCommit`: the high watermark moved to `high_watermark`
    /// (exclusive); the records below it are committed and can be read from
    /// [`RaftClient::log`]. Called once per move, in offset order.
    ///
    /// Errors: the listener's; fatal.
    fn handle_commit(
        &mut self,
        client: &mut RaftClient<'_, L>,
        high_watermark: i64,
    ) -> Result<(), Self::Error>;

    /// Kafka's `handleLoadSnapshot`: the state restarts from snapshot
    /// `snapshot_id` (read it with [`RaftClient::read_snapshot`]).
    ///
    /// Errors: the listener's (the snapshot cannot be read or decoded); fatal.
    fn handle_load_snapshot(
        &mut self,
        client: &mut RaftClient<'_, L>,
        snapshot_id: OffsetAndEpoch,
        source: SnapshotSource,
    ) -> Result<(), Self::Error>;

    /// Kafka's `handleLeaderChange`: this node's role or the known leader
    /// changed. [`RaftClient::propose`] succeeds from here when `change.role`
    /// is [`Role::Leader`] (Kafka's `handleLeaderChange` to self).
    ///
    /// Errors: the listener's; fatal.
    fn handle_leader_change(
        &mut self,
        client: &mut RaftClient<'_, L>,
        change: LeaderChange,
    ) -> Result<(), Self::Error>;

    /// The apis the listener answers (ApiVersions, DescribeCluster,
    /// ControllerRegistration, UnregisterController, ...): requests of these
    /// apis that the engine does not serve go to [`Self::handle_request`];
    /// any other is refused by the runtime (the connection is closed).
    fn api_keys(&self) -> &'static [Api];

    /// An inbound request of one of [`Self::api_keys`], sent at
    /// `api_version` on the controller listener `listener_name` (Kafka's
    /// `RequestContext.listenerName`: DescribeCluster answers with the
    /// endpoints on it); answer it with [`RaftClient::reply`] on `handle`,
    /// now or later (a registration is answered once its record commits).
    ///
    /// Errors: the listener's; fatal.
    fn handle_request(
        &mut self,
        client: &mut RaftClient<'_, L>,
        handle: ReplyHandle,
        api_version: i16,
        listener_name: &str,
        request: Request,
    ) -> Result<(), Self::Error>;

    /// Vets the endpoints an AddRaftVoter gives for `voter_id` against what
    /// that node reported of itself above Raft (the metadata listener: its
    /// KIP-919 controller registration), before the leader acts on it.
    /// `Err(reason)` refuses the request with INVALID_REQUEST and `reason`,
    /// and nothing is stored (issue 27: a voter set pointing node 1 at node
    /// 2's endpoint). The default accepts everything.
    fn vet_voter_endpoints(
        &self,
        voter_id: i32,
        endpoints: &[super::voters::Endpoint],
    ) -> Result<(), String> {
        let _ = (voter_id, endpoints);
        Ok(())
    }

    /// When the listener wants [`Self::handle_wakeup`] next (ms, on the
    /// clock of `client.now_ms()`), if at all: the idle no-op record, a
    /// retry backoff, the workload's next record.
    fn next_deadline_ms(&self, client: &RaftClient<'_, L>) -> Option<u64>;

    /// The runtime's timer fired (the engine's deadline or
    /// [`Self::next_deadline_ms`]), after the engine handled its tick.
    ///
    /// Errors: the listener's; fatal.
    fn handle_wakeup(&mut self, client: &mut RaftClient<'_, L>) -> Result<(), Self::Error>;

    /// Called after every input the runtime handled (a request, a response,
    /// a tick, ...), for work paced by the clock rather than by an event.
    /// Nothing by default.
    ///
    /// Errors: the listener's; fatal.
    fn poll(&mut self, client: &mut RaftClient<'_, L>) -> Result<(), Self::Error> {
        let _ = client;
        Ok(())
    }

    /// The next input of the listener's own background work, if one is
    /// ready (as `Future::poll`: `cx` is woken when one may be). Never ready
    /// by default.
    fn poll_input(&mut self, cx: &mut Context<'_>) -> Poll<Self::Input> {
        let _ = cx;
        Poll::Pending
    }

    /// Handles what [`Self::poll_input`] yielded. Nothing by default.
    ///
    /// Errors: the listener's; fatal.
    fn handle_input(
        &mut self,
        client: &mut RaftClient<'_, L>,
        input: Self::Input,
    ) -> Result<(), Self::Error> {
        let _ = (client, input);
        Ok(())
    }
}

/// What a listener's callback left for the runtime to do, in order.
#[derive(Debug, Default)]
pub struct ClientOutput {
    /// Commands of the engine (from proposals and registered snapshots), to
    /// execute as any other engine commands.
    pub commands: Vec<Command>,
    /// Answers to inbound requests; `None` closes the connection.
    pub replies: Vec<(ReplyHandle, Option<Response>)>,
    /// Each successful proposal and its number of records (for the append
    /// and commit-latency metrics).
    pub proposed: Vec<(Proposed, usize)>,
}

/// Milliseconds since the first call in this process, on `Instant`
/// (monotonic: never jumps with the wall clock).
pub fn process_monotonic_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The listener's handle on the engine for one callback (Kafka's
/// `RaftClient`): reads of the Raft state and the log, proposals as the
/// leader, replies, and snapshots.
#[derive(Debug)]
pub struct RaftClient<'a, L: ReplicatedLog> {
    engine: &'a mut RaftEngine<L>,
    now_ms: u64,
    monotonic_ms: u64,
    shutting_down: bool,
    last_append_ms: u64,
    output: ClientOutput,
}

impl<'a, L: ReplicatedLog> RaftClient<'a, L> {
    /// A client over `engine` at `now_ms`. `shutting_down`: the runtime
    /// started a graceful shutdown (listeners stop proposing);
    /// `last_append_ms`: when a proposal was last made (or this node became
    /// leader), for idle no-op records.
    pub fn new(
        engine: &'a mut RaftEngine<L>,
        now_ms: u64,
        shutting_down: bool,
        last_append_ms: u64,
    ) -> Self {
        Self {
            engine,
            now_ms,
            monotonic_ms: process_monotonic_ms(),
            shutting_down,
            last_append_ms,
            output: ClientOutput::default(),
        }
    }

    /// The time of the callback (ms).
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The time of the callback on a monotonic clock (ms since this process
    /// first asked, from `Instant`; Kafka's `Time.nanoseconds()` that
    /// `BrokerHeartbeatManager` runs on): for durations that a wall-clock
    /// step must not change, such as broker sessions.
    pub fn monotonic_ms(&self) -> u64 {
        self.monotonic_ms
    }

    /// This client with its monotonic clock set to `monotonic_ms` (tests
    /// drive both clocks).
    pub fn with_monotonic_ms(mut self, monotonic_ms: u64) -> Self {
        self.monotonic_ms = monotonic_ms;
        self
    }

    /// The runtime is shutting down: propose nothing new.
    pub fn shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// When the last proposal was made, or this node became leader (ms).
    pub fn last_append_ms(&self) -> u64 {
        self.last_append_ms
    }

    /// This node's role.
    pub fn role(&self) -> Role {
        self.engine.role()
    }

    /// The current epoch.
    pub fn epoch(&self) -> i32 {
        self.engine.epoch()
    }

    /// The leader of the current epoch, if known.
    pub fn leader_id(&self) -> Option<i32> {
        self.engine.leader_id()
    }

    /// The high watermark (exclusive), once known.
    pub fn high_watermark(&self) -> Option<i64> {
        self.engine.high_watermark()
    }

    /// The engine's status (DescribeQuorum's view).
    pub fn status(&self) -> RaftStatus {
        self.engine.status()
    }

    /// The latest voter set (KIP-853), committed or not.
    pub fn voters(&self) -> &VoterSet {
        self.engine.voters()
    }

    /// The voter set in effect at `end_offset` (for a snapshot's Voters record).
    pub fn voters_at(&self, end_offset: i64) -> &VoterSet {
        self.engine.voters_at(end_offset)
    }

    /// The log, to read committed records below the high watermark.
    pub fn log(&self) -> &L {
        self.engine.log()
    }

    /// The whole of snapshot `id`, `None` if the log holds none.
    ///
    /// Errors: [`RaftError::Log`].
    pub fn read_snapshot(&self, id: OffsetAndEpoch) -> Result<Option<Bytes>, RaftError> {
        self.engine.read_snapshot(id)
    }

    /// Kafka's `scheduleAppend`: appends `records` as one batch as the
    /// leader; the last one's offset and epoch, or `None` when this node is
    /// not the leader. Resets [`Self::last_append_ms`] either way.
    ///
    /// Errors: [`RaftError`] other than `NotLeader` (the log failed): fatal.
    pub fn propose(&mut self, records: &[Bytes]) -> Result<Option<Proposed>, RaftError> {
        self.last_append_ms = self.now_ms;
        match self.engine.propose(records, self.now_ms) {
            Ok((proposed, commands)) => {
                self.output.commands.extend(commands);
                self.output.proposed.push((proposed, records.len()));
                Ok(Some(proposed))
            }
            Err(RaftError::NotLeader { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Finalizes `kraft.version` at `level` as the leader (see
    /// [`RaftEngine::upgrade_kraft_version`]); the commands go with this
    /// callback's output. An appended upgrade resets [`Self::last_append_ms`].
    ///
    /// Errors: [`KRaftUpgradeError`]; its `Raft` variant (the log failed) is
    /// fatal.
    pub fn upgrade_kraft_version(
        &mut self,
        level: i16,
        validate_only: bool,
    ) -> Result<KRaftUpgrade, KRaftUpgradeError> {
        let (outcome, commands) =
            self.engine
                .upgrade_kraft_version(level, validate_only, self.now_ms)?;
        if matches!(outcome, KRaftUpgrade::Appended { .. }) {
            self.last_append_ms = self.now_ms;
        }
        self.output.commands.extend(commands);
        Ok(outcome)
    }

    /// Tells the engine about snapshot `id`, written and frozen off the
    /// runtime's loop (see [`RaftEngine::register_snapshot`]).
    ///
    /// Errors: [`RaftError::Log`].
    pub fn register_snapshot(&mut self, id: OffsetAndEpoch) -> Result<(), RaftError> {
        self.engine.register_snapshot(id)
    }

    /// Answers the inbound request `handle` with `response` (`None` closes
    /// the connection), sent as given (the listener built it for the
    /// request's version): a `kafka-protocol` body or an own one
    /// ([`Response`]).
    pub fn reply<R: Into<Response>>(&mut self, handle: ReplyHandle, response: Option<R>) {
        self.output.replies.push((handle, response.map(Into::into)));
    }

    /// Ends the callback: what the runtime must do now, and the new
    /// [`Self::last_append_ms`].
    pub fn finish(self) -> (ClientOutput, u64) {
        (self.output, self.last_append_ms)
    }
}
