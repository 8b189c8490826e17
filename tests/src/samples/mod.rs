//! Sampling a KraftQuorum's pods and controllers while a case runs, and the
//! checks on the samples afterwards (run.sh's cases 3 and 6; this replaces
//! tests/e2e/samples.py).
//!
//! [`Sampler`] ([`record`]) records, every [`INTERVAL`]: the pods (ordinal,
//! uid, ready, deleting, revision), each controller's own Raft view from its
//! `/metrics` (Kafka's raft-metrics: current leader, epoch, state, number of
//! voters), and the cluster id in each volume's `meta.properties` (the PVs
//! are hostPath directories of the local cluster, read from the host).
//! [`check_one_quorum`], [`check_roll`] and [`check_rolls`] ([`check`]) judge the samples;
//! they are pure, and their unit tests feed them made-up recordings, good
//! and bad. Must not change the quorum.

pub mod check;
pub mod record;

use std::collections::BTreeMap;

use serde::Serialize;

pub use check::{check_one_quorum, check_roll, check_rolls, leader_of};
pub use record::{INTERVAL, SCRAPE_TIMEOUT, Sampler, parse_view, recording_path, save};

/// A pod as one sample saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PodSample {
    /// `metadata.uid`.
    pub uid: String,
    /// Condition Ready True.
    pub ready: bool,
    /// Has a `deletionTimestamp`.
    pub deleting: bool,
    /// Label `controller-revision-hash` (the StatefulSet revision it runs).
    pub revision: Option<String>,
}

/// One controller's own Raft view (`kafka_server_raft_metrics_*`, Kafka's
/// `RaftMetrics`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct View {
    /// `current_leader` (-1: none known, also when the page lacks it).
    pub leader: i64,
    /// `current_epoch`.
    pub epoch: i64,
    /// The `current_state{state=…}` at 1 (`leader`, `follower`, `resigned`,
    /// …), if one is.
    pub state: Option<String>,
    /// `number_of_voters`, if the page has it.
    pub number_of_voters: Option<i64>,
}

impl View {
    /// The leader this view names: node `node` itself when it is in state
    /// `leader`, else its `current_leader` (-1: none).
    pub fn leader_for(&self, node: i64) -> i64 {
        if self.state.as_deref() == Some("leader") {
            node
        } else {
            self.leader
        }
    }
}

/// One sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    /// Wall-clock time it was taken, s since the Unix epoch.
    pub t: f64,
    /// Pods by ordinal (label `apps.kubernetes.io/pod-index`).
    pub pods: BTreeMap<i64, PodSample>,
    /// Views by ordinal (the pods, not deleting, that answered `/metrics`).
    pub views: BTreeMap<i64, View>,
    /// Cluster id in `meta.properties` by PVC name (the volumes that have
    /// one yet).
    pub volumes: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests;
