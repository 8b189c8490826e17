//! placeholder
#[derive(Debug, clap::Args)]
pub struct RunArgs {}
pub fn main(_a: RunArgs) -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
