//! Fuzz target: any bytes, as a snapshot file's contents (a `.checkpoint`
//! fetched with FetchSnapshot or read from disk), must load or fail, never
//! panic: the metadata image loader (`load_image_snapshot`), the control
//! records the engine reads from it (KRaftVersion, Voters, as
//! `load_snapshot_control_records` and `bootstrap_voters` do) and the
//! snapshot reader over a real file. A loaded image is positioned at the
//! snapshot id and re-encodes to a snapshot that loads to the same image.

#![no_main]

use kraft_controller::{
    log::snapshot::{SnapshotReader, SnapshotWriter},
    metadata::snapshot::{encode_image_snapshot, load_image_snapshot},
    raft::VoterSet,
    record::{ControlRecord, DecodedBatch, OffsetAndEpoch, VotersRecord, iter_batches},
};
use libfuzzer_sys::fuzz_target;

/// A per-process scratch directory, on tmpfs where there is one (fsync is
/// then cheap), emptied for each input.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("kraft-fuzz-{name}-{}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let id = OffsetAndEpoch::new(100, 3);
    if let Ok(image) = load_image_snapshot(id, data) {
        assert_eq!(image.next_offset(), id.offset);
        assert_eq!(image.last_epoch(), id.epoch);
        let bytes = encode_image_snapshot(&image, 1, VotersRecord::default(), 0)
            .expect("a loaded image encodes");
        let again = load_image_snapshot(id, &bytes).expect("an encoded image loads");
        assert_eq!(format!("{again:?}"), format!("{image:?}"));
    }
    for item in iter_batches(data, true) {
        let Ok((header, batch)) = item else {
            break;
        };
        if !header.is_control() {
            continue;
        }
        let Ok(records) = DecodedBatch::decode(batch).and_then(|b| b.control_records()) else {
            break;
        };
        for record in records {
            if let ControlRecord::Voters(v) = record {
                let _ = VoterSet::from_record(&v);
            }
        }
    }
    // The reader over a real file gives back exactly the bytes written.
    let dir = scratch_dir("snapshot");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut writer = SnapshotWriter::create(&dir, id).expect("create snapshot");
    writer.append(data).expect("append");
    let _ = writer.verify();
    if writer.freeze().is_ok() {
        let reader = SnapshotReader::open(&dir, id).expect("open a frozen snapshot");
        assert_eq!(reader.size(), data.len() as u64);
        let read = reader.read(0, data.len()).expect("read");
        assert_eq!(&read[..], data);
    }
});
