//! Damage on disk (issue 13, findings 2, 3 and 10): a flipped byte in the
//! journal, a truncated or deleted journal, a flipped byte in a table and a
//! deleted engine version file each make open fail with exit 4 naming the
//! damage, before anything is written; `recover` then yields a directory
//! that audits clean and holds every record the damage did not touch,
//! counted against the original. Read commands never create a store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{ok, run};
use strataflow::log::{RecordId, Store};

/// The archive of the issue: 20,000 messages, 200 threads, 3 tenants.
fn archive() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("store-damage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.jsonl");
        let out = common::bin()
            .args([
                "gen",
                "--messages",
                "20000",
                "--threads",
                "200",
                "--tenants",
                "3",
            ])
            .args(["--seed", "42", "-o"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        file
    })
}

/// An ingested store of the archive, made once per test binary run (`flushed`:
/// every memtable flushed to tables first, so records live only in tables).
fn original(flushed: bool) -> &'static Path {
    static PLAIN: OnceLock<PathBuf> = OnceLock::new();
    static FLUSHED: OnceLock<PathBuf> = OnceLock::new();
    let cell = if flushed { &FLUSHED } else { &PLAIN };
    cell.get_or_init(|| {
        let dir = archive()
            .parent()
            .unwrap()
            .join(if flushed { "flushed" } else { "plain" });
        let _ = std::fs::remove_dir_all(&dir);
        ok(&dir, &["ingest", archive().to_str().unwrap(), "--quiet"]);
        if flushed {
            let store = Store::open(&dir).unwrap();
            store.flush_for_test().unwrap();
            drop(store);
            // Everything is in tables now: the journals hold nothing the
            // store needs (the clean open below proves it).
            for entry in std::fs::read_dir(&dir).unwrap() {
                let p = entry.unwrap().path();
                if p.extension().is_some_and(|e| e == "jnl") {
                    std::fs::remove_file(p).unwrap();
                }
            }
        }
        // A clean open also records every table as verified.
        ok(&dir, &["stats"]);
        dir
    })
}

/// A fresh copy of an original store.
fn damaged_copy(name: &str, flushed: bool) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    common::copy_dir(original(flushed), &dir);
    (tmp, dir)
}

fn flip(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[usize::try_from(offset).unwrap()] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

/// (seq, id) of every record.
fn records(dir: &Path) -> Vec<(u64, RecordId)> {
    let store = Store::open(dir).unwrap();
    store
        .scan(1)
        .map(|r| r.map(|r| (r.seq, r.id)).unwrap())
        .collect()
}

/// The damage is refused by read and write commands alike with exit 4 and
/// a message holding `expect`; the directory's files are left as they were
/// (but for the journals when `journal_rewritten`: a log found short after
/// the storage engine opened it may have had an incomplete journal tail
/// dropped, or an empty journal created, by the engine's recovery — no
/// record is written and nothing recoverable is lost).
fn assert_refused(dir: &Path, expect: &str, journal_rewritten: bool) {
    let kept = |d: &Path| {
        let mut s = common::files_of(d);
        // The cache of verified tables may be refreshed (copies have new
        // modification times); it is not data.
        s.remove(&d.join("strataflow.tables"));
        if journal_rewritten {
            s.retain(|p, _| p.extension().is_none_or(|e| e != "jnl"));
        }
        s
    };
    let before = kept(dir);
    for args in [
        &["stats"][..],
        &["search", "all", "trip"],
        &["ingest", archive().to_str().unwrap(), "--quiet"],
        &["audit"],
    ] {
        let out = run(dir, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(err.contains("strataflow recover"), "{args:?}: {err}");
    }
    assert!(
        before == kept(dir),
        "a refused command changed the directory"
    );
}

/// `recover` into a new directory: it audits clean, and holds exactly the
/// original's records minus those it reports lost. Returns the report.
fn assert_recovers(dir: &Path, flushed: bool) -> serde_json::Value {
    let to = dir.with_file_name("recovered");
    let before = common::files_of(dir);
    let out = common::bin()
        .arg("recover")
        .arg(dir)
        .arg("--to")
        .arg(&to)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        before == common::files_of(dir),
        "recover wrote into the damaged directory"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    ok(&to, &["audit"]);

    let original = records(original(flushed));
    let recovered: BTreeSet<RecordId> = records(&to).into_iter().map(|(_, id)| id).collect();
    let mut lost_seqs = BTreeSet::new();
    for r in report["lost_ranges"].as_array().unwrap() {
        for s in r["from"].as_u64().unwrap()..=r["to"].as_u64().unwrap() {
            lost_seqs.insert(s);
        }
    }
    let kept: BTreeSet<RecordId> = original
        .iter()
        .filter(|(seq, _)| !lost_seqs.contains(seq))
        .map(|(_, id)| *id)
        .collect();
    assert_eq!(
        recovered, kept,
        "recovered = original minus what is reported lost"
    );
    assert_eq!(
        report["recovered"].as_u64().unwrap() + report["lost"].as_u64().unwrap(),
        original.len() as u64
    );
    report
}

#[test]
fn a_flipped_byte_in_the_journal_is_refused_and_recovered() {
    let (_tmp, dir) = damaged_copy("journal-flip", false);
    flip(&dir.join("0.jnl"), 100);
    assert_refused(&dir, "0.jnl is damaged at byte", false);
    assert_recovers(&dir, false);
}

#[test]
fn a_truncated_journal_is_refused_and_recovered() {
    let (_tmp, dir) = damaged_copy("journal-truncated", false);
    let journal = dir.join("0.jnl");
    let len = std::fs::metadata(&journal).unwrap().len();
    let data = std::fs::read(&journal).unwrap();
    let used = data.iter().rposition(|b| *b != 0).unwrap_or(0) as u64;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&journal)
        .unwrap()
        .set_len(used.min(len) / 2)
        .unwrap();
    assert_refused(&dir, "damaged", true);
    assert_recovers(&dir, false);
}

#[test]
fn a_deleted_journal_is_refused_and_recovered() {
    let (_tmp, dir) = damaged_copy("journal-deleted", false);
    std::fs::remove_file(dir.join("0.jnl")).unwrap();
    assert_refused(&dir, "damaged", true);
    assert_recovers(&dir, false);
}

/// The largest table file of the records keyspace.
fn records_table(dir: &Path) -> PathBuf {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("strataflow.manifest")).unwrap()).unwrap();
    let ks = manifest["keyspaces"]["records"].as_u64().unwrap();
    let tables = dir.join("keyspaces").join(ks.to_string()).join("tables");
    std::fs::read_dir(tables)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

#[test]
fn a_flipped_byte_in_a_table_is_refused_named_by_a_deep_audit_and_recovered() {
    let (_tmp, dir) = damaged_copy("table-flip", true);
    let table = records_table(&dir);
    let len = std::fs::metadata(&table).unwrap().len();
    flip(&table, len / 3);
    let name = table
        .strip_prefix(&dir)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_refused(&dir, &format!("table file {name}"), false);

    let out = run(&dir, &["audit", "--deep"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains(&name), "{err}");
    assert!(
        said.contains("records at sequence"),
        "the deep audit names the records affected: {said}"
    );

    let report = assert_recovers(&dir, true);
    // One damaged block: a few records unreadable; what follows them in
    // their threads, or cites them, cannot be appended and is lost too.
    let ranges = report["lost_ranges"].as_array().unwrap();
    let unreadable: u64 = ranges
        .iter()
        .filter(|r| r["reason"] == "unreadable")
        .map(|r| r["to"].as_u64().unwrap() - r["from"].as_u64().unwrap() + 1)
        .sum();
    assert!((1..200).contains(&unreadable), "unreadable: {unreadable}");
    assert!(
        ranges
            .iter()
            .all(|r| ["unreadable", "parent_lost", "thread_broken"]
                .contains(&r["reason"].as_str().unwrap())),
        "only the block and what depends on it is lost"
    );
    assert!(report["lost"].as_u64().unwrap() < 35264 / 4);
}

#[test]
fn a_missing_engine_version_file_is_refused_as_damage() {
    let (_tmp, dir) = damaged_copy("version-deleted", false);
    std::fs::remove_file(dir.join("version")).unwrap();
    assert_refused(&dir, "`version` file is missing", false);
}

#[test]
fn an_intact_directory_passes_the_open_check_and_a_deep_audit() {
    let (_tmp, dir) = damaged_copy("intact", true);
    ok(&dir, &["stats"]);
    let said = ok(&dir, &["audit", "--deep"]);
    assert!(said.contains("audit OK"), "{said}");
}

#[test]
fn read_commands_never_create_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("not-a-store");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    for args in [
        &["stats"][..],
        &["search", "all", "trip"],
        &["show", "abcd"],
        &["events"],
        &["audit"],
        &["views"],
    ] {
        let out = run(&dir, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("is not a strataflow data directory"),
            "{args:?}: {err}"
        );
    }
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("notes.txt")]);
    // A path that does not exist is not created either.
    let missing = tmp.path().join("missing");
    assert_eq!(run(&missing, &["stats"]).status.code(), Some(1));
    assert!(!missing.exists());
}

#[test]
fn recover_refuses_a_target_that_is_not_new() {
    let tmp = tempfile::tempdir().unwrap();
    let busy = tmp.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("x"), "x").unwrap();
    let out = common::bin()
        .arg("recover")
        .arg(original(false))
        .arg("--to")
        .arg(&busy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));
    let inside = original(false).join("inner");
    let out = common::bin()
        .arg("recover")
        .arg(original(false))
        .arg("--to")
        .arg(&inside)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!inside.exists());
}
