//! The library facade: a tenant handle (`Memory::tenant`) whose verbs see
//! that tenant only, option structs, and typed errors a caller can branch
//! on (which argument, which value, which record) instead of strings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::Path;

use strataflow::log::record::{Actor, Record, RecordKind};
use strataflow::operators::evidence_gate::AssessmentInput;
use strataflow::pipeline::ingest::OnInvalid;
use strataflow::{
    Channel, ConfigError, EventsQuery, EvidenceError, Expected, FilterProblem, Memory, MemoryError,
    ProfileError, QueryError, SearchOptions, SearchRequest,
};

use crate::common::{self, data_file, ok, run};

/// conv-30 imported (and derived) into tenant `acme`.
fn acme(dir: &Path) -> Memory {
    let memory = Memory::open(dir).unwrap();
    let options = memory.ingest_options().unwrap();
    memory
        .tenant("acme")
        .import_locomo(
            &data_file("locomo/conv-30.json"),
            &options,
            OnInvalid::Refuse,
            &mut |_| {},
        )
        .unwrap();
    memory
}

fn query(text: &str) -> SearchRequest {
    SearchRequest {
        query: text.into(),
        ..SearchRequest::default()
    }
}

#[test]
fn a_tenant_handle_sees_its_tenant_only_and_the_default_tenant_is_empty_named() {
    let dir = tempfile::tempdir().unwrap();
    let memory = acme(dir.path());
    let tenant = memory.tenant("acme");
    assert_eq!(tenant.name(), "acme");
    assert_eq!(memory.default_tenant().name(), "");

    let found = tenant
        .search(&query("Paris"), &SearchOptions::default())
        .unwrap();
    assert!(!found.hits.is_empty());
    assert!(found.batch.is_some(), "a search is recorded as a batch");
    // Nothing of acme is visible from the default tenant or another one.
    for other in [memory.default_tenant(), memory.tenant("other")] {
        let none = other
            .search(&query("Paris"), &SearchOptions::default())
            .unwrap();
        assert!(none.hits.is_empty(), "tenant `{}`", other.name());
        assert!(other.events(&EventsQuery::default()).unwrap().is_empty());
    }

    // `events` lists what `extracted_events` returns, with statuses.
    let listed = tenant.events(&EventsQuery::default()).unwrap();
    let extracted = tenant.extracted_events(&EventsQuery::default()).unwrap();
    assert!(!listed.is_empty());
    assert_eq!(
        listed.iter().map(|e| e.id).collect::<Vec<_>>(),
        extracted
            .events
            .iter()
            .map(|(id, _, _)| *id)
            .collect::<Vec<_>>()
    );
    // A thread filter is an option, not a positional `Option<&str>`.
    let thread = listed[0].thread.clone();
    let one_thread = tenant
        .events(&EventsQuery {
            thread: Some(thread.clone()),
            ..EventsQuery::default()
        })
        .unwrap();
    assert!(one_thread.iter().all(|e| e.thread == thread));

    // An id of acme is not found through another tenant, and says so in
    // a field the caller can match.
    let id = listed[0].id.to_hex();
    assert!(tenant.show(&id).is_ok());
    let err = memory.default_tenant().show(&id).unwrap_err();
    assert!(
        matches!(&err, MemoryError::Query(QueryError::NotFound { id: missing }) if *missing == id),
        "{err:?}"
    );
    // Governance goes through the handle too.
    tenant
        .govern(
            &id,
            strataflow::log::record::GovernanceAction::Pin,
            Actor::User,
            None,
        )
        .unwrap();
    assert!(
        tenant
            .event_status()
            .unwrap()
            .get(&listed[0].id)
            .unwrap()
            .pinned
    );
}

#[test]
fn errors_carry_the_argument_the_value_and_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let memory = acme(dir.path());
    let tenant = memory.tenant("acme");

    // A bad filter names its field, value and problem.
    let bad = SearchRequest {
        intent: Some("soonest".into()),
        ..query("Paris")
    };
    let err = tenant.search(&bad, &SearchOptions::default()).unwrap_err();
    assert!(
        matches!(
            &err,
            MemoryError::Query(QueryError::InvalidFilter {
                field: "intent",
                value,
                problem: FilterProblem::UnknownIntent,
                ..
            }) if value == "soonest"
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "--intent `soonest`: expected first or latest"
    );
    let reversed = SearchRequest {
        from: Some("2023-06-01".into()),
        to: Some("2023-05-01".into()),
        ..query("Paris")
    };
    let err = tenant
        .search(&reversed, &SearchOptions::default())
        .unwrap_err();
    assert!(
        matches!(
            &err,
            MemoryError::Query(QueryError::InvalidFilter {
                field: "from",
                problem: FilterProblem::FromAfterTo,
                other: Some(to),
                ..
            }) if to == "2023-05-01"
        ),
        "{err:?}"
    );

    // An id of the wrong kind names the record, its kind and what was
    // expected.
    let block = tenant.blocks(&tenant_thread(&memory)).unwrap().blocks[0].id;
    let Record::Block(b) = tenant.show(&block.to_hex()).unwrap().record else {
        panic!("a block");
    };
    let first_message = b.messages[0];
    let err = tenant.expand_event(&first_message.to_hex()).unwrap_err();
    assert!(
        matches!(
            &err,
            MemoryError::Query(QueryError::WrongKind {
                id,
                kind: RecordKind::Message,
                expected: Expected::Event,
            }) if *id == first_message
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("{first_message} is a message record, not an event")
    );

    // The evidence gate: a batch with no assessment cannot be used.
    let found = tenant
        .search(
            &query("Paris"),
            &SearchOptions {
                channel: Channel::Events,
                ..SearchOptions::default()
            },
        )
        .unwrap();
    let batch = found.batch.unwrap();
    let refs = vec![found.hits[0].reference.clone()];
    let err = tenant.use_refs(&batch.to_hex(), &refs).unwrap_err();
    assert!(
        matches!(&err, MemoryError::Evidence(EvidenceError::NotAssessed { batch: b }) if *b == batch),
        "{err:?}"
    );
    let input = AssessmentInput {
        verdict: "sufficient".into(),
        evidence: refs.clone(),
        fit: "it says where".into(),
        missing: String::new(),
        next: "answer".into(),
    };
    tenant.assess(&batch.to_hex(), &input).unwrap();
    tenant.use_refs(&batch.to_hex(), &refs).unwrap();
    let err = tenant.assess(&batch.to_hex(), &input).unwrap_err();
    assert!(
        matches!(&err, MemoryError::Evidence(EvidenceError::BatchClosed { batch: b }) if *b == batch),
        "{err:?}"
    );

    // An unknown profile names itself.
    let err = tenant.graph(Some("nope")).unwrap_err();
    assert!(
        matches!(&err, MemoryError::Profile(ProfileError::NotFound { name }) if name == "nope"),
        "{err:?}"
    );
}

/// A thread of tenant `acme`.
fn tenant_thread(memory: &Memory) -> String {
    memory
        .threads()
        .unwrap()
        .into_iter()
        .find(|(tenant, _, _)| tenant == "acme")
        .map(|(_, thread, _)| thread)
        .unwrap()
}

#[test]
fn a_block_size_change_is_refused_with_both_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    ok(data, &["init", "--block-turns", "6"]);
    let file = data.join("m.jsonl");
    common::write_lines(&file, &[common::line("t", "m1", "user", "hello", 1)]);
    ok(data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    let err = Memory::open_with(data, Some(12)).unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Config(ConfigError::BlockTurnsChange {
                stored: 6,
                wanted: 12
            })
        ),
        "{err:?}"
    );
    // The CLI still reports it as an error (exit 1) with the same words.
    let out = run(data, &["init", "--block-turns", "12"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("seals blocks of 6 turns"));
}
