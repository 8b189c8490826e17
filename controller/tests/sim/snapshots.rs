//! Snapshots (KIP-630) in the sim: each node's state digest, the snapshots
//! it writes at its high watermark, and the check that every snapshot
//! written or installed matches the committed history.
#![allow(clippy::wildcard_imports)]

use super::*;

// ---- snapshots (KIP-630) ------------------------------------------------------

/// Everything below this offset is covered by the snapshot at the log start
/// (0 when the log starts at 0).
pub(super) fn covered_by_snapshot(log: &SimLog) -> i64 {
    let start = log.start_offset();
    log.earliest_snapshot_id()
        .filter(|s| s.offset == start)
        .map_or(0, |s| s.offset)
}

/// Extends a digest of committed batches by one batch (FNV-1a over its
/// identity).
pub(super) fn digest_step(mut h: u64, sig: &BatchSig) -> u64 {
    let mut bytes = Vec::with_capacity(24);
    bytes.extend_from_slice(&sig.base_offset.to_be_bytes());
    bytes.extend_from_slice(&sig.last_offset.to_be_bytes());
    bytes.extend_from_slice(&sig.epoch.to_be_bytes());
    bytes.extend_from_slice(&sig.crc.to_be_bytes());
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const DIGEST_SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// The state a snapshot holds in the simulation: the digest of every
/// committed batch below its end offset, and that offset.
pub(super) fn snapshot_state(bytes: &[u8]) -> Option<(u64, i64)> {
    for item in iter_batches(bytes, true) {
        let (header, batch) = item.ok()?;
        if header.is_control() {
            continue;
        }
        let decoded = DecodedBatch::decode(batch).ok()?;
        let value = decoded.records.first()?.value.clone()?;
        if value.len() != 16 {
            return None;
        }
        let digest = u64::from_be_bytes(value[..8].try_into().ok()?);
        let offset = i64::from_be_bytes(value[8..].try_into().ok()?);
        return Some((digest, offset));
    }
    None
}

impl Sim {
    /// The digest of the committed history below `offset`.
    pub(super) fn committed_digest(&self, offset: i64) -> u64 {
        self.committed
            .range(..offset)
            .map(|(_, s)| s)
            .fold(DIGEST_SEED, digest_step)
    }

    /// Snapshot `snapshot_id` of node `id` must hold exactly the committed
    /// history below its end offset: committed data is identical across
    /// snapshot boundaries.
    pub(super) fn check_snapshot(&self, id: i32, snapshot_id: OffsetAndEpoch, what: &str) {
        let engine = self.engine(id).expect("up");
        let Some(bytes) = engine.read_snapshot(snapshot_id).expect("reads") else {
            self.fail(format!(
                "node {id} {what} snapshot {snapshot_id} it does not hold"
            ));
        };
        let Some((digest, offset)) = snapshot_state(&bytes) else {
            self.fail(format!(
                "node {id} {what} snapshot {snapshot_id} without state"
            ));
        };
        if offset != snapshot_id.offset
            || snapshot_id.offset > self.committed_hw
            || digest != self.committed_digest(offset)
        {
            self.fail(format!(
                "node {id} {what} snapshot {snapshot_id} (state at {offset}) that differs from the committed history below it (committed to {})",
                self.committed_hw
            ));
        }
    }

    /// Takes a snapshot on node `id` at its high watermark once it passed
    /// the latest snapshot by `snapshot_every` offsets, from the node's own
    /// data: its latest snapshot's digest extended by its log up to there.
    pub(super) fn maybe_snapshot(&mut self, id: i32) {
        let Some(every) = self.cfg.snapshot_every else {
            return;
        };
        let Some(engine) = self.engine(id) else {
            return;
        };
        let log = engine.log();
        let Some(hw) = engine.high_watermark() else {
            return;
        };
        // A snapshot only of what this node holds durably.
        let at = hw.min(log.flushed_end_offset());
        let latest = log
            .latest_snapshot_id()
            .filter(|s| s.offset > 0)
            .map_or(0, |s| s.offset);
        if at < latest + every || at <= log.start_offset() {
            return;
        }
        let (mut digest, from) = match log.latest_snapshot_id().filter(|s| s.offset > 0) {
            Some(s) => {
                let bytes = log
                    .read_snapshot(s)
                    .expect("reads")
                    .expect("the latest snapshot exists");
                let Some((digest, _)) = snapshot_state(&bytes) else {
                    self.fail(format!("node {id} holds snapshot {s} without state"));
                };
                (digest, s.offset)
            }
            None => (DIGEST_SEED, 0),
        };
        if from < log.start_offset() {
            self.fail(format!(
                "node {id} log starts at {} above its latest snapshot {from}",
                log.start_offset()
            ));
        }
        let mut epoch = None;
        for sig in batches_of(log, from) {
            if sig.base_offset >= at {
                break;
            }
            digest = digest_step(digest, &sig);
            epoch = Some(sig.epoch);
        }
        let Some(epoch) = epoch else {
            return;
        };
        let snapshot_id = OffsetAndEpoch::new(at, epoch);
        let extras = if self.cfg.initial_voters.is_some() {
            vec![
                ControlRecord::KRaftVersion(
                    KRaftVersionRecord::default()
                        .with_version(0)
                        .with_k_raft_version(1),
                ),
                ControlRecord::Voters(engine.voters_at(at).to_record()),
            ]
        } else {
            Vec::new()
        };
        let mut state = Vec::with_capacity(16);
        state.extend_from_slice(&digest.to_be_bytes());
        state.extend_from_slice(&at.to_be_bytes());
        let bytes = encode_snapshot(
            epoch,
            self.now as i64,
            self.now as i64,
            &extras,
            &[Bytes::from(state)],
        )
        .expect("encodes");
        let engine = self
            .nodes
            .get_mut(&id)
            .and_then(|n| n.engine.as_mut())
            .expect("up");
        if let Err(e) = engine.write_snapshot(snapshot_id, &bytes) {
            if self.stop_if_disk_failed(id) {
                return;
            }
            self.fail(format!(
                "node {id} could not write snapshot {snapshot_id}: {e}"
            ));
        }
        self.snapshots_written += 1;
        self.check_snapshot(id, snapshot_id, "wrote");
    }
}
