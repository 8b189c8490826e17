//! The driver: one task owns the Raft engine and the [`Listener`] above it,
//! feeds the engine events with the current time, executes the commands it
//! returns, in order, and calls the listener where the commands say so.
//!
//! Inputs: inbound requests (from the connection tasks), answers of peers
//! (from the [`PeerManager`]), the timer (the earlier of the engine's and the
//! listener's deadline), flush requests, the listener's own inputs
//! ([`Listener::poll_input`]), and the shutdown signal.
//!
//! Execution rules (the engine's contract, see `raft`):
//! - `PersistElectionState` is durable before the next command runs;
//! - `Flush` (issue 23, decisions D5): the loop takes a flush job from the
//!   engine ([`RaftEngine::start_flush`]: the segment files with unsynced
//!   records and the end offset they make durable) and runs its fsyncs
//!   on a blocking thread (a leader with followers, whose Fetch requests
//!   must not wait behind its fsync) or on the loop after one yield (other
//!   nodes, while the previous flush's fsyncs took under 1 ms): [`flush`]. A job's
//!   result goes back to the engine ([`RaftEngine::finish_flush`]) before
//!   any other input once it is there. Either way the flushed end offset
//!   moves only then, so the leader still counts only its own flushed
//!   offset towards the high watermark and a follower still fetches only
//!   from a flushed end. One job runs at a time; the `Flush` commands that
//!   come while it runs start one more job after it. One input is handled
//!   between two flushes, so a leader with records due at every turn still
//!   reads its followers' Fetch requests. A failed fsync stops the node (the
//!   log's fail-stop guard), never a retry;
//! - `Send` goes to the peer manager, whose answer comes back as an event;
//! - `Reply` goes back to the connection that asked;
//! - `Committed`, `SnapshotInstalled` and `RoleChanged` go to the listener
//!   (`handle_commit`, `handle_load_snapshot`, `handle_leader_change`); what
//!   it proposes or replies through its [`RaftClient`] is executed when the
//!   callback returns.
//!
//! Requests the engine serves go to the engine; requests of the listener's
//! api keys to the listener; any other closes the connection. The driver
//! also publishes readiness and the Raft metrics (both read the engine's
//! status only). It must not interpret committed records, nor know which
//! listener it drives.

use std::{
    collections::{HashMap, VecDeque},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use tokio::sync::{mpsc, oneshot, watch};

use super::{
    connection::InboundRequest,
    convert,
    http::Readiness,
    metrics::{RaftGauges, RaftMetrics},
    stages::SharedStages,
};
use crate::{
    log::{FileLog, FlushDone, QuorumStateStore},
    raft::{
        self, Command, Event, RaftEngine, ReplyHandle, RequestFailure, Role,
        listener::{LeaderChange, Listener, RaftClient, SnapshotSource},
    },
    wire::{self, Response, client::PeerManager, client::PeerResponse},
};
pub use flush::FLUSH_ON_LOOP_BELOW;
use flush::{flush_done, flush_on_loop, timed_run};

/// Longest wait for a leader's hand-over on shutdown (ms).
pub const SHUTDOWN_TIMEOUT_MS: u64 = 5_000;

/// Errors that stop the event loop (and the node).
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The engine failed (the log failed): the node must stop.
    #[error("raft engine: {0}")]
    Engine(#[from] raft::RaftError),
    /// The thread running a flush job panicked or was cancelled: whether
    /// its fsyncs happened is unknown, so the node must stop.
    #[error("the log's flush thread failed: {0}")]
    FlushThread(#[from] tokio::task::JoinError),
    /// The quorum-state file could not be written.
    #[error("persisting the election state: {0}")]
    Persist(#[from] crate::log::LogError),
    /// The listener above Raft failed (e.g. a committed record could not be
    /// applied): the node must stop rather than serve a wrong state.
    #[error(transparent)]
    Listener(Box<dyn std::error::Error + Send + Sync>),
}

/// Wall-clock milliseconds, as Kafka's `Time.milliseconds()` that its raft
/// client runs on (DescribeQuorum reports these timestamps).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What the loop needs besides the engine and the listener.
#[derive(Debug)]
pub struct LoopContext {
    /// Where the election state is persisted.
    pub quorum_state: QuorumStateStore,
    /// Outbound connections to the other controllers.
    pub peers: PeerManager,
    /// Answers of the peers.
    pub peer_responses: mpsc::UnboundedReceiver<PeerResponse>,
    /// Requests from the connection tasks.
    pub requests: mpsc::Receiver<InboundRequest>,
    /// Readiness published to `/readyz`.
    pub readiness: watch::Sender<Readiness>,
    /// Metrics.
    pub metrics: std::sync::Arc<RaftMetrics>,
    /// The benchmark's stage probe ([`stages`](super::stages)), fed with
    /// this node's appends, flushes, Fetch requests and answers, and commits
    /// while it leads; `None` outside benchmarks.
    pub stages: Option<SharedStages>,
    /// A flush of a node other than a leader with followers runs on the
    /// loop when the previous flush's fsyncs took less than this, on a
    /// blocking thread otherwise (a server: [`FLUSH_ON_LOOP_BELOW`];
    /// `Duration::ZERO`: always on a thread).
    pub flush_on_loop_below: Duration,
}

struct PendingProposal {
    last_offset: i64,
    epoch: i32,
    proposed_at_ms: u64,
}

/// The loop's state besides the engine and the listener.
struct Loop {
    ctx: LoopContext,
    replies: HashMap<u64, (oneshot::Sender<Option<Response>>, i16)>,
    next_handle: u64,
    /// The engine asked for a flush ([`Command::Flush`]) not yet started.
    flush_pending: bool,
    /// The flush job running on a blocking thread, if one runs, with the
    /// time its fsyncs take.
    flush_job: Option<tokio::task::JoinHandle<(FlushDone, Duration)>>,
    /// How long the last flush job's fsyncs took.
    last_flush_took: Duration,
    shutdown_started: bool,
    shutdown_complete: bool,
    /// When a proposal was last made or this node became leader (ms), for
    /// the listener's idle records ([`RaftClient::last_append_ms`]).
    last_proposal_ms: u64,
    proposals: VecDeque<PendingProposal>,
    election_started_ms: Option<u64>,
    /// With a stage probe: the replica id of each Fetch request not yet
    /// answered, by reply handle.
    fetch_replicas: HashMap<u64, i32>,
}

/// Runs the loop until the engine completes a graceful shutdown (after
/// `shutdown` fires) or fails. Returns the engine so the caller can close the
/// log cleanly.
///
/// Errors: [`LoopError`]; the node must stop.
pub async fn run<Lst: Listener<FileLog>>(
    mut engine: RaftEngine<FileLog>,
    initial: Vec<Command>,
    ctx: LoopContext,
    mut listener: Lst,
    mut shutdown: watch::Receiver<bool>,
) -> Result<RaftEngine<FileLog>, LoopError> {
    let mut lp = Loop {
        ctx,
        replies: HashMap::new(),
        next_handle: 1,
        flush_pending: false,
        flush_job: None,
        last_flush_took: Duration::ZERO,
        shutdown_started: false,
        shutdown_complete: false,
        last_proposal_ms: now_ms(),
        proposals: VecDeque::new(),
        election_started_ms: None,
        fetch_replicas: HashMap::new(),
    };
    let lst = &mut listener;
    // The 0-0 bootstrap checkpoint is not a snapshot of the log: its voters
    // are the engine's at start (KIP-853), and its data records, which
    // Kafka 4.4's format writes there (KIP-1170), are the bootstrap that the
    // first leader appends to the log; a listener never loads it (Kafka 4.4's
    // controller writes the bootstrap records into the log of a directory its
    // own format made).
    if let Some(id) = crate::log::ReplicatedLog::latest_snapshot_id(engine.log())
        && id != crate::log::snapshot::BOOTSTRAP_SNAPSHOT_ID
    {
        lp.call(&mut engine, lst, |l, c| {
            l.handle_load_snapshot(c, id, SnapshotSource::Local)
        })?;
    }
    lp.execute(&mut engine, lst, initial)?;
    lp.publish(&engine);
    while !lp.shutdown_complete {
        if lp.flush_pending && lp.flush_job.is_none() {
            if lp.flush_on_loop(&engine) {
                // The answers this turn queued go out before the fsync:
                // the connection tasks run on this thread.
                tokio::task::yield_now().await;
                lp.run_flush_on_loop(&mut engine, lst)?;
            } else {
                lp.start_flush(&mut engine, lst)?;
            }
        }
        let now = now_ms();
        let deadline = lp.next_wakeup(&mut engine, lst, now);
        let sleep = tokio::time::sleep(Duration::from_millis(deadline.saturating_sub(now)));
        tokio::pin!(sleep);
        tokio::select! {
            biased;
            done = flush_done(&mut lp.flush_job), if lp.flush_job.is_some() => {
                lp.flush_job = None;
                let (done, took) = done?;
                lp.last_flush_took = took;
                lp.finish_flush(&mut engine, lst, done)?;
            }
            changed = shutdown.changed(), if !lp.shutdown_started => {
                if changed.is_err() || *shutdown.borrow() {
                    tracing::info!("shutting down: handing over leadership if leader");
                    lp.shutdown_started = true;
                    let cmds = engine.handle(Event::Shutdown { timeout_ms: SHUTDOWN_TIMEOUT_MS }, now_ms())?;
                    lp.execute(&mut engine, lst, cmds)?;
                }
            }
            Some(answer) = lp.ctx.peer_responses.recv() => {
                let event = convert::peer_event(answer);
                let cmds = engine.handle(event, now_ms())?;
                lp.execute(&mut engine, lst, cmds)?;
            }
            Some(inbound) = lp.ctx.requests.recv() => {
                lp.on_request(&mut engine, lst, inbound)?;
            }
            input = std::future::poll_fn(|cx| lst.poll_input(cx)) => {
                lp.call(&mut engine, lst, |l, c| l.handle_input(c, input))?;
            }
            () = &mut sleep => {
                let now = now_ms();
                let cmds = engine.handle(Event::Tick, now)?;
                lp.execute(&mut engine, lst, cmds)?;
                lp.call(&mut engine, lst, |l, c| l.handle_wakeup(c))?;
                lp.ctx.metrics.tick(now);
            }
        }
        lp.call(&mut engine, lst, |l, c| l.poll(c))?;
        lp.publish(&engine);
    }
    // A job still running has fsyncs of appends this node may have counted
    // on: its end (or its failure) is the engine's before the log closes.
    if let Some(job) = lp.flush_job.take() {
        engine.finish_flush(job.await?.0, now_ms())?;
    }
    Ok(engine)
}

impl Loop {
    /// Starts the flush the engine asked for: its fsyncs on a blocking
    /// thread, or, when nothing is left to fsync, ended at once.
    fn start_flush<Lst: Listener<FileLog>>(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        listener: &mut Lst,
    ) -> Result<(), LoopError> {
        self.flush_pending = false;
        let job = engine.start_flush()?;
        if job.file_count() == 0 {
            return self.finish_flush(engine, listener, job.run());
        }
        self.flush_job = Some(tokio::task::spawn_blocking(move || timed_run(job)));
        Ok(())
    }

    /// Whether the next flush runs on the loop (decisions D5): not on a
    /// leader with followers, whose Fetch requests (the commit's path) must
    /// not wait behind its fsync; elsewhere while the previous flush's
    /// fsyncs took under [`LoopContext::flush_on_loop_below`].
    fn flush_on_loop(&self, engine: &RaftEngine<FileLog>) -> bool {
        flush_on_loop(
            engine.role(),
            engine.voters().len(),
            self.last_flush_took,
            self.ctx.flush_on_loop_below,
        )
    }

    /// Runs the flush the engine asked for on the loop, blocking it for the
    /// fsyncs, and hands its result to the engine.
    fn run_flush_on_loop<Lst: Listener<FileLog>>(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        listener: &mut Lst,
    ) -> Result<(), LoopError> {
        self.flush_pending = false;
        let (done, took) = timed_run(engine.start_flush()?);
        self.last_flush_took = took;
        self.finish_flush(engine, listener, done)
    }

    /// Hands a flush job's result to the engine (the flushed end offset
    /// moves, or the node stops on a failed fsync) and executes what follows.
    fn finish_flush<Lst: Listener<FileLog>>(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        listener: &mut Lst,
        done: FlushDone,
    ) -> Result<(), LoopError> {
        let cmds = engine.finish_flush(done, now_ms())?;
        self.probe_flushed(engine);
        self.execute(engine, listener, cmds)
    }

    fn next_wakeup<Lst: Listener<FileLog>>(
        &self,
        engine: &mut RaftEngine<FileLog>,
        listener: &Lst,
        now: u64,
    ) -> u64 {
        if self.flush_pending && self.flush_job.is_none() {
            // A flush asked for after this turn's flush (a record proposed on
            // the commit it made): the next turn starts it, after one ready
            // input if there is one (the select is biased towards inputs).
            return now;
        }
        let deadline = engine.next_deadline_ms();
        let client = RaftClient::new(engine, now, self.shutdown_started, self.last_proposal_ms);
        let deadline = listener
            .next_deadline_ms(&client)
            .map_or(deadline, |at| deadline.min(at));
        // Refresh windowed metrics at least once a second.
        deadline.min(now + 1_000)
    }

    /// Calls the listener with a [`RaftClient`], then carries out what it
    /// left: proposals counted for the metrics, replies sent, the engine's
    /// commands executed.
    fn call<Lst: Listener<FileLog>, R>(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        listener: &mut Lst,
        f: impl FnOnce(&mut Lst, &mut RaftClient<'_, FileLog>) -> Result<R, Lst::Error>,
    ) -> Result<R, LoopError> {
        let now = now_ms();
        let mut client = RaftClient::new(engine, now, self.shutdown_started, self.last_proposal_ms);
        let result = f(listener, &mut client);
        let (output, last_append_ms) = client.finish();
        self.last_proposal_ms = last_append_ms;
        let result = result.map_err(|e| LoopError::Listener(Box::new(e)))?;
        for (proposed, records) in output.proposed {
            if let Some(stages) = &self.ctx.stages {
                lock(stages).appended(proposed.last_offset, Instant::now());
            }
            self.ctx.metrics.record_appended(now, records as u64);
            self.proposals.push_back(PendingProposal {
                last_offset: proposed.last_offset,
                epoch: proposed.epoch,
                proposed_at_ms: now,
            });
        }
        for (handle, response) in output.replies {
            if let Some((reply, _)) = self.replies.remove(&handle.0) {
                let _ = reply.send(response);
            }
        }
        self.execute(engine, listener, output.commands)?;
        Ok(result)
    }

    fn on_request<Lst: Listener<FileLog>>(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        listener: &mut Lst,
        inbound: InboundRequest,
    ) -> Result<(), LoopError> {
        let api_version = inbound.request.api_version;
        let request = match convert::raft_request(inbound.request.body) {
            Ok(request) => {
                if let raft::RaftRequest::AddRaftVoter(r) = &request {
                    // A membership change is rare: say which version and
                    // KIP-1186 flag it came with.
                    tracing::info!(peer = %inbound.peer, api_version, voter = r.request.voter_id,
                        ack_when_committed = r.ack_when_committed, "AddRaftVoter request");
                }
                if let Some(refusal) = vet_voter_change(engine, listener, &request) {
                    let _ = inbound.reply.send(Some(refusal.into()));
                    return Ok(());
                }
                let handle = self.reply_handle(inbound.reply, api_version);
                self.probe_fetch_arrived(engine, handle, &request);
                let cmds = engine.handle(
                    Event::Request {
                        handle,
                        api_version,
                        request,
                    },
                    now_ms(),
                )?;
                return self.execute(engine, listener, cmds);
            }
            Err(other) => *other,
        };
        let key = request.api();
        if key.is_some_and(|k| listener.api_keys().contains(&k)) {
            let handle = self.reply_handle(inbound.reply, api_version);
            let listener_name = inbound.listener_name;
            self.call(engine, listener, |l, c| {
                l.handle_request(c, handle, api_version, &listener_name, request)
            })
        } else {
            tracing::warn!(peer = %inbound.peer, api = ?key,
                "closing connection: api not served by a controller");
            let _ = inbound.reply.send(None);
            Ok(())
        }
    }

    /// Keeps `reply` (and the request's version) until the answer to the
    /// returned handle comes.
    fn reply_handle(
        &mut self,
        reply: oneshot::Sender<Option<Response>>,
        api_version: i16,
    ) -> ReplyHandle {
        let handle = self.next_handle;
        self.next_handle += 1;
        self.replies.insert(handle, (reply, api_version));
        ReplyHandle(handle)
    }

    fn execute<Lst: Listener<FileLog>>(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        listener: &mut Lst,
        commands: Vec<Command>,
    ) -> Result<(), LoopError> {
        for command in commands {
            match command {
                Command::Send {
                    id,
                    destination,
                    request,
                    timeout_ms: _,
                } => {
                    let node_id = destination.node_id;
                    if let Some(endpoint) = &destination.endpoint {
                        self.ctx
                            .peers
                            .set_peer(node_id, &convert::address(endpoint));
                    }
                    let api_key = convert::api_key_of(&request);
                    let version = wire::supported_api(api_key).map_or(0, |a| a.max_version);
                    let mut body = convert::request_kind(request);
                    super::fit::fit_request(&mut body, version);
                    if let Err(e) = self.ctx.peers.send(node_id, version, body, id.0) {
                        tracing::debug!(node = node_id, error = %e, "cannot send");
                        let cmds = engine.handle(
                            Event::RequestFailed {
                                id,
                                failure: RequestFailure::Disconnected,
                            },
                            now_ms(),
                        )?;
                        self.execute(engine, listener, cmds)?;
                    }
                }
                Command::Reply { handle, response } => {
                    self.probe_fetch_sent(handle, &response);
                    if let Some((reply, version)) = self.replies.remove(&handle.0) {
                        let mut body = convert::response_kind(response);
                        super::fit::fit_response(&mut body, version);
                        let _ = reply.send(Some(body.into()));
                    }
                }
                Command::PersistElectionState(state) => {
                    self.ctx.quorum_state.write(&crate::log::ElectionState {
                        epoch: state.epoch,
                        leader_id: state.leader_id,
                        voted_key: state.voted_key.map(|k| (k.id, k.directory_id)),
                    })?;
                }
                Command::Flush => self.flush_pending = true,
                Command::Committed { high_watermark } => {
                    if let Some(stages) = &self.ctx.stages {
                        lock(stages).committed(high_watermark, Instant::now());
                    }
                    self.on_committed(high_watermark);
                    self.call(engine, listener, |l, c| l.handle_commit(c, high_watermark))?;
                }
                Command::RoleChanged {
                    role,
                    epoch,
                    leader_id,
                } => {
                    self.on_role_changed(role, epoch, leader_id);
                    let change = LeaderChange {
                        role,
                        epoch,
                        leader_id,
                    };
                    self.call(engine, listener, |l, c| l.handle_leader_change(c, change))?;
                }
                Command::SnapshotInstalled { snapshot_id } => {
                    self.call(engine, listener, |l, c| {
                        l.handle_load_snapshot(c, snapshot_id, SnapshotSource::Leader)
                    })?;
                }
                Command::ShutdownComplete => self.shutdown_complete = true,
            }
        }
        Ok(())
    }

    /// Commit latency of this node's proposals below `high_watermark`.
    fn on_committed(&mut self, high_watermark: i64) {
        let now = now_ms();
        while let Some(p) = self.proposals.front() {
            if p.last_offset >= high_watermark {
                break;
            }
            self.ctx
                .metrics
                .record_commit_latency(now, now.saturating_sub(p.proposed_at_ms) as f64);
            self.proposals.pop_front();
        }
    }

    fn on_role_changed(&mut self, role: Role, epoch: i32, leader_id: Option<i32>) {
        let now = now_ms();
        let leader = leader_id.map_or_else(|| "none".to_owned(), |l| l.to_string());
        tracing::info!(role = role.name(), epoch, leader = %leader, "role changed");
        match (leader_id, self.election_started_ms) {
            (None, None) => self.election_started_ms = Some(now),
            (Some(_), Some(started)) => {
                self.ctx
                    .metrics
                    .record_election_latency(now, now.saturating_sub(started) as f64);
                self.election_started_ms = None;
            }
            _ => {}
        }
        if role == Role::Leader {
            self.last_proposal_ms = now;
            if let Some(stages) = &self.ctx.stages {
                lock(stages).restart();
            }
        } else if let Some(stages) = &self.ctx.stages {
            // This node's uncommitted batches may be truncated; another
            // leader's high watermark must not measure them.
            lock(stages).leadership_ended();
        }
        self.fetch_replicas.clear();
        // Proposals of an older epoch will never commit as such.
        self.proposals.retain(|p| p.epoch == epoch);
    }

    /// Stage probe: the leader's fsync returned.
    fn probe_flushed(&self, engine: &RaftEngine<FileLog>) {
        if let Some(stages) = &self.ctx.stages
            && engine.role() == Role::Leader
        {
            let flushed = crate::log::ReplicatedLog::flushed_end_offset(engine.log());
            lock(stages).flushed(flushed, Instant::now());
        }
    }

    /// Stage probe: a follower's Fetch (its fetch offset is what it holds
    /// flushed) reached the loop; its handle is kept to see the answer.
    fn probe_fetch_arrived(
        &mut self,
        engine: &RaftEngine<FileLog>,
        handle: ReplyHandle,
        request: &raft::RaftRequest,
    ) {
        let (Some(stages), raft::RaftRequest::Fetch(r)) = (&self.ctx.stages, request) else {
            return;
        };
        if engine.role() != Role::Leader {
            return;
        }
        let replica_id = if r.replica_state.replica_id.0 >= 0 {
            r.replica_state.replica_id.0
        } else {
            r.replica_id.0
        };
        // Observers fetch too, but count toward no majority.
        if !engine.voters().contains_id(replica_id) {
            return;
        }
        let Some(p) = r.topics.first().and_then(|t| t.partitions.first()) else {
            return;
        };
        lock(stages).fetch_arrived(replica_id, p.fetch_offset, Instant::now());
        self.fetch_replicas.insert(handle.0, replica_id);
    }

    /// Stage probe: the answer to a follower's Fetch leaves, carrying the
    /// log up to the end of its last batch.
    fn probe_fetch_sent(&mut self, handle: ReplyHandle, response: &raft::RaftResponse) {
        let Some(stages) = &self.ctx.stages else {
            return;
        };
        let Some(replica_id) = self.fetch_replicas.remove(&handle.0) else {
            return;
        };
        let raft::RaftResponse::Fetch(r) = response else {
            return;
        };
        let records = r
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .and_then(|p| p.records.as_ref());
        let end = records.and_then(|bytes| {
            crate::record::iter_batches(bytes, false)
                .map_while(std::result::Result::ok)
                .last()
                .map(|(header, _)| header.next_offset())
        });
        if let Some(end) = end {
            lock(stages).fetch_sent(replica_id, end, Instant::now());
        }
    }

    fn publish(&self, engine: &RaftEngine<FileLog>) {
        let status = engine.status();
        self.ctx.metrics.set(&RaftGauges {
            leader_id: status.leader_id.unwrap_or(-1),
            epoch: status.epoch,
            voted_id: status.voted_key.map_or(-1, |k| k.id),
            state: if status.is_voter || status.role == Role::Leader {
                status.role.name()
            } else {
                "observer"
            },
            high_watermark: status.high_watermark.unwrap_or(-1),
            log_end_offset: status.log_end_offset,
            log_end_epoch: crate::log::ReplicatedLog::end_offset(engine.log()).epoch,
            voters: status.voters.len(),
            observers: status.observers.len(),
            uncommitted_voter_change: status.uncommitted_voter_change,
            caught_up: status.caught_up,
            leader_high_watermark: status.leader_high_watermark.unwrap_or(-1),
        });
        let readiness = readiness(&status);
        self.ctx.readiness.send_if_modified(|r| {
            if *r == readiness {
                false
            } else {
                *r = readiness;
                true
            }
        });
    }
}

/// The (name, host, port) triples of a voter-change request's listeners.
fn endpoints<'a>(listeners: impl Iterator<Item = (&'a str, &'a str, u16)>) -> Vec<raft::Endpoint> {
    listeners
        .map(|(name, host, port)| raft::Endpoint::new(name, host, port))
        .collect()
}

/// The leader's answer to an AddRaftVoter or UpdateRaftVoter whose
/// endpoints disagree with what the node registered itself
/// ([`Listener::vet_voter_endpoints`]), before the engine sees the request,
/// so nothing is stored: AddRaftVoter gets INVALID_REQUEST with the reason;
/// UpdateRaftVoter gets REQUEST_TIMED_OUT, retriable, and the reason is
/// logged (its answer has no message field). A node whose address changed
/// sends its new ControllerRegistration and its UpdateRaftVoter
/// independently, so the update can come before the registration commits;
/// Kafka's follower sends it again after a retriable error, while
/// INVALID_REQUEST stops a Kafka 4.x follower (KAFKA-19867).
/// `None` for any other request, and wherever the engine answers first:
/// not leading (NOT_LEADER_OR_FOLLOWER), an AddRaftVoter for a voter
/// (DUPLICATE_VOTER), an UpdateRaftVoter of another epoch
/// (FENCED_/UNKNOWN_LEADER_EPOCH) or for a replica that is not a voter
/// (VOTER_NOT_FOUND). (The engine's cluster-id and pending-change checks
/// come after this one for an UpdateRaftVoter that disagrees.)
fn vet_voter_change<Lst: Listener<FileLog>>(
    engine: &RaftEngine<FileLog>,
    listener: &Lst,
    request: &raft::RaftRequest,
) -> Option<kafka_protocol::messages::ResponseKind> {
    use kafka_protocol::error::ResponseError::{InvalidRequest, RequestTimedOut};
    if engine.role() != Role::Leader {
        return None;
    }
    let status = engine.status();
    let (voter_id, given) = match request {
        raft::RaftRequest::AddRaftVoter(r)
            if !status.voters.iter().any(|v| v.key.id == r.request.voter_id) =>
        {
            let r = &r.request;
            let given = r.listeners.iter();
            (
                r.voter_id,
                endpoints(given.map(|l| (l.name.as_str(), l.host.as_str(), l.port))),
            )
        }
        raft::RaftRequest::UpdateRaftVoter(r)
            if r.current_leader_epoch == engine.epoch()
                && status.voters.iter().any(|v| {
                    v.key == raft::ReplicaKey::from_wire(r.voter_id, r.voter_directory_id)
                }) =>
        {
            let given = r.listeners.iter();
            (
                r.voter_id,
                endpoints(given.map(|l| (l.name.as_str(), l.host.as_str(), l.port))),
            )
        }
        _ => return None,
    };
    let reason = listener.vet_voter_endpoints(voter_id, &given).err()?;
    if matches!(request, raft::RaftRequest::AddRaftVoter(_)) {
        tracing::warn!(voter = voter_id, %reason, "AddRaftVoter refused");
        Some(kafka_protocol::messages::ResponseKind::AddRaftVoter(
            kafka_protocol::messages::AddRaftVoterResponse::default()
                .with_error_code(InvalidRequest.code())
                .with_error_message(Some(reason.into())),
        ))
    } else {
        tracing::warn!(voter = voter_id, %reason, "UpdateRaftVoter refused until the node's registration agrees; retriable");
        Some(kafka_protocol::messages::ResponseKind::UpdateRaftVoter(
            kafka_protocol::messages::UpdateRaftVoterResponse::default()
                .with_error_code(RequestTimedOut.code()),
        ))
    }
}

/// Ready: a leader is known and this node is caught up with it. A leader is
/// ready once its high watermark is known (a record of its epoch committed);
/// a follower or observer when [`raft::RaftStatus::caught_up`] holds: the
/// leader's own answers, within the fetch timeout, showed it at the leader's
/// high watermark (issue 27: never from the node's own log, which made every
/// node that got fetch answers "caught up").
fn readiness(status: &raft::RaftStatus) -> Readiness {
    let epoch = status.epoch;
    let what = if status.is_voter {
        "follower"
    } else {
        "observer"
    };
    match (status.role, status.leader_id, status.high_watermark) {
        (Role::Leader, _, Some(hw)) => Readiness {
            ready: true,
            reason: format!("leader in epoch {epoch}, high watermark {hw}"),
            until_ms: None,
        },
        (Role::Leader, _, None) => Readiness {
            ready: false,
            reason: format!("leader in epoch {epoch}, waiting for its first commit"),
            until_ms: None,
        },
        (Role::Follower, Some(leader), _) if status.caught_up => Readiness {
            ready: true,
            reason: format!(
                "{what} of {leader} in epoch {epoch}, caught up to the leader's high watermark {}",
                status
                    .leader_high_watermark
                    .map_or_else(|| "(none yet)".to_owned(), |h| h.to_string())
            ),
            until_ms: status.caught_up_until_ms,
        },
        (Role::Follower, Some(leader), _) => Readiness {
            ready: false,
            reason: match (status.last_caught_up_ms, status.leader_high_watermark) {
                (_, Some(hw)) if status.flushed_end_offset < hw => format!(
                    "{what} of {leader} in epoch {epoch}, flushed log end {} is {} behind the leader's high watermark {hw}",
                    status.flushed_end_offset,
                    hw - status.flushed_end_offset
                ),
                (None, _) => format!(
                    "{what} of {leader} in epoch {epoch}, no fetch answer has shown it caught up yet"
                ),
                (Some(t), _) => format!(
                    "{what} of {leader} in epoch {epoch}, last caught up at {t} ms (engine time), longer ago than the fetch timeout"
                ),
            },
            until_ms: None,
        },
        (role, _, _) => Readiness {
            ready: false,
            reason: format!("{} in epoch {epoch}, no leader known", role.name()),
            until_ms: None,
        },
    }
}

mod flush;
#[cfg(test)]
mod tests;

/// Locks the stage probe; a panic elsewhere while holding it leaves plain
/// counters behind, still worth reading.
fn lock(stages: &SharedStages) -> std::sync::MutexGuard<'_, super::stages::StageProbe> {
    stages
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
