//! Process test of the KIP-1170 layout our `format` writes from 4.2-IV0
//! (issue 22, docs/decisions.md D18): no `bootstrap.checkpoint`, the
//! bootstrap records in the 0-0 checkpoint. A `--standalone` node formatted
//! so at 4.4-IV2 leads, commits, and its first leader writes those records
//! into the log (the image shows every feature level of 4.4-IV2); a node
//! formatted `--no-initial-controllers` the same way (a 0-0 checkpoint with
//! KRaftVersion 1 and no Voters) fetches as an observer, catches up, and
//! becomes a voter through AddRaftVoter; three voters formatted
//! `--initial-controllers` so elect a leader and reach the same image.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Mode, Quorum, QuorumBuilder, wait_for};

const TIMEOUT: Duration = Duration::from_secs(30);
const ZERO_CHECKPOINT: &str = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint";

/// Node `id`'s `/metadata` as JSON, `None` while it does not answer.
fn image(quorum: &Quorum, id: i32) -> Option<Value> {
    let (status, body) = quorum.node(id).http_get("/metadata")?;
    (status == 200).then(|| serde_json::from_str(&body).expect("/metadata is JSON"))
}

/// Whether `image` holds the feature levels Kafka 4.4.0's format bootstraps
/// at 4.4-IV2.
fn at_4_4_iv2(image: &Value) -> bool {
    let f = &image["features"];
    image["metadata_version"] == "4.4-IV2"
        && f["metadata.version"] == 33
        && f["eligible.leader.replicas.version"] == 1
        && f["group.version"] == 1
        && f["share.version"] == 2
        && f["streams.version"] == 1
        && f["transaction.version"] == 2
}

/// Asserts node `id`'s directory is in the KIP-1170 layout.
fn assert_kip_1170_layout(quorum: &Quorum, id: i32) {
    let dir = &quorum.node(id).log_dir;
    assert!(
        !dir.join("bootstrap.checkpoint").exists(),
        "node {id}: a bootstrap.checkpoint at 4.4-IV2"
    );
    assert!(
        dir.join(ZERO_CHECKPOINT).exists(),
        "node {id}: no 0-0 checkpoint"
    );
}

#[test]
fn nodes_formatted_in_the_kip_1170_layout_lead_commit_and_join_as_observer_then_voter() {
    let mut quorum = QuorumBuilder::standalone()
        .release_version("4.4-IV2")
        .format();
    assert_kip_1170_layout(&quorum, 1);
    quorum.start(1);
    quorum.wait_for_leader(&[1], TIMEOUT);
    let image_1 = wait_for(TIMEOUT, "node 1's image at 4.4-IV2", || {
        image(&quorum, 1).filter(at_4_4_iv2)
    });
    // The bootstrap records were appended to the log and committed, once.
    let dump = quorum.dump_log(1);
    let in_log = dump
        .lines()
        .filter(|l| l.contains("FEATURE_LEVEL_RECORD(12)") && l.contains("feature_level=33"))
        .count();
    assert!(in_log >= 1, "metadata.version 33 not in the log:\n{dump}");
    assert!(
        quorum.node(1).high_watermark().is_some_and(|hw| hw > 0),
        "{image_1}"
    );

    let id = quorum.add_observer();
    assert_kip_1170_layout(&quorum, id);
    quorum.start(id);
    wait_for(TIMEOUT, "the observer's image at 4.4-IV2", || {
        image(&quorum, id).filter(at_4_4_iv2)
    });
    let config = quorum.node(id).config.display().to_string();
    let out = quorum.quorum_cli(1, &["add-voter", "--config", &config]);
    assert_eq!(out.code, 0, "add-voter of node {id}: {out}");
    wait_for(TIMEOUT, "node 2 a voter", || {
        quorum
            .describe_quorum(1)
            .ok()
            .filter(|q| q.voters.iter().any(|v| v.replica_id == id))
    });
}

/// Three voters in `mode` formatted at 4.4-IV2, each directory checked to be
/// in the KIP-1170 layout, started until a leader is elected and every
/// node's image is at 4.4-IV2: the quorum and its leader's id.
fn three_voters_at_4_4_iv2(mode: Mode) -> (Quorum, i32) {
    let mut quorum = QuorumBuilder::new(3, mode)
        .release_version("4.4-IV2")
        .format();
    for id in quorum.ids() {
        assert_kip_1170_layout(&quorum, id);
    }
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&[1, 2, 3], TIMEOUT);
    for id in quorum.ids() {
        wait_for(TIMEOUT, &format!("node {id}'s image at 4.4-IV2"), || {
            image(&quorum, id).filter(at_4_4_iv2)
        });
    }
    (quorum, leader)
}

#[test]
fn three_voters_formatted_with_initial_controllers_in_the_kip_1170_layout_elect_and_agree() {
    let (quorum, leader) = three_voters_at_4_4_iv2(Mode::Dynamic);
    let voters = quorum.describe_quorum(leader).expect("describe").voters;
    assert_eq!(voters.len(), 3, "{voters:?}");
}

// A static quorum (controller.quorum.voters) formatted at 4.4-IV2: the 0-0
// checkpoint holds no KRaftVersion record (kraft.version 0, as Kafka 4.4.0's
// format writes it), only the bootstrap records; the quorum stays static.
#[test]
fn a_static_quorum_formatted_in_the_kip_1170_layout_elects_and_stays_at_kraft_version_0() {
    let (quorum, leader) = three_voters_at_4_4_iv2(Mode::Static);
    let checkpoint = quorum.node(leader).log_dir.join(ZERO_CHECKPOINT);
    let dumped = support::cli(&["dump-log", &checkpoint.display().to_string()]);
    assert_eq!(dumped.code, 0, "{dumped}");
    let dump = format!("{dumped}\n{}", quorum.dump_log(leader));
    assert!(dump.contains("feature_level=33"), "{dump}");
    assert!(!dump.contains("KRAFT_VERSION"), "{dump}");
    assert!(!dump.contains("KRAFT_VOTERS"), "{dump}");
}
