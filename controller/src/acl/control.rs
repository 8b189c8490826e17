//! CreateAcls (30), DeleteAcls (31) and DescribeAcls (29) as Kafka's
//! controller answers them (`AclApis` in front of `AclControlManager`):
//! pure functions from (ACLs, request) to (records, answer).
//!
//! - CreateAcls, per creation in order: a CLUSTER resource not named
//!   `kafka-cluster`, or an empty name, is INVALID_REQUEST (`AclApis`); then
//!   `AclControlManager.validateNewAcl`: resource type UNKNOWN/ANY, a
//!   pattern other than LITERAL/PREFIXED, operation UNKNOWN/ANY, permission
//!   other than DENY/ALLOW are INVALID_REQUEST (Kafka's messages); and a
//!   principal without `:` (which Kafka's authorizer could not parse). An
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
    messages::{
        CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
        DescribeAclsRequest, DescribeAclsResponse, RequestKind, ResponseKind,
        create_acls_response::AclCreationResult,
        delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl},
        describe_acls_response::{AclDescription, DescribeAclsResource},
    },
    protocol::StrBytes,
};
use kraft_common::errors::INVALID_REQUEST;
use uuid::Uuid;

use super::{
    AclFilter, AclSet, CLUSTER_NAME, StandardAcl, operation, pattern_type, permission,
    resource_type,
};
use crate::metadata::records::remove_access_control_entry_record;

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

/// The new ACL of one creation, or Kafka's refusal message.
fn validate(
    c: &kafka_protocol::messages::create_acls_request::AclCreation,
) -> Result<StandardAcl, String> {
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
        return Err(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        ));
    }
    if acl.resource_name.is_empty() {
        return Err("Invalid empty resource name".to_owned());
    }
    if matches!(
        acl.resource_type,
        resource_type::UNKNOWN | resource_type::ANY
    ) {
        return Err(format!(
            "Invalid resourceType {}",
            resource_type_name(acl.resource_type)
        ));
    }
    if !matches!(
        acl.pattern_type,
        pattern_type::LITERAL | pattern_type::PREFIXED
    ) {
        return Err(format!(
            "Invalid patternType {}",
            pattern_type_name(acl.pattern_type)
        ));
    }
    if matches!(acl.operation, operation::UNKNOWN | operation::ANY) {
        return Err(format!(
            "Invalid operation {}",
            operation_name(acl.operation)
        ));
    }
    if !matches!(acl.permission_type, permission::DENY | permission::ALLOW) {
        return Err(format!(
            "Invalid permissionType {}",
            permission_name(acl.permission_type)
        ));
    }
    if !acl.principal.contains(':') {
        return Err(format!(
            "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
            acl.principal
        ));
    }
    Ok(acl)
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
    /// doc); `new_id` gives fresh random ids (retried while taken).
    pub fn create(
        &mut self,
        request: &CreateAclsRequest,
        mut new_id: impl FnMut() -> Uuid,
    ) -> (Vec<Bytes>, CreateAclsResponse) {
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(request.creations.len());
        for creation in &request.creations {
            match validate(creation) {
                Err(message) => results.push(
                    AclCreationResult::default()
                        .with_error_code(INVALID_REQUEST)
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
        let (records, answer) = control.create(&request, ids());
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
}
