//! A candidate the decider calls MERGE writes the consolidated candidate
//! the decider gave, superseding the matched event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::import_support;

use import_support::{event, import_decided};
use strataflow::log::record::ImportAction;
use strataflow::materializers::event_status::EventStatus;

#[test]
fn merge_writes_the_merged_candidate_superseding_the_match() {
    let merged = serde_json::json!({
        "title": "Jon's dance studio, opened and later closed",
        "summary": "Jon opened a dance studio after losing his banking job and closed it in 2025."
    });
    let (_dir, memory, report, _) = import_decided("MERGE", Some(merged));
    let d = &report.decisions[0];
    assert_eq!(d.action, ImportAction::Merge);
    let target = d.targets[0];
    let e = event(&memory, &d.created_event.unwrap());
    assert_eq!(e.title, "Jon's dance studio, opened and later closed");
    assert_eq!(e.temporal.supersedes, vec![target]);
    let status = memory.default_tenant().event_status().unwrap();
    assert_eq!(status.get(&target).unwrap().status, EventStatus::Superseded);
}
