//! Keyed memories over `serve`: the HTTP routes under `/v1/memories` and
//! the MCP tools (driven by the official Python MCP SDK) answer each
//! tenant's key with its own entries only, refuse another tenant, and
//! `--retention-older-than` purges on a timer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use serde_json::json;

use super::common::{ok, python_client};
use super::keyed_memories::{INCIDENTS, cli_remember};
use super::serve_support::{Server, add_key};

/// The seed's incidents remembered with the CLI (which also sets the
/// directory's embedder).
fn seed(dir: &std::path::Path) {
    for incident in INCIDENTS {
        cli_remember(dir, incident, &["--embedder", "word-hash@1:64"]);
    }
}

fn recall(server: &Server, key: &str, body: &serde_json::Value) -> Vec<serde_json::Value> {
    let reply = server.post("/v1/memories/incidents/recall", Some(key), body);
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()["matches"].as_array().unwrap().clone()
}

fn actions(matches: &[serde_json::Value]) -> Vec<String> {
    matches
        .iter()
        .map(|m| m["content"]["action"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn each_tenant_key_sees_only_its_memories_over_http_and_mcp() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let acme = add_key(dir.path(), &["--tenant", "acme"]);
    let globex = add_key(dir.path(), &["--tenant", "globex"]);
    let server = Server::start(dir.path(), &[]);

    let query = json!({"text": "Checkout pods out of memory after deploy"});
    let a = recall(&server, &acme, &query);
    assert_eq!(a.len(), 3);
    assert_eq!(a[0]["id"], "inc-101");
    assert!(!actions(&a).contains(&"move the pods to another node pool".to_owned()));
    let g = recall(&server, &globex, &query);
    assert_eq!(actions(&g), ["move the pods to another node pool"]);

    // Naming the other tenant is refused on every route.
    let other = server.post(
        "/v1/memories/incidents/recall",
        Some(&acme),
        &json!({"tenant": "globex", "text": "pods"}),
    );
    assert_eq!(other.status, 403, "{other:?}");
    let write = server.post(
        "/v1/memories/incidents",
        Some(&acme),
        &json!({"tenant": "globex", "id": "x", "text": "t"}),
    );
    assert_eq!(write.status, 403, "{write:?}");
    let delete = server.request(
        "DELETE",
        "/v1/memories/incidents/inc-101?tenant=globex",
        Some(&acme),
        None,
    );
    assert_eq!(delete.status, 403, "{delete:?}");
    let purge = server.post(
        "/v1/memories/purge",
        Some(&acme),
        &json!({"tenant": "globex", "older_than": "2100-01-01T00:00:00Z"}),
    );
    assert_eq!(purge.status, 403, "{purge:?}");

    // Remember, then forget with acme's key: globex's inc-101 stays.
    let put = server.post(
        "/v1/memories/incidents",
        Some(&acme),
        &json!({"id": "inc-104", "text": "Cache pods out of memory", "content": {"action": "resize"}, "metadata": {"service": "cache"}}),
    );
    assert_eq!(put.status, 200, "{put:?}");
    assert_eq!(put.json()["replaced"], false);
    let bad = server.post(
        "/v1/memories/incidents",
        Some(&acme),
        &json!({"id": "", "text": "t"}),
    );
    assert_eq!(bad.status, 400, "{bad:?}");
    assert_eq!(bad.json()["error"]["field"], "id", "{bad:?}");
    let gone = server.request(
        "DELETE",
        "/v1/memories/incidents/inc-101",
        Some(&acme),
        None,
    );
    assert_eq!(gone.status, 200, "{gone:?}");
    let again = server.request(
        "DELETE",
        "/v1/memories/incidents/inc-101",
        Some(&acme),
        None,
    );
    assert_eq!(again.status, 404, "{again:?}");
    let a = recall(
        &server,
        &acme,
        &json!({"text": "pods out of memory", "metadata": {"service": "cache"}}),
    );
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["id"], "inc-104");
    assert_eq!(recall(&server, &globex, &query).len(), 1);

    // Purge with acme's key: its entries only, oldest first, counted.
    let purged = server.post(
        "/v1/memories/purge",
        Some(&acme),
        &json!({"older_than": "2100-01-01T00:00:00Z", "limit": 1}),
    );
    assert_eq!(purged.status, 200, "{purged:?}");
    assert_eq!(purged.json()["purged"], 1);
    let left: Vec<String> = recall(&server, &acme, &json!({"text": "pods"}))
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    // inc-102 was the oldest of acme's entries left.
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(!left.contains(&"inc-102".to_owned()), "{left:?}");

    // MCP: each key's agent recalls only its own tenant's incidents.
    let url = format!("{}/mcp", server.url());
    for (key, own, other) in [
        (&globex, "move the pods to another node pool", "acme"),
        (&acme, "halve the batch", "globex"),
    ] {
        let seen = mcp_agent(&url, key, own, other);
        let actions: Vec<&str> = seen["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        if other == "acme" {
            assert_eq!(actions, ["move the pods to another node pool"]);
        } else {
            assert!(!actions.contains(&"move the pods to another node pool"));
        }
        assert!(
            seen["other_tenant_error"].as_str().unwrap().contains(other),
            "{seen}"
        );
        assert!(
            seen["bad_limit_error"].as_str().unwrap().contains("limit"),
            "{seen}"
        );
    }
    assert!(server.stop().success());
    ok(dir.path(), &["audit"]);
}

fn mcp_agent(url: &str, key: &str, own: &str, other: &str) -> serde_json::Value {
    python_client("keyed_memories.py", &[url, key, own, other])
}

#[test]
fn serve_purges_old_memories_on_a_timer() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    // Without --retention-older-than, --retention-every is a usage error.
    let lonely = super::common::run(dir.path(), &["serve", "--retention-every", "1s"]);
    assert_eq!(lonely.status.code(), Some(2));
    let bad = super::common::run(dir.path(), &["serve", "--retention-older-than", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
    std::thread::sleep(Duration::from_millis(1100));
    let server = Server::start(
        dir.path(),
        &["--retention-older-than", "1s", "--retention-every", "1s"],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = server.post(
            "/v1/memories/incidents/recall",
            None,
            &json!({"tenant": "acme", "text": "pods"}),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        let globex = server.post(
            "/v1/memories/incidents/recall",
            None,
            &json!({"tenant": "globex", "text": "pods"}),
        );
        if reply.json()["matches"].as_array().unwrap().is_empty()
            && globex.json()["matches"].as_array().unwrap().is_empty()
        {
            break;
        }
        assert!(Instant::now() < deadline, "retention never purged");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(server.stop().success());
    let stats = super::common::stats(dir.path());
    assert!(
        stats["records"]["memory_purge"].as_u64().unwrap() >= 2,
        "{stats}"
    );
}
