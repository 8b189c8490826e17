//! The eight steps of issue 17's "Done when", each on a running [`Cluster`];
//! each returns its figures and panics with what is wrong.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::{Duration, Instant},
};

use super::{Cluster, Outcome, RUNNING, SESSION_TIMEOUT, START_TIMEOUT, healthy};
use crate::interop::{brokers::newest_snapshot, clients::*, wait_for};

/// The topic of the traffic steps.
const TOPIC: &str = "orders";
/// Step 2's records.
const RECORDS: u64 = 100_000;
/// Steps 3 and 5: records sent at [`SLOW_RATE`] while something is killed.
const SLOW_RECORDS: u64 = 30_000;
/// Records/s of steps 3 and 5 (15 s of sending).
const SLOW_RATE: i64 = 2_000;
/// Leaderships of a killed broker move within the session timeout plus this.
const MOVE_MARGIN: Duration = Duration::from_secs(6);

/// The shape of a `--describe`: per topic its partition count, replication
/// factor and configs; per partition the sizes of replicas and ISR and
/// whether the leader is in the ISR; and how many partitions each broker is
/// the preferred leader (first replica) of (sorted counts, so that ids do
/// not matter). Preferred leaders, not current ones: which broker leads now
/// depends on the run's history (which broker step 3 killed, when it came
/// back, whether the imbalance check ran), on Kafka's controllers as on ours.
fn shape(
    topics: &BTreeMap<String, (i32, i32, String)>,
    partitions: &[DescribedPartition],
) -> String {
    let mut leaders: BTreeMap<i32, usize> = BTreeMap::new();
    for p in partitions {
        if let Some(&preferred) = p.replicas.first() {
            *leaders.entry(preferred).or_default() += 1;
        }
    }
    let mut counts: Vec<usize> = leaders.into_values().collect();
    counts.sort_unstable();
    let parts: Vec<String> = partitions
        .iter()
        .map(|p| {
            format!(
                "{}:r{}i{}{}",
                p.partition,
                p.replicas.len(),
                p.isr.len(),
                if p.isr.contains(&p.leader) { "L" } else { "-" }
            )
        })
        .collect();
    format!(
        "{topics:?} partitions [{}] preferred leaders per broker {counts:?}",
        parts.join(" ")
    )
}

/// The `key=value` of each config line of a `kafka-configs --describe`
/// (`  key=value sensitive=… synonyms={…}`), sorted.
fn config_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// Asserts that a `--describe` shows `count` partitions, each with a leader
/// in an ISR of 3 of its 3 distinct replicas; returns its shape.
fn check_described(c: &Cluster, topic: &str, count: usize) -> String {
    let (topics, partitions) = c.describe(topic);
    assert_eq!(
        partitions.len(),
        count,
        "--describe of {topic}: {partitions:?}"
    );
    for p in &partitions {
        let mut distinct = p.replicas.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            p.replicas.len() == 3
                && distinct.len() == 3
                && p.isr.len() == 3
                && p.isr.iter().all(|i| p.replicas.contains(i))
                && p.isr.contains(&p.leader),
            "--describe of {topic}: partition {p:?}"
        );
    }
    let rf = topics.get(topic).map(|t| (t.0, t.1));
    assert_eq!(
        rf,
        Some((i32::try_from(count).unwrap_or(-1), 3)),
        "{topics:?}"
    );
    shape(&topics, &partitions)
}

/// Step 1: `--create --partitions 6 --replication-factor 3`, then `--describe`.
pub fn create(c: &mut Cluster, o: &mut Outcome) -> String {
    let start = Instant::now();
    let out = c.topics(&[
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        "6",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    ]);
    assert!(
        out.ok && out.stdout.contains(&format!("Created topic {TOPIC}.")),
        "kafka-topics --create failed:\n{}",
        out.all()
    );
    let created = start.elapsed();
    let (_, ready) = c.wait_meta(
        11,
        TOPIC,
        "6 partitions with a leader and an ISR of 3",
        Duration::from_secs(30),
        |v| healthy(v, 6, 3),
    );
    let shape = check_described(c, TOPIC, 6);
    let (topics, _) = c.describe(TOPIC);
    let configs = topics.get(TOPIC).map(|t| t.2.clone()).unwrap_or_default();
    assert!(
        configs.contains("min.insync.replicas=2"),
        "--describe shows configs {configs:?}"
    );
    o.shapes.insert("step 1: --describe orders".into(), shape);
    format!(
        "created in {:.1} s (kafka-topics' JVM included), all ISRs of 3 {:.1} s later",
        created.as_secs_f64(),
        ready.as_secs_f64()
    )
}

/// Step 2: 100,000 records with acks=all and idempotence, then read in a group.
pub fn produce_consume(c: &mut Cluster, acked: &mut Records) -> String {
    let load = Load {
        topic: TOPIC,
        count: RECORDS,
        throughput: -1,
        prefix: "2",
        max_in_flight: 5,
        round_robin: false,
    };
    let producer = Producer::start(c.version, &c.root, "step2", &c.bootstrap(), &load);
    let report = producer.finish(Duration::from_secs(300));
    assert!(
        report.failed.is_empty() && report.acked.len() == RECORDS as usize,
        "step 2: {} acked, {} failed of {RECORDS} (first failures {:?})\nproducer stderr: {}",
        report.acked.len(),
        report.failed.len(),
        &report.failed[..report.failed.len().min(3)],
        report.stderr
    );
    let start = Instant::now();
    let (read, err) = consume(
        c.version,
        &c.root,
        &c.bootstrap(),
        TOPIC,
        "group2",
        RECORDS as usize,
        Duration::from_secs(300),
    );
    let consumed = start.elapsed();
    let problems = exactly_once_in_order(&report.acked, &read);
    assert!(
        problems.is_empty(),
        "step 2: {} read of {} acked: {problems:?}\nconsumer stderr: {}",
        read.len(),
        report.acked.len(),
        tail_of(&err)
    );
    *acked = report.acked;
    format!(
        "{RECORDS} acked, 0 failed in {:.1} s ({:.0}/s, JVM start included); {} read exactly once in order in {:.1} s",
        report.took.as_secs_f64(),
        RECORDS as f64 / report.took.as_secs_f64(),
        read.len(),
        consumed.as_secs_f64()
    )
}

fn tail_of(text: &str) -> String {
    crate::interop::brokers::tail(text, 15)
}

/// Starts a slow producer and waits for its first 2,000 acks;
/// `round_robin` sends to every partition in turn (`Load::round_robin`).
///
/// One request in flight per connection: with more than one, the
/// idempotent producer can lose its own order across a partition leader
/// change and retry OUT_OF_ORDER_SEQUENCE_NUMBER until its records expire.
/// Seen in step 3 on our controllers with Kafka 4.1.2's brokers and
/// client (session 21): of two batches to orders-3 in flight, the first
/// (the producer's first to that partition) reached broker 11 just before
/// it became leader (NOT_LEADER_OR_FOLLOWER); the second arrived just
/// after, and 11, holding no state for that producer on orders-3, took it
/// at any sequence (Kafka's `ProducerAppendInfo`); the first, retried with
/// sequence 0, was then refused for good. No acknowledged record was lost,
/// and the controllers had moved the leadership correctly (13 fenced, 11
/// leader with ISR [12, 11]); what these steps check is the controllers'
/// part, every send acknowledged and read back in order, so they leave
/// that client-broker race out. Step 2 keeps Kafka's default of 5.
fn slow_producer(
    c: &Cluster,
    name: &str,
    topic: &str,
    prefix: &str,
    round_robin: bool,
) -> Producer {
    let load = Load {
        topic,
        count: SLOW_RECORDS,
        throughput: SLOW_RATE,
        prefix,
        max_in_flight: 1,
        round_robin,
    };
    let producer = Producer::start(c.version, &c.root, name, &c.bootstrap(), &load);
    wait_for(
        Duration::from_secs(60),
        &format!("{name}'s producer to get 2000 acks"),
        || (producer.acked_so_far() >= 2000).then_some(()),
    );
    producer
}

/// Asserts a slow producer's run: every record acked, none failed.
fn check_slow(step: &str, report: &ProduceReport) {
    assert!(
        report.failed.is_empty() && report.acked.len() == SLOW_RECORDS as usize,
        "{step}: {} acked, {} failed of {SLOW_RECORDS} (first failures {:?})\nproducer stderr: {}",
        report.acked.len(),
        report.failed.len(),
        &report.failed[..report.failed.len().min(3)],
        report.stderr
    );
}

/// Step 3: kill -9 broker 13 during a produce: leaderships move, ISRs shrink;
/// restarted: ISRs grow back.
pub fn kill_broker(c: &mut Cluster, later: &mut Records) -> String {
    let producer = slow_producer(c, "step3", TOPIC, "3", false);
    let before = c.meta(11, TOPIC).expect("broker 11 answers Metadata");
    let led: Vec<i32> = before
        .iter()
        .filter(|(_, p)| p.leader == 13)
        .map(|(i, _)| *i)
        .collect();
    c.broker(13).kill();
    let (_, moved) = c.wait_meta(
        11,
        TOPIC,
        "no leader 13, a leader for every partition",
        SESSION_TIMEOUT + MOVE_MARGIN,
        |v| v.len() == 6 && v.values().all(|p| p.leader >= 0 && p.leader != 13),
    );
    let (_, shrunk) = c.wait_meta(
        11,
        TOPIC,
        "13 in no ISR",
        SESSION_TIMEOUT + MOVE_MARGIN,
        |v| v.values().all(|p| !p.isr.contains(&13) && p.isr.len() == 2),
    );
    let report = producer.finish(Duration::from_secs(180));
    check_slow("step 3", &report);
    later.extend(report.acked.iter().cloned());
    c.broker(13).start();
    c.broker(13).wait_log(RUNNING, START_TIMEOUT);
    let (_, grown) = c.wait_meta(
        11,
        TOPIC,
        "every ISR of 3 again",
        Duration::from_secs(90),
        |v| healthy(v, 6, 3),
    );
    format!(
        "broker 13 (leader of partitions {led:?}) killed after 2000 acks: leaders moved in {:.1} s, ISRs of 2 in {:.1} s (session {} s); {SLOW_RECORDS} acked, 0 failed in {:.1} s; restarted: ISRs of 3 {:.1} s after RUNNING",
        moved.as_secs_f64(),
        shrunk.as_secs_f64(),
        SESSION_TIMEOUT.as_secs(),
        report.took.as_secs_f64(),
        grown.as_secs_f64()
    )
}

/// Step 4's topic: broker 12 is the last replica of each partition, so
/// never a leader (a leader stopped under traffic leaves the idempotent
/// producer retrying OUT_OF_ORDER_SEQUENCE_NUMBER for ever once it resumes,
/// on Kafka's own controllers too).
const FOLLOW: &str = "follow";

/// The lines of every broker's log, for the partitions of `topic`, that
/// contain `needle`.
fn partition_lines(c: &Cluster, topic: &str, needle: &str) -> Vec<String> {
    c.broker_lines(needle)
        .into_iter()
        .filter(|l| l.contains(&format!("[Partition {topic}-")))
        .collect()
}

/// The ISRs that leaders of `topic`'s partitions logged as accepted by the
/// controller (Kafka's `Partition.handleAlterPartitionUpdate`: `ISR updated
/// to 11,13  and version updated to 1`), as lists of broker ids.
///
/// A leader logs only the answers it still applies: when the metadata log
/// brings it the new ISR before the AlterPartition answer does, it drops the
/// answer at debug level ("Ignoring failed ISR update to … since we have
/// already updated state to …", Kafka 4.4's `Partition`), on Kafka's
/// controllers as on ours. So these lines are a figure, never a proof.
fn accepted_isrs(c: &Cluster, topic: &str) -> Vec<Vec<i32>> {
    partition_lines(c, topic, "ISR updated to ")
        .iter()
        .filter_map(|l| {
            let isr = l
                .split("ISR updated to ")
                .nth(1)?
                .split_whitespace()
                .next()?;
            isr.split(',').map(|i| i.parse().ok()).collect()
        })
        .collect()
}

/// Step 4: SIGSTOP follower 12 during a produce (a follower with nothing to
/// fetch is never out of sync in Kafka's `Partition`, so the producer sends
/// to every partition in turn): the leaders shrink ISRs (AlterPartition)
/// before its session expires; SIGCONT: they expand them.
pub fn stop_follower(c: &mut Cluster) -> String {
    let out = c.topics(&[
        "--create",
        "--topic",
        FOLLOW,
        "--replica-assignment",
        "11:13:12,13:11:12,11:13:12",
        "--config",
        "min.insync.replicas=2",
    ]);
    assert!(
        out.ok,
        "--create {FOLLOW} --replica-assignment failed:\n{}",
        out.all()
    );
    let (before, _) = c.wait_meta(
        11,
        FOLLOW,
        "3 healthy partitions",
        Duration::from_secs(30),
        |v| healthy(v, 3, 3),
    );
    let leaders: Vec<i32> = before.values().map(|p| p.leader).collect();
    assert!(
        !leaders.contains(&12),
        "12 leads a partition of {FOLLOW}: {before:?}"
    );
    let producer = slow_producer(c, "step4", FOLLOW, "4", true);
    let shrinking_before = partition_lines(c, FOLLOW, "Shrinking ISR from");
    c.broker(12).signal("STOP");
    // The ISRs without 12 while 12 is still unfenced (a Kafka broker lists
    // only unfenced brokers in its Metadata answer, Kafka 4.4's
    // `KRaftMetadataCache.getAliveBrokerNodes`; fencing and its ISR changes
    // come in one batch): the leaders' AlterPartitions took 12 out, not the
    // controller when 12's session expired.
    let start = Instant::now();
    wait_for(
        Duration::from_secs(30),
        &format!("broker 11 to see {FOLLOW} without 12 in any ISR while 12 is unfenced"),
        || {
            let m = metadata(&c.brokers[0].address())?;
            let view = m.topics.get(FOLLOW)?;
            assert!(
                m.brokers.contains(&12),
                "step 4: broker 12 was fenced before the leaders took it out of the ISRs of {FOLLOW}: {view:?}"
            );
            (view.len() == 3
                && view.len() == 3
                && view
                    .values()
                    .all(|p| !p.isr.contains(&12) && p.isr.len() == 2))
            .then_some(())
        },
    );
    let shrunk = start.elapsed();
    // And for each partition a broker (its leader: only a leader shrinks an
    // ISR) logged, after SIGSTOP, `Shrinking ISR from 13,12,11 to 11,13`
    // (Kafka's `Partition.maybeShrinkIsr`, before it sends its AlterPartition).
    let shrinking: BTreeSet<String> = partition_lines(c, FOLLOW, "Shrinking ISR from")
        .iter()
        .filter(|l| !shrinking_before.contains(l))
        .filter_map(|l| {
            let partition = l.split("[Partition ").nth(1)?.split_whitespace().next()?;
            let change = l.split("Shrinking ISR from ").nth(1)?;
            let (from, rest) = change.split_once(" to ")?;
            let to = rest.split(['.', ' ']).next()?;
            let has_12 = |isr: &str| isr.split(',').any(|i| i == "12");
            (has_12(from) && !has_12(to)).then(|| partition.to_string())
        })
        .collect();
    let shrinks = accepted_isrs(c, FOLLOW).len();
    c.broker(12).signal("CONT");
    let report = producer.finish(Duration::from_secs(180));
    assert_eq!(
        shrinking.len(),
        3,
        "step 4: after broker 12 stopped, leaders logged \"Shrinking ISR from\" (12 out) for {shrinking:?} only, not for each partition of {FOLLOW}"
    );
    check_slow("step 4", &report);
    // ISRs grow back only through the leaders' AlterPartitions: a controller
    // never adds a replica to an ISR itself (Kafka's
    // `ReplicationControlManager`; ours: leadership_tests.rs,
    // `unfencing_a_follower_adds_it_to_no_isr`).
    let (after, expanded) = c.wait_meta(
        11,
        FOLLOW,
        "every ISR of 3 again",
        Duration::from_secs(60),
        |v| healthy(v, 3, 3),
    );
    // The topic was created with ISRs of 3, so an accepted ISR with 12 in
    // it is an expansion after SIGCONT.
    let expands = accepted_isrs(c, FOLLOW)
        .iter()
        .filter(|isr| isr.contains(&12))
        .count();
    let leaders_after: Vec<i32> = after.values().map(|p| p.leader).collect();
    assert_eq!(leaders_after, leaders, "step 4: leaders of {FOLLOW} moved");
    format!(
        "follower 12 stopped: out of every ISR of {FOLLOW} in {:.1} s (12 still unfenced; a shrink logged for each partition, {shrinks} accepted AlterPartitions logged); {SLOW_RECORDS} acked, 0 failed in {:.1} s; SIGCONT: ISRs of 3 {:.1} s after the producer ended ({expands} accepted AlterPartitions adding 12 logged)",
        shrunk.as_secs_f64(),
        report.took.as_secs_f64(),
        expanded.as_secs_f64()
    )
}

/// Step 5: kill -9 the active controller during a produce: no failed send; then
/// the group of step 2 reads what steps 3 and 5 acked, exactly once.
pub fn kill_controller(c: &mut Cluster, later: &mut Records, step2_passed: bool) -> String {
    let producer = slow_producer(c, "step5", TOPIC, "5", false);
    let (old, _) = c.quorum.wait_for_leader(Duration::from_secs(30), None);
    c.quorum.kill(old);
    let killed = Instant::now();
    let (new, _) = c.quorum.wait_for_leader(Duration::from_secs(30), Some(old));
    let failover = killed.elapsed();
    let report = producer.finish(Duration::from_secs(180));
    c.quorum.start(old);
    check_slow("step 5", &report);
    later.extend(report.acked.iter().cloned());
    // The group of step 2 goes on from its committed offsets; if step 2
    // did not pass, a new group reads everything (step 2's records too, which
    // are then not checked).
    let (group, count) = if step2_passed {
        ("group2", later.len())
    } else {
        ("group5", 0)
    };
    if count == 0 {
        return format!(
            "controller {old} killed, {new} leads after {:.1} s; {SLOW_RECORDS} acked, 0 failed in {:.1} s (no group check: step 2 did not pass)",
            failover.as_secs_f64(),
            report.took.as_secs_f64()
        );
    }
    let start = Instant::now();
    let (read, err) = consume(
        c.version,
        &c.root,
        &c.bootstrap(),
        TOPIC,
        group,
        count,
        Duration::from_secs(240),
    );
    let problems = exactly_once_in_order(later, &read);
    assert!(
        problems.is_empty(),
        "step 5: {group} read {} of {} acked in steps 3 and 5: {problems:?}\nconsumer stderr: {}",
        read.len(),
        later.len(),
        tail_of(&err)
    );
    format!(
        "controller {old} killed after 2000 acks, {new} leads after {:.1} s; {SLOW_RECORDS} acked, 0 failed in {:.1} s; {group} read the {} records of steps 3 and 5 exactly once in order in {:.1} s",
        failover.as_secs_f64(),
        report.took.as_secs_f64(),
        read.len(),
        start.elapsed().as_secs_f64()
    )
}

/// Step 6: `--delete`, `--alter --partitions`, `kafka-configs --alter` and
/// `--describe`.
pub fn alter(c: &mut Cluster, o: &mut Outcome) -> String {
    let out = c.topics(&[
        "--create",
        "--topic",
        "doomed",
        "--partitions",
        "3",
        "--replication-factor",
        "3",
    ]);
    assert!(out.ok, "--create doomed failed:\n{}", out.all());
    c.wait_meta(
        11,
        "doomed",
        "3 healthy partitions",
        Duration::from_secs(30),
        |v| healthy(v, 3, 3),
    );
    let start = Instant::now();
    let out = c.topics(&["--delete", "--topic", "doomed"]);
    assert!(out.ok, "--delete doomed failed:\n{}", out.all());
    wait_for(
        Duration::from_secs(30),
        "doomed gone from broker 11's Metadata",
        || metadata(&c.brokers[0].address()).filter(|m| !m.topics.contains_key("doomed")),
    );
    let deleted = start.elapsed();
    let list = c.topics(&["--list"]);
    assert!(
        list.ok && !list.stdout.lines().any(|l| l.trim() == "doomed"),
        "--list after the delete:\n{}",
        list.all()
    );
    let start = Instant::now();
    let out = c.topics(&["--alter", "--topic", TOPIC, "--partitions", "9"]);
    assert!(out.ok, "--alter --partitions 9 failed:\n{}", out.all());
    c.wait_meta(
        11,
        TOPIC,
        "9 healthy partitions",
        Duration::from_secs(30),
        |v| healthy(v, 9, 3),
    );
    let altered = start.elapsed();
    o.shapes.insert(
        "step 6: --describe orders after --alter --partitions 9".into(),
        check_described(c, TOPIC, 9),
    );
    let out = c.configs(&[
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        TOPIC,
        "--add-config",
        "retention.ms=86400000,max.message.bytes=2000000",
    ]);
    assert!(out.ok, "kafka-configs --alter failed:\n{}", out.all());
    let lines = wait_for(
        Duration::from_secs(30),
        "kafka-configs --describe to show both new configs",
        || {
            let out = c.configs(&[
                "--describe",
                "--entity-type",
                "topics",
                "--entity-name",
                TOPIC,
            ]);
            let lines = config_lines(&out.stdout);
            (out.ok
                && lines.contains(&"retention.ms=86400000".to_owned())
                && lines.contains(&"max.message.bytes=2000000".to_owned())
                && lines.contains(&"min.insync.replicas=2".to_owned()))
            .then_some(lines)
        },
    );
    o.shapes.insert(
        "step 6: kafka-configs --describe orders".into(),
        format!("{lines:?}"),
    );
    format!(
        "doomed deleted in {:.1} s, orders altered to 9 partitions in {:.1} s (JVMs included); configs {lines:?}",
        deleted.as_secs_f64(),
        altered.as_secs_f64()
    )
}

/// Step 7: Every controller and broker killed and restarted, the controllers
/// from snapshots: topics, partitions and configs are all there.
pub fn restart(c: &mut Cluster, o: &mut Outcome) -> String {
    let (topics_before, parts_before) = c.describe(TOPIC);
    let list_before = c.topics(&["--list"]).stdout;
    let configs_before = config_lines(
        &c.configs(&[
            "--describe",
            "--entity-type",
            "topics",
            "--entity-name",
            TOPIC,
        ])
        .stdout,
    );
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
    for b in &mut c.brokers {
        b.kill();
    }
    for &id in &ids {
        c.quorum.kill(id);
    }
    let start = Instant::now();
    for &id in &ids {
        c.quorum.start(id);
    }
    c.quorum.wait_for_first_leader();
    let mut loaded = Vec::new();
    if matches!(c.quorum, crate::interop::brokers::Quorum::Ours(_)) {
        for &id in &ids {
            loaded.push(wait_for(
                Duration::from_secs(30),
                &format!("controller {id} to load a snapshot at or after {hw}"),
                || c.quorum.loaded_snapshot(id).filter(|s| *s >= hw),
            ));
        }
    }
    for b in &mut c.brokers {
        b.start();
    }
    for b in &mut c.brokers {
        b.wait_log(RUNNING, START_TIMEOUT);
    }
    c.wait_meta(
        11,
        TOPIC,
        "its partitions healthy",
        Duration::from_secs(60),
        |v| healthy(v, parts_before.len(), 3),
    );
    let took = start.elapsed();
    let (topics_after, parts_after) = c.describe(TOPIC);
    assert_eq!(topics_after, topics_before, "step 7: topic rows changed");
    let replicas = |p: &[DescribedPartition]| -> Vec<(i32, Vec<i32>)> {
        p.iter()
            .map(|p| (p.partition, p.replicas.clone()))
            .collect()
    };
    assert_eq!(
        replicas(&parts_after),
        replicas(&parts_before),
        "step 7: replica assignments changed"
    );
    let list_after = c.topics(&["--list"]).stdout;
    assert_eq!(list_after, list_before, "step 7: --list changed");
    let configs_after = config_lines(
        &c.configs(&[
            "--describe",
            "--entity-type",
            "topics",
            "--entity-name",
            TOPIC,
        ])
        .stdout,
    );
    assert_eq!(configs_after, configs_before, "step 7: configs changed");
    o.shapes.insert(
        "step 7: --describe orders after the restart".into(),
        check_described(c, TOPIC, parts_before.len()),
    );
    format!(
        "snapshots at or after {hw}{}; restarted to {} healthy partitions in {:.0} s; topics {:?}, configs the same",
        if loaded.is_empty() {
            String::new()
        } else {
            format!(" (ours loaded {loaded:?})")
        },
        parts_before.len(),
        took.as_secs_f64(),
        list_after.split_whitespace().collect::<Vec<_>>()
    )
}

/// Step 8: Bad requests: replication factor above the brokers, a bad name, a
/// duplicate; their error lines go to the comparison with Kafka's.
pub fn bad_requests(c: &mut Cluster, o: &mut Outcome) -> String {
    let cases: [(&str, &[&str]); 4] = [
        (
            "replication factor 4 with 3 brokers",
            &[
                "--create",
                "--topic",
                "big",
                "--partitions",
                "1",
                "--replication-factor",
                "4",
            ],
        ),
        (
            "a bad topic name",
            &[
                "--create",
                "--topic",
                "bad/name",
                "--partitions",
                "1",
                "--replication-factor",
                "1",
            ],
        ),
        (
            "a name of 250 characters",
            &[
                "--create",
                "--topic",
                &"x".repeat(250),
                "--partitions",
                "1",
                "--replication-factor",
                "1",
            ],
        ),
        (
            "a duplicate topic",
            &[
                "--create",
                "--topic",
                TOPIC,
                "--partitions",
                "1",
                "--replication-factor",
                "3",
            ],
        ),
    ];
    let mut seen = Vec::new();
    for (label, args) in cases {
        let out = c.topics(args);
        let line = out.error_line().unwrap_or_else(|| "(no error line)".into());
        assert!(
            !out.ok || line != "(no error line)",
            "{label}: no error:\n{}",
            out.all()
        );
        o.errors.insert(format!("step 8: {label}"), line.clone());
        let class = out.exception_class().unwrap_or_else(|| "(none)".into());
        o.error_classes
            .insert(format!("step 8: {label}: exception class"), class);
        seen.push(format!("{label}: {line}"));
    }
    let list = c.topics(&["--list"]);
    assert!(
        list.ok && !list.stdout.lines().any(|l| l.trim() == "big"),
        "a refused topic was created:\n{}",
        list.all()
    );
    seen.join("; ")
}
