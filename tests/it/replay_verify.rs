//! `replay` of the default profile on an intact store writes nothing and
//! leaves every view digest as it was; `replay --verify` compares each
//! persisted view with a rebuild and names one that was corrupted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, run};
use strataflow::materializers::view::{EventStatusState, Materialized};

#[test]
fn replay_changes_nothing_and_verify_names_a_corrupted_view() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let f = data_file("locomo/conv-30.json");
    ok(data, &["import", "locomo", f.to_str().unwrap(), "--quiet"]);

    let out = ok(data, &["replay"]);
    assert!(out.contains("0 records written"), "{out}");
    assert!(!out.contains(" changed"), "{out}");
    let out = ok(data, &["replay", "--verify"]);
    assert_eq!(out.matches("rebuild: same").count(), 5, "{out}");

    // A valid-looking but wrong state at the right sequence: only a rebuild
    // can tell.
    {
        let store = strataflow::log::Store::open(data).unwrap();
        let (seq, segments, records) = store
            .view_segments(EventStatusState::NAME, "")
            .unwrap()
            .unwrap();
        let wrong = EventStatusState::default();
        store
            .save_view_segment(
                EventStatusState::NAME,
                "",
                segments - 1,
                seq,
                records,
                &wrong.encode().unwrap(),
            )
            .unwrap();
    }
    let out = run(data, &["replay", "--verify"]);
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 view(s) differ from a rebuild: event_status of tenant ``"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("REBUILD DIFFERS"));
}
