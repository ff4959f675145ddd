//! Issue 13, input readers and what surrounds them: a UTF-8 byte order mark,
//! `null` where a string is required, numbers too large for a float in
//! unknown fields, LoCoMo session keys that do not fit; years outside
//! 0000..=9999; tenant and thread names with a `/`; a model endpoint that
//! refuses connections; `import parquet` killed part-way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;
use crate::support;

use std::path::Path;

use common::{line, ok, run, stats, write_lines};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A one-conversation LoCoMo file whose sessions are `sessions`
/// (key, date) with one message each.
fn locomo(sessions: &[(&str, &str)]) -> String {
    let mut conversation = serde_json::json!({"speaker_a": "Ann", "speaker_b": "Bo"});
    for (i, (key, date)) in sessions.iter().enumerate() {
        conversation[format!("{key}_date_time")] = serde_json::json!(date);
        conversation[*key] = serde_json::json!([
            {"speaker": "Ann", "dia_id": format!("D{i}:1"), "text": format!("We planned the Sintra trip number {i}.")}
        ]);
    }
    conversation.to_string()
}

mod readers {
    use super::*;

    #[test]
    fn a_byte_order_mark_on_line_1_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bom.jsonl");
        let text = format!(
            "\u{feff}{}\n{}\n",
            line("t", "m1", "user", "hello there", 0),
            line("t", "m2", "assistant", "hi", 1)
        );
        std::fs::write(&file, text).unwrap();
        let data = dir.path().join("data");
        ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
        assert_eq!(stats(&data)["messages"], 2);
        // The id of the first message is `m1`, not `\u{feff}…`: the same
        // file without the mark changes nothing.
        let plain = dir.path().join("plain.jsonl");
        std::fs::write(
            &plain,
            std::fs::read_to_string(&file)
                .unwrap()
                .trim_start_matches('\u{feff}'),
        )
        .unwrap();
        let out = ok(&data, &["ingest", plain.to_str().unwrap(), "--quiet"]);
        assert!(
            out.contains("stored 0 new messages (2 already stored)"),
            "{out}"
        );

        // A mark anywhere else is not skipped.
        let later = dir.path().join("later.jsonl");
        std::fs::write(
            &later,
            format!(
                "{}\n\u{feff}{}\n",
                line("t", "m1", "user", "hello there", 0),
                line("t", "m3", "user", "x", 2)
            ),
        )
        .unwrap();
        let out = run(
            &dir.path().join("other"),
            &["ingest", later.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("later.jsonl:2: malformed JSON"),
            "{}",
            stderr(&out)
        );
    }

    #[test]
    fn a_byte_order_mark_before_locomo_json_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("conv.json");
        let text = locomo(&[("session_1", "1:56 pm on 8 May, 2023")]);
        std::fs::write(&file, format!("\u{feff}{text}")).unwrap();
        let data = dir.path().join("data");
        ok(
            &data,
            &["import", "locomo", file.to_str().unwrap(), "--quiet"],
        );
        assert_eq!(stats(&data)["messages"], 1);
    }

    #[test]
    fn null_in_a_required_field_is_reported_as_null_not_missing() {
        let dir = tempfile::tempdir().unwrap();
        for field in ["content", "thread", "role", "ts", "id"] {
            let mut value: serde_json::Value =
                serde_json::from_str(&line("t", "m1", "user", "hi", 0)).unwrap();
            value[field] = serde_json::Value::Null;
            let file = dir.path().join(format!("{field}.jsonl"));
            write_lines(&file, &[value.to_string()]);
            let out = run(&dir.path().join(field), &["ingest", file.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
            let err = stderr(&out);
            assert!(
                err.contains(&format!("{field}.jsonl:1: field `{field}`")),
                "{err}"
            );
            assert!(err.contains("found null"), "{err}");
            assert!(!err.contains("missing"), "{err}");
        }
        // Absent is still "missing"; null in an optional field is absent.
        let file = dir.path().join("absent.jsonl");
        let mut value: serde_json::Value =
            serde_json::from_str(&line("t", "m1", "user", "hi", 0)).unwrap();
        value.as_object_mut().unwrap().remove("content");
        write_lines(&file, &[value.to_string()]);
        let out = run(
            &dir.path().join("absent"),
            &["ingest", file.to_str().unwrap()],
        );
        assert!(
            stderr(&out).contains("field `content`: missing"),
            "{}",
            stderr(&out)
        );
        let file = dir.path().join("optional.jsonl");
        let mut value: serde_json::Value =
            serde_json::from_str(&line("t", "m1", "user", "hi", 0)).unwrap();
        value["speaker"] = serde_json::Value::Null;
        value["tenant"] = serde_json::Value::Null;
        value["tool_calls"] = serde_json::Value::Null;
        write_lines(&file, &[value.to_string()]);
        ok(
            &dir.path().join("optional"),
            &["ingest", file.to_str().unwrap(), "--quiet"],
        );
    }

    #[test]
    fn huge_numbers_in_unknown_fields_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let digits = "9".repeat(400);
        let good = line("t", "m1", "user", "hello there", 0);
        let with = |extra: &str| format!("{},{extra}}}", good.trim_end_matches('}'));
        let lines = vec![
            with(r#""score": 1e400"#),
            with(&format!(r#""big": {digits}, "neg": -{digits}.5e-999"#))
                .replace("\"m1\"", "\"m2\""),
            with(r#""nested": {"deep": [1e400, {"x": -1E+999}]}"#).replace("\"m1\"", "\"m3\""),
        ];
        let file = dir.path().join("huge.jsonl");
        write_lines(&file, &lines);
        let data = dir.path().join("data");
        ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
        assert_eq!(stats(&data)["messages"], 3);

        // In a field of the format it is still refused, with its line.
        let bad = dir.path().join("bad.jsonl");
        write_lines(
            &bad,
            &[
                good.clone(),
                good.replace(r#""m1""#, "1e400").replace("hello", "other"),
            ],
        );
        let out = run(&dir.path().join("bad"), &["ingest", bad.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("bad.jsonl:2: malformed JSON"),
            "{}",
            stderr(&out)
        );
        // Still invalid JSON after the unknown field: refused.
        let broken = dir.path().join("broken.jsonl");
        write_lines(&broken, &[with(r#""x": 1e400, "#)]);
        let out = run(
            &dir.path().join("broken"),
            &["ingest", broken.to_str().unwrap()],
        );
        assert!(
            stderr(&out).contains("broken.jsonl:1: malformed JSON"),
            "{}",
            stderr(&out)
        );
        // Not an object.
        let list = dir.path().join("list.jsonl");
        write_lines(&list, &["[1, 2]".to_owned()]);
        let out = run(
            &dir.path().join("list"),
            &["ingest", list.to_str().unwrap()],
        );
        assert!(
            stderr(&out).contains("list.jsonl:1: expected a JSON object"),
            "{}",
            stderr(&out)
        );
    }

    #[test]
    fn a_duplicate_field_keeps_its_last_value_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("dup.jsonl");
        let good = line("t", "m1", "user", "first", 0);
        write_lines(
            &file,
            &[format!(
                r#"{},"content":"second"}}"#,
                good.trim_end_matches('}')
            )],
        );
        let data = dir.path().join("data");
        ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
        let hits: serde_json::Value =
            serde_json::from_str(&ok(&data, &["search", "raw", "second", "--json"])).unwrap();
        assert_eq!(hits["hits"].as_array().unwrap().len(), 1, "{hits}");
    }

    #[test]
    fn a_locomo_session_number_too_large_is_refused_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("conv.json");
        let key = "session_99999999999999999999";
        std::fs::write(
            &file,
            locomo(&[
                ("session_1", "1:56 pm on 8 May, 2023"),
                (key, "1:56 pm on 9 May, 2023"),
            ]),
        )
        .unwrap();
        let data = dir.path().join("data");
        let out = run(&data, &["import", "locomo", file.to_str().unwrap()]);
        assert!(!out.status.success(), "the session was skipped silently");
        let err = stderr(&out);
        assert!(err.contains(&format!("field `{key}`")), "{err}");
        assert!(err.contains("conv.json"), "{err}");
        // The largest number that fits is a session like any other.
        std::fs::write(
            &file,
            locomo(&[
                ("session_1", "1:56 pm on 8 May, 2023"),
                ("session_4294967295", "1:56 pm on 9 May, 2023"),
            ]),
        )
        .unwrap();
        ok(
            &data,
            &["import", "locomo", file.to_str().unwrap(), "--quiet"],
        );
        assert_eq!(stats(&data)["messages"], 2);
    }
}

mod display {
    use super::*;

    #[test]
    fn negative_years_display_whole_and_parse_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("old.jsonl");
        let mut value: serde_json::Value =
            serde_json::from_str(&line("t", "m1", "user", "the ancient harbour", 0)).unwrap();
        value["ts"] = serde_json::json!("-0002-12-31T10:00:00Z");
        write_lines(&file, &[value.to_string()]);
        let data = dir.path().join("data");
        // The expanded year is accepted on input (the form output uses).
        ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
        let hits: serde_json::Value =
            serde_json::from_str(&ok(&data, &["search", "raw", "harbour", "--json"])).unwrap();
        let text = hits["hits"][0]["text"].as_str().unwrap();
        assert!(text.ends_with("[said -0002-12-31]"), "{text}");

        // The same through LoCoMo, whose dates may carry a sign.
        let conv = dir.path().join("conv.json");
        std::fs::write(
            &conv,
            locomo(&[("session_1", "1:56 pm on 31 December, -2")]),
        )
        .unwrap();
        let data = dir.path().join("locomo");
        ok(
            &data,
            &["import", "locomo", conv.to_str().unwrap(), "--quiet"],
        );
        let hits: serde_json::Value =
            serde_json::from_str(&ok(&data, &["search", "raw", "Sintra", "--json"])).unwrap();
        let text = hits["hits"][0]["text"].as_str().unwrap();
        assert!(text.ends_with("[said -0002-12-31]"), "{text}");
        // What `show` prints parses back as an input time.
        let id = hits["hits"][0]["ref"]
            .as_str()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .to_owned();
        let shown: serde_json::Value = serde_json::from_str(&ok(&data, &["show", &id])).unwrap();
        let ts = shown.to_string();
        assert!(ts.contains("-0002-12-31T13:56:00.000Z"), "{ts}");
        let again = dir.path().join("again.jsonl");
        value["ts"] = serde_json::json!("-0002-12-31T13:56:00.000Z");
        write_lines(&again, &[value.to_string()]);
        ok(
            &dir.path().join("again"),
            &["ingest", again.to_str().unwrap(), "--quiet"],
        );
    }

    #[test]
    fn tenant_and_thread_with_a_slash_display_differently() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("slash.jsonl");
        let with_tenant = |tenant: &str, thread: &str, id: &str| {
            let mut v: serde_json::Value =
                serde_json::from_str(&line(thread, id, "user", "hello", 0)).unwrap();
            v["tenant"] = serde_json::json!(tenant);
            v.to_string()
        };
        write_lines(
            &file,
            &[
                with_tenant("a/b", "c", "m1"),
                with_tenant("a", "b/c", "m2"),
                with_tenant("", "a/b/c", "m3"),
                with_tenant("x", "y", "m4"),
            ],
        );
        let data = dir.path().join("data");
        let out = ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
        let labels: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("threads in"))
            .skip(2)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(labels.len(), 4, "{out}");
        let unique: std::collections::BTreeSet<&str> = labels.iter().copied().collect();
        assert_eq!(unique.len(), 4, "{out}");
        assert!(labels.contains(&r#""a/b"/c"#), "{out}");
        assert!(labels.contains(&r#"a/"b/c""#), "{out}");
        assert!(labels.contains(&r#""a/b/c""#), "{out}");
        // Names without a `/` print as before.
        assert!(labels.contains(&"x/y"), "{out}");
    }
}

mod model_endpoint {
    use super::*;
    use std::time::{Duration, Instant};
    use support::llm_profile::{create_llm_profile_with_cli, write_archive};
    use support::mirror_model;
    use support::model_server::{ModelServer, Reply};

    /// A loopback URL where nothing listens.
    fn closed_base_url() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}/v1")
    }

    fn operator_state(data: &Path) -> Vec<(u64, u64, u64)> {
        let memory = strataflow::Memory::open(data).unwrap();
        let status = memory.status(Some("llm")).unwrap();
        status
            .operators
            .iter()
            .map(|op| (op.done, op.failed, op.retryable))
            .collect()
    }

    #[test]
    fn refused_connections_stop_resume_and_ingest_at_once_naming_the_endpoint() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("archive.jsonl");
        write_archive(&file, 3, 30);
        let data = dir.path().join("data");
        ok(
            &data,
            &["ingest", file.to_str().unwrap(), "--no-derive", "--quiet"],
        );
        let closed = closed_base_url();
        create_llm_profile_with_cli(&data, &closed);

        let started = Instant::now();
        let out = run(&data, &["resume", "--profile", "llm"]);
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("{closed}/chat/completions")), "{err}");
        assert!(err.contains("unreachable"), "{err}");
        assert!(took < Duration::from_secs(20), "took {took:?}");
        // Nothing was recorded: no failed run, nothing retryable.
        for (done, failed, retryable) in operator_state(&data) {
            assert_eq!((done, failed, retryable), (0, 0, 0));
        }

        // Ingest with the profile as default stops the same way.
        ok(&data, &["profile", "set-default", "llm"]);
        let more = dir.path().join("more.jsonl");
        write_archive(&more, 4, 30);
        let started = Instant::now();
        let out = run(&data, &["ingest", more.to_str().unwrap(), "--quiet"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains(&closed), "{}", stderr(&out));
        assert!(started.elapsed() < Duration::from_secs(20));

        // With a working endpoint, the same profile derives every block.
        let server = ModelServer::start(|body| Reply::Tool(mirror_model::answer(body)));
        create_llm_profile_with_cli(&data, &server.base_url());
        ok(&data, &["ingest", more.to_str().unwrap(), "--quiet"]);
        ok(&data, &["resume", "--profile", "llm"]);
        let memory = strataflow::Memory::open(&data).unwrap();
        let status = memory.status(Some("llm")).unwrap();
        assert!(status.blocks >= 8, "{status:?}");
        assert_eq!(status.ready_blocks, status.blocks, "{status:?}");
        for op in &status.operators {
            assert_eq!((op.failed, op.retryable), (0, 0), "{op:?}");
        }
    }
}

mod import_parquet {
    use super::*;
    use common::{bin, data_file, ordered_record_ids, view_digests};

    /// Runs `import parquet` pausing at `point`; SIGKILLs it there.
    fn kill_at(target: &Path, export: &Path, point: &str) {
        let killed = common::kill_when_paused(
            bin()
                .arg("--data")
                .arg(target)
                .args(["import", "parquet", export.to_str().unwrap()])
                .env("STRATAFLOW_PAUSE_AT", point),
        );
        assert!(killed, "the import never reached {point}");
    }

    fn staging(target: &Path) -> std::path::PathBuf {
        target.with_file_name(format!(
            "{}.importing",
            target.file_name().unwrap().to_str().unwrap()
        ))
    }

    #[test]
    fn a_killed_import_leaves_nothing_and_a_rerun_gives_the_same_store() {
        let dir = tempfile::tempdir().unwrap();
        // More records than one import batch (4096).
        let archive = dir.path().join("archive.jsonl");
        ok(
            dir.path(),
            &[
                "gen",
                "--messages",
                "5000",
                "--threads",
                "20",
                "-o",
                archive.to_str().unwrap(),
            ],
        );
        let source = dir.path().join("source");
        ok(&source, &["ingest", archive.to_str().unwrap(), "--quiet"]);
        let export = dir.path().join("export");
        ok(&source, &["export", "parquet", export.to_str().unwrap()]);
        let ids = ordered_record_ids(&source);
        assert!(ids.len() > 4096, "{}", ids.len());
        let digests = view_digests(&source);

        let target = dir.path().join("copy");
        // Before the first batch, after one of two, after the last one.
        for (point, records) in [
            ("import:1", 0),
            ("import:2", 4096),
            ("import-done:1", ids.len()),
        ] {
            kill_at(&target, &export, point);
            assert!(!target.exists(), "{point}: the target exists");
            assert_eq!(
                ordered_record_ids(&staging(&target)).len(),
                records,
                "{point}"
            );
            // What was being loaded is marked: audit reports it.
            let out = run(&staging(&target), &["audit"]);
            assert_eq!(out.status.code(), Some(4), "{point}");
            let report = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
            assert!(report.contains("did not finish"), "{point}: {report}");
        }
        // Complete but not yet in place: the target is still absent.
        kill_at(&target, &export, "import-rename:1");
        assert!(!target.exists());
        // The rerun removes the stale staging directory and starts over.
        let out = ok(&target, &["import", "parquet", export.to_str().unwrap()]);
        assert!(out.starts_with("imported "), "{out}");
        assert!(!staging(&target).exists());
        assert_eq!(ordered_record_ids(&target), ids);
        assert_eq!(view_digests(&target), digests);
        assert!(ok(&target, &["audit"]).starts_with("audit OK"));
        // A full directory is still refused, and left as it is.
        let out = run(&target, &["import", "parquet", export.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains("already holds"), "{}", stderr(&out));
        assert_eq!(ordered_record_ids(&target), ids);
    }

    #[test]
    fn an_import_loads_into_an_empty_directory_or_an_empty_store_only() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let f = data_file("locomo/conv-30.json");
        ok(
            &source,
            &["import", "locomo", f.to_str().unwrap(), "--quiet"],
        );
        let export = dir.path().join("export");
        ok(&source, &["export", "parquet", export.to_str().unwrap()]);
        let ids = ordered_record_ids(&source);

        // An empty directory.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        ok(&empty, &["import", "parquet", export.to_str().unwrap()]);
        assert_eq!(ordered_record_ids(&empty), ids);

        // A data directory made by `init`: replaced, keeping its settings.
        let init = dir.path().join("init");
        ok(&init, &["init"]);
        ok(
            &init,
            &[
                "profile",
                "create",
                "v2",
                "--extractor",
                "heuristic-extractor@2",
            ],
        );
        ok(&init, &["import", "parquet", export.to_str().unwrap()]);
        assert_eq!(ordered_record_ids(&init), ids);
        assert!(ok(&init, &["profile", "list"]).contains("v2"));
        assert!(ok(&init, &["audit"]).starts_with("audit OK"));

        // A directory holding something else is refused and left alone.
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "mine").unwrap();
        let out = run(&other, &["import", "parquet", export.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("not empty and not a data directory"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read_to_string(other.join("notes.txt")).unwrap(),
            "mine"
        );
        assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);
        assert!(!staging(&other).exists());
    }
}
