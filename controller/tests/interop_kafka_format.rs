//! Interop case 4 (issue 22, docs/interop.md): Apache Kafka's
//! `kafka-storage format` and ours, given the same config, cluster id, node
//! id, directory id, mode and `--release-version`, write the same files,
//! byte for byte: `bootstrap.checkpoint` and a 0-0 checkpoint of control
//! records up to 4.1-IV1 (against Kafka 4.1.2's StorageTool), the KIP-1170
//! layout from 4.2-IV0 (against Kafka 4.4.0's; docs/decisions.md D18).
//! Then case 4b: Kafka 4.4.0's own controller runs on a directory our
//! `format` wrote in the KIP-1170 layout.
//!
//! Every Kafka format of one version runs in one JVM
//! (`tests/kafka/StorageToolBatch.java`). Clock-derived bytes (batch
//! timestamps, SnapshotHeader's `lastContainedLogTimestamp`, the CRCs over
//! them) are normalised (`support/checkpoint_bytes.rs`); `meta.properties`
//! is compared as a map (Kafka writes a date comment). Needs Java and
//! `make kafka-jars`; built only with the `interop` feature.

mod interop;

#[path = "support/checkpoint_bytes.rs"]
mod checkpoint_bytes;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use interop::{brokers::KafkaServer, *};

/// Directory ids given to `--initial-controllers`.
const DIRS: [&str; 2] = ["LaBaIMiMRmy8YSD1cAd8Ew", "q6CGIHGkTStroizn5hrLMg"];
/// The three modes of `format` (KIP-853), and `static`: a config with
/// `controller.quorum.voters` formatted `--no-initial-controllers`
/// (kraft.version 0).
const MODES: [&str; 4] = [
    "standalone",
    "initial-controllers",
    "no-initial-controllers",
    "static",
];

/// One directory formatted by both tools: Kafka's under `kafka/`, ours
/// under `ours/`, with the same properties but for the paths.
struct Case {
    release_version: &'static str,
    mode: &'static str,
    kafka: Node,
    ours: Node,
    /// The mode's flags, the same for both tools.
    flags: Vec<String>,
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temp dir")
}

fn cases(root: &Path, release_versions: &[&'static str]) -> Vec<Case> {
    let port = free_port();
    let other_port = free_port();
    let bootstrap = format!("127.0.0.1:{port}");
    let mut out = Vec::new();
    for rv in release_versions {
        for mode in MODES {
            let at = root.join(rv).join(mode);
            let (kafka_root, ours_root) = (at.join("kafka"), at.join("ours"));
            std::fs::create_dir_all(&kafka_root).expect("mkdir");
            std::fs::create_dir_all(&ours_root).expect("mkdir");
            let mut flags = match mode {
                "initial-controllers" => vec![
                    "--initial-controllers".to_owned(),
                    format!(
                        "1@127.0.0.1:{port}:{},2@127.0.0.1:{other_port}:{}",
                        DIRS[0], DIRS[1]
                    ),
                ],
                "static" => vec!["--no-initial-controllers".to_owned()],
                _ => vec![format!("--{mode}")],
            };
            flags.extend(["--release-version".to_owned(), (*rv).to_owned()]);
            let (kafka, ours) = (
                Node::new(&kafka_root, 1, port, &bootstrap),
                Node::new(&ours_root, 1, port, &bootstrap),
            );
            if mode == "static" {
                for node in [&kafka, &ours] {
                    node.set_quorum_config(&format!("controller.quorum.voters=1@127.0.0.1:{port}"));
                }
            }
            out.push(Case {
                release_version: rv,
                mode,
                kafka,
                ours,
                flags,
            });
        }
    }
    out
}

/// Formats every case's Kafka directory with Kafka `version`'s StorageTool,
/// all in one JVM.
fn format_all_with_kafka(root: &Path, version: &str, cases: &[Case]) {
    let commands: String = cases
        .iter()
        .map(|c| {
            let mut args = vec![
                "format".to_owned(),
                "--config".to_owned(),
                c.kafka.config.display().to_string(),
                "--cluster-id".to_owned(),
                CLUSTER_ID.to_owned(),
            ];
            args.extend(c.flags.iter().cloned());
            args.join("\t") + "\n"
        })
        .collect();
    let file = root.join(format!("storage-tool-{version}.tsv"));
    std::fs::write(&file, commands).expect("write the command file");
    let runner = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kafka/StorageToolBatch.java");
    kafka_at(
        Some(version),
        &runner.display().to_string(),
        &[&file.display().to_string()],
    );
}

/// Formats the case's directory with ours; where Kafka picked a random
/// directory id (it has no flag for one), ours is given the same.
fn format_with_ours(case: &Case) {
    let config = case.ours.config.display().to_string();
    let mut args = vec!["format", "--config", &config, "--cluster-id", CLUSTER_ID];
    args.extend(case.flags.iter().map(String::as_str));
    let kafka_dir_id = properties(&case.kafka.dir.join("meta.properties"))["directory.id"].clone();
    if case.mode != "initial-controllers" {
        args.extend(["--directory-id", &kafka_dir_id]);
    }
    run_ours(&args);
}

/// Every file and directory under `dir`, by path relative to it (a
/// directory with a trailing `/`), with the bytes of files.
fn tree(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path: PathBuf = entry.expect("a directory entry").path();
            let name = path
                .strip_prefix(dir)
                .expect("under dir")
                .display()
                .to_string();
            if path.is_dir() {
                out.insert(format!("{name}/"), None);
                stack.push(path);
            } else {
                out.insert(name, Some(std::fs::read(&path).expect("read a file")));
            }
        }
    }
    out
}

/// The differences between the two directories of `case`, one line or
/// paragraph each; empty when they agree.
fn differences(case: &Case, version: &str) -> Vec<String> {
    let mode = match case.mode {
        "static" => "--no-initial-controllers with controller.quorum.voters",
        _ => &format!("--{}", case.mode),
    };
    let label = format!(
        "--release-version {} {mode} (Kafka {version})",
        case.release_version
    );
    let (theirs, ours) = (tree(&case.kafka.dir), tree(&case.ours.dir));
    let mut out = Vec::new();
    let names = |t: &BTreeMap<String, Option<Vec<u8>>>| t.keys().cloned().collect::<Vec<_>>();
    if names(&theirs) != names(&ours) {
        out.push(format!(
            "{label}: different files: Kafka's {:?}, ours {:?}",
            names(&theirs),
            names(&ours)
        ));
    }
    for (name, kafka_bytes) in &theirs {
        let (Some(Some(kafka_bytes)), Some(Some(our_bytes))) = (
            Some(kafka_bytes.as_ref()),
            ours.get(name).map(Option::as_ref),
        ) else {
            continue;
        };
        if name == "meta.properties" {
            let (k, o) = (
                properties(&case.kafka.dir.join(name)),
                properties(&case.ours.dir.join(name)),
            );
            if k != o {
                out.push(format!(
                    "{label}: meta.properties: Kafka's {k:?}, ours {o:?}"
                ));
            }
        } else if let Some(diff) =
            checkpoint_bytes::difference(&format!("{label}: {name}"), our_bytes, kafka_bytes)
        {
            out.push(diff);
        }
    }
    out
}

/// Formats every release version of `release_versions` in the [`MODES`]
/// with Kafka `version`'s StorageTool and ours, and fails listing every
/// difference.
fn compare_formats(version: &str, release_versions: &[&'static str], zero_checkpoint_data: bool) {
    let root = tempdir();
    let cases = cases(root.path(), release_versions);
    format_all_with_kafka(root.path(), version, &cases);
    let mut failures = Vec::new();
    for case in &cases {
        format_with_ours(case);
        // The layout is the one this case expects, for both.
        let bootstrap = case.kafka.dir.join("bootstrap.checkpoint");
        assert_eq!(
            bootstrap.exists(),
            !zero_checkpoint_data,
            "Kafka {version} at {} --{}: bootstrap.checkpoint",
            case.release_version,
            case.mode
        );
        failures.extend(differences(case, version));
    }
    assert!(
        failures.is_empty(),
        "{} difference(s) between Kafka {version}'s format and ours:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// Up to 4.1-IV1 (level 27) both write bootstrap.checkpoint, and a 0-0
// checkpoint of control records only with --standalone/--initial-controllers.
#[test]
fn kafka_4_1_2_storage_format_and_ours_write_the_same_bytes_from_3_9_iv0_to_4_1_iv1() {
    if !runs_on("4.1.2") {
        return;
    }
    compare_formats("4.1.2", &["3.9-IV0", "4.0-IV3", "4.1-IV1"], false);
}

// KIP-1170 from 4.2-IV0 (level 28): no bootstrap.checkpoint, the bootstrap
// records in the 0-0 checkpoint in every mode (docs/decisions.md D18).
#[test]
fn kafka_4_4_0_storage_format_and_ours_write_the_same_bytes_from_4_2_iv0_to_4_4_iv2() {
    if !runs_on("4.4.0") {
        return;
    }
    compare_formats(
        "4.4.0",
        &[
            "4.2-IV0", "4.2-IV1", "4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2",
        ],
        true,
    );
}

// Case 4b: Kafka 4.4.0's controller reads what our format writes in the
// KIP-1170 layout. It leads alone, its first leader writes the bootstrap
// records (metadata.version 4.4-IV2 finalized, as FeatureCommand shows).
#[test]
fn kafka_4_4_0s_controller_leads_on_a_directory_our_format_wrote_in_the_kip_1170_layout() {
    if !only_on(
        "4.4.0",
        "the KIP-1170 layout our format writes from 4.2-IV0 is read by Kafka 4.2+ controllers; 4.1.2's implements levels 7-27 only",
    ) {
        return;
    }
    let root = tempdir();
    let port = free_port();
    let bootstrap = format!("127.0.0.1:{port}");
    let mut server = KafkaServer::controller(root.path(), "4.4.0", 1, port, &bootstrap, "");
    let dir = server.dir.display().to_string();
    let config = server.config.display().to_string();
    run_ours(&[
        "format",
        "--config",
        &config,
        "--metadata-log-dir",
        &dir,
        "--cluster-id",
        CLUSTER_ID,
        "--standalone",
        "--release-version",
        "4.4-IV2",
    ]);
    assert!(
        !server.dir.join("bootstrap.checkpoint").exists(),
        "KIP-1170 layout"
    );
    server.start();
    let address = server.address();
    let status = wait_for_leader_within(&address, FIRST_LEADER_TIMEOUT);
    assert_eq!(status["LeaderId"], "1", "{status:?}");
    assert_eq!(status["ClusterId"], CLUSTER_ID, "{status:?}");
    let row = wait_for(
        Duration::from_secs(30),
        "metadata.version finalized at 4.4-IV2 on Kafka's controller",
        || {
            let describe = kafka_features_describe(&address);
            Some(feature_row(&describe, "metadata.version"))
                .filter(|r| r.contains("FinalizedVersionLevel: 4.4-IV2"))
        },
    );
    assert!(row.contains("FinalizedVersionLevel: 4.4-IV2"), "{row}");
}
