//! Keyed memories (seed 002's documented incident example, with
//! `word-hash@1`): two tenants acme and globex hold the same ids with other
//! content, and each recall finds only its own; limit, min_similarity,
//! exclude and metadata filters; replacing keeps created_at; purge removes
//! the oldest first up to its limit and reports the count; refusals come
//! before any embedding call and a failed call stores nothing; the same
//! through the CLI; the view's rebuild equals the incremental one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use strataflow::log::Timestamp;
use strataflow::log::record::RecordKind;
use strataflow::operators::embedder::{EmbedError, Embedder, EmbeddingLabel};
use strataflow::operators::operator::OperatorId;
use strataflow::{
    KeyedMemoryError, Memory, MemoryError, PurgeOptions, RecallOptions, RememberEntry,
    embedder_from_spec,
};

use crate::common::{self, ok, run};

/// Fixed times: the library never reads a clock.
const T0: i64 = 1_700_000_000_000;

/// The seed's incidents: (tenant, id, symptoms, action, service).
pub const INCIDENTS: [(&str, &str, &str, &str, &str); 4] = [
    (
        "acme",
        "inc-101",
        "Checkout pods crash looping, out of memory after deploy",
        "roll back the deploy",
        "checkout",
    ),
    (
        "acme",
        "inc-102",
        "Payment API timeouts, database connection pool exhausted",
        "raise the pool size",
        "payments",
    ),
    (
        "acme",
        "inc-103",
        "Search pods out of memory during the nightly reindex",
        "halve the batch",
        "search",
    ),
    (
        "globex",
        "inc-101",
        "Checkout pods crash looping, out of memory after deploy",
        "move the pods to another node pool",
        "checkout",
    ),
];

fn entry(id: &str, text: &str, action: &str, service: &str) -> RememberEntry {
    RememberEntry {
        namespace: "incidents".into(),
        id: id.into(),
        text: text.into(),
        content: json!({"action": action}),
        metadata: vec![("service".into(), service.into())],
    }
}

/// The four incidents remembered one second apart, in the order above.
fn seeded(dir: &Path) -> (Memory, std::sync::Arc<dyn Embedder>) {
    let memory = Memory::open(dir).unwrap();
    let embedder = memory.keyed_embedder(Some("word-hash@1:64")).unwrap();
    for (i, (tenant, id, text, action, service)) in INCIDENTS.iter().enumerate() {
        memory
            .remember(
                tenant,
                embedder.as_ref(),
                &entry(id, text, action, service),
                Timestamp(T0 + 1000 * i as i64),
            )
            .unwrap();
    }
    (memory, embedder)
}

fn ids(matches: &[strataflow::RecallMatch]) -> Vec<&str> {
    matches.iter().map(|m| m.entry.id.as_str()).collect()
}

#[test]
fn each_tenant_recalls_only_its_own_incidents() {
    let dir = tempfile::tempdir().unwrap();
    let (memory, e) = seeded(dir.path());
    let options = RecallOptions {
        limit: 3,
        ..RecallOptions::default()
    };
    let acme = memory
        .recall(
            "acme",
            e.as_ref(),
            "incidents",
            "pods out of memory",
            &options,
        )
        .unwrap();
    assert_eq!(acme.len(), 3, "{acme:?}");
    // Most similar first: the two out-of-memory incidents before the pool one.
    assert_eq!(acme[2].entry.id, "inc-102", "{acme:?}");
    assert!(acme[0].similarity >= acme[1].similarity);
    assert!(acme[1].similarity > acme[2].similarity);
    let inc101 = acme.iter().find(|m| m.entry.id == "inc-101").unwrap();
    assert_eq!(inc101.entry.content["action"], "roll back the deploy");

    let symptoms = "Checkout pods out of memory again after this morning's deploy";
    for (tenant, action) in [
        ("acme", "roll back the deploy"),
        ("globex", "move the pods to another node pool"),
    ] {
        let found = memory
            .recall(tenant, e.as_ref(), "incidents", symptoms, &options)
            .unwrap();
        assert_eq!(found[0].entry.id, "inc-101", "{tenant}: {found:?}");
        assert_eq!(found[0].entry.content["action"], action, "{tenant}");
        if tenant == "globex" {
            assert_eq!(ids(&found), ["inc-101"], "globex holds one incident");
        }
    }
    // Same similarity in both tenants: same text, same vector.
    let a = memory
        .recall("acme", e.as_ref(), "incidents", symptoms, &options)
        .unwrap();
    let g = memory
        .recall("globex", e.as_ref(), "incidents", symptoms, &options)
        .unwrap();
    assert_eq!(a[0].similarity, g[0].similarity);
    // No tenant means tenant "", never every tenant; another namespace
    // shares nothing.
    assert!(
        memory
            .recall("", e.as_ref(), "incidents", symptoms, &options)
            .unwrap()
            .is_empty()
    );
    assert!(
        memory
            .recall("acme", e.as_ref(), "runbooks", symptoms, &options)
            .unwrap()
            .is_empty()
    );
    // Another label (another embedder) compares nothing with these vectors.
    let other = embedder_from_spec("word-hash@1:32", None).unwrap();
    assert!(
        memory
            .recall("acme", other.as_ref(), "incidents", symptoms, &options)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn limit_min_similarity_exclude_and_metadata_filter_before_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let (memory, e) = seeded(dir.path());
    let recall = |options: RecallOptions| {
        memory
            .recall(
                "acme",
                e.as_ref(),
                "incidents",
                "pods out of memory",
                &options,
            )
            .unwrap()
    };
    let all = recall(RecallOptions::default());
    assert_eq!(all.len(), 3);
    assert_eq!(
        ids(&recall(RecallOptions {
            limit: 1,
            ..RecallOptions::default()
        })),
        [all[0].entry.id.as_str()]
    );
    // min_similarity drops the unrelated incident.
    let threshold = (all[1].similarity + all[2].similarity) / 2.0;
    let close = recall(RecallOptions {
        min_similarity: Some(threshold),
        ..RecallOptions::default()
    });
    assert_eq!(close.len(), 2, "{close:?}");
    assert!(!ids(&close).contains(&"inc-102"));
    // exclude never returns the id; metadata keeps only matching entries.
    let excluded = recall(RecallOptions {
        exclude: vec!["inc-101".into()],
        ..RecallOptions::default()
    });
    assert!(!ids(&excluded).contains(&"inc-101"));
    assert_eq!(excluded.len(), 2);
    let search = recall(RecallOptions {
        metadata: vec![("service".into(), "search".into())],
        ..RecallOptions::default()
    });
    assert_eq!(ids(&search), ["inc-103"]);
    let none = recall(RecallOptions {
        metadata: vec![
            ("service".into(), "search".into()),
            ("team".into(), "core".into()),
        ],
        ..RecallOptions::default()
    });
    assert!(none.is_empty(), "every pair must match");
    // The limit is 1..=1000.
    for limit in [0, 1001] {
        let err = memory
            .recall(
                "acme",
                e.as_ref(),
                "incidents",
                "x",
                &RecallOptions {
                    limit,
                    ..RecallOptions::default()
                },
            )
            .unwrap_err();
        assert!(
            matches!(err, MemoryError::KeyedMemory(KeyedMemoryError::Limit { value }) if value == limit),
            "{err}"
        );
    }
}

#[test]
fn equal_similarities_are_ordered_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path()).unwrap();
    let e = memory.keyed_embedder(Some("word-hash@1")).unwrap();
    for id in ["b", "c", "a"] {
        memory
            .remember(
                "acme",
                e.as_ref(),
                &entry(id, "disk full", "clean up", "x"),
                Timestamp(T0),
            )
            .unwrap();
    }
    let found = memory
        .recall(
            "acme",
            e.as_ref(),
            "incidents",
            "disk full",
            &RecallOptions::default(),
        )
        .unwrap();
    assert_eq!(ids(&found), ["a", "b", "c"]);
    assert!((found[0].similarity - 1.0).abs() < 1e-6);
}

#[test]
fn replacing_a_key_keeps_created_at_and_forgetting_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (memory, e) = seeded(dir.path());
    let later = Timestamp(T0 + 60_000);
    let replaced = memory
        .remember(
            "acme",
            e.as_ref(),
            &entry("inc-101", "Checkout pods OOM", "add memory", "checkout"),
            later,
        )
        .unwrap();
    assert!(replaced.replaced);
    assert_eq!(replaced.entry.created_at, Timestamp(T0));
    assert_eq!(replaced.entry.updated_at, later);
    assert_eq!(replaced.entry.content["action"], "add memory");
    // globex's inc-101 is another key.
    let globex = memory
        .memory_entry("globex", "incidents", "inc-101")
        .unwrap()
        .unwrap();
    assert_eq!(globex.created_at, Timestamp(T0 + 3000));
    assert_eq!(
        globex.content["action"],
        "move the pods to another node pool"
    );

    assert!(
        memory
            .forget_memory("acme", "incidents", "inc-101")
            .unwrap()
            .is_some()
    );
    assert!(
        memory
            .memory_entry("acme", "incidents", "inc-101")
            .unwrap()
            .is_none()
    );
    assert!(
        memory
            .forget_memory("acme", "incidents", "inc-101")
            .unwrap()
            .is_none(),
        "nothing left to forget"
    );
    assert!(
        memory
            .memory_entry("globex", "incidents", "inc-101")
            .unwrap()
            .is_some()
    );
    // Remembering the same entry again at the same time is a new record
    // (it follows the forget), and a new created_at.
    let again = memory
        .remember(
            "acme",
            e.as_ref(),
            &entry("inc-101", "Checkout pods OOM", "add memory", "checkout"),
            later,
        )
        .unwrap();
    assert!(!again.replaced);
    assert_ne!(again.entry.record, replaced.entry.record);
    assert_eq!(again.entry.created_at, later);
}

#[test]
fn purge_removes_the_oldest_first_up_to_its_limit_and_reports_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let (memory, e) = seeded(dir.path());
    // inc-101 of acme written again last: the newest of acme.
    memory
        .remember(
            "acme",
            e.as_ref(),
            &entry("inc-101", "Checkout OOM", "roll back", "checkout"),
            Timestamp(T0 + 10_000),
        )
        .unwrap();
    let cutoff = Timestamp(T0 + 20_000);
    let first = memory
        .purge(
            "acme",
            cutoff,
            &PurgeOptions {
                namespace: Some("incidents".into()),
                limit: 1,
            },
        )
        .unwrap();
    assert_eq!(first.purged, 1);
    // The oldest updated_at of acme was inc-102 (T0 + 1 s).
    let left: Vec<String> = memory
        .keyed_memories("acme")
        .unwrap()
        .namespace("incidents")
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(left, ["inc-101", "inc-103"]);
    // Nothing older than the cutoff in another namespace.
    let other = memory
        .purge(
            "acme",
            cutoff,
            &PurgeOptions {
                namespace: Some("runbooks".into()),
                limit: 10,
            },
        )
        .unwrap();
    assert_eq!((other.purged, other.record), (0, None));
    // A cutoff before inc-101's replacement keeps it.
    let second = memory
        .purge("acme", Timestamp(T0 + 5_000), &PurgeOptions::default())
        .unwrap();
    assert_eq!(second.purged, 1, "only inc-103 is older");
    let left: Vec<String> = memory
        .keyed_memories("acme")
        .unwrap()
        .namespace("incidents")
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(left, ["inc-101"]);
    // globex is untouched.
    assert!(
        memory
            .memory_entry("globex", "incidents", "inc-101")
            .unwrap()
            .is_some()
    );
    assert_eq!(memory.store().count(RecordKind::MemoryPurge).unwrap(), 2);
}

/// An embedder that counts its calls and fails when told to.
struct Counting {
    label: EmbeddingLabel,
    calls: AtomicUsize,
    fail: bool,
}

impl Embedder for Counting {
    fn id(&self) -> OperatorId {
        OperatorId::new("counting", 1)
    }
    fn config_hash(&self) -> strataflow::log::Digest {
        strataflow::log::Digest::default()
    }
    fn label(&self) -> &EmbeddingLabel {
        &self.label
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err(EmbedError::Failed("the model is down".into()));
        }
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    }
}

#[test]
fn refusals_come_before_any_embedding_call_and_a_failed_call_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path()).unwrap();
    let counting = Counting {
        label: EmbeddingLabel::new("test/counting", 2),
        calls: AtomicUsize::new(0),
        fail: false,
    };
    let long = "k".repeat(257);
    for (id, namespace, field) in [
        ("", "incidents", "id"),
        (long.as_str(), "incidents", "id"),
        ("inc-1", "", "namespace"),
        ("inc-1", long.as_str(), "namespace"),
    ] {
        let mut e = entry(id, "text", "a", "s");
        e.namespace = namespace.into();
        let err = memory
            .remember("acme", &counting, &e, Timestamp(T0))
            .unwrap_err();
        match err {
            MemoryError::KeyedMemory(
                KeyedMemoryError::Empty { field: f }
                | KeyedMemoryError::KeyTooLong { field: f, .. },
            ) => assert_eq!(f, field),
            other => panic!("{other}"),
        }
    }
    let mut dup = entry("inc-1", "text", "a", "s");
    dup.metadata.push(("service".into(), "t".into()));
    assert!(matches!(
        memory.remember("acme", &counting, &dup, Timestamp(T0)),
        Err(MemoryError::KeyedMemory(
            KeyedMemoryError::DuplicateMetadata { .. }
        ))
    ));
    assert_eq!(
        counting.calls.load(Ordering::SeqCst),
        0,
        "no embedding call"
    );
    // 256 bytes is allowed.
    let max = "k".repeat(256);
    memory
        .remember(
            "acme",
            &counting,
            &entry(&max, "t", "a", "s"),
            Timestamp(T0),
        )
        .unwrap();
    assert_eq!(counting.calls.load(Ordering::SeqCst), 1);

    let before = memory.last_seq().unwrap();
    let failing = Counting {
        fail: true,
        ..counting
    };
    let err = memory
        .remember(
            "acme",
            &failing,
            &entry("inc-2", "text", "a", "s"),
            Timestamp(T0),
        )
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::KeyedMemory(KeyedMemoryError::Embed { id, .. }) if id == "inc-2"),
        "{err}"
    );
    assert_eq!(memory.last_seq().unwrap(), before, "nothing stored");
}

/// One seed incident remembered with the CLI, `extra` options added.
pub(super) fn cli_remember(
    data: &Path,
    (tenant, id, text, action, service): (&str, &str, &str, &str, &str),
    extra: &[&str],
) {
    let content = json!({"action": action}).to_string();
    let metadata = format!("service={service}");
    let mut args = vec![
        "remember",
        id,
        text,
        "--namespace",
        "incidents",
        "--tenant",
        tenant,
        "--content",
        &content,
        "--metadata",
        &metadata,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = ok(data, &args);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["id"], id);
}

fn cli_recall(data: &Path, tenant: &str, text: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec![
        "recall",
        text,
        "--namespace",
        "incidents",
        "--tenant",
        tenant,
        "--json",
    ];
    args.extend_from_slice(extra);
    serde_json::from_str::<Vec<serde_json::Value>>(&ok(data, &args)).unwrap()
}

fn cli_ids(found: &[serde_json::Value]) -> Vec<&str> {
    found.iter().map(|m| m["id"].as_str().unwrap()).collect()
}

#[test]
fn the_seed_example_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    // No embedder yet: a usage error naming the option.
    let none = run(data, &["remember", "x", "t", "--namespace", "n"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("--embedder"));
    ok(
        data,
        &[
            "remember",
            "first",
            "warm up",
            "--namespace",
            "scratch",
            "--embedder",
            "word-hash@1:64",
        ],
    );
    for incident in INCIDENTS {
        cli_remember(data, incident, &[]);
    }
    let acme = cli_recall(data, "acme", "pods out of memory", &["--limit", "3"]);
    assert_eq!(acme.len(), 3);
    assert_eq!(acme[2]["id"], "inc-102");
    let globex = cli_recall(data, "globex", "pods out of memory", &[]);
    assert_eq!(cli_ids(&globex), ["inc-101"]);
    assert_eq!(
        globex[0]["content"]["action"],
        "move the pods to another node pool"
    );
    assert_eq!(
        cli_ids(&cli_recall(
            data,
            "acme",
            "pods out of memory",
            &["--metadata", "service=search"]
        )),
        ["inc-103"]
    );
    let excluded = cli_recall(
        data,
        "acme",
        "pods out of memory",
        &["--exclude", "inc-101", "--exclude", "inc-103"],
    );
    assert_eq!(cli_ids(&excluded), ["inc-102"]);
    let threshold = format!(
        "{}",
        (acme[1]["similarity"].as_f64().unwrap() + acme[2]["similarity"].as_f64().unwrap()) / 2.0
    );
    let close = cli_recall(
        data,
        "acme",
        "pods out of memory",
        &["--min-similarity", &threshold],
    );
    assert_eq!(close.len(), 2);
    // Another embedder than the directory's is refused.
    let other = run(
        data,
        &[
            "recall",
            "x",
            "--namespace",
            "incidents",
            "--embedder",
            "word-hash@1:32",
        ],
    );
    assert_eq!(other.status.code(), Some(2));
    // Refusals: empty id, over-long id, bad content, limit out of range.
    let before = common::stats(data)["total_records"].clone();
    let long = "k".repeat(257);
    for args in [
        vec!["remember", "", "t", "--namespace", "incidents"],
        vec!["remember", long.as_str(), "t", "--namespace", "incidents"],
        vec![
            "remember",
            "i",
            "t",
            "--namespace",
            "incidents",
            "--content",
            "{",
        ],
        vec!["recall", "t", "--namespace", "incidents", "--limit", "0"],
        vec!["memory", "purge", "--older-than", "soon"],
    ] {
        let out = run(data, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: "), "{err}");
    }
    assert_eq!(common::stats(data)["total_records"], before);

    // Replace keeps created_at.
    let first = acme.iter().find(|m| m["id"] == "inc-101").unwrap().clone();
    cli_remember(
        data,
        ("acme", "inc-101", "Checkout OOM", "add memory", "checkout"),
        &[],
    );
    let now = cli_recall(data, "acme", "Checkout OOM", &["--limit", "1"]);
    assert_eq!(now[0]["id"], "inc-101");
    assert_eq!(now[0]["created_at"], first["created_at"]);
    assert_ne!(now[0]["updated_at"], first["updated_at"]);

    // Forget one key of one tenant.
    let forgot: serde_json::Value = serde_json::from_str(&ok(
        data,
        &[
            "memory",
            "forget",
            "inc-103",
            "--namespace",
            "incidents",
            "--tenant",
            "acme",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(forgot["forgotten"], true);
    assert!(!cli_ids(&cli_recall(data, "acme", "pods", &[])).contains(&"inc-103"));

    // Purge: oldest updated_at first, up to the limit, with the count.
    let purge = |limit: &str| -> serde_json::Value {
        serde_json::from_str(&ok(
            data,
            &[
                "memory",
                "purge",
                "--older-than",
                "2100-01-01T00:00:00Z",
                "--tenant",
                "acme",
                "--limit",
                limit,
                "--json",
            ],
        ))
        .unwrap()
    };
    assert_eq!(purge("1")["purged"], 1);
    // inc-102 was the oldest left (inc-101 was rewritten after it).
    assert_eq!(cli_ids(&cli_recall(data, "acme", "pods", &[])), ["inc-101"]);
    assert_eq!(purge("10")["purged"], 1);
    assert_eq!(purge("10")["purged"], 0);
    assert_eq!(
        cli_ids(&cli_recall(data, "globex", "pods", &[])),
        ["inc-101"]
    );

    // History and views: a rebuild of the view equals the incremental one.
    let views: Vec<serde_json::Value> =
        serde_json::from_str(&ok(data, &["views", "--verify", "--json"])).unwrap();
    let keyed: Vec<&serde_json::Value> = views
        .iter()
        .filter(|v| v["view"] == "keyed_memories")
        .collect();
    let tenants: Vec<&str> = keyed
        .iter()
        .map(|v| v["tenant"].as_str().unwrap())
        .collect();
    assert_eq!(tenants, ["", "acme", "globex"], "{views:?}");
    for v in keyed {
        assert_eq!(v["digest"], v["rebuilt"], "{v}");
    }
    ok(data, &["audit"]);

    // Export and import carry the records: the same view digests, and a
    // recall with no `--embedder` (the manifest carries the setting).
    let elsewhere = tempfile::tempdir().unwrap();
    let export = elsewhere.path().join("export");
    let copy = elsewhere.path().join("copy");
    ok(data, &["export", "parquet", export.to_str().unwrap()]);
    ok(&copy, &["import", "parquet", export.to_str().unwrap()]);
    let digests = |d: &Path| -> Vec<(String, String)> {
        common::view_digests(d)
            .into_iter()
            .filter(|v| v.0 == "keyed_memories")
            .map(|v| (v.1, v.3))
            .collect()
    };
    assert_eq!(digests(&copy), digests(data));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["embedder"], "word-hash@1:64", "{manifest}");
    let copied = cli_recall(&copy, "globex", "pods", &[]);
    assert_eq!(cli_ids(&copied), ["inc-101"]);

    let stats = common::stats(data);
    assert_eq!(stats["records"]["keyed_memory"], 7, "{stats}");
    assert_eq!(stats["records"]["embedding"], 6, "{stats}");
    assert_eq!(stats["records"]["memory_purge"], 2, "{stats}");
}
