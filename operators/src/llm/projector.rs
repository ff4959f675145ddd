//! `llm-projector@1`: graph assertions from a batch of events by a model
//! (spec §10), through the `record_graph` tool.
//!
//! # Request
//!
//! The system prompt is `operators/prompts/projector.md`. The user turn
//! lists the batch's events (duplicates once) as JSON lines with refs `e1…`:
//! title, summary, quotes, participants (the speaker first), type, status,
//! mention time and happened interval.
//!
//! # Answer → assertions
//!
//! The answer has `nodes` (each with its own `ref`, `type`, `name`,
//! optional `aliases`, `tags`, optional `facts` `{key, mode, values,
//! valid_from?, valid_to?}`, `sources`, optional `confidence`) and `edges`
//! (`from` / `to` node refs, `relation`, optional `functional`,
//! `valid_from`, `valid_to`, `confidence`, and `sources`). They become
//! assertions shaped like the heuristic projector's:
//!
//! - `sources` refs → event ids of the batch; a ref outside the batch, or
//!   no source, fails the run (spec §10.2: an assertion cites only events
//!   of the batch). An edge whose `from` or `to` is not a node ref of the
//!   answer fails the run.
//! - A node's key is its type and normalized name
//!   ([`crate::projector::heuristic::normalize_name`]); nodes of the same
//!   key are merged (aliases, tags, facts and sources united), as are edges
//!   of the same (from, to, relation).
//! - Relations are snake_case (`Works at` → `works_at`). Validity: the
//!   answer's `valid_from` (start of the period) / `valid_to` (its end),
//!   in the offset of the first cited event's mention; else valid from the
//!   earliest time of the cited events (a planned event's mention, else its
//!   `happened_start`, else its mention), as in the heuristic projector.
//! - Confidence 0–1 (default 0.8) becomes per-mille. Nodes come sorted by
//!   (type, key), then edges by (from, to, relation); the pipeline then
//!   applies [`crate::validate::assertions`] (self-loops and edges without
//!   both nodes are dropped there).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};
use strataflow_record::record::{
    Assertion, Event, Fact, FactMode, GraphAssertion, NodeKey, NodeType, Occurrence, Precision,
};
use strataflow_record::{Digest, RecordId, Timestamp};

use super::answer::{Fields, failed, time_field};
use super::prompt::{
    Refs, estimate_request_tokens, operator_config_hash, push_json_line, request, retry_note,
};
use crate::model::{ModelGateway, ModelRequest, ToolSpec};
use crate::operator::{OperatorError, OperatorId, ProjectionInput, Projector};
use crate::projector::heuristic::normalize_name;

/// The system prompt.
pub const PROMPT: &str = include_str!("../../prompts/projector.md");
/// The tool the model must call.
pub const TOOL_NAME: &str = "record_graph";
/// Most output tokens.
pub const MAX_TOKENS: u32 = 4096;
/// Confidence of an assertion whose answer gives none, in per-mille.
pub const DEFAULT_CONFIDENCE_MILLI: u16 = 800;
/// Most tags kept per node.
pub const MAX_NODE_TAGS: usize = 12;
/// Most aliases kept per node.
pub const MAX_NODE_ALIASES: usize = 20;

/// Its operator id.
pub fn id() -> OperatorId {
    OperatorId::new("llm-projector", 1)
}

const NODE_TYPES: [(&str, NodeType); 5] = [
    ("person", NodeType::Person),
    ("project", NodeType::Project),
    ("organization", NodeType::Organization),
    ("tool", NodeType::Tool),
    ("place", NodeType::Place),
];

const FACT_MODES: [(&str, FactMode); 3] = [
    ("state", FactMode::State),
    ("set", FactMode::Set),
    ("relation", FactMode::Relation),
];

/// The `record_graph` tool and its JSON Schema.
pub fn tool() -> ToolSpec {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let sources = json!({
        "type": "array", "minItems": 1,
        "items": {"type": "string", "pattern": "^e[0-9]+$"}
    });
    let time = json!({"type": ["string", "null"], "description": "YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339."});
    let confidence = json!({"type": "number", "minimum": 0, "maximum": 1});
    let fact = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["key", "mode", "values"],
        "properties": {
            "key": {"type": "string"},
            "mode": {"type": "string", "enum": ["state", "set", "relation"]},
            "values": strings,
            "valid_from": time,
            "valid_to": time,
        },
    });
    let node = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["ref", "type", "name", "tags", "sources"],
        "properties": {
            "ref": {"type": "string"},
            "type": {"type": "string", "enum": ["person", "project", "organization", "tool", "place"]},
            "name": {"type": "string"},
            "aliases": strings,
            "tags": strings,
            "facts": {"type": "array", "items": fact},
            "sources": sources,
            "confidence": confidence,
        },
    });
    let edge = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["from", "to", "relation", "sources"],
        "properties": {
            "from": {"type": "string"},
            "to": {"type": "string"},
            "relation": {"type": "string"},
            "functional": {"type": "boolean"},
            "valid_from": time,
            "valid_to": time,
            "sources": sources,
            "confidence": confidence,
        },
    });
    ToolSpec {
        name: TOOL_NAME.into(),
        description: "Record the entities and relationships the events state.".into(),
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["nodes", "edges"],
            "properties": {
                "nodes": {"type": "array", "items": node},
                "edges": {"type": "array", "items": edge},
            },
        }),
    }
}

/// One event of the batch as a JSON line.
#[derive(serde::Serialize)]
struct EventLine<'a> {
    r#ref: String,
    title: &'a str,
    summary: &'a str,
    quotes: &'a [String],
    participants: &'a [String],
    event_type: &'static str,
    status: Occurrence,
    mentioned_at: String,
    happened_start: Option<String>,
    happened_end: Option<String>,
    precision: Precision,
}

/// The batch's events, each once, in order.
fn unique_events<'a>(input: &ProjectionInput<'a>) -> Vec<&'a (RecordId, Event)> {
    let mut seen = BTreeSet::new();
    input
        .events
        .iter()
        .filter(|(id, _)| seen.insert(*id))
        .collect()
}

/// The request for a batch with model `model`.
pub fn build_request(model: &str, input: &ProjectionInput<'_>) -> ModelRequest {
    let events = unique_events(input);
    let refs = Refs::new('e', events.iter().map(|(id, _)| *id).collect());
    let mut user = String::from("Events of the batch (the only legal sources):\n");
    for (i, (_, e)) in events.iter().enumerate() {
        let t = &e.temporal;
        push_json_line(
            &mut user,
            &EventLine {
                r#ref: refs.name(i),
                title: &e.title,
                summary: &e.summary,
                quotes: &e.quotes,
                participants: &t.participants,
                event_type: t.event_type.name(),
                status: t.status,
                mentioned_at: t.mentioned_at.to_rfc3339(),
                happened_start: t.happened_start.map(|x| x.to_rfc3339()),
                happened_end: t.happened_end.map(|x| x.to_rfc3339()),
                precision: t.precision,
            },
        );
    }
    if let Some(note) = retry_note(input.attempt, TOOL_NAME) {
        user.push('\n');
        user.push_str(&note);
        user.push('\n');
    }
    request(id(), model, PROMPT, user, tool(), MAX_TOKENS)
}

/// A node being assembled from the answer.
struct NodeAcc {
    name: String,
    aliases: Vec<String>,
    tags: Vec<String>,
    facts: Vec<Fact>,
    sources: BTreeSet<RecordId>,
    confidence: u16,
}

/// An edge being assembled from the answer.
struct EdgeAcc {
    from: NodeKey,
    to: NodeKey,
    relation: String,
    functional: bool,
    valid_from: Option<Timestamp>,
    valid_to: Option<Timestamp>,
    sources: BTreeSet<RecordId>,
    confidence: u16,
}

/// Sort key of a node: type rank, then normalized name.
type NodeOrder = (u8, String);

/// The batch as the answer cites it.
struct Batch<'a> {
    refs: Refs,
    events: Vec<&'a (RecordId, Event)>,
}

impl Batch<'_> {
    /// The events a `sources` field cites, in batch order (never empty).
    fn sources(&self, f: &Fields<'_>) -> Result<Vec<usize>, OperatorError> {
        let mut out = Vec::new();
        for r in f.strings("sources")? {
            let p = self.refs.position(&r).ok_or_else(|| {
                failed(
                    f.at(),
                    format_args!("source `{r}` is not an event of the batch"),
                )
            })?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out.sort_unstable();
        if out.is_empty() {
            return Err(failed(
                f.at(),
                "`sources` is empty: cite at least one event ref",
            ));
        }
        Ok(out)
    }

    fn ids(&self, positions: &[usize]) -> BTreeSet<RecordId> {
        positions
            .iter()
            .filter_map(|p| self.events.get(*p).map(|(id, _)| *id))
            .collect()
    }

    /// The earliest time of the cited events (see the module docs) and the
    /// UTC offset of the first one's mention.
    fn time(&self, positions: &[usize]) -> (Option<Timestamp>, Option<i16>) {
        let cited: Vec<&Event> = positions
            .iter()
            .filter_map(|p| self.events.get(*p).map(|(_, e)| e))
            .collect();
        let time = cited
            .iter()
            .map(|e| {
                let t = &e.temporal;
                let mentioned = t.mentioned_at.instant();
                if t.status == Occurrence::Planned {
                    mentioned
                } else {
                    t.happened_start.unwrap_or(mentioned)
                }
            })
            .min();
        let offset = cited
            .first()
            .and_then(|e| e.temporal.mentioned_at.offset_minutes);
        (time, offset)
    }

    /// `valid_from` / `valid_to` of `f`, defaulting the start to the cited
    /// events' time; the end must not be before the start.
    fn validity(
        &self,
        f: &Fields<'_>,
        positions: &[usize],
    ) -> Result<(Option<Timestamp>, Option<Timestamp>), OperatorError> {
        let (default, offset) = self.time(positions);
        let from = time_field(f, "valid_from", offset)?.map(|i| i.start);
        let to = time_field(f, "valid_to", offset)?.map(|i| i.end);
        let from = from.or(default);
        if let (Some(a), Some(b)) = (from, to)
            && b < a
        {
            return Err(failed(
                f.at(),
                format_args!(
                    "`valid_to` {} is before `valid_from` {}",
                    b.to_rfc3339(),
                    a.to_rfc3339()
                ),
            ));
        }
        Ok((from, to))
    }
}

/// `Works at` → `works_at`.
fn snake_case(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| c.is_whitespace() || c == '-')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    let item = item.trim();
    if !item.is_empty() && !list.iter().any(|x| x == item) {
        list.push(item.to_owned());
    }
}

/// Reads an answer into the assertions of `input`'s batch.
pub fn parse_answer(
    input: &ProjectionInput<'_>,
    arguments: &Value,
) -> Result<Vec<GraphAssertion>, OperatorError> {
    let events = unique_events(input);
    let batch = Batch {
        refs: Refs::new('e', events.iter().map(|(id, _)| *id).collect()),
        events,
    };
    let f = Fields::of(arguments, "answer")?;
    let node_items = f.array("nodes")?;
    let edge_items = f.array("edges")?;

    let mut refs: BTreeMap<String, (NodeOrder, NodeKey)> = BTreeMap::new();
    let mut nodes: BTreeMap<NodeOrder, (NodeKey, NodeAcc)> = BTreeMap::new();
    for (i, item) in node_items.iter().enumerate() {
        let at = format!("node {}", i + 1);
        let n = Fields::of(item, &at)?;
        let r = n.string("ref")?.trim().to_owned();
        if r.is_empty() {
            return Err(failed(&at, "`ref` is empty"));
        }
        if refs.contains_key(&r) {
            return Err(failed(
                &at,
                format_args!("ref `{r}` is used by an earlier node"),
            ));
        }
        let node_type = n.one_of("type", &NODE_TYPES)?;
        let name = n.string("name")?.trim().to_owned();
        let key = NodeKey {
            node_type,
            name: normalize_name(&name),
        };
        if key.name.is_empty() {
            return Err(failed(&at, format_args!("`name` `{name}` is empty")));
        }
        let positions = batch.sources(&n)?;
        let mut facts = Vec::new();
        for (j, fact) in n.opt_array("facts")?.iter().enumerate() {
            let fat = format!("{at} fact {}", j + 1);
            let ff = Fields::of(fact, &fat)?;
            let fact_key = snake_case(ff.string("key")?);
            if fact_key.is_empty() {
                return Err(failed(&fat, "`key` is empty"));
            }
            let mode = ff.one_of("mode", &FACT_MODES)?;
            let mut values = Vec::new();
            for v in ff.strings("values")? {
                push_unique(&mut values, &v);
            }
            if values.is_empty() {
                return Err(failed(&fat, "`values` is empty"));
            }
            let (valid_from, valid_to) = batch.validity(&ff, &positions)?;
            facts.push(Fact {
                key: fact_key,
                values,
                mode,
                valid_from,
                valid_to,
            });
        }
        let order = (node_type.rank(), key.name.clone());
        let confidence = n.confidence_milli("confidence", DEFAULT_CONFIDENCE_MILLI)?;
        let acc = &mut nodes
            .entry(order.clone())
            .or_insert_with(|| {
                (
                    key.clone(),
                    NodeAcc {
                        name: name.clone(),
                        aliases: Vec::new(),
                        tags: Vec::new(),
                        facts: Vec::new(),
                        sources: BTreeSet::new(),
                        confidence,
                    },
                )
            })
            .1;
        for a in n.opt_strings("aliases")? {
            if normalize_name(&a) != key.name {
                push_unique(&mut acc.aliases, &a);
            }
        }
        for t in n.strings("tags")? {
            push_unique(&mut acc.tags, &t);
        }
        for fact in facts {
            if !acc.facts.contains(&fact) {
                acc.facts.push(fact);
            }
        }
        acc.sources.extend(batch.ids(&positions));
        acc.confidence = acc.confidence.max(confidence);
        refs.insert(r, (order, key));
    }

    let mut edges: BTreeMap<(NodeOrder, NodeOrder, String), EdgeAcc> = BTreeMap::new();
    for (i, item) in edge_items.iter().enumerate() {
        let at = format!("edge {}", i + 1);
        let e = Fields::of(item, &at)?;
        let end = |field: &str| -> Result<(NodeOrder, NodeKey), OperatorError> {
            let r = e.string(field)?.trim();
            refs.get(r).cloned().ok_or_else(|| {
                failed(
                    &at,
                    format_args!("`{field}` ref `{r}` is not a node of the answer"),
                )
            })
        };
        let (from_order, from) = end("from")?;
        let (to_order, to) = end("to")?;
        let relation = snake_case(e.string("relation")?);
        if relation.is_empty() {
            return Err(failed(&at, "`relation` is empty"));
        }
        let functional = e.opt_boolean("functional")?.unwrap_or(false);
        let positions = batch.sources(&e)?;
        let (valid_from, valid_to) = batch.validity(&e, &positions)?;
        let confidence = e.confidence_milli("confidence", DEFAULT_CONFIDENCE_MILLI)?;
        let acc = edges
            .entry((from_order, to_order, relation.clone()))
            .or_insert_with(|| EdgeAcc {
                from,
                to,
                relation,
                functional,
                valid_from,
                valid_to,
                sources: BTreeSet::new(),
                confidence,
            });
        acc.functional |= functional;
        acc.valid_from = match (acc.valid_from, valid_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        acc.valid_to = match (acc.valid_to, valid_to) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        acc.sources.extend(batch.ids(&positions));
        acc.confidence = acc.confidence.max(confidence);
    }

    let mut out = Vec::with_capacity(nodes.len() + edges.len());
    for (key, acc) in nodes.into_values() {
        out.push(GraphAssertion {
            tenant: input.tenant.to_owned(),
            source_events: acc.sources.into_iter().collect(),
            assertion: Assertion::Node {
                key,
                name: acc.name,
                aliases: acc.aliases.into_iter().take(MAX_NODE_ALIASES).collect(),
                tags: acc.tags.into_iter().take(MAX_NODE_TAGS).collect(),
                facts: acc.facts,
            },
            confidence_milli: acc.confidence,
        });
    }
    for acc in edges.into_values() {
        out.push(GraphAssertion {
            tenant: input.tenant.to_owned(),
            source_events: acc.sources.into_iter().collect(),
            assertion: Assertion::Edge {
                from: acc.from,
                to: acc.to,
                relation: acc.relation,
                functional: acc.functional,
                valid_from: acc.valid_from,
                valid_to: acc.valid_to,
            },
            confidence_milli: acc.confidence,
        });
    }
    Ok(out)
}

/// The model-backed projector.
#[derive(Clone)]
pub struct LlmProjector {
    gateway: Arc<dyn ModelGateway>,
    model: String,
}

impl std::fmt::Debug for LlmProjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmProjector")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl LlmProjector {
    /// A projector asking `model` through `gateway`.
    pub fn new(gateway: Arc<dyn ModelGateway>, model: &str) -> Self {
        Self {
            gateway,
            model: model.to_owned(),
        }
    }

    /// The request it makes for `input`.
    pub fn request(&self, input: &ProjectionInput<'_>) -> ModelRequest {
        build_request(&self.model, input)
    }

    /// Approximate input tokens of that request.
    pub fn estimate_tokens(&self, input: &ProjectionInput<'_>) -> u64 {
        estimate_request_tokens(&self.request(input))
    }
}

impl Projector for LlmProjector {
    fn id(&self) -> OperatorId {
        id()
    }

    fn config_hash(&self) -> Digest {
        operator_config_hash(&id(), &self.model, PROMPT, &tool(), MAX_TOKENS)
    }

    /// Fails when an event of the batch belongs to another tenant, or when
    /// the answer breaks the contract; an empty batch asks nothing.
    fn project(&self, input: &ProjectionInput<'_>) -> Result<Vec<GraphAssertion>, OperatorError> {
        for (id, event) in input.events {
            if event.tenant != input.tenant {
                return Err(OperatorError::Failed(format!(
                    "event {id} belongs to tenant `{}`, not to `{}`",
                    event.tenant, input.tenant
                )));
            }
        }
        let Some((first, _)) = input.events.first() else {
            return Ok(Vec::new());
        };
        let subject = format!(
            "batch of {} event(s) from {} of tenant `{}`",
            input.events.len(),
            first.short(),
            input.tenant
        );
        let reply = self.gateway.complete(&self.request(input), &subject)?;
        parse_answer(input, &reply.arguments)
    }

    /// The fixed part of a request (prompt and schema) plus an eighth of
    /// the block's message characters: its events are not known before
    /// extraction, and their cards are usually shorter than the block.
    fn planned_input_tokens(&self, block: &crate::operator::BlockInput<'_>) -> Option<u64> {
        let fixed = estimate_request_tokens(&self.request(&ProjectionInput {
            tenant: &block.block.tenant,
            events: &[],
            attempt: 1,
        }));
        let chars: usize = block.messages.iter().map(|(_, m)| m.content.len()).sum();
        Some(fixed + (chars as u64).div_ceil(8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strataflow_record::SourceTime;
    use strataflow_record::record::{Criticality, EventTemporal, EventType, Scope, TimeBasis};

    use crate::llm::testing::FakeGateway;

    fn event(title: &str, status: Occurrence, happened: Option<&str>) -> Event {
        let t = |s: &str| SourceTime::parse_rfc3339(s).unwrap();
        Event {
            tenant: "acme".into(),
            block: RecordId([9; 32]),
            source_messages: vec![RecordId([1; 32])],
            title: title.into(),
            summary: title.into(),
            narrative: String::new(),
            tags: vec![],
            quotes: vec![format!("{title}.")],
            temporal: EventTemporal {
                mentioned_at: t("2024-05-10T21:30:00+02:00"),
                happened_start: happened.map(|h| t(h).instant()),
                happened_end: happened.map(|h| t(h).instant()),
                original_text: None,
                precision: if happened.is_some() {
                    Precision::Instant
                } else {
                    Precision::Unknown
                },
                basis: TimeBasis::Explicit,
                status,
                participants: vec!["Ana".into()],
                event_type: EventType::Other,
                supersedes: vec![],
                conflicts_with: vec![],
            },
            scope: Scope::User,
            criticality: Criticality::Routine,
            confidence_milli: 900,
        }
    }

    fn batch() -> Vec<(RecordId, Event)> {
        vec![
            (
                RecordId([11; 32]),
                event(
                    "I went to Porto with my sister Marta",
                    Occurrence::Occurred,
                    Some("2024-05-04T10:00:00+02:00"),
                ),
            ),
            (
                RecordId([12; 32]),
                event("I work at Acme Labs", Occurrence::Ongoing, None),
            ),
        ]
    }

    fn answer() -> Value {
        json!({
            "nodes": [
                {"ref": "n1", "type": "person", "name": "Ana", "tags": ["speaker"], "sources": ["e1", "e2"],
                 "facts": [{"key": "likes", "mode": "set", "values": ["travel", "travel"]}]},
                {"ref": "n2", "type": "person", "name": "Marta", "aliases": ["marta", "Martinha"], "tags": ["family"], "sources": ["e1"], "confidence": 0.95},
                {"ref": "n3", "type": "organization", "name": "Acme Labs", "tags": ["employer"], "sources": ["e2"]},
                {"ref": "n4", "type": "place", "name": "Porto", "tags": ["place"], "sources": ["e1"]}
            ],
            "edges": [
                {"from": "n1", "to": "n2", "relation": "sister", "sources": ["e1"]},
                {"from": "n1", "to": "n3", "relation": "Works at", "functional": true, "sources": ["e2"], "valid_from": "2023"},
                {"from": "n1", "to": "n4", "relation": "visited", "sources": ["e1"]}
            ]
        })
    }

    fn project(answer: Value, attempt: u32) -> Result<Vec<GraphAssertion>, OperatorError> {
        let events = batch();
        LlmProjector::new(FakeGateway::answering(answer), "m").project(&ProjectionInput {
            tenant: "acme",
            events: &events,
            attempt,
        })
    }

    fn person(name: &str) -> NodeKey {
        NodeKey {
            node_type: NodeType::Person,
            name: name.into(),
        }
    }

    #[test]
    fn valid_answer_becomes_assertions() {
        let out = project(answer(), 1).unwrap();
        assert_eq!(out.len(), 7);
        let (e1, e2) = (RecordId([11; 32]), RecordId([12; 32]));
        let Assertion::Node {
            key,
            name,
            facts,
            tags,
            ..
        } = &out[0].assertion
        else {
            panic!("{out:?}")
        };
        assert_eq!((key, name.as_str()), (&person("ana"), "Ana"));
        assert_eq!(tags, &vec!["speaker"]);
        assert_eq!(out[0].source_events, vec![e1, e2]);
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].mode, FactMode::Set);
        assert_eq!(facts[0].values, vec!["travel"]);
        // Valid from the earliest time of the events: e1 happened
        // 2024-05-04, e2 (ongoing, no time) was mentioned 2024-05-10.
        let happened = SourceTime::parse_rfc3339("2024-05-04T10:00:00+02:00")
            .unwrap()
            .instant();
        assert_eq!(facts[0].valid_from, Some(happened));
        let Assertion::Node { aliases, .. } = &out[1].assertion else {
            panic!()
        };
        assert_eq!(
            aliases,
            &vec!["Martinha"],
            "an alias equal to the name is dropped"
        );
        assert_eq!(out[1].confidence_milli, 950);
        assert_eq!(out[0].confidence_milli, DEFAULT_CONFIDENCE_MILLI);
        // Edges after nodes, sorted by (from, to, relation).
        let edges: Vec<(String, bool, Option<Timestamp>)> = out[4..]
            .iter()
            .map(|a| match &a.assertion {
                Assertion::Edge {
                    to,
                    relation,
                    functional,
                    valid_from,
                    ..
                } => (format!("{}:{relation}", to.name), *functional, *valid_from),
                Assertion::Node { .. } => (String::new(), false, None),
            })
            .collect();
        let year = SourceTime::parse_rfc3339("2023-01-01T00:00:00+02:00")
            .unwrap()
            .instant();
        assert_eq!(
            edges,
            vec![
                ("marta:sister".into(), false, Some(happened)),
                ("acme labs:works_at".into(), true, Some(year)),
                ("porto:visited".into(), false, Some(happened)),
            ]
        );
        // The common validation keeps everything.
        assert_eq!(crate::validate::assertions(&[e1, e2], out.clone()), out);
        // ...but against a batch without e2 it drops what cites e2 (Ana,
        // Acme Labs) and the edges that lose their anchor node.
        let kept = crate::validate::assertions(&[e1], out);
        let names: Vec<&str> = kept
            .iter()
            .map(|a| match &a.assertion {
                Assertion::Node { name, .. } => name.as_str(),
                Assertion::Edge { relation, .. } => relation.as_str(),
            })
            .collect();
        assert_eq!(names, vec!["Marta", "Porto"]);
    }

    #[test]
    fn sources_outside_the_batch_fail() {
        let mut a = answer();
        a["edges"][2]["sources"] = json!(["e3"]);
        assert_eq!(
            project(a, 1),
            Err(OperatorError::Failed(
                "edge 3: source `e3` is not an event of the batch".into()
            ))
        );
        let mut a = answer();
        a["nodes"][1]["sources"] = json!([]);
        assert_eq!(
            project(a, 1).unwrap_err().to_string(),
            "node 2: `sources` is empty: cite at least one event ref"
        );
    }

    #[test]
    fn contract_errors_name_item_and_field() {
        let cases = [
            (
                "/nodes/0/name",
                json!(null),
                "node 1: missing required field `name`",
            ),
            (
                "/nodes/3/type",
                json!("city"),
                "node 4: field `type` is `city`, expected one of person, project, organization, tool, place",
            ),
            (
                "/edges/0/to",
                json!("n9"),
                "edge 1: `to` ref `n9` is not a node of the answer",
            ),
            (
                "/edges/1/valid_from",
                json!("since 2023"),
                "edge 2: field `valid_from` is `since 2023`, not a time (expected YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339)",
            ),
            (
                "/nodes/0/facts/0/mode",
                json!("list"),
                "node 1 fact 1: field `mode` is `list`, expected one of state, set, relation",
            ),
            (
                "/nodes/2/ref",
                json!("n1"),
                "node 3: ref `n1` is used by an earlier node",
            ),
        ];
        for (path, value, expected) in cases {
            let mut a = answer();
            if let Some(slot) = a.pointer_mut(path) {
                *slot = value;
            }
            assert_eq!(project(a, 1).unwrap_err().to_string(), expected, "{path}");
        }
    }

    #[test]
    fn same_key_nodes_merge_and_self_loops_are_left_to_validation() {
        let a = json!({
            "nodes": [
                {"ref": "a", "type": "person", "name": "Ana", "tags": ["speaker"], "sources": ["e1"]},
                {"ref": "b", "type": "person", "name": "ana ", "tags": ["friend"], "sources": ["e2"]}
            ],
            "edges": [{"from": "a", "to": "b", "relation": "knows", "sources": ["e1"]}]
        });
        let out = project(a, 1).unwrap();
        assert_eq!(out.len(), 2);
        let Assertion::Node { tags, .. } = &out[0].assertion else {
            panic!()
        };
        assert_eq!(tags, &vec!["speaker", "friend"]);
        assert_eq!(out[0].source_events.len(), 2);
        let kept = crate::validate::assertions(&[RecordId([11; 32]), RecordId([12; 32])], out);
        assert_eq!(kept.len(), 1, "the self-loop is dropped by validation");
    }

    #[test]
    fn requests_list_the_batch_and_retries_differ() {
        let events = batch();
        let input = |attempt| ProjectionInput {
            tenant: "acme",
            events: &events,
            attempt,
        };
        let first = build_request("m", &input(1));
        assert_eq!(first.canonical(), build_request("m", &input(1)).canonical());
        assert_ne!(first.key(), build_request("m", &input(2)).key());
        let user = &first.messages[1].content;
        assert!(
            user.contains(r#"{"ref":"e1","title":"I went to Porto with my sister Marta""#),
            "{user}"
        );
        assert!(user.contains(r#"{"ref":"e2","#));
        assert!(!user.contains(r#""ref":"e3""#));
        let op = |m: &str| LlmProjector::new(FakeGateway::answering(json!({})), m);
        assert_ne!(op("a").config_hash(), op("b").config_hash());
    }

    #[test]
    fn empty_batch_and_foreign_tenant() {
        let gateway = FakeGateway::answering(answer());
        let op = LlmProjector::new(gateway.clone(), "m");
        let none = op.project(&ProjectionInput {
            tenant: "acme",
            events: &[],
            attempt: 1,
        });
        assert_eq!(none, Ok(vec![]));
        assert!(gateway.requests().is_empty());
        let events = batch();
        let err = op.project(&ProjectionInput {
            tenant: "other",
            events: &events,
            attempt: 1,
        });
        assert!(matches!(err, Err(OperatorError::Failed(m)) if m.contains("tenant `acme`")));
    }
}
