//! A failing extractor is retried at most three times with backoff; every
//! attempt is a `Derivation` record; a block becomes ready once one
//! succeeds; one that always fails stops at three and `status` shows it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::{data_file, ok};
use strataflow::log::Digest;
use strataflow::log::record::{Outcome, Record, RecordKind};
use strataflow::operators::extractor::HeuristicExtractor;
use strataflow::operators::operator::{
    Extraction, ExtractionInput, Extractor, OperatorError, OperatorId, config_hash,
};
use strataflow::operators::profile::Profile;
use strataflow::pipeline::derive::RetryPolicy;

/// Fails its first `failures` calls for every block, then extracts like the heuristic.
struct Flaky {
    name: &'static str,
    failures: u32,
    calls: AtomicU32,
}

impl Extractor for Flaky {
    fn id(&self) -> OperatorId {
        OperatorId::new(self.name, 1)
    }
    fn config_hash(&self) -> Digest {
        config_hash(&self.id(), "{}")
    }
    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.failures {
            return Err(OperatorError::Failed(format!(
                "rate limited (call {})",
                n + 1
            )));
        }
        HeuristicExtractor.extract(input)
    }
}

fn with_extractor(data: &std::path::Path, flaky: Arc<Flaky>) -> strataflow::Memory {
    let mut memory = strataflow::Memory::open(data).unwrap();
    memory.register_extractor(flaky.clone());
    let profile = Profile {
        name: flaky.name.to_owned(),
        extractor: flaky.id().to_string(),
        ..Profile::default_profile()
    };
    memory.save_profile(&profile).unwrap();
    memory
}

fn extraction_derivations(memory: &strataflow::Memory, operator: &str) -> Vec<(Outcome, u32)> {
    let store = memory.store();
    let mut out = Vec::new();
    for entry in store.ids_of_kind(RecordKind::Derivation) {
        let (_, id) = entry.unwrap();
        let Record::Derivation(d) = store.get(&id).unwrap().unwrap().record else {
            panic!()
        };
        if d.operator == operator {
            out.push((d.outcome, d.attempt));
        }
    }
    out
}

fn import_one_block(data: &std::path::Path) {
    // Six-turn blocks: the first 13 user turns of a small file give 2 blocks.
    ok(data, &["init", "--block-turns", "6"]);
    let file = data.parent().unwrap().join("in.jsonl");
    let mut lines = Vec::new();
    for i in 0..13 {
        lines.push(common::line(
            "t",
            &format!("u{i}"),
            "user",
            &format!("I went to the Porto market yesterday and bought {i} apples."),
            i * 2,
        ));
        lines.push(common::line(
            "t",
            &format!("a{i}"),
            "assistant",
            "Nice, noted.",
            i * 2 + 1,
        ));
    }
    common::write_lines(&file, &lines);
    ok(
        data,
        &["ingest", file.to_str().unwrap(), "--quiet", "--no-derive"],
    );
}

#[test]
fn two_failures_then_success_ends_ready_after_three_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    import_one_block(&data);
    let flaky = Arc::new(Flaky {
        name: "flaky-extractor",
        failures: 4,
        calls: AtomicU32::new(0),
    });
    let memory = with_extractor(&data, flaky.clone());
    let mut options = memory.derive_options();
    options.retry = RetryPolicy {
        max_attempts: 3,
        first_backoff: Duration::from_millis(20),
    };
    let stats = memory
        .derive(Some("flaky-extractor"), &options, &mut |_| {})
        .unwrap();
    // Two blocks, the extractor fails 4 calls in all: block 1 fails twice,
    // block 2 fails twice, then both succeed on their third attempt.
    assert_eq!(stats.ready, 2, "{stats:?}");
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 6);
    let mut d = extraction_derivations(&memory, "flaky-extractor@1");
    d.sort_by_key(|(o, a)| (format!("{o:?}"), *a));
    let failed = d
        .iter()
        .filter(|(o, _)| matches!(o, Outcome::Failed { .. }))
        .count();
    let ok_runs: Vec<u32> = d
        .iter()
        .filter(|(o, _)| *o == Outcome::Ok)
        .map(|(_, a)| *a)
        .collect();
    assert_eq!(failed, 4);
    assert_eq!(ok_runs, vec![3, 3], "each block succeeded on attempt 3");
    let status = memory.status(Some("flaky-extractor")).unwrap();
    assert_eq!(status.ready_blocks, 2);
    assert!(
        status
            .operators
            .iter()
            .all(|o| o.failed == 0 && o.retryable == 0)
    );
}

#[test]
fn an_extractor_that_always_fails_stops_at_three_and_status_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    import_one_block(&data);
    let broken = Arc::new(Flaky {
        name: "broken-extractor",
        failures: u32::MAX,
        calls: AtomicU32::new(0),
    });
    let memory = with_extractor(&data, broken.clone());
    let mut options = memory.derive_options();
    options.retry = RetryPolicy {
        max_attempts: 3,
        first_backoff: Duration::from_millis(10),
    };
    let stats = memory
        .derive(Some("broken-extractor"), &options, &mut |_| {})
        .unwrap();
    assert_eq!(stats.ready, 0);
    assert_eq!(
        broken.calls.load(Ordering::SeqCst),
        6,
        "3 attempts for each of 2 blocks"
    );
    // Running again makes no further attempt.
    memory
        .derive(Some("broken-extractor"), &options, &mut |_| {})
        .unwrap();
    assert_eq!(broken.calls.load(Ordering::SeqCst), 6);
    let d = extraction_derivations(&memory, "broken-extractor@1");
    assert_eq!(d.len(), 6);
    assert!(d.iter().all(|(o, _)| matches!(o, Outcome::Failed { .. })));
    let status = memory.status(Some("broken-extractor")).unwrap();
    let extractor = &status.operators[1];
    assert_eq!(extractor.failed, 2);
    assert_eq!(extractor.failures[0].attempts, 3);
    assert!(extractor.failures[0].terminal);
    assert!(extractor.failures[0].error.starts_with("rate limited"));
    // Messages and blocks are all still there, summaries too.
    assert_eq!(status.blocks, 2);
    assert_eq!(status.operators[0].done, 2);
}

#[test]
fn a_failing_default_profile_shows_in_the_cli_status() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = data_file("locomo/conv-30.json");
    ok(
        &data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    let out = ok(&data, &["status"]);
    assert!(out.contains("15 of 15 blocks ready"), "{out}");
    assert!(
        out.contains(strataflow::operators::profile::DEFAULT_EXTRACTOR),
        "{out}"
    );
}
