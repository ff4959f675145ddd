//! strataflow embedded in a small tokio program as a streaming ingester.
//!
//! Two simulated agents talk with their users at the same time; every
//! message is appended as it happens and acknowledged once durable. The
//! queue is bounded (64 messages here): a producer faster than the disk
//! waits in `append` instead of growing memory. At the end the program
//! closes the ingester and asks the memory a question.
//!
//! ```text
//! cargo run --example streaming            # in a temporary directory
//! cargo run --example streaming -- DIR     # in DIR (kept)
//! ```

use std::sync::Arc;

use strataflow::{Channel, Memory, SearchRequest};

const TURNS: usize = 30;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| temp.path().to_path_buf(), std::path::PathBuf::from);
    let memory = Memory::open(&dir)?;
    let ingester = Arc::new(memory.ingester(64)?);

    let mut agents = tokio::task::JoinSet::new();
    for (thread, city) in [("trip-planning", "Lisbon"), ("job-search", "Berlin")] {
        let ingester = Arc::clone(&ingester);
        agents.spawn(async move {
            let mut last = None;
            for turn in 0..TURNS {
                let minute = turn * 3;
                let user = serde_json::json!({
                    "thread": thread, "id": format!("{thread}-u{turn}"), "role": "user",
                    "speaker": "Maya",
                    "content": format!("Turn {turn}: I am planning to move to {city} next month, my sister Ana lives there."),
                    "ts": format!("2026-11-29T10:{:02}:00Z", minute % 60),
                });
                let reply = serde_json::json!({
                    "thread": thread, "id": format!("{thread}-a{turn}"), "role": "assistant",
                    "content": format!("Noted. Shall I look for flats in {city} near Ana?"),
                    "ts": format!("2026-11-29T10:{:02}:30Z", minute % 60),
                });
                ingester.append_json(&user.to_string()).await?;
                last = Some(ingester.append_json(&reply.to_string()).await?);
            }
            Ok::<_, strataflow::pipeline::stream::StreamError>(last)
        });
    }
    while let Some(done) = agents.join_next().await {
        if let Some(acked) = done?? {
            println!("last message of an agent durable as record {}", acked.id);
        }
    }
    let ingester = Arc::try_unwrap(ingester).map_err(|_| "ingester still shared")?;
    let stats = ingester.close().await?;
    println!(
        "stored {} messages, sealed {} blocks, derived {} events and {} graph assertions in {} groups",
        stats.stored, stats.blocks_sealed, stats.events, stats.assertions, stats.batches
    );

    let request = SearchRequest {
        query: "where is Maya moving".into(),
        budget: Some(60),
        ..SearchRequest::default()
    };
    let answer = memory.default_tenant().search(
        &request,
        &strataflow::SearchOptions {
            channel: Channel::All,
            ..Default::default()
        },
    )?;
    for hit in answer.hits.iter().take(3) {
        println!("  {:>6.3}  {}", hit.score, hit.text);
    }
    Ok(())
}
