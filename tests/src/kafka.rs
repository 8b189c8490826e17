//! Kafka traffic through the brokers with Apache Kafka's own programs, run
//! on the host by `tests/kafka/kafka-run-class` (the jars of `make
//! kafka-jars`; `KAFKA_VERSION` picks 4.1.2 or 4.4.0; Java 17): topics with
//! `TopicCommand`, ACLs with `AclCommand`, a steady `acks=all` idempotent
//! load with `VerifiableProducer` ([`Load`]), everything read back with
//! `ConsoleConsumer` ([`consume_all`]) and the check that nothing
//! acknowledged was lost ([`assert_all_consumed`]).
//!
//! Owns the processes and the parsing of their output; it must not decide
//! what a test expects beyond "no failed send, every acknowledged record
//! read back".

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crate::{Error, Result, cache_dir};

/// Kafka's `TopicCommand` (`kafka-topics`).
pub const TOPIC_COMMAND: &str = "org.apache.kafka.tools.TopicCommand";
/// Kafka's `AclCommand` (`kafka-acls`).
pub const ACL_COMMAND: &str = "org.apache.kafka.tools.AclCommand";
/// Kafka's `VerifiableProducer`.
pub const VERIFIABLE_PRODUCER: &str = "org.apache.kafka.tools.VerifiableProducer";
/// Kafka's `ConsoleConsumer` (`kafka-console-consumer`).
pub const CONSOLE_CONSUMER: &str = "org.apache.kafka.tools.consumer.ConsoleConsumer";
/// The heap of each client JVM.
pub const CLIENT_HEAP: &str = "-Xmx256m";
/// The producer's configuration: `acks=all` (also `--acks -1`), idempotent,
/// and a `delivery.timeout.ms` (120 s) that rides out a controller change.
pub const PRODUCER_CONFIG: &str = "acks=all\nenable.idempotence=true\n\
    retries=2147483647\ndelivery.timeout.ms=120000\nrequest.timeout.ms=30000\n\
    max.block.ms=60000\nlinger.ms=5\n";
/// How long [`Load::stop`] waits for the producer to flush and exit after
/// SIGTERM before it kills it.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(150);

/// `tests/kafka/kafka-run-class` of this checkout, or `$KAFKA_RUN_CLASS`.
pub fn kafka_run_class() -> PathBuf {
    std::env::var_os("KAFKA_RUN_CLASS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("kafka/kafka-run-class"))
}

/// A directory for the tools' files (configs, stderr): `<cache>/e2e-rs/`.
///
/// Errors: [`Error::Io`] when it cannot be created.
pub fn work_dir() -> Result<PathBuf> {
    let dir = cache_dir().join("e2e-rs");
    std::fs::create_dir_all(&dir).map_err(Error::io(format!("create {}", dir.display())))?;
    Ok(dir)
}

/// The host's view of the cluster's DNS that dev/real-node/pod-hosts.sh writes
/// every 2 s (the names of every running pod with a `spec.subdomain`, as
/// StatefulSet pods have): `<cache>/cluster/hosts`.
pub fn cluster_hosts_file() -> PathBuf {
    cache_dir().join("cluster/hosts")
}

/// A `kafka-run-class CLASS` command with a small heap, resolving host
/// names with [`cluster_hosts_file`] when it exists (kafka-run-class's
/// `KAFKA_HOSTS_FILE`, the JDK's `jdk.net.hosts.file`), so that Kafka's
/// clients on the host follow the advertised pod names; a
/// `KAFKA_HOSTS_FILE` already set is kept.
fn tool(class: &str) -> Command {
    let mut c = Command::new(kafka_run_class());
    c.env("KAFKA_HEAP_OPTS", CLIENT_HEAP).arg(class);
    let hosts = cluster_hosts_file();
    if std::env::var_os("KAFKA_HOSTS_FILE").is_none()
        && std::fs::metadata(&hosts).is_ok_and(|m| m.len() > 0)
    {
        c.env("KAFKA_HOSTS_FILE", hosts);
    }
    c
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs a tool to its end (blocking); its stdout on success.
///
/// Errors: [`Error::Io`] when it cannot run, [`Error::Tool`] when it exits
/// non-zero.
fn run(class: &str, args: &[&str]) -> Result<String> {
    let out = tool(class)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(Error::io(format!("run {}", kafka_run_class().display())))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(Error::Tool {
            tool: class.into(),
            status: out.status.to_string(),
            output: tail(
                &format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
                20,
            ),
        });
    }
    Ok(stdout)
}

/// Creates `topic` with `partitions` partitions of `replication_factor`
/// replicas and `min.insync.replicas=min_isr` through the broker(s) at
/// `bootstrap` (`host:port,...`, PLAINTEXT) with `TopicCommand --create`.
/// Blocking (a JVM: seconds).
///
/// Errors: as [`run`] (an existing topic is an error too).
pub fn create_topic(
    bootstrap: &str,
    topic: &str,
    partitions: u32,
    replication_factor: u16,
    min_isr: u16,
) -> Result<()> {
    run(
        TOPIC_COMMAND,
        &[
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--if-not-exists",
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--replication-factor",
            &replication_factor.to_string(),
            "--config",
            &format!("min.insync.replicas={min_isr}"),
        ],
    )
    .map(drop)
}

/// The topic operations a PLAINTEXT client of the brokers needs the
/// controllers to allow (what the brokers forward: CreateTopics, and the
/// Describe/DescribeConfigs that `TopicCommand` asks), as docs/brokers.md.
pub const CLIENT_TOPIC_OPERATIONS: &[&str] = &["Create", "Describe", "DescribeConfigs"];

/// `AclCommand --bootstrap-controller CONTROLLER --command-config CONFIG
/// --add --allow-principal PRINCIPAL --operation OP... --topic '*'`: lets
/// `principal` (the brokers' PLAINTEXT clients are `User:ANONYMOUS`) do
/// `operations` on every topic. With TLS on, the controllers authorize a
/// broker-forwarded CreateTopics with the client's principal, so this is
/// needed before [`create_topic`]; `config` is the operator identity's
/// client properties ([`write_client_properties`]), a super user; the ACL is
/// written directly on a controller (`ip:9093`). The admin client goes on
/// to the controllers' advertised names (`<pod>.<service>.<ns>.svc…`),
/// which the host resolves only through [`cluster_hosts_file`]. Blocking.
///
/// Errors: as [`run`].
pub fn allow_topics(
    controller: &str,
    config: &Path,
    principal: &str,
    operations: &[&str],
) -> Result<()> {
    let config = config.display().to_string();
    let mut args = vec![
        "--bootstrap-controller",
        controller,
        "--command-config",
        &config,
        "--add",
        "--allow-principal",
        principal,
    ];
    for op in operations {
        args.extend(["--operation", op]);
    }
    args.extend(["--topic", "*"]);
    run(ACL_COMMAND, &args).map(drop)
}

/// Writes a Kafka client properties file for mTLS with the PEM `ca` and
/// `keystore` (key then chain) under [`work_dir`]`/<name>/`, the host name
/// check off (the host dials pod IPs; the chain is still verified against
/// the CA), as `client_config` of lib.sh; returns its path.
///
/// Errors: [`Error::Io`].
pub fn write_client_properties(name: &str, ca: &str, keystore: &str) -> Result<PathBuf> {
    let dir = work_dir()?.join(name);
    std::fs::create_dir_all(&dir).map_err(Error::io(format!("create {}", dir.display())))?;
    let write = |file: &str, text: &str| {
        let p = dir.join(file);
        std::fs::write(&p, text).map_err(Error::io(format!("write {}", p.display())))?;
        Ok::<PathBuf, Error>(p)
    };
    let ca = write("ca.crt", ca)?;
    let ks = write("keystore.pem", keystore)?;
    write(
        "client.properties",
        &format!(
            "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={}\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}\n\
             ssl.endpoint.identification.algorithm=\n",
            ks.display(),
            ca.display()
        ),
    )
}

/// What a [`Load`] saw, from `VerifiableProducer`'s JSON lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Records sent (`tool_data.sent`; the acknowledged plus the failed
    /// when the producer printed no `tool_data`).
    pub sent: u64,
    /// Records acknowledged (`producer_send_success` lines).
    pub acknowledged: u64,
    /// Records whose send failed (`producer_send_error` lines).
    pub failed: u64,
    /// The longest time between two consecutive acknowledgements (ms, by
    /// the producer's `timestamp` of each line), 0 with fewer than two.
    pub longest_ack_gap_ms: u64,
    /// The first few `exception: message` of the failed sends.
    pub errors: Vec<String>,
    /// Every acknowledged value.
    pub acknowledged_values: BTreeSet<String>,
    /// Whether it printed `shutdown_complete` (it flushed and closed).
    pub shutdown_complete: bool,
}

/// The reader thread's running tally.
#[derive(Debug, Default)]
struct Tally {
    report: LoadReport,
    last_ack_ms: Option<u64>,
    tool_sent: Option<u64>,
}

impl Tally {
    /// Folds one JSON line of `VerifiableProducer` in.
    fn line(&mut self, line: &str) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            return;
        };
        let name = v.get("name").and_then(|n| n.as_str()).unwrap_or("");
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("?").to_owned();
        match name {
            "producer_send_success" => {
                let r = &mut self.report;
                r.acknowledged += 1;
                r.acknowledged_values.insert(text("value"));
                if let Some(t) = v.get("timestamp").and_then(serde_json::Value::as_u64) {
                    if let Some(last) = self.last_ack_ms {
                        r.longest_ack_gap_ms = r.longest_ack_gap_ms.max(t.saturating_sub(last));
                    }
                    self.last_ack_ms = Some(t);
                }
            }
            "producer_send_error" => {
                self.report.failed += 1;
                if self.report.errors.len() < 5 {
                    self.report
                        .errors
                        .push(format!("{}: {}", text("exception"), text("message")));
                }
            }
            "tool_data" => self.tool_sent = v.get("sent").and_then(serde_json::Value::as_u64),
            "shutdown_complete" => self.report.shutdown_complete = true,
            _ => {}
        }
    }
}

/// A `VerifiableProducer` sending to a topic at a steady rate until
/// stopped; a thread reads its stdout as it goes.
#[derive(Debug)]
pub struct Load {
    child: Option<Child>,
    reader: Option<JoinHandle<()>>,
    tally: Arc<Mutex<Tally>>,
    stderr: PathBuf,
    started: Instant,
}

impl Load {
    /// Starts `VerifiableProducer --bootstrap-server bootstrap --topic topic
    /// --throughput records_per_sec --max-messages -1 --acks -1` with
    /// [`PRODUCER_CONFIG`]; values are `0`, `1`, `2`, … Its stderr goes to
    /// [`work_dir`]`/<topic>.producer.err`.
    ///
    /// Errors: [`Error::Io`] when a file cannot be written or the process
    /// cannot start.
    pub fn start(bootstrap: &str, topic: &str, records_per_sec: u32) -> Result<Load> {
        let dir = work_dir()?;
        let config = dir.join(format!("{topic}.producer.properties"));
        std::fs::write(&config, PRODUCER_CONFIG)
            .map_err(Error::io(format!("write {}", config.display())))?;
        let stderr = dir.join(format!("{topic}.producer.err"));
        let err_file = std::fs::File::create(&stderr)
            .map_err(Error::io(format!("create {}", stderr.display())))?;
        let mut child = tool(VERIFIABLE_PRODUCER)
            .args(["--bootstrap-server", bootstrap, "--topic", topic])
            .args(["--throughput", &records_per_sec.to_string()])
            .args(["--max-messages", "-1", "--acks", "-1"])
            .arg("--producer.config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err_file)
            .spawn()
            .map_err(Error::io(format!("start {VERIFIABLE_PRODUCER}")))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::Invalid("the producer's stdout was not piped".into()))?;
        let tally = Arc::new(Mutex::new(Tally::default()));
        let shared = tally.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut t) = shared.lock() {
                    t.line(&line);
                }
            }
        });
        Ok(Load {
            child: Some(child),
            reader: Some(reader),
            tally,
            stderr,
            started: Instant::now(),
        })
    }

    /// Records acknowledged so far.
    pub fn acknowledged(&self) -> u64 {
        self.tally
            .lock()
            .map(|t| t.report.acknowledged)
            .unwrap_or(0)
    }

    /// Sends that failed so far.
    pub fn failed(&self) -> u64 {
        self.tally.lock().map(|t| t.report.failed).unwrap_or(0)
    }

    /// How long it has run.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether the producer process has exited (it should not before
    /// [`Load::stop`]).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().map_or(true, |s| s.is_some()))
    }

    /// The end of its stderr (for a failure message).
    pub fn stderr_tail(&self) -> String {
        std::fs::read_to_string(&self.stderr)
            .map(|t| tail(&t, 20))
            .unwrap_or_default()
    }

    /// Sends SIGTERM (its shutdown hook flushes, prints `tool_data` and
    /// `shutdown_complete`), waits up to [`STOP_TIMEOUT`] for it to exit
    /// (then kills it), and returns what it reported.
    ///
    /// Errors: [`Error::Io`] when the signal cannot be sent.
    pub fn stop(mut self) -> Result<LoadReport> {
        if let Some(mut child) = self.child.take() {
            if child.try_wait().ok().flatten().is_none() {
                let status = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status()
                    .map_err(Error::io("run kill -TERM on the producer"))?;
                if !status.success() {
                    eprintln!("warning: kill -TERM of the producer: {status}");
                }
                let deadline = Instant::now() + STOP_TIMEOUT;
                while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                    // A process exit has no event to wait on here.
                    std::thread::sleep(Duration::from_millis(100));
                }
                if child.try_wait().ok().flatten().is_none() {
                    eprintln!(
                        "warning: the producer did not exit {} s after SIGTERM; killed",
                        STOP_TIMEOUT.as_secs()
                    );
                    let _ = child.kill();
                }
            }
            let _ = child.wait();
        }
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let t = self
            .tally
            .lock()
            .map_err(|_| Error::Invalid("the producer's reader thread panicked".into()))?;
        let mut report = t.report.clone();
        report.sent = t.tool_sent.unwrap_or(report.acknowledged + report.failed);
        Ok(report)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Reads `topic` from the beginning with `ConsoleConsumer --from-beginning
/// --max-messages expected --timeout-ms idle` until it has read `expected`
/// records (the producer's sends: an idempotent producer writes no more) or
/// no record came for `idle` (ms precision); returns every value read (one
/// per line). So a pause of the brokers shorter than `idle` cannot end the
/// read early, and a complete read does not wait `idle`. `expected` 0:
/// until idle. Blocking; killed after `idle + 120 s` if still running.
///
/// Errors: [`Error::Io`] when it cannot run, [`Error::Tool`] when it ended
/// without its `Processed a total of N messages` line.
pub fn consume_all(
    bootstrap: &str,
    topic: &str,
    expected: u64,
    idle: Duration,
) -> Result<Vec<String>> {
    let dir = work_dir()?;
    let out_path = dir.join(format!("{topic}.consumer.out"));
    let err_path = dir.join(format!("{topic}.consumer.err"));
    let out = std::fs::File::create(&out_path)
        .map_err(Error::io(format!("create {}", out_path.display())))?;
    let err = std::fs::File::create(&err_path)
        .map_err(Error::io(format!("create {}", err_path.display())))?;
    let mut child = tool(CONSOLE_CONSUMER)
        .args(["--bootstrap-server", bootstrap, "--topic", topic])
        .args([
            "--from-beginning",
            "--timeout-ms",
            &idle.as_millis().to_string(),
        ])
        .args(
            (expected > 0)
                .then(|| ["--max-messages".to_owned(), expected.to_string()])
                .into_iter()
                .flatten(),
        )
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(Error::io(format!("start {CONSOLE_CONSUMER}")))?;
    let deadline = Instant::now() + idle + Duration::from_secs(120);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s.to_string(),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break "killed at its deadline".into();
            }
        }
    };
    let read =
        |p: &Path| std::fs::read_to_string(p).map_err(Error::io(format!("read {}", p.display())));
    let stdout = read(&out_path)?;
    let stderr = read(&err_path)?;
    if !stderr.contains("Processed a total of") {
        return Err(Error::Tool {
            tool: CONSOLE_CONSUMER.into(),
            status,
            output: tail(&stderr, 20),
        });
    }
    Ok(stdout.lines().map(str::to_owned).collect())
}

/// What is wrong with a load: failed sends, or acknowledged values never
/// read back in `consumed`; `None` when nothing is.
pub fn problems(report: &LoadReport, consumed: &[String]) -> Option<String> {
    let read: BTreeSet<&str> = consumed.iter().map(String::as_str).collect();
    let missing: Vec<&String> = report
        .acknowledged_values
        .iter()
        .filter(|v| !read.contains(v.as_str()))
        .collect();
    let mut out = Vec::new();
    if report.failed > 0 {
        out.push(format!(
            "{} sends failed, e.g. {:?}",
            report.failed, report.errors
        ));
    }
    if !missing.is_empty() {
        out.push(format!(
            "{} acknowledged records never consumed, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        ));
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// Panics unless `report.failed == 0` and every acknowledged value is in
/// `consumed`.
pub fn assert_all_consumed(report: &LoadReport, consumed: &[String]) {
    if let Some(p) = problems(report, consumed) {
        panic!("{p} ({})", figures(report, consumed));
    }
}

/// `produced N acknowledged N consumed N failed N longest-ack-gap-ms N`.
pub fn figures(report: &LoadReport, consumed: &[String]) -> String {
    format!(
        "produced {} acknowledged {} consumed {} failed {} longest-ack-gap-ms {}",
        report.sent,
        report.acknowledged,
        consumed.len(),
        report.failed,
        report.longest_ack_gap_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_counts_acks_errors_and_the_longest_gap() {
        let mut t = Tally::default();
        for l in [
            r#"{"timestamp":1000,"name":"startup_complete"}"#,
            r#"{"timestamp":1000,"name":"producer_send_success","key":null,"value":"0","offset":0,"topic":"t","partition":0}"#,
            r#"{"timestamp":1005,"name":"producer_send_success","key":null,"value":"1","offset":1,"topic":"t","partition":0}"#,
            r#"{"timestamp":3005,"name":"producer_send_success","key":null,"value":"2","offset":2,"topic":"t","partition":0}"#,
            r#"{"timestamp":3006,"name":"producer_send_error","exception":"class X","message":"m","topic":"t","key":null,"value":"3"}"#,
            "not json",
            r#"{"timestamp":3010,"name":"shutdown_complete"}"#,
            r#"{"timestamp":3011,"name":"tool_data","sent":4,"acked":3,"target_throughput":200,"avg_throughput":1.0}"#,
        ] {
            t.line(l);
        }
        assert_eq!(t.report.acknowledged, 3);
        assert_eq!(t.report.failed, 1);
        assert_eq!(t.report.longest_ack_gap_ms, 2000);
        assert_eq!(t.tool_sent, Some(4));
        assert!(t.report.shutdown_complete);
        assert_eq!(t.report.errors, ["class X: m"]);
    }

    #[test]
    fn a_record_acknowledged_but_not_consumed_is_a_problem() {
        let report = LoadReport {
            acknowledged: 2,
            acknowledged_values: ["0".to_string(), "1".to_string()].into(),
            ..LoadReport::default()
        };
        assert_eq!(problems(&report, &["0".into(), "1".into()]), None);
        let p = problems(&report, &["0".into()]).expect("value 1 missing");
        assert!(p.contains("1 acknowledged records never consumed"), "{p}");
        let failed = LoadReport {
            failed: 1,
            ..report
        };
        assert!(problems(&failed, &["0".into(), "1".into()]).is_some());
    }
}
