//! Interop over mTLS with Apache Kafka's `kafka-metadata-quorum`, of each
//! version of the run's `KAFKA_VERSIONS` (issues 19, 22): a 3-voter quorum of ours whose CONTROLLER listener is SSL with
//! `ssl.client.auth=required` (its peer connections too) is described by
//! Kafka's tool with `--command-config ssl.properties`, which then adds a
//! fourth controller (`add-controller`) and removes it again
//! (`remove-controller`), all over TLS. Certificates are made by `openssl`
//! (`support/pki.rs`): PEM keystores, as KIP-651 reads them. Built only with
//! the `interop` feature (`make test-interop`).

mod interop;
#[path = "support/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::{collections::BTreeMap, path::Path, time::Duration};

use interop::*;

const QUORUM_COMMAND: &str = "org.apache.kafka.tools.MetadataQuorumCommand";
const DIRS: [&str; 3] = [
    "LaBaIMiMRmy8YSD1cAd8Ew",
    "q6CGIHGkTStroizn5hrLMg",
    "Ww7qv0dqTt2yo2vBmEyd3A",
];

/// Kafka's client keys for mTLS with the PEM `keystore` and `truststore`.
fn ssl_client_properties(keystore: &Path, truststore: &Path) -> String {
    format!(
        "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={}\n\
         ssl.truststore.type=PEM\nssl.truststore.location={}\n",
        keystore.display(),
        truststore.display()
    )
}

/// Appends the mTLS listener keys to a node's properties; the node's file
/// also serves as the admin config of `add-controller` (Kafka's tool reads
/// the joining node's id and endpoints from it), hence `security.protocol`.
fn make_tls(node: &Node, keystore: &Path, truststore: &Path) {
    let mut text = std::fs::read_to_string(&node.config).expect("node properties");
    for (k, v) in pki::mtls_properties(keystore, truststore) {
        text.push_str(&format!("{k}={v}\n"));
    }
    text.push_str("security.protocol=SSL\n");
    std::fs::write(&node.config, text).expect("write node properties");
}

/// Kafka `version`'s `MetadataQuorumCommand` with `args`: (success, output).
fn kafka_quorum(version: &str, args: &[&str]) -> (bool, String) {
    try_kafka_at(version, QUORUM_COMMAND, args)
}

/// Kafka `version`'s `describe --status` over TLS, parsed; `None` while it
/// fails.
fn kafka_status(version: &str, address: &str, ssl: &str) -> Option<BTreeMap<String, String>> {
    let (ok, out) = kafka_quorum(
        version,
        &[
            "--bootstrap-controller",
            address,
            "--command-config",
            ssl,
            "describe",
            "--status",
        ],
    );
    ok.then(|| parse_status(&out))
}

crate::per_kafka_version!(describes_an_mtls_quorum_and_adds_and_removes_a_controller;
    kafka_4_1_2_describes_an_mtls_quorum_and_adds_and_removes_a_controller_over_tls => "4.1.2",
    kafka_4_4_0_describes_an_mtls_quorum_and_adds_and_removes_a_controller_over_tls => "4.4.0");

/// The case with Kafka `version`'s `MetadataQuorumCommand`.
fn describes_an_mtls_quorum_and_adds_and_removes_a_controller(version: &str) {
    let root = tempfile::tempdir().expect("temp dir");
    let ca = pki::Ca::new(&root.path().join("pki"), "test-ca");
    let keystore = ca.issue("controller", "/CN=controller/O=kraftwerk");
    let ssl = root.path().join("ssl.properties");
    let mut ssl_text = ssl_client_properties(&keystore, &ca.cert);
    ssl_text.push_str("request.timeout.ms=5000\ndefault.api.timeout.ms=15000\n");
    std::fs::write(&ssl, ssl_text).expect("write ssl.properties");
    let ssl = ssl.display().to_string();

    // Three voters (--initial-controllers) and a fourth node to add.
    let mut nodes = nodes(root.path(), 4);
    let initial = initial_controllers(&nodes[..3], &DIRS);
    for node in &nodes {
        make_tls(node, &keystore, &ca.cert);
    }
    for node in &nodes[..3] {
        run_ours(&[
            "format",
            "--config",
            &node.config.display().to_string(),
            "--cluster-id",
            CLUSTER_ID,
            "--initial-controllers",
            &initial,
        ]);
    }
    run_ours(&[
        "format",
        "--config",
        &nodes[3].config.display().to_string(),
        "--cluster-id",
        CLUSTER_ID,
        "--no-initial-controllers",
    ]);
    for node in &mut nodes[..3] {
        node.start();
    }
    let address = nodes[0].address();

    // Kafka's tool describes the quorum over mTLS: a leader, three voters.
    let status = wait_for(
        Duration::from_secs(60),
        &format!("Kafka {version}'s describe --status over TLS to show a leader"),
        || {
            kafka_status(version, &address, &ssl).filter(|s| {
                s.get("LeaderId").is_some_and(|l| l != "-1")
                    && s.get("HighWatermark")
                        .and_then(|h| h.parse::<i64>().ok())
                        .is_some_and(|h| h > 0)
            })
        },
    );
    assert_eq!(status["ClusterId"], CLUSTER_ID, "{status:?}");
    for dir in DIRS {
        assert!(status["CurrentVoters"].contains(dir), "{status:?}");
    }

    // Without TLS settings the same tool gets nothing from the TLS port.
    let admin = admin_config(root.path()).display().to_string();
    let (plain_ok, plain) = kafka_quorum(
        version,
        &[
            "--bootstrap-controller",
            &address,
            "--command-config",
            &admin,
            "describe",
            "--status",
        ],
    );
    assert!(!plain_ok, "a plaintext describe succeeded:\n{plain}");

    // The fourth node fetches as an observer, then Kafka's add-controller
    // (retried while the leader answers that it is not caught up yet).
    nodes[3].start();
    let dir_4 = properties(&nodes[3].dir.join("meta.properties"))["directory.id"].clone();
    wait_for(Duration::from_secs(60), "node 4 as an observer", || {
        kafka_status(version, &address, &ssl).filter(|s| s["CurrentObservers"].contains(&dir_4))
    });
    let joining = nodes[3].config.display().to_string();
    let mut last = String::new();
    wait_for(
        Duration::from_secs(90),
        "Kafka's add-controller over TLS to succeed",
        || {
            let (ok, out) = kafka_quorum(
                version,
                &[
                    "--bootstrap-controller",
                    &address,
                    "--command-config",
                    &joining,
                    "add-controller",
                ],
            );
            last = out;
            ok.then_some(())
        },
    );
    let status = wait_for(Duration::from_secs(30), "node 4 as a voter", || {
        kafka_status(version, &address, &ssl).filter(|s| s["CurrentVoters"].contains(&dir_4))
    });
    assert!(
        status["CurrentVoters"].contains(DIRS[0]),
        "{status:?}\n{last}"
    );

    let (ok, out) = kafka_quorum(
        version,
        &[
            "--bootstrap-controller",
            &address,
            "--command-config",
            &ssl,
            "remove-controller",
            "--controller-id",
            "4",
            "--controller-directory-id",
            &dir_4,
        ],
    );
    assert!(ok, "remove-controller over TLS failed:\n{out}");
    let status = wait_for(Duration::from_secs(30), "node 4 removed", || {
        kafka_status(version, &address, &ssl).filter(|s| !s["CurrentVoters"].contains(&dir_4))
    });
    for dir in DIRS {
        assert!(status["CurrentVoters"].contains(dir), "{status:?}");
    }
}
