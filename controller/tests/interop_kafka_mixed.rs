//! A mixed metadata quorum (issue 22): Apache Kafka's own controllers
//! (`kafka.Kafka`, `process.roles=controller`) and ours are voters of one
//! KRaft quorum, and leadership moves from one implementation to the other
//! both ways. Built only with the `interop` feature (`make test-interop`).
//!
//! For each Kafka version of the run's `KAFKA_VERSIONS` (4.1.2, 4.4.0: its
//! controllers, broker and tools), two tests tell one story, once with
//! Kafka's controller as the founder and once with ours: controllers 1
//! (the founder) and 4 of one
//! implementation, 2 and 3 of the other, every node's
//! `controller.quorum.bootstrap.servers` listing all four, all formatted at
//! `--release-version` 4.1-IV1 (level 27, which both implement and both
//! Kafka versions run), and one Kafka broker (11) of the same version.
//! 1. The founder, formatted `--standalone` by its own implementation's
//!    tool, leads alone and writes the bootstrap records. Controllers 2 and
//!    3, formatted `--no-initial-controllers`, fetch as observers; Kafka's
//!    `MetadataQuorumCommand add-controller`, given each one's properties,
//!    makes them voters (KIP-853). Two voters of one implementation, one of
//!    the other. The founder writes a ConfigRecord (Kafka's
//!    `kafka-configs --bootstrap-controller`), lowers `transaction.version`
//!    (`kafka-features downgrade`), registers the broker and creates a topic
//!    (`kafka-topics` through the broker).
//! 2. `kill -9` of the founder: a joiner of the other implementation takes
//!    over and commits past the founder's log end offset. The founder
//!    restarts, follows it, replays what it wrote and registers with it
//!    (KIP-919). The new leader writes the same kinds of records, and the
//!    broker's restart (controlled shutdown, new registration, unfencing).
//! 3. Controller 4 joins the quorum the joiner leads through `add-controller`
//!    (its log starts at the leader's latest snapshot, KIP-630); Kafka's
//!    `remove-controller` takes out the other joiner (running under our
//!    leader; stopped first under Kafka's, whose leader dies on a late
//!    answer from a voter it removed): two voters of the founder's
//!    implementation, one of the other. `kill -9` of the leader:
//!    the founder's implementation takes over past its end, writes the same
//!    kinds of records; the old leader restarts and follows.
//! 4. All caught up to one high watermark, every process is stopped and
//!    Kafka's `DumpLogSegments --cluster-metadata-decoder` reads each
//!    node's segments: every batch below that high watermark that two nodes
//!    hold is identical (base and last offset, leader epoch, CreateTime,
//!    size, CRC, and each record as Kafka's classes decode it); only the
//!    byte `position:` in the segment differs, where a node's log starts at
//!    a snapshot. Snapshots of one offset and epoch written by both
//!    implementations hold the same records (see `snapshot_payloads` for
//!    the one order that differs).
//!
//! At each step every controller's log is searched for a failure to apply
//! metadata (Kafka's fault handlers, ERROR lines, exceptions; our ERROR
//! lines), so a record one implementation wrote and the other refused is
//! named by the test. On failure every node's log is printed and the
//! directory is kept.

mod interop;

use std::{collections::BTreeMap, path::Path, sync::Mutex, time::Duration};

use interop::{
    brokers::{KafkaServer, KeptDir, broker_view},
    clients::{config_command, tool, topics},
    mixed::{
        DumpedBatch, Member, dumped_batches, replay_faults, replication, snapshot_files,
        snapshot_payloads,
    },
    *,
};

/// The `metadata.version` both implementations run (level 27).
const RELEASE_VERSION: &str = "4.1-IV1";
/// Kafka's `kafka-metadata-quorum`.
const QUORUM_COMMAND: &str = "org.apache.kafka.tools.MetadataQuorumCommand";
/// Kafka's `kafka-features`.
const FEATURE_COMMAND: &str = "org.apache.kafka.tools.FeatureCommand";
/// Given to every controller, ours and Kafka's: a snapshot every 4 KiB of
/// records, so that restarted controllers load snapshots they made from
/// records the other implementation wrote.
const CONTROLLER_EXTRA: &str = "metadata.log.max.record.bytes.between.snapshots=4096\n";
/// How long a JVM controller may take to start and win or follow.
const JVM_START: Duration = FIRST_LEADER_TIMEOUT;

/// The four controllers, the broker and the test's directory.
struct Mixed {
    /// The Kafka version of the JVM controllers, the broker and the tools.
    version: &'static str,
    members: Vec<Member>,
    broker: KafkaServer,
    admin: String,
    _root: KeptDir,
}

impl Mixed {
    fn member(&mut self, id: i32) -> &mut Member {
        self.members
            .iter_mut()
            .find(|m| m.id() == id)
            .unwrap_or_else(|| panic!("no controller {id}"))
    }

    fn name(&self, id: i32) -> String {
        self.members
            .iter()
            .find(|m| m.id() == id)
            .map_or_else(|| format!("controller {id}"), Member::name)
    }

    fn is_ours(&self, id: i32) -> bool {
        self.members.iter().any(|m| m.id() == id && m.is_ours())
    }

    /// The leader, its high watermark and its address, as a running member
    /// reports them.
    fn leader(&mut self) -> Option<(i32, i64, String)> {
        let addresses: Vec<String> = self
            .members
            .iter_mut()
            .filter_map(|m| m.is_running().then(|| m.address()))
            .collect();
        let (leader, hw) = addresses.into_iter().find_map(|address| {
            let status = our_status(&address)?;
            let leader = status.get("LeaderId")?.parse::<i32>().ok()?;
            let hw = status.get("HighWatermark")?.parse::<i64>().ok()?;
            (leader >= 0 && hw > 0).then_some((leader, hw))
        })?;
        let address = self.members.iter().find(|m| m.id() == leader)?.address();
        Some((leader, hw, address))
    }

    /// Waits for a leader whose high watermark is above `past` and for which
    /// `accept` holds; panics naming the failures of replay seen meanwhile.
    fn wait_for_leader(
        &mut self,
        what: &str,
        past: i64,
        accept: impl Fn(i32) -> bool,
    ) -> (i32, i64, String) {
        let found = poll_until(JVM_START, || {
            self.assert_no_replay_faults();
            self.leader()
                .filter(|(leader, hw, _)| accept(*leader) && *hw > past)
        });
        found.unwrap_or_else(|| {
            panic!(
                "timed out waiting for {what} with a high watermark above {past}; last seen: {:?}",
                self.leader()
            )
        })
    }

    /// The replication table from the leader at `address`.
    fn replication(&self, address: &str) -> BTreeMap<i32, (String, i64, String)> {
        let mut last = String::new();
        poll_until(Duration::from_secs(20), || {
            replication(address).map_err(|e| last = e).ok()
        })
        .unwrap_or_else(|| panic!("describe --replication at {address} failed: {last}"))
    }

    /// Panics with the lines of every member's log, and of the broker's
    /// current run, that say it failed to apply or load metadata.
    fn assert_no_replay_faults(&self) {
        let mut faults: Vec<String> = self
            .members
            .iter()
            .flat_map(|m| {
                replay_faults(&m.log_text())
                    .into_iter()
                    .map(move |l| format!("{}: {l}", m.name()))
            })
            .collect();
        // The broker replays the same records (its `MetadataLoader`).
        faults.extend(
            replay_faults(&self.broker.log_text())
                .into_iter()
                .map(|l| format!("Kafka {}'s broker {}: {l}", self.version, self.broker.id)),
        );
        assert!(
            faults.is_empty(),
            "a controller failed to apply metadata:\n{}",
            faults.join("\n")
        );
    }

    /// Starts member `id`, waits until it fetches from the leader at
    /// `leader` as an observer, then has Kafka's `add-controller` (given
    /// the member's own properties) make it a voter.
    fn add_controller(&mut self, id: i32, leader: &str) {
        let member = self.member(id);
        member.start();
        let dir = member.directory_id();
        let config = member.config().display().to_string();
        let name = member.name();
        wait_for(JVM_START, &format!("{name} as an observer"), || {
            our_status(leader).filter(|s| s["CurrentObservers"].contains(&dir))
        });
        // Retried while the leader answers that the observer has not caught
        // up yet (REQUEST_TIMED_OUT, KIP-853).
        wait_for(
            Duration::from_secs(60),
            &format!("Kafka's add-controller of {name}"),
            || {
                let output = std::process::Command::new(kafka_run_class())
                    .env("KAFKA_VERSION", self.version)
                    .args([QUORUM_COMMAND, "--bootstrap-controller", leader])
                    .args(["--command-config", &config, "add-controller"])
                    .output()
                    .expect("kafka-run-class runs");
                output.status.success().then_some(())
            },
        );
        wait_for(
            Duration::from_secs(30),
            &format!("{name} as a voter"),
            || our_status(leader).filter(|s| s["CurrentVoters"].contains(&dir)),
        );
        self.assert_no_replay_faults();
    }

    /// Kafka's `remove-controller` of member `id` through the leader at
    /// `leader`; waits until the voters no longer list it.
    fn remove_controller(&mut self, id: i32, leader: &str) {
        let dir = self.member(id).directory_id();
        kafka_at(
            Some(self.version),
            QUORUM_COMMAND,
            &[
                "--bootstrap-controller",
                leader,
                "--command-config",
                &self.admin,
                "remove-controller",
                "--controller-id",
                &id.to_string(),
                "--controller-directory-id",
                &dir,
            ],
        );
        wait_for(
            Duration::from_secs(30),
            &format!("{} removed", self.name(id)),
            || our_status(leader).filter(|s| !s["CurrentVoters"].contains(&dir)),
        );
    }

    /// `kill -9` of the leader at `leader` (`address`): waits until a voter
    /// of the other implementation leads with a high watermark past the old
    /// leader's log end offset; returns the new leader.
    fn kill_leader_and_hand_over(&mut self, leader: i32, address: &str) -> (i32, i64, String) {
        let table = self.replication(address);
        let end = table
            .get(&leader)
            .map(|(_, end, _)| *end)
            .unwrap_or_else(|| panic!("the leader {leader} is not in {table:?}"));
        let was_ours = self.is_ours(leader);
        eprintln!(
            "kill -9 of the leader, {} (log end offset {end})",
            self.name(leader)
        );
        self.member(leader).kill();
        let other = if was_ours { "Kafka's" } else { "ours" };
        let ours: Vec<i32> = self
            .members
            .iter()
            .filter(|m| m.is_ours())
            .map(Member::id)
            .collect();
        let next = self.wait_for_leader(&format!("a leader of {other}"), end, |l| {
            l != leader && ours.contains(&l) != was_ours
        });
        eprintln!(
            "{} leads with high watermark {} (the old leader's end was {end})",
            self.name(next.0),
            next.1
        );
        next
    }

    /// Has the leader at `leader` write records of its own making besides
    /// LeaderChange, NoOps and registrations: a ConfigRecord (Kafka's
    /// `kafka-configs --bootstrap-controller … --alter --entity-default`,
    /// IncrementalAlterConfigs) with `log.cleaner.threads=threads` (1 or 2:
    /// a broker refuses more than double its current count when it starts
    /// and logs `Cluster default configs could not be applied`), and a
    /// FeatureLevelRecord (Kafka's `kafka-features downgrade`, UpdateFeatures)
    /// lowering `transaction.version` by one, whichever implementation
    /// leads.
    fn write_records(&mut self, leader: &str, threads: u32) {
        let threads = format!("log.cleaner.threads={threads}");
        let out = tool(
            self.version,
            config_command(self.version),
            &[
                "--bootstrap-controller",
                leader,
                "--command-config",
                &self.admin,
                "--entity-type",
                "brokers",
                "--entity-default",
                "--alter",
                "--add-config",
                &threads,
            ],
        );
        assert!(
            out.ok,
            "kafka-configs {threads} at {leader}:\n{}",
            out.all()
        );
        let current = tool(
            self.version,
            FEATURE_COMMAND,
            &["--bootstrap-controller", leader, "describe"],
        );
        assert!(current.ok, "kafka-features describe:\n{}", current.all());
        let level = current
            .stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some("transaction.version"))
            .and_then(|l| {
                l.split_whitespace()
                    .skip_while(|w| *w != "FinalizedVersionLevel:")
                    .nth(1)?
                    .parse::<i16>()
                    .ok()
            })
            .unwrap_or(0);
        let transaction_version = (level - 1).max(0);
        let verb = "downgrade";
        let feature = format!("transaction.version={transaction_version}");
        let out = tool(
            self.version,
            FEATURE_COMMAND,
            &[
                "--bootstrap-controller",
                leader,
                "--command-config",
                &self.admin,
                verb,
                "--feature",
                &feature,
            ],
        );
        if !out.ok {
            self.assert_no_replay_faults();
        }
        assert!(
            out.ok,
            "kafka-features {verb} {feature} at {leader} (finalized {level}):\n{}",
            out.all()
        );
        self.assert_no_replay_faults();
    }

    /// Restarts the broker with SIGTERM (controlled shutdown: the active
    /// controller moves its partitions' leadership away and records it) and
    /// a new start (a new RegisterBrokerRecord, then its unfencing), both
    /// written by the current active controller.
    fn restart_broker(&mut self) {
        let exit = self.broker.terminate(Duration::from_secs(60));
        assert!(exit.success() || exit.code() == Some(143), "{exit}");
        self.broker.start();
        let (id, address) = (self.broker.id, self.broker.address());
        wait_for(JVM_START, "the restarted broker to be unfenced", || {
            self.assert_no_replay_faults();
            broker_view(&address).filter(|view| view.get(&id) == Some(&false))
        });
        self.assert_no_replay_faults();
    }

    /// Creates topic `name` (2 partitions, 1 replica) with Kafka's
    /// `kafka-topics` through the broker: the active controller writes its
    /// TopicRecord and PartitionRecords. Waits first until the broker is
    /// registered and unfenced (DescribeCluster to the broker).
    fn create_topic(&mut self, name: &str) {
        let id = self.broker.id;
        let address = self.broker.address();
        wait_for(JVM_START, "the broker to be unfenced", || {
            self.assert_no_replay_faults();
            broker_view(&address).filter(|view| view.get(&id) == Some(&false))
        });
        let out = topics(
            self.version,
            &address,
            Path::new(&self.admin),
            &[
                "--create",
                "--topic",
                name,
                "--partitions",
                "2",
                "--replication-factor",
                "1",
            ],
        );
        if !out.ok {
            self.assert_no_replay_faults();
        }
        assert!(out.ok, "kafka-topics --create {name}:\n{}", out.all());
        self.assert_no_replay_faults();
    }

    /// Waits until member `id` is listed by the leader at `leader` with a
    /// log end offset at or past `offset`.
    fn wait_caught_up(&mut self, id: i32, leader: &str, offset: i64) {
        let name = self.name(id);
        wait_for(
            JVM_START,
            &format!("{name} to reach offset {offset}"),
            || {
                self.assert_no_replay_faults();
                replication(leader)
                    .ok()?
                    .get(&id)
                    .filter(|(_, end, _)| *end >= offset)
                    .map(|_| ())
            },
        );
    }
}

/// The batches of `batches` that end below `high_watermark`.
fn committed(batches: &[DumpedBatch], high_watermark: i64) -> Vec<&DumpedBatch> {
    batches
        .iter()
        .filter(|b| b.last_offset < high_watermark)
        .collect()
}

/// `batch` without the `position:` of its header: the byte position in
/// its segment, which differs where a node's log starts at a snapshot.
fn without_position(batch: &DumpedBatch) -> DumpedBatch {
    let mut words: Vec<&str> = batch.header.split(' ').collect();
    if let Some(i) = words.iter().position(|w| *w == "position:") {
        words.drain(i..(i + 2).min(words.len()));
    }
    DumpedBatch {
        header: words.join(" "),
        ..batch.clone()
    }
}

/// For each leader epoch of `batches`: the record types written in it
/// (`TOPIC_RECORD`, `LeaderChange`, …) with their counts, and `leader N`
/// from its LeaderChange record.
fn epoch_summary(batches: &[&DumpedBatch]) -> BTreeMap<i64, BTreeMap<String, usize>> {
    let mut summary: BTreeMap<i64, BTreeMap<String, usize>> = BTreeMap::new();
    for batch in batches {
        let epoch = batch
            .header
            .split_whitespace()
            .skip_while(|w| *w != "partitionLeaderEpoch:")
            .nth(1)
            .and_then(|e| e.parse().ok())
            .unwrap_or(-1);
        let kinds = summary.entry(epoch).or_default();
        for record in &batch.records {
            let kind = record
                .split_once("\"type\":\"")
                .and_then(|(_, r)| r.split('"').next())
                .map(str::to_owned)
                .or_else(|| {
                    ["LeaderChange", "KRaftVersion", "Voters", "SnapshotHeader"]
                        .into_iter()
                        .find(|c| record.contains(c))
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "other".to_owned());
            if kind == "LeaderChange"
                && let Some(id) = record
                    .split("\"leaderId\":")
                    .nth(1)
                    .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            {
                kinds.insert(format!("leader {id}"), 1);
            }
            *kinds.entry(kind).or_default() += 1;
        }
    }
    summary
}

/// Only one mixed quorum at a time: each runs four controller processes
/// (two or three JVMs) and a broker JVM on a 2-core machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Formats member `id` of the implementation `ours` (else Kafka
/// `version`'s) listening on `port`; `mode` is `--standalone` or
/// `--no-initial-controllers`.
fn member(
    version: &'static str,
    path: &Path,
    ours: bool,
    (id, port): (i32, u16),
    bootstrap: &str,
    mode: &str,
) -> Member {
    if ours {
        let node = Node::new(path, id, port, bootstrap);
        node.append_config(CONTROLLER_EXTRA);
        run_ours(&[
            "format",
            "--config",
            &node.config.display().to_string(),
            "--cluster-id",
            CLUSTER_ID,
            "--release-version",
            RELEASE_VERSION,
            mode,
        ]);
        Member::Ours(node)
    } else {
        let server = KafkaServer::controller(path, version, id, port, bootstrap, CONTROLLER_EXTRA);
        server.format(&["--release-version", RELEASE_VERSION, mode]);
        Member::Kafka(server)
    }
}

/// The whole story with Kafka `version`, with the founder (controller 1,
/// formatted `--standalone`) and the late joiner (4) of one implementation
/// and the two early joiners (2 and 3) of the other; `founder_is_ours`
/// picks which.
fn run(version: &'static str, founder_is_ours: bool) {
    let _serial = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let root = KeptDir::new("interop-mixed-");
    let ports: Vec<u16> = (0..4).map(|_| free_port()).collect();
    let bootstrap = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let path = root.path();
    let modes = [
        "--standalone",
        "--no-initial-controllers",
        "--no-initial-controllers",
        "--no-initial-controllers",
    ];
    let members: Vec<Member> = (1..=4)
        .zip(ports)
        .zip(modes)
        .map(|((id, port), mode)| {
            let ours = (id == 1 || id == 4) == founder_is_ours;
            member(version, path, ours, (id, port), &bootstrap, mode)
        })
        .collect();
    let broker = KafkaServer::broker(path, version, 11, &bootstrap, "");
    broker.format(&["--release-version", RELEASE_VERSION]);
    let mut q = Mixed {
        version,
        members,
        broker,
        admin: admin_config(path).display().to_string(),
        _root: root,
    };
    let founder = q.name(1);

    // 1. Two of the other implementation join the founder's quorum.
    q.member(1).start();
    let (_, _, at) = q.wait_for_leader(&founder, 0, |l| l == 1);
    q.add_controller(2, &at);
    q.add_controller(3, &at);
    let voters = our_status(&at).expect("describe --status")["CurrentVoters"].clone();
    eprintln!("voters under {founder}: {voters}");
    q.write_records(&at, 2);
    q.broker.start();
    q.create_topic("created-in-step-1");

    // 2. The founder is killed; one of the joiners leads; the founder
    //    restarts and follows it.
    let (joiner_leading, hw, at) = q.kill_leader_and_hand_over(1, &at);
    q.member(1).start();
    q.wait_caught_up(1, &at, hw);
    q.write_records(&at, 1);
    q.create_topic("created-in-step-2");
    q.restart_broker();

    // 3. Controller 4 (the founder's implementation) joins the quorum the
    //    joiner leads; the other joiner leaves; two of the founder's
    //    implementation and one of the other remain. The leader is killed.
    q.add_controller(4, &at);
    let removed = if joiner_leading == 2 { 3 } else { 2 };
    if q.is_ours(joiner_leading) {
        // Our leader removes a live voter, which then stops.
        q.remove_controller(removed, &at);
        q.member(removed).kill();
    } else {
        // Kafka's leader (4.1.2 and 4.4.0) dies on a BeginQuorumEpoch
        // answer from a voter it has just removed: `LeaderState.
        // addAcknowledgementFrom` throws "Unexpected acknowledgement from
        // non-voter" in the raft IO thread (docs/interop.md, mismatch 11).
        // Its heartbeat goes to every voter each second, so on a loaded
        // machine the answer can arrive after the removal; the voter it
        // removes is stopped first, so no answer can.
        q.member(removed).kill();
        q.remove_controller(removed, &at);
    }
    let (_, hw, at) = q.kill_leader_and_hand_over(joiner_leading, &at);
    q.member(joiner_leading).start();
    q.wait_caught_up(joiner_leading, &at, hw);
    q.write_records(&at, 2);
    q.create_topic("created-in-step-3");
    q.restart_broker();

    // 4. Everything caught up to one high watermark, then stopped.
    let (_, high_watermark, at) = q.wait_for_leader("a leader", hw, |_| true);
    for id in [1, joiner_leading, 4] {
        q.wait_caught_up(id, &at, high_watermark);
    }
    q.assert_no_replay_faults();
    q.broker.kill();
    for member in &mut q.members {
        member.kill();
    }
    let dumps: Vec<(String, Vec<DumpedBatch>)> = q
        .members
        .iter()
        .map(|m| (m.name(), dumped_batches(version, &m.partition_dir())))
        .collect();
    let (reference_name, reference) = &dumps[0];
    let reference = committed(reference, high_watermark);
    assert!(
        reference
            .last()
            .is_some_and(|b| b.last_offset + 1 == high_watermark),
        "{reference_name}'s log has no batch ending at the high watermark {high_watermark}"
    );
    for (name, batches) in &dumps[1..] {
        // A node that joined after a snapshot existed got that snapshot
        // (KIP-630) and its log starts at the snapshot's end offset; a node
        // that cleaned its log after a snapshot (Kafka's controllers delete
        // the segments below it, so the reference too) starts there as
        // well; a follower removed in step 3 stopped early. Below the high
        // watermark, the batches both hold must be identical.
        let all_theirs = committed(batches, high_watermark);
        let first = all_theirs
            .first()
            .map_or(i64::MAX, |b| b.base_offset)
            .max(reference.first().map_or(i64::MAX, |b| b.base_offset));
        let theirs: Vec<&DumpedBatch> = all_theirs
            .iter()
            .filter(|b| b.base_offset >= first)
            .copied()
            .collect();
        let expected: Vec<&DumpedBatch> = reference
            .iter()
            .filter(|b| b.base_offset >= first)
            .copied()
            .collect();
        assert!(
            expected.len() >= theirs.len(),
            "{name} has committed batches {reference_name} lacks"
        );
        for (a, b) in expected.iter().zip(&theirs) {
            assert_eq!(
                without_position(a),
                without_position(b),
                "{reference_name} and {name} differ in the committed batch at offset {}",
                a.base_offset
            );
        }
        if !name.ends_with(&format!(" {removed}")) {
            assert_eq!(
                theirs.len(),
                expected.len(),
                "{name} has {} committed batches from offset {first}, {reference_name} {}",
                theirs.len(),
                expected.len()
            );
        }
        eprintln!(
            "{name}: {} committed batches from offset {first} identical to {reference_name}'s",
            theirs.len()
        );
    }
    // Snapshots of one offset and epoch made by both implementations hold
    // the same image: the same records, whatever their order.
    let snapshots: Vec<(String, bool, BTreeMap<String, std::path::PathBuf>)> = q
        .members
        .iter()
        .map(|m| (m.name(), m.is_ours(), snapshot_files(&m.partition_dir())))
        .collect();
    for (our_name, _, ours) in snapshots.iter().filter(|s| s.1) {
        for (kafka_name, _, kafkas) in snapshots.iter().filter(|s| !s.1) {
            for (file, path) in ours {
                let Some(other) = kafkas.get(file) else {
                    continue;
                };
                assert_eq!(
                    snapshot_payloads(version, path),
                    snapshot_payloads(version, other),
                    "snapshot {file} of {our_name} and of {kafka_name} hold different records"
                );
                eprintln!("snapshot {file}: same records on {our_name} and {kafka_name}");
            }
        }
    }
    // Which implementation led each epoch, and what its leader wrote.
    for (epoch, kinds) in epoch_summary(&reference) {
        let leader = kinds
            .iter()
            .find_map(|(k, _)| k.strip_prefix("leader "))
            .and_then(|l| l.parse().ok())
            .map_or_else(|| "?".to_owned(), |l| q.name(l));
        let kinds: Vec<String> = kinds
            .iter()
            .filter(|(k, _)| !k.starts_with("leader "))
            .map(|(k, n)| format!("{k} x{n}"))
            .collect();
        eprintln!("epoch {epoch}, led by {leader}: {}", kinds.join(", "));
    }
    eprintln!(
        "{} committed batches below high watermark {high_watermark} identical on {} nodes",
        reference.len(),
        dumps.len()
    );
}

/// Kafka's controller founds the quorum.
fn kafka_founds(version: &'static str) {
    run(version, false);
}

/// Our controller founds the quorum.
fn ours_founds(version: &'static str) {
    run(version, true);
}

// Kafka 4.1.2 runs one founder order only: each order has both sides join
// the other and leadership move both ways, and the pair costs ~3.5 min of
// `make test` (docs/interop.md, row 10).
crate::per_kafka_version!(kafka_founds;
    our_controllers_join_kafka_4_4_0s_then_kafkas_join_ours_and_committed_logs_stay_identical => "4.4.0");

crate::per_kafka_version!(ours_founds;
    kafka_4_1_2s_controllers_join_ours_then_ours_join_kafkas_and_committed_logs_stay_identical => "4.1.2",
    kafka_4_4_0s_controllers_join_ours_then_ours_join_kafkas_and_committed_logs_stay_identical => "4.4.0");

/// The fault filter keeps the lines that say metadata was not applied and
/// drops the two kinds of ERROR line that do not (lines as Kafka 4.1.2's
/// controller printed them in CI).
#[test]
fn replay_faults_keeps_failures_and_drops_slow_event_reports_and_not_controller_answers() {
    let log = "\
[2026-12-07T00:13:43,505] ERROR [QuorumController id=3] Exceptionally slow controller event handleLoadSnapshot[snapshotId=OffsetAndEpoch[offset=143, epoch=3]] took 2183 ms. (org.apache.kafka.controller.EventPerformanceMonitor)
[2026-12-07T00:13:44,001] ERROR [ControllerApis nodeId=3] Unexpected error handling request (kafka.server.ControllerApis)
org.apache.kafka.common.errors.NotControllerException: This node is not the active controller.
[2026-12-07T00:13:45,010] ERROR Encountered metadata loading fault: Unhandled error initializing new publishers (org.apache.kafka.server.fault.LoggingFaultHandler)
[2026-12-07T00:13:45,020] WARN [RaftManager id=3] Exception while reading snapshot (org.apache.kafka.raft.KafkaRaftClient)
[2026-12-07T00:13:45,030] INFO [QuorumController id=3] Becoming the active controller (org.apache.kafka.controller.QuorumController)
";
    let faults = replay_faults(log);
    assert_eq!(faults.len(), 2, "{faults:#?}");
    assert!(faults[0].contains("metadata loading fault"), "{faults:#?}");
    assert!(
        faults[1].contains("Exception while reading snapshot"),
        "{faults:#?}"
    );
}
