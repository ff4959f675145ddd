//! The `strataflow` command line. See `README.md` for the reference.

mod cli;

/// mimalloc instead of the system allocator: a backfill allocates and frees
/// many small strings on several threads at once, where glibc's malloc spends
/// a sixth of the CPU (measured with perf on a 50,000-message backfill).
/// Version 2 without transparent huge pages (Cargo features `v2`, `no_thp`):
/// version 3 returns freed memory to the system after a second, not 10 ms,
/// and huge pages back whole 2 MiB regions of which a few bytes are in use;
/// on the 1 GB ChatGPT export imported with derivation (a 16 MiB block
/// cache), v3 peaked at about 430 MB resident with huge pages and 310 MB
/// without, v2 at 240–260 MB, at the same import rate (4% less on a
/// 200,000-message ingest).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
