//! The event card an applied import decision writes (spec §14.4).

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, TimeZone};
use strataflow_record::record::{
    Criticality, Event, EventTemporal, EventType, ImportAction, Occurrence, Precision, Scope,
    TimeBasis,
};
use strataflow_record::{RecordId, SourceTime, Timestamp};

use super::format::Candidate;

/// What an imported event rests on.
#[derive(Clone, Copy, Debug)]
pub struct ImportedEventSource<'a> {
    /// Tenant.
    pub tenant: &'a str,
    /// The import's source block.
    pub block: RecordId,
    /// The import's source message (the whole text).
    pub message: RecordId,
    /// The import time: the mention time of candidates that give none.
    pub imported_at: SourceTime,
}

/// The event for an applied decision: the candidate's fields; `mentioned_at`
/// from `temporal.mentionedAt` when it parses, else the import time;
/// `happened_*` from `happenedStart` / `happenedEnd` as periods
/// ([`parse_period`]); MERGE and SUPERSEDE supersede the targets, CONFLICT
/// conflicts with them. Defaults: narrative = summary, scope user,
/// criticality routine, confidence 1, event type other, occurrence unknown.
pub fn imported_event(
    source: &ImportedEventSource<'_>,
    candidate: &Candidate,
    action: ImportAction,
    targets: &[RecordId],
) -> Event {
    // A candidate without `temporal` has no times: the import time stands in.
    let t = candidate.temporal.clone().unwrap_or_default();
    let mentioned_at = t
        .mentioned_at
        .as_deref()
        .and_then(parse_mention)
        .unwrap_or(source.imported_at);
    let offset = mentioned_at.offset_minutes;
    let start = t
        .happened_start
        .as_deref()
        .or(t.happened_end.as_deref())
        .and_then(|s| parse_period(s, offset));
    let end = t
        .happened_end
        .as_deref()
        .or(t.happened_start.as_deref())
        .and_then(|s| parse_period(s, offset));
    let happened = start.zip(end).filter(|(s, e)| s.0 <= e.1);
    let precision = match (t.precision, &happened) {
        (Some(p), _) => p,
        (None, None) => Precision::Unknown,
        (None, Some((s, e))) if s == e => s.2,
        (None, Some(_)) => Precision::Range,
    };
    let basis = t.basis.unwrap_or(if happened.is_some() {
        TimeBasis::Explicit
    } else {
        TimeBasis::Unknown
    });
    let mut targets = targets.to_vec();
    targets.sort_unstable();
    targets.dedup();
    let (supersedes, conflicts_with) = match action {
        ImportAction::Merge | ImportAction::Supersede => (targets, Vec::new()),
        ImportAction::Conflict => (Vec::new(), targets),
        ImportAction::Add | ImportAction::Ignore => (Vec::new(), Vec::new()),
    };
    Event {
        tenant: source.tenant.to_owned(),
        block: source.block,
        source_messages: vec![source.message],
        title: candidate.title.clone(),
        summary: candidate.summary.clone(),
        narrative: candidate
            .narrative
            .clone()
            .unwrap_or_else(|| candidate.summary.clone()),
        tags: candidate.tags.clone(),
        quotes: candidate.quotes.clone(),
        temporal: EventTemporal {
            mentioned_at,
            happened_start: happened.map(|(s, _)| s.0),
            happened_end: happened.map(|(_, e)| e.1),
            original_text: t.original_text,
            precision,
            basis,
            status: t.status.unwrap_or(Occurrence::Unknown),
            participants: t.participants,
            event_type: t.event_type.unwrap_or(EventType::Other),
            supersedes,
            conflicts_with,
        },
        scope: candidate.scope.unwrap_or(Scope::User),
        criticality: candidate.criticality.unwrap_or(Criticality::Routine),
        confidence_milli: milli(candidate.confidence.unwrap_or(1.0)),
    }
}

/// A confidence in 0..1 as per-mille (rounded, clamped).
pub fn milli(confidence: f64) -> u16 {
    let c = if confidence.is_finite() {
        confidence.clamp(0.0, 1.0)
    } else {
        0.0
    };
    // In 0..=1000 after the clamp.
    (c * 1000.0).round() as u16
}

/// A mention time: RFC 3339 (offset kept) or a bare date `YYYY-MM-DD`
/// (midnight UTC, no offset).
pub fn parse_mention(text: &str) -> Option<SourceTime> {
    if let Some(t) = SourceTime::parse_rfc3339(text) {
        return Some(t);
    }
    let day = NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok()?;
    let ms = day.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
    Some(SourceTime::utc_without_offset(ms))
}

/// The inclusive interval of a period written `YYYY`, `YYYY-MM`,
/// `YYYY-MM-DD` (in the offset given, UTC when none) or an RFC 3339
/// instant, with its precision; `None` when it is none of these.
pub fn parse_period(
    text: &str,
    offset_minutes: Option<i16>,
) -> Option<(Timestamp, Timestamp, Precision)> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        let ms = Timestamp(t.timestamp_millis());
        return Some((ms, ms, Precision::Instant));
    }
    let offset = FixedOffset::east_opt(i32::from(offset_minutes.unwrap_or(0)) * 60)?;
    let parts: Vec<&str> = text.split('-').collect();
    let num = |s: &str, len: usize| -> Option<u32> {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (first, next, precision) = match parts.as_slice() {
        [y] => {
            let y = i32::try_from(num(y, 4)?).ok()?;
            (
                NaiveDate::from_ymd_opt(y, 1, 1)?,
                NaiveDate::from_ymd_opt(y + 1, 1, 1)?,
                Precision::Year,
            )
        }
        [y, m] => {
            let y = i32::try_from(num(y, 4)?).ok()?;
            let first = NaiveDate::from_ymd_opt(y, num(m, 2)?, 1)?;
            let next = first.checked_add_months(chrono::Months::new(1))?;
            (first, next, Precision::Month)
        }
        [y, m, d] => {
            let y = i32::try_from(num(y, 4)?).ok()?;
            let first = NaiveDate::from_ymd_opt(y, num(m, 2)?, num(d, 2)?)?;
            (first, first.succ_opt()?, Precision::Day)
        }
        _ => return None,
    };
    let at = |d: NaiveDate| {
        offset
            .from_local_datetime(&d.and_hms_opt(0, 0, 0)?)
            .single()
            .map(|t| t.timestamp_millis())
    };
    debug_assert!(first.year() <= next.year());
    Some((Timestamp(at(first)?), Timestamp(at(next)? - 1), precision))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::import::format::parse_candidate;
    use serde_json::json;

    #[test]
    fn periods_cover_their_whole_span() {
        let (s, e, p) = parse_period("2025-02", None).unwrap();
        assert_eq!(s.to_rfc3339(), "2025-02-01T00:00:00.000Z");
        assert_eq!(e.to_rfc3339(), "2025-02-28T23:59:59.999Z");
        assert_eq!(p, Precision::Month);
        let (s, e, _) = parse_period("2024", Some(120)).unwrap();
        assert_eq!(s.to_rfc3339(), "2023-12-31T22:00:00.000Z");
        assert_eq!(e.to_rfc3339(), "2024-12-31T21:59:59.999Z");
        let (s, e, p) = parse_period("2024-05-06T07:08:09+02:00", None).unwrap();
        assert_eq!((s, p), (e, Precision::Instant));
        assert_eq!(parse_period("last spring", None), None);
        assert_eq!(parse_period("2024-13", None), None);
    }

    #[test]
    fn an_imported_event_keeps_mention_and_occurrence_apart() {
        let c = parse_candidate(
            0,
            &json!({"title": "Moved to Porto", "summary": "The user moved to Porto.",
                    "temporal": {"mentionedAt": "2025-03-01T10:00:00+01:00", "happenedStart": "2024-06"}}),
        )
        .unwrap();
        let source = ImportedEventSource {
            tenant: "t",
            block: RecordId([1; 32]),
            message: RecordId([2; 32]),
            imported_at: SourceTime::utc_without_offset(0),
        };
        let e = imported_event(&source, &c, ImportAction::Supersede, &[RecordId([5; 32])]);
        assert_eq!(
            e.temporal.mentioned_at.to_rfc3339(),
            "2025-03-01T10:00:00.000+01:00"
        );
        assert_eq!(
            e.temporal.happened_start.unwrap().to_rfc3339(),
            "2024-05-31T23:00:00.000Z"
        );
        assert_eq!(e.temporal.precision, Precision::Month);
        assert_eq!(e.temporal.supersedes, vec![RecordId([5; 32])]);
        assert_eq!(e.narrative, "The user moved to Porto.");
        assert_eq!(e.confidence_milli, 1000);
        let plain = parse_candidate(0, &json!({"title": "a", "summary": "b"})).unwrap();
        let e = imported_event(
            &source,
            &plain,
            ImportAction::Conflict,
            &[RecordId([5; 32])],
        );
        assert_eq!(e.temporal.mentioned_at, source.imported_at);
        assert_eq!(e.temporal.conflicts_with, vec![RecordId([5; 32])]);
        assert_eq!(e.temporal.happened_start, None);
        assert_eq!(e.temporal.precision, Precision::Unknown);
    }
}
