//! Derived embeddings: a profile naming an embedder embeds every message,
//! block summary and event once; a profile that changes only the embedder
//! derives only embeddings; `openai-embeddings@1` through the profile's
//! model service is recorded, so a rerun, online or offline, asks nothing.
#![allow(clippy::unwrap_used)]

use crate::embeddings_openai::embedding_server;
use crate::support;

use strataflow::Memory;
use strataflow::log::record::{Record, RecordKind};
use strataflow::operators::profile::{ModelEndpoint, Profile};
use support::llm_profile::{ingest, write_archive};

fn count(memory: &Memory, kind: RecordKind) -> u64 {
    memory.store().count(kind).unwrap()
}

fn profile(name: &str, embedder: &str, model: Option<ModelEndpoint>) -> Profile {
    Profile {
        name: name.into(),
        model,
        embedder: Some(embedder.into()),
        ..Profile::default_profile()
    }
}

fn derive(memory: &Memory, name: &str) -> Result<(), strataflow::MemoryError> {
    memory
        .derive(Some(name), &memory.derive_options(), &mut |_| {})
        .map(|_| ())
}

/// Every embedding of `label`, by source kind.
fn sources(memory: &Memory, label: &str) -> (u64, u64, u64) {
    let (mut messages, mut summaries, mut events) = (0, 0, 0);
    for stored in memory.store().scan(0) {
        let Record::Embedding(e) = stored.unwrap().record else {
            continue;
        };
        if e.label != label {
            continue;
        }
        match memory
            .store()
            .get(&e.source)
            .unwrap()
            .unwrap()
            .record
            .kind()
        {
            RecordKind::Message => messages += 1,
            RecordKind::BlockSummary => summaries += 1,
            RecordKind::Event => events += 1,
            other => panic!("an embedding of a {other:?}"),
        }
    }
    (messages, summaries, events)
}

#[test]
fn a_profile_embedder_embeds_each_source_once_and_a_new_embedder_derives_only_embeddings() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 2, 20);
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    ingest(&memory, &file);
    derive(&memory, "default").unwrap();
    let (events, summaries) = (
        count(&memory, RecordKind::Event),
        count(&memory, RecordKind::BlockSummary),
    );
    let messages = count(&memory, RecordKind::Message);
    assert!(events > 0 && summaries > 0);
    assert_eq!(count(&memory, RecordKind::Embedding), 0);

    memory
        .save_profile(&profile("dense", "word-hash@1:64", None))
        .unwrap();
    derive(&memory, "dense").unwrap();
    assert_eq!(
        sources(&memory, "strataflow/word-hash-64"),
        (messages, summaries, events)
    );
    // Only embeddings: the same operators derived nothing new.
    assert_eq!(count(&memory, RecordKind::Event), events);
    assert_eq!(count(&memory, RecordKind::BlockSummary), summaries);
    let after = memory.store().last_seq().unwrap();
    derive(&memory, "dense").unwrap();
    assert_eq!(
        memory.store().last_seq().unwrap(),
        after,
        "a rerun writes nothing"
    );

    // Another embedder: another label, again only embeddings.
    memory
        .save_profile(&profile("dense32", "word-hash@1:32", None))
        .unwrap();
    derive(&memory, "dense32").unwrap();
    assert_eq!(
        sources(&memory, "strataflow/word-hash-32"),
        (messages, summaries, events)
    );
    assert_eq!(count(&memory, RecordKind::Event), events);
    assert_eq!(count(&memory, RecordKind::BlockSummary), summaries);
    assert_eq!(
        count(&memory, RecordKind::Embedding),
        2 * (messages + summaries + events)
    );
}

#[test]
fn an_unknown_profile_embedder_is_refused_when_the_profile_is_saved() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    for spec in ["nope@1", "word-hash@1:0", "openai-embeddings@1:m:8"] {
        let err = memory
            .save_profile(&profile("bad", spec, None))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(spec), "{spec}: {err}");
    }
    assert!(memory.profile("bad").is_err(), "nothing saved");
}

#[test]
fn an_openai_embedder_profile_is_recorded_and_replays_offline_with_zero_requests() {
    let server = embedding_server(4);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 1, 10);
    let data = tmp.path().join("data");
    let endpoint = ModelEndpoint {
        model: "scripted".into(),
        base_url: server.base_url(),
        api_key_env: None,
        concurrency: 2,
        timeout_secs: 10,
    };
    let written = {
        let memory = Memory::open(&data).unwrap();
        ingest(&memory, &file);
        memory
            .save_profile(&profile(
                "remote",
                "openai-embeddings@1:test-embed:4",
                Some(endpoint.clone()),
            ))
            .unwrap();
        derive(&memory, "remote").unwrap();
        let written = count(&memory, RecordKind::Embedding);
        assert!(written > 0);
        assert_eq!(
            count(&memory, RecordKind::ModelCall),
            server.requests() as u64,
            "every request is a recorded call"
        );
        written
    };
    let requests = server.requests();
    let mut memory = Memory::open(&data).unwrap();
    memory.set_offline(true).unwrap();
    let last = memory.store().last_seq().unwrap();
    derive(&memory, "remote").unwrap();
    assert_eq!(server.requests(), requests, "offline: zero requests");
    assert_eq!(memory.store().last_seq().unwrap(), last);
    assert_eq!(count(&memory, RecordKind::Embedding), written);

    // Offline, a model never recorded is refused and writes nothing.
    memory
        .save_profile(&profile(
            "other",
            "openai-embeddings@1:other-embed:4",
            Some(endpoint),
        ))
        .unwrap();
    let err = derive(&memory, "other").err().unwrap().to_string();
    assert!(err.contains("offline"), "{err}");
    assert_eq!(server.requests(), requests);
    assert_eq!(count(&memory, RecordKind::Embedding), written);
}

#[test]
fn search_dense_through_the_cli_returns_the_evidence_text_of_the_profile_label() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 2, 6);
    let data = tmp.path().join("data");
    let file_s = file.to_str().unwrap();
    crate::common::ok(&data, &["ingest", file_s]);
    crate::common::ok(
        &data,
        &[
            "profile",
            "create",
            "dense",
            "--embedder",
            "word-hash@1:128",
        ],
    );
    // No embedder: a clear error, exit 1.
    let out = crate::common::run(&data, &["search", "dense", "Porto", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("names no embedder"));
    crate::common::ok(&data, &["resume", "--profile", "dense"]);
    let text = crate::common::ok(
        &data,
        &[
            "search",
            "dense",
            "On turn 3 we talked about the trip to Porto number 1 and the train tickets.",
            "--profile",
            "dense",
            "--limit",
            "3",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["label"], "strataflow/word-hash-128");
    let hits = v["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 3);
    let top = hits[0]["text"].as_str().unwrap();
    // The message itself: the same words, cosine 1, its whole text returned.
    assert_eq!(
        top,
        "On turn 3 we talked about the trip to Porto number 1 and the train tickets."
    );
    assert_eq!(hits[0]["kind"], "message");
    assert!(hits[0]["similarity"].as_f64().unwrap() > 0.999);
    let sims: Vec<f64> = hits
        .iter()
        .map(|h| h["similarity"].as_f64().unwrap())
        .collect();
    assert!(sims.windows(2).all(|w| w[0] >= w[1]), "{sims:?}");
    // Another tenant has no vectors: nothing.
    let other = crate::common::ok(
        &data,
        &[
            "search",
            "dense",
            "Porto",
            "--profile",
            "dense",
            "--tenant",
            "t2",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&other).unwrap();
    assert_eq!(v["vectors"], 0);
}

#[test]
fn the_dense_ranking_is_a_fourth_rrf_list_of_search_all() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 2, 6);
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    ingest(&memory, &file);
    // A reply that shares no word with the query: no lexical channel finds it.
    let reply = memory
        .store()
        .message_by_external_id("", "thread-1", "1-4-a")
        .unwrap()
        .unwrap();
    let request = strataflow::SearchRequest {
        query: "train tickets".into(),
        limit: Some(20),
        ..Default::default()
    };
    let searcher = memory.default_tenant().searcher(None).unwrap();
    let reference = format!("msg:{reply}");
    let lexical = searcher.search(strataflow::Channel::All, &request).unwrap();
    assert!(lexical.iter().all(|h| h.reference != reference));
    let fused = searcher
        .search_with_dense(strataflow::Channel::All, &request, &[reply])
        .unwrap();
    let hit = fused.iter().find(|h| h.reference == reference).unwrap();
    assert_eq!(hit.text.split(" [said").next(), Some("Bot: Noted (4)."));
    // Another thread asked: the dense list keeps to it.
    let other_thread = strataflow::SearchRequest {
        thread: Some("thread-0".into()),
        ..request.clone()
    };
    let fused = searcher
        .search_with_dense(strataflow::Channel::All, &other_thread, &[reply])
        .unwrap();
    assert!(fused.iter().all(|h| h.reference != reference));
    // A single channel ignores it.
    let raw = searcher
        .search_with_dense(strataflow::Channel::Raw, &request, &[reply])
        .unwrap();
    assert!(raw.iter().all(|h| h.reference != reference));
}
