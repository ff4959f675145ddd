//! conv-26 and conv-30 import into ready blocks only, with events whose
//! every source message lies in its block, and a graph whose every node,
//! fact and edge cites existing events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::collections::BTreeSet;

use common::{data_file, ok};
use strataflow::log::record::{Record, RecordKind};

#[test]
fn locomo_conversations_derive_to_ready_blocks_with_valid_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    for conv in ["conv-26", "conv-30"] {
        let path = data_file(&format!("locomo/{conv}.json"));
        ok(
            data,
            &["import", "locomo", path.to_str().unwrap(), "--quiet"],
        );
    }
    let status: serde_json::Value = serde_json::from_str(&ok(data, &["status", "--json"])).unwrap();
    assert_eq!(status["blocks"], 32);
    assert_eq!(status["ready_blocks"], 32, "{status}");
    for op in status["operators"].as_array().unwrap() {
        assert_eq!(op["pending"], 0, "{op}");
        assert_eq!(op["retryable"], 0, "{op}");
        assert_eq!(op["failed"], 0, "{op}");
    }

    let memory = strataflow::Memory::open(data).unwrap();
    let store = memory.store();
    let mut events = BTreeSet::new();
    let mut checked_sources = 0;
    for entry in store.ids_of_kind(RecordKind::Event) {
        let (_, id) = entry.unwrap();
        let Record::Event(e) = store.get(&id).unwrap().unwrap().record else {
            panic!()
        };
        let Record::Block(b) = store.get(&e.block).unwrap().unwrap().record else {
            panic!()
        };
        assert!(!e.source_messages.is_empty());
        for m in &e.source_messages {
            assert!(
                b.messages.contains(m),
                "event {id} cites a message outside its block"
            );
            checked_sources += 1;
        }
        events.insert(id);
    }
    assert!(events.len() > 150, "only {} events", events.len());
    assert!(checked_sources >= events.len());

    let graph = memory.default_tenant().graph(None).unwrap();
    assert!(graph.nodes().len() >= 4, "{} nodes", graph.nodes().len());
    for node in graph.nodes() {
        assert!(!node.source_events.is_empty());
        assert!(node.source_events.iter().all(|e| events.contains(e)));
        for fact in &node.facts {
            assert!(!fact.source_events.is_empty());
            assert!(fact.source_events.iter().all(|e| events.contains(e)));
        }
    }
    for edge in graph.edges() {
        assert!(!edge.source_events.is_empty());
        assert!(edge.source_events.iter().all(|e| events.contains(e)));
    }
    let names: Vec<&str> = graph.nodes().iter().map(|n| n.name.as_str()).collect();
    for person in ["Caroline", "Melanie", "Jon", "Gina"] {
        assert!(names.contains(&person), "{person} missing from {names:?}");
    }
    drop(memory);
    assert!(ok(data, &["audit"]).starts_with("audit OK"));
}

#[test]
fn deriving_again_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    let before = common::record_ids(data);
    let out = ok(data, &["resume"]);
    assert!(
        out.contains("wrote 0 summaries, 0 events, 0 graph assertions in 0 operator runs"),
        "{out}"
    );
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    assert_eq!(common::record_ids(data), before);
}
