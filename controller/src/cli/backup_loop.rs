//! `kraft-controller snapshot export --output-dir O --every-seconds N --keep K`:
//! scheduled backups of the metadata, run beside a live controller (the
//! operator's `backup` sidecar, decision D17, issue 26). Each round copies
//! the latest committed snapshot of the metadata log to `O` under its own
//! name, `OFFSET-EPOCH.checkpoint` (Kafka's `Snapshots.filenameFromSnapshotId`),
//! unless a file of that name is there already, then deletes all but the
//! newest `K` of them.
//!
//! Owns the rounds, the pruning and the loop. It must never write under the
//! metadata log directory nor take its run lock (the directory may be
//! mounted read-only), and it reads only frozen `.checkpoint` files, never a
//! `.checkpoint.part` that a controller is still writing (a frozen snapshot
//! is immutable: `SnapshotWriter::freeze` renames it into place whole).
//! A round that fails is logged in one line and the loop goes on, except a
//! failed fsync of the output, which ends the process with exit code 1
//! (durability rule of `docs/log.md`, "Disk faults": no retry after a failed
//! fsync).

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use super::snapshot::snapshot_records;
use crate::log::{
    LogError,
    fs::{Fs, fsync_dir_on, real_fs, write_atomically_on},
    partition_dir,
    snapshot::{list_snapshots_on, parse_snapshot_file_name, snapshot_file_name},
};

/// What one backup loop does.
#[derive(Debug, Clone)]
pub struct BackupConfig {
    /// The controller's `metadata.log.dir` (read only).
    pub metadata_log_dir: PathBuf,
    /// Where the `.checkpoint` copies go (must exist).
    pub output_dir: PathBuf,
    /// Time between the starts of two rounds (at least 1 s).
    pub every: Duration,
    /// How many copies to keep (at least 1): the newest by snapshot id.
    pub keep: usize,
}

/// Errors of the backup loop.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// `--keep` below 1.
    #[error("--keep must be at least 1, got {0}")]
    BadKeep(usize),
    /// `--every-seconds` below 1.
    #[error("--every-seconds must be at least 1, got {0}")]
    BadInterval(u64),
    /// The metadata log's snapshots could not be listed or read.
    #[error("reading the metadata log: {0}")]
    Source(LogError),
    /// The latest snapshot is not whole (the copy is not written).
    #[error(transparent)]
    Snapshot(#[from] super::snapshot::SnapshotError),
    /// Writing, renaming, listing or deleting in the output directory failed
    /// (the round is lost; the next one tries again).
    #[error("backup output: {0}")]
    Output(LogError),
    /// An fsync of an output file or of the output directory failed: what
    /// was written may not be durable and a later fsync cannot tell, so the
    /// loop stops (exit code 1).
    #[error("backup output fsync failed, stopping: {0}")]
    Fsync(LogError),
}

impl BackupError {
    /// Whether the loop must stop (a failed fsync of the output).
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Fsync(_))
    }

    fn output(e: LogError) -> Self {
        match &e {
            LogError::Io { action, .. } if action.starts_with("fsync") => Self::Fsync(e),
            _ => Self::Output(e),
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoundOutcome {
    /// The snapshot was copied: the file written and its size (bytes).
    Exported(PathBuf, usize),
    /// The latest snapshot's copy is in the output directory already.
    AlreadyThere(PathBuf),
    /// The log holds no snapshot beyond the bootstrap `0-0` checkpoint yet.
    NoSnapshot,
}

/// A round's outcome and the old copies it deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundReport {
    /// What happened to the latest snapshot.
    pub outcome: RoundOutcome,
    /// Copies deleted to keep only the newest `keep`, oldest first.
    pub deleted: Vec<PathBuf>,
}

impl std::fmt::Display for RoundReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.outcome {
            RoundOutcome::Exported(path, size) => {
                write!(f, "exported {} ({size} bytes)", path.display())?
            }
            RoundOutcome::AlreadyThere(path) => {
                write!(f, "latest snapshot already backed up as {}", path.display())?
            }
            RoundOutcome::NoSnapshot => write!(
                f,
                "no snapshot yet beyond the bootstrap checkpoint (see metadata.log.max.snapshot.interval.ms)"
            )?,
        }
        if !self.deleted.is_empty() {
            write!(f, "; deleted {} older copies", self.deleted.len())?;
        }
        Ok(())
    }
}

/// One round on `fs`: removes temp files left by an interrupted round,
/// copies the newest frozen snapshot (offset above 0) of
/// `config.metadata_log_dir` to `config.output_dir` if its name is not there
/// yet (checked first, then temp file, fsync, rename, directory fsync), and
/// deletes the oldest copies beyond `config.keep` (then fsyncs the
/// directory). Files of other names in the output directory are left alone.
///
/// Errors: [`BackupError::Source`], [`BackupError::Snapshot`],
/// [`BackupError::Output`], [`BackupError::Fsync`] (fatal).
pub fn export_round(fs: &Fs, config: &BackupConfig) -> Result<RoundReport, BackupError> {
    let out = &config.output_dir;
    remove_stale_temp_files(fs, out)?;
    let partition = partition_dir(&config.metadata_log_dir);
    let latest = list_snapshots_on(fs, &partition)
        .map_err(BackupError::Source)?
        .into_iter()
        .rfind(|id| id.offset > 0);
    let outcome = match latest {
        None => RoundOutcome::NoSnapshot,
        Some(id) => {
            let name = snapshot_file_name(id);
            let target = out.join(&name);
            let there = fs.exists(&target).map_err(|source| {
                BackupError::Output(LogError::Io {
                    action: "checking",
                    path: target.clone(),
                    source,
                })
            })?;
            if there {
                RoundOutcome::AlreadyThere(target)
            } else {
                let source = partition.join(&name);
                let bytes = fs.read(&source).map_err(|e| {
                    BackupError::Source(LogError::Io {
                        action: "reading",
                        path: source.clone(),
                        source: e,
                    })
                })?;
                snapshot_records(&source, &bytes)?;
                write_atomically_on(fs, &target, &bytes).map_err(BackupError::output)?;
                RoundOutcome::Exported(target, bytes.len())
            }
        }
    };
    let deleted = prune(fs, out, config.keep)?;
    Ok(RoundReport { outcome, deleted })
}

/// Names of the copies in `dir`, oldest snapshot id first.
fn copies(fs: &Fs, dir: &Path) -> Result<Vec<PathBuf>, BackupError> {
    let mut found: Vec<_> = list(fs, dir)?
        .into_iter()
        .filter_map(|p| {
            let id = parse_snapshot_file_name(p.file_name()?.to_str()?)?;
            Some((id, p))
        })
        .collect();
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

fn list(fs: &Fs, dir: &Path) -> Result<Vec<PathBuf>, BackupError> {
    fs.list_dir(dir).map_err(|source| {
        BackupError::Output(LogError::Io {
            action: "listing",
            path: dir.to_path_buf(),
            source,
        })
    })
}

fn remove(fs: &Fs, path: &Path) -> Result<(), BackupError> {
    fs.remove_file(path).map_err(|source| {
        BackupError::Output(LogError::Io {
            action: "deleting",
            path: path.to_path_buf(),
            source,
        })
    })
}

/// Deletes `OFFSET-EPOCH.checkpoint.tmp` files: copies a crash or a failed
/// round left before their rename.
fn remove_stale_temp_files(fs: &Fs, dir: &Path) -> Result<(), BackupError> {
    for path in list(fs, dir)? {
        let stale = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(parse_snapshot_file_name)
            .is_some();
        if stale {
            remove(fs, &path)?;
        }
    }
    Ok(())
}

fn prune(fs: &Fs, dir: &Path, keep: usize) -> Result<Vec<PathBuf>, BackupError> {
    let all = copies(fs, dir)?;
    let excess = all.len().saturating_sub(keep);
    let deleted: Vec<PathBuf> = all.into_iter().take(excess).collect();
    for path in &deleted {
        remove(fs, path)?;
    }
    if !deleted.is_empty() {
        fsync_dir_on(fs, dir).map_err(BackupError::output)?;
    }
    Ok(deleted)
}

/// Runs rounds on `fs` until `wait` (called between rounds with
/// `config.every`) returns `false`, or a round fails an fsync. Prints one
/// line per round: stdout for a round done, stderr for a failed one.
///
/// Errors: the fatal [`BackupError::Fsync`], or a bad `config`.
pub fn backup_loop(
    fs: &Fs,
    config: &BackupConfig,
    mut wait: impl FnMut(Duration) -> bool,
) -> Result<(), BackupError> {
    if config.keep < 1 {
        return Err(BackupError::BadKeep(config.keep));
    }
    if config.every < Duration::from_secs(1) {
        return Err(BackupError::BadInterval(config.every.as_secs()));
    }
    loop {
        match export_round(fs, config) {
            Ok(report) => println!("backup: {report}"),
            Err(e) if e.is_fatal() => return Err(e),
            Err(e) => eprintln!(
                "backup: round failed, next in {}s: {e}",
                config.every.as_secs()
            ),
        }
        if !wait(config.every) {
            return Ok(());
        }
    }
}

/// Runs [`backup_loop`] on the real file system until SIGTERM or SIGINT
/// (exit 0); exit 1 with one line on a failed fsync or a bad argument.
///
/// The signals are awaited on a thread of their own (a tokio runtime that
/// does nothing else), which sends on a channel the loop waits on between
/// rounds: the handlers are installed before the first round (a container's
/// PID 1 ignores a SIGTERM it has no handler for, and the pod would wait its
/// whole grace period), and a signal that comes during a round ends the
/// loop right after it.
pub fn run(config: &BackupConfig) -> ExitCode {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the backup loop's runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let signals = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        ))
    });
    let (mut term, mut int) = match signals {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: installing the signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        });
        let _ = stop_tx.send(());
    });
    println!(
        "backup: every {}s, keeping {}, from {} to {}",
        config.every.as_secs(),
        config.keep,
        config.metadata_log_dir.display(),
        config.output_dir.display()
    );
    let result = backup_loop(&real_fs(), config, |every| {
        matches!(
            stop_rx.recv_timeout(every),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        )
    });
    match result {
        Ok(()) => {
            println!("backup: stopped by a signal");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
#[path = "backup_loop_tests.rs"]
mod tests;
