//! A candidate the decider calls CONFLICT writes a new event linked both
//! ways to the matched one; both stay active.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::import_support;

use import_support::{event, import_decided};
use strataflow::log::record::ImportAction;
use strataflow::materializers::event_status::EventStatus;

#[test]
fn conflict_keeps_both_and_links_them_both_ways() {
    let (_dir, memory, report, _) = import_decided("CONFLICT", None);
    let d = &report.decisions[0];
    assert_eq!(d.action, ImportAction::Conflict);
    let (target, new) = (d.targets[0], d.created_event.unwrap());
    let e = event(&memory, &new);
    assert_eq!(e.temporal.conflicts_with, vec![target]);
    assert!(e.temporal.supersedes.is_empty());
    let status = memory.default_tenant().event_status().unwrap();
    assert_eq!(status.get(&target).unwrap().status, EventStatus::Active);
    assert_eq!(status.get(&new).unwrap().status, EventStatus::Active);
    assert_eq!(status.get(&target).unwrap().conflicts_with, vec![new]);
    assert_eq!(status.get(&new).unwrap().conflicts_with, vec![target]);
}
