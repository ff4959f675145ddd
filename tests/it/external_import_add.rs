//! `import memory` of a candidate with no similar memory (the fallback
//! decider, no model): ADD with confidence 1; the event is active,
//! searchable, listed, and its mention time comes from the candidate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;
use crate::import_support;

use common::{data_file, ok, stats};
use import_support::fixture;

#[test]
fn a_new_memory_is_added_and_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", conv.to_str().unwrap(), "--quiet"],
    );
    let before = stats(data);
    let file = fixture("new-memory.json");
    let out = ok(
        data,
        &["import", "memory", file.to_str().unwrap(), "--json"],
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let d = &report["decisions"][0];
    assert_eq!(d["action"], "add");
    assert_eq!(d["confidence_milli"], 1000);
    assert_eq!(d["requires_confirmation"], false);
    let event = d["created_event"].as_str().unwrap().to_owned();
    let import = report["import_id"].as_str().unwrap().to_owned();

    let after = stats(data);
    for (kind, n) in [
        ("message", 1),
        ("block", 1),
        ("block_summary", 1),
        ("event", 1),
        ("import_source", 1),
    ] {
        assert_eq!(
            after["records"][kind].as_u64().unwrap() - before["records"][kind].as_u64().unwrap(),
            n,
            "{kind}"
        );
    }
    let shown: serde_json::Value = serde_json::from_str(&ok(data, &["show", &event])).unwrap();
    let e = &shown["record"];
    assert_eq!(e["title"], "Kayaks Fjordland weekly");
    assert_eq!(e["tags"], serde_json::json!(["preference", "kayaking"]));
    assert_eq!(
        e["temporal"]["mentioned_at"],
        "2025-11-02T18:00:00.000+01:00"
    );
    assert_eq!(e["criticality"], "preference");

    let hits = ok(data, &["search", "events", "Fjordland kayak", "--json"]);
    assert!(hits.contains(&event), "{hits}");
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&ok(data, &["events", "--json"])).unwrap();
    let listed = events.iter().find(|x| x["id"] == event.as_str()).unwrap();
    assert_eq!(listed["status"], "active");
    assert!(
        listed["thread"]
            .as_str()
            .unwrap()
            .starts_with("external-import:")
    );

    // The source block is never derived, and nothing is pending.
    let status = ok(data, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert!(
        status["operators"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["pending"] == 0),
        "{status}"
    );
    ok(data, &["resume"]);
    assert_eq!(stats(data)["records"]["event"], after["records"]["event"]);
    assert!(ok(data, &["audit"]).starts_with("audit OK"));
    let shown: serde_json::Value = serde_json::from_str(&ok(data, &["show", &import])).unwrap();
    assert_eq!(
        shown["record"]["decisions"][0]["created_event"],
        event.as_str()
    );
}
