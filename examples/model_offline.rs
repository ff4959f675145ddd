//! Model-backed extraction, then the same extraction replayed offline.
//!
//! A scripted OpenAI-compatible server on loopback stands in for the model
//! (the one the tests use: it answers each operator's tool from the request,
//! deterministically). The program:
//!
//! 1. ingests `examples/data/sample.jsonl` into a first data directory,
//!    creates a profile with the three `llm-*` operators pointed at the
//!    server, and derives it: every request is recorded as a `ModelCall`;
//! 2. ingests the same file into a second directory, copies only the
//!    `ModelCall` records across, goes offline and derives the profile
//!    again: no request reaches the server, and the events and view digests
//!    are the same.
//!
//! ```text
//! cargo run --example model_offline
//! ```

#[allow(dead_code)]
#[path = "../tests/it/support/mirror_model.rs"]
mod mirror_model;
#[allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
#[path = "../tests/it/support/model_server.rs"]
mod model_server;

use std::collections::BTreeSet;
use std::path::Path;

use model_server::{ModelServer, Reply};
use strataflow::Memory;
use strataflow::log::record::{Record, RecordKind};
use strataflow::log::{Durability, RecordId};
use strataflow::operators::llm;
use strataflow::operators::profile::ModelEndpoint;
use strataflow::pipeline::ingest::OnInvalid;

type Error = Box<dyn std::error::Error>;

fn open_with_profile(dir: &Path, base_url: &str) -> Result<Memory, Error> {
    let memory = Memory::open(dir)?;
    let mut options = memory.ingest_options()?;
    options.durability = Durability::Buffered;
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/sample.jsonl");
    memory.ingest_jsonl(&sample, &options, OnInvalid::Refuse, &mut |_| {})?;
    memory.save_profile(&llm::profile(
        "model",
        ModelEndpoint {
            model: "scripted".into(),
            base_url: base_url.into(),
            api_key_env: None,
            concurrency: 2,
            timeout_secs: 10,
        },
    ))?;
    Ok(memory)
}

fn summary(memory: &Memory) -> Result<(BTreeSet<RecordId>, Vec<String>), Error> {
    let events = memory
        .default_tenant()
        .extracted_events(&strataflow::EventsQuery {
            profile: Some("model".into()),
            ..Default::default()
        })?
        .events
        .iter()
        .map(|(id, _, _)| *id)
        .collect();
    let views = memory
        .default_tenant()
        .views(&strataflow::ViewsOptions {
            profile: Some("model".into()),
            verify: false,
        })?
        .into_iter()
        .map(|v| format!("{} {}", v.view, v.digest))
        .collect();
    Ok((events, views))
}

fn main() -> Result<(), Error> {
    let server = ModelServer::start(|body| Reply::Tool(mirror_model::answer(body)));
    let temp = tempfile::tempdir()?;

    let first = open_with_profile(&temp.path().join("first"), &server.base_url())?;
    first.derive(Some("model"), &first.derive_options(), &mut |_| {})?;
    let requests = server.requests();
    let calls = first.model_calls()?;
    println!(
        "first run: {requests} requests, {} calls recorded ({} prompt + {} completion tokens)",
        calls.made, calls.prompt_tokens, calls.completion_tokens
    );
    let recorded: Vec<Record> = first
        .store()
        .ids_of_kind(RecordKind::ModelCall)
        .map(|entry| -> Result<Option<Record>, Error> {
            let (_, id) = entry?;
            Ok(first.store().get(&id)?.map(|s| s.record))
        })
        .filter_map(Result::transpose)
        .collect::<Result<_, _>>()?;

    let mut replay = open_with_profile(&temp.path().join("replay"), &server.base_url())?;
    replay.store().append(&recorded, Durability::Buffered)?;
    replay.set_offline(true)?;
    replay.derive(Some("model"), &replay.derive_options(), &mut |_| {})?;
    let served = replay.model_calls()?.served_from_log;
    println!(
        "offline replay: {} new requests, {served} calls served from the log",
        server.requests() - requests
    );

    let (a, b) = (summary(&first)?, summary(&replay)?);
    println!("events: {} and {}", a.0.len(), b.0.len());
    for view in &b.1 {
        println!("  {view}");
    }
    if a != b || server.requests() != requests {
        return Err("the offline replay differs from the first run".into());
    }
    println!("identical events and view digests, no network");
    Ok(())
}
