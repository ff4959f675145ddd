//! What several benches share: the message count of a run and the raw
//! fjall anchor (the storage floor every log figure is compared with).
#![allow(dead_code, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

/// Messages of this run: `STRATAFLOW_BENCH_MESSAGES`, else 5 000 under
/// `--test`, else `full`.
pub fn message_count(full: u64) -> u64 {
    if let Some(n) = std::env::var("STRATAFLOW_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
    {
        return n;
    }
    if std::env::args().any(|a| a == "--test") {
        5_000
    } else {
        full
    }
}

/// A fresh fjall database in `path` with one keyspace, default options.
pub fn open_raw(path: &Path) -> (fjall::Database, fjall::Keyspace) {
    let db = fjall::Database::builder(path)
        .open()
        .expect("open the fjall database");
    let ks = db
        .keyspace("records", fjall::KeyspaceCreateOptions::default)
        .expect("open the records keyspace");
    (db, ks)
}

/// The raw anchor: the envelopes inserted into a fresh database in `dir`,
/// keyed by big-endian sequence number, `batch` per fsynced (`SyncAll`)
/// batch. Returns the time of the inserts only.
pub fn insert_raw(dir: &Path, envelopes: &[Vec<u8>], batch: usize) -> Duration {
    let (db, ks) = open_raw(dir);
    let start = Instant::now();
    let mut seq: u64 = 1;
    for chunk in envelopes.chunks(batch) {
        let mut b = db.batch().durability(Some(fjall::PersistMode::SyncAll));
        for value in chunk {
            b.insert(&ks, seq.to_be_bytes(), value.as_slice());
            seq += 1;
        }
        b.commit().expect("commit the batch");
    }
    start.elapsed()
}

/// Process CPU time so far (user + system, every thread, exited ones
/// included), from `/proc/self/stat` in ticks of 1/100 s (`USER_HZ`);
/// `None` where there is no such file.
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name in parentheses: field 3 (state) onwards;
    // utime and stime are fields 14 and 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU time so far of the process (every thread alive now, the log's
/// background threads included) and of the calling thread, in
/// nanoseconds, from the scheduler's run time (`/proc/self/task/*/schedstat`,
/// `/proc/thread-self/schedstat`): a derivation of 40–80 ms is measured to
/// the microsecond, not in the 10 ms ticks of `/proc/self/stat`. Zero where
/// there are no such files.
pub fn cpu_clocks() -> (Duration, Duration) {
    let run_time = |path: &std::path::Path| -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let process: u64 = std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .flatten()
                .map(|t| run_time(&t.path().join("schedstat")))
                .sum()
        })
        .unwrap_or(0);
    let thread = run_time(std::path::Path::new("/proc/thread-self/schedstat"));
    (Duration::from_nanos(process), Duration::from_nanos(thread))
}
