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

mod admin;
mod clock;
pub mod disk;
mod execute;
pub mod image;
mod invariants;
mod snapshots;

#[allow(unused_imports)]
pub use admin::{add_voter, add_voter_with, remove_voter};
use snapshots::covered_by_snapshot;

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap},
};

use bytes::Bytes;
use disk::{DiskKind, SimLog};
use kraft_controller::{
    log::{
        FlushDone, FlushJob, OffsetAndEpoch, ReplicatedLog, RetentionConfig, fault_fs::Fault,
        snapshot::encode_snapshot,
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
    /// A flush run as the event loop runs it, off its thread (issue 23):
    /// started, and ended by a later `FlushEnd` event.
    flush_job: Option<PendingFlush>,
    /// Log offsets below this were verified against the committed history.
    verified_to: i64,
    busy_ticks: u32,
    last_tick_at: u64,
    /// How many times the node's disk was replaced (a new directory id).
    pub disk_generation: u32,
}

/// A flush job between its start and its end: its fsyncs not run yet (they
/// run at the end), or run already at the start (the end only reports
/// them). The real fsync runs somewhere in between; the sim tries both ends.
#[derive(Debug)]
enum PendingFlush {
    Job(FlushJob),
    Ran(FlushDone),
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
    /// The end of node's running flush job.
    FlushEnd {
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
                    flush_job: None,
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
            node.flush_job = None;
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
        // The real node's start-up checks: a healthy disk always passes.
        let stored = node
            .persisted
            .as_ref()
            .map(|p| kraft_controller::log::ElectionState {
                epoch: p.epoch,
                leader_id: p.leader_id,
                voted_key: p.voted_key.map(|k| (k.id, k.directory_id)),
            });
        if let Err(refusal) =
            log.check_at_start(id, config.directory_id.unwrap_or_default(), stored.as_ref())
        {
            panic!(
                "node {id} refused to start on a healthy disk (seed {}): {refusal}",
                self.cfg.seed
            );
        }
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

    /// The random sweeps' "restart some": each node of `ids` that is down
    /// restarts with probability 1/2 (`rng` is the sweep's own, so a seed
    /// replays).
    pub fn restart_some(&mut self, ids: &[i32], rng: &mut impl Rng) {
        for id in ids {
            if !self.is_up(*id) && rng.random_bool(0.5) {
                self.restart(*id);
            }
        }
    }

    /// The random sweeps' partition: each node of `ids` is on one side with
    /// probability 1/2, the rest on the other.
    pub fn partition_random_side(&mut self, ids: &[i32], rng: &mut impl Rng) {
        let side: Vec<i32> = ids
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        self.partition(&side);
    }

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
}
