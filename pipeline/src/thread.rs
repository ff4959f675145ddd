//! One conversation thread during a run: the next position, the sealing
//! cursor and open tail, and — when derivation runs inline — the recent
//! events and the previous block's key points that extraction reads.
//!
//! A thread is loaded from the log the first time a run sees it and then
//! advanced in memory, message by message. Each message becomes its record,
//! the blocks it completes, and (with operators) every block's derivation
//! records, in exactly the order and with exactly the content the batch
//! path (ingest, then [`crate::derive`]) would append.

use strataflow_log::envelope::{Encoded, decode, encode_with_id};
use strataflow_log::record::{Block, Event, Message, Outcome, Record, RecordKind};
use strataflow_log::{RecordId, Store, StoreError};

use crate::stage::StageError;
use strataflow_operators::operator::{BlockInput, OperatorError, TIMELINE_LIMIT, Timeline};
use strataflow_operators::profile::Operators;
use strataflow_operators::sealer::{Sealer, ThreadCursor};
use strataflow_operators::timeline::ReadTimeline;

use crate::derive::stage_state;
use crate::source::MessageInput;
use crate::stage::{self, ExtractionContext};

/// What one message produced.
#[derive(Default)]
pub struct Produced {
    /// Records to append, encoded, in log order (empty when the message was
    /// stored before).
    pub records: Vec<Encoded>,
    /// Blocks sealed.
    pub blocks: u64,
    /// Operator runs that failed (left for the retrying derivation pass).
    pub failed_runs: u64,
}

/// The in-memory state of one thread.
pub struct ThreadState {
    next_position: u64,
    cursor: ThreadCursor,
    tail: Vec<(RecordId, Message)>,
    /// The log held messages of this thread before the run: incoming
    /// messages may already be stored.
    pre_existing: bool,
    /// Events of the latest extracted blocks, oldest first, kept as their
    /// record envelopes: a run holds one timeline per thread, and the
    /// encoded form is a fraction of the decoded one.
    timeline: std::collections::VecDeque<(RecordId, Box<[u8]>)>,
    /// Key points of the latest block, if summarized.
    previous_key_points: Option<Vec<String>>,
}

impl ThreadState {
    /// Loads a thread from the log: its head, its open tail and, with
    /// operators, the derivation context of its latest blocks. Blocks the
    /// log holds must already be derived (the run's catch-up pass does it).
    pub fn load(
        store: &Store,
        tenant: &str,
        thread: &str,
        operators: Option<&Operators>,
    ) -> Result<Self, StoreError> {
        // default: a thread with no head has no message and no block yet.
        let head = store.thread_head(tenant, thread)?.unwrap_or_default();
        let mut state = Self {
            next_position: head.messages,
            cursor: ThreadCursor {
                next_ordinal: head.blocks + 1,
                next_turn: head.end_turn + 1,
            },
            tail: Vec::new(),
            pre_existing: head.messages > 0,
            timeline: std::collections::VecDeque::new(),
            previous_key_points: None,
        };
        if !state.pre_existing {
            return Ok(state);
        }
        // Newest first. The message that completes a block precedes the
        // block in the log, so the tail is read until the first sealed
        // message, not until the first block.
        let mut blocks = Vec::new();
        let mut tail_read = head.sealed_messages == head.messages;
        for entry in store.thread_records(tenant, thread, 0).rev() {
            let (_, kind, id) = entry?;
            match kind {
                RecordKind::Message if !tail_read => {
                    if let Some(Record::Message(m)) = store.get(&id)?.map(|s| s.record) {
                        let position = m.position;
                        if position >= head.sealed_messages {
                            state.tail.push((id, m));
                        }
                        tail_read = position <= head.sealed_messages;
                    }
                }
                RecordKind::Block => blocks.push(id),
                _ => {}
            }
            let context_read = operators.is_none() || blocks.len() > TIMELINE_LIMIT;
            if tail_read && context_read {
                break;
            }
        }
        state.tail.reverse();
        if let Some(ops) = operators {
            state.load_context(store, ops, &blocks)?;
        }
        Ok(state)
    }

    /// The timeline and previous key points from the latest blocks
    /// (`blocks` newest first).
    fn load_context(
        &mut self,
        store: &Store,
        ops: &Operators,
        blocks: &[RecordId],
    ) -> Result<(), StoreError> {
        let (sop, sconfig) = (ops.summarizer.id(), ops.summarizer.config_hash());
        if let Some(latest) = blocks.first() {
            let done = stage_state(store, latest, &sop, &sconfig, None)?.done;
            if let Some(id) = done.and_then(|d| d.outputs.first().copied())
                && let Some(Record::BlockSummary(s)) = store.get(&id)?.map(|s| s.record)
            {
                self.previous_key_points = Some(s.key_points);
            }
        }
        let (eop, econfig) = (ops.extractor.id(), ops.extractor.config_hash());
        let mut newest_first: Vec<(RecordId, Event)> = Vec::new();
        for block in blocks {
            if newest_first.len() >= TIMELINE_LIMIT {
                break;
            }
            let Some(done) = stage_state(store, block, &eop, &econfig, None)?.done else {
                continue;
            };
            if !matches!(done.outcome, Outcome::Ok) {
                continue;
            }
            for id in done.outputs.iter().rev() {
                if let Some(Record::Event(e)) = store.get(id)?.map(|s| s.record) {
                    newest_first.push((*id, e));
                }
            }
        }
        newest_first.truncate(TIMELINE_LIMIT);
        newest_first.reverse();
        for (id, event) in newest_first {
            let (_, bytes) = encode_with_id(&Record::Event(event))?;
            self.remember(id, bytes.into_boxed_slice());
        }
        Ok(())
    }

    /// Seals whatever the loaded tail already completes (a run killed
    /// between storing a message and sealing cannot leave this, but a
    /// changed block size or an older build could).
    pub fn seal_loaded(
        &mut self,
        sealer: &Sealer,
        operators: Option<&Operators>,
    ) -> Result<Produced, StageError> {
        let mut produced = Produced::default();
        self.seal(sealer, operators, &mut produced)?;
        Ok(produced)
    }

    /// Takes the next message of the thread: its record, the blocks it
    /// completes and their derivation.
    pub fn push(
        &mut self,
        store: &Store,
        input: MessageInput,
        sealer: &Sealer,
        operators: Option<&Operators>,
    ) -> Result<Produced, StageError> {
        let mut produced = Produced::default();
        if self.pre_existing
            && store
                .message_by_external_id(&input.tenant, &input.thread, &input.external_id)?
                .is_some()
        {
            return Ok(produced);
        }
        let message = input.into_message(self.next_position);
        self.next_position += 1;
        let record = Encoded::new(Record::Message(message.clone()))?;
        let id = record.id();
        produced.records.push(record);
        self.tail.push((id, message));
        self.seal(sealer, operators, &mut produced)?;
        Ok(produced)
    }

    fn seal(
        &mut self,
        sealer: &Sealer,
        operators: Option<&Operators>,
        produced: &mut Produced,
    ) -> Result<(), StageError> {
        let tail: Vec<(RecordId, &Message)> = self.tail.iter().map(|(id, m)| (*id, m)).collect();
        let blocks = sealer.seal(self.cursor, &tail);
        let Some(last) = blocks.last() else {
            return Ok(());
        };
        crate::pause::point("seal");
        self.cursor = ThreadCursor {
            next_ordinal: last.ordinal + 1,
            next_turn: last.end_turn + 1,
        };
        let sealed_through = last.last_position;
        let mut sealed_messages = Vec::new();
        let mut open = Vec::new();
        for (id, m) in self.tail.drain(..) {
            if m.position <= sealed_through {
                sealed_messages.push((id, m));
            } else {
                open.push((id, m));
            }
        }
        self.tail = open;
        let mut first = 0usize;
        for block in blocks {
            let len = block.messages.len();
            #[expect(
                clippy::expect_used,
                reason = "the sealer cuts the blocks from `sealed_messages`, in order"
            )]
            let messages = sealed_messages
                .get(first..first + len)
                .expect("a block's messages are among those sealed");
            first += len;
            produced.blocks += 1;
            let record = Encoded::new(Record::Block(block.clone()))?;
            let block_id = record.id();
            produced.records.push(record);
            if let Some(ops) = operators {
                self.derive(ops, block_id, &block, messages, produced)?;
            }
        }
        Ok(())
    }

    /// Summarize, extract and project one newly sealed block, as
    /// [`crate::derive`] does for a block it sees for the first time.
    fn derive(
        &mut self,
        ops: &Operators,
        block_id: RecordId,
        block: &Block,
        messages: &[(RecordId, Message)],
        produced: &mut Produced,
    ) -> Result<(), StageError> {
        // The messages' text analysis, computed once for the summarizer and
        // the extractor when either reads it.
        let analyses = std::cell::OnceCell::new();
        let reads = ops.summarizer.reads_analysis() || ops.extractor.reads_analysis();
        let input = stage::carrying(
            reads,
            &BlockInput {
                id: block_id,
                block,
                messages,
                attempt: 1,
                analyses: None,
            },
            &analyses,
        );
        let summary = {
            let _span = tracing::trace_span!("summarize", block = %block_id).entered();
            crate::pause::point("summarize");
            stage::summarize(ops, &input, 1)?
        };
        produced.records.extend(summary.records);
        let Some((summary_id, summary)) = summary.output else {
            produced.failed_runs += 1;
            self.previous_key_points = None;
            return Ok(());
        };
        // Decoded only if the extractor reads the events.
        let timeline = EnvelopeTimeline::of(&self.timeline);
        let context = ExtractionContext {
            summary_id,
            summary: &summary,
            previous_key_points: self.previous_key_points.as_deref(),
            next_key_points: None,
            timeline: Timeline::Unread(&timeline),
        };
        let extraction = {
            let _span = tracing::trace_span!("extract", block = %block_id).entered();
            crate::pause::point("extract");
            stage::extract(ops, &input, &context, 1)?
        };
        self.previous_key_points = Some(summary.key_points.clone());
        // The events' envelopes as the extraction encoded them: the
        // timeline keeps these bytes (encoding the events again made the
        // same ones).
        let envelopes: Vec<(RecordId, Box<[u8]>)> = extraction
            .records
            .iter()
            .filter(|r| matches!(r.record(), Record::Event(_)))
            .map(|r| (r.id(), r.bytes().into()))
            .collect();
        produced.records.extend(extraction.records);
        let Some(events) = extraction.output else {
            produced.failed_runs += 1;
            return Ok(());
        };
        if !events.is_empty() {
            let projection = {
                let _span = tracing::trace_span!("project", block = %block_id).entered();
                crate::pause::point("project");
                stage::project(ops, &block.tenant, &events, 1)?
            };
            if projection.error.is_some() {
                produced.failed_runs += 1;
            }
            produced.records.extend(projection.records);
        }
        for (id, event) in events {
            match envelopes.iter().find(|(e, _)| *e == id) {
                Some((_, bytes)) => self.remember(id, bytes.clone()),
                None => {
                    let (_, bytes) = encode_with_id(&Record::Event(event))?;
                    self.remember(id, bytes.into_boxed_slice());
                }
            }
        }
        Ok(())
    }

    /// Adds an event's envelope to the end of the timeline, dropping the
    /// oldest past [`TIMELINE_LIMIT`].
    fn remember(&mut self, id: RecordId, envelope: Box<[u8]>) {
        self.timeline.push_back((id, envelope));
        while self.timeline.len() > TIMELINE_LIMIT {
            self.timeline.pop_front();
        }
    }
}

/// A thread's timeline as its envelopes, decoded when an extractor first
/// reads the events (the heuristic extractors do only for a
/// cancellation; decoding every block's timeline was about 3% of a
/// backfill's CPU).
struct EnvelopeTimeline<'a> {
    envelopes: &'a std::collections::VecDeque<(RecordId, Box<[u8]>)>,
    ids: Vec<RecordId>,
    events: std::cell::OnceCell<Vec<(RecordId, Event)>>,
}

impl<'a> EnvelopeTimeline<'a> {
    fn of(envelopes: &'a std::collections::VecDeque<(RecordId, Box<[u8]>)>) -> Self {
        Self {
            envelopes,
            ids: envelopes.iter().map(|(id, _)| *id).collect(),
            events: std::cell::OnceCell::new(),
        }
    }
}

impl ReadTimeline for EnvelopeTimeline<'_> {
    fn ids(&self) -> &[RecordId] {
        &self.ids
    }

    /// Every envelope was encoded from an event by this process (as the
    /// extraction stored it, or re-encoded when the thread was loaded), so
    /// it decodes; one that did not would fail the extraction, naming it.
    fn events(&self) -> Result<&[(RecordId, Event)], OperatorError> {
        if let Some(events) = self.events.get() {
            return Ok(events);
        }
        let mut out = Vec::with_capacity(self.envelopes.len());
        for (id, bytes) in self.envelopes {
            match decode(bytes) {
                Ok(Record::Event(e)) => out.push((*id, e)),
                Ok(other) => {
                    return Err(OperatorError::failed(format!(
                        "timeline entry {id} is a {} record, not an event",
                        other.kind().name()
                    )));
                }
                Err(e) => {
                    return Err(OperatorError::failed(format!(
                        "timeline event {id} does not decode: {e}"
                    )));
                }
            }
        }
        Ok(self.events.get_or_init(|| out))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use strataflow_log::Durability;
    use strataflow_operators::profile::{Profile, Registry};

    use super::*;
    use crate::runtime::tests::input_with;

    const SENTENCES: [&str; 6] = [
        "I went to Lisbon with my sister Ana yesterday.",
        "We are moving to Porto next month, I start at Northwind on Monday.",
        "My dog Rex hurt his leg last week, so we saw the vet on Friday.",
        "Priya and I decided to use ClickHouse for the metrics project.",
        "I ran a half marathon in Sintra two days ago and it was hard.",
        "Tomorrow I will visit my parents in Braga for the weekend.",
    ];

    fn input(n: usize) -> MessageInput {
        let sentence = SENTENCES[n % SENTENCES.len()];
        input_with("t", n, format!("{sentence} (note {n})"), 3_600_000)
    }

    /// A state loaded from the log at any point equals the state the run
    /// advanced in memory: position, cursor, open tail, previous key points
    /// and the timeline, byte for byte, also once the timeline is full and
    /// the load stops reading before the thread's first block. The
    /// timeline, read by an extractor, holds the stored events.
    #[test]
    fn a_loaded_state_equals_the_state_advanced_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("data")).unwrap();
        let operators = Registry::builtin()
            .resolve(&Profile::default_profile())
            .unwrap();
        let sealer = Sealer::new(3);
        let mut live = ThreadState::load(&store, "x", "t", Some(&operators)).unwrap();
        let mut full_timelines = 0;
        for n in 0..150 {
            let produced = live
                .push(&store, input(n), &sealer, Some(&operators))
                .unwrap();
            assert_eq!(produced.failed_runs, 0);
            store
                .append_encoded(&produced.records, Durability::Buffered)
                .unwrap();
            let loaded = ThreadState::load(&store, "x", "t", Some(&operators)).unwrap();
            assert_eq!(loaded.next_position, live.next_position, "after {n}");
            assert_eq!(loaded.cursor.next_ordinal, live.cursor.next_ordinal);
            assert_eq!(loaded.cursor.next_turn, live.cursor.next_turn);
            assert_eq!(loaded.tail, live.tail, "after {n}");
            assert_eq!(loaded.previous_key_points, live.previous_key_points);
            assert_eq!(loaded.timeline, live.timeline, "after {n}");
            if live.timeline.len() == TIMELINE_LIMIT {
                full_timelines += 1;
            }
        }
        assert!(
            full_timelines > 20,
            "the timeline filled too late: {full_timelines}"
        );
        // The extractor's view of it gives its ids without decoding, and
        // decodes its events once, when first read, to the stored events.
        let timeline = EnvelopeTimeline::of(&live.timeline);
        let ids: Vec<RecordId> = live.timeline.iter().map(|(id, _)| *id).collect();
        assert_eq!(timeline.ids(), ids.as_slice());
        assert!(timeline.events.get().is_none(), "ids alone decode nothing");
        let events = timeline.events().unwrap();
        assert_eq!(events.len(), ids.len());
        for ((id, event), (stored_id, bytes)) in events.iter().zip(&live.timeline) {
            assert_eq!(id, stored_id);
            let (_, encoded) = encode_with_id(&Record::Event(event.clone())).unwrap();
            assert_eq!(encoded.as_slice(), &bytes[..]);
            assert_eq!(
                store.get(id).unwrap().map(|s| s.record),
                Some(Record::Event(event.clone()))
            );
        }
        assert!(
            std::ptr::eq(timeline.events().unwrap(), events),
            "read once"
        );
    }
}
