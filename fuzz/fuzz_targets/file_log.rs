//! Fuzz target: a whole log-segment recovery and a follower append driven
//! from bytes. The input is `[u32 LE n][n bytes][rest]`: the n bytes are
//! written as segment `00000000000000000000.log` of a fresh partition
//! directory, which `FileLog::open` recovers (scan, CRC checks, truncation
//! at the first damage, index and epoch cache rebuilt); the rest is appended
//! with `append_as_follower`, as batches fetched from a leader.
//!
//! What must hold: no panic; a failed append changes nothing; every batch
//! the log then serves parses with a valid CRC at contiguous offsets up to
//! its end offset; and after a flush a second open recovers the same end.

#![no_main]

use bytes::Bytes;
use kraft_controller::{
    log::{
        FileLog, FileLogConfig, METADATA_TOPIC_ID, PARTITION_METADATA_FILE, ReplicatedLog,
        encode_partition_metadata,
    },
    record::iter_batches,
};
use libfuzzer_sys::fuzz_target;

const CONFIG: FileLogConfig = FileLogConfig {
    segment_bytes: 1 << 20,
    index_interval_bytes: 64,
    recovery_point_interval_ms: 1000,
};

fn check_served(log: &FileLog) {
    let end = log.end_offset().offset;
    let mut next = log.start_offset();
    while next < end {
        let fetched = log.read(next, 1 << 20).expect("a read inside the log");
        assert!(
            !fetched.records.is_empty(),
            "an empty read below the end offset"
        );
        for item in iter_batches(&fetched.records, true) {
            let (header, _) = item.expect("the log serves only whole, valid batches");
            if header.last_offset() < next {
                continue;
            }
            assert!(header.base_offset <= next, "a hole at offset {next}");
            next = header.next_offset();
        }
    }
    assert_eq!(next, end);
}

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (segment, fetched) = rest.split_at(len);

    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("kraft-fuzz-file-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join(PARTITION_METADATA_FILE),
        encode_partition_metadata(METADATA_TOPIC_ID),
    )
    .expect("write partition.metadata");
    std::fs::write(dir.join("00000000000000000000.log"), segment).expect("write segment");

    let mut log = FileLog::open(&dir, CONFIG).expect("a segment at offset 0 always recovers");
    check_served(&log);
    let before = log.end_offset();
    if log
        .append_as_follower(Bytes::copy_from_slice(fetched))
        .is_err()
    {
        assert_eq!(log.end_offset(), before, "a failed append changed the log");
    }
    check_served(&log);
    log.flush().expect("flush");
    let end = log.end_offset();
    let epochs = log.epoch_entries().to_vec();
    drop(log);
    let again = FileLog::open(&dir, CONFIG).expect("reopen");
    assert_eq!(again.end_offset(), end, "a second recovery moved the end");
    assert_eq!(again.epoch_entries(), &epochs[..]);
    check_served(&again);
});
