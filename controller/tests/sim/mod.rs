//! A deterministic simulation harness for the Raft engine: a seeded RNG, a
//! virtual clock, an in-memory network that drops, delays, reorders and
//! partitions, nodes that crash (losing what they had not flushed, through
//! `MemoryLog::crash`, or a power loss of `MemoryFs` under the real
//! `FileLog`: see [`disk`]) and restart from their persisted election state,
//! and disks that fail (a node whose log stops on a failed write or fsync
//! stops, and restarts later from what was durable).
//!
//! Invariants are checked after every event (see [`Sim::check`]); a failure
//! panics with the seed so the run can be replayed with `SIM_SEED=<seed>`.
//!
//! Snapshots (KIP-630) and log cleaning are on in every run: each node
//! snapshots its "state machine" at its high watermark every
//! `snapshot_every` offsets (the state is a digest of every committed batch
//! below the snapshot: the node's previous snapshot's digest extended by its
//! own log), the engines clean their logs past `retention`, and a node below
//! the leader's log start installs the leader's snapshot (FetchSnapshot).

#![allow(dead_code)]

pub mod disk;
pub mod image;

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap},
};

use bytes::Bytes;
use disk::{DiskKind, SimLog};
use kraft_controller::{
    log::{
        OffsetAndEpoch, ReplicatedLog, RetentionConfig, fault_fs::Fault, snapshot::encode_snapshot,
    },
    raft::{
        Command, Destination, ElectionState, Endpoint, Event, RaftConfig, RaftEngine, RaftError,
        RaftRequest, RaftResponse, ReplicaKey, ReplyHandle, RequestFailure, RequestId, Role, Voter,
        VoterSet,
    },
    record::{ControlRecord, DecodedBatch, KRaftVersionRecord, iter_batches},
};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Faults and shape of one simulated cluster.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    pub voters: usize,
    pub observers: usize,
    /// Probability that a message is lost.
    pub drop_rate: f64,
    /// One-way network delay range (ms).
    pub min_delay_ms: u64,
    pub max_delay_ms: u64,
    /// Longest delay before the runtime executes a Flush (ms); crashes in
    /// between lose the unflushed tail.
    pub max_flush_delay_ms: u64,
    /// Probability that a node crashes in the middle of executing one
    /// command list (after a random prefix of it).
    pub crash_mid_commands: f64,
    /// KIP-853 mode: kraft.version 1, nodes `1..=voters` all run, only
    /// `1..=initial_voters` are in the bootstrap voter set (the 0-0
    /// checkpoint); the others start as observers with no voter set.
    pub initial_voters: Option<usize>,
    /// Each node snapshots once its high watermark passed its latest
    /// snapshot by this many offsets (`None`: never).
    pub snapshot_every: Option<i64>,
    /// The engines' `metadata.max.retention.*`.
    pub retention: RetentionConfig,
    /// How often the engines check their retention (ms).
    pub log_clean_interval_ms: u64,
    /// The chunk size of FetchSnapshot (bytes): small, so that a snapshot
    /// takes several round trips and can be cleaned away mid-transfer.
    pub max_fetch_snapshot_bytes: usize,
    /// The log every node runs.
    pub disk: DiskKind,
}

impl SimConfig {
    pub fn new(seed: u64, voters: usize, observers: usize) -> Self {
        Self {
            seed,
            voters,
            observers,
            drop_rate: 0.0,
            min_delay_ms: 1,
            max_delay_ms: 10,
            max_flush_delay_ms: 5,
            crash_mid_commands: 0.0,
            initial_voters: None,
            snapshot_every: Some(20),
            // A few dozen batches: cleaned many times in a run.
            retention: RetentionConfig {
                max_bytes: Some(3_000),
                max_ms: None,
            },
            log_clean_interval_ms: 500,
            max_fetch_snapshot_bytes: 100,
            disk: DiskKind::Memory,
        }
    }
}

/// Identity of one batch: what "identical committed data" compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSig {
    pub base_offset: i64,
    pub last_offset: i64,
    pub epoch: i32,
    pub crc: u32,
}

/// Every batch from the one holding `from` to the log end: one read may
/// stop at a segment's end (`FileLog`), so this reads until the end.
/// Empty if a read fails.
pub fn read_to_end(log: &SimLog, from: i64) -> Bytes {
    let mut out = Vec::new();
    let mut at = from.max(log.start_offset());
    let end = log.end_offset().offset;
    while at < end {
        let Ok(info) = log.read(at, usize::MAX) else {
            return Bytes::new();
        };
        let Some(last) = iter_batches(&info.records, false)
            .map_while(|b| b.ok())
            .map(|(h, _)| h.next_offset())
            .last()
        else {
            break;
        };
        out.extend_from_slice(&info.records);
        at = last;
    }
    Bytes::from(out)
}

fn batches_of(log: &SimLog, from: i64) -> Vec<BatchSig> {
    let records = read_to_end(log, from);
    iter_batches(&records, false)
        .map(|b| {
            let (h, _) = b.expect("stored batches parse");
            BatchSig {
                base_offset: h.base_offset,
                last_offset: h.last_offset(),
                epoch: h.partition_leader_epoch,
                crc: h.crc,
            }
        })
        .collect()
}

#[derive(Debug)]
pub struct Node {
    pub id: i32,
    pub is_voter: bool,
    pub engine: Option<RaftEngine<SimLog>>,
    /// The disk of a crashed node.
    pub disk: Option<SimLog>,
    pub persisted: Option<ElectionState>,
    pub incarnation: u64,
    max_persisted_epoch: i32,
    flush_scheduled: bool,
    /// Log offsets below this were verified against the committed history.
    verified_to: i64,
    busy_ticks: u32,
    last_tick_at: u64,
    /// How many times the node's disk was replaced (a new directory id).
    pub disk_generation: u32,
}

#[derive(Debug)]
enum SimEvent {
    Deliver {
        from: i32,
        from_inc: u64,
        to: i32,
        id: RequestId,
        request: RaftRequest,
    },
    Respond {
        to: i32,
        to_inc: u64,
        id: RequestId,
        response: RaftResponse,
    },
    Timeout {
        to: i32,
        to_inc: u64,
        id: RequestId,
    },
    Flush {
        node: i32,
        inc: u64,
    },
}

/// The simulated cluster.
#[derive(Debug)]
pub struct Sim {
    pub cfg: SimConfig,
    pub now: u64,
    rng: ChaCha8Rng,
    pub nodes: BTreeMap<i32, Node>,
    voter_ids: Vec<i32>,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    events: HashMap<u64, SimEvent>,
    seq: u64,
    /// Pairs of nodes that cannot talk (both directions).
    blocked: BTreeSet<(i32, i32)>,
    handles: HashMap<u64, (i32, u64, RequestId)>,
    answered: BTreeSet<(i32, u64, RequestId)>,
    next_handle: u64,
    pub leaders_by_epoch: BTreeMap<i32, i32>,
    /// The committed history: batches below `committed_hw`, by base offset.
    pub committed: BTreeMap<i64, BatchSig>,
    pub committed_hw: i64,
    next_value: u64,
    pub events_processed: u64,
    /// Error codes of admin replies, by admin request number.
    pub admin_replies: BTreeMap<u64, i16>,
    next_admin: u64,
    admin_handles: HashMap<u64, u64>,
    /// Real (not pre-) vote requests being answered, by handle.
    vote_handles: BTreeSet<u64>,
    /// Votes granted: (voter, epoch) → candidate.
    pub votes_granted: BTreeMap<(i32, u32, i32), i32>,
    /// Every voter set a leader has held (KIP-853 invariant).
    pub known_voter_sets: BTreeSet<Vec<(i32, Option<uuid::Uuid>)>>,
    /// Snapshots installed from a leader, by node (KIP-630).
    pub snapshots_installed: BTreeMap<i32, u32>,
    /// Snapshots written by the nodes.
    pub snapshots_written: u64,
    /// Where each leader's epoch starts in its log (its LeaderChange batch),
    /// noted when it became leader: once its log is cleaned, the log no
    /// longer tells.
    epoch_starts: BTreeMap<i32, i64>,
    /// Nodes stopped by a failed file operation: (node, the failure).
    pub disk_failures: Vec<(i32, String)>,
}

/// Node id of the simulated admin client.
const ADMIN: i32 = -1000;

/// Directory id of node `id`'s first disk.
pub fn directory_id(id: i32) -> uuid::Uuid {
    disk_directory_id(id, 0)
}

/// Directory id of node `id`'s disk number `generation`.
pub fn disk_directory_id(id: i32, generation: u32) -> uuid::Uuid {
    uuid::Uuid::from_u128(0xD1 << 64 | u128::from(generation) << 32 | id as u32 as u128)
}

fn set_key(set: &VoterSet) -> Vec<(i32, Option<uuid::Uuid>)> {
    set.iter().map(|v| (v.key.id, v.key.directory_id)).collect()
}

pub fn voter_set(ids: &[i32]) -> VoterSet {
    VoterSet::new(ids.iter().map(|id| {
        Voter::new(
            ReplicaKey::of(*id),
            Some(Endpoint::new("CONTROLLER", format!("node{id}"), 9093)),
        )
    }))
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Self {
        let voter_ids: Vec<i32> = (1..=cfg.voters as i32).collect();
        let observer_ids: Vec<i32> = (0..cfg.observers as i32).map(|i| 100 + i).collect();
        let mut sim = Self {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg,
            now: 0,
            nodes: BTreeMap::new(),
            voter_ids: voter_ids.clone(),
            queue: BinaryHeap::new(),
            events: HashMap::new(),
            seq: 0,
            blocked: BTreeSet::new(),
            handles: HashMap::new(),
            answered: BTreeSet::new(),
            next_handle: 0,
            leaders_by_epoch: BTreeMap::new(),
            committed: BTreeMap::new(),
            committed_hw: 0,
            next_value: 0,
            events_processed: 0,
            admin_replies: BTreeMap::new(),
            next_admin: 0,
            admin_handles: HashMap::new(),
            known_voter_sets: BTreeSet::new(),
            vote_handles: BTreeSet::new(),
            votes_granted: BTreeMap::new(),
            snapshots_installed: BTreeMap::new(),
            snapshots_written: 0,
            epoch_starts: BTreeMap::new(),
            disk_failures: Vec::new(),
        };
        if let Some(k) = sim.cfg.initial_voters {
            let bootstrap = sim.dynamic_voter_set(&(1..=k as i32).collect::<Vec<_>>());
            sim.known_voter_sets.insert(set_key(&bootstrap));
            sim.known_voter_sets.insert(Vec::new());
        }
        for id in voter_ids.iter().chain(observer_ids.iter()) {
            sim.nodes.insert(
                *id,
                Node {
                    id: *id,
                    is_voter: voter_ids.contains(id),
                    engine: None,
                    disk: Some(SimLog::new(sim.cfg.disk)),
                    persisted: None,
                    incarnation: 0,
                    max_persisted_epoch: 0,
                    flush_scheduled: false,
                    verified_to: 0,
                    busy_ticks: 0,
                    last_tick_at: 0,
                    disk_generation: 0,
                },
            );
        }
        let ids: Vec<i32> = sim.nodes.keys().copied().collect();
        for id in ids {
            sim.restart(id);
        }
        sim
    }

    fn fail(&self, what: String) -> ! {
        panic!(
            "simulation invariant violated (seed {}, t={} ms): {what}\nreplay with SIM_SEED={}",
            self.cfg.seed, self.now, self.cfg.seed
        )
    }

    pub fn dynamic_voter_set(&self, ids: &[i32]) -> VoterSet {
        VoterSet::new(ids.iter().map(|id| {
            Voter::new(
                ReplicaKey::with_directory(*id, directory_id(*id)),
                Some(Endpoint::new("CONTROLLER", format!("node{id}"), 9093)),
            )
        }))
    }

    pub fn config_for(&self, id: i32) -> RaftConfig {
        if let Some(k) = self.cfg.initial_voters {
            // A replaced disk is formatted --no-initial-controllers.
            let formatted_with_voters = id <= k as i32 && self.nodes[&id].disk_generation == 0;
            let initial: Vec<i32> = if formatted_with_voters {
                (1..=k as i32).collect()
            } else {
                Vec::new()
            };
            let mut config = RaftConfig::new(id, self.dynamic_voter_set(&initial));
            config.kraft_version = 1;
            config.directory_id = Some(self.directory_of(id));
            config.cluster_id = Some("sim-cluster".into());
            config.bootstrap_servers = self
                .voter_ids
                .iter()
                .map(|v| Endpoint::new("CONTROLLER", format!("node{v}"), 9093))
                .collect();
            config.retention = self.cfg.retention;
            config.log_clean_interval_ms = self.cfg.log_clean_interval_ms;
            config.max_fetch_snapshot_bytes = self.cfg.max_fetch_snapshot_bytes;
            return config;
        }
        let mut config = RaftConfig::new(id, voter_set(&self.voter_ids));
        config.cluster_id = Some("sim-cluster".into());
        config.bootstrap_servers = self
            .voter_ids
            .iter()
            .map(|v| Endpoint::new("CONTROLLER", format!("node{v}"), 9093))
            .collect();
        config.retention = self.cfg.retention;
        config.log_clean_interval_ms = self.cfg.log_clean_interval_ms;
        config.max_fetch_snapshot_bytes = self.cfg.max_fetch_snapshot_bytes;
        config
    }

    // ---- node lifecycle ---------------------------------------------------

    pub fn is_up(&self, id: i32) -> bool {
        self.nodes.get(&id).is_some_and(|n| n.engine.is_some())
    }

    pub fn crash(&mut self, id: i32) {
        let node = self.nodes.get_mut(&id).expect("node exists");
        if let Some(engine) = node.engine.take() {
            let mut log = engine.into_log();
            let reopened = log.crash();
            node.disk = Some(log);
            node.incarnation += 1;
            node.flush_scheduled = false;
            node.verified_to = 0;
            if let Err(e) = reopened {
                self.fail(format!(
                    "node {id}'s disk does not reopen after a crash: {e}"
                ));
            }
        }
    }

    /// Plans a disk fault on node `id`'s file system (running or not; a
    /// no-op for `MemoryLog`).
    pub fn inject_disk_fault(&mut self, id: i32, fault: Fault) {
        let node = &self.nodes[&id];
        if let Some(log) = node.engine.as_ref().map(|e| e.log()).or(node.disk.as_ref()) {
            log.inject(fault);
        }
    }

    /// Drops every planned disk fault on every node (before a liveness
    /// check: a fault firing then would stop a node the check counts on).
    pub fn clear_disk_faults(&mut self) {
        for node in self.nodes.values() {
            if let Some(log) = node.engine.as_ref().map(|e| e.log()).or(node.disk.as_ref()) {
                log.clear_faults();
            }
        }
    }

    /// If node `id`'s log stopped on a failed file operation, the node
    /// stops as the real one does (the event loop exits): the sim crashes
    /// it, with its planned faults cleared (the disk repaired, or space
    /// freed), and it stays down until restarted. Returns whether it did.
    fn stop_if_disk_failed(&mut self, id: i32) -> bool {
        let Some(failure) = self
            .nodes
            .get(&id)
            .and_then(|n| n.engine.as_ref())
            .and_then(|e| e.log().stopped())
        else {
            return false;
        };
        self.disk_failures.push((id, failure));
        self.crash(id);
        true
    }

    pub fn restart(&mut self, id: i32) {
        if self.is_up(id) {
            return;
        }
        let config = self.config_for(id);
        let seed = self.rng.next_u64();
        let node = self.nodes.get_mut(&id).expect("node exists");
        let kind = self.cfg.disk;
        let log = node.disk.take().unwrap_or_else(|| SimLog::new(kind));
        let (engine, commands) = RaftEngine::new(
            config,
            log,
            node.persisted,
            Box::new(ChaCha8Rng::seed_from_u64(seed)),
            self.now,
        )
        .unwrap_or_else(|e| panic!("engine start failed (seed {}): {e}", self.cfg.seed));
        node.engine = Some(engine);
        node.incarnation += 1;
        self.execute(id, commands);
        self.check(id);
    }

    // ---- network ------------------------------------------------------------

    pub fn isolate(&mut self, id: i32) {
        let others: Vec<i32> = self.nodes.keys().copied().filter(|o| *o != id).collect();
        for o in others {
            self.block(id, o);
        }
    }

    pub fn block(&mut self, a: i32, b: i32) {
        self.blocked.insert((a.min(b), a.max(b)));
    }

    /// Splits the cluster: nodes in `side` can talk only among themselves.
    pub fn partition(&mut self, side: &[i32]) {
        let all: Vec<i32> = self.nodes.keys().copied().collect();
        for a in side {
            for b in &all {
                if !side.contains(b) {
                    self.block(*a, *b);
                }
            }
        }
    }

    pub fn heal(&mut self) {
        self.blocked.clear();
    }

    fn can_talk(&self, a: i32, b: i32) -> bool {
        !self.blocked.contains(&(a.min(b), a.max(b)))
    }

    fn schedule(&mut self, at: u64, event: SimEvent) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq)));
        self.events.insert(self.seq, event);
    }

    fn delay(&mut self) -> u64 {
        self.rng
            .random_range(self.cfg.min_delay_ms..=self.cfg.max_delay_ms)
    }

    fn dropped(&mut self) -> bool {
        self.cfg.drop_rate > 0.0 && self.rng.random_bool(self.cfg.drop_rate)
    }

    fn resolve(&self, destination: &Destination) -> i32 {
        if destination.node_id >= 0 {
            return destination.node_id;
        }
        let host = destination
            .endpoint
            .as_ref()
            .map(|e| e.host.clone())
            .unwrap_or_default();
        host.trim_start_matches("node").parse().unwrap_or(-1)
    }

    // ---- executing commands -------------------------------------------------

    /// Executes `commands` that node `id`'s engine returned outside the
    /// sim's own calls (a listener's proposals through `RaftClient`).
    pub fn execute_commands(&mut self, id: i32, commands: Vec<Command>) {
        self.execute(id, commands);
        self.check(id);
    }

    fn execute(&mut self, id: i32, commands: Vec<Command>) {
        let inc = self.nodes[&id].incarnation;
        let crash_at = if self.cfg.crash_mid_commands > 0.0
            && !commands.is_empty()
            && self.rng.random_bool(self.cfg.crash_mid_commands)
        {
            Some(self.rng.random_range(0..commands.len()))
        } else {
            None
        };
        for (i, command) in commands.into_iter().enumerate() {
            if crash_at == Some(i) {
                self.crash(id);
                return;
            }
            match command {
                Command::Send {
                    id: request_id,
                    destination,
                    request,
                    timeout_ms,
                } => {
                    let to = self.resolve(&destination);
                    self.schedule(
                        self.now + timeout_ms,
                        SimEvent::Timeout {
                            to: id,
                            to_inc: inc,
                            id: request_id,
                        },
                    );
                    if to < 0 || !self.can_talk(id, to) || self.dropped() {
                        continue;
                    }
                    let at = self.now + self.delay();
                    self.schedule(
                        at,
                        SimEvent::Deliver {
                            from: id,
                            from_inc: inc,
                            to,
                            id: request_id,
                            request,
                        },
                    );
                }
                Command::Reply { handle, response } => {
                    let Some((to, to_inc, request_id)) = self.handles.remove(&handle.0) else {
                        self.fail(format!("node {id} replied twice or to an unknown handle"));
                    };
                    if self.vote_handles.remove(&handle.0)
                        && let RaftResponse::Vote(r) = &response
                        && let Some(p) = r.topics.first().and_then(|t| t.partitions.first())
                        && p.vote_granted
                    {
                        // One vote per epoch, across restarts too.
                        let disk = self.nodes[&id].disk_generation;
                        if let Some(other) =
                            self.votes_granted.insert((id, disk, p.leader_epoch), to)
                            && other != to
                        {
                            self.fail(format!(
                                "node {id} voted for {other} and {to} in epoch {}",
                                p.leader_epoch
                            ));
                        }
                    }
                    if to == ADMIN {
                        let code = match &response {
                            RaftResponse::AddRaftVoter(r) => r.error_code,
                            RaftResponse::RemoveRaftVoter(r) => r.error_code,
                            RaftResponse::UpdateRaftVoter(r) => r.error_code,
                            _ => self.fail(format!("unexpected admin reply {response:?}")),
                        };
                        let n = self.admin_handles.remove(&handle.0).expect("admin request");
                        self.admin_replies.insert(n, code);
                        continue;
                    }
                    if !self.can_talk(id, to) || self.dropped() {
                        continue;
                    }
                    let at = self.now + self.delay();
                    self.schedule(
                        at,
                        SimEvent::Respond {
                            to,
                            to_inc,
                            id: request_id,
                            response,
                        },
                    );
                }
                Command::PersistElectionState(state) => {
                    let node = self.nodes.get_mut(&id).expect("node");
                    if state.epoch < node.max_persisted_epoch {
                        let max = node.max_persisted_epoch;
                        self.fail(format!(
                            "node {id} persisted epoch {} after {max}",
                            state.epoch
                        ));
                    }
                    node.max_persisted_epoch = state.epoch;
                    node.persisted = Some(state);
                }
                Command::Flush => {
                    let node = self.nodes.get_mut(&id).expect("node");
                    if !node.flush_scheduled {
                        node.flush_scheduled = true;
                        let at = self.now + self.rng.random_range(0..=self.cfg.max_flush_delay_ms);
                        self.schedule(at, SimEvent::Flush { node: id, inc });
                    }
                }
                Command::Committed { high_watermark } => {
                    // The leader of its epoch (it may have resigned in the same step,
                    // e.g. when its own removal committed).
                    let epoch = self.engine(id).map_or(-1, |e| e.epoch());
                    let is_leader = self.leaders_by_epoch.get(&epoch) == Some(&id);
                    if is_leader && high_watermark > self.committed_hw {
                        self.extend_committed(id, high_watermark);
                    }
                }
                Command::RoleChanged { role, epoch, .. } => {
                    if role == Role::Leader {
                        self.on_new_leader(id, epoch);
                    }
                }
                Command::SnapshotInstalled { snapshot_id } => {
                    *self.snapshots_installed.entry(id).or_default() += 1;
                    self.check_snapshot(id, snapshot_id, "installed");
                }
                Command::ShutdownComplete => {}
            }
        }
    }

    fn on_new_leader(&mut self, id: i32, epoch: i32) {
        if let Some(other) = self.leaders_by_epoch.insert(epoch, id)
            && other != id
        {
            self.fail(format!("two leaders in epoch {epoch}: {other} and {id}"));
        }
        // Leader completeness: the new leader holds every committed batch,
        // in its log or (below its log start) in the snapshot at its log
        // start, whose digest was checked when it was written or installed.
        let engine = self.nodes[&id].engine.as_ref().expect("up");
        let epoch_start = engine.log().end_offset_for_epoch(epoch - 1).offset;
        let log_batches = batches_of(engine.log(), 0);
        let covered = covered_by_snapshot(engine.log());
        for sig in self.committed.values() {
            if sig.last_offset < covered {
                continue;
            }
            if !log_batches.contains(sig) {
                self.fail(format!(
                    "new leader {id} of epoch {epoch} lacks committed batch {sig:?} (its log: [{}, {}), snapshots {:?})",
                    engine.log().start_offset(),
                    engine.log().end_offset().offset,
                    engine.log().snapshot_ids()
                ));
            }
        }
        self.epoch_starts.insert(epoch, epoch_start);
    }

    fn handle(&mut self, id: i32, event: Event) {
        let now = self.now;
        let Some(engine) = self.nodes.get_mut(&id).and_then(|n| n.engine.as_mut()) else {
            return;
        };
        let commands = match engine.handle(event, now) {
            Ok(c) => c,
            Err(_) if self.stop_if_disk_failed(id) => return,
            Err(e) => self.fail(format!("node {id} engine error: {e}")),
        };
        self.execute(id, commands);
        self.events_processed += 1;
        self.check(id);
        self.maybe_snapshot(id);
    }

    /// Proposes one record on node `id` if it leads; returns its offset.
    pub fn propose(&mut self, id: i32) -> Option<i64> {
        let now = self.now;
        self.next_value += 1;
        let value = Bytes::from(format!("value-{}", self.next_value));
        let engine = self.nodes.get_mut(&id)?.engine.as_mut()?;
        match engine.propose(&[value], now) {
            Ok((proposed, commands)) => {
                self.execute(id, commands);
                self.check(id);
                Some(proposed.last_offset)
            }
            Err(RaftError::NotLeader { .. }) => None,
            Err(_) if self.stop_if_disk_failed(id) => None,
            Err(e) => self.fail(format!("propose on {id} failed: {e}")),
        }
    }

    /// Proposes `records` as one batch on node `id` if it leads; returns the
    /// last one's offset.
    pub fn propose_records(&mut self, id: i32, records: &[Bytes]) -> Option<i64> {
        let now = self.now;
        let engine = self.nodes.get_mut(&id)?.engine.as_mut()?;
        match engine.propose(records, now) {
            Ok((proposed, commands)) => {
                self.execute(id, commands);
                self.check(id);
                Some(proposed.last_offset)
            }
            Err(RaftError::NotLeader { .. }) => None,
            Err(_) if self.stop_if_disk_failed(id) => None,
            Err(e) => self.fail(format!("propose on {id} failed: {e}")),
        }
    }

    // ---- the clock ------------------------------------------------------------

    /// Processes the next event or timer; returns false if none is due by `limit`.
    pub fn step(&mut self, limit: u64) -> bool {
        let next_event = self
            .queue
            .peek()
            .map(|Reverse((t, _))| *t)
            .unwrap_or(u64::MAX);
        let (tick_node, next_tick) = self
            .nodes
            .values()
            .filter_map(|n| n.engine.as_ref().map(|e| (n.id, e.next_deadline_ms())))
            .min_by_key(|(_, t)| *t)
            .unwrap_or((-1, u64::MAX));
        let t = next_event.min(next_tick);
        if t > limit {
            self.now = self.now.max(limit);
            return false;
        }
        self.now = self.now.max(t);
        if next_tick <= next_event {
            let node = self.nodes.get_mut(&tick_node).expect("node");
            if node.last_tick_at == self.now {
                node.busy_ticks += 1;
                if node.busy_ticks > 1000 {
                    self.fail(format!(
                        "node {tick_node} keeps asking for a tick at {}",
                        self.now
                    ));
                }
            } else {
                node.busy_ticks = 0;
                node.last_tick_at = self.now;
            }
            self.handle(tick_node, Event::Tick);
            return true;
        }
        let Some(Reverse((_, seq))) = self.queue.pop() else {
            return false;
        };
        let Some(event) = self.events.remove(&seq) else {
            return true;
        };
        match event {
            SimEvent::Deliver {
                from,
                from_inc,
                to,
                id,
                request,
            } => {
                if !self.is_up(to) || !self.can_talk(from, to) {
                    return true;
                }
                if matches!(request, RaftRequest::ApiVersions(_)) {
                    // The runtime answers ApiVersions, advertising kraft.version 0-1.
                    use kafka_protocol::messages::{
                        ApiVersionsResponse, api_versions_response::SupportedFeatureKey,
                    };
                    let response = RaftResponse::ApiVersions(
                        ApiVersionsResponse::default().with_supported_features(vec![
                            SupportedFeatureKey::default()
                                .with_name("kraft.version".into())
                                .with_min_version(0)
                                .with_max_version(1),
                        ]),
                    );
                    let at = self.now + self.delay();
                    self.schedule(
                        at,
                        SimEvent::Respond {
                            to: from,
                            to_inc: from_inc,
                            id,
                            response,
                        },
                    );
                    return true;
                }
                self.next_handle += 1;
                let handle = self.next_handle;
                self.handles.insert(handle, (from, from_inc, id));
                if let RaftRequest::Vote(v) = &request
                    && v.topics
                        .first()
                        .and_then(|t| t.partitions.first())
                        .is_some_and(|p| !p.pre_vote)
                {
                    self.vote_handles.insert(handle);
                }
                self.handle(
                    to,
                    Event::Request {
                        handle: ReplyHandle(handle),
                        api_version: 2,
                        request,
                    },
                );
            }
            SimEvent::Respond {
                to,
                to_inc,
                id,
                response,
            } => {
                if self.nodes[&to].incarnation != to_inc || !self.is_up(to) {
                    return true;
                }
                if !self.answered.insert((to, to_inc, id)) {
                    return true;
                }
                self.handle(to, Event::Response { id, response });
            }
            SimEvent::Timeout { to, to_inc, id } => {
                if self.nodes[&to].incarnation != to_inc || !self.is_up(to) {
                    return true;
                }
                if !self.answered.insert((to, to_inc, id)) {
                    return true;
                }
                self.handle(
                    to,
                    Event::RequestFailed {
                        id,
                        failure: RequestFailure::Timeout,
                    },
                );
            }
            SimEvent::Flush { node, inc } => {
                if self.nodes[&node].incarnation != inc || !self.is_up(node) {
                    return true;
                }
                self.nodes.get_mut(&node).expect("node").flush_scheduled = false;
                self.handle(node, Event::Flush);
            }
        }
        true
    }

    /// Runs until virtual time `until` (ms).
    pub fn run_until(&mut self, until: u64) {
        while self.step(until) {}
    }

    /// Runs for `ms` more.
    pub fn run_for(&mut self, ms: u64) {
        let until = self.now + ms;
        self.run_until(until);
    }

    /// Runs until `cond` holds or `ms` pass; returns whether it held.
    pub fn run_until_cond(&mut self, ms: u64, mut cond: impl FnMut(&Sim) -> bool) -> bool {
        let until = self.now + ms;
        loop {
            if cond(self) {
                return true;
            }
            if !self.step(until) {
                return cond(self);
            }
        }
    }

    // ---- observations --------------------------------------------------------

    pub fn engine(&self, id: i32) -> Option<&RaftEngine<SimLog>> {
        self.nodes.get(&id)?.engine.as_ref()
    }

    pub fn role(&self, id: i32) -> Option<Role> {
        self.engine(id).map(|e| e.role())
    }

    /// The live leader with the highest epoch.
    pub fn leader(&self) -> Option<i32> {
        self.nodes
            .values()
            .filter_map(|n| n.engine.as_ref().map(|e| (n.id, e)))
            .filter(|(_, e)| e.role() == Role::Leader)
            .max_by_key(|(_, e)| e.epoch())
            .map(|(id, _)| id)
    }

    pub fn voter_ids(&self) -> Vec<i32> {
        self.voter_ids.clone()
    }

    /// Waits for a leader that can commit: proposes a record on it and runs
    /// until the record is committed on the leader. Returns the leader.
    pub fn elect_and_commit(&mut self, within_ms: u64) -> Option<i32> {
        let deadline = self.now + within_ms;
        while self.now < deadline {
            if !self.run_until_cond(deadline - self.now, |s| s.leader().is_some()) {
                return None;
            }
            let leader = self.leader()?;
            let Some(offset) = self.propose(leader) else {
                continue;
            };
            let epoch = self.engine(leader)?.epoch();
            let remaining = deadline.saturating_sub(self.now).min(5_000);
            let committed = self.run_until_cond(remaining, |s| {
                s.engine(leader).is_some_and(|e| {
                    e.epoch() == epoch && e.high_watermark().is_some_and(|hw| hw > offset)
                })
            });
            if committed {
                return Some(leader);
            }
        }
        None
    }

    // ---- invariants ------------------------------------------------------------

    /// Checks the invariants that involve node `id` after it handled an event.
    pub fn check(&mut self, id: i32) {
        if self.stop_if_disk_failed(id) {
            return;
        }
        let Some(engine) = self.engine(id) else {
            return;
        };
        let role = engine.role();
        let epoch = engine.epoch();
        // At most one leader per epoch.
        if role == Role::Leader {
            match self.leaders_by_epoch.get(&epoch) {
                Some(l) if *l != id => {
                    self.fail(format!("two leaders in epoch {epoch}: {l} and {id}"))
                }
                _ => {}
            }
        }
        // Only voters lead, vote for themselves or campaign.
        let observer = if self.cfg.initial_voters.is_some() {
            !engine.can_campaign() && matches!(role, Role::Prospective | Role::Candidate)
        } else {
            !self.nodes[&id].is_voter
                && matches!(role, Role::Prospective | Role::Candidate | Role::Leader)
        };
        if observer {
            self.fail(format!("observer {id} became {role}"));
        }
        if self.cfg.initial_voters.is_some() {
            let key = set_key(engine.voters());
            if role == Role::Leader {
                let uncommitted = voters_records_from(engine.log(), self.committed_hw);
                self.known_voter_sets.insert(key);
                if uncommitted > 1 {
                    self.fail(format!(
                        "leader {id} holds {uncommitted} uncommitted Voters records above {}",
                        self.committed_hw
                    ));
                }
            } else if !self.known_voter_sets.contains(&key) {
                self.fail(format!(
                    "node {id} has voter set {key:?} that no leader ever held"
                ));
            }
        }
        let Some(engine) = self.engine(id) else {
            return;
        };
        // KIP-630: a log that starts above 0 starts at its earliest snapshot.
        let start = engine.log().start_offset();
        if start > 0 && engine.log().earliest_snapshot_id().map(|s| s.offset) != Some(start) {
            self.fail(format!(
                "node {id} log starts at {start} but its earliest snapshot is {:?}",
                engine.log().earliest_snapshot_id()
            ));
        }
        let hw = engine.high_watermark().unwrap_or(0);
        if role == Role::Leader
            && let Some(leader_hw) = engine.high_watermark()
        {
            // No high watermark before a batch of the leader's own epoch commits.
            let epoch_start = self
                .epoch_starts
                .get(&epoch)
                .copied()
                .unwrap_or_else(|| engine.log().end_offset_for_epoch(epoch - 1).offset);
            if leader_hw <= epoch_start {
                self.fail(format!(
                    "leader {id} of epoch {epoch} exposes high watermark {leader_hw} at or below its epoch start {epoch_start}"
                ));
            }
        }
        if role == Role::Leader && hw > self.committed_hw {
            self.extend_committed(id, hw);
        }
        // Committed data is identical everywhere: this node's log below its
        // high watermark matches the committed history.
        let verified_to = self.nodes[&id].verified_to;
        if hw > verified_to {
            if hw > self.committed_hw {
                self.fail(format!(
                    "node {id} has high watermark {hw} above the committed {}",
                    self.committed_hw
                ));
            }
            let engine = self.engine(id).expect("up");
            for sig in batches_of(engine.log(), verified_to) {
                if sig.base_offset >= hw {
                    break;
                }
                if self.committed.get(&sig.base_offset) != Some(&sig) {
                    self.fail(format!(
                        "node {id} holds {sig:?} below its high watermark {hw}, committed is {:?}",
                        self.committed.get(&sig.base_offset)
                    ));
                }
            }
            self.nodes.get_mut(&id).expect("node").verified_to = hw;
        }
    }

    fn extend_committed(&mut self, leader: i32, hw: i64) {
        let engine = self.engine(leader).expect("up");
        let from = self.committed_hw;
        let mut next = self.committed_hw;
        let mut added = Vec::new();
        for sig in batches_of(engine.log(), self.committed_hw) {
            if sig.base_offset >= hw {
                break;
            }
            if sig.base_offset != next {
                self.fail(format!("committed history has a hole at {next}: {sig:?}"));
            }
            next = sig.last_offset + 1;
            added.push(sig);
        }
        if next != hw {
            self.fail(format!(
                "leader {leader} high watermark {hw} is not on a batch boundary ({next})"
            ));
        }
        for sig in added {
            self.committed.insert(sig.base_offset, sig);
        }
        self.committed_hw = hw;
        // A majority of voters hold (flushed) every newly committed batch.
        let new_sigs: Vec<BatchSig> = self.committed.range(from..).map(|(_, s)| *s).collect();
        let mut holders = 0;
        let leader_voters = self.engine(leader).expect("up").voters().clone();
        for node in self
            .nodes
            .values()
            .filter(|n| leader_voters.contains_id(n.id))
        {
            let log = match (&node.engine, &node.disk) {
                (Some(e), _) => e.log(),
                (None, Some(d)) => d,
                (None, None) => continue,
            };
            if log.flushed_end_offset() < hw {
                continue;
            }
            let sigs = batches_of(log, from);
            let covered = covered_by_snapshot(log);
            if new_sigs
                .iter()
                .all(|c| c.last_offset < covered || sigs.contains(c))
            {
                holders += 1;
            }
        }
        let majority = self.engine(leader).expect("up").voters().majority();
        if holders < majority {
            self.fail(format!(
                "high watermark {hw} on leader {leader} but only {holders} voters hold it flushed"
            ));
        }
    }

    /// Ends a run: heals the network, restarts every node, stops dropping,
    /// and requires a leader that commits a new record within `within_ms`.
    pub fn assert_recovers(&mut self, within_ms: u64) -> i32 {
        self.heal();
        self.cfg.drop_rate = 0.0;
        self.cfg.crash_mid_commands = 0.0;
        let ids: Vec<i32> = self.nodes.keys().copied().collect();
        for id in ids {
            self.restart(id);
        }
        match self.elect_and_commit(within_ms) {
            Some(l) => l,
            None => self.fail(format!(
                "no leader committed within {within_ms} ms after healing: {:?}",
                self.nodes
                    .values()
                    .map(|n| (
                        n.id,
                        n.engine.as_ref().map(|e| (
                            e.role(),
                            e.epoch(),
                            e.voters().ids().collect::<Vec<_>>(),
                            e.log().end_offset(),
                            e.high_watermark()
                        ))
                    ))
                    .collect::<Vec<_>>()
            )),
        }
    }
}

/// Number of `Voters` control records in `log` at or above `from`.
fn voters_records_from(log: &SimLog, from: i64) -> usize {
    use kraft_controller::record::{ControlRecord, DecodedBatch};
    let records = read_to_end(log, from);
    let mut n = 0;
    for item in iter_batches(&records, false) {
        let (header, bytes) = item.expect("stored batches parse");
        if !header.is_control() {
            continue;
        }
        let batch = DecodedBatch::decode(bytes).expect("decodes");
        for (record, control) in batch
            .records
            .iter()
            .zip(batch.control_records().expect("control records"))
        {
            if record.offset >= from && matches!(control, ControlRecord::Voters(_)) {
                n += 1;
            }
        }
    }
    n
}

impl Sim {
    /// Sends an admin request (AddRaftVoter, RemoveRaftVoter, …) to node
    /// `to` as a client would; returns its number for `admin_replies`.
    pub fn admin(&mut self, to: i32, request: RaftRequest) -> u64 {
        self.next_admin += 1;
        let n = self.next_admin;
        if !self.is_up(to) {
            return n;
        }
        self.next_handle += 1;
        let handle = self.next_handle;
        self.handles.insert(handle, (ADMIN, 0, RequestId(0)));
        self.admin_handles.insert(handle, n);
        self.handle(
            to,
            Event::Request {
                handle: ReplyHandle(handle),
                api_version: 0,
                request,
            },
        );
        n
    }

    /// Sends an admin request to the leader and waits for its answer.
    pub fn admin_wait(&mut self, request: RaftRequest, within_ms: u64) -> Option<i16> {
        let leader = self.leader()?;
        let n = self.admin(leader, request);
        self.run_until_cond(within_ms, |s| s.admin_replies.contains_key(&n));
        self.admin_replies.get(&n).copied()
    }

    /// Retries an admin request on the leader until it answers NONE (0), or
    /// a non-retriable error, or `within_ms` passes.
    pub fn admin_until_done(
        &mut self,
        make: impl Fn() -> RaftRequest,
        within_ms: u64,
    ) -> Option<i16> {
        let deadline = self.now + within_ms;
        let mut last = None;
        while self.now < deadline {
            last = self.admin_wait(make(), 5_000);
            match last {
                Some(0) => return last,
                // REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER: retry later.
                Some(7) | Some(6) | None => self.run_for(200),
                Some(_) => return last,
            }
        }
        last
    }
}

pub fn add_voter(id: i32) -> RaftRequest {
    use kafka_protocol::messages::{AddRaftVoterRequest, add_raft_voter_request::Listener};
    RaftRequest::AddRaftVoter(
        AddRaftVoterRequest::default()
            .with_cluster_id(Some("sim-cluster".into()))
            .with_timeout_ms(5_000)
            .with_voter_id(id)
            .with_voter_directory_id(directory_id(id))
            .with_listeners(vec![
                Listener::default()
                    .with_name("CONTROLLER".into())
                    .with_host(format!("node{id}").into())
                    .with_port(9093),
            ]),
    )
}

pub fn remove_voter(id: i32, directory: uuid::Uuid) -> RaftRequest {
    use kafka_protocol::messages::RemoveRaftVoterRequest;
    RaftRequest::RemoveRaftVoter(
        RemoveRaftVoterRequest::default()
            .with_cluster_id(Some("sim-cluster".into()))
            .with_voter_id(id)
            .with_voter_directory_id(directory),
    )
}

impl Sim {
    /// The directory id of node `id`'s current disk.
    pub fn directory_of(&self, id: i32) -> uuid::Uuid {
        disk_directory_id(id, self.nodes[&id].disk_generation)
    }

    /// Loses node `id`'s disk: it restarts empty, formatted
    /// `--no-initial-controllers` with a new directory id (an observer until
    /// it is added again).
    pub fn replace_disk(&mut self, id: i32) {
        self.crash(id);
        let node = self.nodes.get_mut(&id).expect("node");
        node.disk = Some(SimLog::new(self.cfg.disk));
        node.persisted = None;
        node.max_persisted_epoch = 0;
        node.disk_generation += 1;
        self.restart(id);
    }
}

pub fn add_voter_with(id: i32, directory: uuid::Uuid) -> RaftRequest {
    let RaftRequest::AddRaftVoter(r) = add_voter(id) else {
        unreachable!("add_voter builds AddRaftVoter")
    };
    RaftRequest::AddRaftVoter(r.with_voter_directory_id(directory))
}

// ---- snapshots (KIP-630) ------------------------------------------------------

/// Everything below this offset is covered by the snapshot at the log start
/// (0 when the log starts at 0).
fn covered_by_snapshot(log: &SimLog) -> i64 {
    let start = log.start_offset();
    log.earliest_snapshot_id()
        .filter(|s| s.offset == start)
        .map_or(0, |s| s.offset)
}

/// Extends a digest of committed batches by one batch (FNV-1a over its
/// identity).
fn digest_step(mut h: u64, sig: &BatchSig) -> u64 {
    let mut bytes = Vec::with_capacity(24);
    bytes.extend_from_slice(&sig.base_offset.to_be_bytes());
    bytes.extend_from_slice(&sig.last_offset.to_be_bytes());
    bytes.extend_from_slice(&sig.epoch.to_be_bytes());
    bytes.extend_from_slice(&sig.crc.to_be_bytes());
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const DIGEST_SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// The state a snapshot holds in the simulation: the digest of every
/// committed batch below its end offset, and that offset.
fn snapshot_state(bytes: &[u8]) -> Option<(u64, i64)> {
    for item in iter_batches(bytes, true) {
        let (header, batch) = item.ok()?;
        if header.is_control() {
            continue;
        }
        let decoded = DecodedBatch::decode(batch).ok()?;
        let value = decoded.records.first()?.value.clone()?;
        if value.len() != 16 {
            return None;
        }
        let digest = u64::from_be_bytes(value[..8].try_into().ok()?);
        let offset = i64::from_be_bytes(value[8..].try_into().ok()?);
        return Some((digest, offset));
    }
    None
}

impl Sim {
    /// The digest of the committed history below `offset`.
    fn committed_digest(&self, offset: i64) -> u64 {
        self.committed
            .range(..offset)
            .map(|(_, s)| s)
            .fold(DIGEST_SEED, digest_step)
    }

    /// Snapshot `snapshot_id` of node `id` must hold exactly the committed
    /// history below its end offset: committed data is identical across
    /// snapshot boundaries.
    fn check_snapshot(&self, id: i32, snapshot_id: OffsetAndEpoch, what: &str) {
        let engine = self.engine(id).expect("up");
        let Some(bytes) = engine.read_snapshot(snapshot_id).expect("reads") else {
            self.fail(format!(
                "node {id} {what} snapshot {snapshot_id} it does not hold"
            ));
        };
        let Some((digest, offset)) = snapshot_state(&bytes) else {
            self.fail(format!(
                "node {id} {what} snapshot {snapshot_id} without state"
            ));
        };
        if offset != snapshot_id.offset
            || snapshot_id.offset > self.committed_hw
            || digest != self.committed_digest(offset)
        {
            self.fail(format!(
                "node {id} {what} snapshot {snapshot_id} (state at {offset}) that differs from the committed history below it (committed to {})",
                self.committed_hw
            ));
        }
    }

    /// Takes a snapshot on node `id` at its high watermark once it passed
    /// the latest snapshot by `snapshot_every` offsets, from the node's own
    /// data: its latest snapshot's digest extended by its log up to there.
    fn maybe_snapshot(&mut self, id: i32) {
        let Some(every) = self.cfg.snapshot_every else {
            return;
        };
        let Some(engine) = self.engine(id) else {
            return;
        };
        let log = engine.log();
        let Some(hw) = engine.high_watermark() else {
            return;
        };
        // A snapshot only of what this node holds durably.
        let at = hw.min(log.flushed_end_offset());
        let latest = log
            .latest_snapshot_id()
            .filter(|s| s.offset > 0)
            .map_or(0, |s| s.offset);
        if at < latest + every || at <= log.start_offset() {
            return;
        }
        let (mut digest, from) = match log.latest_snapshot_id().filter(|s| s.offset > 0) {
            Some(s) => {
                let bytes = log
                    .read_snapshot(s)
                    .expect("reads")
                    .expect("the latest snapshot exists");
                let Some((digest, _)) = snapshot_state(&bytes) else {
                    self.fail(format!("node {id} holds snapshot {s} without state"));
                };
                (digest, s.offset)
            }
            None => (DIGEST_SEED, 0),
        };
        if from < log.start_offset() {
            self.fail(format!(
                "node {id} log starts at {} above its latest snapshot {from}",
                log.start_offset()
            ));
        }
        let mut epoch = None;
        for sig in batches_of(log, from) {
            if sig.base_offset >= at {
                break;
            }
            digest = digest_step(digest, &sig);
            epoch = Some(sig.epoch);
        }
        let Some(epoch) = epoch else {
            return;
        };
        let snapshot_id = OffsetAndEpoch::new(at, epoch);
        let extras = if self.cfg.initial_voters.is_some() {
            vec![
                ControlRecord::KRaftVersion(
                    KRaftVersionRecord::default()
                        .with_version(0)
                        .with_k_raft_version(1),
                ),
                ControlRecord::Voters(engine.voters_at(at).to_record()),
            ]
        } else {
            Vec::new()
        };
        let mut state = Vec::with_capacity(16);
        state.extend_from_slice(&digest.to_be_bytes());
        state.extend_from_slice(&at.to_be_bytes());
        let bytes = encode_snapshot(
            epoch,
            self.now as i64,
            self.now as i64,
            &extras,
            &[Bytes::from(state)],
        )
        .expect("encodes");
        let engine = self
            .nodes
            .get_mut(&id)
            .and_then(|n| n.engine.as_mut())
            .expect("up");
        if let Err(e) = engine.write_snapshot(snapshot_id, &bytes) {
            if self.stop_if_disk_failed(id) {
                return;
            }
            self.fail(format!(
                "node {id} could not write snapshot {snapshot_id}: {e}"
            ));
        }
        self.snapshots_written += 1;
        self.check_snapshot(id, snapshot_id, "wrote");
    }
}
