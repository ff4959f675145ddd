//! JSONL ingest: tool calls, tenants and speakers survive; re-ingest is a
//! no-op; `show` prints any record as JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{ok, record_ids, run, stats};

#[test]
fn the_shipped_sample_builds_blocks_and_reingest_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let sample = common::repo_file("examples/data/sample.jsonl");
    let out = ok(data, &["ingest", sample.to_str().unwrap()]);
    assert!(out.contains("trip-planning"), "{out}");
    let s = stats(data);
    assert_eq!(s["threads"], 2);
    assert!(s["blocks"].as_u64().unwrap() >= 3, "{s}");
    let ids = record_ids(data);
    let again = ok(data, &["ingest", sample.to_str().unwrap()]);
    assert!(again.contains("stored 0 new messages"), "{again}");
    assert_eq!(record_ids(data), ids);
    assert!(ok(data, &["audit"]).starts_with("audit OK"));
}

#[test]
fn show_prints_a_message_with_its_tool_calls_by_id_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let file = dir.path().join("in.jsonl");
    std::fs::write(
        &file,
        r#"{"tenant":"acme","thread":"t","id":"1","role":"assistant","speaker":"Bot","content":"checking","ts":"2024-03-01T09:30:00+01:00","tool_calls":[{"name":"weather","arguments":{"city":"Paris"},"result":{"summary":"sunny"}}]}
"#,
    )
    .unwrap();
    ok(data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    let id = {
        let store = strataflow::log::Store::open(data).unwrap();
        store
            .message_by_external_id("acme", "t", "1")
            .unwrap()
            .unwrap()
    };
    let shown: serde_json::Value =
        serde_json::from_str(&ok(data, &["show", "--tenant", "acme", &id.to_hex()[..10]])).unwrap();
    assert_eq!(shown["id"], id.to_hex());
    assert_eq!(shown["kind"], "message");
    assert_eq!(shown["record"]["tenant"], "acme");
    assert_eq!(shown["record"]["speaker"], "Bot");
    assert_eq!(shown["record"]["time"], "2024-03-01T09:30:00.000+01:00");
    assert_eq!(
        shown["record"]["tool_calls"][0]["arguments"]["city"],
        "Paris"
    );

    let out = run(data, &["show", "zz"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a record id"));
    let out = run(data, &["show", "0000000000"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no record with id"));
}

#[test]
fn tenants_are_separate_threads() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let file = dir.path().join("in.jsonl");
    let mk = |tenant: &str| {
        format!(
            r#"{{"tenant":"{tenant}","thread":"same","id":"1","role":"user","content":"hi","ts":"2024-03-01T09:30:00Z"}}"#
        )
    };
    std::fs::write(&file, format!("{}\n{}\n", mk("a"), mk("b"))).unwrap();
    ok(data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    let s = stats(data);
    assert_eq!(s["tenants"], 2);
    assert_eq!(s["threads"], 2);
    assert_eq!(s["messages"], 2);
}
