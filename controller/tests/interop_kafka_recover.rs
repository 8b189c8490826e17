//! Interop of `kraft-controller recover` (issue 26) with Apache Kafka's own
//! controllers, of each version of the run's `KAFKA_VERSIONS` (issue 22):
//! a quorum of three Kafka controllers, formatted and run by
//! Kafka, loses two; our tool rewrites the voter set on the survivor's
//! volume (a Voters record appended in a new epoch, quorum-state past it),
//! and Kafka's controller, started alone on it, accepts the files, leads and
//! commits. Built only with the `interop` feature (`make test-interop`).

mod interop;

use std::time::Duration;

use interop::{
    brokers::{KeptDir, Quorum},
    our_status, run_ours, wait_for,
};

/// Long enough for one JVM to start alone on the recovered files and lead.
const TIMEOUT: Duration = Duration::from_secs(120);

crate::per_kafka_version!(recovered_by_our_tool_leads_alone;
    a_kafka_4_1_2_controller_recovered_by_our_tool_after_losing_two_of_three_leads_alone => "4.1.2",
    a_kafka_4_4_0_controller_recovered_by_our_tool_after_losing_two_of_three_leads_alone => "4.4.0");

/// The case on three of Kafka `version`'s controllers.
fn recovered_by_our_tool_leads_alone(version: &'static str) {
    let root = KeptDir::new("interop-recover-");
    let mut quorum = Quorum::kafka(root.path(), version, "");
    let (survivor, old_hw) = quorum.wait_for_first_leader();
    for id in quorum.ids() {
        quorum.kill(id);
    }
    let partition = quorum.partition_dir(survivor);
    let dir = partition
        .parent()
        .expect("the log dir")
        .display()
        .to_string();
    let out = run_ours(&[
        "recover",
        "--metadata-log-dir",
        &dir,
        "--i-understand-this-may-lose-uncommitted-data",
    ]);
    assert!(
        out.contains(&format!("voters are now {survivor}@")),
        "{out}"
    );

    // Kafka's controller alone, on the recovered files: it leads and its
    // high watermark moves past everything the old quorum had.
    quorum.start(survivor);
    let address = quorum.address(survivor);
    let status = wait_for(TIMEOUT, "Kafka's controller to lead alone", || {
        our_status(&address).filter(|s| {
            s.get("LeaderId") == Some(&survivor.to_string())
                && s.get("HighWatermark")
                    .and_then(|h| h.parse::<i64>().ok())
                    .is_some_and(|h| h > old_hw)
        })
    });
    let voters = &status["CurrentVoters"];
    let endpoint = |id: i32| format!("\"CONTROLLER://{}\"", quorum.address(id));
    assert!(voters.contains(&endpoint(survivor)), "{voters}");
    for other in quorum.ids().into_iter().filter(|id| *id != survivor) {
        assert!(
            !voters.contains(&endpoint(other)),
            "node {other} is still a voter: {voters}"
        );
    }
}
