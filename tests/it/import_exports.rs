//! `import chatgpt`, `import claude` and `import chat-jsonl` on fixture
//! files written from the documented formats (`tests/data/exports/`): the
//! exact messages of every thread, idempotence, ZIP input, refusals naming
//! the conversation's index, id and field, and a SIGKILLed import resumed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::path::Path;

use common::{bin, data_file, ok, record_ids, run, stats};
use strataflow::log::Record;

/// Every message of a thread, in position order, as
/// `ID ROLE[ speaker] TIME | CONTENT[ +TOOL(ARGS)=RESULT…]` (a header's id
/// is checked against its content's hash and shown as `meta`).
fn thread(data: &Path, tenant: &str, thread: &str) -> Vec<String> {
    let store = strataflow::log::Store::open(data).unwrap();
    let mut messages: Vec<_> = store
        .scan(1)
        .filter_map(|r| match r.unwrap().record {
            Record::Message(m) if m.tenant == tenant && m.thread == thread => Some(m),
            _ => None,
        })
        .collect();
    messages.sort_by_key(|m| m.position);
    messages
        .iter()
        .map(|m| {
            let id = if m.external_id.starts_with("meta:") {
                let hash = blake3::hash(m.content.as_bytes()).to_hex();
                assert_eq!(m.external_id, format!("meta:{}", &hash[..12]));
                "meta".to_owned()
            } else {
                m.external_id.clone()
            };
            let speaker = m
                .speaker
                .as_ref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            let calls: String = m
                .tool_calls
                .iter()
                .map(|c| {
                    format!(
                        " +{}({})={}",
                        c.name,
                        c.arguments.as_deref().unwrap_or("-"),
                        c.result.as_deref().unwrap_or("-")
                    )
                })
                .collect();
            format!(
                "{id} {}{speaker} {} | {}{calls}",
                m.role.as_str(),
                m.time.to_rfc3339(),
                m.content
            )
        })
        .collect()
}

fn threads(data: &Path) -> Vec<String> {
    let store = strataflow::log::Store::open(data).unwrap();
    let mut names: Vec<String> = store
        .scan(1)
        .filter_map(|r| match r.unwrap().record {
            Record::Message(m) => Some(format!("{}/{}", m.tenant, m.thread)),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn path(rel: &str) -> String {
    data_file(rel).to_str().unwrap().to_owned()
}

#[test]
fn chatgpt_export_keeps_the_current_branch_tools_images_and_inferred_times() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = path("exports/chatgpt/conversations.json");
    let out = ok(
        &data,
        &["import", "chatgpt", &file, "--quiet", "--tenant", "ana"],
    );
    assert!(
        out.contains("5 conversations (1 empty, 0 rejected), 19 messages read (4 thread headers), 2 times inferred"),
        "{out}"
    );
    assert!(
        out.contains(
            "skipped 3 messages on branches left behind, 1 hidden, 1 empty, 1 of kinds not kept"
        ),
        "{out}"
    );
    // The empty conversation stores nothing.
    assert_eq!(
        threads(&data),
        ["ana/c-edit", "ana/c-image", "ana/c-regen", "ana/c-tools"]
    );
    // An edit: the first question (e4a) and its answer are left behind.
    assert_eq!(
        thread(&data, "ana", "c-edit"),
        [
            r#"meta system 2024-05-01T10:40:00.000Z | {"format":"chatgpt","id":"c-edit","inferred_time":[],"title":"Lisbon weekend"}"#,
            "e2 user 2024-05-01T10:40:01.500Z | Plan a weekend in Lisbon for Ana and me.",
            "e3 assistant 2024-05-01T10:40:09.250Z | Day one: Alfama and the castle. Day two: Belém.",
            "e4b user 2024-05-01T10:42:00.000Z | Could we add Sintra on Sunday?",
            "e5b assistant 2024-05-01T10:42:10.000Z | Yes: take the 9:11 train from Rossio.",
        ]
    );
    // A regeneration: the first answer (r2a) is left behind.
    assert_eq!(
        thread(&data, "ana", "c-regen"),
        [
            r#"meta system 2024-05-01T10:56:40.000Z | {"format":"chatgpt","id":"c-regen","inferred_time":[],"title":"Fado"}"#,
            "r1 user 2024-05-01T10:56:40.000Z | Name a good fado house.",
            "r2b assistant 2024-05-01T10:56:50.000Z | Tasca do Chico in Bairro Alto.",
        ]
    );
    // Code as text with the tool it was sent to; tool and browsing results
    // as tool messages carrying their result; model reasoning (t2) dropped.
    assert_eq!(
        thread(&data, "ana", "c-tools"),
        [
            r#"meta system 2024-05-01T11:13:20.000Z | {"format":"chatgpt","id":"c-tools","inferred_time":[],"title":"Days and weather"}"#,
            "t1 user 2024-05-01T11:13:20.000Z | How many days from May 1 to June 15?",
            "t3 assistant 2024-05-01T11:13:22.000Z | (date(2024,6,15)-date(2024,5,1)).days +python(-)=-",
            r#"t4 tool python 2024-05-01T11:13:23.000Z | 45 +python(-)={"content_type":"execution_output","text":"45"}"#,
            r#"t5 assistant 2024-05-01T11:13:24.000Z | search("Lisbon weather June") +browser(-)=-"#,
            r#"t6 tool browser 2024-05-01T11:13:25.000Z | L0: Lisbon in June: 25 °C, sunny +browser(-)={"assets":[],"content_type":"tether_browsing_display","result":"L0: Lisbon in June: 25 °C, sunny","summary":null}"#,
            "t7 assistant 2024-05-01T11:13:26.000Z | 45 days; expect about 25 °C.",
        ]
    );
    // An image pointer, unicode, and two messages without a time: they take
    // the previous message's, and the header lists them.
    assert_eq!(
        thread(&data, "ana", "c-image"),
        [
            r#"meta system 2024-05-01T11:29:59.000Z | {"format":"chatgpt","id":"c-image","inferred_time":["i2","i3"],"title":"Pastel 🥮 de nata"}"#,
            "i1 user 2024-05-01T11:30:00.000Z | [image: file-service://file-AbC123]\nQué es esto? 这是什么？ 🐟",
            "i2 assistant 2024-05-01T11:30:00.000Z | Um pastel de nata — «delicioso». ✓",
            "i3 user 2024-05-01T11:30:00.000Z | שלום and thanks",
        ]
    );

    // Idempotent: a second import adds nothing.
    let before = record_ids(&data);
    let again = ok(
        &data,
        &["import", "chatgpt", &file, "--quiet", "--tenant", "ana"],
    );
    assert!(
        again.contains("stored 0 new messages (19 already stored)"),
        "{again}"
    );
    assert_eq!(record_ids(&data), before);
    assert!(ok(&data, &["audit"]).starts_with("audit OK"));
}

#[test]
fn a_zip_export_imports_exactly_what_its_conversations_json_does() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, zipped) = (dir.path().join("plain"), dir.path().join("zip"));
    ok(
        &plain,
        &[
            "import",
            "chatgpt",
            &path("exports/chatgpt/conversations.json"),
            "--quiet",
            "--no-derive",
        ],
    );
    let out = ok(
        &zipped,
        &[
            "import",
            "chatgpt",
            &path("exports/chatgpt/export.zip"),
            "--quiet",
            "--no-derive",
            "--json",
        ],
    );
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["format"], "chatgpt");
    assert_eq!(summary["source"]["conversations"], 5);
    assert_eq!(
        summary["source"]["bytes_read"],
        summary["source"]["total_bytes"]
    );
    assert_eq!(summary["ingest"]["stored"], 19);
    assert_eq!(record_ids(&plain), record_ids(&zipped));

    let (plain, zipped) = (
        dir.path().join("claude-plain"),
        dir.path().join("claude-zip"),
    );
    ok(
        &plain,
        &[
            "import",
            "claude",
            &path("exports/claude/conversations.json"),
            "--quiet",
            "--no-derive",
        ],
    );
    ok(
        &zipped,
        &[
            "import",
            "claude",
            &path("exports/claude/export.zip"),
            "--quiet",
            "--no-derive",
        ],
    );
    assert_eq!(record_ids(&plain), record_ids(&zipped));

    // A ZIP without conversations.json is refused, naming what it holds.
    let out = run(
        &dir.path().join("d"),
        &[
            "import",
            "chatgpt",
            &path("exports/chatgpt/no-conversations.zip"),
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the ZIP holds no conversations.json (entries: user.json, chat.html)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let not_zip = dir.path().join("x.zip");
    std::fs::write(&not_zip, b"PK\x03\x04 not really").unwrap();
    let out = run(
        &dir.path().join("e"),
        &["import", "chatgpt", not_zip.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a readable ZIP archive"));
}

#[test]
fn a_conversation_without_current_node_is_refused_with_its_index_and_id_or_quarantined() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = path("exports/chatgpt/missing-current-node.json");
    let out = run(&data, &["import", "chatgpt", &file]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{file}: conversation [1] id c-missing (byte 1848): field `current_node`: missing: the branch to import is unknown"
        )),
        "{err}"
    );
    assert_eq!(stats(&data)["messages"], 0, "nothing stored");

    let rejects = dir.path().join("rejects.jsonl");
    let out = ok(
        &data,
        &[
            "import",
            "chatgpt",
            &file,
            "--quiet",
            "--skip-invalid",
            rejects.to_str().unwrap(),
        ],
    );
    assert!(
        out.contains("2 conversations (0 empty, 1 rejected)"),
        "{out}"
    );
    assert_eq!(threads(&data), ["/c-regen"]);
    let text = std::fs::read_to_string(&rejects).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["field"], "current_node");
    assert_eq!(
        lines[0]["path"],
        "conversation [1] id c-missing (byte 1848)"
    );
    let input: serde_json::Value =
        serde_json::from_str(lines[0]["input"].as_str().unwrap()).unwrap();
    assert_eq!(input["id"], "c-missing", "the whole conversation is kept");
}

#[test]
fn claude_export_keeps_blocks_tool_use_attachments_and_names() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = ok(
        &data,
        &[
            "import",
            "claude",
            &path("exports/claude/conversations.json"),
            "--quiet",
        ],
    );
    assert!(out.contains("2 conversations (1 empty, 0 rejected), 5 messages read (1 thread headers), 1 times inferred"), "{out}");
    assert_eq!(threads(&data), ["/cl-1"]);
    assert_eq!(
        thread(&data, "", "cl-1"),
        [
            r#"meta system 2024-05-02T08:00:00.000Z | {"format":"claude","id":"cl-1","inferred_time":["m3"],"title":"Névoa em Lisboa"}"#,
            "m1 user 2024-05-02T08:00:05.000Z | Is it foggy in Lisbon today?",
            r#"m2 assistant 2024-05-02T08:00:09.000Z | Let me check.

Fog until noon, then sun. +weather({"city":"Lisbon"})=[{"text":"fog until noon","type":"text"}]"#,
            "m3 user 2024-05-02T08:00:09.000Z | Here is my packing list — ✈️\n\n[attachment: packing.txt]\numbrella\nlinen shirt\n[file: map.png]",
            // m4 is empty (no text, no tool call): skipped.
            "m5 assistant 2024-05-02T08:01:30.000Z | Pack the umbrella first.",
        ]
    );
    let again = ok(
        &data,
        &[
            "import",
            "claude",
            &path("exports/claude/conversations.json"),
            "--quiet",
        ],
    );
    assert!(
        again.contains("stored 0 new messages (5 already stored)"),
        "{again}"
    );

    let out = run(
        &dir.path().join("bad"),
        &["import", "claude", &path("exports/claude/bad-sender.json")],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("conversation [1] id cl-bad (byte 2243): field `chat_messages[1].sender`: `system` is neither `human` nor `assistant`"),
        "{err}"
    );
}

#[test]
fn chat_jsonl_lines_are_threads_with_tool_calls_and_times_from_the_line_or_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = path("exports/chat.jsonl");
    // Line 2 gives no time: refused without --start.
    let out = run(&data, &["import", "chat-jsonl", &file]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{file}:2: field `created`: no time")),
        "{err}"
    );
    let out = run(
        &data,
        &["import", "chat-jsonl", &file, "--start", "yesterday"],
    );
    assert_eq!(out.status.code(), Some(2));

    ok(
        &data,
        &[
            "import",
            "chat-jsonl",
            &file,
            "--quiet",
            "--start",
            "2024-05-04T12:00:00Z",
        ],
    );
    let line2 = std::fs::read_to_string(data_file("exports/chat.jsonl")).unwrap();
    let line2 = line2.lines().nth(1).unwrap();
    let hashed = blake3::hash(line2.trim().as_bytes()).to_hex()[..32].to_owned();
    let mut want = vec!["/42".to_owned(), format!("/{hashed}"), "/req-1".to_owned()];
    want.sort();
    assert_eq!(threads(&data), want);
    assert_eq!(
        thread(&data, "", "req-1"),
        [
            "0 system 2024-05-01T21:46:40.000Z | You are terse.",
            "1 user 2024-05-01T21:46:41.000Z | Weather in Lisbon?\n[image: https://example.com/sky.jpg]",
            r#"2 assistant 2024-05-01T21:46:42.000Z |  +weather({"city":"Lisbon"})=-"#,
            "3 tool weather 2024-05-01T21:46:43.000Z | sunny, 24 °C",
            "4 assistant 2024-05-01T21:46:44.000Z | Sunny, 24 °C.",
        ]
    );
    assert_eq!(
        thread(&data, "", &hashed),
        [
            "0 user 2024-05-04T12:00:00.000Z | Translate 'obrigado'",
            "1 assistant 2024-05-04T12:00:01.000Z | Thank you — obrigado/obrigada.",
        ]
    );
    assert_eq!(
        thread(&data, "", "42"),
        [
            "0 system 2024-05-04T12:00:00.000Z | Answer in Portuguese.",
            "1 user 2024-05-03T07:00:00.000+01:00 | Good morning",
            "2 assistant 2024-05-03T07:00:02.000+01:00 | Bom dia!",
        ]
    );
    let again = ok(
        &data,
        &[
            "import",
            "chat-jsonl",
            &file,
            "--quiet",
            "--start",
            "2024-05-04T12:00:00Z",
        ],
    );
    assert!(
        again.contains("stored 0 new messages (10 already stored)"),
        "{again}"
    );
}

/// Starts an import, waits for `commits` progress lines of the storing
/// pass, then SIGKILLs it. Returns false if it finished before that.
fn kill_after(data: &Path, file: &Path, commits: usize) -> bool {
    common::kill_at_line(
        bin().arg("--data").arg(data).args([
            "import",
            "chatgpt",
            file.to_str().unwrap(),
            "--batch-records",
            "300",
            "--no-derive",
        ]),
        ": storing: ",
        commits,
    )
}

#[test]
fn sigkill_mid_chatgpt_import_then_rerun_equals_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("conversations.json");
    let options = strataflow_testkit::synthetic::SyntheticOptions {
        messages: 6000,
        threads: 60,
        seed: 19,
        tenants: 1,
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    let written =
        strataflow_testkit::chatgpt::write_chatgpt_export(&options, 0, &mut w, None).unwrap();
    drop(w);
    assert!(written.bytes > 4_000_000, "a few MB: {}", written.bytes);

    let reference = dir.path().join("reference");
    ok(
        &reference,
        &[
            "import",
            "chatgpt",
            file.to_str().unwrap(),
            "--quiet",
            "--no-derive",
        ],
    );
    let expected = record_ids(&reference);
    let expected_stats = stats(&reference);
    assert_eq!(
        expected_stats["messages"], 6060,
        "6000 messages and 60 headers"
    );

    let crashed = dir.path().join("crashed");
    let mut kills = 0;
    for commits in [1, 3, 2, 5, 4] {
        if kill_after(&crashed, &file, commits) {
            kills += 1;
        }
    }
    assert!(
        kills >= 3,
        "the import was killed mid-file only {kills} times"
    );
    ok(
        &crashed,
        &[
            "import",
            "chatgpt",
            file.to_str().unwrap(),
            "--quiet",
            "--no-derive",
        ],
    );
    assert_eq!(
        record_ids(&crashed),
        expected,
        "same records, none lost or duplicated"
    );
    let mut got = stats(&crashed);
    let mut want = expected_stats;
    got["bytes_on_disk"] = 0.into();
    want["bytes_on_disk"] = 0.into();
    assert_eq!(got, want);
    // A second full import adds nothing.
    let again = ok(
        &crashed,
        &[
            "import",
            "chatgpt",
            file.to_str().unwrap(),
            "--quiet",
            "--no-derive",
        ],
    );
    assert!(
        again.contains("stored 0 new messages (6060 already stored)"),
        "{again}"
    );
    assert_eq!(record_ids(&crashed), expected);
    assert!(ok(&crashed, &["audit"]).starts_with("audit OK"));
}
