//! Per-resource authorization: what is dispatched, what is refused, and the
//! merged answer, with topic ACLs as a tenant would have them.

use std::sync::Arc;

use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
    DescribeConfigsRequest, IncrementalAlterConfigsRequest, RequestHeader,
    create_partitions_request, create_topics_request, create_topics_response,
    delete_topics_request, describe_configs_request, incremental_alter_configs_request,
};

use super::*;
use crate::{
    acl::{AclSet, SharedAcls, StandardAcl, operation, pattern_type, permission, resource_type},
    config::security::AuthorizerSettings,
};

const TENANT: &str = "User:CN=tenant";

/// An authorizer (deny when no ACL is found) with `acls` for [`TENANT`]:
/// `(operation, resource type, pattern type, name)`, all ALLOW from any host.
fn authorizer(acls: &[(i8, i8, i8, &str)]) -> Authorizer {
    let shared = Arc::new(SharedAcls::default());
    let mut set = AclSet::new();
    for (i, (op, rt, pt, name)) in acls.iter().enumerate() {
        set.insert(
            Uuid::from_u128(i as u128 + 1),
            StandardAcl {
                resource_type: *rt,
                resource_name: (*name).into(),
                pattern_type: *pt,
                principal: TENANT.into(),
                host: "*".into(),
                operation: *op,
                permission_type: permission::ALLOW,
            },
        );
    }
    shared.publish(&set);
    Authorizer::with_acls(
        AuthorizerSettings {
            enabled: true,
            super_users: vec!["User:CN=admin".into()],
            allow_everyone_if_no_acl_found: false,
        },
        shared,
    )
}

fn decoded(api_key: ApiKey, api_version: i16, body: RequestKind) -> DecodedRequest {
    DecodedRequest {
        header: RequestHeader::default(),
        api_key: api_key.into(),
        api_version,
        body: body.into(),
    }
}

fn create_topics(names: &[&str]) -> DecodedRequest {
    let topics = names
        .iter()
        .map(|n| {
            create_topics_request::CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string((*n).to_owned())))
        })
        .collect();
    decoded(
        ApiKey::CreateTopics,
        7,
        RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(topics)),
    )
}

fn created(name: &str) -> create_topics_response::CreatableTopicResult {
    create_topics_response::CreatableTopicResult::default()
        .with_name(TopicName(StrBytes::from_string(name.to_owned())))
        .with_num_partitions(3)
        .with_replication_factor(3)
        .with_configs(Some(vec![
            create_topics_response::CreatableTopicConfigs::default()
                .with_name(StrBytes::from_static_str("cleanup.policy")),
        ]))
}

const TEAM_PREFIX: (i8, i8, i8, &str) = (
    operation::CREATE,
    resource_type::TOPIC,
    pattern_type::PREFIXED,
    "team-",
);

#[test]
fn without_an_authorizer_a_request_is_dispatched_untouched() {
    let r = vet(&Authorizer::default(), TENANT, "h", create_topics(&["a"]));
    assert!(matches!(r, Vetting::Untouched(d) if d.api_key == ApiKey::CreateTopics));
}

#[test]
fn create_topics_passes_the_topics_a_prefixed_acl_allows_and_refuses_the_others() {
    let a = authorizer(&[TEAM_PREFIX]);
    let Vetting::Split(Some(request), refused) =
        vet(&a, TENANT, "h", create_topics(&["team-a", "other"]))
    else {
        panic!("a split with something to dispatch");
    };
    let crate::wire::Request::Kafka(RequestKind::CreateTopics(r)) = &request.body else {
        panic!("{request:?}");
    };
    let names: Vec<&str> = r.topics.iter().map(|t| t.name.0.as_str()).collect();
    assert_eq!(names, ["team-a"]);
    assert_eq!(refused.count(), 1);
    let answer = refused.answer(Some(ResponseKind::CreateTopics(
        CreateTopicsResponse::default().with_topics(vec![created("team-a")]),
    )));
    let ResponseKind::CreateTopics(answer) = answer else {
        panic!("{answer:?}");
    };
    let [ok, denied] = &answer.topics[..] else {
        panic!("{answer:?}");
    };
    // Created, but without DESCRIBE_CONFIGS on it: no configs in the answer.
    assert_eq!(
        (ok.error_code, ok.topic_config_error_code, ok.num_partitions),
        (0, TOPIC_AUTHORIZATION_FAILED, -1)
    );
    assert_eq!(ok.configs.as_deref().map(<[_]>::len), Some(0));
    assert_eq!(
        (denied.name.0.as_str(), denied.error_code),
        ("other", TOPIC_AUTHORIZATION_FAILED)
    );
    assert_eq!(
        denied.error_message.as_deref(),
        Some("Authorization failed.")
    );
}

#[test]
fn create_topics_with_describe_configs_keeps_the_configs_and_cluster_create_allows_every_topic() {
    let a = authorizer(&[
        TEAM_PREFIX,
        (
            operation::DESCRIBE_CONFIGS,
            resource_type::TOPIC,
            pattern_type::LITERAL,
            "team-a",
        ),
    ]);
    let Vetting::Split(Some(_), refused) = vet(&a, TENANT, "h", create_topics(&["team-a"])) else {
        panic!("dispatched");
    };
    let answer = refused.answer(Some(ResponseKind::CreateTopics(
        CreateTopicsResponse::default().with_topics(vec![created("team-a")]),
    )));
    let ResponseKind::CreateTopics(answer) = answer else {
        panic!("{answer:?}");
    };
    assert_eq!(answer.topics[0].num_partitions, 3);
    assert_eq!(answer.topics[0].topic_config_error_code, 0);

    let cluster = authorizer(&[(
        operation::CREATE,
        resource_type::CLUSTER,
        pattern_type::LITERAL,
        acl::CLUSTER_NAME,
    )]);
    let Vetting::Split(Some(request), refused) =
        vet(&cluster, TENANT, "h", create_topics(&["x", "y"]))
    else {
        panic!("dispatched");
    };
    assert_eq!(refused.count(), 0);
    assert!(
        matches!(&request.body, crate::wire::Request::Kafka(RequestKind::CreateTopics(r)) if r.topics.len() == 2)
    );
}

#[test]
fn a_request_with_nothing_allowed_is_answered_without_dispatching_and_names_each_item() {
    let a = authorizer(&[]);
    let Vetting::Split(None, refused) = vet(&a, TENANT, "h", create_topics(&["a", "b"])) else {
        panic!("nothing to dispatch");
    };
    let ResponseKind::CreateTopics(answer) = refused.answer(None) else {
        panic!("create topics");
    };
    let names: Vec<(&str, i16)> = answer
        .topics
        .iter()
        .map(|t| (t.name.0.as_str(), t.error_code))
        .collect();
    assert_eq!(
        names,
        [
            ("a", TOPIC_AUTHORIZATION_FAILED),
            ("b", TOPIC_AUTHORIZATION_FAILED)
        ]
    );
    // A super user passes everything.
    let Vetting::Split(Some(_), refused) = vet(&a, "User:CN=admin", "h", create_topics(&["a"]))
    else {
        panic!("dispatched");
    };
    assert_eq!(refused.count(), 0);
}

#[test]
fn a_name_given_twice_goes_to_the_controller_which_answers_invalid_request() {
    let a = authorizer(&[]);
    let Vetting::Split(Some(request), refused) =
        vet(&a, TENANT, "h", create_topics(&["d", "d", "x"]))
    else {
        panic!("the duplicate is dispatched");
    };
    assert!(
        matches!(&request.body, crate::wire::Request::Kafka(RequestKind::CreateTopics(r)) if r.topics.len() == 2)
    );
    assert_eq!(refused.count(), 1);
    assert!(!refused.granted(), "nothing was authorized");
    let Vetting::Split(Some(_), refused) = vet(&a, "User:CN=admin", "h", create_topics(&["d"]))
    else {
        panic!("dispatched");
    };
    assert!(refused.granted());
}

#[test]
fn delete_topics_by_name_follows_topic_acls_and_by_id_needs_delete_on_the_cluster() {
    let a = authorizer(&[(
        operation::DELETE,
        resource_type::TOPIC,
        pattern_type::PREFIXED,
        "team-",
    )]);
    let id = Uuid::from_u128(42);
    let request = decoded(
        ApiKey::DeleteTopics,
        6,
        RequestKind::DeleteTopics(DeleteTopicsRequest::default().with_topics(vec![
            delete_topics_request::DeleteTopicState::default()
                .with_name(Some(TopicName("team-a".into()))),
            delete_topics_request::DeleteTopicState::default()
                .with_name(Some(TopicName("other".into()))),
            delete_topics_request::DeleteTopicState::default().with_topic_id(id),
        ])),
    );
    let Vetting::Split(Some(request), refused) = vet(&a, TENANT, "h", request) else {
        panic!("dispatched");
    };
    assert!(
        matches!(&request.body, crate::wire::Request::Kafka(RequestKind::DeleteTopics(r)) if r.topics.len() == 1)
    );
    let ResponseKind::DeleteTopics(answer) = refused.answer(Some(ResponseKind::DeleteTopics(
        DeleteTopicsResponse::default(),
    ))) else {
        panic!("delete topics");
    };
    let refused: Vec<(Option<&str>, Uuid, i16)> = answer
        .responses
        .iter()
        .map(|r| {
            (
                r.name.as_ref().map(|n| n.0.as_str()),
                r.topic_id,
                r.error_code,
            )
        })
        .collect();
    assert_eq!(
        refused,
        [
            (Some("other"), Uuid::nil(), TOPIC_AUTHORIZATION_FAILED),
            (None, id, TOPIC_AUTHORIZATION_FAILED)
        ]
    );
}

#[test]
fn create_partitions_needs_alter_on_the_topic_not_on_the_cluster() {
    let request = || {
        decoded(
            ApiKey::CreatePartitions,
            3,
            RequestKind::CreatePartitions(CreatePartitionsRequest::default().with_topics(vec![
                create_partitions_request::CreatePartitionsTopic::default()
                    .with_name(TopicName("t".into()))
                    .with_count(6),
            ])),
        )
    };
    let cluster = authorizer(&[(
        operation::ALTER,
        resource_type::CLUSTER,
        pattern_type::LITERAL,
        acl::CLUSTER_NAME,
    )]);
    assert!(
        matches!(vet(&cluster, TENANT, "h", request()), Vetting::Split(None, r) if r.count() == 1)
    );
    let topic = authorizer(&[(
        operation::ALTER,
        resource_type::TOPIC,
        pattern_type::LITERAL,
        "t",
    )]);
    assert!(
        matches!(vet(&topic, TENANT, "h", request()), Vetting::Split(Some(_), r) if r.count() == 0)
    );
}

#[test]
fn config_resources_are_checked_on_the_cluster_for_brokers_and_on_the_topic_for_topics() {
    let a = authorizer(&[
        (
            operation::ALTER_CONFIGS,
            resource_type::TOPIC,
            pattern_type::LITERAL,
            "t",
        ),
        (
            operation::DESCRIBE_CONFIGS,
            resource_type::TOPIC,
            pattern_type::LITERAL,
            "t",
        ),
    ]);
    let alter = decoded(
        ApiKey::IncrementalAlterConfigs,
        1,
        RequestKind::IncrementalAlterConfigs(
            IncrementalAlterConfigsRequest::default().with_resources(vec![
                incremental_alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(config_type::TOPIC)
                    .with_resource_name(StrBytes::from_static_str("t")),
                incremental_alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(config_type::BROKER)
                    .with_resource_name(StrBytes::from_static_str("1")),
                incremental_alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(config_type::TOPIC)
                    .with_resource_name(StrBytes::from_static_str("u")),
            ]),
        ),
    );
    let Vetting::Split(Some(request), refused) = vet(&a, TENANT, "h", alter) else {
        panic!("dispatched");
    };
    assert!(
        matches!(&request.body, crate::wire::Request::Kafka(RequestKind::IncrementalAlterConfigs(r)) if r.resources.len() == 1)
    );
    let ResponseKind::IncrementalAlterConfigs(answer) = refused.answer(Some(
        ResponseKind::IncrementalAlterConfigs(IncrementalAlterConfigsResponse::default()),
    )) else {
        panic!("incremental alter configs");
    };
    let codes: Vec<(&str, i16)> = answer
        .responses
        .iter()
        .map(|r| (r.resource_name.as_str(), r.error_code))
        .collect();
    assert_eq!(
        codes,
        [
            ("1", CLUSTER_AUTHORIZATION_FAILED),
            ("u", TOPIC_AUTHORIZATION_FAILED)
        ]
    );

    let describe = decoded(
        ApiKey::DescribeConfigs,
        4,
        RequestKind::DescribeConfigs(DescribeConfigsRequest::default().with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(config_type::TOPIC)
                .with_resource_name(StrBytes::from_static_str("t")),
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(config_type::BROKER)
                .with_resource_name(StrBytes::from_static_str("1")),
        ])),
    );
    let Vetting::Split(Some(_), refused) = vet(&a, TENANT, "h", describe) else {
        panic!("dispatched");
    };
    let ResponseKind::DescribeConfigs(answer) = refused.answer(None) else {
        panic!("describe configs");
    };
    assert_eq!(answer.results.len(), 1);
    assert_eq!(answer.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(
        answer.results[0].error_message.as_deref(),
        Some("Cluster authorization failed.")
    );
}
