//! The Parquet export of conv-26 + conv-30 is read by pyarrow and DuckDB:
//! row counts equal `stats`, timestamps are timestamps, events join to
//! their source messages, and the view tables (event status, weights,
//! block levels, graph) join to the records in SQL
//! (`tests/python/check_export.py`); the manifest's view digests are those
//! `views` prints. CI
//! installs pyarrow and duckdb; elsewhere the Python half is skipped with a
//! note when they are missing, and the Rust half still checks the manifest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::process::Command;

use common::{data_file, ok, repo_file, stats};

#[test]
fn export_is_read_by_pyarrow_and_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for conv in ["locomo/conv-26.json", "locomo/conv-30.json"] {
        let f = data_file(conv);
        ok(&data, &["import", "locomo", f.to_str().unwrap(), "--quiet"]);
    }
    let export = dir.path().join("export");
    let out = ok(&data, &["export", "parquet", export.to_str().unwrap()]);
    assert!(out.contains("messages.parquet"), "{out}");
    let s = stats(&data);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["files"]["messages.parquet"], s["messages"]);
    assert_eq!(manifest["files"]["events.parquet"], s["records"]["event"]);
    assert_eq!(manifest["through_seq"], s["last_seq"]);
    // The view tables of the default profile, with the digests `views` prints.
    assert_eq!(manifest["profile"], "default");
    assert_eq!(
        manifest["views"]["view_event_status.parquet"],
        s["records"]["event"]
    );
    assert!(out.contains("view_graph_facts.parquet"), "{out}");
    let reports: serde_json::Value =
        serde_json::from_str(&ok(&data, &["views", "--json"])).unwrap();
    let reports = reports.as_array().unwrap();
    assert!(!reports.is_empty());
    for r in reports {
        let (view, tenant) = (r["view"].as_str().unwrap(), r["tenant"].as_str().unwrap());
        assert_eq!(
            manifest["view_digests"][tenant][view], r["digest"],
            "digest of {view}"
        );
    }
    // An unknown profile is refused by name.
    let bad = common::run(
        &data,
        &[
            "export",
            "parquet",
            export.to_str().unwrap(),
            "--profile",
            "nope",
        ],
    );
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no profile `nope`"));

    let stats_file = dir.path().join("stats.json");
    std::fs::write(&stats_file, s.to_string()).unwrap();
    let have_python = Command::new("python3")
        .args(["-c", "import pyarrow, duckdb"])
        .status()
        .is_ok_and(|st| st.success());
    if !have_python {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install pyarrow and duckdb (see .ci/run)"
        );
        eprintln!("note: pyarrow/duckdb not installed, Python checks skipped");
        return;
    }
    let out = Command::new("python3")
        .arg(repo_file("tests/python/check_export.py"))
        .arg(&export)
        .arg(&stats_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("export OK"));
}
