//! The head of a thread: its counters, kept in the `heads` keyspace in the
//! same batch as the thread's records (layout in `docs/format.md`).

/// Per-thread counters kept in the same batch as the thread's records.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ThreadHead {
    /// Messages stored (the next message's position).
    pub messages: u64,
    /// Blocks sealed (the last block's ordinal).
    pub blocks: u32,
    /// Messages covered by blocks (the first open-tail position).
    pub sealed_messages: u64,
    /// Last turn covered by a block.
    pub end_turn: u32,
}

impl ThreadHead {
    const LEN: usize = 24;

    pub(crate) fn encode(&self) -> [u8; Self::LEN] {
        let mut v = [0u8; Self::LEN];
        v[..8].copy_from_slice(&self.messages.to_be_bytes());
        v[8..12].copy_from_slice(&self.blocks.to_be_bytes());
        v[12..20].copy_from_slice(&self.sealed_messages.to_be_bytes());
        v[20..].copy_from_slice(&self.end_turn.to_be_bytes());
        v
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        let b: &[u8; Self::LEN] = bytes.try_into().ok()?;
        let (m, rest) = b.split_first_chunk::<8>()?;
        let (bl, rest) = rest.split_first_chunk::<4>()?;
        let (s, rest) = rest.split_first_chunk::<8>()?;
        let (t, _) = rest.split_first_chunk::<4>()?;
        Some(Self {
            messages: u64::from_be_bytes(*m),
            blocks: u32::from_be_bytes(*bl),
            sealed_messages: u64::from_be_bytes(*s),
            end_turn: u32::from_be_bytes(*t),
        })
    }

    /// Messages not yet in a block.
    pub fn open_tail(&self) -> u64 {
        self.messages.saturating_sub(self.sealed_messages)
    }
}
