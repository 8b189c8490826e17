//! A harness for process tests: real `kraft-controller` processes on
//! 127.0.0.1, each with its own formatted metadata log dir, controller port
//! and HTTP port (DESIGN 4, "process" tier).
//!
//! It owns the processes: every one it starts is killed (SIGKILL) when the
//! [`Quorum`] is dropped, also when a test panics, and then the tail of each
//! node's log is printed so a failure explains itself. Conditions are awaited
//! by polling with a deadline ([`wait_for`]), never by sleeping a fixed time.
//!
//! It must not reach into a node's memory: everything it knows comes from
//! what an operator sees (the HTTP endpoint, the Kafka protocol, the files
//! after a stop, the log lines).
//!
//! Ports are picked by binding port 0 and releasing it, so tests of one binary
//! may run in parallel.

#![allow(dead_code)] // each test binary uses a different part of the harness

use std::{
    fs::File,
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use kraft_controller::admin::{AdminClient, AdminError, QuorumInfo};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_kraft-controller");
/// The cluster id every test quorum is formatted with (Kafka's uuid text).
pub const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";

/// Kafka 4.1's defaults of the `controller.quorum.*` timings (`QuorumConfig`),
/// which every test runs with unless it says otherwise and why.
mod builder;
mod ports;
mod wait;
pub use builder::QuorumBuilder;
pub use ports::free_ports;
pub use wait::{POLL, wait_for};
pub mod forwarder;
pub mod kafka_broker;
pub mod pki;

pub mod kafka_defaults {
    /// `controller.quorum.election.timeout.ms`: randomised in [T, 2T).
    pub const ELECTION_TIMEOUT_MS: u64 = 1_000;
    /// `controller.quorum.fetch.timeout.ms`.
    pub const FETCH_TIMEOUT_MS: u64 = 2_000;
    /// `controller.quorum.election.backoff.max.ms`.
    pub const ELECTION_BACKOFF_MAX_MS: u64 = 1_000;
    /// `metadata.max.idle.interval.ms`: a no-op record when idle this long.
    pub const MAX_IDLE_INTERVAL_MS: u64 = 500;
}

/// How the initial voters are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// KIP-853: each node formatted with the same `--initial-controllers`,
    /// `controller.quorum.bootstrap.servers` in the config.
    Dynamic,
    /// `controller.quorum.voters` in the config, formatted with
    /// `--no-initial-controllers` (no bootstrap voter set on disk).
    Static,
}

/// One controller: its files, ports and (while running) its process.
#[derive(Debug)]
pub struct Node {
    /// `node.id`.
    pub id: i32,
    /// `metadata.log.dir`.
    pub log_dir: PathBuf,
    /// The properties file.
    pub config: PathBuf,
    /// Where stdout and stderr of every run of this node go (appended).
    pub output: PathBuf,
    /// The controller listener's port.
    pub port: u16,
    /// `kraftwerk.http.listener`'s port (0 with
    /// [`QuorumBuilder::default_http_listener`]: not known to the harness).
    pub http_port: u16,
    /// The port of the second controller listener, with
    /// [`QuorumBuilder::second_controller_listener`].
    pub second_port: Option<u16>,
    /// `directory.id` of its current format (Kafka's uuid text).
    pub directory_id: String,
    child: Option<Child>,
}

impl Node {
    /// `127.0.0.1:PORT` of the controller listener.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:PORT` of the second controller listener, with
    /// [`QuorumBuilder::second_controller_listener`].
    pub fn second_address(&self) -> Option<String> {
        self.second_port.map(|port| format!("127.0.0.1:{port}"))
    }

    /// The running process's id, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process the harness started has exited on its own (it is
    /// a zombie waiting to be reaped: state `Z` in `/proc/PID/stat`).
    pub fn has_exited(&self) -> bool {
        let Some(pid) = self.pid() else {
            return false;
        };
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let (_, after_name) = stat.rsplit_once(')')?;
                after_name
                    .split_whitespace()
                    .next()
                    .map(|state| state == "Z")
            })
            .unwrap_or(true)
    }

    /// Panics with the output's tail when the process exited on its own.
    pub fn assert_alive(&self) {
        assert!(
            !self.has_exited(),
            "node {} exited unexpectedly; its last lines:\n{}",
            self.id,
            self.output_tail(10)
        );
    }

    /// Whether a process was started and has not been stopped by the harness.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// `GET path` on the node's HTTP endpoint: `(status, body)`, or `None`
    /// when nothing answers (the process is down or not yet listening).
    pub fn http_get(&self, path: &str) -> Option<(u16, String)> {
        http_get(SocketAddr::from(([127, 0, 0, 1], self.http_port)), path)
    }

    /// `/readyz`: `(ready, reason)`, `None` when nothing answers.
    pub fn readyz(&self) -> Option<(bool, String)> {
        self.http_get("/readyz")
            .map(|(code, body)| (code == 200, body.trim().to_owned()))
    }

    /// The epoch if `/readyz` says this node is a ready leader
    /// ("leader in epoch E, high watermark H").
    pub fn ready_leader_epoch(&self) -> Option<i32> {
        let (ready, reason) = self.readyz()?;
        if !ready {
            return None;
        }
        let rest = reason.strip_prefix("leader in epoch ")?;
        rest.split(',').next()?.trim().parse().ok()
    }

    /// The `/readyz` reason if this node is a ready observer of `leader` in
    /// `epoch` ("observer of L in epoch E, … caught up …").
    pub fn ready_observer_of(&self, leader: i32, epoch: i32) -> Option<String> {
        let (ready, reason) = self.readyz()?;
        let prefix = format!("observer of {leader} in epoch {epoch},");
        (ready && reason.starts_with(&prefix)).then_some(reason)
    }

    /// A gauge of `/metrics` without labels, e.g.
    /// `kafka_server_raft_metrics_high_watermark`.
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

    /// `kafka_server_raft_metrics_high_watermark` (-1 when unknown).
    pub fn high_watermark(&self) -> Option<i64> {
        self.metric("kafka_server_raft_metrics_high_watermark")
            .map(|v| v as i64)
    }

    /// `kafka_server_raft_metrics_log_end_offset`.
    pub fn log_end_offset(&self) -> Option<i64> {
        self.metric("kafka_server_raft_metrics_log_end_offset")
            .map(|v| v as i64)
    }

    /// `kafka_server_raft_metrics_current_leader` (-1 when unknown).
    pub fn current_leader(&self) -> Option<i32> {
        self.metric("kafka_server_raft_metrics_current_leader")
            .map(|v| v as i32)
    }

    /// The last `lines` lines of this node's output.
    pub fn output_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.output).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The node's output lines that contain `needle`.
    pub fn output_lines(&self, needle: &str) -> Vec<String> {
        std::fs::read_to_string(&self.output)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

/// A set of controllers formatted into one temporary directory.
#[derive(Debug)]
pub struct Quorum {
    /// The nodes, ids 1..=n in order (then the ones [`Quorum::add_observer`]
    /// formatted).
    pub nodes: Vec<Node>,
    dir: tempfile::TempDir,
    mode: Mode,
    properties: Vec<(String, String)>,
    listeners: builder::Listeners,
    /// How many formats so far, to give each a distinct directory id.
    formats: u128,
    /// `format --release-version` of every node (`None`: the default).
    release_version: Option<String>,
}

/// What a `kraft-controller` command printed and how it exited.
#[derive(Debug)]
pub struct CliOutput {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl std::fmt::Display for CliOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {}; stdout: {}; stderr: {}",
            self.code,
            self.stdout.trim(),
            self.stderr.trim()
        )
    }
}

/// Runs `kraft-controller ARGS…` to completion.
pub fn cli(args: &[&str]) -> CliOutput {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run kraft-controller");
    CliOutput {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Quorum {
    /// Sends `signal` (`STOP`, `CONT`, …) to node `id`'s process.
    pub fn signal(&self, id: i32, signal: &str) {
        let pid = self
            .node(id)
            .pid()
            .unwrap_or_else(|| panic!("node {id} does not run"));
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {pid} failed");
    }

    /// `kraft-controller quorum --bootstrap-controller <node id> ARGS…`.
    pub fn quorum_cli(&self, via: i32, args: &[&str]) -> CliOutput {
        let address = self.node(via).address();
        let mut all = vec!["quorum", "--bootstrap-controller", &address];
        all.extend_from_slice(args);
        cli(&all)
    }

    /// The node with `id`.
    pub fn node(&self, id: i32) -> &Node {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id} in this quorum"))
    }

    fn node_mut(&mut self, id: i32) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id} in this quorum"))
    }

    /// The ids of the nodes, in order.
    pub fn ids(&self) -> Vec<i32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// Starts `kraft-controller run` for node `id` (`RUST_LOG=info`, output
    /// appended to the node's output file). Panics if it already runs.
    pub fn start(&mut self, id: i32) {
        self.start_with_args(id, &[]);
    }

    /// [`Quorum::start`] with extra `run` arguments (e.g. the workload's).
    pub fn start_with_args(&mut self, id: i32, extra: &[&str]) {
        let node = self.node_mut(id);
        assert!(node.child.is_none(), "node {id} already runs");
        let out = File::options()
            .create(true)
            .append(true)
            .open(&node.output)
            .expect("open the output file");
        let err = out.try_clone().expect("clone the output file");
        let child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(&node.config)
            .args(["--cluster-id", CLUSTER_ID])
            .args(extra)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("spawn kraft-controller run");
        node.child = Some(child);
    }

    /// Starts every node.
    pub fn start_all(&mut self) {
        for id in self.ids() {
            self.start(id);
        }
    }

    /// SIGKILL (`kill -9`) node `id` and reaps it.
    pub fn kill(&mut self, id: i32) {
        if let Some(mut child) = self.node_mut(id).child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM to node `id` and returns at once; [`Self::wait_exit`]
    /// reaps it.
    pub fn terminate(&mut self, id: i32) {
        let pid = self
            .node(id)
            .pid()
            .unwrap_or_else(|| panic!("node {id} does not run"));
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill -TERM");
        assert!(status.success(), "kill -TERM {pid} failed");
    }

    /// Waits up to `timeout` for node `id`'s process to exit and returns its
    /// status; panics when it is still running then.
    pub fn wait_exit(&mut self, id: i32, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            let node = self.node_mut(id);
            let child = node
                .child
                .as_mut()
                .unwrap_or_else(|| panic!("node {id} does not run"));
            if let Some(status) = child.try_wait().expect("try_wait") {
                node.child = None;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "node {id} still runs {timeout:?} after being asked to stop"
            );
            std::thread::sleep(POLL);
        }
    }

    /// Kills every running node (SIGKILL).
    pub fn kill_all(&mut self) {
        for id in self.ids() {
            self.kill(id);
        }
    }

    /// The running nodes among `among` whose `/readyz` says "leader in
    /// epoch E" and ready: `(id, epoch)` of the one with the highest epoch.
    pub fn ready_leader(&self, among: &[i32]) -> Option<(i32, i32)> {
        among
            .iter()
            .map(|id| self.node(*id))
            .filter(|n| n.is_running())
            .filter_map(|n| n.ready_leader_epoch().map(|e| (n.id, e)))
            .max_by_key(|(_, e)| *e)
    }

    /// Waits until one of `among` is a ready leader; `(id, epoch)`.
    pub fn wait_for_leader(&self, among: &[i32], timeout: Duration) -> (i32, i32) {
        wait_for(timeout, "a ready leader", || {
            for id in among {
                self.node(*id).assert_alive();
            }
            self.ready_leader(among)
        })
    }

    /// Waits until node `id` is a ready follower of `leader`.
    pub fn wait_for_follower(&self, id: i32, leader: i32, timeout: Duration) {
        let prefix = format!("follower of {leader} in epoch");
        wait_for(
            timeout,
            &format!("node {id} a caught-up follower of {leader}"),
            || {
                let node = self.node(id);
                node.assert_alive();
                match node.readyz() {
                    Some((true, reason)) if reason.starts_with(&prefix) => Some(()),
                    _ => None,
                }
            },
        );
    }

    /// DescribeQuorum through the admin client bootstrapped at node `id`
    /// (it follows the active controller, as Kafka's Admin does).
    pub fn describe_quorum(&self, id: i32) -> Result<QuorumInfo, AdminError> {
        let address = self.node(id).address();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(async move {
            let mut client = AdminClient::connect(&address, Duration::from_secs(3)).await?;
            client.describe_quorum().await
        })
    }

    /// `kraft-controller dump-log` of node `id`'s log segments (`*.log` of
    /// `__cluster_metadata-0`, in offset order), run while the node is stopped.
    pub fn dump_log(&self, id: i32) -> String {
        let partition = self.node(id).log_dir.join("__cluster_metadata-0");
        let mut segments: Vec<PathBuf> = std::fs::read_dir(&partition)
            .expect("list the partition dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        segments.sort();
        assert!(!segments.is_empty(), "node {id} has no log segment");
        let out = Command::new(BIN)
            .arg("dump-log")
            .args(&segments)
            .output()
            .expect("run kraft-controller dump-log");
        assert!(
            out.status.success(),
            "dump-log of node {id} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The temporary directory holding every node's files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Quorum {
    fn drop(&mut self) {
        self.kill_all();
        if std::env::var_os(KEEP_ENV).is_some() {
            let dir = std::mem::replace(
                &mut self.dir,
                tempfile::tempdir().expect("a temporary directory"),
            );
            eprintln!("{KEEP_ENV}: node files kept in {}", dir.keep().display());
        }
        if std::thread::panicking() {
            for node in &self.nodes {
                eprintln!(
                    "---- node {} (port {}, http {}): last lines of {}\n{}\n",
                    node.id,
                    node.port,
                    node.http_port,
                    node.output.display(),
                    node.output_tail(40)
                );
            }
        }
    }
}

/// Set this environment variable to keep every node's files (configs, log
/// dirs, output) after a test, e.g. to read the role-change lines.
pub const KEEP_ENV: &str = "KRAFTWERK_KEEP_PROCESS_FILES";

/// A minimal HTTP/1.1 GET (`Connection: close`): `(status, body)`, `None`
/// when the connection fails or the answer does not parse.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
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

/// The batch blocks of a `dump-log` text whose base offset is below
/// `end_offset`, each block being the `batch …` line and its record lines;
/// the file headers (`== …`) and text files are left out.
pub fn batches_below(dump: &str, end_offset: i64) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    let mut keep = false;
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix("batch base_offset=") {
            let base: i64 = rest
                .split(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .expect("a batch line starts with its base offset");
            keep = base < end_offset;
            if keep {
                blocks.push(line.to_owned());
            }
        } else if line.starts_with("==") || !line.starts_with("  offset=") {
            keep = false;
        } else if keep {
            let last = blocks.last_mut().expect("a record line follows a batch");
            last.push('\n');
            last.push_str(line);
        }
    }
    blocks
}

/// ApiVersions (v3) over a fresh connection to `address` with `config`
/// (plaintext, or TLS with `config.tls`).
pub fn api_versions(
    address: &str,
    config: kraft_controller::wire::client::ClientConfig,
) -> Result<kafka_protocol::messages::ResponseKind, kraft_controller::wire::client::ClientError> {
    use kafka_protocol::messages::{ApiVersionsRequest, RequestKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let connection =
            kraft_controller::wire::client::Connection::connect(address, config).await?;
        connection
            .call(3, RequestKind::ApiVersions(ApiVersionsRequest::default()))
            .await
    })
}

/// The median of `values` (the lower middle for an even count).
pub fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted[(sorted.len() - 1) / 2]
}
