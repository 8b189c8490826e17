//! `kraft-controller recover`: brings back a quorum that lost its majority
//! for good, from one surviving volume, offline (issue 26). And
//! `kraft-controller recover inspect DIR…`: which of several surviving
//! volumes to recover from.
//!
//! What `recover` writes on the survivor's stopped volume (see
//! docs/decisions.md, "Disaster recovery"):
//!
//! 1. `quorum-state`: epoch N = one past the highest epoch the node has seen
//!    (its quorum-state, its log, its snapshots), no leader, no vote
//!    (replaced atomically);
//! 2. one control batch appended at the log end, leader epoch N, holding a
//!    `Voters` record (KIP-853) with the new voter set: the survivor alone
//!    (its own entry of the old set: same directory id and endpoints), or
//!    the set given with `--voters`; then fsync.
//!
//! Nothing else is touched: every record of the log is kept, so every
//! committed record the survivor held stays. On restart the node reads the
//! latest `Voters` record (KIP-853), finds itself the only voter, elects
//! itself in epoch N+1 and commits its whole log with its LeaderChange
//! record: records it held but that were never committed become committed,
//! and records that only the lost voters held are gone.
//!
//! Owns the flags, the checks before the first write and the order of the
//! writes; the reading is [`super::log_survey`]'s, the file formats
//! [`crate::log`]'s. It must not run without
//! `--i-understand-this-may-lose-uncommitted-data`, nor on a directory a
//! live process holds ([`super::dir_lock`]).

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use kraft_common::kafka_uuid;

use super::{
    dir_lock::{self, DirLockError},
    format::{FormatError, parse_initial_controllers, voter_record},
    log_survey::{LogSurvey, SurveyError, survey, voters_text},
};
use crate::{
    log::{
        ElectionState, FileLog, FileLogConfig, LogError, QuorumStateStore, ReplicatedLog,
        partition_dir,
    },
    record::{ControlRecord, RecordError, VotersRecord, encode_control_batch},
};

/// The flag without which `recover` writes nothing.
pub const CONSENT_FLAG: &str = "--i-understand-this-may-lose-uncommitted-data";

/// Arguments of `recover`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct RecoverArgs {
    #[command(subcommand)]
    command: Option<RecoverCommand>,
    /// The survivor's stopped `metadata.log.dir`.
    #[arg(long, value_name = "DIR", required = true)]
    metadata_log_dir: Option<PathBuf>,
    /// The new voter set, `id@host:port:directory-id,…` (as format's
    /// `--initial-controllers`); it must hold this node with its directory
    /// id. Default: this node alone, with its endpoints of the old set.
    #[arg(long, value_name = "VOTERS")]
    voters: Option<String>,
    /// Consent: records that only the lost voters held are lost for good.
    #[arg(long)]
    i_understand_this_may_lose_uncommitted_data: bool,
}

#[derive(Debug, clap::Subcommand)]
enum RecoverCommand {
    /// Reads every given `metadata.log.dir` and names the one to recover
    /// from: the highest (last epoch, end offset), Raft's election rule.
    Inspect(InspectArgs),
}

/// Arguments of `recover inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The surviving `metadata.log.dir`s.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
}

/// Errors of `recover`, each a one-line message naming the bad value.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// Run without the consent flag: nothing was written.
    #[error(
        "refusing to recover {0} without {CONSENT_FLAG}: records only the lost voters held would be lost; nothing was written"
    )]
    NoConsent(PathBuf),
    /// The directory is in use or cannot be locked.
    #[error(transparent)]
    Lock(#[from] DirLockError),
    /// The volume could not be read.
    #[error(transparent)]
    Survey(#[from] SurveyError),
    /// A static quorum (kraft.version 0) has no Voters record to rewrite.
    #[error(
        "{0} has kraft.version 0 (static controller.quorum.voters): recover rewrites KIP-853 voter sets only (kraft.version 1)"
    )]
    StaticQuorum(PathBuf),
    /// The voter set cannot be built.
    #[error("{0}")]
    Voters(String),
    /// `--voters` does not parse.
    #[error("--voters: {0}")]
    VotersFlag(#[from] FormatError),
    /// The log opened to a different end than the survey read.
    #[error(
        "the log of {dir} opened with end offset {opened}, but its scan ended at {scanned}; nothing was written"
    )]
    EndMismatch {
        /// The log directory.
        dir: PathBuf,
        /// End offset of the opened log.
        opened: i64,
        /// End offset the survey found.
        scanned: i64,
    },
    /// Opening, appending to or flushing the log, or writing quorum-state.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The batch could not be encoded.
    #[error("encoding the Voters batch: {0}")]
    Record(#[from] RecordError),
}

/// What `recover` will write, decided before any write.
#[derive(Debug, Clone)]
pub struct RecoverPlan {
    /// The epoch written to quorum-state and stamped on the Voters batch.
    pub epoch: i32,
    /// The new voter set.
    pub voters: VotersRecord,
    /// The offset the Voters batch will have (the log end offset).
    pub offset: i64,
}

/// Decides the new epoch and voter set from `survey` and `--voters`.
///
/// Errors: [`RecoverError::StaticQuorum`] for kraft.version 0;
/// [`RecoverError::Voters`] if this node is not in the new set (with its
/// directory id), or the old set does not hold it and no `--voters` is given.
pub fn plan(survey: &LogSurvey, voters_flag: Option<&str>) -> Result<RecoverPlan, RecoverError> {
    if survey.kraft_version < 1 {
        return Err(RecoverError::StaticQuorum(survey.log_dir.clone()));
    }
    let me = &survey.meta;
    let own_old = survey.voters.as_ref().and_then(|(_, record)| {
        record
            .voters
            .iter()
            .find(|v| v.voter_id.0 == me.node_id && v.voter_directory_id == me.directory_id)
            .cloned()
    });
    let voters = match voters_flag {
        None => {
            let own = own_old.ok_or_else(|| {
                RecoverError::Voters(format!(
                    "node {} with directory id {} is not in the voter set of {} ({}): give --voters with its endpoint",
                    me.node_id,
                    kafka_uuid::to_string(me.directory_id),
                    survey.log_dir.display(),
                    survey.voters_text()
                ))
            })?;
            VotersRecord::default()
                .with_version(0)
                .with_voters(vec![own])
        }
        Some(text) => {
            let given = parse_initial_controllers(text)?;
            if !given
                .iter()
                .any(|v| v.id == me.node_id && v.directory_id == me.directory_id)
            {
                return Err(RecoverError::Voters(format!(
                    "--voters {text} does not hold this node: {}@…:{}",
                    me.node_id,
                    kafka_uuid::to_string(me.directory_id)
                )));
            }
            let listener = own_old
                .as_ref()
                .and_then(|v| v.endpoints.first())
                .map_or_else(|| "CONTROLLER".to_owned(), |e| e.name.to_string());
            voter_record(&listener, &given)
        }
    };
    Ok(RecoverPlan {
        epoch: survey.highest_epoch() + 1,
        voters,
        offset: survey.end.offset,
    })
}

/// Writes `plan` to the survivor's directory, holding its lock: quorum-state
/// first (atomically replaced), then the Voters batch appended and fsynced.
/// A crash between the two leaves a node at epoch N with its old voter set,
/// which a second `recover` moves on from.
///
/// Opening the log recovers it first, as `run` would (a torn tail above the
/// recovery point is cut; a fetched snapshot beyond the log replaces it).
///
/// Errors: [`RecoverError::EndMismatch`] before any write of this module;
/// log and I/O errors (damage below the recovery point refuses to open).
pub fn execute(survey: &LogSurvey, plan: &RecoverPlan, now_ms: i64) -> Result<(), RecoverError> {
    let partition = partition_dir(&survey.log_dir);
    let batch = encode_control_batch(
        plan.offset,
        plan.epoch,
        now_ms,
        &[ControlRecord::Voters(plan.voters.clone())],
    )?;
    let mut log = FileLog::open(&partition, FileLogConfig::default())?;
    // What the engine does first on start: a snapshot fetched and frozen
    // just before a crash replaces the log (Kafka's `KafkaMetadataLog.apply`).
    log.truncate_to_latest_snapshot()?;
    let opened = log.end_offset().offset;
    if opened != plan.offset {
        return Err(RecoverError::EndMismatch {
            dir: survey.log_dir.clone(),
            opened,
            scanned: plan.offset,
        });
    }
    QuorumStateStore::new(&partition).write(&ElectionState {
        epoch: plan.epoch,
        leader_id: None,
        voted_key: None,
    })?;
    log.append_as_leader(batch, plan.epoch)?;
    log.flush()?;
    Ok(())
}

/// What a survey says, in a few lines.
fn describe(s: &LogSurvey) -> String {
    let election = s.election.map_or_else(
        || "none".into(),
        |e| {
            format!(
                "epoch {}, leader {}, voted {}",
                e.epoch,
                e.leader_id.map_or_else(|| "none".into(), |l| l.to_string()),
                e.voted_key
                    .map_or_else(|| "none".into(), |(id, _)| id.to_string())
            )
        },
    );
    let committed = match s.latest_snapshot {
        Some(id) => format!(
            "offset {} (end of snapshot {}-{}; records from there to the log end may or may not have been committed: KRaft does not persist the high watermark)",
            id.offset, id.offset, id.epoch
        ),
        None => {
            "none provable offline (no snapshot; KRaft does not persist the high watermark)".into()
        }
    };
    let torn = s.torn_tail.as_ref().map_or_else(String::new, |(p, pos)| {
        format!(
            "\n  torn tail: {} from byte {pos} (not counted; opening the log truncates it)",
            p.display()
        )
    });
    format!(
        "{}: cluster id {}, node id {}, directory id {}\n  log: start offset {}, end offset {}, last epoch {}\n  committed at least below: {committed}\n  quorum-state: {election}\n  kraft.version {}, voters: {}{torn}",
        s.log_dir.display(),
        s.meta.cluster_id,
        s.meta.node_id,
        kafka_uuid::to_string(s.meta.directory_id),
        s.start_offset,
        s.end.offset,
        s.end.epoch,
        s.kraft_version,
        s.voters_text(),
    )
}

fn recover(dir: &Path, voters: Option<&str>, consent: bool) -> Result<(), RecoverError> {
    // Read-only until the consent and the lock are checked.
    let before = survey(dir)?;
    println!("{}", describe(&before));
    if !consent {
        return Err(RecoverError::NoConsent(dir.to_path_buf()));
    }
    let _lock = dir_lock::try_lock(dir)?;
    // Read again under the lock: a process may have written since.
    let surveyed = survey(dir)?;
    let plan = plan(&surveyed, voters)?;
    println!(
        "warning: records that only the lost voters held (never replicated to this node) are lost; every record of this log is kept and will be committed"
    );
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    execute(&surveyed, &plan, now_ms)?;
    println!(
        "recovered {}: voters are now {} (Voters record at offset {}, epoch {}); quorum-state epoch {}; start this node: it elects itself and keeps the cluster id {}",
        dir.display(),
        voters_text(&plan.voters),
        plan.offset,
        plan.epoch,
        plan.epoch,
        surveyed.meta.cluster_id
    );
    Ok(())
}

/// The survey to recover from among `surveys`: the highest (last epoch, end
/// offset), Raft's election rule (§5.4.1); the first of equals.
pub fn choose(surveys: &[LogSurvey]) -> Option<&LogSurvey> {
    surveys
        .iter()
        .rev()
        .max_by_key(|s| (s.end.epoch, s.end.offset))
}

fn inspect(args: &InspectArgs) -> ExitCode {
    let mut surveys = Vec::new();
    for dir in &args.dirs {
        match survey(dir) {
            Ok(s) => {
                println!("{}", describe(&s));
                surveys.push(s);
            }
            Err(e) => eprintln!("{}: unreadable, not a candidate: {e}", dir.display()),
        }
    }
    // Only volumes `recover` accepts are candidates (KIP-853 voter sets:
    // kraft.version 1 with a Voters record); the others are named.
    let (surveys, refused): (Vec<LogSurvey>, Vec<LogSurvey>) = surveys
        .into_iter()
        .partition(|s| s.kraft_version >= 1 && s.voters.is_some());
    for s in &refused {
        eprintln!(
            "{}: not a candidate: kraft.version {} without a KIP-853 voter set, which recover refuses",
            s.log_dir.display(),
            s.kraft_version
        );
    }
    let Some(best) = choose(&surveys) else {
        eprintln!("error: no metadata log directory among the ones given can be recovered");
        return ExitCode::FAILURE;
    };
    if let Some(ahead) = refused
        .iter()
        .find(|s| (s.end.epoch, s.end.offset) > (best.end.epoch, best.end.offset))
    {
        eprintln!(
            "warning: {} holds more (last epoch {}, end offset {}) but cannot be recovered by this tool",
            ahead.log_dir.display(),
            ahead.end.epoch,
            ahead.end.offset
        );
    }
    let clusters: std::collections::BTreeSet<&str> =
        surveys.iter().map(|s| s.meta.cluster_id.as_str()).collect();
    if clusters.len() > 1 {
        eprintln!(
            "warning: the directories belong to different clusters ({}); compare only volumes of one cluster",
            clusters.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    for other in surveys.iter().filter(|s| s.log_dir != best.log_dir) {
        let why = if (other.end.epoch, other.end.offset) == (best.end.epoch, best.end.offset) {
            "as far as it (a tie: either will do)"
        } else if other.end.epoch < best.end.epoch {
            "behind: lower last epoch"
        } else {
            "behind: same last epoch, lower end offset"
        };
        println!(
            "{}: (last epoch {}, end offset {}) {why}",
            other.log_dir.display(),
            other.end.epoch,
            other.end.offset
        );
    }
    println!(
        "recover from {} (node {}): highest (last epoch, end offset) = ({}, {}), Raft's election rule: every committed record that any of these volumes holds is in it",
        best.log_dir.display(),
        best.meta.node_id,
        best.end.epoch,
        best.end.offset
    );
    ExitCode::SUCCESS
}

/// Runs `recover` or `recover inspect`: exit 0 when done, 1 with a one-line
/// error (a refusal included).
pub fn run(args: &RecoverArgs) -> ExitCode {
    if let Some(RecoverCommand::Inspect(inspect_args)) = &args.command {
        return inspect(inspect_args);
    }
    let Some(dir) = &args.metadata_log_dir else {
        eprintln!("error: give --metadata-log-dir DIR");
        return ExitCode::FAILURE;
    };
    match recover(
        dir,
        args.voters.as_deref(),
        args.i_understand_this_may_lose_uncommitted_data,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
