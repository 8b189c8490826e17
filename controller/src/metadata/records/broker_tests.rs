//! Golden bytes of the broker records, made once with Kafka 4.4.0's own
//! serializer: `jshell --class-path "$(cat ~/.cache/kraftwerk/kafka-4.4.0.classpath)"`
//! building each record with Kafka's generated classes
//! (`org.apache.kafka.common.metadata.*`) and writing it with
//! `MetadataRecordSerde.INSTANCE.write(new ApiMessageAndVersion(record, v), ...)`
//! into a `ByteBufferAccessor`, printed as hex. The records: broker 1,
//! incarnation 00010203-0405-0607-0809-0a0b0c0d0e0f, epoch 42, endpoint
//! PLAINTEXT://b-1:9092, feature metadata.version 7-27; "full" adds rack
//! `r1`, fenced and in controlled shutdown, log dirs
//! 11111111-1111-1111-2222-222222222222 and 33333333-3333-3333-4444-444444444444
//! (v3+) and cordoned 3333...4444 (v4). The script is in docs/metadata.md.

use super::*;
use crate::metadata::records::FramedRecord;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

const REGISTER_V0_MIN: &str = "01000000000001000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b00000100";
const REGISTER_V1_MIN: &str = "01000100000001000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b0000010000";
const REGISTER_V2_MIN: &str = "0100020000000100000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b0000010000";
const REGISTER_V3_MIN: &str = "0100030000000100000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b0000010000";
const REGISTER_V4_MIN: &str = "0100040000000100000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b0000010000";
const REGISTER_V1_FULL: &str = "01000100000001000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b00037231010100";
const REGISTER_V2_FULL: &str = "0100020000000100000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b00037231010100";
const REGISTER_V3_FULL: &str = "0100030000000100000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b000372310101010021031111111111111111222222222222222233333333333333334444444444444444";
const REGISTER_V4_FULL: &str = "0100040000000100000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b00037231010102002103111111111111111122222222222222223333333333333333444444444444444401110233333333333333334444444444444444";
const REGISTER_V4_CORDONED_EMPTY: &str = "0100040000000100000102030405060708090a0b0c0d0e0f000000000000002a020a504c41494e5445585404622d31238400000002116d657461646174612e76657273696f6e0007001b000372310101020021031111111111111111222222222222222233333333333333334444444444444444010101";
const UNREGISTER_V0: &str = "01010000000001000000000000002a00";
const FENCE_V0: &str = "01070000000001000000000000002a00";
const UNFENCE_V0: &str = "01080000000001000000000000002a00";
const CHANGE_V0_FENCE: &str = "01110000000001000000000000002a01000101";
const CHANGE_V1_FENCE: &str = "01110100000001000000000000002a01000101";
const CHANGE_V2_FENCE: &str = "01110200000001000000000000002a01000101";
const CHANGE_V3_FENCE: &str = "01110300000001000000000000002a01000101";
const CHANGE_V0_UNFENCE: &str = "01110000000001000000000000002a010001ff";
const CHANGE_V3_UNFENCE: &str = "01110300000001000000000000002a010001ff";
const CHANGE_V1_SHUTDOWN: &str = "01110100000001000000000000002a01010101";
const CHANGE_V3_SHUTDOWN: &str = "01110300000001000000000000002a01010101";
const CHANGE_V2_DIRS: &str =
    "01110200000001000000000000002a0102110211111111111111112222222222222222";
const CHANGE_V3_DIRS: &str = "01110300000001000000000000002a020211021111111111111111222222222222222203110233333333333333334444444444444444";

const D1: Uuid = Uuid::from_u128(0x1111_1111_1111_1111_2222_2222_2222_2222);
const D2: Uuid = Uuid::from_u128(0x3333_3333_3333_3333_4444_4444_4444_4444);

fn register(full: bool, version: u32) -> RegisterBrokerRecord {
    RegisterBrokerRecord {
        broker_id: 1,
        is_migrating_zk_broker: false,
        incarnation_id: Uuid::from_u128(0x0001_0203_0405_0607_0809_0a0b_0c0d_0e0f),
        broker_epoch: 42,
        endpoints: vec![BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: "b-1".into(),
            port: 9092,
            security_protocol: 0,
        }],
        features: vec![BrokerFeature {
            name: "metadata.version".into(),
            min_supported_version: 7,
            max_supported_version: 27,
        }],
        rack: full.then(|| "r1".into()),
        fenced: true,
        in_controlled_shutdown: full,
        log_dirs: if full && version >= 3 {
            vec![D1, D2]
        } else {
            vec![]
        },
        cordoned_log_dirs: (full && version >= 4).then(|| vec![D2]),
    }
}

fn check_register(record: &RegisterBrokerRecord, version: u32, golden: &str) {
    let bytes = record.encode_framed(version);
    assert_eq!(hex(&bytes), golden, "v{version}");
    let framed = FramedRecord::decode(&unhex(golden)).expect("frame");
    assert_eq!((framed.api_key, framed.version), (0, version));
    let decoded = RegisterBrokerRecord::decode_message(&framed.message, version).expect("decodes");
    assert_eq!(&decoded, record, "v{version}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn register_broker_records_are_kafkas_bytes_at_every_version() {
    for (version, golden) in [
        (0, REGISTER_V0_MIN),
        (1, REGISTER_V1_MIN),
        (2, REGISTER_V2_MIN),
        (3, REGISTER_V3_MIN),
        (4, REGISTER_V4_MIN),
    ] {
        check_register(&register(false, version), version, golden);
    }
    for (version, golden) in [
        (1, REGISTER_V1_FULL),
        (2, REGISTER_V2_FULL),
        (3, REGISTER_V3_FULL),
        (4, REGISTER_V4_FULL),
    ] {
        check_register(&register(true, version), version, golden);
    }
    let mut empty_cordoned = register(true, 4);
    empty_cordoned.cordoned_log_dirs = Some(vec![]);
    check_register(&empty_cordoned, 4, REGISTER_V4_CORDONED_EMPTY);
}

#[test]
fn broker_epoch_records_are_kafkas_bytes() {
    let r = BrokerEpochRecord {
        broker_id: 1,
        broker_epoch: 42,
    };
    for (key, golden) in [
        (UNREGISTER_BROKER_RECORD_API_KEY, UNREGISTER_V0),
        (FENCE_BROKER_RECORD_API_KEY, FENCE_V0),
        (UNFENCE_BROKER_RECORD_API_KEY, UNFENCE_V0),
    ] {
        assert_eq!(hex(&r.encode_framed(key)), golden);
        let framed = FramedRecord::decode(&unhex(golden)).expect("frame");
        assert_eq!(framed.api_key, key);
        assert_eq!(BrokerEpochRecord::decode_message(&framed.message), Ok(r));
    }
}

#[test]
fn broker_registration_change_records_are_kafkas_bytes_at_every_version() {
    let base = BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 42,
        ..Default::default()
    };
    let fence = BrokerRegistrationChangeRecord {
        fenced: fencing_change::FENCE,
        ..base.clone()
    };
    let unfence = BrokerRegistrationChangeRecord {
        fenced: fencing_change::UNFENCE,
        ..base.clone()
    };
    let shutdown = BrokerRegistrationChangeRecord {
        in_controlled_shutdown: 1,
        ..base.clone()
    };
    let dirs2 = BrokerRegistrationChangeRecord {
        log_dirs: vec![D1],
        ..base.clone()
    };
    let dirs3 = BrokerRegistrationChangeRecord {
        cordoned_log_dirs: Some(vec![D2]),
        ..dirs2.clone()
    };
    for (record, version, golden) in [
        (&fence, 0, CHANGE_V0_FENCE),
        (&fence, 1, CHANGE_V1_FENCE),
        (&fence, 2, CHANGE_V2_FENCE),
        (&fence, 3, CHANGE_V3_FENCE),
        (&unfence, 0, CHANGE_V0_UNFENCE),
        (&unfence, 3, CHANGE_V3_UNFENCE),
        (&shutdown, 1, CHANGE_V1_SHUTDOWN),
        (&shutdown, 3, CHANGE_V3_SHUTDOWN),
        (&dirs2, 2, CHANGE_V2_DIRS),
        (&dirs3, 3, CHANGE_V3_DIRS),
    ] {
        assert_eq!(hex(&record.encode_framed(version)), golden, "v{version}");
        let framed = FramedRecord::decode(&unhex(golden)).expect("frame");
        assert_eq!((framed.api_key, framed.version), (17, version));
        assert_eq!(
            &BrokerRegistrationChangeRecord::decode_message(&framed.message, version)
                .expect("decodes"),
            record
        );
    }
}

#[test]
fn the_written_versions_are_kafka_4_4s_for_each_metadata_version() {
    // From Kafka 4.4.0's MetadataVersion.registerBrokerRecordVersion(), printed
    // for every MetadataVersion with jshell.
    for (level, version) in [
        (7, 1),
        (8, 2),
        (16, 2),
        (17, 3),
        (27, 3),
        (29, 3),
        (30, 4),
        (33, 4),
    ] {
        assert_eq!(
            register_broker_record_version(level),
            version,
            "level {level}"
        );
    }
    assert!(!directory_assignment_supported(16));
    assert!(directory_assignment_supported(17));
}

#[test]
fn truncated_broker_records_are_errors() {
    let bytes = unhex(REGISTER_V4_FULL);
    let framed = FramedRecord::decode(&bytes).expect("frame");
    for cut in [0, 3, 20, framed.message.len() - 1] {
        assert!(
            RegisterBrokerRecord::decode_message(&framed.message[..cut], 4).is_err(),
            "{cut}"
        );
    }
    assert!(BrokerEpochRecord::decode_message(&[0, 0, 0, 1, 0]).is_err());
    assert!(BrokerRegistrationChangeRecord::decode_message(&[0, 0, 0, 1], 0).is_err());
}
