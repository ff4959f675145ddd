//! Deciding what to do with one import candidate (spec §14.2).
//!
//! The deterministic checks (an exact duplicate of an existing event or of
//! an earlier candidate) come first and never reach a decider; the caller
//! makes them, since they need the event store. Otherwise a decider picks
//! one of the five actions against the candidate's top-K matches:
//!
//! - [`ModelDecider`]: an `llm-import-decider@1` request through a
//!   [`ModelGateway`]; its answer is normalized by [`normalize_answer`];
//! - [`FallbackDecider`], used when no model is configured: no match →
//!   ADD (confidence 1); matches → ADD that requires confirmation.
//!
//! Every proposal requires confirmation when its confidence is below
//! [`AUTO_APPLY_CONFIDENCE_MILLI`].

use serde_json::{Value, json};
use strataflow_record::RecordId;
use strataflow_record::record::ImportAction;

use super::event::milli;
use super::format::{Candidate, parse_candidate};
use crate::model::{ChatMessage, ModelError, ModelGateway, ModelRequest, ToolSpec};
use crate::operator::OperatorId;

/// Proposals below this confidence (per mille) require confirmation.
pub const AUTO_APPLY_CONFIDENCE_MILLI: u16 = 850;
/// Matches shown to the decider.
pub const DEFAULT_TOP_K: usize = 5;
/// Longest reason kept, in characters.
pub const MAX_REASON: usize = 200;
/// The decider's system prompt.
pub const DECIDER_PROMPT: &str = include_str!("../../prompts/import_decider.md");
/// Name of the tool the decider must call.
pub const DECIDER_TOOL: &str = "decide_import";

/// Reason of an exact duplicate of an existing event.
pub const REASON_EXACT_DUPLICATE: &str = "exact duplicate of an existing memory";
/// Reason of a duplicate of an earlier candidate of the same file.
pub const REASON_BATCH_DUPLICATE: &str = "exact duplicate of an earlier candidate in this import";
/// Reason of a model answer that named no allowed event.
pub const REASON_NO_ALLOWED_TARGET: &str =
    "the model linked no existing memory within the allowed matches; safely ignored";

/// The id of the model-backed decider.
pub fn decider_id() -> OperatorId {
    OperatorId::new("llm-import-decider", 1)
}

/// An existing event as a decider sees it.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct ExistingEvent {
    /// Its id (the only ids a decider may name).
    pub id: RecordId,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Tags.
    pub tags: Vec<String>,
    /// `active` or `superseded`.
    pub status: String,
    /// When it happened, when known (RFC 3339 interval start).
    pub happened: Option<String>,
}

/// What a decider proposes for one candidate.
#[derive(Clone, PartialEq, Debug, serde::Serialize)]
pub struct Proposal {
    /// The action.
    pub action: ImportAction,
    /// Existing events it relates to (a subset of the matches).
    pub targets: Vec<RecordId>,
    /// For MERGE: the consolidated candidate, when the decider gave a valid one.
    pub merged: Option<Candidate>,
    /// Why (at most [`MAX_REASON`] characters).
    pub reason: String,
    /// Confidence in per-mille.
    pub confidence_milli: u16,
    /// Below [`AUTO_APPLY_CONFIDENCE_MILLI`].
    pub requires_confirmation: bool,
}

impl Proposal {
    fn new(action: ImportAction, targets: Vec<RecordId>, reason: &str, confidence: u16) -> Self {
        Self {
            action,
            targets,
            merged: None,
            reason: cut(reason, MAX_REASON),
            confidence_milli: confidence,
            requires_confirmation: confidence < AUTO_APPLY_CONFIDENCE_MILLI,
        }
    }

    /// The deterministic IGNORE of an exact duplicate of `existing`.
    pub fn exact_duplicate(existing: RecordId) -> Self {
        Self::new(
            ImportAction::Ignore,
            vec![existing],
            REASON_EXACT_DUPLICATE,
            1000,
        )
    }

    /// The deterministic IGNORE of a repeat of an earlier candidate.
    pub fn batch_duplicate() -> Self {
        Self::new(
            ImportAction::Ignore,
            Vec::new(),
            REASON_BATCH_DUPLICATE,
            1000,
        )
    }
}

/// Decides one candidate against its matches.
pub trait ImportDecider {
    /// The decider's id (for reports).
    fn id(&self) -> OperatorId;
    /// A proposal; an error only when the model could not answer.
    fn decide(
        &self,
        candidate: &Candidate,
        matches: &[ExistingEvent],
    ) -> Result<Proposal, ModelError>;
}

/// The deterministic decider used without a model.
#[derive(Clone, Copy, Debug, Default)]
pub struct FallbackDecider;

impl ImportDecider for FallbackDecider {
    fn id(&self) -> OperatorId {
        OperatorId::new("fallback-import-decider", 1)
    }

    fn decide(
        &self,
        _candidate: &Candidate,
        matches: &[ExistingEvent],
    ) -> Result<Proposal, ModelError> {
        Ok(if matches.is_empty() {
            Proposal::new(
                ImportAction::Add,
                Vec::new(),
                "no similar memory exists",
                1000,
            )
        } else {
            Proposal::new(
                ImportAction::Add,
                Vec::new(),
                &format!(
                    "{} similar memories exist and no model is configured to compare them; confirm to add",
                    matches.len()
                ),
                500,
            )
        })
    }
}

/// The model-backed decider.
pub struct ModelDecider<'a> {
    /// Answers the requests.
    pub gateway: &'a dyn ModelGateway,
    /// Model name.
    pub model: String,
}

impl std::fmt::Debug for ModelDecider<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelDecider")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl ImportDecider for ModelDecider<'_> {
    fn id(&self) -> OperatorId {
        decider_id()
    }

    fn decide(
        &self,
        candidate: &Candidate,
        matches: &[ExistingEvent],
    ) -> Result<Proposal, ModelError> {
        let request = decider_request(&self.model, candidate, matches);
        let subject = format!("import candidate {} `{}`", candidate.index, candidate.title);
        let reply = self.gateway.complete(&request, &subject)?;
        let allowed: Vec<RecordId> = matches.iter().map(|m| m.id).collect();
        Ok(normalize_answer(
            &reply.arguments,
            candidate.index,
            &allowed,
        ))
    }
}

/// The decider's request: the system prompt, then the candidate and its
/// matches as JSON; the answer is a `decide_import` tool call.
pub fn decider_request(
    model: &str,
    candidate: &Candidate,
    matches: &[ExistingEvent],
) -> ModelRequest {
    let payload = json!({
        "candidate": candidate,
        "existing_events": matches,
    });
    ModelRequest {
        operator: decider_id(),
        model: model.to_owned(),
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: DECIDER_PROMPT.to_owned(),
            },
            ChatMessage {
                role: "user".into(),
                content: payload.to_string(),
            },
        ],
        tool: ToolSpec {
            name: DECIDER_TOOL.into(),
            description: "Record the decision for one imported memory candidate.".into(),
            parameters: json!({
                "type": "object",
                "required": ["action", "existing_event_ids", "reason", "confidence"],
                "properties": {
                    "action": {"type": "string", "enum": ["ADD", "MERGE", "SUPERSEDE", "CONFLICT", "IGNORE"]},
                    "existing_event_ids": {
                        "type": "array",
                        "items": {"type": "string", "enum": matches.iter().map(|m| m.id.to_hex()).collect::<Vec<_>>()}
                    },
                    "merged_candidate": {
                        "type": "object",
                        "description": "For MERGE: the consolidated memory, same fields as the candidate.",
                        "required": ["title", "summary"]
                    },
                    "reason": {"type": "string", "maxLength": MAX_REASON},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1}
                }
            }),
        },
        temperature: 0.0,
        max_tokens: 1200,
    }
}

/// Normalizes a decider's answer (spec §14.2): targets = the named ids that
/// are in `allowed` (hex, optionally `event:`-prefixed, in `allowed`
/// order); an unknown action is IGNORE; MERGE, SUPERSEDE or CONFLICT with no
/// allowed target is IGNORE with confidence 0.5 and
/// [`REASON_NO_ALLOWED_TARGET`]; confidence defaults to 0.5 and is clamped;
/// the reason is cut to 200 characters; a merged candidate is kept only
/// for MERGE and only when it parses.
pub fn normalize_answer(
    arguments: &Value,
    candidate_index: usize,
    allowed: &[RecordId],
) -> Proposal {
    let action = arguments
        .get("action")
        .and_then(Value::as_str)
        .and_then(ImportAction::parse)
        .unwrap_or(ImportAction::Ignore);
    let named: Vec<RecordId> = arguments
        .get("existing_event_ids")
        .or_else(|| arguments.get("existingEventIds"))
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .filter_map(|s| {
                    let hex = s.trim();
                    hex.strip_prefix("event:")
                        .unwrap_or(hex)
                        .parse::<RecordId>()
                        .ok()
                })
                .collect()
        })
        // No `targets` is no target (the action's rule then decides).
        .unwrap_or_default();
    let targets: Vec<RecordId> = allowed
        .iter()
        .copied()
        .filter(|id| named.contains(id))
        .collect();
    let confidence = milli(
        arguments
            .get("confidence")
            .and_then(Value::as_f64)
            .unwrap_or(0.5),
    );
    // The reason is optional in the tool's schema: none is empty.
    let reason = arguments
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim();
    let linking = matches!(
        action,
        ImportAction::Merge | ImportAction::Supersede | ImportAction::Conflict
    );
    if linking && targets.is_empty() {
        return Proposal::new(
            ImportAction::Ignore,
            Vec::new(),
            REASON_NO_ALLOWED_TARGET,
            500,
        );
    }
    let mut proposal = Proposal::new(action, targets, reason, confidence);
    if action == ImportAction::Merge {
        proposal.merged = arguments
            .get("merged_candidate")
            .or_else(|| arguments.get("mergedCandidate"))
            .and_then(|v| parse_candidate(candidate_index, v).ok());
    }
    proposal
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::ModelReply;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const A: RecordId = RecordId([1; 32]);
    const B: RecordId = RecordId([2; 32]);
    const OUTSIDE: RecordId = RecordId([9; 32]);

    #[test]
    fn answers_are_normalized() {
        let p = normalize_answer(
            &json!({"action": "supersede", "existing_event_ids": [B.to_hex(), format!("event:{}", A.to_hex()), OUTSIDE.to_hex()],
                    "reason": "x".repeat(300), "confidence": 0.9}),
            0,
            &[A, B],
        );
        assert_eq!(p.action, ImportAction::Supersede);
        assert_eq!(p.targets, vec![A, B], "only allowed ids, in match order");
        assert_eq!(p.reason.chars().count(), MAX_REASON);
        assert_eq!(p.confidence_milli, 900);
        assert!(!p.requires_confirmation);

        let p = normalize_answer(
            &json!({"action": "CONFLICT", "existing_event_ids": [OUTSIDE.to_hex()], "confidence": 1}),
            0,
            &[A],
        );
        assert_eq!(p.action, ImportAction::Ignore);
        assert_eq!(p.confidence_milli, 500);
        assert_eq!(p.reason, REASON_NO_ALLOWED_TARGET);
        assert!(p.requires_confirmation);

        let p = normalize_answer(&json!({"action": "DELETE_ALL"}), 0, &[A]);
        assert_eq!(p.action, ImportAction::Ignore);
        assert_eq!(p.confidence_milli, 500, "default confidence");

        let p = normalize_answer(&json!({"action": "ADD", "confidence": 7}), 0, &[]);
        assert_eq!((p.action, p.confidence_milli), (ImportAction::Add, 1000));

        let p = normalize_answer(
            &json!({"action": "MERGE", "existing_event_ids": [A.to_hex()], "confidence": 0.84,
                    "merged_candidate": {"title": "merged", "summary": "both"}}),
            3,
            &[A],
        );
        assert_eq!(p.merged.as_ref().map(|c| c.title.as_str()), Some("merged"));
        assert_eq!(p.merged.as_ref().map(|c| c.index), Some(3));
        assert!(p.requires_confirmation, "0.84 < 0.85");
    }

    struct Counting(AtomicUsize, Value);

    impl ModelGateway for Counting {
        fn complete(&self, request: &ModelRequest, _: &str) -> Result<ModelReply, ModelError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            assert_eq!(request.tool.name, DECIDER_TOOL);
            assert!(request.messages[1].content.contains("existing_events"));
            Ok(ModelReply {
                arguments: self.1.clone(),
                from_log: false,
            })
        }
    }

    #[test]
    fn the_model_decider_asks_once_and_keeps_targets_in_its_matches() {
        let gateway = Counting(
            AtomicUsize::new(0),
            json!({"action": "MERGE", "existing_event_ids": [A.to_hex(), OUTSIDE.to_hex()], "reason": "same", "confidence": 0.95}),
        );
        let decider = ModelDecider {
            gateway: &gateway,
            model: "m".into(),
        };
        let c = parse_candidate(0, &json!({"title": "t", "summary": "s"})).unwrap();
        let m = ExistingEvent {
            id: A,
            title: "t".into(),
            summary: "s2".into(),
            tags: vec![],
            status: "active".into(),
            happened: None,
        };
        let p = decider.decide(&c, &[m]).unwrap();
        assert_eq!(gateway.0.load(Ordering::SeqCst), 1);
        assert_eq!((p.action, p.targets), (ImportAction::Merge, vec![A]));
    }

    #[test]
    fn the_fallback_adds_and_asks_for_confirmation_when_something_is_similar() {
        let c = parse_candidate(0, &json!({"title": "t", "summary": "s"})).unwrap();
        let p = FallbackDecider.decide(&c, &[]).unwrap();
        assert_eq!((p.action, p.confidence_milli), (ImportAction::Add, 1000));
        assert!(!p.requires_confirmation);
        let m = ExistingEvent {
            id: A,
            title: "t".into(),
            summary: "other".into(),
            tags: vec![],
            status: "active".into(),
            happened: None,
        };
        let p = FallbackDecider.decide(&c, &[m]).unwrap();
        assert_eq!(p.action, ImportAction::Add);
        assert!(p.requires_confirmation);
        assert!(p.reason.contains("confirm"), "{}", p.reason);
    }
}
