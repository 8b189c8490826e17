//! ACLs through the admin client: Kafka's `Admin.describeAcls` and
//! `Admin.createAcls`, as `kafka-acls --bootstrap-controller` uses them,
//! reduced to what the operator needs (one ALLOW ACL on the CLUSTER for one
//! principal). CreateAcls goes to the active controller: a NOT_CONTROLLER
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

impl AdminClient {
    /// Whether `ALLOW principal operation` on the CLUSTER from any host is
    /// stored (DescribeAcls, answered from the committed ACLs of the
    /// controller connected to). `operation` is an `AclOperation` code
    /// (`crate::acl::operation`). Errors: [`AdminError`] (e.g.
    /// CLUSTER_AUTHORIZATION_FAILED without DESCRIBE, SECURITY_DISABLED
    /// without an authorizer).
    pub async fn has_cluster_acl(
        &mut self,
        principal: &str,
        operation: i8,
    ) -> Result<bool, AdminError> {
        let version = self.version(ApiKey::DescribeAcls)?;
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(resource_type::CLUSTER)
            .with_resource_name_filter(Some(StrBytes::from_static_str(CLUSTER_NAME)))
            .with_pattern_type_filter(pattern_type::LITERAL)
            .with_principal_filter(Some(StrBytes::from_string(principal.to_owned())))
            .with_host_filter(Some(StrBytes::from_static_str(WILDCARD)))
            .with_operation(operation)
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

    /// Stores `ALLOW principal operation` on the CLUSTER from any host
    /// (CreateAcls, answered by the active controller once committed; an ACL
    /// that exists already is a success). Errors: [`AdminError`] of the
    /// creation's result.
    pub async fn create_cluster_acl(
        &mut self,
        principal: &str,
        operation: i8,
    ) -> Result<(), AdminError> {
        let creation = AclCreation::default()
            .with_resource_type(resource_type::CLUSTER)
            .with_resource_name(StrBytes::from_static_str(CLUSTER_NAME))
            .with_resource_pattern_type(pattern_type::LITERAL)
            .with_principal(StrBytes::from_string(principal.to_owned()))
            .with_host(StrBytes::from_static_str(WILDCARD))
            .with_operation(operation)
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

    /// [`Self::has_cluster_acl`], then [`Self::create_cluster_acl`] when it
    /// is missing: `true` when this call created it.
    ///
    /// Errors: [`AdminError`].
    pub async fn ensure_cluster_acl(
        &mut self,
        principal: &str,
        operation: i8,
    ) -> Result<bool, AdminError> {
        if self.has_cluster_acl(principal, operation).await? {
            return Ok(false);
        }
        self.create_cluster_acl(principal, operation).await?;
        Ok(true)
    }
}

/// The `AclOperation` code brokers need on the cluster.
pub const BROKER_OPERATION: i8 = operation::CLUSTER_ACTION;
