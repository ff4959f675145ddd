//! The dense view: a tenant's derived embeddings of one embedder persisted
//! as contiguous unit rows, refreshed from the `Embedding` records logged
//! after its last sequence; a refreshed view equals a rebuild, tenants never
//! see each other's rows, `--thread` keeps one thread's, and a damaged view
//! is rebuilt.

use std::path::Path;

use proptest::prelude::*;
use strataflow::log::record::{Record, RecordKind};
use strataflow::operators::profile::Profile;
use strataflow::pipeline::ingest::OnInvalid;
use strataflow::{Memory, ViewsOptions};

use crate::common::ok;

const PROFILE: &str = "dense";

/// One message of a tenant's thread as JSONL.
fn line(tenant: &str, thread: &str, id: &str, content: &str, minute: u32) -> String {
    serde_json::json!({
        "tenant": tenant, "thread": thread, "id": id, "role": "user",
        "content": content,
        "ts": format!("2024-05-01T{:02}:{:02}:00Z", (minute / 60) % 24, minute % 60),
    })
    .to_string()
}

fn ingest_lines(memory: &Memory, dir: &Path, name: &str, lines: &[String]) {
    let file = dir.join(format!("{name}.jsonl"));
    crate::common::write_lines(&file, lines);
    let options = memory.ingest_options().unwrap();
    memory
        .ingest_jsonl(&file, &options, OnInvalid::Refuse, &mut |_| {})
        .unwrap();
}

fn dense_profile(memory: &Memory) {
    memory
        .save_profile(&Profile {
            name: PROFILE.into(),
            embedder: Some("word-hash@1:64".into()),
            ..Profile::default_profile()
        })
        .unwrap();
}

fn derive(memory: &Memory) {
    memory
        .derive(Some(PROFILE), &memory.derive_options(), &mut |_| {})
        .unwrap();
}

/// The dense report of each tenant, refreshed and rebuilt.
fn dense_reports(memory: &Memory, tenants: &[&str]) -> Vec<strataflow::ViewReport> {
    let tenants: Vec<String> = tenants.iter().map(|t| (*t).to_owned()).collect();
    let options = ViewsOptions {
        profile: Some(PROFILE.into()),
        verify: true,
    };
    memory
        .views(&tenants, &options)
        .unwrap()
        .into_iter()
        .filter(|r| r.view == "dense")
        .collect()
}

/// The thread of a record an embedding embeds.
fn thread_of(memory: &Memory, id: &strataflow::log::RecordId) -> String {
    let record = memory.store().get(id).unwrap().unwrap().record;
    let block = match record {
        Record::Message(m) => return m.thread,
        Record::BlockSummary(s) => s.block,
        Record::Event(e) => e.block,
        other => panic!("a hit of a {:?}", other.kind()),
    };
    match memory.store().get(&block).unwrap().unwrap().record {
        Record::Block(b) => b.thread,
        other => panic!("a block id of a {:?}", other.kind()),
    }
}

fn tenant_of(memory: &Memory, id: &strataflow::log::RecordId) -> String {
    memory
        .store()
        .get(id)
        .unwrap()
        .unwrap()
        .record
        .tenant()
        .to_owned()
}

/// Embeddings of a tenant (all derived here: no keyed memory).
fn embeddings_of(memory: &Memory, tenant: &str) -> usize {
    memory
        .store()
        .scan(0)
        .filter(|s| {
            let s = s.as_ref().unwrap();
            s.record.kind() == RecordKind::Embedding && s.record.tenant() == tenant
        })
        .count()
}

#[test]
fn derivation_saves_the_view_and_a_query_reads_it_up_to_the_end_of_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    let lines: Vec<String> = (0..8)
        .map(|i| {
            line(
                "acme",
                "t",
                &format!("m{i}"),
                &format!("Shipment {i} of blue widgets left Porto."),
                i,
            )
        })
        .collect();
    ingest_lines(&memory, tmp.path(), "a", &lines);
    dense_profile(&memory);
    derive(&memory);
    let key = memory.dense_view_key(Some(PROFILE)).unwrap().unwrap();
    assert!(key.starts_with("dense/"), "{key}");
    assert!(key.ends_with("/strataflow/word-hash-64"), "{key}");
    // Derivation left the view saved at the end of the log.
    let (seq, bytes) = memory.store().view_chunks(&key, "acme").unwrap().unwrap();
    assert_eq!(Some(seq), memory.store().last_seq().unwrap());
    assert_eq!(bytes[0], 1, "format version");
    let rows = embeddings_of(&memory, "acme");
    assert!(rows >= 8);
    // Rows of 64 f32 each, after the header and the row table.
    assert!(bytes.len() > rows * 64 * 4, "{} bytes", bytes.len());

    let hits = memory
        .dense_search(
            Some(PROFILE),
            "acme",
            "Shipment 3 of blue widgets left Porto.",
            Some(3),
        )
        .unwrap();
    assert_eq!(hits.vectors, rows);
    assert_eq!(hits.hits[0].text, "Shipment 3 of blue widgets left Porto.");

    // New messages and embeddings: the query refreshes the view from them.
    let more: Vec<String> = (8..12)
        .map(|i| {
            line(
                "acme",
                "t",
                &format!("m{i}"),
                &format!("Invoice {i} for red gadgets."),
                i,
            )
        })
        .collect();
    ingest_lines(&memory, tmp.path(), "b", &more);
    derive(&memory);
    let hits = memory
        .dense_search(
            Some(PROFILE),
            "acme",
            "Invoice 10 for red gadgets.",
            Some(1),
        )
        .unwrap();
    assert_eq!(hits.vectors, embeddings_of(&memory, "acme"));
    assert_eq!(hits.hits[0].text, "Invoice 10 for red gadgets.");
    let reports = dense_reports(&memory, &["acme"]);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].rebuilt.as_ref(), Some(&reports[0].digest));
    assert_eq!(
        Some(reports[0].last_seq),
        memory.store().last_seq().unwrap()
    );
}

#[test]
fn a_tenant_never_sees_another_tenants_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    let mut lines = Vec::new();
    for i in 0..6u32 {
        // The same thread, ids and words in both tenants, plus words of
        // globex only.
        let text = format!("Quarterly report {i} is ready.");
        lines.push(line("acme", "t", &format!("m{i}"), &text, i));
        lines.push(line("globex", "t", &format!("m{i}"), &text, i));
        lines.push(line(
            "globex",
            "t",
            &format!("g{i}"),
            &format!("Secret merger plan {i} with Initech."),
            i,
        ));
    }
    ingest_lines(&memory, tmp.path(), "a", &lines);
    dense_profile(&memory);
    derive(&memory);
    for query in [
        "Quarterly report 2 is ready.",
        "Secret merger plan 2 with Initech.",
    ] {
        let acme = memory
            .dense_search(Some(PROFILE), "acme", query, Some(1000))
            .unwrap();
        assert_eq!(acme.vectors, embeddings_of(&memory, "acme"));
        assert!(!acme.hits.is_empty());
        for hit in &acme.hits {
            assert_eq!(tenant_of(&memory, &hit.id), "acme", "{hit:?}");
            assert!(!hit.text.contains("merger"), "{hit:?}");
        }
    }
    let globex = memory
        .dense_search(
            Some(PROFILE),
            "globex",
            "Secret merger plan 2 with Initech.",
            Some(1000),
        )
        .unwrap();
    assert_eq!(globex.vectors, embeddings_of(&memory, "globex"));
    assert!(globex.vectors > embeddings_of(&memory, "acme"));
    assert!(
        globex
            .hits
            .iter()
            .all(|h| tenant_of(&memory, &h.id) == "globex")
    );
    assert_eq!(globex.hits[0].text, "Secret merger plan 2 with Initech.");
    // A tenant with no rows has none.
    let none = memory
        .dense_search(Some(PROFILE), "initech", "merger", None)
        .unwrap();
    assert_eq!((none.vectors, none.hits.len()), (0, 0));
    for r in dense_reports(&memory, &["acme", "globex"]) {
        assert_eq!(r.rebuilt.as_ref(), Some(&r.digest), "{r:?}");
    }
}

#[test]
fn search_dense_thread_keeps_only_that_threads_records() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("archive.jsonl");
    crate::support::llm_profile::write_archive(&file, 3, 6);
    ok(&data, &["ingest", file.to_str().unwrap()]);
    ok(
        &data,
        &["profile", "create", PROFILE, "--embedder", "word-hash@1:64"],
    );
    let derived = ok(&data, &["resume", "--profile", PROFILE]);
    assert!(derived.contains("embedded "), "{derived}");
    let status = ok(&data, &["status", "--profile", PROFILE]);
    assert!(
        status.contains("embedder word-hash@1 (strataflow/word-hash-64): "),
        "{status}"
    );
    let query = "On turn 3 we talked about the trip to Porto number 1 and the train tickets.";
    let search = |extra: &[&str]| {
        let mut args = vec![
            "search",
            "dense",
            query,
            "--profile",
            PROFILE,
            "--limit",
            "1000",
            "--json",
        ];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&ok(&data, &args)).unwrap();
        v["hits"].as_array().unwrap().clone()
    };
    let all = search(&[]);
    let threads_of = |hits: &[serde_json::Value]| -> Vec<String> {
        let memory = Memory::open(&data).unwrap();
        hits.iter()
            .map(|h| {
                let id: strataflow::log::RecordId = h["id"].as_str().unwrap().parse().unwrap();
                thread_of(&memory, &id)
            })
            .collect()
    };
    let everywhere = threads_of(&all);
    assert!(everywhere.iter().any(|t| t != "thread-2"), "{everywhere:?}");
    let only = search(&["--thread", "thread-2"]);
    assert!(!only.is_empty());
    let threads = threads_of(&only);
    assert!(threads.iter().all(|t| t == "thread-2"), "{threads:?}");
    // Every row of thread 2, in the order of the search of all threads.
    let expected: Vec<&serde_json::Value> = all
        .iter()
        .zip(&everywhere)
        .filter(|(_, t)| *t == "thread-2")
        .map(|(h, _)| &h["id"])
        .collect();
    let got: Vec<&serde_json::Value> = only.iter().map(|h| &h["id"]).collect();
    assert_eq!(got, expected);
    assert!(search(&["--thread", "no-such-thread"]).is_empty());
}

#[test]
fn a_damaged_view_is_rebuilt_and_views_verify_checks_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("archive.jsonl");
    crate::support::llm_profile::write_archive(&file, 2, 4);
    ok(&data, &["ingest", file.to_str().unwrap()]);
    ok(
        &data,
        &["profile", "create", PROFILE, "--embedder", "word-hash@1:64"],
    );
    ok(&data, &["profile", "set-default", PROFILE]);
    ok(&data, &["resume"]);
    let query = "On turn 2 we talked about the trip to Porto number 1 and the train tickets.";
    let before = ok(&data, &["search", "dense", query, "--json"]);
    let digests = crate::common::view_digests(&data);
    assert!(
        digests
            .iter()
            .any(|(v, t, _, _)| v == "dense" && t.is_empty()),
        "{digests:?}"
    );
    {
        let memory = Memory::open(&data).unwrap();
        let key = memory.dense_view_key(None).unwrap().unwrap();
        let (seq, mut bytes) = memory.store().view_chunks(&key, "").unwrap().unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        memory
            .store()
            .save_view_chunks(&key, "", seq, &bytes)
            .unwrap();
        memory.store().flush_for_test().unwrap();
    }
    // The checksum refuses it: rebuilt, the same answer.
    assert_eq!(ok(&data, &["search", "dense", query, "--json"]), before);
    assert_eq!(crate::common::view_digests(&data), digests);
    let out = ok(&data, &["views", "--verify"]);
    assert!(
        out.lines()
            .any(|l| l.contains("dense") && l.contains("rebuild: same")),
        "{out}"
    );
    ok(&data, &["audit"]);
}

/// One step of a random history of two tenants.
#[derive(Clone, Debug)]
enum Step {
    /// Messages for a tenant (0 or 1) in a thread (0 or 1).
    Ingest(usize, usize, usize),
    Derive,
    Query(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0usize..2, 0usize..2, 1usize..4).prop_map(|(t, th, n)| Step::Ingest(t, th, n)),
        Just(Step::Derive),
        (0usize..2).prop_map(Step::Query),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    /// However ingests, derivations and queries interleave, each tenant's
    /// persisted dense view has the digest of one rebuilt from the first
    /// record, and holds a row per derived embedding of the tenant.
    #[test]
    fn a_dense_view_refreshed_along_the_way_equals_a_rebuild(steps in proptest::collection::vec(step(), 3..10)) {
        let tmp = tempfile::tempdir().unwrap();
        let memory = Memory::open(tmp.path().join("data")).unwrap();
        dense_profile(&memory);
        let tenants = ["acme", "globex"];
        let words = ["widgets", "gadgets", "sprockets", "invoices", "pallets"];
        let mut n = 0u32;
        for s in steps {
            match s {
                Step::Ingest(t, th, count) => {
                    let lines: Vec<String> = (0..count).map(|_| {
                        n += 1;
                        let w = words[n as usize % words.len()];
                        line(tenants[t], &format!("thread-{th}"), &format!("m{n}"), &format!("Order {n}: ten {w} to Porto."), n)
                    }).collect();
                    ingest_lines(&memory, tmp.path(), &format!("chunk{n}"), &lines);
                }
                Step::Derive => derive(&memory),
                Step::Query(t) => {
                    memory.dense_search(Some(PROFILE), tenants[t], "ten widgets to Porto", None).unwrap();
                }
            }
        }
        derive(&memory);
        for r in dense_reports(&memory, &tenants) {
            prop_assert_eq!(r.rebuilt.as_ref(), Some(&r.digest));
        }
        for t in tenants {
            let answer = memory.dense_search(Some(PROFILE), t, "ten gadgets", None).unwrap();
            prop_assert_eq!(answer.vectors, embeddings_of(&memory, t));
        }
    }
}

/// The same dense answer: label, vectors, and hits with the same ids,
/// kinds and texts in the same order; similarities equal as f32 (the
/// server's JSON prints them as f64).
fn same_answer(a: &serde_json::Value, b: &serde_json::Value) {
    assert_eq!((&a["label"], &a["vectors"]), (&b["label"], &b["vectors"]));
    let (x, y) = (a["hits"].as_array().unwrap(), b["hits"].as_array().unwrap());
    assert_eq!(x.len(), y.len(), "{a} {b}");
    for (h, k) in x.iter().zip(y) {
        assert_eq!(
            (&h["id"], &h["kind"], &h["text"]),
            (&k["id"], &k["kind"], &k["text"])
        );
        let s = |v: &serde_json::Value| v["similarity"].as_f64().unwrap() as f32;
        assert_eq!(s(h), s(k));
    }
}

#[test]
fn search_dense_over_serve_answers_as_the_cli_does() {
    use crate::serve_support::{Server, add_key};
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("archive.jsonl");
    crate::support::llm_profile::write_archive(&file, 2, 6);
    ok(&data, &["ingest", file.to_str().unwrap()]);
    ok(
        &data,
        &["profile", "create", PROFILE, "--embedder", "word-hash@1:64"],
    );
    ok(&data, &["resume", "--profile", PROFILE]);
    let query = "On turn 4 we talked about the trip to Porto number 1 and the train tickets.";
    let args = [
        "search",
        "dense",
        query,
        "--profile",
        PROFILE,
        "--thread",
        "thread-1",
        "--limit",
        "3",
        "--json",
    ];
    let local: serde_json::Value = serde_json::from_str(&ok(&data, &args)).unwrap();
    assert_eq!(local["hits"].as_array().unwrap().len(), 3);
    let key = add_key(&data, &["--tenant", ""]);
    let server = Server::start(&data, &[]);
    let body = serde_json::json!({
        "query": query, "channel": "dense", "profile": PROFILE, "thread": "thread-1", "limit": 3,
    });
    let reply = server.post("/v1/search", Some(&key), &body);
    assert_eq!(reply.status, 200, "{reply:?}");
    same_answer(&reply.json(), &local);
    // The CLI's `--server` client sends the same request.
    let out = crate::common::bin()
        .arg("--server")
        .arg(server.url())
        .env("STRATAFLOW_API_KEY", &key)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let remote: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    same_answer(&remote, &local);
    // An event filter does not apply to dense: refused, naming the field.
    let mut bad = body.clone();
    bad["budget"] = 50.into();
    let reply = server.post("/v1/search", Some(&key), &bad);
    assert_eq!(reply.status, 400, "{reply:?}");
    assert!(reply.body.contains("budget"), "{}", reply.body);
    // A profile without an embedder: a clear error.
    let reply = server.post(
        "/v1/search",
        Some(&key),
        &serde_json::json!({"query": query, "channel": "dense"}),
    );
    assert!(reply.status >= 400, "{reply:?}");
    assert!(reply.body.contains("names no embedder"), "{}", reply.body);
    server.stop();
}

#[test]
fn derive_and_status_count_embeddings_and_requests_served_from_the_log() {
    use strataflow::operators::profile::ModelEndpoint;
    let server = crate::embeddings_openai::embedding_server(4);
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    let texts: Vec<String> = (0..5)
        .map(|i| format!("Pallet {i} reached the Lyon depot."))
        .collect();
    let lines = |tenant: &str| -> Vec<String> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| line(tenant, "t", &format!("m{i}"), t, i as u32))
            .collect()
    };
    ingest_lines(&memory, tmp.path(), "acme", &lines("acme"));
    memory
        .save_profile(&Profile {
            name: "remote".into(),
            model: Some(ModelEndpoint {
                model: "scripted".into(),
                base_url: server.base_url(),
                api_key_env: None,
                concurrency: 2,
                timeout_secs: 10,
            }),
            embedder: Some("openai-embeddings@1:test-embed:4".into()),
            ..Profile::default_profile()
        })
        .unwrap();
    let run = |memory: &Memory| {
        memory
            .derive(Some("remote"), &memory.derive_options(), &mut |_| {})
            .unwrap()
    };
    let first = run(&memory);
    assert!(first.embeddings >= 5, "{first:?}");
    assert_eq!(first.embeddings_already, 0);
    let requests = server.requests();
    assert!(requests > 0);
    assert_eq!(
        memory
            .status(Some("remote"))
            .unwrap()
            .model_calls
            .served_from_log,
        0
    );
    // The same texts in another tenant: the same requests, answered from
    // the recorded calls.
    ingest_lines(&memory, tmp.path(), "globex", &lines("globex"));
    let second = run(&memory);
    assert_eq!(second.embeddings, first.embeddings);
    assert_eq!(second.embeddings_already, first.embeddings);
    assert_eq!(server.requests(), requests, "served from the log");
    let status = memory.status(Some("remote")).unwrap();
    assert_eq!(status.model_calls.served_from_log, requests as u64);
    let embedder = status.embedder.unwrap();
    assert_eq!(embedder.operator, "openai-embeddings@1");
    assert_eq!(embedder.label, "openai/test-embed");
    assert_eq!(embedder.vectors, 2 * first.embeddings);
    // The reports that embed nothing need no client: a profile of the same
    // embedder whose key variable is unset still reports its vectors.
    let mut keyless = memory.profile("remote").unwrap();
    keyless.name = "keyless".into();
    if let Some(m) = keyless.model.as_mut() {
        m.api_key_env = Some("STRATAFLOW_TEST_UNSET_KEY_VARIABLE".into());
    }
    memory.save_profile(&keyless).unwrap();
    let status = memory.status(Some("keyless")).unwrap();
    assert_eq!(status.embedder.unwrap().vectors, 2 * first.embeddings);
    let options = ViewsOptions {
        profile: Some("keyless".into()),
        verify: true,
    };
    let reports = memory.views(&["acme".to_owned()], &options).unwrap();
    assert!(
        reports
            .iter()
            .any(|r| r.view == "dense" && r.rebuilt.as_ref() == Some(&r.digest))
    );
    // A rerun embeds nothing and asks nothing.
    let third = run(&memory);
    assert_eq!(
        (third.embeddings, third.embeddings_already),
        (0, 2 * first.embeddings)
    );
    assert_eq!(
        memory
            .status(Some("remote"))
            .unwrap()
            .model_calls
            .served_from_log,
        requests as u64
    );
}
