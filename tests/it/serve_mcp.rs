//! The MCP tools driven by the official Python MCP SDK as a real client,
//! over streamable HTTP (`serve`, `/mcp`) and over stdio (`strataflow mcp`):
//! list tools; search; assess sufficient with a ref of that batch; use;
//! the weights view changes for exactly that event; a partial assessment
//! followed by expand; a bad argument is an MCP error naming it.

use super::common::{data_file, ok, python_client};
use super::serve_support::{Server, add_key};

/// Runs the agent-protocol client; returns what it saw.
fn agent(args: &[&str]) -> serde_json::Value {
    python_client("agent_protocol.py", args)
}

fn check(seen: &serde_json::Value) {
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for required in [
        "remember", "search", "expand", "context", "assess", "use", "forget", "events", "graph",
        "status",
    ] {
        assert!(
            tools.contains(&required),
            "no `{required}` tool in {tools:?}"
        );
    }
    let error = seen["bad_argument_error"].as_str().unwrap();
    assert!(error.contains("`limit`"), "{error}");
}

#[test]
fn the_python_sdk_follows_the_protocol_over_http_and_stdio() {
    let dir = tempfile::tempdir().unwrap();
    ok(
        dir.path(),
        &[
            "import",
            "locomo",
            data_file("locomo/conv-26.json").to_str().unwrap(),
        ],
    );

    // Over streamable HTTP, with a tenant key (the LoCoMo import is tenant "").
    let key = add_key(dir.path(), &["--tenant", ""]);
    let server = Server::start(dir.path(), &[]);
    let url = format!("{}/mcp", server.url());
    check(&agent(&["http", &url, &key]));
    // Without a key the MCP endpoint is closed like every route.
    let no_key = server.post("/mcp", None, &serde_json::json!({}));
    assert_eq!(no_key.status, 401, "{no_key:?}");
    assert!(server.stop().success(), "serve exits 0 on SIGTERM");

    // Over stdio: `strataflow mcp` holds the directory like any command.
    let bin = env!("CARGO_BIN_EXE_strataflow");
    check(&agent(&["stdio", bin, dir.path().to_str().unwrap()]));

    // Both sessions' batches, assessments and use receipts are in the log.
    let stats = super::common::stats(dir.path());
    assert_eq!(stats["records"]["use_receipt"], 2, "{stats}");
}
