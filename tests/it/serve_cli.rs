//! `--server URL`: read commands and the agent protocol run against a
//! server that holds the data directory, instead of failing "in use".

use super::common::{bin, data_file, ok};
use super::serve_support::{Server, add_key};

fn remote(server: &Server, key: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = bin();
    cmd.arg("--server").arg(server.url());
    if let Some(key) = key {
        cmd.env("STRATAFLOW_API_KEY", key);
    }
    cmd.args(args).output().unwrap()
}

#[test]
fn read_commands_reach_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    ok(
        dir.path(),
        &[
            "import",
            "locomo",
            data_file("locomo/conv-26.json").to_str().unwrap(),
        ],
    );
    let offline: serde_json::Value = serde_json::from_str(&ok(
        dir.path(),
        &[
            "search",
            "events",
            "adoption agency",
            "--limit",
            "3",
            "--json",
        ],
    ))
    .unwrap();
    let key = add_key(dir.path(), &["--tenant", ""]);
    let server = Server::start(dir.path(), &[]);

    // Opening the directory is refused, and says what to do instead.
    let direct = super::common::run(dir.path(), &["stats"]);
    assert_eq!(direct.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&direct.stderr).contains("--server URL"));

    // The same search through the server finds the same hits.
    let out = remote(
        &server,
        Some(&key),
        &["search", "events", "adoption agency", "--limit", "3"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let online: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(online["hits"], offline["hits"]);

    // The protocol: assess that batch, use its first ref.
    let batch = online["batch"].as_str().unwrap();
    let first = online["hits"][0]["ref"].as_str().unwrap();
    let assess = remote(
        &server,
        Some(&key),
        &[
            "assess",
            "--batch",
            batch,
            "--verdict",
            "sufficient",
            "--evidence",
            first,
            "--next",
            "answer",
        ],
    );
    assert!(
        assess.status.success(),
        "{}",
        String::from_utf8_lossy(&assess.stderr)
    );
    let used = remote(&server, Some(&key), &["use", "--batch", batch, first]);
    assert!(
        used.status.success(),
        "{}",
        String::from_utf8_lossy(&used.stderr)
    );

    // A bad argument is a usage error (2) with the server's message; no
    // key is refused; a command that needs the directory is refused.
    let bad = remote(
        &server,
        Some(&key),
        &["expand", "block", "zz", "--level", "L9"],
    );
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`level`"));
    let anonymous = remote(&server, None, &["stats"]);
    assert_eq!(anonymous.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&anonymous.stderr).contains("401"));
    let ingest = remote(&server, Some(&key), &["ingest", "x.jsonl"]);
    assert_eq!(ingest.status.code(), Some(2));

    assert!(server.stop().success());
    let stats = super::common::stats(dir.path());
    assert_eq!(stats["records"]["use_receipt"], 1, "{stats}");
}
