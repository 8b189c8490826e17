//! CreateAcls (30), DeleteAcls (31) and DescribeAcls (29) as Kafka's
//! controller answers them (`AclApis` in front of `AclControlManager`):
//! pure functions from (ACLs, request) to (records, answer).
//!
//! - CreateAcls, per creation in order: a CLUSTER resource not named
//!   `kafka-cluster`, or an empty name, is INVALID_REQUEST (`AclApis`); then
//!   `AclControlManager.validateNewAcl`: resource type UNKNOWN/ANY, a
//!   pattern other than LITERAL/PREFIXED, operation UNKNOWN/ANY, permission
//!   other than DENY/ALLOW are INVALID_REQUEST (Kafka's messages); and a
//!   principal without `:` (which Kafka's authorizer could not parse); an
//!   empty host is INVALID_REQUEST and a CIDR host (`10.0.0.0/8`) is
//!   UNSUPPORTED_VERSION below `metadata.version` 4.4-IV1 (32) and
//!   INVALID_REQUEST when malformed (Kafka 4.4's `validateHostPattern`). An
//!   ACL that already exists (committed or appended) is a success without a
//!   record.
//! - DeleteAcls: a filter with an UNKNOWN code is INVALID_REQUEST; otherwise
//!   every ACL it matches is removed (one RemoveAccessControlEntryRecord
//!   each, none twice) and listed.
//! - DescribeAcls: the committed ACLs matching the filter, grouped by
//!   resource pattern (`DescribeAclsResponse.aclsResources`).
//!
//! It must not append or wait; `crate::acl` holds the matching rules.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::{
    ResponseError,
    messages::{
        CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
        DescribeAclsRequest, DescribeAclsResponse, RequestKind, ResponseKind,
        create_acls_response::AclCreationResult,
        delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl},
        describe_acls_response::{AclDescription, DescribeAclsResource},
    },
    protocol::StrBytes,
};
use kraft_common::errors::{INVALID_REQUEST, UNSUPPORTED_VERSION};
use uuid::Uuid;

use crate::metadata::version::MetadataVersion;

use super::{
    AclFilter, AclSet, CLUSTER_NAME, StandardAcl, cidr, operation, pattern_type, permission,
    resource_type,
};
use crate::metadata::records::remove_access_control_entry_record;

/// Kafka's `QuorumController.MAX_RECORDS_PER_USER_OP`: the most records one
/// request may append.
pub const MAX_RECORDS_PER_USER_OP: usize = 10_000;
/// Kafka's message when a request would append more (`BoundedList`).
pub const TOO_LARGE_MESSAGE: &str = "Unable to perform excessively large batch operation.";

fn s(text: impl Into<String>) -> StrBytes {
    StrBytes::from_string(text.into())
}

fn resource_type_name(code: i8) -> &'static str {
    match code {
        1 => "ANY",
        2 => "TOPIC",
        3 => "GROUP",
        4 => "CLUSTER",
        5 => "TRANSACTIONAL_ID",
        6 => "DELEGATION_TOKEN",
        7 => "USER",
        _ => "UNKNOWN",
    }
}

fn pattern_type_name(code: i8) -> &'static str {
    match code {
        1 => "ANY",
        2 => "MATCH",
        3 => "LITERAL",
        4 => "PREFIXED",
        _ => "UNKNOWN",
    }
}

fn operation_name(code: i8) -> &'static str {
    [
        "UNKNOWN",
        "ANY",
        "ALL",
        "READ",
        "WRITE",
        "CREATE",
        "DELETE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "CREATE_TOKENS",
        "DESCRIBE_TOKENS",
        "TWO_PHASE_COMMIT",
    ]
    .get(usize::try_from(code).unwrap_or(0))
    .copied()
    .unwrap_or("UNKNOWN")
}

fn permission_name(code: i8) -> &'static str {
    match code {
        1 => "ANY",
        2 => "DENY",
        3 => "ALLOW",
        _ => "UNKNOWN",
    }
}

/// Codes Kafka does not know read as UNKNOWN (its `fromCode`).
fn known(code: i8, max: i8) -> i8 {
    if (0..=max).contains(&code) { code } else { 0 }
}

/// The new ACL of one creation, or Kafka's refusal (error code, message);
/// `cidr_supported` is `MetadataVersion.isCidrAclSupported` of the cluster.
fn validate(
    c: &kafka_protocol::messages::create_acls_request::AclCreation,
    cidr_supported: bool,
) -> Result<StandardAcl, (i16, String)> {
    let invalid = |message: String| (INVALID_REQUEST, message);
    let acl = StandardAcl {
        resource_type: known(c.resource_type, resource_type::USER),
        resource_name: c.resource_name.to_string(),
        pattern_type: known(c.resource_pattern_type, pattern_type::PREFIXED),
        principal: c.principal.to_string(),
        host: c.host.to_string(),
        operation: known(c.operation, operation::TWO_PHASE_COMMIT),
        permission_type: known(c.permission_type, permission::ALLOW),
    };
    if acl.resource_type == resource_type::CLUSTER && acl.resource_name != CLUSTER_NAME {
        return Err(invalid(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        )));
    }
    if acl.resource_name.is_empty() {
        return Err(invalid("Invalid empty resource name".to_owned()));
    }
    if matches!(
        acl.resource_type,
        resource_type::UNKNOWN | resource_type::ANY
    ) {
        return Err(invalid(format!(
            "Invalid resourceType {}",
            resource_type_name(acl.resource_type)
        )));
    }
    if !matches!(
        acl.pattern_type,
        pattern_type::LITERAL | pattern_type::PREFIXED
    ) {
        return Err(invalid(format!(
            "Invalid patternType {}",
            pattern_type_name(acl.pattern_type)
        )));
    }
    if matches!(acl.operation, operation::UNKNOWN | operation::ANY) {
        return Err(invalid(format!(
            "Invalid operation {}",
            operation_name(acl.operation)
        )));
    }
    if !matches!(acl.permission_type, permission::DENY | permission::ALLOW) {
        return Err(invalid(format!(
            "Invalid permissionType {}",
            permission_name(acl.permission_type)
        )));
    }
    if !acl.principal.contains(':') {
        return Err(invalid(format!(
            "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
            acl.principal
        )));
    }
    validate_host(&acl.host, cidr_supported)?;
    Ok(acl)
}

/// Kafka 4.4's `AclControlManager.validateHostPattern`: `*` and addresses
/// pass; an empty host is INVALID_REQUEST; a CIDR block is
/// UNSUPPORTED_VERSION below 4.4-IV1 and INVALID_REQUEST when malformed.
fn validate_host(host: &str, cidr_supported: bool) -> Result<(), (i16, String)> {
    if host.is_empty() {
        return Err((
            INVALID_REQUEST,
            "Host pattern cannot be null or empty".to_owned(),
        ));
    }
    if !cidr::is_cidr(host) {
        return Ok(());
    }
    if !cidr_supported {
        return Err((
            UNSUPPORTED_VERSION,
            format!(
                "CIDR-based ACL host patterns require metadata version {} or higher.",
                MetadataVersion::IBP_4_4_IV1
            ),
        ));
    }
    cidr::validate(host).map_err(|reason| {
        (
            INVALID_REQUEST,
            format!("Invalid CIDR notation '{host}': {reason}"),
        )
    })
}

/// The active controller's ACLs, including those appended and not yet
/// committed (Kafka's timeline `idToAcl`), so the next request sees them.
#[derive(Debug, Clone, Default)]
pub struct AclControl {
    acls: AclSet,
}

impl AclControl {
    /// Starts from the committed ACLs.
    pub fn new(committed: &AclSet) -> Self {
        Self {
            acls: committed.clone(),
        }
    }

    /// The ACLs as this controller's appends leave them.
    pub fn acls(&self) -> &AclSet {
        &self.acls
    }

    /// CreateAcls: the records to append and the answer (see the module
    /// doc); `new_id` gives fresh random ids (retried while taken);
    /// `metadata_version` is the cluster's (it gates CIDR hosts).
    pub fn create(
        &mut self,
        request: &CreateAclsRequest,
        metadata_version: MetadataVersion,
        mut new_id: impl FnMut() -> Uuid,
    ) -> (Vec<Bytes>, CreateAclsResponse) {
        let policy_violation = ResponseError::PolicyViolation.code();
        if request.creations.len() > MAX_RECORDS_PER_USER_OP {
            return (Vec::new(), too_large_creations(request, policy_violation));
        }
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(request.creations.len());
        for creation in &request.creations {
            match validate(creation, metadata_version.is_cidr_acl_supported()) {
                Err((code, message)) => results.push(
                    AclCreationResult::default()
                        .with_error_code(code)
                        .with_error_message(Some(s(message))),
                ),
                Ok(acl) => {
                    if !self.acls.values().any(|a| *a == acl) {
                        let mut id = new_id();
                        while self.acls.contains_key(&id) {
                            id = new_id();
                        }
                        records.push(acl.to_record(id).encode_framed());
                        self.acls.insert(id, acl);
                    }
                    results.push(AclCreationResult::default());
                }
            }
        }
        (records, CreateAclsResponse::default().with_results(results))
    }

    /// DeleteAcls: the records to append and the answer.
    pub fn delete(&mut self, request: &DeleteAclsRequest) -> (Vec<Bytes>, DeleteAclsResponse) {
        let mut removed = BTreeSet::new();
        let mut results = Vec::with_capacity(request.filters.len());
        for f in &request.filters {
            let filter = AclFilter {
                resource_type: known(f.resource_type_filter, resource_type::USER),
                resource_name: f.resource_name_filter.as_ref().map(|n| n.to_string()),
                pattern_type: known(f.pattern_type_filter, pattern_type::PREFIXED),
                principal: f.principal_filter.as_ref().map(|n| n.to_string()),
                host: f.host_filter.as_ref().map(|n| n.to_string()),
                operation: known(f.operation, operation::TWO_PHASE_COMMIT),
                permission_type: known(f.permission_type, permission::ALLOW),
            };
            if filter.is_unknown() {
                let message = if filter.resource_type == resource_type::UNKNOWN
                    || filter.pattern_type == pattern_type::UNKNOWN
                {
                    "Unknown patternFilter."
                } else {
                    "Unknown entryFilter."
                };
                results.push(
                    DeleteAclsFilterResult::default()
                        .with_error_code(INVALID_REQUEST)
                        .with_error_message(Some(s(message))),
                );
                continue;
            }
            let mut matching = Vec::new();
            for (id, acl) in &self.acls {
                if filter.matches(acl) {
                    removed.insert(*id);
                    matching.push(
                        DeleteAclsMatchingAcl::default()
                            .with_resource_type(acl.resource_type)
                            .with_resource_name(s(acl.resource_name.clone()))
                            .with_pattern_type(acl.pattern_type)
                            .with_principal(s(acl.principal.clone()))
                            .with_host(s(acl.host.clone()))
                            .with_operation(acl.operation)
                            .with_permission_type(acl.permission_type),
                    );
                }
            }
            results.push(DeleteAclsFilterResult::default().with_matching_acls(matching));
        }
        if removed.len() > MAX_RECORDS_PER_USER_OP {
            // Nothing is removed (Kafka's delete is atomic).
            let code = ResponseError::PolicyViolation.code();
            let refused = request
                .filters
                .iter()
                .map(|_| {
                    DeleteAclsFilterResult::default()
                        .with_error_code(code)
                        .with_error_message(Some(s(TOO_LARGE_MESSAGE)))
                })
                .collect();
            return (
                Vec::new(),
                DeleteAclsResponse::default().with_filter_results(refused),
            );
        }
        let records = removed
            .iter()
            .map(|id| {
                self.acls.remove(id);
                remove_access_control_entry_record(*id)
            })
            .collect();
        (
            records,
            DeleteAclsResponse::default().with_filter_results(results),
        )
    }
}

/// Every creation refused with `code` and [`TOO_LARGE_MESSAGE`].
fn too_large_creations(request: &CreateAclsRequest, code: i16) -> CreateAclsResponse {
    CreateAclsResponse::default().with_results(
        request
            .creations
            .iter()
            .map(|_| {
                AclCreationResult::default()
                    .with_error_code(code)
                    .with_error_message(Some(s(TOO_LARGE_MESSAGE)))
            })
            .collect(),
    )
}

/// DescribeAcls over the committed `acls`.
pub fn describe(acls: &AclSet, r: &DescribeAclsRequest) -> DescribeAclsResponse {
    let filter = AclFilter {
        resource_type: known(r.resource_type_filter, resource_type::USER),
        resource_name: r.resource_name_filter.as_ref().map(|n| n.to_string()),
        pattern_type: known(r.pattern_type_filter, pattern_type::PREFIXED),
        principal: r.principal_filter.as_ref().map(|n| n.to_string()),
        host: r.host_filter.as_ref().map(|n| n.to_string()),
        operation: known(r.operation, operation::TWO_PHASE_COMMIT),
        permission_type: known(r.permission_type, permission::ALLOW),
    };
    if filter.is_unknown() {
        return DescribeAclsResponse::default()
            .with_error_code(INVALID_REQUEST)
            .with_error_message(Some(s("Filter contain UNKNOWN elements")));
    }
    let mut by_resource: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for acl in acls.values().filter(|a| filter.matches(a)) {
        by_resource
            .entry((
                acl.resource_type,
                acl.resource_name.clone(),
                acl.pattern_type,
            ))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(s(acl.principal.clone()))
                    .with_host(s(acl.host.clone()))
                    .with_operation(acl.operation)
                    .with_permission_type(acl.permission_type),
            );
    }
    DescribeAclsResponse::default().with_resources(
        by_resource
            .into_iter()
            .map(|((rt, name, pt), acls)| {
                DescribeAclsResource::default()
                    .with_resource_type(rt)
                    .with_resource_name(s(name))
                    .with_pattern_type(pt)
                    .with_acls(acls)
            })
            .collect(),
    )
}

/// The answer giving every item of an ACL `request` the error `code` (and
/// `message`): NOT_CONTROLLER, CLUSTER_AUTHORIZATION_FAILED or
/// SECURITY_DISABLED, as Kafka's `getErrorResponse`. `None` for other apis.
pub fn refuse_all(request: &RequestKind, code: i16, message: &str) -> Option<ResponseKind> {
    let message = Some(s(message));
    Some(match request {
        RequestKind::CreateAcls(r) => ResponseKind::CreateAcls(
            CreateAclsResponse::default().with_results(
                r.creations
                    .iter()
                    .map(|_| {
                        AclCreationResult::default()
                            .with_error_code(code)
                            .with_error_message(message.clone())
                    })
                    .collect(),
            ),
        ),
        RequestKind::DeleteAcls(r) => ResponseKind::DeleteAcls(
            DeleteAclsResponse::default().with_filter_results(
                r.filters
                    .iter()
                    .map(|_| {
                        DeleteAclsFilterResult::default()
                            .with_error_code(code)
                            .with_error_message(message.clone())
                    })
                    .collect(),
            ),
        ),
        RequestKind::DescribeAcls(_) => ResponseKind::DescribeAcls(
            DescribeAclsResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::{
        create_acls_request::AclCreation, delete_acls_request::DeleteAclsFilter,
    };

    use super::*;
    use crate::metadata::records::{
        ACCESS_CONTROL_ENTRY_RECORD_API_KEY, FramedRecord,
        REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY,
    };

    fn creation(principal: &str, op: i8, rt: i8, name: &str) -> AclCreation {
        AclCreation::default()
            .with_resource_type(rt)
            .with_resource_name(s(name))
            .with_resource_pattern_type(pattern_type::LITERAL)
            .with_principal(s(principal))
            .with_host(s("*"))
            .with_operation(op)
            .with_permission_type(permission::ALLOW)
    }

    /// 4.1-IV1: no CIDR hosts.
    const LEVEL_27: MetadataVersion = MetadataVersion::LATEST_PRODUCTION;

    fn ids() -> impl FnMut() -> Uuid {
        let mut n = 0u128;
        move || {
            n += 1;
            Uuid::from_u128(n)
        }
    }

    fn any_filter() -> DeleteAclsFilter {
        DeleteAclsFilter::default()
            .with_resource_type_filter(resource_type::ANY)
            .with_resource_name_filter(None)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_pattern_type_filter(pattern_type::ANY)
            .with_operation(operation::ANY)
            .with_permission_type(permission::ANY)
    }

    #[test]
    fn creating_appends_one_record_per_new_acl_and_refuses_bad_ones_with_kafkas_messages() {
        let mut control = AclControl::default();
        let request = CreateAclsRequest::default().with_creations(vec![
            creation(
                "User:broker",
                operation::CLUSTER_ACTION,
                resource_type::CLUSTER,
                CLUSTER_NAME,
            ),
            creation(
                "User:broker",
                operation::CLUSTER_ACTION,
                resource_type::CLUSTER,
                CLUSTER_NAME,
            ),
            creation("User:x", operation::ALTER, resource_type::CLUSTER, "other"),
            creation("User:x", operation::ANY, resource_type::TOPIC, "t"),
            creation("User:x", operation::READ, resource_type::ANY, "t"),
            creation("User:x", operation::READ, resource_type::TOPIC, ""),
            creation("nocolon", operation::READ, resource_type::TOPIC, "t"),
        ]);
        let (records, answer) = control.create(&request, LEVEL_27, ids());
        assert_eq!(records.len(), 1, "the duplicate adds nothing");
        let framed = FramedRecord::decode(&records[0]).expect("framed");
        assert_eq!(framed.api_key, ACCESS_CONTROL_ENTRY_RECORD_API_KEY);
        let codes: Vec<i16> = answer.results.iter().map(|r| r.error_code).collect();
        assert_eq!(codes, [0, 0, 42, 42, 42, 42, 42]);
        let messages: Vec<String> = answer.results[2..]
            .iter()
            .map(|r| r.error_message.as_ref().expect("a message").to_string())
            .collect();
        assert_eq!(
            messages[0],
            "The only valid name for the CLUSTER resource is kafka-cluster"
        );
        assert_eq!(messages[1], "Invalid operation ANY");
        assert_eq!(messages[2], "Invalid resourceType ANY");
        assert_eq!(messages[3], "Invalid empty resource name");
        // The appended ACL is seen by the next request.
        let (again, _) = control.create(
            &CreateAclsRequest::default().with_creations(vec![request.creations[0].clone()]),
            LEVEL_27,
            ids(),
        );
        assert!(again.is_empty());
    }

    #[test]
    fn deleting_removes_every_match_once_and_lists_it() {
        let mut control = AclControl::default();
        let (_, _) = control.create(
            &CreateAclsRequest::default().with_creations(vec![
                creation(
                    "User:a",
                    operation::CLUSTER_ACTION,
                    resource_type::CLUSTER,
                    CLUSTER_NAME,
                ),
                creation(
                    "User:b",
                    operation::ALTER,
                    resource_type::CLUSTER,
                    CLUSTER_NAME,
                ),
            ]),
            LEVEL_27,
            ids(),
        );
        let only_a = any_filter().with_principal_filter(Some(s("User:a")));
        let unknown = any_filter().with_operation(operation::UNKNOWN);
        let (records, answer) = control.delete(&DeleteAclsRequest::default().with_filters(vec![
            only_a.clone(),
            only_a,
            unknown,
        ]));
        assert_eq!(records.len(), 1);
        let framed = FramedRecord::decode(&records[0]).expect("framed");
        assert_eq!(framed.api_key, REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY);
        assert_eq!(answer.filter_results[0].matching_acls.len(), 1);
        assert_eq!(
            answer.filter_results[0].matching_acls[0].principal.as_str(),
            "User:a"
        );
        assert_eq!(answer.filter_results[2].error_code, INVALID_REQUEST);
        assert_eq!(control.acls().len(), 1);
        let all = describe(
            control.acls(),
            &DescribeAclsRequest::default()
                .with_resource_type_filter(resource_type::ANY)
                .with_resource_name_filter(None)
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_pattern_type_filter(pattern_type::ANY)
                .with_operation(operation::ANY)
                .with_permission_type(permission::ANY),
        );
        assert_eq!(all.resources.len(), 1);
        assert_eq!(all.resources[0].resource_name.as_str(), CLUSTER_NAME);
        assert_eq!(all.resources[0].acls[0].principal.as_str(), "User:b");
    }

    // Kafka's QuorumController.MAX_RECORDS_PER_USER_OP (B2 of the review).
    #[test]
    fn a_request_over_ten_thousand_records_is_a_policy_violation_and_appends_nothing() {
        let mut control = AclControl::default();
        let creations = (0..=MAX_RECORDS_PER_USER_OP)
            .map(|i| {
                creation(
                    "User:a",
                    operation::READ,
                    resource_type::TOPIC,
                    &format!("t{i}"),
                )
            })
            .collect();
        let (records, answer) = control.create(
            &CreateAclsRequest::default().with_creations(creations),
            LEVEL_27,
            ids(),
        );
        assert!(records.is_empty());
        assert!(control.acls().is_empty());
        assert!(answer.results.iter().all(|r| r.error_code == 44));
    }

    #[test]
    fn every_item_of_a_refused_request_gets_the_error() {
        let request = RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(vec![
            creation("User:a", operation::ALL, resource_type::CLUSTER, CLUSTER_NAME);
            3
        ]));
        match refuse_all(&request, 41, "not the controller") {
            Some(ResponseKind::CreateAcls(r)) => {
                assert_eq!(r.results.len(), 3);
                assert!(r.results.iter().all(|x| x.error_code == 41));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cidr_hosts_are_refused_below_4_4_iv1_and_checked_from_it() {
        // Kafka 4.4.0's AclControlManager.validateHostPattern (javap).
        let with_host = |host: &str| {
            CreateAclsRequest::default().with_creations(vec![
                creation(
                    "User:a",
                    operation::ALTER,
                    resource_type::CLUSTER,
                    CLUSTER_NAME,
                )
                .with_host(s(host)),
            ])
        };
        let answer = |control: &mut AclControl, host: &str, level: i16| {
            let version = MetadataVersion::from_feature_level(level).expect("known level");
            let (records, answer) = control.create(&with_host(host), version, ids());
            let r = &answer.results[0];
            (
                records.len(),
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        };
        let mut control = AclControl::default();
        assert_eq!(
            answer(&mut control, "10.0.0.0/8", 31),
            (
                0,
                UNSUPPORTED_VERSION,
                Some(
                    "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."
                        .into()
                )
            )
        );
        let (n, code, message) = answer(&mut control, "10.0.0.0/33", 32);
        assert_eq!((n, code), (0, INVALID_REQUEST));
        let message = message.expect("a message");
        assert!(
            message.starts_with("Invalid CIDR notation '10.0.0.0/33': "),
            "{message}"
        );
        assert_eq!(
            answer(&mut control, "", 33),
            (
                0,
                INVALID_REQUEST,
                Some("Host pattern cannot be null or empty".into())
            )
        );
        // Success: error 0, the default (empty) message.
        assert_eq!(
            answer(&mut control, "10.0.0.0/8", 32),
            (1, 0, Some(String::new()))
        );
        assert_eq!(
            answer(&mut control, "10.0.0.7", 27),
            (1, 0, Some(String::new()))
        );
    }
}
