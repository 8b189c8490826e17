//! Process test of per-resource authorization (issue 17): a real
//! `kraft-controller` over mTLS with Kafka's StandardAuthorizer, a tenant
//! whose only ACL is CREATE on the topics prefixed `team-` (as Kafka's
//! `kafka-acls --resource-pattern-type prefixed` writes it). Its CreateTopics,
//! direct or forwarded in a broker's Envelope, gets past authorization for
//! `team-a` and TOPIC_AUTHORIZATION_FAILED for the other topic in the same
//! request; its DeleteTopics of a topic it has no ACL for likewise. Before,
//! the whole request was refused on CLUSTER and answered with no topics.

mod support;

use std::{net::IpAddr, time::Duration};

use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateTopicsRequest, DeleteTopicsRequest, RequestKind, ResponseKind,
    TopicName, create_acls_request::AclCreation, create_topics_request,
    create_topics_response::CreatableTopicResult, delete_topics_request,
};
use kraft_controller::{
    server::envelope,
    wire::{self, client::Connection},
};
use support::{QuorumBuilder, pki, wait_for};

const ELECTION: Duration = Duration::from_secs(30);
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const CONTROLLER: &str = "User:CN=controller,O=kraftwerk";
const TENANT: &str = "User:CN=tenant,O=kraftwerk";
const BROKER: &str = "User:CN=broker,O=kraftwerk";

fn acl(
    principal: &'static str,
    resource_type: i8,
    pattern: i8,
    name: &'static str,
    op: i8,
) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(name.into())
        .with_resource_pattern_type(pattern)
        .with_principal(principal.into())
        .with_host("*".into())
        .with_operation(op)
        .with_permission_type(3) // ALLOW
}

fn create_topics(names: &[&'static str]) -> RequestKind {
    RequestKind::CreateTopics(
        CreateTopicsRequest::default()
            .with_timeout_ms(5_000)
            .with_topics(
                names
                    .iter()
                    .map(|n| {
                        create_topics_request::CreatableTopic::default()
                            .with_name(TopicName((*n).into()))
                            .with_num_partitions(1)
                            .with_replication_factor(1)
                    })
                    .collect(),
            ),
    )
}

/// `(name, error code)` of each topic of a CreateTopics answer, sorted.
fn outcome(topics: &[CreatableTopicResult]) -> Vec<(String, i16)> {
    let mut v: Vec<(String, i16)> = topics
        .iter()
        .map(|t| (t.name.0.to_string(), t.error_code))
        .collect();
    v.sort();
    v
}

fn assert_split(topics: &[CreatableTopicResult]) {
    let o = outcome(topics);
    assert_eq!(o.len(), 2, "both topics answered: {o:?}");
    assert_eq!(o[0].0, "other");
    assert_eq!(o[0].1, TOPIC_AUTHORIZATION_FAILED, "{o:?}");
    assert_eq!(o[1].0, "team-a");
    assert!(
        ![TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED].contains(&o[1].1),
        "team-a passed authorization (no broker registered, so it is not created): {o:?}"
    );
}

#[test]
fn a_tenant_with_a_prefixed_topic_acl_acts_on_its_topics_only_directly_and_forwarded() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "test-ca");
    let keystore = ca.issue("controller", "/O=kraftwerk/CN=controller");
    let tenant = ca.issue("tenant", "/O=kraftwerk/CN=tenant");
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let connect = |identity| {
            let config = pki::client_config(Some(identity), &ca.cert);
            let address = address.clone();
            async move {
                Connection::connect(&address, config)
                    .await
                    .expect("a TLS connection")
            }
        };
        let admin = connect(&keystore).await;
        let created = admin
            .call(
                3,
                RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(vec![
                    acl(TENANT, 2, 4, "team-", 5),         // TOPIC, PREFIXED, CREATE
                    acl(BROKER, 4, 3, "kafka-cluster", 9), // CLUSTER, LITERAL, CLUSTER_ACTION
                ])),
            )
            .await
            .expect("CreateAcls answered");
        match created {
            ResponseKind::CreateAcls(r) => {
                let codes: Vec<i16> = r.results.iter().map(|x| x.error_code).collect();
                assert_eq!(codes, [0, 0]);
            }
            other => panic!("{other:?}"),
        }

        let as_tenant = connect(&tenant).await;
        match as_tenant
            .call(7, create_topics(&["team-a", "other"]))
            .await
            .expect("CreateTopics answered")
        {
            ResponseKind::CreateTopics(r) => assert_split(&r.topics),
            other => panic!("{other:?}"),
        }
        match as_tenant
            .call(
                6,
                RequestKind::DeleteTopics(DeleteTopicsRequest::default().with_topics(vec![
                    delete_topics_request::DeleteTopicState::default()
                        .with_name(Some(TopicName("other".into()))),
                ])),
            )
            .await
            .expect("DeleteTopics answered")
        {
            ResponseKind::DeleteTopics(r) => {
                let codes: Vec<i16> = r.responses.iter().map(|x| x.error_code).collect();
                assert_eq!(codes, [TOPIC_AUTHORIZATION_FAILED]);
            }
            other => panic!("{other:?}"),
        }

        // The same CreateTopics forwarded by a broker for the tenant.
        let inner = wire::encode_request(
            ApiKey::CreateTopics,
            7,
            77,
            Some("adminclient-1"),
            &create_topics(&["team-a", "other"]),
        )
        .expect("encodes");
        let client: IpAddr = [192, 0, 2, 7].into();
        let outer = envelope::wrap_request(inner, TENANT, client).expect("wraps");
        let as_broker = connect(&broker).await;
        match as_broker
            .call(0, RequestKind::Envelope(outer))
            .await
            .expect("Envelope answered")
        {
            ResponseKind::Envelope(r) => {
                assert_eq!(r.error_code, 0);
                let data = r.response_data.expect("the inner answer");
                let (_, inner) =
                    wire::decode_response(ApiKey::CreateTopics, 7, data).expect("decodes");
                match inner {
                    ResponseKind::CreateTopics(r) => assert_split(&r.topics),
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        }
    });
}
