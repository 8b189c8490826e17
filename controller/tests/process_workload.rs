//! Process test of the benchmark workload (`run --workload-throughput`, the
//! equivalent of Kafka's `TestRaftServer`, issue 11): a leader appending as
//! fast as `make bench` asks must keep its quorum and keep committing.
//!
//! Two bugs this guards against, both found by `make bench`: the metadata
//! image tried to decode the workload's opaque records and stopped every node
//! at the first commit; and at 20 000 records/s the leader, appending one
//! batch per record, starved its own flush and its followers' fetches, so
//! nothing committed and the quorum re-elected in a loop. No rate is asserted
//! here (benchmarks measure, tests do not time): only that commits keep coming.

mod support;

use std::time::Duration;

use support::{Mode, QuorumBuilder, wait_for};

/// Records the leader must commit in its epoch before the test passes: ten
/// seconds' worth at the target rate below if the machine keeps up, reached
/// much later on a slow one.
const COMMITTED: u64 = 50_000;

#[test]
fn a_leader_running_the_workload_at_twenty_thousand_records_per_second_keeps_committing() {
    let mut quorum = QuorumBuilder::new(3, Mode::Static).format();
    for id in quorum.ids() {
        quorum.start_with_args(
            id,
            &[
                "--workload-throughput",
                "20000",
                "--workload-record-size",
                "256",
            ],
        );
    }
    let ids = quorum.ids();
    quorum.wait_for_leader(&ids, Duration::from_secs(30));
    wait_for(
        Duration::from_secs(180),
        "the workload's leader to commit 50 000 records in one epoch",
        || {
            for node in &quorum.nodes {
                node.assert_alive();
            }
            // The leader may change under load; ask whoever leads now.
            let (now_leader, _) = quorum.ready_leader(&ids)?;
            let (status, body) = quorum.node(now_leader).http_get("/workload")?;
            if status != 200 {
                return None;
            }
            let report: serde_json::Value = serde_json::from_str(&body).ok()?;
            let committed = report["committed"].as_u64()?;
            (committed >= COMMITTED).then_some(())
        },
    );
    // Every node still runs: none stopped on the workload's records.
    for node in &quorum.nodes {
        node.assert_alive();
    }
    // The followers replicate what the leader commits.
    let hw = wait_for(Duration::from_secs(30), "a leader's high watermark", || {
        let (leader, _) = quorum.ready_leader(&ids)?;
        quorum.node(leader).high_watermark()
    });
    for id in ids {
        wait_for(
            Duration::from_secs(60),
            &format!("node {id}'s log end to reach the high watermark {hw}"),
            || (quorum.node(id).log_end_offset()? >= hw).then_some(()),
        );
    }
}
