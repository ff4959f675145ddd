//! `import memory --dry-run` prints the decisions and writes nothing: the
//! same records and the same view digests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;
use crate::import_support;

use common::{data_file, ok, record_ids, run, view_digests};
use import_support::fixture;

#[test]
fn dry_run_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", conv.to_str().unwrap(), "--quiet"],
    );
    let ids = record_ids(data);
    let digests = view_digests(data);
    let file = fixture("new-memory.json");
    let out = ok(
        data,
        &["import", "memory", file.to_str().unwrap(), "--dry-run"],
    );
    assert!(out.contains("Kayaks Fjordland weekly"), "{out}");
    assert!(out.contains("ADD"), "{out}");
    assert!(out.contains("nothing was written"), "{out}");
    let studio = fixture("jon-studio.json");
    let out = ok(
        data,
        &[
            "import",
            "memory",
            studio.to_str().unwrap(),
            "--dry-run",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["dry_run"], true);
    assert!(report["import_id"].is_null());
    // Similar memories and no model: reported, needing confirmation.
    assert_eq!(report["decisions"][0]["requires_confirmation"], true);
    assert_eq!(report["decisions"][0]["action"], "ignore");
    assert_eq!(record_ids(data), ids);
    assert_eq!(view_digests(data), digests);

    // A bad file is refused with the candidate and field, exit 3.
    let bad = fixture("invalid.json");
    let out = run(data, &["import", "memory", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid.json: candidate 1: `summary` is missing"),
        "{err}"
    );
    // No import time anywhere: refused, asking for --imported-at.
    let no_time = dir.path().join("no-time.json");
    std::fs::write(
        &no_time,
        r#"{"candidates": [{"title": "t", "summary": "s"}]}"#,
    )
    .unwrap();
    let out = run(data, &["import", "memory", no_time.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--imported-at"));
    assert_eq!(record_ids(data), ids);
}
