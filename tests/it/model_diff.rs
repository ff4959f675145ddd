//! `diff` between the heuristic extractor and `llm-extractor@1` (scripted
//! answers) works like any other diff: events only in either profile with
//! their source messages, pairs citing the same messages, graph and
//! summaries compared, through the library and the CLI.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::common;
use crate::support;

use strataflow::Memory;
use strataflow::operators::profile::{ModelEndpoint, Profile};
use support::llm_profile::{ingest, write_archive};
use support::mirror_model;
use support::model_server::{ModelServer, Reply};

#[test]
fn heuristic_and_model_extractors_diff_like_any_profiles() {
    let server = ModelServer::start(|body| Reply::Tool(mirror_model::answer(body)));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 2, 30);
    let data = tmp.path().join("data");
    {
        let memory = Memory::open(&data).unwrap();
        ingest(&memory, &file);
        memory
            .save_profile(&Profile {
                name: "model".into(),
                extractor: "llm-extractor@1".into(),
                model: Some(ModelEndpoint {
                    model: "scripted".into(),
                    base_url: server.base_url(),
                    api_key_env: None,
                    concurrency: 2,
                    timeout_secs: 10,
                }),
                ..Profile::default_profile()
            })
            .unwrap();
        memory
            .derive(Some("model"), &memory.derive_options(), &mut |_| {})
            .unwrap();
        let diff = memory.default_tenant().diff("default", "model").unwrap();
        let model_events = memory
            .default_tenant()
            .extracted_events(&strataflow::EventsQuery {
                profile: Some("model".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(!model_events.events.is_empty());
        // Every model event is accounted for: in both, changed or only B.
        assert_eq!(
            diff.events.both + diff.events.changed.len() + diff.events.only_b.len(),
            model_events.events.len()
        );
        for side in diff
            .events
            .only_b
            .iter()
            .chain(diff.events.changed.iter().map(|c| &c.b))
        {
            assert!(!side.source_messages.is_empty());
            assert!(
                side.source_messages.iter().all(|m| m.ends_with("-u")),
                "the mirror model cites user messages by their external ids: {side:?}"
            );
        }
        // The summarizer is shared: no summary differs.
        assert!(diff.summaries.different.is_empty());
    }
    // The CLI prints the same comparison, offline (no model call needed).
    let json = common::ok(&data, &["--offline", "diff", "default", "model", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        value["only_b"].as_array().is_some_and(|v| !v.is_empty())
            || value["changed"].as_array().is_some_and(|v| !v.is_empty())
    );
    let text = common::ok(&data, &["--offline", "diff", "default", "model"]);
    let only_b = value["only_b"].as_array().map_or(0, Vec::len);
    assert!(
        text.contains("only in model") && text.contains(&format!("{only_b} only in model")),
        "{text}"
    );
}
