//! `kraft-controller run`: start a controller from a Kafka-style properties file.

use std::{path::PathBuf, process::ExitCode};

use clap::Args;

use crate::{config::ControllerConfig, server};

/// Arguments of `kraft-controller run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The controller's `server.properties`.
    #[arg(long, short = 'c')]
    config: PathBuf,
    /// Override a property of the file, `key=value` (repeatable; as Kafka's
    /// `kafka-server-start --override`), e.g. `--override node.id=2`.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Refuse to start unless meta.properties holds this cluster id.
    #[arg(long)]
    cluster_id: Option<String>,
    /// Benchmark only: the leader appends this many records per second, one
    /// record per append, and reports append-to-commit latency on
    /// `GET /workload` (Kafka's `TestRaftServer --throughput`).
    #[arg(long, value_name = "RECORDS_PER_SEC")]
    workload_throughput: Option<u32>,
    /// Benchmark only: bytes per workload record (`TestRaftServer --record-size`).
    #[arg(long, value_name = "BYTES", default_value_t = 256)]
    workload_record_size: usize,
}

/// Runs the controller until SIGTERM or SIGINT; exit code 1 on any error,
/// with a one-line message.
pub fn run(args: RunArgs) -> ExitCode {
    let config = match ControllerConfig::load_with_overrides(&args.config, &args.overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kraft-controller run: {e}");
            return ExitCode::FAILURE;
        }
    };
    let workload = match args.workload_throughput {
        None => None,
        Some(rate) => {
            match server::workload::WorkloadConfig::new(rate, args.workload_record_size) {
                Ok(w) => Some(w),
                Err(e) => {
                    eprintln!("kraft-controller run: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kraft-controller run: starting the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("signal received: shutting down");
            let _ = tx.send(true);
        });
        server::run_with_workload(config, args.cluster_id, workload, rx).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "controller stopped");
            eprintln!("kraft-controller run: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
