//! Where a flush's fsyncs run (decisions D5): the placement rule, the
//! timing of a job, and the await of a job on a blocking thread.

use std::time::{Duration, Instant};

use crate::{
    log::{FlushDone, FlushJob},
    raft::Role,
};

/// The fsync time of a flush (all its files) under which the next flush
/// may run on the event loop (1 ms). The development disk's fsync p99 is
/// 0.2-0.4 ms (BENCHMARKS.md); a disk slower than this gets its fsyncs on a
/// blocking thread, so probes, votes and requests are not held behind them.
pub const FLUSH_ON_LOOP_BELOW: Duration = Duration::from_millis(1);

/// Runs `job`'s fsyncs (blocking) and measures how long they took.
pub(super) fn timed_run(job: FlushJob) -> (FlushDone, Duration) {
    let started = Instant::now();
    let done = job.run();
    (done, started.elapsed())
}

/// Whether a node in `role` with `voters` voters runs its next flush on
/// the loop, the previous flush's fsyncs having taken `last_took`
/// (decisions D5): never a leader with followers; others while
/// `last_took < below`.
pub(super) fn flush_on_loop(
    role: Role,
    voters: usize,
    last_took: Duration,
    below: Duration,
) -> bool {
    let leads_others = role == Role::Leader && voters > 1;
    !leads_others && last_took < below
}

/// The result of the running flush job; pending while none runs (the
/// branch that awaits it is disabled then).
pub(super) async fn flush_done(
    job: &mut Option<tokio::task::JoinHandle<(FlushDone, Duration)>>,
) -> Result<(FlushDone, Duration), tokio::task::JoinError> {
    match job {
        Some(handle) => handle.await,
        None => std::future::pending().await,
    }
}
