//! Authorization of requests on the controller listener, as Kafka's
//! `ControllerApis` checks them once an authorizer is configured: each api
//! needs one operation on the CLUSTER resource, and a request that is not
//! allowed is answered CLUSTER_AUTHORIZATION_FAILED by the connection layer,
//! without ever reaching the event loop (so it changes nothing).
//!
//! | api | operation |
//! |---|---|
//! | Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, UpdateRaftVoter, ControllerRegistration, BrokerRegistration, BrokerHeartbeat, AllocateProducerIds, AssignReplicasToDirs, AlterPartition, Envelope (the broker's own principal; the inner request is checked with the client's) | CLUSTER_ACTION |
//! | AddRaftVoter, RemoveRaftVoter, DescribeCluster (ALTER on a controller, not DESCRIBE as on a broker), UnregisterBroker, UnregisterController (94; Kafka 4.4.0's `ControllerApis.handleUnregisterController`), ElectLeaders, UpdateFeatures, CreateAcls, DeleteAcls | ALTER |
//! | DescribeQuorum, DescribeAcls | DESCRIBE |
//! | CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs, AlterConfigs, DescribeConfigs | each item on its own resource ([`super::resource_authz`]); the operation listed by [`required_operation`] (CREATE, DELETE, ALTER, ALTER_CONFIGS, DESCRIBE_CONFIGS on CLUSTER) only decides whether the connection counts as authorized |
//! | ApiVersions | none |
//!
//! The decision is the `StandardAuthorizer`'s ([`crate::acl::authorize`]):
//! super users, then the committed ACLs (published by the metadata listener
//! into [`SharedAcls`]) of the principal and the client's host, then
//! `allow.everyone.if.no.acl.found` when no ACL names the resource. It owns
//! that decision and the error answers; it reads a request only to give
//! each of its items the error (CreateAcls, DeleteAcls).

use std::sync::Arc;

use kafka_protocol::{
    messages::{
        AddRaftVoterResponse, ApiKey, BeginQuorumEpochResponse, ControllerRegistrationResponse,
        DescribeClusterResponse, DescribeQuorumResponse, EndQuorumEpochResponse, FetchResponse,
        FetchSnapshotResponse, RemoveRaftVoterResponse, ResponseKind, UpdateRaftVoterResponse,
        VoteResponse,
    },
    protocol::StrBytes,
};

use crate::{
    acl::{self, Action, SharedAcls},
    config::security::AuthorizerSettings,
    wire::{Api, DecodedRequest, Response, own_messages::UnregisterControllerResponse},
};

/// Kafka's `CLUSTER_AUTHORIZATION_FAILED`.
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

/// Kafka's principal of a client without a certificate (`User:ANONYMOUS`).
pub const ANONYMOUS: &str = "User:ANONYMOUS";

/// An ACL operation on the CLUSTER resource (Kafka's `AclOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CLUSTER_ACTION`: what controllers do to each other.
    ClusterAction,
    /// `ALTER`: membership changes.
    Alter,
    /// `DESCRIBE`: reading the quorum's state.
    Describe,
    /// `ALTER_CONFIGS`: dynamic configs of topics and brokers.
    AlterConfigs,
    /// `DESCRIBE_CONFIGS`: reading them.
    DescribeConfigs,
    /// `CREATE`: creating topics.
    Create,
    /// `DELETE`: deleting topics.
    Delete,
}

impl Operation {
    /// Kafka's `AclOperation` code.
    pub fn code(self) -> i8 {
        match self {
            Operation::ClusterAction => acl::operation::CLUSTER_ACTION,
            Operation::Alter => acl::operation::ALTER,
            Operation::Describe => acl::operation::DESCRIBE,
            Operation::AlterConfigs => acl::operation::ALTER_CONFIGS,
            Operation::DescribeConfigs => acl::operation::DESCRIBE_CONFIGS,
            Operation::Create => acl::operation::CREATE,
            Operation::Delete => acl::operation::DELETE,
        }
    }

    /// Kafka's name, e.g. `CLUSTER_ACTION`.
    pub fn name(self) -> &'static str {
        match self {
            Operation::ClusterAction => "CLUSTER_ACTION",
            Operation::Alter => "ALTER",
            Operation::Describe => "DESCRIBE",
            Operation::AlterConfigs => "ALTER_CONFIGS",
            Operation::DescribeConfigs => "DESCRIBE_CONFIGS",
            Operation::Create => "CREATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// The operation `api` needs (`None`: no check, ApiVersions).
pub fn required_operation(api: impl Into<Api>) -> Option<Operation> {
    let api = match api.into() {
        Api::Kafka(key) => key,
        Api::UnregisterController => return Some(Operation::Alter),
    };
    match api {
        ApiKey::Vote
        | ApiKey::BeginQuorumEpoch
        | ApiKey::EndQuorumEpoch
        | ApiKey::Fetch
        | ApiKey::FetchSnapshot
        | ApiKey::UpdateRaftVoter
        | ApiKey::ControllerRegistration
        | ApiKey::BrokerRegistration
        | ApiKey::BrokerHeartbeat
        | ApiKey::Envelope
        | ApiKey::AllocateProducerIds
        | ApiKey::AssignReplicasToDirs => Some(Operation::ClusterAction),
        ApiKey::AlterPartition => Some(Operation::ClusterAction),
        ApiKey::AddRaftVoter
        | ApiKey::RemoveRaftVoter
        | ApiKey::DescribeCluster
        | ApiKey::UnregisterBroker
        | ApiKey::CreateAcls
        | ApiKey::DeleteAcls
        | ApiKey::ElectLeaders
        | ApiKey::UpdateFeatures => Some(Operation::Alter),
        ApiKey::DescribeAcls => Some(Operation::Describe),
        // Checked item by item (`resource_authz`); the cluster operation
        // here only lifts the connection's pre-authentication frame limit.
        ApiKey::CreateTopics => Some(Operation::Create),
        ApiKey::DeleteTopics => Some(Operation::Delete),
        ApiKey::CreatePartitions => Some(Operation::Alter),
        ApiKey::DescribeQuorum => Some(Operation::Describe),
        ApiKey::IncrementalAlterConfigs | ApiKey::AlterConfigs => Some(Operation::AlterConfigs),
        ApiKey::DescribeConfigs => Some(Operation::DescribeConfigs),
        // ApiVersions, and anything else (which the event loop refuses).
        _ => None,
    }
}

/// The authorizer of one controller.
#[derive(Debug, Clone, Default)]
pub struct Authorizer {
    settings: AuthorizerSettings,
    acls: Arc<SharedAcls>,
}

impl Authorizer {
    /// An authorizer with `settings` and no ACLs; disabled settings allow
    /// everything.
    pub fn new(settings: AuthorizerSettings) -> Self {
        Self::with_acls(settings, Arc::default())
    }

    /// An authorizer with `settings` that reads the ACLs published in `acls`.
    pub fn with_acls(settings: AuthorizerSettings, acls: Arc<SharedAcls>) -> Self {
        Self { settings, acls }
    }

    /// Whether an authorizer is configured (`authorizer.class.name`).
    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// Whether `principal` (`User:NAME`) connected from `host` (the
    /// client's address as text) may send `api`: its operation on CLUSTER.
    pub fn allows(&self, principal: &str, host: &str, api: impl Into<Api>) -> bool {
        let Some(op) = required_operation(api) else {
            return true;
        };
        self.authorize(&Action {
            principal,
            host,
            operation: op.code(),
            resource_type: acl::resource_type::CLUSTER,
            resource_name: acl::CLUSTER_NAME,
        })
    }

    /// Kafka's `Authorizer.authorize` for one action (any resource); always
    /// true without an authorizer.
    pub fn authorize(&self, action: &Action<'_>) -> bool {
        !self.settings.enabled
            || acl::authorize(
                &self.acls.current(),
                &self.settings.super_users,
                self.settings.allow_everyone_if_no_acl_found,
                action,
            )
    }
}

/// The CLUSTER_AUTHORIZATION_FAILED answer to `request` from `principal`:
/// every item of a CreateAcls/DeleteAcls/DescribeAcls, the error and its
/// message for UnregisterController, else [`denied_response`].
pub fn denied_answer(request: &DecodedRequest, principal: &str) -> Option<Response> {
    let op = required_operation(request.api_key)?;
    let message = format!(
        "Principal {principal} does not have required {} on CLUSTER",
        op.name()
    );
    let key = match request.api_key {
        Api::Kafka(key) => key,
        Api::UnregisterController => {
            return Some(Response::UnregisterController(
                UnregisterControllerResponse {
                    throttle_time_ms: 0,
                    error_code: CLUSTER_AUTHORIZATION_FAILED,
                    error_message: Some(message),
                },
            ));
        }
    };
    let kafka_body = match &request.body {
        crate::wire::Request::Kafka(body) => {
            acl::control::refuse_all(body, CLUSTER_AUTHORIZATION_FAILED, &message)
        }
        _ => None,
    };
    kafka_body
        .or_else(|| denied_response(key, request.api_version, principal))
        .map(Response::Kafka)
}

/// The CLUSTER_AUTHORIZATION_FAILED answer to a request of `api` (the
/// top-level error code, and the message where the response has one);
/// `None` for an api without a check. `api_version` is the request's
/// (DescribeQuorum has a message from v2 on).
pub fn denied_response(api: ApiKey, api_version: i16, principal: &str) -> Option<ResponseKind> {
    let op = required_operation(api)?;
    let message = Some(StrBytes::from_string(format!(
        "Principal {principal} does not have required {} on CLUSTER",
        op.name()
    )));
    let code = CLUSTER_AUTHORIZATION_FAILED;
    Some(match api {
        ApiKey::Vote => ResponseKind::Vote(VoteResponse::default().with_error_code(code)),
        ApiKey::BeginQuorumEpoch => ResponseKind::BeginQuorumEpoch(
            BeginQuorumEpochResponse::default().with_error_code(code),
        ),
        ApiKey::EndQuorumEpoch => {
            ResponseKind::EndQuorumEpoch(EndQuorumEpochResponse::default().with_error_code(code))
        }
        ApiKey::Fetch => ResponseKind::Fetch(FetchResponse::default().with_error_code(code)),
        ApiKey::FetchSnapshot => {
            ResponseKind::FetchSnapshot(FetchSnapshotResponse::default().with_error_code(code))
        }
        ApiKey::UpdateRaftVoter => {
            ResponseKind::UpdateRaftVoter(UpdateRaftVoterResponse::default().with_error_code(code))
        }
        ApiKey::ControllerRegistration => ResponseKind::ControllerRegistration(
            ControllerRegistrationResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        ApiKey::AddRaftVoter => ResponseKind::AddRaftVoter(
            AddRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        ApiKey::RemoveRaftVoter => ResponseKind::RemoveRaftVoter(
            RemoveRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        ApiKey::DescribeCluster => ResponseKind::DescribeCluster(
            DescribeClusterResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        ApiKey::DescribeQuorum => ResponseKind::DescribeQuorum(
            DescribeQuorumResponse::default()
                .with_error_code(code)
                .with_error_message(if api_version >= 2 { message } else { None }),
        ),
        ApiKey::BrokerRegistration => ResponseKind::BrokerRegistration(
            kafka_protocol::messages::BrokerRegistrationResponse::default().with_error_code(code),
        ),
        ApiKey::BrokerHeartbeat => ResponseKind::BrokerHeartbeat(
            kafka_protocol::messages::BrokerHeartbeatResponse::default().with_error_code(code),
        ),
        ApiKey::Envelope => super::envelope::refused_response(code),
        ApiKey::AssignReplicasToDirs => ResponseKind::AssignReplicasToDirs(
            kafka_protocol::messages::AssignReplicasToDirsResponse::default().with_error_code(code),
        ),
        ApiKey::AllocateProducerIds => ResponseKind::AllocateProducerIds(
            kafka_protocol::messages::AllocateProducerIdsResponse::default().with_error_code(code),
        ),
        ApiKey::UnregisterBroker => ResponseKind::UnregisterBroker(
            kafka_protocol::messages::UnregisterBrokerResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        ApiKey::AlterPartition => ResponseKind::AlterPartition(
            kafka_protocol::messages::AlterPartitionResponse::default().with_error_code(code),
        ),
        ApiKey::ElectLeaders => ResponseKind::ElectLeaders(
            kafka_protocol::messages::ElectLeadersResponse::default().with_error_code(code),
        ),
        ApiKey::UpdateFeatures => ResponseKind::UpdateFeatures(
            kafka_protocol::messages::UpdateFeaturesResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        // The per-resource apis (`resource_authz`) are never refused whole.
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(super_users: &[&str], allow_everyone: bool) -> Authorizer {
        Authorizer::new(AuthorizerSettings {
            enabled: true,
            super_users: super_users.iter().map(|s| (*s).to_owned()).collect(),
            allow_everyone_if_no_acl_found: allow_everyone,
        })
    }

    #[test]
    fn without_an_authorizer_everyone_may_do_everything() {
        assert!(Authorizer::default().allows(ANONYMOUS, "h", ApiKey::RemoveRaftVoter));
    }

    #[test]
    fn with_the_standard_authorizer_only_super_users_pass_unless_everyone_is_allowed() {
        let a = on(&["User:CN=controller"], false);
        for api in [
            ApiKey::Vote,
            ApiKey::Fetch,
            ApiKey::AddRaftVoter,
            ApiKey::RemoveRaftVoter,
            ApiKey::UpdateRaftVoter,
            ApiKey::DescribeQuorum,
        ] {
            assert!(a.allows("User:CN=controller", "h", api), "{api:?}");
            assert!(!a.allows("User:CN=intruder", "h", api), "{api:?}");
            assert!(!a.allows(ANONYMOUS, "h", api), "{api:?}");
        }
        // ApiVersions needs nothing (a client must learn the versions first).
        assert!(a.allows(ANONYMOUS, "h", ApiKey::ApiVersions));
        assert!(on(&[], true).allows("User:anyone", "h", ApiKey::RemoveRaftVoter));
    }

    /// A CLUSTER_ACTION ACL lets a broker send Envelope and registrations,
    /// not ALTER; once published, readers see it.
    #[test]
    fn published_acls_grant_what_they_name() {
        let shared = Arc::new(SharedAcls::default());
        let a = Authorizer::with_acls(
            AuthorizerSettings {
                enabled: true,
                super_users: vec!["User:CN=controller".to_owned()],
                allow_everyone_if_no_acl_found: false,
            },
            shared.clone(),
        );
        assert!(!a.allows("User:CN=broker", "10.0.0.1", ApiKey::Envelope));
        let mut acls = acl::AclSet::new();
        acls.insert(
            uuid::Uuid::from_u128(1),
            acl::StandardAcl {
                resource_type: acl::resource_type::CLUSTER,
                resource_name: acl::CLUSTER_NAME.into(),
                pattern_type: acl::pattern_type::LITERAL,
                principal: "User:CN=broker".into(),
                host: "*".into(),
                operation: acl::operation::CLUSTER_ACTION,
                permission_type: acl::permission::ALLOW,
            },
        );
        shared.publish(&acls);
        for api in [
            ApiKey::Envelope,
            ApiKey::BrokerRegistration,
            ApiKey::BrokerHeartbeat,
            ApiKey::Fetch,
        ] {
            assert!(a.allows("User:CN=broker", "10.0.0.1", api), "{api:?}");
        }
        assert!(!a.allows("User:CN=broker", "10.0.0.1", ApiKey::CreateAcls));
        assert!(!a.allows("User:CN=broker", "10.0.0.1", ApiKey::DescribeQuorum));
    }

    #[test]
    fn the_operations_are_kafkas_controller_apis_ones() {
        assert_eq!(
            required_operation(ApiKey::Vote),
            Some(Operation::ClusterAction)
        );
        assert_eq!(
            required_operation(ApiKey::UpdateRaftVoter),
            Some(Operation::ClusterAction)
        );
        assert_eq!(
            required_operation(ApiKey::AddRaftVoter),
            Some(Operation::Alter)
        );
        assert_eq!(
            required_operation(ApiKey::DescribeCluster),
            Some(Operation::Alter)
        );
        assert_eq!(
            required_operation(ApiKey::DescribeQuorum),
            Some(Operation::Describe)
        );
        assert_eq!(
            required_operation(ApiKey::AllocateProducerIds),
            Some(Operation::ClusterAction)
        );
        assert_eq!(
            required_operation(ApiKey::IncrementalAlterConfigs),
            Some(Operation::AlterConfigs)
        );
        assert_eq!(required_operation(ApiKey::ApiVersions), None);
        // Kafka 4.4.0's ControllerApis.handleUnregisterController:
        // authorizeClusterOperation(request, ALTER).
        assert_eq!(
            required_operation(Api::UnregisterController),
            Some(Operation::Alter)
        );
    }

    #[test]
    fn a_denied_unregister_controller_gets_cluster_authorization_failed_with_a_message() {
        let request = DecodedRequest {
            header: Default::default(),
            api_key: Api::UnregisterController,
            api_version: 0,
            body: crate::wire::Request::UnregisterController(
                crate::wire::own_messages::UnregisterControllerRequest { controller_id: 3 },
            ),
        };
        assert!(!on(&[], false).allows("User:x", "h", Api::UnregisterController));
        match denied_answer(&request, "User:x") {
            Some(Response::UnregisterController(r)) => {
                assert_eq!(r.error_code, CLUSTER_AUTHORIZATION_FAILED);
                assert!(r.error_message.is_some_and(|m| m.contains("ALTER")));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_denied_request_gets_cluster_authorization_failed() {
        match denied_response(ApiKey::RemoveRaftVoter, 0, "User:x") {
            Some(ResponseKind::RemoveRaftVoter(r)) => {
                assert_eq!(r.error_code, CLUSTER_AUTHORIZATION_FAILED);
                assert!(r.error_message.is_some_and(|m| m.contains("ALTER")));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            denied_response(ApiKey::Fetch, 17, "User:x"),
            Some(ResponseKind::Fetch(r)) if r.error_code == CLUSTER_AUTHORIZATION_FAILED
        ));
    }
}
