//! A read-only survey of a stopped controller's metadata log directory, for
//! the offline tools (`recover`, `recover inspect`, `snapshot export`): what
//! `meta.properties` and `quorum-state` say, how far the log goes (end
//! offset, last epoch), the latest snapshot, and the voter set in effect at
//! the log's end (KIP-853: the latest `Voters` record of the latest snapshot
//! and of the log after it).
//!
//! Owns that reading only. It must never write: the segments are scanned
//! batch by batch with their CRCs checked, and the scan stops at the first
//! batch that does not parse (a torn tail, which `FileLog::open` would
//! truncate), instead of opening the log (whose recovery may rewrite files).

use std::path::{Path, PathBuf};

use kraft_common::METADATA_PARTITION_DIR;

use crate::{
    log::{
        ElectionState, LogError, MetaProperties, QuorumStateStore,
        snapshot::{list_snapshots, snapshot_file_name},
    },
    record::{
        ControlRecord, DecodedBatch, OffsetAndEpoch, RecordError, VotersRecord, iter_batches,
    },
};

/// Errors of the survey, each naming the file.
#[derive(Debug, thiserror::Error)]
pub enum SurveyError {
    /// The directory holds no `meta.properties`: not a formatted volume.
    #[error("{0} holds no meta.properties: not a formatted metadata log directory")]
    NotFormatted(PathBuf),
    /// A file could not be read or listed.
    #[error("reading {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A log file (meta.properties, quorum-state, snapshots) is unreadable.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A snapshot's batches or control records do not decode.
    #[error("snapshot {file} is damaged: {source}")]
    Snapshot {
        /// The snapshot file name.
        file: String,
        /// What is wrong.
        source: RecordError,
    },
}

/// Result alias of this module.
pub type Result<T, E = SurveyError> = std::result::Result<T, E>;

/// What a metadata log directory holds, as far as can be known offline.
#[derive(Debug, Clone)]
pub struct LogSurvey {
    /// The `metadata.log.dir`.
    pub log_dir: PathBuf,
    /// Its `meta.properties` (cluster id, node id, directory id).
    pub meta: MetaProperties,
    /// Its `quorum-state`, if any (`None` for a node that never started).
    pub election: Option<ElectionState>,
    /// First offset of the log's segments (0, or a snapshot's end offset).
    pub start_offset: i64,
    /// The log end offset (next offset to write) and the epoch of the last
    /// batch (of the latest snapshot for an empty log), after the last
    /// batch whose CRC checks.
    pub end: OffsetAndEpoch,
    /// The newest snapshot other than the bootstrap `0-0` checkpoint: its end
    /// offset is the highest offset this node can prove committed offline
    /// (snapshots are taken only of committed state; KRaft does not persist
    /// the high watermark).
    pub latest_snapshot: Option<OffsetAndEpoch>,
    /// The highest `kraft.version` in the snapshot and log (0 if none).
    pub kraft_version: i16,
    /// The voter set in effect at the log end and the offset of the record
    /// that set it (-1 for the bootstrap `0-0` checkpoint or a snapshot).
    pub voters: Option<(i64, VotersRecord)>,
    /// Bytes past the last good batch of the last segment (a torn tail), if
    /// any: `(segment file, byte position)`.
    pub torn_tail: Option<(PathBuf, u64)>,
}

impl LogSurvey {
    /// The highest epoch the node has seen: the quorum-state epoch or the
    /// log's last epoch, whichever is higher.
    pub fn highest_epoch(&self) -> i32 {
        self.election
            .map_or(0, |e| e.epoch)
            .max(self.end.epoch)
            .max(self.latest_snapshot.map_or(0, |s| s.epoch))
    }

    /// One line per voter: `id@host:port (directory id)`.
    pub fn voters_text(&self) -> String {
        match &self.voters {
            None => "none known".into(),
            Some((_, record)) => voters_text(record),
        }
    }
}

/// `id@host:port:directory-id, …` of a Voters record (first endpoint).
pub fn voters_text(record: &VotersRecord) -> String {
    record
        .voters
        .iter()
        .map(|v| {
            let endpoint = v.endpoints.first().map_or_else(
                || "no endpoint".into(),
                |e| format!("{}:{}", e.host, e.port),
            );
            format!(
                "{}@{endpoint}:{}",
                v.voter_id.0,
                kraft_common::kafka_uuid::to_string(v.voter_directory_id)
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SurveyError {
    let path = path.to_path_buf();
    move |source| SurveyError::Io { path, source }
}

/// Applies the KRaftVersion and Voters records of one control batch.
fn apply_controls(
    batch: DecodedBatch,
    kraft_version: &mut i16,
    voters: &mut Option<(i64, VotersRecord)>,
    at_offset: Option<i64>,
) -> std::result::Result<(), RecordError> {
    let offsets: Vec<i64> = batch.records.iter().map(|r| r.offset).collect();
    for (offset, control) in offsets.into_iter().zip(batch.control_records()?) {
        match control {
            ControlRecord::KRaftVersion(v) => {
                *kraft_version = (*kraft_version).max(v.k_raft_version)
            }
            ControlRecord::Voters(v) => *voters = Some((at_offset.unwrap_or(offset), v)),
            _ => {}
        }
    }
    Ok(())
}

/// Surveys `log_dir` (a `metadata.log.dir`) without writing anything.
///
/// Errors: [`SurveyError::NotFormatted`] without `meta.properties`; a
/// damaged snapshot; I/O errors. A torn or corrupt batch in the segments
/// ends the scan (reported in [`LogSurvey::torn_tail`]), it is no error.
pub fn survey(log_dir: &Path) -> Result<LogSurvey> {
    let meta =
        MetaProperties::read(log_dir)?.ok_or_else(|| SurveyError::NotFormatted(log_dir.into()))?;
    let partition = log_dir.join(METADATA_PARTITION_DIR);
    let election = if partition.is_dir() {
        QuorumStateStore::new(&partition).read()?
    } else {
        None
    };
    let snapshots = if partition.is_dir() {
        list_snapshots(&partition)?
    } else {
        Vec::new()
    };
    let latest_snapshot = snapshots.iter().copied().rfind(|s| s.offset > 0);
    let mut kraft_version = 0;
    let mut voters = None;
    // The voters at the latest snapshot (else the bootstrap checkpoint),
    // then those of the log after it (Kafka's KRaftControlRecordStateMachine).
    let base = latest_snapshot.or_else(|| snapshots.first().copied());
    if let Some(id) = base {
        let file = snapshot_file_name(id);
        let bytes = std::fs::read(partition.join(&file)).map_err(io(&partition.join(&file)))?;
        let damaged = |source| SurveyError::Snapshot {
            file: file.clone(),
            source,
        };
        for item in iter_batches(&bytes, true) {
            let (header, batch) = item.map_err(damaged)?;
            if header.is_control() {
                let decoded = DecodedBatch::decode(batch).map_err(damaged)?;
                apply_controls(decoded, &mut kraft_version, &mut voters, Some(-1))
                    .map_err(damaged)?;
            }
        }
    }
    let scan_from = latest_snapshot.map_or(0, |s| s.offset);

    let mut segments: Vec<(i64, PathBuf)> = Vec::new();
    if partition.is_dir() {
        for entry in std::fs::read_dir(&partition).map_err(io(&partition))? {
            let path = entry.map_err(io(&partition))?.path();
            let base = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".log"))
                .and_then(|n| n.parse::<i64>().ok());
            if let Some(base) = base {
                segments.push((base, path));
            }
        }
    }
    segments.sort();
    let start_offset = segments.first().map_or(scan_from, |(base, _)| *base).max(0);
    let mut end = OffsetAndEpoch::new(
        start_offset.max(latest_snapshot.map_or(0, |s| s.offset)),
        latest_snapshot.map_or(0, |s| s.epoch),
    );
    let mut torn_tail = None;
    'segments: for (_, path) in &segments {
        let bytes = std::fs::read(path).map_err(io(path))?;
        let mut position = 0u64;
        for item in iter_batches(&bytes, true) {
            let decoded = item.and_then(|(header, batch)| {
                let controls = if header.is_control() && header.next_offset() > scan_from {
                    Some(DecodedBatch::decode(batch)?)
                } else {
                    None
                };
                Ok((header, controls))
            });
            let Ok((header, controls)) = decoded else {
                torn_tail = Some((path.clone(), position));
                break 'segments;
            };
            position += header.size_in_bytes() as u64;
            if header.next_offset() > end.offset {
                end = OffsetAndEpoch::new(header.next_offset(), header.partition_leader_epoch);
            }
            if let Some(batch) = controls
                && apply_controls(batch, &mut kraft_version, &mut voters, None).is_err()
            {
                torn_tail = Some((path.clone(), position));
                break 'segments;
            }
        }
    }
    Ok(LogSurvey {
        log_dir: log_dir.to_path_buf(),
        meta,
        election,
        start_offset,
        end,
        latest_snapshot,
        kraft_version,
        voters,
        torn_tail,
    })
}
