//! Deterministic simulation with disk faults (issue 21): every node runs
//! the real `FileLog` on the in-memory file system `MemoryFs`, and disk
//! faults (a failed fsync, write, rename or directory fsync with EIO or
//! ENOSPC, short writes) are one more fault kind next to crashes,
//! partitions, drops and delays. A node whose log stops on a failed file
//! operation stops, as the real node does, and restarts later from what
//! was durable. The invariants of `sim::Sim::check` (one leader per epoch,
//! the high watermark never goes back, committed data identical, snapshots
//! match the committed history) hold after every event, and a majority
//! that can talk elects and commits at the end.
//!
//! A failure prints its seed; replay one with `SIM_SEED=<seed>`, run more
//! with `SIM_SEEDS=<n>` (200 by default).

mod sim;

use kraft_controller::{
    log::{
        ReplicatedLog,
        fault_fs::{Errno, Fault, FsOp},
    },
    raft::Role,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::{Sim, SimConfig, disk::DiskKind};

const ELECT_WITHIN_MS: u64 = 20_000;

fn file_log_config(seed: u64, voters: usize, observers: usize) -> SimConfig {
    let mut cfg = SimConfig::new(seed, voters, observers);
    cfg.disk = DiskKind::FileOnMemoryFs;
    cfg
}

fn started(cfg: SimConfig) -> (Sim, i32) {
    let mut sim = Sim::new(cfg);
    let leader = sim
        .elect_and_commit(ELECT_WITHIN_MS)
        .unwrap_or_else(|| panic!("no leader elected (seed {})", sim.cfg.seed));
    (sim, leader)
}

/// The log end offset the leader holds for replica `id` (from its Fetch
/// requests), if `leader` still leads.
fn leader_view_of(sim: &Sim, leader: i32, id: i32) -> Option<i64> {
    let engine = sim.engine(leader)?;
    if engine.role() != Role::Leader {
        return None;
    }
    engine
        .status()
        .voters
        .iter()
        .find(|v| v.key.id == id)
        .and_then(|v| v.log_end_offset)
}

#[test]
fn a_follower_whose_fsync_fails_stops_and_the_leader_never_counts_the_offset_from_it() {
    for seed in 0..10 {
        let (mut sim, leader) = started(file_log_config(seed, 3, 0));
        let follower = sim
            .voter_ids()
            .into_iter()
            .find(|id| *id != leader)
            .expect("a follower");
        for _ in 0..5 {
            sim.propose(leader);
        }
        sim.run_for(200);
        let flushed_before = sim.engine(follower).expect("up").log().flushed_end_offset();

        sim.inject_disk_fault(
            follower,
            Fault::next(FsOp::Sync, Errno::Eio).on_path(".log"),
        );
        for _ in 0..5 {
            sim.propose(leader);
        }
        let mut max_seen = 0;
        let stopped = sim.run_until_cond(5_000, |s| {
            if let Some(offset) = leader_view_of(s, leader, follower) {
                max_seen = max_seen.max(offset);
            }
            !s.is_up(follower)
        });
        assert!(stopped, "seed {seed}: the follower kept running");
        let (node, failure) = sim.disk_failures.last().expect("a disk failure").clone();
        assert_eq!(node, follower, "seed {seed}");
        assert!(
            failure.starts_with("fsync of /data/__cluster_metadata-0/")
                && failure.contains("os error 5"),
            "seed {seed}: {failure}"
        );
        // What survived on the follower's disk is all the leader counted.
        let durable_end = sim.nodes[&follower]
            .disk
            .as_ref()
            .expect("stopped")
            .end_offset()
            .offset;
        assert!(
            durable_end >= flushed_before,
            "seed {seed}: flushed data lost"
        );
        assert!(
            max_seen <= durable_end,
            "seed {seed}: the leader counted offset {max_seen} from node {follower}, whose disk holds {durable_end}"
        );
        // The quorum goes on without it, then it catches up from its disk.
        for _ in 0..5 {
            sim.propose(leader);
        }
        sim.run_for(500);
        sim.restart(follower);
        let target = sim.committed_hw;
        assert!(
            sim.run_until_cond(10_000, |s| s
                .engine(follower)
                .and_then(|e| e.high_watermark())
                .is_some_and(|hw| hw >= target)),
            "seed {seed}: the follower did not catch up to {target}"
        );
    }
}

/// One disk fault of the kinds the file system can inject.
fn random_fault(rng: &mut ChaCha8Rng) -> Fault {
    let errno = if rng.random_bool(0.5) {
        Errno::Eio
    } else {
        Errno::Enospc
    };
    let op = match rng.random_range(0..5) {
        0 | 1 => FsOp::Sync,
        2 => FsOp::Write,
        3 => FsOp::Rename,
        _ => FsOp::SyncDir,
    };
    Fault::next(op, errno).nth(rng.random_range(1..=20))
}

/// One randomized run: random cluster shape, drops, delays, crashes,
/// partitions, disk faults and proposals, then healing and a liveness
/// check. Returns the number of disk failures that stopped a node.
fn random_disk_run(seed: u64) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0xD15C_FA17_0000_0001));
    let voters = rng.random_range(1..=5);
    let observers = rng.random_range(0..=1);
    let mut cfg = file_log_config(seed, voters, observers);
    cfg.drop_rate = rng.random_range(0.0..0.1);
    cfg.min_delay_ms = rng.random_range(0..5);
    cfg.max_delay_ms = cfg.min_delay_ms + rng.random_range(0..40);
    cfg.max_flush_delay_ms = rng.random_range(0..50);
    cfg.crash_mid_commands = if rng.random_bool(0.3) { 0.005 } else { 0.0 };
    let mut sim = Sim::new(cfg);
    let ids: Vec<i32> = sim.nodes.keys().copied().collect();
    if rng.random_bool(0.3) {
        let max = rng.random_range(1..200);
        for id in &ids {
            if let Some(fs) = sim.engine(*id).and_then(|e| e.log().fs()) {
                fs.set_short_writes(Some(max));
            }
        }
    }
    for _ in 0..30 {
        let slices = rng.random_range(2..10);
        for _ in 0..slices {
            if let Some(leader) = sim.leader() {
                sim.propose(leader);
            }
            sim.run_for(50);
        }
        let target = ids[rng.random_range(0..ids.len())];
        match rng.random_range(0..12) {
            0 => sim.crash(target),
            1..=3 => {
                sim.restart_some(&ids, &mut rng);
            }
            4 => {
                sim.partition_random_side(&ids, &mut rng);
            }
            5 => sim.isolate(target),
            6 | 7 => sim.heal(),
            8..=10 => {
                let fault = random_fault(&mut rng);
                sim.inject_disk_fault(target, fault);
            }
            _ => {}
        }
    }
    sim.clear_disk_faults();
    sim.assert_recovers(30_000);
    sim.disk_failures.len()
}

fn sweep_seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![seed];
    }
    let n = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200u64);
    (0..n).collect()
}

#[test]
fn random_disk_faults_across_many_seeds_keep_every_invariant_and_recover() {
    let seeds = sweep_seeds();
    let mut failures = 0;
    for seed in &seeds {
        match std::panic::catch_unwind(|| random_disk_run(*seed)) {
            Ok(n) => failures += n,
            Err(e) => {
                eprintln!(
                    "random disk-fault simulation failed with seed {seed}; replay with SIM_SEED={seed}"
                );
                std::panic::resume_unwind(e);
            }
        }
    }
    eprintln!(
        "random disk-fault simulation: {} seeds passed; {failures} nodes stopped on a disk fault and restarted",
        seeds.len()
    );
    if seeds.len() >= 50 {
        assert!(failures > 0, "no disk fault ever stopped a node");
    }
}
