//! An extractor's timeline: the earlier events of the thread it may
//! supersede or conflict with ([`ExtractionInput::timeline`]).
//!
//! Its ids are always at hand (validation keeps only references to them);
//! its events are read only when an extractor asks for them
//! ([`Timeline::events`]). The heuristic extractors read them only for a
//! cancellation, so a backfill's runtime, which keeps each thread's
//! timeline as record envelopes, decodes them only then
//! ([`ReadTimeline`]). What an extractor sees is the same either way.
//!
//! [`ExtractionInput::timeline`]: crate::operator::ExtractionInput::timeline

use std::fmt;

use strataflow_record::RecordId;
use strataflow_record::record::Event;

use crate::operator::OperatorError;

/// The earlier events of a thread, oldest first (see the module docs).
#[derive(Clone, Copy)]
pub enum Timeline<'a> {
    /// Events already read.
    Read(&'a [(RecordId, Event)]),
    /// Events read when first asked for.
    Unread(&'a dyn ReadTimeline),
}

/// A timeline whose events are read on demand.
pub trait ReadTimeline {
    /// The events' ids, oldest first.
    fn ids(&self) -> &[RecordId];
    /// The events, in the order of [`ReadTimeline::ids`], read on the
    /// first call (later calls give the same slice).
    fn events(&self) -> Result<&[(RecordId, Event)], OperatorError>;
}

impl<'a> Timeline<'a> {
    /// No earlier event.
    pub const EMPTY: Self = Self::Read(&[]);

    /// The events' ids, oldest first.
    pub fn ids(&self) -> Vec<RecordId> {
        match self {
            Self::Read(events) => events.iter().map(|(id, _)| *id).collect(),
            Self::Unread(timeline) => timeline.ids().to_vec(),
        }
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        match self {
            Self::Read(events) => events.len(),
            Self::Unread(timeline) => timeline.ids().len(),
        }
    }

    /// Whether it holds no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events, oldest first, read now if they were not. An error is
    /// the run's: the events could not be read.
    pub fn events(&self) -> Result<&'a [(RecordId, Event)], OperatorError> {
        match *self {
            Self::Read(events) => Ok(events),
            Self::Unread(timeline) => timeline.events(),
        }
    }
}

impl<'a> From<&'a [(RecordId, Event)]> for Timeline<'a> {
    fn from(events: &'a [(RecordId, Event)]) -> Self {
        Self::Read(events)
    }
}

impl<'a> From<&'a Vec<(RecordId, Event)>> for Timeline<'a> {
    fn from(events: &'a Vec<(RecordId, Event)>) -> Self {
        Self::Read(events)
    }
}

impl fmt::Debug for Timeline<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let read = matches!(self, Self::Read(_));
        f.debug_struct("Timeline")
            .field("len", &self.len())
            .field("read", &read)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::cell::Cell;

    use super::*;

    /// Counts its reads.
    struct Counting {
        ids: Vec<RecordId>,
        events: Vec<(RecordId, Event)>,
        reads: Cell<u32>,
    }

    impl ReadTimeline for Counting {
        fn ids(&self) -> &[RecordId] {
            &self.ids
        }

        fn events(&self) -> Result<&[(RecordId, Event)], OperatorError> {
            self.reads.set(self.reads.get() + 1);
            Ok(&self.events)
        }
    }

    #[test]
    fn an_unread_timeline_gives_its_ids_without_reading_its_events() {
        let ids = vec![RecordId([1; 32]), RecordId([2; 32])];
        let source = Counting {
            ids: ids.clone(),
            events: Vec::new(),
            reads: Cell::new(0),
        };
        let timeline = Timeline::Unread(&source);
        assert_eq!(timeline.ids(), ids);
        assert_eq!(timeline.len(), 2);
        assert!(!timeline.is_empty());
        assert_eq!(source.reads.get(), 0);
        timeline.events().unwrap();
        assert_eq!(source.reads.get(), 1);
        assert!(Timeline::EMPTY.is_empty());
        assert_eq!(Timeline::EMPTY.events().unwrap(), &[]);
    }
}
