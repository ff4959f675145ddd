//! `resume` does everything it can, then exits 1 when operator runs failed
//! the maximum number of times, so a script never takes the profile as
//! derived; `status` lists the runs with their last error.
#![allow(clippy::unwrap_used)]

use crate::common;
use crate::support;

use support::llm_profile::write_archive;
use support::model_server::{ModelServer, Reply};

#[test]
fn resume_exits_1_when_runs_failed_for_good() {
    // A service that refuses every request (400: not retried by the client).
    let server = ModelServer::start(|_| Reply::Raw(400, r#"{"error":"bad request"}"#.into()));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 1, 30);
    let data = tmp.path().join("data");
    common::ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    common::ok(
        &data,
        &[
            "profile",
            "create",
            "m",
            "--extractor",
            "llm-extractor@1",
            "--model",
            "x",
            "--base-url",
            &server.base_url(),
        ],
    );
    let out = common::run(&data, &["resume", "--profile", "m"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("failed the maximum number of times"),
        "{stderr}"
    );
    let status = common::ok(&data, &["status", "--profile", "m", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let extractor = &status["operators"][1];
    assert_eq!(extractor["operator"], "llm-extractor@1");
    assert_eq!(extractor["failed"], status["blocks"]);
    assert!(
        extractor["failures"][0]["error"]
            .as_str()
            .unwrap()
            .contains("400"),
        "{extractor}"
    );
    // Each block: 3 attempts, one request each.
    assert_eq!(
        server.requests(),
        3 * usize::try_from(status["blocks"].as_u64().unwrap()).unwrap()
    );
    // The default profile is unaffected.
    common::ok(&data, &["resume"]);
}
