//! Apache Kafka's own clients and admin tools for the topic interop test
//! (issue 17): `TopicCommand` (`kafka-topics`), `ConfigCommand`
//! (`kafka-configs`), `VerifiableProducer` and `VerifiableConsumer` run
//! from the jars of one version, and a Metadata request (what `--describe`
//! reads) sent to a broker without a JVM, for polling.
//!
//! Owns processes and parsing of the tools' output; it must not decide what
//! a test expects.

use std::{
    collections::{BTreeMap, BTreeSet},
    io::{Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use bytes::{Buf, BytesMut};
use kafka_protocol::{
    messages::{ApiKey, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader},
    protocol::{Decodable, Encodable, StrBytes},
};

use super::{kafka_run_class, poll_until};

/// Kafka's `TopicCommand` class (`kafka-topics`).
pub const TOPIC_COMMAND: &str = "org.apache.kafka.tools.TopicCommand";
/// Kafka's `VerifiableProducer` class.
pub const VERIFIABLE_PRODUCER: &str = "org.apache.kafka.tools.VerifiableProducer";
/// Kafka's `VerifiableConsumer` class.
pub const VERIFIABLE_CONSUMER: &str = "org.apache.kafka.tools.VerifiableConsumer";
/// The heap of the clients' JVMs.
pub const CLIENT_HEAP: &str = "-Xmx256m";

/// Kafka's `ConfigCommand` (`kafka-configs`) of `version`: Scala in 4.1,
/// moved to `kafka-tools` (Java) by 4.4.
pub fn config_command(version: &str) -> &'static str {
    if version.starts_with("4.1") {
        "kafka.admin.ConfigCommand"
    } else {
        "org.apache.kafka.tools.ConfigCommand"
    }
}

/// What a tool run printed and whether it exited 0.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// Exit status 0.
    pub ok: bool,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl ToolOutput {
    /// stdout then stderr.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The first Kafka exception class named in the output
    /// (`org.apache.kafka.common.errors.…Exception`), `None` when there is
    /// none.
    pub fn exception_class(&self) -> Option<String> {
        let all = self.all();
        let start = all.find("org.apache.kafka.common.errors.")?;
        let class: String = all[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
            .collect();
        Some(class)
    }

    /// The first line with `Error` or `Exception` in it (what a user reads
    /// when the tool fails), trimmed; `None` when there is none.
    pub fn error_line(&self) -> Option<String> {
        self.all()
            .lines()
            .find(|l| l.contains("Error") || l.contains("Exception"))
            .map(|l| l.trim().to_owned())
    }
}

/// Runs a Kafka class of `version` with a small heap; never panics on its
/// exit status.
pub fn tool(version: &str, class: &str, args: &[&str]) -> ToolOutput {
    let output = Command::new(kafka_run_class())
        .env("KAFKA_VERSION", version)
        .env("KAFKA_HEAP_OPTS", CLIENT_HEAP)
        .arg(class)
        .args(args)
        .output()
        .expect("kafka-run-class runs");
    ToolOutput {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `kafka-topics --bootstrap-server bootstrap --command-config admin ARGS`.
pub fn topics(version: &str, bootstrap: &str, admin: &Path, args: &[&str]) -> ToolOutput {
    let admin = admin.display().to_string();
    let mut all = vec!["--bootstrap-server", bootstrap, "--command-config", &admin];
    all.extend_from_slice(args);
    tool(version, TOPIC_COMMAND, &all)
}

/// `kafka-configs --bootstrap-server bootstrap --command-config admin ARGS`.
pub fn configs(version: &str, bootstrap: &str, admin: &Path, args: &[&str]) -> ToolOutput {
    let admin = admin.display().to_string();
    let mut all = vec!["--bootstrap-server", bootstrap, "--command-config", &admin];
    all.extend_from_slice(args);
    tool(version, config_command(version), &all)
}

/// One line of `kafka-topics --describe`: its `Key: value` fields, split
/// on tabs (`Topic`, `Partition`, `Leader`, `Replicas`, `Isr`, … for a
/// partition; `Topic`, `TopicId`, `PartitionCount`, `ReplicationFactor`,
/// `Configs` for a topic).
pub fn describe_fields(line: &str) -> BTreeMap<String, String> {
    line.split('\t')
        .filter_map(|f| f.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// A partition as `kafka-topics --describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Leader id, -1 (`none`) when there is none.
    pub leader: i32,
    /// Replica ids in assignment order.
    pub replicas: Vec<i32>,
    /// ISR ids.
    pub isr: Vec<i32>,
}

/// A parsed `--describe`: topic name → (PartitionCount, ReplicationFactor,
/// Configs), and the partitions.
pub type Described = (
    BTreeMap<String, (i32, i32, String)>,
    Vec<DescribedPartition>,
);

/// The topics of a `--describe` output and its partitions.
pub fn parse_describe(text: &str) -> Described {
    let ids =
        |s: &str| -> Vec<i32> { s.split(',').filter_map(|i| i.trim().parse().ok()).collect() };
    let mut topics = BTreeMap::new();
    let mut partitions = Vec::new();
    for line in text.lines() {
        let f = describe_fields(line);
        let Some(topic) = f.get("Topic") else {
            continue;
        };
        if let Some(p) = f.get("Partition").and_then(|p| p.parse().ok()) {
            partitions.push(DescribedPartition {
                topic: topic.clone(),
                partition: p,
                leader: f.get("Leader").and_then(|l| l.parse().ok()).unwrap_or(-1),
                replicas: f.get("Replicas").map(|r| ids(r)).unwrap_or_default(),
                isr: f.get("Isr").map(|r| ids(r)).unwrap_or_default(),
            });
        } else if let Some(count) = f.get("PartitionCount").and_then(|c| c.parse().ok()) {
            let rf = f
                .get("ReplicationFactor")
                .and_then(|c| c.parse().ok())
                .unwrap_or(-1);
            let configs = f.get("Configs").cloned().unwrap_or_default();
            topics.insert(topic.clone(), (count, rf, configs));
        }
    }
    (topics, partitions)
}

/// A partition as a broker's Metadata answer has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    /// Leader id, -1 when none.
    pub leader: i32,
    /// Replica ids.
    pub replicas: Vec<i32>,
    /// ISR ids.
    pub isr: Vec<i32>,
}

/// A broker's Metadata answer, as the tests read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataView {
    /// The brokers the answer lists: a Kafka broker lists only the unfenced
    /// ones (its `KRaftMetadataCache` leaves fenced brokers out).
    pub brokers: BTreeSet<i32>,
    /// Topic → partition index → state, internal topics included.
    pub topics: BTreeMap<String, BTreeMap<i32, PartitionState>>,
}

/// Metadata v12 (all topics) sent to the broker at `address` over a plain
/// socket. `None` when the broker does not answer within two seconds or the
/// answer does not decode. This is what `kafka-topics --describe` reads,
/// without a JVM.
pub fn metadata(address: &str) -> Option<MetadataView> {
    const VERSION: i16 = 12;
    let key = ApiKey::Metadata;
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(VERSION)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("interop-metadata")))
        .encode(&mut body, key.request_header_version(VERSION))
        .ok()?;
    MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false)
        .encode(&mut body, VERSION)
        .ok()?;
    let addr: std::net::SocketAddr = address.parse().ok()?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(&i32::try_from(body.len()).ok()?.to_be_bytes())
        .ok()?;
    stream.write_all(&body).ok()?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let mut frame = vec![0u8; usize::try_from(i32::from_be_bytes(size)).ok()?];
    stream.read_exact(&mut frame).ok()?;
    let mut buf = bytes::Bytes::from(frame);
    ResponseHeader::decode(&mut buf, key.response_header_version(VERSION)).ok()?;
    let response = MetadataResponse::decode(&mut buf, VERSION).ok()?;
    if buf.has_remaining() {
        return None;
    }
    let ids = |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect();
    let topics = response
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| {
            let parts = t
                .partitions
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        PartitionState {
                            leader: p.leader_id.0,
                            replicas: ids(&p.replica_nodes),
                            isr: ids(&p.isr_nodes),
                        },
                    )
                })
                .collect();
            Some((t.name.as_ref()?.to_string(), parts))
        })
        .collect();
    Some(MetadataView {
        brokers: response.brokers.iter().map(|b| b.node_id.0).collect(),
        topics,
    })
}

/// A record as the producer acked it or the consumer read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    /// Partition index.
    pub partition: i32,
    /// Offset in the partition.
    pub offset: i64,
}

/// `value` → where it was acked or read, in output order.
pub type Records = Vec<(String, Seen)>;

/// Parses the JSON lines of a Verifiable tool: `(name, object)` of each.
fn events(text: &str) -> Vec<(String, serde_json::Value)> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some((v.get("name")?.as_str()?.to_owned(), v)))
        .collect()
}

/// A record event's value and position.
fn seen(v: &serde_json::Value) -> Option<(String, Seen)> {
    Some((
        v.get("value")?.as_str()?.to_owned(),
        Seen {
            partition: i32::try_from(v.get("partition")?.as_i64()?).ok()?,
            offset: v.get("offset")?.as_i64()?,
        },
    ))
}

/// What a producer sends: `count` records to `topic` at `throughput`
/// records/s (-1: as fast as it can), values `prefix.N` (N = 0..count; the
/// prefix is an integer, as `VerifiableProducer` wants).
#[derive(Debug, Clone, Copy)]
pub struct Load<'a> {
    /// Topic name.
    pub topic: &'a str,
    /// Records to send.
    pub count: u64,
    /// Records per second, -1 for no limit.
    pub throughput: i64,
    /// Value prefix (an integer).
    pub prefix: &'a str,
    /// `max.in.flight.requests.per.connection` (Kafka's default 5; at most
    /// 5 with idempotence).
    pub max_in_flight: u32,
    /// Records go to the topic's partitions in turn (Kafka's
    /// `RoundRobinPartitioner`) instead of the producer's built-in sticky,
    /// load-weighted choice, which can leave a partition without a record
    /// for seconds (session 23: follow-1 got none for 7 s while the other
    /// two partitions' leaders waited on a stopped follower).
    pub round_robin: bool,
}

/// A `VerifiableProducer` running in the background, its JSON lines going
/// to a file.
#[derive(Debug)]
pub struct Producer {
    child: Option<Child>,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
}

/// What a producer's run printed.
#[derive(Debug, Clone)]
pub struct ProduceReport {
    /// Acked sends (`producer_send_success`), in output order.
    pub acked: Records,
    /// The `exception: message` of each failed send (`producer_send_error`).
    pub failed: Vec<String>,
    /// Its `tool_data` line's `sent` (`None` if it printed none).
    pub sent: Option<i64>,
    /// How long it ran.
    pub took: Duration,
    /// The last lines of its stderr.
    pub stderr: String,
}

impl Producer {
    /// Starts `VerifiableProducer` of `version` sending `load` through
    /// `bootstrap`, with `acks=all`, idempotence on, unlimited retries and
    /// `load.max_in_flight` requests in flight per connection (and Kafka's
    /// `RoundRobinPartitioner` when `load.round_robin`);
    /// `dir` holds its files, named after `name`.
    pub fn start(version: &str, dir: &Path, name: &str, bootstrap: &str, load: &Load<'_>) -> Self {
        let config = dir.join(format!("{name}.producer.properties"));
        std::fs::write(
            &config,
            format!(
                "acks=all\nenable.idempotence=true\nretries=2147483647\nlinger.ms=5\nmax.block.ms=30000\n\
                 delivery.timeout.ms=120000\nrequest.timeout.ms=10000\n\
                 max.in.flight.requests.per.connection={}\n{}",
                load.max_in_flight,
                if load.round_robin {
                    "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner\n"
                } else {
                    ""
                }
            ),
        )
        .expect("write producer properties");
        let out = dir.join(format!("{name}.producer.out"));
        let err = dir.join(format!("{name}.producer.err"));
        let child = Command::new(kafka_run_class())
            .env("KAFKA_VERSION", version)
            .env("KAFKA_HEAP_OPTS", CLIENT_HEAP)
            .arg(VERIFIABLE_PRODUCER)
            .args(["--bootstrap-server", bootstrap, "--topic", load.topic])
            .args(["--max-messages", &load.count.to_string()])
            .args(["--throughput", &load.throughput.to_string()])
            .args(["--acks", "-1", "--value-prefix", load.prefix])
            .arg("--producer.config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("create producer output"))
            .stderr(std::fs::File::create(&err).expect("create producer stderr"))
            .spawn()
            .expect("start VerifiableProducer");
        Self {
            child: Some(child),
            out,
            err,
            started: Instant::now(),
        }
    }

    /// How many `producer_send_success` lines it has printed so far.
    pub fn acked_so_far(&self) -> usize {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .matches("\"producer_send_success\"")
            .count()
    }

    /// Waits up to `timeout` for it to exit (killing it then) and parses
    /// its output.
    pub fn finish(mut self, timeout: Duration) -> ProduceReport {
        let mut child = self.child.take().expect("producer was started");
        // Exited (or gone), else killed once the time is up.
        poll_until(timeout, || {
            child.try_wait().map_or(Some(()), |s| s.map(drop))
        });
        let _ = child.kill();
        let _ = child.wait();
        let took = self.started.elapsed();
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        let mut report = ProduceReport {
            acked: Vec::new(),
            failed: Vec::new(),
            sent: None,
            took,
            stderr: super::brokers::tail(&self.stderr(), 15),
        };
        for (name, v) in events(&text) {
            match name.as_str() {
                "producer_send_success" => report.acked.extend(seen(&v)),
                "producer_send_error" => report.failed.push(format!(
                    "{}: {}",
                    v.get("exception").and_then(|e| e.as_str()).unwrap_or("?"),
                    v.get("message").and_then(|e| e.as_str()).unwrap_or("?")
                )),
                "tool_data" => report.sent = v.get("sent").and_then(serde_json::Value::as_i64),
                _ => {}
            }
        }
        report
    }

    /// Its stderr so far (for a failure message).
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `VerifiableConsumer --verbose` of `version` in group `group` on
/// `topic` from the earliest offset (or the group's committed ones) until
/// it has read `count` records or `timeout` passed (then it is killed);
/// returns each record read, in the order read, and its stderr.
pub fn consume(
    version: &str,
    dir: &Path,
    bootstrap: &str,
    topic: &str,
    group: &str,
    count: usize,
    timeout: Duration,
) -> (Records, String) {
    let out = dir.join(format!("{group}.consumer.out"));
    let err = dir.join(format!("{group}.consumer.err"));
    let mut child = Command::new(kafka_run_class())
        .env("KAFKA_VERSION", version)
        .env("KAFKA_HEAP_OPTS", CLIENT_HEAP)
        .arg(VERIFIABLE_CONSUMER)
        .args(["--bootstrap-server", bootstrap, "--topic", topic])
        .args(["--group-id", group, "--max-messages", &count.to_string()])
        .args(["--reset-policy", "earliest", "--verbose"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("create consumer output"))
        .stderr(std::fs::File::create(&err).expect("create consumer stderr"))
        .spawn()
        .expect("start VerifiableConsumer");
    // Exited (or gone), else killed once the time is up.
    poll_until(timeout, || {
        child.try_wait().map_or(Some(()), |s| s.map(drop))
    });
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let records = events(&text)
        .into_iter()
        .filter(|(n, _)| n == "record_data")
        .filter_map(|(_, v)| seen(&v))
        .collect();
    (records, std::fs::read_to_string(&err).unwrap_or_default())
}

/// Checks that `read` holds every record of `acked` exactly once, at the
/// partition and offset it was acked at, nothing else, and in increasing
/// offset order within each partition. Returns what is wrong, at most a
/// few examples of each kind.
pub fn exactly_once_in_order(acked: &Records, read: &Records) -> Vec<String> {
    let mut problems = Vec::new();
    let want: BTreeMap<&str, Seen> = acked.iter().map(|(v, s)| (v.as_str(), *s)).collect();
    if want.len() != acked.len() {
        problems.push(format!(
            "{} acks for {} distinct values",
            acked.len(),
            want.len()
        ));
    }
    let mut got: BTreeMap<&str, Vec<Seen>> = BTreeMap::new();
    for (v, s) in read {
        got.entry(v.as_str()).or_default().push(*s);
    }
    let missing: Vec<&&str> = want.keys().filter(|v| !got.contains_key(*v)).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "{} acked records never read, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        ));
    }
    let twice: Vec<(&&str, &Vec<Seen>)> = got.iter().filter(|(_, s)| s.len() > 1).collect();
    if !twice.is_empty() {
        problems.push(format!(
            "{} records read more than once, e.g. {:?}",
            twice.len(),
            &twice[..twice.len().min(5)]
        ));
    }
    let unacked: Vec<&&str> = got.keys().filter(|v| !want.contains_key(*v)).collect();
    if !unacked.is_empty() {
        problems.push(format!(
            "{} records read that were never acked, e.g. {:?}",
            unacked.len(),
            &unacked[..unacked.len().min(5)]
        ));
    }
    let moved: Vec<(&str, Seen, Seen)> = want
        .iter()
        .filter_map(|(v, s)| {
            let g = got.get(v)?.first()?;
            (g != s).then_some((*v, *s, *g))
        })
        .collect();
    if !moved.is_empty() {
        problems.push(format!(
            "{} records read elsewhere than acked (value, acked, read), e.g. {:?}",
            moved.len(),
            &moved[..moved.len().min(5)]
        ));
    }
    let mut last: BTreeMap<i32, i64> = BTreeMap::new();
    let mut out_of_order = 0;
    for (_, s) in read {
        if last.get(&s.partition).is_some_and(|o| *o >= s.offset) {
            out_of_order += 1;
        }
        last.insert(s.partition, s.offset);
    }
    if out_of_order > 0 {
        problems.push(format!(
            "{out_of_order} records read at an offset not above the previous one of their partition"
        ));
    }
    // A producer sends N before N+1: within a partition, one producer's
    // acked values must be at increasing offsets (idempotence keeps the order).
    let mut by_partition: BTreeMap<(&str, i32), Vec<(u64, i64)>> = BTreeMap::new();
    for (v, s) in acked {
        let (prefix, n) = v.rsplit_once('.').unwrap_or(("", v));
        if let Ok(n) = n.parse::<u64>() {
            by_partition
                .entry((prefix, s.partition))
                .or_default()
                .push((n, s.offset));
        }
    }
    let reordered: usize = by_partition
        .values_mut()
        .map(|v| {
            v.sort_by_key(|(_, o)| *o);
            v.windows(2).filter(|w| w[0].0 >= w[1].0).count()
        })
        .sum();
    if reordered > 0 {
        problems.push(format!(
            "{reordered} pairs of records whose offsets in a partition are not in send order"
        ));
    }
    problems
}
