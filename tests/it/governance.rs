//! forget → excluded from the active set; restore → back to what it was;
//! pin recorded; every decision is a new record, none rewritten.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, record_ids, run};

#[test]
fn forget_restore_pin_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&ok(data, &["events", "--json"])).unwrap();
    let target = events[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(events[0]["status"], "active");
    let before = record_ids(data);

    let out = ok(data, &["forget", &target[..12], "--reason", "user asked"]);
    assert!(out.contains("now forgotten"), "{out}");
    let status = |data: &std::path::Path| -> serde_json::Value {
        let events: Vec<serde_json::Value> =
            serde_json::from_str(&ok(data, &["events", "--json"])).unwrap();
        events
            .into_iter()
            .find(|e| e["id"] == target.as_str())
            .unwrap()
    };
    assert_eq!(status(data)["status"], "forgotten");

    let out = ok(data, &["restore", &target]);
    assert!(out.contains("now active"), "{out}");
    assert_eq!(status(data)["status"], "active");

    let out = ok(data, &["pin", &target]);
    assert!(out.contains("now active, pinned"), "{out}");
    assert_eq!(status(data)["pinned"], true);
    ok(data, &["unpin", &target]);
    assert_eq!(status(data)["pinned"], false);

    let after = record_ids(data);
    assert!(before.is_subset(&after), "nothing rewritten or removed");
    assert_eq!(after.len() - before.len(), 4, "four governance records");
    assert!(ok(data, &["audit"]).starts_with("audit OK"));

    let out = run(data, &["forget", "ffffffffffff"]);
    assert!(!out.status.success());
    let block = events[0]["block"].as_str().unwrap();
    let out = run(data, &["forget", block]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an event"));
}
