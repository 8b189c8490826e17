//! Process test of KIP-1312 unregistration served by our own controllers
//! (issue 22): real `kraft-controller` processes at `metadata.version`
//! 4.4-IV2, our CLI sending UnregisterController (api 94) over the wire.
//! A removed voter is unregistered (`quorum remove-voter --unregister`) and
//! no image lists it any more; a current voter is refused with
//! INVALID_REQUEST (KAFKA-20865) and nothing is appended for it. The
//! interop test (`interop_kafka_unregister.rs`) runs Kafka 4.4.0's tools
//! against both Kafka's controllers and ours.

mod support;

use std::{collections::BTreeSet, time::Duration};

use serde_json::Value;
use support::{Mode, Quorum, QuorumBuilder, wait_for};

const ELECTION: Duration = Duration::from_secs(20);

/// The controller ids node `id`'s image (`GET /metadata`) lists as
/// registered (KIP-919), `None` while it does not answer.
fn registered(quorum: &Quorum, id: i32) -> Option<BTreeSet<i64>> {
    let (status, body) = quorum.node(id).http_get("/metadata")?;
    if status != 200 {
        return None;
    }
    let image: Value = serde_json::from_str(&body).expect("/metadata is JSON");
    Some(
        image["controllers"]
            .as_array()?
            .iter()
            .filter_map(|c| c["id"].as_i64())
            .collect(),
    )
}

#[test]
fn a_removed_voter_is_unregistered_over_the_wire_and_a_current_voter_is_refused() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .release_version("4.4-IV2")
        .format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let all: BTreeSet<i64> = ids.iter().map(|&i| i64::from(i)).collect();
    for &id in &ids {
        wait_for(ELECTION, "every registration in every image", || {
            (registered(&quorum, id)? == all).then_some(())
        });
    }
    let mut followers = ids.iter().copied().filter(|&id| id != leader);
    let (voter, gone) = (
        followers.next().expect("a follower"),
        followers.next().expect("a second follower"),
    );

    // KAFKA-20865: a current voter is refused, nothing appended for it.
    let out = quorum.quorum_cli(
        leader,
        &["unregister-controller", "--id", &voter.to_string()],
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("INVALID_REQUEST")
            && out
                .stderr
                .contains(&format!("controller {voter} is a voter")),
        "{out}"
    );

    // The removed controller is stopped first: a running one would
    // register again (KIP-919).
    quorum.kill(gone);
    let dir = quorum.node(gone).directory_id.clone();
    let gone_id = gone.to_string();
    let out = quorum.quorum_cli(
        leader,
        &[
            "remove-voter",
            "--node-id",
            &gone_id,
            "--directory-id",
            &dir,
            "--unregister",
        ],
    );
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.stdout,
        format!(
            "Removed KRaft controller {gone} with directory id {dir}\nUnregistered KRaft controller {gone}\n"
        )
    );
    let left: BTreeSet<i64> = all
        .iter()
        .copied()
        .filter(|&i| i != i64::from(gone))
        .collect();
    for id in [leader, voter] {
        wait_for(
            ELECTION,
            "no registration of the removed controller",
            || (registered(&quorum, id)? == left).then_some(()),
        );
    }
    // Once more: it is no longer registered (Kafka's error and message).
    let out = quorum.quorum_cli(leader, &["unregister-controller", "--id", &gone_id]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains(&format!(
            "Controller ID {gone} is not currently registered."
        )),
        "{out}"
    );

    // One UnregisterControllerRecord in the log, for the removed controller
    // (ControllerId int32, no tagged fields), none for the voter.
    quorum.kill_all();
    let dump = quorum.dump_log(leader);
    let records: Vec<&str> = dump
        .lines()
        .filter(|l| l.contains("UNREGISTER_CONTROLLER_RECORD"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(
        records[0].contains(&format!("bytes={gone:08x}00")),
        "{records:?}"
    );
}
