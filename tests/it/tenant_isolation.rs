//! Two tenants hold the same thread and message ids: no search, expand,
//! context or use ever crosses between them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, run};

#[test]
fn tenants_never_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    ok(
        data,
        &[
            "import",
            "locomo",
            path.to_str().unwrap(),
            "--tenant",
            "a",
            "--quiet",
        ],
    );
    // Tenant b: the same thread name and dia_ids, other words.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("Paris", "Lisbon")
        .replace("banker", "baker");
    let other = dir.path().join("conv-30.json");
    std::fs::write(&other, text).unwrap();
    ok(
        data,
        &[
            "import",
            "locomo",
            other.to_str().unwrap(),
            "--tenant",
            "b",
            "--quiet",
        ],
    );

    let search = |tenant: &str, q: &str| -> serde_json::Value {
        serde_json::from_str(&ok(
            data,
            &["search", "all", q, "--tenant", tenant, "--json"],
        ))
        .unwrap()
    };
    let a = search("a", "Paris");
    assert!(!a["hits"].as_array().unwrap().is_empty());
    assert!(
        a["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| !h["text"].as_str().unwrap().contains("Lisbon"))
    );
    let b = search("b", "Paris");
    assert!(
        b["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| !h["text"].as_str().unwrap().contains("Paris"))
    );
    let b = search("b", "Lisbon");
    assert!(!b["hits"].as_array().unwrap().is_empty());
    // A search of a tenant the directory does not hold (here the default
    // one: `--tenant` left out) finds nothing and says which tenants it has.
    let out = run(data, &["search", "all", "Paris", "--json"]);
    assert!(out.status.success());
    let none: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(none["hits"].as_array().unwrap().is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: tenant `` holds no messages")
            && stderr.contains("its tenants are `a`, `b` (pass --tenant NAME)"),
        "{stderr}"
    );
    let out = run(data, &["search", "all", "Paris", "--tenant", "a", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    let a_refs: Vec<&str> = a["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["ref"].as_str().unwrap())
        .collect();
    for h in b["hits"].as_array().unwrap() {
        assert!(!a_refs.contains(&h["ref"].as_str().unwrap()));
    }

    // Context of one tenant shows only its blocks.
    let ctx_a: Vec<serde_json::Value> =
        serde_json::from_str(&ok(data, &["context", "--tenant", "a", "--json"])).unwrap();
    let ctx_b: Vec<serde_json::Value> =
        serde_json::from_str(&ok(data, &["context", "--tenant", "b", "--json"])).unwrap();
    assert_eq!(ctx_a.len(), 15);
    assert_eq!(ctx_b.len(), 15);
    for x in &ctx_a {
        assert!(ctx_b.iter().all(|y| y["block"] != x["block"]));
    }

    // A node of tenant a cannot be expanded as tenant b's.
    let nodes: serde_json::Value = serde_json::from_str(&ok(
        data,
        &["search", "graph", "Jon", "--tenant", "a", "--json"],
    ))
    .unwrap();
    if let Some(node) = nodes["hits"].as_array().unwrap().first() {
        let id = node["ref"].as_str().unwrap().trim_start_matches("node:");
        let out = run(data, &["expand", "node", id, "--tenant", "b"]);
        assert!(!out.status.success());
    }

    // A batch of tenant a, used with a ref of tenant b: refused.
    let batch = a["batch"].as_str().unwrap();
    let b_ref = b["hits"][0]["ref"].as_str().unwrap();
    let out = run(
        data,
        &[
            "assess",
            "--batch",
            batch,
            "--tenant",
            "a",
            "--verdict",
            "sufficient",
            "--evidence",
            b_ref,
            "--next",
            "answer",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("partial"));
    let out = run(data, &["use", "--batch", batch, "--tenant", "a", b_ref]);
    assert!(!out.status.success());
}
