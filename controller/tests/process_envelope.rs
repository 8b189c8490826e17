//! Process tests of Envelope (58, KIP-590) on the controller listener: a
//! real `kraft-controller` over mTLS with Kafka's StandardAuthorizer, and
//! envelopes sent over the wire as a broker sends them.
//!
//! - a sender with CLUSTER_ACTION (a super user) gets the inner
//!   DescribeQuorum answered inside the envelope, with the inner correlation
//!   id and version; the inner request is authorized with the client's
//!   principal (a non-super-user client gets CLUSTER_AUTHORIZATION_FAILED
//!   wrapped, error code 0 on the envelope);
//! - refusals in `EnvelopeResponse.errorCode`, no data, the connection kept:
//!   a nested envelope and a non-forwardable inner api (INVALID_REQUEST),
//!   garbage inside (UNSUPPORTED_VERSION), a bad principal
//!   (PRINCIPAL_DESERIALIZATION_FAILURE); a direct request on the same
//!   connection is still served afterwards;
//! - a sender without CLUSTER_ACTION gets CLUSTER_AUTHORIZATION_FAILED;
//! - ACLs: once a super user's CreateAcls grants the broker's certificate
//!   CLUSTER_ACTION on the cluster, its envelopes are served (its CreateAcls,
//!   ALTER, still is not); DescribeAcls lists the ACL; after kill -9 and a
//!   restart (from a snapshot: one is due after every batch) the ACL still
//!   holds; dump-log names the record;
//! - UnregisterController (94, KIP-1312) forwarded in an envelope is
//!   answered inside it with Kafka's errors and messages.

mod support;

use std::{net::IpAddr, time::Duration};

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, DescribeAclsRequest, DescribeClusterRequest, DescribeQuorumRequest,
    EnvelopeRequest, RequestKind, ResponseKind, create_acls_request::AclCreation,
};
use kraft_controller::{
    admin::AdminClient,
    server::envelope::{self, PRINCIPAL_DESERIALIZATION_FAILURE},
    wire::{
        self, INVALID_REQUEST, UNSUPPORTED_VERSION,
        client::{ClientConfig, Connection},
    },
};
use support::{QuorumBuilder, pki, wait_for};

/// Long enough for a first election on a loaded 2-core machine.
const ELECTION: Duration = Duration::from_secs(30);

const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

/// The controllers' subject (Kafka's DEFAULT mapping, RFC 2253 order).
const CONTROLLER: &str = "User:CN=controller,O=kraftwerk";

/// A whole DescribeQuorum v2 request frame payload (header and body).
fn describe_quorum(correlation_id: i32) -> Bytes {
    wire::encode_request(
        ApiKey::DescribeQuorum,
        2,
        correlation_id,
        Some("adminclient-7"),
        &RequestKind::DescribeQuorum(DescribeQuorumRequest::default()),
    )
    .expect("encodes")
}

fn envelope_of(inner: Bytes, principal: &str) -> EnvelopeRequest {
    let client: IpAddr = [192, 0, 2, 7].into();
    envelope::wrap_request(inner, principal, client).expect("wraps")
}

fn wrap(inner: Bytes, principal: &str) -> RequestKind {
    RequestKind::Envelope(envelope_of(inner, principal))
}

/// Sends each envelope over one connection; `(error code, inner answer)` of
/// each, and whether the connection is still open after them.
fn send(
    address: &str,
    config: ClientConfig,
    requests: Vec<RequestKind>,
) -> (Vec<(i16, Option<ResponseKind>)>, bool) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let connection = Connection::connect(address, config)
            .await
            .expect("a TLS connection");
        let mut answers = Vec::new();
        for body in requests {
            let answer = connection.call(0, body).await.expect("an envelope answer");
            let ResponseKind::Envelope(r) = answer else {
                panic!("not an envelope answer: {answer:?}");
            };
            let inner = r.response_data.map(|data| {
                let (correlation_id, inner) =
                    wire::decode_response(ApiKey::DescribeQuorum, 2, data).expect("inner decodes");
                assert_eq!(correlation_id, 77, "the inner correlation id");
                inner
            });
            answers.push((r.error_code, inner));
        }
        let direct = connection
            .call(
                2,
                RequestKind::DescribeQuorum(DescribeQuorumRequest::default()),
            )
            .await;
        (answers, direct.is_ok() && !connection.is_closed())
    })
}

#[test]
fn envelopes_are_unwrapped_authorized_twice_answered_wrapped_and_refusals_close_nothing() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "test-ca");
    let keystore = ca.issue("controller", "/O=kraftwerk/CN=controller");
    let broker = ca.issue("broker", "/O=kraftwerk/CN=broker");
    let mut quorum = QuorumBuilder::standalone()
        .mtls_with_authorizer(&keystore, &ca.cert, CONTROLLER)
        .format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&quorum.ids(), ELECTION);
    wait_for(ELECTION, "a first commit", || {
        quorum.node(leader).high_watermark().filter(|hw| *hw > 0)
    });
    let address = quorum.node(leader).address();

    let nested = wire::encode_request(
        ApiKey::Envelope,
        0,
        77,
        None,
        &wrap(describe_quorum(77), CONTROLLER),
    )
    .expect("encodes");
    let not_forwardable = wire::encode_request(
        ApiKey::DescribeCluster,
        1,
        77,
        None,
        &RequestKind::DescribeCluster(DescribeClusterRequest::default()),
    )
    .expect("encodes");
    let mut bad_principal = envelope_of(describe_quorum(77), CONTROLLER);
    bad_principal.request_principal = Some(Bytes::from_static(b"\x00\x07garbage"));
    let (answers, open) = send(
        &address,
        pki::client_config(Some(&keystore), &ca.cert),
        vec![
            wrap(describe_quorum(77), CONTROLLER),
            wrap(describe_quorum(77), "User:alice"),
            wrap(nested, CONTROLLER),
            wrap(not_forwardable, CONTROLLER),
            wrap(Bytes::from_static(b"\x00\x37\x00\x02garbage"), CONTROLLER),
            RequestKind::Envelope(bad_principal),
        ],
    );
    let codes: Vec<i16> = answers.iter().map(|(code, _)| *code).collect();
    assert_eq!(
        codes,
        [
            0,
            0,
            INVALID_REQUEST,
            INVALID_REQUEST,
            UNSUPPORTED_VERSION,
            PRINCIPAL_DESERIALIZATION_FAILURE
        ]
    );
    match &answers[0].1 {
        Some(ResponseKind::DescribeQuorum(r)) => {
            assert_eq!(r.error_code, 0);
            assert_eq!(r.topics[0].partitions[0].leader_id.0, leader);
        }
        other => panic!("the inner DescribeQuorum answer: {other:?}"),
    }
    match &answers[1].1 {
        Some(ResponseKind::DescribeQuorum(r)) => {
            assert_eq!(r.error_code, CLUSTER_AUTHORIZATION_FAILED);
        }
        other => panic!("the inner refusal: {other:?}"),
    }
    assert!(answers[2..].iter().all(|(_, inner)| inner.is_none()));
    assert!(open, "a refused envelope closed the connection");

    // The broker's certificate is no super user: no CLUSTER_ACTION.
    let (answers, open) = send(
        &address,
        pki::client_config(Some(&broker), &ca.cert),
        vec![wrap(describe_quorum(77), CONTROLLER)],
    );
    assert_eq!(answers, [(CLUSTER_AUTHORIZATION_FAILED, None)]);
    assert!(open, "the refusal closed the connection");
    quorum.node(leader).assert_alive();
}

/// What one envelope of a forwarded DescribeQuorum gets, sent with
/// `config`: its error code.
fn envelope_code(address: &str, config: ClientConfig) -> i16 {
    let (answers, _) = send(address, config, vec![wrap(describe_quorum(77), CONTROLLER)]);
    answers[0].0
}

/// One request over a fresh connection with `config`.
fn call(address: &str, config: ClientConfig, version: i16, body: RequestKind) -> ResponseKind {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let connection = Connection::connect(address, config)
            .await
            .expect("a TLS connection");
        connection.call(version, body).await.expect("an answer")
    })
}

fn cluster_acl(principal: &'static str, operation: i8, name: &'static str) -> AclCreation {
    AclCreation::default()
        .with_resource_type(4) // CLUSTER
        .with_resource_name(name.into())
        .with_resource_pattern_type(3) // LITERAL
        .with_principal(principal.into())
        .with_host("*".into())
        .with_operation(operation)
        .with_permission_type(3) // ALLOW
}

#[test]
fn a_cluster_action_acl_lets_a_broker_forward_and_survives_a_restart() {
    const BROKER: &str = "User:CN=broker,O=kraftwerk";
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "test-ca");
    let keystore = ca.issue("controller", "/O=kraftwerk/CN=controller");
    let broker = ca.issue("broker", "/O=kraftwerk/CN=broker");
    let mut quorum = QuorumBuilder::standalone()
        .mtls_with_authorizer(&keystore, &ca.cert, CONTROLLER)
        .property("metadata.log.max.record.bytes.between.snapshots", 1)
        .format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&quorum.ids(), ELECTION);
    wait_for(ELECTION, "a first commit", || {
        quorum.node(leader).high_watermark().filter(|hw| *hw > 0)
    });
    let address = quorum.node(leader).address();
    let as_broker = || pki::client_config(Some(&broker), &ca.cert);
    let as_controller = || pki::client_config(Some(&keystore), &ca.cert);
    assert_eq!(
        envelope_code(&address, as_broker()),
        CLUSTER_AUTHORIZATION_FAILED
    );

    let create =
        |creations| RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(creations));
    match call(
        &address,
        as_controller(),
        3,
        create(vec![
            cluster_acl(BROKER, 9, "kafka-cluster"), // CLUSTER_ACTION
            cluster_acl(BROKER, 9, "not-the-cluster"),
        ]),
    ) {
        ResponseKind::CreateAcls(r) => {
            let codes: Vec<i16> = r.results.iter().map(|x| x.error_code).collect();
            assert_eq!(codes, [0, INVALID_REQUEST]);
        }
        other => panic!("{other:?}"),
    }
    // Answered once committed, and published before the answer.
    assert_eq!(envelope_code(&address, as_broker()), 0);
    match call(
        &address,
        as_broker(),
        3,
        create(vec![cluster_acl(BROKER, 2, "kafka-cluster")]), // ALL
    ) {
        ResponseKind::CreateAcls(r) => {
            assert_eq!(r.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED)
        }
        other => panic!("{other:?}"),
    }
    let describe = RequestKind::DescribeAcls(
        DescribeAclsRequest::default()
            .with_resource_type_filter(1) // ANY
            .with_resource_name_filter(None)
            .with_pattern_type_filter(1)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1),
    );
    match call(&address, as_controller(), 3, describe) {
        ResponseKind::DescribeAcls(r) => {
            assert_eq!(r.error_code, 0);
            assert_eq!(r.resources.len(), 1, "{r:?}");
            assert_eq!(r.resources[0].acls[0].principal.as_str(), BROKER);
            assert_eq!(r.resources[0].acls[0].operation, 9);
        }
        other => panic!("{other:?}"),
    }

    // The admin client's ensure (what the operator calls): created once.
    let tls = as_controller().tls;
    let addr = address.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let created = runtime.block_on(async move {
        let mut admin = AdminClient::connect_with_tls(&addr, Duration::from_secs(5), tls)
            .await
            .expect("an admin connection");
        let mut created = Vec::new();
        for acl in kraft_controller::admin::broker_acls("User:CN=other") {
            let first = admin.ensure_acl(&acl).await;
            let second = admin.ensure_acl(&acl).await;
            created.push((first, second));
        }
        created
    });
    // CLUSTER_ACTION on the cluster, CREATE on each internal topic.
    assert_eq!(created, vec![(Ok(true), Ok(false)); 4]);

    quorum.kill(leader);
    let dump = quorum.dump_log(leader);
    assert!(dump.contains("ACCESS_CONTROL_ENTRY_RECORD(18)"), "{dump}");
    quorum.start(leader);
    quorum.wait_for_leader(&[leader], ELECTION);
    wait_for(ELECTION, "the ACL to hold after the restart", || {
        (envelope_code(&address, as_broker()) == 0).then_some(())
    });
    assert!(
        !quorum
            .node(leader)
            .output_lines("metadata image loaded from the latest snapshot")
            .is_empty(),
        "the restart did not load a snapshot"
    );
}

/// A whole UnregisterController v0 request frame payload (api 94, header
/// v2, correlation id 77) for `controller_id`.
fn unregister_controller(controller_id: i32) -> Bytes {
    use kafka_protocol::{messages::RequestHeader, protocol::Encodable};
    use kraft_controller::wire::own_messages::UnregisterControllerRequest;
    let mut frame = bytes::BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(94)
        .with_request_api_version(0)
        .with_correlation_id(77)
        .with_client_id(Some("adminclient-7".into()))
        .encode(&mut frame, 2)
        .expect("header");
    frame.extend_from_slice(
        &UnregisterControllerRequest { controller_id }
            .encode(0)
            .expect("body"),
    );
    frame.freeze()
}

// KIP-1312: UnregisterController (94) is forwardable; a broker's envelope
// of it is served by the active controller and the answer wrapped with the
// inner correlation id (response header v1).
#[test]
fn a_forwarded_unregister_controller_is_answered_inside_the_envelope() {
    use kraft_controller::wire::own_messages::UnregisterControllerResponse;
    let mut quorum = QuorumBuilder::standalone()
        .release_version("4.4-IV2")
        .format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&quorum.ids(), ELECTION);
    // Its own registration committed: the bootstrap (metadata.version
    // 4.4-IV2) is applied before it.
    wait_for(ELECTION, "the leader's own registration", || {
        let (status, body) = quorum.node(leader).http_get("/metadata")?;
        let image: serde_json::Value = serde_json::from_str(&body).ok()?;
        (status == 200 && image["controllers"][0]["id"] == leader).then_some(())
    });
    let address = quorum.node(leader).address();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let answers: Vec<(i16, UnregisterControllerResponse)> = runtime.block_on(async move {
        let connection = Connection::connect(&address, ClientConfig::default())
            .await
            .expect("a connection");
        let mut answers = Vec::new();
        for id in [9, leader] {
            let envelope = wrap(unregister_controller(id), "User:alice");
            let ResponseKind::Envelope(r) = connection.call(0, envelope).await.expect("answer")
            else {
                panic!("not an envelope answer");
            };
            let data = r.response_data.expect("the inner answer");
            assert_eq!(&data[..5], &[0, 0, 0, 77, 0], "correlation id, no tags");
            let inner = UnregisterControllerResponse::decode(&data[5..], 0).expect("decodes");
            answers.push((r.error_code, inner));
        }
        answers
    });
    assert_eq!(answers[0].0, 0);
    assert_eq!(answers[0].1.error_code, 136, "CONTROLLER_ID_NOT_REGISTERED");
    assert_eq!(
        answers[0].1.error_message.as_deref(),
        Some("Controller ID 9 is not currently registered.")
    );
    assert_eq!(answers[1].0, 0);
    assert_eq!(answers[1].1.error_code, INVALID_REQUEST);
    assert_eq!(
        answers[1].1.error_message.as_deref(),
        Some("Controller cannot unregister itself while it is active.")
    );
    quorum.node(leader).assert_alive();
}
