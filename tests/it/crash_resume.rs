//! Killing `strataflow ingest` with SIGKILL in the middle of a large file and
//! running it again ends with exactly the records of an uninterrupted run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{archive, bin, ok, record_ids, stats, write_lines};

/// Starts an ingest, waits for `commits` progress lines, then SIGKILLs it.
/// Returns false if the ingest finished before that.
fn kill_after(data: &std::path::Path, file: &std::path::Path, commits: usize) -> bool {
    common::kill_at_line(
        bin().arg("--data").arg(data).args([
            "ingest",
            file.to_str().unwrap(),
            "--batch-records",
            "300",
        ]),
        "messages stored",
        commits,
    )
}

#[test]
fn sigkill_mid_ingest_then_rerun_equals_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("archive.jsonl");
    // 12 threads × 250 turns = 6000 messages, 240 blocks.
    write_lines(&file, &archive(12, 250));

    let reference = dir.path().join("reference");
    ok(&reference, &["ingest", file.to_str().unwrap(), "--quiet"]);
    let expected_ids = record_ids(&reference);
    let expected_stats = stats(&reference);
    assert_eq!(expected_stats["messages"], 6000);
    assert_eq!(expected_stats["blocks"], 240);

    let crashed = dir.path().join("crashed");
    let mut kills = 0;
    // Each restart resumes and is killed again a few commits later.
    for commits in [1, 3, 2, 5, 4] {
        if kill_after(&crashed, &file, commits) {
            kills += 1;
        }
    }
    assert!(
        kills >= 3,
        "the ingest was killed mid-file only {kills} times"
    );
    ok(&crashed, &["ingest", file.to_str().unwrap(), "--quiet"]);

    assert_eq!(
        record_ids(&crashed),
        expected_ids,
        "same records, none lost or duplicated"
    );
    let mut got = stats(&crashed);
    let mut want = expected_stats;
    got["bytes_on_disk"] = 0.into();
    want["bytes_on_disk"] = 0.into();
    assert_eq!(got, want);
    assert!(ok(&crashed, &["audit"]).starts_with("audit OK"));
}
