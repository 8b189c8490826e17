//! Interop with Apache Kafka's `AclCommand` (issue 20's open point: brokers
//! that are not super users): a controller of ours over mTLS with Kafka's
//! StandardAuthorizer, `super.users` the controller's certificate only.
//!
//! A broker's certificate sends an Envelope (CLUSTER_ACTION on CLUSTER) and
//! is refused CLUSTER_AUTHORIZATION_FAILED; Kafka 4.1.2's `AclCommand
//! --bootstrap-controller --add --allow-principal … --operation
//! ClusterAction --cluster` stores the ACL; both 4.1.2's and 4.4.0's
//! `--list` show it; the same Envelope is now served, while ALTER
//! (CreateAcls from the broker's certificate) is still refused; Kafka
//! 4.4.0's `--remove` deletes it and the Envelope is refused again. With
//! one version in the run's `KAFKA_VERSIONS` (issue 22), that version's
//! tool does all three. Built only with the `interop` feature
//! (`make test-interop`).

mod interop;
#[path = "support/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::{net::IpAddr, path::Path, time::Duration};

use interop::*;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, DescribeQuorumRequest, RequestKind, ResponseKind,
    create_acls_request::AclCreation,
};
use kraft_controller::{
    server::envelope,
    wire::{
        self,
        client::{ClientConfig, Connection},
    },
};

const ACL_COMMAND: &str = "org.apache.kafka.tools.AclCommand";
const BROKER: &str = "User:CN=broker,O=kraftwerk";
const CONTROLLER: &str = "User:CN=controller,O=kraftwerk";
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

fn ssl_client_properties(keystore: &Path, truststore: &Path) -> String {
    format!(
        "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={}\n\
         ssl.truststore.type=PEM\nssl.truststore.location={}\n\
         request.timeout.ms=5000\ndefault.api.timeout.ms=20000\n",
        keystore.display(),
        truststore.display()
    )
}

/// One request over a fresh connection with `config`.
fn call(address: &str, config: ClientConfig, version: i16, body: RequestKind) -> ResponseKind {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let connection = Connection::connect(address, config)
            .await
            .expect("a TLS connection");
        connection.call(version, body).await.expect("an answer")
    })
}

/// The envelope error code of a forwarded DescribeQuorum sent with
/// `config` on behalf of the controller's principal.
fn envelope_error(address: &str, config: ClientConfig) -> i16 {
    let inner = wire::encode_request(
        ApiKey::DescribeQuorum,
        2,
        5,
        Some("forwarded"),
        &RequestKind::DescribeQuorum(DescribeQuorumRequest::default()),
    )
    .expect("encodes");
    let client: IpAddr = [127, 0, 0, 1].into();
    let body =
        RequestKind::Envelope(envelope::wrap_request(inner, CONTROLLER, client).expect("wraps"));
    match call(address, config, 0, body) {
        ResponseKind::Envelope(r) => r.error_code,
        other => panic!("not an envelope answer: {other:?}"),
    }
}

fn acl_command(version: &str, address: &str, ssl: &str, args: &[&str]) -> String {
    let mut all = vec!["--bootstrap-controller", address, "--command-config", ssl];
    all.extend_from_slice(args);
    kafka_at(Some(version), ACL_COMMAND, &all)
}

#[test]
fn kafkas_acl_command_grants_a_broker_cluster_action_lists_it_and_removes_it() {
    // The first version of the run adds, each lists, the last removes.
    let versions: Vec<&str> = ["4.1.2", "4.4.0"]
        .into_iter()
        .filter(|v| runs_on(v))
        .collect();
    let (Some(&adder), Some(&remover)) = (versions.first(), versions.last()) else {
        return;
    };
    let root = tempfile::tempdir().expect("temp dir");
    let ca = pki::Ca::new(&root.path().join("pki"), "test-ca");
    let keystore = ca.issue("controller", "/O=kraftwerk/CN=controller");
    let broker = ca.issue("broker", "/O=kraftwerk/CN=broker");
    let ssl = root.path().join("ssl.properties");
    std::fs::write(&ssl, ssl_client_properties(&keystore, &ca.cert)).expect("write");
    let ssl = ssl.display().to_string();

    let mut nodes = nodes(root.path(), 1);
    let mut text = String::new();
    for (k, v) in pki::mtls_properties(&keystore, &ca.cert) {
        text.push_str(&format!("{k}={v}\n"));
    }
    text.push_str(&format!(
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users={CONTROLLER}\n"
    ));
    nodes[0].append_config(&text);
    let initial = initial_controllers(&nodes, &["LaBaIMiMRmy8YSD1cAd8Ew"]);
    run_ours(&[
        "format",
        "--config",
        &nodes[0].config.display().to_string(),
        "--cluster-id",
        CLUSTER_ID,
        "--initial-controllers",
        &initial,
    ]);
    nodes[0].start();
    let address = nodes[0].address();
    let as_broker = || pki::client_config(Some(&broker), &ca.cert);

    // Before: the broker's certificate has no CLUSTER_ACTION (the wait also
    // covers the election: any answer means the node serves).
    let before = wait_for(Duration::from_secs(60), "an answer to the envelope", || {
        std::panic::catch_unwind(|| envelope_error(&address, as_broker())).ok()
    });
    assert_eq!(before, CLUSTER_AUTHORIZATION_FAILED);

    // Kafka 4.1.2 (or the one version) adds the ACL (retried until the
    // controller is active).
    wait_for(
        Duration::from_secs(60),
        "AclCommand --add to succeed",
        || {
            std::panic::catch_unwind(|| {
                acl_command(
                    adder,
                    &address,
                    &ssl,
                    &[
                        "--add",
                        "--allow-principal",
                        BROKER,
                        "--operation",
                        "ClusterAction",
                        "--cluster",
                    ],
                )
            })
            .ok()
        },
    );
    for &version in &versions {
        let listed = acl_command(version, &address, &ssl, &["--list", "--cluster"]);
        assert!(
            listed.contains(&format!("principal={BROKER}"))
                && listed.contains("operation=CLUSTER_ACTION")
                && listed.contains("permissionType=ALLOW"),
            "Kafka {version}'s --list:\n{listed}"
        );
    }

    // After: the envelope is served; ALTER is still refused.
    assert_eq!(envelope_error(&address, as_broker()), 0);
    let create = RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(vec![
        AclCreation::default()
            .with_resource_type(4)
            .with_resource_name("kafka-cluster".into())
            .with_resource_pattern_type(3)
            .with_principal(BROKER.into())
            .with_host("*".into())
            .with_operation(2)
            .with_permission_type(3),
    ]));
    match call(&address, as_broker(), 3, create) {
        ResponseKind::CreateAcls(r) => {
            assert_eq!(r.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED)
        }
        other => panic!("{other:?}"),
    }

    // Kafka 4.4.0 (or the one version) removes it; the envelope is refused
    // again.
    acl_command(
        remover,
        &address,
        &ssl,
        &[
            "--remove",
            "--force",
            "--allow-principal",
            BROKER,
            "--operation",
            "ClusterAction",
            "--cluster",
        ],
    );
    let listed = acl_command(remover, &address, &ssl, &["--list", "--cluster"]);
    assert!(!listed.contains(BROKER), "still listed:\n{listed}");
    assert_eq!(
        envelope_error(&address, as_broker()),
        CLUSTER_AUTHORIZATION_FAILED
    );
    let dump = run_ours(&["dump-log", &nodes[0].dir.display().to_string()]);
    assert!(
        dump.contains("ACCESS_CONTROL_ENTRY_RECORD(18)")
            && dump.contains("REMOVE_ACCESS_CONTROL_ENTRY_RECORD(19)"),
        "dump-log:\n{dump}"
    );
}
