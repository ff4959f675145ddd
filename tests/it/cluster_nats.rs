//! Scale-out on NATS JetStream (issue 20): `ingest --nats` publishes raw
//! messages to the shared stream, `node` materialises the partitions it
//! owns into its own data directory. Real `nats-server` processes
//! (`support::nats`), loopback only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use strataflow::log::record::RecordKind;

use super::common::ok;
use super::support::nats;

/// Every record id of a data directory.
fn record_ids(data: &Path) -> BTreeSet<String> {
    let memory = strataflow::Memory::open_existing(data).unwrap();
    let mut ids = BTreeSet::new();
    for kind in RecordKind::ALL {
        for item in memory.store().ids_of_kind(kind) {
            ids.insert(item.unwrap().1.to_string());
        }
    }
    ids
}

/// `views --json` as (tenant, view) → digest (the sequences differ
/// between stores; the digests must not).
fn view_digests(data: &Path) -> BTreeMap<(String, String), String> {
    let json: serde_json::Value = serde_json::from_str(&ok(data, &["views", "--json"])).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                (
                    r["tenant"].as_str().unwrap().to_owned(),
                    r["view"].as_str().unwrap().to_owned(),
                ),
                r["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn generate(dir: &Path, messages: u32, tenants: u32) -> std::path::PathBuf {
    let archive = dir.join("archive.jsonl");
    ok(
        dir,
        &[
            "gen",
            "--messages",
            &messages.to_string(),
            "--threads",
            "60",
            "--tenants",
            &tenants.to_string(),
            "--seed",
            "20",
            "-o",
            archive.to_str().unwrap(),
        ],
    );
    archive
}

/// The words of a line that follow `label` (`12 new` → 12).
fn count_before(line: &str, label: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .windows(2)
        .position(|w| w[1].trim_end_matches(',') == label)
        .unwrap_or_else(|| panic!("no `{label}` in {line}"));
    words[at].parse().unwrap()
}

#[test]
fn publishing_the_same_file_twice_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let archive = generate(dir.path(), 300, 5);
    let file = archive.to_str().unwrap();
    let first = ok(dir.path(), &["ingest", "--nats", &server.url(), "-q", file]);
    assert!(first.contains("1 replicas"), "{first}");
    assert_eq!(count_before(&first, "new"), 300, "{first}");
    // Again at once: inside the de-duplication window, and the publisher
    // reads the threads back, so nothing is even sent.
    let second = ok(dir.path(), &["ingest", "--nats", &server.url(), "-q", file]);
    assert_eq!(count_before(&second, "new"), 0, "{second}");
    assert_eq!(count_before(&second, "already"), 300, "{second}");
}

#[test]
fn two_nodes_on_disjoint_partitions_equal_a_single_node_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let archive = generate(dir.path(), 2000, 30);
    let file = archive.to_str().unwrap();
    let single = dir.path().join("single");
    ok(&single, &["ingest", "-q", file]);

    ok(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &server.url(),
            "--stream-partitions",
            "4",
            "-q",
            file,
        ],
    );
    let a = dir.path().join("node-a");
    let b = dir.path().join("node-b");
    let url = server.url();
    let run_a = std::thread::spawn({
        let (a, url) = (a.clone(), url.clone());
        move || {
            ok(
                &a,
                &[
                    "node",
                    "--nats",
                    &url,
                    "--partitions",
                    "0,2",
                    "--drain",
                    "-q",
                ],
            )
        }
    });
    let out_b = ok(
        &b,
        &[
            "node",
            "--nats",
            &url,
            "--partitions",
            "1,3",
            "--drain",
            "-q",
        ],
    );
    let out_a = run_a.join().unwrap();
    assert!(
        out_a.contains("stored") && out_b.contains("stored"),
        "{out_a}{out_b}"
    );

    let (ids_a, ids_b) = (record_ids(&a), record_ids(&b));
    assert!(!ids_a.is_empty() && !ids_b.is_empty(), "a node got nothing");
    // Disjoint tenants, so disjoint records (the profile records aside).
    let union: BTreeSet<String> = ids_a.union(&ids_b).cloned().collect();
    assert_eq!(
        union,
        record_ids(&single),
        "the nodes' records differ from a single-node ingest"
    );

    let mut digests = view_digests(&a);
    let from_b = view_digests(&b);
    for (key, digest) in &from_b {
        if let Some(other) = digests.get(key) {
            assert_eq!(
                other, digest,
                "{key:?} on both nodes with different digests"
            );
        }
    }
    digests.extend(from_b);
    assert_eq!(
        digests,
        view_digests(&single),
        "per-tenant view digests differ"
    );

    // A node run again finds nothing new: acknowledged means consumed.
    let again = ok(
        &a,
        &[
            "node",
            "--nats",
            &url,
            "--partitions",
            "0,2",
            "--drain",
            "-q",
        ],
    );
    assert!(again.contains(" 0 messages delivered"), "{again}");
}
