//! Prometheus metrics of the reconciler (`prometheus-client`): reconciles,
//! failures by error kind, reconcile duration, and membership actions taken.
//! Owns the registry and its text encoding; it must not serve HTTP (the
//! `run` module does) or hold reconcile logic.

use std::{sync::Mutex, time::Instant};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

/// Label set of `kraft_operator_reconcile_failures_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// The error kind (`kube`, `finalizer`, `invalid_spec`, …).
    pub kind: String,
}

/// Label set of `kraft_operator_actions_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// The planner action (`add_voter`, `remove_voter`, `scale`, `restart`, `refuse`).
    pub action: String,
}

/// The operator's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    reconciles: Counter,
    failures: Family<FailureLabels, Counter>,
    duration: Histogram,
    actions: Family<ActionLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric registered (names get the
    /// `kraft_operator_` prefix).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("kraft_operator");
        let reconciles = Counter::default();
        let failures = Family::<FailureLabels, Counter>::default();
        // 10 ms .. ~41 s
        let duration = Histogram::new(exponential_buckets(0.01, 2.0, 13));
        let actions = Family::<ActionLabels, Counter>::default();
        registry.register("reconciles", "Reconcile passes started", reconciles.clone());
        registry.register(
            "reconcile_failures",
            "Reconcile passes that failed, by error kind",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of reconcile passes in seconds",
            duration.clone(),
        );
        registry.register(
            "actions",
            "Membership and rollout actions taken, by kind",
            actions.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            reconciles,
            failures,
            duration,
            actions,
        }
    }

    /// Counts a reconcile; the returned guard records its duration when dropped.
    pub fn reconcile_started(&self) -> ReconcileTimer<'_> {
        self.reconciles.inc();
        ReconcileTimer {
            metrics: self,
            start: Instant::now(),
        }
    }

    /// Counts a failed reconcile of `kind`.
    pub fn failure(&self, kind: &str) {
        self.failures
            .get_or_create(&FailureLabels {
                kind: kind.to_string(),
            })
            .inc();
    }

    /// Counts an action of `kind`.
    pub fn action(&self, kind: &str) {
        self.actions
            .get_or_create(&ActionLabels {
                action: kind.to_string(),
            })
            .inc();
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }
}

/// Records a reconcile's duration on drop.
#[derive(Debug)]
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    start: Instant,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics
            .duration
            .observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_failures_and_durations_are_exposed() {
        let m = Metrics::new();
        drop(m.reconcile_started());
        m.failure("kube");
        m.action("add_voter");
        let text = m.encode();
        assert!(text.contains("kraft_operator_reconciles_total 1"), "{text}");
        assert!(
            text.contains("kraft_operator_reconcile_failures_total{kind=\"kube\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("kraft_operator_reconcile_duration_seconds_count 1"),
            "{text}"
        );
        assert!(
            text.contains("kraft_operator_actions_total{action=\"add_voter\"} 1"),
            "{text}"
        );
    }
}
