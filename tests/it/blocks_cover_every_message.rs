//! `blocks --json` lists each block's dia_ids; with the open tail they are
//! every message of the conversation exactly once, in order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok};

fn dia_ids_in_file_order(path: &std::path::Path) -> Vec<String> {
    let conv: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let obj = conv.as_object().unwrap();
    let mut sessions: Vec<(u32, &Vec<serde_json::Value>)> = obj
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v.as_array()?)))
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    sessions
        .into_iter()
        .flat_map(|(_, msgs)| {
            msgs.iter()
                .map(|m| m["dia_id"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn blocks_and_open_tail_partition_the_thread_in_order() {
    for (file, thread) in [
        ("locomo/conv-26.json", "conv-26"),
        ("locomo/conv-30.json", "conv-30"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = data_file(file);
        ok(
            dir.path(),
            &["import", "locomo", path.to_str().unwrap(), "--quiet"],
        );
        let listing: serde_json::Value =
            serde_json::from_str(&ok(dir.path(), &["blocks", "--thread", thread, "--json"]))
                .unwrap();
        let mut seen = Vec::new();
        let mut next_turn = 1;
        for (i, block) in listing["blocks"].as_array().unwrap().iter().enumerate() {
            assert_eq!(block["ordinal"], i + 1);
            assert_eq!(block["start_turn"], next_turn);
            assert_eq!(block["end_turn"], next_turn + 11);
            next_turn += 12;
            let ids: Vec<String> = block["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect();
            assert!(!ids.is_empty());
            assert!(block["l3_tokens"].as_u64() <= block["l4_tokens"].as_u64());
            seen.extend(ids);
        }
        seen.extend(
            listing["open_tail"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned()),
        );
        assert_eq!(seen, dia_ids_in_file_order(&path), "{thread}");
    }
}

#[test]
fn unknown_thread_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    common::ok(dir.path(), &["init"]);
    let out = common::run(dir.path(), &["blocks", "--thread", "nope"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim(), "error: no thread `nope` in tenant ``");
}

#[test]
fn a_missing_data_directory_is_not_created_by_a_read() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo");
    let out = common::run(&missing, &["stats"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no data directory at"));
    assert!(!missing.exists());
}
