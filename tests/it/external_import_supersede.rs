//! A candidate the decider calls SUPERSEDE writes a new event that
//! supersedes the matched one: the old event is superseded (kept), the new
//! one active and cited by the import.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::import_support;

use import_support::{event, import_decided};
use strataflow::log::record::ImportAction;
use strataflow::materializers::event_status::EventStatus;

#[test]
fn supersede_writes_a_superseding_event() {
    let (_dir, memory, report, _) = import_decided("SUPERSEDE", None);
    let d = &report.decisions[0];
    assert_eq!(
        (d.proposed, d.action),
        (ImportAction::Supersede, ImportAction::Supersede)
    );
    assert_eq!(d.targets.len(), 1);
    let target = d.targets[0];
    let new = d.created_event.unwrap();
    let e = event(&memory, &new);
    assert_eq!(e.temporal.supersedes, vec![target]);
    assert!(e.temporal.conflicts_with.is_empty());
    assert_eq!(e.title, "Jon closed the dance studio");
    assert_eq!(Some(e.block), report.source_block);
    assert_eq!(
        e.temporal.mentioned_at.to_rfc3339(),
        "2026-01-15T09:30:00.000Z",
        "no mentionedAt: the file's exportedAt"
    );
    assert_eq!(
        e.temporal.happened_start.map(|t| t.to_rfc3339()).as_deref(),
        Some("2025-09-01T00:00:00.000Z")
    );
    let status = memory.default_tenant().event_status().unwrap();
    assert_eq!(status.get(&target).unwrap().status, EventStatus::Superseded);
    assert_eq!(status.get(&target).unwrap().superseded_by, vec![new]);
    assert_eq!(status.get(&new).unwrap().status, EventStatus::Active);
    // The import record lists the decision and is the import id.
    let import = report.import_id.unwrap();
    match memory
        .default_tenant()
        .show(&import.to_hex())
        .unwrap()
        .record
    {
        strataflow::log::record::Record::ImportSource(s) => {
            assert_eq!(s.decisions[0].created_event, Some(new));
            assert_eq!(s.decisions[0].targets, vec![target]);
        }
        other => panic!("{other:?}"),
    }
    assert!(memory.audit().unwrap().is_clean());
}
