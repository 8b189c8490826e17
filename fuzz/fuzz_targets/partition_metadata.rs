//! Fuzz target: any bytes, as the `partition.metadata` file of the metadata
//! partition directory, must be accepted (only Kafka's text for the
//! `__cluster_metadata` topic id) or refused with an error by
//! `FileLog::open`, never a panic.

#![no_main]

use kraft_controller::log::{
    FileLog, FileLogConfig, METADATA_TOPIC_ID, PARTITION_METADATA_FILE, encode_partition_metadata,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!(
        "kraft-fuzz-partition-metadata-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join(PARTITION_METADATA_FILE), data).expect("write partition.metadata");
    let opened = FileLog::open(&dir, FileLogConfig::default());
    let want = encode_partition_metadata(METADATA_TOPIC_ID);
    let matches = std::str::from_utf8(data).is_ok_and(|t| t.trim_end() == want);
    assert_eq!(opened.is_ok(), matches, "{opened:?}");
});
