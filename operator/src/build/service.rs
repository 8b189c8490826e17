//! The headless Service that gives each controller pod its stable DNS name
//! (`<pod>.<service>.<namespace>.svc.<domain>`), the name recorded in the
//! voter set. Pure.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};

use super::child_meta;
use crate::validate::ValidatedQuorum;

/// Builds the headless Service. `publishNotReadyAddresses` is set because a
/// controller must be resolvable before it is ready: voters find each other
/// to elect the first leader, and observers must fetch before they are
/// caught up.
pub fn build_service(q: &ValidatedQuorum) -> Service {
    Service {
        metadata: child_meta(q, &q.service_name),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            publish_not_ready_addresses: Some(true),
            selector: Some(q.selector_labels()),
            ports: Some(vec![ServicePort {
                name: Some("controller".into()),
                port: q.listener_port,
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
