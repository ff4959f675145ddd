//! Bad input is refused naming file, line and field, and nothing of the batch
//! is stored; with `--skip-invalid` the valid lines are stored and the bad
//! ones are written with their reasons.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{line, ok, run, stats, write_lines};

fn lines_with_bad_middle() -> Vec<String> {
    let mut lines: Vec<String> = (0..10)
        .map(|i| {
            line(
                "t",
                &format!("m{i}"),
                if i % 2 == 0 { "user" } else { "assistant" },
                &format!("message {i}"),
                i,
            )
        })
        .collect();
    lines[5] = r#"{"thread":"t","id":"m5","role":"assistant","content":"half a line"#.to_owned();
    lines
}

#[test]
fn a_malformed_line_refuses_the_file_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Something already stored must stay exactly as it is.
    let before_file = dir.path().join("before.jsonl");
    write_lines(
        &before_file,
        &[line("other", "x1", "user", "already here", 0)],
    );
    ok(&data, &["ingest", before_file.to_str().unwrap(), "--quiet"]);
    let before = stats(&data);

    let file = dir.path().join("in.jsonl");
    write_lines(&file, &lines_with_bad_middle());
    let out = run(&data, &["ingest", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "refusal exits with status 3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refused: 1 invalid input item; nothing was stored"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}:6: malformed JSON", file.display())),
        "{err}"
    );
    let mut after = stats(&data);
    let mut before = before;
    after["bytes_on_disk"] = 0.into();
    before["bytes_on_disk"] = 0.into();
    assert_eq!(before, after);
}

#[test]
fn a_bad_field_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.jsonl");
    let mut lines = lines_with_bad_middle();
    lines[5] = line("t", "m5", "assistant", "x", 5).replace("2024-05-01T00:05:00Z", "May 1st");
    lines[7] = line("t", "m7", "assistant", "x", 7).replace("\"role\":\"assistant\",", "");
    write_lines(&file, &lines);
    let out = run(
        &dir.path().join("data"),
        &["ingest", file.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":6: field `ts`: `May 1st` is not an RFC 3339 time"),
        "{err}"
    );
    assert!(err.contains(":8: field `role`: missing"), "{err}");
    assert!(err.contains("2 invalid input items"), "{err}");
}

#[test]
fn skip_invalid_stores_the_rest_and_quarantines_the_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("in.jsonl");
    let rejects = dir.path().join("rejects.jsonl");
    write_lines(&file, &lines_with_bad_middle());
    let out = ok(
        &data,
        &[
            "ingest",
            file.to_str().unwrap(),
            "--skip-invalid",
            rejects.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(out.contains("stored 9 new messages"), "{out}");
    assert!(out.contains("rejected 1 items"), "{out}");
    assert_eq!(stats(&data)["messages"], 9);
    let text = std::fs::read_to_string(&rejects).unwrap();
    let rejected: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["line"], 6);
    assert!(
        rejected[0]["problem"]
            .as_str()
            .unwrap()
            .starts_with("malformed JSON")
    );
    assert_eq!(rejected[0]["input"], lines_with_bad_middle()[5]);
}

#[test]
fn a_changed_message_with_a_stored_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("in.jsonl");
    write_lines(&file, &[line("t", "m0", "user", "original", 0)]);
    ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    write_lines(
        &file,
        &[
            line("t", "m0", "user", "edited", 0),
            line("t", "m1", "assistant", "new", 1),
        ],
    );
    let out = run(&data, &["ingest", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":1: field `id`: `m0` is already stored in thread `t` with different content"),
        "{err}"
    );
    assert_eq!(stats(&data)["messages"], 1);
}

#[test]
fn a_message_repeated_in_the_input_is_stored_once_under_both_policies() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.jsonl");
    // `m0` three times with the same content, among other messages.
    write_lines(
        &file,
        &[
            line("t", "m0", "user", "hello", 0),
            line("t", "m1", "assistant", "hi", 1),
            line("t", "m0", "user", "hello", 0),
            line("u", "m0", "user", "another thread", 2),
            line("t", "m0", "user", "hello", 0),
            line("t", "m2", "user", "bye", 3),
        ],
    );
    let rejects = dir.path().join("rejects.jsonl");
    for policy in [&[][..], &["--skip-invalid", rejects.to_str().unwrap()][..]] {
        let data = dir.path().join(format!("data-{}", policy.len()));
        let mut args = vec!["ingest", file.to_str().unwrap(), "--no-derive"];
        args.extend(policy);
        let out = ok(&data, &args);
        assert!(
            out.contains("stored 4 new messages (2 already stored)"),
            "{policy:?}: {out}"
        );
        assert_eq!(stats(&data)["messages"], 4, "{policy:?}");
    }
}

#[test]
fn a_missing_file_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["ingest", "/nonexistent/file.jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot read /nonexistent/file.jsonl:"),
        "{err}"
    );
}
