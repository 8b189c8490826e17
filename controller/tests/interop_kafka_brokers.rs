//! Apache Kafka's own brokers on our controllers (issue 16, docs/interop.md):
//! three `kraft-controller`s and three Kafka brokers (`kafka.Kafka` with
//! `process.roles=broker`) of Kafka 4.1.2 and of 4.4.0, the broker being
//! the judge of our BrokerRegistration, BrokerHeartbeat, fencing and
//! controlled shutdown. One cluster per version goes through the seven
//! steps of the "Done when"; before it, the same three brokers run
//! on three of Kafka's own controllers of that version, to measure step 1
//! for both in one run.
//!
//! Both sides keep Kafka's defaults for what the broker lifecycle depends on
//! (`broker.heartbeat.interval.ms` 2000, `broker.session.timeout.ms` 9000,
//! `initial.broker.registration.timeout.ms` 60000); the controllers get a
//! small snapshot threshold and idle interval so that step 6 restarts from
//! snapshots within seconds. Built only with the `interop` feature
//! (`make test-interop`).
//!
//! The steps were checked once against Kafka's own controllers while the test
//! was written (docs/interop.md); each run still measures step 1 on them.

mod interop;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use interop::{brokers::*, *};

/// Broker ids; the controllers are 1, 2, 3.
const BROKER_IDS: [i32; 3] = [11, 12, 13];
/// The first line of a broker's run (`BrokerServer`).
const STARTING: &str = "Transition from SHUTDOWN to STARTING";
/// `BrokerLifecycleManager` starts talking to the controllers (its
/// incarnation `is now STARTING`): what step 1 measures from.
const LIFECYCLE_STARTING: &str = "is now STARTING.";
/// Registered, caught up and unfenced (`BrokerLifecycleManager`).
const RUNNING: &str = "Transitioning from RECOVERY to RUNNING";
/// `BrokerLifecycleManager` after a BrokerRegistration answered without error.
const REGISTERED: &str = "Successfully registered broker";
/// Kafka's `broker.session.timeout.ms` default, which both quorums use.
const SESSION_TIMEOUT: Duration = Duration::from_millis(9000);
/// Step 1: a broker on our controllers must go from its lifecycle manager's
/// STARTING to RUNNING within the slowest broker's time on Kafka's
/// controllers plus this.
const STEP1_MARGIN: Duration = Duration::from_secs(5);
/// Step 4: fenced within the session timeout plus this (Kafka checks every
/// session/8 ms, and broker 11 must fetch the record).
const FENCE_MARGIN: Duration = Duration::from_secs(5);
/// How long a broker may take to start and register before the test gives
/// up (Kafka's own 60 s registration timeout makes it exit earlier).
const START_TIMEOUT: Duration = Duration::from_secs(90);
/// Kafka's `kafka.controller:type=KafkaController,name=ActiveBrokerCount`.
const ACTIVE_BROKERS: &str = "kafka_controller_kafkacontroller_activebrokercount";
/// Kafka's `kafka.controller:type=KafkaController,name=FencedBrokerCount`.
const FENCED_BROKERS: &str = "kafka_controller_kafkacontroller_fencedbrokercount";
/// A metric every one of our nodes has (to tell a missing metric from a
/// node that does not answer).
const HIGH_WATERMARK: &str = "kafka_server_raft_metrics_high_watermark";
/// Given to both quorums: snapshots every 4 KiB of records, NoOpRecords
/// every 100 ms (so that step 6 has snapshots to restart from).
const CONTROLLER_EXTRA: &str = "metadata.log.max.record.bytes.between.snapshots=4096\n\
                                metadata.max.idle.interval.ms=100\n";

/// How long a broker took to be RUNNING, by the timestamps of its log.
#[derive(Debug, Clone, Copy)]
struct Timing {
    /// From `BrokerLifecycleManager`'s STARTING (first contact with the
    /// controllers): registration, catching up, unfencing.
    lifecycle: Duration,
    /// From `BrokerServer`'s STARTING (the JVM's start of the broker).
    server: Duration,
}

/// A quorum and three brokers of one Kafka version.
struct Cluster {
    version: &'static str,
    quorum: Quorum,
    brokers: Vec<KafkaServer>,
    admin: PathBuf,
    /// Mismatches of our `/metrics`, reported at the end of the test.
    failures: Vec<String>,
}

impl Cluster {
    /// Waits for `quorum`'s leader, then starts three brokers; returns the
    /// cluster and each broker's times by its log: lifecycle manager
    /// STARTING→RUNNING, and server STARTING→RUNNING.
    fn start(root: &Path, version: &'static str, mut quorum: Quorum) -> (Self, Vec<Timing>) {
        let (leader, _) = quorum.wait_for_first_leader();
        eprintln!("[{version}] {} controllers: leader {leader}", quorum.name());
        let bootstrap = quorum.bootstrap();
        let mut brokers: Vec<KafkaServer> = BROKER_IDS
            .iter()
            .map(|&id| KafkaServer::broker(root, version, id, &bootstrap, ""))
            .collect();
        std::thread::scope(|s| {
            for b in &brokers {
                s.spawn(|| b.format(&[]));
            }
        });
        for b in &mut brokers {
            b.start();
        }
        let mut times = Vec::new();
        for b in &mut brokers {
            let running = b.wait_log(RUNNING, START_TIMEOUT);
            let starting = b.wait_log(STARTING, Duration::from_secs(1));
            let lifecycle = b.wait_log(LIFECYCLE_STARTING, Duration::from_secs(1));
            times.push(Timing {
                lifecycle: between(&lifecycle, &running),
                server: between(&starting, &running),
            });
        }
        let admin = admin_config(root);
        let cluster = Self {
            version,
            quorum,
            brokers,
            admin,
            failures: Vec::new(),
        };
        (cluster, times)
    }

    fn broker(&mut self, id: i32) -> &mut KafkaServer {
        let i = BROKER_IDS.iter().position(|&b| b == id).unwrap_or(0);
        &mut self.brokers[i]
    }

    /// What broker 11 (never stopped) knows of every broker: id → fenced.
    fn view(&self) -> Option<BTreeMap<i32, bool>> {
        broker_view(&self.brokers[0].address())
    }

    /// Waits for broker 11's view to satisfy `ok`; returns it and the time taken.
    fn wait_view(
        &self,
        what: &str,
        timeout: Duration,
        ok: impl Fn(&BTreeMap<i32, bool>) -> bool,
    ) -> (BTreeMap<i32, bool>, Duration) {
        let start = Instant::now();
        let view = wait_for(timeout, what, || self.view().filter(|v| ok(v)));
        (view, start.elapsed())
    }

    fn wait_all_unfenced(&self, timeout: Duration) {
        let (view, _) = self.wait_view("all three brokers unfenced", timeout, |v| {
            BROKER_IDS.iter().all(|id| v.get(id) == Some(&false))
        });
        eprintln!("[{}] broker 11 sees {view:?}", self.version);
    }

    /// Our leader's `/metrics` shows `active` unfenced and `fenced` fenced
    /// brokers within `timeout`; nothing to check on Kafka's controllers.
    /// A mismatch is printed and kept in `failures`, and fails the test at
    /// its end, so that one run tells every step the brokers judge; a
    /// leader whose `/metrics` lacks the metric is a mismatch at once.
    fn wait_counts(&mut self, step: &str, active: i64, fenced: i64, timeout: Duration) {
        if matches!(self.quorum, Quorum::Kafka(_)) {
            return;
        }
        let want = (Some(active as f64), Some(fenced as f64));
        let deadline = Instant::now() + timeout;
        let mut last = (None, None, None);
        loop {
            if let Some((leader, _)) = self.quorum.leader() {
                let got = (
                    self.quorum.metric(leader, ACTIVE_BROKERS),
                    self.quorum.metric(leader, FENCED_BROKERS),
                );
                last = (Some(leader), got.0, got.1);
                if got == want {
                    return;
                }
                let answers = self.quorum.metric(leader, HIGH_WATERMARK).is_some();
                if answers && (got.0.is_none() || got.1.is_none()) {
                    break;
                }
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let failure = format!(
            "{step}: leader {:?}'s /metrics has {ACTIVE_BROKERS} {:?} and {FENCED_BROKERS} {:?}, not {active} and {fenced}",
            last.0, last.1, last.2
        );
        eprintln!("[{}] FAILED {failure}", self.version);
        self.failures.push(failure);
    }

    /// Watches for `window`: every broker process alive and unfenced in
    /// broker 11's view at every look (4 a second), while the quorum
    /// commits (its high watermark grows, so a leader that could fence
    /// did not).
    fn hold_unfenced(&mut self, window: Duration, during: &str) {
        let (_, hw_before) = self.quorum.wait_for_leader(Duration::from_secs(30), None);
        let end = Instant::now() + window;
        let mut looks = 0;
        while Instant::now() < end {
            for b in &mut self.brokers {
                assert!(
                    b.is_running(),
                    "{} exited {during}:\n{}",
                    b.name(),
                    tail(&b.log_text(), 30)
                );
            }
            if let Some(view) = self.view() {
                looks += 1;
                for id in BROKER_IDS {
                    assert_eq!(
                        view.get(&id),
                        Some(&false),
                        "broker {id} fenced {during}: {view:?}"
                    );
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        assert!(
            looks > 0,
            "broker 11 never answered DescribeCluster {during}"
        );
        let (_, hw_after) = self.quorum.wait_for_leader(Duration::from_secs(30), None);
        assert!(
            hw_after > hw_before,
            "the quorum committed nothing {during} (high watermark {hw_before} then {hw_after})"
        );
    }

    fn registrations(&self) -> Vec<usize> {
        self.brokers
            .iter()
            .map(|b| b.lines_with(REGISTERED).len())
            .collect()
    }
}

/// The broker epoch in a `Successfully registered broker N with broker epoch E` line.
fn broker_epoch(line: &str) -> i64 {
    line.rsplit("broker epoch ")
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("no broker epoch in {line:?}"))
}

/// The slowest broker's lifecycle time.
fn slowest(times: &[Timing]) -> Duration {
    times.iter().map(|t| t.lifecycle).max().unwrap_or_default()
}

/// `lifecycle s (server s)` of each broker.
fn show(times: &[Timing]) -> String {
    times
        .iter()
        .map(|t| {
            format!(
                "{:.1} s ({:.1} s)",
                t.lifecycle.as_secs_f64(),
                t.server.as_secs_f64()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Step 1 only, on three of Kafka's own controllers: the brokers' times.
fn kafka_baseline(version: &'static str) -> Vec<Timing> {
    let root = KeptDir::new("interop-brokers-kafka-");
    let quorum = Quorum::kafka(root.path(), version, CONTROLLER_EXTRA);
    let (_cluster, times) = Cluster::start(root.path(), version, quorum);
    times
}

/// All seven steps on `quorum`; `baseline` is step 1 on Kafka's controllers.
fn all_steps(root: &Path, version: &'static str, quorum: Quorum, baseline: Option<&[Timing]>) {
    let wall = Instant::now();
    let who = quorum.name();
    // 1. Registered and unfenced within Kafka's time plus the margin.
    let (mut c, times) = Cluster::start(root, version, quorum);
    eprintln!(
        "[{version}] step 1: on {who} controllers brokers RUNNING after {} (lifecycle STARTING→RUNNING, and from the server's start, by their logs)",
        show(&times)
    );
    if let Some(base) = baseline {
        eprintln!(
            "[{version}] step 1: Kafka controller: brokers RUNNING after {:.1} s; ours: {:.1} s (slowest of three, lifecycle STARTING→RUNNING; margin {} s)",
            slowest(base).as_secs_f64(),
            slowest(&times).as_secs_f64(),
            STEP1_MARGIN.as_secs()
        );
        assert!(
            slowest(&times) <= slowest(base) + STEP1_MARGIN,
            "step 1: brokers took {} on {who} controllers, {} on Kafka's",
            show(&times),
            show(base)
        );
    }

    // 2. Kafka's Admin describeCluster lists all three; our /metrics 3 and 0.
    c.wait_all_unfenced(Duration::from_secs(15));
    let bootstrap = c
        .brokers
        .iter()
        .map(|b| b.address())
        .collect::<Vec<_>>()
        .join(",");
    let listed = kafka_list_endpoints(version, &bootstrap, &c.admin);
    eprintln!("[{version}] step 2: kafka-cluster list-endpoints: {listed:?}");
    assert_eq!(
        listed.keys().copied().collect::<Vec<_>>(),
        BROKER_IDS,
        "{listed:?}"
    );
    assert!(listed.values().all(|s| s == "unfenced"), "{listed:?}");
    c.wait_counts("step 2", 3, 0, Duration::from_secs(15));

    // 3. SIGTERM: controlled shutdown, fenced; restarted: RUNNING again.
    let epoch_before = broker_epoch(&c.broker(13).wait_log(REGISTERED, Duration::from_secs(1)));
    let exit = c.broker(13).terminate(Duration::from_secs(60));
    let b13 = c.broker(13);
    for line in [
        "Beginning controlled shutdown.",
        "The controller has asked us to exit controlled shutdown.",
        "Transitioning from PENDING_CONTROLLED_SHUTDOWN to SHUTTING_DOWN",
        "[BrokerServer id=13] shut down completed",
    ] {
        assert!(
            !b13.lines_with(line).is_empty(),
            "step 3: broker 13 ({exit}) never logged {line:?}:\n{}",
            tail(&b13.log_text(), 40)
        );
    }
    let (_, took) = c.wait_view(
        "broker 13 fenced after its controlled shutdown",
        Duration::from_secs(15),
        |v| v.get(&13) == Some(&true),
    );
    eprintln!(
        "[{version}] step 3: broker 13 exited ({exit}) after a controlled shutdown; fenced {:.1} s later",
        took.as_secs_f64()
    );
    c.wait_counts(
        "step 3 (after the controlled shutdown)",
        2,
        1,
        Duration::from_secs(15),
    );
    c.broker(13).start();
    let running = c.broker(13).wait_log(RUNNING, START_TIMEOUT);
    let epoch_after = broker_epoch(&c.broker(13).wait_log(REGISTERED, Duration::from_secs(1)));
    assert!(
        epoch_after > epoch_before,
        "step 3: broker epoch {epoch_before} then {epoch_after}"
    );
    eprintln!(
        "[{version}] step 3: broker 13 registered again with epoch {epoch_after} (was {epoch_before}): {running}"
    );
    c.wait_all_unfenced(Duration::from_secs(15));
    c.wait_counts("step 3 (after the restart)", 3, 0, Duration::from_secs(15));

    // 4. kill -9: fenced within the session timeout plus the margin.
    c.broker(12).kill();
    let (_, took) = c.wait_view(
        "broker 12 fenced after kill -9",
        SESSION_TIMEOUT + FENCE_MARGIN,
        |v| v.get(&12) == Some(&true),
    );
    eprintln!(
        "[{version}] step 4: broker 12 killed, fenced after {:.1} s (session {} s + margin {} s)",
        took.as_secs_f64(),
        SESSION_TIMEOUT.as_secs(),
        FENCE_MARGIN.as_secs()
    );
    // Its last heartbeat was at most one interval (2 s) before the kill.
    assert!(
        took >= Duration::from_secs(3),
        "step 4: broker 12 fenced after only {took:?}"
    );
    c.wait_counts("step 4 (after kill -9)", 2, 1, Duration::from_secs(15));
    c.broker(12).start();
    c.broker(12).wait_log(RUNNING, START_TIMEOUT);
    c.wait_all_unfenced(Duration::from_secs(15));
    c.wait_counts("step 4 (after the restart)", 3, 0, Duration::from_secs(15));

    // 5. kill -9 the active controller: the brokers follow the new one.
    let (old, _) = c.quorum.wait_for_leader(Duration::from_secs(30), None);
    let registered = c.registrations();
    c.quorum.kill(old);
    let killed = Instant::now();
    let (new, _) = c.quorum.wait_for_leader(Duration::from_secs(30), Some(old));
    eprintln!(
        "[{version}] step 5: leader {old} killed, {new} leads after {:.1} s",
        killed.elapsed().as_secs_f64()
    );
    let needle = format!("(id: {new} ");
    for b in &mut c.brokers {
        b.wait_log_where(
            &format!("that it uses controller {new}"),
            Duration::from_secs(30),
            |l| {
                // 4.1 names the channel ("…-heartbeat-channel-manager]: "),
                // 4.4 does not: any channel of the broker will do.
                l.contains("Recorded new KRaft controller") && l.contains(&needle)
            },
        );
    }
    c.hold_unfenced(
        SESSION_TIMEOUT + Duration::from_secs(3),
        "after the leader was killed",
    );
    c.wait_counts("step 5", 3, 0, Duration::from_secs(15));
    assert_eq!(
        c.registrations(),
        registered,
        "step 5: a broker registered again"
    );
    c.quorum.start(old);
    eprintln!(
        "[{version}] step 5: no broker fenced for {} s after the failover",
        SESSION_TIMEOUT.as_secs() + 3
    );

    // 6. All controllers restarted from snapshots: the brokers stay registered.
    let (_, hw) = c.quorum.wait_for_leader(Duration::from_secs(30), None);
    let ids = c.quorum.ids();
    for &id in &ids {
        let dir = c.quorum.partition_dir(id);
        wait_for(
            Duration::from_secs(60),
            &format!("a snapshot at or after offset {hw} on controller {id}"),
            || newest_snapshot(&dir).filter(|(offset, _)| *offset >= hw),
        );
    }
    for &id in &ids {
        c.quorum.kill(id);
    }
    for &id in &ids {
        c.quorum.start(id);
    }
    let (leader, _) = c.quorum.wait_for_first_leader();
    if matches!(c.quorum, Quorum::Ours(_)) {
        for &id in &ids {
            let offset = wait_for(
                Duration::from_secs(30),
                &format!("controller {id} to load a snapshot at or after {hw}"),
                || c.quorum.loaded_snapshot(id).filter(|o| *o >= hw),
            );
            eprintln!(
                "[{version}] step 6: controller {id} loaded its image from snapshot {offset}"
            );
        }
    }
    eprintln!(
        "[{version}] step 6: all controllers restarted from snapshots at or after {hw}; leader {leader}"
    );
    c.hold_unfenced(
        SESSION_TIMEOUT + Duration::from_secs(3),
        "after all controllers restarted",
    );
    c.wait_counts("step 6", 3, 0, Duration::from_secs(15));
    assert_eq!(
        c.registrations(),
        registered,
        "step 6: a broker registered again"
    );

    // 7. Kafka's DumpLogSegments decodes our segments and snapshot.
    let partition = c.quorum.partition_dir(leader);
    for &id in &ids {
        c.quorum.kill(id);
    }
    check_dumps(version, &partition, matches!(c.quorum, Quorum::Ours(_)));
    assert!(
        c.failures.is_empty(),
        "our /metrics disagreed with the brokers:\n{}",
        c.failures.join("\n")
    );
    eprintln!(
        "[{version}] all steps passed on {who} controllers in {:.0} s",
        wall.elapsed().as_secs_f64()
    );
}

/// Step 7: Kafka's decoder reads every segment and the newest snapshot of
/// `partition` without error; broker records are among them.
fn check_dumps(version: &'static str, partition: &Path, ours: bool) {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(partition)
        .expect("read the partition directory")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    let mut log = String::new();
    for segment in &segments {
        log += &kafka_dump(version, segment);
        if ours {
            assert_eq!(
                kafka_counts_of(version, segment),
                our_counts(segment),
                "{}",
                segment.display()
            );
        }
    }
    let count = |text: &str, kind: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"type\":\"{kind}\"")))
            .count()
    };
    let registers = count(&log, "REGISTER_BROKER_RECORD");
    // Both quorums run at `version`'s default metadata.version: 4.4-IV2
    // writes RegisterBrokerRecord v4 (cordoned log dirs, 4.3-IV0), 4.1-IV1 v3
    // (Kafka 4.4.0's MetadataVersion.registerBrokerRecordVersion).
    let register_version = if release_version_of(version) == "4.4-IV2" {
        4
    } else {
        3
    };
    let wrong: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("\"type\":\"REGISTER_BROKER_RECORD\"")
                && !l.contains(&format!("\"version\":{register_version},"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "RegisterBrokerRecord not at v{register_version}:\n{}",
        wrong.join("\n")
    );
    // Kafka's controllers write BrokerRegistrationChangeRecord for (un)fencing
    // at this metadata.version; FenceBrokerRecord/UnfenceBrokerRecord are the
    // older form: either is right.
    let change = |fenced: i32| {
        log.lines()
            .filter(|l| {
                l.contains("\"BROKER_REGISTRATION_CHANGE_RECORD\"")
                    && l.contains(&format!("\"fenced\":{fenced}"))
            })
            .count()
    };
    let unfences = count(&log, "UNFENCE_BROKER_RECORD") + change(-1);
    let fences = count(&log, "FENCE_BROKER_RECORD") + change(1);
    eprintln!(
        "[{version}] step 7: Kafka decodes {} segment(s): {registers} REGISTER_BROKER_RECORD, {unfences} unfence, {fences} fence records",
        segments.len()
    );
    assert!(
        registers >= 5,
        "3 registrations and 2 re-registrations expected:\n{log}"
    );
    assert!(
        unfences >= 5 && fences >= 2,
        "unfence/fence records expected:\n{log}"
    );
    for id in BROKER_IDS {
        assert!(
            log.contains(&format!("\"brokerId\":{id},")),
            "no record of broker {id}"
        );
    }
    let (offset, snapshot) = newest_snapshot(partition).expect("a snapshot");
    let snap = kafka_dump(version, &snapshot);
    let registered: Vec<&str> = snap
        .lines()
        .filter(|l| l.contains("\"REGISTER_BROKER_RECORD\""))
        .collect();
    eprintln!(
        "[{version}] step 7: snapshot {offset}: {} REGISTER_BROKER_RECORD",
        registered.len()
    );
    for id in BROKER_IDS {
        assert!(
            registered
                .iter()
                .any(|l| l.contains(&format!("\"brokerId\":{id},"))
                    && l.contains("\"fenced\":false")),
            "snapshot {offset} has no unfenced registration of broker {id}:\n{snap}"
        );
    }
    if ours {
        assert_eq!(kafka_counts_of(version, &snapshot), our_counts(&snapshot));
    }
}

/// Kafka's dump of `file` with `version`'s jars: (batches, records).
fn kafka_counts_of(version: &'static str, file: &Path) -> (usize, usize) {
    let out = kafka_dump(version, file);
    (
        out.lines().filter(|l| l.starts_with("baseOffset:")).count(),
        out.lines().filter(|l| l.starts_with("| offset:")).count(),
    )
}

fn on_our_controllers(version: &'static str) {
    if !runs_on(version) {
        return;
    }
    let _cluster = one_cluster_at_a_time(&format!("interop_kafka_brokers {version}"));
    let baseline = kafka_baseline(version);
    eprintln!(
        "[{version}] step 1: Kafka controller: brokers RUNNING after {:.1} s (slowest; each {})",
        slowest(&baseline).as_secs_f64(),
        show(&baseline)
    );
    let root = KeptDir::new("interop-brokers-ours-");
    let quorum = Quorum::ours(root.path(), version, CONTROLLER_EXTRA);
    all_steps(root.path(), version, quorum, Some(&baseline));
}

#[test]
fn kafka_4_1_2_brokers_register_heartbeat_fence_and_unfence_on_our_controllers() {
    on_our_controllers("4.1.2");
}

#[test]
fn kafka_4_4_0_brokers_register_heartbeat_fence_and_unfence_on_our_controllers() {
    on_our_controllers("4.4.0");
}
