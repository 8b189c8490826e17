//! The admin client and the `quorum` CLI against canned controllers on
//! 127.0.0.1: a follower that answers NOT_LEADER_OR_FOLLOWER and a leader,
//! found through DescribeCluster as Kafka's Admin does with
//! `bootstrap.controllers`.

mod wire_samples;
mod wire_server;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use kafka_protocol::{
    messages::{
        AddRaftVoterResponse, ApiKey, BrokerId, DescribeClusterResponse, DescribeQuorumResponse,
        RemoveRaftVoterResponse, RequestKind, ResponseKind, TopicName, describe_cluster_response,
        describe_quorum_response,
    },
    protocol::StrBytes,
};
use kraft_controller::{
    admin::{AdminClient, AdminError, Endpoint, error_name, kafka_uuid_string, parse_kafka_uuid},
    wire::{self, FinalizedFeatures},
};
use uuid::Uuid;
use wire_server::{CannedServer, Handler};

const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";
const LEADER_ID: i32 = 2;
const DIR_1: Uuid = Uuid::from_bytes([1; 16]);
const DIR_2: Uuid = Uuid::from_bytes([2; 16]);

fn api_versions(v: i16) -> ResponseKind {
    ResponseKind::ApiVersions(wire::api_versions_response(
        v,
        &wire::supported_features(),
        &FinalizedFeatures::default(),
    ))
}

fn describe_cluster(leader_port: u16) -> ResponseKind {
    ResponseKind::DescribeCluster(
        DescribeClusterResponse::default()
            .with_endpoint_type(2)
            .with_cluster_id(StrBytes::from_static_str(CLUSTER_ID))
            .with_controller_id(BrokerId(LEADER_ID))
            .with_brokers(vec![
                describe_cluster_response::DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(LEADER_ID))
                    .with_host(StrBytes::from_static_str("127.0.0.1"))
                    .with_port(i32::from(leader_port)),
            ]),
    )
}

fn quorum_partition() -> describe_quorum_response::PartitionData {
    describe_quorum_response::PartitionData::default().with_partition_index(0)
}

fn describe_quorum_not_leader() -> ResponseKind {
    ResponseKind::DescribeQuorum(DescribeQuorumResponse::default().with_topics(vec![
        describe_quorum_response::TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
            .with_partitions(vec![quorum_partition().with_error_code(6)]),
    ]))
}

fn describe_quorum_leader() -> ResponseKind {
    let replica = |id: i32, dir: Uuid, leo: i64, ts: i64| {
        describe_quorum_response::ReplicaState::default()
            .with_replica_id(BrokerId(id))
            .with_replica_directory_id(dir)
            .with_log_end_offset(leo)
            .with_last_fetch_timestamp(ts)
            .with_last_caught_up_timestamp(ts)
    };
    ResponseKind::DescribeQuorum(
        DescribeQuorumResponse::default()
            .with_topics(vec![
                describe_quorum_response::TopicData::default()
                    .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
                    .with_partitions(vec![
                        quorum_partition()
                            .with_leader_id(BrokerId(LEADER_ID))
                            .with_leader_epoch(9)
                            .with_high_watermark(500)
                            .with_current_voters(vec![
                                replica(1, DIR_1, 480, 1_000),
                                replica(2, DIR_2, 510, 1_100),
                            ])
                            .with_observers(vec![replica(3, Uuid::nil(), 100, -1)]),
                    ]),
            ])
            .with_nodes(vec![
                describe_quorum_response::Node::default()
                    .with_node_id(BrokerId(2))
                    .with_listeners(vec![
                        describe_quorum_response::Listener::default()
                            .with_name(StrBytes::from_static_str("CONTROLLER"))
                            .with_host(StrBytes::from_static_str("q-2.q"))
                            .with_port(9093),
                    ]),
            ]),
    )
}

/// An AddRaftVoter as seen: voter id, directory id, listeners (name, host,
/// port), the request's timeout (ms).
type SeenAdd = (i32, Uuid, Vec<(String, String, u16)>, i32);

/// What the leader saw of the last membership request.
#[derive(Default)]
struct Seen {
    add: Option<SeenAdd>,
    remove: Option<(i32, Uuid)>,
}

/// A follower (answers NOT_LEADER_OR_FOLLOWER, knows the leader through
/// DescribeCluster) and a leader.
async fn quorum(
    add_error: i16,
    remove_error: i16,
) -> (CannedServer, CannedServer, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen_by_leader = seen.clone();
    let leader_handler: Handler = Arc::new(move |r| match &r.body {
        RequestKind::ApiVersions(_) => Some(api_versions(r.api_version)),
        RequestKind::DescribeQuorum(_) => Some(describe_quorum_leader()),
        RequestKind::AddRaftVoter(a) => {
            seen_by_leader.lock().expect("lock").add = Some((
                a.voter_id,
                a.voter_directory_id,
                a.listeners
                    .iter()
                    .map(|l| (l.name.to_string(), l.host.to_string(), l.port))
                    .collect(),
                a.timeout_ms,
            ));
            Some(ResponseKind::AddRaftVoter(
                AddRaftVoterResponse::default().with_error_code(add_error),
            ))
        }
        RequestKind::RemoveRaftVoter(a) => {
            seen_by_leader.lock().expect("lock").remove = Some((a.voter_id, a.voter_directory_id));
            Some(ResponseKind::RemoveRaftVoter(
                RemoveRaftVoterResponse::default().with_error_code(remove_error),
            ))
        }
        _ => None,
    });
    let leader = CannedServer::start(leader_handler).await;
    let leader_port = leader.addr.port();
    let follower_handler: Handler = Arc::new(move |r| match &r.body {
        RequestKind::ApiVersions(_) => Some(api_versions(r.api_version)),
        RequestKind::DescribeCluster(_) => Some(describe_cluster(leader_port)),
        RequestKind::DescribeQuorum(_) => Some(describe_quorum_not_leader()),
        RequestKind::AddRaftVoter(_) => Some(ResponseKind::AddRaftVoter(
            AddRaftVoterResponse::default().with_error_code(6),
        )),
        RequestKind::RemoveRaftVoter(_) => Some(ResponseKind::RemoveRaftVoter(
            RemoveRaftVoterResponse::default().with_error_code(6),
        )),
        _ => None,
    });
    let follower = CannedServer::start(follower_handler).await;
    (follower, leader, seen)
}

const TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn describe_quorum_follows_the_active_controller_and_maps_every_field() {
    let (follower, leader, _) = quorum(0, 0).await;
    let mut admin = AdminClient::connect(&follower.addr_string(), TIMEOUT)
        .await
        .expect("connects");
    let q = admin.describe_quorum().await.expect("described");
    assert_eq!(admin.connected_addr(), leader.addr_string());
    assert_eq!((q.leader_id, q.leader_epoch, q.high_watermark), (2, 9, 500));
    assert_eq!(q.voters.len(), 2);
    assert_eq!(q.voters[0].replica_id, 1);
    assert_eq!(q.voters[0].directory_id, DIR_1);
    assert_eq!(q.voters[0].log_end_offset, 480);
    assert_eq!(q.voters[0].last_fetch_timestamp_ms, Some(1_000));
    assert_eq!(
        q.observers[0].last_caught_up_timestamp_ms, None,
        "-1 means unknown"
    );
    assert_eq!(q.nodes[0].node_id, 2);
    assert_eq!(
        q.nodes[0].endpoints,
        vec![Endpoint {
            name: "CONTROLLER".into(),
            host: "q-2.q".into(),
            port: 9093
        }]
    );
}

#[tokio::test]
async fn describe_cluster_returns_the_controllers_and_the_active_one() {
    let (follower, leader, _) = quorum(0, 0).await;
    let mut admin = AdminClient::connect(&follower.addr_string(), TIMEOUT)
        .await
        .expect("connects");
    let cluster = admin.describe_cluster().await.expect("described");
    assert_eq!(cluster.cluster_id, CLUSTER_ID);
    assert_eq!(cluster.controller_id, LEADER_ID);
    assert_eq!(cluster.nodes[0].port, leader.addr.port());
    let versions = admin.api_versions();
    assert!(
        versions
            .api_keys
            .iter()
            .any(|a| a.api_key == ApiKey::AddRaftVoter as i16)
    );
}

#[tokio::test]
async fn add_raft_voter_reaches_the_leader_with_the_voter_and_its_endpoints() {
    let (follower, _leader, seen) = quorum(0, 0).await;
    let mut admin = AdminClient::connect(&follower.addr_string(), TIMEOUT)
        .await
        .expect("connects");
    let endpoint: Endpoint = "CONTROLLER://q-4.q:9093".parse().expect("endpoint");
    admin
        .add_raft_voter(4, DIR_1, &[endpoint], 1_500)
        .await
        .expect("added");
    let add = seen
        .lock()
        .expect("lock")
        .add
        .clone()
        .expect("leader saw AddRaftVoter");
    assert_eq!(
        add,
        (
            4,
            DIR_1,
            vec![("CONTROLLER".into(), "q-4.q".into(), 9093)],
            1_500
        )
    );
}

#[tokio::test]
async fn request_timed_out_from_the_leader_is_a_retriable_kafka_error() {
    let (follower, _leader, _) = quorum(7, 0).await;
    let mut admin = AdminClient::connect(&follower.addr_string(), TIMEOUT)
        .await
        .expect("connects");
    let err = admin
        .add_raft_voter(4, DIR_1, &["C://h:1".parse().expect("endpoint")], 100)
        .await
        .expect_err("not caught up");
    assert_eq!(
        err,
        AdminError::Kafka {
            code: 7,
            name: "REQUEST_TIMED_OUT",
            message: None
        }
    );
    assert!(err.is_retriable());
}

#[tokio::test]
async fn voter_not_found_is_not_retriable() {
    let (follower, _leader, seen) = quorum(0, 127).await;
    let mut admin = AdminClient::connect(&follower.addr_string(), TIMEOUT)
        .await
        .expect("connects");
    let err = admin
        .remove_raft_voter(1, DIR_2)
        .await
        .expect_err("wrong directory id");
    assert_eq!(err.code(), Some(127));
    assert!(!err.is_retriable());
    assert!(err.to_string().contains("VOTER_NOT_FOUND"), "{err}");
    assert_eq!(seen.lock().expect("lock").remove, Some((1, DIR_2)));
}

#[tokio::test]
async fn a_controller_that_lists_a_lower_api_versions_version_is_asked_again_at_it() {
    // Answers ApiVersions v4 with the KIP-511 fallback (max 3), v3 normally.
    let handler: Handler = Arc::new(|r| match &r.body {
        RequestKind::ApiVersions(_) if r.api_version == 4 => {
            let mut fallback = wire::api_versions_fallback_response();
            fallback.api_keys[0].max_version = 3;
            Some(ResponseKind::ApiVersions(fallback))
        }
        RequestKind::ApiVersions(_) => Some(api_versions(r.api_version)),
        _ => None,
    });
    let server = CannedServer::start(handler).await;
    let admin = AdminClient::connect(&server.addr_string(), TIMEOUT)
        .await
        .expect("negotiates");
    assert_eq!(admin.api_versions().error_code, 0);
    assert_eq!(server.requests.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_unreachable_bootstrap_controller_is_a_retriable_io_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let err = AdminClient::connect(&addr, TIMEOUT)
        .await
        .expect_err("nothing listens");
    assert!(matches!(err, AdminError::Io { .. }), "{err}");
    assert!(err.is_retriable());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_list_is_tried_in_order_until_one_answers() {
    let (follower, leader, _) = quorum(0, 0).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let dead = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let list = format!("{dead} , {}", follower.addr_string());
    let mut admin = AdminClient::connect(&list, TIMEOUT)
        .await
        .expect("the second entry answers");
    assert_eq!(admin.connected_addr(), follower.addr_string());
    admin.describe_quorum().await.expect("describes");
    assert_eq!(admin.connected_addr(), leader.addr_string());
    let (code, out, err) = cli(args(&list, &["describe", "--status"])).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("LeaderId:               2"), "{out}");
}

#[tokio::test]
async fn a_bootstrap_list_without_an_address_is_refused_naming_it() {
    let err = AdminClient::connect(" , ", TIMEOUT)
        .await
        .expect_err("no address");
    assert!(matches!(err, AdminError::InvalidBootstrap { .. }), "{err}");
    assert!(!err.is_retriable());
    assert!(err.to_string().contains(" , "), "{err}");
}

#[test]
fn error_names_are_kafkas() {
    assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
    assert_eq!(error_name(7), "REQUEST_TIMED_OUT");
    assert_eq!(error_name(35), "UNSUPPORTED_VERSION");
    assert_eq!(error_name(104), "INCONSISTENT_CLUSTER_ID");
    assert_eq!(error_name(126), "DUPLICATE_VOTER");
    assert_eq!(error_name(127), "VOTER_NOT_FOUND");
    assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
    assert_eq!(error_name(9999), "UNKNOWN");
}

#[test]
fn directory_ids_use_kafkas_base64_form() {
    let id = Uuid::from_bytes([2; 16]);
    assert_eq!(kafka_uuid_string(id), "AgICAgICAgICAgICAgICAg");
    assert_eq!(parse_kafka_uuid("AgICAgICAgICAgICAgICAg"), Ok(id));
    assert_eq!(
        parse_kafka_uuid("02020202-0202-0202-0202-020202020202"),
        Ok(id)
    );
    assert!(parse_kafka_uuid("not-a-uuid").is_err());
}

#[test]
fn endpoints_parse_and_print_like_kafkas_raft_voter_endpoint() {
    let e: Endpoint = "CONTROLLER://[::1]:9093".parse().expect("v6");
    assert_eq!(e.host, "::1");
    assert_eq!(e.to_string(), "CONTROLLER://[::1]:9093");
    assert!("CONTROLLER://host".parse::<Endpoint>().is_err());
    assert!("host:9093".parse::<Endpoint>().is_err());
    assert!("C://h:70000".parse::<Endpoint>().is_err());
}

/// Runs the real binary; returns (exit code, stdout, stderr).
async fn cli(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kraft-controller"))
            .args(&args)
            .output()
            .expect("binary runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .expect("joined")
}

fn args(bootstrap: &str, rest: &[&str]) -> Vec<String> {
    [
        "quorum",
        "--bootstrap-controller",
        bootstrap,
        "--timeout-ms",
        "5000",
    ]
    .iter()
    .chain(rest)
    .map(|s| (*s).to_owned())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_describe_status_prints_kafkas_summary() {
    let (follower, _leader, _) = quorum(0, 0).await;
    let (code, out, err) = cli(args(&follower.addr_string(), &["describe", "--status"])).await;
    assert_eq!(code, 0, "stderr: {err}");
    let expected = format!(
        "ClusterId:              {CLUSTER_ID}\n\
         LeaderId:               2\n\
         LeaderEpoch:            9\n\
         HighWatermark:          500\n\
         MaxFollowerLag:         30\n\
         MaxFollowerLagTimeMs:   100\n\
         CurrentVoters:          [{{\"id\": 1, \"directoryId\": \"{}\"}}, {{\"id\": 2, \"directoryId\": \"{}\", \"endpoints\": [\"CONTROLLER://q-2.q:9093\"]}}]\n\
         CurrentObservers:       [{{\"id\": 3}}]\n",
        kafka_uuid_string(DIR_1),
        kafka_uuid_string(DIR_2)
    );
    assert_eq!(out, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_describe_replication_prints_the_table() {
    let (follower, _leader, _) = quorum(0, 0).await;
    let (code, out, err) = cli(args(
        &follower.addr_string(),
        &["describe", "--replication"],
    ))
    .await;
    assert_eq!(code, 0, "stderr: {err}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split('\t').map(str::trim).collect())
        .collect();
    assert_eq!(
        rows[0][..7],
        [
            "NodeId",
            "DirectoryId",
            "LogEndOffset",
            "Lag",
            "LastFetchTimestamp",
            "LastCaughtUpTimestamp",
            "Status"
        ]
    );
    assert_eq!(
        rows[1][..7],
        [
            "2",
            &kafka_uuid_string(DIR_2),
            "510",
            "0",
            "1100",
            "1100",
            "Leader"
        ]
    );
    assert_eq!(
        rows[2][..7],
        [
            "1",
            &kafka_uuid_string(DIR_1),
            "480",
            "30",
            "1000",
            "1000",
            "Follower"
        ]
    );
    assert_eq!(
        rows[3][..7],
        [
            "3",
            "AAAAAAAAAAAAAAAAAAAAAA",
            "100",
            "410",
            "-1",
            "-1",
            "Observer"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_add_voter_exits_3_and_says_retriable_on_request_timed_out() {
    let (follower, _leader, _) = quorum(7, 0).await;
    let dir = kafka_uuid_string(DIR_1);
    let (code, out, err) = cli(args(
        &follower.addr_string(),
        &[
            "add-voter",
            "--node-id",
            "4",
            "--directory-id",
            &dir,
            "--endpoint",
            "CONTROLLER://q-4.q:9093",
        ],
    ))
    .await;
    assert_eq!(code, 3, "stdout: {out} stderr: {err}");
    assert!(
        err.contains("retriable") && err.contains("REQUEST_TIMED_OUT"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_add_and_remove_voter_succeed_with_kafkas_messages() {
    let (follower, _leader, seen) = quorum(0, 0).await;
    let dir = kafka_uuid_string(DIR_1);
    let (code, out, err) = cli(args(
        &follower.addr_string(),
        &[
            "add-voter",
            "--node-id",
            "4",
            "--directory-id",
            &dir,
            "--endpoint",
            "CONTROLLER://q-4.q:9093",
        ],
    ))
    .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(
        out,
        format!(
            "Added controller 4 with directory id {dir} and endpoints: CONTROLLER://q-4.q:9093\n"
        )
    );
    assert_eq!(
        seen.lock().expect("lock").add.as_ref().map(|a| a.0),
        Some(4)
    );

    let (code, out, err) = cli(args(
        &follower.addr_string(),
        &["remove-voter", "--node-id", "1", "--directory-id", &dir],
    ))
    .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(
        out,
        format!("Removed KRaft controller 1 with directory id {dir}\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_remove_voter_exits_1_on_voter_not_found_and_on_a_bad_directory_id() {
    let (follower, _leader, _) = quorum(0, 127).await;
    let dir = kafka_uuid_string(DIR_1);
    let (code, _, err) = cli(args(
        &follower.addr_string(),
        &["remove-voter", "--node-id", "1", "--directory-id", &dir],
    ))
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("VOTER_NOT_FOUND") && !err.contains("retriable"),
        "{err}"
    );

    let (code, _, err) = cli(args(
        &follower.addr_string(),
        &["remove-voter", "--node-id", "1", "--directory-id", "xyz"],
    ))
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("'xyz'"), "{err}");
}

#[tokio::test]
async fn a_not_leader_answer_that_names_the_leader_and_its_endpoint_is_followed_directly() {
    let (_follower, leader, _) = quorum(0, 0).await;
    let leader_port = leader.addr.port();
    // This follower does not know the active controller through
    // DescribeCluster, but its DescribeQuorum answer names the leader (v2).
    let handler: Handler = Arc::new(move |r| match &r.body {
        RequestKind::ApiVersions(_) => Some(api_versions(r.api_version)),
        RequestKind::DescribeCluster(_) => Some(ResponseKind::DescribeCluster(
            DescribeClusterResponse::default().with_controller_id(BrokerId(-1)),
        )),
        RequestKind::DescribeQuorum(_) => Some(ResponseKind::DescribeQuorum(
            DescribeQuorumResponse::default()
                .with_topics(vec![
                    describe_quorum_response::TopicData::default()
                        .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
                        .with_partitions(vec![
                            quorum_partition()
                                .with_error_code(6)
                                .with_leader_id(BrokerId(LEADER_ID)),
                        ]),
                ])
                .with_nodes(vec![
                    describe_quorum_response::Node::default()
                        .with_node_id(BrokerId(LEADER_ID))
                        .with_listeners(vec![
                            describe_quorum_response::Listener::default()
                                .with_name(StrBytes::from_static_str("CONTROLLER"))
                                .with_host(StrBytes::from_static_str("127.0.0.1"))
                                .with_port(leader_port),
                        ]),
                ]),
        )),
        _ => None,
    });
    let follower = CannedServer::start(handler).await;
    let mut admin = AdminClient::connect(&follower.addr_string(), TIMEOUT)
        .await
        .expect("connects");
    let q = admin
        .describe_quorum()
        .await
        .expect("described at the named leader");
    assert_eq!(q.leader_id, LEADER_ID);
    assert_eq!(admin.connected_addr(), leader.addr_string());
}

#[tokio::test]
async fn no_known_leader_is_a_retriable_not_leader_error() {
    let handler: Handler = Arc::new(|r| match &r.body {
        RequestKind::ApiVersions(_) => Some(api_versions(r.api_version)),
        RequestKind::DescribeCluster(_) => Some(ResponseKind::DescribeCluster(
            DescribeClusterResponse::default().with_controller_id(BrokerId(-1)),
        )),
        RequestKind::DescribeQuorum(_) => Some(describe_quorum_not_leader()),
        _ => None,
    });
    let server = CannedServer::start(handler).await;
    let mut admin = AdminClient::connect(&server.addr_string(), TIMEOUT)
        .await
        .expect("connects");
    let err = admin.describe_quorum().await.expect_err("no leader");
    assert_eq!(err.code(), Some(6));
    assert!(err.is_retriable());
}
