//! A profile of model-backed operators replays from its recorded calls:
//! another data directory holding the same messages and the `ModelCall`
//! records derives the same events and views offline, with zero HTTP
//! requests; without the records, `--offline` stops naming the block and
//! stores nothing.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::support;

use std::collections::BTreeSet;

use strataflow::log::record::{Record, RecordKind};
use strataflow::log::{Durability, RecordId};
use strataflow::{Memory, MemoryError};
use support::llm_profile::{LLM, ingest, save_llm_profile, write_archive};
use support::mirror_model;
use support::model_server::{ModelServer, Reply};

fn events(memory: &Memory) -> BTreeSet<RecordId> {
    memory
        .default_tenant()
        .extracted_events(&strataflow::EventsQuery {
            profile: Some(LLM.into()),
            ..Default::default()
        })
        .unwrap()
        .events
        .iter()
        .map(|(id, _, _)| *id)
        .collect()
}

fn digests(memory: &Memory) -> Vec<(String, String)> {
    memory
        .default_tenant()
        .views(&strataflow::ViewsOptions {
            profile: Some(LLM.into()),
            verify: false,
        })
        .unwrap()
        .into_iter()
        .map(|v| (v.view.to_string(), v.digest))
        .collect()
}

#[test]
fn recorded_calls_replay_offline_and_a_missing_one_stops_the_run() {
    let server = ModelServer::start(|body| Reply::Tool(mirror_model::answer(body)));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 3, 30);

    // First run: every call is made and recorded.
    let first = Memory::open(tmp.path().join("first")).unwrap();
    ingest(&first, &file);
    save_llm_profile(&first, &server.base_url());
    let stats = first
        .derive(Some(LLM), &first.derive_options(), &mut |_| {})
        .unwrap();
    let calls = server.requests();
    let recorded: Vec<Record> = first
        .store()
        .ids_of_kind(RecordKind::ModelCall)
        .map(|e| first.store().get(&e.unwrap().1).unwrap().unwrap().record)
        .collect();
    assert!(stats.runs > 0 && calls > 0);
    assert_eq!(recorded.len(), calls, "one record per request made");
    let first_events = events(&first);
    assert!(!first_events.is_empty(), "the mirror model yields events");
    let first_views = digests(&first);
    let status = first.status(Some(LLM)).unwrap();
    assert_eq!(status.ready_blocks, status.blocks);
    assert_eq!(status.model_calls.made, calls as u64);

    // Replay elsewhere from the recorded calls, offline: no request.
    let mut replay = Memory::open(tmp.path().join("replay")).unwrap();
    ingest(&replay, &file);
    save_llm_profile(&replay, &server.base_url());
    replay
        .store()
        .append(&recorded, Durability::Buffered)
        .unwrap();
    replay.set_offline(true).unwrap();
    replay
        .derive(Some(LLM), &replay.derive_options(), &mut |_| {})
        .unwrap();
    assert_eq!(server.requests(), calls, "a replay makes no HTTP request");
    assert_eq!(events(&replay), first_events);
    assert_eq!(digests(&replay), first_views);
    let totals = replay.model_calls().unwrap();
    assert_eq!(totals.served_from_log, calls as u64);
    assert_eq!(totals.failed, 0);

    // Offline with nothing recorded: a clear error, nothing stored.
    let mut bare = Memory::open(tmp.path().join("bare")).unwrap();
    ingest(&bare, &file);
    save_llm_profile(&bare, &server.base_url());
    // A plan connects the profile's gateway; going offline afterwards must
    // still hold for every later call.
    let plan = bare.plan(Some(LLM)).unwrap();
    assert!(plan.operators.iter().all(|o| o.model_calls > 0), "{plan:?}");
    bare.set_offline(true).unwrap();
    let before = bare.stats().unwrap().total_records;
    let err = bare
        .derive(Some(LLM), &bare.derive_options(), &mut |_| {})
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, MemoryError::Derive(_))
            && text.contains("offline")
            && text.contains("block")
            && text.contains("llm-summarizer@1"),
        "{text}"
    );
    assert_eq!(bare.stats().unwrap().total_records, before);
    assert_eq!(server.requests(), calls);
}
