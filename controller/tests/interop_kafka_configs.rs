//! Interop of IncrementalAlterConfigs (44) and DescribeConfigs (32) with
//! Apache Kafka's own `kafka-configs --bootstrap-controller` of 4.1.2
//! (`kafka.admin.ConfigCommand`) and 4.4.0
//! (`org.apache.kafka.tools.ConfigCommand`): both alter and describe the
//! cluster-wide broker defaults and a broker's own configs on our
//! controller, 4.4.0 gets Kafka's errors for a node that does not exist
//! and a topic that does not exist, and the configs survive a restart from the
//! snapshot. (Kafka's Admin client refuses a topic's DescribeConfigs over
//! `--bootstrap-controller`: `UnsupportedEndpointTypeException`; topic
//! configs go through brokers.) Needs Java and `make kafka-jars`; built
//! only with the `interop` feature (`make test-interop`). Each version
//! runs when it is in the run's `KAFKA_VERSIONS` (issue 22).

mod interop;

use std::time::Duration;

use interop::*;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The ConfigCommand class of Kafka `version`.
fn config_command(version: &str) -> &'static str {
    if version.starts_with("4.1") {
        "kafka.admin.ConfigCommand"
    } else {
        "org.apache.kafka.tools.ConfigCommand"
    }
}

/// Runs kafka-configs of `version` against `address`; (success, output).
fn kafka_configs(version: &str, address: &str, admin: &str, args: &[&str]) -> (bool, String) {
    let mut all = vec!["--bootstrap-controller", address, "--command-config", admin];
    all.extend_from_slice(args);
    try_kafka_at(version, config_command(version), &all)
}

#[test]
fn kafka_configs_of_both_versions_alter_and_describe_broker_configs_on_our_controller() {
    // (index, version): the index sets the cluster default each writes.
    let versions: Vec<(usize, &str)> = ["4.1.2", "4.4.0"]
        .into_iter()
        .enumerate()
        .filter(|(_, v)| runs_on(v))
        .collect();
    let Some(&(last_index, last)) = versions.last() else {
        return;
    };
    let root = tempfile::tempdir().expect("create a temp dir");
    let mut nodes = nodes(root.path(), 1);
    let config = nodes[0].config.display().to_string();
    run_ours(&[
        "format",
        "--config",
        &config,
        "--cluster-id",
        CLUSTER_ID,
        "--standalone",
    ]);
    nodes[0].append_config("metadata.log.max.record.bytes.between.snapshots=1\n");
    nodes[0].start();
    let address = nodes[0].address();
    let admin = admin_config(root.path()).display().to_string();
    wait_for(TIMEOUT, "the controller to be active", || {
        nodes[0]
            .log_text()
            .contains("quorum controller active")
            .then_some(())
    });

    for &(i, version) in &versions {
        let threads = format!("log.cleaner.threads={}", i + 2);
        let (ok, out) = kafka_configs(
            version,
            &address,
            &admin,
            &[
                "--entity-type",
                "brokers",
                "--entity-default",
                "--alter",
                "--add-config",
                &threads,
            ],
        );
        assert!(ok, "{version}: {out}");
        assert!(out.contains("Completed updating default config"), "{out}");
        let (ok, out) = kafka_configs(
            version,
            &address,
            &admin,
            &["--entity-type", "brokers", "--entity-default", "--describe"],
        );
        assert!(ok, "{version}: {out}");
        assert!(
            out.contains(&format!(
                "{threads} sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:{threads}}}"
            )),
            "{version}: {out}"
        );
        // This controller's own id: its dynamic configs over the defaults.
        let (ok, out) = kafka_configs(
            version,
            &address,
            &admin,
            &[
                "--entity-type",
                "brokers",
                "--entity-name",
                "1",
                "--alter",
                "--add-config",
                "log.cleaner.threads=9",
            ],
        );
        assert!(ok, "{version}: {out}");
        // A node that does not exist, a topic that does not exist (4.1's
        // tool describes first, which its Admin client sends to node 7
        // itself, or refuses for a topic over --bootstrap-controller: it
        // never reaches a controller, Kafka's or ours).
        if version.starts_with("4.1") {
            continue;
        }
        let (ok, out) = kafka_configs(
            version,
            &address,
            &admin,
            &[
                "--entity-type",
                "brokers",
                "--entity-name",
                "7",
                "--alter",
                "--add-config",
                "log.cleaner.threads=1",
            ],
        );
        assert!(!ok, "{version}: {out}");
        assert!(out.contains("No node with id 7 found."), "{version}: {out}");
        let (ok, out) = kafka_configs(
            version,
            &address,
            &admin,
            &[
                "--entity-type",
                "topics",
                "--entity-name",
                "nope",
                "--alter",
                "--add-config",
                "retention.ms=1",
            ],
        );
        assert!(!ok, "{version}: {out}");
        assert!(
            out.contains("UnknownTopicOrPartitionException"),
            "{version}: {out}"
        );
    }

    // Restarted from its snapshot: the configs are still there.
    nodes[0].stop();
    nodes[0].start();
    let out = wait_for(TIMEOUT, "a describe after the restart", || {
        let (ok, out) = kafka_configs(
            last,
            &address,
            &admin,
            &[
                "--entity-type",
                "brokers",
                "--entity-name",
                "1",
                "--describe",
            ],
        );
        ok.then_some(out)
    });
    let default = last_index + 2;
    assert!(
        out.contains(&format!("log.cleaner.threads=9 sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:log.cleaner.threads=9, DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads={default}}}")),
        "{out}"
    );
    assert!(
        nodes[0]
            .log_text()
            .contains("metadata image loaded from the latest snapshot"),
        "no snapshot was loaded"
    );
}
