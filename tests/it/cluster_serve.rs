//! A served cluster (issue 20): two `serve --nats` nodes, each owning some
//! partitions of the shared stream, behind a `serve --cluster` front. A
//! write to the front goes to its tenant's node, which publishes it to the
//! stream; the node's consumer stores it; a read through the front comes
//! from that node. Real `nats-server`, real HTTP, loopback only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::cluster_nats::{assert_union_equals_single, generate};
use super::common::ok;
use super::serve_support::Server;
use super::support::nats;

/// Partitions of the test's stream.
const PARTITIONS: u32 = 4;

/// Adds a key to `keys` and returns it.
fn add_key(dir: &Path, keys: &Path, scope: &[&str]) -> String {
    let mut args = vec!["keys", "add"];
    args.extend_from_slice(scope);
    args.extend_from_slice(&["--keys", keys.to_str().unwrap(), "--json"]);
    let out: Value = serde_json::from_str(&ok(dir, &args)).unwrap();
    out["key"].as_str().unwrap().to_owned()
}

/// The archive's lines by tenant, in file order.
fn lines_by_tenant(archive: &Path) -> BTreeMap<String, Vec<String>> {
    let mut by_tenant: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(archive).unwrap().lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        let tenant = value["tenant"].as_str().unwrap_or_default().to_owned();
        by_tenant.entry(tenant).or_default().push(line.to_owned());
    }
    by_tenant
}

/// The longest word (of at least 6 letters) of the tenant's messages, to
/// search for.
fn search_word(lines: &[String]) -> String {
    let mut words = Vec::new();
    for line in lines {
        let value: Value = serde_json::from_str(line).unwrap();
        let content = value["content"].as_str().unwrap().to_owned();
        words.extend(
            content
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() >= 6)
                .map(str::to_owned),
        );
    }
    words
        .into_iter()
        .max_by_key(|w| (w.len(), w.clone()))
        .unwrap_or_else(|| panic!("no word of 6 letters in {lines:?}"))
}

/// `text` for a query string.
fn query(text: &str) -> String {
    text.replace(' ', "%20")
}

#[test]
fn a_front_routes_each_tenant_to_its_serving_node_and_equals_a_single_node_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let nats = nats::single(dir.path());
    let archive = generate(dir.path(), 400, 8);
    let by_tenant = lines_by_tenant(&archive);
    assert!(by_tenant.len() >= 4, "{:?}", by_tenant.keys());

    let keys = dir.path().join("keys.json");
    let admin = add_key(dir.path(), &keys, &["--admin"]);
    let tenant_keys: BTreeMap<&str, String> = by_tenant
        .keys()
        .map(|t| (t.as_str(), add_key(dir.path(), &keys, &["--tenant", t])))
        .collect();
    let key_file = keys.to_str().unwrap();

    let (a, b) = (dir.path().join("node-a"), dir.path().join("node-b"));
    let node = |data: &Path, owned: &str| {
        Server::start(
            data,
            &[
                "--keys",
                key_file,
                "--nats",
                &nats.url(),
                "--stream-partitions",
                &PARTITIONS.to_string(),
                "--partitions",
                owned,
            ],
        )
    };
    let node_a = node(&a, "0,2");
    let node_b = node(&b, "1,3");
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        serde_json::json!({
            "partitions": PARTITIONS,
            "nodes": [
                {"url": node_a.url(), "partitions": [0, 2]},
                {"url": node_b.url(), "partitions": [1, 3]},
            ],
        })
        .to_string(),
    )
    .unwrap();
    let front = Server::start(
        &dir.path().join("front"),
        &["--keys", key_file, "--cluster", map.to_str().unwrap()],
    );
    let health = front.get("/healthz", None);
    assert_eq!(health.status, 200, "{}", health.body);

    let owner = |tenant: &str| {
        if [0, 2].contains(&strataflow_cluster::partition_of(tenant, PARTITIONS)) {
            &node_a
        } else {
            &node_b
        }
    };
    let mut owners = std::collections::BTreeSet::new();
    for (tenant, lines) in &by_tenant {
        // Written through the front, as one JSONL body per tenant.
        let body = lines.join("\n");
        let path = format!("/v1/ingest?tenant={}", query(tenant));
        let reply = front.request("POST", &path, Some(&admin), Some(&body));
        assert_eq!(reply.status, 200, "{tenant}: {}", reply.body);
        let answer = reply.json();
        assert_eq!(answer["stored"], lines.len(), "{tenant}: {answer}");
        assert!(answer.get("pending").is_none(), "{tenant}: {answer}");
        let node = owner(tenant);
        assert_eq!(reply.header("strataflow-node"), Some(node.url().as_str()));
        owners.insert(node.url());

        // Read back through the front with the tenant's own key, at the
        // sequence the write answered: the text is there.
        let seq = answer["seq"].as_u64().unwrap();
        let word = search_word(lines);
        let found = front.post(
            "/v1/search",
            Some(&tenant_keys[tenant.as_str()]),
            &serde_json::json!({"query": word, "min_seq": seq, "limit": 50}),
        );
        assert_eq!(found.status, 200, "{tenant}: {}", found.body);
        assert!(
            found.body.contains(&word),
            "{tenant}: `{word}` not in {}",
            found.body
        );
        // A node's log holds only what the stream gave it: no batch.
        assert!(found.json()["batch"].is_null(), "{}", found.body);
    }
    assert_eq!(owners.len(), 2, "the tenants all landed on one node");

    // Writing a tenant again through the front adds nothing.
    let (tenant, lines) = by_tenant.iter().next().unwrap();
    let again = front.request(
        "POST",
        &format!("/v1/ingest?tenant={}", query(tenant)),
        Some(&admin),
        Some(&lines.join("\n")),
    );
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.json()["stored"], 0, "{}", again.body);
    assert_eq!(
        again.json()["already_stored"],
        lines.len(),
        "{}",
        again.body
    );

    // A tenant's key never reaches another tenant, through the front or on
    // a node; a node refuses a tenant it does not hold, naming the
    // partition.
    let tenants: Vec<&str> = by_tenant.keys().map(String::as_str).collect();
    let (t0, t1) = (tenants[0], tenants[1]);
    let other = front.get(
        &format!("/v1/events?tenant={}", query(t1)),
        Some(&tenant_keys[t0]),
    );
    assert_eq!(other.status, 403, "{}", other.body);
    assert!(
        other.header("strataflow-node").is_none(),
        "forwarded: {other:?}"
    );
    let stranger = if std::ptr::eq(owner(t0), &node_a) {
        &node_b
    } else {
        &node_a
    };
    let misdirected = stranger.get("/v1/events", Some(&tenant_keys[t0]));
    assert_eq!(misdirected.status, 421, "{}", misdirected.body);
    assert!(
        misdirected.body.contains("partition"),
        "{}",
        misdirected.body
    );
    assert!(
        misdirected.body.contains("other_node"),
        "{}",
        misdirected.body
    );

    // Only messages go through the stream: a keyed memory written on a
    // node would live there alone.
    let keyed = front.post(
        "/v1/memories/notes",
        Some(&tenant_keys[t0]),
        &serde_json::json!({"id": "k1", "text": "kept on one node"}),
    );
    assert_eq!(keyed.status, 409, "{}", keyed.body);
    assert!(keyed.body.contains("not_in_stream"), "{}", keyed.body);

    assert!(front.stop().success());
    assert!(node_a.stop().success());
    assert!(node_b.stop().success());

    // The union of the nodes is a single-node ingest of the same file.
    let single = dir.path().join("single");
    ok(&single, &["ingest", "-q", archive.to_str().unwrap()]);
    let compared = assert_union_equals_single(&single, &[&a, &b]);
    assert_eq!(compared.len(), by_tenant.len());
}

#[test]
fn serve_nats_refuses_a_partition_the_stream_lacks_and_a_missing_partition_list() {
    let dir = tempfile::tempdir().unwrap();
    let nats = nats::single(dir.path());
    let data = dir.path().join("node");
    let out = super::common::run(
        &data,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--nats",
            &nats.url(),
            "--stream-partitions",
            "2",
            "--partitions",
            "1,2",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("partition 2 does not exist"), "{stderr}");
    let out = super::common::run(
        &data,
        &["serve", "--listen", "127.0.0.1:0", "--nats", &nats.url()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--partitions"), "{stderr}");
    // A bad map is refused before anything listens.
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        r#"{"partitions": 2, "nodes": [{"url": "http://127.0.0.1:1", "partitions": [0]}]}"#,
    )
    .unwrap();
    let out = super::common::run(
        &data,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cluster",
            map.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("partitions [1] have no node"), "{stderr}");
}
