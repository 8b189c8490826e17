//! Topics, leaders, ISRs and real traffic through Apache Kafka's own brokers
//! and clients (issue 17, docs/interop.md): per Kafka version (4.1.2 and
//! 4.4.0), three controllers and three Kafka brokers go through the eight
//! steps of the "Done when" on three of ours; for 4.4.0 first on
//! three of Kafka 4.4.0's own controllers (the test's check of itself:
//! every step must pass there, and it gives the shapes and errors that
//! step 8 compares). Kafka's `TopicCommand`, `ConfigCommand`,
//! `VerifiableProducer` and `VerifiableConsumer` are the judges.
//!
//! On Kafka's controllers a failed step fails the test at once. On ours
//! every step runs (a step whose prerequisite failed is reported as not
//! run), and the test fails at its end with the list of failed steps and
//! of differences from Kafka's run, so that one run tells which steps pass.
//!
//! Both quorums keep Kafka's defaults for the broker lifecycle
//! (`broker.session.timeout.ms` 9000); the brokers get
//! `replica.lag.time.max.ms=3000` so that a stopped follower leaves the
//! ISR through AlterPartition before its session expires. Built only with
//! the `interop` feature (`make test-interop`).

mod interop;

use std::{
    collections::BTreeMap,
    panic::{AssertUnwindSafe, catch_unwind, resume_unwind},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use interop::{brokers::*, clients::*, *};

#[path = "interop_topics/steps.rs"]
mod steps;

/// Broker ids; the controllers are 1, 2, 3.
pub const BROKER_IDS: [i32; 3] = [11, 12, 13];
/// Registered, caught up and unfenced (`BrokerLifecycleManager`).
pub const RUNNING: &str = "Transitioning from RECOVERY to RUNNING";
/// How long a broker may take to start and register.
pub const START_TIMEOUT: Duration = Duration::from_secs(90);
/// Kafka's `broker.session.timeout.ms` default, which both quorums use.
pub const SESSION_TIMEOUT: Duration = Duration::from_millis(9000);
/// Given to both quorums: snapshots every 4 KiB of records, NoOpRecords
/// every 100 ms (so that step 7 has snapshots to restart from).
const CONTROLLER_EXTRA: &str = "metadata.log.max.record.bytes.between.snapshots=4096\n\
                                metadata.max.idle.interval.ms=100\n";
/// Given to every broker: a follower that stops fetching leaves the ISR
/// after 3 s (before its 9 s session expires); no rebalance delay for the
/// consumer group; a small `__consumer_offsets`.
const BROKER_EXTRA: &str = "replica.lag.time.max.ms=3000\n\
                            group.initial.rebalance.delay.ms=0\n\
                            offsets.topic.num.partitions=3\n";

/// A quorum and three brokers of one Kafka version.
#[derive(Debug)]
pub struct Cluster {
    /// Kafka version of the brokers and tools.
    pub version: &'static str,
    /// The controllers.
    pub quorum: Quorum,
    /// Brokers 11, 12, 13.
    pub brokers: Vec<KafkaServer>,
    /// Admin properties of the tools.
    pub admin: PathBuf,
    /// The test's directory.
    pub root: PathBuf,
}

impl Cluster {
    fn start(root: &Path, version: &'static str, mut quorum: Quorum) -> Self {
        let (leader, _) = quorum.wait_for_first_leader();
        eprintln!("[{version}] {} controllers: leader {leader}", quorum.name());
        let bootstrap = quorum.bootstrap();
        let mut brokers: Vec<KafkaServer> = BROKER_IDS
            .iter()
            .map(|&id| KafkaServer::broker(root, version, id, &bootstrap, BROKER_EXTRA))
            .collect();
        std::thread::scope(|s| {
            for b in &brokers {
                s.spawn(|| b.format(&[]));
            }
        });
        for b in &mut brokers {
            b.start();
        }
        for b in &mut brokers {
            b.wait_log(RUNNING, START_TIMEOUT);
        }
        Self {
            version,
            quorum,
            brokers,
            admin: admin_config(root),
            root: root.to_owned(),
        }
    }

    /// Broker `id`.
    pub fn broker(&mut self, id: i32) -> &mut KafkaServer {
        let i = BROKER_IDS
            .iter()
            .position(|&b| b == id)
            .unwrap_or_else(|| panic!("no broker {id}"));
        &mut self.brokers[i]
    }

    /// `--bootstrap-server` of the clients: all three brokers.
    pub fn bootstrap(&self) -> String {
        self.brokers
            .iter()
            .map(KafkaServer::address)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `kafka-topics` through broker 11 only (the benchmark's "one broker").
    pub fn topics(&self, args: &[&str]) -> ToolOutput {
        topics(self.version, &self.brokers[0].address(), &self.admin, args)
    }

    /// `kafka-configs` through broker 11.
    pub fn configs(&self, args: &[&str]) -> ToolOutput {
        configs(self.version, &self.brokers[0].address(), &self.admin, args)
    }

    /// `kafka-topics --describe --topic topic`, parsed; panics if it fails.
    pub fn describe(&self, topic: &str) -> Described {
        let out = self.topics(&["--describe", "--topic", topic]);
        assert!(
            out.ok,
            "kafka-topics --describe {topic} failed:\n{}",
            out.all()
        );
        parse_describe(&out.stdout)
    }

    /// Broker `from`'s Metadata view of `topic` (`None`: no answer or no
    /// such topic).
    pub fn meta(&self, from: i32, topic: &str) -> Option<BTreeMap<i32, PartitionState>> {
        let i = BROKER_IDS.iter().position(|&b| b == from)?;
        metadata(&self.brokers[i].address())?.topics.remove(topic)
    }

    /// Waits up to `timeout` for broker `from`'s view of `topic` to satisfy
    /// `ok`; returns it and the time taken.
    pub fn wait_meta(
        &self,
        from: i32,
        topic: &str,
        what: &str,
        timeout: Duration,
        ok: impl Fn(&BTreeMap<i32, PartitionState>) -> bool,
    ) -> (BTreeMap<i32, PartitionState>, Duration) {
        let start = Instant::now();
        let what = format!("broker {from} to see {topic}: {what}");
        let view = wait_for(timeout, &what, || self.meta(from, topic).filter(|v| ok(v)));
        (view, start.elapsed())
    }

    /// Lines of every broker's current log that contain `needle`.
    pub fn broker_lines(&self, needle: &str) -> Vec<String> {
        self.brokers
            .iter()
            .flat_map(|b| b.lines_with(needle))
            .collect()
    }
}

/// Whether every partition of `view` (`count` of them) has a leader in an
/// ISR of `isr` replicas.
pub fn healthy(view: &BTreeMap<i32, PartitionState>, count: usize, isr: usize) -> bool {
    view.len() == count
        && view
            .values()
            .all(|p| p.leader >= 0 && p.isr.len() == isr && p.isr.contains(&p.leader))
}

/// What one cluster's run observed.
#[derive(Debug, Default)]
pub struct Outcome {
    /// `--describe` and `kafka-configs --describe` shapes by label, to
    /// compare between Kafka's controllers and ours.
    pub shapes: BTreeMap<String, String>,
    /// The error line of each bad request, by label.
    pub errors: BTreeMap<String, String>,
    /// The Kafka exception class of each bad request, by label.
    pub error_classes: BTreeMap<String, String>,
    /// Each step: its figures, or why it failed or did not run.
    pub steps: Vec<(u8, Result<String, String>)>,
}

impl Outcome {
    fn passed(&self, n: u8) -> bool {
        self.steps.iter().any(|(s, r)| *s == n && r.is_ok())
    }
}

/// The text of a caught panic.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs step `n` unless one of `needs` did not pass; on Kafka's
/// controllers (`strict`) a failure fails the test at once.
fn step(
    out: &mut Outcome,
    version: &str,
    n: u8,
    strict: bool,
    needs: &[u8],
    f: impl FnOnce(&mut Outcome) -> String,
) {
    if let Some(missing) = needs.iter().find(|s| !out.passed(**s)) {
        let why = format!("not run: step {missing} did not pass");
        eprintln!("[{version}] step {n}: {why}");
        out.steps.push((n, Err(why)));
        return;
    }
    let start = Instant::now();
    match catch_unwind(AssertUnwindSafe(|| f(out))) {
        Ok(figures) => {
            let figures = format!("{figures} [{:.0} s]", start.elapsed().as_secs_f64());
            eprintln!("[{version}] step {n} passed: {figures}");
            out.steps.push((n, Ok(figures)));
        }
        Err(payload) if strict => resume_unwind(payload),
        Err(payload) => {
            let why = panic_text(&*payload);
            eprintln!("[{version}] step {n} FAILED: {why}");
            out.steps.push((n, Err(why)));
        }
    }
}

/// Every step on one cluster.
fn all_steps(root: &Path, version: &'static str, quorum: Quorum) -> Outcome {
    let strict = matches!(quorum, Quorum::Kafka(_));
    let who = quorum.name();
    let wall = Instant::now();
    let mut c = Cluster::start(root, version, quorum);
    eprintln!(
        "[{version}] {who} controllers and three brokers RUNNING after {:.0} s",
        wall.elapsed().as_secs_f64()
    );
    let mut out = Outcome::default();
    let mut acked = Vec::new();
    let mut later = Vec::new();
    step(&mut out, version, 1, strict, &[], |o| {
        steps::create(&mut c, o)
    });
    step(&mut out, version, 2, strict, &[1], |_| {
        steps::produce_consume(&mut c, &mut acked)
    });
    step(&mut out, version, 3, strict, &[1], |_| {
        steps::kill_broker(&mut c, &mut later)
    });
    step(&mut out, version, 4, strict, &[1], |_| {
        steps::stop_follower(&mut c)
    });
    let step2 = out.passed(2);
    step(&mut out, version, 5, strict, &[1], |_| {
        steps::kill_controller(&mut c, &mut later, step2)
    });
    step(&mut out, version, 6, strict, &[1], |o| {
        steps::alter(&mut c, o)
    });
    step(&mut out, version, 7, strict, &[1], |o| {
        steps::restart(&mut c, o)
    });
    step(&mut out, version, 8, strict, &[], |o| {
        steps::bad_requests(&mut c, o)
    });
    if !strict {
        let mut seen = Vec::new();
        for needle in [
            "UnsupportedVersion",
            "UNSUPPORTED_VERSION",
            "API version problem",
        ] {
            for line in c.broker_lines(needle) {
                let text = line.get(25..).unwrap_or(&line).to_owned();
                if !seen.contains(&text) && seen.len() < 8 {
                    seen.push(text);
                }
            }
        }
        for line in &seen {
            eprintln!("[{version}] a broker logged: {line}");
        }
    }
    eprintln!(
        "[{version}] all steps on {who} controllers in {:.0} s",
        wall.elapsed().as_secs_f64()
    );
    out
}

/// Runs the eight steps for `version`'s brokers on our controllers, first on
/// Kafka's own controllers of that version when `baseline` is set (then
/// compares their shapes and errors, step 8); fails with every step that
/// failed on ours and every difference.
fn run(version: &'static str, baseline: bool) {
    if !runs_on(version) {
        return;
    }
    let _cluster = one_cluster_at_a_time(&format!("interop_kafka_topics {version}"));
    let kafka = baseline.then(|| {
        let root = KeptDir::new("interop-topics-kafka-");
        let quorum = Quorum::kafka(root.path(), version, CONTROLLER_EXTRA);
        all_steps(root.path(), version, quorum)
    });
    let root = KeptDir::new("interop-topics-ours-");
    let quorum = Quorum::ours(root.path(), version, CONTROLLER_EXTRA);
    let ours = all_steps(root.path(), version, quorum);
    let mut failures: Vec<String> = ours
        .steps
        .iter()
        .filter_map(|(n, r)| r.as_ref().err().map(|e| format!("step {n}: {e}")))
        .collect();
    let Some(kafka) = kafka else {
        assert!(
            failures.is_empty(),
            "Kafka {version}'s brokers on our controllers:\n{}",
            failures.join("\n")
        );
        return;
    };
    // Our controller follows Kafka 4.4 where 4.1 and 4.4 differ (the RF
    // error's text gained "or some brokers have all their log directories
    // cordoned"): error texts are compared with Kafka 4.4's controllers,
    // the exception classes with both.
    let compared = |o: &Outcome| -> BTreeMap<String, String> {
        let mut all = o.shapes.clone();
        all.extend(o.error_classes.clone());
        if !version.starts_with("4.1") {
            all.extend(o.errors.clone());
        }
        all
    };
    let mine_all = compared(&ours);
    for (label, theirs) in &compared(&kafka) {
        let mine = mine_all.get(label).map_or("(none)", String::as_str);
        if mine != theirs {
            failures.push(format!(
                "step 8: {label}: Kafka's controllers gave\n    {theirs}\n  ours gave\n    {mine}"
            ));
        }
    }
    eprintln!("[{version}] summary (Kafka's controllers | ours):");
    for ((n, k), (_, o)) in kafka.steps.iter().zip(&ours.steps) {
        let show = |r: &Result<String, String>| match r {
            Ok(f) => format!("passed: {f}"),
            Err(e) => format!("FAILED: {}", e.lines().next().unwrap_or("")),
        };
        eprintln!("[{version}]   step {n}: {} | {}", show(k), show(o));
    }
    assert!(
        failures.is_empty(),
        "Kafka {version}'s brokers on our controllers:\n{}",
        failures.join("\n")
    );
}

/// Kafka 4.1.2's brokers and clients on our controllers: every step, each
/// judged by its own checks. The differential (step 8) is against Kafka
/// 4.4's controllers, as the issue asks, in the test below; repeating it
/// on 4.1.2's controllers cost `make test-interop` four minutes and
/// compared shapes and exception classes only (4.1's error texts differ).
#[test]
fn kafka_4_1_2_topics_traffic_and_failover_on_our_controllers() {
    run("4.1.2", false);
}

#[test]
fn kafka_4_4_0_topics_traffic_and_failover_on_our_controllers_as_on_kafkas() {
    run("4.4.0", true);
}
