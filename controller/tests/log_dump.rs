//! `kraft-controller dump-log` on a log segment: golden text for control and
//! data batches, and what it prints for a damaged file.

use std::process::Command;

use bytes::Bytes;
use kafka_protocol::messages::{BrokerId, LeaderChangeMessage, leader_change_message::Voter};
use kraft_controller::{
    log::{FileLog, FileLogConfig, ReplicatedLog},
    record::{ControlRecord, encode_control_batch, encode_data_batch},
};

const TS: i64 = 1_700_000_000_000;

fn write_log(dir: &std::path::Path) {
    let mut log = FileLog::open(dir, FileLogConfig::default()).expect("open");
    let leader_change = ControlRecord::LeaderChange(
        LeaderChangeMessage::default()
            .with_version(0)
            .with_leader_id(BrokerId(2))
            .with_voters(vec![
                Voter::default().with_voter_id(1),
                Voter::default().with_voter_id(2),
            ])
            .with_granting_voters(vec![Voter::default().with_voter_id(2)]),
    );
    log.append_as_leader(
        encode_control_batch(0, 0, TS, &[leader_change]).expect("enc"),
        4,
    )
    .expect("append");
    // A NoOpRecord (api key 20, version 0: only empty tagged fields) in
    // ApiMessageAndVersion framing, and a value that is not a metadata record.
    let no_op = Bytes::from_static(&[1, 20, 0, 0]);
    let raw = Bytes::from_static(b"not a metadata record");
    log.append_as_leader(encode_data_batch(0, 0, TS, &[no_op, raw]).expect("enc"), 4)
        .expect("append");
    log.flush().expect("flush");
}

#[test]
fn a_segment_dumps_to_this_exact_text() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write_log(tmp.path());
    let out = Command::new(env!("CARGO_BIN_EXE_kraft-controller"))
        .args(["dump-log"])
        .arg(tmp.path().join("00000000000000000000.log"))
        .output()
        .expect("runs");
    assert!(out.status.success());
    let expected = "\
== 00000000000000000000.log
batch base_offset=0 last_offset=0 count=1 epoch=4 control=true crc=0x49b5880e size=96 position=0 timestamp=1700000000000
  offset=0 LEADER_CHANGE version=0 leader_id=2 voters=[1,2] granting_voters=[2]
batch base_offset=1 last_offset=2 count=2 epoch=4 control=false crc=0x43a92949 size=100 position=96 timestamp=1700000000000
  offset=1 NO_OP_RECORD(20) version=0 bytes=00
  offset=2 value_size=21 value=6e6f742061206d657461646174612072…
";
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn a_damaged_segment_dumps_up_to_the_damage_and_exits_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write_log(tmp.path());
    let path = tmp.path().join("00000000000000000000.log");
    let mut bytes = std::fs::read(&path).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&path, &bytes).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_kraft-controller"))
        .arg("dump-log")
        .arg(tmp.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("LEADER_CHANGE"), "{text}");
    assert!(text.contains("error at position"), "{text}");
    assert!(text.contains("corrupt record batch at offset 1"), "{text}");
}

#[test]
fn a_register_controller_record_dumps_by_name_with_its_fields() {
    use kraft_controller::metadata::records::{
        ControllerEndpoint, ControllerFeature, RegisterControllerRecord,
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(tmp.path(), FileLogConfig::default()).expect("open");
    let record = RegisterControllerRecord {
        controller_id: 1,
        incarnation_id: uuid::Uuid::from_u128(1),
        zk_migration_ready: false,
        endpoints: vec![ControllerEndpoint {
            name: "CONTROLLER".into(),
            host: "c-1".into(),
            port: 9093,
            security_protocol: 0,
        }],
        features: vec![ControllerFeature {
            name: "kraft.version".into(),
            min_supported_version: 0,
            max_supported_version: 1,
        }],
    }
    .encode_framed();
    log.append_as_leader(encode_data_batch(0, 0, TS, &[record]).expect("enc"), 1)
        .expect("append");
    log.flush().expect("flush");
    let out = Command::new(env!("CARGO_BIN_EXE_kraft-controller"))
        .args(["dump-log"])
        .arg(tmp.path().join("00000000000000000000.log"))
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "offset=0 REGISTER_CONTROLLER_RECORD(27) version=0 controller_id=1 \
             incarnation_id=AAAAAAAAAAAAAAAAAAAAAQ zk_migration_ready=false \
             endpoints=[CONTROLLER://c-1:9093 (security_protocol=0)] features=[kraft.version:0-1]"
        ),
        "{text}"
    );
}

#[test]
fn the_bootstrap_records_of_the_first_leader_dump_by_name_with_their_fields() {
    use kraft_controller::metadata::{bootstrap::BootstrapMetadata, records::FeatureLevelRecord};
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(tmp.path(), FileLogConfig::default()).expect("open");
    let level = |name: &str, feature_level| {
        FeatureLevelRecord {
            name: name.into(),
            feature_level,
        }
        .encode_framed()
    };
    let records = BootstrapMetadata::from_records(
        vec![
            level("metadata.version", 27),
            level("eligible.leader.replicas.version", 1),
        ],
        "test",
    )
    .expect("bootstrap")
    .activation_records(1);
    log.append_as_leader(encode_data_batch(0, 0, TS, &records).expect("enc"), 1)
        .expect("append");
    log.flush().expect("flush");
    let out = Command::new(env!("CARGO_BIN_EXE_kraft-controller"))
        .args(["dump-log"])
        .arg(tmp.path().join("00000000000000000000.log"))
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  offset="))
        .collect();
    assert_eq!(
        lines,
        vec![
            "  offset=0 BEGIN_TRANSACTION_RECORD(23) version=0 name=Bootstrap records",
            "  offset=1 FEATURE_LEVEL_RECORD(12) version=0 name=metadata.version feature_level=27",
            "  offset=2 FEATURE_LEVEL_RECORD(12) version=0 name=eligible.leader.replicas.version feature_level=1",
            "  offset=3 CONFIG_RECORD(4) version=0 resource_type=4 resource_name=\"\" name=min.insync.replicas value=1",
            "  offset=4 END_TRANSACTION_RECORD(24) version=0",
        ],
        "{text}"
    );
}
