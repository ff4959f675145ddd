//! A backfill through model-backed operators while the service answers
//! 429 and 5xx: once it recovers every block is ready, no request is sent
//! again after its response was recorded, and the requests made are exactly
//! the distinct calls plus the failures.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::support;

use std::collections::BTreeSet;

use strataflow::Memory;
use strataflow::log::record::{Outcome, Record, RecordKind};
use support::llm_profile::{LLM, ingest, save_llm_profile, write_archive};
use support::mirror_model;
use support::model_server::{Fault, ModelServer, Reply};

#[test]
fn injected_429s_and_500s_end_with_every_block_ready() {
    let server = ModelServer::start(|body| Reply::Tool(mirror_model::answer(body)));
    // Ten consecutive failures. A call makes at most 5 requests (4
    // retries) and only succeeds once the faults are used up; with at most
    // 2 calls in flight, at least one call exhausts its retries, so its
    // operator run fails and is retried later as a new attempt.
    let faults = [
        Fault::Status(429, Some(0)),
        Fault::Status(429, Some(0)),
        Fault::Status(500, None),
        Fault::Status(429, Some(0)),
        Fault::Status(503, None),
        Fault::Status(429, Some(0)),
        Fault::Status(429, Some(0)),
        Fault::Status(502, None),
        Fault::Status(429, Some(0)),
        Fault::Status(500, None),
    ];
    server.inject(faults.clone());
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 3, 30);
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    save_llm_profile(&memory, &server.base_url());
    memory.set_default_profile(LLM).unwrap();
    ingest(&memory, &file);

    let status = memory.status(None).unwrap();
    assert!(status.blocks >= 6, "{status:?}");
    assert_eq!(status.ready_blocks, status.blocks, "{status:?}");
    for op in &status.operators {
        assert_eq!((op.failed, op.retryable), (0, 0), "{op:?}");
    }
    let recorded = memory.store().count(RecordKind::ModelCall).unwrap();
    let requests = server.requests();
    assert_eq!(
        requests,
        usize::try_from(recorded).unwrap() + faults.len(),
        "requests = distinct calls + failures"
    );
    // After the faults every request was answered and recorded: none of
    // them was sent twice.
    let answered: Vec<String> = server
        .bodies()
        .iter()
        .skip(faults.len())
        .map(ToString::to_string)
        .collect();
    let distinct: BTreeSet<&String> = answered.iter().collect();
    assert_eq!(
        distinct.len(),
        answered.len(),
        "a recorded call was asked again"
    );
    let failed_runs = memory
        .store()
        .ids_of_kind(RecordKind::Derivation)
        .map(|e| memory.store().get(&e.unwrap().1).unwrap().unwrap().record)
        .filter(|r| {
            matches!(r, Record::Derivation(d)
                if matches!(&d.outcome, Outcome::Failed { error } if error.contains("model service")))
        })
        .count();
    assert!(
        failed_runs >= 1,
        "an exhausted call is a failed run, retried"
    );
    let totals = memory.model_calls().unwrap();
    assert_eq!(totals.made, recorded);
    assert!(totals.retries >= 1, "{totals:?}");
}
