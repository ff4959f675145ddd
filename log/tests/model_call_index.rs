//! The model-call index: a `ModelCall` is found by its request hash, the
//! first recorded answer wins, and audit notices a damaged index.
#![allow(clippy::unwrap_used)]

mod common;

use common::id_of;
use strataflow_log::audit::AuditProblem;
use strataflow_log::record::{ModelCall, Record, TokenUsage};
use strataflow_log::{Durability, RecordId, Store};

fn call(hash: u8, response: &str) -> ModelCall {
    ModelCall {
        request_hash: RecordId([hash; 32]),
        operator: "llm-extractor@1".into(),
        model: "m".into(),
        request: "{\"model\":\"m\"}".into(),
        response: response.into(),
        usage: TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 3,
        },
    }
}

#[test]
fn a_model_call_is_found_by_its_request_hash() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = call(1, "a");
    let b = call(2, "b");
    let records = vec![Record::ModelCall(a.clone()), Record::ModelCall(b.clone())];
    store.append(&records, Durability::Sync).unwrap();
    let (id, found) = store.model_call(&a.request_hash).unwrap().unwrap();
    assert_eq!((id, &found), (id_of(&records[0]), &a));
    let (id, found) = store.model_call(&b.request_hash).unwrap().unwrap();
    assert_eq!((id, &found), (id_of(&records[1]), &b));
    assert_eq!(store.model_call(&RecordId([3; 32])).unwrap(), None);
    assert!(store.audit().unwrap().is_clean());
}

#[test]
fn the_first_recorded_answer_wins_across_batches_and_within_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .append(&[Record::ModelCall(call(1, "first"))], Durability::Sync)
        .unwrap();
    let receipt = store
        .append(
            &[
                Record::ModelCall(call(1, "second")),
                Record::ModelCall(call(2, "one")),
                Record::ModelCall(call(2, "two")),
            ],
            Durability::Sync,
        )
        .unwrap();
    assert_eq!(receipt.new_count(), 3, "every answer is still recorded");
    let (_, found) = store.model_call(&RecordId([1; 32])).unwrap().unwrap();
    assert_eq!(found.response, "first");
    let (_, found) = store.model_call(&RecordId([2; 32])).unwrap().unwrap();
    assert_eq!(found.response, "one");
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let (_, found) = store.model_call(&RecordId([2; 32])).unwrap().unwrap();
    assert_eq!(found.response, "one", "the index survives a reopen");
    assert!(store.audit().unwrap().is_clean());
}

#[test]
fn audit_names_a_model_call_missing_from_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let records = [Record::ModelCall(call(7, "x"))];
    store.append(&records, Durability::Sync).unwrap();
    store
        .remove_model_call_index_for_test(&RecordId([7; 32]))
        .unwrap();
    assert_eq!(store.model_call(&RecordId([7; 32])).unwrap(), None);
    let report = store.audit().unwrap();
    assert_eq!(report.problems.len(), 3, "{:?}", report.problems);
    match &report.problems[0] {
        AuditProblem::ModelCallIndexMismatch {
            seq,
            id,
            indexed_seq,
            ..
        } => {
            assert_eq!((*seq, *indexed_seq), (1, None));
            assert_eq!(*id, id_of(&records[0]));
        }
        other => panic!("unexpected problem {other:?}"),
    }
    assert!(matches!(
        report.problems[1],
        AuditProblem::ModelCallIndexSize {
            requests: 1,
            indexed: 0
        }
    ));
    // The index's digest differs from a rebuild from the records.
    assert!(matches!(
        report.problems[2],
        AuditProblem::IndexDigestMismatch {
            keyspace: "model_calls",
            stored_entries: 0,
            rebuilt_entries: 1,
            ..
        }
    ));
}
