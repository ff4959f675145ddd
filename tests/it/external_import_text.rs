//! `import memory` of a plain-text file: the profile's model extracts the
//! candidates (`llm-import-extractor@1`, one request per part of at most
//! 12,000 characters) and decides them (`llm-import-decider@1`); they are
//! committed like the candidates of a JSON export. Without a model, or
//! offline with no recorded call, the import stops with a clear error and
//! stores nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;
use crate::import_support;
use crate::support;

use serde_json::{Value, json};
use strataflow::log::SourceTime;
use strataflow::log::record::{ImportAction, Precision, Record, RecordKind};
use strataflow::operators::import::{TextImportError, text::MAX_CHUNK_CHARS};
use strataflow::operators::model::ModelError;
use strataflow::{ExternalImportOptions, ExternalImportReport, Memory, MemoryError};
use support::llm_profile::{LLM, save_llm_profile};
use support::model_server::{ModelServer, Reply};

const NOTES: &str = "Memories the assistant kept about Ana:\n\
- Ana prefers green tea over coffee\n\
- Ana moved to Porto in 2021\n\
- Ana works as a night-shift nurse\n";

const IMPORTED_AT: &str = "2026-01-15T09:30:00Z";

/// The scripted model: the extractor turns every `- ` line of its part into
/// a candidate (a line naming 2021 gets that year); the decider adds.
fn answer(body: &Value) -> Reply {
    let user: Value =
        serde_json::from_str(body["messages"][1]["content"].as_str().unwrap()).unwrap_or_default();
    match body["tool_choice"]["function"]["name"].as_str() {
        Some("record_memory_candidates") => {
            let text = user["text"].as_str().unwrap();
            let candidates: Vec<Value> = text
                .lines()
                .filter_map(|l| l.strip_prefix("- "))
                .map(|line| {
                    let temporal = if line.contains("2021") {
                        json!({"happenedStart": "2021", "originalText": "in 2021",
                               "precision": "year", "basis": "explicit", "status": "occurred"})
                    } else {
                        json!({"precision": "unknown", "basis": "unknown"})
                    };
                    json!({"memoryKind": "fact", "category": "identity", "title": line,
                           "summary": format!("{line}."), "tags": ["ana"], "quotes": [line],
                           "temporal": temporal, "scope": "user", "confidence": 0.9})
                })
                .collect();
            Reply::Tool(json!({ "candidates": candidates }))
        }
        Some("decide_import") => Reply::Tool(json!({
            "action": "ADD", "existing_event_ids": [], "reason": "new memory", "confidence": 0.95
        })),
        other => panic!("unexpected tool {other:?}"),
    }
}

/// Requests the server saw for `tool`.
fn requests_for(server: &ModelServer, tool: &str) -> Vec<Value> {
    server
        .bodies()
        .into_iter()
        .filter(|b| b["tool_choice"]["function"]["name"] == tool)
        .collect()
}

fn options(dry_run: bool) -> ExternalImportOptions<'static> {
    ExternalImportOptions {
        dry_run,
        profile: Some(LLM.into()),
        imported_at: SourceTime::parse_rfc3339(IMPORTED_AT),
        ..ExternalImportOptions::default()
    }
}

fn count(memory: &Memory, kind: &str) -> u64 {
    memory.stats().unwrap().records[kind]
}

fn import_source(
    memory: &Memory,
    report: &ExternalImportReport,
) -> strataflow::log::record::ImportSource {
    match memory
        .default_tenant()
        .show(&report.import_id.unwrap().to_hex())
        .unwrap()
        .record
    {
        Record::ImportSource(s) => s,
        other => panic!("not an import: {other:?}"),
    }
}

/// The scripted server, a fresh data directory and its `Memory` holding
/// the `llm` profile against that server.
fn with_llm_profile() -> (ModelServer, tempfile::TempDir, Memory) {
    let server = ModelServer::start(answer);
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(tmp.path()).unwrap();
    save_llm_profile(&memory, &server.base_url());
    (server, tmp, memory)
}

#[test]
fn plain_text_is_extracted_decided_and_committed_citing_the_import_message() {
    let (server, tmp, memory) = with_llm_profile();

    let report = memory
        .import_external_memory(NOTES, &options(false))
        .unwrap();
    assert_eq!(report.format, "text");
    assert_eq!(report.text_parts, 1);
    assert_eq!(report.decider, "llm-import-decider@1");
    assert_eq!(report.candidates, 3);
    let titles: Vec<&str> = report.decisions.iter().map(|d| d.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Ana prefers green tea over coffee",
            "Ana moved to Porto in 2021",
            "Ana works as a night-shift nurse"
        ]
    );
    assert!(
        report
            .decisions
            .iter()
            .all(|d| d.action == ImportAction::Add)
    );
    assert_eq!(report.created_events.len(), 3);
    // One extraction request (the text fits one part) and one decision per
    // candidate; every call is recorded.
    let extraction = requests_for(&server, "record_memory_candidates");
    assert_eq!(extraction.len(), 1);
    let user: Value =
        serde_json::from_str(extraction[0]["messages"][1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(user, json!({"part": 1, "parts": 1, "text": NOTES}));
    assert_eq!(requests_for(&server, "decide_import").len(), 3);
    assert_eq!(server.requests(), 4);
    assert_eq!(count(&memory, "model_call"), 4);

    // The import record says `text`; the whole text is the source message,
    // and every event cites it.
    let source = import_source(&memory, &report);
    assert_eq!(source.format, "text");
    assert_eq!(source.source_system, "");
    let Record::Message(message) = memory
        .default_tenant()
        .show(&source.message.to_hex())
        .unwrap()
        .record
    else {
        panic!("not a message");
    };
    assert_eq!(message.content, NOTES);
    for id in &report.created_events {
        let event = import_support::event(&memory, id);
        assert_eq!(event.source_messages, vec![source.message]);
        assert_eq!(event.block, source.block);
        assert_eq!(
            event.temporal.mentioned_at,
            SourceTime::parse_rfc3339(IMPORTED_AT).unwrap(),
            "no mention time in the text: the import time"
        );
    }
    let porto = import_support::event(&memory, &report.created_events[1]);
    assert_eq!(porto.temporal.precision, Precision::Year);
    assert!(porto.temporal.happened_start.is_some());
    let tea = import_support::event(&memory, &report.created_events[0]);
    assert_eq!(tea.temporal.happened_start, None);
    assert_eq!(count(&memory, "event"), 3);

    // The same text again, offline: extraction is served from the recorded
    // call, the candidates are exact duplicates of the stored events (IGNORE
    // without asking the decider), no event is written.
    drop(memory);
    let mut memory = Memory::open(tmp.path()).unwrap();
    memory.set_offline(true).unwrap();
    let again = memory
        .import_external_memory(NOTES, &options(false))
        .unwrap();
    assert_eq!(server.requests(), 4, "no new request");
    assert_eq!(again.candidates, 3);
    assert!(
        again
            .decisions
            .iter()
            .zip(&report.created_events)
            .all(|(d, e)| d.action == ImportAction::Ignore && d.targets == vec![*e])
    );
    assert!(again.created_events.is_empty());
    assert_eq!(count(&memory, "event"), 3);
    assert_eq!(count(&memory, "message"), 1, "the same source message");
    assert_eq!(
        count(&memory, "import_source"),
        2,
        "the re-import is audited"
    );
    let totals = memory.model_calls().unwrap();
    assert_eq!((totals.made, totals.served_from_log), (4, 1));
}

#[test]
fn a_dry_run_records_only_the_model_calls_and_the_import_then_pays_nothing() {
    let (server, _tmp, memory) = with_llm_profile();

    let dry = memory
        .import_external_memory(NOTES, &options(true))
        .unwrap();
    assert!(dry.dry_run && dry.import_id.is_none());
    assert_eq!(dry.created_events.len(), 3, "would be written");
    assert_eq!(server.requests(), 4);
    let stats = memory.stats().unwrap();
    assert_eq!(stats.records["model_call"], 4);
    assert_eq!(
        stats.total_records, 4,
        "nothing but the model calls: {:?}",
        stats.records
    );

    let real = memory
        .import_external_memory(NOTES, &options(false))
        .unwrap();
    assert_eq!(server.requests(), 4, "every call served from the log");
    assert_eq!(real.created_events, dry.created_events);
    assert_eq!(count(&memory, "event"), 3);
}

#[test]
fn plain_text_without_a_model_is_refused_and_nothing_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let memory = Memory::open(data).unwrap();
    let err = memory
        .import_external_memory(NOTES, &options(false))
        .unwrap_err();
    // The `llm` profile does not exist here.
    assert!(err.to_string().contains("llm"), "{err}");
    let mut no_profile = options(false);
    no_profile.profile = None;
    let err = memory
        .import_external_memory(NOTES, &no_profile)
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::ImportText(TextImportError::NoModel { profile }) if profile == "default"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("plain text") && text.contains("needs a model") && text.contains("--model"),
        "{text}"
    );
    assert_eq!(memory.stats().unwrap().total_records, 0);
    drop(memory);

    // Through the CLI: the file is named, exit status 1, nothing stored.
    let file = data.join("notes.txt");
    std::fs::write(&file, NOTES).unwrap();
    let out = common::run(
        data,
        &[
            "import",
            "memory",
            file.to_str().unwrap(),
            "--imported-at",
            IMPORTED_AT,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("notes.txt: the file is plain text") && stderr.contains("needs a model"),
        "{stderr}"
    );
    assert_eq!(
        Memory::open(data).unwrap().stats().unwrap().total_records,
        0
    );
}

#[test]
fn offline_with_no_recorded_call_stops_and_stores_nothing() {
    let (server, _tmp, mut memory) = with_llm_profile();
    memory.set_offline(true).unwrap();
    let err = memory
        .import_external_memory(NOTES, &options(false))
        .unwrap_err();
    assert!(
        matches!(
            &err,
            MemoryError::ImportText(TextImportError::Model {
                source: ModelError::Offline { .. },
                ..
            })
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("offline") && text.contains("llm-import-extractor@1"),
        "{text}"
    );
    assert_eq!(server.requests(), 0);
    assert_eq!(memory.stats().unwrap().total_records, 0);
    assert_eq!(memory.model_calls().unwrap().failed, 1, "counted as failed");
}

#[test]
fn a_long_text_is_sent_in_parts_and_its_candidates_kept_in_order() {
    let (server, tmp, memory) = with_llm_profile();
    let data = tmp.path();
    drop(memory);
    // About 30,000 characters: prose with three memories spread out.
    let filler = |from: usize| -> String {
        (from..from + 160)
            .map(|i| format!("On day {i:04} Ana talked about the weather and nothing else.\n"))
            .collect()
    };
    let text = format!(
        "- Ana prefers green tea over coffee\n{}- Ana moved to Porto in 2021\n{}- Ana works as a night-shift nurse\n",
        filler(0),
        filler(1000) + &filler(2000)
    );
    assert!(text.chars().count() > 2 * MAX_CHUNK_CHARS);
    let file = data.join("chatgpt-memories.txt");
    std::fs::write(&file, &text).unwrap();

    // Through the CLI, with --profile.
    let out = common::ok(
        data,
        &[
            "import",
            "memory",
            file.to_str().unwrap(),
            "--profile",
            LLM,
            "--imported-at",
            IMPORTED_AT,
            "--json",
        ],
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["format"], "text");
    assert_eq!(report["text_parts"], 3);
    let extraction = requests_for(&server, "record_memory_candidates");
    assert_eq!(extraction.len(), 3, "one request per part");
    let mut joined = String::new();
    for (i, body) in extraction.iter().enumerate() {
        let user: Value =
            serde_json::from_str(body["messages"][1]["content"].as_str().unwrap()).unwrap();
        assert_eq!(user["part"], i + 1);
        assert_eq!(user["parts"], 3);
        let part = user["text"].as_str().unwrap();
        assert!(part.chars().count() <= MAX_CHUNK_CHARS);
        assert!(part.ends_with('\n'), "cut on a line boundary");
        joined.push_str(part);
    }
    assert_eq!(joined, text, "the parts are the whole text, in order");
    let titles: Vec<&str> = report["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Ana prefers green tea over coffee",
            "Ana moved to Porto in 2021",
            "Ana works as a night-shift nurse"
        ]
    );
    let indexes: Vec<u64> = report["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, [0, 1, 2]);
    let memory = Memory::open(data).unwrap();
    assert_eq!(count(&memory, "event"), 3);
    let kinds = memory.stats().unwrap().records;
    assert_eq!(kinds[RecordKind::ImportSource.name()], 1);

    // The human-readable report of a dry run names the text and says the
    // model calls were recorded.
    drop(memory);
    let out = common::ok(
        data,
        &[
            "import",
            "memory",
            file.to_str().unwrap(),
            "--profile",
            LLM,
            "--imported-at",
            "2026-02-01T00:00:00Z",
            "--dry-run",
        ],
    );
    assert!(out.contains("from plain text (3 part(s)"), "{out}");
    assert!(out.contains("but the model calls"), "{out}");
}
