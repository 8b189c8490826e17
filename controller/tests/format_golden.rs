//! Golden output of `format` through the library with a fixed clock and
//! fixed directory ids: the exact `dump-log` text of a formatted directory,
//! the annotated bytes of a control batch, and the 0-0 checkpoint of each
//! mode at 4.4-IV2 against the bytes Kafka 4.4.0's `kafka-storage format`
//! wrote (`golden/kafka-4.4.0-format/`, clock-derived fields normalised).

#[path = "support/checkpoint_bytes.rs"]
mod checkpoint_bytes;

use kraft_controller::{
    cli::{
        dump_log,
        format::{FormatArgs, FormatOutcome, execute, plan},
    },
    record::{ControlRecord, KRaftVersionRecord, encode_control_batch},
};

const NOW_MS: i64 = 1_795_998_093_000; // Mon Nov 30 00:21:33 UTC 2026

#[test]
fn a_formatted_directory_dumps_to_this_exact_text() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    let args = FormatArgs {
        metadata_log_dir: Some(dir.clone()),
        node_id: Some(1),
        cluster_id: Some("MkU3OEVBNTcwNTJENDM2Qg".into()),
        initial_controllers: Some(
            "1@c1:9093:Yn6jBgNWRcWUqv7Dz5TlZQ,2@c2:9093:bkIhY8PmQGiDnQJRUm2Rjg".into(),
        ),
        ..FormatArgs::default()
    };
    let plan = plan(&args).expect("valid");
    assert_eq!(
        execute(&plan, NOW_MS).expect("formats"),
        FormatOutcome::Formatted
    );
    let (text, ok) = dump_log::dump(&[dir]);
    assert!(ok);
    let expected = "\
== meta.properties
  #
  #Mon Nov 30 00:21:33 UTC 2026
  cluster.id=MkU3OEVBNTcwNTJENDM2Qg
  directory.id=Yn6jBgNWRcWUqv7Dz5TlZQ
  node.id=1
  version=1
== bootstrap.checkpoint
batch base_offset=0 last_offset=0 count=1 epoch=0 control=true crc=0x483d7a4f size=83 position=0 timestamp=1795998093000
  offset=0 SNAPSHOT_HEADER version=0 last_contained_log_timestamp=0
batch base_offset=1 last_offset=4 count=4 epoch=0 control=false crc=0x87821ce5 size=197 position=83 timestamp=1795998093000
  offset=1 FEATURE_LEVEL_RECORD(12) version=0 name=metadata.version feature_level=27
  offset=2 FEATURE_LEVEL_RECORD(12) version=0 name=eligible.leader.replicas.version feature_level=1
  offset=3 FEATURE_LEVEL_RECORD(12) version=0 name=group.version feature_level=1
  offset=4 FEATURE_LEVEL_RECORD(12) version=0 name=transaction.version feature_level=2
batch base_offset=5 last_offset=5 count=1 epoch=0 control=true crc=0x50a749f8 size=75 position=280 timestamp=1795998093000
  offset=5 SNAPSHOT_FOOTER version=0
== __cluster_metadata-0/
== 00000000000000000000-0000000000.checkpoint
batch base_offset=0 last_offset=2 count=3 epoch=0 control=true crc=0xbd85993c size=204 position=0 timestamp=1795998093000
  offset=0 SNAPSHOT_HEADER version=0 last_contained_log_timestamp=1795998093000
  offset=1 KRAFT_VERSION version=0 kraft_version=1
  offset=2 KRAFT_VOTERS version=0 voters=[{id=1 directory_id=Yn6jBgNWRcWUqv7Dz5TlZQ endpoints=[CONTROLLER://c1:9093] kraft_version=0..1}, {id=2 directory_id=bkIhY8PmQGiDnQJRUm2Rjg endpoints=[CONTROLLER://c2:9093] kraft_version=0..1}]
batch base_offset=3 last_offset=3 count=1 epoch=0 control=true crc=0x50a749f8 size=75 position=204 timestamp=1795998093000
  offset=3 SNAPSHOT_FOOTER version=0
";
    assert_eq!(text, expected);
}

/// Golden bytes of a control batch holding one KRaftVersion record, field by
/// field (Kafka's `DefaultRecordBatch` and `DefaultRecord`).
#[test]
fn a_kraft_version_control_batch_golden_bytes() {
    let batch = encode_control_batch(
        5,
        3,
        1_700_000_000_000,
        &[ControlRecord::KRaftVersion(
            KRaftVersionRecord::default()
                .with_version(0)
                .with_k_raft_version(1),
        )],
    )
    .expect("encodes");
    let expected: Vec<u8> = [
        &[0, 0, 0, 0, 0, 0, 0, 5][..],       // baseOffset 5
        &[0, 0, 0, 0],                       // batchLength (after this field): checked below
        &[0, 0, 0, 3],                       // partitionLeaderEpoch 3
        &[2],                                // magic 2
        &[0, 0, 0, 0],                       // crc32c of attributes..end: checked below
        &[0, 0x20],    // attributes: bit 5 control, no compression, CreateTime
        &[0, 0, 0, 0], // lastOffsetDelta 0
        &1_700_000_000_000i64.to_be_bytes(), // baseTimestamp
        &1_700_000_000_000i64.to_be_bytes(), // maxTimestamp
        &[0xff; 8],    // producerId -1
        &[0xff; 2],    // producerEpoch -1
        &[0xff; 4],    // baseSequence -1
        &[0, 0, 0, 1], // recordsCount 1
        // The record (DefaultRecord), varints zig-zag encoded:
        &[0x1e],       // length 15 (bytes after this varint)
        &[0],          // attributes
        &[0],          // timestampDelta 0
        &[0],          // offsetDelta 0
        &[0x08],       // keyLength 4
        &[0, 0, 0, 5], // key: version 0, type 5 (KRAFT_VERSION)
        &[0x0a],       // valueLength 5
        &[0, 0],       // KRaftVersionRecord.Version 0
        &[0, 1],       // KRaftVersionRecord.KRaftVersion 1
        &[0],          // no tagged fields
        &[0],          // headers count 0
    ]
    .concat();
    let mut expected = expected;
    let length = (expected.len() - 12) as i32;
    expected[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c::crc32c(&expected[21..]);
    expected[17..21].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(&batch[..], &expected[..]);
    assert_eq!(length, 65);
}

/// Formats `dir` through the library with `args` (node 1, cluster id
/// `MkU3OEVBNTcwNTJENDM2Qk`, listener `CONTROLLER://127.0.0.1:19093`) at
/// 4.4-IV2, as the golden files of `golden/kafka-4.4.0-format/` were made by
/// Kafka 4.4.0's `StorageTool format --release-version 4.4-IV2`.
fn format_at_4_4_iv2(dir: &std::path::Path, args: FormatArgs) {
    let config = dir.with_extension("properties");
    std::fs::write(
        &config,
        "process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n\
         listeners=CONTROLLER://127.0.0.1:19093\ncontroller.quorum.bootstrap.servers=127.0.0.1:19093\n",
    )
    .expect("write properties");
    let args = FormatArgs {
        config: Some(config),
        metadata_log_dir: Some(dir.to_path_buf()),
        cluster_id: Some("MkU3OEVBNTcwNTJENDM2Qk".into()),
        release_version: Some("4.4-IV2".into()),
        ..args
    };
    let plan = plan(&args).expect("valid");
    assert_eq!(
        execute(&plan, NOW_MS).expect("formats"),
        FormatOutcome::Formatted
    );
    assert!(
        !dir.join("bootstrap.checkpoint").exists(),
        "KIP-1170: no bootstrap.checkpoint at 4.4-IV2"
    );
}

/// Our 0-0 checkpoint of `dir` against Kafka 4.4.0's `golden` file.
fn assert_zero_checkpoint_is_kafkas(dir: &std::path::Path, golden: &str) {
    let ours =
        std::fs::read(dir.join("__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"))
            .expect("our 0-0 checkpoint");
    let theirs = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/kafka-4.4.0-format")
            .join(golden),
    )
    .expect("the golden file");
    if let Some(diff) = checkpoint_bytes::difference(golden, &ours, &theirs) {
        panic!("{diff}");
    }
}

// KIP-1170: Kafka 4.4.0's format writes the bootstrap records as the data
// batch of the 0-0 checkpoint, after SnapshotHeader, KRaftVersion 1 and
// Voters, in every mode.
#[test]
fn standalone_at_4_4_iv2_writes_kafka_4_4_0s_zero_checkpoint_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("sa");
    format_at_4_4_iv2(
        &dir,
        FormatArgs {
            standalone: true,
            // The directory id Kafka's format picked for the golden file.
            directory_id: Some("U6v4Nf1uSwKsCRQuUaaL_w".into()),
            ..FormatArgs::default()
        },
    );
    assert_zero_checkpoint_is_kafkas(&dir, "standalone.checkpoint");
}

#[test]
fn initial_controllers_at_4_4_iv2_writes_kafka_4_4_0s_zero_checkpoint_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ic");
    format_at_4_4_iv2(
        &dir,
        FormatArgs {
            initial_controllers: Some(
                "1@127.0.0.1:19093:LaBaIMiMRmy8YSD1cAd8Ew,2@127.0.0.1:19094:q6CGIHGkTStroizn5hrLMg"
                    .into(),
            ),
            ..FormatArgs::default()
        },
    );
    assert_zero_checkpoint_is_kafkas(&dir, "initial-controllers.checkpoint");
}

// Kafka 4.4.0 writes a 0-0 checkpoint with --no-initial-controllers too:
// KRaftVersion 1 and no Voters record, then the bootstrap records.
#[test]
fn no_initial_controllers_at_4_4_iv2_writes_kafka_4_4_0s_zero_checkpoint_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("nic");
    format_at_4_4_iv2(
        &dir,
        FormatArgs {
            no_initial_controllers: true,
            ..FormatArgs::default()
        },
    );
    assert_zero_checkpoint_is_kafkas(&dir, "no-initial-controllers.checkpoint");
}

/// The normaliser itself must see a difference that is not clock-derived:
/// one flipped byte of a record is reported with its batch and position.
#[test]
fn the_byte_comparison_names_the_batch_and_field_of_a_difference() {
    let theirs = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/kafka-4.4.0-format/no-initial-controllers.checkpoint"),
    )
    .expect("the golden file");
    assert_eq!(
        checkpoint_bytes::difference("f", &theirs, &theirs),
        None,
        "equal to itself"
    );
    let mut changed = theirs.clone();
    // Batch 0 is 99 bytes; the data batch starts at 99, its records at 160:
    // byte 170 is inside its first record.
    changed[170] ^= 1;
    let diff = checkpoint_bytes::difference("f", &changed, &theirs).expect("a difference");
    assert!(
        diff.contains("first difference at byte 170")
            && diff.contains("batch 1 (baseOffset 2, at byte 99), field records, byte 10"),
        "{diff}"
    );
    let mut producer = theirs;
    producer[99 + 43] ^= 1;
    let diff = checkpoint_bytes::difference("f", &changed, &producer).expect("a difference");
    assert!(diff.contains("field producerId"), "{diff}");
}
