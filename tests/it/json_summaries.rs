//! The commands that write (`init`, `gen -o`, `ingest`, `import locomo`,
//! `resume`, `replay`, `export parquet`,
//! `forget`/`restore`/`pin`/`unpin`) print one JSON document with
//! `--json`, with the same figures as their text summary, so scripts need
//! not parse prose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{archive, data_file, ok, write_lines};

fn json(data: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = ok(data, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {out}"))
}

#[test]
fn writing_commands_print_their_summary_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let input = dir.path().join("a.jsonl");
    let lines = archive(3, 30);
    write_lines(&input, &lines);
    let input_s = input.to_str().unwrap();

    // Stored without derivation, then derived by `resume`.
    let ingest = json(
        &data,
        &["ingest", input_s, "--no-derive", "--quiet", "--json"],
    );
    assert_eq!(ingest["file"], input_s);
    assert_eq!(ingest["ingest"]["read"], lines.len());
    assert_eq!(ingest["ingest"]["stored"], lines.len());
    assert_eq!(ingest["ingest"]["summaries"], 0);
    assert!(ingest["messages_per_second"].as_f64().unwrap() > 0.0);
    assert!(ingest["rejects"].is_null());
    let again = json(
        &data,
        &["ingest", input_s, "--no-derive", "--quiet", "--json"],
    );
    assert_eq!(again["ingest"]["stored"], 0);
    assert_eq!(again["ingest"]["already_stored"], lines.len());

    let resume = json(&data, &["resume", "--json"]);
    assert_eq!(resume["profile"], "default");
    let summaries = resume["derive"]["summaries"].as_u64().unwrap();
    assert!(summaries > 0, "{resume}");
    assert_eq!(resume["derive"]["failed_runs"], 0);

    // Nothing left to derive: no run, no record, every view unchanged and
    // equal to its rebuild.
    let replay = json(&data, &["replay", "--verify", "--json"]);
    assert_eq!(replay["profile"], "default");
    assert_eq!(replay["operator_runs"], 0);
    assert_eq!(replay["records_written"], 0);
    let views = replay["views"].as_array().unwrap();
    assert!(views.len() >= 5, "{replay}");
    for v in views {
        assert_eq!(v["changed"], false, "{v}");
        assert_eq!(v["rebuild_same"], true, "{v}");
        assert_eq!(v["rebuilt"], v["digest"], "{v}");
    }
}

#[test]
fn import_and_governance_print_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    let import = json(
        data,
        &[
            "import",
            "locomo",
            path.to_str().unwrap(),
            "--quiet",
            "--json",
        ],
    );
    let stored = import["ingest"]["stored"].as_u64().unwrap();
    assert!(stored > 300, "{import}");
    assert!(import["ingest"]["events"].as_u64().unwrap() > 0, "{import}");

    let events: Vec<serde_json::Value> =
        serde_json::from_str(&ok(data, &["events", "--json"])).unwrap();
    let target = events[0]["id"].as_str().unwrap().to_owned();
    let forgot = json(data, &["forget", &target[..12], "--json"]);
    assert_eq!(forgot["action"], "forgot");
    assert_eq!(forgot["event"], target.as_str());
    assert_eq!(forgot["status"], "forgotten");
    assert_eq!(forgot["pinned"], false);
    assert_eq!(forgot["record"].as_str().unwrap().len(), target.len());
    let pinned = json(data, &["pin", &target, "--json"]);
    assert_eq!(pinned["action"], "pinned");
    assert_eq!(pinned["status"], "forgotten");
    assert_eq!(pinned["pinned"], true);
    assert_ne!(pinned["record"], forgot["record"]);
}

/// `init`, `gen -o` and `export parquet` print JSON with `--json`; `gen
/// --json` without `-o` is refused (the archive is the standard output).
#[test]
fn init_gen_and_export_print_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");

    let init = json(&data, &["init", "--block-turns", "4", "--json"]);
    assert_eq!(init["data_dir"], data.to_str().unwrap());
    assert_eq!(init["block_turns"], 4);

    let archive = dir.path().join("gen.jsonl");
    let generated = json(
        &data,
        &[
            "gen",
            "--messages",
            "40",
            "--threads",
            "3",
            "--seed",
            "7",
            "-o",
            archive.to_str().unwrap(),
            "--json",
        ],
    );
    let written = std::fs::read_to_string(&archive).unwrap();
    assert_eq!(generated["messages"], 40);
    assert_eq!(generated["messages"], written.lines().count());
    assert_eq!(generated["bytes"], written.len());
    assert_eq!(generated["threads"], 3);
    assert_eq!(generated["output"], archive.to_str().unwrap());
    let refused = common::run(&data, &["gen", "--messages", "5", "--json"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--output"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    ok(
        &data,
        &[
            "ingest",
            archive.to_str().unwrap(),
            "--no-derive",
            "--quiet",
        ],
    );
    let export = dir.path().join("export");
    let manifest = json(
        &data,
        &["export", "parquet", export.to_str().unwrap(), "--json"],
    );
    assert_eq!(manifest["files"]["messages.parquet"], 40, "{manifest}");
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(export.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest, on_disk, "the printed manifest is the written one");
}
