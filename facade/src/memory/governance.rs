//! Governance on a [`Memory`]: forget, restore, pin and unpin an event.
//! Each decision is a new `Governance` record chained to the previous one
//! on the same event; nothing is rewritten.

use strataflow_log::RecordId;
use strataflow_log::record::{Actor, Governance, GovernanceAction, Record, RecordKind};
use strataflow_materializers::event_status::chain_tail;

use super::{Expected, Memory, MemoryError, QueryError};

impl Memory {
    /// Appends a governance decision on an event of `tenant` (an event of
    /// another tenant is not found); returns its record id.
    pub(crate) fn govern(
        &self,
        tenant: &str,
        event: &str,
        action: GovernanceAction,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<RecordId, MemoryError> {
        let target = self.show(tenant, event)?;
        let Record::Event(e) = &target.record else {
            return Err(QueryError::WrongKind {
                id: target.id,
                kind: target.record.kind(),
                expected: Expected::Event,
            }
            .into());
        };
        let earlier: Vec<(RecordId, Governance)> = self
            .store
            .children_of_kind(&target.id, RecordKind::Governance)?
            .into_iter()
            .filter_map(|s| match s.record {
                Record::Governance(g) if g.target == target.id => Some((s.id, g)),
                _ => None,
            })
            .collect();
        let record = Record::Governance(Governance {
            tenant: e.tenant.clone(),
            target: target.id,
            action,
            actor,
            reason,
            previous: chain_tail(&earlier),
        });
        self.append_one(record)
    }
}
