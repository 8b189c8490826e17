//! The NetworkPolicy of a quorum (`spec.networkPolicy`): ingress to the
//! controller pods only on the controller listener from the quorum's own
//! pods, the operator and the broker pods the user labels, and on the HTTP
//! port (9100: probes, `/metrics`) only from the monitoring selector the user
//! sets. Everything else is denied (the policy selects the pods for
//! `Ingress`). Kubelet probes come from the node and are not subject to it.
//! Pure. The local development cluster does not enforce NetworkPolicies.

use k8s_openapi::{
    api::networking::v1::{
        NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
        NetworkPolicySpec,
    },
    apimachinery::pkg::{apis::meta::v1::LabelSelector, util::intstr::IntOrString},
};
use std::collections::BTreeMap;

use super::child_meta;
use crate::{crd::CONTROLLER_HTTP_PORT, validate::ValidatedQuorum};

fn selector(labels: BTreeMap<String, String>) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels),
        match_expressions: None,
    }
}

fn port(p: i32) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(IntOrString::Int(p)),
        protocol: Some("TCP".into()),
        end_port: None,
    }
}

/// Whether the quorum gets a NetworkPolicy (`spec.networkPolicy.enabled`, default true).
pub fn enabled(q: &ValidatedQuorum) -> bool {
    q.network_policy.enabled.unwrap_or(true)
}

/// Builds the NetworkPolicy (same name as the KraftQuorum).
pub fn build_networkpolicy(q: &ValidatedQuorum) -> NetworkPolicy {
    let np = &q.network_policy;
    // The quorum's own pods (same namespace: a bare podSelector).
    let mut listener_from = vec![NetworkPolicyPeer {
        pod_selector: Some(selector(q.selector_labels())),
        ..NetworkPolicyPeer::default()
    }];
    if let Some(op) = &q.operator_peer {
        listener_from.push(NetworkPolicyPeer {
            namespace_selector: Some(selector(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_string(),
                op.namespace.clone(),
            )]))),
            pod_selector: Some(selector(op.pod_labels.clone())),
            ..NetworkPolicyPeer::default()
        });
    }
    if !np.broker_pod_labels.is_empty() {
        // Brokers carrying the labels: in the quorum's namespace (a bare
        // podSelector), or in the namespaces `brokerNamespaceLabels` selects.
        listener_from.push(NetworkPolicyPeer {
            namespace_selector: np.broker_namespace_labels.clone().map(selector),
            pod_selector: Some(selector(np.broker_pod_labels.clone())),
            ..NetworkPolicyPeer::default()
        });
    }
    let mut ingress = vec![NetworkPolicyIngressRule {
        from: Some(listener_from),
        ports: Some(vec![port(q.listener_port)]),
    }];
    if np.monitoring_namespace_labels.is_some() || np.monitoring_pod_labels.is_some() {
        ingress.push(NetworkPolicyIngressRule {
            from: Some(vec![NetworkPolicyPeer {
                namespace_selector: np.monitoring_namespace_labels.clone().map(selector),
                pod_selector: np.monitoring_pod_labels.clone().map(selector),
                ..NetworkPolicyPeer::default()
            }]),
            ports: Some(vec![port(CONTROLLER_HTTP_PORT)]),
        });
    }
    NetworkPolicy {
        metadata: child_meta(q, &q.name),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(selector(q.selector_labels())),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(ingress),
            egress: None,
        }),
    }
}
