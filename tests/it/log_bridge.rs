//! fjall logs through the `log` crate: the binary bridges those records into
//! tracing, so `RUST_LOG` shows them like strataflow's own, and the default
//! filter (warnings only) shows none of fjall's routine records.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{bin, repo_file};

/// Stderr of `ingest examples/data/sample.jsonl` into a new store, with
/// `RUST_LOG` set to `filter` (`None`: unset).
fn ingest_stderr(filter: Option<&str>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let sample = repo_file("examples/data/sample.jsonl");
    let mut cmd = bin();
    cmd.arg("--data")
        .arg(&data)
        .args(["ingest", sample.to_str().unwrap(), "--quiet"])
        .env_remove("RUST_LOG");
    if let Some(filter) = filter {
        cmd.env("RUST_LOG", filter);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "ingest failed:\n{stderr}");
    stderr
}

fn fjall_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("fjall::")).collect()
}

#[test]
fn rust_log_fjall_debug_shows_fjall_records() {
    let stderr = ingest_stderr(Some("fjall=debug"));
    let lines = fjall_lines(&stderr);
    // fjall creates the database (info) and each keyspace (debug).
    assert!(
        lines
            .iter()
            .any(|l| l.contains("INFO") && l.contains("fjall::db")),
        "no fjall info record on stderr:\n{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("DEBUG") && l.contains("Creating keyspace")),
        "no fjall debug record on stderr:\n{stderr}"
    );
    // Only fjall's records: the filter still applies by target.
    assert!(
        stderr
            .lines()
            .all(|l| l.contains("fjall::") || !l.contains("DEBUG")),
        "a debug record of another target:\n{stderr}"
    );
}

#[test]
fn rust_log_fjall_trace_shows_more_than_debug() {
    let debug = fjall_lines(&ingest_stderr(Some("fjall=debug"))).len();
    let trace_stderr = ingest_stderr(Some("fjall=trace"));
    assert!(
        fjall_lines(&trace_stderr)
            .iter()
            .any(|l| l.contains("TRACE")),
        "no fjall trace record on stderr:\n{trace_stderr}"
    );
    assert!(fjall_lines(&trace_stderr).len() > debug);
}

#[test]
fn default_filter_shows_no_fjall_record() {
    let stderr = ingest_stderr(None);
    assert!(fjall_lines(&stderr).is_empty(), "stderr:\n{stderr}");
    let stderr = ingest_stderr(Some("warn"));
    assert!(fjall_lines(&stderr).is_empty(), "stderr:\n{stderr}");
}
