//! The `kraft-controller` command line: `format`, `run`, `quorum`, `features`, `dump-log`,
//! `recover`, `snapshot export`.
//!
//! Owns argument parsing and exit codes only; each subcommand lives in its own
//! file and calls into the layers below.

pub mod backup_loop;
pub mod command_config;
pub mod dir_lock;
pub mod dump_log;
pub mod dump_topics;
pub mod features;
pub mod format;
pub mod log_survey;
pub mod quorum;
pub mod recover;
pub mod run;
pub mod snapshot;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `kraft-controller`: a KRaft controller.
#[derive(Debug, Parser)]
#[command(name = "kraft-controller", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Format a metadata log directory as kafka-storage format of the same
    /// release version does: meta.properties, the bootstrap records
    /// (bootstrap.checkpoint up to 4.1-IV1; from 4.2-IV0 in the 0-0
    /// checkpoint, KIP-1170) and the initial voters in dynamic mode.
    Format(format::FormatArgs),
    /// Run a controller (`--config server.properties`).
    Run(run::RunArgs),
    /// Describe the metadata quorum, add or remove voters (like `kafka-metadata-quorum`).
    Quorum(quorum::QuorumArgs),
    /// Describe features, upgrade kraft.version (like `kafka-features`).
    Features(features::FeaturesArgs),
    /// Print the batches and records of log segments and snapshot files.
    DumpLog(dump_log::DumpLogArgs),
    /// Offline, on a stopped node: rewrite the voter set to this survivor
    /// after the majority is lost for good (`recover inspect DIR…` picks the
    /// survivor). Needs --i-understand-this-may-lose-uncommitted-data.
    Recover(recover::RecoverArgs),
    /// Back up the metadata: `snapshot export` copies the latest snapshot.
    Snapshot(snapshot::SnapshotArgs),
}

/// Parses the command line, runs the subcommand and maps its result to an
/// exit code (0 success, 1 failure, 2 usage error as clap does).
pub fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Format(args) => format::run(&args),
        Command::Run(args) => {
            init_tracing();
            run::run(args)
        }
        Command::Quorum(args) => quorum::run(args),
        Command::Features(args) => features::run(args),
        Command::DumpLog(args) => dump_log::run(&args),
        Command::Recover(args) => recover::run(&args),
        Command::Snapshot(args) => snapshot::run(&args),
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info`).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
