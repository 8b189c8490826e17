//! ACLs through the admin client: Kafka's `Admin.describeAcls` and
//! `Admin.createAcls`, as `kafka-acls --bootstrap-controller` uses them,
//! reduced to what the operator needs (ALLOW ACLs on LITERAL resources from
//! any host: the brokers' set, [`broker_acls`]). CreateAcls goes to the active controller: a NOT_CONTROLLER
//! answer moves the connection there (DescribeCluster) and asks again.

use kafka_protocol::{
    ResponseError,
    messages::{
        ApiKey, CreateAclsRequest, DescribeAclsRequest, RequestKind, ResponseKind,
        create_acls_request::AclCreation,
    },
    protocol::StrBytes,
};

use super::{AdminClient, AdminError, MAX_REDIRECTS};
use crate::acl::{CLUSTER_NAME, WILDCARD, operation, pattern_type, permission, resource_type};

/// One `ALLOW principal operation` ACL on one LITERAL resource from any host:
/// the shape of every ACL the operator keeps (Kafka's `AclBinding` with
/// `PatternType.LITERAL`, host `*`, permission ALLOW).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowAcl {
    /// `ResourceType` code (`crate::acl::resource_type`).
    pub resource_type: i8,
    /// The resource's name (`kafka-cluster` for the CLUSTER).
    pub resource_name: String,
    /// The principal, `User:NAME`.
    pub principal: String,
    /// `AclOperation` code (`crate::acl::operation`).
    pub operation: i8,
}

impl AllowAcl {
    /// `ALLOW principal operation` on the CLUSTER.
    pub fn cluster(principal: &str, operation: i8) -> Self {
        Self {
            resource_type: resource_type::CLUSTER,
            resource_name: CLUSTER_NAME.to_owned(),
            principal: principal.to_owned(),
            operation,
        }
    }

    /// `ALLOW principal operation` on the topic named `topic` (LITERAL).
    pub fn topic(principal: &str, topic: &str, operation: i8) -> Self {
        Self {
            resource_type: resource_type::TOPIC,
            resource_name: topic.to_owned(),
            principal: principal.to_owned(),
            operation,
        }
    }
}

/// The internal topics a Kafka broker creates under its own principal
/// (CreateTopics, not forwarded in an Envelope) the first time they are
/// needed: consumer offsets, transactions, share group state (Kafka's
/// `Topic.GROUP_METADATA_TOPIC_NAME`, `TRANSACTION_STATE_TOPIC_NAME`,
/// `SHARE_GROUP_STATE_TOPIC_NAME`).
pub const BROKER_INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// What a Kafka broker's principal needs on a controller quorum that is not
/// a super user: CLUSTER_ACTION on the cluster (registration, heartbeats,
/// the metadata fetch, Envelope, AlterPartition, AllocateProducerIds) and
/// CREATE on each of [`BROKER_INTERNAL_TOPICS`] (without it no consumer
/// group or transaction works: the broker's CreateTopics is refused
/// TOPIC_AUTHORIZATION_FAILED). Kafka's brokers are usually `super.users`;
/// this is the least that lets them work.
pub fn broker_acls(principal: &str) -> Vec<AllowAcl> {
    let mut acls = vec![AllowAcl::cluster(principal, operation::CLUSTER_ACTION)];
    acls.extend(
        BROKER_INTERNAL_TOPICS
            .iter()
            .map(|t| AllowAcl::topic(principal, t, operation::CREATE)),
    );
    acls
}

impl AdminClient {
    /// Whether `acl` is stored (DescribeAcls, answered from the committed
    /// ACLs of the controller connected to). Errors: [`AdminError`] (e.g.
    /// CLUSTER_AUTHORIZATION_FAILED without DESCRIBE, SECURITY_DISABLED
    /// without an authorizer).
    pub async fn has_acl(&mut self, acl: &AllowAcl) -> Result<bool, AdminError> {
        let version = self.version(ApiKey::DescribeAcls)?;
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(acl.resource_type)
            .with_resource_name_filter(Some(StrBytes::from_string(acl.resource_name.clone())))
            .with_pattern_type_filter(pattern_type::LITERAL)
            .with_principal_filter(Some(StrBytes::from_string(acl.principal.clone())))
            .with_host_filter(Some(StrBytes::from_static_str(WILDCARD)))
            .with_operation(acl.operation)
            .with_permission_type(permission::ALLOW);
        let ResponseKind::DescribeAcls(r) = self
            .conn
            .call(version, RequestKind::DescribeAcls(request))
            .await?
        else {
            return Err(AdminError::Protocol(
                "DescribeAcls answered with another api".into(),
            ));
        };
        if let Some(e) = AdminError::from_code(r.error_code, r.error_message.as_ref()) {
            return Err(e);
        }
        Ok(r.resources.iter().any(|res| !res.acls.is_empty()))
    }

    /// Stores `acl` (CreateAcls, answered by the active controller once
    /// committed; an ACL that exists already is a success). Errors:
    /// [`AdminError`] of the creation's result.
    pub async fn create_acl(&mut self, acl: &AllowAcl) -> Result<(), AdminError> {
        let creation = AclCreation::default()
            .with_resource_type(acl.resource_type)
            .with_resource_name(StrBytes::from_string(acl.resource_name.clone()))
            .with_resource_pattern_type(pattern_type::LITERAL)
            .with_principal(StrBytes::from_string(acl.principal.clone()))
            .with_host(StrBytes::from_static_str(WILDCARD))
            .with_operation(acl.operation)
            .with_permission_type(permission::ALLOW);
        let not_controller = ResponseError::NotController.code();
        let mut last = None;
        for _ in 0..=MAX_REDIRECTS {
            let version = self.version(ApiKey::CreateAcls)?;
            let request = CreateAclsRequest::default().with_creations(vec![creation.clone()]);
            let ResponseKind::CreateAcls(r) = self
                .conn
                .call(version, RequestKind::CreateAcls(request))
                .await?
            else {
                return Err(AdminError::Protocol(
                    "CreateAcls answered with another api".into(),
                ));
            };
            let Some(result) = r.results.first() else {
                return Err(AdminError::Protocol(
                    "CreateAcls answered without a result".into(),
                ));
            };
            match AdminError::from_code(result.error_code, result.error_message.as_ref()) {
                None => return Ok(()),
                Some(e) if e.code() == Some(not_controller) => {
                    last = Some(e);
                    self.follow_active_controller().await?;
                }
                Some(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| AdminError::Protocol("no CreateAcls answer".into())))
    }

    /// [`Self::has_acl`], then [`Self::create_acl`] when it is missing:
    /// `true` when this call created it.
    ///
    /// Errors: [`AdminError`].
    pub async fn ensure_acl(&mut self, acl: &AllowAcl) -> Result<bool, AdminError> {
        if self.has_acl(acl).await? {
            return Ok(false);
        }
        self.create_acl(acl).await?;
        Ok(true)
    }
}
