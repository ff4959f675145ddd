//! Pause points for crash tests, compiled only with the `failpoints` cargo
//! feature.
//!
//! The runtime calls [`point`] at `seal`, `summarize`, `extract`, `project`
//! and `append`; `import parquet` at `import` before each batch,
//! `import-done` after the last and `import-rename` before the rename into
//! place. With the feature (enabled for the workspace's test builds through
//! the root package's dev-dependencies, never by `cargo build`), an
//! environment variable read once parks the process at the N-th time any
//! thread reaches a stage, so that a test can SIGKILL it exactly there (see
//! `armed.rs`). Without the feature [`point`] is an empty inline function:
//! a release binary has no pause point and reads no variable.

#[cfg(feature = "failpoints")]
mod armed;

/// Marks that a thread reached `stage`; with the `failpoints` feature,
/// pauses there if a test planned it. Without the feature, nothing.
#[inline(always)]
pub fn point(stage: &'static str) {
    #[cfg(feature = "failpoints")]
    armed::point(stage);
    #[cfg(not(feature = "failpoints"))]
    let _ = stage;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// Run only as the child of `pause_variable_matches_the_build`: reaches
    /// the `append` point once, then says so on stdout.
    #[test]
    #[ignore = "run as a child process by pause_variable_matches_the_build"]
    fn child_reaches_append() {
        super::point("append");
        println!("passed the point");
    }

    /// Re-runs this test binary's `child_reaches_append` with the pause
    /// variable set to the first `append`: with `failpoints` it must park
    /// there (and is killed); without it, it must pass the point and exit.
    #[test]
    fn pause_variable_matches_the_build() {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "pause::tests::child_reaches_append",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("STRATAFLOW_PAUSE_AT", "append:1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if cfg!(feature = "failpoints") {
            let stderr = child.stderr.take().unwrap();
            let paused = BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .any(|l| l.starts_with("paused at append 1"));
            let _ = child.kill();
            let _ = child.wait();
            assert!(paused, "with failpoints the child must park at append 1");
        } else {
            let deadline = Instant::now() + Duration::from_secs(60);
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("without failpoints the child hung at the pause point");
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let out = child.wait_with_output().unwrap();
            assert!(status.success(), "child failed: {status}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("passed the point"), "stdout: {stdout}");
        }
    }
}
