//! A follower whose oldest segment lost a flushed byte while it was stopped
//! refuses to start, naming the segment and the offset, instead of
//! truncating its log and voting without the records it acknowledged; the
//! committed data stays intact on the other voters.
//!
//! Issue 21: "a voter that lost data never votes as if it had it".

mod support;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use support::{Mode, QuorumBuilder, batches_below, wait_for};

const ELECTION: Duration = Duration::from_secs(20);

/// The segment files of a partition directory, in offset order.
fn segments(partition: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(partition)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn a_flipped_byte_in_a_followers_oldest_segment_stops_it_naming_the_segment() {
    // Small segments: the idle leader's no-op records roll one every few
    // seconds, so the oldest segment lies below the recovery point.
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .property("metadata.log.segment.bytes", 512)
        .format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let follower = *ids.iter().find(|id| **id != leader).expect("a follower");
    quorum.wait_for_follower(follower, leader, ELECTION);
    let partition = quorum.node(follower).log_dir.join("__cluster_metadata-0");
    wait_for(
        Duration::from_secs(60),
        "the follower to roll three segments",
        || (segments(&partition).len() >= 4).then_some(()),
    );
    quorum.kill(follower);
    let committed = quorum
        .node(leader)
        .high_watermark()
        .expect("the leader's high watermark");

    let oldest = segments(&partition).remove(0);
    let base: i64 = oldest
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .expect("a segment named by its base offset");
    let mut bytes = std::fs::read(&oldest).expect("read the oldest segment");
    let before = bytes.len();
    bytes[30] ^= 0x01; // the first batch's base timestamp, under its CRC
    std::fs::write(&oldest, &bytes).expect("flip a byte");

    quorum.start(follower);
    let status = quorum.wait_exit(follower, ELECTION);
    assert!(!status.success(), "{status}");
    let lines = quorum
        .node(follower)
        .output_lines("below the recovery point");
    let line = lines.first().unwrap_or_else(|| {
        panic!(
            "no refusal in the output:\n{}",
            quorum.node(follower).output_tail(20)
        )
    });
    assert!(line.contains(&oldest.display().to_string()), "{line}");
    assert!(line.contains(&format!("offset {base} ")), "{line}");
    assert!(line.contains("format it anew"), "{line}");
    assert_eq!(
        std::fs::metadata(&oldest).expect("still there").len() as usize,
        before,
        "the damaged segment was not truncated"
    );

    // The others still hold every committed record, and the same ones.
    let others: Vec<i32> = ids.iter().copied().filter(|id| *id != follower).collect();
    for id in &others {
        quorum.kill(*id);
    }
    let dumps: Vec<Vec<String>> = others
        .iter()
        .map(|id| batches_below(&quorum.dump_log(*id), committed))
        .collect();
    assert!(!dumps[0].is_empty());
    assert_eq!(dumps[0], dumps[1]);
    let last = dumps[0].last().expect("a batch");
    assert!(last.contains("batch base_offset="), "{last}");
}
