//! The build step: one Kubernetes object per file, each a pure function
//! `build_<kind>(&ValidatedQuorum) -> K` (STYLE, "Operator in steps").
//!
//! Owns the shape of every child the operator applies. It must not read the
//! cluster, the clock or the quorum; everything it needs is in
//! [`ValidatedQuorum`](crate::validate::ValidatedQuorum).

pub mod backup;
pub mod brokers;
pub mod certificate;
pub mod configmap;
pub mod networkpolicy;
pub mod pdb;
pub mod recovery_job;
pub mod service;
pub mod statefulset;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::validate::ValidatedQuorum;

/// Metadata of a child named `name`: namespace, labels and the owner reference.
pub(crate) fn child_meta(q: &ValidatedQuorum, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(q.namespace.clone()),
        labels: Some(q.labels()),
        owner_references: Some(vec![q.owner.clone()]),
        ..ObjectMeta::default()
    }
}

/// FNV-1a 64-bit hash, hex: stable across Rust releases and operator
/// versions (unlike `DefaultHasher`), so an operator upgrade never changes a
/// pod template by itself.
pub(crate) fn fnv1a_hex(data: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod adopt_tests;
#[cfg(test)]
mod backup_tests;
#[cfg(test)]
mod tests;
