//! `spec.adopt` and `status.adoptionPhase` of a `KraftQuorum` (issue 22): a
//! quorum created over the volumes of an existing static quorum
//! (`controller.quorum.voters`, kraft.version 0) takes it over as it is and
//! migrates it to a dynamic quorum (KIP-853, KAFKA-16538): UpdateFeatures
//! `kraft.version=1`, then one rolling restart onto
//! `controller.quorum.bootstrap.servers`. docs/decisions.md D15 has the design.
//!
//! Owns the API types and the CEL rules the API server enforces on them. It
//! must not do I/O or hold reconcile logic (`controller::adopt` does).

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// One voter of the static quorum being adopted: the pod of ordinal
/// `nodeId` mounts its volume.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AdoptVoter {
    /// `node.id` of the voter (in its `meta.properties`), = the pod ordinal.
    #[schemars(range(min = 0, max = 8))]
    pub node_id: i32,
    /// `directory.id` in the voter's `meta.properties` (Kafka's base64 uuid
    /// text): after the kraft.version upgrade, the voter set must carry it.
    pub directory_id: String,
}

/// `spec.adopt`: the static quorum whose volumes this KraftQuorum takes over.
/// Set at creation, never changed (CEL). The volumes are never formatted:
/// the init container runs `kraft-controller format --expect-formatted`,
/// which stops a pod whose volume holds no `meta.properties` or another
/// cluster id or node id, and writes nothing.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[x_kube(
    validation = Rule::new("size(self.voters) >= 1 && size(self.voters) <= 9").message("adopt.voters must hold 1 to 9 voters"),
    validation = Rule::new("self.voters.all(v, v.nodeId < size(self.voters) && self.voters.exists_one(w, w.nodeId == v.nodeId))").message("adopt.voters must have the node ids 0 to n-1, each once (node id = pod ordinal)"),
    validation = Rule::new("size(self.clusterId) == 22").message("adopt.clusterId must be a kafka uuid: 22 characters of url-safe base64")
)]
#[serde(rename_all = "camelCase")]
pub struct AdoptSpec {
    /// `cluster.id` in the volumes' `meta.properties`.
    pub cluster_id: String,
    /// The static voters (`controller.quorum.voters` of the old quorum).
    #[schemars(length(min = 1, max = 9))]
    pub voters: Vec<AdoptVoter>,
}

/// Where the adoption of a static quorum stands (`status.adoptionPhase`).
#[derive(
    Clone, Copy, Debug, Deserialize, Serialize, schemars::JsonSchema, PartialEq, Eq, PartialOrd, Ord,
)]
pub enum AdoptionPhase {
    /// The pods run the static quorum as it was (`controller.quorum.voters`);
    /// the operator sends UpdateFeatures `kraft.version=1` once every voter
    /// is caught up. No membership change or restart meanwhile.
    StaticQuorum,
    /// kraft.version 1 is committed; the pods are restarted one at a time
    /// (the planner's quorum-aware row 7) onto
    /// `controller.quorum.bootstrap.servers`.
    RollingToBootstrapServers,
    /// Every pod runs with bootstrap servers: managed as any other quorum.
    Adopted,
}

impl AdoptionPhase {
    /// The phase's name, as in status.
    pub fn as_str(self) -> &'static str {
        match self {
            AdoptionPhase::StaticQuorum => "StaticQuorum",
            AdoptionPhase::RollingToBootstrapServers => "RollingToBootstrapServers",
            AdoptionPhase::Adopted => "Adopted",
        }
    }
}
