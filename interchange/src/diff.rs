//! What two profiles remember differently: their events compared by id
//! (ids are content, so an identical event is the same record), and the
//! events that changed paired by the messages they cite, with the fields
//! that differ; their graphs ([`graph`]) and block summaries ([`summary`]).

pub mod graph;
pub mod summary;

use std::collections::{BTreeMap, BTreeSet};

use strataflow_log::RecordId;
use strataflow_log::record::Event;

/// One event as a diff shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EventSide {
    /// Record id.
    pub id: RecordId,
    /// Thread.
    pub thread: String,
    /// External ids of the messages it cites.
    pub source_messages: Vec<String>,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Standard type.
    pub event_type: String,
    /// Participants.
    pub participants: Vec<String>,
    /// Happened interval as RFC 3339 text (`start..end`), if known.
    pub happened: Option<String>,
}

/// A field that differs between the two sides of a changed event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FieldChange {
    /// Field name.
    pub field: &'static str,
    /// Profile A's value.
    pub a: String,
    /// Profile B's value.
    pub b: String,
}

/// Events of A and B citing the same messages but not identical.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChangedEvent {
    /// A's event.
    pub a: EventSide,
    /// B's event.
    pub b: EventSide,
    /// What differs (title, summary, happened, participants, type).
    pub fields: Vec<FieldChange>,
}

/// The event difference of two profiles.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventDiff {
    /// Events in both (same id).
    pub both: usize,
    /// Pairs citing the same messages whose content differs.
    pub changed: Vec<ChangedEvent>,
    /// Events only A has (no B event cites the same messages).
    pub only_a: Vec<EventSide>,
    /// Events only B has.
    pub only_b: Vec<EventSide>,
}

/// Everything two profiles remember differently. In JSON the event
/// difference's fields stay at the top level.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProfileDiff {
    /// Events.
    #[serde(flatten)]
    pub events: EventDiff,
    /// Graph facts and edges.
    pub graph: graph::GraphDiff,
    /// Block summaries.
    pub summaries: summary::SummaryDiff,
}

/// Compares two profiles' events. `external` maps message ids to their
/// external ids. Output order follows the inputs (thread and block order).
pub fn diff_events(
    a: &[(RecordId, String, Event)],
    b: &[(RecordId, String, Event)],
    external: &BTreeMap<RecordId, String>,
) -> EventDiff {
    let ids_a: BTreeSet<RecordId> = a.iter().map(|(id, _, _)| *id).collect();
    let ids_b: BTreeSet<RecordId> = b.iter().map(|(id, _, _)| *id).collect();
    let mut out = EventDiff {
        both: ids_a.intersection(&ids_b).count(),
        ..EventDiff::default()
    };
    // B's unmatched events by the messages they cite, in order.
    let mut b_by_sources: BTreeMap<Vec<RecordId>, Vec<&(RecordId, String, Event)>> =
        BTreeMap::new();
    for item in b.iter().filter(|(id, _, _)| !ids_a.contains(id)) {
        b_by_sources.entry(sources(&item.2)).or_default().push(item);
    }
    for item in a.iter().filter(|(id, _, _)| !ids_b.contains(id)) {
        let side_a = side(item, external);
        match b_by_sources
            .get_mut(&sources(&item.2))
            .filter(|v| !v.is_empty())
        {
            Some(candidates) => {
                let other = candidates.remove(0);
                let side_b = side(other, external);
                let fields = changes(&side_a, &side_b);
                out.changed.push(ChangedEvent {
                    a: side_a,
                    b: side_b,
                    fields,
                });
            }
            None => out.only_a.push(side_a),
        }
    }
    let paired: BTreeSet<RecordId> = out.changed.iter().map(|c| c.b.id).collect();
    out.only_b = b
        .iter()
        .filter(|(id, _, _)| !ids_a.contains(id) && !paired.contains(id))
        .map(|item| side(item, external))
        .collect();
    out
}

fn sources(e: &Event) -> Vec<RecordId> {
    let mut s = e.source_messages.clone();
    s.sort_unstable();
    s
}

fn side(item: &(RecordId, String, Event), external: &BTreeMap<RecordId, String>) -> EventSide {
    let (id, thread, e) = item;
    let happened = match (e.temporal.happened_start, e.temporal.happened_end) {
        (None, None) => None,
        // An open end is written empty (`..2023-05-01T00:00:00+00:00`).
        (start, end) => Some(format!(
            "{}..{}",
            start.map(|t| t.to_rfc3339()).unwrap_or_default(),
            end.map(|t| t.to_rfc3339()).unwrap_or_default()
        )),
    };
    EventSide {
        id: *id,
        thread: thread.clone(),
        source_messages: external_ids(&e.source_messages, external),
        title: e.title.clone(),
        summary: e.summary.clone(),
        event_type: e.temporal.event_type.name().to_owned(),
        participants: e.temporal.participants.clone(),
        happened,
    }
}

/// Message ids as their external ids (a message not in `external` keeps
/// its record id in hex).
pub fn external_ids(ids: &[RecordId], external: &BTreeMap<RecordId, String>) -> Vec<String> {
    ids.iter()
        .map(|m| external.get(m).cloned().unwrap_or_else(|| m.to_hex()))
        .collect()
}

fn changes(a: &EventSide, b: &EventSide) -> Vec<FieldChange> {
    let mut out = Vec::new();
    let mut field = |name: &'static str, x: String, y: String| {
        if x != y {
            out.push(FieldChange {
                field: name,
                a: x,
                b: y,
            });
        }
    };
    field("title", a.title.clone(), b.title.clone());
    field("summary", a.summary.clone(), b.summary.clone());
    // No interval compares as the empty text.
    field(
        "happened",
        a.happened.clone().unwrap_or_default(),
        b.happened.clone().unwrap_or_default(),
    );
    field(
        "participants",
        a.participants.join(", "),
        b.participants.join(", "),
    );
    field("type", a.event_type.clone(), b.event_type.clone());
    out
}
