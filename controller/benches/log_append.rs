//! Append + flush throughput of [`FileLog`]: 256-byte records in batches of
//! 1, 10 and 100, each append followed by a flush (fsync), as a Raft leader
//! does before it counts its own offset. Prints records/s and MB/s (payload
//! bytes; on-disk bytes include the batch and record headers, also printed).
//!
//! Run with `cargo bench -p kraft-controller --bench log_append`
//! (`make bench-log`). The log lives in `$KRAFTWERK_BENCH_DIR` or the system
//! temp directory; the figures depend on that file system's fsync.
//! A plain harness (no criterion): one warm-up pass, then a fixed number of
//! appends per batch size, timed as a whole.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kraft_controller::{
    log::{FileLog, FileLogConfig, ReplicatedLog},
    record::encode_data_batch,
};

const RECORD_BYTES: usize = 256;

fn run(batch_size: usize, appends: usize, flush_each: bool) -> (Duration, u64) {
    let base = std::env::var_os("KRAFTWERK_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    let mut log = FileLog::open(dir.path(), FileLogConfig::default()).expect("open");
    let values: Vec<Bytes> = (0..batch_size)
        .map(|i| Bytes::from(vec![i as u8; RECORD_BYTES]))
        .collect();
    let batch = encode_data_batch(0, 1, 1_700_000_000_000, &values).expect("encode");
    let start = Instant::now();
    for _ in 0..appends {
        log.append_as_leader(batch.clone(), 1).expect("append");
        if flush_each {
            log.flush().expect("flush");
        }
    }
    log.flush().expect("flush");
    (start.elapsed(), (batch.len() * appends) as u64)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not run us
    // for long: a quick pass with few appends proves it works.
    let quick = !std::env::args().any(|a| a == "--bench");
    let appends = if quick { 20 } else { 2000 };
    println!(
        "{:>12} {:>6} {:>8} {:>10} {:>12} {:>10} {:>12}",
        "mode", "batch", "appends", "seconds", "records/s", "MB/s", "disk MB/s"
    );
    // "append+flush" is the figure asked for; "append only" (one flush at the
    // end) shows the cost of the code path without the fsync.
    for (mode, flush_each, appends) in [
        ("append+flush", true, appends),
        ("append only", false, appends * 10),
    ] {
        for batch_size in [1usize, 10, 100] {
            run(batch_size, appends / 10, flush_each); // warm-up
            let (elapsed, disk_bytes) = run(batch_size, appends, flush_each);
            let secs = elapsed.as_secs_f64();
            let records = (batch_size * appends) as f64;
            println!(
                "{:>12} {:>6} {:>8} {:>10.3} {:>12.0} {:>10.2} {:>12.2}",
                mode,
                batch_size,
                appends,
                secs,
                records / secs,
                records * RECORD_BYTES as f64 / secs / 1e6,
                disk_bytes as f64 / secs / 1e6
            );
        }
    }
}
