//! The persisted views of every tenant are caught up with the log in one
//! scan, not one per tenant: each record read goes to the views of its own
//! tenant. The scan reports what it read on the `strataflow::memory::views`
//! info log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::path::Path;

use common::{bin, ok, stats, write_lines};

/// One catch-up scan as logged: tenants, first sequence, records read,
/// whether it was a rebuild.
#[derive(Debug, PartialEq, Eq)]
struct Scan {
    tenants: u64,
    from: u64,
    records: u64,
    rebuild: bool,
}

/// Runs `strataflow --data DIR ARGS…` with the views log on; returns
/// stdout and the scans it logged.
fn run_logged(data: &Path, args: &[&str]) -> (String, Vec<Scan>) {
    let out = bin()
        .env("RUST_LOG", "strataflow::memory::views=info")
        .arg("--data")
        .arg(data)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "strataflow {args:?} failed:\n{stderr}"
    );
    let field = |line: &str, name: &str| -> String {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
            .to_owned()
    };
    let scans = stderr
        .lines()
        .filter(|l| l.contains("views caught up in one scan"))
        .map(|l| Scan {
            tenants: field(l, "tenants").parse().unwrap(),
            from: field(l, "from").parse().unwrap(),
            records: field(l, "records_scanned").parse().unwrap(),
            rebuild: field(l, "rebuild") == "true",
        })
        .collect();
    (String::from_utf8(out.stdout).unwrap(), scans)
}

fn total(data: &Path) -> u64 {
    stats(data)["total_records"].as_u64().unwrap()
}

fn views_json(data: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["views", "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str::<serde_json::Value>(&ok(data, &args))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn one_scan_feeds_the_views_of_every_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let archive = dir.path().join("three-tenants.jsonl");
    ok(
        dir.path(),
        &[
            "gen",
            "--messages",
            "600",
            "--threads",
            "6",
            "--tenants",
            "3",
            "--seed",
            "7",
            "-o",
            archive.to_str().unwrap(),
        ],
    );

    // The views of the three tenants followed the ingest's commits: the
    // refresh at its end, one for the three tenants together, finds them at
    // its last record and reads nothing.
    let (_, scans) = run_logged(&data, &["ingest", archive.to_str().unwrap(), "--quiet"]);
    let first = total(&data);
    assert_eq!(
        scans,
        vec![Scan {
            tenants: 3,
            from: first + 1,
            records: 0,
            rebuild: false
        }]
    );

    // `views`: the search snapshots start from the first record, the other
    // views are current; still one scan of the log, not one per tenant.
    let (_, scans) = run_logged(&data, &["views"]);
    assert_eq!(
        scans,
        vec![Scan {
            tenants: 3,
            from: 1,
            records: first,
            rebuild: false
        }]
    );
    // Up to date: nothing left to read.
    let (_, scans) = run_logged(&data, &["views"]);
    assert_eq!(scans.len(), 1);
    assert_eq!(scans[0].records, 0, "{scans:?}");

    // Each tenant's views are the ones a refresh of that tenant alone
    // reports.
    let all = views_json(&data, &[]);
    assert_eq!(all.len(), 3 * 5);
    for tenant in ["tenant-00", "tenant-01", "tenant-02"] {
        let alone = views_json(&data, &["--tenant", tenant]);
        let mine: Vec<_> = all
            .iter()
            .filter(|r| r["tenant"] == tenant)
            .cloned()
            .collect();
        assert_eq!(alone, mine, "tenant {tenant}");
    }

    // New records of one tenant: its views follow the ingest; those of
    // the other two, not in the run, are left to the refresh, which reads
    // only the new records for them (and they remember that they went past
    // them).
    let more = dir.path().join("more.jsonl");
    let lines: Vec<String> = (0..30)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let mut v: serde_json::Value = serde_json::from_str(&common::line(
                "late-thread",
                &format!("late-{i}"),
                role,
                &format!("Message {i} about the trip to Sintra with Marta."),
                i,
            ))
            .unwrap();
            v["tenant"] = "tenant-01".into();
            v.to_string()
        })
        .collect();
    write_lines(&more, &lines);
    let (_, scans) = run_logged(&data, &["ingest", more.to_str().unwrap(), "--quiet"]);
    let second = total(&data);
    assert!(second > first);
    assert_eq!(
        scans,
        vec![Scan {
            tenants: 3,
            from: first + 1,
            records: second - first,
            rebuild: false
        }]
    );
    let (_, scans) = run_logged(&data, &["views"]);
    assert_eq!(scans.len(), 1);
    assert_eq!(scans[0].records, second - first, "{scans:?}");
    let (_, scans) = run_logged(&data, &["views"]);
    assert_eq!(scans[0].records, 0, "{scans:?}");

    // `--verify`: the refresh, then one rebuild scan of the whole log for
    // every tenant's views; all equal.
    let (out, scans) = run_logged(&data, &["views", "--verify"]);
    assert_eq!(
        scans,
        vec![
            Scan {
                tenants: 3,
                from: second + 1,
                records: 0,
                rebuild: false
            },
            Scan {
                tenants: 3,
                from: 1,
                records: second,
                rebuild: true
            }
        ]
    );
    assert_eq!(out.matches("rebuild: same").count(), 15, "{out}");
    let (_, scans) = run_logged(&data, &["audit"]);
    assert_eq!(scans.iter().filter(|s| s.rebuild).count(), 1, "{scans:?}");
}
