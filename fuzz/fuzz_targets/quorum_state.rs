//! Fuzz target: any bytes, as the `quorum-state` file (Kafka's
//! `FileQuorumStateStore` JSON), must read to an election state or an error,
//! never a panic. A state read back is written and read again to the same
//! value.

#![no_main]

use kraft_controller::log::QuorumStateStore;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("kraft-fuzz-quorum-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let store = QuorumStateStore::new(&dir);
    std::fs::write(store.path(), data).expect("write quorum-state");
    let Ok(Some(state)) = store.read() else {
        return;
    };
    std::fs::write(store.path(), QuorumStateStore::encode(&state)).expect("rewrite");
    let again = store.read().expect("our own quorum-state reads");
    assert_eq!(again, Some(state));
});
