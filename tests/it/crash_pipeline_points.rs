//! SIGKILL inside each stage of the runtime — sealing, summarizing,
//! extracting, projecting, appending — at ten pseudo-random points, with a
//! restart after each: the final log and views equal an uninterrupted run's,
//! with no record lost or duplicated.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{archive, bin, ok, ordered_record_ids, stats, view_digests, write_lines};

/// Runs an ingest that pauses at `point` (`STAGE:N`); SIGKILLs it there.
/// Returns whether it was killed (false: it finished before the point).
fn kill_at(data: &std::path::Path, file: &std::path::Path, point: &str) -> bool {
    common::kill_when_paused(
        bin()
            .arg("--data")
            .arg(data)
            .args([
                "ingest",
                file.to_str().unwrap(),
                "--batch-records",
                "400",
                "--workers",
                "2",
                "--quiet",
            ])
            .env("STRATAFLOW_PAUSE_AT", point),
    )
}

/// splitmix64: the test's points are pseudo-random but the same every run.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn sigkill_in_every_stage_then_restart_equals_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("archive.jsonl");
    // 12 threads × 400 turns = 9,600 messages, 396 blocks.
    write_lines(&file, &archive(12, 400));

    let reference = dir.path().join("reference");
    ok(&reference, &["ingest", file.to_str().unwrap(), "--quiet"]);
    let expected_ids = ordered_record_ids(&reference);
    let expected_stats = stats(&reference);
    let expected_views = view_digests(&reference);
    assert_eq!(expected_stats["blocks"], 396);

    let crashed = dir.path().join("crashed");
    let stages = ["seal", "summarize", "extract", "project", "append"];
    let mut rng = 20_261_129_u64;
    let mut kills = Vec::new();
    for i in 0..10 {
        let stage = stages[i % stages.len()];
        // Block stages happen ~396 times in all, appends ~50: stay well
        // inside what is left so that every run is killed.
        let limit = if stage == "append" { 4 } else { 30 };
        let n = 1 + next(&mut rng) % limit;
        let point = format!("{stage}:{n}");
        assert!(kill_at(&crashed, &file, &point), "not killed at {point}");
        kills.push(point);
    }
    ok(&crashed, &["ingest", file.to_str().unwrap(), "--quiet"]);

    let got_ids = ordered_record_ids(&crashed);
    let unique: std::collections::BTreeSet<&String> = got_ids.iter().collect();
    assert_eq!(unique.len(), got_ids.len(), "no record twice");
    assert_eq!(
        got_ids, expected_ids,
        "same records in the same order after kills at {kills:?}"
    );
    let mut got = stats(&crashed);
    let mut want = expected_stats;
    got["bytes_on_disk"] = 0.into();
    want["bytes_on_disk"] = 0.into();
    assert_eq!(got, want);
    assert_eq!(view_digests(&crashed), expected_views);
    assert!(ok(&crashed, &["audit"]).starts_with("audit OK"));
}
