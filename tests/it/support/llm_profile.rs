//! A small archive and an `llm` profile pointed at a scripted server, for
//! the tests of model-backed operators.

use std::path::Path;

use strataflow::Memory;
use strataflow::log::Durability;
use strataflow::operators::llm;
use strataflow::operators::profile::ModelEndpoint;
use strataflow::pipeline::ingest::OnInvalid;

/// Profile name of the model-backed operators.
pub const LLM: &str = "llm";

/// `threads` threads of `turns` user/assistant turns as JSONL.
pub fn write_archive(path: &Path, threads: usize, turns: usize) {
    let mut text = String::new();
    for turn in 0..turns {
        for t in 0..threads {
            let thread = format!("thread-{t}");
            let ts = format!("2024-05-01T{:02}:{:02}:00Z", 8 + turn / 60, turn % 60);
            let user = serde_json::json!({
                "thread": thread, "id": format!("{t}-{turn}-u"), "role": "user",
                "speaker": if t % 2 == 0 { "Ana" } else { "Marta" },
                "content": format!("On turn {turn} we talked about the trip to Porto number {t} and the train tickets."),
                "ts": ts,
            });
            let bot = serde_json::json!({
                "thread": thread, "id": format!("{t}-{turn}-a"), "role": "assistant",
                "speaker": "Bot", "content": format!("Noted ({turn})."), "ts": ts,
            });
            text.push_str(&format!("{user}\n{bot}\n"));
        }
    }
    std::fs::write(path, text).unwrap();
}

/// Ingests `file` with the directory's default profile, buffered.
pub fn ingest(memory: &Memory, file: &Path) {
    let mut options = memory.ingest_options().unwrap();
    options.durability = Durability::Buffered;
    memory
        .ingest_jsonl(file, &options, OnInvalid::Refuse, &mut |_| {})
        .unwrap();
}

/// Saves the `llm` profile (the three `llm-*` operators) against `base_url`.
pub fn save_llm_profile(memory: &Memory, base_url: &str) {
    memory
        .save_profile(&llm::profile(
            LLM,
            ModelEndpoint {
                model: "scripted".into(),
                base_url: base_url.into(),
                api_key_env: None,
                concurrency: 2,
                timeout_secs: 10,
            },
        ))
        .unwrap();
}

/// The same `llm` profile created with the CLI (`profile create`) in the
/// data directory `data`.
pub fn create_llm_profile_with_cli(data: &Path, base_url: &str) {
    crate::common::ok(
        data,
        &[
            "profile",
            "create",
            LLM,
            "--summarizer",
            "llm-summarizer@1",
            "--extractor",
            "llm-extractor@1",
            "--projector",
            "llm-projector@1",
            "--model",
            "scripted",
            "--base-url",
            base_url,
            "--concurrency",
            "2",
            "--timeout",
            "10",
        ],
    );
}
