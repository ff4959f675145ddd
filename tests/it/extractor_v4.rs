//! A profile on `heuristic-extractor@4` end to end: the sample's future
//! plans land in May 2024 (the weekday and the arrangement settle the year)
//! and restatements agree ("Ana prefers").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{ok, repo_file};

fn events(data: &std::path::Path) -> Vec<serde_json::Value> {
    let out = ok(data, &["events", "--thread", "trip-planning", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v.as_array()
        .cloned()
        .or_else(|| v["events"].as_array().cloned())
        .expect("events list")
}

fn ingest_with(extractor: &str) -> (tempfile::TempDir, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    ok(data, &["init"]);
    ok(
        data,
        &["profile", "create", "chosen", "--extractor", extractor],
    );
    ok(data, &["profile", "set-default", "chosen"]);
    let sample = repo_file("examples/data/sample.jsonl");
    ok(data, &["ingest", sample.to_str().unwrap(), "--quiet"]);
    let all = events(data);
    (dir, all)
}

fn with_quote<'a>(all: &'a [serde_json::Value], part: &str) -> &'a serde_json::Value {
    all.iter()
        .find(|e| {
            e["quotes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|q| q.as_str().is_some_and(|q| q.contains(part)))
                || e["summary"].as_str().is_some_and(|s| s.contains(part))
        })
        .unwrap_or_else(|| panic!("no event quoting {part:?}"))
}

#[test]
fn sample_plans_resolve_to_may_2024_and_summaries_agree() {
    let (_dir, v4) = ingest_with("heuristic-extractor@4");
    let sintra = with_quote(&v4, "Sintra day trip on Monday 20 May");
    assert_eq!(
        sintra["happened_start"].as_str(),
        Some("2024-05-19T22:00:00.000Z"),
        "{sintra}"
    );
    assert_eq!(
        sintra["happened_end"].as_str(),
        Some("2024-05-20T21:59:59.999Z")
    );
    let porto = with_quote(&v4, "Porto 14–17 May");
    assert!(
        porto["happened_start"]
            .as_str()
            .is_some_and(|s| s.starts_with("2024-05-1")),
        "{porto}"
    );
    let prefers = v4.iter().any(|e| {
        e["summary"]
            .as_str()
            .is_some_and(|s| s.contains("Ana prefers"))
    });
    assert!(prefers, "no summary reads \"Ana prefers\"");

    // Version 1 (the legacy default profile) is unchanged: still 2023,
    // "Ana prefer".
    let (_dir1, v1) = ingest_with("heuristic-extractor@1");
    let sintra = with_quote(&v1, "Sintra day trip on Monday 20 May");
    assert_eq!(
        sintra["happened_start"].as_str(),
        Some("2023-05-19T22:00:00.000Z")
    );
    assert!(v1.iter().all(|e| {
        !e["summary"]
            .as_str()
            .is_some_and(|s| s.contains("Ana prefers"))
    }));
}
