//! `import undo ID` removes the import's events from every view (not
//! searchable, not listed as active) and returns what they superseded to
//! active; persisted views still equal a rebuild; undoing twice is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;
use crate::import_support;

use common::{ok, run};
use import_support::import_decided;
use strataflow::log::record::Actor;
use strataflow::materializers::event_status::EventStatus;
use strataflow::{Channel, SearchRequest};

#[test]
fn undo_restores_superseded_events_and_hides_imported_ones() {
    let (dir, memory, report, _) = import_decided("SUPERSEDE", None);
    let d = &report.decisions[0];
    let (target, new) = (d.targets[0], d.created_event.unwrap());
    let search = |m: &strataflow::Memory| {
        let request = SearchRequest {
            query: "Jon closed the dance studio banking".into(),
            ..SearchRequest::default()
        };
        m.default_tenant()
            .searcher(None)
            .unwrap()
            .search(Channel::Events, &request)
            .unwrap()
            .iter()
            .map(|h| h.reference.clone())
            .collect::<Vec<_>>()
    };
    assert!(search(&memory).contains(&format!("event:{new}")));
    let import = report.import_id.unwrap();
    let undo = memory
        .default_tenant()
        .undo_import(&import.to_hex()[..16], Actor::User, None)
        .unwrap();
    assert_eq!(undo.removed_events, vec![new]);
    assert_eq!(undo.restored_events, vec![target]);
    let status = memory.default_tenant().event_status().unwrap();
    assert_eq!(status.get(&target).unwrap().status, EventStatus::Active);
    assert!(status.get(&target).unwrap().superseded_by.is_empty());
    assert_eq!(status.get(&new).unwrap().status, EventStatus::Removed);
    assert!(!search(&memory).contains(&format!("event:{new}")));
    let err = memory
        .default_tenant()
        .undo_import(&import.to_hex(), Actor::User, None)
        .unwrap_err();
    assert!(err.to_string().contains("already undone"), "{err}");
    // Persisted (incremental) views equal a rebuild.
    for r in memory
        .default_tenant()
        .views(&strataflow::ViewsOptions {
            verify: true,
            ..Default::default()
        })
        .unwrap()
    {
        assert_eq!(Some(&r.digest), r.rebuilt.as_ref(), "{}", r.view);
    }
    drop(memory);

    let data = dir.path();
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&ok(data, &["events", "--json"])).unwrap();
    let listed = events
        .iter()
        .find(|e| e["id"] == new.to_hex().as_str())
        .unwrap();
    assert_eq!(listed["status"], "removed");
    let out = run(data, &["import", "undo", &import.to_hex()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already undone"));
    assert!(ok(data, &["audit"]).starts_with("audit OK"));
}
