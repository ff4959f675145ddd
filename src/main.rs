//! The `strataflow` command line. See `README.md` for the reference.

mod cli;

/// mimalloc instead of the system allocator: a backfill allocates and frees
/// many small strings on several threads at once, where glibc's malloc spends
/// a sixth of the CPU (measured with perf on a 50,000-message backfill).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
