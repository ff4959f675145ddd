//! `eval locomo` answers every category 1–4 question and beats the raw
//! BM25 baseline's hit rate at the same budget.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

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

#[test]
fn another_extractor_is_evaluated_on_the_same_questions() {
    let dir = tempfile::tempdir().unwrap();
    let conv26 = data_file("locomo/conv-26.json");
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["eval", "locomo", conv26.to_str().unwrap(), "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(dir.path(), &args)).unwrap()
    };
    let v1 = run(&[]);
    let v2 = run(&["--extractor", "heuristic-extractor@2"]);
    let overall = |r: &serde_json::Value, side: &str| r["budgets"][0][side]["overall"].clone();
    assert_eq!(
        overall(&v1, "baseline"),
        overall(&v2, "baseline"),
        "same baseline"
    );
    assert_eq!(
        overall(&v1, "system")["questions"],
        overall(&v2, "system")["questions"]
    );
    assert_ne!(
        overall(&v1, "system"),
        overall(&v2, "system"),
        "a different extractor retrieves differently"
    );
}
