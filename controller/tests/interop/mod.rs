//! Harness of the Apache Kafka interop tests: real `kraft-controller`
//! processes on 127.0.0.1 (killed on drop, their logs printed when a test
//! fails) and Kafka's own tool classes run through `tests/kafka/kafka-run-class`
//! with the jars `make kafka-jars` resolved.
//!
//! Owns process handling, text parsing of the tools' output, and which Kafka
//! versions of the matrix a run covers (`KAFKA_VERSIONS`, [`runs_on`],
//! [`per_kafka_version!`]); it must not decide what a test expects.

#![allow(dead_code, clippy::unwrap_used)]

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::Duration,
};

/// The cluster id of Kafka's documentation: not canonical base64 (the last
/// character has non-zero unused bits), accepted by Kafka and kept as given.
pub const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qk";

/// Our binary, built by cargo for this test.
pub fn ours() -> &'static str {
    env!("CARGO_BIN_EXE_kraft-controller")
}

/// `tests/kafka/kafka-run-class` of this repository.
pub fn kafka_run_class() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kafka/kafka-run-class")
}

/// The machine-wide lock under which one Kafka cluster's JVMs (three
/// brokers, and Kafka's controllers for a baseline) run, since the machine
/// has two cores: the two Kafka versions' tests of one binary (two test
/// threads) take turns, and so does any other run of these tests on the
/// machine (`make test-interop` runs the other binaries beside them,
/// `dev/interop-tests.sh`).
/// An exclusive `flock(2)` on `/tmp/kraftwerk-interop-cluster.lock` (not
/// `$TMPDIR`: every run on the machine must share it),
/// held by the returned file until it drops; the kernel releases it when
/// the process dies, so a killed test never leaves it held. Blocks until
/// the lock is free, printing once that it waits.
///
/// Panics (one line) when the lock file cannot be opened or locked.
#[must_use = "the lock is released when the returned file drops"]
pub fn one_cluster_at_a_time(who: &str) -> std::fs::File {
    let path = std::path::Path::new("/tmp/kraftwerk-interop-cluster.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open the lock file {}: {e}", path.display()));
    match file.try_lock() {
        Ok(()) => return file,
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!(
                "{who}: waiting for {} (another Kafka cluster runs)",
                path.display()
            );
        }
        Err(std::fs::TryLockError::Error(e)) => {
            panic!("cannot lock {}: {e}", path.display())
        }
    }
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    file
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The Kafka versions of this run, the interop matrix: the words of the
/// `KAFKA_VERSIONS` environment variable (spaces or commas between them),
/// which `make test-interop KAFKA_VERSIONS="4.1.2 4.4.0"` passes; without
/// it (a `cargo test` by hand), every version of `mk/kafka.mk`'s
/// `KAFKA_VERSIONS`, so that the whole matrix runs unless one asks for less.
/// Panics with one line when the variable is set but names no version, or
/// a version that is not in `mk/kafka.mk`'s list: the cases are written for
/// those versions only ([`per_kafka_version!`], [`only_on`]), so any other
/// would run no case and pass.
pub fn kafka_versions() -> Vec<String> {
    let matrix = matrix_versions();
    let Ok(list) = std::env::var("KAFKA_VERSIONS") else {
        return matrix;
    };
    let versions = words(&list);
    assert!(
        !versions.is_empty(),
        "KAFKA_VERSIONS is set but names no Kafka version: {list:?}"
    );
    if let Some(unknown) = versions.iter().find(|v| !matrix.contains(v)) {
        panic!(
            "KAFKA_VERSIONS names Kafka {unknown}, for which no interop case is written (mk/kafka.mk's matrix: {})",
            matrix.join(" ")
        );
    }
    versions
}

/// The words of `text`, split at spaces and commas.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `mk/kafka.mk`'s `KAFKA_VERSIONS`: every version the cases are written for.
fn matrix_versions() -> Vec<String> {
    let makefile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mk/kafka.mk");
    let text = std::fs::read_to_string(&makefile)
        .unwrap_or_else(|e| panic!("reading {}: {e}", makefile.display()));
    text.lines()
        .find_map(|l| l.strip_prefix("KAFKA_VERSIONS :="))
        .map(words)
        .unwrap_or_else(|| panic!("no `KAFKA_VERSIONS :=` line in {}", makefile.display()))
}

/// The classpath file `make kafka-jars` writes for Kafka `version`
/// (`$KRAFTWERK_CACHE/kafka-<version>.classpath`, the cache defaulting to
/// `~/.cache/kraftwerk` as in `tests/kafka/kafka-run-class`).
pub fn classpath_file(version: &str) -> PathBuf {
    let cache = std::env::var_os("KRAFTWERK_CACHE").map_or_else(
        || Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/kraftwerk"),
        PathBuf::from,
    );
    cache.join(format!("kafka-{version}.classpath"))
}

/// Whether the case of Kafka `version` runs in this run: `true` when
/// `version` is one of [`kafka_versions`] (and then its jars must be
/// resolved: panics with one line naming the version and the make target
/// that resolves them otherwise); `false`, after saying so on stderr, when
/// the run's `KAFKA_VERSIONS` leaves it out.
pub fn runs_on(version: &str) -> bool {
    let versions = kafka_versions();
    if !versions.iter().any(|v| v == version) {
        eprintln!(
            "SKIPPED on Kafka {version}: not in KAFKA_VERSIONS ({})",
            versions.join(" ")
        );
        return false;
    }
    let classpath = classpath_file(version);
    assert!(
        std::fs::metadata(&classpath).is_ok_and(|m| m.len() > 0),
        "Kafka {version}'s jars are not resolved ({} is missing): run `make kafka-jars KAFKA_VERSIONS={version}`",
        classpath.display()
    );
    true
}

/// For a case that exists on Kafka `version` only: says on stderr, for
/// every other version of the run, that the case does not run there and
/// `why` (one line, as `docs/interop.md`'s matrix cell says it); then
/// [`runs_on`]`(version)`.
pub fn only_on(version: &str, why: &str) -> bool {
    for other in kafka_versions().iter().filter(|v| *v != version) {
        eprintln!("NOT RUN on Kafka {other}: {why}");
    }
    runs_on(version)
}

/// One `#[test]` per Kafka version of the matrix, each running
/// `body(version)` when [`runs_on`] says the version is in this run:
/// `per_kafka_version!(body; kafka_4_1_2_name => "4.1.2", kafka_4_4_0_name => "4.4.0");`
/// (test names say their version).
#[macro_export]
macro_rules! per_kafka_version {
    ($body:path; $($name:ident => $version:literal),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                if $crate::interop::runs_on($version) {
                    $body($version);
                }
            }
        )+
    };
}

/// Runs a Kafka tool class; returns stdout, panics with all output if it fails.
pub fn kafka(class: &str, args: &[&str]) -> String {
    kafka_at(None, class, args)
}

/// [`kafka`] with the jars of Kafka `version` (one of `mk/kafka.mk`'s
/// `KAFKA_VERSIONS`; `None`: the pom's default).
pub fn kafka_at(version: Option<&str>, class: &str, args: &[&str]) -> String {
    let mut command = Command::new(kafka_run_class());
    if let Some(v) = version {
        command.env("KAFKA_VERSION", v);
    }
    let output = command
        .arg(class)
        .args(args)
        .output()
        .expect("kafka-run-class runs");
    assert!(
        output.status.success(),
        "{class} {args:?} failed ({}):\n{}",
        output.status,
        text(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Kafka `version`'s `class` with `args`, for a test that expects it may
/// fail: (whether it exited 0, its stdout then stderr).
pub fn try_kafka_at(version: &str, class: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(kafka_run_class())
        .env("KAFKA_VERSION", version)
        .arg(class)
        .args(args)
        .output()
        .expect("kafka-run-class runs");
    (output.status.success(), text(&output))
}

/// Runs our binary; returns stdout, panics with all output if it fails.
pub fn run_ours(args: &[&str]) -> String {
    let output = Command::new(ours())
        .args(args)
        .output()
        .expect("kraft-controller runs");
    assert!(
        output.status.success(),
        "kraft-controller {args:?} failed ({}):\n{}",
        output.status,
        text(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// An admin config for Kafka's tools with short timeouts, so a wrong answer
/// fails in seconds rather than after Kafka's default minute.
pub fn admin_config(dir: &Path) -> PathBuf {
    let path = dir.join("admin.properties");
    std::fs::write(
        &path,
        "request.timeout.ms=5000\ndefault.api.timeout.ms=15000\n",
    )
    .expect("write admin.properties");
    path
}

#[path = "../support/ports.rs"]
mod ports;
pub use ports::free_port;

#[path = "../support/wait.rs"]
mod wait;
pub use wait::{poll_until, wait_for};

pub mod brokers;
pub mod clients;
pub mod mixed;

/// One controller: its properties file, directory, and process when running.
#[derive(Debug)]
pub struct Node {
    /// node.id.
    pub id: i32,
    /// Controller listener port on 127.0.0.1.
    pub port: u16,
    /// metadata.log.dir.
    pub dir: PathBuf,
    /// The properties file.
    pub config: PathBuf,
    /// Port of the HTTP endpoint (`/metrics`, `/metadata`) on 127.0.0.1.
    pub http: u16,
    log: PathBuf,
    child: Option<Child>,
}

impl Node {
    /// Writes the properties of node `id` under `root`; `bootstrap` is
    /// `controller.quorum.bootstrap.servers`.
    pub fn new(root: &Path, id: i32, port: u16, bootstrap: &str) -> Self {
        let dir = root.join(format!("node{id}"));
        let config = root.join(format!("node{id}.properties"));
        let http = free_port();
        std::fs::write(
            &config,
            format!(
                "process.roles=controller\nnode.id={id}\ncontroller.listener.names=CONTROLLER\n\
                 listeners=CONTROLLER://127.0.0.1:{port}\n\
                 controller.quorum.bootstrap.servers={bootstrap}\n\
                 metadata.log.dir={d}\nlog.dirs={d}\nkraftwerk.http.listener=127.0.0.1:{http}\n",
                d = dir.display()
            ),
        )
        .expect("write node properties");
        Self {
            id,
            port,
            dir,
            config,
            http,
            log: root.join(format!("node{id}.log")),
            child: None,
        }
    }

    /// `HOST:PORT` of the listener.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Appends `lines` (`key=value` lines) to the properties file.
    pub fn append_config(&self, lines: &str) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&self.config)
            .and_then(|mut f| f.write_all(lines.as_bytes()))
            .expect("append to node properties");
    }

    /// Replaces the quorum lines of the properties file
    /// (`controller.quorum.voters` and `controller.quorum.bootstrap.servers`)
    /// by `line`, e.g. `controller.quorum.voters=1@127.0.0.1:9093` for a
    /// static quorum (KAFKA-16538 swaps them back).
    pub fn set_quorum_config(&self, line: &str) {
        let text = std::fs::read_to_string(&self.config).expect("read node properties");
        let mut text: String = text
            .lines()
            .filter(|l| {
                !l.starts_with("controller.quorum.bootstrap.servers=")
                    && !l.starts_with("controller.quorum.voters=")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        text.push_str(line);
        text.push('\n');
        std::fs::write(&self.config, text).expect("write node properties");
    }

    /// Starts `kraft-controller run`; its stderr is appended to the node's
    /// log, so the log of an earlier run stays.
    pub fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open node log");
        let child = Command::new(ours())
            .args(["run", "--config"])
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start kraft-controller run");
        self.child = Some(child);
    }

    /// Kills the process and waits for it (its files stay).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The node's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the process was started and has not exited.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// `GET path` on the HTTP endpoint: `(status, body)`, `None` when
    /// nothing answers.
    pub fn http_get(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.http, path)
    }

    /// A gauge or counter of `/metrics` without labels (Prometheus text),
    /// `None` when the node does not answer or has no such metric.
    pub fn metric(&self, name: &str) -> Option<f64> {
        let (code, body) = self.http_get("/metrics")?;
        if code != 200 {
            return None;
        }
        body.lines().find_map(|line| {
            let (key, value) = line.split_once(' ')?;
            (key == name).then(|| value.trim().parse().ok()).flatten()
        })
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("----- log of node {} -----\n{}", self.id, self.log_text());
        }
    }
}

/// `GET path` on `127.0.0.1:port` over HTTP/1.1: `(status, body)`, `None`
/// when nothing answers within a second or two.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream =
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.get(9..12)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_owned();
    Some((status, body))
}

/// `n` nodes with ids 1..=n, all listing each other as bootstrap servers.
pub fn nodes(root: &Path, n: i32) -> Vec<Node> {
    let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let bootstrap = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    (1..=n)
        .zip(ports)
        .map(|(id, port)| Node::new(root, id, port, &bootstrap))
        .collect()
}

/// `id@127.0.0.1:port,…` of `nodes`, for `controller.quorum.voters`.
pub fn static_voters(nodes: &[Node]) -> String {
    nodes
        .iter()
        .map(|n| format!("{}@127.0.0.1:{}", n.id, n.port))
        .collect::<Vec<_>>()
        .join(",")
}

/// Kafka's `kafka-features` class (`FeatureCommand`).
pub const FEATURE_COMMAND: &str = "org.apache.kafka.tools.FeatureCommand";

/// Kafka 4.4.0's `kafka-features --bootstrap-controller ADDRESS describe`
/// (Admin over ApiVersions); its stdout, panics if the tool fails.
pub fn kafka_features_describe(address: &str) -> String {
    kafka_features_describe_at("4.4.0", address)
}

/// [`kafka_features_describe`] with Kafka `version`'s tool.
pub fn kafka_features_describe_at(version: &str, address: &str) -> String {
    kafka_at(
        Some(version),
        FEATURE_COMMAND,
        &["--bootstrap-controller", address, "describe"],
    )
}

/// The `Feature: kraft.version` row of a FeatureCommand describe (ours or
/// Kafka's), its columns separated by single spaces.
pub fn kraft_version_row(describe: &str) -> String {
    feature_row(describe, "kraft.version")
}

/// The `Feature: <feature>` row of a FeatureCommand describe (ours or
/// Kafka's), its columns separated by single spaces.
pub fn feature_row(describe: &str, feature: &str) -> String {
    describe
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(feature))
        .unwrap_or_else(|| panic!("no {feature} row:\n{describe}"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The finalized `kraft.version` that the controller at `address` reports
/// (our `features describe`, ApiVersions); `None` while it does not answer.
pub fn our_kraft_version(address: &str) -> Option<i16> {
    let output = Command::new(ours())
        .args(["features", "--bootstrap-controller", address, "describe"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let row = kraft_version_row(&String::from_utf8_lossy(&output.stdout));
    let mut words = row.split(' ');
    words.find(|w| *w == "FinalizedVersionLevel:")?;
    words.next()?.parse().ok()
}

/// `id@127.0.0.1:port:dir` for `--initial-controllers`.
pub fn initial_controllers(nodes: &[Node], dirs: &[&str]) -> String {
    nodes
        .iter()
        .zip(dirs)
        .map(|(n, d)| format!("{}@127.0.0.1:{}:{d}", n.id, n.port))
        .collect::<Vec<_>>()
        .join(",")
}

/// `Key: value` lines of a `describe --status` output.
pub fn parse_status(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Rows of a `describe --replication` table as maps from the header's names.
pub fn parse_replication(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let names: Vec<&str> = header.split_whitespace().collect();
    lines
        .map(|l| {
            names
                .iter()
                .zip(l.split_whitespace())
                .map(|(k, v)| ((*k).to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

/// Our `quorum describe --status`, parsed; `None` while it fails (no leader yet).
pub fn our_status(address: &str) -> Option<BTreeMap<String, String>> {
    let output = Command::new(ours())
        .args([
            "quorum",
            "--bootstrap-controller",
            address,
            "--timeout-ms",
            "2000",
        ])
        .args(["describe", "--status"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| parse_status(&String::from_utf8_lossy(&output.stdout)))
}

/// How long Kafka's JVM controllers, just started (or restarted whole), may
/// take to elect a leader and commit. Three of them took over 60 s on the
/// 2-core machine while two interop groups ran side by side after a fresh
/// build (one took 40 s from "Starting controller" to its socket server,
/// session 21). Ours elect in about a second and get 30 s
/// (`brokers::Quorum::first_leader_timeout`).
pub const FIRST_LEADER_TIMEOUT: Duration = Duration::from_secs(180);

/// Waits until `address` reports a leader and a high watermark above 0
/// (30 s: ours, or a JVM already running).
pub fn wait_for_leader(address: &str) -> BTreeMap<String, String> {
    wait_for_leader_within(address, Duration::from_secs(30))
}

/// Waits up to `timeout` until `address` reports a leader and a high
/// watermark above 0.
pub fn wait_for_leader_within(address: &str, timeout: Duration) -> BTreeMap<String, String> {
    wait_for(timeout, "a leader with a high watermark", || {
        our_status(address).filter(|s| {
            s.get("LeaderId").is_some_and(|l| l != "-1")
                && s.get("HighWatermark")
                    .and_then(|h| h.parse::<i64>().ok())
                    .is_some_and(|h| h > 0)
        })
    })
}

/// Kafka's `DumpLogSegments --cluster-metadata-decoder` of `file`, with the
/// decoded record lines only (`| offset: …`), stripped of what depends on
/// the time of writing (CreateTime, lastContainedLogTimestamp).
pub fn kafka_decoded_records(file: &Path) -> Vec<String> {
    decoded_records(&dump_at(None, file))
}

/// [`kafka_decoded_records`] with Kafka `version`'s `DumpLogSegments`.
pub fn kafka_decoded_records_at(version: &str, file: &Path) -> Vec<String> {
    decoded_records(&dump_at(Some(version), file))
}

/// Kafka's `DumpLogSegments --cluster-metadata-decoder` of `file` with the
/// jars of `version` (`None`: the pom's default): its stdout, checked for
/// errors. Kafka 4.1 has the class in `kafka_2.13` (Scala,
/// `kafka.tools`), 4.4 in `kafka-tools` (`org.apache.kafka.tools`).
fn dump_at(version: Option<&str>, file: &Path) -> String {
    let class = match version {
        Some(v) if !v.starts_with("4.1") => "org.apache.kafka.tools.DumpLogSegments",
        _ => "kafka.tools.DumpLogSegments",
    };
    let out = kafka_at(
        version,
        class,
        &[
            "--cluster-metadata-decoder",
            "--files",
            &file.display().to_string(),
        ],
    );
    assert_no_errors(&out, file);
    out
}

/// The `| offset: …` lines of a dump, without CreateTime and
/// lastContainedLogTimestamp.
fn decoded_records(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("| offset:"))
        .map(|l| {
            let l = strip_number_after(l, "CreateTime: ");
            strip_number_after(&l, "\"lastContainedLogTimestamp\":")
        })
        .collect()
}

/// Kafka's decoded records ([`kafka_decoded_records`]) of every segment of
/// the metadata log under `dir` whose offset is below `end`, in offset order.
pub fn kafka_records_below(dir: &Path, end: i64) -> Vec<String> {
    records_below(None, dir, end)
}

/// [`kafka_records_below`] with Kafka `version`'s `DumpLogSegments`.
pub fn kafka_records_below_at(version: &str, dir: &Path, end: i64) -> Vec<String> {
    records_below(Some(version), dir, end)
}

fn records_below(version: Option<&str>, dir: &Path, end: i64) -> Vec<String> {
    let partition = dir.join("__cluster_metadata-0");
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&partition)
        .unwrap_or_else(|e| panic!("reading {}: {e}", partition.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    segments
        .iter()
        .flat_map(|s| decoded_records(&dump_at(version, s)))
        .filter(|l| {
            l.strip_prefix("| offset: ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|o| o.parse::<i64>().ok())
                .is_some_and(|o| o < end)
        })
        .collect()
}

/// Kafka's dump of `file`: the number of batches and of records.
pub fn kafka_counts(file: &Path) -> (usize, usize) {
    counts(&dump_at(None, file))
}

/// [`kafka_counts`] with Kafka `version`'s `DumpLogSegments`.
pub fn kafka_counts_at(version: &str, file: &Path) -> (usize, usize) {
    counts(&dump_at(Some(version), file))
}

fn counts(out: &str) -> (usize, usize) {
    (
        out.lines().filter(|l| l.starts_with("baseOffset:")).count(),
        out.lines().filter(|l| l.starts_with("| offset:")).count(),
    )
}

/// Our `dump-log` of `file`: the number of batches and of records.
pub fn our_counts(file: &Path) -> (usize, usize) {
    let out = run_ours(&["dump-log", &file.display().to_string()]);
    (
        out.lines().filter(|l| l.starts_with("batch ")).count(),
        out.lines().filter(|l| l.starts_with("  offset=")).count(),
    )
}

fn assert_no_errors(out: &str, file: &Path) {
    for word in ["Error", "error", "Exception", "Could not", "isvalid: false"] {
        assert!(
            !out.contains(word),
            "Kafka's dump of {} says {word:?}:\n{out}",
            file.display()
        );
    }
}

fn strip_number_after(line: &str, marker: &str) -> String {
    match line.find(marker) {
        None => line.to_owned(),
        Some(i) => {
            let start = i + marker.len();
            let end = line[start..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(line.len(), |e| start + e);
            format!("{}{}", &line[..start], &line[end..])
        }
    }
}

/// A Java properties file as a map, comments dropped.
pub fn properties(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}
