//! [`TenantStats`]: what one tenant holds, without counting any other
//! tenant's records (what a client bound to one tenant may see).

use super::{MemoryError, TenantMemory};

/// Counts of one tenant's threads, messages and blocks.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TenantStats {
    /// The tenant.
    pub tenant: String,
    /// Threads with at least one message.
    pub threads: u64,
    /// Messages stored.
    pub messages: u64,
    /// Blocks sealed.
    pub blocks: u64,
    /// Messages not yet in a block.
    pub open_tail_messages: u64,
    /// Last sequence number of the log (shared by every tenant).
    pub last_seq: u64,
}

impl TenantMemory<'_> {
    /// What the tenant holds: its threads, messages and blocks.
    pub fn stats(&self) -> Result<TenantStats, MemoryError> {
        let store = self.memory().store();
        let mut stats = TenantStats {
            tenant: self.name().to_owned(),
            threads: 0,
            messages: 0,
            blocks: 0,
            open_tail_messages: 0,
            last_seq: store.last_seq()?.unwrap_or(0),
        };
        for (tenant, _, head) in store.thread_heads()? {
            if tenant == self.name() {
                stats.threads += 1;
                stats.messages += head.messages;
                stats.blocks += u64::from(head.blocks);
                stats.open_tail_messages += head.open_tail();
            }
        }
        Ok(stats)
    }
}
