//! Process tests of readiness and of an observer's way back to its leader
//! (issue 27): `/readyz` says caught up only when the leader's own Fetch
//! answers, within `controller.quorum.fetch.timeout.ms`, showed the node at
//! the leader's high watermark; an observer that fell back to a bootstrap
//! server fetches from the leader again as soon as an answer names it, and
//! one whose leader is unreachable asks the bootstrap servers and follows
//! the new leader they name (Kafka's KAFKA-19354).
//!
//! Real `kraft-controller` processes on 127.0.0.1 with Kafka 4.1's default
//! `controller.quorum.*` timings; conditions are polled with deadlines.

mod support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{Mode, Quorum, QuorumBuilder, kafka_defaults, wait_for};

/// Long enough for an election on a loaded 2-core machine.
const ELECTION: Duration = Duration::from_secs(20);
/// Long enough for a started observer to find the leader and catch up.
const CATCH_UP: Duration = Duration::from_secs(20);

fn fetch_timeout() -> Duration {
    Duration::from_millis(kafka_defaults::FETCH_TIMEOUT_MS)
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Three voters and a started observer that `/readyz` reports ready; returns
/// the quorum, the leader and the observer's id. `bootstrap` picks the
/// observer's `controller.quorum.bootstrap.servers` among the voters (given
/// the leader).
fn quorum_with_ready_observer(bootstrap: impl Fn(i32) -> Vec<i32>) -> (Quorum, i32, i32) {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&[1, 2, 3], ELECTION);
    let observer = quorum.add_observer();
    let servers = bootstrap(leader)
        .iter()
        .map(|id| quorum.node(*id).address())
        .collect::<Vec<_>>()
        .join(",");
    let config = quorum.node(observer).config.clone();
    let text = std::fs::read_to_string(&config).expect("observer config");
    let text = text
        .lines()
        .map(|l| {
            if l.starts_with("controller.quorum.bootstrap.servers=") {
                format!("controller.quorum.bootstrap.servers={servers}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&config, text + "\n").expect("write observer config");
    quorum.start(observer);
    wait_for(
        CATCH_UP,
        &format!("observer {observer} to be ready"),
        || {
            quorum.node(observer).assert_alive();
            quorum.node(observer).readyz().filter(|(ready, _)| *ready)
        },
    );
    (quorum, leader, observer)
}

#[test]
fn an_observer_cut_off_from_its_leader_stops_being_ready_and_is_ready_again_once_caught_up() {
    let (quorum, _, observer) = quorum_with_ready_observer(|_| vec![1, 2, 3]);
    for id in [1, 2, 3] {
        quorum.signal(id, "STOP");
    }
    // Its fetches go unanswered: it is not caught up once the fetch timeout
    // passed since the last answer that showed it caught up (plus one request
    // timeout for the failure to arrive).
    let (_, reason) = wait_for(
        fetch_timeout() * 2 + Duration::from_secs(10),
        &format!("observer {observer} to stop being ready while no voter answers"),
        || {
            quorum.node(observer).assert_alive();
            quorum.node(observer).readyz().filter(|(ready, _)| !*ready)
        },
    );
    assert!(reason.contains("observer"), "{reason}");
    // /readyz judges the expiry when asked; the gauge follows at the event
    // loop's next step (the fetch deadline, at most one long poll later).
    wait_for(
        fetch_timeout(),
        &format!("observer {observer}'s kraftwerk_raft_caught_up gauge to say 0"),
        || (quorum.node(observer).metric("kraftwerk_raft_caught_up") == Some(0.0)).then_some(()),
    );
    for id in [1, 2, 3] {
        quorum.signal(id, "CONT");
    }
    let (leader, _) = quorum.wait_for_leader(&[1, 2, 3], ELECTION);
    let committed = wait_for(ELECTION, "the leader's high watermark", || {
        quorum.node(leader).high_watermark().filter(|hw| *hw > 0)
    });
    let (_, reason) = wait_for(
        CATCH_UP,
        &format!("observer {observer} ready again"),
        || quorum.node(observer).readyz().filter(|(ready, _)| *ready),
    );
    assert!(reason.contains("caught up"), "{reason}");
    let end = quorum.node(observer).log_end_offset().unwrap_or(-1);
    assert!(
        end >= committed,
        "ready with log end {end}, below the leader's high watermark {committed}: {reason}"
    );
}

#[test]
fn an_observer_that_fell_back_to_a_follower_fetches_from_the_leader_it_names() {
    // The observer's only bootstrap server is a follower: once it has asked
    // it, only the leader the follower names gets it going again.
    let (quorum, leader, observer) = quorum_with_ready_observer(|leader| {
        vec![[1, 2, 3].into_iter().find(|id| *id != leader).unwrap_or(1)]
    });
    quorum.signal(observer, "STOP");
    // Paused until the leader saw no fetch from it for 1.5 fetch timeouts.
    wait_for(
        fetch_timeout() * 4,
        "the leader to see no fetch from the paused observer for 1.5 fetch timeouts",
        || {
            let info = quorum.describe_quorum(leader).ok()?;
            let last = info
                .observers
                .iter()
                .find(|o| o.replica_id == observer)?
                .last_fetch_timestamp_ms?;
            let quiet = i64::try_from(fetch_timeout().as_millis() * 3 / 2).ok()?;
            (wall_ms() - last > quiet).then_some(())
        },
    );
    quorum.signal(observer, "CONT");
    let resumed_at = wall_ms();
    wait_for(
        fetch_timeout() * 5,
        &format!("observer {observer} to fetch from leader {leader} again"),
        || {
            quorum.node(observer).assert_alive();
            let info = quorum.describe_quorum(leader).ok()?;
            info.observers
                .iter()
                .find(|o| o.replica_id == observer)
                .and_then(|o| o.last_fetch_timestamp_ms)
                .filter(|t| *t > resumed_at + 500)
                .map(|_| ())
        },
    );
    wait_for(CATCH_UP, &format!("observer {observer} ready"), || {
        quorum.node(observer).readyz().filter(|(ready, _)| *ready)
    });
}

/// Records the leader writes past a paused observer before it resumes:
/// tens of megabytes, many fetches of catching up.
const BEHIND: i64 = 20_000;

#[test]
fn a_far_behind_observer_is_not_ready_until_it_reaches_the_leaders_high_watermark() {
    // The workload (1 KiB records) keeps the leader writing the whole time.
    let workload = [
        "--workload-throughput",
        "2000",
        "--workload-record-size",
        "1024",
    ];
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    for id in [1, 2, 3] {
        quorum.start_with_args(id, &workload);
    }
    let (leader, _) = quorum.wait_for_leader(&[1, 2, 3], ELECTION);
    let observer = quorum.add_observer();
    quorum.start_with_args(observer, &workload);
    wait_for(CATCH_UP, &format!("observer {observer} ready"), || {
        quorum.node(observer).assert_alive();
        quorum.node(observer).readyz().filter(|(ready, _)| *ready)
    });
    let paused_at = quorum.node(observer).log_end_offset().expect("log end");
    quorum.signal(observer, "STOP");
    // At 2,000 records/s, ten seconds; later on a slow machine.
    let target = wait_for(
        Duration::from_secs(120),
        &format!("leader {leader} to commit {BEHIND} records past the paused observer"),
        || {
            quorum.node(leader).assert_alive();
            quorum
                .node(leader)
                .high_watermark()
                .filter(|hw| *hw >= paused_at + BEHIND)
        },
    );
    quorum.signal(observer, "CONT");
    // Before the change, the first answer here was "caught up": the local
    // high watermark is capped at the node's own log end.
    let mut samples = Vec::new();
    let (_, reason) = wait_for(
        CATCH_UP * 3,
        &format!("observer {observer} ready after catching up to {target}"),
        || {
            quorum.node(observer).assert_alive();
            let (ready, reason) = quorum.node(observer).readyz()?;
            let end = quorum.node(observer).log_end_offset()?;
            samples.push((ready, end));
            assert!(
                !ready || end >= target,
                "observer {observer} ready with log end {end}, {} behind the high watermark \
                 {target} the leader had when it resumed: {reason}",
                target - end
            );
            ready.then_some(((), reason))
        },
    );
    assert!(reason.contains("caught up"), "{reason}");
    assert!(
        samples
            .first()
            .is_some_and(|(ready, end)| !ready && *end < target),
        "the first answer after resuming, far behind, said not ready: {:?}",
        &samples[..samples.len().min(5)]
    );
}

#[test]
fn an_observer_whose_leader_is_unreachable_follows_the_new_leader_through_the_bootstrap_servers() {
    // Only the leader goes away: the observer's fetches to it hang, and no
    // voter tells an observer about a new epoch (BeginQuorumEpoch goes to
    // voters). Only the bootstrap servers, asked after the fetch timeout,
    // name the new leader (Kafka 4.x after KAFKA-19354).
    let (quorum, old_leader, observer) = quorum_with_ready_observer(|_| vec![1, 2, 3]);
    let old_epoch = quorum
        .node(old_leader)
        .ready_leader_epoch()
        .expect("the leader's epoch");
    let before = wall_ms();
    wait_for(
        fetch_timeout() * 2,
        &format!("observer {observer} to fetch from leader {old_leader}"),
        || {
            let node = quorum.node(observer);
            let follows = node.current_leader() == Some(old_leader)
                && node.metric("kafka_server_raft_metrics_current_epoch")
                    == Some(f64::from(old_epoch));
            let info = quorum.describe_quorum(old_leader).ok()?;
            info.observers
                .iter()
                .find(|o| o.replica_id == observer)?
                .last_fetch_timestamp_ms
                .filter(|t| follows && *t > before)
                .map(|_| ())
        },
    );

    quorum.signal(old_leader, "STOP");
    let stopped = Instant::now();
    let others: Vec<i32> = [1, 2, 3]
        .into_iter()
        .filter(|id| *id != old_leader)
        .collect();
    let (new_leader, new_epoch) = quorum.wait_for_leader(&others, ELECTION);
    let elected = stopped.elapsed();
    assert!(
        new_epoch > old_epoch,
        "new leader {new_leader} in epoch {new_epoch}, not past {old_epoch}"
    );
    // The high watermark of the new epoch (its LeaderChange committed).
    let at_election = wait_for(ELECTION, "the new leader's high watermark", || {
        quorum
            .node(new_leader)
            .high_watermark()
            .filter(|hw| *hw > 0)
    });

    // Ready again as an observer of the new leader: at most a fetch timeout
    // to give up on the old leader, a request timeout per bootstrap server
    // that does not answer (the old one among them), then catching up.
    let reason = wait_for(
        fetch_timeout() * 4 + CATCH_UP,
        &format!("observer {observer} ready as an observer of {new_leader} in epoch {new_epoch}"),
        || {
            let node = quorum.node(observer);
            node.assert_alive();
            node.ready_observer_of(new_leader, new_epoch)
        },
    );
    let switched = stopped.elapsed();
    assert!(reason.contains("caught up"), "{reason}");
    let node = quorum.node(observer);
    assert_eq!(node.current_leader(), Some(new_leader), "{reason}");
    assert_eq!(
        node.metric("kafka_server_raft_metrics_current_epoch"),
        Some(f64::from(new_epoch)),
        "{reason}"
    );
    // The new leader sees its fetches.
    let info = quorum.describe_quorum(new_leader).expect("DescribeQuorum");
    assert_eq!((info.leader_id, info.leader_epoch), (new_leader, new_epoch));
    assert!(
        info.observers
            .iter()
            .any(|o| o.replica_id == observer && o.last_fetch_timestamp_ms.is_some()),
        "observer {observer} not among leader {new_leader}'s observers: {info:?}"
    );

    // Records the new leader commits after the change (its no-op records,
    // one per metadata.max.idle.interval.ms) reach the observer.
    let later = wait_for(
        CATCH_UP,
        &format!("leader {new_leader} to commit past {at_election}"),
        || {
            quorum
                .node(new_leader)
                .high_watermark()
                .filter(|hw| *hw > at_election)
        },
    );
    wait_for(
        CATCH_UP,
        &format!("observer {observer}'s log to reach {later}, committed by {new_leader}"),
        || {
            let node = quorum.node(observer);
            node.assert_alive();
            node.log_end_offset().filter(|end| *end >= later)
        },
    );

    // The old leader, resumed, follows the new one; the observer stays.
    quorum.signal(old_leader, "CONT");
    quorum.wait_for_follower(old_leader, new_leader, ELECTION);
    let rejoined = stopped.elapsed();
    // Ready on the new leader again (an answer whose high watermark is past
    // the flushed log end makes it briefly not ready, so poll).
    wait_for(
        CATCH_UP,
        &format!("observer {observer} still ready on leader {new_leader}"),
        || {
            quorum
                .node(observer)
                .ready_observer_of(new_leader, new_epoch)
        },
    );
    eprintln!(
        "leader {old_leader} (epoch {old_epoch}) stopped: leader {new_leader} in epoch \
         {new_epoch} after {elected:?}, observer {observer} ready on it after {switched:?}, \
         old leader a follower after {rejoined:?}"
    );
}
