//! Interop of issue 22's kraft.version upgrade with Apache Kafka's own
//! `kafka-features` (`org.apache.kafka.tools.FeatureCommand`) of each
//! version of the run's `KAFKA_VERSIONS`: against
//! three of our controllers formatted with `controller.quorum.voters`
//! (kraft.version 0), Kafka's `upgrade --feature kraft.version=1` (Admin
//! `updateFeatures`, UpdateFeatures v1) succeeds, Kafka's `describe` then
//! reads kraft.version 1, and every node reports it. Against our controller
//! formatted at 4.0-IV3, Kafka's `upgrade --metadata 4.1-IV1` raises
//! metadata.version to 27 and its `downgrade --metadata 4.0-IV0` is refused
//! with Kafka's own message; our `features downgrade` then writes a safe
//! one. Needs Java and `make kafka-jars`; built only
//! with the `interop` feature.

mod interop;

use std::{process::Command, time::Duration};

use interop::*;

crate::per_kafka_version!(feature_command_upgrades_our_static_quorum_to_kraft_version_1;
    kafka_4_1_2_feature_command_upgrades_our_static_quorum_to_kraft_version_1 => "4.1.2",
    kafka_4_4_0_feature_command_upgrades_our_static_quorum_to_kraft_version_1 => "4.4.0");

crate::per_kafka_version!(feature_command_upgrades_our_metadata_version;
    kafka_4_1_2_feature_command_upgrades_our_metadata_version_and_is_refused_a_lossy_downgrade => "4.1.2",
    kafka_4_4_0_feature_command_upgrades_our_metadata_version_and_is_refused_a_lossy_downgrade => "4.4.0");

/// Case 9 with Kafka `version`'s `FeatureCommand`.
fn feature_command_upgrades_our_static_quorum_to_kraft_version_1(version: &str) {
    let root = tempfile::tempdir().expect("create a temp dir");
    let mut nodes = nodes(root.path(), 3);
    let voters = static_voters(&nodes);
    for node in &nodes {
        // A static quorum: controller.quorum.voters instead of bootstrap servers.
        node.set_quorum_config(&format!("controller.quorum.voters={voters}"));
        let config = node.config.display().to_string();
        run_ours(&[
            "format",
            "--config",
            &config,
            "--cluster-id",
            CLUSTER_ID,
            "--no-initial-controllers",
        ]);
    }
    for node in &mut nodes {
        node.start();
    }
    let address = nodes[0].address();
    wait_for_leader(&address);
    let before = kafka_features_describe_at(version, &address);
    assert!(
        kraft_version_row(&before).contains("FinalizedVersionLevel: 0 "),
        "{before}"
    );

    let out = kafka_at(
        Some(version),
        FEATURE_COMMAND,
        &[
            "--bootstrap-controller",
            &address,
            "upgrade",
            "--feature",
            "kraft.version=1",
        ],
    );
    assert!(out.contains("kraft.version was upgraded to 1."), "{out}");
    for node in &nodes {
        let node_address = node.address();
        wait_for(
            Duration::from_secs(30),
            &format!("node {} at kraft.version 1", node.id),
            || {
                let ours = run_ours(&[
                    "features",
                    "--bootstrap-controller",
                    &node_address,
                    "describe",
                ]);
                kraft_version_row(&ours)
                    .contains("FinalizedVersionLevel: 1 ")
                    .then_some(())
            },
        );
    }
    let after = kafka_features_describe_at(version, &address);
    assert!(
        kraft_version_row(&after).contains("FinalizedVersionLevel: 1 "),
        "{after}"
    );
}

/// Kafka `version`'s `FeatureCommand upgrade --metadata`, then a refused
/// lossy downgrade, then our CLI's safe one.
fn feature_command_upgrades_our_metadata_version(version: &str) {
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
        "--release-version",
        "4.0-IV3",
    ]);
    nodes[0].start();
    let address = nodes[0].address();
    wait_for_leader(&address);
    let describe = || kafka_features_describe_at(version, &address);
    let before = describe();
    assert!(
        feature_row(&before, "metadata.version").contains("FinalizedVersionLevel: 4.0-IV3 "),
        "{before}"
    );

    let out = kafka_at(
        Some(version),
        FEATURE_COMMAND,
        &[
            "--bootstrap-controller",
            &address,
            "upgrade",
            "--metadata",
            "4.1-IV1",
        ],
    );
    assert!(
        out.contains("metadata.version was upgraded to 27."),
        "{out}"
    );
    // The answer comes on commit; the describe may read a view a moment older.
    wait_for(Duration::from_secs(30), "describe at 4.1-IV1", || {
        feature_row(&describe(), "metadata.version")
            .contains("FinalizedVersionLevel: 4.1-IV1 ")
            .then_some(())
    });

    // 4.1-IV1 → 4.0-IV0 crosses 4.0-IV1, which changed the metadata.
    let refused = Command::new(kafka_run_class())
        .env("KAFKA_VERSION", version)
        .args([
            FEATURE_COMMAND,
            "--bootstrap-controller",
            &address,
            "downgrade",
            "--metadata",
            "4.0-IV0",
        ])
        .output()
        .expect("kafka-run-class runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!refused.status.success(), "{text}");
    assert!(
        text.contains(
            "Unsupported metadata.version downgrade from 4.1-IV1 to 4.0-IV0. Refusing to perform the requested downgrade because it might delete metadata information."
        ),
        "{text}"
    );
    let last = describe();
    assert!(
        feature_row(&last, "metadata.version").contains("FinalizedVersionLevel: 4.1-IV1 "),
        "{last}"
    );

    // Our CLI: 4.1-IV1 → 4.1-IV0 loses nothing (level 27 changed no
    // metadata), so the safe downgrade is written.
    let out = run_ours(&[
        "features",
        "--bootstrap-controller",
        &address,
        "downgrade",
        "--metadata",
        "4.1-IV0",
    ]);
    assert_eq!(out, "metadata.version was downgraded to 26.\n");
    wait_for(Duration::from_secs(30), "describe at 4.1-IV0", || {
        feature_row(&describe(), "metadata.version")
            .contains("FinalizedVersionLevel: 4.1-IV0 ")
            .then_some(())
    });
}
