//! Interop of issue 22's kraft.version upgrade with Apache Kafka 4.4.0's
//! own `kafka-features` (`org.apache.kafka.tools.FeatureCommand`): against
//! three of our controllers formatted with `controller.quorum.voters`
//! (kraft.version 0), Kafka's `upgrade --feature kraft.version=1` (Admin
//! `updateFeatures`, UpdateFeatures v1) succeeds, Kafka's `describe` then
//! reads kraft.version 1, and every node reports it. Needs Java and
//! `make kafka-jars`; built only with the `interop` feature.

mod interop;

use std::time::Duration;

use interop::*;

const FEATURE_COMMAND: &str = "org.apache.kafka.tools.FeatureCommand";

#[test]
fn kafka_4_4_0_feature_command_upgrades_our_static_quorum_to_kraft_version_1() {
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
    let before = kafka_at(
        Some("4.4.0"),
        FEATURE_COMMAND,
        &["--bootstrap-controller", &address, "describe"],
    );
    assert!(
        kraft_version_row(&before).contains("FinalizedVersionLevel: 0 "),
        "{before}"
    );

    let out = kafka_at(
        Some("4.4.0"),
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
    let after = kafka_at(
        Some("4.4.0"),
        FEATURE_COMMAND,
        &["--bootstrap-controller", &address, "describe"],
    );
    assert!(
        kraft_version_row(&after).contains("FinalizedVersionLevel: 1 "),
        "{after}"
    );
}
