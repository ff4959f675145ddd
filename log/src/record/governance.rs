//! Governance and import records: explicit decisions by a user or an agent.

use rkyv::{Archive, Deserialize, Serialize};

use crate::id::RecordId;

/// Who decided.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// A person.
    User,
    /// The agent.
    Agent,
}

/// What a governance record does to its target.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Hash, Debug)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum GovernanceAction {
    /// Forget an event.
    Forget,
    /// Undo a forget.
    Restore,
    /// Pin an event.
    Pin,
    /// Undo a pin.
    Unpin,
    /// Expand a block to a detail level (0–5).
    ExpandBlock {
        /// Target level.
        level: u8,
    },
}

/// A governance decision. `previous` chains decisions on the same target so a
/// repeated action (forget, restore, forget) is a new record.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Governance {
    /// Tenant of the target.
    pub tenant: String,
    /// The event or block acted on.
    pub target: RecordId,
    /// The action.
    pub action: GovernanceAction,
    /// Who decided.
    pub actor: Actor,
    /// Free-text reason.
    pub reason: Option<String>,
    /// The previous governance record on this target, if any.
    pub previous: Option<RecordId>,
}

/// Decision on one imported memory candidate (spec §14).
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum ImportAction {
    /// New memory.
    Add,
    /// Same as an existing event.
    Merge,
    /// Replaces an existing event.
    Supersede,
    /// Contradicts an existing event.
    Conflict,
    /// Nothing new.
    Ignore,
}

/// One candidate's decision.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct ImportDecision {
    /// The candidate's text.
    pub candidate: String,
    /// Decision.
    pub action: ImportAction,
    /// Existing event it relates to.
    pub target: Option<RecordId>,
    /// Why.
    pub reason: String,
}

/// Text imported from another memory system, with its decisions.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct ImportSource {
    /// Tenant.
    pub tenant: String,
    /// Input format, e.g. `stratagate.external-memory.v2`.
    pub format: String,
    /// The imported text.
    pub text: String,
    /// Decisions per candidate.
    pub decisions: Vec<ImportDecision>,
}
