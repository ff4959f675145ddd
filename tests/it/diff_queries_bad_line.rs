//! `diff --queries` refuses a JSONL question file with a bad line, naming
//! the file and the line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{ok, run};

#[test]
fn a_bad_question_line_is_refused_with_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ok(&data, &["init"]);
    let file = dir.path().join("q.jsonl");
    for (body, line, what) in [
        (
            "{\"question\": \"ok?\"}\n\n{\"question\": \"where?\", \"evidence\": \"D1:3\"}\n",
            3,
            "not a question object",
        ),
        (
            "{\"question\": \"ok?\"}\n{\"question\": \"  \"}\n",
            2,
            "`question` is empty",
        ),
        (
            "{\"question\": \"ok?\"}\nnot json\n",
            2,
            "not a question object",
        ),
        ("{\"query\": \"ok?\"}\n", 1, "unknown field `query`"),
    ] {
        std::fs::write(&file, body).unwrap();
        let out = run(
            &data,
            &[
                "diff",
                "default",
                "default",
                "--queries",
                file.to_str().unwrap(),
            ],
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{}:{line}: ", file.display())),
            "{body:?}: {err}"
        );
        assert!(err.contains(what), "{body:?}: {err}");
    }
}
