//! Events (DESIGN 3.2 step 6: an Event for every membership change and every
//! refusal): the [`EventSpec`] value the pure steps produce, and its
//! publication on the KraftQuorum through kube-rs' [`Recorder`].
//!
//! Owns the mapping of an [`EventSpec`] onto a Kubernetes Event; it must not
//! decide which Events to publish (the executor's mapping does). A failed
//! publication is logged, never an error of the pass.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Resource,
    runtime::events::{Event as KubeEvent, EventType, Recorder},
};
use tracing::warn;

use crate::crd::KraftQuorum;

/// An Event to publish on the KraftQuorum, as data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// `Normal` or `Warning`.
    pub type_: EventType,
    /// Machine-readable reason (`VoterAdded`, `RemovalWouldLoseMajority`, …).
    pub reason: String,
    /// What the operator was doing (`ChangeVoters`, `RestartPod`, …).
    pub action: &'static str,
    /// The human-readable note.
    pub note: String,
    /// Name of the pod the Event is about (in the quorum's namespace), if any.
    pub related_pod: Option<String>,
}

impl EventSpec {
    /// An Event without a related pod.
    pub fn new(
        type_: EventType,
        reason: impl Into<String>,
        action: &'static str,
        note: impl Into<String>,
    ) -> Self {
        EventSpec {
            type_,
            reason: reason.into(),
            action,
            note: note.into(),
            related_pod: None,
        }
    }

    /// The same Event about pod `name`.
    pub fn about_pod(self, name: impl Into<String>) -> Self {
        EventSpec {
            related_pod: Some(name.into()),
            ..self
        }
    }
}

/// A reference to pod `name` in `namespace`, the `related` object of an event.
pub fn pod_ref(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        ..ObjectReference::default()
    }
}

/// Publishes `event` on `kq`; a failure is logged and otherwise ignored.
pub async fn publish(recorder: &Recorder, kq: &KraftQuorum, event: EventSpec) {
    // kube-rs folds events with the same (type, reason, action, regarding,
    // related) into one series and keeps only the first note: the object an
    // event is about (the pod of a voter) goes in `related`, so that "added
    // voter node 3" and "added voter node 4" stay two events.
    let namespace = kq.meta().namespace.clone().unwrap_or_default();
    let related = event
        .related_pod
        .as_deref()
        .map(|pod| pod_ref(&namespace, pod));
    let kube_event = KubeEvent {
        type_: event.type_,
        reason: event.reason.clone(),
        note: Some(event.note),
        action: event.action.to_string(),
        secondary: related,
    };
    if let Err(e) = recorder.publish(&kube_event, &kq.object_ref(&())).await {
        warn!(error = %e, reason = %event.reason, "cannot publish event");
    }
}
