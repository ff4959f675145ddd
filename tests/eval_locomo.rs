//! `eval locomo` answers every category 1–4 question and beats the raw
//! BM25 baseline's hit rate at the same budget.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{data_file, ok};

#[test]
fn search_all_beats_raw_bm25_at_300_words() {
    let dir = tempfile::tempdir().unwrap();
    let conv26 = data_file("locomo/conv-26.json");
    let conv30 = data_file("locomo/conv-30.json");
    let out = ok(
        dir.path(),
        &[
            "eval",
            "locomo",
            conv26.to_str().unwrap(),
            conv30.to_str().unwrap(),
            "--budget",
            "300",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let b = &report["budgets"][0];
    assert_eq!(b["budget"], 300);
    let system = &b["system"]["overall"];
    let baseline = &b["baseline"]["overall"];
    assert_eq!(system["questions"], 231);
    let (hit, base) = (
        system["hit"].as_f64().unwrap(),
        baseline["hit"].as_f64().unwrap(),
    );
    println!("search all hit {hit:.3} vs raw BM25 {base:.3}");
    assert!(hit > base, "{hit} <= {base}");
    assert!(system["mean_words"].as_f64().unwrap() <= 300.0);
    assert!(b["temporal_questions"].as_u64().unwrap() >= 50);
}
