//! Helpers shared by the integration tests: run the `strataflow` binary,
//! read the shipped data, write archives.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The built `strataflow` binary.
pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strataflow"));
    cmd.env_remove("STRATAFLOW_DATA").env("NO_COLOR", "1");
    cmd
}

/// Runs `strataflow --data DIR ARGS…` to completion.
pub fn run(data: &Path, args: &[&str]) -> Output {
    bin().arg("--data").arg(data).args(args).output().unwrap()
}

/// Runs and asserts success; returns stdout.
pub fn ok(data: &Path, args: &[&str]) -> String {
    let out = run(data, args);
    assert!(
        out.status.success(),
        "strataflow {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Pins the profile `default` of the data directory `data` (made by
/// `init`, still without records) to the legacy operators
/// (`Profile::legacy_default`, the `@1`s), for a test that compares other
/// versions with them: a new directory otherwise records the newest ones.
pub fn pin_legacy_default(data: &Path) {
    use strataflow::operators::profile::{LEGACY_EXTRACTOR, LEGACY_PROJECTOR, LEGACY_SUMMARIZER};
    ok(
        data,
        &[
            "profile",
            "create",
            "default",
            "--summarizer",
            LEGACY_SUMMARIZER,
            "--extractor",
            LEGACY_EXTRACTOR,
            "--projector",
            LEGACY_PROJECTOR,
        ],
    );
}

/// `stats --json` as a JSON value.
pub fn stats(data: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(data, &["stats", "--json"])).unwrap()
}

/// A file under `tests/data/`.
pub fn data_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// A file in the repository.
pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs a Python client script of `tests/it/mcp/` with `args` and returns
/// the JSON of its last output line (the MCP tests need python3 with
/// `pip install mcp`).
pub fn python_client(script: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(repo_file(&format!("tests/it/mcp/{script}")))
        .args(args)
        .output()
        .expect("python3 runs (the MCP tests need python3 with `pip install mcp`)");
    assert!(
        out.status.success(),
        "the MCP client {script} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("the client prints UTF-8");
    serde_json::from_str(stdout.lines().last().expect("the client prints a line"))
        .expect("the client's last line is JSON")
}

/// One JSONL message line.
pub fn line(thread: &str, id: &str, role: &str, content: &str, minute: u32) -> String {
    serde_json::json!({
        "thread": thread,
        "id": id,
        "role": role,
        "content": content,
        "ts": format!("2024-05-01T{:02}:{:02}:00Z", (minute / 60) % 24, minute % 60),
    })
    .to_string()
}

/// Writes lines to a file.
pub fn write_lines(path: &Path, lines: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

/// A deterministic archive of `threads` threads with `turns` turns each
/// (user + assistant), interleaved across threads like a real export.
pub fn archive(threads: usize, turns: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for turn in 0..turns {
        for t in 0..threads {
            let thread = format!("thread-{t:03}");
            let minute = u32::try_from(turn).unwrap();
            lines.push(line(
                &thread,
                &format!("{t}-{turn}-u"),
                "user",
                &format!("Turn {turn} in {thread}: we met Marta in Lisbon last Saturday and planned the trip for next month."),
                minute,
            ));
            lines.push(line(
                &thread,
                &format!("{t}-{turn}-a"),
                "assistant",
                &format!("Noted for turn {turn}. Shall I book the train to Porto?"),
                minute,
            ));
        }
    }
    lines
}

/// Every record id in a data directory, read through the library.
pub fn record_ids(data: &Path) -> std::collections::BTreeSet<String> {
    let store = strataflow::log::Store::open(data).unwrap();
    store.scan(1).map(|r| r.unwrap().id.to_hex()).collect()
}

/// Every record id in log order.
pub fn ordered_record_ids(data: &Path) -> Vec<String> {
    let store = strataflow::log::Store::open(data).unwrap();
    store.scan(1).map(|r| r.unwrap().id.to_hex()).collect()
}

/// `views --json` of a data directory: (view, tenant, last seq, digest).
pub fn view_digests(data: &Path) -> Vec<(String, String, u64, String)> {
    let out = ok(data, &["views", "--json"]);
    let reports: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    reports
        .iter()
        .map(|r| {
            (
                r["view"].as_str().unwrap().to_owned(),
                r["tenant"].as_str().unwrap().to_owned(),
                r["last_seq"].as_u64().unwrap(),
                r["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Spawns `cmd` with stderr piped (progress every commit) and SIGKILLs it
/// at the `n`-th stderr line holding `marker`; waits for it. Returns
/// whether it was killed (false: it finished before that line).
pub fn kill_at_line(cmd: &mut Command, marker: &str, n: usize) -> bool {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = cmd
        .env("STRATAFLOW_PROGRESS_INTERVAL_MS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = 0;
    for line in BufReader::new(stderr).lines() {
        if line.unwrap().contains(marker) {
            seen += 1;
            if seen == n {
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
    }
    !child.wait().unwrap().success()
}

/// Spawns `cmd` (which must set `STRATAFLOW_PAUSE_AT`) with stderr piped
/// and SIGKILLs it once it reports `paused at …`; waits for it. Returns
/// whether it paused (false: it finished without reaching the point).
pub fn kill_when_paused(cmd: &mut Command) -> bool {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut killed = false;
    for line in BufReader::new(stderr).lines() {
        if line.unwrap().starts_with("paused at") {
            child.kill().unwrap(); // SIGKILL
            killed = true;
            break;
        }
    }
    child.wait().unwrap();
    killed
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file of a directory tree with its bytes (to show a command left
/// a directory as it was).
pub fn files_of(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}
