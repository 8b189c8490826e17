//! Engine unit tests of dynamic voters (KIP-853): the bootstrap records,
//! AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter and DescribeQuorum.

use super::*;
use crate::raft::leader::OBSERVER_SESSION_TIMEOUT_MS;

#[test]
fn the_first_leader_writes_kraft_version_and_voters_with_its_leader_change() {
    // KIP-853: the bootstrap voter set goes into the log, in the batch of
    // the first LeaderChange.
    let e = kip853_leader();
    let info = e.log().read(0, usize::MAX).expect("read");
    let (_, first) = crate::record::iter_batches(&info.records, true)
        .next()
        .expect("one batch")
        .expect("valid");
    let records = crate::record::DecodedBatch::decode(first)
        .expect("decodes")
        .control_records()
        .expect("control");
    let types: Vec<_> = records.iter().map(|r| r.record_type().name()).collect();
    assert_eq!(types, ["LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"]);
    let crate::record::ControlRecord::Voters(v) = &records[2] else {
        panic!("voters record expected")
    };
    assert_eq!(VoterSet::from_record(v), kip853_voters());
    assert_eq!(e.status().kraft_version, 1);
}

#[test]
fn add_raft_voter_asks_for_api_versions_appends_and_answers_once_committed() {
    let mut e = kip853_leader();
    // Node 4 fetches as an observer, caught up.
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    assert_eq!(render(&commands), ["send 4 api_versions"]);
    let Command::Send { id, .. } = &commands[0] else {
        unreachable!("a send")
    };
    // Its key fetches to the log end after the ApiVersions went out.
    e.handle(fetch_from(4, 1, 3, 1), 2_025).expect("fetch");
    let commands = e
        .handle(api_versions(id.0, 0, 1), 2_030)
        .expect("api versions");
    assert!(render(&commands).is_empty(), "{commands:?}");
    assert_eq!(e.voters().len(), 4, "a change takes effect when appended");
    assert!(
        e.status().uncommitted_voter_change,
        "appended, not committed"
    );
    // A second change waits for this one.
    let commands = e
        .handle(admin(remove_voter(2, dir(2))), 2_031)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=7"]);
    e.handle(Event::Flush, 2_060).expect("flush");
    // Committing needs 3 of the 4 voters now: 1 (leader), 2 and 4.
    let commands = e.handle(fetch_from(2, 1, 4, 1), 2_070).expect("fetch");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=3 diverging=(-1, -1) batches=0"]
    );
    let commands = e.handle(fetch_from(4, 1, 4, 1), 2_080).expect("fetch");
    assert_eq!(
        render(&commands),
        [
            "committed hw=4",
            "reply fetch error=0 hw=4 diverging=(-1, -1) batches=0",
            "reply add_raft_voter error=0",
        ]
    );
    assert!(!e.status().uncommitted_voter_change, "committed");
}

/// `add_voter(id)` at AddRaftVoter v1 with `AckWhenCommitted` = `ack`.
fn add_voter_v1(id: i32, ack: bool) -> Event {
    let RaftRequest::AddRaftVoter(mut r) = add_voter(id) else {
        unreachable!("add_voter builds AddRaftVoter")
    };
    r.ack_when_committed = ack;
    Event::Request {
        handle: ReplyHandle(77),
        api_version: 1,
        request: RaftRequest::AddRaftVoter(r),
    }
}

/// Adds node 4 as `add_raft_voter_asks_for_api_versions_appends_and_answers_once_committed`
/// does, with `event`; returns what the ApiVersions answer (the append)
/// and the commit of the `Voters` record did, rendered.
fn add_node_4(event: Event) -> (Vec<String>, Vec<String>, RaftEngine<MemoryLog>) {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(event, 2_020).expect("add");
    assert_eq!(render(&commands), ["send 4 api_versions"]);
    let id = api_versions_sent(&commands);
    e.handle(fetch_from(4, 1, 3, 1), 2_025).expect("fetch");
    let appended = render(
        &e.handle(api_versions(id, 0, 1), 2_030)
            .expect("api versions"),
    );
    assert_eq!(e.voters().len(), 4, "appended");
    // Another change waits until the Voters record commits, answered or not.
    let commands = e
        .handle(admin(remove_voter(2, dir(2))), 2_031)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=7"]);
    e.handle(Event::Flush, 2_060).expect("flush");
    e.handle(fetch_from(2, 1, 4, 1), 2_070).expect("fetch");
    let committed = render(&e.handle(fetch_from(4, 1, 4, 1), 2_080).expect("fetch"));
    assert!(!e.status().uncommitted_voter_change, "committed");
    (appended, committed, e)
}

// KIP-1186: AddRaftVoter v1 with AckWhenCommitted false is answered when the
// Voters record is appended (Kafka 4.4.0's AddVoterHandler completes the
// request's future right after `appendVotersRecord`), and not again when it
// commits.
#[test]
fn add_raft_voter_v1_without_ack_when_committed_answers_once_the_voters_record_is_appended() {
    let (appended, committed, _) = add_node_4(add_voter_v1(4, false));
    assert_eq!(appended, ["reply add_raft_voter error=0"]);
    assert_eq!(
        committed,
        [
            "committed hw=4",
            "reply fetch error=0 hw=4 diverging=(-1, -1) batches=0",
        ]
    );
}

// KIP-1186: AckWhenCommitted true (v1's default, and what v0 means) is
// answered once the Voters record commits.
#[test]
fn add_raft_voter_v1_with_ack_when_committed_answers_once_the_voters_record_commits() {
    let (appended, committed, _) = add_node_4(add_voter_v1(4, true));
    assert!(appended.is_empty(), "{appended:?}");
    assert_eq!(
        committed,
        [
            "committed hw=4",
            "reply fetch error=0 hw=4 diverging=(-1, -1) batches=0",
            "reply add_raft_voter error=0",
        ]
    );
}

// An answered AddRaftVoter (AckWhenCommitted false) whose Voters record does
// not commit before the request's timeout is not answered a second time;
// the change is dropped and the next one may start.
#[test]
fn an_answered_add_raft_voter_that_times_out_is_not_answered_again() {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(add_voter_v1(4, false), 2_020).expect("add");
    let id = api_versions_sent(&commands);
    e.handle(fetch_from(4, 1, 3, 1), 2_025).expect("fetch");
    let appended = render(
        &e.handle(api_versions(id, 0, 1), 2_030)
            .expect("api versions"),
    );
    assert_eq!(appended, ["reply add_raft_voter error=0"]);
    // add_voter's timeout_ms is 5000: past it, nothing is answered.
    let commands = e.handle(Event::Tick, 7_100).expect("tick");
    assert!(
        !render(&commands)
            .iter()
            .any(|c| c.contains("add_raft_voter")),
        "{commands:?}"
    );
}

// Raft §4.1 / KIP-853: one uncommitted voter change at a time. An
// AddRaftVoter answered at the append (AckWhenCommitted false) whose request
// timed out leaves its Voters record uncommitted: the next change is still
// refused until that record commits, then allowed.
#[test]
fn after_an_answered_add_raft_voter_times_out_the_next_change_waits_for_its_voters_record_to_commit()
 {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(add_voter_v1(4, false), 2_020).expect("add");
    let id = api_versions_sent(&commands);
    e.handle(fetch_from(4, 1, 3, 1), 2_025).expect("fetch");
    e.handle(api_versions(id, 0, 1), 2_030)
        .expect("api versions");
    // Voters 2 and 3 keep fetching (check-quorum) without reaching the
    // Voters record at offset 3, past the request's 5000 ms timeout.
    for now in [3_000, 4_500, 6_000, 7_000] {
        e.handle(fetch_from(2, 1, 3, 1), now).expect("fetch");
        e.handle(fetch_from(3, 1, 3, 1), now).expect("fetch");
    }
    e.handle(Event::Tick, 7_100).expect("tick");
    assert!(e.status().uncommitted_voter_change, "not committed yet");
    let commands = e
        .handle(admin(remove_voter(2, dir(2))), 7_110)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=7"]);
    e.handle(Event::Flush, 7_120).expect("flush");
    e.handle(fetch_from(2, 1, 4, 1), 7_130).expect("fetch");
    e.handle(fetch_from(4, 1, 4, 1), 7_140).expect("fetch");
    assert!(!e.status().uncommitted_voter_change, "committed");
    let commands = e
        .handle(admin(remove_voter(2, dir(2))), 7_150)
        .expect("remove");
    assert!(commands.is_empty(), "{commands:?}");
    assert!(
        e.status().uncommitted_voter_change,
        "node 2's removal appended"
    );
    assert_eq!(e.voters().len(), 3, "node 4 in, node 2 out");
}

/// The id of the one ApiVersions among `commands`.
fn api_versions_sent(commands: &[Command]) -> u64 {
    let sends: Vec<u64> = commands
        .iter()
        .filter_map(|c| match c {
            Command::Send {
                id,
                request: RaftRequest::ApiVersions(_),
                ..
            } => Some(id.0),
            _ => None,
        })
        .collect();
    assert_eq!(sends.len(), 1, "one ApiVersions in {commands:?}");
    sends[0]
}

fn failed(id: u64) -> Event {
    Event::RequestFailed {
        id: RequestId(id),
        failure: crate::raft::RequestFailure::Disconnected,
    }
}

/// Ticks the engine at each of its deadlines until it sends an ApiVersions
/// (its id and the time) or the next deadline is past `until_ms`; returns
/// everything it did on the way, rendered.
fn next_api_versions(
    e: &mut RaftEngine<MemoryLog>,
    until_ms: u64,
) -> (Vec<String>, Option<(u64, u64)>) {
    let mut rendered = Vec::new();
    loop {
        let t = e.next_deadline_ms();
        if t > until_ms {
            return (rendered, None);
        }
        let commands = e.handle(Event::Tick, t).expect("tick");
        rendered.extend(render(&commands));
        let sent = commands.iter().find_map(|c| match c {
            Command::Send {
                id,
                request: RaftRequest::ApiVersions(_),
                ..
            } => Some(id.0),
            _ => None,
        });
        if let Some(id) = sent {
            return (rendered, Some((id, t)));
        }
    }
}

#[test]
fn a_new_voter_whose_first_api_versions_fails_is_asked_again_and_added() {
    // A re-created pod: the first ApiVersions went down a connection to the
    // pod that was there before. Kafka's AddVoterHandler waits for the
    // answer within the request's timeout; one lost request must not fail
    // the change.
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    let first = api_versions_sent(&commands);
    let commands = e.handle(failed(first), 2_030).expect("failed");
    assert!(
        render(&commands).is_empty(),
        "not answered yet: {commands:?}"
    );
    // Asked again after controller.quorum.retry.backoff.ms (20 ms).
    let (_, second) = next_api_versions(&mut e, 2_050);
    let (second, at) = second.expect("a second ApiVersions within the backoff");
    assert_eq!(at, 2_050);
    assert_ne!(second, first);
    // The key fetched to the log end since the failure: it is alive.
    e.handle(fetch_from(4, 1, 3, 1), 2_055).expect("fetch");
    let commands = e.handle(api_versions(second, 0, 1), 2_060).expect("answer");
    assert!(render(&commands).is_empty(), "{commands:?}");
    assert_eq!(e.voters().len(), 4, "appended");
}

#[test]
fn a_new_voter_is_added_only_once_its_key_fetched_after_the_api_versions_went_out() {
    // The node answering ApiVersions may be a new incarnation of the id (a
    // wiped volume, another directory id) while the key being added is the
    // old one: only a fetch under that key since the request went out shows
    // the key is alive. Until then it is asked again.
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    let first = api_versions_sent(&commands);
    let commands = e.handle(api_versions(first, 0, 1), 2_030).expect("answer");
    assert!(render(&commands).is_empty(), "{commands:?}");
    assert_eq!(e.voters().len(), 3, "not on the answer alone");
    let (_, second) = next_api_versions(&mut e, 2_100);
    let (second, at) = second.expect("a second ApiVersions");
    e.handle(fetch_from(4, 1, 3, 1), at + 5).expect("fetch");
    let commands = e
        .handle(api_versions(second, 0, 1), at + 10)
        .expect("answer");
    assert!(render(&commands).is_empty(), "{commands:?}");
    assert_eq!(e.voters().len(), 4, "appended");
}

#[test]
fn a_new_voter_whose_key_stops_fetching_times_out_though_it_answers_api_versions() {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    let mut request = api_versions_sent(&commands);
    let mut now = 2_025;
    let rendered = loop {
        // Node 2 keeps fetching: check-quorum holds.
        e.handle(fetch_from(2, 1, 3, 1), now).expect("fetch");
        let commands = e.handle(api_versions(request, 0, 1), now).expect("answer");
        assert!(render(&commands).is_empty(), "{commands:?}");
        match next_api_versions(&mut e, 7_020) {
            (_, Some((id, at))) => (request, now) = (id, at),
            (rendered, None) => break rendered,
        }
    };
    assert!(
        rendered.contains(&"reply add_raft_voter error=7".to_string()),
        "{rendered:?}"
    );
    assert_eq!(e.voters().len(), 3);
}

#[test]
fn a_new_voter_that_never_answers_api_versions_times_out_at_the_requests_deadline() {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    let (mut request, mut now, mut gaps) = (api_versions_sent(&commands), 2_020, Vec::new());
    // Every attempt fails at once; add_voter's timeout_ms is 5000.
    loop {
        // Node 2 keeps fetching: check-quorum holds.
        e.handle(fetch_from(2, 1, 3, 1), now).expect("fetch");
        let commands = e.handle(failed(request), now).expect("failed");
        assert!(render(&commands).is_empty(), "{commands:?}");
        match next_api_versions(&mut e, 7_020) {
            (_, Some((id, at))) => {
                gaps.push(at - now);
                (request, now) = (id, at);
            }
            (rendered, None) => {
                assert!(
                    rendered.contains(&"reply add_raft_voter error=7".to_string()),
                    "{rendered:?}"
                );
                break;
            }
        }
    }
    // 20, 40, … ms up to 1000 ms between attempts, until the deadline.
    assert_eq!(gaps[..6], [20, 40, 80, 160, 320, 640], "{gaps:?}");
    assert!(gaps[6..].iter().all(|g| *g == 1_000), "{gaps:?}");
    assert!((6_000..7_020).contains(&now), "last attempt at {now}");
    assert_eq!(e.voters().len(), 3);
}

#[test]
fn add_raft_voter_refuses_a_voter_that_is_not_caught_up_or_already_a_voter() {
    let mut e = kip853_leader();
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    assert_eq!(render(&commands), ["reply add_raft_voter error=7"]);
    let commands = e.handle(admin(add_voter(2)), 2_021).expect("add");
    assert_eq!(render(&commands), ["reply add_raft_voter error=126"]);
}

#[test]
fn a_new_voter_without_the_cluster_kraft_version_is_an_invalid_request() {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    let Command::Send { id, .. } = &commands[0] else {
        unreachable!("a send")
    };
    let commands = e
        .handle(api_versions(id.0, 0, 0), 2_030)
        .expect("api versions");
    assert_eq!(render(&commands), ["reply add_raft_voter error=42"]);
    assert_eq!(e.voters().len(), 3);
}

#[test]
fn remove_raft_voter_with_the_wrong_directory_id_is_voter_not_found() {
    let mut e = kip853_leader();
    let commands = e
        .handle(admin(remove_voter(2, dir(9))), 2_020)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=127"]);
}

#[test]
fn voter_changes_under_kraft_version_0_are_unsupported() {
    let mut e = leader(MemoryLog::new());
    e.handle(Event::Flush, 2_000).expect("flush");
    e.handle(fetch(2, 1, 1, 1, 0), 2_000).expect("fetch");
    let commands = e
        .handle(admin(remove_voter(2, uuid::Uuid::nil())), 2_020)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=35"]);
}

#[test]
fn a_leader_whose_removal_commits_resigns() {
    let mut e = kip853_leader();
    e.handle(fetch_from(3, 1, 3, 1), 2_005).expect("fetch");
    let commands = e
        .handle(admin(remove_voter(1, dir(1))), 2_010)
        .expect("remove");
    assert!(render(&commands).is_empty(), "{commands:?}");
    assert!(!e.is_voter());
    assert_eq!(e.role(), Role::Leader);
    // The new set {2, 3} commits the record without counting the leader.
    e.handle(fetch_from(2, 1, 4, 1), 2_020).expect("fetch");
    let commands = e.handle(fetch_from(3, 1, 4, 1), 2_030).expect("fetch");
    assert_eq!(
        render(&commands),
        [
            "committed hw=4",
            "reply fetch error=0 hw=4 diverging=(-1, -1) batches=0",
            "reply remove_raft_voter error=0",
            "role resigned epoch=1 leader=Some(1)",
            "send 2 end_quorum_epoch epoch=1 successors=[2, 3]",
            "send 3 end_quorum_epoch epoch=1 successors=[2, 3]",
        ]
    );
}

#[test]
fn describe_quorum_reports_voters_and_observers_with_their_fetch_state() {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 2, 1), 2_010).expect("fetch");
    let commands = e
        .handle(
            Event::Request {
                handle: ReplyHandle(3),
                api_version: 2,
                request: RaftRequest::DescribeQuorum(Default::default()),
            },
            2_020,
        )
        .expect("describe");
    let [
        Command::Reply {
            response: RaftResponse::DescribeQuorum(r),
            ..
        },
    ] = commands.as_slice()
    else {
        panic!("one DescribeQuorum reply: {commands:?}")
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!((p.leader_id.0, p.leader_epoch, p.high_watermark), (1, 1, 3));
    let voters: Vec<_> = p
        .current_voters
        .iter()
        .map(|v| (v.replica_id.0, v.log_end_offset, v.last_fetch_timestamp))
        .collect();
    assert_eq!(voters, [(1, 3, 2_020), (2, 3, 2_000), (3, -1, -1)]);
    let observers: Vec<_> = p
        .observers
        .iter()
        .map(|v| (v.replica_id.0, v.replica_directory_id, v.log_end_offset))
        .collect();
    assert_eq!(observers, [(4, dir(4), 2)]);
    assert_eq!(r.nodes.len(), 3);
}

#[test]
fn update_raft_voter_changes_a_voters_endpoints_once_committed() {
    use kafka_protocol::messages::{
        UpdateRaftVoterRequest,
        update_raft_voter_request::{KRaftVersionFeature, Listener},
    };
    let update_on = |directory: uuid::Uuid, listener: &'static str| {
        RaftRequest::UpdateRaftVoter(
            UpdateRaftVoterRequest::default()
                .with_cluster_id(Some("test".into()))
                .with_current_leader_epoch(1)
                .with_voter_id(2)
                .with_voter_directory_id(directory)
                .with_listeners(vec![
                    Listener::default()
                        .with_name(listener.into())
                        .with_host("node2.new".into())
                        .with_port(19093),
                ])
                .with_k_raft_version_feature(
                    KRaftVersionFeature::default()
                        .with_min_supported_version(0)
                        .with_max_supported_version(1),
                ),
        )
    };
    let update = |directory: uuid::Uuid| update_on(directory, "CONTROLLER");
    let code = |commands: &[Command]| match commands {
        [
            Command::Reply {
                response: RaftResponse::UpdateRaftVoter(r),
                ..
            },
        ] => r.error_code,
        other => panic!("one UpdateRaftVoter reply expected: {other:?}"),
    };
    let mut e = kip853_leader();
    let commands = e.handle(admin(update(dir(9))), 2_010).expect("update");
    assert_eq!(code(&commands), 127);
    // Without an endpoint on the leader's voter listener: refused, kept.
    let before = e.voters().get(2).expect("voter 2").endpoints.clone();
    let commands = e
        .handle(admin(update_on(dir(2), "OTHER")), 2_015)
        .expect("update");
    assert_eq!(code(&commands), 42);
    assert_eq!(e.voters().get(2).expect("voter 2").endpoints, before);
    let commands = e.handle(admin(update(dir(2))), 2_020).expect("update");
    assert!(commands.is_empty(), "{commands:?}");
    let endpoint = &e.voters().get(2).expect("voter 2").endpoints[0];
    assert_eq!(
        (endpoint.host.as_str(), endpoint.port),
        ("node2.new", 19093)
    );
    e.handle(Event::Flush, 2_050).expect("flush");
    let commands = e.handle(fetch_from(2, 1, 4, 1), 2_060).expect("fetch");
    assert_eq!(code(&commands[2..]), 0, "{:?}", render(&commands));
}

/// Kafka's `LeaderState.OBSERVER_SESSION_TIMEOUT_MS`: an observer that has
/// not fetched for 5 minutes is no longer listed by DescribeQuorum; one that
/// keeps fetching is.
#[test]
fn describe_quorum_forgets_an_observer_after_five_minutes_without_a_fetch() {
    let observers_at = |e: &mut RaftEngine<MemoryLog>, now_ms: u64| {
        let commands = e
            .handle(
                Event::Request {
                    handle: ReplyHandle(3),
                    api_version: 2,
                    request: RaftRequest::DescribeQuorum(Default::default()),
                },
                now_ms,
            )
            .expect("describe");
        let [
            Command::Reply {
                response: RaftResponse::DescribeQuorum(r),
                ..
            },
        ] = commands.as_slice()
        else {
            panic!("one DescribeQuorum reply: {commands:?}")
        };
        r.topics[0].partitions[0]
            .observers
            .iter()
            .map(|v| v.replica_id.0)
            .collect::<Vec<_>>()
    };
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 2, 1), 2_010).expect("fetch");
    e.handle(fetch_from(5, 1, 2, 1), 2_010).expect("fetch");
    assert_eq!(observers_at(&mut e, 2_020), [4, 5]);
    // Voter 2 and observer 5 keep fetching (the leader stays leader); 4
    // goes quiet.
    let later = 2_010 + OBSERVER_SESSION_TIMEOUT_MS;
    for now_ms in (2_500..later).step_by(500) {
        e.handle(fetch_from(2, 1, 3, 1), now_ms).expect("fetch");
        e.handle(fetch_from(5, 1, 2, 1), now_ms).expect("fetch");
    }
    assert_eq!(observers_at(&mut e, later - 1), [4, 5]);
    assert_eq!(observers_at(&mut e, later), [5]);
    // A new observer's fetch drops 4's progress for good.
    e.handle(fetch_from(6, 1, 2, 1), later + 10).expect("fetch");
    assert_eq!(observers_at(&mut e, later + 20), [5, 6]);
}
