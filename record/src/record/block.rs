//! `Block`: a sealed run of turns of one thread, with its deterministic L4/L3 text.

use rkyv::{Archive, Deserialize, Serialize};

use crate::id::RecordId;
use crate::time::SourceTime;

/// A sealed block. Its parents are its messages, in thread order.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Block {
    /// Tenant of the thread.
    pub tenant: String,
    /// The thread.
    pub thread: String,
    /// 1-based ordinal among the thread's blocks.
    pub ordinal: u32,
    /// First turn (1-based, per thread) in the block.
    pub start_turn: u32,
    /// Last turn in the block, inclusive.
    pub end_turn: u32,
    /// Thread position of the first message.
    pub first_position: u64,
    /// Thread position of the last message, inclusive.
    pub last_position: u64,
    /// The messages (L5), in order.
    pub messages: Vec<RecordId>,
    /// Source time of the last message.
    pub time: SourceTime,
    /// L4: the readable near-verbatim transcript.
    pub l4: String,
    /// L3: the rule-condensed transcript.
    pub l3: String,
}
