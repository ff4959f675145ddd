//! Views maintained incrementally equal a full rebuild from the log: on
//! conv-26 + conv-30 with governance and use in between, and on random
//! interleavings of ingest, governance, use and refresh, with view
//! segments sealed every few records or never (property test).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok};
use proptest::prelude::*;
use strataflow::log::record::{Actor, GovernanceAction};
use strataflow::operators::evidence_gate::AssessmentInput;
use strataflow::pipeline::ingest::OnInvalid;
use strataflow::{Channel, Memory, SearchRequest};

fn same_as_rebuild(memory: &Memory, tenant: &str) {
    for r in memory
        .tenant(tenant)
        .views(&strataflow::ViewsOptions {
            verify: true,
            ..Default::default()
        })
        .unwrap()
    {
        assert_eq!(
            Some(r.digest.clone()),
            r.rebuilt,
            "view {} of tenant `{tenant}`",
            r.view
        );
    }
}

fn decide(memory: &Memory, event: &strataflow::log::RecordId, action: GovernanceAction) {
    memory
        .default_tenant()
        .govern(&event.to_hex(), action, Actor::User, None)
        .unwrap();
}

pub(crate) fn use_top_hit(memory: &Memory, query: &str) {
    let found = memory
        .default_tenant()
        .search(
            &SearchRequest {
                query: query.into(),
                ..SearchRequest::default()
            },
            &strataflow::SearchOptions {
                channel: Channel::All,
                ..Default::default()
            },
        )
        .unwrap();
    let Some(hit) = found.hits.first() else {
        return;
    };
    let batch = found.batch.unwrap().to_hex();
    let input = AssessmentInput {
        verdict: "sufficient".into(),
        evidence: vec![hit.reference.clone()],
        fit: String::new(),
        missing: String::new(),
        next: "answer".into(),
    };
    memory.default_tenant().assess(&batch, &input).unwrap();
    memory
        .default_tenant()
        .use_refs(&batch, std::slice::from_ref(&hit.reference))
        .unwrap();
}

#[test]
fn locomo_views_refreshed_along_the_way_equal_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv26 = data_file("locomo/conv-26.json");
    let conv30 = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", conv26.to_str().unwrap(), "--quiet"],
    );
    ok(data, &["views"]);
    ok(
        data,
        &["import", "locomo", conv30.to_str().unwrap(), "--quiet"],
    );
    let memory = Memory::open(data).unwrap();
    memory
        .default_tenant()
        .views(&strataflow::ViewsOptions {
            verify: false,
            ..Default::default()
        })
        .unwrap();
    let events = memory
        .default_tenant()
        .events(&strataflow::EventsQuery::default())
        .unwrap();
    decide(&memory, &events[3].id, GovernanceAction::Forget);
    use_top_hit(&memory, "charity race");
    memory
        .default_tenant()
        .views(&strataflow::ViewsOptions {
            verify: false,
            ..Default::default()
        })
        .unwrap();
    decide(&memory, &events[3].id, GovernanceAction::Restore);
    decide(&memory, &events[5].id, GovernanceAction::Pin);
    use_top_hit(&memory, "Paris");
    same_as_rebuild(&memory, "");
    drop(memory);
    let out = ok(data, &["views", "--verify"]);
    assert_eq!(out.matches("rebuild: same").count(), 5, "{out}");
}

/// One step of a random history.
#[derive(Clone, Debug)]
enum Step {
    Ingest(usize),
    Forget(usize),
    Restore(usize),
    Use(usize),
    Expand(usize, u8),
    Refresh,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..4).prop_map(Step::Ingest),
        (0usize..50).prop_map(Step::Forget),
        (0usize..50).prop_map(Step::Restore),
        (0usize..6).prop_map(Step::Use),
        (0usize..10, 0u8..6).prop_map(|(b, l)| Step::Expand(b, l)),
        Just(Step::Refresh),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    #[test]
    fn random_interleavings_keep_views_equal_to_a_rebuild(
        steps in proptest::collection::vec(step(), 4..12),
        segment_records in prop_oneof![Just(1u64), 2u64..9, Just(65_536u64)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        Memory::open_with(&data, Some(2)).unwrap();
        let mut memory = Memory::open(&data).unwrap();
        // Segments sealed anywhere: every refresh extends and seals them.
        memory.set_view_segment_records(segment_records);
        let words = ["Paris", "pottery", "camping", "banker", "studio", "festival"];
        let mut next_turn = 0usize;
        for s in steps {
            match s {
                Step::Ingest(turns) => {
                    let mut lines = Vec::new();
                    for _ in 0..turns {
                        let t = next_turn;
                        next_turn += 1;
                        let w = words[t % words.len()];
                        lines.push(common::line("t", &format!("u{t}"), "user", &format!("I went to the {w} yesterday with my sister Marta."), u32::try_from(t * 2).unwrap()));
                        lines.push(common::line("t", &format!("a{t}"), "assistant", &format!("Nice, the {w} sounds fun."), u32::try_from(t * 2 + 1).unwrap()));
                    }
                    let file = dir.path().join(format!("chunk{next_turn}.jsonl"));
                    common::write_lines(&file, &lines);
                    let options = memory.ingest_options().unwrap();
                    memory.ingest_jsonl(&file, &options, OnInvalid::Refuse, &mut |_| {}).unwrap();
                    memory.derive(None, &memory.derive_options(), &mut |_| {}).unwrap();
                }
                Step::Forget(i) | Step::Restore(i) => {
                    let events = memory.default_tenant().events(&strataflow::EventsQuery::default()).unwrap();
                    if let Some(e) = events.get(i % events.len().max(1)) {
                        let action = if matches!(s, Step::Forget(_)) { GovernanceAction::Forget } else { GovernanceAction::Restore };
                        memory.default_tenant().govern(&e.id.to_hex(), action, Actor::User, None).unwrap();
                    }
                }
                Step::Use(i) => use_top_hit(&memory, words[i % words.len()]),
                Step::Expand(b, level) => {
                    let ctx = memory.default_tenant().context(&strataflow::ContextOptions::default()).unwrap();
                    if let Some(block) = ctx.get(b % ctx.len().max(1)) {
                        let target = strataflow::operators::decay::ExpandTarget::Level(level);
                        memory.default_tenant().expand_block(&block.block.to_hex(), target, &strataflow::ExpandOptions::default()).unwrap();
                    }
                }
                Step::Refresh => {
                    memory.default_tenant().views(&strataflow::ViewsOptions { verify: false, ..Default::default() }).unwrap();
                }
            }
        }
        same_as_rebuild(&memory, "");
    }
}

#[test]
fn a_search_index_refreshed_along_the_way_equals_one_built_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv26 = data_file("locomo/conv-26.json");
    let conv30 = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", conv26.to_str().unwrap(), "--quiet"],
    );
    let memory = Memory::open(data).unwrap();
    let mut kept = memory.default_tenant().searcher(None).unwrap();
    let before = kept.last_seq();
    drop(memory);
    ok(
        data,
        &["import", "locomo", conv30.to_str().unwrap(), "--quiet"],
    );
    let memory = Memory::open(data).unwrap();
    let events = memory
        .default_tenant()
        .events(&strataflow::EventsQuery::default())
        .unwrap();
    decide(&memory, &events[2].id, GovernanceAction::Forget);
    use_top_hit(&memory, "Paris");
    memory.refresh_searcher(&mut kept).unwrap();
    assert!(kept.last_seq() > before);
    let fresh = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(kept.last_seq(), fresh.last_seq());
    assert_eq!(kept.digest(), fresh.digest());
    for q in [
        "Paris",
        "pottery class",
        "When did Jon lose his job?",
        "adoption agency",
    ] {
        let request = SearchRequest {
            query: q.into(),
            budget: Some(200),
            ..SearchRequest::default()
        };
        assert_eq!(
            kept.search(Channel::All, &request).unwrap(),
            fresh.search(Channel::All, &request).unwrap(),
            "{q}"
        );
    }
}
