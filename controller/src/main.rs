//! The `kraft-controller` binary: see [`kraft_controller::cli`].

fn main() -> std::process::ExitCode {
    kraft_controller::cli::main()
}
