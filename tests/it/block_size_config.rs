//! The block size is a setting of the data directory, fixed once it holds
//! messages (it decides block ids).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, run, stats};

#[test]
fn a_directory_initialised_with_6_turns_seals_6_turn_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let out = ok(data, &["init", "--block-turns", "6"]);
    assert!(out.contains("blocks of 6 turns"), "{out}");
    let conv26 = data_file("locomo/conv-26.json");
    ok(
        data,
        &["import", "locomo", conv26.to_str().unwrap(), "--quiet"],
    );
    let s = stats(data);
    // 211 user messages: a block closes when its 6th turn is followed by a 7th.
    assert_eq!(s["blocks"], 35);
    assert_eq!(s["block_turns"], 6);

    let out = run(data, &["init", "--block-turns", "12"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("seals blocks of 6 turns and already holds messages"),
        "{err}"
    );
    assert!(ok(data, &["init"]).contains("blocks of 6 turns"));
}

#[test]
fn zero_turns_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["init", "--block-turns", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1"));
}
