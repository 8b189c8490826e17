//! Kafka's ACLs on the controller: the stored entries (Kafka's
//! `StandardAcl`), filters (`AclBindingFilter`), and the decision of Kafka's
//! `StandardAuthorizer` (`StandardAuthorizerData.authorize`):
//!
//! 1. a super user is allowed everything;
//! 2. the ACLs that match the resource are those of its resource type whose
//!    pattern is LITERAL with the resource's name or `*`, or PREFIXED with a
//!    prefix of the name;
//! 3. among them, those of the principal (or `User:*`) and the host (or `*`,
//!    or a CIDR block holding it, [`cidr`], Kafka 4.4's `CidrUtils.isInRange`):
//!    a DENY of the operation (or ALL) denies; else an ALLOW of the
//!    operation, of ALL, or of an operation that implies it (DESCRIBE is
//!    implied by READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by
//!    ALTER_CONFIGS) allows;
//! 4. nothing allowed: denied, unless no ACL matched the resource at all
//!    and `allow.everyone.if.no.acl.found=true`.
//!
//! The committed ACLs are published to the connection layer as an immutable
//! [`AclSet`] behind an [`Arc`] swap ([`SharedAcls`]): the metadata listener
//! replaces it when the image's ACLs change; each request reads the current
//! one. A decision is linear in the number of ACLs (Kafka indexes them by
//! resource; a controller holds few). Until a restarted node has replayed
//! its log (or snapshot) the published set is empty, so only super users
//! pass: Kafka's authorizer answers AUTHORIZER_NOT_READY then instead.
//! [`control`] answers CreateAcls/DeleteAcls/DescribeAcls. It owns the
//! meaning of ACLs; it must not know about connections or the log.

pub mod cidr;
pub mod control;
pub mod requests;

use std::{
    collections::BTreeMap,
    sync::{Arc, RwLock},
};

use uuid::Uuid;

use crate::metadata::records::AccessControlEntryRecord;

/// Kafka's `ResourceType` codes.
pub mod resource_type {
    /// UNKNOWN.
    pub const UNKNOWN: i8 = 0;
    /// ANY (filters only).
    pub const ANY: i8 = 1;
    /// TOPIC.
    pub const TOPIC: i8 = 2;
    /// GROUP.
    pub const GROUP: i8 = 3;
    /// CLUSTER (one resource, named [`super::CLUSTER_NAME`]).
    pub const CLUSTER: i8 = 4;
    /// USER (the highest code).
    pub const USER: i8 = 7;
}

/// Kafka's `PatternType` codes.
pub mod pattern_type {
    /// UNKNOWN.
    pub const UNKNOWN: i8 = 0;
    /// ANY (filters only).
    pub const ANY: i8 = 1;
    /// MATCH (filters only: literal, wildcard or prefix matches of a name).
    pub const MATCH: i8 = 2;
    /// LITERAL.
    pub const LITERAL: i8 = 3;
    /// PREFIXED.
    pub const PREFIXED: i8 = 4;
}

/// Kafka's `AclOperation` codes.
pub mod operation {
    /// UNKNOWN.
    pub const UNKNOWN: i8 = 0;
    /// ANY (filters only).
    pub const ANY: i8 = 1;
    /// ALL.
    pub const ALL: i8 = 2;
    /// READ.
    pub const READ: i8 = 3;
    /// WRITE.
    pub const WRITE: i8 = 4;
    /// CREATE.
    pub const CREATE: i8 = 5;
    /// DELETE.
    pub const DELETE: i8 = 6;
    /// ALTER.
    pub const ALTER: i8 = 7;
    /// DESCRIBE.
    pub const DESCRIBE: i8 = 8;
    /// CLUSTER_ACTION.
    pub const CLUSTER_ACTION: i8 = 9;
    /// DESCRIBE_CONFIGS.
    pub const DESCRIBE_CONFIGS: i8 = 10;
    /// ALTER_CONFIGS.
    pub const ALTER_CONFIGS: i8 = 11;
    /// TWO_PHASE_COMMIT (the highest code).
    pub const TWO_PHASE_COMMIT: i8 = 15;
}

/// Kafka's `AclPermissionType` codes.
pub mod permission {
    /// UNKNOWN.
    pub const UNKNOWN: i8 = 0;
    /// ANY (filters only).
    pub const ANY: i8 = 1;
    /// DENY.
    pub const DENY: i8 = 2;
    /// ALLOW.
    pub const ALLOW: i8 = 3;
}

/// The name of the CLUSTER resource (Kafka's `CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The wildcard resource name, principal name and host.
pub const WILDCARD: &str = "*";

/// One stored ACL (Kafka's `StandardAcl`); codes as in the modules above.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StandardAcl {
    /// `ResourceType` code.
    pub resource_type: i8,
    /// Resource name or prefix.
    pub resource_name: String,
    /// LITERAL or PREFIXED.
    pub pattern_type: i8,
    /// `Type:name`.
    pub principal: String,
    /// Host or `*`.
    pub host: String,
    /// `AclOperation` code.
    pub operation: i8,
    /// DENY or ALLOW.
    pub permission_type: i8,
}

impl StandardAcl {
    /// The record storing this ACL under `id`.
    pub fn to_record(&self, id: Uuid) -> AccessControlEntryRecord {
        AccessControlEntryRecord {
            id,
            resource_type: self.resource_type,
            resource_name: self.resource_name.clone(),
            pattern_type: self.pattern_type,
            principal: self.principal.clone(),
            host: self.host.clone(),
            operation: self.operation,
            permission_type: self.permission_type,
        }
    }

    /// The ACL a record stores.
    pub fn from_record(r: &AccessControlEntryRecord) -> Self {
        Self {
            resource_type: r.resource_type,
            resource_name: r.resource_name.clone(),
            pattern_type: r.pattern_type,
            principal: r.principal.clone(),
            host: r.host.clone(),
            operation: r.operation,
            permission_type: r.permission_type,
        }
    }

    /// Whether this ACL applies to resource `name` of `resource_type`
    /// (step 2 of the module doc).
    fn matches_resource(&self, resource_type: i8, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                pattern_type::LITERAL => {
                    self.resource_name == name || self.resource_name == WILDCARD
                }
                pattern_type::PREFIXED => name.starts_with(&self.resource_name),
                _ => false,
            }
    }

    /// Whether this ACL's operation covers `op` (DENY: exactly or ALL;
    /// ALLOW: also the implied operations).
    fn covers(&self, op: i8) -> bool {
        if self.operation == op || self.operation == operation::ALL {
            return true;
        }
        self.permission_type == permission::ALLOW
            && match op {
                operation::DESCRIBE => matches!(
                    self.operation,
                    operation::READ | operation::WRITE | operation::DELETE | operation::ALTER
                ),
                operation::DESCRIBE_CONFIGS => self.operation == operation::ALTER_CONFIGS,
                _ => false,
            }
    }
}

/// Kafka's `AclBindingFilter`: `None` strings and the ANY codes match
/// anything; pattern MATCH matches what would apply to the named resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    /// `ResourceType` code or ANY.
    pub resource_type: i8,
    /// Resource name, or any.
    pub resource_name: Option<String>,
    /// `PatternType` code, ANY or MATCH.
    pub pattern_type: i8,
    /// Principal, or any.
    pub principal: Option<String>,
    /// Host, or any.
    pub host: Option<String>,
    /// `AclOperation` code or ANY.
    pub operation: i8,
    /// `AclPermissionType` code or ANY.
    pub permission_type: i8,
}

impl AclFilter {
    /// Whether the filter has an UNKNOWN code (Kafka's `isUnknown`): such a
    /// filter is refused with INVALID_REQUEST.
    pub fn is_unknown(&self) -> bool {
        self.resource_type == resource_type::UNKNOWN
            || self.pattern_type == pattern_type::UNKNOWN
            || self.operation == operation::UNKNOWN
            || self.permission_type == permission::UNKNOWN
    }

    /// Whether `acl` matches (Kafka's `AclBindingFilter.matches`).
    pub fn matches(&self, acl: &StandardAcl) -> bool {
        let code = |want: i8, any: i8, have: i8| want == any || want == have;
        let text = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        let pattern = match self.pattern_type {
            pattern_type::ANY => text(&self.resource_name, &acl.resource_name),
            pattern_type::MATCH => match &self.resource_name {
                None => true,
                Some(name) => match acl.pattern_type {
                    pattern_type::LITERAL => {
                        acl.resource_name == *name || acl.resource_name == WILDCARD
                    }
                    pattern_type::PREFIXED => name.starts_with(&acl.resource_name),
                    _ => false,
                },
            },
            p => p == acl.pattern_type && text(&self.resource_name, &acl.resource_name),
        };
        code(self.resource_type, resource_type::ANY, acl.resource_type)
            && pattern
            && text(&self.principal, &acl.principal)
            && text(&self.host, &acl.host)
            && code(self.operation, operation::ANY, acl.operation)
            && code(self.permission_type, permission::ANY, acl.permission_type)
    }
}

/// The committed ACLs by id (what the image holds and the authorizer reads).
pub type AclSet = BTreeMap<Uuid, StandardAcl>;

/// Whether `acl_principal` is the wildcard of `principal`'s type
/// (`User:*` for `User:alice`; Kafka's `matchingPrincipals`).
fn is_wildcard_of(acl_principal: &str, principal: &str) -> bool {
    match (acl_principal.split_once(':'), principal.split_once(':')) {
        (Some((kind, WILDCARD)), Some((their_kind, _))) => kind == their_kind,
        _ => false,
    }
}

/// The text Kafka compares with an ACL's host: Java's
/// `InetAddress.getHostAddress()`: an IPv4 address (also when it arrived
/// v4-mapped on a dual-stack listener) dotted, an IPv6 address as eight
/// uncompressed lower-case hex groups (`0:0:0:0:0:0:0:1`).
pub fn host_text(address: std::net::IpAddr) -> String {
    match address.to_canonical() {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => v6
            .segments()
            .iter()
            .map(|g| format!("{g:x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// One request for an operation on a resource (Kafka's `Action` with the
/// request context's principal and client address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action<'a> {
    /// `Type:name`.
    pub principal: &'a str,
    /// The client's address, as text (`10.0.0.7`, `::1`).
    pub host: &'a str,
    /// `AclOperation` code.
    pub operation: i8,
    /// `ResourceType` code.
    pub resource_type: i8,
    /// The resource's name.
    pub resource_name: &'a str,
}

/// The StandardAuthorizer's decision (see the module doc) with `acls`,
/// `super.users` and `allow.everyone.if.no.acl.found`.
pub fn authorize(
    acls: &AclSet,
    super_users: &[String],
    allow_everyone_if_no_acl_found: bool,
    action: &Action<'_>,
) -> bool {
    let Action {
        principal,
        host,
        operation: op,
        resource_type,
        resource_name,
    } = *action;
    if super_users.iter().any(|u| u == principal) {
        return true;
    }
    let mut resource_has_acls = false;
    let mut allowed = false;
    for acl in acls.values() {
        if !acl.matches_resource(resource_type, resource_name) {
            continue;
        }
        resource_has_acls = true;
        let who = acl.principal == principal || is_wildcard_of(&acl.principal, principal);
        let from = acl.host == host || acl.host == WILDCARD || cidr::contains(&acl.host, host);
        if !(who && from && acl.covers(op)) {
            continue;
        }
        match acl.permission_type {
            permission::DENY => return false,
            permission::ALLOW => allowed = true,
            _ => {}
        }
    }
    allowed || (!resource_has_acls && allow_everyone_if_no_acl_found)
}

/// What the metadata listener needs for ACLs: where to publish the
/// committed ones, and whether an authorizer is configured (without one,
/// ACL requests are SECURITY_DISABLED).
#[derive(Debug, Clone, Default)]
pub struct AclsConfig {
    /// Read by the connection layer's authorizer.
    pub shared: Arc<SharedAcls>,
    /// `authorizer.class.name` is set.
    pub authorizer_enabled: bool,
}

/// The committed ACLs, published for the connection layer: replaced whole
/// (an [`Arc`] swap under a lock held only to clone or store the pointer).
#[derive(Debug, Default)]
pub struct SharedAcls(RwLock<Arc<AclSet>>);

impl SharedAcls {
    /// The current ACLs.
    pub fn current(&self) -> Arc<AclSet> {
        match self.0.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Publishes `acls` if they differ from the current ones.
    pub fn publish(&self, acls: &AclSet) {
        if *self.current() == *acls {
            return;
        }
        let next = Arc::new(acls.clone());
        match self.0.write() {
            Ok(mut guard) => *guard = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(
        principal: &str,
        host: &str,
        op: i8,
        perm: i8,
        rt: i8,
        name: &str,
        pattern: i8,
    ) -> StandardAcl {
        StandardAcl {
            resource_type: rt,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: principal.into(),
            host: host.into(),
            operation: op,
            permission_type: perm,
        }
    }

    fn set(acls: &[StandardAcl]) -> AclSet {
        acls.iter()
            .enumerate()
            .map(|(i, a)| (Uuid::from_u128(i as u128 + 1), a.clone()))
            .collect()
    }

    fn cluster(acls: &AclSet, principal: &str, host: &str, op: i8, everyone: bool) -> bool {
        authorize(
            acls,
            &["User:admin".to_owned()],
            everyone,
            &Action {
                principal,
                host,
                operation: op,
                resource_type: resource_type::CLUSTER,
                resource_name: CLUSTER_NAME,
            },
        )
    }

    use operation::*;
    use permission::*;
    use resource_type::{CLUSTER, TOPIC};

    #[test]
    fn super_users_pass_and_an_allow_acl_grants_only_its_principal_and_operation() {
        let acls = set(&[acl(
            "User:broker",
            "*",
            CLUSTER_ACTION,
            ALLOW,
            CLUSTER,
            CLUSTER_NAME,
            pattern_type::LITERAL,
        )]);
        assert!(cluster(&acls, "User:admin", "10.0.0.1", ALTER, false));
        assert!(cluster(
            &acls,
            "User:broker",
            "10.0.0.1",
            CLUSTER_ACTION,
            false
        ));
        assert!(!cluster(&acls, "User:broker", "10.0.0.1", ALTER, false));
        assert!(!cluster(
            &acls,
            "User:other",
            "10.0.0.1",
            CLUSTER_ACTION,
            false
        ));
        // An ACL exists for the resource: allow.everyone does not apply.
        assert!(!cluster(
            &acls,
            "User:other",
            "10.0.0.1",
            CLUSTER_ACTION,
            true
        ));
        // No ACL for the resource at all: allow.everyone decides.
        assert!(cluster(&AclSet::new(), "User:other", "h", ALTER, true));
        assert!(!cluster(&AclSet::new(), "User:other", "h", ALTER, false));
    }

    #[test]
    fn a_cidr_host_covers_the_addresses_of_its_block() {
        // Kafka 4.4's StandardAuthorizerData: host equal, `*`, or
        // CidrUtils.isInRange(client address, ACL host).
        let lit = pattern_type::LITERAL;
        let acls = set(&[acl(
            "User:b",
            "10.1.0.0/16",
            ALTER,
            ALLOW,
            CLUSTER,
            CLUSTER_NAME,
            lit,
        )]);
        assert!(cluster(&acls, "User:b", "10.1.200.3", ALTER, false));
        assert!(!cluster(&acls, "User:b", "10.2.0.1", ALTER, false));
        assert!(!cluster(&acls, "User:b", "0:0:0:0:0:0:0:1", ALTER, false));
    }

    // StandardAuthorizerTest: DENY wins over ALLOW; wildcards of principal
    // and host; ALL; DESCRIBE implied by READ/WRITE/DELETE/ALTER.
    #[test]
    fn deny_beats_allow_and_wildcards_and_implied_operations_apply() {
        let lit = pattern_type::LITERAL;
        let acls = set(&[
            acl("User:*", "*", ALL, ALLOW, CLUSTER, CLUSTER_NAME, lit),
            acl("User:bad", "*", ALTER, DENY, CLUSTER, CLUSTER_NAME, lit),
            acl(
                "User:b",
                "10.0.0.9",
                DESCRIBE,
                DENY,
                CLUSTER,
                CLUSTER_NAME,
                lit,
            ),
        ]);
        assert!(cluster(&acls, "User:anyone", "h", ALTER, false));
        assert!(!cluster(&acls, "User:bad", "h", ALTER, false));
        assert!(cluster(&acls, "User:bad", "h", DESCRIBE, false));
        assert!(!cluster(&acls, "User:b", "10.0.0.9", DESCRIBE, false));
        assert!(cluster(&acls, "User:b", "10.0.0.8", DESCRIBE, false));
        let alter = set(&[acl("User:a", "*", ALTER, ALLOW, CLUSTER, CLUSTER_NAME, lit)]);
        assert!(cluster(&alter, "User:a", "h", DESCRIBE, false));
        assert!(!cluster(&alter, "User:a", "h", CLUSTER_ACTION, false));
        // A DENY of ALTER does not deny DESCRIBE (implication is for ALLOW).
        let deny = set(&[
            acl("User:a", "*", DESCRIBE, ALLOW, CLUSTER, CLUSTER_NAME, lit),
            acl("User:a", "*", ALTER, DENY, CLUSTER, CLUSTER_NAME, lit),
        ]);
        assert!(cluster(&deny, "User:a", "h", DESCRIBE, false));
    }

    #[test]
    fn literal_wildcard_and_prefixed_patterns_match_resources() {
        let acls = set(&[
            acl(
                "User:a",
                "*",
                READ,
                ALLOW,
                TOPIC,
                "orders-",
                pattern_type::PREFIXED,
            ),
            acl(
                "User:b",
                "*",
                READ,
                ALLOW,
                TOPIC,
                "*",
                pattern_type::LITERAL,
            ),
            acl(
                "User:c",
                "*",
                READ,
                ALLOW,
                TOPIC,
                "x",
                pattern_type::LITERAL,
            ),
        ]);
        let topic = |principal: &str, resource_name: &str| {
            let action = Action {
                principal,
                host: "h",
                operation: READ,
                resource_type: TOPIC,
                resource_name,
            };
            authorize(&acls, &[], false, &action)
        };
        assert!(topic("User:a", "orders-eu"));
        assert!(!topic("User:a", "order"));
        assert!(topic("User:b", "anything"));
        assert!(topic("User:c", "x"));
        assert!(!topic("User:c", "xy"));
        // A TOPIC ACL says nothing about the CLUSTER.
        assert!(cluster(&acls, "User:a", "h", READ, true));
    }

    #[test]
    fn filters_match_as_kafkas_acl_binding_filter() {
        let stored = acl(
            "User:a",
            "*",
            CLUSTER_ACTION,
            ALLOW,
            CLUSTER,
            CLUSTER_NAME,
            pattern_type::LITERAL,
        );
        let any = AclFilter {
            resource_type: resource_type::ANY,
            resource_name: None,
            pattern_type: pattern_type::ANY,
            principal: None,
            host: None,
            operation: operation::ANY,
            permission_type: permission::ANY,
        };
        assert!(any.matches(&stored));
        assert!(!any.is_unknown());
        let other = AclFilter {
            principal: Some("User:b".into()),
            ..any.clone()
        };
        assert!(!other.matches(&stored));
        let matching = AclFilter {
            resource_type: CLUSTER,
            resource_name: Some(CLUSTER_NAME.into()),
            pattern_type: pattern_type::MATCH,
            ..any.clone()
        };
        assert!(matching.matches(&stored));
        let prefixed = AclFilter {
            pattern_type: pattern_type::PREFIXED,
            ..any.clone()
        };
        assert!(!prefixed.matches(&stored));
        assert!(
            AclFilter {
                operation: operation::UNKNOWN,
                ..any
            }
            .is_unknown()
        );
    }

    #[test]
    fn hosts_are_written_as_java_does_and_the_wildcard_principal_is_per_type() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().expect("ip");
        assert_eq!(host_text(ip("10.0.0.7")), "10.0.0.7");
        assert_eq!(host_text(ip("::ffff:10.0.0.7")), "10.0.0.7");
        assert_eq!(host_text(ip("::1")), "0:0:0:0:0:0:0:1");
        assert_eq!(host_text(ip("fe80::1:abcd")), "fe80:0:0:0:0:0:1:abcd");
        let acls = set(&[acl(
            "Group:*",
            "*",
            ALL,
            ALLOW,
            CLUSTER,
            CLUSTER_NAME,
            pattern_type::LITERAL,
        )]);
        assert!(cluster(&acls, "Group:x", "h", ALTER, false));
        assert!(!cluster(&acls, "User:x", "h", ALTER, false));
    }

    #[test]
    fn published_acls_are_seen_by_readers() {
        let shared = SharedAcls::default();
        assert!(shared.current().is_empty());
        let acls = set(&[acl(
            "User:a",
            "*",
            ALL,
            ALLOW,
            CLUSTER,
            CLUSTER_NAME,
            pattern_type::LITERAL,
        )]);
        let before = shared.current();
        shared.publish(&acls);
        assert_eq!(*shared.current(), acls);
        assert!(before.is_empty(), "a reader's snapshot does not change");
    }
}
