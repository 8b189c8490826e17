//! Recovery of a partition directory on open: the scan of every segment, the
//! truncation of a damaged tail above the recovery point, and the refusal to
//! open when damage lies below it.
//!
//! # Policy
//!
//! Every segment is checked batch by batch (header, CRC32C, offsets
//! contiguous from the segment's base offset, partition leader epochs never
//! going down: that field is not covered by the CRC). The metadata log is small
//! (snapshots keep it so), and checking what lies below the recovery point
//! too is what lets a disk that lost flushed data be found at all. What is
//! done with the first damaged batch depends on where it lies:
//!
//! - **at or above the recovery point** ([`super::recovery_point`]), or
//!   anywhere when the log has no recovery point file yet (a log written by
//!   an older version: Kafka's `LogSegment.recover` policy): a torn batch,
//!   a zero-filled tail, a CRC failure or a base offset that breaks the
//!   sequence is what a crash can leave behind unflushed writes. The segment
//!   is truncated right before it and fsynced, every later segment is
//!   deleted, and a `tracing::warn!` names the file and offset; nothing at
//!   or after it is ever served;
//! - **below the recovery point**: those bytes were fsynced before the
//!   recovery point was written, so the disk lost data this node may have
//!   acknowledged to a leader. Truncating would let the node vote as if it
//!   still had them (how Raft loses committed data), so the log refuses to
//!   open with [`LogError::DamagedBelowRecoveryPoint`], naming the file, the
//!   offset and the way out (the volume is treated as lost). A log that
//!   ends below the recovery point (a segment's tail cut off) is refused
//!   the same way.
//!
//! Besides: the offset index is rebuilt from the scan (rewritten when it
//! differs), a hole between two segments refuses to open
//! ([`LogError::Corrupt`]), and the epoch entries are collected for the
//! leader epoch cache.
//!
//! Owns the scan and what it decides about damage; it must not touch
//! snapshots nor write the recovery point (the caller does, once every
//! segment is fsynced).

use std::path::Path;

use super::{
    LogError, Result,
    epoch_cache::EpochEntry,
    fs::{Fs, fsync_dir_on, io_err},
    segment::{self, Segment},
};

/// What a scan of the segments left: the segments kept and the epochs seen.
#[derive(Debug)]
pub(super) struct Recovered {
    /// Ascending by base offset; may be empty (no segment file at all).
    pub segments: Vec<Segment>,
    /// One entry per epoch, in log order, from the batches kept.
    pub entries: Vec<EpochEntry>,
}

/// Base offsets of the `%020d.log` files in `dir`, ascending.
///
/// Errors: [`LogError::Io`].
pub(super) fn segment_bases(fs: &Fs, dir: &Path) -> Result<Vec<i64>> {
    let mut bases = Vec::new();
    for path in fs.list_dir(dir).map_err(io_err("listing", dir))? {
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".log"))
        else {
            continue;
        };
        if stem.len() == 20
            && let Ok(base) = stem.parse::<i64>()
        {
            bases.push(base);
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

/// Scans and recovers every segment of `dir` as the module doc says;
/// `recovery_point` is the offset read from the checkpoint file (`None`
/// without one).
///
/// Errors: [`LogError::DamagedBelowRecoveryPoint`], [`LogError::Corrupt`] (a
/// hole between segments), [`LogError::Io`].
pub(super) fn recover_segments(
    fs: &Fs,
    dir: &Path,
    index_interval_bytes: u64,
    recovery_point: Option<i64>,
) -> Result<Recovered> {
    let bases = segment_bases(fs, dir)?;
    let mut segments: Vec<Segment> = Vec::new();
    let mut entries: Vec<EpochEntry> = Vec::new();
    let mut damaged = false;
    for (i, &base) in bases.iter().enumerate() {
        if damaged {
            let path = dir.join(segment::log_file_name(base));
            tracing::warn!(file = %path.display(), "deleting a segment after a damaged one");
            fs.remove_file(&path).map_err(io_err("deleting", &path))?;
            let index = dir.join(segment::index_file_name(base));
            let _ = fs.remove_file(&index);
            continue;
        }
        if let Some(previous) = segments.last()
            && previous.next_offset() != base
        {
            return Err(LogError::Corrupt {
                path: dir.join(segment::log_file_name(base)),
                reason: format!(
                    "segment starts at offset {base} but the previous one ends at {}",
                    previous.next_offset()
                ),
            });
        }
        let (mut segment, damage) =
            Segment::open_and_scan(fs, dir, base, index_interval_bytes, |h| {
                let epoch = h.partition_leader_epoch;
                match entries.last() {
                    // The partition leader epoch sits outside the CRC: a lower
                    // one than the batch before it is damage too.
                    Some(last) if epoch < last.epoch => {
                        return Some(format!(
                            "partition leader epoch {epoch} below the previous batch's {}",
                            last.epoch
                        ));
                    }
                    Some(last) if epoch == last.epoch => {}
                    _ => entries.push(EpochEntry {
                        epoch,
                        start_offset: h.base_offset,
                    }),
                }
                None
            })?;
        if let Some(damage) = damage {
            if let Some(point) = recovery_point
                && damage.offset < point
            {
                return Err(LogError::DamagedBelowRecoveryPoint {
                    path: segment.log_path().to_path_buf(),
                    offset: damage.offset,
                    position: damage.position,
                    reason: damage.reason,
                    recovery_point: point,
                });
            }
            tracing::warn!(
                file = %segment.log_path().display(),
                offset = damage.offset,
                position = damage.position,
                reason = %damage.reason,
                "truncating the log at a damaged batch"
            );
            segment.truncate_to(damage.position, damage.offset)?;
            damaged = i + 1 < bases.len();
        }
        segments.push(segment);
    }
    if damaged {
        fsync_dir_on(fs, dir)?;
    }
    Ok(Recovered { segments, entries })
}

/// Refuses a log that ends below the recovery point (the tail of its last
/// segment, or whole segments, were cut off after they were fsynced).
///
/// Errors: [`LogError::DamagedBelowRecoveryPoint`] naming the last segment.
pub(super) fn check_end(segments: &[Segment], recovery_point: Option<i64>) -> Result<()> {
    if let (Some(point), Some(last)) = (recovery_point, segments.last())
        && last.next_offset() < point
    {
        return Err(LogError::DamagedBelowRecoveryPoint {
            path: last.log_path().to_path_buf(),
            offset: last.next_offset(),
            position: last.size(),
            reason: "the log ends here".into(),
            recovery_point: point,
        });
    }
    Ok(())
}
