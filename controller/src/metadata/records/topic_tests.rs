//! Golden bytes of the topic records, made once with Kafka 4.4.0's own
//! serializer: `jshell --class-path "$(cat ~/.cache/kraftwerk/kafka-4.4.0.classpath)"
//! docs/topic-records-golden.jsh`, which builds each record with Kafka's
//! generated classes (`org.apache.kafka.common.metadata.*`), writes it with
//! `MetadataRecordSerde.INSTANCE.write(new ApiMessageAndVersion(record, v), ...)`
//! and prints the hex. Topic `foo`, id 00010203-0405-0607-0809-0a0b0c0d0e0f,
//! partition 3; the directories 1111..2222 and 3333..4444.

use super::*;
use crate::metadata::records::FramedRecord;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

const TOPIC_V0: &str = "01020004666f6f000102030405060708090a0b0c0d0e0f00";
const REMOVE_V0: &str = "010900000102030405060708090a0b0c0d0e0f00";
const CLEAR_V0: &str = "011c0004666f6f00";
const CLEAR_V0_ALL: &str = "011c000100";
const PARTITION_V0_MIN: &str = "01030000000003000102030405060708090a0b0c0d0e0f04000000010000000200000003030000000100000002010100000001000000050000000700";
const PARTITION_V0_FULL: &str = "01030000000003000102030405060708090a0b0c0d0e0f0400000001000000020000000302000000010200000003020000000400000001000000050000000701000101";
const CHANGE_V0_LEADER: &str =
    "01050000000003000102030405060708090a0b0c0d0e0f020009030000000200000003010400000002";
const CHANGE_V0_OFFLINE: &str = "01050000000003000102030405060708090a0b0c0d0e0f010104ffffffff";
const CHANGE_V0_FULL: &str = "01050000000003000102030405060708090a0b0c0d0e0f060005020000000101040000000102090300000001000000040305020000000204050200000004050100";
const PARTITION_V1_MIN: &str = "01030100000003000102030405060708090a0b0c0d0e0f0400000001000000020000000303000000010000000201010000000100000005000000070411111111111111112222222222222222333333333333333344444444444444441111111111111111222222222222222200";
const PARTITION_V1_FULL: &str = "01030100000003000102030405060708090a0b0c0d0e0f040000000100000002000000030200000001020000000302000000040000000100000005000000070411111111111111112222222222222222333333333333333344444444444444441111111111111111222222222222222201000101";
const CHANGE_V1_LEADER: &str =
    "01050100000003000102030405060708090a0b0c0d0e0f020009030000000200000003010400000002";
const CHANGE_V1_OFFLINE: &str = "01050100000003000102030405060708090a0b0c0d0e0f010104ffffffff";
const CHANGE_V1_FULL: &str = "01050100000003000102030405060708090a0b0c0d0e0f0700050200000001010400000001020903000000010000000403050200000002040502000000040501000821031111111111111111222222222222222233333333333333334444444444444444";
const PARTITION_V2_MIN: &str = "01030200000003000102030405060708090a0b0c0d0e0f0400000001000000020000000303000000010000000201010000000100000005000000070411111111111111112222222222222222333333333333333344444444444444441111111111111111222222222222222200";
const PARTITION_V2_FULL: &str = "01030200000003000102030405060708090a0b0c0d0e0f0400000001000000020000000302000000010200000003020000000400000001000000050000000704111111111111111122222222222222223333333333333333444444444444444411111111111111112222222222222222030001010105020000000202050200000003";
const CHANGE_V2_LEADER: &str =
    "01050200000003000102030405060708090a0b0c0d0e0f020009030000000200000003010400000002";
const CHANGE_V2_OFFLINE: &str = "01050200000003000102030405060708090a0b0c0d0e0f010104ffffffff";
const CHANGE_V2_FULL: &str = "01050200000003000102030405060708090a0b0c0d0e0f090005020000000101040000000102090300000001000000040305020000000204050200000004050100060101070502000000020821031111111111111111222222222222222233333333333333334444444444444444";

const T: Uuid = Uuid::from_u128(0x0001_0203_0405_0607_0809_0a0b_0c0d_0e0f);
const D1: Uuid = Uuid::from_u128(0x1111_1111_1111_1111_2222_2222_2222_2222);
const D2: Uuid = Uuid::from_u128(0x3333_3333_3333_3333_4444_4444_4444_4444);

fn message(golden: &str, api_key: u32, version: u32) -> bytes::Bytes {
    let framed = FramedRecord::decode(&unhex(golden)).expect("frame");
    assert_eq!((framed.api_key, framed.version), (api_key, version));
    framed.message
}

#[test]
fn topic_remove_and_clear_elr_records_are_kafkas_bytes() {
    let topic = TopicRecord {
        name: "foo".into(),
        topic_id: T,
    };
    assert_eq!(topic.encode_framed().to_vec(), unhex(TOPIC_V0));
    assert_eq!(
        TopicRecord::decode_message(&message(TOPIC_V0, 2, 0)).expect("decodes"),
        topic
    );
    let remove = RemoveTopicRecord { topic_id: T };
    assert_eq!(remove.encode_framed().to_vec(), unhex(REMOVE_V0));
    assert_eq!(
        RemoveTopicRecord::decode_message(&message(REMOVE_V0, 9, 0)).expect("decodes"),
        remove
    );
    for (name, golden) in [("foo", CLEAR_V0), ("", CLEAR_V0_ALL)] {
        let clear = ClearElrRecord {
            topic_name: name.into(),
        };
        assert_eq!(clear.encode_framed().to_vec(), unhex(golden));
        assert_eq!(
            ClearElrRecord::decode_message(&message(golden, 28, 0)).expect("decodes"),
            clear
        );
    }
}

fn partition(full: bool, version: u32) -> PartitionRecord {
    PartitionRecord {
        partition_id: 3,
        topic_id: T,
        replicas: vec![1, 2, 3],
        isr: if full { vec![1] } else { vec![1, 2] },
        removing_replicas: if full { vec![3] } else { vec![] },
        adding_replicas: if full { vec![4] } else { vec![] },
        leader: 1,
        leader_recovery_state: i8::from(full),
        leader_epoch: 5,
        partition_epoch: 7,
        directories: if version >= 1 {
            vec![D1, D2, D1]
        } else {
            vec![]
        },
        eligible_leader_replicas: if full && version >= 2 {
            vec![2]
        } else {
            vec![]
        },
        last_known_elr: if full && version >= 2 {
            vec![3]
        } else {
            vec![]
        },
    }
}

#[test]
fn partition_records_of_every_version_are_kafkas_bytes() {
    for (version, min, full) in [
        (0, PARTITION_V0_MIN, PARTITION_V0_FULL),
        (1, PARTITION_V1_MIN, PARTITION_V1_FULL),
        (2, PARTITION_V2_MIN, PARTITION_V2_FULL),
    ] {
        for (is_full, golden) in [(false, min), (true, full)] {
            let record = partition(is_full, version);
            assert_eq!(
                record.encode_framed(version).to_vec(),
                unhex(golden),
                "v{version} full={is_full}"
            );
            let decoded = PartitionRecord::decode_message(&message(golden, 3, version), version)
                .expect("decodes");
            assert_eq!(decoded, record, "v{version} full={is_full}");
        }
    }
}

fn changes(version: u32) -> [PartitionChangeRecord; 3] {
    let mut leader = PartitionChangeRecord::new(T, 3);
    leader.isr = Some(vec![2, 3]);
    leader.leader = 2;
    let mut offline = PartitionChangeRecord::new(T, 3);
    offline.leader = NO_LEADER;
    let mut full = PartitionChangeRecord::new(T, 3);
    full.isr = Some(vec![1]);
    full.leader = 1;
    full.replicas = Some(vec![1, 4]);
    full.removing_replicas = Some(vec![2]);
    full.adding_replicas = Some(vec![4]);
    full.leader_recovery_state = 0;
    if version >= 1 {
        full.directories = Some(vec![D1, D2]);
    }
    if version >= 2 {
        full.eligible_leader_replicas = Some(vec![]);
        full.last_known_elr = Some(vec![2]);
    }
    [leader, offline, full]
}

#[test]
fn partition_change_records_of_every_version_are_kafkas_bytes() {
    for (version, goldens) in [
        (0, [CHANGE_V0_LEADER, CHANGE_V0_OFFLINE, CHANGE_V0_FULL]),
        (1, [CHANGE_V1_LEADER, CHANGE_V1_OFFLINE, CHANGE_V1_FULL]),
        (2, [CHANGE_V2_LEADER, CHANGE_V2_OFFLINE, CHANGE_V2_FULL]),
    ] {
        for (record, golden) in changes(version).iter().zip(goldens) {
            assert_eq!(
                record.encode_framed(version).to_vec(),
                unhex(golden),
                "v{version}"
            );
            let decoded =
                PartitionChangeRecord::decode_message(&message(golden, 5, version), version)
                    .expect("decodes");
            assert_eq!(&decoded, record, "v{version}");
        }
    }
}

#[test]
fn the_record_version_follows_the_metadata_version() {
    assert_eq!(partition_record_version(7), 0);
    assert_eq!(partition_record_version(16), 0);
    assert_eq!(partition_record_version(17), 1);
    assert_eq!(partition_record_version(22), 1);
    assert_eq!(partition_record_version(23), 2);
    assert_eq!(partition_record_version(27), 2);
}

#[test]
fn a_truncated_partition_record_is_an_error() {
    let golden = unhex(PARTITION_V2_FULL);
    let framed = FramedRecord::decode(&golden).expect("frame");
    for cut in [0, 5, 30, framed.message.len() - 1] {
        assert!(
            PartitionRecord::decode_message(&framed.message[..cut], 2).is_err(),
            "{cut}"
        );
    }
}
