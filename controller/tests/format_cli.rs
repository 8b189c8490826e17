//! `kraft-controller format` (DESIGN 2.4, issue 2): each mode, idempotency,
//! mismatches that leave every file untouched byte for byte, and the one-line
//! error of each invalid input. Runs the real binary.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use kraft_controller::cli::dump_log;

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";
const DIR1: &str = "Yn6jBgNWRcWUqv7Dz5TlZQ";
const DIR2: &str = "bkIhY8PmQGiDnQJRUm2Rjg";
const DIR3: &str = "mS3ioBlXSyuHHyHmDiw2OA";

fn format(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kraft-controller"))
        .arg("format")
        .args(args)
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under `dir` with its bytes.
fn snapshot_tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(snapshot_tree(&path));
        } else {
            out.insert(path.clone(), std::fs::read(&path).expect("read"));
        }
    }
    out
}

fn initial_controllers() -> String {
    format!("1@c1.example:9093:{DIR1},2@c2.example:9093:{DIR2},3@[::1]:9095:{DIR3}")
}

fn one_line_error(o: &Output) -> String {
    assert!(!o.status.success(), "must fail: {}", stdout(o));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn initial_controllers_mode_writes_the_voters_with_this_nodes_directory_id() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c2");
    let dir_s = dir.to_str().expect("utf-8");
    let out = format(&[
        "--metadata-log-dir",
        dir_s,
        "--node-id",
        "2",
        "--cluster-id",
        CLUSTER,
        "--initial-controllers",
        &initial_controllers(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("3 initial voter(s)"),
        "{}",
        stdout(&out)
    );
    let meta = std::fs::read_to_string(dir.join("meta.properties")).expect("read");
    assert!(meta.contains(&format!("directory.id={DIR2}\n")), "{meta}");
    assert!(meta.contains("node.id=2\n") && meta.contains(&format!("cluster.id={CLUSTER}\n")));
    let (text, ok) = dump_log::dump(&[
        dir.join("__cluster_metadata-0/00000000000000000000-0000000000.checkpoint")
    ]);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "KRAFT_VOTERS version=0 voters=[{{id=1 directory_id={DIR1} endpoints=[CONTROLLER://c1.example:9093] kraft_version=0..1}}, {{id=2 directory_id={DIR2} endpoints=[CONTROLLER://c2.example:9093] kraft_version=0..1}}, {{id=3 directory_id={DIR3} endpoints=[CONTROLLER://::1:9095] kraft_version=0..1}}]"
        )),
        "{text}"
    );
    assert!(
        text.contains("KRAFT_VERSION version=0 kraft_version=1"),
        "{text}"
    );
}

// The operator's mode for initial voters it has not seen formatted when the
// first leader is elected (docs/decisions.md D19): a listed node formats as
// an initial voter with its own directory id, any other node as one that
// joins later.
#[test]
fn initial_controllers_for_formats_listed_nodes_as_initial_voters_and_others_as_joiners() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mode = format!("--initial-controllers-for=2+3/{}", initial_controllers());
    let run = |node: &str| {
        let dir = tmp.path().join(format!("c{node}"));
        let out = format(&[
            "--metadata-log-dir",
            dir.to_str().expect("utf-8"),
            "--node-id",
            node,
            "--cluster-id",
            CLUSTER,
            &mode,
        ]);
        assert!(out.status.success(), "node {node}: {}", stderr(&out));
        let meta = std::fs::read_to_string(dir.join("meta.properties")).expect("read");
        let (text, ok) = dump_log::dump(std::slice::from_ref(&dir));
        assert!(ok, "{text}");
        (meta, text)
    };
    // Listed: the initial voters and this node's own directory id.
    let (meta, text) = run("2");
    assert!(meta.contains(&format!("directory.id={DIR2}\n")), "{meta}");
    assert!(text.contains("KRAFT_VOTERS"), "{text}");
    assert!(
        text.contains(&format!("id=3 directory_id={DIR3}")),
        "{text}"
    );
    // Not listed (node 1 is an initial voter the operator saw formatted):
    // no voters, a fresh directory id, as --no-initial-controllers.
    let (meta, text) = run("1");
    assert!(!text.contains("KRAFT_VOTERS"), "{text}");
    assert!(!meta.contains(DIR1), "{meta}");
    assert!(meta.contains("directory.id="), "{meta}");
}

#[test]
fn standalone_mode_takes_the_endpoint_from_the_config_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let config = tmp.path().join("controller.properties");
    std::fs::write(
        &config,
        format!(
            "# a Kafka-style config\nnode.id=7\nmetadata.log.dir={}\ncontroller.listener.names=CTRL\nlisteners=CTRL://0.0.0.0:9093\nadvertised.listeners=CTRL://quorum-0.quorum:9093\n",
            dir.display()
        ),
    )
    .expect("write");
    let out = format(&[
        "--config",
        config.to_str().expect("utf-8"),
        "-t",
        CLUSTER,
        "--directory-id",
        DIR1,
        "--standalone",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, ok) = dump_log::dump(std::slice::from_ref(&dir));
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "voters=[{{id=7 directory_id={DIR1} endpoints=[CTRL://quorum-0.quorum:9093] kraft_version=0..1}}]"
        )),
        "{text}"
    );
    assert!(text.contains("node.id=7"), "{text}");
}

#[test]
fn no_initial_controllers_mode_writes_no_voters() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("observer");
    let out = format(&[
        "--metadata-log-dir",
        dir.to_str().expect("utf-8"),
        "--node-id",
        "4",
        "--cluster-id",
        CLUSTER,
        "--no-initial-controllers",
        "--release-version",
        "3.8",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.join("meta.properties").exists());
    assert!(dir.join("bootstrap.checkpoint").exists());
    assert!(!dir.join("__cluster_metadata-0").exists());
    let (text, _) = dump_log::dump(&[dir.join("bootstrap.checkpoint")]);
    assert!(
        text.contains("FEATURE_LEVEL_RECORD(12) version=0 name=metadata.version feature_level=20"),
        "{text}"
    );
    // A generated directory id is a valid, non-reserved Kafka uuid.
    let meta = std::fs::read_to_string(dir.join("meta.properties")).expect("read");
    let id = meta
        .lines()
        .find_map(|l| l.strip_prefix("directory.id="))
        .expect("directory.id");
    assert_eq!(id.len(), 22);
    assert!(!id.starts_with('-'));
}

#[test]
fn a_cluster_id_starting_with_a_dash_is_accepted_after_an_equals_sign() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("dash");
    let out = format(&[
        "--metadata-log-dir",
        dir.to_str().expect("utf-8"),
        "--node-id",
        "0",
        "--cluster-id=-AAAAAAAAAAAAAAAAAAAAA",
        "--no-initial-controllers",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let meta = std::fs::read_to_string(dir.join("meta.properties")).expect("read");
    assert!(
        meta.contains("cluster.id=-AAAAAAAAAAAAAAAAAAAAA\n"),
        "{meta}"
    );
}

#[test]
fn formatting_again_with_the_same_ids_leaves_the_directory_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    let dir_s = dir.to_str().expect("utf-8");
    let ic = initial_controllers();
    let args = [
        "--metadata-log-dir",
        dir_s,
        "--node-id",
        "1",
        "--cluster-id",
        CLUSTER,
        "--initial-controllers",
        &ic,
    ];
    assert!(format(&args).status.success());
    let before = snapshot_tree(&dir);
    let again = format(&args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("already formatted"),
        "{}",
        stdout(&again)
    );
    assert!(
        stdout(&again).contains("left it alone"),
        "{}",
        stdout(&again)
    );
    assert_eq!(snapshot_tree(&dir), before);
    // Also with another mode: the volume is formatted, nothing to do.
    let observer = format(&[
        "--metadata-log-dir",
        dir_s,
        "--node-id",
        "1",
        "--cluster-id",
        CLUSTER,
        "--no-initial-controllers",
    ]);
    assert!(observer.status.success(), "{}", stderr(&observer));
    assert_eq!(snapshot_tree(&dir), before);
}

#[test]
fn another_cluster_id_or_node_id_is_an_error_naming_both_and_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    let dir_s = dir.to_str().expect("utf-8");
    let base = ["--metadata-log-dir", dir_s, "--no-initial-controllers"];
    let first = format(&[&base[..], &["--node-id", "1", "-t", CLUSTER]].concat());
    assert!(first.status.success());
    let before = snapshot_tree(&dir);

    let other = "AAAAAAAAAAAAAAAAAAAAAQ";
    let err = one_line_error(&format(
        &[&base[..], &["--node-id", "1", "-t", other]].concat(),
    ));
    assert!(err.contains(CLUSTER) && err.contains(other), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(snapshot_tree(&dir), before);

    let err = one_line_error(&format(
        &[&base[..], &["--node-id", "2", "-t", CLUSTER]].concat(),
    ));
    assert!(err.contains("node id 1, not 2"), "{err}");
    assert_eq!(snapshot_tree(&dir), before);
}

#[test]
fn a_directory_with_a_log_but_no_meta_properties_is_not_formatted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    std::fs::create_dir_all(dir.join("__cluster_metadata-0")).expect("mkdir");
    std::fs::write(
        dir.join("__cluster_metadata-0/00000000000000000000.log"),
        b"x",
    )
    .expect("w");
    let before = snapshot_tree(&dir);
    let err = one_line_error(&format(&[
        "--metadata-log-dir",
        dir.to_str().expect("utf-8"),
        "--node-id",
        "1",
        "-t",
        CLUSTER,
        "--no-initial-controllers",
    ]));
    assert!(err.contains("00000000000000000000.log"), "{err}");
    assert_eq!(snapshot_tree(&dir), before);
}

/// Each invalid input: (arguments, a fragment the one-line error must hold).
#[test]
fn invalid_inputs_get_one_line_errors_naming_the_bad_value_and_write_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("never");
    let dir_s = dir.to_str().expect("utf-8").to_string();
    let voters_config = tmp.path().join("voters.properties");
    std::fs::write(
        &voters_config,
        format!(
            "node.id=1\nmetadata.log.dir={dir_s}\ncontroller.quorum.voters=1@c1:9093\nlisteners=CONTROLLER://c1:9093\n"
        ),
    )
    .expect("write");
    let voters_config = voters_config.to_str().expect("utf-8").to_string();
    let ic = initial_controllers();
    let d = |rest: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["--metadata-log-dir".into(), dir_s.clone()];
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            d(&[
                "--node-id",
                "1",
                "--cluster-id=-xyz",
                "--no-initial-controllers",
            ]),
            "malformed cluster id \"-xyz\"",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                "MkU3OEVBNTcwNTJENDM2Q!",
                "--standalone",
            ]),
            "MkU3OEVBNTcwNTJENDM2Q!",
        ),
        (
            d(&[
                "--node-id",
                "9",
                "-t",
                CLUSTER,
                "--initial-controllers",
                &ic,
            ]),
            "node id 9 is not in --initial-controllers",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--standalone",
                "--no-initial-controllers",
            ]),
            "--standalone and --no-initial-controllers",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--standalone",
                "--initial-controllers",
                &ic,
            ]),
            "--standalone and --initial-controllers",
        ),
        (
            d(&["--node-id", "1", "-t", CLUSTER]),
            "exactly one of --standalone, --initial-controllers, --no-initial-controllers",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--initial-controllers",
                "1@c1:9093",
            ]),
            "\"1@c1:9093\"",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--initial-controllers",
                &format!("x@c1:9093:{DIR1}"),
            ]),
            "the node id is not an integer",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--initial-controllers",
                &format!("1@c1:99999:{DIR1}"),
            ]),
            "the port is not in 1..65535",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--no-initial-controllers",
                "--release-version",
                "2.8",
            ]),
            "unknown release version \"2.8\"",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--initial-controllers",
                &ic,
                "--release-version",
                "3.8",
            ]),
            "release version 3.8-IV0 does not support --initial-controllers",
        ),
        (
            d(&["--node-id", "-3", "-t", CLUSTER, "--no-initial-controllers"]),
            "node id -3",
        ),
        (
            d(&[
                "--node-id",
                "1",
                "-t",
                CLUSTER,
                "--no-initial-controllers",
                "--directory-id",
                "AAAAAAAAAAAAAAAAAAAAAA",
            ]),
            "malformed directory id \"AAAAAAAAAAAAAAAAAAAAAA\"",
        ),
        (
            d(&["--node-id", "1", "-t", CLUSTER, "--standalone"]),
            "--standalone needs --config",
        ),
        (
            vec![
                "--config".into(),
                voters_config.clone(),
                "-t".into(),
                CLUSTER.into(),
                "--standalone".into(),
            ],
            "controller.quorum.voters=1@c1:9093",
        ),
        (
            vec![
                "--config".into(),
                voters_config.clone(),
                "-t".into(),
                CLUSTER.into(),
                "--initial-controllers".into(),
                ic.clone(),
            ],
            "controller.quorum.voters=1@c1:9093",
        ),
        (
            vec![
                "--config".into(),
                voters_config.clone(),
                "--node-id".into(),
                "2".into(),
                "-t".into(),
                CLUSTER.into(),
                "--no-initial-controllers".into(),
            ],
            "--node-id 2 differs from node.id=1",
        ),
        (
            d(&[
                "--node-id",
                "2",
                "-t",
                CLUSTER,
                &format!("--initial-controllers-for={ic}"),
            ]),
            "no '/' after the node ids",
        ),
        (
            d(&[
                "--node-id",
                "2",
                "-t",
                CLUSTER,
                &format!("--initial-controllers-for=2+x/{ic}"),
            ]),
            "node id \"x\" is not a non-negative integer",
        ),
        (
            d(&[
                "--node-id",
                "2",
                "-t",
                CLUSTER,
                &format!("--initial-controllers-for=2+7/{ic}"),
            ]),
            "node id 7 is not one of the voters",
        ),
        (
            d(&[
                "--node-id",
                "2",
                "-t",
                CLUSTER,
                "--initial-controllers-for=2/2@c2:9093",
            ]),
            "invalid --initial-controllers entry \"2@c2:9093\"",
        ),
        (
            d(&[
                "--node-id",
                "2",
                "-t",
                CLUSTER,
                "--no-initial-controllers",
                &format!("--initial-controllers-for=2/{ic}"),
            ]),
            "--no-initial-controllers and --initial-controllers-for cannot be used together",
        ),
        (
            d(&[
                "--node-id",
                "2",
                "-t",
                CLUSTER,
                &format!("--initial-controllers-for=2+2/{ic}"),
            ]),
            "node id 2 is listed twice",
        ),
        (
            d(&[
                "--node-id",
                "2",
                "-t",
                CLUSTER,
                "--initial-controllers-for=2/",
            ]),
            "invalid --initial-controllers-for \"2/\": invalid --initial-controllers entry \"\"",
        ),
    ];
    for (args, fragment) in cases {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = format(&refs);
        let err = one_line_error(&out);
        assert!(
            err.contains(fragment),
            "{args:?}: {err:?} lacks {fragment:?}"
        );
        assert!(!dir.exists(), "{args:?} wrote {}", dir.display());
    }
    // A config with controller.quorum.voters is fine for a node that joins later.
    let ok = format(&[
        "--config",
        &voters_config,
        "-t",
        CLUSTER,
        "--no-initial-controllers",
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

// Issue 22: the operator's init container on a volume of an adopted static
// quorum checks and never writes: a formatted volume passes untouched, an
// empty one stops the pod.
#[test]
fn expect_formatted_leaves_a_formatted_directory_alone_and_refuses_an_empty_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c1");
    let dir_s = dir.to_str().expect("utf-8");
    let ids = [
        "--metadata-log-dir",
        dir_s,
        "--node-id",
        "1",
        "--cluster-id",
        CLUSTER,
    ];
    let empty = format(&[&ids[..], &["--expect-formatted"]].concat());
    let err = one_line_error(&empty);
    assert!(err.contains("holds no meta.properties"), "{err}");
    assert!(!dir.exists(), "nothing written");

    let out = format(&[&ids[..], &["--no-initial-controllers"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let before = snapshot_tree(&dir);
    let again = format(&[&ids[..], &["--expect-formatted"]].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("left it alone"),
        "{}",
        stdout(&again)
    );
    assert_eq!(snapshot_tree(&dir), before);

    let other = format(&[
        "--metadata-log-dir",
        dir_s,
        "--node-id",
        "2",
        "--cluster-id",
        CLUSTER,
        "--expect-formatted",
    ]);
    let err = one_line_error(&other);
    assert!(err.contains("node id 1, not 2"), "{err}");
    assert_eq!(snapshot_tree(&dir), before);
}

// A format interrupted before meta.properties (a crash) is formatted again
// by the next run, maybe at another release version or mode. What the first
// one wrote must not outlive the second: a stale bootstrap.checkpoint would
// win over the KIP-1170 0-0 checkpoint when read (D18), and a stale 0-0
// checkpoint would carry the first run's voters into a
// --no-initial-controllers node.
#[test]
fn formatting_again_after_an_interrupted_format_leaves_nothing_of_the_other_layout() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("meta");
    let dir_text = dir.display().to_string();
    let zero = dir.join("__cluster_metadata-0/00000000000000000000-0000000000.checkpoint");
    let base = [
        "--metadata-log-dir",
        &dir_text,
        "--node-id",
        "1",
        "--cluster-id",
        CLUSTER,
        "--directory-id",
        DIR1,
    ];
    let initial = initial_controllers();
    let run = |extra: &[&str]| {
        let out = format(&[&base[..], extra].concat());
        assert!(out.status.success(), "{}", stderr(&out));
    };

    // Old layout with voters, interrupted; then KIP-1170 without voters.
    run(&[
        "--initial-controllers",
        &initial,
        "--release-version",
        "4.1-IV1",
    ]);
    std::fs::remove_file(dir.join("meta.properties")).expect("interrupt");
    run(&["--no-initial-controllers", "--release-version", "4.4-IV2"]);
    assert!(!dir.join("bootstrap.checkpoint").exists());
    let (text, ok) = dump_log::dump(std::slice::from_ref(&zero));
    assert!(ok, "{text}");
    assert!(text.contains("feature_level=33"), "{text}");
    assert!(!text.contains("KRAFT_VOTERS"), "{text}");

    // KIP-1170 with voters, interrupted; then the old layout without voters.
    std::fs::remove_file(dir.join("meta.properties")).expect("interrupt");
    run(&[
        "--initial-controllers",
        &initial,
        "--release-version",
        "4.4-IV2",
    ]);
    std::fs::remove_file(dir.join("meta.properties")).expect("interrupt");
    run(&["--no-initial-controllers", "--release-version", "4.1-IV1"]);
    assert!(dir.join("bootstrap.checkpoint").exists());
    assert!(
        !zero.exists(),
        "the interrupted format's 0-0 checkpoint (its voters) is still there"
    );
}
