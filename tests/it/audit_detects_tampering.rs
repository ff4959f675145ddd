//! `audit` passes on a fresh import and fails, naming the record, when a
//! stored value is altered underneath the log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, run};

#[test]
fn audit_passes_then_names_the_altered_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv26 = data_file("locomo/conv-26.json");
    ok(
        data,
        &["import", "locomo", conv26.to_str().unwrap(), "--quiet"],
    );
    let report = ok(data, &["audit"]);
    assert!(report.starts_with("audit OK: "), "{report}");

    // Alter one byte of the message D3:2 through the store, bypassing append.
    let target = {
        let store = strataflow::log::Store::open(data).unwrap();
        let id = store
            .message_by_external_id("", "conv-26", "D3:2")
            .unwrap()
            .unwrap();
        let seq = store.seq_of(&id).unwrap().unwrap();
        let mut bytes = store.raw_value(seq).unwrap().unwrap();
        let at = bytes.len() / 2;
        bytes[at] = bytes[at].wrapping_add(1);
        store.overwrite_value_for_test(seq, &bytes).unwrap();
        id
    };
    let out = run(data, &["audit"]);
    assert_eq!(out.status.code(), Some(4));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("record {}", target.to_hex())),
        "{stdout}"
    );
    assert!(stdout.contains("the value was altered"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&run(data, &["audit", "--json"]).stdout).unwrap();
    assert_eq!(json["problems"].as_array().unwrap().len(), 1);
    assert_eq!(json["problems"][0]["recorded"], target.to_hex());
}
