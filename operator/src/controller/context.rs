//! [`Context`]: the state the reconcile passes share (the clients, the
//! clock, the UUID source) and what the controller remembers per object
//! between passes (the error backoff, the last idle status write).

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
    time::Duration,
};

use k8s_openapi::jiff::Timestamp;
use kube::{
    Client,
    runtime::events::{Recorder, Reporter},
};
use std::sync::Arc;
use uuid::Uuid;

use crate::{metrics::Metrics, quorum::QuorumClient};

/// Shared state of the reconciler.
pub struct Context<Q> {
    /// Kubernetes client.
    pub client: Client,
    /// Admin RPCs to the controllers.
    pub quorum: Q,
    /// Publishes Events on the KraftQuorum.
    pub recorder: Recorder,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Cluster DNS domain for pod names (`cluster.local`).
    pub cluster_domain: String,
    /// Source of fresh UUIDs (cluster and directory ids).
    pub new_uuid: Mutex<Box<dyn FnMut() -> Uuid + Send>>,
    /// The clock (for `pendingChange.since` and condition times).
    pub clock: Box<dyn Fn() -> Timestamp + Send + Sync>,
    /// Where the operator runs (namespace, pod labels), for the quorums'
    /// NetworkPolicies; `None`: the policies do not name the operator (it
    /// runs outside the cluster, or was not told).
    pub operator_peer: Option<crate::validate::OperatorPeer>,
    /// Consecutive failures per object, for the backoff.
    failures: Mutex<HashMap<String, u32>>,
    /// Per object, the start of the last pass that wrote its status at
    /// step 8 and acted on nothing (plan `Steady`, `Wait` or `Refuse`; see
    /// [`super::status::differs_only_in_offsets`]); removed by a step-8 write of
    /// a pass that acts, and with the object.
    idle_status_written: Mutex<HashMap<String, Timestamp>>,
}

impl<Q> std::fmt::Debug for Context<Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("cluster_domain", &self.cluster_domain)
            .finish_non_exhaustive()
    }
}

impl<Q: QuorumClient> Context<Q> {
    /// A context with random UUIDs and the system clock.
    pub fn new(client: Client, quorum: Q, reporter: Reporter, cluster_domain: &str) -> Self {
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            quorum,
            metrics: Arc::new(Metrics::new()),
            cluster_domain: cluster_domain.to_string(),
            new_uuid: Mutex::new(Box::new(Uuid::new_v4)),
            clock: Box::new(Timestamp::now),
            operator_peer: None,
            failures: Mutex::new(HashMap::new()),
            idle_status_written: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn fresh_uuid_source(&self) -> MutexGuard<'_, Box<dyn FnMut() -> Uuid + Send>> {
        locked(&self.new_uuid)
    }

    pub(super) fn failures(&self) -> MutexGuard<'_, HashMap<String, u32>> {
        locked(&self.failures)
    }

    pub(super) fn idle_status_written(&self) -> MutexGuard<'_, HashMap<String, Timestamp>> {
        locked(&self.idle_status_written)
    }

    /// While a pass over `key` that acted on nothing wrote its status less
    /// than `interval` before `now`: the time left until then. `None` when
    /// none did, or the clock went back past that write.
    pub(super) fn idle_status_fresh_for(
        &self,
        key: &str,
        now: Timestamp,
        interval: Duration,
    ) -> Option<Duration> {
        let written = *self.idle_status_written().get(key)?;
        let elapsed_ms = now.as_millisecond().checked_sub(written.as_millisecond())?;
        let elapsed = Duration::from_millis(u64::try_from(elapsed_ms).ok()?);
        interval.checked_sub(elapsed).filter(|left| !left.is_zero())
    }
}

/// `mutex`, locked; a poisoned one too (a pass that panicked while holding
/// it left a map or a source that is still whole).
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
