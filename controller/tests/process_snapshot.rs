//! Process tests of snapshots of the metadata image (KIP-630): every node
//! writes `<end offset>-<epoch>.checkpoint` files once
//! `metadata.log.max.record.bytes.between.snapshots` of committed batches
//! were applied, in Kafka's framing, and a restarted node loads the latest
//! one into its image before replaying the log after it.

mod support;

use std::{path::Path, process::Command, time::Duration};

use support::{BIN, Mode, QuorumBuilder, wait_for};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Frozen snapshots of a partition dir with an end offset above 0 (the
/// `0-0` bootstrap checkpoint left out), ascending.
fn snapshots(log_dir: &Path) -> Vec<String> {
    let partition = log_dir.join("__cluster_metadata-0");
    let mut names: Vec<String> = std::fs::read_dir(&partition)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".checkpoint") && !n.starts_with("00000000000000000000-"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn every_node_writes_snapshots_past_the_byte_threshold_and_loads_the_latest_on_restart() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        // ~70-byte no-op batches every 20 ms: a snapshot every second or so.
        .property("metadata.log.max.record.bytes.between.snapshots", 1024)
        .property("metadata.max.idle.interval.ms", 20)
        .format();
    quorum.start_all();
    let ids = quorum.ids();
    quorum.wait_for_leader(&ids, TIMEOUT);
    for &id in &ids {
        let dir = quorum.node(id).log_dir.clone();
        wait_for(TIMEOUT, "two snapshots on every node", || {
            (snapshots(&dir).len() >= 2).then_some(())
        });
    }
    for &id in &ids {
        quorum.terminate(id);
        quorum.wait_exit(id, TIMEOUT);
    }

    // The latest snapshot of each node is Kafka-framed and names its records.
    for &id in &ids {
        let dir = quorum.node(id).log_dir.clone();
        let latest = snapshots(&dir).pop().expect("a snapshot");
        let out = Command::new(BIN)
            .arg("dump-log")
            .arg(dir.join("__cluster_metadata-0").join(&latest))
            .output()
            .expect("run dump-log");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        for needle in [
            "SNAPSHOT_HEADER",
            "KRAFT_VERSION",
            "KRAFT_VOTERS",
            "SNAPSHOT_FOOTER",
        ] {
            assert!(text.contains(needle), "{latest} lacks {needle}:\n{text}");
        }
    }

    quorum.start_all();
    quorum.wait_for_leader(&ids, TIMEOUT);
    for &id in &ids {
        let node = quorum.node(id);
        wait_for(
            TIMEOUT,
            "the restarted node to load its latest snapshot",
            || {
                (!node
                    .output_lines("metadata image loaded from the latest snapshot")
                    .is_empty())
                .then_some(())
            },
        );
        let before = node.high_watermark().unwrap_or(-1);
        wait_for(TIMEOUT, "commits after the restart", || {
            node.high_watermark().filter(|hw| *hw > before)
        });
        assert!(
            node.output_lines("ERROR").is_empty(),
            "{}",
            node.output_tail(30)
        );
    }
}
