//! `diff --queries FILE.jsonl`: each question is searched under both
//! profiles; a question with evidence is a hit when an evidence message is
//! among the returned items' source messages (graph nodes excluded),
//! category 5 is skipped, and `--budget` is the word budget of each search.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok};

#[test]
fn jsonl_questions_are_scored_under_both_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let conv = data_file("locomo/conv-26.json");
    ok(
        &data,
        &["import", "locomo", conv.to_str().unwrap(), "--quiet"],
    );
    ok(
        &data,
        &[
            "profile",
            "create",
            "v2",
            "--extractor",
            "heuristic-extractor@2",
        ],
    );
    ok(&data, &["resume", "--profile", "v2"]);

    let questions = dir.path().join("q.jsonl");
    std::fs::write(
        &questions,
        [
            r#"{"question": "When did Caroline go to the LGBTQ support group?", "evidence": ["D1:3"], "thread": "conv-26", "category": 2}"#,
            "",
            r#"{"question": "What does Melanie paint?"}"#,
            r#"{"question": "What is Caroline's favourite planet?", "evidence": ["D1:1"], "category": 5}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let q = questions.to_str().unwrap();
    let d: serde_json::Value = serde_json::from_str(&ok(
        &data,
        &["diff", "default", "v2", "--queries", q, "--json"],
    ))
    .unwrap();
    assert_eq!(d["questions"], 2);
    assert_eq!(d["skipped"], 1, "category 5 is skipped");
    assert_eq!(d["with_evidence"], 1);
    assert_eq!(d["budget"], 300);
    assert_eq!(d["a"]["profile"], "default");
    assert_eq!(d["b"]["profile"], "v2");

    // The hit is what `search all` returns under each profile.
    for (side, profile) in [("a", "default"), ("b", "v2")] {
        let search: serde_json::Value = serde_json::from_str(&ok(
            &data,
            &[
                "search",
                "all",
                "When did Caroline go to the LGBTQ support group?",
                "--thread",
                "conv-26",
                "--budget",
                "300",
                "--profile",
                profile,
                "--json",
            ],
        ))
        .unwrap();
        let hits = search["hits"].as_array().unwrap();
        let hit = hits.iter().filter(|h| h["kind"] != "node").any(|h| {
            h["source_messages"]
                .as_array()
                .unwrap()
                .contains(&"D1:3".into())
        });
        assert!(hit, "D1:3 states the answer");
        assert_eq!(d[side]["hits"], u64::from(hit));
        assert_eq!(d[side]["hit_rate"], 1.0);
    }
    assert!(d["gained"].as_array().unwrap().is_empty());
    assert!(d["lost"].as_array().unwrap().is_empty());
    // Listed questions are those whose top result or hit changed.
    for c in d["changed"].as_array().unwrap() {
        assert!(c["top_changed"] == true || c["hit_a"] != c["hit_b"], "{c}");
    }

    // A tiny budget returns less, and the human table names the profiles.
    let small: serde_json::Value = serde_json::from_str(&ok(
        &data,
        &[
            "diff",
            "default",
            "v2",
            "--queries",
            q,
            "--budget",
            "1",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(small["budget"], 1);
    let text = ok(&data, &["diff", "default", "v2", "--queries", q]);
    assert!(
        text.contains("2 questions (1 with evidence, 1 skipped), search all at 300 words"),
        "{text}"
    );
    assert!(text.contains("\ndefault "), "{text}");
    assert!(text.contains("\nv2 "), "{text}");
}
