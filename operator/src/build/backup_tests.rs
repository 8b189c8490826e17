//! What `spec.backup` (issue 26, decision D17) adds to the StatefulSet:
//! tables of inline YAML → validated → built, no cluster needed.

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Container};

use super::{backup::*, statefulset::*};
use crate::{
    crd::{DATA_DIR, KraftQuorum},
    validate::{Error, validate},
};

const DIR0: &str = "AAAAAAAAAAAAAAAAAAAAAQ";
const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn kq(spec_extra: &str) -> KraftQuorum {
    let yaml = format!(
        "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata:\n  name: kq\n  namespace: ns\n  uid: 7e5b6f5e-0000-4000-8000-000000000001\n  generation: 2\nspec:\n  replicas: 1\n  image: kraft:1\n  storage:\n    size: 1Gi\n{spec_extra}\nstatus:\n  clusterId: {CLUSTER}\n  bootstrapped: true\n  initialVoters:\n  - nodeId: 0\n    directoryId: {DIR0}\n"
    );
    serde_yaml::from_str(&yaml).unwrap_or_else(|e| panic!("bad test yaml: {e}\n{yaml}"))
}

fn built(spec_extra: &str) -> StatefulSet {
    let q = validate(&kq(spec_extra), Some(1), "cluster.local").expect("valid");
    build_statefulset(&q)
}

fn containers(sts: &StatefulSet) -> &[Container] {
    &sts.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod spec")
        .containers
}

fn claim_names(sts: &StatefulSet) -> Vec<String> {
    sts.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_ref())
        .expect("claims")
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

const ENABLED: &str = "  backup:\n    enabled: true\n    everySeconds: 600\n    keep: 5\n    storage:\n      size: 256Mi\n      storageClassName: fast";

#[test]
fn a_quorum_without_backup_or_with_it_disabled_has_one_container_and_one_claim() {
    for extra in [
        "",
        "  backup:\n    enabled: false\n    storage:\n      size: 1Gi",
    ] {
        let sts = built(extra);
        let names: Vec<&str> = containers(&sts).iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec![CONTROLLER_CONTAINER], "{extra:?}");
        assert_eq!(
            claim_names(&sts),
            vec![DATA_VOLUME.to_string()],
            "{extra:?}"
        );
    }
}

#[test]
fn an_enabled_backup_adds_the_loop_sidecar_with_the_data_volume_read_only_and_its_own_claim() {
    let sts = built(ENABLED);

    let all = containers(&sts);
    assert_eq!(all.len(), 2);
    let (controller, backup) = (&all[0], &all[1]);
    assert_eq!(backup.name, BACKUP_CONTAINER);
    assert_eq!(backup.image, controller.image);
    assert_eq!(backup.command, controller.command);
    assert_eq!(backup.security_context, controller.security_context);
    assert_eq!(
        backup.args.clone().expect("args"),
        [
            "snapshot",
            "export",
            "--metadata-log-dir",
            DATA_DIR,
            "--output-dir",
            BACKUP_MOUNT,
            "--every-seconds",
            "600",
            "--keep",
            "5"
        ]
    );
    assert!(DATA_DIR.starts_with(DATA_MOUNT));
    let mounts: Vec<(String, String, Option<bool>)> = backup
        .volume_mounts
        .clone()
        .expect("mounts")
        .into_iter()
        .map(|m| (m.name, m.mount_path, m.read_only))
        .collect();
    assert_eq!(
        mounts,
        vec![
            (DATA_VOLUME.into(), DATA_MOUNT.into(), Some(true)),
            (BACKUP_VOLUME.into(), BACKUP_MOUNT.into(), None),
        ]
    );

    assert_eq!(
        claim_names(&sts),
        vec![DATA_VOLUME.to_string(), BACKUP_VOLUME.to_string()]
    );
    let claim = &sts
        .spec
        .as_ref()
        .expect("spec")
        .volume_claim_templates
        .as_ref()
        .expect("claims")[1];
    let spec = claim.spec.as_ref().expect("claim spec");
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(spec.access_modes.clone().expect("modes"), ["ReadWriteOnce"]);
    let size = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .expect("size");
    assert_eq!(size.0, "256Mi");
}

#[test]
fn an_enabled_backup_defaults_to_hourly_copies_keeping_24() {
    let sts = built("  backup:\n    enabled: true\n    storage:\n      size: 1Gi");

    let args = containers(&sts)[1].args.clone().expect("args");
    assert_eq!(args[6..], ["--every-seconds", "3600", "--keep", "24"]);
}

#[test]
fn an_enabled_backup_without_storage_or_with_a_short_interval_is_refused() {
    for (extra, message) in [
        (
            "  backup:\n    enabled: true",
            "spec.backup.storage.size is \"\": a quantity such as 1Gi, required when enabled",
        ),
        (
            "  backup:\n    enabled: true\n    everySeconds: 59\n    storage:\n      size: 1Gi",
            "spec.backup.everySeconds is 59: at least 60",
        ),
        (
            "  backup:\n    enabled: true\n    keep: 0\n    storage:\n      size: 1Gi",
            "spec.backup.keep is 0: at least 1",
        ),
    ] {
        let err = validate(&kq(extra), Some(1), "cluster.local").expect_err("refused");
        assert!(matches!(err, Error::Backup { .. }), "{err}");
        assert_eq!(err.to_string(), message);
    }
}
