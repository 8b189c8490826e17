//! `kraft-controller snapshot export`: a backup of the metadata, the latest
//! snapshot of a stopped or running controller's log copied to a file in
//! Kafka's `.checkpoint` format (KIP-630 `RecordsSnapshotWriter` framing, so
//! `kafka-dump-log --cluster-metadata-decoder` reads it); and the reading of
//! such a file back for `format --from-snapshot` (issue 26).
//!
//! Owns the copy and the check of the copied bytes (every batch whole, its
//! CRC right, a SnapshotHeader first and a SnapshotFooter last). It must not
//! write into a metadata log directory.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use bytes::Bytes;

use super::log_survey::{SurveyError, survey};
use crate::{
    log::{LogError, fs::write_atomically, partition_dir, snapshot::snapshot_file_name},
    record::{ControlRecord, DecodedBatch, RecordError, iter_batches},
};

/// Arguments of `snapshot`.
#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    #[command(subcommand)]
    command: SnapshotCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SnapshotCommand {
    /// Copies the latest snapshot of a metadata log directory to a file.
    Export(ExportArgs),
}

/// Arguments of `snapshot export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The controller's `metadata.log.dir`.
    #[arg(long, value_name = "DIR")]
    metadata_log_dir: PathBuf,
    /// The file to write (replaced atomically); an existing directory gets
    /// the snapshot's own name, `OFFSET-EPOCH.checkpoint`, which Kafka's
    /// `kafka-dump-log` needs to read it.
    #[arg(
        long,
        value_name = "FILE-or-DIR",
        required_unless_present = "output_dir",
        conflicts_with = "output_dir"
    )]
    output: Option<PathBuf>,
    /// Loop mode (decision D17): every `--every-seconds`, copy the latest
    /// snapshot into this existing directory as `OFFSET-EPOCH.checkpoint`
    /// unless it is there already, and keep the newest `--keep` copies.
    /// Runs until SIGTERM; never writes under the metadata log directory.
    #[arg(long, value_name = "DIR", requires_all = ["every_seconds", "keep"])]
    output_dir: Option<PathBuf>,
    /// Loop mode: seconds between two rounds (at least 1).
    #[arg(long, value_name = "SECONDS", requires = "output_dir")]
    every_seconds: Option<u64>,
    /// Loop mode: how many copies to keep (at least 1).
    #[arg(long, value_name = "COUNT", requires = "output_dir")]
    keep: Option<usize>,
}

/// Errors of `snapshot export` and of reading a snapshot file.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The directory could not be surveyed.
    #[error(transparent)]
    Survey(#[from] SurveyError),
    /// The log holds no snapshot beyond the bootstrap `0-0` checkpoint.
    #[error(
        "{0} holds no snapshot yet (only the bootstrap checkpoint): a controller writes one after metadata.log.max.record.bytes.between.snapshots or metadata.log.max.snapshot.interval.ms"
    )]
    NoSnapshot(PathBuf),
    /// The snapshot file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a whole snapshot.
    #[error("{path} is not a whole snapshot: {reason}")]
    NotASnapshot {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Writing the output failed.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// The data records of a snapshot's bytes, in order, after checking that
/// every batch is whole with a right CRC, the first holds a SnapshotHeader
/// and the last a SnapshotFooter (`path` names the file in errors).
///
/// Errors: [`SnapshotError::NotASnapshot`].
pub fn snapshot_records(path: &Path, bytes: &[u8]) -> Result<Vec<Bytes>, SnapshotError> {
    let bad = |reason: String| SnapshotError::NotASnapshot {
        path: path.to_path_buf(),
        reason,
    };
    let mut records = Vec::new();
    let mut first = None;
    let mut last = None;
    for item in iter_batches(bytes, true) {
        let (header, batch) = item.map_err(|e: RecordError| bad(e.to_string()))?;
        let decoded = DecodedBatch::decode(batch).map_err(|e| bad(e.to_string()))?;
        if header.is_control() {
            let controls = decoded.control_records().map_err(|e| bad(e.to_string()))?;
            if first.is_none() {
                first = controls.first().cloned();
            }
            last = controls.last().cloned();
        } else {
            if first.is_none() {
                return Err(bad("a data batch before the SnapshotHeader".into()));
            }
            last = None;
            records.extend(decoded.records.into_iter().filter_map(|r| r.value));
        }
    }
    if !matches!(first, Some(ControlRecord::SnapshotHeader(_))) {
        return Err(bad("no SnapshotHeader in its first batch".into()));
    }
    if !matches!(last, Some(ControlRecord::SnapshotFooter(_))) {
        return Err(bad("no SnapshotFooter at its end (cut short?)".into()));
    }
    Ok(records)
}

/// Reads snapshot file `path` and returns its data records (see
/// [`snapshot_records`]).
///
/// Errors: [`SnapshotError::Io`], [`SnapshotError::NotASnapshot`].
pub fn read_snapshot_records(path: &Path) -> Result<Vec<Bytes>, SnapshotError> {
    let bytes = std::fs::read(path).map_err(|source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    snapshot_records(path, &bytes)
}

/// Copies the latest snapshot of `log_dir` to `output`, or into `output`
/// under its own name if `output` is a directory (checked first, written
/// atomically: temp file, fsync, rename, directory fsync). Returns the path
/// written and the size (bytes).
///
/// Errors: [`SnapshotError::NoSnapshot`], [`SnapshotError::NotASnapshot`],
/// I/O errors.
pub fn export(log_dir: &Path, output: &Path) -> Result<(PathBuf, usize), SnapshotError> {
    let surveyed = survey(log_dir)?;
    let id = surveyed
        .latest_snapshot
        .ok_or_else(|| SnapshotError::NoSnapshot(log_dir.to_path_buf()))?;
    let name = snapshot_file_name(id);
    let path = partition_dir(log_dir).join(&name);
    let bytes = std::fs::read(&path).map_err(|source| SnapshotError::Io {
        path: path.clone(),
        source,
    })?;
    snapshot_records(&path, &bytes)?;
    let target = if output.is_dir() {
        output.join(&name)
    } else {
        output.to_path_buf()
    };
    write_atomically(&target, &bytes)?;
    Ok((target, bytes.len()))
}

/// Runs `snapshot export`: exit 0 with one line, or 1 with one error line.
pub fn run(args: &SnapshotArgs) -> ExitCode {
    let SnapshotCommand::Export(export_args) = &args.command;
    let output = match (&export_args.output, &export_args.output_dir) {
        (Some(output), _) => output,
        (None, Some(output_dir)) => {
            return super::backup_loop::run(&super::backup_loop::BackupConfig {
                metadata_log_dir: export_args.metadata_log_dir.clone(),
                output_dir: output_dir.clone(),
                every: std::time::Duration::from_secs(export_args.every_seconds.unwrap_or(0)),
                keep: export_args.keep.unwrap_or(0),
            });
        }
        (None, None) => {
            eprintln!("error: --output or --output-dir is required");
            return ExitCode::FAILURE;
        }
    };
    match export(&export_args.metadata_log_dir, output) {
        Ok((written, size)) => {
            println!(
                "exported the latest snapshot of {} ({size} bytes) to {}",
                export_args.metadata_log_dir.display(),
                written.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
