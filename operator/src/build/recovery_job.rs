//! The recover Job of a quorum-loss recovery (issue 26): one pod, the
//! controller image, running `kraft-controller recover --metadata-log-dir
//! /var/lib/kraft/data --i-understand-this-may-lose-uncommitted-data` on the
//! survivor's claim `data-<name>-<ordinal>`, while the StatefulSet is at 0
//! (the controller's run lock, `metadata.log.dir/.lock`, refuses a second
//! process on a volume anyway).
//!
//! Owns the Job's shape only. It must not decide when the Job runs
//! (`planner::quorum_loss`) nor read the cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::{
    batch::v1::{Job, JobSpec},
    core::v1::{
        Container, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Volume, VolumeMount,
    },
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::statefulset::{
    DATA_MOUNT, DATA_VOLUME, container_security_context, default_resources, pod_security_context,
};
use crate::{
    crd::{DATA_DIR, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME},
    validate::ValidatedQuorum,
};

/// `kraft-controller recover`'s consent flag (the controller's
/// `cli::recover::CONSENT_FLAG`).
pub const CONSENT_FLAG: &str = "--i-understand-this-may-lose-uncommitted-data";
/// `app.kubernetes.io/name` of the Job and its pod: not `kraft-controller`,
/// so the pod is never counted as a controller pod.
pub const RECOVER_NAME_LABEL: &str = "kraft-recover";
/// Name of the Job's one container.
pub const RECOVER_CONTAINER: &str = "recover";

/// The claim of ordinal `ordinal` (the StatefulSet's `volumeClaimTemplates`
/// naming: `<template>-<statefulset>-<ordinal>`).
pub fn claim_name(q_name: &str, ordinal: i32) -> String {
    format!("{DATA_VOLUME}-{q_name}-{ordinal}")
}

/// The recover Job's name for the survivor `ordinal`.
pub fn job_name(q_name: &str, ordinal: i32) -> String {
    format!("{q_name}-recover-{ordinal}")
}

/// Arguments of the Job's container (`kraft-controller <args>`).
pub fn recover_args() -> Vec<String> {
    vec![
        "recover".into(),
        "--metadata-log-dir".into(),
        DATA_DIR.into(),
        CONSENT_FLAG.into(),
    ]
}

/// The recover Job on the claim of `survivor`: no retry (`backoffLimit: 0`;
/// a failed recover is for a person to read, not to repeat), its pod with
/// the controllers' security context and resources, owned by the quorum.
pub fn build_recovery_job(q: &ValidatedQuorum, survivor: i32) -> Job {
    let labels: BTreeMap<String, String> = [
        (LABEL_NAME.to_string(), RECOVER_NAME_LABEL.to_string()),
        (LABEL_INSTANCE.to_string(), q.name.clone()),
        (LABEL_MANAGED_BY.to_string(), "kraft-operator".to_string()),
    ]
    .into();
    let container = Container {
        name: RECOVER_CONTAINER.into(),
        image: Some(q.image.clone()),
        args: Some(recover_args()),
        volume_mounts: Some(vec![VolumeMount {
            name: DATA_VOLUME.into(),
            mount_path: DATA_MOUNT.into(),
            ..VolumeMount::default()
        }]),
        security_context: Some(container_security_context()),
        resources: Some(q.resources.clone().unwrap_or_else(default_resources)),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    };
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(&q.name, survivor)),
            namespace: Some(q.namespace.clone()),
            labels: Some(labels.clone()),
            owner_references: Some(vec![q.owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    security_context: Some(pod_security_context()),
                    node_selector: non_empty(&q.pod_template.node_selector),
                    tolerations: (!q.pod_template.tolerations.is_empty())
                        .then(|| q.pod_template.tolerations.clone()),
                    containers: vec![container],
                    volumes: Some(vec![Volume {
                        name: DATA_VOLUME.into(),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: claim_name(&q.name, survivor),
                            read_only: None,
                        }),
                        ..Volume::default()
                    }]),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

fn non_empty(m: &BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!m.is_empty()).then(|| m.clone())
}
