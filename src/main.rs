//! The `strataflow` command line. See `README.md` for the reference.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
