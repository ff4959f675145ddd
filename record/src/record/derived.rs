//! Records derived from blocks by operators: summaries, event cards and graph
//! assertions. None of them names the operator that made it: the
//! [`Derivation`](super::Derivation) record links operator, inputs and outputs.
//! Confidences are integers in per-mille (0–1000) so that no float reaches a hash.

use rkyv::{Archive, Deserialize, Serialize};

use crate::id::RecordId;
use crate::time::{SourceTime, Timestamp};

/// L0–L2 of one block.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct BlockSummary {
    /// Tenant of the block.
    pub tenant: String,
    /// The summarized block.
    pub block: RecordId,
    /// L0 title.
    pub title: String,
    /// L0 tags.
    pub tags: Vec<String>,
    /// L1 summary.
    pub summary: String,
    /// L2 key points.
    pub key_points: Vec<String>,
    /// Whether the extractor should run on the block.
    pub should_extract: bool,
}

/// How precisely an event's occurrence time is known.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// A point in time.
    Instant,
    /// A calendar day.
    Day,
    /// A calendar month.
    Month,
    /// A calendar year.
    Year,
    /// An explicit interval.
    Range,
    /// Not known.
    Unknown,
}

/// Where an occurrence time came from.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum TimeBasis {
    /// Stated as a date.
    Explicit,
    /// Stated relative to the mention ("yesterday").
    Relative,
    /// Inferred from context.
    Inferred,
    /// Not known.
    Unknown,
}

/// Whether an event happened.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum Occurrence {
    /// It happened.
    Occurred,
    /// It is planned.
    Planned,
    /// It was planned and called off.
    Cancelled,
    /// It is going on.
    Ongoing,
    /// Not known.
    Unknown,
}

/// The standard event types (spec §2.5, V2).
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// A decision was made.
    Decision,
    /// Something was released.
    Release,
    /// A task was completed.
    TaskCompleted,
    /// A plan.
    Plan,
    /// A change.
    Change,
    /// A cancellation.
    Cancellation,
    /// An incident.
    Incident,
    /// A meeting.
    Meeting,
    /// A collaboration.
    Collaboration,
    /// A migration.
    Migration,
    /// Anything else.
    Other,
}

impl EventType {
    /// The snake_case name, as serialized (`task_completed`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Decision => "decision",
            Self::Release => "release",
            Self::TaskCompleted => "task_completed",
            Self::Plan => "plan",
            Self::Change => "change",
            Self::Cancellation => "cancellation",
            Self::Incident => "incident",
            Self::Meeting => "meeting",
            Self::Collaboration => "collaboration",
            Self::Migration => "migration",
            Self::Other => "other",
        }
    }
}

/// Memory scope of an event.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// About the user.
    User,
    /// About a project.
    Project,
    /// About this session only.
    Session,
}

/// How much an event matters; sets its weight floor.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum Criticality {
    /// Ordinary.
    Routine,
    /// A preference.
    Preference,
    /// Identity.
    Identity,
    /// Safety.
    Safety,
}

/// Time and relations of an event. `mentioned_at` is when the conversation
/// referred to it; `happened_*` is when it occurred. They are never conflated.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct EventTemporal {
    /// Source time of the message that mentioned it.
    pub mentioned_at: SourceTime,
    /// Start of the occurrence interval.
    pub happened_start: Option<Timestamp>,
    /// End of the occurrence interval.
    pub happened_end: Option<Timestamp>,
    /// The time expression as written ("last Saturday").
    pub original_text: Option<String>,
    /// Precision of `happened_*`.
    pub precision: Precision,
    /// Basis of `happened_*`.
    pub basis: TimeBasis,
    /// Whether it happened.
    pub status: Occurrence,
    /// Names of the participants.
    pub participants: Vec<String>,
    /// Standard type.
    pub event_type: EventType,
    /// Events this one supersedes.
    pub supersedes: Vec<RecordId>,
    /// Events this one conflicts with.
    pub conflicts_with: Vec<RecordId>,
}

/// An event card extracted from one block.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Event {
    /// Tenant of the block.
    pub tenant: String,
    /// The block it was extracted from.
    pub block: RecordId,
    /// The messages of that block it rests on (never empty).
    pub source_messages: Vec<RecordId>,
    /// Title.
    pub title: String,
    /// One-paragraph summary.
    pub summary: String,
    /// Longer narrative.
    pub narrative: String,
    /// Tags (at most 12).
    pub tags: Vec<String>,
    /// Verbatim quotes (at most 12).
    pub quotes: Vec<String>,
    /// Time, participants, type and relations.
    pub temporal: EventTemporal,
    /// Scope.
    pub scope: Scope,
    /// Criticality.
    pub criticality: Criticality,
    /// Confidence in per-mille.
    pub confidence_milli: u16,
}

/// Entity types of the graph.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum NodeType {
    /// A person.
    Person,
    /// A project.
    Project,
    /// An organization.
    Organization,
    /// A tool.
    Tool,
    /// A place.
    Place,
}

impl NodeType {
    /// The lowercase name (`person`, `project`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Project => "project",
            Self::Organization => "organization",
            Self::Tool => "tool",
            Self::Place => "place",
        }
    }

    /// Rank in listings: person, project, organization, tool, place.
    pub fn rank(self) -> u8 {
        match self {
            Self::Person => 0,
            Self::Project => 1,
            Self::Organization => 2,
            Self::Tool => 3,
            Self::Place => 4,
        }
    }
}

/// How a fact's value combines with earlier values of the same key.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum FactMode {
    /// One current value; a new one closes the old.
    State,
    /// A growing set of values.
    Set,
    /// A relation to other entities.
    Relation,
}

impl FactMode {
    /// Rank in listings: state, set, relation.
    pub fn rank(self) -> u8 {
        match self {
            Self::State => 0,
            Self::Set => 1,
            Self::Relation => 2,
        }
    }
}

/// A keyed fact about a node, valid over an interval.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Fact {
    /// Key, e.g. `employer`.
    pub key: String,
    /// Value(s).
    pub values: Vec<String>,
    /// Mode.
    pub mode: FactMode,
    /// Valid from.
    pub valid_from: Option<Timestamp>,
    /// Valid until.
    pub valid_to: Option<Timestamp>,
}

/// Identifies a node by type and normalized name.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct NodeKey {
    /// Type.
    pub node_type: NodeType,
    /// Normalized name.
    pub name: String,
}

/// What a graph assertion proposes.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case", tag = "assert")]
pub enum Assertion {
    /// A node with its names, tags and facts.
    Node {
        /// The node.
        key: NodeKey,
        /// Display name.
        name: String,
        /// Other names.
        aliases: Vec<String>,
        /// Semantic roles (at most 12).
        tags: Vec<String>,
        /// Facts.
        facts: Vec<Fact>,
    },
    /// A directed edge.
    Edge {
        /// Source node.
        from: NodeKey,
        /// Target node.
        to: NodeKey,
        /// Relation name.
        relation: String,
        /// Functional: a source has at most one current target for this
        /// relation, so a new target closes the old edge (`works_at`,
        /// `lives_in`); otherwise edges accumulate (`visited`, `knows`).
        functional: bool,
        /// Valid from.
        valid_from: Option<Timestamp>,
        /// Valid until.
        valid_to: Option<Timestamp>,
    },
}

/// A node or edge proposal made from events.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct GraphAssertion {
    /// Tenant.
    pub tenant: String,
    /// Events it rests on (all must be in the projected batch).
    pub source_events: Vec<RecordId>,
    /// The proposal.
    pub assertion: Assertion,
    /// Confidence in per-mille.
    pub confidence_milli: u16,
}
