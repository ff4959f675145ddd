//! Memory candidates from plain text: `llm-import-extractor@1`.
//!
//! When the file given to `import memory` is not a JSON export but a pasted
//! list of memories (prose, bullets, numbered lines), a model turns it into
//! candidates of the `stratagate.external-memory.v2` shape; they are then
//! decided and committed exactly like the candidates of a JSON export.
//!
//! # Request
//!
//! The text is cut into parts of at most [`MAX_CHUNK_CHARS`] characters on
//! line boundaries ([`chunks`]; a single longer line is cut inside), one
//! request per part. The system prompt is
//! `operators/prompts/import_extractor.md`; the user turn is the JSON
//! `{"part": i, "parts": n, "text": …}`; the forced tool
//! `record_memory_candidates` takes `{"candidates": [...]}`.
//!
//! # Answer
//!
//! Every candidate of an answer goes through [`parse_candidate`], the
//! parser of JSON exports, so caps, enum checks and the dropping of dates
//! with an unknown precision are the same. Candidates are numbered across
//! parts in text order; at most [`MAX_CANDIDATES`] are kept (the rest are
//! counted as dropped). An answer that is not `{"candidates": [...]}` or
//! has a candidate the parser refuses is rejected as a whole; the part is
//! asked again with a note saying an earlier answer was rejected (a new
//! request, so a recorded bad answer is not served again), at most
//! [`MAX_ATTEMPTS`] times in all.

use serde_json::{Value, json};

use super::format::{Candidate, ExternalMemoryError, MAX_CANDIDATES, parse_candidate};
use crate::llm::prompt::{request, retry_note};
use crate::model::{ModelError, ModelGateway, ModelRequest, ToolSpec};
use crate::operator::OperatorId;

/// The format recorded in `ImportSource.format` for a plain-text import.
pub const FORMAT_TEXT: &str = "text";
/// The extractor's system prompt.
pub const EXTRACTOR_PROMPT: &str = include_str!("../../prompts/import_extractor.md");
/// The tool the extractor must call.
pub const EXTRACTOR_TOOL: &str = "record_memory_candidates";
/// Longest part of the text sent in one request, in characters.
pub const MAX_CHUNK_CHARS: usize = 12_000;
/// Most output tokens of one request.
pub const MAX_TOKENS: u32 = 8192;
/// Requests per part before its answers are given up on.
pub const MAX_ATTEMPTS: u32 = 3;

/// The id of the text extractor.
pub fn extractor_id() -> OperatorId {
    OperatorId::new("llm-import-extractor", 1)
}

/// Why candidates could not be extracted from a text.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TextImportError {
    /// No model to extract with.
    #[error(
        "the file is plain text (not a {} JSON export): extracting memories from it needs a model, \
         and profile `{profile}` has none; create one with `strataflow profile create NAME \
         --model MODEL [--base-url URL] [--api-key-env VAR]` and pass --profile NAME",
        super::format::FORMAT_V2
    )]
    NoModel {
        /// The profile that was looked at.
        profile: String,
    },
    /// The model could not answer (offline with no recorded call, service
    /// unavailable, misconfigured).
    #[error("part {part} of {parts} of the text: {source}")]
    Model {
        /// 1-based part.
        part: usize,
        /// Parts in all.
        parts: usize,
        /// The gateway's error.
        source: ModelError,
    },
    /// Every answer for a part was rejected.
    #[error(
        "part {part} of {parts} of the text: the model gave no valid answer in {attempts} attempts; the last was rejected: {reason}"
    )]
    Rejected {
        /// 1-based part.
        part: usize,
        /// Parts in all.
        parts: usize,
        /// Requests made for it.
        attempts: u32,
        /// Why the last answer was rejected.
        reason: String,
    },
}

/// Candidates extracted from a text.
#[derive(Clone, PartialEq, Debug)]
pub struct TextCandidates {
    /// At most [`MAX_CANDIDATES`], numbered in text order.
    pub candidates: Vec<Candidate>,
    /// Candidates beyond [`MAX_CANDIDATES`], not kept.
    pub dropped: usize,
    /// Parts the text was cut into (one request each, plus retries).
    pub parts: usize,
    /// Requests made, retries included (served from recorded calls or not).
    pub requests: usize,
}

/// Cuts `text` into parts of at most `max_chars` characters, on line
/// boundaries where possible: lines are kept whole and in order, a line
/// longer than `max_chars` is cut into pieces of `max_chars`. Parts with
/// only whitespace are left out. `max_chars` 0 is taken as 1.
pub fn chunks(text: &str, max_chars: usize) -> Vec<&str> {
    let max = max_chars.max(1);
    let mut out = Vec::new();
    // Byte start and character count of the part being built.
    let mut start = 0;
    let mut chars = 0;
    fn push<'t>(out: &mut Vec<&'t str>, part: &'t str) {
        if !part.trim().is_empty() {
            out.push(part);
        }
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        let n = line.chars().count();
        if chars + n <= max {
            chars += n;
            continue;
        }
        // Close the current part before this line.
        if chars > 0 {
            push(&mut out, slice(text, start..line_start));
        }
        start = line_start;
        chars = n;
        // A line longer than a part: cut it.
        while chars > max {
            let cut = text
                .get(start..)
                .and_then(|rest| rest.char_indices().nth(max))
                .map_or(text.len(), |(i, _)| start + i);
            push(&mut out, slice(text, start..cut));
            start = cut;
            chars -= max;
        }
    }
    if start < text.len() {
        push(&mut out, slice(text, start..text.len()));
    }
    out
}

/// `text[range]`, where the range's ends are line starts or `char_indices`
/// offsets of `text`.
fn slice(text: &str, range: std::ops::Range<usize>) -> &str {
    #[expect(
        clippy::expect_used,
        reason = "the cuts are line starts or char_indices offsets: char boundaries within the text"
    )]
    let part = text.get(range).expect("cut at a char boundary");
    part
}

/// The `record_memory_candidates` tool and its JSON Schema.
pub fn extractor_tool() -> ToolSpec {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let time = json!({"type": "string", "description": "YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339"});
    let candidate = json!({
        "type": "object",
        "required": ["memoryKind", "title", "summary", "tags", "quotes", "temporal", "confidence"],
        "properties": {
            "memoryKind": {"type": "string", "enum": ["instruction", "preference", "fact", "event"]},
            "category": {"type": "string", "enum": ["instruction", "identity", "career", "project", "preference"]},
            "title": {"type": "string", "maxLength": super::format::MAX_TITLE},
            "summary": {"type": "string", "maxLength": super::format::MAX_SUMMARY},
            "tags": strings,
            "quotes": strings,
            "temporal": {
                "type": "object",
                "required": ["precision", "basis"],
                "properties": {
                    "mentionedAt": time,
                    "happenedStart": time,
                    "happenedEnd": time,
                    "originalText": {"type": "string"},
                    "precision": {"type": "string", "enum": ["instant", "day", "month", "year", "range", "unknown"]},
                    "basis": {"type": "string", "enum": ["explicit", "relative", "inferred", "unknown"]},
                    "status": {"type": "string", "enum": ["occurred", "planned", "cancelled", "ongoing", "unknown"]},
                    "participants": strings,
                    "eventType": {"type": "string"}
                }
            },
            "scope": {"type": "string", "enum": ["user", "project", "session"]},
            "criticality": {"type": "string", "enum": ["routine", "preference", "identity", "safety"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1}
        }
    });
    ToolSpec {
        name: EXTRACTOR_TOOL.into(),
        description: "Record the memory candidates found in this part of the pasted text.".into(),
        parameters: json!({
            "type": "object",
            "required": ["candidates"],
            "properties": {"candidates": {"type": "array", "items": candidate}}
        }),
    }
}

/// The request for part `part` (1-based) of `parts`, attempt `attempt`
/// (from 2 on, the user turn says an earlier answer was rejected).
pub fn extractor_request(
    model: &str,
    chunk: &str,
    part: usize,
    parts: usize,
    attempt: u32,
) -> ModelRequest {
    let mut user = json!({"part": part, "parts": parts, "text": chunk}).to_string();
    if let Some(note) = retry_note(attempt, EXTRACTOR_TOOL) {
        user.push('\n');
        user.push_str(&note);
    }
    request(
        extractor_id(),
        model,
        EXTRACTOR_PROMPT,
        user,
        extractor_tool(),
        MAX_TOKENS,
    )
}

/// Parses an answer `{"candidates": [...]}`; its candidates are numbered
/// from `first_index`. Errors name the candidate (by that number) and the
/// field, as for a JSON export.
pub fn parse_answer(
    arguments: &Value,
    first_index: usize,
) -> Result<Vec<Candidate>, ExternalMemoryError> {
    let Value::Object(answer) = arguments else {
        return Err(ExternalMemoryError::Root);
    };
    let list = match answer.get("candidates") {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => {
            return Err(ExternalMemoryError::Field {
                field: "candidates",
                problem: "is missing (an array of memory candidates)".into(),
            });
        }
        Some(_) => {
            return Err(ExternalMemoryError::Field {
                field: "candidates",
                problem: "must be an array".into(),
            });
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| parse_candidate(first_index + i, v))
        .collect()
}

/// Extracts candidates from plain text through a model.
pub struct TextExtractor<'a> {
    /// Answers the requests.
    pub gateway: &'a dyn ModelGateway,
    /// Model name.
    pub model: String,
}

impl std::fmt::Debug for TextExtractor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextExtractor")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl TextExtractor<'_> {
    /// The candidates of `text` (see the module docs): one request per
    /// part, in order, retried up to [`MAX_ATTEMPTS`] times when an answer
    /// is rejected. A gateway error other than an unusable answer stops at
    /// once.
    pub fn extract(&self, text: &str) -> Result<TextCandidates, TextImportError> {
        let parts = chunks(text, MAX_CHUNK_CHARS);
        let count = parts.len();
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut requests = 0;
        for (i, chunk) in parts.iter().enumerate() {
            let part = i + 1;
            let subject = format!("part {part} of {count} of the imported text");
            let mut attempt = 1;
            let found = loop {
                let request = extractor_request(&self.model, chunk, part, count, attempt);
                requests += 1;
                let reason = match self.gateway.complete(&request, &subject) {
                    Ok(reply) => match parse_answer(&reply.arguments, candidates.len()) {
                        Ok(found) => break found,
                        Err(e) => e.to_string(),
                    },
                    Err(ModelError::Malformed { problem, .. }) => problem,
                    Err(source) => {
                        return Err(TextImportError::Model {
                            part,
                            parts: count,
                            source,
                        });
                    }
                };
                if attempt >= MAX_ATTEMPTS {
                    return Err(TextImportError::Rejected {
                        part,
                        parts: count,
                        attempts: attempt,
                        reason,
                    });
                }
                attempt += 1;
            };
            candidates.extend(found);
        }
        let dropped = candidates.len().saturating_sub(MAX_CANDIDATES);
        candidates.truncate(MAX_CANDIDATES);
        Ok(TextCandidates {
            candidates,
            dropped,
            parts: count,
            requests,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::llm::testing::FakeGateway;
    use crate::model::ModelError;
    use strataflow_record::record::Precision;

    #[test]
    fn chunks_keep_lines_whole_and_in_order() {
        let text = "- one\n- two\n- three\n";
        assert_eq!(chunks(text, 100), vec![text]);
        assert_eq!(chunks(text, 12), vec!["- one\n- two\n", "- three\n"]);
        // Joined back, the parts are the text.
        let long: String = (0..500).map(|i| format!("- memory number {i}\n")).collect();
        let parts = chunks(&long, 1000);
        assert!(parts.len() > 5);
        assert_eq!(parts.concat(), long);
        assert!(parts.iter().all(|p| p.chars().count() <= 1000));
        assert!(parts.iter().all(|p| p.ends_with('\n')), "cut on lines");
        // A line longer than a part is cut inside, on characters.
        let wide = format!("{}\nshort\n", "é".repeat(25));
        let parts = chunks(&wide, 10);
        assert_eq!(parts.concat(), wide);
        assert_eq!(parts[0].chars().count(), 10);
        assert!(parts.iter().all(|p| p.chars().count() <= 10), "{parts:?}");
        // Whitespace-only parts are left out.
        assert_eq!(chunks("\n\n   \n", 2), Vec::<&str>::new());
        assert_eq!(chunks("", 10), Vec::<&str>::new());
    }

    #[test]
    fn the_request_carries_the_part_and_forces_the_tool() {
        let r = extractor_request("m", "- likes tea\n", 2, 3, 1);
        assert_eq!(r.operator.to_string(), "llm-import-extractor@1");
        assert_eq!(r.messages[0].content, EXTRACTOR_PROMPT);
        let user: Value = serde_json::from_str(&r.messages[1].content).unwrap();
        assert_eq!(
            user,
            json!({"part": 2, "parts": 3, "text": "- likes tea\n"})
        );
        assert_eq!(r.tool.name, EXTRACTOR_TOOL);
        assert_eq!(
            r.tool.parameters["properties"]["candidates"]["items"]["properties"]["temporal"]["properties"]
                ["precision"]["enum"][5],
            "unknown"
        );
        assert_eq!(r.temperature, 0.0);
        assert_eq!(
            r.key(),
            extractor_request("m", "- likes tea\n", 2, 3, 1).key()
        );
        let retry = extractor_request("m", "- likes tea\n", 2, 3, 2);
        assert_ne!(retry.key(), r.key(), "a retry is a new request");
        assert!(retry.messages[1].content.contains("Attempt 2"));
        assert!(
            EXTRACTOR_PROMPT.contains("Never use the time of the export"),
            "the prompt forbids the export time as event time"
        );
    }

    #[test]
    fn answers_go_through_the_export_candidate_parser() {
        let long = "x".repeat(300);
        let found = parse_answer(
            &json!({"candidates": [
                {"title": long, "summary": "Ana likes tea.", "category": "preference",
                 "tags": ["tea", "preference"], "memoryKind": "gossip",
                 "temporal": {"precision": "unknown", "basis": "explicit", "happenedStart": "2026-01-01"}},
                {"title": "Moved to Porto", "summary": "Ana moved to Porto in 2021.",
                 "temporal": {"happenedStart": "2021", "precision": "year", "basis": "explicit"}}
            ]}),
            7,
        )
        .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].index, found[1].index), (7, 8));
        assert_eq!(
            found[0].title.chars().count(),
            super::super::format::MAX_TITLE
        );
        assert_eq!(found[0].tags, vec!["preference", "tea"]);
        assert_eq!(found[0].memory_kind, None, "invalid enum omitted");
        let t = found[0].temporal.as_ref().unwrap();
        assert_eq!(t.happened_start, None, "unknown precision drops the date");
        let t = found[1].temporal.as_ref().unwrap();
        assert_eq!(t.precision, Some(Precision::Year));

        let e = parse_answer(&json!({"candidates": [{"title": "t"}]}), 4).unwrap_err();
        assert_eq!(e.to_string(), "candidate 4: `summary` is missing or empty");
        let e = parse_answer(&json!({"memories": []}), 0).unwrap_err();
        assert!(e.to_string().contains("`candidates` is missing"), "{e}");
        assert!(parse_answer(&json!([]), 0).is_err());
        assert_eq!(parse_answer(&json!({"candidates": []}), 0).unwrap(), vec![]);
    }

    fn candidate(title: &str) -> Value {
        json!({"title": title, "summary": format!("{title}.")})
    }

    #[test]
    fn parts_are_asked_in_order_and_numbered_across() {
        let gateway = FakeGateway::new(|r| {
            let user: Value = serde_json::from_str(&r.messages[1].content).unwrap();
            let part = user["part"].as_u64().unwrap();
            Ok(
                json!({"candidates": [candidate(&format!("p{part}a")), candidate(&format!("p{part}b"))]}),
            )
        });
        let text: String = (0..3000).map(|i| format!("- memory {i:04}\n")).collect();
        let extractor = TextExtractor {
            gateway: gateway.as_ref(),
            model: "m".into(),
        };
        let out = extractor.extract(&text).unwrap();
        let expected = chunks(&text, MAX_CHUNK_CHARS).len();
        assert!(expected >= 3, "{expected}");
        assert_eq!(out.parts, expected);
        assert_eq!(out.requests, expected);
        assert_eq!(gateway.requests().len(), expected);
        assert_eq!(out.candidates.len(), 2 * expected);
        assert_eq!(out.candidates[2].title, "p2a");
        assert!(out.candidates.iter().enumerate().all(|(i, c)| c.index == i));
        assert_eq!(out.dropped, 0);
    }

    #[test]
    fn at_most_200_candidates_are_kept() {
        let gateway = FakeGateway::new(|_| {
            let many: Vec<Value> = (0..150).map(|i| candidate(&format!("c{i}"))).collect();
            Ok(json!({ "candidates": many }))
        });
        let text = format!("{}\n{}\n", "a".repeat(MAX_CHUNK_CHARS), "b".repeat(10));
        let out = TextExtractor {
            gateway: gateway.as_ref(),
            model: "m".into(),
        }
        .extract(&text)
        .unwrap();
        assert_eq!(out.parts, 2);
        assert_eq!(out.candidates.len(), MAX_CANDIDATES);
        assert_eq!(out.dropped, 100);
    }

    #[test]
    fn rejected_answers_are_asked_again_then_given_up() {
        let gateway = FakeGateway::new(|r| {
            Ok(if r.messages[1].content.contains("Attempt 2") {
                json!({"candidates": [candidate("fine")]})
            } else {
                json!({"candidates": [{"title": 3, "summary": "s"}]})
            })
        });
        let extractor = TextExtractor {
            gateway: gateway.as_ref(),
            model: "m".into(),
        };
        let out = extractor.extract("- fine\n").unwrap();
        assert_eq!((out.requests, out.candidates.len()), (2, 1));

        let gateway = FakeGateway::answering(json!({"nothing": true}));
        let extractor = TextExtractor {
            gateway: gateway.as_ref(),
            model: "m".into(),
        };
        let e = extractor.extract("- fine\n").unwrap_err();
        assert_eq!(gateway.requests().len(), MAX_ATTEMPTS as usize);
        assert!(
            e.to_string().starts_with(
                "part 1 of 1 of the text: the model gave no valid answer in 3 attempts"
            ),
            "{e}"
        );
        assert!(e.to_string().contains("`candidates` is missing"), "{e}");
    }

    #[test]
    fn gateway_errors_stop_at_once() {
        let gateway = FakeGateway::failing(ModelError::Offline {
            operator: "llm-import-extractor@1".into(),
            subject: "part 1 of 1 of the imported text".into(),
        });
        let extractor = TextExtractor {
            gateway: gateway.as_ref(),
            model: "m".into(),
        };
        let e = extractor.extract("- a\n").unwrap_err();
        assert_eq!(gateway.requests().len(), 1);
        assert!(matches!(
            e,
            TextImportError::Model {
                source: ModelError::Offline { .. },
                ..
            }
        ));
        assert!(e.to_string().contains("offline"), "{e}");
        // An unusable reply is retried like a rejected answer.
        let gateway = FakeGateway::failing(ModelError::Malformed {
            call: None,
            problem: "no tool call".into(),
        });
        let extractor = TextExtractor {
            gateway: gateway.as_ref(),
            model: "m".into(),
        };
        let e = extractor.extract("- a\n").unwrap_err();
        assert_eq!(gateway.requests().len(), MAX_ATTEMPTS as usize);
        assert!(e.to_string().ends_with("no tool call"), "{e}");
    }
}
