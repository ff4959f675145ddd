//! The streaming ingester's queue is bounded: while the background thread
//! is stuck (here: a summarizer held at a gate), appends wait in `append`
//! instead of piling up, and all of them complete once it moves again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use strataflow::Memory;
use strataflow::log::Durability;
use strataflow::log::record::BlockSummary;
use strataflow::operators::operator::{BlockInput, OperatorError, OperatorId, Summarizer};
use strataflow::pipeline::stream::StreamOptions;

/// A summarizer that waits until the gate opens (and says when it is
/// waiting there).
struct Gated {
    inner: Arc<dyn Summarizer>,
    open: Arc<(Mutex<bool>, Condvar)>,
    waiting: Arc<std::sync::atomic::AtomicBool>,
}

impl Summarizer for Gated {
    fn id(&self) -> OperatorId {
        self.inner.id()
    }
    fn config_hash(&self) -> strataflow::log::Digest {
        self.inner.config_hash()
    }
    fn summarize(&self, block: &BlockInput<'_>) -> Result<BlockSummary, OperatorError> {
        let (lock, cvar) = &*self.open;
        let mut open = lock.lock().unwrap();
        self.waiting
            .store(true, std::sync::atomic::Ordering::SeqCst);
        while !*open {
            open = cvar.wait(open).unwrap();
        }
        drop(open);
        self.inner.summarize(block)
    }
}

fn message(i: usize) -> String {
    let role = if i.is_multiple_of(2) {
        "user"
    } else {
        "assistant"
    };
    serde_json::json!({
        "thread": "t", "id": format!("m{i}"), "role": role,
        "content": format!("Message {i}: we talked about the trip to Porto."),
        "ts": format!("2026-11-29T{:02}:{:02}:00Z", 8 + i / 60, i % 60),
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_makes_append_wait() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path()).unwrap();
    let (_, mut ops) = memory.operators(None).unwrap();
    let open = Arc::new((Mutex::new(false), Condvar::new()));
    let waiting = Arc::new(std::sync::atomic::AtomicBool::new(false));
    ops.summarizer = Arc::new(Gated {
        inner: Arc::clone(&ops.summarizer),
        open: Arc::clone(&open),
        waiting: Arc::clone(&waiting),
    });
    let ingester = Arc::new(
        memory
            .ingester_with(StreamOptions {
                queue: 8,
                durability: Durability::Buffered,
                sealer: strataflow::operators::sealer::Sealer::default(),
                operators: Some(ops),
            })
            .unwrap(),
    );

    // The first 25 messages, one after the other: the 25th (the 13th user
    // message) seals a block, whose summary then waits at the gate.
    let first: Vec<String> = (0..25).map(message).collect();
    let mut sealing = None;
    for (i, m) in first.iter().enumerate() {
        if i < 24 {
            ingester.append_json(m).await.unwrap();
        } else {
            let ingester = Arc::clone(&ingester);
            let m = m.clone();
            sealing = Some(tokio::spawn(async move { ingester.append_json(&m).await }));
        }
    }
    // The thread is stuck at the gate before any producer starts (a
    // producer's message appended before the 25th would be taken while
    // the thread still moves).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !waiting.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the summary never reached the gate"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // 200 more producers.
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut producers = Vec::new();
    for i in 25..225 {
        let ingester = Arc::clone(&ingester);
        let done = Arc::clone(&done);
        producers.push(tokio::spawn(async move {
            let acked = ingester.append_json(&message(i)).await;
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            acked
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ingester.queued(), ingester.capacity(), "the queue is full");
    let stuck = done.load(std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(stuck, 0, "no append completes while the thread is stuck");
    assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), stuck);
    assert_eq!(ingester.queued(), 8, "waiting appends are not queued");

    {
        let (lock, cvar) = &*open;
        *lock.lock().unwrap() = true;
        cvar.notify_all();
    }
    assert!(sealing.unwrap().await.unwrap().unwrap().new);
    for p in producers {
        assert!(p.await.unwrap().unwrap().new);
    }
    let ingester = Arc::try_unwrap(ingester).ok().unwrap();
    let stats = ingester.close().await.unwrap();
    assert_eq!(stats.stored, 225);
    assert_eq!(memory.stats().unwrap().messages, 225);
}
