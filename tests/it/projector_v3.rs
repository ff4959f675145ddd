//! `heuristic-projector@3` on conv-26: the person node of Caroline holds
//! many more facts than under `@1`, and no fact value ends on a function
//! word or a pronoun.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok};

/// Function words and pronouns no value may end on.
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "of", "on", "in", "at", "to", "for", "from", "with",
    "by", "about", "as", "like", "that", "this", "is", "was", "were", "be", "i", "me", "my", "we",
    "us", "our", "you", "your", "he", "him", "his", "she", "her", "it", "its", "they", "them",
    "their", "there", "here",
];

fn counts(graph: &serde_json::Value, person: &str) -> (usize, usize, usize, usize) {
    let nodes = graph["nodes"].as_array().unwrap();
    let facts: usize = nodes
        .iter()
        .map(|n| n["facts"].as_array().map_or(0, Vec::len))
        .sum();
    let of_person = nodes
        .iter()
        .find(|n| n["key"]["name"] == person)
        .map_or(0, |n| n["facts"].as_array().map_or(0, Vec::len));
    (
        nodes.len(),
        facts,
        graph["edges"].as_array().unwrap().len(),
        of_person,
    )
}

#[test]
fn conv26_on_v3_holds_many_more_facts_about_caroline_than_v1() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-26.json");
    // `default` on the version 1s, the versions compared with.
    ok(data, &["init"]);
    common::pin_legacy_default(data);
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    ok(
        data,
        &[
            "profile",
            "create",
            "v3",
            "--projector",
            "heuristic-projector@3",
        ],
    );
    ok(data, &["resume", "--profile", "v3"]);
    let v1: serde_json::Value = serde_json::from_str(&ok(data, &["graph", "--json"])).unwrap();
    let v3: serde_json::Value =
        serde_json::from_str(&ok(data, &["graph", "--profile", "v3", "--json"])).unwrap();
    let (n1, f1, e1, c1) = counts(&v1, "caroline");
    let (n3, f3, e3, c3) = counts(&v3, "caroline");
    println!("conv-26 @1: {n1} nodes, {f1} facts, {e1} edges, Caroline {c1} facts");
    println!("conv-26 @3: {n3} nodes, {f3} facts, {e3} edges, Caroline {c3} facts");
    assert!(
        c3 >= 3 * c1.max(1) && c3 >= 15,
        "Caroline: @1 {c1}, @3 {c3}"
    );

    let mut values = 0;
    for node in v3["nodes"].as_array().unwrap() {
        for fact in node["facts"].as_array().unwrap() {
            for v in fact["values"].as_array().unwrap() {
                let v = v.as_str().unwrap();
                let last = v
                    .split_whitespace()
                    .last()
                    .unwrap()
                    .to_lowercase()
                    .trim_matches(|c: char| c.is_ascii_punctuation())
                    .to_owned();
                assert!(
                    !FUNCTION_WORDS.contains(&last.as_str()),
                    "{}: {} = {v:?} ends on {last:?}",
                    node["key"]["name"],
                    fact["key"]
                );
                values += 1;
            }
        }
    }
    assert!(values >= f3);
}
