//! A model-backed profile can be planned, listed and inspected without its
//! API key; the first model call then stops the run with an error naming
//! the missing variable, and nothing of that run is stored.
#![allow(clippy::unwrap_used)]

use crate::support;

use strataflow::operators::profile::{ModelEndpoint, Profile};
use strataflow::{Memory, MemoryError};
use support::llm_profile::{ingest, write_archive};

/// A variable no test sets.
const UNSET: &str = "STRATAFLOW_TEST_KEY_THAT_IS_NEVER_SET";

#[test]
fn reading_needs_no_key_and_the_first_call_names_the_missing_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 2, 30);
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    ingest(&memory, &file);
    memory
        .save_profile(&Profile {
            name: "keyed".into(),
            extractor: "llm-extractor@1".into(),
            model: Some(ModelEndpoint {
                model: "some-model".into(),
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key_env: Some(UNSET.into()),
                concurrency: 1,
                timeout_secs: 1,
            }),
            ..Profile::default_profile()
        })
        .unwrap();

    let plan = memory.plan(Some("keyed")).unwrap();
    let extractor = &plan.operators[1];
    assert_eq!(extractor.operator, "llm-extractor@1");
    assert_eq!(extractor.model_calls, plan.blocks);
    assert!(extractor.input_tokens > 1000 * plan.blocks, "{plan:?}");
    assert_eq!(plan.operators[0].model_calls, 0, "heuristic summarizer");
    let status = memory.status(Some("keyed")).unwrap();
    assert_eq!(status.ready_blocks, 0);
    assert!(
        memory
            .default_tenant()
            .events(&strataflow::EventsQuery {
                profile: Some("keyed".into()),
                ..Default::default()
            })
            .unwrap()
            .is_empty()
    );

    let before = memory.stats().unwrap().total_records;
    let err = memory
        .derive(Some("keyed"), &memory.derive_options(), &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, MemoryError::Derive(_)), "{err:?}");
    assert!(err.to_string().contains(UNSET), "{err}");
    assert_eq!(memory.stats().unwrap().total_records, before);
}
