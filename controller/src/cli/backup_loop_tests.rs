//! Tests of the backup loop: on real temp directories, and on the
//! fault-injecting `MemoryFs` for the failures.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;

use super::*;
use crate::log::{
    fault_fs::{Errno, Fault, FsOp, MemoryFs},
    snapshot::{encode_snapshot, partial_snapshot_path},
};
use crate::record::OffsetAndEpoch;

fn snapshot_bytes(epoch: i32) -> Bytes {
    encode_snapshot(epoch, 1_000, 1_000, &[], &[Bytes::from_static(b"a record")])
        .expect("encode a snapshot")
}

fn config(log_dir: &Path, output_dir: &Path, keep: usize) -> BackupConfig {
    BackupConfig {
        metadata_log_dir: log_dir.to_path_buf(),
        output_dir: output_dir.to_path_buf(),
        every: Duration::from_secs(60),
        keep,
    }
}

/// A metadata log directory on the real disk with the bootstrap checkpoint
/// and frozen snapshots `ids`; returns (temp dir, log dir, output dir).
fn real_dirs(ids: &[OffsetAndEpoch]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().expect("temp dir");
    let log_dir = root.path().join("data");
    let partition = partition_dir(&log_dir);
    std::fs::create_dir_all(&partition).expect("partition dir");
    std::fs::write(log_dir.join("meta.properties"), "version=1\n").expect("meta");
    std::fs::write(
        partition.join(snapshot_file_name(OffsetAndEpoch::new(0, 0))),
        snapshot_bytes(0),
    )
    .expect("bootstrap checkpoint");
    for id in ids {
        std::fs::write(
            partition.join(snapshot_file_name(*id)),
            snapshot_bytes(id.epoch),
        )
        .expect("snapshot");
    }
    let out = root.path().join("backup");
    std::fs::create_dir(&out).expect("output dir");
    (root, log_dir, out)
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(tree(&path));
        } else {
            files.insert(path.clone(), std::fs::read(&path).expect("read"));
        }
    }
    files
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_round_copies_the_latest_snapshot_under_its_own_name_and_writes_nothing_under_the_log_dir() {
    let ids = [OffsetAndEpoch::new(10, 1), OffsetAndEpoch::new(25, 2)];
    let (_root, log_dir, out) = real_dirs(&ids);
    let before = tree(&log_dir);

    let report = export_round(&real_fs(), &config(&log_dir, &out, 3)).expect("round");

    let latest = snapshot_file_name(ids[1]);
    let expected = out.join(&latest);
    let size = snapshot_bytes(2).len();
    assert_eq!(
        report.outcome,
        RoundOutcome::Exported(expected.clone(), size)
    );
    assert_eq!(names(&out), vec![latest.clone()]);
    assert_eq!(
        std::fs::read(&expected).expect("the copy"),
        snapshot_bytes(2).to_vec()
    );
    assert_eq!(tree(&log_dir), before, "the log directory is unchanged");
}

#[test]
fn a_round_whose_snapshot_is_backed_up_already_writes_nothing() {
    let id = OffsetAndEpoch::new(10, 1);
    let (_root, log_dir, out) = real_dirs(&[id]);
    let cfg = config(&log_dir, &out, 3);
    export_round(&real_fs(), &cfg).expect("first round");
    let copy = out.join(snapshot_file_name(id));
    // A marker: a second copy would replace it.
    std::fs::write(&copy, b"marker").expect("mark the copy");

    let report = export_round(&real_fs(), &cfg).expect("second round");

    assert_eq!(report.outcome, RoundOutcome::AlreadyThere(copy.clone()));
    assert_eq!(std::fs::read(&copy).expect("copy"), b"marker".to_vec());
}

#[test]
fn only_the_newest_keep_copies_remain_and_other_files_are_left_alone() {
    let (_root, log_dir, out) = real_dirs(&[]);
    let partition = partition_dir(&log_dir);
    std::fs::write(out.join("notes.txt"), b"mine").expect("a user file");
    let cfg = config(&log_dir, &out, 2);
    let ids = [
        OffsetAndEpoch::new(10, 1),
        OffsetAndEpoch::new(20, 1),
        OffsetAndEpoch::new(30, 2),
    ];
    let mut reports = Vec::new();
    for id in ids {
        std::fs::write(
            partition.join(snapshot_file_name(id)),
            snapshot_bytes(id.epoch),
        )
        .expect("a new snapshot");
        reports.push(export_round(&real_fs(), &cfg).expect("round"));
    }

    assert_eq!(
        names(&out),
        vec![
            snapshot_file_name(ids[1]),
            snapshot_file_name(ids[2]),
            "notes.txt".to_owned()
        ]
    );
    assert_eq!(
        reports[2].deleted,
        vec![out.join(snapshot_file_name(ids[0]))]
    );
}

#[test]
fn a_snapshot_still_being_written_is_never_copied() {
    let frozen = OffsetAndEpoch::new(10, 1);
    let (_root, log_dir, out) = real_dirs(&[frozen]);
    let partition = partition_dir(&log_dir);
    // A newer snapshot in progress: half of its bytes in a .part file.
    let part = partial_snapshot_path(&partition, OffsetAndEpoch::new(40, 3));
    std::fs::write(&part, &snapshot_bytes(3)[..20]).expect("a .part file");

    let report = export_round(&real_fs(), &config(&log_dir, &out, 3)).expect("round");

    assert_eq!(
        report.outcome,
        RoundOutcome::Exported(
            out.join(snapshot_file_name(frozen)),
            snapshot_bytes(1).len()
        )
    );
    assert_eq!(names(&out), vec![snapshot_file_name(frozen)]);
}

#[test]
fn a_log_with_only_the_bootstrap_checkpoint_has_nothing_to_back_up() {
    let (_root, log_dir, out) = real_dirs(&[]);

    let report = export_round(&real_fs(), &config(&log_dir, &out, 3)).expect("round");

    assert_eq!(report.outcome, RoundOutcome::NoSnapshot);
    assert!(names(&out).is_empty());
}

#[test]
fn a_damaged_snapshot_is_not_copied_and_the_round_fails() {
    let id = OffsetAndEpoch::new(10, 1);
    let (_root, log_dir, out) = real_dirs(&[id]);
    let path = partition_dir(&log_dir).join(snapshot_file_name(id));
    let bytes = snapshot_bytes(1);
    std::fs::write(&path, &bytes[..bytes.len() - 5]).expect("cut it short");

    let err = export_round(&real_fs(), &config(&log_dir, &out, 3)).expect_err("damaged");

    assert!(matches!(err, BackupError::Snapshot(_)), "{err}");
    assert!(!err.is_fatal());
    assert!(names(&out).is_empty());
}

#[test]
fn a_temp_file_left_by_an_interrupted_round_is_removed() {
    let id = OffsetAndEpoch::new(10, 1);
    let (_root, log_dir, out) = real_dirs(&[id]);
    let stale = format!("{}.tmp", snapshot_file_name(OffsetAndEpoch::new(5, 1)));
    std::fs::write(out.join(&stale), b"half").expect("a stale temp file");

    export_round(&real_fs(), &config(&log_dir, &out, 3)).expect("round");

    assert_eq!(names(&out), vec![snapshot_file_name(id)]);
}

/// A `MemoryFs` holding a log dir `/data` with snapshot 10-1 and an empty
/// output dir `/backup`.
fn memory_dirs() -> (MemoryFs, Fs, BackupConfig) {
    let memory = MemoryFs::new();
    let fs: Fs = Arc::new(memory.clone());
    let partition = partition_dir(Path::new("/data"));
    fs.create_dir_all(&partition).expect("partition dir");
    fs.create_dir_all(Path::new("/backup")).expect("output dir");
    write_atomically_on(
        &fs,
        &partition.join(snapshot_file_name(OffsetAndEpoch::new(10, 1))),
        &snapshot_bytes(1),
    )
    .expect("a snapshot");
    let cfg = config(Path::new("/data"), Path::new("/backup"), 3);
    (memory, fs, cfg)
}

#[test]
fn a_failed_fsync_of_the_copy_stops_the_loop_with_an_error() {
    let (memory, fs, cfg) = memory_dirs();
    memory.inject(Fault::next(FsOp::Sync, Errno::Eio).on_path("/backup"));
    let mut waits = 0;

    let err = backup_loop(&fs, &cfg, |_| {
        waits += 1;
        waits < 3
    })
    .expect_err("the loop stops");

    assert!(matches!(err, BackupError::Fsync(_)), "{err}");
    assert_eq!(waits, 0, "no round after the failed fsync");
}

#[test]
fn a_failed_fsync_of_the_output_directory_stops_the_loop_with_an_error() {
    let (memory, fs, cfg) = memory_dirs();
    memory.inject(Fault::next(FsOp::SyncDir, Errno::Eio).on_path("/backup"));
    let mut waits = 0;

    let err = backup_loop(&fs, &cfg, |_| {
        waits += 1;
        waits < 3
    })
    .expect_err("the loop stops");

    assert!(err.is_fatal(), "{err}");
    assert_eq!(waits, 0, "no round after the failed fsync");
}

#[test]
fn a_failed_read_is_logged_and_the_next_round_makes_the_copy() {
    let (memory, fs, cfg) = memory_dirs();
    memory.inject(Fault::next(FsOp::Read, Errno::Eio).on_path("/data"));
    let mut waits = 0;

    backup_loop(&fs, &cfg, |every| {
        assert_eq!(every, Duration::from_secs(60));
        waits += 1;
        waits < 2
    })
    .expect("the loop goes on, then stops when told");

    assert_eq!(waits, 2, "two rounds");
    let copy = Path::new("/backup").join(snapshot_file_name(OffsetAndEpoch::new(10, 1)));
    assert_eq!(memory.durable_file(&copy), Some(snapshot_bytes(1).to_vec()));
}

#[test]
fn a_keep_of_zero_is_refused() {
    let (_memory, fs, mut cfg) = memory_dirs();
    cfg.keep = 0;

    let err = backup_loop(&fs, &cfg, |_| true).expect_err("refused");

    assert_eq!(err.to_string(), "--keep must be at least 1, got 0");
}
