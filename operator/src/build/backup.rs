//! The scheduled backup of `spec.backup` (issue 26, decision D17): the
//! `backup` sidecar container and the `backup` volume claim template that
//! [`super::statefulset::build_statefulset`] adds to the controller pods
//! when backups are enabled. Pure.
//!
//! The sidecar runs the controller image's own binary (the image is
//! distroless: no shell, no cron) in the loop mode of `kraft-controller
//! snapshot export --output-dir`: every `everySeconds` it copies the latest
//! committed snapshot of the pod's metadata log to the pod's backup volume
//! and keeps the newest `keep` copies. It mounts the data volume read-only
//! (it never writes there nor takes the run lock) and runs with the
//! controller's security context.
//!
//! Owns those two shapes only; it must not decide whether backups are on
//! (that is [`ValidatedQuorum::backup`]).

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{
        Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, ResourceRequirements,
        VolumeMount, VolumeResourceRequirements,
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};

use super::statefulset::{DATA_MOUNT, DATA_VOLUME, container_security_context};
use crate::{
    crd::DATA_DIR,
    validate::{ValidBackup, ValidatedQuorum},
};

/// Name of the backup volume claim template (PVCs `backup-<pod>`).
pub const BACKUP_VOLUME: &str = "backup";
/// Where the sidecar mounts the backup volume; the copies are
/// `OFFSET-EPOCH.checkpoint` files at its root.
pub const BACKUP_MOUNT: &str = "/var/lib/kraft-backup";
/// Name of the sidecar container.
pub const BACKUP_CONTAINER: &str = "backup";

/// Arguments of the sidecar (`kraft-controller <args>`).
pub fn backup_args(b: &ValidBackup) -> Vec<String> {
    vec![
        "snapshot".into(),
        "export".into(),
        "--metadata-log-dir".into(),
        DATA_DIR.into(),
        "--output-dir".into(),
        BACKUP_MOUNT.into(),
        "--every-seconds".into(),
        b.every_seconds.to_string(),
        "--keep".into(),
        b.keep.to_string(),
    ]
}

/// The sidecar: the controller's image and security context, the data
/// volume read-only, the backup volume writable; small requests (it reads
/// one snapshot per round).
pub fn backup_container(q: &ValidatedQuorum, b: &ValidBackup) -> Container {
    Container {
        name: BACKUP_CONTAINER.into(),
        image: Some(q.image.clone()),
        command: Some(vec!["kraft-controller".into()]),
        args: Some(backup_args(b)),
        volume_mounts: Some(vec![
            VolumeMount {
                name: DATA_VOLUME.into(),
                mount_path: DATA_MOUNT.into(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: BACKUP_VOLUME.into(),
                mount_path: BACKUP_MOUNT.into(),
                ..VolumeMount::default()
            },
        ]),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_string(), Quantity("10m".into())),
                ("memory".to_string(), Quantity("64Mi".into())),
            ])),
            ..ResourceRequirements::default()
        }),
        security_context: Some(container_security_context()),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    }
}

/// The backup volume claim template: ReadWriteOnce, `storage.size`,
/// `storage.storageClassName`, the quorum's selector labels.
pub fn backup_claim(q: &ValidatedQuorum, b: &ValidBackup) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(BACKUP_VOLUME.into()),
            labels: Some(q.selector_labels()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: b.storage.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(b.storage.size.clone()),
                )])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}
