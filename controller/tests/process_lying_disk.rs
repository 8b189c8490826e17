//! A follower whose disk raised a batch's partition leader epoch (a field no
//! CRC covers) while it was stopped refuses to start, naming the segment,
//! instead of starting at that epoch and winning an election with a log the
//! others do not have; the other two voters keep committing.
//!
//! Issue 21: "a healthy majority must never exit because one voter's disk
//! lies" (the reproduction: epoch + 1000 made both healthy voters exit).

mod support;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use kraft_controller::record::iter_batches;
use support::{Mode, QuorumBuilder, wait_for};

const ELECTION: Duration = Duration::from_secs(20);

/// The newest segment file of a partition directory.
fn last_segment(partition: &Path) -> PathBuf {
    let mut out: Vec<PathBuf> = std::fs::read_dir(partition)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.pop().expect("a segment file")
}

#[test]
fn a_followers_batch_epoch_raised_on_disk_stops_it_and_the_others_keep_committing() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let follower = *ids.iter().find(|id| **id != leader).expect("a follower");
    quorum.wait_for_follower(follower, leader, ELECTION);
    quorum.kill(follower);

    // Raise the last batch's partition leader epoch by 1000: its CRC does
    // not cover that field, so the log's own recovery accepts it.
    let segment = last_segment(&quorum.node(follower).log_dir.join("__cluster_metadata-0"));
    let mut bytes = std::fs::read(&segment).expect("read the segment");
    let (position, epoch, offset) = {
        let mut iter = iter_batches(&bytes, true);
        let mut last = None;
        loop {
            let position = iter.position();
            match iter.next() {
                Some(Ok((h, _))) => {
                    last = Some((position, h.partition_leader_epoch, h.base_offset))
                }
                _ => break,
            }
        }
        last.expect("a whole batch in the segment")
    };
    // RecordBatch v2: baseOffset (8 bytes), batchLength (4), then
    // partitionLeaderEpoch (4, big-endian), outside the CRC'd part.
    bytes[position + 12..position + 16].copy_from_slice(&(epoch + 1000).to_be_bytes());
    std::fs::write(&segment, &bytes).expect("raise the epoch");

    quorum.start(follower);
    let status = quorum.wait_exit(follower, ELECTION);
    assert!(!status.success(), "{status}");
    let lines = quorum.node(follower).output_lines("above epoch");
    let line = lines.first().unwrap_or_else(|| {
        panic!(
            "no refusal in the output:\n{}",
            quorum.node(follower).output_tail(20)
        )
    });
    assert!(line.contains(&segment.display().to_string()), "{line}");
    assert!(
        line.contains(&format!(
            "batch at offset {offset} has partition leader epoch {}",
            epoch + 1000
        )),
        "{line}"
    );
    assert!(line.contains("treat this volume as lost"), "{line}");
    assert_eq!(
        std::fs::read(&segment).expect("still there"),
        bytes,
        "nothing was written to the segment"
    );

    // The other two keep committing, and neither exited.
    let others: Vec<i32> = ids.iter().copied().filter(|id| *id != follower).collect();
    let (leader, _) = quorum.wait_for_leader(&others, ELECTION);
    let before = quorum.node(leader).high_watermark().unwrap_or(-1);
    wait_for(ELECTION, "the high watermark to move on", || {
        (quorum.node(leader).high_watermark().unwrap_or(-1) > before + 2).then_some(())
    });
    for id in &others {
        quorum.node(*id).assert_alive();
    }
}
