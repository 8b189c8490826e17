//! `kraft-e2e-load`: a steady `acks=all` idempotent load through Kafka
//! brokers for `dev/demo.sh`, with the code the cluster tests use
//! (`kraft_e2e::kafka`).
//!
//! `kraft-e2e-load produce --bootstrap B --topic T --rate R` runs
//! `VerifiableProducer` until SIGTERM or SIGINT, then reads the topic back
//! from the beginning and prints one line, `produced N acknowledged N
//! consumed N failed N longest-ack-gap-ms N`; it exits 1 if a send failed
//! or an acknowledged record was not read back, 2 if it could not run.

use std::{process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use kraft_e2e::kafka::{Load, consume_all, figures, problems};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Debug, Parser)]
#[command(
    name = "kraft-e2e-load",
    about = "A steady acks=all load through Kafka brokers"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Produce until SIGTERM/SIGINT, then consume everything back and report.
    Produce {
        /// Brokers, `host:port[,host:port...]` (PLAINTEXT).
        #[arg(long)]
        bootstrap: String,
        /// The topic (it must exist).
        #[arg(long)]
        topic: String,
        /// Records per second.
        #[arg(long, default_value_t = 200)]
        rate: u32,
        /// How long the consumer waits for one more record before it stops (ms).
        #[arg(long, default_value_t = 10_000)]
        consume_idle_ms: u64,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let Cmd::Produce {
        bootstrap,
        topic,
        rate,
        consume_idle_ms,
    } = Cli::parse().command;
    match run(
        &bootstrap,
        &topic,
        rate,
        Duration::from_millis(consume_idle_ms),
    )
    .await
    {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("kraft-e2e-load: {e}");
            ExitCode::from(2)
        }
    }
}

/// Produces until a signal, consumes, prints the figures; `Ok(false)` when
/// something was lost or failed.
async fn run(bootstrap: &str, topic: &str, rate: u32, idle: Duration) -> anyhow::Result<bool> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let load = Load::start(bootstrap, topic, rate)?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let report = tokio::task::spawn_blocking(move || load.stop()).await??;
    let (b, t, sent) = (bootstrap.to_owned(), topic.to_owned(), report.sent);
    let consumed = tokio::task::spawn_blocking(move || consume_all(&b, &t, sent, idle)).await??;
    println!("{}", figures(&report, &consumed));
    match problems(&report, &consumed) {
        None => Ok(true),
        Some(p) => {
            eprintln!("kraft-e2e-load: {p}");
            Ok(false)
        }
    }
}
