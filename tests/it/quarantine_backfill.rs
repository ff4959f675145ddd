//! Bad lines in the middle of a large backfill: refused whole with file and
//! line by default; with `--skip-invalid` the pipeline quarantines them and
//! stores, seals and derives every valid line around them, whatever the
//! number of workers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{archive, ok, ordered_record_ids, run, stats, write_lines};

#[test]
fn bad_lines_mid_stream_are_refused_or_quarantined() {
    let dir = tempfile::tempdir().unwrap();
    // 8 threads × 300 turns = 4,800 lines, several 512-line chunks.
    let mut lines = archive(8, 300);
    lines[1700] = r#"{"thread":"thread-004","id":"cut","role":"user","content":"half"#.to_owned();
    lines[3901] = lines[3901].replace(r#""role":"assistant""#, r#""role":"robot""#);
    let file = dir.path().join("archive.jsonl");
    write_lines(&file, &lines);

    let refused = dir.path().join("refused");
    let out = run(&refused, &["ingest", file.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused: 2 invalid input items"), "{err}");
    assert!(
        err.contains(&format!("{}:1701: malformed JSON", file.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}:3902: field `role`", file.display())),
        "{err}"
    );

    let mut logs = Vec::new();
    for workers in ["1", "2"] {
        let data = dir.path().join(format!("quarantine-{workers}"));
        let rejects = dir.path().join(format!("rejects-{workers}.jsonl"));
        let out = ok(
            &data,
            &[
                "ingest",
                file.to_str().unwrap(),
                "--skip-invalid",
                rejects.to_str().unwrap(),
                "--workers",
                workers,
                "--quiet",
            ],
        );
        assert!(out.contains("rejected 2 items"), "{out}");
        let s = stats(&data);
        assert_eq!(s["messages"], 4798, "every valid line is stored");
        assert!(s["records"]["event"].as_u64().unwrap() > 0, "and derived");
        let rejected: Vec<serde_json::Value> = std::fs::read_to_string(&rejects)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rejected.len(), 2);
        assert_eq!(rejected[0]["line"], 1701);
        assert_eq!(rejected[1]["line"], 3902);
        assert_eq!(rejected[1]["field"], "role");
        logs.push(ordered_record_ids(&data));
    }
    assert_eq!(logs[0], logs[1]);
}
