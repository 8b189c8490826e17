//! Harness of the mixed-quorum interop test (issue 22): one metadata quorum
//! whose members are our `kraft-controller run` processes and Apache Kafka's
//! own `kafka.Kafka` controllers, side by side, and the tools that compare
//! what each of them wrote.
//!
//! - [`Member`]: one controller of either implementation, behind one set of
//!   methods (start, `kill -9`, address, directory id, its
//!   `__cluster_metadata-0`, its log).
//! - [`replication`]: the voters' and observers' log end offsets, as
//!   DescribeQuorum (our `quorum describe --replication`) reports them.
//! - [`dumped_batches`]: Kafka's `DumpLogSegments --cluster-metadata-decoder`
//!   of a node's segments, cut into batches (header line and record lines).
//! - [`replay_faults`]: the lines of a controller's log that say it refused
//!   or failed to apply a record.
//!
//! Owns processes, files and parsing; it must not decide what a test expects.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use super::{
    Node,
    brokers::{KafkaServer, kafka_dump},
    ours, parse_replication, properties,
};

/// One controller of the mixed quorum: ours or Kafka's.
#[derive(Debug)]
pub enum Member {
    /// A `kraft-controller run`.
    Ours(Node),
    /// A `kafka.Kafka` with `process.roles=controller`.
    Kafka(KafkaServer),
}

impl Member {
    /// `node.id`.
    pub fn id(&self) -> i32 {
        match self {
            Self::Ours(n) => n.id,
            Self::Kafka(s) => s.id,
        }
    }

    /// Whether it is one of ours.
    pub fn is_ours(&self) -> bool {
        matches!(self, Self::Ours(_))
    }

    /// `"our node 2"` or `"Kafka 4.4.0's controller 1"`, for messages.
    pub fn name(&self) -> String {
        match self {
            Self::Ours(n) => format!("our node {}", n.id),
            Self::Kafka(s) => format!("Kafka {}'s controller {}", s.version, s.id),
        }
    }

    /// `127.0.0.1:PORT` of its controller listener.
    pub fn address(&self) -> String {
        match self {
            Self::Ours(n) => n.address(),
            Self::Kafka(s) => s.address(),
        }
    }

    /// Its properties file (what Kafka's `add-controller` reads with
    /// `--command-config`).
    pub fn config(&self) -> &Path {
        match self {
            Self::Ours(n) => &n.config,
            Self::Kafka(s) => &s.config,
        }
    }

    /// Its metadata log directory (`metadata.log.dir`, or `log.dirs` for
    /// Kafka's, which has one).
    pub fn dir(&self) -> &Path {
        match self {
            Self::Ours(n) => &n.dir,
            Self::Kafka(s) => &s.dir,
        }
    }

    /// `directory.id` of its `meta.properties`.
    pub fn directory_id(&self) -> String {
        properties(&self.dir().join("meta.properties"))
            .get("directory.id")
            .cloned()
            .unwrap_or_else(|| panic!("no directory.id in {}'s meta.properties", self.name()))
    }

    /// Its `__cluster_metadata-0`.
    pub fn partition_dir(&self) -> PathBuf {
        self.dir().join("__cluster_metadata-0")
    }

    /// Starts the process on its files.
    pub fn start(&mut self) {
        match self {
            Self::Ours(n) => n.start(),
            Self::Kafka(s) => s.start(),
        }
    }

    /// `kill -9` and reap (its files stay).
    pub fn kill(&mut self) {
        match self {
            Self::Ours(n) => n.stop(),
            Self::Kafka(s) => s.kill(),
        }
    }

    /// Whether the process was started and has not exited.
    pub fn is_running(&mut self) -> bool {
        match self {
            Self::Ours(n) => n.is_running(),
            Self::Kafka(s) => s.is_running(),
        }
    }

    /// Its log (ours: every run; Kafka's: the current run).
    pub fn log_text(&self) -> String {
        match self {
            Self::Ours(n) => n.log_text(),
            Self::Kafka(s) => s.log_text(),
        }
    }
}

/// Our `quorum describe --replication` against `address`: node id →
/// (directory id, log end offset, status `Leader`/`Follower`/`Observer`);
/// the tool's output as the error while it fails (no leader known there).
pub fn replication(address: &str) -> Result<BTreeMap<i32, (String, i64, String)>, String> {
    let output = Command::new(ours())
        .args([
            "quorum",
            "--bootstrap-controller",
            address,
            "--timeout-ms",
            "2000",
            "describe",
            "--replication",
        ])
        .output()
        .map_err(|e| format!("running our quorum describe: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "{}{stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    parse_replication(&stdout)
        .into_iter()
        .map(|row| {
            let cell = |name: &str| {
                row.get(name)
                    .cloned()
                    .ok_or_else(|| format!("no {name} in a row of:\n{stdout}"))
            };
            let id = cell("NodeId")?
                .parse()
                .map_err(|e| format!("NodeId: {e}"))?;
            let end = cell("LogEndOffset")?
                .parse()
                .map_err(|e| format!("LogEndOffset: {e}"))?;
            Ok((id, (cell("DirectoryId")?, end, cell("Status")?)))
        })
        .collect()
}

/// One batch of a `DumpLogSegments --cluster-metadata-decoder` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpedBatch {
    /// `baseOffset:`.
    pub base_offset: i64,
    /// `lastOffset:`.
    pub last_offset: i64,
    /// The `baseOffset: …` line as Kafka prints it (epoch, CreateTime,
    /// size, crc, position, …).
    pub header: String,
    /// Its `| offset: …` lines, each record decoded by Kafka's classes.
    pub records: Vec<String>,
}

/// The segments (`*.log`) of a `__cluster_metadata-0`, by base offset.
pub fn segment_files(partition: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(partition)
        .unwrap_or_else(|e| panic!("listing {}: {e}", partition.display()))
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    files
}

/// Kafka `version`'s decoded dump of every segment of `partition`, cut
/// into batches; panics if Kafka's dump reports an error or an invalid
/// batch.
pub fn dumped_batches(version: &'static str, partition: &Path) -> Vec<DumpedBatch> {
    let mut batches: Vec<DumpedBatch> = Vec::new();
    for file in segment_files(partition) {
        for line in kafka_dump(version, &file).lines() {
            if line.starts_with("baseOffset:") {
                let field = |name: &str| -> i64 {
                    line.split_whitespace()
                        .skip_while(|w| *w != name)
                        .nth(1)
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| panic!("no {name} in {line:?}"))
                };
                batches.push(DumpedBatch {
                    base_offset: field("baseOffset:"),
                    last_offset: field("lastOffset:"),
                    header: line.to_owned(),
                    records: Vec::new(),
                });
            } else if line.starts_with("| offset:")
                && let Some(batch) = batches.last_mut()
            {
                batch.records.push(line.to_owned());
            }
        }
    }
    batches
}

/// The lines of a controller's log that say it failed to apply or load
/// metadata: Kafka's fault handlers (`Encountered … fault`), any ERROR
/// line (its `MetadataLoader` and `QuorumController` errors, ours), and
/// exceptions logged as warnings. Two kinds of ERROR line are not failures
/// to apply metadata: Kafka's lines about a request that met
/// `NotControllerException` (answered NOT_CONTROLLER, retried by the
/// broker), and its `EventPerformanceMonitor`'s report of an event that
/// took longer than `controller.performance.always.log.threshold.ms`
/// (2000 ms by default), logged at ERROR though the event succeeded: a
/// slow machine, not a fault.
pub fn replay_faults(log: &str) -> Vec<String> {
    let lines: Vec<String> = log.lines().map(strip_ansi).collect();
    lines
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            // Kafka's `ControllerApis` logs at ERROR a request that reached
            // a controller between its election and its activation, and
            // answers NOT_CONTROLLER: the client retries; nothing was applied.
            let not_controller = lines
                .get(i + 1)
                .is_some_and(|next| next.contains("NotControllerException"));
            // `EventPerformanceMonitor.java`: "Exceptionally slow controller
            // event {} took {} ms."
            let slow_event =
                l.contains("EventPerformanceMonitor") && l.contains("Exceptionally slow");
            !not_controller
                && !slow_event
                && (l.contains(" ERROR ")
                    || l.contains(" fault")
                    || l.contains("metadata loading")
                    || (l.contains(" WARN ") && l.contains("Exception")))
        })
        .map(|(_, l)| l.clone())
        .collect()
}

/// `line` without its ANSI colour sequences (`ESC [ … m`), as our
/// controller's log has them.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The snapshots (`OFFSET-EPOCH.checkpoint`, not the 0-0 bootstrap) of a
/// `__cluster_metadata-0`: file name → path.
pub fn snapshot_files(partition: &Path) -> BTreeMap<String, PathBuf> {
    std::fs::read_dir(partition)
        .unwrap_or_else(|e| panic!("listing {}: {e}", partition.display()))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            (name.ends_with(".checkpoint") && !name.starts_with("00000000000000000000-"))
                .then(|| (name.clone(), partition.join(name)))
        })
        .collect()
}

/// The records of a snapshot as Kafka `version`'s dump decodes them: each
/// record's `payload:` (its type, version and fields as JSON, without its
/// offset or time), sorted, so that two snapshots of one image compare
/// equal whatever order their writers chose. The `features` of a
/// RegisterBrokerRecord or RegisterControllerRecord are sorted by name
/// too: Kafka's image keeps them in a `HashMap` (`BrokerRegistration`,
/// `ControllerRegistration`), so its snapshots list them in hash order,
/// ours in the order of the record the registration came from.
pub fn snapshot_payloads(version: &'static str, file: &Path) -> Vec<String> {
    let mut payloads: Vec<String> = kafka_dump(version, file)
        .lines()
        .filter_map(|l| Some(l.split_once(" payload: ")?.1))
        .map(features_by_name)
        .collect();
    payloads.sort();
    payloads
}

/// `payload` (JSON) with its `data.features` array sorted by `name`; as
/// given when it is not JSON or has no such array.
fn features_by_name(payload: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(payload) else {
        return payload.to_owned();
    };
    if let Some(features) = value
        .pointer_mut("/data/features")
        .and_then(serde_json::Value::as_array_mut)
    {
        features.sort_by_key(|f| f.get("name").map(ToString::to_string));
    }
    value.to_string()
}
