//! The runtime's results do not depend on how many workers run it, and
//! deriving blocks as they seal makes exactly the records that deriving them
//! afterwards makes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{archive, ok, ordered_record_ids, record_ids, view_digests, write_lines};

#[test]
fn one_worker_and_three_workers_write_the_same_log() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("archive.jsonl");
    // 7 threads × 60 turns, with small batches so many groups interleave.
    write_lines(&file, &archive(7, 60));
    let mut logs = Vec::new();
    for workers in ["1", "3"] {
        let data = dir.path().join(format!("w{workers}"));
        ok(
            &data,
            &[
                "ingest",
                file.to_str().unwrap(),
                "--workers",
                workers,
                "--batch-records",
                "50",
                "--quiet",
            ],
        );
        logs.push((ordered_record_ids(&data), view_digests(&data)));
    }
    assert!(
        logs[0].0.len() > 840,
        "messages, blocks and derived records"
    );
    assert_eq!(logs[0].0, logs[1].0, "same records in the same order");
    assert_eq!(logs[0].1, logs[1].1, "same view digests");
}

#[test]
fn inline_derivation_equals_deriving_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let file = common::data_file("locomo/conv-26.json");
    let inline = dir.path().join("inline");
    ok(
        &inline,
        &["import", "locomo", file.to_str().unwrap(), "--quiet"],
    );
    let batch = dir.path().join("batch");
    ok(
        &batch,
        &[
            "import",
            "locomo",
            file.to_str().unwrap(),
            "--no-derive",
            "--quiet",
        ],
    );
    let before = record_ids(&batch);
    ok(&batch, &["resume"]);
    let after = record_ids(&batch);
    assert!(
        after.len() > before.len() + 200,
        "resume derived the blocks"
    );
    assert_eq!(record_ids(&inline), after);
}
