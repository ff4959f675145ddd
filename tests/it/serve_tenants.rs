//! Tenant isolation over HTTP: tenants `a` and `b` hold the same threads
//! and message ids (each message with its tenant's marker word); 1,000
//! seeded random read requests with A's key over every read route, with
//! arguments drawn from both tenants (queries, threads, ids and id
//! prefixes, refs of B's own searches) never answer a record id of B nor
//! B's marker; naming `b` with A's key is 403; no key or a revoked key is
//! 401.

use serde_json::{Value, json};

use super::common::ok;
use super::serve_http::{enc, refused};
use super::serve_support::{Reply, Server, add_key};

/// A tiny xorshift64* (no dependency; the seed fixes every request).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const THREADS: [&str; 2] = ["planning", "weekend"];
const TURNS: usize = 30;

/// The messages of a tenant: the same threads and ids as the other's, its
/// marker word in every one.
fn messages(marker: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for turn in 0..TURNS {
        for thread in THREADS {
            let minute = turn * 2;
            out.push(json!({
                "thread": thread,
                "id": format!("{thread}-{turn}-u"),
                "role": "user",
                "speaker": "Ana",
                "content": format!("Turn {turn}: I met Marta in Lisbon last Saturday about the {marker} project; we plan the Porto trip with {marker} next month."),
                "ts": format!("2024-05-01T{:02}:{:02}:00Z", minute / 60, minute % 60),
            }));
            out.push(json!({
                "thread": thread,
                "id": format!("{thread}-{turn}-a"),
                "role": "assistant",
                "content": format!("Noted ({marker}): shall I book the train to Porto for the {marker} team?"),
                "ts": format!("2024-05-01T{:02}:{:02}:30Z", minute / 60, minute % 60),
            }));
        }
    }
    out
}

/// The record ids a key sees of its tenant: messages, blocks, events, and
/// batches and refs of searches made with it.
struct Seen {
    ids: Vec<String>,
    refs: Vec<String>,
    batches: Vec<String>,
}

fn seen_by(server: &Server, key: &str, stored: &Value) -> Seen {
    let mut ids: Vec<String> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    for thread in THREADS {
        let blocks = server.get(&format!("/v1/blocks?thread={thread}"), Some(key));
        assert_eq!(blocks.status, 200, "{blocks:?}");
        collect_ids(&blocks.json(), &mut ids);
    }
    let events = server.get("/v1/events", Some(key));
    assert_eq!(events.status, 200, "{events:?}");
    collect_ids(&events.json(), &mut ids);
    let mut refs = Vec::new();
    let mut batches = Vec::new();
    for channel in ["events", "graph", "raw", "all"] {
        let reply = server.post(
            "/v1/search",
            Some(key),
            &json!({"query": "Marta Lisbon Porto trip", "channel": channel}),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        let found = reply.json();
        batches.push(found["batch"].as_str().unwrap().to_owned());
        for hit in found["hits"].as_array().unwrap() {
            refs.push(hit["ref"].as_str().unwrap().to_owned());
        }
    }
    ids.extend(batches.iter().cloned());
    ids.sort();
    ids.dedup();
    Seen { ids, refs, batches }
}

/// Every 64-hex-digit string of a JSON value.
fn collect_ids(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            for word in s.split(|c: char| !c.is_ascii_hexdigit()) {
                if word.len() == 64 {
                    out.push(word.to_owned());
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_ids(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_ids(v, out)),
        _ => {}
    }
}

/// One random read request: method, path, body.
fn random_read(
    rng: &mut Rng,
    a: &Seen,
    b: &Seen,
    words: &[&str],
) -> (&'static str, String, Option<Value>) {
    let any_id = |rng: &mut Rng| -> String {
        let pool = if rng.chance(60) { &b.ids } else { &a.ids };
        let id = rng.pick(pool).clone();
        if rng.chance(40) {
            id[..4 + rng.below(12)].to_owned()
        } else {
            id
        }
    };
    let thread = |rng: &mut Rng| -> String { (*rng.pick(&THREADS)).to_owned() };
    let query = |rng: &mut Rng| -> String {
        let n = 1 + rng.below(3);
        (0..n)
            .map(|_| (*rng.pick(words)).to_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    match rng.below(14) {
        0 | 1 => {
            let mut body = json!({
                "query": query(rng),
                "channel": *rng.pick(&["events", "graph", "raw", "all"]),
            });
            if rng.chance(40) {
                body["thread"] = json!(thread(rng));
            }
            if rng.chance(20) {
                body["participants"] = json!(["Ana"]);
            }
            if rng.chance(20) {
                body["limit"] = json!(1 + rng.below(20));
            }
            if rng.chance(20) {
                body["budget"] = json!(10 + rng.below(200));
            }
            if rng.chance(10) {
                body["from"] = json!("2024-04-01");
                body["to"] = json!("2024-07-01");
            }
            ("POST", "/v1/search".into(), Some(body))
        }
        2 | 3 => {
            let pool = if rng.chance(70) { &b.refs } else { &a.refs };
            let reference = if pool.is_empty() || rng.chance(20) {
                format!("{}:{}", rng.pick(&["event", "block", "node"]), any_id(rng))
            } else {
                rng.pick(pool).clone()
            };
            let mut body = json!({"ref": reference});
            if reference.starts_with("block:") && rng.chance(50) {
                body["level"] = json!(*rng.pick(&["L0", "L3", "L5", "raw", "next"]));
            }
            if reference.starts_with("node:") && rng.chance(50) {
                body["at"] = json!("2024-05-01T00:30:00Z");
            }
            ("POST", "/v1/expand".into(), Some(body))
        }
        4 => ("GET", format!("/v1/records/{}", any_id(rng)), None),
        5 => {
            let path = if rng.chance(50) {
                format!("/v1/context?thread={}", thread(rng))
            } else {
                "/v1/context".into()
            };
            ("GET", path, None)
        }
        6 => {
            let path = if rng.chance(50) {
                format!("/v1/events?thread={}", thread(rng))
            } else {
                "/v1/events".into()
            };
            ("GET", path, None)
        }
        7 => {
            let path = if rng.chance(50) {
                format!("/v1/graph?at={}", enc("2024-05-01T00:30:00Z"))
            } else {
                "/v1/graph".into()
            };
            ("GET", path, None)
        }
        8 => ("GET", format!("/v1/blocks?thread={}", thread(rng)), None),
        9 => (
            "GET",
            (*rng.pick(&["/v1/stats", "/v1/status", "/v1/weights", "/v1/views"])).into(),
            None,
        ),
        10 => {
            let batch = rng.pick(&b.batches).clone();
            let evidence = rng.pick(&b.refs).clone();
            (
                "POST",
                "/v1/assess".into(),
                Some(json!({
                    "batch": batch, "verdict": "sufficient", "evidence": [evidence],
                    "fit": "f", "missing": "", "next": "answer",
                })),
            )
        }
        11 => {
            let batch = rng.pick(&b.batches).clone();
            let reference = rng.pick(&b.refs).clone();
            (
                "POST",
                "/v1/use".into(),
                Some(json!({"batch": batch, "refs": [reference]})),
            )
        }
        12 => {
            let route = *rng.pick(&["forget", "restore", "pin", "unpin"]);
            // Only B's events: A's own decisions would be writes of A.
            let event = rng.pick(&b.refs).split(':').nth(1).unwrap().to_owned();
            (
                "POST",
                format!("/v1/{route}"),
                Some(json!({"event": event})),
            )
        }
        _ => {
            let path = *rng.pick(&["/v1/context", "/v1/events", "/v1/graph", "/v1/stats"]);
            ("GET", path.into(), None)
        }
    }
}

/// Adds `tenant=b` to a request (query string or body).
fn naming_b(path: &str, body: Option<Value>) -> (String, Option<Value>) {
    match body {
        Some(mut body) => {
            body["tenant"] = json!("b");
            (path.to_owned(), Some(body))
        }
        None => {
            let sep = if path.contains('?') { '&' } else { '?' };
            (format!("{path}{sep}tenant=b"), None)
        }
    }
}

fn send(
    server: &Server,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &Option<Value>,
) -> Reply {
    let text = body.as_ref().map(Value::to_string);
    server.request(method, path, key, text.as_deref())
}

#[test]
fn a_tenant_key_never_sees_another_tenant() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    let key_a = add_key(dir.path(), &["--tenant", "a"]);
    let key_b = add_key(dir.path(), &["--tenant", "b"]);
    let revoked: Value =
        serde_json::from_str(&ok(dir.path(), &["keys", "add", "--tenant", "a", "--json"])).unwrap();
    let server = Server::start(dir.path(), &[]);

    let stored_a = server.post(
        "/v1/messages",
        Some(&key_a),
        &Value::from(messages("amberfox")),
    );
    assert_eq!(stored_a.status, 200, "{stored_a:?}");
    let stored_b = server.post(
        "/v1/messages",
        Some(&key_b),
        &Value::from(messages("bluewhale")),
    );
    assert_eq!(stored_b.status, 200, "{stored_b:?}");
    let a = seen_by(&server, &key_a, &stored_a.json());
    let b = seen_by(&server, &key_b, &stored_b.json());
    assert!(
        b.refs.iter().any(|r| r.starts_with("event:")),
        "{:?}",
        b.refs
    );
    assert!(
        b.refs.iter().any(|r| r.starts_with("node:")),
        "{:?}",
        b.refs
    );
    assert!(b.ids.len() > 100, "{}", b.ids.len());
    for id in &b.ids {
        assert!(!a.ids.contains(id), "B's {id} is among A's records");
    }
    // A sees its own data: its marker, never B's.
    let events_a = server.get("/v1/events", Some(&key_a));
    assert!(events_a.body.contains("amberfox"), "{}", events_a.body);

    // The key of A, revoked while the server runs.
    let revoked_key = revoked["key"].as_str().unwrap().to_owned();
    assert_eq!(server.get("/v1/stats", Some(&revoked_key)).status, 200);
    std::thread::sleep(std::time::Duration::from_millis(20));
    ok(
        dir.path(),
        &["keys", "revoke", revoked["id"].as_str().unwrap()],
    );

    let words = [
        "Marta",
        "Lisbon",
        "Porto",
        "trip",
        "train",
        "bluewhale",
        "amberfox",
        "project",
        "Saturday",
        "book",
        "team",
        "Ana",
        "month",
    ];
    let mut rng = Rng(0x5EED_15AB_C0DE_0001);
    let (mut forbidden, mut unauthorized, mut answered) = (0, 0, 0);
    for i in 0..1000 {
        let (method, path, body) = random_read(&mut rng, &a, &b, &words);
        let request = format!(
            "{path} {}",
            body.as_ref().map(Value::to_string).unwrap_or_default()
        );
        let roll = rng.below(100);
        if roll < 10 {
            let (path, body) = naming_b(&path, body);
            let reply = send(&server, method, &path, Some(&key_a), &body);
            let error = refused(&reply, 403, "forbidden");
            assert_eq!(error["field"], "tenant", "#{i} {method} {path}: {error}");
            forbidden += 1;
            continue;
        }
        if roll < 15 {
            let key = if roll < 12 {
                None
            } else {
                Some(revoked_key.as_str())
            };
            let reply = send(&server, method, &path, key, &body);
            refused(&reply, 401, "unauthorized");
            unauthorized += 1;
            continue;
        }
        let reply = send(&server, method, &path, Some(&key_a), &body);
        assert!(
            reply.status < 500,
            "#{i} {method} {request}: {} {}",
            reply.status,
            reply.body
        );
        if reply.status == 200 {
            answered += 1;
        }
        // An id (or the marker) the request itself sent may be echoed in
        // its refusal; anything else of B is a leak.
        for id in &b.ids {
            assert!(
                !reply.body.contains(id.as_str()) || request.contains(id.as_str()),
                "#{i} {method} {request} answered B's record {id}: {}",
                reply.body
            );
        }
        assert!(
            !reply.body.contains("bluewhale") || request.contains("bluewhale"),
            "#{i} {method} {request} answered B's marker: {}",
            reply.body
        );
        if request.contains("bluewhale") && reply.status == 200 {
            assert!(
                !reply.body.contains("bluewhale"),
                "#{i} {request}: {}",
                reply.body
            );
        }
    }
    assert!(
        forbidden > 50 && unauthorized > 20,
        "{forbidden} {unauthorized}"
    );
    assert!(
        answered > 400,
        "only {answered} of 1000 requests answered 200"
    );

    // Writes naming B with A's key are 403 too, and store nothing of B.
    let stats_of_b = || {
        let mut stats = server.get("/v1/stats", Some(&key_b)).json();
        stats.as_object_mut().unwrap().remove("bytes_on_disk");
        stats
    };
    let stats_b = stats_of_b();
    let mut message = messages("amberfox")[0].clone();
    message["id"] = json!("new-one");
    let reply = server.post("/v1/messages?tenant=b", Some(&key_a), &message);
    refused(&reply, 403, "forbidden");
    message["tenant"] = json!("b");
    let reply = server.post(
        "/v1/messages",
        Some(&key_a),
        &Value::from(vec![message.clone()]),
    );
    assert_eq!(refused(&reply, 403, "forbidden")["index"], 0);
    let reply = server.request(
        "POST",
        "/v1/ingest?tenant=b",
        Some(&key_a),
        Some(&message.to_string()),
    );
    refused(&reply, 403, "forbidden");
    let reply = server.request(
        "POST",
        "/v1/ingest",
        Some(&key_a),
        Some(&message.to_string()),
    );
    refused(&reply, 403, "forbidden");
    assert_eq!(stats_of_b(), stats_b);
    // `/metrics` spans every tenant: admin only; `/healthz` is open.
    refused(&server.get("/metrics", Some(&key_a)), 403, "forbidden");
    refused(&server.get("/metrics", None), 401, "unauthorized");
    assert_eq!(server.get("/healthz", None).status, 200);

    // B's data is intact and still B's.
    let events_b = server.get("/v1/events", Some(&key_b));
    assert!(events_b.body.contains("bluewhale"), "{}", events_b.body);
    assert!(!events_b.body.contains("amberfox"), "{}", events_b.body);
    assert!(server.stop().success());
}
