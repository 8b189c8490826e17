//! The benchmark workload, equivalent to Apache Kafka's `kafka.tools.TestRaftServer`
//! (its `RaftWorkloadGenerator`): while this node is the leader it appends one
//! record of `record_size` bytes per append at `throughput` records/s, and
//! measures, for its own epoch only, the append-to-commit latency of every
//! record and the committed bytes per second.
//!
//! It owns the pacing (TestRaftServer's `ThroughputThrottler`: record n is
//! due `round(n * 1000 / throughput)` whole milliseconds after the claim, so
//! the records of one millisecond are appended together) and the
//! accounting; [`listener`] runs it above Raft as the node's
//! [`Listener`](crate::raft::listener::Listener) (the appends, role changes
//! and commits). It must not touch the engine or the log itself, and it is
//! never enabled outside benchmarks (`kraft-controller run
//! --workload-throughput N`). Its records are opaque
//! bytes, so a node running it keeps no metadata image and writes no
//! snapshots, as TestRaftServer runs no metadata state machine.
//!
//! Results: `GET /workload` on the HTTP listener answers one JSON object
//! ([`WorkloadReport`]); the same object is printed on stdout at shutdown,
//! prefixed by `workload-report `. It carries the stage-by-stage breakdown of
//! the commit latency that the event loop measures
//! ([`crate::server::stages`]), which this module only holds and reports.

pub mod listener;

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use bytes::Bytes;
use serde::Serialize;

use crate::server::stages::{SharedStages, StageProbe, StageSummary};

/// Errors of the workload settings.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// `--workload-throughput` must be at least 1 record/s.
    #[error("workload throughput must be at least 1 record/s, got {0}")]
    Throughput(u32),
    /// `--workload-record-size` must be at least 1 byte.
    #[error("workload record size must be at least 1 byte, got {0}")]
    RecordSize(usize),
}

/// What to append (TestRaftServer's `--throughput` and `--record-size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// Records per second the leader appends (TestRaftServer default 5000).
    pub throughput: u32,
    /// Bytes of each record's value (TestRaftServer default 256).
    pub record_size: usize,
}

impl WorkloadConfig {
    /// Checks the settings.
    ///
    /// Errors: [`WorkloadError`] for a zero rate or size.
    pub fn new(throughput: u32, record_size: usize) -> Result<Self, WorkloadError> {
        if throughput == 0 {
            return Err(WorkloadError::Throughput(throughput));
        }
        if record_size == 0 {
            return Err(WorkloadError::RecordSize(record_size));
        }
        Ok(Self {
            throughput,
            record_size,
        })
    }
}

/// The results of the current (or last) epoch this node led, the body of
/// `GET /workload`. Latencies in milliseconds (microsecond resolution).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadReport {
    /// The epoch measured; -1 when this node has never led.
    pub epoch: i32,
    /// Target rate, records/s.
    pub target_records_per_sec: u32,
    /// Bytes per record.
    pub record_size: usize,
    /// Records appended in this epoch.
    pub appended: u64,
    /// Records of this epoch committed.
    pub committed: u64,
    /// Committed payload bytes.
    pub committed_bytes: u64,
    /// Seconds from the claim of the epoch to the last commit.
    pub elapsed_s: f64,
    /// `committed_bytes / elapsed_s`.
    pub bytes_per_sec: f64,
    /// `committed / elapsed_s`.
    pub records_per_sec: f64,
    /// Append-to-commit latency percentiles, ms.
    pub p50_ms: f64,
    /// 75th percentile, ms.
    pub p75_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Largest latency, ms.
    pub max_ms: f64,
    /// Where the commit latency goes, per batch, stage by stage
    /// ([`crate::server::stages`]); empty when never led.
    pub stages: Vec<StageSummary>,
    /// Batches the stage probe dropped unmeasured (too many uncommitted).
    pub stages_dropped: u64,
}

/// The workload's state: pacing, the appends waiting for commit (offset
/// order) and the latencies of the committed ones, for one epoch.
#[derive(Debug)]
pub struct Workload {
    config: WorkloadConfig,
    payload: Bytes,
    epoch: Option<i32>,
    measured_epoch: i32,
    claimed_at: Option<Instant>,
    last_commit_at: Option<Instant>,
    appended: u64,
    pending: VecDeque<(i64, Instant)>,
    latencies_us: Vec<u64>,
    committed_bytes: u64,
    stages: SharedStages,
}

/// The workload shared between its listener and the HTTP handler.
pub type SharedWorkload = Arc<Mutex<Workload>>;

impl Workload {
    /// A workload that waits for this node to become leader.
    pub fn new(config: WorkloadConfig) -> Self {
        Self {
            config,
            payload: Bytes::from(vec![0u8; config.record_size]),
            epoch: None,
            measured_epoch: -1,
            claimed_at: None,
            last_commit_at: None,
            appended: 0,
            pending: VecDeque::new(),
            latencies_us: Vec::new(),
            committed_bytes: 0,
            stages: Arc::new(Mutex::new(StageProbe::new())),
        }
    }

    /// The stage probe the event loop feeds (`server::run`'s `stages`).
    pub fn stages(&self) -> SharedStages {
        self.stages.clone()
    }

    /// The value of every record (zeros, as TestRaftServer's payload).
    pub fn payload(&self) -> Bytes {
        self.payload.clone()
    }

    /// This node became leader of `epoch` at `now`: starts measuring afresh
    /// (Kafka's `handleLeaderChange` to self: throttler reset, pending cleared).
    pub fn claim(&mut self, epoch: i32, now: Instant) {
        if self.epoch == Some(epoch) {
            return;
        }
        self.epoch = Some(epoch);
        self.measured_epoch = epoch;
        self.claimed_at = Some(now);
        self.last_commit_at = None;
        self.appended = 0;
        self.pending.clear();
        self.latencies_us.clear();
        self.committed_bytes = 0;
    }

    /// This node is no longer leader: stops appending; the results of the
    /// epoch stay readable.
    pub fn resign(&mut self) {
        self.epoch = None;
        self.pending.clear();
    }

    /// The epoch being led, if any.
    pub fn epoch(&self) -> Option<i32> {
        self.epoch
    }

    /// How many records are due at `now` and not yet appended (0 when not
    /// leader). Pacing in whole milliseconds since the claim, as
    /// TestRaftServer's `ThroughputThrottler`: record n (from 1) is due
    /// `round(n * 1000 / throughput)` ms after it, so the records due within
    /// one millisecond become due together at its start.
    pub fn due(&self, now: Instant) -> u64 {
        match (self.epoch, self.claimed_at) {
            (Some(_), Some(start)) => {
                let elapsed_ms = now.saturating_duration_since(start).as_millis();
                records_due_by_ms(elapsed_ms, self.config.throughput).saturating_sub(self.appended)
            }
            _ => 0,
        }
    }

    /// When the next record is due (a whole millisecond after the claim, see
    /// [`Self::due`]); `None` when not leader.
    pub fn next_due(&self) -> Option<Instant> {
        let start = self.claimed_at?;
        self.epoch?;
        Some(due_at(start, self.appended + 1, self.config.throughput))
    }

    /// One record was appended at `offset` at `now`.
    pub fn appended(&mut self, offset: i64, now: Instant) {
        self.appended += 1;
        self.pending.push_back((offset, now));
    }

    /// The high watermark moved to `high_watermark` (exclusive) at `now`:
    /// every pending record below it is committed.
    pub fn committed(&mut self, high_watermark: i64, now: Instant) {
        while let Some(&(offset, at)) = self.pending.front() {
            if offset >= high_watermark {
                break;
            }
            self.pending.pop_front();
            let us = now.saturating_duration_since(at).as_micros();
            self.latencies_us
                .push(u64::try_from(us).unwrap_or(u64::MAX));
            self.committed_bytes += self.config.record_size as u64;
            self.last_commit_at = Some(now);
        }
    }

    /// The results so far (sorts a copy of the latencies).
    pub fn report(&self) -> WorkloadReport {
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        let elapsed_s = match (self.claimed_at, self.last_commit_at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let per_sec = |x: u64| {
            if elapsed_s > 0.0 {
                x as f64 / elapsed_s
            } else {
                0.0
            }
        };
        let committed = sorted.len() as u64;
        let (stages, stages_dropped) = {
            let probe = self
                .stages
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (probe.report(), probe.dropped())
        };
        WorkloadReport {
            epoch: self.measured_epoch,
            target_records_per_sec: self.config.throughput,
            record_size: self.config.record_size,
            appended: self.appended,
            committed,
            committed_bytes: self.committed_bytes,
            elapsed_s,
            bytes_per_sec: per_sec(self.committed_bytes),
            records_per_sec: per_sec(committed),
            p50_ms: percentile_ms(&sorted, 50.0),
            p75_ms: percentile_ms(&sorted, 75.0),
            p99_ms: percentile_ms(&sorted, 99.0),
            p999_ms: percentile_ms(&sorted, 99.9),
            max_ms: sorted.last().map_or(0.0, |&us| us as f64 / 1000.0),
            stages,
            stages_dropped,
        }
    }
}

/// Milliseconds after the claim at which record `n` (from 1) is due:
/// `round(n * 1000 / throughput)`, half up (TestRaftServer's
/// `ThroughputThrottler.maybeThrottle`, `Math.round`).
fn due_ms(n: u64, throughput: u32) -> u128 {
    let rate = u128::from(throughput);
    (2_000 * u128::from(n) + rate) / (2 * rate)
}

/// The instant record `n` (from 1) is due when pacing started at `start`:
/// [`due_ms`] whole milliseconds after it (used by the workload and by the
/// replication floor, `kraft-replication-floor`, so both pace alike).
pub fn due_at(start: Instant, n: u64, throughput: u32) -> Instant {
    start + Duration::from_millis(u64::try_from(due_ms(n, throughput)).unwrap_or(u64::MAX))
}

/// How many records are due `elapsed_ms` whole milliseconds after the
/// claim: the largest n with [`due_ms`]`(n) <= elapsed_ms`, i.e. the n
/// below `throughput * (2 * elapsed_ms + 1) / 2000`.
pub fn records_due_by_ms(elapsed_ms: u128, throughput: u32) -> u64 {
    let bound = u128::from(throughput) * (2 * elapsed_ms + 1);
    u64::try_from(bound.div_ceil(2_000) - 1).unwrap_or(u64::MAX)
}

/// The `q`th percentile (nearest rank) of `sorted_us` (microseconds,
/// ascending), in milliseconds; 0 for an empty slice.
pub fn percentile_ms(sorted_us: &[u64], q: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    // The small epsilon keeps 99.9 % of 1000 at rank 999 despite float rounding.
    let rank = (q / 100.0 * sorted_us.len() as f64 - 1e-9).ceil() as usize;
    let index = rank.clamp(1, sorted_us.len()) - 1;
    sorted_us[index] as f64 / 1000.0
}

/// The `/workload` route, answering the JSON [`WorkloadReport`].
pub fn router(workload: SharedWorkload) -> Router {
    Router::new()
        .route("/workload", get(report))
        .with_state(workload)
}

async fn report(State(workload): State<SharedWorkload>) -> impl IntoResponse {
    let report = match workload.lock() {
        Ok(w) => w.report(),
        Err(poisoned) => poisoned.into_inner().report(),
    };
    match serde_json::to_string(&report) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body + "\n",
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding the workload report: {e}\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> WorkloadConfig {
        WorkloadConfig::new(1000, 256).expect("valid")
    }

    #[test]
    fn percentiles_are_nearest_rank_over_the_committed_latencies() {
        let sorted: Vec<u64> = (1..=1000).map(|ms| ms * 1000).collect();
        assert_eq!(percentile_ms(&sorted, 50.0), 500.0);
        assert_eq!(percentile_ms(&sorted, 75.0), 750.0);
        assert_eq!(percentile_ms(&sorted, 99.0), 990.0);
        assert_eq!(percentile_ms(&sorted, 99.9), 999.0);
        assert_eq!(percentile_ms(&[2500], 99.9), 2.5);
        assert_eq!(percentile_ms(&[], 50.0), 0.0);
    }

    #[test]
    fn records_are_due_at_the_target_rate_from_the_claim() {
        let mut w = Workload::new(config());
        let t0 = Instant::now();
        assert_eq!(w.due(t0 + Duration::from_secs(1)), 0, "not leader");
        w.claim(3, t0);
        assert_eq!(w.due(t0), 0);
        assert_eq!(w.next_due(), Some(t0 + Duration::from_millis(1)));
        assert_eq!(w.due(t0 + Duration::from_millis(10)), 10);
        for offset in 0..10 {
            w.appended(offset, t0 + Duration::from_millis(10));
        }
        assert_eq!(w.due(t0 + Duration::from_millis(10)), 0);
        assert_eq!(w.next_due(), Some(t0 + Duration::from_millis(11)));
        w.resign();
        assert_eq!(w.next_due(), None);
    }

    #[test]
    fn records_due_in_one_millisecond_become_due_together_at_its_start() {
        let mut w = Workload::new(WorkloadConfig::new(5000, 256).expect("valid"));
        let t0 = Instant::now();
        w.claim(1, t0);
        // Record n is due round(n / 5) ms in: 1-2 at 0 ms, 3-7 at 1 ms.
        assert_eq!(w.due(t0), 2);
        assert_eq!(w.due(t0 + Duration::from_micros(999)), 2);
        assert_eq!(w.due(t0 + Duration::from_millis(1)), 7);
        assert_eq!(w.due(t0 + Duration::from_micros(1999)), 7);
        for offset in 0..7 {
            w.appended(offset, t0);
        }
        assert_eq!(w.next_due(), Some(t0 + Duration::from_millis(2)));
        assert_eq!(w.due(t0 + Duration::from_millis(2)), 5);
        // Half a millisecond rounds up, as Java's Math.round.
        assert_eq!(due_ms(1, 2000), 1);
        assert_eq!(due_ms(1, 400), 3);
    }

    #[test]
    fn the_due_count_and_the_next_due_time_agree_at_every_rate() {
        for rate in [1, 3, 7, 999, 1000, 1001, 5000, 20_000, 393_216] {
            for n in 1..=3_000u64 {
                let at = due_ms(n, rate);
                assert!(
                    records_due_by_ms(at, rate) >= n,
                    "rate {rate}: record {n} due at {at} ms"
                );
                if at > 0 {
                    assert!(
                        records_due_by_ms(at - 1, rate) < n,
                        "rate {rate}: record {n} before {at} ms"
                    );
                }
            }
        }
    }

    #[test]
    fn a_commit_measures_each_record_below_the_high_watermark_from_its_append() {
        let mut w = Workload::new(config());
        let t0 = Instant::now();
        w.claim(5, t0);
        w.appended(10, t0);
        w.appended(11, t0 + Duration::from_millis(1));
        w.appended(12, t0 + Duration::from_millis(2));
        // High watermark 12: offsets 10 and 11 committed, 12 still pending.
        w.committed(12, t0 + Duration::from_millis(5));
        let r = w.report();
        assert_eq!(r.epoch, 5);
        assert_eq!(r.appended, 3);
        assert_eq!(r.committed, 2);
        assert_eq!(r.committed_bytes, 512);
        assert_eq!(r.p50_ms, 4.0);
        assert_eq!(r.max_ms, 5.0);
        assert!((r.elapsed_s - 0.005).abs() < 1e-9);
        assert!((r.bytes_per_sec - 512.0 / 0.005).abs() < 1e-6);
        w.committed(13, t0 + Duration::from_millis(9));
        assert_eq!(w.report().committed, 3);
        assert_eq!(w.report().max_ms, 7.0);
    }

    #[test]
    fn a_new_epoch_starts_the_measurement_afresh_and_resigning_keeps_it_readable() {
        let mut w = Workload::new(config());
        let t0 = Instant::now();
        w.claim(1, t0);
        w.appended(0, t0);
        w.committed(1, t0 + Duration::from_millis(3));
        w.resign();
        assert_eq!(w.report().committed, 1, "readable after resigning");
        w.claim(2, t0 + Duration::from_secs(1));
        let r = w.report();
        assert_eq!((r.epoch, r.appended, r.committed), (2, 0, 0));
    }

    #[test]
    fn zero_rate_or_size_is_refused_naming_the_value() {
        let Err(e) = WorkloadConfig::new(0, 256) else {
            panic!("a zero rate is refused");
        };
        assert_eq!(
            e.to_string(),
            "workload throughput must be at least 1 record/s, got 0"
        );
        assert!(WorkloadConfig::new(10, 0).is_err());
    }
}
