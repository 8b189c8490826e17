//! Interop of KIP-1312 (Kafka 4.4's UnregisterController, api 94; issue 22)
//! and KIP-1186 (AddRaftVoter v1), both ways:
//! - our admin client and CLI (`quorum remove-voter --unregister`, `quorum
//!   unregister-controller`) against three Apache Kafka 4.4.0 controllers
//!   formatted by Kafka's own `StorageTool` (so at its default
//!   `metadata.version`, 4.4-IV2, which allows unregistration);
//! - Kafka 4.4.0's own tools (`kafka-cluster unregister-controller`,
//!   `kafka-metadata-quorum remove-controller --unregister` and
//!   `add-controller`) against three of our controllers at 4.4-IV2, which
//!   serve UnregisterController and AddRaftVoter v1.
//!
//! Kafka 4.4.0's `kafka-cluster list-endpoints --bootstrap-controller` is the
//! judge of which registrations the quorum holds. Built only with the
//! `interop` feature (`make test-interop`).

mod interop;

use std::{collections::BTreeSet, process::Command, time::Duration};

use interop::{brokers::*, *};

const VERSION: &str = "4.4.0";
const QUORUM_COMMAND: &str = "org.apache.kafka.tools.MetadataQuorumCommand";

/// `line` without its ANSI colour sequences (`ESC [ ... m`).
fn without_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Waits for `quorum`'s leader and until Kafka's `list-endpoints` lists
/// every controller's registration: (leader id, bootstrap servers, ids).
fn led_and_all_listed(quorum: &mut Quorum) -> (i32, String, BTreeSet<i32>) {
    let (leader, _) = quorum.wait_for_first_leader();
    let bootstrap = quorum.bootstrap();
    let all: BTreeSet<i32> = quorum.ids().into_iter().collect();
    wait_for(
        Duration::from_secs(60),
        "every controller registered, as Kafka's tool lists them",
        || (kafka_listed_controllers(&bootstrap) == all).then_some(()),
    );
    (leader, bootstrap, all)
}

/// Kafka 4.4.0's `class` with `args`: (success, stdout and stderr).
fn kafka_tool(class: &str, args: &[&str]) -> (bool, String) {
    try_kafka_at(VERSION, class, args)
}

/// Our binary with `args`: (exit code, stdout, stderr).
fn ours_with(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(ours())
        .args(args)
        .output()
        .expect("kraft-controller runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The controller ids Kafka 4.4.0's `kafka-cluster list-endpoints
/// --bootstrap-controller` lists (Admin `describeCluster` of the
/// controllers: their KIP-919 registrations).
fn kafka_listed_controllers(bootstrap: &str) -> BTreeSet<i32> {
    let out = kafka_at(
        Some(VERSION),
        CLUSTER_TOOL,
        &["list-endpoints", "--bootstrap-controller", bootstrap],
    );
    out.lines()
        .skip_while(|l| !l.starts_with("ID"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn our_cli_removes_and_unregisters_a_kafka_4_4_controller_kafkas_tool_no_longer_lists_it_and_add_voter_v1_brings_it_back()
 {
    if !only_on(
        VERSION,
        "UnregisterController (api 94) and UnregisterControllerRecord are Kafka 4.4's (KIP-1312)",
    ) {
        return;
    }
    let root = KeptDir::new("interop-unregister");
    let mut quorum = Quorum::kafka(root.path(), VERSION, "");
    let (leader, bootstrap, all) = led_and_all_listed(&mut quorum);
    let quorum_flags = [
        "quorum",
        "--bootstrap-controller",
        &bootstrap,
        "--timeout-ms",
        "10000",
    ];
    let cli = |rest: &[&str]| ours_with(&[&quorum_flags[..], rest].concat());

    // An id Kafka holds no registration of: CONTROLLER_ID_NOT_REGISTERED.
    let (code, out, err) = cli(&["unregister-controller", "--id", "9"]);
    assert_eq!(code, 1, "stdout {out} stderr {err}");
    assert!(
        err.contains("CONTROLLER_ID_NOT_REGISTERED (error code 136)"),
        "{err}"
    );

    // The active controller itself: Kafka 4.4.0's INVALID_REQUEST.
    let leader_id = leader.to_string();
    let (code, out, err) = cli(&["unregister-controller", "--id", &leader_id]);
    assert_eq!(code, 1, "stdout {out} stderr {err}");
    assert!(
        err.contains("INVALID_REQUEST") && err.contains("cannot unregister itself"),
        "{err}"
    );
    assert_eq!(kafka_listed_controllers(&bootstrap), all);

    // A follower, stopped first (a running controller registers again when
    // its registration is gone), then removed and unregistered in one call.
    let gone = *all.iter().find(|&&id| id != leader).expect("a follower");
    quorum.kill(gone);
    let dir = CONTROLLER_DIRS[usize::try_from(gone - 1).expect("ids from 1")];
    let gone_id = gone.to_string();
    let (code, out, err) = cli(&[
        "remove-voter",
        "--node-id",
        &gone_id,
        "--directory-id",
        dir,
        "--unregister",
    ]);
    assert_eq!(code, 0, "stdout {out} stderr {err}");
    assert_eq!(
        out,
        format!(
            "Removed KRaft controller {gone} with directory id {dir}\nUnregistered KRaft controller {gone}\n"
        )
    );
    let rest: BTreeSet<i32> = all.iter().copied().filter(|&id| id != gone).collect();
    let remaining = rest
        .iter()
        .map(|&id| quorum.address(id))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(kafka_listed_controllers(&remaining), rest);

    // Unregistering it again: it is no longer registered.
    let (code, _, err) = ours_with(&[
        "quorum",
        "--bootstrap-controller",
        &remaining,
        "unregister-controller",
        "--id",
        &gone_id,
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("CONTROLLER_ID_NOT_REGISTERED"), "{err}");

    // KIP-1186: back as an observer, it is added again by our CLI, whose
    // admin client sends AddRaftVoter v1 to Kafka 4.4.0 (it advertises v1).
    quorum.start(gone);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let admin = runtime
        .block_on(kraft_controller::admin::AdminClient::connect(
            &remaining,
            Duration::from_secs(10),
        ))
        .expect("connect");
    assert_eq!(
        admin.add_raft_voter_v1_version(),
        Some(1),
        "Kafka 4.4.0 advertises v1"
    );
    let endpoint = format!("CONTROLLER://{}", quorum.address(gone));
    wait_for(Duration::from_secs(60), "our add-voter to succeed", || {
        let (code, out, err) = ours_with(&[
            "quorum",
            "--bootstrap-controller",
            &remaining,
            "add-voter",
            "--node-id",
            &gone_id,
            "--directory-id",
            dir,
            "--endpoint",
            &endpoint,
        ]);
        // REQUEST_TIMED_OUT (exit 3) while it catches up: try again.
        assert!(code == 0 || code == 3, "stdout {out} stderr {err}");
        (code == 0).then_some(())
    });
    wait_for(
        Duration::from_secs(60),
        "the added controller registered again",
        || (kafka_listed_controllers(&bootstrap) == all).then_some(()),
    );
}

#[test]
fn kafka_4_4s_tools_unregister_a_removed_controller_of_our_quorum_and_add_it_back_with_add_raft_voter_v1()
 {
    if !only_on(
        VERSION,
        "kafka-cluster unregister-controller and add-controller with AddRaftVoter v1 are Kafka 4.4's tools (KIP-1312, KIP-1186)",
    ) {
        return;
    }
    let root = KeptDir::new("interop-unregister-ours");
    let mut quorum = Quorum::ours(root.path(), VERSION, "");
    let (leader, bootstrap, all) = led_and_all_listed(&mut quorum);
    let mut followers = all.iter().copied().filter(|&id| id != leader);
    let (voter, gone) = (
        followers.next().expect("a follower"),
        followers.next().expect("a second follower"),
    );

    // Kafka's kafka-cluster unregister-controller of a current voter:
    // refused (KAFKA-20865), the registration kept.
    let (ok, out) = kafka_tool(
        CLUSTER_TOOL,
        &[
            "unregister-controller",
            "--bootstrap-controller",
            &bootstrap,
            "--id",
            &voter.to_string(),
        ],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("controller {voter} is a voter")),
        "{out}"
    );
    assert_eq!(kafka_listed_controllers(&bootstrap), all);

    // Kafka's remove-controller --unregister of a stopped follower.
    quorum.kill(gone);
    let dir = CONTROLLER_DIRS[usize::try_from(gone - 1).expect("ids from 1")];
    let gone_id = gone.to_string();
    let (ok, out) = kafka_tool(
        QUORUM_COMMAND,
        &[
            "--bootstrap-controller",
            &bootstrap,
            "remove-controller",
            "--controller-id",
            &gone_id,
            "--controller-directory-id",
            dir,
            "--unregister",
        ],
    );
    assert!(ok, "{out}");
    let rest: BTreeSet<i32> = all.iter().copied().filter(|&id| id != gone).collect();
    let remaining = rest
        .iter()
        .map(|&id| quorum.address(id))
        .collect::<Vec<_>>()
        .join(",");
    wait_for(
        Duration::from_secs(30),
        "Kafka's tool listing no stale registration",
        || (kafka_listed_controllers(&remaining) == rest).then_some(()),
    );
    let describe = kafka_at(
        Some(VERSION),
        QUORUM_COMMAND,
        &["--bootstrap-controller", &remaining, "describe", "--status"],
    );
    assert!(
        !describe
            .lines()
            .any(|l| l.starts_with("CurrentVoters") && l.contains(&format!("\"id\": {gone},"))),
        "{describe}"
    );

    // Unregistering it again: Kafka's tool gets our CONTROLLER_ID_NOT_REGISTERED.
    let (ok, out) = kafka_tool(
        CLUSTER_TOOL,
        &[
            "unregister-controller",
            "--bootstrap-controller",
            &remaining,
            "--id",
            &gone_id,
        ],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!(
            "Controller ID {gone} is not currently registered."
        )),
        "{out}"
    );

    // KIP-1186: back as an observer, Kafka's add-controller (given its own
    // properties) adds it with AddRaftVoter v1, which we now advertise.
    quorum.start(gone);
    let config = match &quorum {
        Quorum::Ours(nodes) => nodes[usize::try_from(gone - 1).expect("ids from 1")]
            .config
            .display()
            .to_string(),
        Quorum::Kafka(_) => unreachable!("our quorum"),
    };
    wait_for(
        Duration::from_secs(60),
        "Kafka's add-controller to succeed",
        || {
            // REQUEST_TIMED_OUT while it catches up: try again.
            let (ok, _) = kafka_tool(
                QUORUM_COMMAND,
                &[
                    "--bootstrap-controller",
                    &remaining,
                    "--command-config",
                    &config,
                    "add-controller",
                ],
            );
            ok.then_some(())
        },
    );
    let Quorum::Ours(nodes) = &quorum else {
        unreachable!("our quorum")
    };
    let received: Vec<String> = nodes
        .iter()
        .flat_map(|n| {
            n.log_text()
                .lines()
                .filter(|l| l.contains("AddRaftVoter request"))
                .map(without_colours)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        !received.is_empty() && received.iter().all(|l| l.contains("api_version=1")),
        "{received:?}"
    );
    wait_for(
        Duration::from_secs(60),
        "the added controller registered again",
        || (kafka_listed_controllers(&bootstrap) == all).then_some(()),
    );
}
