//! Interop with Apache Kafka's own tools (issue 10, docs/interop.md):
//! `kafka-metadata-quorum`, `kafka-dump-log` and `kafka-storage` run against
//! real `kraft-controller` processes and the files they write, and the other
//! way round, once per Kafka version of the run's `KAFKA_VERSIONS` where a
//! test's name says a version (issue 22). Needs Java and `make kafka-jars`;
//! built only with the `interop` feature, which `make test-interop` turns on.

mod interop;

use std::{collections::BTreeSet, path::Path, time::Duration};

use interop::*;

const QUORUM_COMMAND: &str = "org.apache.kafka.tools.MetadataQuorumCommand";
const STORAGE_TOOL: &str = "kafka.tools.StorageTool";
/// Three valid, non-reserved directory ids in canonical text.
const DIRS: [&str; 3] = [
    "LaBaIMiMRmy8YSD1cAd8Ew",
    "q6CGIHGkTStroizn5hrLMg",
    "Ww7qv0dqTt2yo2vBmEyd3A",
];
const BOOTSTRAP: &str = "bootstrap.checkpoint";
const ZERO_CHECKPOINT: &str = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint";

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temp dir")
}

fn format_ours(node: &Node, mode: &[&str]) -> String {
    let config = node.config.display().to_string();
    let mut args = vec!["format", "--config", &config, "--cluster-id", CLUSTER_ID];
    args.extend_from_slice(mode);
    run_ours(&args)
}

fn start_initial_quorum(root: &Path) -> Vec<Node> {
    let mut nodes = nodes(root, 3);
    let initial = initial_controllers(&nodes, &DIRS);
    for node in &nodes {
        format_ours(node, &["--initial-controllers", &initial]);
    }
    for node in &mut nodes {
        node.start();
    }
    nodes
}

crate::per_kafka_version!(describes_our_quorum_as_our_cli_does;
    kafka_4_1_2_metadata_quorum_describes_our_quorum_as_our_cli_does => "4.1.2",
    kafka_4_4_0_metadata_quorum_describes_our_quorum_as_our_cli_does => "4.4.0");

/// Case 1: Kafka `version`'s `describe --status` and `--replication`
/// against our quorum, compared with our own describe.
fn describes_our_quorum_as_our_cli_does(version: &str) {
    let root = tempdir();
    let nodes = start_initial_quorum(root.path());
    let address = nodes[0].address();
    let admin = admin_config(root.path()).display().to_string();
    let before = wait_for_leader(&address);
    let kafka_status = parse_status(&kafka_at(
        Some(version),
        QUORUM_COMMAND,
        &[
            "--bootstrap-controller",
            &address,
            "--command-config",
            &admin,
            "describe",
            "--status",
        ],
    ));
    let after = our_status(&address).expect("our describe --status answers");

    // Kafka reads the cluster id with DescribeCluster: the exact text given to format.
    assert_eq!(kafka_status["ClusterId"], CLUSTER_ID, "{kafka_status:?}");
    assert_eq!(after["ClusterId"], CLUSTER_ID, "{after:?}");
    for key in [
        "LeaderId",
        "LeaderEpoch",
        "CurrentVoters",
        "CurrentObservers",
    ] {
        assert_eq!(
            kafka_status[key], after[key],
            "{key}: Kafka {kafka_status:?}, ours {after:?}"
        );
    }
    for dir in DIRS {
        assert!(
            kafka_status["CurrentVoters"].contains(dir),
            "{kafka_status:?}"
        );
    }
    for node in &nodes {
        let endpoint = format!("\"CONTROLLER://127.0.0.1:{}\"", node.port);
        assert!(
            kafka_status["CurrentVoters"].contains(&endpoint),
            "{kafka_status:?}"
        );
    }
    let hw = |s: &std::collections::BTreeMap<String, String>| -> i64 {
        s["HighWatermark"].parse().expect("a number")
    };
    assert!(
        hw(&before) <= hw(&kafka_status) && hw(&kafka_status) <= hw(&after),
        "high watermark: ours {} then {}, Kafka's {} in between",
        hw(&before),
        hw(&after),
        hw(&kafka_status)
    );

    let kafka_rows = parse_replication(&kafka_at(
        Some(version),
        QUORUM_COMMAND,
        &[
            "--bootstrap-controller",
            &address,
            "--command-config",
            &admin,
            "describe",
            "--replication",
        ],
    ));
    let our_rows = parse_replication(&run_ours(&[
        "quorum",
        "--bootstrap-controller",
        &address,
        "describe",
        "--replication",
    ]));
    let identity = |rows: &[std::collections::BTreeMap<String, String>]| -> BTreeSet<(String, String, String)> {
        rows.iter()
            .map(|r| (r["NodeId"].clone(), r["DirectoryId"].clone(), r["Status"].clone()))
            .collect()
    };
    assert_eq!(
        identity(&kafka_rows),
        identity(&our_rows),
        "Kafka {kafka_rows:?}\nours {our_rows:?}"
    );
    assert_eq!(kafka_rows.len(), 3, "{kafka_rows:?}");
    let leader = &after["LeaderId"];
    assert!(
        kafka_rows
            .iter()
            .any(|r| &r["NodeId"] == leader && r["Status"] == "Leader"),
        "{kafka_rows:?}"
    );
}

crate::per_kafka_version!(dump_log_decodes_our_segments_and_checkpoints;
    kafka_4_1_2_dump_log_decodes_our_segments_and_checkpoints_as_our_dump_log_counts_them => "4.1.2",
    kafka_4_4_0_dump_log_decodes_our_segments_and_checkpoints_as_our_dump_log_counts_them => "4.4.0");

/// Case 3: Kafka `version`'s `DumpLogSegments` reads our segment, 0-0
/// checkpoint and bootstrap.checkpoint, counting what our dump-log counts.
fn dump_log_decodes_our_segments_and_checkpoints(version: &str) {
    let root = tempdir();
    let mut nodes = nodes(root.path(), 1);
    format_ours(&nodes[0], &["--standalone"]);
    nodes[0].start();
    let address = nodes[0].address();
    // LeaderChange, KRaftVersion and Voters (0-2), the bootstrap transaction
    // (3-9), the node's registration (10), then a few idle intervals of
    // NoOpRecords.
    wait_for(
        Duration::from_secs(30),
        "some no-op records committed",
        || {
            our_status(&address)
                .filter(|s| s["HighWatermark"].parse::<i64>().is_ok_and(|h| h >= 14))
        },
    );
    nodes[0].stop();
    let dir = nodes[0].dir.clone();
    let segment = dir.join("__cluster_metadata-0/00000000000000000000.log");
    for file in [
        segment.clone(),
        dir.join(ZERO_CHECKPOINT),
        dir.join(BOOTSTRAP),
    ] {
        let kafka = kafka_counts_at(version, &file);
        assert!(kafka.0 > 0, "Kafka found no batch in {}", file.display());
        assert_eq!(
            kafka,
            our_counts(&file),
            "(batches, records) of {}",
            file.display()
        );
    }
    let records = kafka_decoded_records_at(version, &segment);
    assert!(records[0].contains("LeaderChange"), "{records:?}");
    assert!(
        records.iter().any(|r| r.contains("NO_OP_RECORD")),
        "{records:?}"
    );
}

/// Kafka `version`'s StorageTool `format` of `node` in `mode` (at its
/// default release version).
fn format_kafka_at(version: &str, node: &Node, mode: &[&str]) -> String {
    let config = node.config.display().to_string();
    let mut args = vec!["format", "--config", &config, "--cluster-id", CLUSTER_ID];
    args.extend_from_slice(mode);
    kafka_at(Some(version), STORAGE_TOOL, &args)
}

crate::per_kafka_version!(runs_on_a_directory_formatted_standalone;
    our_controller_runs_on_a_directory_that_kafka_4_1_2_formatted_standalone => "4.1.2",
    our_controller_runs_on_a_directory_that_kafka_4_4_0_formatted_standalone => "4.4.0");

crate::per_kafka_version!(run_on_directories_formatted_with_initial_controllers;
    our_controllers_run_on_directories_that_kafka_4_1_2_formatted_with_initial_controllers => "4.1.2",
    our_controllers_run_on_directories_that_kafka_4_4_0_formatted_with_initial_controllers => "4.4.0");

/// Case 5: our `run` on a directory Kafka `version` formatted `--standalone`.
fn runs_on_a_directory_formatted_standalone(version: &str) {
    let root = tempdir();
    let mut nodes = nodes(root.path(), 1);
    format_kafka_at(version, &nodes[0], &["--standalone"]);
    nodes[0].start();
    let status = wait_for_leader(&nodes[0].address());
    assert_eq!(status["LeaderId"], "1", "{status:?}");
    assert_eq!(status["ClusterId"], CLUSTER_ID, "{status:?}");
}

/// Case 5: our `run` on three directories Kafka `version` formatted
/// `--initial-controllers`.
fn run_on_directories_formatted_with_initial_controllers(version: &str) {
    let root = tempdir();
    let mut nodes = nodes(root.path(), 3);
    let initial = initial_controllers(&nodes, &DIRS);
    for node in &nodes {
        format_kafka_at(version, node, &["--initial-controllers", &initial]);
    }
    for node in &mut nodes {
        node.start();
    }
    let status = wait_for_leader(&nodes[0].address());
    for dir in DIRS {
        assert!(status["CurrentVoters"].contains(dir), "{status:?}");
    }
    // Every node agrees on the leader.
    for node in &nodes {
        let s = wait_for_leader(&node.address());
        assert_eq!(s["LeaderId"], status["LeaderId"], "node {}: {s:?}", node.id);
    }
}

/// Every file under `dir` with its bytes, by path relative to `dir`.
fn files_of(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read file");
                out.insert(
                    path.strip_prefix(dir).expect("under dir").to_path_buf(),
                    bytes,
                );
            }
        }
    }
    out
}

/// Why the 5b cases run on Kafka 4.4.0 only (docs/interop.md's matrix).
const KIP_1170_IS_4_4S: &str = "the KIP-1170 layout (bootstrap records in the 0-0 checkpoint) is what Kafka 4.4's StorageTool writes; 4.1's writes bootstrap.checkpoint (case 5)";

/// Formats `node` with Kafka 4.4.0's StorageTool `--standalone` and `extra`
/// flags, and checks it wrote the KIP-1170 layout (no bootstrap.checkpoint).
/// With `unstable`, StorageTool reads a copy of the node's config with
/// `unstable.feature.versions.enable=true`, so that it formats 4.5-IV0.
fn format_kafka_4_4_standalone(node: &Node, unstable: bool, extra: &[&str]) {
    let mut config = node.config.clone();
    if unstable {
        let text = std::fs::read_to_string(&node.config).expect("read properties");
        config = node.config.with_extension("unstable.properties");
        std::fs::write(&config, text + "unstable.feature.versions.enable=true\n")
            .expect("write properties");
    }
    let config = config.display().to_string();
    let mut args = vec![
        "format",
        "--config",
        &config,
        "--cluster-id",
        CLUSTER_ID,
        "--standalone",
    ];
    args.extend_from_slice(extra);
    kafka_at(Some("4.4.0"), STORAGE_TOOL, &args);
    assert!(!node.dir.join(BOOTSTRAP).exists(), "KIP-1170 layout");
}

/// Waits up to 30 s for `node`'s process to exit.
fn wait_for_exit(node: &mut Node) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while node.is_running() {
        assert!(
            std::time::Instant::now() < deadline,
            "node {} still runs after 30 s; its log:\n{}",
            node.id,
            node.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

// Issue 22: a level above what we implement (4.5-IV0, 34: unstable in Kafka
// 4.4.0, formatted with unstable.feature.versions.enable) in the 0-0
// checkpoint (KIP-1170) stops our controller with one line, nothing written.
// Before issue 22 it led on any level; until this session that was 33 too.
#[test]
fn our_controller_refuses_a_directory_kafka_4_4_formatted_at_a_level_it_does_not_implement_and_writes_nothing()
 {
    if !only_on("4.4.0", KIP_1170_IS_4_4S) {
        return;
    }
    let root = tempdir();
    let mut nodes = nodes(root.path(), 1);
    format_kafka_4_4_standalone(&nodes[0], true, &["--release-version", "4.5-IV0"]);
    let before = files_of(&nodes[0].dir);
    nodes[0].start();
    wait_for_exit(&mut nodes[0]);
    let log = nodes[0].log_text();
    let line = log
        .lines()
        .find(|l| l.starts_with("kraft-controller run:"))
        .unwrap_or_else(|| panic!("no one-line error; log:\n{log}"));
    assert!(line.contains("metadata.version level 34"), "{line}");
    assert!(line.contains("to 4.4-IV2 (33)"), "{line}");
    assert!(
        line.contains("00000000000000000000-0000000000.checkpoint"),
        "{line}"
    );
    assert_eq!(
        files_of(&nodes[0].dir),
        before,
        "files changed by the refused start"
    );
}

// Issue 22: Kafka 4.4.0's format writes metadata.version 4.4-IV2 (level 33,
// its default) into the 0-0 checkpoint. Our controller runs it and says so:
// Kafka 4.4.0's FeatureCommand describe against it shows metadata.version
// finalized at 4.4-IV2 and supported up to 4.4-IV2.
#[test]
fn our_controller_runs_on_a_directory_kafka_4_4_formatted_at_its_default_4_4_iv2() {
    if !only_on("4.4.0", KIP_1170_IS_4_4S) {
        return;
    }
    let root = tempdir();
    let mut nodes = nodes(root.path(), 1);
    format_kafka_4_4_standalone(&nodes[0], false, &[]);
    nodes[0].start();
    let status = wait_for_leader(&nodes[0].address());
    assert_eq!(status["LeaderId"], "1", "{status:?}");
    let address = nodes[0].address();
    let row = wait_for(
        Duration::from_secs(30),
        "metadata.version finalized at 4.4-IV2",
        || {
            let describe = kafka_features_describe(&address);
            Some(feature_row(&describe, "metadata.version"))
                .filter(|r| r.contains("FinalizedVersionLevel: 4.4-IV2"))
        },
    );
    assert!(row.contains("SupportedMaxVersion: 4.4-IV2"), "{row}");
    assert!(row.contains("SupportedMinVersion: 3.3-IV3"), "{row}");
}

// KIP-1170 layout at a level we implement: Kafka 4.4.0's format with
// --release-version 4.1-IV1 (bootstrap records in the 0-0 checkpoint).
#[test]
fn our_controller_runs_on_a_directory_kafka_4_4_formatted_at_4_1_iv1() {
    if !only_on("4.4.0", KIP_1170_IS_4_4S) {
        return;
    }
    let root = tempdir();
    let mut nodes = nodes(root.path(), 1);
    format_kafka_4_4_standalone(&nodes[0], false, &["--release-version", "4.1-IV1"]);
    nodes[0].start();
    let status = wait_for_leader(&nodes[0].address());
    assert_eq!(status["LeaderId"], "1", "{status:?}");
    assert!(
        nodes[0]
            .log_text()
            .contains("00000000000000000000-0000000000.checkpoint"),
        "the bootstrap was not read from the 0-0 checkpoint; log:\n{}",
        nodes[0].log_text()
    );
}
