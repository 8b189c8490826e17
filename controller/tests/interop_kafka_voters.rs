//! Interop with Apache Kafka's `kafka-metadata-quorum add-controller` and
//! `remove-controller` (issue 10, test 2; KIP-853): Kafka's tool, of each
//! version of the run's `KAFKA_VERSIONS` (issue 22), changes our voter set.
//! Built only with the `interop` feature (`make test-interop`).
//!
//! First, our own admin client checks KIP-853's DUPLICATE_VOTER: asked to add
//! itself, the standalone leader refuses.

mod interop;

use std::time::Duration;

use interop::*;
use kraft_controller::admin::{AdminClient, AdminError, Endpoint};

const QUORUM_COMMAND: &str = "org.apache.kafka.tools.MetadataQuorumCommand";
const DIR_1: &str = "LaBaIMiMRmy8YSD1cAd8Ew";
/// Kafka's `Errors.DUPLICATE_VOTER`.
const DUPLICATE_VOTER: i16 = 126;

/// Whether the controller at `address` implements AddRaftVoter: asked to add
/// `(1, DIR_1)`, already a voter, a KIP-853 leader answers DUPLICATE_VOTER.
fn answers_add_raft_voter(address: &str, port: u16) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let mut admin = AdminClient::connect(address, Duration::from_secs(5))
            .await
            .map_err(|e| format!("connecting: {e}"))?;
        let dir = kraft_controller::admin::parse_kafka_uuid(DIR_1)?;
        let endpoint = Endpoint {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port,
        };
        match admin.add_raft_voter(1, dir, &[endpoint], 2000).await {
            Err(AdminError::Kafka { code, .. }) if code == DUPLICATE_VOTER => Ok(()),
            other => Err(format!(
                "AddRaftVoter of an existing voter answered {other:?}"
            )),
        }
    })
}

crate::per_kafka_version!(adds_and_removes_a_controller_of_ours;
    kafka_4_1_2_metadata_quorum_adds_and_removes_a_controller_of_ours => "4.1.2",
    kafka_4_4_0_metadata_quorum_adds_and_removes_a_controller_of_ours => "4.4.0");

/// Case 2 with Kafka `version`'s `add-controller` and `remove-controller`.
fn adds_and_removes_a_controller_of_ours(version: &str) {
    let root = tempfile::tempdir().expect("temp dir");
    let mut nodes = nodes(root.path(), 2);
    run_ours(&[
        "format",
        "--config",
        &nodes[0].config.display().to_string(),
        "--cluster-id",
        CLUSTER_ID,
        "--directory-id",
        DIR_1,
        "--standalone",
    ]);
    run_ours(&[
        "format",
        "--config",
        &nodes[1].config.display().to_string(),
        "--cluster-id",
        CLUSTER_ID,
        "--no-initial-controllers",
    ]);
    nodes[0].start();
    let address = nodes[0].address();
    wait_for_leader(&address);
    answers_add_raft_voter(&address, nodes[0].port).unwrap_or_else(|why| {
        panic!("KIP-853: adding an existing voter must answer DUPLICATE_VOTER: {why}")
    });
    nodes[1].start();
    let admin = admin_config(root.path()).display().to_string();
    let joining = nodes[1].config.display().to_string();
    let dir_2 = properties(&nodes[1].dir.join("meta.properties"))["directory.id"].clone();
    // The joining node must fetch as an observer before it can be added.
    wait_for(Duration::from_secs(30), "node 2 as an observer", || {
        our_status(&address).filter(|s| s["CurrentObservers"].contains(&dir_2))
    });
    // Kafka's add-controller reads the joining node's id, directory id and
    // endpoints from its config and meta.properties; it is retried while the
    // leader answers that the observer is not caught up yet.
    wait_for(
        Duration::from_secs(60),
        "Kafka's add-controller to succeed",
        || {
            let output = std::process::Command::new(kafka_run_class())
                .env("KAFKA_VERSION", version)
                .args([
                    QUORUM_COMMAND,
                    "--bootstrap-controller",
                    &address,
                    "--command-config",
                    &joining,
                ])
                .arg("add-controller")
                .output()
                .expect("kafka-run-class runs");
            output.status.success().then_some(())
        },
    );
    let status = wait_for(Duration::from_secs(30), "node 2 as a voter", || {
        our_status(&address).filter(|s| s["CurrentVoters"].contains(&dir_2))
    });
    assert!(status["CurrentVoters"].contains(DIR_1), "{status:?}");

    kafka_at(
        Some(version),
        QUORUM_COMMAND,
        &[
            "--bootstrap-controller",
            &address,
            "--command-config",
            &admin,
            "remove-controller",
            "--controller-id",
            "2",
            "--controller-directory-id",
            &dir_2,
        ],
    );
    let status = wait_for(Duration::from_secs(30), "node 2 removed", || {
        our_status(&address).filter(|s| !s["CurrentVoters"].contains(&dir_2))
    });
    assert!(status["CurrentVoters"].contains(DIR_1), "{status:?}");
}
