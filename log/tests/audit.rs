//! Audit passes on an intact log and names the record whose value was altered.
#![allow(clippy::unwrap_used)]

mod common;

use common::{block, id_of, msg};
use strataflow_log::audit::AuditProblem;
use strataflow_log::record::{Record, Role};
use strataflow_log::{Durability, Store};

fn filled(dir: &std::path::Path) -> (Store, Vec<Record>) {
    let store = Store::open(dir).unwrap();
    let m0 = msg("t", "1", 0, Role::User, "we moved to Lisbon last spring");
    let m1 = msg("t", "2", 1, Role::Assistant, "how is it going?");
    let b = block("t", 1, (1, 1), &[&m0, &m1]);
    let records = vec![Record::Message(m0), Record::Message(m1), Record::Block(b)];
    store.append(&records, Durability::Sync).unwrap();
    (store, records)
}

#[test]
fn audit_passes_on_an_intact_log() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = filled(dir.path());
    let report = store.audit().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.records, 3);
    assert_eq!(report.parent_links, 2);
}

#[test]
fn audit_names_an_altered_record() {
    let dir = tempfile::tempdir().unwrap();
    let (store, records) = filled(dir.path());
    let target = id_of(&records[0]);
    let mut bytes = store.raw_value(1).unwrap().unwrap();
    let last = bytes.len() - 40;
    bytes[last] ^= 0x20; // flip one bit inside the content
    store.overwrite_value_for_test(1, &bytes).unwrap();
    let report = store.audit().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    match &report.problems[0] {
        AuditProblem::HashMismatch { seq, recorded, .. } => {
            assert_eq!(*seq, 1);
            assert_eq!(*recorded, target);
        }
        other => panic!("unexpected problem {other:?}"),
    }
    assert!(report.problems[0].to_string().contains(&target.to_hex()));
}

#[test]
fn audit_reports_an_unreadable_header() {
    let dir = tempfile::tempdir().unwrap();
    let (store, records) = filled(dir.path());
    store.overwrite_value_for_test(3, b"garbage").unwrap();
    let report = store.audit().unwrap();
    let text = report.problems[0].to_string();
    assert!(text.contains(&id_of(&records[2]).to_hex()), "{text}");
}

#[test]
fn audit_names_the_record_whose_id_index_entry_was_altered() {
    let dir = tempfile::tempdir().unwrap();
    let (store, records) = filled(dir.path());
    // The first id index entry (in id order) now points at another sequence.
    assert!(store.tamper_index_for_test("ids").unwrap());
    let first = records.iter().map(id_of).min().unwrap();
    let report = store.audit().unwrap();
    let named = report.problems.iter().any(|p| {
        matches!(p, AuditProblem::IdIndexMismatch { id, indexed_seq: Some(_), .. } if *id == first)
    });
    assert!(named, "{:?}", report.problems);
    assert!(
        report.problems.iter().any(|p| matches!(
            p,
            AuditProblem::IndexDigestMismatch {
                keyspace: "ids",
                ..
            }
        )),
        "{:?}",
        report.problems
    );
}

#[test]
fn audit_names_the_record_whose_kind_entry_holds_another_id() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = filled(dir.path());
    // The first kind entry (the first message, seq 1) now holds another id.
    assert!(store.tamper_index_for_test("kinds").unwrap());
    let report = store.audit().unwrap();
    assert!(
        matches!(
            report.problems.first(),
            Some(AuditProblem::HashMismatch { seq: 1, .. })
        ),
        "{:?}",
        report.problems
    );
}
