//! Process tests of KIP-853 dynamic voters (issue 5, "Process tests with
//! real binaries"): real `kraft-controller` processes on 127.0.0.1 change
//! their voter set through `kraft-controller quorum add-voter` and
//! `remove-voter`, as an operator would: grow a standalone node to five
//! voters and shrink back, remove the leader, replace a node's disk, add a
//! node that is far behind, refuse a wrong directory id.
//!
//! Every test runs with Kafka 4.1's default `controller.quorum.*` timings
//! (see `support::kafka_defaults`); conditions are polled with deadlines and
//! every node's log is printed when a test fails.

mod support;

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use kraft_controller::admin::{QuorumInfo, kafka_uuid_string};
use support::{
    Mode, Quorum, QuorumBuilder, forwarder::Forwarder, kafka_defaults, median, wait_for,
};

/// Long enough for an election on a loaded 2-core machine (start-up, the
/// bootstrap's fetch timeout, pre-vote and vote, a split vote or two).
const ELECTION: Duration = Duration::from_secs(20);
/// Long enough for a started observer to find the leader and catch up.
const CATCH_UP: Duration = Duration::from_secs(20);

/// DescribeQuorum through any of `via` that answers (the admin client
/// follows the active controller).
fn describe(quorum: &Quorum, via: &[i32]) -> Option<QuorumInfo> {
    via.iter()
        .filter(|id| quorum.node(**id).is_running())
        .find_map(|id| quorum.describe_quorum(*id).ok())
}

/// The voters `(id, directory id)` of a DescribeQuorum answer.
fn voter_keys(info: &QuorumInfo) -> BTreeSet<(i32, String)> {
    info.voters
        .iter()
        .map(|v| (v.replica_id, kafka_uuid_string(v.directory_id)))
        .collect()
}

/// Node `id`'s key as formatted now.
fn key(quorum: &Quorum, id: i32) -> (i32, String) {
    (id, quorum.node(id).directory_id.clone())
}

/// Waits until the leader reports node `id` (with its current directory id)
/// as an observer whose log end offset reached the high watermark.
fn wait_caught_up_observer(quorum: &Quorum, via: &[i32], id: i32) {
    let directory_id = quorum.node(id).directory_id.clone();
    wait_for(
        CATCH_UP,
        &format!("node {id} to be a caught-up observer"),
        || {
            quorum.node(id).assert_alive();
            let info = describe(quorum, via)?;
            info.observers
                .iter()
                .any(|o| {
                    o.replica_id == id
                        && kafka_uuid_string(o.directory_id) == directory_id
                        && o.log_end_offset >= info.high_watermark
                })
                .then_some(())
        },
    );
}

/// Waits until the high watermark, as the leader describes it, passes its
/// current value by two records (the idle no-ops): the quorum commits.
fn wait_commits(quorum: &Quorum, via: &[i32]) {
    let start = wait_for(ELECTION, "a DescribeQuorum answer", || {
        describe(quorum, via).filter(|i| i.high_watermark >= 0)
    })
    .high_watermark;
    let idle = Duration::from_millis(kafka_defaults::MAX_IDLE_INTERVAL_MS);
    wait_for(
        ELECTION + 10 * idle,
        &format!("the high watermark to pass {start}"),
        || describe(quorum, via).filter(|i| i.high_watermark >= start + 2),
    );
}

/// `quorum add-voter --config <node id's server.properties>` via `via`,
/// which must succeed; returns the wall time of the call (process start-up
/// included), which ends once the leader committed the new voter set.
fn add_voter(quorum: &Quorum, via: i32, id: i32) -> Duration {
    let config = quorum.node(id).config.display().to_string();
    let started = Instant::now();
    let out = quorum.quorum_cli(via, &["add-voter", "--config", &config]);
    let took = started.elapsed();
    assert_eq!(out.code, 0, "add-voter of node {id}: {out}");
    took
}

/// `quorum remove-voter --node-id ID --directory-id DIR` via `via`.
fn remove_voter(quorum: &Quorum, via: i32, id: i32, directory_id: &str) -> support::CliOutput {
    quorum.quorum_cli(
        via,
        &[
            "remove-voter",
            "--node-id",
            &id.to_string(),
            "--directory-id",
            directory_id,
        ],
    )
}

/// Asserts DescribeQuorum (v2) lists exactly `expected` as voters, with each
/// voter's controller endpoint.
fn assert_voters(quorum: &Quorum, via: &[i32], expected: &BTreeSet<(i32, String)>) {
    let info = wait_for(ELECTION, "a DescribeQuorum answer", || {
        describe(quorum, via)
    });
    assert_eq!(&voter_keys(&info), expected, "voters: {info:?}");
    let endpoints: BTreeSet<(i32, u16)> = info
        .nodes
        .iter()
        .flat_map(|n| n.endpoints.iter().map(move |e| (n.node_id, e.port)))
        .collect();
    let wanted: BTreeSet<(i32, u16)> = expected
        .iter()
        .map(|(id, _)| (*id, quorum.node(*id).port))
        .collect();
    assert_eq!(endpoints, wanted, "voter endpoints: {info:?}");
}

#[test]
fn a_standalone_node_grows_to_five_voters_shrinks_to_three_and_survives_removing_its_leader() {
    let mut quorum = QuorumBuilder::standalone().format();
    quorum.start(1);
    quorum.wait_for_leader(&[1], ELECTION);
    let mut voters: BTreeSet<(i32, String)> = [key(&quorum, 1)].into();
    assert_voters(&quorum, &[1], &voters);

    // Grow 1 → 3 → 5: each new node is formatted --no-initial-controllers,
    // fetches as an observer, and is added once caught up.
    let mut add_times = Vec::new();
    for _ in 0..4 {
        let via: Vec<i32> = voters.iter().map(|(id, _)| *id).collect();
        let id = quorum.add_observer();
        quorum.start(id);
        wait_caught_up_observer(&quorum, &via, id);
        add_times.push(add_voter(&quorum, via[0], id));
        voters.insert(key(&quorum, id));
        // The voter just added is listed with its endpoint at once.
        assert_voters(&quorum, &via, &voters);
    }
    let ids: Vec<i32> = voters.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    for id in ids.iter().filter(|id| **id != leader) {
        quorum.wait_for_follower(*id, leader, CATCH_UP);
    }
    wait_commits(&quorum, &ids);

    // Shrink 5 → 3, removing two followers one at a time.
    let removed: Vec<i32> = ids
        .iter()
        .rev()
        .copied()
        .filter(|id| *id != leader)
        .take(2)
        .collect();
    for id in &removed {
        let out = remove_voter(&quorum, leader, *id, &quorum.node(*id).directory_id);
        assert_eq!(out.code, 0, "remove-voter {id}: {out}");
        voters.remove(&key(&quorum, *id));
        assert_voters(&quorum, &[leader], &voters);
    }
    for id in &removed {
        quorum.kill(*id);
    }
    let ids: Vec<i32> = voters.iter().map(|(id, _)| *id).collect();
    wait_commits(&quorum, &ids);

    // A fifth timed add: a fresh node joins the three (3 → 4).
    let id = quorum.add_observer();
    quorum.start(id);
    wait_caught_up_observer(&quorum, &ids, id);
    add_times.push(add_voter(&quorum, leader, id));
    voters.insert(key(&quorum, id));
    assert_voters(&quorum, &ids, &voters);
    eprintln!(
        "add-voter of a caught-up observer, call to commit (CLI wall time, \
         process start-up included): median {:?} of {:?}",
        median(&add_times),
        add_times
    );

    // Remove the leader itself (4 → 3): it resigns once the change commits,
    // the remaining voters elect a new leader, and commits continue.
    let (leader, epoch) = quorum.wait_for_leader(&[leader], ELECTION);
    let out = remove_voter(&quorum, leader, leader, &quorum.node(leader).directory_id);
    assert_eq!(out.code, 0, "remove-voter of the leader {leader}: {out}");
    voters.remove(&key(&quorum, leader));
    let rest: Vec<i32> = voters.iter().map(|(id, _)| *id).collect();
    let (new_leader, new_epoch) = wait_for(ELECTION, "a new leader among the rest", || {
        quorum.ready_leader(&rest).filter(|(_, e)| *e > epoch)
    });
    assert_ne!(new_leader, leader);
    assert!(new_epoch > epoch);
    wait_commits(&quorum, &rest);
    assert_voters(&quorum, &rest, &voters);
}

#[test]
fn voters_are_refused_with_a_wrong_directory_id_added_only_once_caught_up_and_replaced_with_a_new_disk()
 {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let mut ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let mut voters: BTreeSet<(i32, String)> = ids.iter().map(|id| key(&quorum, *id)).collect();

    // A voter id with a directory id that is not its own: VOTER_NOT_FOUND,
    // not retriable, and nothing changes.
    let wrong = kafka_uuid_string(uuid::Uuid::from_u128(
        0xbad0_0000_0000_0000_0000_0000_0000_0001,
    ));
    let out = remove_voter(&quorum, ids[0], 1, &wrong);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("VOTER_NOT_FOUND"), "{out}");
    assert_voters(&quorum, &ids, &voters);

    // A node that never fetched is not caught up: REQUEST_TIMED_OUT, which
    // the CLI reports as retriable (exit code 3).
    let joiner = quorum.add_observer();
    let config = quorum.node(joiner).config.display().to_string();
    let add = ["add-voter", "--config", config.as_str()];
    let out = quorum.quorum_cli(leader, &add);
    assert_eq!(out.code, 3, "{out}");
    assert!(
        out.stderr.contains("REQUEST_TIMED_OUT") && out.stderr.contains("retriable"),
        "{out}"
    );

    // It starts and catches up, then is paused (SIGSTOP) while the quorum
    // writes on: once its last caught-up time is older than the fetch
    // timeout, it is far behind and refused again.
    quorum.start(joiner);
    wait_caught_up_observer(&quorum, &ids, joiner);
    quorum.signal(joiner, "STOP");
    let window = kafka_defaults::FETCH_TIMEOUT_MS as i64;
    wait_for(
        4 * Duration::from_millis(window as u64),
        "the paused observer to fall behind by more than the fetch timeout",
        || {
            let info = describe(&quorum, &ids)?;
            let now = info
                .voters
                .iter()
                .filter_map(|v| v.last_fetch_timestamp_ms)
                .max()?;
            let o = info.observers.iter().find(|o| o.replica_id == joiner);
            let behind = o.is_none_or(|o| {
                o.log_end_offset < info.high_watermark
                    && o.last_caught_up_timestamp_ms
                        .is_some_and(|t| now - t > window)
            });
            behind.then_some(())
        },
    );
    let out = quorum.quorum_cli(leader, &add);
    assert_eq!(out.code, 3, "add-voter of a paused observer: {out}");
    assert!(out.stderr.contains("REQUEST_TIMED_OUT"), "{out}");

    // Resumed, it catches up and is added; retries until then are retriable.
    quorum.signal(joiner, "CONT");
    wait_for(CATCH_UP, "add-voter of the resumed node to succeed", || {
        let out = quorum.quorum_cli(leader, &add);
        match out.code {
            0 => Some(()),
            3 if out.stderr.contains("REQUEST_TIMED_OUT") => None,
            _ => panic!("add-voter of the resumed node: {out}"),
        }
    });
    voters.insert(key(&quorum, joiner));
    ids.push(joiner);
    // DescribeQuorum v2 lists the voter just added, with its endpoint.
    assert_voters(&quorum, &ids, &voters);
    wait_commits(&quorum, &ids);

    // Replace a follower's disk while the others keep committing: stop it,
    // wipe and format it with a new directory id, start it (an observer
    // now), remove the old key, add the new one.
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let replaced = *ids
        .iter()
        .find(|id| **id != leader && **id != joiner)
        .expect("a follower");
    let old = key(&quorum, replaced);
    quorum.kill(replaced);
    wait_commits(&quorum, &[leader]);
    let new_directory_id = quorum.replace_disk(replaced);
    assert_ne!(new_directory_id, old.1);
    quorum.start(replaced);
    wait_caught_up_observer(&quorum, &[leader], replaced);
    // The id is still a voter (with the old disk): Kafka refuses a second
    // key for one id, so the old key is removed first.
    let config = quorum.node(replaced).config.display().to_string();
    let add_new = ["add-voter", "--config", config.as_str()];
    let out = quorum.quorum_cli(leader, &add_new);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("DUPLICATE_VOTER"), "{out}");
    let out = remove_voter(&quorum, leader, replaced, &old.1);
    assert_eq!(out.code, 0, "remove-voter of the old disk: {out}");
    voters.remove(&old);
    wait_commits(&quorum, &[leader]);
    wait_caught_up_observer(&quorum, &[leader], replaced);
    let out = quorum.quorum_cli(leader, &add_new);
    assert_eq!(out.code, 0, "add-voter of the new disk: {out}");
    voters.insert(key(&quorum, replaced));
    assert_voters(&quorum, &ids, &voters);
    quorum.wait_for_follower(replaced, leader, CATCH_UP);
    wait_commits(&quorum, &ids);
}

#[test]
fn a_removed_voter_re_created_under_the_same_name_is_added_again_at_once() {
    // Issue 27: the pod of a removed voter is deleted (its peers hear no
    // FIN: its address is simply gone) and re-created under the same name
    // on its kept volume. The leader's connection to the old pod still looks
    // open; AddRaftVoter must reach the new one within its timeout, not fail
    // with REQUEST_TIMED_OUT on the first lost ApiVersions.
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let id = quorum.add_observer();
    // The name the voter is known by leads through the forwarder.
    let forwarder = Forwarder::start(quorum.node(id).port);
    let config = quorum.node(id).config.clone();
    let mut text = std::fs::read_to_string(&config).expect("read server.properties");
    text.push_str(&format!(
        "advertised.listeners=CONTROLLER://127.0.0.1:{}\n",
        forwarder.port
    ));
    std::fs::write(&config, text).expect("write server.properties");
    quorum.start(id);
    wait_caught_up_observer(&quorum, &ids, id);
    add_voter(&quorum, leader, id);
    // The leader's connection to the voter, through the forwarder, is in use.
    let all: Vec<i32> = ids.iter().copied().chain([id]).collect();
    quorum.wait_for_follower(id, leader, CATCH_UP);
    wait_commits(&quorum, &all);

    let out = remove_voter(&quorum, leader, id, &quorum.node(id).directory_id);
    assert_eq!(out.code, 0, "remove-voter {id}: {out}");
    wait_commits(&quorum, &ids);
    // The pod goes without a word to its peers, and comes back.
    forwarder.vanish();
    quorum.kill(id);
    quorum.start(id);
    wait_caught_up_observer(&quorum, &ids, id);

    let started = Instant::now();
    let out = quorum.quorum_cli(
        leader,
        &["add-voter", "--config", &config.display().to_string()],
    );
    let took = started.elapsed();
    assert_eq!(out.code, 0, "add-voter of re-created node {id}: {out}");
    // A few request timeouts at most (2 s each), not the change's 30 s.
    assert!(took < Duration::from_secs(10), "add-voter took {took:?}");
    let mut expected: BTreeSet<(i32, String)> = ids.iter().map(|i| key(&quorum, *i)).collect();
    expected.insert(key(&quorum, id));
    let info = wait_for(ELECTION, "a DescribeQuorum answer", || {
        describe(&quorum, &ids)
    });
    assert_eq!(voter_keys(&info), expected, "voters: {info:?}");
}
