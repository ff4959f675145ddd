//! The sealer: cuts a thread's open tail into blocks of N turns.
//!
//! A turn starts at each user message and takes the messages that follow it
//! up to the next user message. A block closes when its N-th turn is
//! complete, which is known when the next turn begins: the block ends just
//! before the (N+1)-th user message of the tail. Messages before a thread's
//! first user message belong to its first turn. The open tail (fewer than
//! N complete turns) stays unsealed.
//!
//! Sealing depends only on the sequence of messages, never on how they were
//! batched, so the same messages always give the same blocks (and ids).
//! StrataGate seals as soon as the N-th user message arrives because its turns
//! are appended as user+assistant pairs; strataflow ingests single messages,
//! so it waits for the next turn to begin instead.

use strataflow_record::RecordId;
use strataflow_record::record::{Block, Message, Role};

use crate::layers::{TranscriptMessage, deterministic_layers};

/// Default number of turns per block (spec §3.2).
pub const DEFAULT_TURNS_PER_BLOCK: u32 = 12;

/// Where the next block of a thread starts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadCursor {
    /// Ordinal the next block gets (1-based).
    pub next_ordinal: u32,
    /// First turn of the next block (1-based).
    pub next_turn: u32,
}

impl ThreadCursor {
    /// The cursor of a thread with no block yet.
    pub const START: Self = Self {
        next_ordinal: 1,
        next_turn: 1,
    };
}

/// Operator that seals blocks of a fixed number of turns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sealer {
    turns_per_block: u32,
}

impl Default for Sealer {
    fn default() -> Self {
        Self::new(DEFAULT_TURNS_PER_BLOCK)
    }
}

impl Sealer {
    /// A sealer closing blocks at `turns_per_block` turns (at least 1).
    pub fn new(turns_per_block: u32) -> Self {
        Self {
            turns_per_block: turns_per_block.max(1),
        }
    }

    /// Turns per block.
    pub fn turns_per_block(&self) -> u32 {
        self.turns_per_block
    }

    /// Lengths of the complete blocks at the front of a tail with these roles:
    /// each entry is how many messages the next block takes.
    pub fn block_lengths(&self, roles: impl IntoIterator<Item = Role>) -> Vec<usize> {
        let n = usize::try_from(self.turns_per_block).unwrap_or(usize::MAX);
        let mut lengths = Vec::new();
        let mut start = 0usize;
        let mut users_in_block = 0usize;
        for (i, role) in roles.into_iter().enumerate() {
            if role != Role::User {
                continue;
            }
            if users_in_block == n {
                lengths.push(i - start);
                start = i;
                users_in_block = 0;
            }
            users_in_block += 1;
        }
        lengths
    }

    /// Seals the complete blocks at the front of `tail` (one thread's open
    /// tail, in order, with each message's id). Returns them in order; the
    /// messages after the last block stay open.
    pub fn seal(&self, cursor: ThreadCursor, tail: &[(RecordId, &Message)]) -> Vec<Block> {
        let mut blocks = Vec::new();
        let mut cursor = cursor;
        let mut rest = tail;
        for len in self.block_lengths(tail.iter().map(|(_, m)| m.role)) {
            let Some((chunk, after)) = rest.split_at_checked(len) else {
                break;
            };
            rest = after;
            if let Some(block) = self.block(cursor, chunk) {
                blocks.push(block);
            }
            cursor = ThreadCursor {
                next_ordinal: cursor.next_ordinal + 1,
                next_turn: cursor.next_turn + self.turns_per_block,
            };
        }
        blocks
    }

    fn block(&self, cursor: ThreadCursor, chunk: &[(RecordId, &Message)]) -> Option<Block> {
        let (_, first) = chunk.first()?;
        let (_, last) = chunk.last()?;
        let transcript: Vec<TranscriptMessage<'_>> = chunk
            .iter()
            .map(|(_, m)| TranscriptMessage::from(*m))
            .collect();
        let layers = deterministic_layers(&transcript);
        Some(Block {
            tenant: first.tenant.clone(),
            thread: first.thread.clone(),
            ordinal: cursor.next_ordinal,
            start_turn: cursor.next_turn,
            end_turn: cursor.next_turn + self.turns_per_block - 1,
            first_position: first.position,
            last_position: last.position,
            messages: chunk.iter().map(|(id, _)| *id).collect(),
            time: last.time,
            l4: layers.l4,
            l3: layers.l3,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use strataflow_record::SourceTime;

    fn roles(spec: &str) -> Vec<Role> {
        spec.chars()
            .map(|c| match c {
                'u' => Role::User,
                'a' => Role::Assistant,
                't' => Role::Tool,
                _ => Role::System,
            })
            .collect()
    }

    fn messages(spec: &str) -> Vec<(RecordId, Message)> {
        roles(spec)
            .into_iter()
            .enumerate()
            .map(|(i, role)| {
                let m = Message {
                    tenant: String::new(),
                    thread: "t".into(),
                    external_id: i.to_string(),
                    position: i as u64,
                    role,
                    speaker: None,
                    content: format!("message {i}"),
                    tool_calls: vec![],
                    time: SourceTime::utc_without_offset(i as i64),
                };
                (RecordId([u8::try_from(i % 256).unwrap(); 32]), m)
            })
            .collect()
    }

    #[test]
    fn a_block_ends_before_the_next_turn_begins() {
        let s = Sealer::new(2);
        assert_eq!(
            s.block_lengths(roles("uaua")),
            Vec::<usize>::new(),
            "turn 2 may continue"
        );
        assert_eq!(s.block_lengths(roles("uauau")), vec![4]);
        assert_eq!(s.block_lengths(roles("uataauauau")), vec![7]);
        assert_eq!(s.block_lengths(roles("uauauauau")), vec![4, 4]);
    }

    #[test]
    fn leading_non_user_messages_join_the_first_turn() {
        let s = Sealer::new(1);
        assert_eq!(s.block_lengths(roles("sauau")), vec![4]);
    }

    #[test]
    fn a_thread_without_user_messages_never_seals() {
        assert!(Sealer::new(1).block_lengths(roles("aaaa")).is_empty());
    }

    #[test]
    fn blocks_carry_turn_ranges_positions_and_ids() {
        let msgs = messages("uauauau");
        let tail: Vec<_> = msgs.iter().map(|(id, m)| (*id, m)).collect();
        let blocks = Sealer::new(2).seal(ThreadCursor::START, &tail);
        assert_eq!(blocks.len(), 1);
        let b = &blocks[0];
        assert_eq!((b.ordinal, b.start_turn, b.end_turn), (1, 1, 2));
        assert_eq!((b.first_position, b.last_position), (0, 3));
        assert_eq!(
            b.messages,
            tail[..4].iter().map(|(id, _)| *id).collect::<Vec<_>>()
        );
        assert_eq!(b.time, msgs[3].1.time);
        assert!(b.l4.starts_with("User: message 0"));
        let cursor = ThreadCursor {
            next_ordinal: 4,
            next_turn: 7,
        };
        let b = &Sealer::new(2).seal(cursor, &tail)[0];
        assert_eq!((b.ordinal, b.start_turn, b.end_turn), (4, 7, 8));
    }

    proptest! {
        /// Feeding messages in any number of pieces seals the same blocks as
        /// feeding them all at once.
        #[test]
        fn sealing_does_not_depend_on_batching(
            spec in "[uats]{0,60}",
            n in 1u32..5,
            cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            let msgs = messages(&spec);
            let all: Vec<_> = msgs.iter().map(|(id, m)| (*id, m)).collect();
            let sealer = Sealer::new(n);
            let at_once = sealer.seal(ThreadCursor::START, &all);

            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(all.len())).collect();
            cuts.push(all.len());
            cuts.sort_unstable();
            let mut cursor = ThreadCursor::START;
            let mut start = 0usize;
            let mut pieces = Vec::new();
            for cut in cuts {
                let tail = &all[start..cut.max(start)];
                for b in sealer.seal(cursor, tail) {
                    start = usize::try_from(b.last_position).unwrap() + 1;
                    cursor = ThreadCursor { next_ordinal: b.ordinal + 1, next_turn: b.end_turn + 1 };
                    pieces.push(b);
                }
            }
            prop_assert_eq!(at_once, pieces);
        }
    }
}
