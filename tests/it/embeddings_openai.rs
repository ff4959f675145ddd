//! `openai-embeddings@1` against the scripted OpenAI-compatible server:
//! every batch is a recorded `ModelCall`, so a second embedder (online or
//! offline) makes no request; offline misses write nothing; a 429 is
//! retried; an answer of the wrong length is refused and not recorded.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use strataflow_log::Store;
use strataflow_log::record::RecordKind;
use strataflow_model::{EmbeddingSettings, ModelSettings, OpenAiEmbedder};
use strataflow_operators::embedder::{EmbedError, Embedder};
use support::model_server::{Fault, ModelServer, Reply};

/// A server embedding each input as `[len, 1, 0, ...]` of `dims` values,
/// answering `data` in reverse order (the client sorts by `index`).
pub(crate) fn embedding_server(dims: usize) -> ModelServer {
    ModelServer::start(move |body: &Value| {
        let inputs = body["input"].as_array().cloned().unwrap_or_default();
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut v = vec![0.0f64; dims];
                v[0] = text.as_str().unwrap_or_default().len() as f64;
                v[1] = 1.0;
                json!({"object": "embedding", "index": i, "embedding": v})
            })
            .collect();
        data.reverse();
        let answer = json!({
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 5, "total_tokens": 5},
        });
        Reply::Raw(200, answer.to_string())
    })
}

fn service(server: &ModelServer) -> ModelSettings {
    ModelSettings {
        base_url: server.base_url(),
        model: "test-embed".into(),
        api_key_env: None,
        timeout: Duration::from_secs(5),
        max_retries: 3,
        concurrency: 2,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
    }
}

fn settings(dims: u32) -> EmbeddingSettings {
    EmbeddingSettings {
        batch_size: 2,
        ..EmbeddingSettings::new("test-embed", dims)
    }
}

fn calls(store: &Store) -> u64 {
    store.count(RecordKind::ModelCall).unwrap()
}

const TEXTS: [&str; 5] = ["a", "bb", "ccc", "dddd", "eeeee"];

#[test]
fn batches_are_recorded_once_and_replayed_online_and_offline_without_requests() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let server = embedding_server(4);
    let e = OpenAiEmbedder::new(Arc::clone(&store), &service(&server), settings(4), false).unwrap();
    assert_eq!(e.id().to_string(), "openai-embeddings@1");
    assert_eq!(e.label().name, "openai/test-embed");
    let first = e.embed(&TEXTS).unwrap();
    // 5 texts in batches of 2: 3 requests, 3 recorded calls, in order.
    assert_eq!(server.requests(), 3);
    assert_eq!(calls(&store), 3);
    let lengths: Vec<f32> = first.iter().map(|v| v[0]).collect();
    assert_eq!(lengths, [1.0, 2.0, 3.0, 4.0, 5.0]);
    // Batches go out concurrently: any arrival order.
    assert!(
        server
            .bodies()
            .contains(&json!({"input": ["a", "bb"], "model": "test-embed"}))
    );
    assert_eq!(e.stats().made, 3);

    // A second embedder over the same log: no request, the same vectors.
    let again =
        OpenAiEmbedder::new(Arc::clone(&store), &service(&server), settings(4), false).unwrap();
    assert_eq!(again.embed(&TEXTS).unwrap(), first);
    assert_eq!(again.stats().served_from_log, 3);
    // Offline: the same, and needs no service at all.
    let offline =
        OpenAiEmbedder::new(Arc::clone(&store), &service(&server), settings(4), true).unwrap();
    assert_eq!(offline.embed(&TEXTS).unwrap(), first);
    assert_eq!(server.requests(), 3);
    assert_eq!(calls(&store), 3);
    assert_eq!(e.config_hash(), offline.config_hash());

    // An offline miss asks nothing and writes nothing.
    let miss = offline.embed(&["never seen"]).unwrap_err();
    assert!(matches!(miss, EmbedError::Offline { .. }), "{miss}");
    assert_eq!(server.requests(), 3);
    assert_eq!(calls(&store), 3);
}

#[test]
fn a_429_is_retried_then_recorded_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let server = embedding_server(4);
    server.inject([Fault::Status(429, None)]);
    let e = OpenAiEmbedder::new(Arc::clone(&store), &service(&server), settings(4), false).unwrap();
    let v = e.embed(&["retry me"]).unwrap();
    assert_eq!(v[0][0], 8.0);
    assert_eq!(server.counts().status, 1);
    assert_eq!(server.requests(), 2);
    assert_eq!(calls(&store), 1);
    assert_eq!(e.stats().retries, 1);
}

#[test]
fn vectors_of_the_wrong_length_are_refused_and_nothing_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    // The service answers 3 values; the label says 4.
    let server = embedding_server(3);
    let e = OpenAiEmbedder::new(Arc::clone(&store), &service(&server), settings(4), false).unwrap();
    let err = e.embed(&["short"]).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::Dimensions {
                expected: 4,
                got: 3,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(server.requests(), 1);
    assert_eq!(calls(&store), 0);
    assert_eq!(e.stats().failed, 1);
}
