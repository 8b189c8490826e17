//! Process test of KIP-1312 unregistration against our own controllers
//! (issue 22): `quorum remove-voter --unregister` and `quorum
//! unregister-controller` with real `kraft-controller` processes. Our
//! controller does not serve UnregisterController (api 94) yet, so the voter
//! is removed and the unregistration is refused by the client before
//! anything is sent, with Kafka 4.4's words; the interop test
//! (`interop_kafka_unregister.rs`) covers the success against Kafka 4.4.0.

mod support;

use std::time::Duration;

use support::{Mode, QuorumBuilder, wait_for};

const ELECTION: Duration = Duration::from_secs(20);

#[test]
fn remove_voter_with_unregister_removes_the_voter_and_says_our_quorum_cannot_unregister_yet() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let gone = *ids
        .iter()
        .rev()
        .find(|&&id| id != leader)
        .expect("a follower");
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
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stdout,
        format!("Removed KRaft controller {gone} with directory id {dir}\n")
    );
    assert!(
        out.stderr.contains(&format!(
            "Failed to unregister controller {gone}: UNSUPPORTED_VERSION"
        )) && out.stderr.contains(&format!(
            "run `kraft-controller quorum unregister-controller --id {gone}`"
        )),
        "{out}"
    );
    wait_for(ELECTION, "the removal in DescribeQuorum", || {
        let info = quorum.describe_quorum(leader).ok()?;
        (!info.voters.iter().any(|v| v.replica_id == gone)).then_some(())
    });

    let out = quorum.quorum_cli(leader, &["unregister-controller", "--id", &gone_id]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("The target cluster does not support the controller unregistration API."),
        "{out}"
    );
}
