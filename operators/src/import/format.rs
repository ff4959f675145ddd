//! Parsing the `stratagate.external-memory.v2` export (spec §14.1).
//!
//! Root: `{schemaVersion, sourceType, sourceSystem, exportedAt, candidates
//! (or the legacy `events`), coverage, coverageNote, uncertainItems}`. The
//! rules, in the order they apply:
//!
//! - a whole-text code fence (```` ```json … ``` ````) is stripped;
//! - `schemaVersion` must be `stratagate.external-memory.v2` or `.v1` or be
//!   absent; `sourceType`, when present, must be `external_ai_memory_export`;
//! - at most [`MAX_CANDIDATES`] candidates are read (the rest are counted
//!   in [`ExternalMemoryExport::dropped_candidates`]);
//! - a candidate needs a non-empty `title` (cut to 160 characters) and
//!   `summary` (cut to 2000); `narrative` is cut to 8000;
//! - `tags`: `category` first, then the tags, de-duplicated, at most 12;
//!   `quotes`: at most 12, each cut to 500;
//! - enums (`memoryKind`, `category`, `scope`, `criticality`, `precision`,
//!   `basis`, `status`, `coverage`) outside their values are omitted;
//!   `eventType` is cut to 80 and normalized to a standard type (anything
//!   unknown is `other`, spec §2.5);
//! - `confidence` is clamped to 0..1;
//! - temporal strings are cut to 200 characters, `participants` to 24;
//! - when `precision` or `basis` is `unknown`, `happenedStart` and
//!   `happenedEnd` are dropped (`originalText` is kept).
//!
//! A value of the wrong JSON type (a number where a string belongs, a
//! candidate that is not an object) refuses the whole file with an error
//! naming the candidate index and the field. `null` counts as absent.

use serde_json::{Map, Value};
use strataflow_record::record::{Criticality, EventType, Occurrence, Precision, Scope, TimeBasis};

/// The format this module reads.
pub const FORMAT_V2: &str = "stratagate.external-memory.v2";
/// The older version, read the same way.
pub const FORMAT_V1: &str = "stratagate.external-memory.v1";
/// The only accepted `sourceType`.
pub const SOURCE_TYPE: &str = "external_ai_memory_export";
/// Most candidates read from one file.
pub const MAX_CANDIDATES: usize = 200;
/// Longest title, in characters.
pub const MAX_TITLE: usize = 160;
/// Longest summary.
pub const MAX_SUMMARY: usize = 2000;
/// Longest narrative.
pub const MAX_NARRATIVE: usize = 8000;
/// Most tags (category included).
pub const MAX_TAGS: usize = 12;
/// Most quotes.
pub const MAX_QUOTES: usize = 12;
/// Longest quote.
pub const MAX_QUOTE: usize = 500;
/// Longest temporal string (`mentionedAt`, `happenedStart`, …).
pub const MAX_TEMPORAL_TEXT: usize = 200;
/// Longest `eventType` before normalization.
pub const MAX_EVENT_TYPE: usize = 80;
/// Most participants.
pub const MAX_PARTICIPANTS: usize = 24;

/// Why an export was refused.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExternalMemoryError {
    /// Not JSON.
    #[error("not valid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's message.
        message: String,
    },
    /// The root is not an object.
    #[error("the root must be a JSON object")]
    Root,
    /// Another format.
    #[error("schemaVersion `{found}` is not {FORMAT_V2} (or {FORMAT_V1})")]
    SchemaVersion {
        /// The `schemaVersion` the file declares.
        found: String,
    },
    /// Another source type.
    #[error("sourceType `{found}`: expected {SOURCE_TYPE}")]
    SourceType {
        /// The `sourceType` the file declares.
        found: String,
    },
    /// A root field is wrong.
    #[error("`{field}` {problem}")]
    Field {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A candidate's field is wrong.
    #[error("candidate {index}: `{field}` {problem}")]
    Candidate {
        /// 0-based index in the file.
        index: usize,
        /// The field (`title`, `temporal.participants`, …).
        field: String,
        /// What is wrong.
        problem: String,
    },
}

/// `memoryKind` of a candidate.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// How the agent should act.
    Instruction,
    /// A preference.
    Preference,
    /// A fact.
    Fact,
    /// Something that happened.
    Event,
}

/// `category` of a candidate.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// An instruction.
    Instruction,
    /// Identity.
    Identity,
    /// Career.
    Career,
    /// A project.
    Project,
    /// A preference.
    Preference,
}

impl Category {
    /// The snake_case name (also the tag prepended to the candidate's tags).
    pub fn name(self) -> &'static str {
        match self {
            Self::Instruction => "instruction",
            Self::Identity => "identity",
            Self::Career => "career",
            Self::Project => "project",
            Self::Preference => "preference",
        }
    }
}

/// `coverage` of the export.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    /// Everything the exporter remembers.
    Full,
    /// Part of it.
    Partial,
    /// A limited view.
    Limited,
}

/// A candidate's `temporal` object.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateTemporal {
    /// When the memory was mentioned (text as given).
    pub mentioned_at: Option<String>,
    /// Start of the occurrence (YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339).
    pub happened_start: Option<String>,
    /// End of the occurrence.
    pub happened_end: Option<String>,
    /// The time expression as written.
    pub original_text: Option<String>,
    /// Precision.
    pub precision: Option<Precision>,
    /// Basis.
    pub basis: Option<TimeBasis>,
    /// Whether it happened.
    pub status: Option<Occurrence>,
    /// Participants.
    pub participants: Vec<String>,
    /// Standard event type.
    pub event_type: Option<EventType>,
}

/// One memory candidate, validated and capped.
#[derive(Clone, PartialEq, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// 0-based index in the file.
    pub index: usize,
    /// Kind.
    pub memory_kind: Option<MemoryKind>,
    /// Category.
    pub category: Option<Category>,
    /// Title (non-empty).
    pub title: String,
    /// Summary (non-empty).
    pub summary: String,
    /// Narrative.
    pub narrative: Option<String>,
    /// Tags, the category first.
    pub tags: Vec<String>,
    /// Verbatim quotes.
    pub quotes: Vec<String>,
    /// Time and participants.
    pub temporal: Option<CandidateTemporal>,
    /// Scope.
    pub scope: Option<Scope>,
    /// Criticality.
    pub criticality: Option<Criticality>,
    /// Confidence in 0..1.
    pub confidence: Option<f64>,
}

/// A parsed export.
#[derive(Clone, PartialEq, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalMemoryExport {
    /// The schema version as given (`None` when absent).
    pub schema_version: Option<String>,
    /// The exporting system.
    pub source_system: Option<String>,
    /// When it was exported (text as given).
    pub exported_at: Option<String>,
    /// Coverage.
    pub coverage: Option<Coverage>,
    /// Note on coverage.
    pub coverage_note: Option<String>,
    /// Items the exporter was unsure of.
    pub uncertain_items: Vec<String>,
    /// The candidates, at most [`MAX_CANDIDATES`].
    pub candidates: Vec<Candidate>,
    /// Candidates beyond [`MAX_CANDIDATES`], not read.
    pub dropped_candidates: usize,
}

/// Strips a code fence around the whole text (```` ```json ```` or
/// ```` ``` ````), if there is one.
pub fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) runs to the end of the first line.
    match body.split_once('\n') {
        Some((info, inner)) if info.trim().is_empty() || info.trim() == "json" => inner,
        _ => text,
    }
}

/// Whether `text` is meant as a JSON export: after a whole-text code fence
/// is stripped, its first non-blank character is `{`. Anything else is
/// plain text (a pasted list of memories), read by
/// [`super::text::TextExtractor`].
pub fn looks_like_export(text: &str) -> bool {
    strip_fence(text).trim_start().starts_with('{')
}

/// Parses an export (see the module docs).
pub fn parse_export(text: &str) -> Result<ExternalMemoryExport, ExternalMemoryError> {
    let body = strip_fence(text);
    let root: Value = serde_json::from_str(body).map_err(|e| ExternalMemoryError::Json {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let Value::Object(root) = root else {
        return Err(ExternalMemoryError::Root);
    };
    let root_str = |field: &'static str| -> Result<Option<String>, ExternalMemoryError> {
        match root.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
            Some(other) => Err(ExternalMemoryError::Field {
                field,
                problem: format!("must be a string, found {}", type_name(other)),
            }),
        }
    };
    let schema_version = root_str("schemaVersion")?;
    if let Some(v) = &schema_version
        && v != FORMAT_V2
        && v != FORMAT_V1
    {
        return Err(ExternalMemoryError::SchemaVersion { found: v.clone() });
    }
    if let Some(t) = root_str("sourceType")?
        && t != SOURCE_TYPE
    {
        return Err(ExternalMemoryError::SourceType { found: t });
    }
    let (field, list) = match (root.get("candidates"), root.get("events")) {
        (Some(v), _) if !v.is_null() => ("candidates", v),
        (_, Some(v)) if !v.is_null() => ("events", v),
        _ => {
            return Err(ExternalMemoryError::Field {
                field: "candidates",
                problem: "is missing (an array of memory candidates)".into(),
            });
        }
    };
    let Value::Array(list) = list else {
        return Err(ExternalMemoryError::Field {
            field,
            problem: format!("must be an array, found {}", type_name(list)),
        });
    };
    let mut candidates = Vec::with_capacity(list.len().min(MAX_CANDIDATES));
    for (index, value) in list.iter().take(MAX_CANDIDATES).enumerate() {
        candidates.push(parse_candidate(index, value)?);
    }
    let uncertain_items = match root.get("uncertainItems") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.trim().to_owned()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
            .filter(|s| !s.is_empty())
            .collect(),
        Some(other) => {
            return Err(ExternalMemoryError::Field {
                field: "uncertainItems",
                problem: format!("must be an array, found {}", type_name(other)),
            });
        }
    };
    Ok(ExternalMemoryExport {
        schema_version,
        source_system: root_str("sourceSystem")?,
        exported_at: root_str("exportedAt")?,
        coverage: root_str("coverage")?.and_then(|c| match c.as_str() {
            "full" => Some(Coverage::Full),
            "partial" => Some(Coverage::Partial),
            "limited" => Some(Coverage::Limited),
            _ => None,
        }),
        coverage_note: root_str("coverageNote")?,
        uncertain_items,
        candidates,
        dropped_candidates: list.len().saturating_sub(MAX_CANDIDATES),
    })
}

/// Parses one candidate object (also used for a decider's merged
/// candidate).
pub fn parse_candidate(index: usize, value: &Value) -> Result<Candidate, ExternalMemoryError> {
    let err = |field: &str, problem: String| ExternalMemoryError::Candidate {
        index,
        field: field.to_owned(),
        problem,
    };
    let Value::Object(obj) = value else {
        return Err(err(
            "",
            format!("must be an object, found {}", type_name(value)),
        ));
    };
    let fields = Fields { obj, prefix: "" };
    let title = fields
        .string("title", MAX_TITLE)
        .map_err(|p| err("title", p))?
        .ok_or_else(|| err("title", "is missing or empty".into()))?;
    let summary = fields
        .string("summary", MAX_SUMMARY)
        .map_err(|p| err("summary", p))?
        .ok_or_else(|| err("summary", "is missing or empty".into()))?;
    let narrative = fields
        .string("narrative", MAX_NARRATIVE)
        .map_err(|p| err("narrative", p))?;
    let category = fields
        .string("category", MAX_TEMPORAL_TEXT)
        .map_err(|p| err("category", p))?
        .and_then(|c| match c.as_str() {
            "instruction" => Some(Category::Instruction),
            "identity" => Some(Category::Identity),
            "career" => Some(Category::Career),
            "project" => Some(Category::Project),
            "preference" => Some(Category::Preference),
            _ => None,
        });
    let memory_kind = fields
        .string("memoryKind", MAX_TEMPORAL_TEXT)
        .map_err(|p| err("memoryKind", p))?
        .and_then(|k| match k.as_str() {
            "instruction" => Some(MemoryKind::Instruction),
            "preference" => Some(MemoryKind::Preference),
            "fact" => Some(MemoryKind::Fact),
            "event" => Some(MemoryKind::Event),
            _ => None,
        });
    let mut tags: Vec<String> = category.map(|c| c.name().to_owned()).into_iter().collect();
    for tag in fields
        .strings("tags", usize::MAX, MAX_TEMPORAL_TEXT)
        .map_err(|p| err("tags", p))?
    {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags.truncate(MAX_TAGS);
    let quotes = fields
        .strings("quotes", MAX_QUOTES, MAX_QUOTE)
        .map_err(|p| err("quotes", p))?;
    let temporal = match obj.get("temporal") {
        None | Some(Value::Null) => None,
        Some(Value::Object(t)) => Some(
            parse_temporal(&Fields {
                obj: t,
                prefix: "temporal.",
            })
            .map_err(|(f, p)| err(&f, p))?,
        ),
        Some(other) => {
            return Err(err(
                "temporal",
                format!("must be an object, found {}", type_name(other)),
            ));
        }
    };
    let scope = fields
        .string("scope", MAX_TEMPORAL_TEXT)
        .map_err(|p| err("scope", p))?
        .and_then(|s| match s.as_str() {
            "user" => Some(Scope::User),
            "project" => Some(Scope::Project),
            "session" => Some(Scope::Session),
            _ => None,
        });
    let criticality = fields
        .string("criticality", MAX_TEMPORAL_TEXT)
        .map_err(|p| err("criticality", p))?
        .and_then(|c| match c.as_str() {
            "routine" => Some(Criticality::Routine),
            "preference" => Some(Criticality::Preference),
            "identity" => Some(Criticality::Identity),
            "safety" => Some(Criticality::Safety),
            _ => None,
        });
    let confidence = match obj.get("confidence") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_f64().map(|c| c.clamp(0.0, 1.0)),
        Some(other) => {
            return Err(err(
                "confidence",
                format!("must be a number, found {}", type_name(other)),
            ));
        }
    };
    Ok(Candidate {
        index,
        memory_kind,
        category,
        title,
        summary,
        narrative,
        tags,
        quotes,
        temporal,
        scope,
        criticality,
        confidence,
    })
}

fn parse_temporal(f: &Fields<'_>) -> Result<CandidateTemporal, (String, String)> {
    let text = |name: &str| {
        f.string(name, MAX_TEMPORAL_TEXT)
            .map_err(|p| (format!("{}{name}", f.prefix), p))
    };
    let precision = text("precision")?.and_then(|p| match p.as_str() {
        "instant" => Some(Precision::Instant),
        "day" => Some(Precision::Day),
        "month" => Some(Precision::Month),
        "year" => Some(Precision::Year),
        "range" => Some(Precision::Range),
        "unknown" => Some(Precision::Unknown),
        _ => None,
    });
    let basis = text("basis")?.and_then(|b| match b.as_str() {
        "explicit" => Some(TimeBasis::Explicit),
        "relative" => Some(TimeBasis::Relative),
        "inferred" => Some(TimeBasis::Inferred),
        "unknown" => Some(TimeBasis::Unknown),
        _ => None,
    });
    let status = text("status")?.and_then(|s| match s.as_str() {
        "occurred" => Some(Occurrence::Occurred),
        "planned" => Some(Occurrence::Planned),
        "cancelled" => Some(Occurrence::Cancelled),
        "ongoing" => Some(Occurrence::Ongoing),
        "unknown" => Some(Occurrence::Unknown),
        _ => None,
    });
    let unknown_time = precision == Some(Precision::Unknown) || basis == Some(TimeBasis::Unknown);
    let (happened_start, happened_end) = if unknown_time {
        // Validate the types all the same.
        text("happenedStart")?;
        text("happenedEnd")?;
        (None, None)
    } else {
        (text("happenedStart")?, text("happenedEnd")?)
    };
    let event_type = f
        .string("eventType", MAX_EVENT_TYPE)
        .map_err(|p| (format!("{}eventType", f.prefix), p))?
        .map(|t| normalize_event_type(&t));
    Ok(CandidateTemporal {
        mentioned_at: text("mentionedAt")?,
        happened_start,
        happened_end,
        original_text: text("originalText")?,
        precision,
        basis,
        status,
        participants: f
            .strings("participants", MAX_PARTICIPANTS, MAX_TEMPORAL_TEXT)
            .map_err(|p| (format!("{}participants", f.prefix), p))?,
        event_type,
    })
}

/// The standard event type of a free-text type (spec §2.5): lower-cased,
/// spaces, `_` and `-` removed, then an alias table; anything else is
/// [`EventType::Other`].
pub fn normalize_event_type(text: &str) -> EventType {
    let key: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_' && *c != '-')
        .collect();
    match key.as_str() {
        "发布" | "版本发布" | "release" | "released" => EventType::Release,
        "决定" | "决策" | "decision" => EventType::Decision,
        "完成" | "任务完成" | "taskcompleted" | "completed" => EventType::TaskCompleted,
        "计划" | "plan" | "planned" => EventType::Plan,
        "变更" | "修改" | "change" => EventType::Change,
        "取消" | "cancellation" | "cancelled" | "canceled" => EventType::Cancellation,
        "故障" | "incident" => EventType::Incident,
        "会议" | "meeting" => EventType::Meeting,
        "协作" | "collaboration" => EventType::Collaboration,
        "迁移" | "migration" => EventType::Migration,
        _ => EventType::Other,
    }
}

/// Typed access to an object's fields, with the caps.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: &'static str,
}

impl Fields<'_> {
    /// A trimmed string cut to `max` characters; `None` when absent, null
    /// or empty.
    fn string(&self, name: &str, max: usize) -> Result<Option<String>, String> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(cut(s.trim(), max)).filter(|s| !s.is_empty())),
            Some(other) => Err(format!("must be a string, found {}", type_name(other))),
        }
    }

    /// An array of strings: trimmed, cut to `max_len`, empty ones dropped,
    /// at most `max_items`.
    fn strings(&self, name: &str, max_items: usize, max_len: usize) -> Result<Vec<String>, String> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => {
                            let s = cut(s.trim(), max_len);
                            if !s.is_empty() && out.len() < max_items {
                                out.push(s);
                            }
                        }
                        Value::Null => {}
                        other => {
                            return Err(format!(
                                "item {i} must be a string, found {}",
                                type_name(other)
                            ));
                        }
                    }
                }
                Ok(out)
            }
            Some(other) => Err(format!(
                "must be an array of strings, found {}",
                type_name(other)
            )),
        }
    }
}

/// The first `max` characters of `text`.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text.get(..end).unwrap_or(text).trim_end().to_owned(),
        None => text.to_owned(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    fn export(candidates: Value) -> String {
        json!({
            "schemaVersion": FORMAT_V2,
            "sourceType": SOURCE_TYPE,
            "sourceSystem": "other-ai",
            "exportedAt": "2026-01-02T03:04:05Z",
            "candidates": candidates,
        })
        .to_string()
    }

    fn one(candidate: Value) -> Result<Candidate, ExternalMemoryError> {
        parse_export(&export(json!([candidate]))).map(|e| e.candidates[0].clone())
    }

    #[test]
    fn reads_a_fenced_export_with_every_field() {
        let text = format!(
            "```json\n{}\n```\n",
            export(json!([{
                "memoryKind": "preference",
                "category": "preference",
                "title": "  Likes green tea ",
                "summary": "The user prefers green tea.",
                "narrative": "Said so twice.",
                "tags": ["tea", "preference", "tea"],
                "quotes": ["I love green tea"],
                "temporal": {"mentionedAt": "2025-03-01", "precision": "month",
                             "basis": "explicit", "happenedStart": "2025-02",
                             "status": "occurred", "participants": ["Ana"], "eventType": "Task-Completed"},
                "scope": "user", "criticality": "preference", "confidence": 0.9
            }]))
        );
        let e = parse_export(&text).unwrap();
        assert_eq!(e.source_system.as_deref(), Some("other-ai"));
        let c = &e.candidates[0];
        assert_eq!(c.title, "Likes green tea");
        assert_eq!(
            c.tags,
            vec!["preference", "tea"],
            "category first, de-duplicated"
        );
        assert_eq!(c.memory_kind, Some(MemoryKind::Preference));
        let t = c.temporal.as_ref().unwrap();
        assert_eq!(t.happened_start.as_deref(), Some("2025-02"));
        assert_eq!(t.event_type, Some(EventType::TaskCompleted));
        assert_eq!(c.confidence, Some(0.9));
    }

    #[test]
    fn caps_lengths_and_counts() {
        let long = "x".repeat(9000);
        let c = one(json!({
            "title": long, "summary": long, "narrative": long,
            "tags": (0..20).map(|i| format!("t{i}")).collect::<Vec<_>>(),
            "category": "project",
            "quotes": (0..20).map(|_| "q".repeat(600)).collect::<Vec<_>>(),
            "temporal": {"originalText": long, "eventType": long,
                         "participants": (0..30).map(|i| format!("p{i}")).collect::<Vec<_>>()},
            "confidence": 7.5
        }))
        .unwrap();
        assert_eq!(c.title.chars().count(), MAX_TITLE);
        assert_eq!(c.summary.chars().count(), MAX_SUMMARY);
        assert_eq!(c.narrative.unwrap().chars().count(), MAX_NARRATIVE);
        assert_eq!(c.tags.len(), MAX_TAGS);
        assert_eq!(c.tags[0], "project");
        assert_eq!(c.quotes.len(), MAX_QUOTES);
        assert!(c.quotes.iter().all(|q| q.chars().count() == MAX_QUOTE));
        let t = c.temporal.unwrap();
        assert_eq!(t.original_text.unwrap().chars().count(), MAX_TEMPORAL_TEXT);
        assert_eq!(t.participants.len(), MAX_PARTICIPANTS);
        assert_eq!(t.event_type, Some(EventType::Other));
        assert_eq!(c.confidence, Some(1.0), "clamped");
        let c = one(json!({"title": "t", "summary": "s", "confidence": -3})).unwrap();
        assert_eq!(c.confidence, Some(0.0));
    }

    #[test]
    fn reads_at_most_200_candidates() {
        let many: Vec<Value> = (0..205)
            .map(|i| json!({"title": format!("t{i}"), "summary": "s"}))
            .collect();
        let e = parse_export(&export(Value::Array(many))).unwrap();
        assert_eq!(e.candidates.len(), MAX_CANDIDATES);
        assert_eq!(e.dropped_candidates, 5);
        assert_eq!(e.candidates[199].index, 199);
    }

    #[test]
    fn invalid_enums_are_omitted_and_unknown_dates_dropped() {
        let c = one(json!({
            "title": "t", "summary": "s", "memoryKind": "gossip", "category": "hobby",
            "scope": "galaxy", "criticality": "urgent",
            "temporal": {"precision": "unknown", "basis": "explicit", "happenedStart": "2026-09-01",
                         "happenedEnd": "2026-09-02", "originalText": "some day", "status": "maybe"}
        }))
        .unwrap();
        assert_eq!(c.memory_kind, None);
        assert_eq!(c.category, None);
        assert_eq!(c.scope, None);
        assert_eq!(c.criticality, None);
        assert!(c.tags.is_empty());
        let t = c.temporal.unwrap();
        assert_eq!(t.happened_start, None, "unknown precision drops the date");
        assert_eq!(t.happened_end, None);
        assert_eq!(t.original_text.as_deref(), Some("some day"));
        assert_eq!(t.status, None);
        let c = one(json!({"title": "t", "summary": "s",
            "temporal": {"basis": "unknown", "happenedStart": "2026"}}))
        .unwrap();
        assert_eq!(c.temporal.unwrap().happened_start, None);
    }

    #[test]
    fn errors_name_the_candidate_and_field() {
        let e = parse_export(&export(json!([
            {"title": "ok", "summary": "ok"},
            {"title": "no summary"}
        ])))
        .unwrap_err();
        assert_eq!(e.to_string(), "candidate 1: `summary` is missing or empty");
        let e = one(json!({"title": 5, "summary": "s"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "candidate 0: `title` must be a string, found a number"
        );
        let e = one(json!({"title": "t", "summary": "s", "tags": ["a", 3]})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "candidate 0: `tags` item 1 must be a string, found a number"
        );
        let e = one(json!({"title": "t", "summary": "s", "temporal": {"participants": "Ana"}}))
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("candidate 0: `temporal.participants` must be an array"),
            "{e}"
        );
        let e = parse_export(&export(json!(["just text"]))).unwrap_err();
        assert!(e.to_string().starts_with("candidate 0:"), "{e}");
    }

    #[test]
    fn json_is_told_from_plain_text() {
        assert!(looks_like_export("  \n{\"candidates\": []}"));
        assert!(looks_like_export("```json\n{\"candidates\": []}\n```\n"));
        assert!(
            looks_like_export("{ not even valid"),
            "broken JSON is refused, not extracted"
        );
        assert!(!looks_like_export(
            "- Prefers green tea\n- Lives in Porto\n"
        ));
        assert!(!looks_like_export("Here is what I remember: {name: Ana}"));
        assert!(!looks_like_export("[1, 2]"));
        assert!(!looks_like_export(""));
    }

    #[test]
    fn refuses_other_formats_and_bad_json() {
        let e = parse_export(r#"{"schemaVersion": "other.v9", "candidates": []}"#).unwrap_err();
        assert!(
            matches!(&e, ExternalMemoryError::SchemaVersion { found } if found == "other.v9"),
            "{e}"
        );
        let e = parse_export(r#"{"sourceType": "chat_log", "candidates": []}"#).unwrap_err();
        assert!(
            matches!(&e, ExternalMemoryError::SourceType { found } if found == "chat_log"),
            "{e}"
        );
        let e = parse_export("{\"candidates\": [\n}").unwrap_err();
        assert!(
            matches!(e, ExternalMemoryError::Json { line: 2, .. }),
            "{e}"
        );
        let e = parse_export(r#"{"items": []}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`candidates` is missing (an array of memory candidates)"
        );
        // Absent version and the legacy `events` list are accepted.
        let e = parse_export(r#"{"events": [{"title": "t", "summary": "s"}]}"#).unwrap();
        assert_eq!(e.candidates.len(), 1);
        assert_eq!(e.schema_version, None);
    }
}
