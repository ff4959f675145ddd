//! Validation of operator outputs. Everything an operator returns passes
//! here before it is stored, whether the operator is a heuristic or a model
//! (spec §5.2, §7.4, §10.2; DESIGN.md §4).

use std::collections::BTreeSet;

use strataflow_record::RecordId;
use strataflow_record::record::{Assertion, BlockSummary, Event, GraphAssertion, NodeKey};

use crate::operator::{BlockInput, OperatorError};
use crate::text::clip;

/// Longest L0 title, in characters.
pub const MAX_TITLE_CHARS: usize = 120;
/// Longest L1 summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 2000;
/// Most L0 tags.
pub const MAX_TAGS: usize = 12;
/// Most L2 key points.
pub const MAX_KEY_POINTS: usize = 20;
/// Longest event title, in characters.
pub const MAX_EVENT_TITLE_CHARS: usize = 200;
/// Longest event summary, in characters.
pub const MAX_EVENT_SUMMARY_CHARS: usize = 1000;
/// Most event tags.
pub const MAX_EVENT_TAGS: usize = 16;
/// Most event quotes.
pub const MAX_QUOTES: usize = 12;

/// Checks and normalizes a block summary: title and summary must be
/// non-empty after trimming; lengths are capped. The tenant and block are
/// set from the target.
pub fn summary(
    target: &BlockInput<'_>,
    mut s: BlockSummary,
) -> Result<BlockSummary, OperatorError> {
    s.tenant = target.block.tenant.clone();
    s.block = target.id;
    s.title = clip(s.title.trim(), MAX_TITLE_CHARS);
    s.summary = clip(s.summary.trim(), MAX_SUMMARY_CHARS);
    if s.title.is_empty() || s.summary.is_empty() {
        return Err(OperatorError::Failed(
            "block summarizer returned invalid L0-L2 layers: empty title or summary".into(),
        ));
    }
    s.tags = dedup_nonempty(s.tags, MAX_TAGS);
    s.key_points = dedup_nonempty(s.key_points, MAX_KEY_POINTS);
    Ok(s)
}

/// Checks and normalizes the events extracted from a block. An event is
/// dropped unless it has a title, a summary and at least one source
/// message of the target block (sources outside the block are removed; an
/// event left with none is rejected, never given the whole block). The
/// block and tenant are forced to the target's. Duplicates are removed.
/// Returns the kept events and how many were dropped.
/// Supersede and conflict links are kept only when they point into the
/// `timeline` the extractor was given.
pub fn events(
    target: &BlockInput<'_>,
    timeline: &[RecordId],
    events: Vec<Event>,
) -> (Vec<Event>, usize) {
    let allowed: Vec<RecordId> = target.messages.iter().map(|(id, _)| *id).collect();
    let mut kept: Vec<Event> = Vec::new();
    let mut dropped = 0;
    for mut e in events {
        e.tenant = target.block.tenant.clone();
        e.block = target.id;
        let mut seen = BTreeSet::new();
        e.source_messages
            .retain(|id| allowed.contains(id) && seen.insert(*id));
        e.title = clip(e.title.trim(), MAX_EVENT_TITLE_CHARS);
        e.summary = clip(e.summary.trim(), MAX_EVENT_SUMMARY_CHARS);
        if e.narrative.trim().is_empty() {
            e.narrative = e.summary.clone();
        }
        e.tags = dedup_nonempty(e.tags, MAX_EVENT_TAGS);
        e.quotes = dedup_nonempty(e.quotes, MAX_QUOTES);
        e.confidence_milli = e.confidence_milli.min(1000);
        e.temporal.supersedes.retain(|id| timeline.contains(id));
        e.temporal.supersedes.dedup();
        e.temporal.conflicts_with.retain(|id| timeline.contains(id));
        e.temporal.conflicts_with.dedup();
        if e.title.is_empty() || e.summary.is_empty() || e.source_messages.is_empty() {
            dropped += 1;
            continue;
        }
        if kept.contains(&e) {
            continue;
        }
        kept.push(e);
    }
    (kept, dropped)
}

/// Keeps the assertions whose sources are non-empty and all in the batch
/// (spec §10.2); the others are dropped. Sources are sorted and deduplicated.
pub fn assertions(batch: &[RecordId], assertions: Vec<GraphAssertion>) -> Vec<GraphAssertion> {
    let mut out: Vec<GraphAssertion> = Vec::new();
    for mut a in assertions {
        a.source_events.sort_unstable();
        a.source_events.dedup();
        a.confidence_milli = a.confidence_milli.min(1000);
        let valid =
            !a.source_events.is_empty() && a.source_events.iter().all(|id| batch.contains(id));
        if valid && !out.contains(&a) {
            out.push(a);
        }
    }
    retain_anchored_edges(out)
}

/// The acceptance rule of spec §10.2 for edges: keeps every Node assertion,
/// and the Edge assertions whose two endpoints have a Node assertion in
/// `assertions` (same type and key), that differ, and whose relation is not
/// empty.
pub fn retain_anchored_edges(assertions: Vec<GraphAssertion>) -> Vec<GraphAssertion> {
    let nodes: Vec<NodeKey> = assertions
        .iter()
        .filter_map(|a| match &a.assertion {
            Assertion::Node { key, .. } => Some(key.clone()),
            Assertion::Edge { .. } => None,
        })
        .collect();
    assertions
        .into_iter()
        .filter(|a| match &a.assertion {
            Assertion::Node { .. } => true,
            Assertion::Edge {
                from, to, relation, ..
            } => from != to && !relation.is_empty() && nodes.contains(from) && nodes.contains(to),
        })
        .collect()
}

fn dedup_nonempty(items: Vec<String>, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let item = item.trim().to_owned();
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
        if out.len() == max {
            break;
        }
    }
    out
}
