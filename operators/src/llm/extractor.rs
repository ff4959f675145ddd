//! `llm-extractor@1`: event cards of a block by a model (spec §7), through
//! the `record_events` tool.
//!
//! # Request
//!
//! The system prompt is `operators/prompts/extractor.md`. The user turn
//! has, in this order: the block's L0 title and L1 summary (context), the
//! key points of the previous and next blocks when known (context only,
//! never a source), the timeline of earlier events as JSON lines with refs
//! `e1…` (the only events a new one may supersede or conflict with), the
//! target block's messages as JSON lines with refs `m1…` (system messages
//! left out), and from attempt 2 on a sentence saying an earlier answer
//! was rejected.
//!
//! # Answer → events
//!
//! - `sources` (refs) → `source_messages` (record ids, in block order,
//!   duplicates removed). A ref that is not a message of the
//!   block fails the run: `event 2: source `m99` is not a message of the
//!   block`.
//! - `mentioned_at` is the time of the earliest cited message of the block,
//!   never a time from the answer.
//! - `happened_start` / `happened_end`: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`
//!   (the whole period, in the mention's UTC offset), RFC 3339 or a local
//!   `YYYY-MM-DDTHH:MM[:SS]` (an instant). One of them, or both naming the
//!   same period, keep that period and its precision (year, month, day,
//!   instant); two different ones make a `range`; an end before the start
//!   fails the run naming both values. No time: precision and basis
//!   `unknown` whatever the answer says.
//! - `quotes` are kept only when they occur verbatim (whitespace aside) in
//!   a cited message.
//! - `supersedes` / `conflicts_with` refs → timeline ids; an unknown ref
//!   fails the run.
//! - `event_type` is normalized as in spec §2.5 (aliases, anything else →
//!   `other`); `status`, `basis`, `scope`, `criticality` must be one of
//!   their names; `confidence` (0–1, default 0.8) becomes per-mille.
//! - `should_extract: false` returns no events (any listed are ignored).

use std::sync::Arc;

use serde_json::{Value, json};
use strataflow_record::record::{
    Criticality, Event, EventTemporal, EventType, Message, Occurrence, Precision, Scope, TimeBasis,
};
use strataflow_record::{Digest, RecordId};

use super::answer::{Fields, failed, span};
use super::prompt::{
    Refs, estimate_request_tokens, operator_config_hash, push_json_line, render_messages, request,
    retry_note, shown_messages,
};
use crate::model::{ModelGateway, ModelRequest, ToolSpec};
use crate::operator::{Extraction, ExtractionInput, Extractor, OperatorError, OperatorId};

/// The system prompt.
pub const PROMPT: &str = include_str!("../../prompts/extractor.md");
/// The tool the model must call.
pub const TOOL_NAME: &str = "record_events";
/// Most output tokens.
pub const MAX_TOKENS: u32 = 4096;
/// Confidence of an event whose answer gives none, in per-mille.
pub const DEFAULT_CONFIDENCE_MILLI: u16 = 800;

/// Its operator id.
pub fn id() -> OperatorId {
    OperatorId::new("llm-extractor", 1)
}

const EVENT_TYPES: [&str; 11] = [
    "decision",
    "release",
    "task_completed",
    "plan",
    "change",
    "cancellation",
    "incident",
    "meeting",
    "collaboration",
    "migration",
    "other",
];

const STATUSES: [(&str, Occurrence); 5] = [
    ("occurred", Occurrence::Occurred),
    ("planned", Occurrence::Planned),
    ("cancelled", Occurrence::Cancelled),
    ("ongoing", Occurrence::Ongoing),
    ("unknown", Occurrence::Unknown),
];

const BASES: [(&str, TimeBasis); 4] = [
    ("explicit", TimeBasis::Explicit),
    ("relative", TimeBasis::Relative),
    ("inferred", TimeBasis::Inferred),
    ("unknown", TimeBasis::Unknown),
];

const SCOPES: [(&str, Scope); 3] = [
    ("user", Scope::User),
    ("project", Scope::Project),
    ("session", Scope::Session),
];

const CRITICALITIES: [(&str, Criticality); 4] = [
    ("routine", Criticality::Routine),
    ("preference", Criticality::Preference),
    ("identity", Criticality::Identity),
    ("safety", Criticality::Safety),
];

fn names<T>(table: &[(&str, T)]) -> Vec<String> {
    table.iter().map(|(n, _)| (*n).to_owned()).collect()
}

/// The `record_events` tool and its JSON Schema.
pub fn tool() -> ToolSpec {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let refs = |prefix: &str| json!({"type": "array", "items": {"type": "string", "pattern": format!("^{prefix}[0-9]+$")}});
    let time = json!({"type": ["string", "null"], "description": "YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339; null when unknown."});
    let sources = json!({
        "type": "array", "minItems": 1,
        "items": {"type": "string", "pattern": "^m[0-9]+$"}
    });
    let event = json!({
        "type": "object",
        "additionalProperties": false,
        "required": [
            "sources", "title", "summary", "quotes", "participants", "event_type", "status",
            "happened_start", "happened_end", "basis", "scope", "criticality"
        ],
        "properties": {
            "sources": sources,
            "title": {"type": "string"},
            "summary": {"type": "string"},
            "narrative": {"type": "string"},
            "tags": strings,
            "quotes": strings,
            "participants": strings,
            "event_type": {"type": "string", "enum": EVENT_TYPES},
            "status": {"type": "string", "enum": names(&STATUSES)},
            "happened_start": time,
            "happened_end": time,
            "time_text": {"type": ["string", "null"]},
            "basis": {"type": "string", "enum": names(&BASES)},
            "supersedes": refs("e"),
            "conflicts_with": refs("e"),
            "scope": {"type": "string", "enum": names(&SCOPES)},
            "criticality": {"type": "string", "enum": names(&CRITICALITIES)},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
    });
    ToolSpec {
        name: TOOL_NAME.into(),
        description: "Record the durable events stated in the target block's messages.".into(),
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["should_extract", "reason", "events"],
            "properties": {
                "should_extract": {"type": "boolean"},
                "reason": {"type": "string"},
                "events": {"type": "array", "items": event},
            },
        }),
    }
}

/// One timeline event as a JSON line.
#[derive(serde::Serialize)]
struct TimelineLine<'a> {
    r#ref: String,
    title: &'a str,
    event_type: &'static str,
    status: Occurrence,
    participants: &'a [String],
    mentioned_at: String,
    happened_start: Option<String>,
    happened_end: Option<String>,
}

/// The timeline refs `e1…` of an extraction input.
fn timeline_refs(input: &ExtractionInput<'_>) -> Refs {
    Refs::new('e', input.timeline.ids())
}

/// The request for an extraction input with model `model` (its timeline's
/// events read: an error is the run's).
pub fn build_request(
    model: &str,
    input: &ExtractionInput<'_>,
) -> Result<ModelRequest, OperatorError> {
    Ok(request_with(model, input, input.timeline.events()?))
}

/// [`build_request`] given the timeline's events (`earlier`).
pub(crate) fn request_with(
    model: &str,
    input: &ExtractionInput<'_>,
    earlier: &[(RecordId, Event)],
) -> ModelRequest {
    let mut user = String::new();
    let summary = input.summary;
    if !summary.title.trim().is_empty() || !summary.summary.trim().is_empty() {
        user.push_str(&format!(
            "Summary of the target block (context only): {} — {}\n\n",
            summary.title.trim(),
            summary.summary.trim()
        ));
    }
    for (which, points) in [
        ("previous", input.previous_key_points),
        ("next", input.next_key_points),
    ] {
        if let Some(points) = points.filter(|p| !p.is_empty()) {
            user.push_str(&format!(
                "Key points of the {which} block (context only, never a source):\n"
            ));
            for p in points {
                user.push_str(&format!("- {}\n", p.trim()));
            }
            user.push('\n');
        }
    }
    if earlier.is_empty() {
        user.push_str("Earlier events of the thread: none.\n\n");
    } else {
        user.push_str(
            "Earlier events of the thread (refs only for `supersedes` and `conflicts_with`):\n",
        );
        let refs = Refs::new('e', earlier.iter().map(|(id, _)| *id).collect());
        for (i, (_, e)) in earlier.iter().enumerate() {
            let t = &e.temporal;
            push_json_line(
                &mut user,
                &TimelineLine {
                    r#ref: refs.name(i),
                    title: &e.title,
                    event_type: t.event_type.name(),
                    status: t.status,
                    participants: &t.participants,
                    mentioned_at: t.mentioned_at.to_rfc3339(),
                    happened_start: t.happened_start.map(|x| x.to_rfc3339()),
                    happened_end: t.happened_end.map(|x| x.to_rfc3339()),
                },
            );
        }
        user.push('\n');
    }
    let (lines, _) = render_messages(&shown_messages(&input.target));
    user.push_str("Messages of the target block (the only legal sources):\n");
    user.push_str(&lines);
    if let Some(note) = retry_note(input.target.attempt, TOOL_NAME) {
        user.push('\n');
        user.push_str(&note);
        user.push('\n');
    }
    request(id(), model, PROMPT, user, tool(), MAX_TOKENS)
}

/// The standard event type of a model's label (spec §2.5): lowercase,
/// spaces, `_` and `-` removed, then the alias table; anything else is
/// `other`.
pub fn normalize_event_type(label: &str) -> EventType {
    let key: String = label
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_' && *c != '-')
        .collect();
    match key.as_str() {
        "decision" => EventType::Decision,
        "release" | "released" => EventType::Release,
        "taskcompleted" | "completed" => EventType::TaskCompleted,
        "plan" | "planned" => EventType::Plan,
        "change" => EventType::Change,
        "cancellation" | "cancelled" | "canceled" => EventType::Cancellation,
        "incident" => EventType::Incident,
        "meeting" => EventType::Meeting,
        "collaboration" => EventType::Collaboration,
        "migration" => EventType::Migration,
        _ => EventType::Other,
    }
}

/// Reads an answer into an extraction of `input`.
pub fn parse_answer(
    input: &ExtractionInput<'_>,
    arguments: &Value,
) -> Result<Extraction, OperatorError> {
    let f = Fields::of(arguments, "answer")?;
    let should_extract = f.boolean("should_extract")?;
    let reason = f.string("reason")?.trim().to_owned();
    let items = f.array("events")?;
    if !should_extract {
        return Ok(Extraction {
            should_extract,
            reason,
            events: Vec::new(),
        });
    }
    let shown = shown_messages(&input.target);
    let (_, message_refs) = render_messages(&shown);
    let timeline = timeline_refs(input);
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("event {}", i + 1);
        events.push(event_of(
            input,
            &shown,
            &message_refs,
            &timeline,
            item,
            &at,
        )?);
    }
    Ok(Extraction {
        should_extract,
        reason,
        events,
    })
}

fn event_of(
    input: &ExtractionInput<'_>,
    shown: &[(RecordId, &Message)],
    message_refs: &Refs,
    timeline: &Refs,
    item: &Value,
    at: &str,
) -> Result<Event, OperatorError> {
    let f = Fields::of(item, at)?;
    let cited = f.strings("sources")?;
    let mut positions: Vec<usize> = Vec::new();
    for s in &cited {
        let p = message_refs.position(s).ok_or_else(|| {
            failed(
                at,
                format_args!("source `{s}` is not a message of the block"),
            )
        })?;
        if !positions.contains(&p) {
            positions.push(p);
        }
    }
    positions.sort_unstable();
    let sources: Vec<&(RecordId, &Message)> =
        positions.iter().filter_map(|p| shown.get(*p)).collect();
    let Some(first) = sources.first() else {
        return Err(failed(
            at,
            "`sources` is empty: cite at least one message ref",
        ));
    };
    let mentioned_at = first.1.time;

    let title = f.string("title")?.to_owned();
    let summary = f.string("summary")?.to_owned();
    // `narrative` is optional in the tool's schema: none is empty.
    let narrative = f.opt_string("narrative")?.unwrap_or_default().to_owned();
    let quotes = f
        .strings("quotes")?
        .into_iter()
        .filter(|q| sources.iter().any(|(_, m)| quoted(&m.content, q)))
        .collect();
    let participants = dedup_trimmed(f.strings("participants")?);
    let event_type = normalize_event_type(f.string("event_type")?);
    let status = f.one_of("status", &STATUSES)?;
    let (happened_start, happened_end, precision) = span(
        &f,
        "happened_start",
        "happened_end",
        mentioned_at.offset_minutes,
    )?;
    let known = happened_start.is_some() || happened_end.is_some();
    let basis = f.one_of("basis", &BASES)?;
    let original_text = f
        .opt_string("time_text")?
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    let timeline_ids = |key: &str| -> Result<Vec<RecordId>, OperatorError> {
        let mut out = Vec::new();
        for r in f.opt_strings(key)? {
            let id = timeline.resolve(&r).ok_or_else(|| {
                failed(
                    at,
                    format_args!("`{key}` ref `{r}` is not an earlier event of the timeline"),
                )
            })?;
            if !out.contains(&id) {
                out.push(id);
            }
        }
        Ok(out)
    };
    let supersedes = timeline_ids("supersedes")?;
    let conflicts_with = timeline_ids("conflicts_with")?;
    let scope = f.one_of("scope", &SCOPES)?;
    let criticality = f.one_of("criticality", &CRITICALITIES)?;
    let confidence_milli = f.confidence_milli("confidence", DEFAULT_CONFIDENCE_MILLI)?;
    Ok(Event {
        tenant: input.target.block.tenant.clone(),
        block: input.target.id,
        source_messages: sources.iter().map(|(id, _)| *id).collect(),
        title,
        summary,
        narrative,
        tags: f.opt_strings("tags")?,
        quotes,
        temporal: EventTemporal {
            mentioned_at,
            happened_start,
            happened_end,
            original_text,
            precision: if known { precision } else { Precision::Unknown },
            basis: if known { basis } else { TimeBasis::Unknown },
            status,
            participants,
            event_type,
            supersedes,
            conflicts_with,
        },
        scope,
        criticality,
        confidence_milli,
    })
}

/// Whether `quote` occurs in `content`, whitespace runs compared as one
/// space.
fn quoted(content: &str, quote: &str) -> bool {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let q = squash(quote);
    !q.is_empty() && squash(content).contains(&q)
}

fn dedup_trimmed(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let item = item.trim().to_owned();
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The model-backed extractor.
#[derive(Clone)]
pub struct LlmExtractor {
    gateway: Arc<dyn ModelGateway>,
    model: String,
}

impl std::fmt::Debug for LlmExtractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmExtractor")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl LlmExtractor {
    /// An extractor asking `model` through `gateway`.
    pub fn new(gateway: Arc<dyn ModelGateway>, model: &str) -> Self {
        Self {
            gateway,
            model: model.to_owned(),
        }
    }

    /// The request it makes for `input` (its timeline's events read).
    pub fn request(&self, input: &ExtractionInput<'_>) -> Result<ModelRequest, OperatorError> {
        build_request(&self.model, input)
    }

    /// Approximate input tokens of that request.
    pub fn estimate_tokens(&self, input: &ExtractionInput<'_>) -> Result<u64, OperatorError> {
        Ok(estimate_request_tokens(&self.request(input)?))
    }
}

impl Extractor for LlmExtractor {
    fn id(&self) -> OperatorId {
        id()
    }

    fn config_hash(&self) -> Digest {
        operator_config_hash(&id(), &self.model, PROMPT, &tool(), MAX_TOKENS)
    }

    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        let reply = self
            .gateway
            .complete(&self.request(input)?, &super::block_subject(&input.target))?;
        parse_answer(input, &reply.arguments)
    }

    fn planned_input_tokens(&self, block: &crate::operator::BlockInput<'_>) -> Option<u64> {
        Some(super::estimate_block_tokens(&self.model, block).extract)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::testing::{FakeGateway, Fixture, fixture};
    use strataflow_record::Timestamp;
    use strataflow_record::record::BlockSummary;

    fn summary() -> BlockSummary {
        BlockSummary {
            tenant: "acme".into(),
            block: RecordId([99; 32]),
            title: "Ana's trips".into(),
            tags: vec![],
            summary: "Ana tells Bot about Porto and Sintra.".into(),
            key_points: vec![],
            should_extract: true,
        }
    }

    fn earlier() -> Vec<(RecordId, Event)> {
        let (block, msgs) = fixture();
        let input = block.input(&msgs, 1);
        let s = summary();
        let x = ExtractionInput {
            target: input,
            summary: &s,
            previous_key_points: None,
            next_key_points: None,
            timeline: crate::operator::Timeline::EMPTY,
        };
        let mut e = event_of(
            &x,
            &shown_messages(&input),
            &render_messages(&shown_messages(&input)).1,
            &Refs::new('e', vec![]),
            &json!({
                "sources": ["m3"], "title": "Ana plans a trip to Lisbon", "summary": "Ana plans to go to Lisbon.",
                "quotes": [], "participants": ["Ana"], "event_type": "plan", "status": "planned",
                "happened_start": "2024-06", "happened_end": null, "basis": "explicit",
                "scope": "user", "criticality": "routine"
            }),
            "event 1",
        )
        .unwrap();
        e.block = RecordId([7; 32]);
        vec![(RecordId([50; 32]), e)]
    }

    fn input<'a>(
        block: &'a Fixture,
        msgs: &'a [(RecordId, Message)],
        s: &'a BlockSummary,
        timeline: &'a [(RecordId, Event)],
        attempt: u32,
    ) -> ExtractionInput<'a> {
        ExtractionInput {
            target: block.input(msgs, attempt),
            summary: s,
            previous_key_points: None,
            next_key_points: None,
            timeline: timeline.into(),
        }
    }

    fn answer() -> Value {
        json!({
            "should_extract": true,
            "reason": "a trip and a plan",
            "events": [
                {
                    "sources": ["m1", "m1"],
                    "title": "Ana went to Porto with her sister Marta",
                    "summary": "Ana visited Porto with her sister Marta.",
                    "quotes": ["I went to Porto with my sister   Marta last weekend.", "She loved Porto."],
                    "participants": ["Ana", " Marta ", "Ana"],
                    "event_type": "Meeting",
                    "status": "occurred",
                    "happened_start": "2024-05-04",
                    "happened_end": "2024-05-05",
                    "time_text": "last weekend",
                    "basis": "relative",
                    "scope": "user",
                    "criticality": "routine",
                    "confidence": 0.9,
                    "tags": ["travel"]
                },
                {
                    "sources": ["m3"],
                    "title": "Ana will go to Sintra on 20 May",
                    "summary": "Ana plans a trip to Sintra on 20 May instead of Lisbon.",
                    "quotes": ["We're going to Sintra on 20 May."],
                    "participants": ["Ana"],
                    "event_type": "planned",
                    "status": "planned",
                    "happened_start": "2024-05-20",
                    "happened_end": null,
                    "basis": "explicit",
                    "supersedes": ["e1"],
                    "scope": "user",
                    "criticality": "routine"
                }
            ]
        })
    }

    fn failure(answer: Value) -> OperatorError {
        let (block, msgs) = fixture();
        let (s, timeline) = (summary(), earlier());
        LlmExtractor::new(FakeGateway::answering(answer), "m")
            .extract(&input(&block, &msgs, &s, &timeline, 1))
            .unwrap_err()
    }

    fn ms(text: &str) -> Timestamp {
        strataflow_record::SourceTime::parse_rfc3339(text)
            .unwrap()
            .instant()
    }

    #[test]
    fn valid_answer_becomes_events() {
        let (block, msgs) = fixture();
        let (s, timeline) = (summary(), earlier());
        let x = input(&block, &msgs, &s, &timeline, 1);
        let gateway = FakeGateway::answering(answer());
        let out = LlmExtractor::new(gateway.clone(), "m").extract(&x).unwrap();
        assert!(out.should_extract);
        assert_eq!(out.reason, "a trip and a plan");
        let [porto, sintra] = out.events.as_slice() else {
            panic!("{out:?}")
        };
        // m1 is the block's second message: the system message is not shown.
        assert_eq!(porto.source_messages, vec![msgs[1].0]);
        assert_eq!(porto.temporal.mentioned_at, msgs[1].1.time);
        assert_eq!(porto.block, block.id);
        assert_eq!(porto.tenant, "acme");
        assert_eq!(
            porto.quotes,
            vec!["I went to Porto with my sister   Marta last weekend."],
            "a sentence not in the message is not a quote"
        );
        assert_eq!(porto.temporal.participants, vec!["Ana", "Marta"]);
        assert_eq!(porto.temporal.event_type, EventType::Meeting);
        assert_eq!(porto.temporal.status, Occurrence::Occurred);
        assert_eq!(
            porto.temporal.happened_start,
            Some(ms("2024-05-04T00:00:00+02:00"))
        );
        assert_eq!(
            porto.temporal.happened_end,
            Some(Timestamp(ms("2024-05-06T00:00:00+02:00").0 - 1))
        );
        assert_eq!(porto.temporal.precision, Precision::Range);
        assert_eq!(porto.temporal.basis, TimeBasis::Relative);
        assert_eq!(
            porto.temporal.original_text.as_deref(),
            Some("last weekend")
        );
        assert_eq!(porto.confidence_milli, 900);
        assert_eq!(porto.tags, vec!["travel"]);

        assert_eq!(sintra.source_messages, vec![msgs[3].0]);
        assert_eq!(sintra.temporal.mentioned_at, msgs[3].1.time);
        assert_eq!(sintra.temporal.precision, Precision::Day);
        assert_eq!(sintra.temporal.event_type, EventType::Plan);
        assert_eq!(sintra.temporal.supersedes, vec![RecordId([50; 32])]);
        assert_eq!(sintra.confidence_milli, DEFAULT_CONFIDENCE_MILLI);
        assert_eq!(sintra.narrative, "");

        // The common validation keeps both (and fills the narrative).
        let (kept, dropped) =
            crate::validate::events(&x.target, &[RecordId([50; 32])], out.events.clone());
        assert_eq!((kept.len(), dropped), (2, 0));
        assert_eq!(kept[1].narrative, kept[1].summary);
    }

    #[test]
    fn source_outside_the_block_fails_naming_it() {
        let mut a = answer();
        a["events"][1]["sources"] = json!(["m3", "m99"]);
        assert_eq!(
            failure(a),
            OperatorError::Failed("event 2: source `m99` is not a message of the block".into())
        );
        let mut a = answer();
        a["events"][0]["sources"] = json!([]);
        assert_eq!(
            failure(a).to_string(),
            "event 1: `sources` is empty: cite at least one message ref"
        );
    }

    #[test]
    fn missing_fields_fail_naming_them() {
        let mut a = answer();
        if let Some(e) = a["events"][0].as_object_mut() {
            e.remove("title");
        }
        assert_eq!(
            failure(a).to_string(),
            "event 1: missing required field `title`"
        );
        let mut a = answer();
        if let Some(m) = a.as_object_mut() {
            m.remove("events");
        }
        assert_eq!(
            failure(a).to_string(),
            "answer: missing required field `events`"
        );
        let mut a = answer();
        a["events"][1]["status"] = json!("done");
        assert_eq!(
            failure(a).to_string(),
            "event 2: field `status` is `done`, expected one of occurred, planned, cancelled, ongoing, unknown"
        );
    }

    #[test]
    fn bad_times_fail_naming_field_and_value() {
        let mut a = answer();
        a["events"][0]["happened_start"] = json!("last weekend");
        assert_eq!(
            failure(a).to_string(),
            "event 1: field `happened_start` is `last weekend`, not a time (expected YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339)"
        );
        let mut a = answer();
        a["events"][0]["happened_end"] = json!("2024-05-01");
        assert_eq!(
            failure(a).to_string(),
            "event 1: `happened_end` `2024-05-01` is before `happened_start` `2024-05-04`"
        );
    }

    #[test]
    fn unknown_timeline_ref_fails() {
        let mut a = answer();
        a["events"][1]["conflicts_with"] = json!(["e2"]);
        assert_eq!(
            failure(a).to_string(),
            "event 2: `conflicts_with` ref `e2` is not an earlier event of the timeline"
        );
    }

    #[test]
    fn mention_time_never_comes_from_the_answer() {
        let (block, msgs) = fixture();
        let (s, timeline) = (summary(), earlier());
        let mut a = answer();
        a["events"][0]["mentioned_at"] = json!("1999-01-01");
        a["events"][0]["happened_start"] = json!(null);
        a["events"][0]["happened_end"] = json!(null);
        let out = LlmExtractor::new(FakeGateway::answering(a), "m")
            .extract(&input(&block, &msgs, &s, &timeline, 1))
            .unwrap();
        let t = &out.events[0].temporal;
        assert_eq!(t.mentioned_at, msgs[1].1.time);
        assert_eq!((t.happened_start, t.happened_end), (None, None));
        assert_eq!(
            (t.precision, t.basis),
            (Precision::Unknown, TimeBasis::Unknown)
        );
    }

    #[test]
    fn nothing_to_extract() {
        let (block, msgs) = fixture();
        let (s, timeline) = (summary(), earlier());
        let mut a = answer();
        a["should_extract"] = json!(false);
        a["reason"] = json!("small talk");
        let out = LlmExtractor::new(FakeGateway::answering(a), "m")
            .extract(&input(&block, &msgs, &s, &timeline, 1))
            .unwrap();
        assert!(!out.should_extract);
        assert!(out.events.is_empty());
        assert_eq!(out.reason, "small talk");
    }

    #[test]
    fn empty_title_is_dropped_by_validation() {
        let (block, msgs) = fixture();
        let (s, timeline) = (summary(), earlier());
        let x = input(&block, &msgs, &s, &timeline, 1);
        let mut a = answer();
        a["events"][0]["title"] = json!(" ");
        let out = LlmExtractor::new(FakeGateway::answering(a), "m")
            .extract(&x)
            .unwrap();
        let (kept, dropped) = crate::validate::events(&x.target, &[], out.events);
        assert_eq!((kept.len(), dropped), (1, 1));
        assert!(
            kept[0].temporal.supersedes.is_empty(),
            "not in the timeline given"
        );
    }

    #[test]
    fn requests_are_deterministic_and_retries_differ() {
        let (block, msgs) = fixture();
        let (s, timeline) = (summary(), earlier());
        let first = build_request("m", &input(&block, &msgs, &s, &timeline, 1)).unwrap();
        let same = build_request("m", &input(&block, &msgs, &s, &timeline, 1)).unwrap();
        let retry = build_request("m", &input(&block, &msgs, &s, &timeline, 2)).unwrap();
        assert_eq!(first.canonical(), same.canonical());
        assert_eq!(first.key(), same.key());
        assert_ne!(first.key(), retry.key());
        assert!(
            retry.messages[1]
                .content
                .ends_with("Call `record_events` again and follow every rule exactly.\n")
        );
        let op = |model: &str| LlmExtractor::new(FakeGateway::answering(json!({})), model);
        assert_ne!(op("a").config_hash(), op("b").config_hash());
        assert_eq!(op("a").config_hash(), op("a").config_hash());
        let changed_prompt =
            operator_config_hash(&id(), "a", &format!("{PROMPT} "), &tool(), MAX_TOKENS);
        assert_ne!(op("a").config_hash(), changed_prompt);
    }

    #[test]
    fn neighbours_are_context_only() {
        let (block, msgs) = fixture();
        let (s, timeline) = (summary(), earlier());
        let previous = vec!["Ana: PREVIOUS POINT".to_owned()];
        let next = vec!["Ana: NEXT POINT".to_owned()];
        let x = ExtractionInput {
            previous_key_points: Some(&previous),
            next_key_points: Some(&next),
            ..input(&block, &msgs, &s, &timeline, 1)
        };
        let user = build_request("m", &x).unwrap().messages[1].content.clone();
        let sources_at = user.find("Messages of the target block").unwrap();
        let prev_at = user.find("PREVIOUS POINT").unwrap();
        let next_at = user.find("NEXT POINT").unwrap();
        assert!(prev_at < sources_at && next_at < sources_at, "{user}");
        assert!(user.contains("Key points of the previous block (context only, never a source):\n- Ana: PREVIOUS POINT\n"));
        // Only the target's messages get message refs.
        assert_eq!(user.matches(r#"{"ref":"m"#).count(), 3, "{user}");
        assert!(!user[sources_at..].contains("POINT"));
        // A neighbour's point cannot be cited: it has no ref.
        let mut a = answer();
        a["events"][0]["sources"] = json!(["m4"]);
        assert_eq!(
            failure(a).to_string(),
            "event 1: source `m4` is not a message of the block"
        );
    }

    /// Pins the exact user turn and the request key of a small block. If a
    /// deliberate change of the prompt, schema or rendering breaks this,
    /// update the expected text and key from the failure message (and know
    /// that recorded model calls will not be reused: new requests).
    #[test]
    fn golden_request() {
        let (block, msgs) = fixture();
        let s = summary();
        let request = build_request("gpt-test", &input(&block, &msgs, &s, &[], 1)).unwrap();
        let user = &request.messages[1].content;
        let expected = concat!(
            "Summary of the target block (context only): Ana's trips — Ana tells Bot about Porto and Sintra.\n",
            "\n",
            "Earlier events of the thread: none.\n",
            "\n",
            "Messages of the target block (the only legal sources):\n",
            r#"{"ref":"m1","speaker":"Ana","role":"user","time":"2024-05-10T21:30:00.000+02:00","content":"I went to Porto with my sister Marta last weekend."}"#,
            "\n",
            r#"{"ref":"m2","speaker":"Bot","role":"assistant","time":"2024-05-10T21:31:00.000+02:00","content":"Wow, that's great! I noted it.","tools":["note"]}"#,
            "\n",
            r#"{"ref":"m3","speaker":"User","role":"user","time":"2024-05-11T09:00:00.000+02:00","content":"We're going to Sintra on 20 May. I prefer window seats."}"#,
            "\n",
        );
        assert_eq!(user, expected, "user turn changed:\n{user}");
        assert_eq!(
            request.key().to_hex(),
            "4824305ad5f03143a8d3a0cbe03ac8f80ebf078c25c8b7a502bd573536bbeeea",
            "request changed (prompt, schema or format); canonical request:\n{}",
            request.canonical()
        );
    }
}
