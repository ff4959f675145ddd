//! A second profile with a different extractor version adds only the
//! records that differ: summaries are shared, identical events are not
//! written twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::sync::Arc;

use common::{data_file, ok, record_ids};
use strataflow::log::Digest;
use strataflow::log::record::{Record, TimeBasis};
use strataflow::operators::extractor::HeuristicExtractor;
use strataflow::operators::operator::{
    Extraction, ExtractionInput, Extractor, OperatorError, OperatorId, config_hash,
};
use strataflow::operators::profile::Profile;

/// Keeps only the heuristic's events whose time is known.
struct TimedOnly;

impl Extractor for TimedOnly {
    fn id(&self) -> OperatorId {
        OperatorId::new("timed-only-extractor", 1)
    }
    fn config_hash(&self) -> Digest {
        config_hash(&self.id(), "{}")
    }
    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        let mut x = HeuristicExtractor.extract(input)?;
        x.events.retain(|e| e.temporal.basis != TimeBasis::Unknown);
        x.should_extract = !x.events.is_empty();
        Ok(x)
    }
}

#[test]
fn a_second_profile_adds_only_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    // `default` on the legacy operators, which `TimedOnly` wraps.
    ok(data, &["init"]);
    common::pin_legacy_default(data);
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
    let before = record_ids(data);

    let mut memory = strataflow::Memory::open(data).unwrap();
    memory.register_extractor(Arc::new(TimedOnly));
    memory
        .save_profile(&Profile {
            name: "timed".into(),
            extractor: "timed-only-extractor@1".into(),
            ..Profile::legacy_default()
        })
        .unwrap();
    let stats = memory
        .derive(Some("timed"), &memory.derive_options(), &mut |_| {})
        .unwrap();
    assert_eq!(stats.ready, 15);
    assert_eq!(
        stats.summaries, 0,
        "summaries are shared with the default profile"
    );
    assert_eq!(
        stats.events, 0,
        "every timed event already exists under the default profile"
    );

    let default_events = memory
        .default_tenant()
        .events(&strataflow::EventsQuery::default())
        .unwrap();
    let timed_events = memory
        .default_tenant()
        .events(&strataflow::EventsQuery {
            profile: Some("timed".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(!timed_events.is_empty());
    assert!(timed_events.len() < default_events.len());
    let default_ids: Vec<_> = default_events.iter().map(|e| e.id).collect();
    assert!(timed_events.iter().all(|e| default_ids.contains(&e.id)));

    drop(memory);
    let after = record_ids(data);
    let added: Vec<_> = after.difference(&before).collect();
    let store = strataflow::log::Store::open(data).unwrap();
    for id in &added {
        let rec = store.get(&id.parse().unwrap()).unwrap().unwrap().record;
        match rec {
            Record::Derivation(d) => assert!(
                d.operator == "timed-only-extractor@1" || d.operator == "heuristic-projector@1",
                "unexpected derivation by {}",
                d.operator
            ),
            Record::GraphAssertion(_) => {}
            other => panic!("unexpected new {} record", other.kind().name()),
        }
    }
    assert!(!added.is_empty());
}
