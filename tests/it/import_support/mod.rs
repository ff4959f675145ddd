//! What the external memory import tests share: a store with events (the
//! LoCoMo conversation conv-30, derived by the default profile), the
//! fixtures, and a fake decider gateway that counts its calls.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use strataflow::Memory;
use strataflow::operators::model::{ModelError, ModelGateway, ModelReply, ModelRequest};
use strataflow::pipeline::ingest::OnInvalid;

/// A fixture under `tests/fixtures/external-memory/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/external-memory")
        .join(name)
}

/// Opens `dir` and imports conv-30 (tenant "") with derivation.
pub fn memory_with_events(dir: &Path) -> Memory {
    let memory = Memory::open(dir).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/locomo/conv-30.json");
    let options = memory.ingest_options().unwrap();
    memory
        .default_tenant()
        .import_locomo(&path, &options, OnInvalid::Refuse, &mut |_| {})
        .unwrap();
    memory
}

/// A decider gateway answering every request with `action`, naming the
/// first event it was shown, confidence `confidence`; counts its calls.
pub struct FakeDecider {
    pub action: &'static str,
    pub confidence: f64,
    pub calls: AtomicUsize,
    pub merged: Option<serde_json::Value>,
}

impl FakeDecider {
    pub fn new(action: &'static str) -> Self {
        Self {
            action,
            confidence: 0.95,
            calls: AtomicUsize::new(0),
            merged: None,
        }
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl ModelGateway for FakeDecider {
    fn complete(&self, request: &ModelRequest, _subject: &str) -> Result<ModelReply, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let payload: serde_json::Value =
            serde_json::from_str(&request.messages[1].content).unwrap();
        let first = payload["existing_events"][0]["id"].clone();
        let mut arguments = serde_json::json!({
            "action": self.action,
            "existing_event_ids": [first],
            "reason": format!("fake decider says {}", self.action),
            "confidence": self.confidence,
        });
        if let Some(m) = &self.merged {
            arguments["merged_candidate"] = m.clone();
        }
        Ok(ModelReply {
            arguments,
            from_log: false,
        })
    }
}

/// Imports `jon-studio.json` into a store with events, deciding with a
/// fake gateway that answers `action`; checks the records one import
/// writes and returns the directory, the memory, the report and the
/// gateway.
pub fn import_decided(
    action: &'static str,
    merged: Option<serde_json::Value>,
) -> (
    tempfile::TempDir,
    Memory,
    strataflow::ExternalImportReport,
    FakeDecider,
) {
    use strataflow::operators::import::ModelDecider;
    let dir = tempfile::tempdir().unwrap();
    let memory = memory_with_events(dir.path());
    let before = memory.stats().unwrap().records;
    let mut fake = FakeDecider::new(action);
    fake.merged = merged;
    let text = std::fs::read_to_string(fixture("jon-studio.json")).unwrap();
    let report = {
        let decider = ModelDecider {
            gateway: &fake,
            model: "fake-model".into(),
        };
        memory
            .import_external_memory(
                &text,
                &strataflow::ExternalImportOptions {
                    decider: Some(&decider),
                    ..strataflow::ExternalImportOptions::default()
                },
            )
            .unwrap()
    };
    assert_eq!(fake.calls(), 1, "one candidate, one decider call");
    let after = memory.stats().unwrap().records;
    let added = |kind: &str| after[kind] - before[kind];
    assert_eq!(added("message"), 1, "the source message");
    assert_eq!(added("block"), 1, "the source block");
    assert_eq!(added("block_summary"), 1);
    assert_eq!(added("event"), 1, "one event for the candidate");
    assert_eq!(added("import_source"), 1);
    assert_eq!(added("derivation"), 0, "an import is not an operator run");
    (dir, memory, report, fake)
}

/// The event record with this id.
pub fn event(memory: &Memory, id: &strataflow::log::RecordId) -> strataflow::log::record::Event {
    match memory.default_tenant().show(&id.to_hex()).unwrap().record {
        strataflow::log::record::Record::Event(e) => e,
        other => panic!("not an event: {other:?}"),
    }
}
