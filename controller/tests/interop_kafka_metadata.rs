//! Interop of the metadata layer with Apache Kafka's own tools, of each
//! version of the run's `KAFKA_VERSIONS` (issue 22): Kafka's
//! `kafka-dump-log --cluster-metadata-decoder` decodes, by name and field,
//! the bootstrap records our first leader writes (Begin/EndTransaction,
//! FeatureLevelRecords, the ELR ConfigRecord), the RegisterControllerRecord
//! of KIP-919 controller registration, and our snapshots of the image; and
//! `kafka-features --bootstrap-controller … describe` reads our finalized
//! features from ApiVersions. Needs Java and `make kafka-jars`; built only
//! with the `interop` feature (`make test-interop`).

mod interop;

use std::{io::Write, time::Duration};

use interop::*;

/// Every line of `records` containing all of `needles`.
fn lines_with<'a>(records: &'a [String], needles: &[&str]) -> Vec<&'a String> {
    records
        .iter()
        .filter(|r| needles.iter().all(|n| r.contains(n)))
        .collect()
}

crate::per_kafka_version!(decodes_our_records_and_reads_our_features;
    kafka_4_1_2_decodes_our_bootstrap_registration_and_snapshot_records_and_reads_our_features => "4.1.2",
    kafka_4_4_0_decodes_our_bootstrap_registration_and_snapshot_records_and_reads_our_features => "4.4.0");

/// Case 6 with Kafka `version`'s `FeatureCommand` and `DumpLogSegments`.
fn decodes_our_records_and_reads_our_features(version: &str) {
    let root = tempfile::tempdir().expect("create a temp dir");
    let mut nodes = nodes(root.path(), 1);
    let config = nodes[0].config.display().to_string();
    run_ours(&[
        "format",
        "--config",
        &config,
        "--cluster-id",
        CLUSTER_ID,
        "--standalone",
    ]);
    // Small snapshot threshold: a snapshot of the image after registration.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&nodes[0].config)
        .and_then(|mut f| {
            f.write_all(
                b"metadata.log.max.record.bytes.between.snapshots=2048\n\
                  metadata.max.idle.interval.ms=50\n",
            )
        })
        .expect("append snapshot settings");
    nodes[0].start();
    let address = nodes[0].address();
    let port = nodes[0].port;
    wait_for(
        Duration::from_secs(30),
        "the registration to commit",
        || {
            nodes[0]
                .log_text()
                .contains("controller registration committed")
                .then_some(())
        },
    );
    let partition = nodes[0].dir.join("__cluster_metadata-0");
    let snapshot = wait_for(
        Duration::from_secs(30),
        "a snapshot after the registration",
        || {
            let mut names: Vec<String> = std::fs::read_dir(&partition)
                .ok()?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".checkpoint") && !n.starts_with("00000000000000000000-"))
                .collect();
            names.sort();
            names.pop().map(|n| partition.join(n))
        },
    );

    // Finalized features through Kafka's Admin and ApiVersions.
    let features = kafka_features_describe_at(version, &address);
    // Kafka 4.1 separates the columns with tabs, 4.4 pads them with spaces:
    // the row with single spaces.
    let row = |name: &str| feature_row(&features, name);
    assert!(
        row("metadata.version").contains("FinalizedVersionLevel: 4.1-IV1"),
        "{features}"
    );
    assert!(
        row("kraft.version").contains("FinalizedVersionLevel: 1"),
        "{features}"
    );
    assert!(
        row("group.version").contains("FinalizedVersionLevel: 1"),
        "{features}"
    );
    assert!(
        row("transaction.version").contains("FinalizedVersionLevel: 2"),
        "{features}"
    );
    nodes[0].stop();

    let segment = partition.join("00000000000000000000.log");
    assert_eq!(kafka_counts_at(version, &segment), our_counts(&segment));
    let records = kafka_decoded_records_at(version, &segment);
    for needles in [
        &[
            r#""type":"BEGIN_TRANSACTION_RECORD""#,
            r#""name":"Bootstrap records""#,
        ][..],
        &[
            r#""type":"FEATURE_LEVEL_RECORD""#,
            r#""name":"metadata.version","featureLevel":27"#,
        ],
        &[
            r#""type":"FEATURE_LEVEL_RECORD""#,
            r#""name":"eligible.leader.replicas.version","featureLevel":1"#,
        ],
        &[
            r#""type":"CONFIG_RECORD""#,
            r#""name":"min.insync.replicas","value":"1""#,
        ],
        &[r#""type":"END_TRANSACTION_RECORD""#],
    ] {
        assert_eq!(
            lines_with(&records, needles).len(),
            1,
            "{needles:?} in {records:#?}"
        );
    }
    let registration = [
        r#""type":"REGISTER_CONTROLLER_RECORD""#,
        r#""controllerId":1"#,
        r#""zkMigrationReady":false"#,
        r#""name":"CONTROLLER","host":"127.0.0.1""#,
    ];
    let port_field = format!(r#""port":{port}"#);
    let registered = lines_with(&records, &registration);
    assert_eq!(registered.len(), 1, "{records:#?}");
    assert!(registered[0].contains(&port_field), "{}", registered[0]);
    // The ranges of Kafka 4.4.0's controllers (issue 22: 7-33, and the
    // share and streams groups' features).
    for range in [
        r#"{"name":"metadata.version","minSupportedVersion":7,"maxSupportedVersion":33}"#,
        r#"{"name":"share.version","minSupportedVersion":0,"maxSupportedVersion":2}"#,
        r#"{"name":"streams.version","minSupportedVersion":0,"maxSupportedVersion":1}"#,
    ] {
        assert!(registered[0].contains(range), "{range}: {}", registered[0]);
    }

    // The snapshot: Kafka reads the image back, metadata.version first.
    assert_eq!(kafka_counts_at(version, &snapshot), our_counts(&snapshot));
    let in_snapshot = kafka_decoded_records_at(version, &snapshot);
    let data: Vec<&String> = in_snapshot
        .iter()
        .filter(|r| r.contains(r#""type":""#) && r.contains(r#"_RECORD""#))
        .collect();
    assert!(
        data[0].contains(r#""name":"metadata.version","featureLevel":27"#),
        "{in_snapshot:#?}"
    );
    assert_eq!(
        lines_with(&in_snapshot, &registration).len(),
        1,
        "{in_snapshot:#?}"
    );
    assert_eq!(
        lines_with(&in_snapshot, &[r#""type":"CONFIG_RECORD""#]).len(),
        1,
        "{in_snapshot:#?}"
    );
}
