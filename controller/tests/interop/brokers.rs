//! Apache Kafka's own servers for the broker interop test (issue 16):
//! Kafka brokers (`process.roles=broker`) and Kafka controllers
//! (`process.roles=controller`) run as `kafka.Kafka` JVMs from the jars of
//! one version of the matrix, and a metadata quorum that is either three of
//! ours or three of Kafka's, so that the same steps run against both.
//!
//! Each start of a server writes its own log file (`broker11.1.log`,
//! `broker11.2.log`, …, INFO with ISO-8601 timestamps, from
//! `tests/kafka/log4j2-server.yaml`), so a wait for a log line only sees the
//! current run. Servers are killed on drop; when a test fails, the tail of
//! every log is printed and [`KeptDir`] keeps the directory.
//!
//! Owns processes, files and parsing; it must not decide what a test expects.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use kafka_protocol::messages::{DescribeClusterRequest, RequestKind, ResponseKind};
use kraft_controller::wire::client::{ClientConfig, Connection};

use super::{
    CLUSTER_ID, Node, free_port, initial_controllers, kafka_at, kafka_run_class, nodes, our_status,
    run_ours, wait_for,
};

/// Kafka's `StorageTool` class (`kafka-storage`).
pub const STORAGE_TOOL: &str = "kafka.tools.StorageTool";
/// Kafka's `ClusterTool` class (`kafka-cluster`).
pub const CLUSTER_TOOL: &str = "org.apache.kafka.tools.ClusterTool";
/// Directory ids of the three controllers, canonical and not reserved.
pub const CONTROLLER_DIRS: [&str; 3] = [
    "LaBaIMiMRmy8YSD1cAd8Ew",
    "q6CGIHGkTStroizn5hrLMg",
    "Ww7qv0dqTt2yo2vBmEyd3A",
];
/// The heap of every Kafka JVM the test starts.
pub const HEAP: &str = "-Xmx384m";

/// `tests/kafka/log4j2-server.yaml`: INFO to stdout, ISO-8601 timestamps.
fn server_log4j() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kafka/log4j2-server.yaml")
}

/// The test's directory: deleted when the test passes, kept (and its path
/// printed) when it fails, so the servers' logs can be read afterwards.
#[derive(Debug)]
pub struct KeptDir(Option<tempfile::TempDir>);

impl KeptDir {
    /// A new temporary directory whose name starts with `prefix`.
    pub fn new(prefix: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("create a temp dir");
        Self(Some(dir))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.0
            .as_ref()
            .map_or(Path::new("/nonexistent"), |d| d.path())
    }
}

impl Drop for KeptDir {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take()
            && std::thread::panicking()
        {
            let path = dir.keep();
            eprintln!(
                "----- the test's files and logs are kept in {} -----",
                path.display()
            );
        }
    }
}

/// What a Kafka server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `process.roles=broker`.
    Broker,
    /// `process.roles=controller`.
    Controller,
}

/// One Kafka server (a `kafka.Kafka` JVM): its files, and its process when
/// running.
#[derive(Debug)]
pub struct KafkaServer {
    /// `node.id`.
    pub id: i32,
    /// Broker or controller.
    pub role: Role,
    /// The Kafka version whose jars run it.
    pub version: &'static str,
    /// Port of its one listener on 127.0.0.1 (PLAINTEXT or CONTROLLER).
    pub port: u16,
    /// `log.dirs` (one directory).
    pub dir: PathBuf,
    /// The properties file.
    pub config: PathBuf,
    root: PathBuf,
    starts: u32,
    child: Option<Child>,
    /// When the current process was spawned.
    pub started_at: Option<Instant>,
}

impl KafkaServer {
    /// A broker `id` of Kafka `version` under `root`, with the controller
    /// quorum at `bootstrap` (`controller.quorum.bootstrap.servers`) and
    /// `extra` properties (`key=value` lines).
    pub fn broker(
        root: &Path,
        version: &'static str,
        id: i32,
        bootstrap: &str,
        extra: &str,
    ) -> Self {
        let port = free_port();
        let props = format!(
            "process.roles=broker\nnode.id={id}\n\
             listeners=PLAINTEXT://127.0.0.1:{port}\n\
             inter.broker.listener.name=PLAINTEXT\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
             controller.quorum.bootstrap.servers={bootstrap}\n{extra}"
        );
        Self::new(root, version, Role::Broker, id, port, &props)
    }

    /// A controller `id` of Kafka `version` listening on `port`, with the
    /// quorum at `bootstrap` and `extra` properties.
    pub fn controller(
        root: &Path,
        version: &'static str,
        id: i32,
        port: u16,
        bootstrap: &str,
        extra: &str,
    ) -> Self {
        let props = format!(
            "process.roles=controller\nnode.id={id}\n\
             listeners=CONTROLLER://127.0.0.1:{port}\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT\n\
             controller.quorum.bootstrap.servers={bootstrap}\n{extra}"
        );
        Self::new(root, version, Role::Controller, id, port, &props)
    }

    fn new(
        root: &Path,
        version: &'static str,
        role: Role,
        id: i32,
        port: u16,
        props: &str,
    ) -> Self {
        let name = Self::name_of(role, id);
        let dir = root.join(&name);
        let config = root.join(format!("{name}.properties"));
        std::fs::write(&config, format!("{props}log.dirs={}\n", dir.display()))
            .expect("write server properties");
        Self {
            id,
            role,
            version,
            port,
            dir,
            config,
            root: root.to_owned(),
            starts: 0,
            child: None,
            started_at: None,
        }
    }

    fn name_of(role: Role, id: i32) -> String {
        match role {
            Role::Broker => format!("broker{id}"),
            Role::Controller => format!("kcontroller{id}"),
        }
    }

    /// `broker11`, `kcontroller1`.
    pub fn name(&self) -> String {
        Self::name_of(self.role, self.id)
    }

    /// `127.0.0.1:PORT` of its listener.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Formats `log.dirs` with Kafka's own `StorageTool format`, the
    /// cluster id [`CLUSTER_ID`] and `mode` (e.g. `--initial-controllers …`;
    /// a broker needs none).
    pub fn format(&self, mode: &[&str]) {
        let config = self.config.display().to_string();
        let mut args = vec!["format", "--config", &config, "--cluster-id", CLUSTER_ID];
        args.extend_from_slice(mode);
        kafka_at(Some(self.version), STORAGE_TOOL, &args);
    }

    fn log_path(&self, start: u32) -> PathBuf {
        self.root.join(format!("{}.{start}.log", self.name()))
    }

    /// Starts `kafka.Kafka` with its properties, heap [`HEAP`]; output to a
    /// new log file.
    pub fn start(&mut self) {
        assert!(self.child.is_none(), "{} is already running", self.name());
        self.starts += 1;
        let log = std::fs::File::create(self.log_path(self.starts)).expect("create server log");
        let err = log.try_clone().expect("clone server log handle");
        let child = Command::new(kafka_run_class())
            .env("KAFKA_VERSION", self.version)
            .env("KAFKA_HEAP_OPTS", HEAP)
            .env("KAFKA_LOG4J_CONFIG", server_log4j())
            .arg("kafka.Kafka")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .expect("start kafka.Kafka");
        self.child = Some(child);
        self.started_at = Some(Instant::now());
    }

    /// Whether the process was started and has not exited.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Sends SIGTERM (what `kafka-server-stop` does) and waits up to
    /// `timeout` for the JVM to exit; returns its exit status.
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let name = self.name();
        let child = self.child.as_mut().expect("server is running");
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("run kill -TERM");
        assert!(status.success(), "kill -TERM {name} failed");
        let exit = wait_for(timeout, &format!("{name} to exit after SIGTERM"), || {
            child.try_wait().ok().flatten()
        });
        self.child = None;
        exit
    }

    /// Sends `signal` (`STOP`, `CONT`) to the running process.
    pub fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("server is running");
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {} failed", self.name());
    }

    /// SIGKILL (`kill -9`) and reaps the process.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The log of the current (or last) run.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log_path(self.starts)).unwrap_or_default()
    }

    /// The lines of the current run's log that contain `needle`.
    pub fn lines_with(&self, needle: &str) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }

    /// Waits up to `timeout` for a line containing `needle` in the current
    /// run's log and returns it; panics at once if the process exits first.
    pub fn wait_log(&mut self, needle: &str, timeout: Duration) -> String {
        self.wait_log_where(&format!("{needle:?}"), timeout, |l| l.contains(needle))
    }

    /// Waits up to `timeout` for a line of the current run's log for which
    /// `matches` holds (`what` names it) and returns it; panics at once if
    /// the process exits first.
    pub fn wait_log_where(
        &mut self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> String {
        let description = format!("{} to log {what}", self.name());
        wait_for(timeout, &description, || {
            if let Some(line) = self.log_text().lines().find(|l| matches(l)) {
                return Some(line.to_owned());
            }
            if !self.is_running() {
                let text = self.log_text();
                let errors: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains(" ERROR "))
                    .take(4)
                    .collect();
                panic!(
                    "{} exited while waiting for it to log {what}; its first errors:\n{}\n...its last lines:\n{}",
                    self.name(),
                    errors.join("\n"),
                    tail(&text, 20)
                );
            }
            None
        })
    }
}

impl Drop for KafkaServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            for start in 1..=self.starts {
                let text = std::fs::read_to_string(self.log_path(start)).unwrap_or_default();
                eprintln!(
                    "----- {} (run {start}), lifecycle lines and last 25 lines -----\n{}\n...\n{}",
                    self.name(),
                    text.lines()
                        .filter(|l| l.contains("BrokerLifecycleManager") || l.contains(" ERROR "))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    tail(&text, 25)
                );
            }
        }
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The time of day of a Kafka log line (`[2026-12-02T00:14:38,663] …`), ms
/// since midnight; `None` when the line has no such timestamp.
pub fn log_time_ms(line: &str) -> Option<i64> {
    let t = line.get(12..24)?; // 00:14:38,663
    let (hms, ms) = t.split_once(',')?;
    let mut parts = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(((h * 60 + m) * 60 + s) * 1000 + ms.parse::<i64>().ok()?)
}

/// The time between two Kafka log lines of one run, by their timestamps
/// (a run that crosses midnight is handled).
pub fn between(first: &str, last: &str) -> Duration {
    let a = log_time_ms(first).unwrap_or_else(|| panic!("no timestamp in {first:?}"));
    let b = log_time_ms(last).unwrap_or_else(|| panic!("no timestamp in {last:?}"));
    let d = if b >= a { b - a } else { b + 86_400_000 - a };
    Duration::from_millis(u64::try_from(d).unwrap_or(0))
}

/// DescribeCluster v2 (KIP-1073, `includeFencedBrokers`) sent to the broker
/// at `address`: each broker id its metadata image knows, and whether it is
/// fenced. `None` when the broker does not answer or answers an error.
/// This is what Kafka's `Admin.describeCluster` reads, without a JVM.
pub fn broker_view(address: &str) -> Option<BTreeMap<i32, bool>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    runtime.block_on(async {
        let config = ClientConfig {
            request_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(1),
            client_id: "interop-broker-view".into(),
            ..ClientConfig::default()
        };
        let conn = Connection::connect(address, config).await.ok()?;
        let request = DescribeClusterRequest::default()
            .with_endpoint_type(1)
            .with_include_fenced_brokers(true);
        let ResponseKind::DescribeCluster(r) = conn
            .call(2, RequestKind::DescribeCluster(request))
            .await
            .ok()?
        else {
            return None;
        };
        conn.close("done");
        (r.error_code == 0).then(|| {
            r.brokers
                .iter()
                .map(|b| (b.broker_id.0, b.is_fenced))
                .collect()
        })
    })
}

/// Kafka's `kafka-cluster list-endpoints --include-fenced-brokers` against
/// the brokers at `bootstrap` (Kafka's Admin `describeCluster`): id → STATE
/// (`fenced`/`unfenced`).
pub fn kafka_list_endpoints(
    version: &'static str,
    bootstrap: &str,
    admin: &Path,
) -> BTreeMap<i32, String> {
    let out = kafka_at(
        Some(version),
        CLUSTER_TOOL,
        &[
            "list-endpoints",
            "--bootstrap-server",
            bootstrap,
            // 4.1's list-endpoints has only `--config` (deprecated in 4.4).
            "--config",
            &admin.display().to_string(),
            "--include-fenced-brokers",
        ],
    );
    out.lines()
        .skip_while(|l| !l.starts_with("ID"))
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            Some((cols.first()?.parse().ok()?, (*cols.get(4)?).to_owned()))
        })
        .collect()
}

/// Kafka's `DumpLogSegments --cluster-metadata-decoder` of `file` with the
/// jars of `version`: its whole output, after checking it has no error.
pub fn kafka_dump(version: &'static str, file: &Path) -> String {
    // 4.1 has it in kafka_2.13 (Scala), 4.4 in kafka-tools (Java).
    let class = if version.starts_with("4.1") {
        "kafka.tools.DumpLogSegments"
    } else {
        "org.apache.kafka.tools.DumpLogSegments"
    };
    let out = kafka_at(
        Some(version),
        class,
        &[
            "--cluster-metadata-decoder",
            "--files",
            &file.display().to_string(),
        ],
    );
    super::assert_no_errors(&out, file);
    out
}

/// The newest snapshot (`OFFSET-EPOCH.checkpoint`, not the 0-0 bootstrap)
/// in a `__cluster_metadata-0` directory, with its end offset.
pub fn newest_snapshot(partition: &Path) -> Option<(i64, PathBuf)> {
    std::fs::read_dir(partition)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".checkpoint") && !n.starts_with("00000000000000000000-"))
        .filter_map(|n| Some((n.split('-').next()?.parse::<i64>().ok()?, partition.join(n))))
        .max()
}

/// The `metadata.version` Kafka `version`'s `kafka-storage format` writes by
/// default (its `MetadataVersion.LATEST_PRODUCTION`): 4.1-IV1 (27) for
/// 4.1.2, 4.4-IV2 (33) for 4.4.0. Our controllers of a run with `version`'s
/// brokers are formatted at it, so that each broker runs at its newest level.
pub fn release_version_of(version: &str) -> &'static str {
    if version.starts_with("4.1") {
        "4.1-IV1"
    } else if version.starts_with("4.4") {
        "4.4-IV2"
    } else {
        panic!("no release version known for Kafka {version}")
    }
}

/// Three controllers, ours or Kafka's, formatted with `--initial-controllers`
/// and started; the steps of the test call the same methods on both.
#[derive(Debug)]
pub enum Quorum {
    /// Three `kraft-controller run`.
    Ours(Vec<Node>),
    /// Three `kafka.Kafka` with `process.roles=controller` of a version.
    Kafka(Vec<KafkaServer>),
}

impl Quorum {
    /// Three of ours (ids 1..=3) with `extra` properties, formatted by our
    /// `format --initial-controllers` at the `metadata.version` Kafka
    /// `version`'s own format defaults to ([`release_version_of`]), started.
    pub fn ours(root: &Path, version: &str, extra: &str) -> Self {
        let mut nodes = nodes(root, 3);
        let initial = initial_controllers(&nodes, &CONTROLLER_DIRS);
        for node in &nodes {
            node.append_config(extra);
            run_ours(&[
                "format",
                "--config",
                &node.config.display().to_string(),
                "--cluster-id",
                CLUSTER_ID,
                "--initial-controllers",
                &initial,
                "--release-version",
                release_version_of(version),
            ]);
        }
        for node in &mut nodes {
            node.start();
        }
        Self::Ours(nodes)
    }

    /// Three of Kafka `version`'s controllers (ids 1..=3) with `extra`
    /// properties, formatted by Kafka's `StorageTool`, started.
    pub fn kafka(root: &Path, version: &'static str, extra: &str) -> Self {
        let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let bootstrap = ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        let initial = (1..=3)
            .zip(&ports)
            .zip(CONTROLLER_DIRS)
            .map(|((id, port), dir)| format!("{id}@127.0.0.1:{port}:{dir}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut servers: Vec<KafkaServer> = (1..=3)
            .zip(ports)
            .map(|(id, port)| KafkaServer::controller(root, version, id, port, &bootstrap, extra))
            .collect();
        for server in &servers {
            server.format(&["--initial-controllers", &initial]);
        }
        for server in &mut servers {
            server.start();
        }
        Self::Kafka(servers)
    }

    /// "our" or "Kafka 4.1.2's" (as in "… controllers").
    pub fn name(&self) -> String {
        match self {
            Self::Ours(_) => "our".into(),
            Self::Kafka(s) => format!("Kafka {}'s", s.first().map_or("?", |s| s.version)),
        }
    }

    /// The controller ids.
    pub fn ids(&self) -> Vec<i32> {
        match self {
            Self::Ours(n) => n.iter().map(|n| n.id).collect(),
            Self::Kafka(s) => s.iter().map(|s| s.id).collect(),
        }
    }

    /// `controller.quorum.bootstrap.servers` of the brokers.
    pub fn bootstrap(&self) -> String {
        self.ids()
            .iter()
            .map(|&id| self.address(id))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `127.0.0.1:PORT` of controller `id`.
    pub fn address(&self, id: i32) -> String {
        match self {
            Self::Ours(n) => n[self.index(id)].address(),
            Self::Kafka(s) => s[self.index(id)].address(),
        }
    }

    fn index(&self, id: i32) -> usize {
        self.ids()
            .iter()
            .position(|&i| i == id)
            .unwrap_or_else(|| panic!("no controller {id}"))
    }

    /// Whether controller `id`'s process is running.
    pub fn is_running(&mut self, id: i32) -> bool {
        let i = self.index(id);
        match self {
            Self::Ours(n) => n[i].is_running(),
            Self::Kafka(s) => s[i].is_running(),
        }
    }

    /// `kill -9` of controller `id`.
    pub fn kill(&mut self, id: i32) {
        let i = self.index(id);
        match self {
            Self::Ours(n) => n[i].stop(),
            Self::Kafka(s) => s[i].kill(),
        }
    }

    /// Starts controller `id` again on its files.
    pub fn start(&mut self, id: i32) {
        let i = self.index(id);
        match self {
            Self::Ours(n) => n[i].start(),
            Self::Kafka(s) => s[i].start(),
        }
    }

    /// `__cluster_metadata-0` of controller `id`.
    pub fn partition_dir(&self, id: i32) -> PathBuf {
        let dir = match self {
            Self::Ours(n) => n[self.index(id)].dir.clone(),
            Self::Kafka(s) => s[self.index(id)].dir.clone(),
        };
        dir.join("__cluster_metadata-0")
    }

    /// The leader and high watermark as DescribeQuorum (our `quorum
    /// describe --status`) reports them, asked of the running controllers
    /// in turn; `None` while none knows a leader.
    pub fn leader(&mut self) -> Option<(i32, i64)> {
        for id in self.ids() {
            if !self.is_running(id) {
                continue;
            }
            let Some(status) = our_status(&self.address(id)) else {
                continue;
            };
            let leader = status.get("LeaderId")?.parse::<i32>().ok()?;
            let hw = status.get("HighWatermark")?.parse::<i64>().ok()?;
            if leader >= 0 && hw > 0 {
                return Some((leader, hw));
            }
        }
        None
    }

    /// How long this quorum, just started or restarted whole, may take to
    /// elect a leader and commit: [`super::FIRST_LEADER_TIMEOUT`] for
    /// Kafka's JVM controllers; 30 s for ours, which elect in about a
    /// second, so that a slow election of ours still fails.
    pub fn first_leader_timeout(&self) -> Duration {
        match self {
            Self::Ours(_) => Duration::from_secs(30),
            Self::Kafka(_) => super::FIRST_LEADER_TIMEOUT,
        }
    }

    /// Waits up to [`Quorum::first_leader_timeout`] for the first leader of
    /// this quorum, just started or restarted whole.
    pub fn wait_for_first_leader(&mut self) -> (i32, i64) {
        let timeout = self.first_leader_timeout();
        self.wait_for_leader(timeout, None)
    }

    /// Waits up to `timeout` for a leader other than `not` (if given) with a
    /// high watermark.
    pub fn wait_for_leader(&mut self, timeout: Duration, not: Option<i32>) -> (i32, i64) {
        wait_for(timeout, "a controller leader with a high watermark", || {
            self.leader().filter(|(l, _)| Some(*l) != not)
        })
    }

    /// The offset of the snapshot that controller `id`'s last run loaded
    /// its metadata image from (our log's `metadata image loaded from the
    /// latest snapshot snapshot=(offset N, epoch E)`); always `None` for
    /// Kafka's controllers.
    pub fn loaded_snapshot(&self, id: i32) -> Option<i64> {
        let Self::Ours(n) = self else {
            return None;
        };
        let text = n[self.index(id)].log_text();
        let line = text
            .lines()
            .rfind(|l| l.contains("metadata image loaded from the latest snapshot"))?;
        let rest = &line[line.find("(offset ")? + "(offset ".len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    }

    /// A metric of controller `id`'s `/metrics`; always `None` for Kafka's
    /// controllers (their metrics are JMX only).
    pub fn metric(&self, id: i32, name: &str) -> Option<f64> {
        match self {
            Self::Ours(n) => n[self.index(id)].metric(name),
            Self::Kafka(_) => None,
        }
    }
}
