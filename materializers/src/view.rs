//! Persisted, incremental views.
//!
//! A [`Materialized`] view is a state folded from one tenant's records in
//! log order: `apply` takes the next record, and the state is saved with
//! the last sequence it applied, so a refresh only reads what came after.
//! A rebuild folds the same records from the start into a fresh state; the
//! two must have the same [`Materialized::digest`] (a hash of the canonical
//! content, never of floats). The state's encoding ([`Materialized::encode`])
//! is a format byte followed by the rkyv archive of the state (the log's
//! pinned rkyv format), kept by the log in its `views` keyspace in chunks.

use std::collections::BTreeMap;

use strataflow_record::RecordId;
use strataflow_record::record::{Criticality, GovernanceAction, Record, RefKind, Role};

use crate::event_status::EventStatusView;
use crate::weights::{TurnClock, WeightInput, WeightsView};

/// First byte of an encoded view state; a state with another first byte
/// (an older build's) is rebuilt, never read.
pub const STATE_FORMAT: u8 = 4;

/// A view folded record by record.
pub trait Materialized: Default {
    /// The view's name (its key in the log's `views` keyspace).
    const NAME: &'static str;
    /// Applies the next record of the tenant, in log order.
    fn apply(&mut self, id: &RecordId, record: &Record);
    /// blake3 hex over the canonical content.
    fn digest(&self) -> String;
    /// The persisted encoding: [`STATE_FORMAT`], then the rkyv archive.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// Reads [`Materialized::encode`]'s bytes; `None` if they are not a
    /// valid state of this format.
    fn decode(bytes: &[u8]) -> Option<Self>;
}

/// A [`Materialized`] view whose state is kept as a run of segments: each
/// segment is the state folded from a stretch of the log, started as the
/// [`Segmented::continuation`] of the segment before, and the whole state
/// is the first segment with every later one [`Segmented::append`]ed in
/// order. A refresh then loads, extends and saves only the last segment,
/// whatever the size of the view.
///
/// The law the segments keep (tested on real logs with every cut): for any
/// cut of a tenant's records into stretches, folding each stretch into the
/// continuation of the previous state, giving each stretch's state the
/// earlier records its [`Segmented::wants`] names through
/// [`Segmented::recall`], and appending the results gives a state equal to
/// the fold of all the records into one.
pub trait Segmented: Materialized {
    /// An empty state that continues this one: it carries what the fold of
    /// the next records reads from the earlier ones and is not in the
    /// records it will see (the running latest user-message time, the
    /// operator a view follows).
    fn continuation(&self) -> Self;
    /// Appends `later`, a state folded from the records after this one's,
    /// started as this state's continuation.
    fn append(&mut self, later: Self);
    /// The earlier records of the tenant that applying `record` reads from
    /// the state and that this state does not hold (a segment holds only
    /// what its own stretch applied and recalled). Empty for a view whose
    /// fold reads nothing earlier.
    fn wants(&self, record: &Record) -> Vec<RecordId> {
        let _ = record;
        Vec::new()
    }
    /// Gives the state an earlier record of the tenant it [`wants`]
    /// (logged before the record about to be applied), as context only:
    /// what `apply` would have learnt from it.
    ///
    /// [`wants`]: Segmented::wants
    fn recall(&mut self, id: &RecordId, record: &Record) {
        let _ = (id, record);
    }
}

/// Implements the encoding of [`Materialized`] for a state type with rkyv
/// derives.
macro_rules! rkyv_encoding {
    () => {
        /// The archive is written after the format byte in one buffer, not
        /// copied there: the archived types are unaligned (the pinned
        /// `unaligned` format), so the archive's bytes do not depend on
        /// where it starts, and a large state is held once, not twice.
        fn encode(&self) -> Result<Vec<u8>, String> {
            rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(self, vec![STATE_FORMAT])
                .map_err(|e| e.to_string())
        }

        fn decode(bytes: &[u8]) -> Option<Self> {
            let (&format, archive) = bytes.split_first()?;
            if format != STATE_FORMAT {
                return None;
            }
            // default: unreadable state is `None`, which the caller rebuilds
            // from the log.
            rkyv::from_bytes::<Self, rkyv::rancor::Error>(archive).ok()
        }
    };
}
pub(crate) use rkyv_encoding;

/// A governance decision as the status view needs it.
#[derive(
    Clone,
    Debug,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct GovernanceEntry {
    /// The target.
    pub target: RecordId,
    /// Forget, restore, pin, unpin or expand.
    pub action: String,
    /// The previous decision on the target.
    pub previous: Option<RecordId>,
}

/// The inputs of the event status view: each event's links and every
/// governance decision.
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct EventStatusState {
    /// Event → (supersedes, conflicts_with).
    pub events: BTreeMap<RecordId, (Vec<RecordId>, Vec<RecordId>)>,
    /// Governance record → decision.
    pub governance: BTreeMap<RecordId, GovernanceEntry>,
    /// External memory import (`ImportSource` id) → the events it created.
    pub imports: BTreeMap<RecordId, Vec<RecordId>>,
}

impl EventStatusState {
    /// The status view of these inputs.
    pub fn view(&self) -> EventStatusView {
        EventStatusView::fold_with_imports(
            self.events
                .iter()
                .map(|(id, (s, c))| (*id, s.as_slice(), c.as_slice())),
            self.governance
                .iter()
                .map(|(id, g)| (*id, g.target, action_of(&g.action), g.previous)),
            self.imports.iter().map(|(id, e)| (*id, e.as_slice())),
        )
    }
}

fn action_name(a: &GovernanceAction) -> String {
    match a {
        GovernanceAction::Forget => "forget".into(),
        GovernanceAction::Restore => "restore".into(),
        GovernanceAction::Pin => "pin".into(),
        GovernanceAction::Unpin => "unpin".into(),
        GovernanceAction::ExpandBlock { level } => format!("expand:{level}"),
        GovernanceAction::UndoImport => "undo_import".into(),
    }
}

fn action_of(name: &str) -> GovernanceAction {
    match name {
        "forget" => GovernanceAction::Forget,
        "restore" => GovernanceAction::Restore,
        "pin" => GovernanceAction::Pin,
        "unpin" => GovernanceAction::Unpin,
        "undo_import" => GovernanceAction::UndoImport,
        // default: an `expand:` level that is not a number counts as L5.
        other => GovernanceAction::ExpandBlock {
            level: other
                .strip_prefix("expand:")
                .and_then(|l| l.parse().ok())
                .unwrap_or(5),
        },
    }
}

impl Materialized for EventStatusState {
    const NAME: &'static str = "event_status";

    rkyv_encoding!();

    fn apply(&mut self, id: &RecordId, record: &Record) {
        match record {
            Record::Event(e) => {
                self.events.insert(
                    *id,
                    (
                        e.temporal.supersedes.clone(),
                        e.temporal.conflicts_with.clone(),
                    ),
                );
            }
            Record::Governance(g) => {
                self.governance.insert(
                    *id,
                    GovernanceEntry {
                        target: g.target,
                        action: action_name(&g.action),
                        previous: g.previous,
                    },
                );
            }
            Record::ImportSource(source) => {
                self.imports.insert(
                    *id,
                    source
                        .decisions
                        .iter()
                        .filter_map(|d| d.created_event)
                        .collect(),
                );
            }
            _ => {}
        }
    }

    fn digest(&self) -> String {
        self.view().digest()
    }
}

impl Segmented for EventStatusState {
    fn continuation(&self) -> Self {
        Self::default()
    }

    fn append(&mut self, later: Self) {
        self.events.extend(later.events);
        self.governance.extend(later.governance);
        self.imports.extend(later.imports);
    }
}

/// The inputs of the weights view, kept as the running fold.
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct WeightsState {
    /// The fold inputs so far, in log order (one entry per block, event
    /// and use).
    pub inputs: Vec<WeightEntry>,
    /// The tenant's user messages per source time (UTC ms): its turn clock.
    pub said: BTreeMap<i64, u64>,
    /// The latest source time of a user message applied so far.
    pub latest_said_ms: Option<i64>,
    /// Graph assertion → its source events (a used node ref reinforces them).
    pub assertion_sources: BTreeMap<RecordId, Vec<RecordId>>,
}

/// One input of the weights fold.
#[derive(
    Clone,
    Debug,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub enum WeightEntry {
    /// A block and the source time (UTC ms) of its last message.
    Block(RecordId, i64),
    /// An event: id, block, criticality floor class, the latest source time
    /// of a user message logged before it.
    Event(RecordId, RecordId, u8, Option<i64>),
    /// A use: the events it reinforces, the latest source time of a user
    /// message logged before it.
    Use(Vec<RecordId>, Option<i64>),
}

fn criticality_code(c: Criticality) -> u8 {
    match c {
        Criticality::Routine => 0,
        Criticality::Preference => 1,
        Criticality::Identity => 2,
        Criticality::Safety => 3,
    }
}

fn criticality_of(code: u8) -> Criticality {
    match code {
        1 => Criticality::Preference,
        2 => Criticality::Identity,
        3 => Criticality::Safety,
        _ => Criticality::Routine,
    }
}

impl WeightsState {
    /// The weights view with the given statuses.
    pub fn view(&self, status: &EventStatusView) -> WeightsView {
        let inputs = self.inputs.iter().map(|e| match e {
            WeightEntry::Block(b, said_ms) => WeightInput::Block {
                id: *b,
                said_ms: *said_ms,
            },
            WeightEntry::Event(id, block, c, latest_said_ms) => WeightInput::Event {
                id: *id,
                block: *block,
                criticality: criticality_of(*c),
                latest_said_ms: *latest_said_ms,
            },
            WeightEntry::Use(ids, latest_said_ms) => WeightInput::Use {
                events: ids.clone(),
                latest_said_ms: *latest_said_ms,
            },
        });
        WeightsView::fold(&TurnClock::new(&self.said), inputs, status)
    }
}

impl Materialized for WeightsState {
    const NAME: &'static str = "weights";

    rkyv_encoding!();

    fn apply(&mut self, id: &RecordId, record: &Record) {
        match record {
            Record::Message(m) if m.role == Role::User => {
                let ms = m.time.utc_ms;
                *self.said.entry(ms).or_insert(0) += 1;
                self.latest_said_ms = Some(self.latest_said_ms.map_or(ms, |t| t.max(ms)));
            }
            Record::Block(b) => self.inputs.push(WeightEntry::Block(*id, b.time.utc_ms)),
            Record::Event(e) => {
                self.inputs.push(WeightEntry::Event(
                    *id,
                    e.block,
                    criticality_code(e.criticality),
                    self.latest_said_ms,
                ));
            }
            Record::GraphAssertion(a) => {
                self.assertion_sources.insert(*id, a.source_events.clone());
            }
            Record::UseReceipt(u) => {
                let mut events = Vec::new();
                for r in &u.refs {
                    match r.kind {
                        RefKind::Event => events.push(r.id),
                        RefKind::Node => {
                            // default: a node ref of no known assertion
                            // reinforces no event.
                            events.extend(
                                self.assertion_sources
                                    .get(&r.id)
                                    .cloned()
                                    .unwrap_or_default(),
                            );
                        }
                        RefKind::Message | RefKind::Block => {}
                    }
                }
                self.inputs
                    .push(WeightEntry::Use(events, self.latest_said_ms));
            }
            _ => {}
        }
    }

    fn digest(&self) -> String {
        self.view(&EventStatusView::default()).digest()
    }
}

impl Segmented for WeightsState {
    fn continuation(&self) -> Self {
        Self {
            latest_said_ms: self.latest_said_ms,
            ..Self::default()
        }
    }

    fn append(&mut self, later: Self) {
        self.inputs.extend(later.inputs);
        for (ms, count) in later.said {
            *self.said.entry(ms).or_insert(0) += count;
        }
        self.latest_said_ms = self.latest_said_ms.max(later.latest_said_ms);
        self.assertion_sources.extend(later.assertion_sources);
    }

    /// The graph assertions a use's node refs name that this state has not
    /// seen (their source events are what the use reinforces).
    fn wants(&self, record: &Record) -> Vec<RecordId> {
        match record {
            Record::UseReceipt(u) => u
                .refs
                .iter()
                .filter(|r| r.kind == RefKind::Node && !self.assertion_sources.contains_key(&r.id))
                .map(|r| r.id)
                .collect(),
            _ => Vec::new(),
        }
    }

    fn recall(&mut self, id: &RecordId, record: &Record) {
        if let Record::GraphAssertion(a) = record {
            self.assertion_sources.insert(*id, a.source_events.clone());
        }
    }
}

/// Which graph assertions a profile's projector made (from its `Derivation`
/// records), plus the event status inputs: enough to fold the profile's
/// graph without scanning the log. The assertion bodies stay in the log.
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct GraphMembership {
    /// Projector id (`name@version`).
    pub projector: String,
    /// Its configuration hash.
    pub config: Option<RecordId>,
    /// Assertions output by successful runs of that projector.
    pub assertions: std::collections::BTreeSet<RecordId>,
}

impl GraphMembership {
    /// An empty membership for one projector.
    pub fn new(projector: String, config: RecordId) -> Self {
        Self {
            projector,
            config: Some(config),
            assertions: std::collections::BTreeSet::new(),
        }
    }
}

impl Materialized for GraphMembership {
    const NAME: &'static str = "graph_membership";

    rkyv_encoding!();

    fn apply(&mut self, _id: &RecordId, record: &Record) {
        if let Record::Derivation(d) = record
            && d.operator == self.projector
            && Some(d.config_hash) == self.config
            && d.outcome == strataflow_record::record::Outcome::Ok
        {
            self.assertions.extend(d.outputs.iter().copied());
        }
    }

    fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow view graph_membership v1");
        h.update(self.projector.as_bytes());
        for id in &self.assertions {
            h.update(id.as_bytes());
        }
        h.finalize().to_hex().to_string()
    }
}

impl Segmented for GraphMembership {
    fn continuation(&self) -> Self {
        Self {
            projector: self.projector.clone(),
            config: self.config,
            assertions: std::collections::BTreeSet::new(),
        }
    }

    fn append(&mut self, later: Self) {
        self.assertions.extend(later.assertions);
    }
}

/// The inputs of the block levels view for one profile: per thread, blocks
/// becoming ready (the profile's extraction done or skipped) and
/// expansions, in log order.
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct BlockLevelsState {
    /// Extractor id (`name@version`).
    pub extractor: String,
    /// Its configuration hash.
    pub config: Option<RecordId>,
    /// Block → thread.
    pub threads: BTreeMap<RecordId, String>,
    /// Thread → (block, expanded level or none for "ready") in log order.
    pub inputs: BTreeMap<String, Vec<(RecordId, Option<u8>)>>,
}

impl BlockLevelsState {
    /// An empty state for one extractor.
    pub fn new(extractor: String, config: RecordId) -> Self {
        Self {
            extractor,
            config: Some(config),
            ..Self::default()
        }
    }

    /// Whether `d` makes a block ready for this view: a run of its
    /// extractor, with its configuration, done or skipped.
    fn follows(&self, d: &strataflow_record::record::Derivation) -> bool {
        d.operator == self.extractor
            && Some(d.config_hash) == self.config
            && matches!(
                d.outcome,
                strataflow_record::record::Outcome::Ok
                    | strataflow_record::record::Outcome::Skipped { .. }
            )
    }

    /// The levels of one thread.
    pub fn thread(&self, thread: &str) -> crate::block_levels::ThreadLevels {
        use crate::block_levels::{LevelInput, ThreadLevels};
        ThreadLevels::fold(
            self.inputs
                .get(thread)
                .into_iter()
                .flatten()
                .map(|(b, l)| match l {
                    None => LevelInput::Ready(*b),
                    Some(level) => LevelInput::Expand {
                        block: *b,
                        level: *level,
                    },
                }),
        )
    }
}

impl Materialized for BlockLevelsState {
    const NAME: &'static str = "block_levels";

    rkyv_encoding!();

    fn apply(&mut self, id: &RecordId, record: &Record) {
        match record {
            Record::Block(b) => {
                self.threads.insert(*id, b.thread.clone());
            }
            Record::Derivation(d) if self.follows(d) => {
                if let Some((block, thread)) = d
                    .inputs
                    .first()
                    .and_then(|b| self.threads.get(b).map(|t| (*b, t.clone())))
                {
                    self.inputs.entry(thread).or_default().push((block, None));
                }
            }
            Record::Governance(g) => {
                if let GovernanceAction::ExpandBlock { level } = g.action
                    && let Some(thread) = self.threads.get(&g.target).cloned()
                {
                    self.inputs
                        .entry(thread)
                        .or_default()
                        .push((g.target, Some(level)));
                }
            }
            _ => {}
        }
    }

    fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow view block_levels v1");
        for thread in self.inputs.keys() {
            h.update(thread.as_bytes());
            h.update(self.thread(thread).digest().as_bytes());
        }
        h.finalize().to_hex().to_string()
    }
}

impl Segmented for BlockLevelsState {
    fn continuation(&self) -> Self {
        Self {
            extractor: self.extractor.clone(),
            config: self.config,
            ..Self::default()
        }
    }

    fn append(&mut self, later: Self) {
        self.threads.extend(later.threads);
        for (thread, inputs) in later.inputs {
            self.inputs.entry(thread).or_default().extend(inputs);
        }
    }

    /// The block a ready derivation or an expansion names, when this state
    /// does not know its thread.
    fn wants(&self, record: &Record) -> Vec<RecordId> {
        let block = match record {
            Record::Derivation(d) if self.follows(d) => d.inputs.first().copied(),
            Record::Governance(g) if matches!(g.action, GovernanceAction::ExpandBlock { .. }) => {
                Some(g.target)
            }
            _ => None,
        };
        block
            .filter(|b| !self.threads.contains_key(b))
            .into_iter()
            .collect()
    }

    fn recall(&mut self, id: &RecordId, record: &Record) {
        if let Record::Block(b) = record {
            self.threads.insert(*id, b.thread.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn id(b: u8) -> RecordId {
        RecordId::from_slice(&[b; 32]).unwrap()
    }

    /// The format byte then the archive, byte for byte as when the archive
    /// was made on its own and copied after the byte.
    fn copied<T>(state: &T) -> Vec<u8>
    where
        T: for<'a> rkyv::Serialize<
                rkyv::api::high::HighSerializer<
                    rkyv::util::AlignedVec,
                    rkyv::ser::allocator::ArenaHandle<'a>,
                    rkyv::rancor::Error,
                >,
            >,
    {
        let archive = rkyv::to_bytes::<rkyv::rancor::Error>(state).unwrap();
        let mut out = vec![STATE_FORMAT];
        out.extend_from_slice(&archive);
        out
    }

    /// Encoding in place (the archive written after the format byte) gives
    /// the bytes of the archive made alone, so states saved by earlier
    /// builds of this format read the same, and each round-trips.
    #[test]
    fn a_state_encoded_in_place_has_the_bytes_of_the_copied_archive() {
        let mut status = EventStatusState::default();
        status.events.insert(id(1), (vec![id(2)], vec![]));
        status.events.insert(id(3), (vec![], vec![id(1), id(2)]));
        status.governance.insert(
            id(4),
            GovernanceEntry {
                target: id(1),
                action: "pin".into(),
                previous: Some(id(5)),
            },
        );
        let mut weights = WeightsState::default();
        weights
            .inputs
            .push(WeightEntry::Block(id(6), 1_700_000_000_123));
        weights
            .inputs
            .push(WeightEntry::Event(id(1), id(6), 2, Some(-7)));
        weights
            .inputs
            .push(WeightEntry::Use(vec![id(1), id(3)], None));
        weights.said.insert(1_700_000_000_000, 3);
        weights.latest_said_ms = Some(1_700_000_000_000);
        weights.assertion_sources.insert(id(7), vec![id(1)]);
        let mut graph = GraphMembership::new("p@1".into(), id(8));
        graph.assertions.extend([id(7), id(9)]);
        let mut levels = BlockLevelsState::new("x@5".into(), id(10));
        levels.threads.insert(id(6), "thread é".into());
        levels
            .inputs
            .insert("thread é".into(), vec![(id(6), None), (id(6), Some(2))]);

        assert_eq!(status.encode().unwrap(), copied(&status));
        assert_eq!(weights.encode().unwrap(), copied(&weights));
        assert_eq!(graph.encode().unwrap(), copied(&graph));
        assert_eq!(levels.encode().unwrap(), copied(&levels));
        assert_eq!(
            EventStatusState::decode(&status.encode().unwrap()),
            Some(status)
        );
        assert_eq!(
            WeightsState::decode(&weights.encode().unwrap()),
            Some(weights)
        );
        assert_eq!(
            GraphMembership::decode(&graph.encode().unwrap()),
            Some(graph)
        );
        assert_eq!(
            BlockLevelsState::decode(&levels.encode().unwrap()),
            Some(levels)
        );
    }
}
