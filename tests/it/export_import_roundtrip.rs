//! Export → import into an empty directory → the same records in the same
//! order and the same view digests, governance, retrievals, assessments and
//! use receipts included. Importing into a directory that holds records, or
//! a partial (`--since`) export, is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, ordered_record_ids, run, view_digests};

#[test]
fn export_then_import_gives_the_same_ids_and_digests() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let f = data_file("locomo/conv-30.json");
    ok(&data, &["import", "locomo", f.to_str().unwrap(), "--quiet"]);
    // Records of every kind the query side writes.
    let search: serde_json::Value =
        serde_json::from_str(&ok(&data, &["search", "events", "banker job", "--json"])).unwrap();
    let batch = search["batch"].as_str().unwrap().to_owned();
    let top = search["hits"][0]["ref"].as_str().unwrap().to_owned();
    ok(
        &data,
        &[
            "assess",
            "--batch",
            &batch,
            "--verdict",
            "sufficient",
            "--evidence",
            &top,
            "--next",
            "answer",
        ],
    );
    ok(&data, &["use", "--batch", &batch, &top]);
    let event = top.trim_start_matches("event:").to_owned();
    ok(&data, &["forget", &event]);

    let export = dir.path().join("export");
    ok(&data, &["export", "parquet", export.to_str().unwrap()]);
    let copy = dir.path().join("copy");
    let out = ok(&copy, &["import", "parquet", export.to_str().unwrap()]);
    assert!(out.starts_with("imported "), "{out}");

    assert_eq!(ordered_record_ids(&copy), ordered_record_ids(&data));
    assert_eq!(view_digests(&copy), view_digests(&data));
    // Import skips the view tables (views are derived): the copy's views,
    // rebuilt from the records, have the digests the manifest recorded.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export.join("manifest.json")).unwrap())
            .unwrap();
    let copied = view_digests(&copy);
    assert!(!copied.is_empty());
    for (view, tenant, _, digest) in copied {
        assert_eq!(
            manifest["view_digests"][&tenant][&view],
            digest.as_str(),
            "{view}"
        );
    }
    assert!(ok(&copy, &["audit"]).starts_with("audit OK"));

    // Not into a directory that holds records.
    let again = run(&copy, &["import", "parquet", export.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("empty data directory"));
    // Not a partial export.
    let partial = dir.path().join("partial");
    ok(
        &data,
        &[
            "export",
            "parquet",
            partial.to_str().unwrap(),
            "--since",
            "10",
        ],
    );
    let out = run(
        &dir.path().join("empty"),
        &["import", "parquet", partial.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("after sequence 10"));
}
