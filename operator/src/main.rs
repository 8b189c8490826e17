//! The `kraft-operator` binary: `crd` prints the CustomResourceDefinition,
//! `run` runs the reconciler.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// kraft-operator: runs KRaft controller quorums on Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "kraft-operator", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the KraftQuorum CustomResourceDefinition as YAML.
    Crd,
    /// Run the reconciler.
    Run(kraft_operator::run::RunArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => match kraft_operator::crd::crd_yaml() {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("kraft-operator: cannot serialize the crd: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Run(args) => {
            kraft_operator::run::main(args, kraft_operator::quorum::admin::AdminQuorumClient::new)
        }
    }
}
