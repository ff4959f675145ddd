//! The evidence gate end to end: search never changes a weight; only refs
//! adopted by a sufficient assessment of their batch can be used; use
//! reinforces exactly those events; a recorded batch is closed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, run};
use strataflow::operators::evidence_gate::AssessmentInput;
use strataflow::{Channel, Memory, SearchRequest};

fn assessment(verdict: &str, evidence: &[&str], next: &str) -> AssessmentInput {
    AssessmentInput {
        verdict: verdict.into(),
        evidence: evidence.iter().map(|s| (*s).to_owned()).collect(),
        fit: "states it".into(),
        missing: String::new(),
        next: next.into(),
    }
}

#[test]
fn only_adopted_refs_of_a_sufficient_assessment_reinforce() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    let memory = Memory::open(data).unwrap();
    let before = memory.default_tenant().weights().unwrap();

    let request = SearchRequest {
        query: "lost job banker".into(),
        ..SearchRequest::default()
    };
    let first = memory
        .default_tenant()
        .search(
            &request,
            &strataflow::SearchOptions {
                channel: Channel::Events,
                ..Default::default()
            },
        )
        .unwrap();
    let second = memory
        .default_tenant()
        .search(
            &request,
            &strataflow::SearchOptions {
                channel: Channel::Events,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        memory.default_tenant().weights().unwrap().digest(),
        before.digest(),
        "search never changes a weight"
    );
    assert_ne!(first.batch, second.batch, "each search is its own batch");
    let batch = first.batch.unwrap().to_hex();
    let top = first.hits[0].reference.clone();
    let other = first.hits[1].reference.clone();
    let foreign = second.hits[0].reference.replace(&top, "event:00");

    // Sufficient needs a ref of the batch and next = answer.
    let a = memory
        .default_tenant()
        .assess(&batch, &assessment("sufficient", &[&top], "search_events"))
        .unwrap();
    assert_eq!(format!("{:?}", a.verdict), "Partial");
    let a = memory
        .default_tenant()
        .assess(&batch, &assessment("sufficient", &["event:ffff"], "answer"))
        .unwrap();
    assert_eq!(format!("{:?}", a.verdict), "Partial");
    assert_eq!(a.next, "search_events");
    assert!(!a.missing.is_empty());
    // Use before a sufficient assessment adopts anything: refused.
    let err = memory
        .default_tenant()
        .use_refs(&batch, std::slice::from_ref(&top))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not_adopted"), "{err}");

    let a = memory
        .default_tenant()
        .assess(&batch, &assessment("sufficient", &[&top, &top], "answer"))
        .unwrap();
    assert_eq!(format!("{:?}", a.verdict), "Sufficient");
    assert_eq!(a.evidence, vec![top.clone()]);
    let err = memory
        .default_tenant()
        .use_refs(&batch, std::slice::from_ref(&other))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not_adopted"), "{err}");
    let err = memory
        .default_tenant()
        .use_refs(&batch, &[foreign])
        .unwrap_err()
        .to_string();
    assert!(err.contains("not_in_batch"), "{err}");

    let used = memory
        .default_tenant()
        .use_refs(&batch, std::slice::from_ref(&top))
        .unwrap();
    assert_eq!(used.events.len(), 1);
    let event = used.events[0];
    let after = memory.default_tenant().weights().unwrap();
    let (b, a) = (before.get(&event).unwrap(), after.get(&event).unwrap());
    assert_eq!(a.mention_count, b.mention_count + 1);
    assert!((a.weight - 1.0).abs() < 1e-12, "weight back to 1 at t = 0");
    let changed: Vec<_> = first
        .hits
        .iter()
        .filter_map(|h| h.reference.strip_prefix("event:"))
        .map(|id| id.parse().unwrap())
        .filter(|id| {
            before.get(id).map(|w| w.mention_count) != after.get(id).map(|w| w.mention_count)
        })
        .collect();
    assert_eq!(
        changed,
        vec![event],
        "exactly the adopted event is reinforced"
    );

    // The batch is closed.
    let err = memory
        .default_tenant()
        .assess(&batch, &assessment("sufficient", &[&top], "answer"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("already recorded"), "{err}");
    assert!(memory.default_tenant().use_refs(&batch, &[top]).is_err());
}

#[test]
fn the_cli_runs_the_same_gate() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    let found: serde_json::Value = serde_json::from_str(&ok(
        data,
        &["search", "all", "Paris", "--budget", "120", "--json"],
    ))
    .unwrap();
    let batch = found["batch"].as_str().unwrap();
    let hits = found["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    let words: u64 = hits.iter().map(|h| h["words"].as_u64().unwrap()).sum();
    assert!(words <= 120, "the budget holds: {words}");
    for h in hits {
        assert!(h["ref"].is_string() && h["kind"].is_string() && h["text"].is_string());
        assert!(h["source_messages"].is_array());
    }
    let r = hits[0]["ref"].as_str().unwrap();
    let out = ok(
        data,
        &[
            "assess",
            "--batch",
            batch,
            "--verdict",
            "sufficient",
            "--evidence",
            r,
            "--next",
            "answer",
        ],
    );
    assert!(out.contains("sufficient"), "{out}");
    let out = ok(data, &["use", "--batch", batch, r]);
    assert!(out.contains("recorded 1 ref(s)"), "{out}");
    let out = run(
        data,
        &[
            "assess",
            "--batch",
            batch,
            "--verdict",
            "partial",
            "--next",
            "search_events",
        ],
    );
    assert!(!out.status.success());
}

#[test]
fn search_queries_file_answers_each_line_as_its_own_batch() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = data_file("locomo/conv-30.json");
    ok(
        &data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    let queries = dir.path().join("q.jsonl");
    std::fs::write(
        &queries,
        "{\"query\": \"Paris\"}\n\n{\"query\": \"dance studio\", \"budget\": 40}\n{\"query\": \"\", \"participants\": [\"Gina\"], \"limit\": 2}\n",
    )
    .unwrap();
    let out = ok(
        &data,
        &["search", "events", "--queries", queries.to_str().unwrap()],
    );
    let answers: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 3);
    assert_ne!(answers[0]["batch"], answers[1]["batch"]);
    assert!(answers[1]["words"].as_u64().unwrap() <= 40);
    assert!(answers[2]["hits"].as_array().unwrap().len() <= 2);
    assert!(
        answers[2]["hits"][0]["participants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "Gina")
    );
    std::fs::write(&queries, "{\"query\": 5}\n").unwrap();
    let bad = run(
        &data,
        &["search", "events", "--queries", queries.to_str().unwrap()],
    );
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("q.jsonl:1:"));
}
