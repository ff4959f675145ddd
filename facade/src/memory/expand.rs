//! Expand and context on a [`Memory`]: the full card of an event, a graph
//! node with its edges, a block at a chosen level (re-anchoring its decay),
//! and the context of ready blocks at their decayed levels (spec §6, §11.8).
//! Every expand is recorded as a retrieval batch, so its refs can be
//! assessed and used like a search's.

use strataflow_log::record::{
    Actor, Block, BlockSummary, EvidenceRef, Governance, GovernanceAction, Message, Record,
    RecordKind, RefKind,
};
use strataflow_log::{Durability, RecordId, Timestamp};
use strataflow_materializers::block_levels::ThreadLevels;
use strataflow_materializers::event_status::{EventStatus, chain_tail};
use strataflow_materializers::graph_state::{EdgeState, NodeState};
use strataflow_operators::decay::{ExpandTarget, expand_level, level_label};
use strataflow_operators::layers::{TranscriptMessage, render_raw};

use super::search::SearchRequest;
use super::{Expected, Memory, MemoryError, QueryError};

/// A source message of an expanded event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SourceMessage {
    /// External id.
    pub id: String,
    /// Speaker or role.
    pub speaker: String,
    /// Verbatim content.
    pub content: String,
    /// When it was written.
    pub time: strataflow_log::SourceTime,
}

/// `expand event`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ExpandedEvent {
    /// The retrieval batch.
    pub batch: Option<RecordId>,
    /// The event id.
    pub id: RecordId,
    /// Its status.
    pub status: EventStatus,
    /// Its weight now.
    pub weight: f64,
    /// The full card.
    pub event: strataflow_log::record::Event,
    /// The messages it cites.
    pub source_messages: Vec<SourceMessage>,
}

/// `expand node`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ExpandedNode {
    /// The retrieval batch.
    pub batch: Option<RecordId>,
    /// The node (facts valid at the requested time, or all).
    pub node: NodeState,
    /// Edges from or to it.
    pub edges: Vec<EdgeState>,
}

/// A block rendered at a level.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockView {
    /// The block.
    pub block: RecordId,
    /// Its thread.
    pub thread: String,
    /// First and last turn.
    pub turns: (u32, u32),
    /// Ready blocks after it.
    pub age: u32,
    /// Level shown.
    pub level: u8,
    /// The level's label.
    pub label: &'static str,
    /// The content at that level.
    pub content: String,
    /// The retrieval batch (expansions only).
    pub batch: Option<RecordId>,
}

impl Memory {
    /// The full card of an event of `tenant` with its source messages;
    /// recorded as a batch.
    pub(crate) fn expand_event(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<ExpandedEvent, MemoryError> {
        let stored = self.show(tenant, id)?;
        let Record::Event(event) = stored.record else {
            return Err(QueryError::WrongKind {
                id: stored.id,
                kind: stored.record.kind(),
                expected: Expected::Event,
            }
            .into());
        };
        let mut source_messages = Vec::new();
        for m in &event.source_messages {
            if let Some(Record::Message(msg)) = self.store.get(m)?.map(|s| s.record) {
                source_messages.push(SourceMessage {
                    id: msg.external_id.clone(),
                    speaker: msg
                        .speaker
                        .clone()
                        .unwrap_or_else(|| msg.role.label().to_owned()),
                    content: msg.content,
                    time: msg.time,
                });
            }
        }
        let statuses = self.event_status(&event.tenant)?;
        let status = statuses
            .get(&stored.id)
            .map_or(EventStatus::Active, |s| s.status);
        let weight = self
            .weights_with(&event.tenant, &statuses)?
            .get(&stored.id)
            .map_or(1.0, |w| w.weight);
        let batch = self.record_expansion(
            &event.tenant,
            "expand event",
            id,
            EvidenceRef {
                kind: RefKind::Event,
                id: stored.id,
                level: None,
            },
        )?;
        Ok(ExpandedEvent {
            batch,
            id: stored.id,
            status,
            weight,
            event,
            source_messages,
        })
    }

    /// A graph node (by the id of one of its assertions) with its edges,
    /// optionally as valid at `at`; recorded as a batch.
    pub(crate) fn expand_node(
        &self,
        profile: Option<&str>,
        tenant: &str,
        id: &str,
        at: Option<Timestamp>,
    ) -> Result<ExpandedNode, MemoryError> {
        let stored = self.show(tenant, id)?;
        if stored.record.kind() != RecordKind::GraphAssertion {
            return Err(QueryError::WrongKind {
                id: stored.id,
                kind: stored.record.kind(),
                expected: Expected::GraphNode,
            }
            .into());
        }
        let graph = self.graph(profile, tenant)?;
        let graph = match at {
            Some(t) => graph.at(t),
            None => graph,
        };
        let node = graph
            .nodes()
            .iter()
            .find(|n| n.assertions.contains(&stored.id))
            .cloned()
            .ok_or(QueryError::NoNode {
                assertion: stored.id,
            })?;
        let edges = graph
            .edges()
            .iter()
            .filter(|e| e.from == node.key || e.to == node.key)
            .cloned()
            .collect();
        let batch = self.record_expansion(
            tenant,
            "expand node",
            id,
            EvidenceRef {
                kind: RefKind::Node,
                id: stored.id,
                level: None,
            },
        )?;
        Ok(ExpandedNode { batch, node, edges })
    }

    /// Expands a ready block to a level (`next`, `raw`, `L0`…`L5`): records
    /// the expansion, so later decay starts from that level, and a batch.
    pub(crate) fn expand_block(
        &self,
        profile: Option<&str>,
        tenant: &str,
        id: &str,
        target: ExpandTarget,
    ) -> Result<BlockView, MemoryError> {
        let stored = self.show(tenant, id)?;
        let Record::Block(block) = stored.record else {
            return Err(QueryError::WrongKind {
                id: stored.id,
                kind: stored.record.kind(),
                expected: Expected::Block,
            }
            .into());
        };
        let levels = self.thread_levels(profile, &block.tenant, &block.thread)?;
        let Some(current) = levels.get(&stored.id) else {
            return Err(QueryError::BlockNotReady { block: stored.id }.into());
        };
        let level = expand_level(target, current.level);
        let earlier: Vec<(RecordId, Governance)> = self
            .store
            .children_of_kind(&stored.id, RecordKind::Governance)?
            .into_iter()
            .filter_map(|s| match s.record {
                Record::Governance(g) => Some((s.id, g)),
                _ => None,
            })
            .collect();
        let record = Record::Governance(Governance {
            tenant: block.tenant.clone(),
            target: stored.id,
            action: GovernanceAction::ExpandBlock { level },
            actor: Actor::Agent,
            reason: None,
            previous: chain_tail(&earlier),
        });
        self.store.append(&[record], Durability::Sync)?;
        let after = self.thread_levels(profile, &block.tenant, &block.thread)?;
        let age = after.get(&stored.id).map_or(0, |b| b.age);
        let content = self.render(profile, &stored.id, &block, level)?;
        let batch = self.record_expansion(
            &block.tenant,
            "expand block",
            id,
            EvidenceRef {
                kind: RefKind::Block,
                id: stored.id,
                level: Some(level),
            },
        )?;
        Ok(BlockView {
            block: stored.id,
            thread: block.thread.clone(),
            turns: (block.start_turn, block.end_turn),
            age,
            level,
            label: level_label(level),
            content,
            batch,
        })
    }

    /// Ready blocks at their decayed levels, thread by thread (spec §6.3).
    pub(crate) fn context(
        &self,
        profile: Option<&str>,
        tenant: &str,
        thread: Option<&str>,
    ) -> Result<Vec<BlockView>, MemoryError> {
        let mut out = Vec::new();
        for (t, th, _) in self.store.thread_heads()? {
            if t != tenant || thread.is_some_and(|x| x != th) {
                continue;
            }
            let levels = self.thread_levels(profile, &t, &th)?;
            for b in &levels.blocks {
                let Some(Record::Block(block)) = self.store.get(&b.block)?.map(|s| s.record) else {
                    continue;
                };
                out.push(BlockView {
                    block: b.block,
                    thread: th.clone(),
                    turns: (block.start_turn, block.end_turn),
                    age: b.age,
                    level: b.level,
                    label: level_label(b.level),
                    content: self.render(profile, &b.block, &block, b.level)?,
                    batch: None,
                });
            }
        }
        Ok(out)
    }

    /// The level fold of one thread: readiness (the profile's extraction
    /// done or skipped) and expansions, in log order.
    fn thread_levels(
        &self,
        profile: Option<&str>,
        tenant: &str,
        thread: &str,
    ) -> Result<ThreadLevels, MemoryError> {
        let (key, fresh) = self.block_levels_key(profile)?;
        let (state, _) = self.refresh_keyed(&key, tenant, fresh)?;
        Ok(state.thread(thread))
    }

    /// A block's content at a level (spec §6.4).
    fn render(
        &self,
        profile: Option<&str>,
        id: &RecordId,
        block: &Block,
        level: u8,
    ) -> Result<String, MemoryError> {
        let summary = || -> Result<Option<BlockSummary>, MemoryError> {
            let (_, ops) = self.operators(profile)?;
            let s = strataflow_pipeline::derive::summary_state(&self.store, &ops, id)?;
            let Some(sid) = s.done.and_then(|d| d.outputs.first().copied()) else {
                return Ok(None);
            };
            Ok(match self.store.get(&sid)?.map(|s| s.record) {
                Some(Record::BlockSummary(s)) => Some(s),
                _ => None,
            })
        };
        Ok(match level {
            0 => summary()?.map_or_else(String::new, |s| {
                let tags = if s.tags.is_empty() {
                    "none".to_owned()
                } else {
                    s.tags.join(", ")
                };
                format!("{}\nTags: {tags}", s.title)
            }),
            1 => summary()?.map_or_else(String::new, |s| s.summary),
            2 => summary()?.map_or_else(String::new, |s| {
                if s.key_points.is_empty() {
                    s.summary
                } else {
                    s.key_points
                        .iter()
                        .map(|p| format!("- {p}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                }
            }),
            3 => block.l3.clone(),
            4 => block.l4.clone(),
            _ => {
                let mut messages: Vec<Message> = Vec::new();
                for m in &block.messages {
                    if let Some(Record::Message(msg)) = self.store.get(m)?.map(|s| s.record) {
                        messages.push(msg);
                    }
                }
                let transcript: Vec<TranscriptMessage<'_>> =
                    messages.iter().map(TranscriptMessage::from).collect();
                render_raw(&transcript)
            }
        })
    }

    fn record_expansion(
        &self,
        tenant: &str,
        call: &str,
        query: &str,
        target: EvidenceRef,
    ) -> Result<Option<RecordId>, MemoryError> {
        let hit = super::search::SearchHit::expansion(target);
        let request = SearchRequest {
            query: query.to_owned(),
            ..SearchRequest::default()
        };
        Ok(self.record_batch(tenant, call, &request, vec![hit])?.batch)
    }
}
