//! A second process opening a data directory in use gets a clear error at
//! once, not a hang.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::time::{Duration, Instant};

#[test]
fn a_second_process_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let _held = strataflow::Memory::open(dir.path()).unwrap();
    let started = Instant::now();
    let out = common::run(dir.path(), &["stats"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim(),
        format!(
            "error: data directory {} is in use by another strataflow process (only one process may open it at a time); if that process is `strataflow serve`, run read commands against it with --server URL",
            dir.path().display()
        )
    );
}
