//! Restart time of a node's metadata state with 1 million committed records,
//! with and without a snapshot (issue 6's figure; not part of `make test`).
//!
//! Writes 1,000,000 NoOpRecords (1,000 batches of 1,000) plus one
//! FeatureLevelRecord to a `FileLog` with 8 MiB segments, then times what a
//! restart does before serving: (a) open the log and replay it all into a
//! `MetadataImage`; (b) after a snapshot at the log end and cleaning the
//! segments below it, open the log, load the snapshot and replay the rest.
//!
//! Run: `cargo run --release -p kraft-controller --example restart_bench`.

use std::time::Instant;

use bytes::Bytes;
use kraft_controller::{
    log::{FileLog, FileLogConfig, OffsetAndEpoch, ReplicatedLog},
    metadata::{
        image::MetadataImage,
        records::{FeatureLevelRecord, METADATA_VERSION_FEATURE, no_op_record},
        snapshot::{encode_image_snapshot, image_snapshot_id, load_image_snapshot},
    },
    record::{VotersRecord, encode_data_batch},
};

const BATCHES: usize = 1_000;
const PER_BATCH: usize = 1_000;

fn config() -> FileLogConfig {
    FileLogConfig {
        segment_bytes: 8 << 20,
        ..FileLogConfig::default()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("__cluster_metadata-0");
    let mut log = FileLog::open(&path, config())?;
    let level = FeatureLevelRecord {
        name: METADATA_VERSION_FEATURE.into(),
        feature_level: 27,
    }
    .encode_framed();
    log.append_as_leader(encode_data_batch(0, 1, 0, &[level])?, 1)?;
    let values: Vec<Bytes> = (0..PER_BATCH).map(|_| no_op_record()).collect();
    for _ in 0..BATCHES {
        log.append_as_leader(encode_data_batch(0, 1, 0, &values)?, 1)?;
    }
    log.flush()?;
    let end = log.end_offset().offset;
    drop(log);

    let started = Instant::now();
    let log = FileLog::open(&path, config())?;
    let mut image = MetadataImage::starting_at(log.start_offset());
    let applied = image.apply_log(&log, end)?;
    let without = started.elapsed();
    println!(
        "without snapshot: {applied} records replayed in {:.0} ms",
        without.as_secs_f64() * 1e3
    );

    let mut log = log;
    let id = image_snapshot_id(&image);
    let mut writer = log.create_snapshot(id)?;
    writer.append(&encode_image_snapshot(
        &image,
        0,
        VotersRecord::default(),
        0,
    )?)?;
    log.freeze_snapshot(writer)?;
    let start = log.delete_segments_before(id.offset)?;
    drop(log);

    let started = Instant::now();
    let log = FileLog::open(&path, config())?;
    let latest: OffsetAndEpoch = log.latest_snapshot_id().ok_or("no snapshot")?;
    let reader = log.read_snapshot(latest)?;
    let mut image = load_image_snapshot(latest, &reader.read(0, reader.size() as usize)?)?;
    let applied = image.apply_log(&log, end)?;
    let with = started.elapsed();
    println!(
        "with snapshot {latest} (log cleaned to {start}): {applied} records replayed in {:.1} ms",
        with.as_secs_f64() * 1e3
    );
    assert_eq!(
        image.feature_level(METADATA_VERSION_FEATURE),
        Some(27),
        "the image must survive the snapshot"
    );
    Ok(())
}
