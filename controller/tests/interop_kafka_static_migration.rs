//! Interop of issue 22's static -> dynamic quorum migration with Apache
//! Kafka's own storage tool (KIP-853, KAFKA-16538, KAFKA-18979): a static
//! quorum (`controller.quorum.voters`) formatted by Kafka's `kafka-storage`
//! runs on our controllers, stays at kraft.version 0 until asked, is upgraded
//! by our `kraft-controller features upgrade --feature kraft.version=1`, its
//! nodes restarted one at a time with `controller.quorum.bootstrap.servers`,
//! and then changes its voters with Kafka's `kafka-metadata-quorum`;
//! every record committed before the upgrade is still in every log, as
//! Kafka's `kafka-dump-log` decodes it. Each case runs once per Kafka
//! version of the run's `KAFKA_VERSIONS`, every Kafka tool of that version
//! (issue 22). Needs Java and `make kafka-jars`; built only with the
//! `interop` feature.

mod interop;

use std::{
    collections::{BTreeMap, BTreeSet},
    process::Command,
    time::Duration,
};

use interop::*;

const STORAGE_TOOL: &str = "kafka.tools.StorageTool";
const QUORUM_COMMAND: &str = "org.apache.kafka.tools.MetadataQuorumCommand";
/// Long enough for an election, a catch-up or a commit on a loaded machine.
const WAIT: Duration = Duration::from_secs(60);

/// Formats `node` with Kafka `version`'s StorageTool for a static quorum:
/// `controller.quorum.voters` in its properties and none of
/// `--standalone`, `--initial-controllers`, `--no-initial-controllers`.
fn format_kafka_static(version: &str, node: &Node, release_version: &str) {
    let config = node.config.display().to_string();
    kafka_at(
        Some(version),
        STORAGE_TOOL,
        &[
            "format",
            "--config",
            &config,
            "--cluster-id",
            CLUSTER_ID,
            "--release-version",
            release_version,
        ],
    );
}

/// Our `quorum describe --replication` through `address`: LogEndOffset by
/// node id, voters and observers alike; `None` while it fails.
fn log_end_offsets(address: &str) -> Option<BTreeMap<i32, i64>> {
    let output = Command::new(ours())
        .args(["quorum", "--bootstrap-controller", address])
        .args(["--timeout-ms", "2000", "describe", "--replication"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    parse_replication(&String::from_utf8_lossy(&output.stdout))
        .iter()
        .map(|row| {
            Some((
                row.get("NodeId")?.parse().ok()?,
                row.get("LogEndOffset")?.parse().ok()?,
            ))
        })
        .collect()
}

/// The leader's high watermark through `address`, once every node of `ids`
/// reports a log end offset at or past it (so each holds that prefix).
fn high_watermark_on_all(address: &str, ids: &[i32]) -> i64 {
    wait_for(WAIT, "every node caught up to the high watermark", || {
        let hw: i64 = our_status(address)?.get("HighWatermark")?.parse().ok()?;
        let ends = log_end_offsets(address)?;
        ids.iter()
            .all(|id| ends.get(id).is_some_and(|e| *e >= hw))
            .then_some(hw)
    })
}

/// The voter ids of `describe --status` through `address`.
fn voter_ids(address: &str) -> Option<BTreeSet<i32>> {
    let status = our_status(address)?;
    let voters = status.get("CurrentVoters")?;
    Some(
        voters
            .split("\"id\":")
            .skip(1)
            .filter_map(|s| {
                s.trim_start()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse()
                    .ok()
            })
            .collect(),
    )
}

/// Runs Kafka `version`'s `class` with `args`; whether it exited 0.
fn kafka_succeeds(version: &str, class: &str, args: &[&str]) -> bool {
    Command::new(kafka_run_class())
        .env("KAFKA_VERSION", version)
        .arg(class)
        .args(args)
        .output()
        .expect("kafka-run-class runs")
        .status
        .success()
}

crate::per_kafka_version!(static_quorum_is_migrated_to_dynamic_by_our_cli;
    a_static_quorum_formatted_by_kafka_4_1_2_is_migrated_to_dynamic_by_our_cli_keeping_every_record => "4.1.2",
    a_static_quorum_formatted_by_kafka_4_4_0_is_migrated_to_dynamic_by_our_cli_keeping_every_record => "4.4.0");

/// Case 11 with Kafka `version`'s StorageTool, `kafka-metadata-quorum`,
/// `kafka-features` and `kafka-dump-log`.
fn static_quorum_is_migrated_to_dynamic_by_our_cli(version: &str) {
    let root = tempfile::tempdir().expect("create a temp dir");
    let mut nodes = nodes(root.path(), 3);
    let ids: Vec<i32> = nodes.iter().map(|n| n.id).collect();
    let voters = static_voters(&nodes);
    let bootstrap = nodes
        .iter()
        .map(Node::address)
        .collect::<Vec<_>>()
        .join(",");
    for node in &nodes {
        node.set_quorum_config(&format!("controller.quorum.voters={voters}"));
        format_kafka_static(version, node, "4.1-IV1");
    }
    for node in &mut nodes {
        node.start();
    }
    let address = nodes[1].address();
    wait_for_leader(&address);
    // A few idle no-op records committed on top of the activation records.
    wait_for(WAIT, "a high watermark above 5", || {
        let hw: i64 = our_status(&address)?.get("HighWatermark")?.parse().ok()?;
        (hw > 5).then_some(())
    });
    for node in &nodes {
        assert_eq!(
            our_kraft_version(&node.address()),
            Some(0),
            "node {}",
            node.id
        );
    }

    // Every node holds the committed prefix; stopped, each is dumped by Kafka.
    let committed = high_watermark_on_all(&address, &ids);
    for node in &mut nodes {
        node.stop();
    }
    let before = kafka_records_below_at(version, &nodes[0].dir, committed);
    assert!(before.len() > 5, "{before:#?}");
    for node in &nodes[1..] {
        assert_eq!(
            kafka_records_below_at(version, &node.dir, committed),
            before,
            "node {}",
            node.id
        );
    }
    // KAFKA-18979: restarted, the static quorum stays at kraft.version 0.
    for node in &mut nodes {
        node.start();
    }
    wait_for_leader(&address);
    for node in &nodes {
        let v = wait_for(WAIT, "an ApiVersions answer", || {
            our_kraft_version(&node.address())
        });
        assert_eq!(v, 0, "node {} left kraft.version 0 by itself", node.id);
    }

    // The upgrade, by our CLI.
    let out = run_ours(&[
        "features",
        "--bootstrap-controller",
        &address,
        "upgrade",
        "--feature",
        "kraft.version=1",
    ]);
    assert_eq!(out, "kraft.version was upgraded to 1.\n");
    for node in &nodes {
        wait_for(
            WAIT,
            &format!("node {} at kraft.version 1", node.id),
            || (our_kraft_version(&node.address()) == Some(1)).then_some(()),
        );
    }

    // KAFKA-16538: one node at a time, controller.quorum.voters replaced by
    // controller.quorum.bootstrap.servers; each back in the quorum before the next.
    for i in 0..nodes.len() {
        let other = nodes[(i + 1) % nodes.len()].address();
        nodes[i].stop();
        nodes[i].set_quorum_config(&format!("controller.quorum.bootstrap.servers={bootstrap}"));
        nodes[i].start();
        high_watermark_on_all(&other, &ids);
        assert!(nodes[i].is_running(), "node {} exited", nodes[i].id);
        assert_eq!(voter_ids(&other), Some([1, 2, 3].into()));
    }
    assert_eq!(our_kraft_version(&address), Some(1));

    // A fourth controller, formatted by Kafka's tool as a dynamic observer, is
    // added by Kafka's add-controller; then the static voter 1 is removed.
    let mut new = Node::new(root.path(), 4, free_port(), &bootstrap);
    kafka_at(
        Some(version),
        STORAGE_TOOL,
        &[
            "format",
            "--config",
            &new.config.display().to_string(),
            "--cluster-id",
            CLUSTER_ID,
            "--release-version",
            "4.1-IV1",
            "--no-initial-controllers",
        ],
    );
    new.start();
    let joining = new.config.display().to_string();
    wait_for(WAIT, "Kafka's add-controller to succeed", || {
        kafka_succeeds(
            version,
            QUORUM_COMMAND,
            &[
                "--bootstrap-controller",
                &address,
                "--command-config",
                &joining,
                "add-controller",
            ],
        )
        .then_some(())
    });
    wait_for(WAIT, "voters 1, 2, 3, 4", || {
        (voter_ids(&address)? == [1, 2, 3, 4].into()).then_some(())
    });
    let dir_1 = properties(&nodes[0].dir.join("meta.properties"))["directory.id"].clone();
    let admin = admin_config(root.path()).display().to_string();
    kafka_at(
        Some(version),
        QUORUM_COMMAND,
        &[
            "--bootstrap-controller",
            &address,
            "--command-config",
            &admin,
            "remove-controller",
            "--controller-id",
            "1",
            "--controller-directory-id",
            &dir_1,
        ],
    );
    wait_for(WAIT, "voters 2, 3, 4", || {
        (voter_ids(&address)? == [2, 3, 4].into()).then_some(())
    });
    let describe = kafka_features_describe_at(version, &address);
    assert!(
        kraft_version_row(&describe).contains("FinalizedVersionLevel: 1 "),
        "{describe}"
    );

    // Every record committed before the upgrade is in every log, node 4's too.
    high_watermark_on_all(&address, &[2, 3, 4]);
    for node in nodes.iter_mut().chain(std::iter::once(&mut new)) {
        node.stop();
        assert_eq!(
            kafka_records_below_at(version, &node.dir, committed),
            before,
            "node {}",
            node.id
        );
    }
}

crate::per_kafka_version!(static_directory_stays_at_kraft_version_0_until_asked;
    a_static_directory_formatted_by_kafka_4_1_2_at_a_4_x_release_version_stays_at_kraft_version_0_until_asked => "4.1.2",
    a_static_directory_formatted_by_kafka_4_4_0_at_a_4_x_release_version_stays_at_kraft_version_0_until_asked => "4.4.0");

// KAFKA-18979: a static directory formatted by Kafka `version`'s storage
// tool at a 4.x release version, whose default kraft.version is 1, runs at
// kraft.version 0 across restarts, until kraft.version=1 is asked for by
// that version's `kafka-features upgrade --release-version`. Kafka 4.1.2
// writes the 3.9 layout (bootstrap.checkpoint), 4.4.0 the KIP-1170 one
// (the bootstrap records in the 0-0 checkpoint).
fn static_directory_stays_at_kraft_version_0_until_asked(version: &str) {
    let root = tempfile::tempdir().expect("create a temp dir");
    let mut nodes = nodes(root.path(), 1);
    let voters = static_voters(&nodes);
    nodes[0].set_quorum_config(&format!("controller.quorum.voters={voters}"));
    format_kafka_static(version, &nodes[0], "4.0-IV3");
    let old_layout = version.starts_with("4.1");
    assert_eq!(
        nodes[0].dir.join("bootstrap.checkpoint").exists(),
        old_layout,
        "Kafka {version}'s layout: the 3.9 one (bootstrap.checkpoint) for 4.1, KIP-1170's for 4.4"
    );
    let address = nodes[0].address();
    for round in 0..2 {
        nodes[0].start();
        wait_for_leader(&address);
        let describe = kafka_features_describe_at(version, &address);
        assert!(
            kraft_version_row(&describe).contains("FinalizedVersionLevel: 0 "),
            "start {round}: {describe}"
        );
        assert_eq!(our_kraft_version(&address), Some(0), "start {round}");
        nodes[0].stop();
    }
    nodes[0].start();
    wait_for_leader(&address);
    // Kafka's `upgrade --release-version 4.1-IV1` names kraft.version=1
    // beside metadata.version and the other features: that is the request
    // that asks for it, and it is applied whole, as Kafka 4.4.0's own
    // FeatureControlManager does (its `updateFeature` hands kraft.version to
    // `KRaftVersionAccessor.upgradeKRaftVersion`, javap of
    // kafka-metadata-4.4.0.jar).
    let out = kafka_at(
        Some(version),
        FEATURE_COMMAND,
        &[
            "--bootstrap-controller",
            &address,
            "upgrade",
            "--release-version",
            "4.1-IV1",
        ],
    );
    assert!(out.contains("kraft.version was upgraded to 1."), "{out}");
    assert!(
        out.contains("metadata.version was upgraded to 27."),
        "{out}"
    );
    assert_eq!(our_kraft_version(&address), Some(1));
}
