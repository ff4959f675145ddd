//! `diff` compares the graphs two profiles build from their own events:
//! heuristic-extractor@2 takes statements about the other person that @1
//! leaves out, so its graph has edges @1's lacks (added) and closes an
//! edge @1 keeps current (closed), each with the messages it rests on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::io::Write;

use common::ok;

/// Ann and Bob; Bob's two statements about Ann are taken by @2 only.
fn fixture(dir: &std::path::Path) -> std::path::PathBuf {
    let lines = [
        ("user", "Ann", "I live in Lisbon with my sister Marta."),
        ("assistant", "Bob", "Ann moved to Porto recently."),
        ("user", "Ann", "I work at Acme Corp as a teacher."),
        ("assistant", "Bob", "Ann started working at Initech Corp."),
        ("user", "Ann", "Thanks."),
    ];
    let path = dir.join("chat.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for (i, (role, speaker, content)) in lines.iter().enumerate() {
        let line = serde_json::json!({
            "thread": "t1",
            "id": format!("m{}", i + 1),
            "role": role,
            "speaker": speaker,
            "content": content,
            "ts": format!("2024-05-01T10:{i:02}:00Z"),
        });
        writeln!(f, "{line}").unwrap();
    }
    path
}

#[test]
fn diff_reports_graph_edges_added_and_closed_with_their_messages() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = fixture(dir.path());
    ok(&data, &["init", "--block-turns", "2"]);
    // `default` on the version 1s, so that v2 differs by its extractor only.
    common::pin_legacy_default(&data);
    ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
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

    let diff: serde_json::Value =
        serde_json::from_str(&ok(&data, &["diff", "default", "v2", "--json"])).unwrap();
    let graph = &diff["graph"];
    let added = graph["added"].as_array().unwrap();
    let edge = |items: &[serde_json::Value], target: &str| {
        items
            .iter()
            .find(|i| i["target"] == target)
            .cloned()
            .unwrap_or_else(|| panic!("no edge to {target} in {items:?}"))
    };
    let porto = edge(added, "place:porto");
    assert_eq!(porto["node"], "person:ann");
    assert_eq!(porto["key"], "lives_in");
    assert_eq!(porto["source_messages"], serde_json::json!(["m2"]));
    let initech = edge(added, "organization:initech corp");
    assert_eq!(initech["key"], "works_at");
    assert_eq!(initech["current"], true);
    assert!(graph["removed"].as_array().unwrap().is_empty());

    // Acme is current under @1 and closed by Initech under @2.
    let closed = graph["closed"].as_array().unwrap();
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert_eq!(closed[0]["a"]["target"], "organization:acme corp");
    assert_eq!(closed[0]["a"]["current"], true);
    assert_eq!(closed[0]["b"]["current"], false);
    assert!(closed[0]["b"]["valid_to"].is_string());
    assert_eq!(closed[0]["a"]["source_messages"], serde_json::json!(["m3"]));
    let nodes_b = graph["nodes_only_b"].as_array().unwrap();
    assert!(
        nodes_b.contains(&serde_json::json!("place:porto")),
        "{nodes_b:?}"
    );
    // Both profiles share the summarizer: no summary differs.
    assert!(
        diff["summaries"]["different"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(diff["summaries"]["same"].as_u64().unwrap() > 0);

    let text = ok(&data, &["diff", "default", "v2"]);
    assert!(
        text.contains("graph: 1 facts and edges the same, 2 added (only in v2), 0 removed (only in default), 1 closed, 0 different"),
        "{text}"
    );
    assert!(
        text.contains("graph closed    default: * person:ann -[works_at]-> organization:acme corp"),
        "{text}"
    );

    // A profile against itself: nothing in any section.
    let same: serde_json::Value =
        serde_json::from_str(&ok(&data, &["diff", "v2", "v2", "--json"])).unwrap();
    for section in ["added", "removed", "closed", "different"] {
        assert!(same["graph"][section].as_array().unwrap().is_empty());
    }
}
