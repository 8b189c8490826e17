//! Tables of (configs, request) -> (records, answers) for
//! [`ConfigurationControl`], each case as Kafka's
//! `ConfigurationControlManager` and `ControllerApis` decide it.

use super::*;
use crate::metadata::records::FramedRecord;

struct World {
    topics: Vec<&'static str>,
    nodes: Vec<i32>,
}

impl ResourceExistence for World {
    fn topic_exists(&self, name: &str) -> bool {
        self.topics.contains(&name)
    }
    fn node_exists(&self, id: i32) -> bool {
        self.nodes.contains(&id)
    }
}

const WORLD: World = World {
    topics: Vec::new(),
    nodes: Vec::new(),
};

fn world() -> World {
    World {
        topics: vec!["t"],
        nodes: vec![1],
    }
}

fn control(initial: &[(i8, &str, &str, &str)]) -> ConfigurationControl {
    let mut image = MetadataImage::default();
    for (i, (t, r, k, v)) in initial.iter().enumerate() {
        let record = ConfigRecord {
            resource_type: *t,
            resource_name: (*r).into(),
            name: (*k).into(),
            value: Some((*v).into()),
        };
        image
            .apply_record(i as i64, &record.encode_framed())
            .expect("applies");
    }
    ConfigurationControl::activate(&image)
}

fn records(d: &ConfigsDecision) -> Vec<(String, Option<String>)> {
    d.records
        .iter()
        .map(|b| {
            let f = FramedRecord::decode(b).expect("frame");
            let r = ConfigRecord::decode_message(&f.message).expect("decodes");
            (r.name, r.value)
        })
        .collect()
}

fn set(k: &str, v: &str) -> (String, AlterOp) {
    (k.into(), AlterOp::Set(Some(v.into())))
}

fn topic(changes: Vec<(String, AlterOp)>) -> Vec<IncrementalResource> {
    vec![(CONFIG_RESOURCE_TYPE_TOPIC, "t".into(), changes)]
}

fn error_of(d: &ConfigsDecision, i: usize) -> Option<ResponseError> {
    d.results[i].2.as_ref().err().map(|(e, _)| *e)
}

#[test]
fn set_and_delete_write_config_records_and_the_next_request_sees_them() {
    let mut c = control(&[(2, "t", "retention.ms", "1000")]);
    let d = c.incremental_alter(
        topic(vec![
            set("cleanup.policy", "compact"),
            ("retention.ms".into(), AlterOp::Delete),
        ]),
        false,
        &world(),
    );
    assert_eq!(d.results, vec![(2, "t".into(), Ok(()))]);
    assert_eq!(
        records(&d),
        vec![
            ("cleanup.policy".into(), Some("compact".into())),
            ("retention.ms".into(), None)
        ]
    );
    // Uncommitted, but the speculative state has it: setting it again to
    // the same value writes nothing for a topic.
    let d = c.incremental_alter(
        topic(vec![set("cleanup.policy", "compact")]),
        false,
        &world(),
    );
    assert!(d.records.is_empty());
    assert_eq!(c.configs().of(2, "t").len(), 1);
}

#[test]
fn append_and_subtract_work_on_list_keys_from_their_default_and_nowhere_else() {
    let mut c = control(&[]);
    let d = c.incremental_alter(
        topic(vec![(
            "cleanup.policy".into(),
            AlterOp::Append("compact".into()),
        )]),
        false,
        &world(),
    );
    // Kafka's getParts starts from the default, delete.
    assert_eq!(
        records(&d),
        vec![("cleanup.policy".into(), Some("delete,compact".into()))]
    );
    let d = c.incremental_alter(
        topic(vec![(
            "cleanup.policy".into(),
            AlterOp::Subtract("delete".into()),
        )]),
        false,
        &world(),
    );
    assert_eq!(
        records(&d),
        vec![("cleanup.policy".into(), Some("compact".into()))]
    );
    let d = c.incremental_alter(
        topic(vec![("retention.ms".into(), AlterOp::Append("5".into()))]),
        false,
        &world(),
    );
    assert_eq!(
        d.results[0].2,
        Err((
            ResponseError::InvalidConfig,
            "Can't APPEND to key retention.ms because its type is not LIST.".into()
        ))
    );
    assert!(d.records.is_empty());
    let d = c.incremental_alter(
        vec![(
            CONFIG_RESOURCE_TYPE_BROKER,
            "".into(),
            vec![(
                "ssl.enabled.protocols".into(),
                AlterOp::Subtract("TLSv1.2".into()),
            )],
        )],
        false,
        &world(),
    );
    assert_eq!(
        records(&d),
        vec![("ssl.enabled.protocols".into(), Some("TLSv1.3".into()))]
    );
}

#[test]
fn bad_requests_get_kafkas_errors_per_resource_and_change_nothing() {
    let mut c = control(&[]);
    type Case = (i8, &'static str, Vec<(String, AlterOp)>, ResponseError);
    let cases: Vec<Case> = vec![
        (
            2,
            "nope",
            vec![set("retention.ms", "1")],
            ResponseError::UnknownTopicOrPartition,
        ),
        (
            2,
            "t",
            vec![set("retention.ms", "x")],
            ResponseError::InvalidConfig,
        ),
        (
            2,
            "t",
            vec![set("no.such.key", "1")],
            ResponseError::InvalidConfig,
        ),
        (
            2,
            "",
            vec![set("retention.ms", "1")],
            ResponseError::InvalidRequest,
        ),
        (2, "bad name", vec![], ResponseError::InvalidTopicException),
        (4, "x", vec![set("a", "1")], ResponseError::InvalidRequest),
        (4, "-1", vec![set("a", "1")], ResponseError::InvalidRequest),
        (
            4,
            "7",
            vec![set("a", "1")],
            ResponseError::BrokerIdNotRegistered,
        ),
        (99, "t", vec![], ResponseError::UnsupportedVersion),
        (32, "g", vec![], ResponseError::InvalidRequest),
    ];
    for (t, name, changes, expected) in cases {
        let d = c.incremental_alter(vec![(t, name.into(), changes)], false, &world());
        assert_eq!(
            error_of(&d, 0),
            Some(expected),
            "{t} {name:?}: {:?}",
            d.results
        );
        assert!(d.records.is_empty());
    }
    assert!(c.configs().resources().is_empty());
    // Unknown topic message, as Kafka's existence checker says it.
    let d = c.incremental_alter(
        vec![(2, "nope".into(), vec![set("retention.ms", "1")])],
        false,
        &WORLD,
    );
    assert_eq!(
        d.results[0].2,
        Err((
            ResponseError::UnknownTopicOrPartition,
            "The topic 'nope' does not exist.".into()
        ))
    );
}

#[test]
fn a_duplicate_resource_is_refused_once_and_the_others_still_apply() {
    let mut c = control(&[]);
    let d = c.incremental_alter(
        vec![
            (2, "t".into(), vec![set("retention.ms", "1")]),
            (4, "".into(), vec![set("log.cleaner.threads", "2")]),
            (2, "t".into(), vec![set("retention.ms", "2")]),
            (2, "t".into(), vec![set("retention.ms", "3")]),
        ],
        false,
        &world(),
    );
    assert_eq!(d.results.len(), 2);
    assert_eq!(
        d.results[0],
        (
            2,
            "t".into(),
            Err((ResponseError::InvalidRequest, "Duplicate resource.".into()))
        )
    );
    assert_eq!(d.results[1], (4, "".into(), Ok(())));
    assert_eq!(
        records(&d),
        vec![("log.cleaner.threads".into(), Some("2".into()))]
    );
}

#[test]
fn validate_only_answers_but_writes_and_changes_nothing() {
    let mut c = control(&[]);
    let d = c.incremental_alter(topic(vec![set("retention.ms", "1")]), true, &world());
    assert_eq!(d.results[0].2, Ok(()));
    assert!(d.records.is_empty());
    assert!(c.configs().resources().is_empty());
}

// KAFKA-14136: a broker resource gets its record even when unchanged.
#[test]
fn a_broker_config_is_written_even_when_unchanged_and_a_node_id_must_exist() {
    let mut c = control(&[(4, "1", "log.cleaner.threads", "2")]);
    let d = c.incremental_alter(
        vec![(4, "1".into(), vec![set("log.cleaner.threads", "2")])],
        false,
        &world(),
    );
    assert_eq!(
        records(&d),
        vec![("log.cleaner.threads".into(), Some("2".into()))]
    );
}

#[test]
fn legacy_alter_configs_replace_every_key_of_the_resource() {
    let mut c = control(&[
        (2, "t", "retention.ms", "1000"),
        (2, "t", "segment.ms", "5"),
    ]);
    let d = c.legacy_alter(
        vec![(
            2,
            "t".into(),
            vec![
                ("retention.ms".into(), Some("1000".into())),
                ("cleanup.policy".into(), Some("compact".into())),
            ],
        )],
        false,
        &world(),
    );
    assert_eq!(d.results[0].2, Ok(()));
    assert_eq!(
        records(&d),
        vec![
            ("cleanup.policy".into(), Some("compact".into())),
            ("segment.ms".into(), None)
        ]
    );
    let d = c.legacy_alter(
        vec![(
            2,
            "t".into(),
            vec![("segment.bytes".into(), Some("1".into()))],
        )],
        false,
        &world(),
    );
    assert_eq!(error_of(&d, 0), Some(ResponseError::InvalidConfig));
    assert_eq!(c.configs().of(2, "t").len(), 2);
}

// Kafka 4.4's validateAlterConfig: value size and the ELR min.insync.replicas rules.
#[test]
fn oversized_values_and_min_isr_changes_under_elr_are_invalid_config() {
    let mut c = control(&[]);
    let big = "x".repeat(MAX_CONFIG_VALUE_CHARS + 1);
    let d = c.incremental_alter(topic(vec![set("retention.ms", &big)]), false, &world());
    let (error, message) = d.results[0].2.clone().expect_err("too long");
    assert_eq!(error, ResponseError::InvalidConfig);
    assert!(message.contains("maximum value size of 32767"), "{message}");
    c.elr_enabled = true;
    let d = c.incremental_alter(
        vec![(4, "1".into(), vec![set("min.insync.replicas", "2")])],
        false,
        &world(),
    );
    assert_eq!(
        d.results[0].2,
        Err((
            ResponseError::InvalidConfig,
            "Broker-level min.insync.replicas cannot be altered while ELR is enabled.".into()
        ))
    );
    let d = c.incremental_alter(
        vec![(
            4,
            "".into(),
            vec![("min.insync.replicas".into(), AlterOp::Delete)],
        )],
        false,
        &world(),
    );
    assert_eq!(error_of(&d, 0), Some(ResponseError::InvalidConfig));
    let d = c.incremental_alter(
        vec![(4, "".into(), vec![set("min.insync.replicas", "2")])],
        false,
        &world(),
    );
    assert_eq!(d.results[0].2, Ok(()));
}

#[test]
fn replayed_records_of_other_managers_reach_the_configs() {
    use crate::metadata::records::RemoveTopicRecord;
    let mut c = control(&[]);
    let created = ConfigRecord {
        resource_type: 2,
        resource_name: "t".into(),
        name: "retention.ms".into(),
        value: Some("5".into()),
    }
    .encode_framed();
    let id = uuid::Uuid::from_u128(7);
    assert!(
        c.replay(&[created], &BTreeMap::new()),
        "a ConfigRecord changes the configs"
    );
    assert_eq!(c.configs().of(2, "t")["retention.ms"], "5");
    let removed = RemoveTopicRecord { topic_id: id }.encode_framed();
    assert!(c.replay(&[removed], &BTreeMap::from([(id, "t".to_owned())])));
    assert!(c.configs().of(2, "t").is_empty());
}

/// The records of a decision, as (api key, resource or topic name, key).
fn kinds(d: &ConfigsDecision) -> Vec<(u32, String, String)> {
    use crate::metadata::records::{CLEAR_ELR_RECORD_API_KEY, ClearElrRecord};
    d.records
        .iter()
        .map(|b| {
            let f = FramedRecord::decode(b).expect("frame");
            if f.api_key == CLEAR_ELR_RECORD_API_KEY {
                let r = ClearElrRecord::decode_message(&f.message).expect("decodes");
                (f.api_key, r.topic_name, String::new())
            } else {
                let r = ConfigRecord::decode_message(&f.message).expect("decodes");
                (f.api_key, r.resource_name, r.name)
            }
        })
        .collect()
}

// Kafka 4.4's createClearElrRecordsAsNeeded: each min.insync.replicas
// record, set or deleted, unchanged or not for the cluster default, is
// followed (after all of the request's ConfigRecords) by a ClearElrRecord.
#[test]
fn min_isr_changes_under_elr_clear_the_elrs_chosen_under_the_old_value() {
    let mut c = control(&[
        (4, "", "min.insync.replicas", "2"),
        (2, "t", "min.insync.replicas", "2"),
    ]);
    let both = |topic_min_isr: &str| {
        vec![
            (
                2,
                "t".into(),
                vec![
                    set("min.insync.replicas", topic_min_isr),
                    set("retention.ms", "9"),
                ],
            ),
            (4, "".into(), vec![set("min.insync.replicas", "2")]),
        ]
    };
    let d = c.incremental_alter(both("1"), false, &world());
    assert!(d.results.iter().all(|r| r.2.is_ok()), "{:?}", d.results);
    assert!(
        kinds(&d).iter().all(|k| k.0 == 4),
        "no ClearElrRecord without ELR: {:?}",
        kinds(&d)
    );
    c.elr_enabled = true;
    assert!(
        c.incremental_alter(both("3"), true, &world())
            .records
            .is_empty(),
        "validateOnly writes nothing"
    );
    let d = c.incremental_alter(both("3"), false, &world());
    let min_isr = || "min.insync.replicas".to_owned();
    assert_eq!(
        kinds(&d),
        vec![
            (4, "t".into(), min_isr()),
            (4, "".into(), min_isr()),
            (28, "t".into(), String::new()),
            (28, "".into(), String::new()),
        ],
        "retention.ms is unchanged; the cluster's record is written unchanged"
    );
    let d = c.incremental_alter(both("3"), false, &world());
    assert_eq!(
        kinds(&d),
        vec![(4, "".into(), min_isr()), (28, "".into(), String::new())],
        "an unchanged topic value writes nothing"
    );
    // A legacy AlterConfigs leaving the topic's key out deletes it.
    let d = c.legacy_alter(vec![(2, "t".into(), vec![])], false, &world());
    assert_eq!(d.results[0].2, Ok(()));
    assert_eq!(
        kinds(&d),
        vec![
            (4, "t".into(), min_isr()),
            (4, "t".into(), "retention.ms".into()),
            (28, "t".into(), String::new()),
        ]
    );
    // Leaving the cluster default out would delete it: refused, nothing written.
    let d = c.legacy_alter(
        vec![(
            4,
            "".into(),
            vec![("log.retention.ms".into(), Some("5".into()))],
        )],
        false,
        &world(),
    );
    assert_eq!(
        d.results[0].2,
        Err((
            ResponseError::InvalidConfig,
            "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.".into()
        ))
    );
    assert!(d.records.is_empty());
    assert_eq!(c.configs().of(4, "")["min.insync.replicas"], "2");
    // A broker-level value (set before ELR) left out: refused too.
    c.elr_enabled = false;
    let set_broker = vec![(4, "1".into(), vec![set("min.insync.replicas", "2")])];
    assert_eq!(
        c.incremental_alter(set_broker, false, &world()).results[0].2,
        Ok(())
    );
    c.elr_enabled = true;
    let d = c.legacy_alter(vec![(4, "1".into(), vec![])], false, &world());
    assert_eq!(
        d.results[0].2,
        Err((
            ResponseError::InvalidConfig,
            "Broker-level min.insync.replicas cannot be altered while ELR is enabled.".into()
        ))
    );
    assert!(d.records.is_empty());
}

// Kafka 4.4's ConfigurationControlManager.isCordonedLogDirsDisabled (javap):
// below 4.3-IV0 (30) the broker config cordoned.log.dirs is INVALID_CONFIG,
// set or deleted; a replayed FeatureLevelRecord lifts the ban.
#[test]
fn cordoned_log_dirs_is_refused_below_4_3_iv0_and_accepted_from_it() {
    let mut c = control(&[]);
    let at = |level: i16| {
        FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: level,
        }
        .encode_framed()
    };
    let cordon = |c: &mut ConfigurationControl, op: (String, AlterOp)| {
        c.incremental_alter(vec![(4, "1".into(), vec![op])], false, &world())
    };
    let refusal = Err((
        ResponseError::InvalidConfig,
        "The cordoned.log.dirs configuration value cannot be set because it requires metadata.version >= 4.3-IV0".into(),
    ));
    c.replay(&[at(29)], &BTreeMap::new());
    let d = cordon(&mut c, set(CORDONED_LOG_DIRS, "/data/a"));
    assert_eq!(d.results[0].2, refusal);
    assert!(records(&d).is_empty());
    let d = cordon(&mut c, (CORDONED_LOG_DIRS.into(), AlterOp::Delete));
    assert_eq!(d.results[0].2, refusal);
    c.replay(&[at(30)], &BTreeMap::new());
    let d = cordon(&mut c, set(CORDONED_LOG_DIRS, "/data/a"));
    assert_eq!(d.results[0].2, Ok(()));
    assert_eq!(
        records(&d),
        vec![(CORDONED_LOG_DIRS.to_string(), Some("/data/a".to_string()))]
    );
}
