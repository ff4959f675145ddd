//! The evidence gate (spec §12): normalizing the agent's assessment of a
//! retrieval batch, and checking which refs it may record as used.
//!
//! Every search or expand returns a batch of refs. The agent assesses the
//! batch with five fields (verdict, evidence refs, fit, missing, next
//! strategy); [`normalize_assessment`] turns that free-form input into the
//! stored assessment. A `sufficient` verdict survives only with at least one
//! ref from the batch and `answer` as the next strategy. Only refs adopted by a
//! batch's sufficient assessment may then be recorded as used
//! ([`check_use`]), and recording is the only thing that reinforces weights
//! (spec §13.2). A recorded batch is closed: it can be neither assessed nor
//! recorded again ([`ensure_unresolved`]).
//!
//! Refs are text: `event:<id>`, `node:<id>`, `msg:<id>` and
//! `block:<id>:L<n>`, with 64-hex record ids ([`parse_ref`], [`format_ref`]).
//! Batch membership is plain string equality with the batch's refs.
//!
//! Pure functions: batches and assessments are parameters; the caller keeps
//! the batch state and writes the records.

use std::collections::HashSet;

use strataflow_record::RecordId;
use strataflow_record::record::{EvidenceRef, RefKind, Verdict};

/// The next strategies an assessment may name: the V2 host tool enum
/// (spec §12.1), which adds `search_graph` and `expand_graph_node` to the V1
/// contract v5 list.
pub const STRATEGIES: [&str; 9] = [
    "answer",
    "search_events",
    "expand_event",
    "search_graph",
    "expand_graph_node",
    "search_elements",
    "expand_element",
    "search_raw_memory",
    "expand_block",
];

/// The strategy of a sufficient assessment.
pub const ANSWER_STRATEGY: &str = "answer";

/// The strategy used when the input names none of [`STRATEGIES`], and instead
/// of `answer` when the assessment is not sufficient.
pub const FALLBACK_STRATEGY: &str = "search_events";

/// Most evidence refs an assessment keeps.
pub const MAX_EVIDENCE_REFS: usize = 8;

/// Longest `fit` and `missing` text, in characters.
pub const SHORT_TEXT_CHARS: usize = 160;

/// The `missing` text of an insufficient assessment that gave none.
pub const DEFAULT_MISSING: &str =
    "Direct evidence required to answer the question is still missing.";

/// The issue name of a ref that is in the batch but was not adopted by its
/// sufficient assessment ([`check_use`]).
pub const NOT_ADOPTED: &str = "not_adopted";

/// The agent's assessment of a batch, as given (spec §12.1 fields).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct AssessmentInput {
    /// `sufficient`, `partial` or `wrong`; anything else counts as `partial`.
    pub verdict: String,
    /// Evidence refs, as given.
    pub evidence: Vec<String>,
    /// How the evidence fits the question.
    pub fit: String,
    /// What is still missing.
    pub missing: String,
    /// The next strategy, one of [`STRATEGIES`].
    pub next: String,
}

/// Why an evidence ref was left out of a normalized assessment (V2
/// `rejectedEvidenceRefs` reasons).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RejectReason {
    /// Empty after trimming.
    InvalidRef,
    /// Repeats a ref already kept.
    Duplicate,
    /// Not one of the assessed batch's refs.
    NotInBatch,
    /// Valid, but [`MAX_EVIDENCE_REFS`] refs were already kept.
    LimitExceeded,
}

impl RejectReason {
    /// The snake_case name (`invalid_ref`, `duplicate`, `not_in_batch`,
    /// `limit_exceeded`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRef => "invalid_ref",
            Self::Duplicate => "duplicate",
            Self::NotInBatch => "not_in_batch",
            Self::LimitExceeded => "limit_exceeded",
        }
    }
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An evidence ref left out of a normalized assessment.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RejectedRef {
    /// Position in [`AssessmentInput::evidence`].
    pub input_index: usize,
    /// The ref as given (untrimmed).
    pub reference: String,
    /// Why it was left out.
    pub reason: RejectReason,
}

/// An assessment after normalization (spec §12.2), ready to be stored.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NormalizedAssessment {
    /// `Sufficient` only with ≥1 valid ref and `answer` as next strategy.
    /// The spec's `wrong` is [`Verdict::Insufficient`].
    pub verdict: Verdict,
    /// Refs of the batch, trimmed, de-duplicated, in input order, at most
    /// [`MAX_EVIDENCE_REFS`].
    pub evidence: Vec<String>,
    /// [`short_text`] of the input's fit.
    pub fit: String,
    /// Empty when sufficient; else [`short_text`] of the input's missing, or
    /// [`DEFAULT_MISSING`] when that is empty.
    pub missing: String,
    /// `answer` when sufficient; else the requested strategy, with `answer`
    /// and unknown strategies replaced by [`FALLBACK_STRATEGY`].
    pub next: String,
    /// Input refs left out of `evidence`, in input order.
    pub rejected: Vec<RejectedRef>,
}

impl NormalizedAssessment {
    /// The refs this assessment adopts, i.e. that may be recorded as used:
    /// its evidence when sufficient, none otherwise.
    pub fn adopted(&self) -> &[String] {
        if self.verdict == Verdict::Sufficient {
            &self.evidence
        } else {
            &[]
        }
    }
}

/// Trims, collapses every whitespace run to one space, and keeps the first
/// [`SHORT_TEXT_CHARS`] characters (spec `shortText`).
///
/// Characters are Unicode scalar values; StrataGate's `slice` counts UTF-16
/// units, which differs only for text beyond the Basic Multilingual Plane
/// (and never splits a character here).
pub fn short_text(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.chars().take(SHORT_TEXT_CHARS).collect()
}

/// Normalizes the agent's assessment of a batch whose refs are `batch_refs`
/// (spec §12.2, `normalizeRetrievalAssessment`).
///
/// - Requested verdict: `sufficient` or `wrong` as given (after trimming,
///   case-sensitive), anything else `partial`.
/// - Evidence: each input ref is trimmed; empty refs are `invalid_ref`, refs
///   not in the batch `not_in_batch`, repeats of a kept ref `duplicate`, and
///   valid refs beyond the eighth `limit_exceeded`. Kept refs stay in input
///   order. (StrataGate does not trim here; we do, as `record_use` does, so
///   the two agree.)
/// - Requested strategy: one of [`STRATEGIES`] (after trimming), else
///   [`FALLBACK_STRATEGY`].
/// - Sufficient ⇔ requested `sufficient`, ≥1 kept ref and requested `answer`.
/// - Verdict: `Sufficient` if sufficient; `Insufficient` if `wrong` was
///   requested (the record type names the spec's `wrong` so); else `Partial`.
/// - `fit` is [`short_text`]; `missing` is empty when sufficient, else
///   [`short_text`] or [`DEFAULT_MISSING`]; `next` is `answer` when
///   sufficient, else the requested strategy with `answer` replaced by
///   [`FALLBACK_STRATEGY`].
pub fn normalize_assessment(
    input: &AssessmentInput,
    batch_refs: &[String],
) -> NormalizedAssessment {
    let batch: HashSet<&str> = batch_refs.iter().map(String::as_str).collect();
    let mut evidence: Vec<String> = Vec::new();
    let mut rejected = Vec::new();
    for (input_index, reference) in input.evidence.iter().enumerate() {
        let trimmed = reference.trim();
        let reason = if trimmed.is_empty() {
            Some(RejectReason::InvalidRef)
        } else if !batch.contains(trimmed) {
            Some(RejectReason::NotInBatch)
        } else if evidence.iter().any(|kept| kept == trimmed) {
            Some(RejectReason::Duplicate)
        } else if evidence.len() >= MAX_EVIDENCE_REFS {
            Some(RejectReason::LimitExceeded)
        } else {
            None
        };
        match reason {
            Some(reason) => rejected.push(RejectedRef {
                input_index,
                reference: reference.clone(),
                reason,
            }),
            None => evidence.push(trimmed.to_owned()),
        }
    }

    let requested_verdict = input.verdict.trim();
    let requested_strategy = {
        let next = input.next.trim();
        if STRATEGIES.contains(&next) {
            next
        } else {
            FALLBACK_STRATEGY
        }
    };
    let sufficient = requested_verdict == "sufficient"
        && !evidence.is_empty()
        && requested_strategy == ANSWER_STRATEGY;

    let verdict = if sufficient {
        Verdict::Sufficient
    } else if requested_verdict == "wrong" {
        Verdict::Insufficient
    } else {
        Verdict::Partial
    };
    let missing = if sufficient {
        String::new()
    } else {
        let text = short_text(&input.missing);
        if text.is_empty() {
            DEFAULT_MISSING.to_owned()
        } else {
            text
        }
    };
    let next = if sufficient {
        ANSWER_STRATEGY
    } else if requested_strategy == ANSWER_STRATEGY {
        FALLBACK_STRATEGY
    } else {
        requested_strategy
    };

    NormalizedAssessment {
        verdict,
        evidence,
        fit: short_text(&input.fit),
        missing,
        next: next.to_owned(),
        rejected,
    }
}

/// Refs accepted by [`check_use`].
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct AcceptedUse {
    /// The refs to record, trimmed and de-duplicated, in input order. May be
    /// empty (a zero-increment receipt).
    pub refs: Vec<String>,
    /// Each repeated occurrence of a ref (trimmed), in input order; reported,
    /// not an error.
    pub duplicates: Vec<String>,
}

/// Why `record_use` refused a list of refs: every issue, plus what the
/// caller could have used.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error(
    "evidence refs cannot be recorded as used: {}; available refs: {}; adopted refs: {}",
    list_issues(.issues),
    list_refs(.available),
    list_refs(.adopted)
)]
pub struct UseError {
    /// `(ref, issue)` for every bad ref, in input order (the ref trimmed);
    /// issues are `invalid_ref`, `not_in_batch` and [`NOT_ADOPTED`].
    pub issues: Vec<(String, &'static str)>,
    /// The batch's refs.
    pub available: Vec<String>,
    /// The refs adopted by the batch's sufficient assessment.
    pub adopted: Vec<String>,
}

fn list_issues(issues: &[(String, &'static str)]) -> String {
    issues
        .iter()
        .map(|(reference, issue)| format!("`{reference}` {issue}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_refs(refs: &[String]) -> String {
    if refs.is_empty() {
        "none".to_owned()
    } else {
        refs.join(", ")
    }
}

/// Checks the refs of a `record_use` call against the batch and the refs its
/// sufficient assessment adopted (spec §12.3; pass
/// [`NormalizedAssessment::adopted`], which is empty unless sufficient).
///
/// Refs are trimmed. An empty ref is `invalid_ref`. Repeats are reported in
/// [`AcceptedUse::duplicates`] and are not errors. Each distinct ref must be
/// in the batch (`not_in_batch`) and adopted ([`NOT_ADOPTED`]). Any issue
/// fails the whole call with every issue listed. An empty list is accepted.
/// The caller must also check that the batch is still unresolved
/// ([`ensure_unresolved`]).
pub fn check_use(
    refs: &[String],
    batch_refs: &[String],
    adopted: &[String],
) -> Result<AcceptedUse, UseError> {
    let batch: HashSet<&str> = batch_refs.iter().map(String::as_str).collect();
    let adopted_set: HashSet<&str> = adopted.iter().map(String::as_str).collect();
    let mut accepted = AcceptedUse::default();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut issues = Vec::new();
    for reference in refs {
        let trimmed = reference.trim();
        if trimmed.is_empty() {
            issues.push((String::new(), RejectReason::InvalidRef.as_str()));
            continue;
        }
        if !seen.insert(trimmed) {
            accepted.duplicates.push(trimmed.to_owned());
            continue;
        }
        if !batch.contains(trimmed) {
            issues.push((trimmed.to_owned(), RejectReason::NotInBatch.as_str()));
        } else if !adopted_set.contains(trimmed) {
            issues.push((trimmed.to_owned(), NOT_ADOPTED));
        } else {
            accepted.refs.push(trimmed.to_owned());
        }
    }
    if issues.is_empty() {
        Ok(accepted)
    } else {
        Err(UseError {
            issues,
            available: batch_refs.to_vec(),
            adopted: adopted.to_vec(),
        })
    }
}

/// Where a batch is in the gate.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum BatchStatus {
    /// Returned, possibly assessed (re-assessing overwrites), not yet
    /// recorded.
    #[default]
    Unresolved,
    /// Its use was recorded; it is closed.
    Recorded,
}

/// A recorded batch was assessed or recorded again.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("the batch was already recorded; it cannot be assessed or recorded again")]
pub struct BatchClosed;

/// Checks that a batch may still be assessed or recorded (spec §12.3: only
/// `unresolved` batches may be).
pub fn ensure_unresolved(status: BatchStatus) -> Result<(), BatchClosed> {
    match status {
        BatchStatus::Unresolved => Ok(()),
        BatchStatus::Recorded => Err(BatchClosed),
    }
}

/// Parses a ref in its canonical form: `event:<id>`, `node:<id>`,
/// `msg:<id>` or `block:<id>:L<n>` with `<id>` 64 lowercase hex digits and
/// `n` in 0..=5. Anything else (surrounding whitespace, uppercase hex, a block
/// without a level, a level on another kind) is `None`, so
/// `format_ref(&parse_ref(s)?) == s`.
pub fn parse_ref(text: &str) -> Option<EvidenceRef> {
    let (kind, rest) = text.split_once(':')?;
    let kind = match kind {
        "event" => RefKind::Event,
        "node" => RefKind::Node,
        "msg" => RefKind::Message,
        "block" => RefKind::Block,
        _ => return None,
    };
    let (hex, level) = if kind == RefKind::Block {
        let (hex, level) = rest.split_once(':')?;
        match level.as_bytes() {
            [b'L', d @ b'0'..=b'5'] => (hex, Some(d - b'0')),
            _ => return None,
        }
    } else {
        (rest, None)
    };
    let canonical = hex.len() == RecordId::LEN * 2
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !canonical {
        return None;
    }
    let id = hex.parse::<RecordId>().ok()?;
    Some(EvidenceRef { kind, id, level })
}

/// Formats a ref in its canonical form (see [`parse_ref`]). The level is
/// written for block refs only; a block ref without a level is written as
/// `block:<id>`, which [`parse_ref`] rejects.
pub fn format_ref(r: &EvidenceRef) -> String {
    let prefix = match r.kind {
        RefKind::Event => "event",
        RefKind::Node => "node",
        RefKind::Message => "msg",
        RefKind::Block => "block",
    };
    match (r.kind, r.level) {
        (RefKind::Block, Some(level)) => format!("{prefix}:{}:L{level}", r.id),
        _ => format!("{prefix}:{}", r.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(byte: u8) -> RecordId {
        RecordId([byte; 32])
    }

    fn event(byte: u8) -> String {
        format_ref(&EvidenceRef {
            kind: RefKind::Event,
            id: id(byte),
            level: None,
        })
    }

    fn input(verdict: &str, evidence: &[String], next: &str) -> AssessmentInput {
        AssessmentInput {
            verdict: verdict.to_owned(),
            evidence: evidence.to_vec(),
            fit: "fits".to_owned(),
            missing: String::new(),
            next: next.to_owned(),
        }
    }

    #[test]
    fn strategies_are_the_v2_host_enum() {
        assert_eq!(STRATEGIES.len(), 9);
        assert!(STRATEGIES.contains(&ANSWER_STRATEGY));
        assert!(STRATEGIES.contains(&FALLBACK_STRATEGY));
        assert!(STRATEGIES.contains(&"search_graph"));
        assert!(STRATEGIES.contains(&"expand_graph_node"));
    }

    #[test]
    fn sufficient_needs_a_batch_ref_and_answer() {
        // §22 item 14, first half.
        let batch = vec![event(1), event(2)];
        let ok = normalize_assessment(&input("sufficient", &[event(1)], "answer"), &batch);
        assert_eq!(ok.verdict, Verdict::Sufficient);
        assert_eq!(ok.evidence, vec![event(1)]);
        assert_eq!(ok.missing, "");
        assert_eq!(ok.next, "answer");
        assert_eq!(ok.fit, "fits");
        assert_eq!(ok.adopted(), &[event(1)]);

        // No ref from the batch: partial, missing defaulted, answer → search_events.
        let outside = normalize_assessment(&input("sufficient", &[event(9)], "answer"), &batch);
        assert_eq!(outside.verdict, Verdict::Partial);
        assert!(outside.evidence.is_empty());
        assert_eq!(outside.missing, DEFAULT_MISSING);
        assert_eq!(outside.next, "search_events");
        assert!(outside.adopted().is_empty());
        assert_eq!(
            outside.rejected,
            vec![RejectedRef {
                input_index: 0,
                reference: event(9),
                reason: RejectReason::NotInBatch,
            }]
        );

        // No refs at all.
        let none = normalize_assessment(&input("sufficient", &[], "answer"), &batch);
        assert_eq!(none.verdict, Verdict::Partial);
        assert_eq!(none.next, "search_events");

        // Valid refs but another next strategy: partial, strategy kept, refs kept.
        let expand =
            normalize_assessment(&input("sufficient", &[event(2)], "expand_event"), &batch);
        assert_eq!(expand.verdict, Verdict::Partial);
        assert_eq!(expand.next, "expand_event");
        assert_eq!(expand.evidence, vec![event(2)]);
        assert!(expand.adopted().is_empty());
        assert_eq!(expand.missing, DEFAULT_MISSING);
    }

    #[test]
    fn verdicts_and_strategies() {
        let batch = vec![event(1)];
        let cases: &[(&str, &str, Verdict, &str)] = &[
            ("wrong", "answer", Verdict::Insufficient, "search_events"),
            (
                "wrong",
                "search_raw_memory",
                Verdict::Insufficient,
                "search_raw_memory",
            ),
            ("partial", "answer", Verdict::Partial, "search_events"),
            ("partial", "search_graph", Verdict::Partial, "search_graph"),
            (
                "partial",
                "expand_graph_node",
                Verdict::Partial,
                "expand_graph_node",
            ),
            ("maybe", "expand_block", Verdict::Partial, "expand_block"),
            ("Sufficient", "answer", Verdict::Partial, "search_events"),
            ("partial", "browse_web", Verdict::Partial, "search_events"),
            ("partial", "", Verdict::Partial, "search_events"),
            (" sufficient ", " answer ", Verdict::Sufficient, "answer"),
            // An unknown strategy becomes search_events, so cannot be sufficient.
            ("sufficient", "finish", Verdict::Partial, "search_events"),
        ];
        for &(verdict, next, expected, expected_next) in cases {
            let out = normalize_assessment(&input(verdict, &[event(1)], next), &batch);
            assert_eq!(out.verdict, expected, "{verdict:?}/{next:?}");
            assert_eq!(out.next, expected_next, "{verdict:?}/{next:?}");
        }
    }

    #[test]
    fn evidence_is_filtered_deduplicated_and_limited() {
        let batch: Vec<String> = (1..=12).map(event).collect();
        let mut given = vec![
            event(1),
            String::from("   "),
            format!("  {}  ", event(2)),
            event(1),
            event(99),
        ];
        given.extend((2..=10).map(event));
        let out = normalize_assessment(&input("sufficient", &given, "answer"), &batch);
        assert_eq!(out.verdict, Verdict::Sufficient);
        assert_eq!(out.evidence, (1..=8).map(event).collect::<Vec<_>>());
        let rejected: Vec<(usize, RejectReason)> = out
            .rejected
            .iter()
            .map(|r| (r.input_index, r.reason))
            .collect();
        assert_eq!(
            rejected,
            vec![
                (1, RejectReason::InvalidRef),
                (3, RejectReason::Duplicate),
                (4, RejectReason::NotInBatch),
                (5, RejectReason::Duplicate), // event(2) again, after the trimmed copy
                (12, RejectReason::LimitExceeded),
                (13, RejectReason::LimitExceeded),
            ]
        );
        assert_eq!(
            out.rejected.first().map(|r| r.reference.as_str()),
            Some("   ")
        );
        assert_eq!(RejectReason::LimitExceeded.to_string(), "limit_exceeded");
    }

    #[test]
    fn short_texts() {
        assert_eq!(short_text("  a \n\t b   c  "), "a b c");
        assert_eq!(short_text(""), "");
        let long = "word ".repeat(100);
        let cut = short_text(&long);
        assert_eq!(cut.chars().count(), SHORT_TEXT_CHARS);
        assert!(cut.starts_with("word word"));
        let wide = "é".repeat(200);
        assert_eq!(short_text(&wide).chars().count(), SHORT_TEXT_CHARS);

        let batch = vec![event(1)];
        let mut given = input("partial", &[event(1)], "search_events");
        given.fit = format!("  {}  ", "x ".repeat(200));
        given.missing = "  the   date \n of the trip ".to_owned();
        let out = normalize_assessment(&given, &batch);
        assert_eq!(out.fit.chars().count(), SHORT_TEXT_CHARS);
        assert_eq!(out.missing, "the date of the trip");
        // Whitespace-only missing is defaulted.
        given.missing = " \n ".to_owned();
        assert_eq!(
            normalize_assessment(&given, &batch).missing,
            DEFAULT_MISSING
        );
        // A sufficient assessment drops missing.
        given.verdict = "sufficient".to_owned();
        given.next = "answer".to_owned();
        given.missing = "something".to_owned();
        assert_eq!(normalize_assessment(&given, &batch).missing, "");
    }

    #[test]
    fn record_use_accepts_adopted_refs() {
        let batch = vec![event(1), event(2), event(3)];
        let assessment = normalize_assessment(
            &input("sufficient", &[event(1), event(2)], "answer"),
            &batch,
        );
        let refs = vec![format!(" {} ", event(2)), event(1), event(2)];
        let accepted = check_use(&refs, &batch, assessment.adopted()).unwrap();
        assert_eq!(accepted.refs, vec![event(2), event(1)]);
        assert_eq!(accepted.duplicates, vec![event(2)]);
        // An empty list is a zero-increment receipt.
        assert_eq!(
            check_use(&[], &batch, assessment.adopted()),
            Ok(AcceptedUse::default())
        );
    }

    #[test]
    fn record_use_rejects_refs_outside_batch_or_not_adopted() {
        // §22 item 14, second half.
        let batch = vec![event(1), event(2), event(3)];
        let assessment = normalize_assessment(&input("sufficient", &[event(1)], "answer"), &batch);
        let adopted = assessment.adopted();

        let err = check_use(&[event(9)], &batch, adopted).unwrap_err();
        assert_eq!(err.issues, vec![(event(9), "not_in_batch")]);
        let err = check_use(&[event(2)], &batch, adopted).unwrap_err();
        assert_eq!(err.issues, vec![(event(2), "not_adopted")]);

        // Every issue is listed, with the available and adopted refs; one bad
        // ref fails the whole call.
        let refs = vec![
            event(1),
            String::new(),
            event(9),
            event(9),
            event(3),
            "  ".to_owned(),
        ];
        let err = check_use(&refs, &batch, adopted).unwrap_err();
        assert_eq!(
            err.issues,
            vec![
                (String::new(), "invalid_ref"),
                (event(9), "not_in_batch"),
                (event(3), "not_adopted"),
                (String::new(), "invalid_ref"),
            ]
        );
        assert_eq!(err.available, batch);
        assert_eq!(err.adopted, vec![event(1)]);
        let message = err.to_string();
        for needle in [
            format!("`{}` not_in_batch", event(9)),
            format!("`{}` not_adopted", event(3)),
            "`` invalid_ref".to_owned(),
            format!("available refs: {}, {}, {}", event(1), event(2), event(3)),
            format!("adopted refs: {}", event(1)),
        ] {
            assert!(message.contains(&needle), "{message} lacks {needle}");
        }

        // A partial assessment adopts nothing.
        let partial = normalize_assessment(&input("partial", &[event(1)], "search_events"), &batch);
        let err = check_use(&[event(1)], &batch, partial.adopted()).unwrap_err();
        assert_eq!(err.issues, vec![(event(1), "not_adopted")]);
        assert!(err.to_string().contains("adopted refs: none"));
    }

    #[test]
    fn recorded_batch_is_closed() {
        assert_eq!(ensure_unresolved(BatchStatus::Unresolved), Ok(()));
        assert_eq!(ensure_unresolved(BatchStatus::Recorded), Err(BatchClosed));
        assert_eq!(BatchStatus::default(), BatchStatus::Unresolved);
    }

    #[test]
    fn refs_round_trip() {
        let hex = "ab".repeat(32);
        let cases = [
            (format!("event:{hex}"), RefKind::Event, None),
            (format!("node:{hex}"), RefKind::Node, None),
            (format!("msg:{hex}"), RefKind::Message, None),
            (format!("block:{hex}:L0"), RefKind::Block, Some(0)),
            (format!("block:{hex}:L5"), RefKind::Block, Some(5)),
        ];
        for (text, kind, level) in cases {
            let parsed = parse_ref(&text).unwrap();
            assert_eq!(
                parsed,
                EvidenceRef {
                    kind,
                    id: id(0xab),
                    level
                }
            );
            assert_eq!(format_ref(&parsed), text);
        }
    }

    #[test]
    fn malformed_refs() {
        let hex = "ab".repeat(32);
        let bad = [
            String::new(),
            hex.clone(),
            format!("event:{}", &hex[..62]),
            format!("event:{hex}00"),
            format!("event:{}", hex.to_uppercase()),
            format!("event:{}", "g".repeat(64)),
            format!(" event:{hex}"),
            format!("event:{hex} "),
            format!("event:{hex}:L1"),
            format!("Event:{hex}"),
            format!("element:{hex}"),
            format!("graph-node:{hex}:expanded"),
            format!("block:{hex}"),
            format!("block:{hex}:L6"),
            format!("block:{hex}:3"),
            format!("block:{hex}:level:3"),
            format!("block:{hex}:L3:x"),
        ];
        for text in bad {
            assert_eq!(parse_ref(&text), None, "{text:?}");
        }
    }

    #[test]
    fn format_ignores_stray_levels() {
        let r = EvidenceRef {
            kind: RefKind::Node,
            id: id(1),
            level: Some(2),
        };
        assert_eq!(format_ref(&r), format!("node:{}", id(1)));
        let r = EvidenceRef {
            kind: RefKind::Block,
            id: id(1),
            level: None,
        };
        assert_eq!(parse_ref(&format_ref(&r)), None);
    }
}
