//! Command-line arguments cannot destroy input, panic or exhaust the
//! machine: output paths that are an input file or lie in the data
//! directory are refused before anything is created; every numeric option
//! has a range and every name a byte limit, enforced as usage errors
//! (exit 2) naming the option; `assess --verdict` and `--next` are
//! enumerations; `gen` costs what it writes, not what `--threads` says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{bin, line, ok, run, write_lines};

/// Exit status of a usage error.
const USAGE: i32 = 2;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts a usage error whose one-line message contains every `needle`.
fn assert_usage(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(USAGE), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for needle in needles {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
}

/// A small valid JSONL archive at `path`; returns its bytes.
fn archive(path: &Path) -> Vec<u8> {
    write_lines(
        path,
        &[
            line("t", "m1", "user", "hello there", 0),
            line("t", "m2", "assistant", "hi", 1),
        ],
    );
    std::fs::read(path).unwrap()
}

mod output_paths {
    use super::*;

    #[test]
    fn rejects_file_that_is_the_input_is_refused_and_the_input_kept() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let input = dir.path().join("a.jsonl");
        let bytes = archive(&input);
        let input_s = input.to_str().unwrap();
        let out = run(&data, &["ingest", input_s, "--skip-invalid", input_s]);
        assert_usage(&out, &["--skip-invalid", "is the input file", "a.jsonl"]);
        assert_eq!(std::fs::read(&input).unwrap(), bytes, "input truncated");
        assert!(!data.exists(), "the data directory was created first");
    }

    #[test]
    fn other_spellings_of_the_input_are_the_input() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("a.jsonl");
        let bytes = archive(&input);
        let mut spellings = vec!["./a.jsonl".to_owned(), "sub/../a.jsonl".to_owned()];
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("a.jsonl", dir.path().join("link.jsonl")).unwrap();
            std::fs::hard_link(&input, dir.path().join("hard.jsonl")).unwrap();
            spellings.push("link.jsonl".into());
            spellings.push("hard.jsonl".into());
        }
        for rejects in &spellings {
            let out = bin()
                .current_dir(dir.path())
                .args(["--data", "data", "ingest", "a.jsonl", "--quiet"])
                .args(["--skip-invalid", rejects])
                .output()
                .unwrap();
            assert_usage(&out, &[rejects.as_str(), "a.jsonl"]);
            assert_eq!(std::fs::read(&input).unwrap(), bytes, "{rejects}");
            assert!(!dir.path().join("data").exists(), "{rejects}");
        }
    }

    #[test]
    fn rejects_file_inside_the_data_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let input = dir.path().join("a.jsonl");
        archive(&input);
        let rejects = data.join("rejects.jsonl");
        let out = run(
            &data,
            &[
                "ingest",
                input.to_str().unwrap(),
                "--skip-invalid",
                rejects.to_str().unwrap(),
            ],
        );
        assert_usage(&out, &["lies inside the data directory", "rejects.jsonl"]);
        assert!(!data.exists());
    }

    #[test]
    fn rejects_file_elsewhere_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let input = dir.path().join("a.jsonl");
        archive(&input);
        let rejects = dir.path().join("rejects.jsonl");
        ok(
            &data,
            &[
                "ingest",
                input.to_str().unwrap(),
                "--quiet",
                "--skip-invalid",
                rejects.to_str().unwrap(),
            ],
        );
        assert!(rejects.exists());
    }

    #[test]
    fn locomo_rejects_file_that_is_the_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let input = dir.path().join("conv.json");
        std::fs::copy(common::data_file("locomo/conv-30.json"), &input).unwrap();
        let bytes = std::fs::read(&input).unwrap();
        let input_s = input.to_str().unwrap();
        let out = run(
            &data,
            &["import", "locomo", input_s, "--skip-invalid", input_s],
        );
        assert_usage(&out, &["--skip-invalid", "conv.json"]);
        assert_eq!(std::fs::read(&input).unwrap(), bytes);
        assert!(!data.exists());
    }

    #[test]
    fn gen_output_inside_the_data_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        ok(&data, &["init"]);
        let output = data.join("archive.jsonl");
        let out = run(
            &data,
            &["gen", "--messages", "3", "-o", output.to_str().unwrap()],
        );
        assert_usage(&out, &["-o", "archive.jsonl", "inside the data directory"]);
        assert!(!output.exists());
        // `--data` naming a folder that holds no store does not matter to gen.
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        let output = plain.join("archive.jsonl");
        ok(
            &plain,
            &["gen", "--messages", "3", "-o", output.to_str().unwrap()],
        );
        assert!(output.exists());
    }

    #[test]
    fn export_directory_inside_the_data_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        ok(&data, &["init"]);
        for to in [data.join("export"), data.clone()] {
            let out = run(&data, &["export", "parquet", to.to_str().unwrap()]);
            assert_usage(&out, &["export directory", "inside the data directory"]);
        }
        assert!(!data.join("export").exists());
        assert!(!data.join("manifest.json").exists());
    }
}

mod ranges {
    use super::*;

    /// Every numeric option out of its range is a usage error naming it.
    #[test]
    fn out_of_range_numbers_are_usage_errors_naming_the_option() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let input = dir.path().join("a.jsonl");
        archive(&input);
        let input = input.to_str().unwrap();
        let huge = "18446744073709551615";
        let cases: &[(&[&str], &str)] = &[
            (&["ingest", input, "--workers", huge], "--workers"),
            (&["ingest", input, "--workers", "1000000000"], "--workers"),
            (&["ingest", input, "--workers", "0"], "--workers"),
            (&["ingest", input, "--workers", "257"], "--workers"),
            (
                &["ingest", input, "--batch-records", "0"],
                "--batch-records",
            ),
            (
                &["ingest", input, "--batch-records", "1000001"],
                "--batch-records",
            ),
            (&["import", "locomo", input, "--workers", huge], "--workers"),
            (&["gen", "--messages", "0"], "--messages"),
            (&["gen", "--messages", "10000000001"], "--messages"),
            (&["gen", "--messages", "-1"], "-1"),
            (&["gen", "--messages", "1", "--threads", "0"], "--threads"),
            (
                &["gen", "--messages", "1", "--threads", "10000000"],
                "--threads",
            ),
            (&["gen", "--messages", "1", "--tenants", "0"], "--tenants"),
            (
                &["gen", "--messages", "1", "--tenants", "1000001"],
                "--tenants",
            ),
            (&["search", "all", "x", "--limit", "0"], "--limit"),
            (&["search", "all", "x", "--limit", "1001"], "--limit"),
            (&["search", "all", "x", "--budget", "0"], "--budget"),
            (&["search", "raw", "x", "--budget", huge], "--budget"),
            (
                &["diff", "a", "b", "--queries", input, "--budget", "0"],
                "--budget",
            ),
            (&["eval", "locomo", input, "--budget", "0"], "--budget"),
            (&["init", "--block-turns", "0"], "--block-turns"),
            (&["init", "--block-turns", "1001"], "--block-turns"),
            (
                &["profile", "create", "p", "--concurrency", "0"],
                "--concurrency",
            ),
            (
                &["profile", "create", "p", "--concurrency", "257"],
                "--concurrency",
            ),
            (&["profile", "create", "p", "--timeout", "0"], "--timeout"),
            (
                &["profile", "create", "p", "--timeout", "86401"],
                "--timeout",
            ),
        ];
        for (args, option) in cases {
            let out = run(&data, args);
            assert_usage(&out, &[option]);
        }
        assert!(
            !data.exists(),
            "a refused command created the data directory"
        );
    }

    #[test]
    fn zero_is_refused_as_below_the_range() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), &["search", "all", "x", "--limit", "0"]);
        assert_usage(&out, &["at least 1", "1..=1000"]);
    }

    #[test]
    fn help_documents_the_ranges() {
        for (args, range) in [
            (&["ingest", "--help"][..], "1..=256"),
            (&["ingest", "--help"][..], "1..=1000000"),
            (&["gen", "--help"][..], "1..=1000000"),
            (&["search", "--help"][..], "1..=1000"),
            (&["init", "--help"][..], "1..=1000"),
            (&["profile", "create", "--help"][..], "1..=86400"),
        ] {
            let out = bin().args(args).output().unwrap();
            let help = String::from_utf8_lossy(&out.stdout);
            assert!(help.contains(range), "{args:?}: {help}");
        }
    }

    #[test]
    fn in_range_values_still_work() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let input = dir.path().join("a.jsonl");
        archive(&input);
        ok(
            &data,
            &[
                "ingest",
                input.to_str().unwrap(),
                "--quiet",
                "--workers",
                "256",
                "--batch-records",
                "1",
            ],
        );
        let out = ok(&data, &["search", "raw", "hello", "--limit", "1", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hits"].as_array().unwrap().len(), 1);
    }

    /// One message of a million threads: one line, at once (the generator
    /// builds only the threads that get messages).
    #[test]
    fn gen_one_message_of_a_million_threads_is_quick_and_small() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("one.jsonl");
        let start = std::time::Instant::now();
        let out = bin()
            .args(["gen", "--messages", "1", "--threads", "1000000"])
            .args(["--tenants", "1000000", "--seed", "7", "-o"])
            .arg(&output)
            .output()
            .unwrap();
        let elapsed = start.elapsed();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = std::fs::read_to_string(&output).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(elapsed.as_secs() < 5, "took {elapsed:?}");
    }
}

mod names {
    use super::*;

    #[test]
    fn a_too_long_profile_name_is_a_usage_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let long = "p".repeat(70_000);
        for args in [
            vec!["profile", "create", long.as_str()],
            vec!["profile", "show", long.as_str()],
            vec!["profile", "set-default", long.as_str()],
            vec!["status", "--profile", long.as_str()],
            vec!["diff", long.as_str(), "default"],
        ] {
            let out = run(&data, &args);
            assert_usage(&out, &["70000 bytes", "the limit is 1024 bytes"]);
            assert!(stderr(&out).len() < 200, "the error repeats the name");
        }
        assert!(!data.exists());
    }

    #[test]
    fn too_long_tenant_and_thread_names_are_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let long = "t".repeat(1_025);
        let locomo = common::data_file("locomo/conv-30.json");
        for args in [
            vec![
                "import",
                "locomo",
                locomo.to_str().unwrap(),
                "--tenant",
                &long,
            ],
            vec!["blocks", "--thread", &long],
            vec!["events", "--tenant", &long],
            vec!["search", "raw", "x", "--thread", &long],
        ] {
            let out = run(&data, &args);
            assert_usage(&out, &["1025 bytes", "1024"]);
        }
        assert!(!data.exists());
        // At the limit is a name like any other.
        let at_limit = "t".repeat(1_024);
        ok(&data, &["init"]);
        let out = run(&data, &["blocks", "--thread", &at_limit]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("no thread"), "{}", stderr(&out));
    }

    /// The library checks profile names too, before they become keys.
    #[test]
    fn the_library_refuses_a_too_long_profile_name() {
        let dir = tempfile::tempdir().unwrap();
        let memory = strataflow::Memory::open(dir.path()).unwrap();
        let mut profile = memory.default_profile().unwrap();
        profile.name = "p".repeat(70_000);
        let err = memory.save_profile(&profile).unwrap_err().to_string();
        assert!(err.contains("profile name is 70000 bytes"), "{err}");
        let err = memory.profile(&profile.name).unwrap_err().to_string();
        assert!(err.contains("the limit is 1024 bytes"), "{err}");
    }
}

mod assess {
    use super::*;

    #[test]
    fn an_unknown_verdict_is_a_usage_error_listing_the_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let out = run(
            &data,
            &[
                "assess",
                "--batch",
                "abcd",
                "--verdict",
                "bogus",
                "--next",
                "answer",
            ],
        );
        assert_usage(&out, &["--verdict", "sufficient", "partial", "wrong"]);
    }

    #[test]
    fn an_unknown_next_strategy_is_a_usage_error_listing_the_strategies() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let out = run(
            &data,
            &[
                "assess",
                "--batch",
                "abcd",
                "--verdict",
                "partial",
                "--next",
                "finish",
            ],
        );
        assert_usage(&out, &["--next", "answer", "search_events", "expand_block"]);
    }
}
