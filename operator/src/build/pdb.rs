//! The PodDisruptionBudget: voluntary evictions (node drains) may take down
//! at most as many controllers as the live voter set can lose and keep a
//! majority. Pure.

use k8s_openapi::{
    api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec},
    apimachinery::pkg::{apis::meta::v1::LabelSelector, util::intstr::IntOrString},
};

use super::child_meta;
use crate::validate::ValidatedQuorum;

/// `maxUnavailable` for `voters` voters: ⌊(n−1)/2⌋, the failures a Raft
/// majority tolerates (0 for one voter: a single controller is never evicted
/// voluntarily, since that would stop the quorum).
pub fn max_unavailable(voters: i32) -> i32 {
    (voters.max(1) - 1) / 2
}

/// Builds the PDB (same name as the KraftQuorum).
pub fn build_pdb(q: &ValidatedQuorum) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: child_meta(q, &q.name),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(max_unavailable(q.live_voters))),
            selector: Some(LabelSelector {
                match_labels: Some(q.selector_labels()),
                match_expressions: None,
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    }
}
