//! The committed CRD (`crds/kraftquorum.yaml`) is exactly what the code
//! generates: the YAML is the single source of truth for the chart and
//! `kubectl apply`, so a change to the types without `make crds` fails here.

use std::path::Path;

#[test]
fn the_committed_crd_matches_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds/kraftquorum.yaml");
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; run `make crds`", path.display()));
    let generated = kraft_operator::crd::crd_yaml().expect("the crd serializes");
    assert!(
        committed == generated,
        "{} differs from what `kraft-operator crd` generates; run `make crds` and commit it",
        path.display()
    );
}

#[test]
fn the_crd_has_the_scale_and_status_subresources_and_the_cel_rules() {
    let yaml = kraft_operator::crd::crd_yaml().expect("the crd serializes");
    for needle in [
        "specReplicasPath: .spec.replicas",
        "statusReplicasPath: .status.replicas",
        "labelSelectorPath: .status.selector",
        "status: {}",
        "- kq",
        "clusterId is immutable once set",
        "rule: self.listenerPort == oldSelf.listenerPort",
        "storage.size and storage.storageClassName are immutable",
        "serviceName is immutable",
        "backup is immutable",
        "backup.storage is required when backup.enabled is true",
        "replicas must be between 1 and 9",
        "name: Leader",
        "name: Epoch",
    ] {
        assert!(yaml.contains(needle), "crd lacks {needle:?}");
    }
}
