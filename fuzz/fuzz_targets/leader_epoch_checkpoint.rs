//! Fuzz target: any bytes, as a `leader-epoch-checkpoint` file (Kafka's
//! `LeaderEpochCheckpointFile`: version, count, `epoch offset` lines), must
//! parse to entries or an error, never a panic nor an allocation the file's
//! count asks for. Parsed entries encode and parse to the same entries.

#![no_main]

use kraft_controller::log::epoch_cache::LeaderEpochCache;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("leader-epoch-checkpoint");
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(entries) = LeaderEpochCache::parse(path, text) else {
        return;
    };
    let cache = LeaderEpochCache::new(std::path::Path::new("."), entries.clone());
    let again = LeaderEpochCache::parse(path, &cache.encode()).expect("our own checkpoint parses");
    assert_eq!(again, entries);
});
