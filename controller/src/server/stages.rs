//! Where a leader's commit latency goes, stage by stage (issue 23): for each
//! batch this node appends as leader, the moments the event loop sees it
//! pass each stage on the way to its commit, as latencies from the append.
//!
//! The stages, in the order a batch normally passes them:
//! - `leader_flush`: the leader's fsync that covers the batch returned (its
//!   flush job, run off the event loop, handed back to the engine), measured
//!   also when it comes after the commit
//!   (with 3 voters the two followers are a majority without it);
//! - `fetch_sent`: the first Fetch response carrying the batch was handed to
//!   a follower's connection (the bytes reach the socket right after);
//! - `follower_ack_first`, `follower_ack_last`: the first (with 3 voters: the
//!   majority's) and the last follower's next Fetch whose fetch offset is
//!   past the batch was taken by the event loop (the last only when it came
//!   before the commit: a committed batch is no longer followed); a follower fetches only what
//!   it flushed (KIP-595), so this is the follower's append, fsync and
//!   request, plus the time the request queued for the loop;
//! - `follower_round_trip`: from `fetch_sent` to that same follower's ack;
//! - `high_watermark_wait`: from the moment a majority of the voters held
//!   the batch (of the leader's flush and the followers' acks seen before
//!   the commit) to the commit (the engine's reaction);
//! - `commit`: the high watermark passed the batch (what the workload reports
//!   per record).
//!
//! It owns the per-batch timestamps and one fixed histogram per stage (10 µs
//! buckets up to 100 ms, constant memory); the cost on the event loop is one
//! `Instant` per batch and per event, plus a walk over the batches still
//! waiting for their commit (a few while the quorum commits, at most
//! `MAX_PENDING` when it cannot), and no allocation per record or batch
//! (the queue of pending batches reuses its space). Only voters' Fetch
//! requests are followed (an observer counts toward no majority). It must not influence
//! what the loop does, and it knows nothing about Raft beyond offsets: the
//! loop feeds it (`server::event_loop`), `GET /workload` reads it.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Instant,
};

use serde::Serialize;

/// Followers tracked per batch (the rest are not measured).
const MAX_FOLLOWERS: usize = 4;
/// Batches waiting for their commit beyond which the oldest is dropped
/// unmeasured (a leader that cannot commit must not grow without bound).
const MAX_PENDING: usize = 1 << 16;
/// Width of a histogram bucket, µs.
const BUCKET_US: u64 = 10;
/// Buckets per histogram: 10 µs × 10 000 = 100 ms; longer latencies land in
/// the last bucket (their percentiles read as the largest value seen) and
/// show in `max_ms`.
const BUCKETS: usize = 10_000;

/// The stage probe shared by the event loop (writer) and `GET /workload`.
pub type SharedStages = Arc<Mutex<StageProbe>>;

/// The names of the stages, in report order (see the module doc).
pub const STAGE_NAMES: [&str; 7] = [
    "leader_flush",
    "fetch_sent",
    "follower_ack_first",
    "follower_ack_last",
    "follower_round_trip",
    "high_watermark_wait",
    "commit",
];

const LEADER_FLUSH: usize = 0;
const FETCH_SENT: usize = 1;
const ACK_FIRST: usize = 2;
const ACK_LAST: usize = 3;
const ROUND_TRIP: usize = 4;
const HW_WAIT: usize = 5;
const COMMIT: usize = 6;

/// One stage's latency distribution, ms (10 µs resolution, nearest rank).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageSummary {
    /// One of [`STAGE_NAMES`].
    pub stage: &'static str,
    /// Batches measured.
    pub count: u64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
}

#[derive(Debug, Clone, Copy)]
struct FollowerMarks {
    sent: Option<Instant>,
    acked: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct Batch {
    last_offset: i64,
    appended: Instant,
    flushed: Option<Instant>,
    followers: [FollowerMarks; MAX_FOLLOWERS],
}

#[derive(Debug)]
struct Histogram {
    buckets: Box<[u32]>,
    count: u64,
    max_us: u64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            buckets: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            max_us: 0,
        }
    }

    fn record(&mut self, us: u64) {
        // Bucket i holds (10 (i - 1), 10 i] µs: a value on an edge reads back exactly.
        let index = usize::try_from(us.div_ceil(BUCKET_US))
            .unwrap_or(usize::MAX)
            .min(BUCKETS - 1);
        self.buckets[index] = self.buckets[index].saturating_add(1);
        self.count += 1;
        self.max_us = self.max_us.max(us);
    }

    /// The `q`th percentile (nearest rank), µs: the upper edge of its bucket,
    /// never above the largest value seen.
    fn percentile_us(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q / 100.0 * self.count as f64 - 1e-9).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank && i < BUCKETS - 1 {
                return (i as u64 * BUCKET_US).min(self.max_us);
            }
        }
        self.max_us
    }

    fn clear(&mut self) {
        self.buckets.fill(0);
        self.count = 0;
        self.max_us = 0;
    }
}

/// The per-batch timestamps and the stage histograms (see the module doc).
#[derive(Debug)]
pub struct StageProbe {
    pending: VecDeque<Batch>,
    /// Committed batches the leader has not flushed yet: (last offset,
    /// appended).
    unflushed: VecDeque<(i64, Instant)>,
    /// Replica ids of the followers measured, in the order first seen.
    followers: Vec<i32>,
    histograms: Vec<Histogram>,
    dropped: u64,
}

impl Default for StageProbe {
    fn default() -> Self {
        Self::new()
    }
}

fn micros(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_micros()).unwrap_or(u64::MAX)
}

impl StageProbe {
    /// An empty probe.
    pub fn new() -> Self {
        Self {
            pending: VecDeque::new(),
            unflushed: VecDeque::new(),
            followers: Vec::with_capacity(MAX_FOLLOWERS),
            histograms: STAGE_NAMES.iter().map(|_| Histogram::new()).collect(),
            dropped: 0,
        }
    }

    /// This node became leader of a new epoch: measures afresh, as the
    /// workload does for each epoch it leads.
    pub fn restart(&mut self) {
        self.pending.clear();
        self.unflushed.clear();
        self.followers.clear();
        self.histograms.iter_mut().for_each(Histogram::clear);
        self.dropped = 0;
    }

    /// This node is no longer the leader: its batches not yet committed are
    /// forgotten unmeasured (they may be truncated, and a later leader's
    /// high watermark says nothing about when they were written); the
    /// distributions so far stay readable.
    pub fn leadership_ended(&mut self) {
        self.pending.clear();
        self.unflushed.clear();
        self.followers.clear();
    }

    /// This node appended a batch ending at `last_offset` as leader at `at`.
    pub fn appended(&mut self, last_offset: i64, at: Instant) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
            self.dropped += 1;
        }
        self.pending.push_back(Batch {
            last_offset,
            appended: at,
            flushed: None,
            followers: [FollowerMarks {
                sent: None,
                acked: None,
            }; MAX_FOLLOWERS],
        });
    }

    /// The leader's log is flushed up to `flushed_end_offset` (exclusive) at `at`.
    pub fn flushed(&mut self, flushed_end_offset: i64, at: Instant) {
        while let Some(&(last_offset, appended)) = self.unflushed.front() {
            if last_offset >= flushed_end_offset {
                break;
            }
            self.unflushed.pop_front();
            self.histograms[LEADER_FLUSH].record(micros(appended, at));
        }
        for b in self.pending.iter_mut() {
            if b.last_offset >= flushed_end_offset {
                break;
            }
            b.flushed.get_or_insert(at);
        }
    }

    fn slot(&mut self, replica_id: i32) -> Option<usize> {
        if let Some(i) = self.followers.iter().position(|&id| id == replica_id) {
            return Some(i);
        }
        if self.followers.len() < MAX_FOLLOWERS {
            self.followers.push(replica_id);
            return Some(self.followers.len() - 1);
        }
        None
    }

    /// A Fetch response carrying the log up to `end_offset` (exclusive) was
    /// handed to follower `replica_id`'s connection at `at`.
    pub fn fetch_sent(&mut self, replica_id: i32, end_offset: i64, at: Instant) {
        let Some(slot) = self.slot(replica_id) else {
            return;
        };
        for b in self.pending.iter_mut() {
            if b.last_offset >= end_offset {
                break;
            }
            b.followers[slot].sent.get_or_insert(at);
        }
    }

    /// Follower `replica_id`'s Fetch at `fetch_offset` (it holds, flushed,
    /// everything below) was taken by the event loop at `at`.
    pub fn fetch_arrived(&mut self, replica_id: i32, fetch_offset: i64, at: Instant) {
        let Some(slot) = self.slot(replica_id) else {
            return;
        };
        for b in self.pending.iter_mut() {
            if b.last_offset >= fetch_offset {
                break;
            }
            b.followers[slot].acked.get_or_insert(at);
        }
    }

    /// The high watermark moved to `high_watermark` (exclusive) at `at`: the
    /// batches below it are measured and forgotten.
    pub fn committed(&mut self, high_watermark: i64, at: Instant) {
        while let Some(b) = self.pending.front().copied() {
            if b.last_offset >= high_watermark {
                break;
            }
            self.pending.pop_front();
            self.measure(&b, at);
            if b.flushed.is_none() {
                if self.unflushed.len() >= MAX_PENDING {
                    self.unflushed.pop_front();
                    self.dropped += 1;
                }
                self.unflushed.push_back((b.last_offset, b.appended));
            }
        }
    }

    fn measure(&mut self, b: &Batch, committed: Instant) {
        let h = &mut self.histograms;
        let since_append = |t: Instant| micros(b.appended, t);
        if let Some(t) = b.flushed {
            h[LEADER_FLUSH].record(since_append(t));
        }
        let marks = &b.followers[..self.followers.len()];
        if let Some(t) = marks.iter().filter_map(|m| m.sent).min() {
            h[FETCH_SENT].record(since_append(t));
        }
        let first = marks
            .iter()
            .filter_map(|m| m.acked.map(|a| (a, m.sent)))
            .min_by_key(|(a, _)| *a);
        if let Some((acked, sent)) = first {
            h[ACK_FIRST].record(since_append(acked));
            if let Some(sent) = sent {
                h[ROUND_TRIP].record(micros(sent, acked));
            }
        }
        // The voters are the leader and the followers seen; the batch was
        // held by a majority at the majority-th earliest of their marks.
        let mut held: [Option<Instant>; MAX_FOLLOWERS + 1] = [None; MAX_FOLLOWERS + 1];
        held[0] = b.flushed;
        for (slot, m) in held[1..].iter_mut().zip(marks) {
            *slot = m.acked;
        }
        let voters = 1 + marks.len();
        let held = &mut held[..voters];
        // Earliest first, the missing marks last.
        held.sort_unstable_by_key(|t| (t.is_none(), *t));
        if let Some(majority_at) = held[voters / 2] {
            h[HW_WAIT].record(micros(majority_at, committed));
        }
        // Every follower acked before the commit: the latest of them.
        let last = marks
            .iter()
            .try_fold(None, |latest: Option<Instant>, m| {
                m.acked.map(|a| latest.max(Some(a)))
            })
            .flatten();
        if let Some(last) = last {
            h[ACK_LAST].record(since_append(last));
        }
        h[COMMIT].record(since_append(committed));
    }

    /// Batches dropped unmeasured because too many waited for their commit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The stages' distributions, in [`STAGE_NAMES`] order.
    pub fn report(&self) -> Vec<StageSummary> {
        let ms = |us: u64| us as f64 / 1000.0;
        STAGE_NAMES
            .iter()
            .zip(&self.histograms)
            .map(|(&stage, h)| StageSummary {
                stage,
                count: h.count,
                p50_ms: ms(h.percentile_us(50.0)),
                p99_ms: ms(h.percentile_us(99.0)),
                p999_ms: ms(h.percentile_us(99.9)),
                max_ms: ms(h.max_us),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn stage<'a>(report: &'a [StageSummary], name: &str) -> &'a StageSummary {
        report
            .iter()
            .find(|s| s.stage == name)
            .expect("every stage is reported")
    }

    #[test]
    fn each_stage_is_measured_from_the_batch_append() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut p = StageProbe::new();
        p.appended(9, t0); // offsets ..=9
        p.fetch_sent(2, 10, ms(1));
        p.fetch_sent(3, 10, ms(2));
        p.flushed(10, ms(3));
        p.fetch_arrived(3, 10, ms(4));
        p.committed(10, ms(5));
        p.fetch_arrived(2, 10, ms(6));
        let r = p.report();
        assert_eq!(stage(&r, "leader_flush").p50_ms, 3.0);
        assert_eq!(stage(&r, "fetch_sent").p50_ms, 1.0);
        assert_eq!(stage(&r, "follower_ack_first").p50_ms, 4.0);
        // Follower 3 was sent it at 2 ms and acknowledged at 4 ms.
        assert_eq!(stage(&r, "follower_round_trip").p50_ms, 2.0);
        assert_eq!(stage(&r, "high_watermark_wait").p50_ms, 1.0);
        assert_eq!(stage(&r, "commit").p50_ms, 5.0);
        // Follower 2 had not acknowledged by the commit: no last ack.
        assert_eq!(stage(&r, "follower_ack_last").count, 0);
        assert_eq!(stage(&r, "commit").count, 1);
    }

    #[test]
    fn an_event_marks_only_the_batches_below_its_offset_and_only_once() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut p = StageProbe::new();
        p.appended(4, t0);
        p.appended(9, ms(1));
        p.flushed(5, ms(2)); // the first batch only
        p.flushed(10, ms(3));
        p.flushed(10, ms(8)); // already flushed: keeps 3 ms
        p.fetch_arrived(1, 5, ms(4));
        p.fetch_arrived(1, 10, ms(6));
        p.committed(10, ms(7));
        let r = p.report();
        let flush = stage(&r, "leader_flush");
        assert_eq!((flush.count, flush.p50_ms, flush.max_ms), (2, 2.0, 2.0));
        let ack = stage(&r, "follower_ack_first");
        assert_eq!((ack.p50_ms, ack.max_ms), (4.0, 5.0));
        assert_eq!(stage(&r, "follower_ack_last").max_ms, 5.0);
    }

    #[test]
    fn a_leader_flush_after_the_commit_is_measured_too() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut p = StageProbe::new();
        p.appended(9, t0);
        p.fetch_arrived(2, 10, ms(1));
        p.fetch_arrived(3, 10, ms(2));
        p.committed(10, ms(2)); // the two followers are a majority of 3
        p.flushed(10, ms(25));
        let r = p.report();
        assert_eq!(stage(&r, "leader_flush").p50_ms, 25.0);
        // A majority (2 of 3) held it when the second follower acked.
        assert_eq!(stage(&r, "high_watermark_wait").p50_ms, 0.0);
        assert_eq!(stage(&r, "high_watermark_wait").count, 1);
    }

    #[test]
    fn restarting_forgets_the_last_epoch_and_percentiles_have_ten_microsecond_buckets() {
        let t0 = Instant::now();
        let mut p = StageProbe::new();
        for i in 0..1000u64 {
            p.appended(i as i64, t0);
            p.committed(i as i64 + 1, t0 + Duration::from_micros(1 + i * 10));
        }
        let c = stage(&p.report(), "commit").clone();
        assert_eq!(c.count, 1000);
        // 1, 11, 21 ... 9991 µs: rank 500 is in the bucket ending at 5 ms.
        assert_eq!(c.p50_ms, 5.0);
        assert_eq!(c.p99_ms, 9.9);
        assert_eq!(c.p999_ms, 9.99);
        p.restart();
        assert_eq!(stage(&p.report(), "commit").count, 0);
    }

    #[test]
    fn batches_left_when_leadership_ends_are_not_measured_by_a_later_high_watermark() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut p = StageProbe::new();
        p.appended(4, t0);
        p.committed(5, ms(1));
        p.appended(9, ms(2)); // never committed in this epoch
        p.leadership_ended();
        p.committed(10, ms(500)); // the next leader's high watermark
        let r = p.report();
        let commit = stage(&r, "commit");
        assert_eq!((commit.count, commit.max_ms), (1, 1.0));
    }
}
