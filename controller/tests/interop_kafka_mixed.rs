//! A mixed metadata quorum (issue 22): Apache Kafka 4.4.0's own controllers
//! (`kafka.Kafka`, `process.roles=controller`) and ours are voters of one
//! KRaft quorum, and leadership moves from one implementation to the other
//! both ways. Built only with the `interop` feature (`make test-interop`).
//!
//! The story, with ids 1 and 4 Kafka's and 2 and 3 ours, every node's
//! `controller.quorum.bootstrap.servers` listing all four:
//! 1. Kafka's controller 1, formatted `--standalone` by Kafka's `StorageTool`
//!    at `--release-version` 4.1-IV1 (level 27, which both implement), leads
//!    alone. Our nodes 2 and 3, formatted `--no-initial-controllers` by our
//!    `format`, fetch from it as observers; Kafka's `MetadataQuorumCommand
//!    add-controller`, given each node's own properties, makes them voters
//!    (KIP-853): two of ours and one of Kafka's.
//! 2. `kill -9` of Kafka's leader: one of ours takes over and commits past
//!    the old leader's log end offset. Kafka's controller 1 restarts and
//!    follows ours, replays what ours wrote and registers with our active
//!    controller (KIP-919).
//! 3. Kafka's controller 4, formatted `--no-initial-controllers` by Kafka's
//!    tool, joins the quorum ours leads through `add-controller`; Kafka's
//!    `remove-controller` takes out our follower: two of Kafka's and one of
//!    ours. `kill -9` of our leader: one of Kafka's takes over and commits
//!    past our old leader's end; ours restarts and follows it.
//! 4. All caught up to one high watermark, every node is stopped and Kafka's
//!    `DumpLogSegments --cluster-metadata-decoder` reads each node's
//!    segments: every batch below that high watermark (base offset, last
//!    offset, leader epoch, CreateTime, size, CRC, position, and each record
//!    as Kafka's classes decode it) is identical on every node.
//!
//! At each step every controller's log is searched for a failure to apply
//! metadata (Kafka's fault handlers, exceptions, our ERROR lines), so a
//! record one implementation wrote and the other refused is named by the
//! test. On failure every node's log is printed and the directory is kept.

mod interop;

use std::{collections::BTreeMap, path::Path, time::Duration};

use interop::{
    brokers::{KafkaServer, KeptDir, broker_view},
    clients::{config_command, tool, topics},
    mixed::{
        DumpedBatch, Member, dumped_batches, replay_faults, replication, snapshot_files,
        snapshot_payloads,
    },
    *,
};

/// The Kafka version of the JVM controllers and tools.
const VERSION: &str = "4.4.0";
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
const JVM_START: Duration = Duration::from_secs(60);

/// The four controllers, the broker and the test's directory.
struct Mixed {
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

    /// Panics with the lines of every member's log that say it failed to
    /// apply or load metadata.
    fn assert_no_replay_faults(&self) {
        let faults: Vec<String> = self
            .members
            .iter()
            .flat_map(|m| {
                replay_faults(&m.log_text())
                    .into_iter()
                    .map(move |l| format!("{}: {l}", m.name()))
            })
            .collect();
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
                    .env("KAFKA_VERSION", VERSION)
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
            Some(VERSION),
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
    /// IncrementalAlterConfigs) with `log.cleaner.threads=threads`, and a
    /// FeatureLevelRecord (Kafka's `kafka-features upgrade|downgrade`,
    /// UpdateFeatures) setting `transaction.version` to `transaction_version`
    /// if given (our controller updates `kraft.version` only).
    fn write_records(&mut self, leader: &str, threads: u32, transaction_version: Option<i16>) {
        let threads = format!("log.cleaner.threads={threads}");
        let out = tool(
            VERSION,
            config_command(VERSION),
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
        let Some(transaction_version) = transaction_version else {
            self.assert_no_replay_faults();
            return;
        };
        let current = tool(
            VERSION,
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
        let verb = if transaction_version > level {
            "upgrade"
        } else {
            "downgrade"
        };
        let feature = format!("transaction.version={transaction_version}");
        let out = tool(
            VERSION,
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
            broker_view(&address).filter(|view| view.get(&id) == Some(&false))
        });
        let out = topics(
            VERSION,
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

/// The decoded record lines of `batches` of a record type, e.g.
/// `REGISTER_CONTROLLER_RECORD`, with the leader epoch of their batch.
fn records_of<'a>(batches: &[&'a DumpedBatch], kind: &str) -> Vec<(i64, &'a str)> {
    batches
        .iter()
        .flat_map(|b| {
            let epoch = b
                .header
                .split_whitespace()
                .skip_while(|w| *w != "partitionLeaderEpoch:")
                .nth(1)
                .and_then(|e| e.parse().ok())
                .unwrap_or(-1);
            b.records
                .iter()
                .filter(move |r| r.contains(kind))
                .map(move |r| (epoch, r.as_str()))
        })
        .collect()
}

#[test]
fn kafka_and_our_controllers_lead_one_quorum_in_turn_with_identical_committed_logs() {
    let root = KeptDir::new("interop-mixed-");
    let ports: Vec<u16> = (0..4).map(|_| free_port()).collect();
    let bootstrap = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let path = root.path();
    let kafka_1 = KafkaServer::controller(path, VERSION, 1, ports[0], &bootstrap, CONTROLLER_EXTRA);
    kafka_1.format(&["--release-version", RELEASE_VERSION, "--standalone"]);
    let kafka_4 = KafkaServer::controller(path, VERSION, 4, ports[3], &bootstrap, CONTROLLER_EXTRA);
    kafka_4.format(&[
        "--release-version",
        RELEASE_VERSION,
        "--no-initial-controllers",
    ]);
    let ours: Vec<Node> = [(2, ports[1]), (3, ports[2])]
        .into_iter()
        .map(|(id, port)| {
            let node = Node::new(path, id, port, &bootstrap);
            node.append_config(CONTROLLER_EXTRA);
            run_ours(&[
                "format",
                "--config",
                &node.config.display().to_string(),
                "--cluster-id",
                CLUSTER_ID,
                "--release-version",
                RELEASE_VERSION,
                "--no-initial-controllers",
            ]);
            node
        })
        .collect();
    let admin = admin_config(path).display().to_string();
    let broker = KafkaServer::broker(path, VERSION, 11, &bootstrap, "");
    broker.format(&["--release-version", RELEASE_VERSION]);
    let mut members = vec![Member::Kafka(kafka_1)];
    members.extend(ours.into_iter().map(Member::Ours));
    members.push(Member::Kafka(kafka_4));
    let mut q = Mixed {
        members,
        broker,
        admin,
        _root: root,
    };

    // 1. Ours join the quorum Kafka's controller leads.
    q.member(1).start();
    let (leader, _, at) = q.wait_for_leader("Kafka's standalone controller", 0, |l| l == 1);
    assert_eq!(leader, 1);
    q.add_controller(2, &at);
    q.add_controller(3, &at);
    let voters = our_status(&at).expect("describe --status")["CurrentVoters"].clone();
    eprintln!("voters under Kafka's leader: {voters}");
    q.write_records(&at, 2, Some(1));
    q.broker.start();
    q.create_topic("created-under-kafka");

    // 2. Kafka's leader is killed; ours takes over; Kafka's follows ours.
    let (ours_leading, hw, at) = q.kill_leader_and_hand_over(1, &at);
    q.member(1).start();
    q.wait_caught_up(1, &at, hw);
    q.write_records(&at, 3, None);
    q.create_topic("created-under-ours");
    q.restart_broker();

    // 3. A Kafka controller joins the quorum ours leads; our follower leaves.
    q.add_controller(4, &at);
    let our_follower = if ours_leading == 2 { 3 } else { 2 };
    q.remove_controller(our_follower, &at);
    q.member(our_follower).kill();
    let (kafka_leading, hw, at) = q.kill_leader_and_hand_over(ours_leading, &at);
    assert!(!q.is_ours(kafka_leading));
    q.member(ours_leading).start();
    q.wait_caught_up(ours_leading, &at, hw);
    q.write_records(&at, 4, Some(0));
    q.create_topic("created-under-kafka-again");
    q.restart_broker();

    // 4. Everything caught up to one high watermark, then stopped.
    let (_, high_watermark, at) = q.wait_for_leader("a leader", hw, |_| true);
    for id in [1, ours_leading, 4] {
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
        .map(|m| (m.name(), dumped_batches(VERSION, &m.partition_dir())))
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
        let theirs = committed(batches, high_watermark);
        // A node that joined after a snapshot existed got that snapshot
        // (KIP-630) and its log starts at the snapshot's end offset; a
        // follower removed in step 3 stopped early. Below the high
        // watermark, the batches both hold must be identical.
        let first = theirs.first().map_or(i64::MAX, |b| b.base_offset);
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
        if !name.ends_with(&format!(" {our_follower}")) {
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
                    snapshot_payloads(VERSION, path),
                    snapshot_payloads(VERSION, other),
                    "snapshot {file} of {our_name} and of {kafka_name} hold different records"
                );
                eprintln!("snapshot {file}: same records on {our_name} and {kafka_name}");
            }
        }
    }
    // Each implementation wrote controller registrations that the other
    // replayed: print which leader epoch committed whose.
    for (epoch, record) in records_of(&reference, "REGISTER_CONTROLLER_RECORD") {
        let id = record
            .split("\"controllerId\":")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .unwrap_or("?");
        eprintln!("epoch {epoch}: RegisterControllerRecord of controller {id}");
    }
    eprintln!(
        "{} committed batches below high watermark {high_watermark} identical on {} nodes",
        reference.len(),
        dumps.len()
    );
}
