//! The profile `default` of a data directory. A new directory records it
//! when it is created (the first open of an empty log): the newest embedded
//! operators. A directory written by an earlier build (records in the log,
//! no stored `default`) keeps the legacy operators (the `@1`s) it was
//! derived with, so a new build never re-derives it under other operators.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{ok, repo_file};
use strataflow::log::Store;
use strataflow::log::record::Record;
use strataflow::operators::profile::{
    DEFAULT_EXTRACTOR, DEFAULT_PROJECTOR, DEFAULT_SUMMARIZER, LEGACY_EXTRACTOR, LEGACY_PROJECTOR,
    LEGACY_SUMMARIZER, Profile,
};

/// Configuration key of the stored profile `default`.
const STORED_DEFAULT: &str = "profile/default";

fn sample() -> String {
    repo_file("examples/data/sample.jsonl")
        .to_string_lossy()
        .into_owned()
}

/// The operators of every derivation record in the log.
fn derivation_operators(data: &Path) -> BTreeSet<String> {
    let store = Store::open(data).unwrap();
    store
        .scan(1)
        .filter_map(|r| match r.unwrap().record {
            Record::Derivation(d) => Some(d.operator),
            _ => None,
        })
        .collect()
}

fn stored_default(data: &Path) -> Option<Profile> {
    let store = Store::open(data).unwrap();
    store
        .config(STORED_DEFAULT)
        .unwrap()
        .map(|text| serde_json::from_str(&text).unwrap())
}

fn shown_default(data: &Path) -> Profile {
    serde_json::from_str(&ok(data, &["profile", "show", "default"])).unwrap()
}

fn listed(data: &Path) -> Vec<Profile> {
    serde_json::from_str(&ok(data, &["profile", "list", "--json"])).unwrap()
}

fn event_ids(data: &Path) -> BTreeSet<String> {
    let v: serde_json::Value = serde_json::from_str(&ok(data, &["events", "--json"])).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_new_directory_records_the_newest_operators_and_derives_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ok(&data, &["init"]);
    let newest = Profile::default_profile();
    assert_eq!(
        (
            newest.summarizer.as_str(),
            newest.extractor.as_str(),
            newest.projector.as_str()
        ),
        (DEFAULT_SUMMARIZER, DEFAULT_EXTRACTOR, DEFAULT_PROJECTOR)
    );
    assert_ne!(newest, Profile::legacy_default());
    assert_eq!(
        stored_default(&data),
        Some(newest.clone()),
        "`init` of a new directory stores its default profile"
    );
    ok(&data, &["ingest", &sample(), "--quiet"]);
    assert_eq!(shown_default(&data), newest);
    let profiles = listed(&data);
    assert_eq!(profiles, vec![newest.clone()], "`profile list` shows it");
    assert_eq!(
        derivation_operators(&data),
        set(&[DEFAULT_SUMMARIZER, DEFAULT_EXTRACTOR, DEFAULT_PROJECTOR]),
        "every block derived with the newest operators"
    );
    // The same without `init`: the first command that opens it records it.
    let other = dir.path().join("other");
    ok(&other, &["ingest", &sample(), "--quiet"]);
    assert_eq!(stored_default(&other), Some(newest));
    assert_eq!(event_ids(&other), event_ids(&data));
}

#[test]
fn a_directory_of_an_earlier_build_keeps_the_legacy_operators() {
    let dir = tempfile::tempdir().unwrap();
    // The layout an earlier build wrote: messages and blocks, no stored
    // profile `default`.
    let old = dir.path().join("old");
    ok(&old, &["ingest", &sample(), "--no-derive", "--quiet"]);
    Store::open(&old)
        .unwrap()
        .remove_config(STORED_DEFAULT)
        .unwrap();
    ok(&old, &["resume"]);
    let legacy = Profile::legacy_default();
    assert_eq!(shown_default(&old), legacy);
    assert_eq!(listed(&old), vec![legacy.clone()]);
    assert_eq!(
        derivation_operators(&old),
        set(&[LEGACY_SUMMARIZER, LEGACY_EXTRACTOR, LEGACY_PROJECTOR]),
        "derived with the legacy operators"
    );
    assert_eq!(stored_default(&old), None, "opening it writes no profile");

    // The same events as a new directory whose `default` is pinned to the
    // legacy operators before its first record…
    let pinned = dir.path().join("pinned");
    ok(&pinned, &["init"]);
    ok(
        &pinned,
        &[
            "profile",
            "create",
            "default",
            "--summarizer",
            LEGACY_SUMMARIZER,
            "--extractor",
            LEGACY_EXTRACTOR,
            "--projector",
            LEGACY_PROJECTOR,
        ],
    );
    ok(&pinned, &["ingest", &sample(), "--quiet"]);
    assert_eq!(stored_default(&pinned), Some(legacy));
    assert_eq!(event_ids(&pinned), event_ids(&old));
    // …and not those of the newest operators.
    let new = dir.path().join("new");
    ok(&new, &["ingest", &sample(), "--quiet"]);
    assert_ne!(event_ids(&new), event_ids(&old));
}

#[test]
fn the_checked_in_fixture_keeps_the_legacy_profile_and_needs_no_derivation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    common::copy_dir(&repo_file("tests/fixtures/data-v1"), &data);
    assert_eq!(stored_default(&data), None, "written before profiles were");
    assert_eq!(shown_default(&data), Profile::legacy_default());
    let status: serde_json::Value =
        serde_json::from_str(&ok(&data, &["status", "--json"])).unwrap();
    let operators = status["operators"].as_array().expect("operators");
    let ids: Vec<&str> = operators
        .iter()
        .map(|o| o["operator"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [LEGACY_SUMMARIZER, LEGACY_EXTRACTOR, LEGACY_PROJECTOR]);
    for o in operators {
        assert_eq!(o["pending"], 0, "nothing left to derive: {o}");
        assert!(o["done"].as_u64().unwrap() > 0, "{o}");
    }
    assert_eq!(stored_default(&data), None);
}
