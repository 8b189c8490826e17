//! The security cases of issue 20, ported from tests/e2e/security.sh (gone) with
//! its assertions: mTLS by default, a renewed certificate served without
//! restarts, the pause annotation, the identity a wiped status gets back,
//! the NetworkPolicy's content and certificates from a cert-manager issuer
//! (a stand-in: [`kraft_e2e::cert_manager`]). Every namespace enforces the
//! restricted Pod Security Standard ([`TestNamespace::create`]).

use std::time::{Duration, Instant};

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Pod, networking::v1::NetworkPolicy};
use kraft_e2e::{
    Must, cert_manager, describe, logs,
    tls::{self, ServedCertificate},
    watch,
};
use kraft_operator::crd::{ANNOTATION_PAUSE, DEFAULT_LISTENER_PORT, KraftQuorum};
use kube::{
    api::{ApiResource, DynamicObject, PostParams},
    runtime::watcher,
};
use serde_json::json;

use super::*;

/// The certificate pod `pod` of q serves, verified against the quorum's CA
/// (from the operator identity Secret, as security.sh's `openssl_to`) and
/// checked for the pod's DNS name; the operator's identity is offered as
/// client certificate.
pub(super) async fn served_by(
    ns: &TestNamespace,
    pod: &str,
) -> kraft_e2e::Result<ServedCertificate> {
    let (ca, keystore) = describe::operator_identity(ns, Q)
        .await?
        .ok_or_else(|| kraft_e2e::Error::Invalid("no operator identity Secret".into()))?;
    let addr = tls::pod_address(ns, pod, DEFAULT_LISTENER_PORT).await?;
    tls::served_certificate(addr, &tls::pod_dns_name(ns, pod, Q), &ca, Some(&keystore)).await
}

/// `name=uid` of every pod of q, sorted (security.sh's `pod_uids`).
async fn pod_uids(ns: &TestNamespace) -> Vec<String> {
    let pods = quorum::pods(ns, Q).await.must("list q's pods");
    let mut uids: Vec<String> = pods
        .iter()
        .map(|p| {
            format!(
                "{}={}",
                p.metadata.name.as_deref().unwrap_or_default(),
                p.metadata.uid.as_deref().unwrap_or_default()
            )
        })
        .collect();
    uids.sort();
    uids
}

/// Asserts that no container of q's `n` pods has restarted (security.sh's
/// `[[ "$(restarts NS)" == "0 0 0" ]]`).
async fn assert_no_restarts(ns: &TestNamespace, n: usize) {
    let pods = quorum::pods(ns, Q).await.must("list q's pods");
    let counts: Vec<(String, i32)> = pods
        .iter()
        .flat_map(|p| {
            let name = p.metadata.name.clone().unwrap_or_default();
            let statuses = p.status.as_ref().and_then(|s| s.container_statuses.clone());
            statuses
                .unwrap_or_default()
                .into_iter()
                .map(move |c| (format!("{name}/{}", c.name), c.restart_count))
        })
        .collect();
    assert!(
        counts.len() >= n && counts.iter().all(|(_, r)| *r == 0),
        "container restarts of q's {n} pods: {counts:?}, want all 0"
    );
}

/// A pod mounting the brokers' client Secret (restricted-compliant) runs
/// `kraft-controller quorum describe` against q-0's DNS name: its TLS
/// session is accepted (a certificate of the quorum's CA) and DescribeQuorum
/// (DESCRIBE) refused CLUSTER_AUTHORIZATION_FAILED: the brokers are no super
/// user, the operator's ACL grants them CLUSTER_ACTION only (review O1,
/// docs/operations.md). security.sh's `in_cluster_describe`.
pub(super) async fn in_cluster_describe_is_refused(ns: &TestNamespace, name: &str) {
    let bootstrap = format!(
        "{}:{DEFAULT_LISTENER_PORT}",
        tls::pod_dns_name(ns, "q-0", Q)
    );
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [{
                "name": "describe",
                "image": quorum::IMAGE,
                "command": ["kraft-controller"],
                "args": ["quorum", "--bootstrap-controller", bootstrap,
                         "--command-config", "/etc/kraft-client/client.properties",
                         "describe", "--status"],
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]},
                },
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                "volumeMounts": [{"name": "client-tls", "mountPath": "/etc/kraft-client", "readOnly": true}],
            }],
            "volumes": [{"name": "client-tls", "secret": {"secretName": "q-client-tls"}}],
        },
    }))
    .expect("a valid Pod manifest");
    ns.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
    let phase = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.clone());
    let done = wait::until(
        &ns.api::<Pod>(),
        name,
        &format!("pod {name} finished"),
        Duration::from_secs(60),
        move |p: Option<&Pod>| {
            p.and_then(phase)
                .is_some_and(|ph| ph == "Succeeded" || ph == "Failed")
        },
        |p| format!("phase {:?}", phase(p)),
    )
    .await
    .must("the describe pod finished")
    .expect("a finished pod exists");
    let read = || logs::pod(ns.name(), name);
    // dev/real-node/pod-logs.sh copies the kubelet's logs every second, so
    // the pod's output may reach its log file a little after the phase; the
    // short wait covers that.
    let refused = logs::wait_line(
        "CLUSTER_AUTHORIZATION_FAILED in the describe pod's log",
        Duration::from_secs(10),
        read,
        &["CLUSTER_AUTHORIZATION_FAILED"],
    )
    .await;
    assert!(
        phase(&done).as_deref() == Some("Failed") && refused.is_ok(),
        "pod {name} with the brokers' client Secret was not refused CLUSTER_AUTHORIZATION_FAILED \
         (phase {:?}): {}",
        phase(&done),
        read().unwrap_or_else(|e| format!("(log unreadable: {e})"))
    );
}

/// Fails the test unless `result` is the controller at `addr` itself
/// closing or refusing the connection (`QuorumError::Unreachable` at that
/// address): an answer, or an error of another controller the client was
/// sent to, is not the refusal asked for (`what`).
fn refused_by<T: std::fmt::Debug>(
    result: kraft_e2e::Result<T>,
    addr: std::net::SocketAddr,
    what: &str,
) {
    use kraft_operator::quorum::QuorumError;
    match result {
        Ok(d) => panic!("{what}: DescribeQuorum was answered: {d:?}"),
        Err(kraft_e2e::Error::Quorum {
            source: QuorumError::Unreachable { addr: at, message },
            ..
        }) if at == addr.to_string() => println!("{what}: refused by {at}: {message}"),
        Err(e) => panic!("{what}: not refused by {addr} itself: {e}"),
    }
}

/// (20a) a default KraftQuorum is mTLS: our certificate with the pod's DNS
/// name, a plaintext client gets no answer, a client without a certificate
/// is refused, a pod with the brokers' client Secret is authenticated but
/// may not describe (no super user), the operator's identity describes it,
/// 3 → 5 → 3 works (the operator's admin client is mTLS too), and the
/// namespace refuses a privileged pod (restricted standard enforced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_quorum_speaks_mtls() {
    let (_client, ns, _operator) = setup("e2e-rs-tls").await;
    ready_three(&ns).await;
    let served = served_by(&ns, "q-1")
        .await
        .unwrap_or_else(|e| panic!("q-1's certificate does not verify for its DNS name: {e}"));
    let q1_name = tls::pod_dns_name(&ns, "q-1", Q);
    assert!(
        served.dns_names.contains(&q1_name),
        "q-1's certificate lacks its DNS name {q1_name}: {:?}",
        served.dns_names
    );

    // The leader's own address: DescribeQuorum is answered by the leader,
    // and the host cannot resolve the DNS name another controller would
    // send the client to.
    let leader = quorum::leader_id(&quorum::get(&ns, Q).await.must("get kq/q"))
        .expect("a Ready quorum has a leader in its status");
    let at_leader = tls::pod_address(&ns, &format!("q-{leader}"), DEFAULT_LISTENER_PORT)
        .await
        .must("the leader's address");
    let operator = describe::admin_tls(&ns, Q)
        .await
        .must("the operator's identity")
        .expect("a default quorum has an operator identity Secret");
    // The control: the same request with the operator's identity is answered.
    tls::describe_at(at_leader, Some(operator))
        .await
        .must("DescribeQuorum with the operator's identity");
    refused_by(
        tls::describe_at(at_leader, None).await,
        at_leader,
        "plaintext",
    );
    let (ca, _) = describe::operator_identity(&ns, Q)
        .await
        .must("the quorum's CA")
        .expect("a default quorum has an operator identity Secret");
    let no_cert = tls::client_without_certificate(&ca).must("a client without a certificate");
    refused_by(
        tls::describe_at(at_leader, Some(no_cert)).await,
        at_leader,
        "no client certificate (ssl.client.auth=required)",
    );
    // Still the leader: the refusals were its own, not a redirect's.
    let operator = describe::admin_tls(&ns, Q)
        .await
        .must("the operator's identity")
        .expect("a default quorum has an operator identity Secret");
    tls::describe_at(at_leader, Some(operator))
        .await
        .must("DescribeQuorum with the operator's identity, after the refusals");

    in_cluster_describe_is_refused(&ns, "describe").await;
    let quorum_key = format!("{}/{Q}", ns.name());
    logs::wait_line(
        "the operator created the brokers' CLUSTER_ACTION ACL",
        Duration::from_secs(120),
        logs::operator,
        &["created the brokers' ACL", &quorum_key],
    )
    .await
    .must("the operator created the brokers' CLUSTER_ACTION ACL");

    quorum::scale(&ns, Q, 5).await.must("scale kq/q to 5");
    wait::ready(&ns, Q, 5, SCALE_TIMEOUT)
        .await
        .must("5 voters Ready over mTLS");
    voters_match(&ns, 5).await;
    quorum::scale(&ns, Q, 3).await.must("scale kq/q to 3");
    wait::ready(&ns, Q, 3, SCALE_TIMEOUT)
        .await
        .must("3 voters Ready over mTLS");

    // Enforcement is on: a privileged pod is refused in the namespace.
    let bad: Pod = serde_json::from_value(json!({
        "metadata": {"name": "bad"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "bad", "image": quorum::IMAGE, "securityContext": {"privileged": true}}],
        },
    }))
    .expect("a valid Pod manifest");
    match ns.api::<Pod>().create(&PostParams::default(), &bad).await {
        Ok(_) => panic!("a privileged pod was admitted: the restricted standard is not enforced"),
        Err(e) => assert!(
            e.to_string().contains("PodSecurity"),
            "the privileged pod was refused, but not by Pod Security admission: {e}"
        ),
    }
}

/// (20b) a certificate renewed (leaf lifetime forced to 120 s, so renewed
/// 80 s after issue): every controller serves the new one, no pod is replaced
/// or restarted, the quorum stays Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_certificate_is_served_without_restarts() {
    use kraft_operator::controller::certs::ANNOTATION_TEST_LEAF_LIFETIME;
    let (_client, ns, _operator) = setup("e2e-rs-renew").await;
    let kq = quorum::minimal_with(
        Q,
        3,
        json!({"metadata": {"annotations": {ANNOTATION_TEST_LEAF_LIFETIME: "120"}}}),
    )
    .must("the manifest");
    quorum::create(&ns, &kq).await.must("create kq/q");
    wait::ready(&ns, Q, 3, READY_TIMEOUT)
        .await
        .must("3 voters Ready");
    let before = pod_uids(&ns).await;
    let mut first = Vec::new();
    for pod in ["q-0", "q-1", "q-2"] {
        let served = served_by(&ns, pod)
            .await
            .unwrap_or_else(|e| panic!("no certificate served by {pod}: {e}"));
        first.push((pod, served.serial));
    }
    let start = Instant::now();
    // The quorum's one server Secret is renewed; each controller reloads
    // its mounted copy on its own, so each is asked.
    for (pod, was) in &first {
        let what = format!("{pod} serves a renewed certificate");
        let renewed = wait::poll(&what, Duration::from_secs(240), || async {
            let serial = served_by(&ns, pod).await?.serial;
            Ok((serial != *was).then_some(serial))
        })
        .await
        .must(&what);
        println!("{pod} served serial {was}, then {renewed}");
    }
    figure("certificate_renewed_after", start.elapsed());
    wait::ready(&ns, Q, 3, Duration::from_secs(60))
        .await
        .must("still Ready");
    let after = pod_uids(&ns).await;
    assert_eq!(after, before, "pods were replaced");
    assert_no_restarts(&ns, 3).await;
}

/// (20c) pause: with the annotation, a scale to 5 changes nothing for a
/// minute (watched: the StatefulSet's replicas and the pods), Paused=True;
/// removing it resumes the scale and the condition goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_freezes_the_quorum_until_the_annotation_goes() {
    const WINDOW: Duration = Duration::from_secs(60);
    let (_client, ns, _operator) = setup("e2e-rs-pause").await;
    ready_three(&ns).await;
    quorum::patch_merge(
        &ns,
        Q,
        json!({"metadata": {"annotations": {ANNOTATION_PAUSE: "true"}}}),
    )
    .await
    .must("annotate kq/q paused");
    wait::quorum(&ns, Q, "Paused=True", Duration::from_secs(60), |kq| {
        kq.status
            .as_ref()
            .is_some_and(|s| wait::condition(s, "Paused") == Some("True"))
    })
    .await
    .must("Paused=True");
    quorum::scale(&ns, Q, 5).await.must("scale kq/q to 5");
    // Watch for a minute: every StatefulSet replicas value and every pod seen.
    let sts = ns.api::<StatefulSet>();
    let pods = ns.api::<Pod>();
    let (replicas, pod_names) = tokio::join!(
        watch::seen_during(
            &sts,
            watcher::Config::default().fields(&format!("metadata.name={Q}")),
            WINDOW,
            |s: &StatefulSet| {
                s.spec
                    .as_ref()
                    .and_then(|s| s.replicas)
                    .map(|r| r.to_string())
                    .unwrap_or_default()
            },
        ),
        watch::seen_during(&pods, watcher::Config::default(), WINDOW, |p: &Pod| {
            format!("pod/{}", p.metadata.name.as_deref().unwrap_or_default())
        }),
    );
    let mut seen = replicas.must("watch statefulset q");
    seen.extend(pod_names.must("watch the pods"));
    assert!(!seen.is_empty(), "the watches saw nothing");
    let allowed = ["3", "pod/q-0", "pod/q-1", "pod/q-2"];
    let mut changed: Vec<&String> = seen
        .iter()
        .filter(|s| !allowed.contains(&s.as_str()))
        .collect();
    changed.sort();
    changed.dedup();
    assert!(
        changed.is_empty(),
        "something changed while paused: {changed:?} (all seen: {seen:?})"
    );
    let voters = quorum::status(&ns, Q).await.must("the status").voters.len();
    assert_eq!(voters, 3, "status.voters while paused");

    quorum::patch_merge(
        &ns,
        Q,
        json!({"metadata": {"annotations": {ANNOTATION_PAUSE: null}}}),
    )
    .await
    .must("remove the pause annotation");
    let kq = wait::ready(&ns, Q, 5, SCALE_TIMEOUT)
        .await
        .must("5 voters Ready after resuming");
    let paused = kq
        .status
        .as_ref()
        .and_then(|s| wait::condition(s, "Paused"));
    assert_eq!(paused, None, "condition Paused after resuming");
}

/// (20d) status wiped (`kubectl replace --subresource=status` with an empty
/// status): the same cluster id and initial voters come back, DescribeQuorum
/// agrees, no pod is replaced or restarted, no ClusterIdMismatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_status_gets_the_same_identity_back() {
    let (client, ns, _operator) = setup("e2e-rs-wiped").await;
    ready_three(&ns).await;
    wipe_status_and_recover(client, &ns, 3).await;
}

/// (20d) the same after a scale-up to 5: voters 3 and 4, added after
/// bootstrap (formatted with `--no-initial-controllers`, their directory
/// ids made by `format` and kept on their volumes, not in any record of the
/// operator's), are the same voters, with the same directory ids, after the
/// status is wiped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_status_after_a_scale_up_to_five_keeps_every_voters_directory_id() {
    let (client, ns, _operator) = setup("e2e-rs-wiped5").await;
    ready_three(&ns).await;
    quorum::scale(&ns, Q, 5).await.must("scale kq/q to 5");
    wait::ready(&ns, Q, 5, SCALE_TIMEOUT)
        .await
        .must("5 voters Ready");
    voters_match(&ns, 5).await;
    wipe_status_and_recover(client, &ns, 5).await;
}

/// Wipes the status of the Ready quorum q of `n` voters and checks that it
/// comes back with the same identity: cluster id, initial voters, every
/// voter's (node id, directory id), no pod replaced or restarted, no
/// ClusterIdMismatch.
async fn wipe_status_and_recover(client: Client, ns: &TestNamespace, n: usize) {
    let status = quorum::status(ns, Q).await.must("the status");
    let voter_keys = |s: &kraft_operator::crd::KraftQuorumStatus| {
        let mut keys: Vec<(i32, String)> = s
            .voters
            .iter()
            .map(|v| (v.node_id, v.directory_id.clone()))
            .collect();
        keys.sort();
        keys
    };
    let keys = voter_keys(&status);
    assert_eq!(keys.len(), n, "voters before the wipe: {keys:?}");
    let id = status
        .cluster_id
        .clone()
        .expect("a Ready quorum has a cluster id in its status");
    let voters = status.initial_voters.clone();
    let before = pod_uids(ns).await;

    let res = ApiResource::erase::<KraftQuorum>(&());
    let raw: kube::Api<DynamicObject> = kube::Api::namespaced_with(client, ns.name(), &res);
    // The operator writes the status too: a replace that lost the race
    // (409) is done again on the new version.
    let wiped = wait::poll(
        "the status of kq/q replaced by an empty one",
        Duration::from_secs(30),
        || {
            let raw = raw.clone();
            async move {
                let mut o = raw
                    .get(Q)
                    .await
                    .map_err(kraft_e2e::Error::kube("get kq/q"))?;
                o.data["status"] = json!({});
                let o = raw
                    .replace_status(Q, &PostParams::default(), &o)
                    .await
                    .map_err(kraft_e2e::Error::kube("replace the status of kq/q"))?;
                Ok(Some(o.data["status"].clone()))
            }
        },
    )
    .await
    .must("wipe the status of kq/q");
    // What is left is the CRD's defaults (bootstrapped, replicas, readyReplicas).
    assert!(
        ["clusterId", "initialVoters", "voters", "conditions"]
            .iter()
            .all(|k| wiped.get(k).is_none()),
        "the status after the replace still has its identity: {wiped}"
    );

    let want = id.clone();
    wait::quorum(
        ns,
        Q,
        "status has its identity back and is Ready",
        Duration::from_secs(120),
        move |kq| {
            kq.status.as_ref().and_then(|s| s.cluster_id.as_deref()) == Some(want.as_str())
                && wait::is_ready_with(kq, n)
        },
    )
    .await
    .must("status has its identity back and is Ready");
    let now = quorum::status(ns, Q).await.must("the status");
    assert_eq!(now.initial_voters, voters, "initial voters changed");
    assert_eq!(
        voter_keys(&now),
        keys,
        "voters (node id, directory id) changed"
    );
    voters_match(ns, n).await;
    assert_eq!(pod_uids(ns).await, before, "pods were replaced");
    assert_no_restarts(ns, n).await;
    let now = quorum::status(ns, Q).await.must("the status");
    let mismatch: Vec<_> = now
        .conditions
        .iter()
        .filter(|c| {
            [&c.type_, &c.reason, &c.message]
                .iter()
                .any(|t| t.contains("ClusterIdMismatch"))
        })
        .collect();
    assert!(
        mismatch.is_empty(),
        "ClusterIdMismatch reported: {mismatch:?}"
    );
}

/// (20e) the NetworkPolicy: 9093 from the quorum's pods, the operator and
/// the broker label; 9100 from the monitoring selector (content only: the
/// local cluster does not enforce NetworkPolicies).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_policy_has_the_rules_asked_for() {
    let (_client, ns, _operator) = setup("e2e-rs-netpol").await;
    let kq = quorum::minimal_with(
        Q,
        1,
        json!({"spec": {"networkPolicy": {
            "brokerPodLabels": {"app": "kafka-broker"},
            "monitoringNamespaceLabels": {"kubernetes.io/metadata.name": "monitoring"},
        }}}),
    )
    .must("the manifest");
    quorum::create(&ns, &kq).await.must("create kq/q");
    let np = wait::until(
        &ns.api::<NetworkPolicy>(),
        Q,
        "NetworkPolicy q exists",
        Duration::from_secs(60),
        |n: Option<&NetworkPolicy>| n.is_some(),
        |n| format!("{:?}", n.spec),
    )
    .await
    .must("NetworkPolicy q exists")
    .expect("the NetworkPolicy exists");
    let spec = serde_json::to_value(&np.spec).expect("a NetworkPolicy serializes");
    let own =
        json!({"app.kubernetes.io/instance": "q", "app.kubernetes.io/name": "kraft-controller"});
    assert_eq!(spec["podSelector"]["matchLabels"], own, "{spec}");
    assert_eq!(spec["policyTypes"], json!(["Ingress"]), "{spec}");
    let ingress = spec["ingress"].as_array().expect("ingress rules");
    assert_eq!(ingress.len(), 2, "two ingress rules: {spec}");
    let (listener, metrics) = (&ingress[0], &ingress[1]);
    assert_eq!(
        listener["ports"],
        json!([{"port": 9093, "protocol": "TCP"}]),
        "{listener}"
    );
    let peers = &listener["from"];
    assert_eq!(
        peers[0],
        json!({"podSelector": {"matchLabels": own}}),
        "{peers}"
    );
    assert_eq!(
        peers[1]["namespaceSelector"]["matchLabels"],
        json!({"kubernetes.io/metadata.name": kraft_e2e::cluster::operator_namespace()}),
        "{peers}"
    );
    assert_eq!(
        peers[1]["podSelector"]["matchLabels"]["app.kubernetes.io/name"], "kraft-operator",
        "{peers}"
    );
    assert_eq!(
        peers[2],
        json!({"podSelector": {"matchLabels": {"app": "kafka-broker"}}}),
        "{peers}"
    );
    assert_eq!(
        metrics["ports"],
        json!([{"port": 9100, "protocol": "TCP"}]),
        "{metrics}"
    );
    assert_eq!(
        metrics["from"],
        json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]),
        "{metrics}"
    );
}

/// (20f) spec.tls.issuerRef: without cert-manager the quorum says so
/// (CertManagerMissing); with its API but no issuer, IssuerNotFound; with
/// the issuer, the operator writes the three Certificates (content checked)
/// and builds no pods; once their Secrets are filled (the test plays
/// cert-manager: [`cert_manager`]) the quorum runs on those certificates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_ref_uses_cert_manager_certificates() {
    const CRD_TIMEOUT: Duration = Duration::from_secs(120);
    const STANDIN_CA: &str = "e2e stand-in CA";
    let client = client().await.must("a client of the local cluster");
    cert_manager::remove_crds(&client, CRD_TIMEOUT)
        .await
        .must("no cert-manager CRDs (an earlier run's stand-in removed)");
    let (_client, ns, _operator) = setup("e2e-rs-certmgr").await;
    let kq = quorum::minimal_with(
        Q,
        1,
        json!({"spec": {"tls": {"issuerRef": {"name": "corp-ca"}}}}),
    )
    .must("the manifest");
    quorum::create(&ns, &kq).await.must("create kq/q");
    let degraded = wait::quorum(
        &ns,
        Q,
        "Degraded/CertManagerMissing",
        Duration::from_secs(60),
        |kq| wait::degraded_because(kq, "CertManagerMissing"),
    )
    .await
    .must("Degraded/CertManagerMissing");
    let message = degraded
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == "Degraded")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("cert-manager is not installed"),
        "the CertManagerMissing message: {message}"
    );

    cert_manager::install_crds(&client, CRD_TIMEOUT)
        .await
        .must("install the stand-in cert-manager CRDs");
    wait::quorum(
        &ns,
        Q,
        "Degraded/IssuerNotFound",
        Duration::from_secs(60),
        |kq| wait::degraded_because(kq, "IssuerNotFound"),
    )
    .await
    .must("Degraded/IssuerNotFound");
    cert_manager::create_ca_issuer(&ns, "corp-ca", "corp-ca")
        .await
        .must("create Issuer corp-ca");
    let certificates = cert_manager::certificates(&ns);
    wait::poll(
        "three Certificates written",
        Duration::from_secs(60),
        || async {
            let n = certificates
                .list(&Default::default())
                .await
                .map_err(kraft_e2e::Error::kube("list the Certificates"))?
                .items
                .len();
            Ok((n == 3).then_some(()))
        },
    )
    .await
    .must("three Certificates written");
    let cert = certificates.get("q-tls").await;
    let cert = cert.unwrap_or_else(|e| panic!("get Certificate q-tls: {e}"));
    let spec = &cert.data["spec"];
    assert_eq!(
        spec["issuerRef"],
        json!({"name": "corp-ca", "kind": "Issuer", "group": "cert-manager.io"}),
        "{spec}"
    );
    assert_eq!(spec["secretName"], "q-tls", "{spec}");
    assert_eq!(
        spec["commonName"],
        format!("kraft-controller.{}.q", ns.name()),
        "{spec}"
    );
    let q0_name = tls::pod_dns_name(&ns, "q-0", Q);
    let dns_names = spec["dnsNames"].as_array().cloned().unwrap_or_default();
    assert!(dns_names.contains(&json!(q0_name)), "{spec}");
    assert_eq!(spec["duration"], "2160h", "{spec}");
    assert_eq!(spec["renewBefore"], "720h", "{spec}");
    let formats = spec["additionalOutputFormats"].as_array().cloned();
    assert!(
        formats
            .unwrap_or_default()
            .contains(&json!({"type": "CombinedPEM"})),
        "{spec}"
    );
    let sts = ns.api::<StatefulSet>().get_opt(Q).await;
    assert!(
        sts.unwrap_or_else(|e| panic!("get statefulset q: {e}"))
            .is_none(),
        "pods built before the certificates exist"
    );

    let ca = cert_manager::StandinCa::new(STANDIN_CA).must("the stand-in CA");
    let secrets = cert_manager::issue_all(&ns, &ca)
        .await
        .must("issue the Certificates");
    println!("issued {secrets:?}");
    wait::ready(&ns, Q, 1, READY_TIMEOUT)
        .await
        .must("1 voter Ready on cert-manager's certificates");
    let operator_tls = describe::operator_secret(Q);
    let combined = tls::secret_text(&ns, &operator_tls, "tls-combined.pem")
        .await
        .must("the operator's certificate");
    let addr = tls::pod_address(&ns, "q-0", DEFAULT_LISTENER_PORT)
        .await
        .must("q-0's address");
    let served = tls::served_certificate(addr, &q0_name, ca.cert_pem(), Some(&combined))
        .await
        .unwrap_or_else(|e| panic!("q-0 does not serve a certificate of the stand-in CA: {e}"));
    assert_eq!(
        served.issuer_common_names,
        [STANDIN_CA],
        "q-0 does not serve the issued certificate: {served:?}"
    );
    cert_manager::remove_crds(&client, CRD_TIMEOUT)
        .await
        .must("remove the stand-in cert-manager CRDs");
}
