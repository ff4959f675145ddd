//! `Memory::diff` compares the block summaries each profile's summarizer
//! produced: a profile with another summarizer shows, per block, the
//! fields that differ.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::sync::Arc;

use common::{data_file, ok};
use strataflow::log::Digest;
use strataflow::log::record::BlockSummary;
use strataflow::operators::operator::{
    BlockInput, OperatorError, OperatorId, Summarizer, config_hash,
};
use strataflow::operators::profile::Profile;
use strataflow::operators::summarizer::heuristic::HeuristicSummarizerV2;

/// The default profile's summarizer with its titles in capitals.
struct Loud;

impl Summarizer for Loud {
    fn id(&self) -> OperatorId {
        OperatorId::new("loud-summarizer", 1)
    }
    fn config_hash(&self) -> Digest {
        config_hash(&self.id(), "{}")
    }
    fn summarize(&self, block: &BlockInput<'_>) -> Result<BlockSummary, OperatorError> {
        let mut s = HeuristicSummarizerV2.summarize(block)?;
        s.title = s.title.to_uppercase();
        Ok(s)
    }
}

#[test]
fn diff_names_the_summary_fields_that_differ_per_block() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let path = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );

    let mut memory = strataflow::Memory::open(data).unwrap();
    memory.register_summarizer(Arc::new(Loud));
    memory
        .save_profile(&Profile {
            name: "loud".into(),
            summarizer: "loud-summarizer@1".into(),
            ..Profile::default_profile()
        })
        .unwrap();
    memory
        .derive(Some("loud"), &memory.derive_options(), &mut |_| {})
        .unwrap();

    let blocks = memory.default_tenant().block_summaries(None).unwrap();
    assert_eq!(blocks.len(), 15);
    let diff = memory.default_tenant().diff("default", "loud").unwrap();
    let s = &diff.summaries;
    assert!(s.only_a.is_empty() && s.only_b.is_empty());
    // Every block whose title has a lowercase letter differs, in its title only.
    let expected = blocks
        .iter()
        .filter(|(_, _, x)| x.title != x.title.to_uppercase())
        .count();
    assert!(expected > 0);
    assert_eq!(s.different.len(), expected);
    assert_eq!(s.same, blocks.len() - expected);
    for change in &s.different {
        assert_eq!(change.thread, "conv-30");
        let fields: Vec<_> = change.fields.iter().map(|f| f.field).collect();
        assert_eq!(fields, vec!["title"]);
        assert_eq!(change.fields[0].b, change.fields[0].a.to_uppercase());
    }
    // The extractor runs on the same blocks; only the summaries changed.
    assert!(diff.events.only_a.is_empty() && diff.events.only_b.is_empty());
}
