//! Tests of the offline recovery tools' library half (issue 26): the survey
//! of a stopped volume, `recover`'s plan and writes, and the choice among
//! volumes, on real files built with `format` and [`FileLog`], without
//! processes (those are in `process_recover.rs`).

use std::path::Path;

use bytes::Bytes;
use kraft_controller::{
    cli::{
        format::{FormatArgs, execute as format, plan as format_plan},
        log_survey::survey,
        recover::{RecoverError, choose, execute, plan},
    },
    log::{ElectionState, FileLog, FileLogConfig, QuorumStateStore, ReplicatedLog, partition_dir},
    record::encode_data_batch,
};

const NOW_MS: i64 = 1_795_998_093_000;
const VOTERS: &str = "1@c1:9093:Yn6jBgNWRcWUqv7Dz5TlZQ,2@c2:9093:bkIhY8PmQGiDnQJRUm2Rjg";

/// Formats `dir` as node 1 of the two voters above, appends `batches`
/// one-record batches in each of `epochs`, and stores quorum-state `stored`.
fn volume(dir: &Path, epochs: &[i32], batches: usize, stored: i32) {
    let args = FormatArgs {
        metadata_log_dir: Some(dir.to_path_buf()),
        node_id: Some(1),
        cluster_id: Some("MkU3OEVBNTcwNTJENDM2Qg".into()),
        initial_controllers: Some(VOTERS.into()),
        ..FormatArgs::default()
    };
    format(&format_plan(&args).expect("valid"), NOW_MS).expect("formats");
    let partition = partition_dir(dir);
    let mut log = FileLog::open(&partition, FileLogConfig::default()).expect("open");
    for epoch in epochs {
        for i in 0..batches {
            let batch = encode_data_batch(0, *epoch, NOW_MS, &[Bytes::from(format!("r{i}"))])
                .expect("a batch");
            log.append_as_leader(batch, *epoch).expect("append");
        }
    }
    log.flush().expect("flush");
    QuorumStateStore::new(&partition)
        .write(&ElectionState {
            epoch: stored,
            leader_id: Some(1),
            voted_key: None,
        })
        .expect("quorum-state");
}

fn segment(dir: &Path) -> std::path::PathBuf {
    partition_dir(dir).join("00000000000000000000.log")
}

#[test]
fn the_survey_reads_end_offset_last_epoch_and_voters_without_writing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    volume(&dir, &[1, 2], 3, 4);
    let before = std::fs::read(segment(&dir)).expect("segment");
    let s = survey(&dir).expect("survey");
    assert_eq!((s.end.offset, s.end.epoch), (6, 2));
    assert_eq!(s.highest_epoch(), 4);
    assert_eq!(s.kraft_version, 1);
    assert_eq!(s.latest_snapshot, None);
    assert_eq!(
        s.voters_text(),
        "1@c1:9093:Yn6jBgNWRcWUqv7Dz5TlZQ,2@c2:9093:bkIhY8PmQGiDnQJRUm2Rjg"
    );
    assert_eq!(std::fs::read(segment(&dir)).expect("segment"), before);
}

#[test]
fn a_torn_tail_ends_the_survey_at_the_last_whole_batch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    volume(&dir, &[1], 2, 1);
    let mut bytes = std::fs::read(segment(&dir)).expect("segment");
    let whole = bytes.len() as u64;
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1]);
    std::fs::write(segment(&dir), &bytes).expect("tear");
    let s = survey(&dir).expect("survey");
    assert_eq!(s.end.offset, 2);
    assert_eq!(s.torn_tail.map(|(_, position)| position), Some(whole));
}

#[test]
fn recover_appends_the_survivor_alone_past_every_epoch_and_keeps_the_log() {
    // KIP-853: the latest Voters record is the set; Raft: a new epoch.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    volume(&dir, &[1, 2], 3, 4);
    let before = std::fs::read(segment(&dir)).expect("segment");
    let s = survey(&dir).expect("survey");
    let p = plan(&s, None).expect("a plan");
    assert_eq!((p.epoch, p.offset), (5, 6));
    execute(&s, &p, NOW_MS).expect("recover");

    let after = survey(&dir).expect("survey");
    assert_eq!(after.voters_text(), "1@c1:9093:Yn6jBgNWRcWUqv7Dz5TlZQ");
    assert_eq!(after.voters.as_ref().map(|(offset, _)| *offset), Some(6));
    assert_eq!((after.end.offset, after.end.epoch), (7, 5));
    assert_eq!(
        after.election.map(|e| (e.epoch, e.leader_id)),
        Some((5, None))
    );
    let now = std::fs::read(segment(&dir)).expect("segment");
    assert_eq!(&now[..before.len()], &before[..], "the old log is kept");
}

#[test]
fn recover_refuses_a_voter_set_without_the_survivor() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    volume(&dir, &[1], 1, 1);
    let s = survey(&dir).expect("survey");
    let err = plan(&s, Some("2@c2:9093:bkIhY8PmQGiDnQJRUm2Rjg")).expect_err("refused");
    assert!(matches!(err, RecoverError::Voters(_)), "{err}");
    // With itself in the set, the given set is written as given.
    let p = plan(&s, Some(VOTERS)).expect("a plan");
    assert_eq!(p.voters.voters.len(), 2);
}

#[test]
fn inspect_chooses_the_highest_last_epoch_then_the_highest_end_offset() {
    // Raft §5.4.1: the later last epoch wins, then the longer log.
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    volume(&a, &[1, 2], 2, 2); // (2, 4)
    volume(&b, &[1, 3], 1, 3); // (3, 2): shorter, but a later epoch
    volume(&c, &[1, 2], 3, 2); // (2, 6)
    let surveys: Vec<_> = [&a, &b, &c]
        .iter()
        .map(|d| survey(d).expect("survey"))
        .collect();
    assert_eq!(choose(&surveys).map(|s| s.log_dir.clone()), Some(b.clone()));
    assert_eq!(
        choose(&[surveys[0].clone(), surveys[2].clone()]).map(|s| s.log_dir.clone()),
        Some(c)
    );
}
