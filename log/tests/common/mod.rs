//! Builders shared by the log's integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use strataflow_log::record::{Block, Message, Record, Role};
use strataflow_log::{RecordId, SourceTime};

pub fn msg(thread: &str, ext: &str, position: u64, role: Role, content: &str) -> Message {
    Message {
        tenant: String::new(),
        thread: thread.into(),
        external_id: ext.into(),
        position,
        role,
        speaker: None,
        content: content.into(),
        tool_calls: vec![],
        time: SourceTime::utc_without_offset(1_700_000_000_000 + i64::try_from(position).unwrap()),
    }
}

pub fn id_of(record: &Record) -> RecordId {
    strataflow_log::envelope::encode_with_id(record).unwrap().0
}

pub fn block(thread: &str, ordinal: u32, turns: (u32, u32), messages: &[&Message]) -> Block {
    Block {
        tenant: String::new(),
        thread: thread.into(),
        ordinal,
        start_turn: turns.0,
        end_turn: turns.1,
        first_position: messages.first().map_or(0, |m| m.position),
        last_position: messages.last().map_or(0, |m| m.position),
        messages: messages
            .iter()
            .map(|m| id_of(&Record::Message((*m).clone())))
            .collect(),
        time: messages
            .last()
            .map_or(SourceTime::utc_without_offset(0), |m| m.time),
        l4: String::new(),
        l3: String::new(),
    }
}
