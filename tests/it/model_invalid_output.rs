//! Invalid model output (a source outside the block, a missing field, a
//! time in no accepted form) is rejected by validation, recorded as a
//! failed derivation with the reason, and retried within the attempt limit:
//! the retry is a new request (it says an earlier attempt failed), so it is
//! not served the recorded invalid answer.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use strataflow::Memory;
use strataflow::log::record::{Outcome, Record, RecordKind};
use support::llm_profile::{LLM, ingest, save_llm_profile, write_archive};
use support::mirror_model;
use support::model_server::{ModelServer, Reply};

/// The first extraction answers are broken, one defect each in turn.
fn broken(mut answer: Value, n: usize) -> Value {
    let event = &mut answer["events"][0];
    match n % 3 {
        0 => event["sources"] = serde_json::json!(["m99"]),
        1 => {
            if let Some(o) = event.as_object_mut() {
                o.remove("summary");
            }
        }
        _ => event["happened_start"] = Value::from("sometime around spring"),
    }
    answer
}

#[test]
fn invalid_answers_fail_with_their_reason_and_are_retried() {
    let first_attempts = AtomicUsize::new(0);
    let server = ModelServer::start(move |body| {
        let answer = mirror_model::answer(body);
        if mirror_model::tool_name(body) == "record_events" && !mirror_model::is_retry(body) {
            let n = first_attempts.fetch_add(1, Ordering::SeqCst);
            return Reply::Tool(broken(answer, n));
        }
        Reply::Tool(answer)
    });
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 3, 30);
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    ingest(&memory, &file);
    save_llm_profile(&memory, &server.base_url());
    memory
        .derive(Some(LLM), &memory.derive_options(), &mut |_| {})
        .unwrap();

    let status = memory.status(Some(LLM)).unwrap();
    assert_eq!(status.ready_blocks, status.blocks, "{status:?}");
    let mut failed = Vec::new();
    let mut ok_attempts = Vec::new();
    for entry in memory.store().ids_of_kind(RecordKind::Derivation) {
        let record = memory
            .store()
            .get(&entry.unwrap().1)
            .unwrap()
            .unwrap()
            .record;
        let Record::Derivation(d) = record else {
            continue;
        };
        if d.operator != "llm-extractor@1" {
            continue;
        }
        match d.outcome {
            Outcome::Failed { error } => failed.push((d.attempt, error)),
            _ => ok_attempts.push(d.attempt),
        }
    }
    assert_eq!(failed.len(), usize::try_from(status.blocks).unwrap());
    assert!(failed.iter().all(|(attempt, _)| *attempt == 1));
    assert!(ok_attempts.iter().all(|a| *a == 2), "{ok_attempts:?}");
    let reasons: Vec<&String> = failed.iter().map(|(_, e)| e).collect();
    for expected in [
        "`m99` is not a message of the block",
        "`summary`",
        "happened_start",
    ] {
        assert!(
            reasons.iter().any(|r| r.contains(expected)),
            "no failure mentions {expected}: {reasons:#?}"
        );
    }
    // Nothing invalid was stored: every event cites messages of its block.
    for (_, _, event) in memory
        .default_tenant()
        .extracted_events(&strataflow::EventsQuery {
            profile: Some(LLM.into()),
            ..Default::default()
        })
        .unwrap()
        .events
    {
        let Some(Record::Block(block)) =
            memory.store().get(&event.block).unwrap().map(|s| s.record)
        else {
            panic!("event without its block");
        };
        assert!(
            event
                .source_messages
                .iter()
                .all(|m| block.messages.contains(m))
        );
    }
}
