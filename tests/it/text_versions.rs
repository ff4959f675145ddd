//! Operator versions on the shared sentence splitter (`strataflow-text`):
//! a profile with `heuristic-summarizer@2`, `heuristic-extractor@3` and
//! `heuristic-projector@2` keeps "my mentor Dr. Patel" in one sentence and
//! so finds the `mentor` edge to Patel, which the legacy default profile
//! (frozen `heuristic-projector@1`, which ends a sentence at "Dr.") does
//! not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::io::Write;

use common::ok;

fn fixture(dir: &std::path::Path) -> std::path::PathBuf {
    let lines = [
        (
            "user",
            "Ann",
            "My mentor Dr. Patel joined the team last week. She is great.",
        ),
        ("assistant", "Bob", "That is good news."),
        // Opens the next block, so the first one is sealed.
        ("user", "Ann", "Thanks."),
    ];
    let path = dir.join("chat.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for (i, (role, speaker, content)) in lines.iter().enumerate() {
        let line = serde_json::json!({
            "thread": "t1",
            "id": format!("m{}", i + 1),
            "role": role,
            "speaker": speaker,
            "content": content,
            "ts": format!("2024-05-01T10:{i:02}:00Z"),
        });
        writeln!(f, "{line}").unwrap();
    }
    path
}

#[test]
fn shared_splitter_profile_keeps_dr_patel_whole_and_default_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = fixture(dir.path());
    ok(&data, &["init", "--block-turns", "1"]);
    // `default` on the frozen version 1s, the versions compared with.
    common::pin_legacy_default(&data);
    ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    ok(
        &data,
        &[
            "profile",
            "create",
            "text2",
            "--summarizer",
            "heuristic-summarizer@2",
            "--extractor",
            "heuristic-extractor@3",
            "--projector",
            "heuristic-projector@2",
        ],
    );
    ok(&data, &["resume", "--profile", "text2"]);

    let diff: serde_json::Value =
        serde_json::from_str(&ok(&data, &["diff", "default", "text2", "--json"])).unwrap();
    let added = diff["graph"]["added"].as_array().unwrap();
    let mentor = added
        .iter()
        .find(|i| i["target"] == "person:patel")
        .unwrap_or_else(|| panic!("no edge to Patel in {diff}"));
    assert_eq!(mentor["node"], "person:ann");
    assert_eq!(mentor["key"], "mentor");
    assert_eq!(mentor["source_messages"], serde_json::json!(["m1"]));
    assert!(
        diff["graph"]["removed"].as_array().unwrap().is_empty(),
        "{diff}"
    );
}
