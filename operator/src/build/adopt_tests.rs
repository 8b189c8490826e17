//! What an adopted static quorum's children look like in each phase of its
//! migration (`spec.adopt`, issue 22): tables of inline YAML → validated →
//! ConfigMap and StatefulSet, no cluster needed.

use super::{configmap::*, statefulset::*};
use crate::{
    crd::{AdoptionPhase, KraftQuorum},
    validate::{Error, FormatMode, ValidatedQuorum, validate},
};

const DIR0: &str = "AAAAAAAAAAAAAAAAAAAAAQ";
const DIR1: &str = "AAAAAAAAAAAAAAAAAAAAAg";
const DIR2: &str = "AAAAAAAAAAAAAAAAAAAAAw";
const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn kq(spec: &str, status: &str) -> KraftQuorum {
    let indent = |s: &str| {
        s.lines()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let yaml = format!(
        "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata:\n  name: kq\n  namespace: ns\n  uid: 7e5b6f5e-0000-4000-8000-000000000001\n  generation: 2\nspec:\n{}\nstatus:\n{}\n",
        indent(spec),
        indent(status)
    );
    serde_yaml::from_str(&yaml).unwrap_or_else(|e| panic!("bad test yaml: {e}\n{yaml}"))
}

/// Three adopted voters; `replicas` may already ask for more.
fn spec(replicas: i32, cluster: &str) -> String {
    format!(
        "replicas: {replicas}\nimage: kraft:1\nstorage:\n  size: 1Gi\nadopt:\n  clusterId: {cluster}\n  voters:\n  - nodeId: 0\n    directoryId: {DIR0}\n  - nodeId: 1\n    directoryId: {DIR1}\n  - nodeId: 2\n    directoryId: {DIR2}"
    )
}

fn status(phase: AdoptionPhase) -> String {
    format!(
        "clusterId: {CLUSTER}\nbootstrapped: true\nadoptionPhase: {}\ninitialVoters:\n- nodeId: 0\n  directoryId: {DIR0}\n- nodeId: 1\n  directoryId: {DIR1}\n- nodeId: 2\n  directoryId: {DIR2}",
        phase.as_str()
    )
}

fn valid(replicas: i32, phase: AdoptionPhase) -> ValidatedQuorum {
    validate(
        &kq(&spec(replicas, CLUSTER), &status(phase)),
        Some(3),
        "cluster.local",
    )
    .expect("valid")
}

fn properties(q: &ValidatedQuorum) -> String {
    server_properties(q)
}

fn format_mode(q: &ValidatedQuorum) -> String {
    build_configmap(q).data.expect("data")["format-mode"].clone()
}

// KAFKA-16538: static voters until kraft.version 1 is committed, then the
// bootstrap servers (a config change: the planner's quorum-aware rolling
// restart); the volumes are checked, never formatted, until adopted.
#[test]
fn each_adoption_phase_gets_its_quorum_config_and_format_mode() {
    let voters = "controller.quorum.voters=0@kq-0.kq.ns.svc.cluster.local:9093,\
                  1@kq-1.kq.ns.svc.cluster.local:9093,2@kq-2.kq.ns.svc.cluster.local:9093\n";
    let bootstrap = "controller.quorum.bootstrap.servers=kq-0.kq.ns.svc.cluster.local:9093,\
                     kq-1.kq.ns.svc.cluster.local:9093,kq-2.kq.ns.svc.cluster.local:9093\n";
    let table = [
        (AdoptionPhase::StaticQuorum, voters, "--expect-formatted"),
        (
            AdoptionPhase::RollingToBootstrapServers,
            bootstrap,
            "--expect-formatted",
        ),
        (
            AdoptionPhase::Adopted,
            bootstrap,
            "--no-initial-controllers",
        ),
    ];
    for (phase, quorum_line, mode) in table {
        let q = valid(3, phase);
        let text = properties(&q);
        assert!(text.contains(quorum_line), "{phase:?}:\n{text}");
        let other = if quorum_line == voters {
            bootstrap
        } else {
            voters
        };
        let other_key = other.split('=').next().expect("a key");
        assert!(!text.contains(other_key), "{phase:?}:\n{text}");
        assert_eq!(format_mode(&q), mode, "{phase:?}");
    }
    assert_eq!(
        valid(3, AdoptionPhase::StaticQuorum).format_mode(),
        FormatMode::ExpectFormatted
    );
}

#[test]
fn the_config_hash_changes_once_kraft_version_1_is_committed_so_the_pods_roll() {
    let hash = |phase| {
        let sts = build_statefulset(&valid(3, phase));
        sts.spec
            .and_then(|s| s.template.metadata)
            .and_then(|m| m.annotations)
            .expect("annotations")[crate::crd::ANNOTATION_CONFIG_HASH]
            .clone()
    };
    assert_ne!(
        hash(AdoptionPhase::StaticQuorum),
        hash(AdoptionPhase::RollingToBootstrapServers)
    );
    assert_eq!(
        hash(AdoptionPhase::RollingToBootstrapServers),
        hash(AdoptionPhase::Adopted)
    );
}

#[test]
fn while_adopting_the_statefulset_runs_the_adopted_voters_only() {
    // spec.replicas 5 waits for the migration: pods 3 and 4 would find no
    // volume to check (`--expect-formatted`).
    assert_eq!(
        valid(5, AdoptionPhase::StaticQuorum).statefulset_replicas,
        3
    );
    assert_eq!(
        valid(5, AdoptionPhase::RollingToBootstrapServers).statefulset_replicas,
        3
    );
    assert_eq!(valid(5, AdoptionPhase::Adopted).statefulset_replicas, 3);
}

#[test]
fn an_adopt_cluster_id_other_than_the_recorded_identity_is_an_invalid_spec() {
    let other = "AAAAAAAAAAAAAAAAAAAABA";
    let err = validate(
        &kq(&spec(3, other), &status(AdoptionPhase::StaticQuorum)),
        Some(3),
        "cluster.local",
    )
    .expect_err("invalid");
    assert_eq!(
        err,
        Error::AdoptClusterId {
            adopt: other.into(),
            status: CLUSTER.into()
        }
    );
}
