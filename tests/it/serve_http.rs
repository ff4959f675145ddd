//! The HTTP API of `strataflow serve`, route by route: each read answers
//! the CLI's `--json` shape for the same call on a copy of the same data
//! directory (search and expand record a batch: their hits are compared,
//! not the batch ids), with the log sequence in `strataflow-seq`; writes
//! store all or nothing and refuse a bad item with its index and field;
//! every refusal is one line of JSON and leaves `GET /v1/stats` as it was;
//! `min_seq` waits then answers 503; bodies over `--max-body` are 413; a
//! non-loopback `--listen` needs keys.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::common::{bin, copy_dir, data_file, ok, repo_file, run};
use super::serve_support::{Reply, Server, add_key};

/// `strataflow --data DIR ARGS… --json`-style output as JSON.
fn cli(dir: &Path, args: &[&str]) -> Value {
    let out = ok(dir, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?} is not JSON ({e}): {out}"))
}

/// `value` without the object keys named (at any depth).
fn without(mut value: Value, keys: &[&str]) -> Value {
    fn strip(v: &mut Value, keys: &[&str]) {
        match v {
            Value::Object(map) => {
                for k in keys {
                    map.remove(*k);
                }
                map.values_mut().for_each(|v| strip(v, keys));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| strip(v, keys)),
            _ => {}
        }
    }
    strip(&mut value, keys);
    value
}

/// A successful read: 200, with `strataflow-seq`; its body.
fn read_ok(reply: &Reply) -> Value {
    assert_eq!(reply.status, 200, "{reply:?}");
    let _ = reply.seq();
    reply.json()
}

/// A refusal: the status, ONE line of JSON with `error.code` (as given)
/// and a non-empty one-line `error.message`; returns `error`.
pub(super) fn refused(reply: &Reply, status: u16, code: &str) -> Value {
    assert_eq!(reply.status, status, "{reply:?}");
    let body = reply.body.strip_suffix('\n').unwrap_or(&reply.body);
    assert!(!body.contains('\n'), "the error is not one line: {body:?}");
    let value: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let error = &value["error"];
    assert_eq!(error["code"], code, "{body}");
    assert_eq!(error["status"], status, "{body}");
    let message = error["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"));
    assert!(!message.is_empty(), "{body}");
    error.clone()
}

/// `GET /v1/stats` without what moves on its own (bytes on disk).
fn stats_of(server: &Server, key: Option<&str>) -> Value {
    without(read_ok(&server.get("/v1/stats", key)), &["bytes_on_disk"])
}

/// Percent-encodes a query-string value.
pub(super) fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The id of a ref (`event:ID` → `ID`, `block:ID:L3` → `ID`).
fn id_of(reference: &str) -> &str {
    reference.split(':').nth(1).unwrap()
}

/// A bad read: method, path, body, status, code, field.
type BadRead = (
    &'static str,
    &'static str,
    Option<&'static str>,
    u16,
    &'static str,
    Option<&'static str>,
);

/// A bad write: body, status, code, index, field.
type BadWrite = (
    String,
    u16,
    &'static str,
    Option<usize>,
    Option<&'static str>,
);

#[test]
fn every_read_and_the_protocol_answer_the_cli_json_shapes() {
    let root = tempfile::tempdir().unwrap();
    let served = root.path().join("served");
    let copy = root.path().join("copy");
    ok(
        &served,
        &[
            "ingest",
            repo_file("examples/data/sample.jsonl").to_str().unwrap(),
        ],
    );
    copy_dir(&served, &copy);
    let server = Server::start(&served, &["--min-seq-wait", "200"]);
    let seq0 = server.get("/healthz", None).json()["seq"].as_u64().unwrap();
    assert_eq!(
        seq0,
        cli(&copy, &["stats", "--json"])["last_seq"]
            .as_u64()
            .unwrap()
    );

    // The plain reads, with and without their arguments.
    let stats = server.get("/v1/stats", None);
    assert_eq!(
        stats.seq(),
        seq0,
        "strataflow-seq is the log's last sequence"
    );
    assert_eq!(
        without(read_ok(&stats), &["bytes_on_disk"]),
        without(cli(&copy, &["stats", "--json"]), &["bytes_on_disk"])
    );
    let thread = "trip-planning";
    let pairs: Vec<(String, Vec<String>)> = vec![
        ("/v1/events".into(), vec!["events".into()]),
        (
            format!("/v1/events?thread={thread}"),
            vec!["events".into(), "--thread".into(), thread.into()],
        ),
        ("/v1/graph".into(), vec!["graph".into()]),
        (
            format!("/v1/graph?at={}", enc("2024-04-21T00:00:00Z")),
            vec!["graph".into(), "--at".into(), "2024-04-21T00:00:00Z".into()],
        ),
        (
            format!("/v1/blocks?thread={thread}"),
            vec!["blocks".into(), "--thread".into(), thread.into()],
        ),
        ("/v1/context".into(), vec!["context".into()]),
        (
            format!("/v1/context?thread={thread}"),
            vec!["context".into(), "--thread".into(), thread.into()],
        ),
        (
            "/v1/views".into(),
            vec!["views".into(), "--tenant".into(), String::new()],
        ),
    ];
    for (path, args) in &pairs {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.push("--json");
        let reply = server.get(path, None);
        assert_eq!(reply.seq(), seq0, "{path}");
        assert_eq!(read_ok(&reply), cli(&copy, &args), "GET {path} vs {args:?}");
    }
    let status = read_ok(&server.get("/v1/status", None));
    assert_eq!(status["seq"], seq0);
    assert_eq!(status["derivation"], cli(&copy, &["status", "--json"]));
    let weights = read_ok(&server.get("/v1/weights", None));
    assert!(weights["current_turn"].as_u64().unwrap() > 0, "{weights}");
    let health = server.get("/healthz", None);
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(health.json(), json!({"status": "ok", "seq": seq0}));
    let metrics = server.get("/metrics", None);
    assert_eq!(metrics.status, 200, "{metrics:?}");
    assert!(
        metrics.body.contains(&format!("log_last_seq {seq0}")),
        "{}",
        metrics.body
    );

    // Records by id and by prefix.
    let events = cli(&copy, &["events", "--json"]);
    let event = events[0]["id"].as_str().unwrap().to_owned();
    let event_type = events[0]["event_type"].as_str().unwrap().to_owned();
    let block = events[0]["block"].as_str().unwrap().to_owned();
    for id in [event.as_str(), &event[..8], block.as_str()] {
        assert_eq!(
            read_ok(&server.get(&format!("/v1/records/{id}"), None)),
            cli(&copy, &["show", id]),
            "record {id}"
        );
    }

    // Search: every channel and every filter, hits compared (the batch ids
    // are records of each directory's own log).
    let searches: Vec<(Value, Vec<String>)> = {
        let mut out = Vec::new();
        for channel in ["events", "graph", "raw", "all"] {
            out.push((
                json!({"query": "Lisbon trip with Marta", "channel": channel}),
                vec![channel.to_owned(), "Lisbon trip with Marta".to_owned()],
            ));
        }
        let filters: Vec<(Value, Vec<&str>)> = vec![
            (json!({"thread": thread}), vec!["--thread", thread]),
            (
                json!({"participants": ["Ana"]}),
                vec!["--participant", "Ana"],
            ),
            (json!({"type": event_type}), vec!["--type", &event_type]),
            (
                json!({"from": "2024-05-01", "to": "2024-05-31"}),
                vec!["--from", "2024-05-01", "--to", "2024-05-31"],
            ),
            (json!({"intent": "latest"}), vec!["--intent", "latest"]),
            (json!({"budget": 40}), vec!["--budget", "40"]),
            (json!({"limit": 2}), vec!["--limit", "2"]),
        ];
        for (body, flags) in filters {
            for channel in ["events", "all"] {
                let mut b = body.clone();
                b["query"] = json!("Lisbon booking");
                b["channel"] = json!(channel);
                let mut args = vec![channel.to_owned(), "Lisbon booking".to_owned()];
                args.extend(flags.iter().map(|s| (*s).to_owned()));
                out.push((b, args));
            }
        }
        out
    };
    let mut event_ref = None;
    let mut node_ref = None;
    for (body, args) in &searches {
        let mut full = vec!["search"];
        full.extend(args.iter().map(String::as_str));
        full.push("--json");
        let reply = server.post("/v1/search", None, body);
        let got = read_ok(&reply);
        let want = cli(&copy, &full);
        assert!(got["batch"].is_string(), "{got}");
        assert_eq!(
            without(got.clone(), &["batch"]),
            without(want, &["batch"]),
            "search {body} vs {full:?}"
        );
        for hit in got["hits"].as_array().unwrap() {
            let r = hit["ref"].as_str().unwrap().to_owned();
            if r.starts_with("event:") && event_ref.is_none() {
                event_ref = Some(r);
            } else if r.starts_with("node:") && node_ref.is_none() {
                node_ref = Some(r);
            }
        }
    }
    let event_ref = event_ref.expect("a search found an event");
    let node_ref = node_ref.expect("a search found a node");

    // Expand: an event, a node (with `at`), a block (with a level).
    let expansions: Vec<(Value, Vec<&str>)> = vec![
        (json!({"ref": event_ref}), vec!["event", id_of(&event_ref)]),
        (json!({"ref": node_ref}), vec!["node", id_of(&node_ref)]),
        (
            json!({"ref": node_ref, "at": "2024-04-21T00:00:00Z"}),
            vec!["node", id_of(&node_ref), "--at", "2024-04-21T00:00:00Z"],
        ),
        (
            json!({"ref": format!("block:{block}"), "level": "L3"}),
            vec!["block", &block, "--level", "L3"],
        ),
    ];
    for (body, args) in &expansions {
        let mut full = vec!["expand"];
        full.extend(args);
        full.push("--json");
        let got = read_ok(&server.post("/v1/expand", None, body));
        let want = cli(&copy, &full);
        assert!(
            want.is_object(),
            "expand {args:?} --json prints one object: {want}"
        );
        assert!(got["batch"].is_string(), "{got}");
        assert_eq!(
            without(got, &["batch"]),
            without(want, &["batch"]),
            "expand {body} vs {full:?}"
        );
    }
    // The block expansion re-anchored its decay: context shows it, alike.
    assert_eq!(
        read_ok(&server.get("/v1/context", None)),
        cli(&copy, &["context", "--json"])
    );

    // The agent protocol: assess a batch sufficient, use its ref.
    let body = json!({"query": "Lisbon trip with Marta", "channel": "events"});
    let http_batch = read_ok(&server.post("/v1/search", None, &body));
    let cli_batch = cli(
        &copy,
        &["search", "events", "Lisbon trip with Marta", "--json"],
    );
    let adopted = http_batch["hits"][0]["ref"].as_str().unwrap().to_owned();
    let got = read_ok(&server.post(
        "/v1/assess",
        None,
        &json!({
            "batch": http_batch["batch"], "verdict": "sufficient", "evidence": [adopted],
            "fit": "it names the trip", "missing": "", "next": "answer",
        }),
    ));
    let want = cli(
        &copy,
        &[
            "assess",
            "--batch",
            cli_batch["batch"].as_str().unwrap(),
            "--verdict",
            "sufficient",
            "--evidence",
            &adopted,
            "--fit",
            "it names the trip",
            "--missing",
            "",
            "--next",
            "answer",
            "--json",
        ],
    );
    assert_eq!(
        without(got, &["batch", "assessment"]),
        without(want, &["batch", "assessment"])
    );
    let got = read_ok(&server.post(
        "/v1/use",
        None,
        &json!({"batch": http_batch["batch"], "refs": [adopted]}),
    ));
    let want = cli(
        &copy,
        &[
            "use",
            "--batch",
            cli_batch["batch"].as_str().unwrap(),
            &adopted,
            "--json",
        ],
    );
    assert_eq!(
        without(got, &["batch", "receipt"]),
        without(want, &["batch", "receipt"])
    );
    assert_eq!(
        read_ok(&server.get("/v1/weights", None))["current_turn"],
        weights["current_turn"]
    );

    // Governance: each decision, then the event listing is the CLI's.
    for (route, command, status, pinned) in [
        ("forget", "forget", "forgotten", false),
        ("restore", "restore", "active", false),
        ("pin", "pin", "active", true),
        ("unpin", "unpin", "active", false),
    ] {
        let got = read_ok(&server.post(
            &format!("/v1/{route}"),
            None,
            &json!({"event": event, "reason": "test"}),
        ));
        ok(&copy, &[command, &event, "--reason", "test"]);
        assert_eq!(got["event"], event.as_str(), "{got}");
        assert_eq!(got["status"], status, "{route}: {got}");
        assert_eq!(got["pinned"], pinned, "{route}: {got}");
        assert!(got["record"].is_string(), "{got}");
        assert_eq!(
            read_ok(&server.get("/v1/events", None)),
            cli(&copy, &["events", "--json"]),
            "events after {route}"
        );
    }
    assert_eq!(
        without(stats_of(&server, None), &[]),
        without(cli(&copy, &["stats", "--json"]), &["bytes_on_disk"]),
        "both logs hold the same records"
    );

    // Consistency: `min_seq` reached answers; beyond the log, 503 after
    // the wait with the sequence and Retry-After.
    let now = server.get("/healthz", None).json()["seq"].as_u64().unwrap();
    let reply = server.get(&format!("/v1/events?min_seq={now}"), None);
    assert_eq!(reply.seq(), now);
    let before = stats_of(&server, None);
    let started = Instant::now();
    for path in [
        format!("/v1/stats?min_seq={}", now + 1000),
        format!("/v1/records/{event}?min_seq={}", now + 1000),
    ] {
        let reply = server.get(&path, None);
        let error = refused(&reply, 503, "behind");
        assert_eq!(error["seq"], now, "{error}");
        assert_eq!(error["field"], "min_seq", "{error}");
        assert_eq!(reply.header("retry-after"), Some("1"), "{reply:?}");
    }
    let reply = server.post(
        "/v1/search",
        None,
        &json!({"query": "Lisbon", "min_seq": now + 1000}),
    );
    assert_eq!(refused(&reply, 503, "behind")["seq"], now);
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "each 503 came after the 200 ms wait"
    );

    // Bad paths of the reads: each a one-line JSON error, nothing stored.
    let bad: Vec<BadRead> = vec![
        (
            "POST",
            "/v1/search",
            Some("{\"query\": "),
            400,
            "malformed_json",
            None,
        ),
        ("POST", "/v1/search", Some(""), 400, "malformed_json", None),
        (
            "POST",
            "/v1/search",
            Some("{\"query\": \"x\", \"limit\": \"ten\"}"),
            400,
            "invalid_argument",
            Some("limit"),
        ),
        (
            "POST",
            "/v1/search",
            Some("{\"query\": \"x\", \"limit\": 0}"),
            400,
            "invalid_argument",
            Some("limit"),
        ),
        (
            "POST",
            "/v1/search",
            Some("{\"query\": \"x\", \"budget\": 0}"),
            400,
            "invalid_argument",
            Some("budget"),
        ),
        (
            "POST",
            "/v1/search",
            Some("{\"query\": \"x\", \"channel\": \"nope\"}"),
            400,
            "invalid_argument",
            Some("channel"),
        ),
        (
            "POST",
            "/v1/search",
            Some("{\"query\": \"x\", \"colour\": 1}"),
            400,
            "invalid_argument",
            None,
        ),
        (
            "POST",
            "/v1/search",
            Some("{\"query\": \"x\", \"from\": \"2024-06-01\", \"to\": \"2024-05-01\"}"),
            400,
            "invalid_argument",
            Some("from"),
        ),
        (
            "POST",
            "/v1/search",
            Some("{\"query\": \"x\", \"participants\": \"Ana\"}"),
            400,
            "invalid_argument",
            Some("participants"),
        ),
        (
            "POST",
            "/v1/expand",
            Some("{\"ref\": \"event\"}"),
            400,
            "invalid_argument",
            Some("ref"),
        ),
        (
            "POST",
            "/v1/expand",
            Some("{\"ref\": \"block:0000\", \"level\": \"L9\"}"),
            400,
            "invalid_argument",
            Some("level"),
        ),
        (
            "POST",
            "/v1/expand",
            Some("{\"ref\": \"node:marta\", \"at\": \"yesterday\"}"),
            400,
            "invalid_argument",
            Some("at"),
        ),
        (
            "POST",
            "/v1/expand",
            Some("{\"ref\": \"event:ffffffff\"}"),
            404,
            "not_found",
            None,
        ),
        (
            "GET",
            "/v1/records/ffffffffffff",
            None,
            404,
            "not_found",
            None,
        ),
        (
            "GET",
            "/v1/records/xyz",
            None,
            400,
            "invalid_argument",
            None,
        ),
        (
            "GET",
            "/v1/graph?at=yesterday",
            None,
            400,
            "invalid_argument",
            Some("at"),
        ),
        (
            "GET",
            "/v1/events?min_seq=many",
            None,
            400,
            "invalid_argument",
            Some("min_seq"),
        ),
        ("GET", "/v1/blocks", None, 400, "invalid_argument", None),
        (
            "GET",
            "/v1/blocks?thread=no-such-thread",
            None,
            404,
            "not_found",
            None,
        ),
        (
            "GET",
            "/v1/stats?colour=red",
            None,
            400,
            "invalid_argument",
            None,
        ),
        (
            "POST",
            "/v1/assess",
            Some("{\"batch\": \"ffffffff\", \"verdict\": \"maybe\", \"next\": \"answer\"}"),
            400,
            "invalid_argument",
            Some("verdict"),
        ),
        (
            "POST",
            "/v1/assess",
            Some("{\"batch\": \"ffffffff\", \"verdict\": \"partial\", \"next\": \"guess\"}"),
            400,
            "invalid_argument",
            Some("next"),
        ),
        (
            "POST",
            "/v1/use",
            Some("{\"batch\": \"ffffffff\", \"refs\": []}"),
            400,
            "invalid_argument",
            Some("refs"),
        ),
        (
            "POST",
            "/v1/forget",
            Some("{\"event\": 7}"),
            400,
            "invalid_argument",
            Some("event"),
        ),
        (
            "POST",
            "/v1/pin",
            Some("{\"event\": \"ffffffff\"}"),
            404,
            "not_found",
            None,
        ),
        ("GET", "/v1/nope", None, 404, "not_found", None),
        ("GET", "/v2/search", None, 404, "not_found", None),
        ("GET", "/v1/search", None, 405, "method_not_allowed", None),
        ("DELETE", "/v1/stats", None, 405, "method_not_allowed", None),
        (
            "PUT",
            "/v1/messages",
            Some("{}"),
            405,
            "method_not_allowed",
            None,
        ),
    ];
    for (method, path, body, status, code, field) in bad {
        let reply = server.request(method, path, None, body);
        let error = refused(&reply, status, code);
        if let Some(field) = field {
            assert_eq!(error["field"], field, "{method} {path} {body:?}: {error}");
        }
        assert_eq!(
            stats_of(&server, None),
            before,
            "{method} {path} {body:?} stored something"
        );
    }
    assert!(server.stop().success());
}

/// The sample's lines as JSON objects.
fn sample() -> Vec<Value> {
    std::fs::read_to_string(repo_file("examples/data/sample.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn jsonl(items: &[Value]) -> String {
    items.iter().map(|v| format!("{v}\n")).collect()
}

#[test]
fn writes_store_all_or_nothing_and_refuse_with_index_and_field() {
    let root = tempfile::tempdir().unwrap();
    let served = root.path().join("served");
    ok(&served, &["init"]);
    let lines = sample();
    let server = Server::start(&served, &[]);

    // One message, then an array: each message's record id once durable.
    let one = server.post("/v1/messages", None, &lines[0]);
    assert_eq!(one.status, 200, "{one:?}");
    let one = one.json();
    assert_eq!(one["messages"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["messages"][0]["new"], true, "{one}");
    let many = server.post("/v1/messages", None, &Value::from(lines[1..40].to_vec()));
    assert_eq!(many.status, 200, "{many:?}");
    let many = many.json();
    let ids: Vec<String> = std::iter::once(&one)
        .chain(std::iter::once(&many))
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 40);
    // Read your writes: `min_seq` of the answer.
    let seq = many["seq"].as_u64().unwrap();
    let reply = server.get(&format!("/v1/stats?min_seq={seq}"), None);
    assert!(reply.seq() >= seq);
    assert_eq!(reply.json()["messages"], 40);
    // The same message again is acknowledged, nothing new.
    let again = server.post("/v1/messages", None, &lines[0]).json();
    assert_eq!(again["messages"][0], json!({"id": ids[0], "new": false}));

    // Every bad item refuses the whole request, naming index and field.
    let with = |i: usize, field: &str, value: Value| {
        let mut m = lines[i].clone();
        m[field] = value;
        m
    };
    let before = stats_of(&server, None);
    let bad: Vec<BadWrite> = vec![
        ("{\"thread\": ".into(), 400, "malformed_json", None, None),
        (
            "[{\"thread\": \"t\"},".into(),
            400,
            "malformed_json",
            None,
            None,
        ),
        ("42".into(), 400, "invalid_argument", None, None),
        ("[]".into(), 400, "invalid_argument", None, None),
        (
            json!([lines[40], 7]).to_string(),
            400,
            "invalid_argument",
            Some(1),
            None,
        ),
        (
            json!([lines[40], with(41, "content", json!(5))]).to_string(),
            400,
            "invalid_argument",
            Some(1),
            Some("content"),
        ),
        (
            json!([lines[40], with(41, "role", json!("wizard"))]).to_string(),
            400,
            "invalid_argument",
            Some(1),
            Some("role"),
        ),
        (
            json!([lines[40], with(41, "ts", json!("last tuesday"))]).to_string(),
            400,
            "invalid_argument",
            Some(1),
            Some("ts"),
        ),
        (
            json!([lines[40], with(41, "thread", Value::Null)]).to_string(),
            400,
            "invalid_argument",
            Some(1),
            Some("thread"),
        ),
        // An external id stored with other content.
        (
            json!([
                lines[40],
                with(3, "content", json!("something else entirely"))
            ])
            .to_string(),
            409,
            "conflict",
            Some(1),
            None,
        ),
        // The same id twice in one request with different contents.
        (
            json!([lines[40], with(40, "content", json!("another text"))]).to_string(),
            409,
            "conflict",
            Some(1),
            None,
        ),
    ];
    for (body, status, code, index, field) in &bad {
        let reply = server.request("POST", "/v1/messages", None, Some(body));
        let error = refused(&reply, *status, code);
        assert_eq!(error["index"], json!(index), "{body}: {error}");
        if let Some(field) = field {
            assert_eq!(error["field"], *field, "{body}: {error}");
        }
        assert_eq!(stats_of(&server, None), before, "{body} stored something");
    }

    // Ingest a JSONL body: the summary of `ingest`.
    let body = jsonl(&lines[40..70]);
    let reply = server.request("POST", "/v1/ingest", None, Some(&body));
    assert_eq!(reply.status, 200, "{reply:?}");
    let summary = reply.json();
    assert_eq!(summary["read"], 30, "{summary}");
    assert_eq!(summary["stored"], 30, "{summary}");
    assert_eq!(summary["already_stored"], 0, "{summary}");
    assert_eq!(summary["rejected"], json!([]), "{summary}");
    // A bad line refuses the body, naming its line and field.
    let before = stats_of(&server, None);
    let mut bad_lines = lines[70..80].to_vec();
    bad_lines[3]["role"] = json!("wizard");
    let bad_body = jsonl(&bad_lines);
    let good_line = jsonl(&lines[70..71]);
    for (path, body, code) in [
        ("/v1/ingest", bad_body.as_str(), "invalid_argument"),
        ("/v1/ingest?format=csv", "a,b\n", "invalid_argument"),
        (
            "/v1/ingest?format=locomo",
            "{\"conversation\": ",
            "invalid_argument",
        ),
        ("/v1/ingest?skip_invalid=perhaps", "", "invalid_argument"),
        (
            "/v1/ingest?thread=t",
            good_line.as_str(),
            "invalid_argument",
        ),
    ] {
        let reply = server.request("POST", path, None, Some(body));
        let error = refused(&reply, 400, code);
        if path == "/v1/ingest?thread=t" {
            assert_eq!(error["field"], "thread", "{error}");
        }
        if path == "/v1/ingest" {
            assert_eq!(error["field"], "role", "{error}");
            assert!(
                error["message"].as_str().unwrap().contains("line 4"),
                "{error}"
            );
        }
        assert_eq!(stats_of(&server, None), before, "{path} stored something");
    }
    // A line whose external id is stored with other content refuses the
    // body, naming its line.
    let conflicting = jsonl(&[
        lines[70].clone(),
        with(3, "content", json!("something else entirely")),
    ]);
    let reply = server.request("POST", "/v1/ingest", None, Some(&conflicting));
    let error = refused(&reply, 409, "conflict");
    assert_eq!(error["index"], 1, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("line 2: "), "{error}");
    assert!(message.contains("t1-004"), "{error}");
    assert_eq!(
        stats_of(&server, None),
        before,
        "a refused ingest stored something"
    );
    // With skip_invalid the rest is stored and the rejects listed.
    let reply = server.request(
        "POST",
        "/v1/ingest?skip_invalid=true",
        None,
        Some(&bad_body),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    let summary = reply.json();
    assert_eq!(summary["read"], 10, "{summary}");
    assert_eq!(summary["stored"], 9, "{summary}");
    let rejected = summary["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 1, "{summary}");
    assert_eq!(rejected[0]["line"], 4, "{summary}");
    assert_eq!(rejected[0]["field"], "role", "{summary}");
    // The rest of the sample, then a LoCoMo body into another tenant.
    let reply = server.request("POST", "/v1/ingest", None, Some(&jsonl(&lines[80..])));
    assert_eq!(reply.json()["stored"], lines.len() - 80);
    // A body has no file name to name a conversation without `sample_id`
    // (the CLI takes the file's stem): `thread` names it.
    let locomo = std::fs::read_to_string(data_file("locomo/conv-26.json")).unwrap();
    assert!(serde_json::from_str::<Value>(&locomo).unwrap()["sample_id"].is_null());
    let reply = server.request(
        "POST",
        "/v1/ingest?format=locomo&tenant=loco&thread=conv-26",
        None,
        Some(&locomo),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    let summary = reply.json();
    assert!(summary["stored"].as_u64().unwrap() > 100, "{summary}");
    assert_eq!(summary["rejected"], json!([]), "{summary}");
    assert!(server.stop().success());

    // The same input through the CLI gives the same records.
    let by_cli = root.path().join("cli");
    let sample_file = root.path().join("sample.jsonl");
    let mut kept = lines.clone();
    kept.remove(73);
    std::fs::write(&sample_file, jsonl(&kept)).unwrap();
    ok(&by_cli, &["ingest", sample_file.to_str().unwrap()]);
    ok(
        &by_cli,
        &[
            "import",
            "locomo",
            data_file("locomo/conv-26.json").to_str().unwrap(),
            "--tenant",
            "loco",
        ],
    );
    for id in &ids {
        assert_eq!(cli(&by_cli, &["show", id])["id"], id.as_str());
    }
    for args in [
        vec!["events", "--json"],
        vec!["events", "--tenant", "loco", "--json"],
        vec!["blocks", "--thread", "trip-planning", "--json"],
    ] {
        assert!(
            cli(&served, &args) == cli(&by_cli, &args),
            "{args:?} differs between HTTP and CLI ingestion"
        );
    }
    assert_eq!(
        cli(&served, &["stats", "--json"])["records"],
        cli(&by_cli, &["stats", "--json"])["records"]
    );
}

#[test]
fn body_limit_and_where_the_server_may_listen() {
    let dir = tempfile::tempdir().unwrap();
    ok(
        dir.path(),
        &[
            "ingest",
            repo_file("examples/data/sample.jsonl").to_str().unwrap(),
        ],
    );
    let server = Server::start(
        dir.path(),
        &[
            "--max-body",
            "1000",
            "--request-timeout",
            "1",
            "--min-seq-wait",
            "5000",
        ],
    );
    let before = stats_of(&server, None);
    let big = Value::from(sample()[..20].to_vec()).to_string();
    assert!(big.len() > 1000);
    for path in ["/v1/messages", "/v1/ingest", "/v1/search"] {
        let reply = server.request("POST", path, None, Some(&big));
        refused(&reply, 413, "too_large");
        assert_eq!(stats_of(&server, None), before, "{path} stored something");
    }
    // A request past `--request-timeout` (here a `min_seq` wait longer
    // than it) is answered 503 at the time-out.
    let started = Instant::now();
    let reply = server.get("/v1/events?min_seq=1000000", None);
    refused(&reply, 503, "unavailable");
    assert_eq!(reply.header("retry-after"), Some("1"), "{reply:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(4500),
        "answered after {took:?}"
    );
    // Under the limit the same route works.
    let small = server.post("/v1/messages", None, &sample()[0]);
    assert_eq!(small.status, 200, "{small:?}");
    assert_eq!(small.json()["messages"][0]["new"], false);
    assert!(server.stop().success());

    // Without keys, a non-loopback address is refused before anything.
    let out = run(dir.path(), &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("0.0.0.0:0"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // With a key file it starts (no traffic is sent to it).
    add_key(dir.path(), &["--tenant", "a"]);
    let mut child = bin()
        .arg("--data")
        .arg(dir.path())
        .args(["serve", "--listen", "0.0.0.0:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("listening on http://0.0.0.0:"), "{line}");
    assert!(line.contains("API keys required"), "{line}");
}
