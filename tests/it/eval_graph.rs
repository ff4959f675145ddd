//! `eval locomo --graph`: coverage of LoCoMo's `session_N_observation` by
//! the speakers' person nodes and the grounded share of their facts and
//! edges, per conversation and overall, for the default projector and each
//! other version, each built in the same run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, run};
use strataflow::operators::profile::DEFAULT_PROJECTOR;

const FIELDS: &[&str] = &[
    "observations",
    "covered",
    "coverage",
    "items",
    "grounded",
    "grounded_share",
    "oversize",
    "speakers_without_node",
    "nodes",
    "facts",
    "edges",
];

fn check_row(row: &serde_json::Value) {
    for field in FIELDS {
        assert!(row.get(field).is_some(), "no `{field}` in {row}");
    }
    for share in ["coverage", "grounded_share"] {
        let x = row[share].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&x), "{share} {x} in {row}");
    }
    assert!(row["covered"].as_u64() <= row["observations"].as_u64());
    assert!(row["grounded"].as_u64() <= row["items"].as_u64());
}

#[test]
fn conv_26_reports_both_projector_versions_per_conversation_and_overall() {
    let dir = tempfile::tempdir().unwrap();
    let conv26 = data_file("locomo/conv-26.json");
    let out = ok(
        dir.path(),
        &[
            "eval",
            "locomo",
            conv26.to_str().unwrap(),
            "--graph",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The default profile's projector first, then the other versions of
    // `DEFAULT_PROJECTORS` (@3 and @4).
    let mut versions = vec![DEFAULT_PROJECTOR];
    for v in ["heuristic-projector@3", "heuristic-projector@4"] {
        if v != DEFAULT_PROJECTOR {
            versions.push(v);
        }
    }
    assert_eq!(report["projectors"], serde_json::json!(versions));
    let conversations = report["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 1);
    assert_eq!(conversations[0]["conversation"], "conv-26");
    for rows in [&conversations[0]["versions"], &report["overall"]] {
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), versions.len());
        for (row, version) in rows.iter().zip(&versions) {
            assert_eq!(row["projector"], *version);
            check_row(row);
            // conv-26's annotators recorded 184 observations of Caroline and Melanie.
            assert_eq!(row["observations"], 184);
            assert!(row["nodes"].as_u64().unwrap() > 0, "{row}");
        }
    }
    // The text table has a row per conversation and version, and overall.
    let text = ok(
        dir.path(),
        &["eval", "locomo", conv26.to_str().unwrap(), "--graph"],
    );
    for version in versions {
        assert!(
            text.contains(&format!("conv-26        {version}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("overall        {version}")),
            "{text}"
        );
    }
}

/// A LoCoMo conversation where only `heuristic-projector@2` (which keeps
/// "My mentor Dr. Patel" in one sentence) finds the `mentor` edge.
fn mentor_file(dir: &std::path::Path, observation: serde_json::Value) -> std::path::PathBuf {
    let mut messages = vec![
        serde_json::json!({"speaker": "Ann", "dia_id": "D1:1",
            "text": "My mentor Dr. Patel joined the team last week. She is great."}),
        serde_json::json!({"speaker": "Bob", "dia_id": "D1:2", "text": "That is good news."}),
    ];
    // Enough turns to seal a block of the default size.
    for i in 3..30 {
        let speaker = if i % 2 == 1 { "Ann" } else { "Bob" };
        messages.push(
            serde_json::json!({"speaker": speaker, "dia_id": format!("D1:{i}"), "text": "Okay."}),
        );
    }
    let conv = serde_json::json!({
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": messages,
        "session_1_observation": observation,
        "qa": [],
    });
    let path = dir.join("mentor.json");
    std::fs::write(&path, conv.to_string()).unwrap();
    path
}

#[test]
fn each_version_is_scored_on_its_own_graph() {
    let dir = tempfile::tempdir().unwrap();
    let file = mentor_file(
        dir.path(),
        serde_json::json!({
            "Ann": [["Ann's mentor, Dr. Patel, joined her team.", "D1:1"]],
            "Bob": [["Bob thinks it is good news.", "D1:2"]],
        }),
    );
    let out = ok(
        dir.path(),
        &[
            "eval",
            "locomo",
            file.to_str().unwrap(),
            "--graph",
            "--projector",
            "heuristic-projector@1",
            "--projector",
            "heuristic-projector@2",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = &report["conversations"][0]["versions"];
    assert_eq!(rows[0]["projector"], DEFAULT_PROJECTOR, "the default first");
    assert_eq!(rows[1]["projector"], "heuristic-projector@1");
    assert_eq!(rows[1]["covered"], 0, "{report}");
    assert_eq!(rows[2]["projector"], "heuristic-projector@2");
    // `ann -[mentor]-> Patel` holds mentor and patel of 5 content words.
    assert_eq!(rows[2]["covered"], 1, "{report}");
    assert_eq!(rows[2]["observations"], 2);
    assert_eq!(rows[2]["items"], 1);
    assert_eq!(rows[2]["grounded"], 1);
    assert_eq!(report["overall"], report["conversations"][0]["versions"]);

    // Naming only @2 still puts the default projector first.
    let out = ok(
        dir.path(),
        &[
            "eval",
            "locomo",
            file.to_str().unwrap(),
            "--graph",
            "--projector",
            "heuristic-projector@2",
            "--json",
        ],
    );
    let again: serde_json::Value = serde_json::from_str(&out).unwrap();
    let again = &again["conversations"][0]["versions"];
    assert_eq!(again.as_array().unwrap().len(), 2);
    assert_eq!(again[0], rows[0]);
    assert_eq!(again[1], rows[2]);
}

#[test]
fn bad_observations_and_projectors_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = mentor_file(dir.path(), serde_json::json!({"Ann": [[7, "D1:1"]]}));
    let out = run(
        dir.path(),
        &["eval", "locomo", file.to_str().unwrap(), "--graph"],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "mentor.json: conversation `mentor`, session_1_observation.Ann[0]: not [text, evidence]"
        ),
        "{err}"
    );

    let out = run(
        dir.path(),
        &[
            "eval",
            "locomo",
            file.to_str().unwrap(),
            "--graph",
            "--projector",
            "nope@1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown projector `nope@1`"));

    let out = run(
        dir.path(),
        &[
            "eval",
            "locomo",
            file.to_str().unwrap(),
            "--projector",
            "heuristic-projector@1",
            "--projector",
            "heuristic-projector@2",
        ],
    );
    // Without --graph, one projector derives; two are a usage error.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--projector"));
}
