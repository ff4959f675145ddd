//! Comparing two extractor versions without re-ingesting: a second profile
//! with `heuristic-extractor@2`, derived with `resume --profile`, and
//! `diff` listing what each remembers, with the messages it comes from.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, run};

#[test]
fn diff_of_heuristic_v1_and_v2_lists_the_differing_events() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let file = data_file("locomo/conv-26.json");
    // `default` on the version 1s, the versions compared with.
    ok(data, &["init"]);
    common::pin_legacy_default(data);
    ok(
        data,
        &["import", "locomo", file.to_str().unwrap(), "--quiet"],
    );

    let out = ok(
        data,
        &[
            "profile",
            "create",
            "v2",
            "--extractor",
            "heuristic-extractor@2",
        ],
    );
    assert!(out.contains("heuristic-extractor@2"), "{out}");
    let list = ok(data, &["profile", "list"]);
    assert!(list.contains("default (default)"), "{list}");
    assert!(list.contains("v2: "), "{list}");
    // An unknown operator is refused with the known ones.
    let bad = run(data, &["profile", "create", "bad", "--extractor", "nope@1"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("heuristic-extractor@2"));

    ok(data, &["resume", "--profile", "v2"]);
    let diff: serde_json::Value =
        serde_json::from_str(&ok(data, &["diff", "default", "v2", "--json"])).unwrap();
    let both = diff["both"].as_u64().unwrap();
    let only_b = diff["only_b"].as_array().unwrap();
    let changed = diff["changed"].as_array().unwrap();
    assert!(both > 100, "most events are identical records: {both}");
    assert!(!only_b.is_empty(), "v2 finds named statements about others");
    for e in only_b.iter().chain(changed.iter().map(|c| &c["b"])) {
        assert!(!e["source_messages"].as_array().unwrap().is_empty());
        assert!(e["source_messages"][0].as_str().unwrap().starts_with('D'));
    }
    for c in changed {
        assert!(!c["fields"].as_array().unwrap().is_empty());
    }
    // Human-readable form names the counts.
    let text = ok(data, &["diff", "default", "v2"]);
    assert!(
        text.starts_with(&format!("events: {both} in both")),
        "{text}"
    );
    // The same profile against itself differs in nothing.
    let same: serde_json::Value =
        serde_json::from_str(&ok(data, &["diff", "v2", "v2", "--json"])).unwrap();
    assert_eq!(same["only_a"].as_array().unwrap().len(), 0);
    assert_eq!(same["only_b"].as_array().unwrap().len(), 0);
    assert_eq!(same["changed"].as_array().unwrap().len(), 0);
}
