//! A candidate with the same normalized title and summary as a stored
//! event is IGNORE without any model call, and so is a repeat of an earlier
//! candidate of the same file; nothing but the audit records is written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::import_support;

use import_support::{FakeDecider, memory_with_events};
use strataflow::log::record::{ImportAction, Record};
use strataflow::operators::import::ModelDecider;

#[test]
fn exact_duplicates_never_reach_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let memory = memory_with_events(dir.path());
    let listed = memory
        .default_tenant()
        .events(&strataflow::EventsQuery::default())
        .unwrap();
    let stored = &listed[3];
    // Case and spacing differ: the fingerprint normalizes them.
    let title = format!("  {}  ", stored.title.to_uppercase());
    let summary = stored.summary.replace(' ', "   ");
    let text = serde_json::json!({
        "schemaVersion": "stratagate.external-memory.v2",
        "exportedAt": "2026-01-15T09:30:00Z",
        "candidates": [
            {"title": title, "summary": summary},
            {"title": "Brand new", "summary": "Seen twice in this file."},
            {"title": "brand  NEW", "summary": "seen twice in this file."}
        ]
    })
    .to_string();
    let before = memory.stats().unwrap().records;
    let fake = FakeDecider::new("ADD");
    let decider = ModelDecider {
        gateway: &fake,
        model: "fake".into(),
    };
    let report = memory
        .import_external_memory(
            &text,
            &strataflow::ExternalImportOptions {
                decider: Some(&decider),
                ..strataflow::ExternalImportOptions::default()
            },
        )
        .unwrap();
    assert_eq!(fake.calls(), 1, "only the one new candidate is asked about");
    let d = &report.decisions;
    assert_eq!(d[0].action, ImportAction::Ignore);
    assert_eq!(d[0].targets, vec![stored.id]);
    assert_eq!(d[0].confidence_milli, 1000);
    assert_eq!(d[0].created_event, None);
    assert_eq!(d[1].action, ImportAction::Add);
    assert_eq!(d[2].action, ImportAction::Ignore, "repeat of candidate 1");
    let after = memory.stats().unwrap().records;
    assert_eq!(
        after["event"] - before["event"],
        1,
        "only candidate 1 is written"
    );
    let import = report.import_id.unwrap();
    let Record::ImportSource(s) = memory
        .default_tenant()
        .show(&import.to_hex())
        .unwrap()
        .record
    else {
        panic!("not an import");
    };
    assert_eq!(s.decisions.len(), 3, "ignored candidates are audited");

    // Only exact duplicates: no call at all.
    let fake = FakeDecider::new("ADD");
    let decider = ModelDecider {
        gateway: &fake,
        model: "fake".into(),
    };
    let only_dup = serde_json::json!({
        "exportedAt": "2026-02-01T00:00:00Z",
        "candidates": [{"title": stored.title, "summary": stored.summary}]
    })
    .to_string();
    let report = memory
        .import_external_memory(
            &only_dup,
            &strataflow::ExternalImportOptions {
                decider: Some(&decider),
                ..strataflow::ExternalImportOptions::default()
            },
        )
        .unwrap();
    assert_eq!(fake.calls(), 0);
    assert_eq!(report.decisions[0].action, ImportAction::Ignore);
}
