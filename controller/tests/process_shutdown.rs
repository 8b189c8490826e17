//! A SIGTERM'd leader completes its graceful shutdown only once a successor
//! is known (Kafka's `KafkaRaftClient.pollShutdown`: done when
//! `quorum.hasRemoteLeader()`, or no remote voters, or the timeout), not when
//! every voter acknowledged EndQuorumEpoch.
//!
//! Issue 4: "Graceful shutdown on SIGTERM: a leader resigns (EndQuorumEpoch)
//! and waits, bounded, until a successor is known".

mod support;

use std::time::Duration;

use support::{Mode, QuorumBuilder};

const ELECTION: Duration = Duration::from_secs(20);

/// The RFC 3339 timestamp (first field) of the first line of `lines`.
fn first_timestamp(lines: &[String]) -> Option<String> {
    lines.first()?.split_whitespace().next().map(str::to_owned)
}

#[test]
fn a_sigtermed_leader_stops_only_once_a_successor_is_elected() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, epoch) = quorum.wait_for_leader(&ids, ELECTION);
    for id in ids.iter().filter(|id| **id != leader) {
        quorum.wait_for_follower(*id, leader, ELECTION);
    }
    quorum.terminate(leader);
    let others: Vec<i32> = ids.iter().copied().filter(|id| *id != leader).collect();
    let (next, next_epoch) = quorum.wait_for_leader(&others, ELECTION);
    let status = quorum.wait_exit(leader, Duration::from_secs(10));
    assert!(status.success(), "{status}");
    // Both timestamps come from one machine's clock, in one format (UTC), so
    // they compare as strings.
    let stopped = first_timestamp(
        &quorum
            .node(leader)
            .output_lines("controller stopped cleanly"),
    )
    .expect("the old leader logged its clean stop");
    let elected = first_timestamp(
        &quorum
            .node(next)
            .output_lines(&format!("role=\"leader\" epoch={next_epoch} ")),
    )
    .expect("the successor logged its election");
    assert!(
        stopped > elected,
        "the old leader (epoch {epoch}) stopped at {stopped}, before its successor {next} was elected at {elected}"
    );
}
