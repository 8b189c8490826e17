//! Tables of inline YAML → validated → built objects (STYLE: pure steps are
//! tested without a cluster), including the format mode each pod gets
//! before and after bootstrap.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{apps::v1::StatefulSet, core::v1::Container},
    apimachinery::pkg::util::intstr::IntOrString,
};

use super::{configmap::*, pdb::*, service::*, statefulset::*};
use crate::{
    crd::KraftQuorum,
    validate::{Error, FormatMode, ValidatedQuorum, validate},
};

const DIR0: &str = "AAAAAAAAAAAAAAAAAAAAAQ";
const DIR1: &str = "AAAAAAAAAAAAAAAAAAAAAg";
const DIR2: &str = "AAAAAAAAAAAAAAAAAAAAAw";
const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

/// A KraftQuorum as the API server returns it: `spec` and `status` YAML
/// bodies indented under the given keys.
fn kq(spec: &str, status: &str) -> KraftQuorum {
    let yaml = format!(
        "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata:\n  name: kq\n  namespace: ns\n  uid: 7e5b6f5e-0000-4000-8000-000000000001\n  generation: 2\nspec:\n{}\nstatus:\n{}\n",
        indent(spec),
        indent(status)
    );
    serde_yaml::from_str(&yaml).unwrap_or_else(|e| panic!("bad test yaml: {e}\n{yaml}"))
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

const SPEC3: &str = "replicas: 3\nimage: kraft:1\nstorage:\n  size: 1Gi";

fn status(bootstrapped: bool) -> String {
    format!(
        "clusterId: {CLUSTER}\nbootstrapped: {bootstrapped}\ninitialVoters:\n- nodeId: 0\n  directoryId: {DIR0}\n- nodeId: 1\n  directoryId: {DIR1}\n- nodeId: 2\n  directoryId: {DIR2}"
    )
}

fn valid(spec: &str, status: &str) -> ValidatedQuorum {
    validate(&kq(spec, status), Some(3), "cluster.local").expect("valid")
}

fn container<'a>(sts: &'a StatefulSet, name: &str, init: bool) -> &'a Container {
    let pod = sts
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod spec");
    let list = if init {
        pod.init_containers.as_ref().expect("init containers")
    } else {
        &pod.containers
    };
    list.iter().find(|c| c.name == name).expect("container")
}

#[test]
fn invalid_specs_are_rejected_with_the_bad_value() {
    let st = status(false);
    let table: Vec<(&str, &str, Error)> = vec![
        (
            "replicas: 0\nimage: kraft:1\nstorage:\n  size: 1Gi",
            &st,
            Error::Replicas(0),
        ),
        (
            "replicas: 10\nimage: kraft:1\nstorage:\n  size: 1Gi",
            &st,
            Error::Replicas(10),
        ),
        (
            "replicas: 3\nimage: ''\nstorage:\n  size: 1Gi",
            &st,
            Error::NoImage,
        ),
        (
            "replicas: 3\nimage: kraft:1\nstorage:\n  size: ''",
            &st,
            Error::NoStorageSize,
        ),
        (
            "replicas: 3\nimage: kraft:1\nlistenerPort: 9100\nstorage:\n  size: 1Gi",
            &st,
            Error::ListenerPort(9100),
        ),
        (
            "replicas: 3\nimage: kraft:1\nserviceName: Bad_Name\nstorage:\n  size: 1Gi",
            &st,
            Error::ServiceName("Bad_Name".into()),
        ),
        (
            "replicas: 3\nimage: kraft:1\nconfig:\n  node.id: '7'\nstorage:\n  size: 1Gi",
            &st,
            Error::ReservedConfigKey("node.id".into()),
        ),
        (
            // The probes need it where the pod template says (0.0.0.0:9100).
            "replicas: 3\nimage: kraft:1\nconfig:\n  kraftwerk.http.listener: 127.0.0.1:9100\nstorage:\n  size: 1Gi",
            &st,
            Error::ReservedConfigKey("kraftwerk.http.listener".into()),
        ),
        (
            "replicas: 3\nimage: kraft:1\nclusterId: not-a-uuid\nstorage:\n  size: 1Gi",
            &st,
            Error::ClusterId("not-a-uuid".into()),
        ),
        (
            "replicas: 3\nimage: kraft:1\nclusterId: AAAAAAAAAAAAAAAAAAAAAQ\nstorage:\n  size: 1Gi",
            &st,
            Error::ClusterIdMismatch {
                spec: "AAAAAAAAAAAAAAAAAAAAAQ".into(),
                status: CLUSTER.into(),
            },
        ),
        (SPEC3, "bootstrapped: false", Error::IdentityMissing),
    ];
    for (spec, status, want) in table {
        let got = validate(&kq(spec, status), None, "cluster.local");
        assert_eq!(got, Err(want.clone()), "spec:\n{spec}");
        assert!(!want.to_string().is_empty());
    }
}

#[test]
fn defaults_fill_port_service_name_and_retention() {
    let q = valid(SPEC3, &status(false));
    assert_eq!(q.listener_port, 9093);
    assert_eq!(q.service_name, "kq");
    assert_eq!(q.endpoint(1), "kq-1.kq.ns.svc.cluster.local:9093");
    assert_eq!(q.storage.on_delete.as_str(), "Retain");
    assert_eq!(q.storage.on_scale_down.as_str(), "Retain");
}

/// The format mode as the ConfigMap carries it to the init container.
fn configmap_format_mode(q: &ValidatedQuorum) -> String {
    build_configmap(q).data.expect("data")["format-mode"].clone()
}

#[test]
fn before_bootstrap_every_pod_formats_with_the_same_initial_controllers() {
    let q = valid(SPEC3, &status(false));
    let list = format!(
        "0@kq-0.kq.ns.svc.cluster.local:9093:{DIR0},1@kq-1.kq.ns.svc.cluster.local:9093:{DIR1},2@kq-2.kq.ns.svc.cluster.local:9093:{DIR2}"
    );
    assert_eq!(
        q.format_mode(),
        FormatMode::InitialControllers(list.clone())
    );
    assert_eq!(
        configmap_format_mode(&q),
        format!("--initial-controllers={list}")
    );
    let sts = build_statefulset(&q);
    let init = container(&sts, FORMAT_CONTAINER, true);
    assert_eq!(
        init.args.clone().expect("args"),
        vec![
            "format".to_string(),
            "--config".into(),
            "/etc/kraft/server.properties".into(),
            "--node-id".into(),
            "$(POD_ORDINAL)".into(),
            format!("--cluster-id={CLUSTER}"),
            "$(KRAFT_FORMAT_MODE)".into(),
        ]
    );
    // The mode comes from the ConfigMap, a required key.
    let mode = init
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "KRAFT_FORMAT_MODE")
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.config_map_key_ref.as_ref())
        .expect("KRAFT_FORMAT_MODE from the ConfigMap");
    assert_eq!(
        (mode.name.as_str(), mode.key.as_str(), mode.optional),
        ("kq", "format-mode", Some(false))
    );
    // Before bootstrap the StatefulSet runs exactly the initial voters.
    assert_eq!(sts.spec.as_ref().and_then(|s| s.replicas), Some(3));
}

#[test]
fn after_bootstrap_every_pod_formats_with_no_initial_controllers() {
    let q = valid(
        "replicas: 5\nimage: kraft:1\nstorage:\n  size: 1Gi",
        &status(true),
    );
    assert_eq!(q.format_mode(), FormatMode::NoInitialControllers);
    assert_eq!(configmap_format_mode(&q), "--no-initial-controllers");
    // After bootstrap the current StatefulSet size is kept; the planner moves it.
    assert_eq!(
        build_statefulset(&q).spec.as_ref().and_then(|s| s.replicas),
        Some(3)
    );
}

#[test]
fn bootstrapping_changes_the_configmap_but_not_the_pod_template() {
    // A template change makes every pod out of date and costs a rolling
    // restart; for a single voter that is an outage. The switch of the format
    // mode at bootstrap must therefore stay out of the template.
    for spec in [SPEC3, "replicas: 1\nimage: kraft:1\nstorage:\n  size: 1Gi"] {
        let before = valid(spec, &status(false));
        let after = valid(spec, &status(true));
        assert_ne!(
            configmap_format_mode(&before),
            configmap_format_mode(&after)
        );
        assert_eq!(
            build_statefulset(&before).spec.map(|s| s.template),
            build_statefulset(&after).spec.map(|s| s.template),
            "spec:\n{spec}"
        );
        // The config hash covers server.properties only, which bootstrap leaves alone.
        assert_eq!(server_properties(&before), server_properties(&after));
    }
}

#[test]
fn pods_run_as_the_images_non_root_user_with_a_read_only_root_and_no_capabilities() {
    let sts = build_statefulset(&valid(SPEC3, &status(true)));
    let pod = sts
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod spec");
    let psc = pod.security_context.as_ref().expect("pod securityContext");
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(
        (psc.run_as_user, psc.run_as_group, psc.fs_group),
        (Some(65532), Some(65532), Some(65532))
    );
    assert_eq!(
        psc.seccomp_profile.as_ref().map(|p| p.type_.as_str()),
        Some("RuntimeDefault")
    );
    for (name, init) in [(FORMAT_CONTAINER, true), (CONTROLLER_CONTAINER, false)] {
        let sc = container(&sts, name, init)
            .security_context
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no securityContext"));
        assert_eq!(sc.allow_privilege_escalation, Some(false), "{name}");
        assert_eq!(sc.read_only_root_filesystem, Some(true), "{name}");
        assert_eq!(
            sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
            Some(vec!["ALL".to_string()]),
            "{name}"
        );
    }
}

#[test]
fn the_statefulset_is_parallel_on_delete_with_a_data_claim_and_probes() {
    let spec = "replicas: 3\nimage: kraft:1\nlistenerPort: 19093\nserviceName: quorum\nstorage:\n  size: 2Gi\n  storageClassName: fast\n  onScaleDown: Delete\n  onDelete: Retain\npodTemplate:\n  nodeSelector:\n    disk: ssd\n  labels:\n    team: infra\n  annotations:\n    a: b";
    let q = valid(spec, &status(true));
    let sts = build_statefulset(&q);
    let s = sts.spec.as_ref().expect("spec");
    assert_eq!(s.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(
        s.update_strategy.as_ref().and_then(|u| u.type_.as_deref()),
        Some("OnDelete")
    );
    assert_eq!(s.service_name.as_deref(), Some("quorum"));
    let retention = s
        .persistent_volume_claim_retention_policy
        .as_ref()
        .expect("retention");
    assert_eq!(retention.when_scaled.as_deref(), Some("Delete"));
    assert_eq!(retention.when_deleted.as_deref(), Some("Retain"));
    let claim = &s.volume_claim_templates.as_ref().expect("claims")[0];
    assert_eq!(claim.metadata.name.as_deref(), Some("data"));
    let claim_spec = claim.spec.as_ref().expect("claim spec");
    assert_eq!(claim_spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(
        claim_spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .map(|r| r["storage"].0.clone()),
        Some("2Gi".to_string())
    );
    let meta = s.template.metadata.as_ref().expect("template meta");
    let labels = meta.labels.as_ref().expect("labels");
    assert_eq!(labels["team"], "infra");
    assert_eq!(labels["app.kubernetes.io/instance"], "kq");
    assert!(
        meta.annotations
            .as_ref()
            .expect("annotations")
            .contains_key("kraft.krabka.io/config-hash")
    );
    let pod = s.template.spec.as_ref().expect("pod");
    assert_eq!(pod.node_selector.as_ref().expect("selector")["disk"], "ssd");

    let main = container(&sts, CONTROLLER_CONTAINER, false);
    assert_eq!(
        main.args.clone().expect("args"),
        vec![
            "run",
            "--config",
            "/etc/kraft/server.properties",
            "--override",
            "node.id=$(POD_ORDINAL)",
            "--override",
            "advertised.listeners=CONTROLLER://$(POD_NAME).quorum.ns.svc.cluster.local:19093",
        ]
    );
    let ready = main
        .readiness_probe
        .as_ref()
        .and_then(|p| p.http_get.as_ref())
        .expect("readiness");
    assert_eq!(ready.path.as_deref(), Some("/readyz"));
    assert_eq!(ready.port, IntOrString::String("http".into()));
    let live = main
        .liveness_probe
        .as_ref()
        .and_then(|p| p.http_get.as_ref())
        .expect("liveness");
    assert_eq!(live.path.as_deref(), Some("/healthz"));
    let ports: Vec<i32> = main
        .ports
        .iter()
        .flatten()
        .map(|p| p.container_port)
        .collect();
    assert_eq!(ports, vec![19093, 9100]);
    let env = main.env.as_ref().expect("env");
    let ordinal = env
        .iter()
        .find(|e| e.name == "POD_ORDINAL")
        .expect("POD_ORDINAL");
    assert_eq!(
        ordinal
            .value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref())
            .map(|f| f.field_path.as_str()),
        Some("metadata.labels['apps.kubernetes.io/pod-index']")
    );
    // Every child is owned by the KraftQuorum.
    let owner = &sts.metadata.owner_references.as_ref().expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("KraftQuorum", "kq", Some(true))
    );
}

#[test]
fn server_properties_hold_the_operator_keys_then_the_user_config() {
    let spec = "replicas: 3\nimage: kraft:1\ntls:\n  enabled: false\nconfig:\n  controller.quorum.election.timeout.ms: '1500'\nstorage:\n  size: 1Gi";
    let q = valid(spec, &status(false));
    let props = server_properties(&q);
    let body: Vec<&str> = props.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        body,
        vec![
            "process.roles=controller",
            "listeners=CONTROLLER://0.0.0.0:9093",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT",
            "metadata.log.dir=/var/lib/kraft/data",
            "controller.quorum.bootstrap.servers=kq-0.kq.ns.svc.cluster.local:9093,kq-1.kq.ns.svc.cluster.local:9093,kq-2.kq.ns.svc.cluster.local:9093",
            "kraftwerk.http.listener=0.0.0.0:9100",
            "controller.quorum.election.timeout.ms=1500",
        ]
    );
    let cm = build_configmap(&q);
    assert_eq!(cm.data.as_ref().expect("data")["server.properties"], props);
}

#[test]
fn a_config_change_changes_the_pod_template() {
    let a = build_statefulset(&valid(SPEC3, &status(true)));
    let b = build_statefulset(&valid(
        "replicas: 3\nimage: kraft:1\nconfig:\n  a.b: c\nstorage:\n  size: 1Gi",
        &status(true),
    ));
    assert_ne!(a.spec.map(|s| s.template), b.spec.map(|s| s.template));
}

#[test]
fn the_service_is_headless_and_publishes_not_ready_addresses() {
    let svc = build_service(&valid(SPEC3, &status(false)));
    let s = svc.spec.expect("spec");
    assert_eq!(s.cluster_ip.as_deref(), Some("None"));
    assert_eq!(s.publish_not_ready_addresses, Some(true));
    assert_eq!(s.ports.expect("ports")[0].port, 9093);
}

#[test]
fn the_pdb_keeps_a_majority_of_the_live_voters() {
    assert_eq!(
        (1..=7).map(max_unavailable).collect::<Vec<_>>(),
        vec![0, 0, 1, 1, 2, 2, 3]
    );
    let voters5 = format!(
        "{}\nvoters:\n{}",
        status(true),
        (0..5)
            .map(|i| format!("- nodeId: {i}\n  directoryId: {DIR0}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let pdb = build_pdb(&valid(
        "replicas: 5\nimage: kraft:1\nstorage:\n  size: 1Gi",
        &voters5,
    ));
    assert_eq!(
        pdb.spec.and_then(|s| s.max_unavailable),
        Some(IntOrString::Int(2))
    );
}

#[test]
fn with_tls_the_listener_is_ssl_with_required_client_certificates_and_the_operator_principals() {
    let q = valid(SPEC3, &status(false));
    assert!(q.tls_enabled, "TLS is on by default");
    let props = server_properties(&q);
    for line in [
        "listener.security.protocol.map=CONTROLLER:SSL",
        "ssl.keystore.type=PEM",
        "ssl.keystore.location=/etc/kraft-tls/keystore.pem",
        "ssl.truststore.type=PEM",
        "ssl.truststore.location=/etc/kraft-tls/ca.crt",
        "ssl.client.auth=required",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:CN=kraft-controller;User:CN=kraft-operator",
    ] {
        assert!(
            props.lines().any(|l| l == line),
            "{line} missing in\n{props}"
        );
    }
    // The user cannot weaken it through spec.config.
    for key in [
        "ssl.client.auth",
        "listener.name.controller.ssl.client.auth",
        "super.users",
    ] {
        let spec =
            format!("replicas: 3\nimage: kraft:1\nconfig:\n  {key}: none\nstorage:\n  size: 1Gi");
        assert_eq!(
            validate(&kq(&spec, &status(false)), None, "cluster.local"),
            Err(Error::ReservedConfigKey(key.into()))
        );
    }
}

#[test]
fn the_pods_mount_the_certificate_secret_have_no_token_and_request_resources() {
    let mut q = valid(SPEC3, &status(true));
    q.ca_hash = Some("abc".into());
    let sts = build_statefulset(&q);
    let tmpl = &sts.spec.as_ref().expect("spec").template;
    let pod = tmpl.spec.as_ref().expect("pod");
    assert_eq!(pod.automount_service_account_token, Some(false));
    let vol = pod
        .volumes
        .as_ref()
        .and_then(|v| v.iter().find(|v| v.name == TLS_VOLUME))
        .and_then(|v| v.secret.as_ref())
        .expect("tls volume");
    assert_eq!(vol.secret_name.as_deref(), Some("kq-tls"));
    let c = container(&sts, CONTROLLER_CONTAINER, false);
    assert!(c.volume_mounts.as_ref().is_some_and(|m| {
        m.iter()
            .any(|m| m.mount_path == "/etc/kraft-tls" && m.read_only == Some(true))
    }));
    let requests = c
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .expect("requests");
    assert!(requests.contains_key("cpu") && requests.contains_key("memory"));
    // The format init container requests the same (a quota admits it).
    let format = container(&sts, FORMAT_CONTAINER, true);
    assert_eq!(format.resources, c.resources);
    // The CA is in the template (a new CA rolls the pods); the leaf is not.
    let ann = tmpl
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.as_ref())
        .expect("annotations");
    assert_eq!(
        ann.get("kraft.krabka.io/ca-hash").map(String::as_str),
        Some("abc")
    );
    // The identity is on the StatefulSet itself (not the template).
    let sts_ann = sts.metadata.annotations.as_ref().expect("sts annotations");
    assert_eq!(
        sts_ann
            .get("kraft.krabka.io/cluster-id")
            .map(String::as_str),
        Some(CLUSTER)
    );
    assert_eq!(
        sts_ann
            .get("kraft.krabka.io/initial-voters")
            .map(String::as_str),
        Some(format!("0:{DIR0},1:{DIR1},2:{DIR2}").as_str())
    );
    assert_eq!(
        sts_ann
            .get("kraft.krabka.io/bootstrapped")
            .map(String::as_str),
        Some("true")
    );
    // Without TLS: no volume, no mount.
    let plain = valid(
        "replicas: 3\nimage: kraft:1\ntls:\n  enabled: false\nstorage:\n  size: 1Gi",
        &status(true),
    );
    let sts = build_statefulset(&plain);
    let pod = sts
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod");
    assert!(
        !pod.volumes
            .as_ref()
            .is_some_and(|v| v.iter().any(|v| v.name == TLS_VOLUME))
    );
}

#[test]
fn the_network_policy_opens_9093_to_the_quorum_the_operator_and_brokers_and_9100_to_monitoring() {
    use super::networkpolicy::build_networkpolicy;
    use crate::validate::OperatorPeer;
    use std::collections::BTreeMap;
    let spec = "replicas: 3\nimage: kraft:1\nstorage:\n  size: 1Gi\nnetworkPolicy:\n  brokerPodLabels:\n    app: kafka-broker\n  monitoringNamespaceLabels:\n    team: monitoring\n  monitoringPodLabels:\n    app: prometheus";
    let mut q = valid(spec, &status(true));
    q.operator_peer = Some(OperatorPeer {
        namespace: "kraft-system".into(),
        pod_labels: BTreeMap::from([("app.kubernetes.io/name".into(), "kraft-operator".into())]),
    });
    let np = serde_json::to_value(build_networkpolicy(&q)).expect("json");
    let want = serde_json::json!({
        "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "kq", "app.kubernetes.io/name": "kraft-controller"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {"ports": [{"port": 9093, "protocol": "TCP"}], "from": [
                {"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "kq", "app.kubernetes.io/name": "kraft-controller"}}},
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kraft-system"}},
                 "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kraft-operator"}}},
                {"podSelector": {"matchLabels": {"app": "kafka-broker"}}},
            ]},
            {"ports": [{"port": 9100, "protocol": "TCP"}], "from": [
                {"namespaceSelector": {"matchLabels": {"team": "monitoring"}},
                 "podSelector": {"matchLabels": {"app": "prometheus"}}},
            ]},
        ],
    });
    assert_eq!(np["spec"], want);
    assert_eq!(np["metadata"]["ownerReferences"][0]["kind"], "KraftQuorum");
    // Brokers of other namespaces only when asked for.
    let mut other = q.clone();
    other.network_policy.broker_namespace_labels =
        Some(BTreeMap::from([("team".into(), "kafka".into())]));
    let np = serde_json::to_value(build_networkpolicy(&other)).expect("json");
    assert_eq!(
        np["spec"]["ingress"][0]["from"][2],
        serde_json::json!({"namespaceSelector": {"matchLabels": {"team": "kafka"}},
                           "podSelector": {"matchLabels": {"app": "kafka-broker"}}})
    );
    // Nothing given: 9093 from the quorum only, 9100 from nobody.
    let bare =
        serde_json::to_value(build_networkpolicy(&valid(SPEC3, &status(true)))).expect("json");
    assert_eq!(bare["spec"]["ingress"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        bare["spec"]["ingress"][0]["from"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn with_an_issuer_ref_three_cert_manager_certificates_name_the_pods_and_the_principals() {
    use super::certificate::build_certificates;
    let spec =
        "replicas: 3\nimage: kraft:1\nstorage:\n  size: 1Gi\ntls:\n  issuerRef:\n    name: corp-ca";
    let q = valid(spec, &status(false));
    let certs = build_certificates(&q);
    let names: Vec<_> = certs
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["kq-tls", "kq-operator-tls", "kq-client-tls"]);
    let server = &certs[0]["spec"];
    assert_eq!(server["secretName"], "kq-tls");
    assert_eq!(
        server["issuerRef"],
        serde_json::json!({"name": "corp-ca", "kind": "Issuer", "group": "cert-manager.io"})
    );
    assert_eq!(
        (server["duration"].as_str(), server["renewBefore"].as_str()),
        (Some("2160h"), Some("720h"))
    );
    assert_eq!(server["additionalOutputFormats"][0]["type"], "CombinedPEM");
    let dns = server["dnsNames"].to_string();
    assert!(
        dns.contains("kq-0.kq.ns.svc.cluster.local") && dns.contains("kq-8.kq.ns.svc"),
        "{dns}"
    );
    assert!(server["usages"].to_string().contains("server auth"));
    // The quorum is in every common name and in super.users (a shared
    // issuer signs for other quorums too); the brokers are no super user.
    assert_eq!(
        server["commonName"],
        format!("kraft-controller.{}.{}", q.namespace, q.name)
    );
    assert_eq!(
        certs[1]["spec"]["commonName"],
        format!("kraft-operator.{}.{}", q.namespace, q.name)
    );
    assert!(certs[1]["spec"]["dnsNames"].is_null());
    assert_eq!(
        certs[2]["spec"]["commonName"],
        format!("kraft-broker.{}.{}", q.namespace, q.name)
    );
    assert!(server_properties(&q).contains(&format!(
        "super.users=User:CN=kraft-controller.{ns}.{n};User:CN=kraft-operator.{ns}.{n}\n",
        ns = q.namespace,
        n = q.name
    )));
    assert_eq!(
        certs[0]["metadata"]["ownerReferences"][0]["kind"],
        "KraftQuorum"
    );
    // The keystore is cert-manager's combined PEM file.
    assert!(
        server_properties(&q).contains("ssl.keystore.location=/etc/kraft-tls/tls-combined.pem\n")
    );
    // Without issuerRef: none.
    assert!(build_certificates(&valid(SPEC3, &status(false))).is_empty());
}

#[test]
fn the_brokers_configmap_holds_the_kafka_images_env_for_mtls_to_every_controller() {
    use super::brokers::{broker_connection, build_broker_configmap};
    let q = valid(SPEC3, &status(true));
    let cm = build_broker_configmap(&q);
    assert_eq!(cm.metadata.name.as_deref(), Some("kq-brokers"));
    assert_eq!(cm.metadata.owner_references, Some(vec![q.owner.clone()]));
    let servers = "kq-0.kq.ns.svc.cluster.local:9093,kq-1.kq.ns.svc.cluster.local:9093,\
                   kq-2.kq.ns.svc.cluster.local:9093";
    let want: BTreeMap<String, String> = [
        ("CLUSTER_ID", CLUSTER),
        ("KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS", servers),
        ("KAFKA_CONTROLLER_LISTENER_NAMES", "CONTROLLER"),
        (
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP",
            "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        ),
        ("KAFKA_LISTENER_NAME_CONTROLLER_SSL_KEYSTORE_TYPE", "PEM"),
        (
            "KAFKA_LISTENER_NAME_CONTROLLER_SSL_KEYSTORE_LOCATION",
            "/etc/kraft-client/keystore.pem",
        ),
        ("KAFKA_LISTENER_NAME_CONTROLLER_SSL_TRUSTSTORE_TYPE", "PEM"),
        (
            "KAFKA_LISTENER_NAME_CONTROLLER_SSL_TRUSTSTORE_LOCATION",
            "/etc/kraft-client/ca.crt",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(cm.data, Some(want));
    let status = broker_connection(&q);
    assert_eq!(status.config_map, "kq-brokers");
    assert_eq!(status.bootstrap_servers, servers);
    assert_eq!(
        (
            status.listener_name.as_str(),
            status.security_protocol.as_str()
        ),
        ("CONTROLLER", "SSL")
    );
    assert_eq!(status.client_secret.as_deref(), Some("kq-client-tls"));
}

#[test]
fn the_brokers_bootstrap_follows_spec_replicas_and_plaintext_has_no_tls_keys() {
    use super::brokers::{broker_connection, build_broker_configmap};
    let spec = "replicas: 5\nimage: kraft:1\nstorage:\n  size: 1Gi\ntls:\n  enabled: false";
    let q = valid(spec, &status(true));
    let data = build_broker_configmap(&q).data.expect("data");
    let servers = &data["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"];
    assert_eq!(servers.split(',').count(), 5, "{servers}");
    assert!(
        servers.ends_with("kq-4.kq.ns.svc.cluster.local:9093"),
        "{servers}"
    );
    assert!(
        data["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].starts_with("CONTROLLER:PLAINTEXT,"),
        "{data:?}"
    );
    assert!(!data.keys().any(|k| k.contains("_SSL_")), "{data:?}");
    let status = broker_connection(&q);
    assert_eq!(status.security_protocol, "PLAINTEXT");
    assert_eq!(status.client_secret, None);
}

#[test]
fn with_an_issuer_ref_the_brokers_keystore_is_cert_managers_combined_pem() {
    use super::brokers::build_broker_configmap;
    let spec =
        "replicas: 3\nimage: kraft:1\nstorage:\n  size: 1Gi\ntls:\n  issuerRef:\n    name: corp-ca";
    let data = build_broker_configmap(&valid(spec, &status(false)))
        .data
        .expect("data");
    assert_eq!(
        data["KAFKA_LISTENER_NAME_CONTROLLER_SSL_KEYSTORE_LOCATION"],
        "/etc/kraft-client/tls-combined.pem"
    );
}
