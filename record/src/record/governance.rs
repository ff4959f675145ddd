//! Governance and import records: explicit decisions by a user or an agent.

use rkyv::{Archive, Deserialize, Serialize};

use crate::id::RecordId;
use crate::time::SourceTime;

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
    /// Undo an external memory import: the target is its [`ImportSource`];
    /// the events it created are removed from every view (their
    /// supersede and conflict links with them). Final: an undone import
    /// is not redone.
    UndoImport,
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

/// Thread-name prefix of the synthetic source thread of an external
/// memory import (`external-import:<hash>`). Blocks of such threads are
/// never summarized or extracted.
pub const EXTERNAL_IMPORT_THREAD_PREFIX: &str = "external-import:";

/// Decision on one imported memory candidate (spec §14).
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum ImportAction {
    /// New memory.
    Add,
    /// Same fact as existing events: a consolidated event supersedes them.
    Merge,
    /// A newer version or correction of existing events: supersedes them.
    Supersede,
    /// Contradicts existing events: both kept, linked as conflicting.
    Conflict,
    /// Nothing new (duplicate, ephemeral, unsafe, or not confirmed).
    Ignore,
}

impl ImportAction {
    /// The upper-case name used in the input and by the decider (`ADD`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Add => "ADD",
            Self::Merge => "MERGE",
            Self::Supersede => "SUPERSEDE",
            Self::Conflict => "CONFLICT",
            Self::Ignore => "IGNORE",
        }
    }

    /// Parses a name, case-insensitively.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Add,
            Self::Merge,
            Self::Supersede,
            Self::Conflict,
            Self::Ignore,
        ]
        .into_iter()
        .find(|a| a.name().eq_ignore_ascii_case(text.trim()))
    }
}

/// One candidate's decision.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct ImportDecision {
    /// 0-based index of the candidate in the imported file.
    pub index: u32,
    /// The candidate's title.
    pub candidate: String,
    /// What the decider proposed.
    pub proposed: ImportAction,
    /// What was applied: the proposal, or `Ignore` when it required
    /// confirmation and was not accepted.
    pub action: ImportAction,
    /// Existing events it relates to (superseded, conflicting, or the
    /// duplicate it repeats).
    pub targets: Vec<RecordId>,
    /// Why.
    pub reason: String,
    /// The decider's confidence in per-mille.
    pub confidence_milli: u16,
    /// Confidence below the auto-apply threshold (850 ‰).
    pub requires_confirmation: bool,
    /// The event written for it (ADD, MERGE, SUPERSEDE, CONFLICT).
    pub created_event: Option<RecordId>,
}

/// An external memory import: where its text is, and every decision. Its
/// record id is the import id.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct ImportSource {
    /// Tenant.
    pub tenant: String,
    /// Input format, e.g. `stratagate.external-memory.v2`.
    pub format: String,
    /// The exporting system (`sourceSystem`), `""` when not given.
    pub source_system: String,
    /// The source message holding the entire imported text.
    pub message: RecordId,
    /// The synthetic source block of that message.
    pub block: RecordId,
    /// The import time (`--imported-at` or the file's `exportedAt`).
    pub imported_at: SourceTime,
    /// Decisions per candidate, in file order.
    pub decisions: Vec<ImportDecision>,
}
