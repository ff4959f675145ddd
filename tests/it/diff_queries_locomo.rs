//! `diff --queries` on a LoCoMo file counts hits exactly as `eval locomo`
//! does: its hit rate under each profile equals the evaluation's with that
//! profile's extractor, and gained minus lost is the difference.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok};

fn eval_hits(data: &std::path::Path, file: &str, extractor: Option<&str>) -> (u64, u64) {
    let mut args = vec!["eval", "locomo", file, "--json"];
    if let Some(x) = extractor {
        args.extend(["--extractor", x]);
    }
    let report: serde_json::Value = serde_json::from_str(&ok(data, &args)).unwrap();
    let overall = &report["budgets"][0]["system"]["overall"];
    let n = overall["questions"].as_u64().unwrap();
    let hit = overall["hit"].as_f64().unwrap();
    (n, (hit * n as f64).round() as u64)
}

#[test]
fn locomo_questions_score_like_the_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let conv = data_file("locomo/conv-26.json");
    let file = conv.to_str().unwrap();
    ok(&data, &["import", "locomo", file, "--quiet"]);
    ok(
        &data,
        &[
            "profile",
            "create",
            "v2",
            "--extractor",
            "heuristic-extractor@2",
        ],
    );
    ok(&data, &["resume", "--profile", "v2"]);
    let d: serde_json::Value = serde_json::from_str(&ok(
        &data,
        &["diff", "default", "v2", "--queries", file, "--json"],
    ))
    .unwrap();

    let (n, hits_a) = eval_hits(&data, file, None);
    let (_, hits_b) = eval_hits(&data, file, Some("heuristic-extractor@2"));
    assert_eq!(d["with_evidence"], n);
    assert_eq!(d["a"]["hits"], hits_a);
    assert_eq!(d["b"]["hits"], hits_b);
    let gained = d["gained"].as_array().unwrap().len() as i64;
    let lost = d["lost"].as_array().unwrap().len() as i64;
    assert_eq!(hits_b as i64 - hits_a as i64, gained - lost);
    assert!(d["skipped"].as_u64().unwrap() > 0, "category 5 questions");
    let changed = d["changed"].as_array().unwrap();
    let top_changed = d["top_changed"].as_u64().unwrap();
    assert!(top_changed > 0, "v2's extra events change some top results");
    assert_eq!(
        changed.iter().filter(|c| c["top_changed"] == true).count() as u64,
        top_changed
    );
    for c in changed.iter().filter(|c| c["top_changed"] == true) {
        assert_ne!(c["top_a"]["ref"], c["top_b"]["ref"]);
        assert_eq!(c["thread"], "conv-26");
    }
}
