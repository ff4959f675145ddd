//! Queries stay in their scope: search filters restrict (never only
//! re-rank), and every command that takes a record id resolves it within
//! one tenant (another tenant's record is "not found").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::path::Path;

use common::{ok, repo_file, run, stats};
use serde_json::Value;

/// The shipped sample twice: tenant `a`, and tenant `b` with the same
/// threads and message ids (Lisbon → Porto).
fn two_tenants(dir: &Path) -> std::path::PathBuf {
    let data = dir.join("data");
    let sample = std::fs::read_to_string(repo_file("examples/data/sample.jsonl")).unwrap();
    let mut lines = Vec::new();
    for tenant in ["a", "b"] {
        for l in sample.lines().filter(|l| !l.trim().is_empty()) {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["tenant"] = Value::from(tenant);
            if tenant == "b" {
                let c = v["content"].as_str().unwrap().replace("Lisbon", "Porto");
                v["content"] = Value::from(c);
            }
            lines.push(v.to_string());
        }
    }
    let file = dir.join("two.jsonl");
    common::write_lines(&file, &lines);
    ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    data
}

fn json(data: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(data, args)).unwrap()
}

fn hits(v: &Value) -> Vec<Value> {
    v["hits"].as_array().unwrap().clone()
}

mod filters {
    use super::*;

    fn search(data: &Path, channel: &str, q: &str, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["search", channel, q, "--tenant", "a", "--json"];
        args.extend_from_slice(extra);
        hits(&json(data, &args))
    }

    /// Filters that match nothing give no hits in every channel, where
    /// unfiltered the same query has hits.
    #[test]
    fn filters_matching_nothing_return_no_hits() {
        let dir = tempfile::tempdir().unwrap();
        let data = two_tenants(dir.path());
        for channel in ["events", "all"] {
            for q in ["trip", "migration"] {
                assert!(!search(&data, channel, q, &[]).is_empty(), "{channel} {q}");
                for filter in [
                    &["--from", "2030-01-01"][..],
                    &["--to", "2000-01-01"],
                    &["--participant", "Nobody"],
                    &["--participant", "Ana", "--participant", "Nobody"],
                    &["--type", "bogus"],
                ] {
                    let got = search(&data, channel, q, filter);
                    assert!(got.is_empty(), "{channel} {q} {filter:?}: {got:?}");
                }
            }
        }
        // Raw and graph: a time window with no message said in it, a type
        // (no message has one), a participant nobody is.
        assert!(!search(&data, "raw", "Lisbon", &[]).is_empty());
        for filter in [
            &["--from", "2030-01-01"][..],
            &["--type", "plan"],
            &["--participant", "Nobody"],
        ] {
            assert!(
                search(&data, "raw", "Lisbon", filter).is_empty(),
                "{filter:?}"
            );
        }
        assert!(!search(&data, "graph", "Marta", &[]).is_empty());
        assert!(search(&data, "graph", "Marta", &["--from", "2030-01-01"]).is_empty());
    }

    /// Every event returned passes the filters, in `events` and in `all`,
    /// and raw messages in `all` are said inside the window.
    #[test]
    fn every_hit_passes_the_filters() {
        let dir = tempfile::tempdir().unwrap();
        let data = two_tenants(dir.path());
        let (from, to) = ("2025-01-14", "2025-01-20");
        for channel in ["events", "all"] {
            let got = search(&data, channel, "migration", &["--from", from, "--to", to]);
            assert!(!got.is_empty(), "{channel}");
            for h in &got {
                match h["kind"].as_str().unwrap() {
                    "event" => {
                        let start = h["happened_start"]
                            .as_str()
                            .or(h["happened_end"].as_str())
                            .unwrap();
                        let end = h["happened_end"].as_str().unwrap_or(start);
                        assert!(&start[..10] <= to && &end[..10] >= from, "{h}");
                    }
                    "message" => {
                        let said = h["text"].as_str().unwrap().rsplit("[said ").next().unwrap();
                        assert!(&said[..10] >= from && &said[..10] <= to, "{h}");
                    }
                    _ => {}
                }
            }
            let got = search(&data, channel, "trip", &["--participant", "Marta"]);
            assert!(!got.is_empty(), "{channel}");
            for h in got.iter().filter(|h| h["kind"] == "event") {
                let p = h["participants"].as_array().unwrap();
                assert!(
                    p.iter().any(|x| x.as_str().unwrap().contains("Marta")),
                    "{h}"
                );
            }
        }
    }

    /// `--from` after `--to` and bad dates are usage errors in every
    /// channel (raw included).
    #[test]
    fn bad_windows_are_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let data = two_tenants(dir.path());
        for channel in ["events", "graph", "raw", "all"] {
            let out = run(
                &data,
                &[
                    "search",
                    channel,
                    "trip",
                    "--from",
                    "2025-01-01",
                    "--to",
                    "2020-01-01",
                ],
            );
            assert_eq!(out.status.code(), Some(2), "{channel}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("--from `2025-01-01` is after --to `2020-01-01`"),
                "{err}"
            );
            let out = run(&data, &["search", channel, "trip", "--from", "soon"]);
            assert_eq!(out.status.code(), Some(2), "{channel}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("--from `soon`"));
        }
    }

    /// A `--queries` line's `tenant` is the tenant searched; a bad one is
    /// refused with FILE:LINE.
    #[test]
    fn queries_line_tenant_is_searched() {
        let dir = tempfile::tempdir().unwrap();
        let data = two_tenants(dir.path());
        let file = dir.path().join("q.jsonl");
        std::fs::write(
            &file,
            "{\"query\": \"Lisbon\"}\n{\"query\": \"Lisbon\", \"tenant\": \"a\"}\n",
        )
        .unwrap();
        let out = ok(
            &data,
            &[
                "search",
                "raw",
                "--queries",
                file.to_str().unwrap(),
                "--tenant",
                "b",
            ],
        );
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(hits(&lines[0]).is_empty());
        assert!(!hits(&lines[1]).is_empty());
        let batch = lines[1]["batch"].as_str().unwrap();
        let shown = json(&data, &["show", batch, "--tenant", "a"]);
        assert_eq!(shown["record"]["tenant"], "a", "{shown}");
        std::fs::write(
            &file,
            "{\"query\": \"x\"}\n{\"query\": \"x\", \"tenant\": 7}\n",
        )
        .unwrap();
        let out = run(
            &data,
            &["search", "raw", "--queries", file.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(3));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("q.jsonl:2: field `tenant`"), "{err}");
        std::fs::write(&file, "{\"query\": \"x\", \"from\": \"2025\"}\n").unwrap();
        let out = run(
            &data,
            &["search", "raw", "--queries", file.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(3));
        assert!(String::from_utf8_lossy(&out.stderr).contains("q.jsonl:1: --from `2025`"));
    }
}

mod tenant_ids {
    use super::*;

    fn not_found(data: &Path, args: &[&str]) {
        let out = run(data, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no record with id"), "{args:?}: {err}");
    }

    /// Every id-taking command, given tenant a's id (full or 4-digit
    /// prefix) under `--tenant b`, says "not found" and changes nothing.
    #[test]
    fn another_tenants_id_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let data = two_tenants(dir.path());
        let a = json(
            &data,
            &["search", "all", "Lisbon trip", "--tenant", "a", "--json"],
        );
        let event = hits(&a).into_iter().find(|h| h["kind"] == "event").unwrap()["ref"]
            .as_str()
            .unwrap()
            .trim_start_matches("event:")
            .to_owned();
        let block = json(&data, &["context", "--tenant", "a", "--json"])[0]["block"]
            .as_str()
            .unwrap()
            .to_owned();
        let graph = json(
            &data,
            &["search", "graph", "Marta", "--tenant", "a", "--json"],
        );
        let node = hits(&graph)[0]["ref"]
            .as_str()
            .unwrap()
            .trim_start_matches("node:")
            .to_owned();
        let batch = a["batch"].as_str().unwrap().to_owned();
        // Tenant a sees them.
        ok(&data, &["show", &event, "--tenant", "a"]);
        ok(&data, &["show", &event[..4], "--tenant", "a"]);

        let records = |data: &Path| {
            let s = stats(data);
            (s["records"].clone(), s["last_seq"].clone())
        };
        let before = records(&data);
        let views_before = ok(&data, &["views", "--tenant", "a"]);
        let events_before = ok(&data, &["events", "--tenant", "a", "--json"]);
        for id in [&event[..], &event[..4], &block, &node, &batch] {
            not_found(&data, &["show", id, "--tenant", "b"]);
            // The default tenant has none of them either.
            not_found(&data, &["show", id]);
        }
        for id in [&event[..], &event[..4]] {
            not_found(&data, &["expand", "event", id, "--tenant", "b"]);
            for cmd in ["forget", "restore", "pin", "unpin"] {
                not_found(&data, &[cmd, id, "--tenant", "b"]);
            }
        }
        not_found(&data, &["expand", "block", &block, "--tenant", "b"]);
        not_found(&data, &["expand", "node", &node, "--tenant", "b"]);
        let top = hits(&a)[0]["ref"].as_str().unwrap().to_owned();
        not_found(
            &data,
            &[
                "assess",
                "--batch",
                &batch,
                "--tenant",
                "b",
                "--verdict",
                "sufficient",
                "--evidence",
                &top,
                "--next",
                "answer",
            ],
        );
        not_found(&data, &["use", "--batch", &batch, "--tenant", "b", &top]);
        // Nothing changed: no record appended, same views and events.
        assert_eq!(records(&data), before);
        assert_eq!(ok(&data, &["views", "--tenant", "a"]), views_before);
        assert_eq!(
            ok(&data, &["events", "--tenant", "a", "--json"]),
            events_before
        );

        // Under its own tenant every command works.
        ok(&data, &["expand", "event", &event, "--tenant", "a"]);
        ok(&data, &["expand", "block", &block, "--tenant", "a"]);
        ok(&data, &["expand", "node", &node, "--tenant", "a"]);
        let out = ok(&data, &["forget", &event, "--tenant", "a"]);
        assert!(out.contains("now forgotten"), "{out}");
        ok(&data, &["restore", &event, "--tenant", "a"]);
        ok(
            &data,
            &[
                "assess",
                "--batch",
                &batch,
                "--tenant",
                "a",
                "--verdict",
                "sufficient",
                "--evidence",
                &top,
                "--next",
                "answer",
            ],
        );
        ok(&data, &["use", "--batch", &batch, "--tenant", "a", &top]);
    }

    /// A prefix is matched within the tenant: one that two tenants' records
    /// share resolves to the tenant's own record (never "ambiguous" across
    /// tenants), one only the other tenant has is not found, and one two of
    /// the tenant's records share is ambiguous listing only its own.
    #[test]
    fn prefix_ambiguity_is_judged_within_the_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let file = dir.path().join("gen.jsonl");
        ok(
            &data,
            &[
                "gen",
                "--messages",
                "3000",
                "--threads",
                "20",
                "--tenants",
                "2",
                "-o",
                file.to_str().unwrap(),
            ],
        );
        ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
        // Every record's id and tenant, by 4-digit prefix.
        let mut by_prefix: std::collections::BTreeMap<String, Vec<(String, String)>> =
            std::collections::BTreeMap::new();
        {
            let memory = strataflow::Memory::open(&data).unwrap();
            for item in memory.store().scan(1) {
                let stored = item.unwrap();
                let hex = stored.id.to_hex();
                by_prefix
                    .entry(hex[..4].to_owned())
                    .or_default()
                    .push((hex, stored.record.tenant().to_owned()));
            }
        }
        let count = |v: &[(String, String)], t: &str| v.iter().filter(|x| x.1 == t).count();
        let (x, y) = ("tenant-00", "tenant-01");
        // Shared across tenants, unique within x.
        let (p, v) = by_prefix
            .iter()
            .find(|(_, v)| count(v, x) == 1 && count(v, y) >= 1)
            .expect("a 4-digit prefix shared by both tenants");
        let own = &v.iter().find(|r| r.1 == x).unwrap().0;
        let shown = json(&data, &["show", p, "--tenant", x]);
        assert_eq!(shown["id"].as_str().unwrap(), own);
        // Only the other tenant's.
        let (p, _) = by_prefix
            .iter()
            .find(|(_, v)| count(v, x) == 0 && count(v, y) >= 1)
            .unwrap();
        not_found(&data, &["show", p, "--tenant", x]);
        // Two of x's: ambiguous, naming only x's records.
        if let Some((p, v)) = by_prefix
            .iter()
            .find(|(_, v)| count(v, x) >= 2 && count(v, y) >= 1)
        {
            let out = run(&data, &["show", p, "--tenant", x]);
            assert_eq!(out.status.code(), Some(1));
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(err.contains("ambiguous"), "{err}");
            for (id, tenant) in v {
                assert_eq!(
                    err.contains(&id[..12]),
                    tenant == x,
                    "{id} of {tenant}: {err}"
                );
            }
        }
    }

    /// `show` refuses ids that are not 4 to 64 hex digits with a usage
    /// error that does not echo a huge input.
    #[test]
    fn malformed_ids_are_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let data = two_tenants(dir.path());
        let long = "a".repeat(5000);
        let cases = [
            (long.as_str(), "longer than 64 digits"),
            ("zzzz", "not hex digits"),
            ("abc", "shorter than 4 digits"),
        ];
        for (id, problem) in cases {
            for args in [
                vec!["show", id],
                vec!["expand", "event", id],
                vec!["forget", id],
                vec!["use", "--batch", id],
            ] {
                let out = run(&data, &args);
                assert_eq!(out.status.code(), Some(2), "{problem}: {:?}", &args[..1]);
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains(problem), "{err}");
                assert!(err.len() < 300, "{} bytes", err.len());
            }
        }
        // 65 hex digits: one more than an id has.
        let out = run(&data, &["show", &"0".repeat(65)]);
        assert_eq!(out.status.code(), Some(2));
    }
}
