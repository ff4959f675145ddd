//! The graph-state view: current and historical nodes, facts and edges,
//! folded from [`GraphAssertion`] records (spec §10.2, §2.7).
//!
//! The graph is a *view*: records are never rewritten; superseding a fact or
//! closing an edge only happens here, in the fold. The fold is deterministic
//! and independent of the order the log holds the assertions in:
//!
//! 1. **Sources.** Only source events for which `event_active` holds count.
//!    An assertion none of whose sources is active (all forgotten) is
//!    ignored; the others keep their active sources only. Duplicate ids are
//!    folded once. The tenant field is not read: the caller passes one
//!    tenant's assertions.
//! 2. **Order.** Assertions are sorted by (valid-from, id): an edge's
//!    `valid_from`; for a node, the earliest `valid_from` of its facts; an
//!    unknown time (`None`) sorts first.
//! 3. **Identity.** Two Node assertions are the same node when they have
//!    the same [`NodeType`] and one of their names (key name, display name,
//!    aliases) has the same [`identity_key`] (lowercase, without whitespace,
//!    `_` and `-`) — transitively. A node's key and display name are those
//!    of its first assertion in the order above; its aliases are the union
//!    of every other name (one spelling per identity key, at most
//!    [`MAX_ALIASES`]); its tags the sorted union (at most [`MAX_TAGS`]); its
//!    sources and assertions the sorted unions.
//! 4. **Facts**, per node and (key, mode):
//!    - `State` and `Relation`: ordered by valid-from; each fact but the
//!      last is closed (`valid_to` = the next one's `valid_from` unless it
//!      has its own, `current = false`); the last is current unless it has
//!      its own `valid_to`. The same value stated again right after itself
//!      (compared without case and surrounding space) is not a change: the
//!      sources are merged into the earlier fact, and the later statement's
//!      `valid_to` is kept.
//!    - `Set`: one [`FactState`] per distinct value; a value stated again
//!      merges its sources and keeps the earliest `valid_from`; current
//!      unless every statement of it has a `valid_to`.
//! 5. **Edges.** Endpoints are resolved to nodes by identity (an edge whose
//!    endpoint has no node, or whose endpoints are the same node, is
//!    dropped). Functional edges, per (from, relation), behave like State
//!    facts whose value is the target: a later edge to another target closes
//!    the earlier one. Non-functional edges accumulate: the same (from, to,
//!    relation) merges sources and keeps the earliest `valid_from`.
//! 6. Nodes are sorted by (type, key name); facts by (key, mode, valid-from,
//!    values); edges by (from, to, relation, valid-from, assertion).
//!
//! [`GraphState::digest`] hashes a canonical serialization of the result, so
//! two folds of the same assertions in any order have equal digests.

use std::collections::{BTreeMap, BTreeSet};

use strataflow_record::record::{Assertion, Fact, FactMode, GraphAssertion, NodeKey, NodeType};
use strataflow_record::{RecordId, Timestamp};

/// At most this many tags per node (the first in sorted order).
pub const MAX_TAGS: usize = 12;
/// At most this many aliases per node (the first in sorted order).
pub const MAX_ALIASES: usize = 20;

/// The identity key of a name (spec §10.2): lowercase, `’` read as `'`,
/// without whitespace, `_` and `-`. `Marta Silva`, `marta_silva` and
/// `MartaSilva` have the same key.
pub fn identity_key(name: &str) -> String {
    name.replace(['’', '‘'], "'")
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_' && *c != '-')
        .collect()
}

/// The folded graph: nodes with their facts, and edges.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GraphState {
    nodes: Vec<NodeState>,
    edges: Vec<EdgeState>,
}

/// A node: every Node assertion of one entity, merged.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NodeState {
    /// Key (of the node's first assertion).
    pub key: NodeKey,
    /// Display name (of the node's first assertion).
    pub name: String,
    /// Type.
    pub node_type: NodeType,
    /// Other names, sorted.
    pub aliases: Vec<String>,
    /// Semantic roles, sorted, at most [`MAX_TAGS`].
    pub tags: Vec<String>,
    /// Facts, current and historical, sorted by (key, mode, valid-from,
    /// values).
    pub facts: Vec<FactState>,
    /// Active events the node rests on, sorted.
    pub source_events: Vec<RecordId>,
    /// The Node assertions merged into it, sorted.
    pub assertions: Vec<RecordId>,
}

/// A fact of a node with its validity.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FactState {
    /// Key, e.g. `employer`.
    pub key: String,
    /// Value(s); a Set fact holds one value.
    pub values: Vec<String>,
    /// Mode.
    pub mode: FactMode,
    /// Valid from (inclusive); `None` when unknown.
    pub valid_from: Option<Timestamp>,
    /// Valid until (inclusive); `None` while open.
    pub valid_to: Option<Timestamp>,
    /// Whether it is in force now (not superseded, not ended).
    pub current: bool,
    /// Active events it rests on, sorted.
    pub source_events: Vec<RecordId>,
    /// The assertion that introduced it.
    pub assertion: RecordId,
}

/// A directed edge with its validity.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EdgeState {
    /// Source node (its canonical key).
    pub from: NodeKey,
    /// Target node (its canonical key).
    pub to: NodeKey,
    /// Relation name.
    pub relation: String,
    /// Whether a newer target closes it.
    pub functional: bool,
    /// Valid from (inclusive); `None` when unknown.
    pub valid_from: Option<Timestamp>,
    /// Valid until (inclusive); `None` while open.
    pub valid_to: Option<Timestamp>,
    /// Whether it is in force now.
    pub current: bool,
    /// Active events it rests on, sorted.
    pub source_events: Vec<RecordId>,
    /// The assertion that introduced it.
    pub assertion: RecordId,
}

/// Whether `t` lies in `[from, to]`, an unknown bound being open.
fn valid_at(from: Option<Timestamp>, to: Option<Timestamp>, t: Timestamp) -> bool {
    from.is_none_or(|f| f <= t) && to.is_none_or(|e| t <= e)
}

fn key_order(k: &NodeKey) -> (u8, &str) {
    (k.node_type.rank(), k.name.as_str())
}

/// A value compared without case and surrounding or repeated whitespace.
fn value_key(v: &str) -> String {
    v.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// One assertion taking part in the fold.
struct Item<'a> {
    id: RecordId,
    order: Option<Timestamp>,
    sources: BTreeSet<RecordId>,
    assertion: &'a Assertion,
}

/// One statement of a State fact or functional edge, in fold order.
struct Entry<K, P> {
    /// What "the same value" means.
    cmp: K,
    payload: P,
    valid_from: Option<Timestamp>,
    valid_to: Option<Timestamp>,
    sources: BTreeSet<RecordId>,
    assertion: RecordId,
    /// (assertion position, position inside the assertion).
    pos: (usize, usize),
}

/// A run of equal values between two changes.
struct Segment<P> {
    payload: P,
    valid_from: Option<Timestamp>,
    valid_to: Option<Timestamp>,
    current: bool,
    sources: BTreeSet<RecordId>,
    assertion: RecordId,
}

/// The supersession rule of State facts and functional edges.
fn supersede<K: PartialEq, P>(mut entries: Vec<Entry<K, P>>) -> Vec<Segment<P>> {
    entries.sort_by_key(|e| (e.valid_from, e.pos));
    let mut out: Vec<(K, Segment<P>)> = Vec::new();
    for e in entries {
        if let Some((cmp, last)) = out.last_mut() {
            if *cmp == e.cmp {
                last.sources.extend(e.sources);
                last.valid_to = e.valid_to;
                continue;
            }
            if last.valid_to.is_none() {
                last.valid_to = e.valid_from;
            }
        }
        out.push((
            e.cmp,
            Segment {
                payload: e.payload,
                valid_from: e.valid_from,
                valid_to: e.valid_to,
                current: false,
                sources: e.sources,
                assertion: e.assertion,
            },
        ));
    }
    if let Some((_, last)) = out.last_mut() {
        last.current = last.valid_to.is_none();
    }
    out.into_iter().map(|(_, s)| s).collect()
}

/// Statements merged without supersession (Set facts, non-functional
/// edges): the earliest gives the payload, `valid_from` and assertion; the
/// result is open if any statement is open, else ends at the latest end.
fn accumulate<P>(mut entries: Vec<Entry<(), P>>) -> Option<Segment<P>> {
    entries.sort_by_key(|e| (e.valid_from, e.pos));
    let mut iter = entries.into_iter();
    let first = iter.next()?;
    let mut seg = Segment {
        payload: first.payload,
        valid_from: first.valid_from,
        valid_to: first.valid_to,
        current: false,
        sources: first.sources,
        assertion: first.assertion,
    };
    for e in iter {
        seg.sources.extend(e.sources);
        seg.valid_to = match (seg.valid_to, e.valid_to) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
    }
    seg.current = seg.valid_to.is_none();
    Some(seg)
}

/// Union–find over item positions; the root of a set is its smallest
/// position, i.e. its first assertion in fold order.
struct Components(Vec<usize>);

impl Components {
    fn find(&mut self, mut i: usize) -> usize {
        loop {
            let p = self.0.get(i).copied().unwrap_or(i);
            if p == i {
                return i;
            }
            let grand = self.0.get(p).copied().unwrap_or(p);
            if let Some(slot) = self.0.get_mut(i) {
                *slot = grand;
            }
            i = grand;
        }
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        if let Some(slot) = self.0.get_mut(hi) {
            *slot = lo;
        }
    }
}

/// The identity keys of a Node assertion.
fn node_identities(a: &Assertion) -> Vec<(u8, String)> {
    match a {
        Assertion::Node {
            key, name, aliases, ..
        } => {
            let rank = key.node_type.rank();
            let mut out: Vec<(u8, String)> = std::iter::once(&key.name)
                .chain(std::iter::once(name))
                .chain(aliases)
                .map(|n| identity_key(n))
                .filter(|k| !k.is_empty())
                .map(|k| (rank, k))
                .collect();
            if out.is_empty() {
                // A name of punctuation only is its own identity.
                out.push((rank, key.name.clone()));
            }
            out.sort();
            out.dedup();
            out
        }
        Assertion::Edge { .. } => Vec::new(),
    }
}

impl GraphState {
    /// Folds assertions `(id, record)` — given in any order — into the
    /// graph. `event_active(id)` says whether a source event is active (not
    /// forgotten); assertions all of whose source events are inactive are
    /// ignored, and inactive sources are left out everywhere. See the module
    /// docs for the rules.
    pub fn fold(
        assertions: &[(RecordId, GraphAssertion)],
        event_active: &dyn Fn(&RecordId) -> bool,
    ) -> Self {
        let mut items = collect_items(assertions, event_active);
        items.sort_by_key(|i| (i.order, i.id));

        // Identity: union the Node assertions sharing an identity key.
        let mut comps = Components((0..items.len()).collect());
        let mut by_identity: BTreeMap<(u8, String), usize> = BTreeMap::new();
        for (pos, item) in items.iter().enumerate() {
            for ident in node_identities(item.assertion) {
                match by_identity.get(&ident) {
                    Some(&other) => comps.union(pos, other),
                    None => {
                        by_identity.insert(ident, pos);
                    }
                }
            }
        }
        let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (pos, item) in items.iter().enumerate() {
            if matches!(item.assertion, Assertion::Node { .. }) {
                members.entry(comps.find(pos)).or_default().push(pos);
            }
        }

        let mut nodes = Vec::with_capacity(members.len());
        let mut canonical: BTreeMap<usize, NodeKey> = BTreeMap::new();
        for (root, positions) in &members {
            if let Some(node) = fold_node(&items, positions) {
                canonical.insert(*root, node.key.clone());
                nodes.push(node);
            }
        }

        let resolve = |k: &NodeKey, comps: &mut Components| -> Option<usize> {
            let ident = identity_key(&k.name);
            let ident = if ident.is_empty() {
                k.name.clone()
            } else {
                ident
            };
            let pos = *by_identity.get(&(k.node_type.rank(), ident))?;
            let root = comps.find(pos);
            canonical.contains_key(&root).then_some(root)
        };
        type EdgeEntries = Vec<Entry<usize, usize>>;
        let mut functional: BTreeMap<(usize, String), EdgeEntries> = BTreeMap::new();
        let mut accumulating: BTreeMap<(usize, usize, String), Vec<Entry<(), usize>>> =
            BTreeMap::new();
        for (pos, item) in items.iter().enumerate() {
            let Assertion::Edge {
                from,
                to,
                relation,
                functional: is_functional,
                valid_from,
                valid_to,
            } = item.assertion
            else {
                continue;
            };
            let (Some(f), Some(t)) = (resolve(from, &mut comps), resolve(to, &mut comps)) else {
                continue;
            };
            if f == t || relation.is_empty() {
                continue;
            }
            if *is_functional {
                functional
                    .entry((f, relation.clone()))
                    .or_default()
                    .push(Entry {
                        cmp: t,
                        payload: t,
                        valid_from: *valid_from,
                        valid_to: *valid_to,
                        sources: item.sources.clone(),
                        assertion: item.id,
                        pos: (pos, 0),
                    });
            } else {
                accumulating
                    .entry((f, t, relation.clone()))
                    .or_default()
                    .push(Entry {
                        cmp: (),
                        payload: t,
                        valid_from: *valid_from,
                        valid_to: *valid_to,
                        sources: item.sources.clone(),
                        assertion: item.id,
                        pos: (pos, 0),
                    });
            }
        }

        let mut edges = Vec::new();
        let edge = |from: usize, to: usize, relation: &str, functional: bool, s: Segment<usize>| {
            let (from, to) = (canonical.get(&from)?, canonical.get(&to)?);
            Some(EdgeState {
                from: from.clone(),
                to: to.clone(),
                relation: relation.to_owned(),
                functional,
                valid_from: s.valid_from,
                valid_to: s.valid_to,
                current: s.current,
                source_events: s.sources.into_iter().collect(),
                assertion: s.assertion,
            })
        };
        for ((from, relation), entries) in functional {
            for seg in supersede(entries) {
                edges.extend(edge(from, seg.payload, &relation, true, seg));
            }
        }
        for ((from, to, relation), entries) in accumulating {
            if let Some(seg) = accumulate(entries) {
                edges.extend(edge(from, to, &relation, false, seg));
            }
        }

        nodes.sort_by(|a, b| key_order(&a.key).cmp(&key_order(&b.key)));
        edges.sort_by(|a, b| {
            (
                key_order(&a.from),
                key_order(&a.to),
                &a.relation,
                a.valid_from,
                a.assertion,
            )
                .cmp(&(
                    key_order(&b.from),
                    key_order(&b.to),
                    &b.relation,
                    b.valid_from,
                    b.assertion,
                ))
        });
        Self { nodes, edges }
    }

    /// The nodes, sorted by (type, key name).
    pub fn nodes(&self) -> &[NodeState] {
        &self.nodes
    }

    /// The edges, sorted by (from, to, relation, valid-from, assertion).
    pub fn edges(&self) -> &[EdgeState] {
        &self.edges
    }

    /// The node of `key`: same type, and a key, name or alias with the same
    /// [`identity_key`] as `key.name`.
    pub fn node(&self, key: &NodeKey) -> Option<&NodeState> {
        let wanted = key_order(key);
        if let Ok(i) = self
            .nodes
            .binary_search_by(|n| key_order(&n.key).cmp(&wanted))
        {
            return self.nodes.get(i);
        }
        let ident = identity_key(&key.name);
        self.nodes.iter().find(|n| {
            n.node_type == key.node_type
                && std::iter::once(&n.key.name)
                    .chain(std::iter::once(&n.name))
                    .chain(&n.aliases)
                    .any(|name| identity_key(name) == ident)
        })
    }

    /// The edges leaving the node of `key` (see [`GraphState::node`]).
    pub fn edges_from(&self, key: &NodeKey) -> Vec<&EdgeState> {
        match self.node(key) {
            Some(n) => self.edges.iter().filter(|e| e.from == n.key).collect(),
            None => Vec::new(),
        }
    }

    /// The graph as it was at instant `t`: every node, with only the facts
    /// and edges valid at `t` (`valid_from ≤ t ≤ valid_to`, an unknown bound
    /// being open; inclusive, so at the instant of a change both the old and
    /// the new value show). `current` keeps its meaning ("in force now").
    pub fn at(&self, t: Timestamp) -> GraphState {
        self.filtered(|from, to, _| valid_at(from, to, t))
    }

    /// The graph with only its current facts and edges.
    pub fn current(&self) -> GraphState {
        self.filtered(|_, _, current| current)
    }

    fn filtered(&self, keep: impl Fn(Option<Timestamp>, Option<Timestamp>, bool) -> bool) -> Self {
        let nodes = self
            .nodes
            .iter()
            .map(|n| NodeState {
                facts: n
                    .facts
                    .iter()
                    .filter(|f| keep(f.valid_from, f.valid_to, f.current))
                    .cloned()
                    .collect(),
                ..n.clone()
            })
            .collect();
        let edges = self
            .edges
            .iter()
            .filter(|e| keep(e.valid_from, e.valid_to, e.current))
            .cloned()
            .collect();
        Self { nodes, edges }
    }

    /// Blake3 (key-derivation mode, context `strataflow graph state v1`)
    /// over the canonical JSON serialization of the sorted state, as 64 hex
    /// digits. Equal states have equal digests, whatever order their
    /// assertions were folded in.
    pub fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow graph state v1");
        if serde_json::to_writer(&mut h, self).is_err() {
            // Not reachable: the state holds no maps and no floats.
            h.update(b"\xffunserializable");
        }
        h.finalize().to_hex().to_string()
    }
}

/// The assertions with at least one active source, deduplicated by id.
fn collect_items<'a>(
    assertions: &'a [(RecordId, GraphAssertion)],
    event_active: &dyn Fn(&RecordId) -> bool,
) -> Vec<Item<'a>> {
    let mut seen = BTreeSet::new();
    let mut items = Vec::new();
    for (id, a) in assertions {
        if !seen.insert(*id) {
            continue;
        }
        let sources: BTreeSet<RecordId> = a
            .source_events
            .iter()
            .copied()
            .filter(|e| event_active(e))
            .collect();
        if sources.is_empty() {
            continue;
        }
        let order = match &a.assertion {
            Assertion::Node { facts, .. } => facts.iter().filter_map(|f| f.valid_from).min(),
            Assertion::Edge { valid_from, .. } => *valid_from,
        };
        items.push(Item {
            id: *id,
            order,
            sources,
            assertion: &a.assertion,
        });
    }
    items
}

/// One node from the positions (in fold order) of its Node assertions.
fn fold_node(items: &[Item<'_>], positions: &[usize]) -> Option<NodeState> {
    let members: Vec<(usize, &Item<'_>)> = positions
        .iter()
        .filter_map(|&p| items.get(p).map(|i| (p, i)))
        .collect();
    let (_, first) = members.first()?;
    let Assertion::Node { key, name, .. } = first.assertion else {
        return None;
    };
    let own = [identity_key(&key.name), identity_key(name)];
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    let mut tags = BTreeSet::new();
    let mut sources = BTreeSet::new();
    let mut ids = BTreeSet::new();
    let mut state = StateGroups::new();
    let mut sets = SetGroups::new();
    for (pos, item) in &members {
        let Assertion::Node {
            name: n,
            aliases: a,
            tags: t,
            facts,
            ..
        } = item.assertion
        else {
            continue;
        };
        for alias in std::iter::once(n).chain(a) {
            let ident = identity_key(alias);
            if ident.is_empty() || own.contains(&ident) {
                continue;
            }
            let spelling = aliases.entry(ident).or_insert_with(|| alias.clone());
            if alias < spelling {
                spelling.clone_from(alias);
            }
        }
        tags.extend(t.iter().cloned());
        sources.extend(item.sources.iter().copied());
        ids.insert(item.id);
        for (sub, fact) in facts.iter().enumerate() {
            add_fact(&mut state, &mut sets, item, (*pos, sub), fact);
        }
    }
    let mut facts: Vec<FactState> = Vec::new();
    for ((key, _), entries) in state {
        for seg in supersede(entries) {
            let (mode, values) = seg.payload;
            facts.push(FactState {
                key: key.clone(),
                values,
                mode,
                valid_from: seg.valid_from,
                valid_to: seg.valid_to,
                current: seg.current,
                source_events: seg.sources.into_iter().collect(),
                assertion: seg.assertion,
            });
        }
    }
    for ((key, _), entries) in sets {
        if let Some(seg) = accumulate(entries) {
            facts.push(FactState {
                key,
                values: vec![seg.payload],
                mode: FactMode::Set,
                valid_from: seg.valid_from,
                valid_to: seg.valid_to,
                current: seg.current,
                source_events: seg.sources.into_iter().collect(),
                assertion: seg.assertion,
            });
        }
    }
    facts.sort_by(|a, b| {
        (&a.key, a.mode.rank(), a.valid_from, &a.values, a.assertion).cmp(&(
            &b.key,
            b.mode.rank(),
            b.valid_from,
            &b.values,
            b.assertion,
        ))
    });
    let mut aliases: Vec<String> = aliases.into_values().collect();
    aliases.sort();
    aliases.truncate(MAX_ALIASES);
    Some(NodeState {
        key: key.clone(),
        name: name.clone(),
        node_type: key.node_type,
        aliases,
        tags: tags.into_iter().take(MAX_TAGS).collect(),
        facts,
        source_events: sources.into_iter().collect(),
        assertions: ids.into_iter().collect(),
    })
}

type StateGroups = BTreeMap<(String, u8), Vec<Entry<Vec<String>, (FactMode, Vec<String>)>>>;
type SetGroups = BTreeMap<(String, String), Vec<Entry<(), String>>>;

/// Files one fact of a Node assertion under its (key, mode) group, or for a
/// Set fact under each (key, value).
fn add_fact(
    state: &mut StateGroups,
    sets: &mut SetGroups,
    item: &Item<'_>,
    pos: (usize, usize),
    fact: &Fact,
) {
    if fact.key.is_empty() {
        return;
    }
    match fact.mode {
        FactMode::Set => {
            for value in &fact.values {
                let norm = value_key(value);
                if norm.is_empty() {
                    continue;
                }
                sets.entry((fact.key.clone(), norm))
                    .or_default()
                    .push(Entry {
                        cmp: (),
                        payload: value.clone(),
                        valid_from: fact.valid_from,
                        valid_to: fact.valid_to,
                        sources: item.sources.clone(),
                        assertion: item.id,
                        pos,
                    });
            }
        }
        FactMode::State | FactMode::Relation => {
            if fact.values.iter().all(|v| value_key(v).is_empty()) {
                return;
            }
            state
                .entry((fact.key.clone(), fact.mode.rank()))
                .or_default()
                .push(Entry {
                    cmp: fact.values.iter().map(|v| value_key(v)).collect(),
                    payload: (fact.mode, fact.values.clone()),
                    valid_from: fact.valid_from,
                    valid_to: fact.valid_to,
                    sources: item.sources.clone(),
                    assertion: item.id,
                    pos,
                });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use strataflow_record::SourceTime;

    fn rid(n: u8) -> RecordId {
        RecordId([n; 32])
    }

    fn ts(day: &str) -> Timestamp {
        SourceTime::parse_rfc3339(&format!("{day}T00:00:00Z"))
            .unwrap()
            .instant()
    }

    fn key(t: NodeType, name: &str) -> NodeKey {
        NodeKey {
            node_type: t,
            name: name.to_owned(),
        }
    }

    fn fact(k: &str, v: &str, mode: FactMode, from: &str) -> Fact {
        Fact {
            key: k.to_owned(),
            values: vec![v.to_owned()],
            mode,
            valid_from: Some(ts(from)),
            valid_to: None,
        }
    }

    fn node(
        sources: &[u8],
        t: NodeType,
        name: &str,
        aliases: &[&str],
        tags: &[&str],
        facts: Vec<Fact>,
    ) -> GraphAssertion {
        GraphAssertion {
            tenant: "t".to_owned(),
            source_events: sources.iter().map(|n| rid(*n)).collect(),
            assertion: Assertion::Node {
                key: key(t, &name.to_lowercase()),
                name: name.to_owned(),
                aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
                tags: tags.iter().map(|a| (*a).to_owned()).collect(),
                facts,
            },
            confidence_milli: 700,
        }
    }

    fn edge(
        sources: &[u8],
        from: NodeKey,
        to: NodeKey,
        relation: &str,
        functional: bool,
        from_day: &str,
    ) -> GraphAssertion {
        GraphAssertion {
            tenant: "t".to_owned(),
            source_events: sources.iter().map(|n| rid(*n)).collect(),
            assertion: Assertion::Edge {
                from,
                to,
                relation: relation.to_owned(),
                functional,
                valid_from: Some(ts(from_day)),
                valid_to: None,
            },
            confidence_milli: 700,
        }
    }

    fn all_active(_: &RecordId) -> bool {
        true
    }

    fn fold(list: &[(RecordId, GraphAssertion)]) -> GraphState {
        GraphState::fold(list, &all_active)
    }

    fn values(n: &NodeState) -> Vec<Vec<String>> {
        n.facts.iter().map(|f| f.values.clone()).collect()
    }

    fn person(name: &str) -> NodeKey {
        key(NodeType::Person, name)
    }

    /// Spec §9.2: the database changes from SQLite to PostgreSQL.
    fn database_switch() -> Vec<(RecordId, GraphAssertion)> {
        let project = |src, db, day| {
            node(
                &[src],
                NodeType::Project,
                "strataflow",
                &[],
                &["project"],
                vec![fact("database", db, FactMode::State, day)],
            )
        };
        vec![
            (rid(102), project(2, "PostgreSQL", "2026-02-01")),
            (rid(101), project(1, "SQLite", "2026-01-01")),
        ]
    }

    #[test]
    fn state_facts_close_sqlite_to_postgresql() {
        let g = fold(&database_switch());
        let k = key(NodeType::Project, "strataflow");
        let n = g.node(&k).unwrap();
        assert_eq!(n.facts.len(), 2);
        let (old, new) = (&n.facts[0], &n.facts[1]);
        assert_eq!(old.values, vec!["SQLite".to_owned()]);
        assert!(!old.current);
        assert_eq!(old.valid_from, Some(ts("2026-01-01")));
        assert_eq!(old.valid_to, Some(ts("2026-02-01")));
        assert_eq!(old.source_events, vec![rid(1)]);
        assert_eq!(old.assertion, rid(101));
        assert_eq!(new.values, vec!["PostgreSQL".to_owned()]);
        assert!(new.current);
        assert_eq!(new.valid_to, None);
        assert_eq!(n.assertions, vec![rid(101), rid(102)]);
        assert_eq!(n.source_events, vec![rid(1), rid(2)]);

        let jan = g.at(ts("2026-01-15"));
        assert_eq!(
            values(jan.node(&k).unwrap()),
            vec![vec!["SQLite".to_owned()]]
        );
        let feb = g.at(ts("2026-02-15"));
        assert_eq!(
            values(feb.node(&k).unwrap()),
            vec![vec!["PostgreSQL".to_owned()]]
        );
        // Inclusive bounds: at the switch both show; before any, none.
        assert_eq!(g.at(ts("2026-02-01")).node(&k).unwrap().facts.len(), 2);
        assert!(g.at(ts("2025-12-01")).node(&k).unwrap().facts.is_empty());
        assert_eq!(
            values(g.current().node(&k).unwrap()),
            vec![vec!["PostgreSQL".to_owned()]]
        );
    }

    #[test]
    fn repeated_state_value_merges_sources() {
        let mut list = database_switch();
        list.push((
            rid(103),
            node(
                &[3],
                NodeType::Project,
                "Strataflow",
                &[],
                &[],
                vec![fact("database", "sqlite", FactMode::State, "2026-01-10")],
            ),
        ));
        let g = fold(&list);
        let n = g.node(&key(NodeType::Project, "strataflow")).unwrap();
        assert_eq!(n.facts.len(), 2);
        assert_eq!(n.facts[0].values, vec!["SQLite".to_owned()]);
        assert_eq!(n.facts[0].source_events, vec![rid(1), rid(3)]);
        assert_eq!(n.facts[0].valid_from, Some(ts("2026-01-01")));
        assert_eq!(n.facts[0].valid_to, Some(ts("2026-02-01")));
        // Back to SQLite later: a new current fact, PostgreSQL closed.
        list.push((
            rid(104),
            node(
                &[4],
                NodeType::Project,
                "strataflow",
                &[],
                &[],
                vec![fact("database", "SQLite", FactMode::State, "2026-03-01")],
            ),
        ));
        let g = fold(&list);
        let n = g.node(&key(NodeType::Project, "strataflow")).unwrap();
        let current: Vec<bool> = n.facts.iter().map(|f| f.current).collect();
        assert_eq!(current, vec![false, false, true]);
        assert_eq!(n.facts[1].valid_to, Some(ts("2026-03-01")));
    }

    #[test]
    fn set_facts_accumulate() {
        let list = vec![
            (
                rid(11),
                node(
                    &[1],
                    NodeType::Person,
                    "Ana",
                    &[],
                    &["speaker"],
                    vec![fact("likes", "pottery", FactMode::Set, "2026-01-01")],
                ),
            ),
            (
                rid(12),
                node(
                    &[2],
                    NodeType::Person,
                    "Ana",
                    &[],
                    &[],
                    vec![Fact {
                        key: "likes".to_owned(),
                        values: vec!["Pottery".to_owned(), "painting".to_owned()],
                        mode: FactMode::Set,
                        valid_from: Some(ts("2026-02-01")),
                        valid_to: None,
                    }],
                ),
            ),
        ];
        let g = fold(&list);
        let n = g.node(&person("ana")).unwrap();
        assert_eq!(
            values(n),
            vec![vec!["pottery".to_owned()], vec!["painting".to_owned()]]
        );
        assert!(n.facts.iter().all(|f| f.current));
        assert_eq!(n.facts[0].source_events, vec![rid(1), rid(2)]);
        assert_eq!(n.facts[0].valid_from, Some(ts("2026-01-01")));
        assert_eq!(n.facts[1].source_events, vec![rid(2)]);
    }

    fn employment() -> Vec<(RecordId, GraphAssertion)> {
        let org = |src, name: &str| {
            node(
                &[src],
                NodeType::Organization,
                name,
                &[],
                &["employer"],
                vec![],
            )
        };
        let place = |src, name: &str| node(&[src], NodeType::Place, name, &[], &["place"], vec![]);
        let ana = |src| node(&[src], NodeType::Person, "Ana", &[], &["speaker"], vec![]);
        let org_key = |n: &str| key(NodeType::Organization, n);
        let place_key = |n: &str| key(NodeType::Place, n);
        vec![
            (rid(21), ana(1)),
            (rid(22), org(1, "Acme")),
            (rid(23), org(2, "Globex")),
            (rid(24), place(1, "Paris")),
            (rid(25), place(2, "Rome")),
            (
                rid(31),
                edge(
                    &[1],
                    person("ana"),
                    org_key("acme"),
                    "works_at",
                    true,
                    "2025-01-01",
                ),
            ),
            (
                rid(32),
                edge(
                    &[2],
                    person("ana"),
                    org_key("globex"),
                    "works_at",
                    true,
                    "2025-06-01",
                ),
            ),
            (
                rid(33),
                edge(
                    &[1],
                    person("ana"),
                    place_key("paris"),
                    "visited",
                    false,
                    "2025-01-01",
                ),
            ),
            (
                rid(34),
                edge(
                    &[2],
                    person("ana"),
                    place_key("rome"),
                    "visited",
                    false,
                    "2025-06-01",
                ),
            ),
            (
                rid(35),
                edge(
                    &[3],
                    person("ana"),
                    place_key("paris"),
                    "visited",
                    false,
                    "2025-09-01",
                ),
            ),
            (rid(26), ana(3)),
        ]
    }

    #[test]
    fn functional_edges_close_others_accumulate() {
        let g = fold(&employment());
        let works: Vec<&EdgeState> = g
            .edges()
            .iter()
            .filter(|e| e.relation == "works_at")
            .collect();
        assert_eq!(works.len(), 2);
        assert_eq!(works[0].to.name, "acme");
        assert!(!works[0].current);
        assert_eq!(works[0].valid_to, Some(ts("2025-06-01")));
        assert_eq!(works[1].to.name, "globex");
        assert!(works[1].current);
        assert_eq!(works[1].valid_to, None);

        let visited: Vec<&EdgeState> = g
            .edges()
            .iter()
            .filter(|e| e.relation == "visited")
            .collect();
        assert_eq!(visited.len(), 2);
        assert!(visited.iter().all(|e| e.current && e.valid_to.is_none()));
        assert_eq!(visited[0].to.name, "paris");
        assert_eq!(visited[0].source_events, vec![rid(1), rid(3)]);
        assert_eq!(visited[0].valid_from, Some(ts("2025-01-01")));
        assert_eq!(visited[0].assertion, rid(33));

        let at = g.at(ts("2025-03-01"));
        let employers: Vec<&str> = at
            .edges()
            .iter()
            .filter(|e| e.relation == "works_at")
            .map(|e| e.to.name.as_str())
            .collect();
        assert_eq!(employers, vec!["acme"]);
        assert_eq!(
            at.edges()
                .iter()
                .filter(|e| e.relation == "visited")
                .count(),
            1
        );
        assert_eq!(g.edges_from(&person("Ana")).len(), 4);
    }

    #[test]
    fn aliases_merge_nodes_and_resolve_edges() {
        let list = vec![
            (
                rid(41),
                node(
                    &[1],
                    NodeType::Person,
                    "Robert",
                    &["Bob"],
                    &["friend"],
                    vec![],
                ),
            ),
            (
                rid(42),
                node(
                    &[2],
                    NodeType::Person,
                    "bob",
                    &["Bobby-Smith"],
                    &["colleague"],
                    vec![],
                ),
            ),
            (
                rid(43),
                node(&[3], NodeType::Person, "Bobby Smith", &[], &[], vec![]),
            ),
            // Same name, other type: another node.
            (
                rid(44),
                node(&[3], NodeType::Place, "Bob", &[], &[], vec![]),
            ),
            (
                rid(45),
                node(&[4], NodeType::Person, "Ana", &[], &[], vec![]),
            ),
            (
                rid(46),
                edge(
                    &[4],
                    person("ana"),
                    person("bobby_smith"),
                    "friend",
                    false,
                    "2025-01-01",
                ),
            ),
            // Both ends are the same merged node: dropped.
            (
                rid(47),
                edge(
                    &[4],
                    person("bob"),
                    person("robert"),
                    "knows",
                    false,
                    "2025-01-01",
                ),
            ),
            // An endpoint without a node: dropped.
            (
                rid(48),
                edge(
                    &[4],
                    person("ana"),
                    person("zoe"),
                    "friend",
                    false,
                    "2025-01-01",
                ),
            ),
        ];
        let g = fold(&list);
        let people: Vec<&str> = g
            .nodes()
            .iter()
            .filter(|n| n.node_type == NodeType::Person)
            .map(|n| n.key.name.as_str())
            .collect();
        assert_eq!(people.len(), 2);
        let bob = g.node(&person("BOB")).unwrap();
        assert_eq!(bob.assertions, vec![rid(41), rid(42), rid(43)]);
        assert_eq!(bob.source_events, vec![rid(1), rid(2), rid(3)]);
        assert_eq!(bob.tags, vec!["colleague".to_owned(), "friend".to_owned()]);
        let mut names = bob.aliases.clone();
        names.push(bob.name.clone());
        names.sort();
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(g.node(&person("robert")), Some(bob));
        assert_eq!(g.node(&person("bobby smith")), Some(bob));
        assert!(g.node(&key(NodeType::Place, "bob")).is_some());
        assert_eq!(g.edges().len(), 1);
        assert_eq!(g.edges()[0].to, bob.key);
        assert_eq!(g.edges()[0].from, person("ana"));
    }

    #[test]
    fn forgotten_sources_are_excluded() {
        let list = employment();
        let forgotten = rid(2);
        let g = GraphState::fold(&list, &|id| *id != forgotten);
        assert!(g.node(&key(NodeType::Organization, "globex")).is_none());
        assert!(g.node(&key(NodeType::Place, "rome")).is_none());
        let works: Vec<&EdgeState> = g
            .edges()
            .iter()
            .filter(|e| e.relation == "works_at")
            .collect();
        assert_eq!(works.len(), 1);
        assert!(works[0].current);
        // A partly forgotten assertion stays, without the forgotten source.
        let mut list = list;
        list.push((
            rid(36),
            edge(
                &[2, 3],
                person("ana"),
                key(NodeType::Place, "paris"),
                "lives_in",
                true,
                "2025-02-01",
            ),
        ));
        let g = GraphState::fold(&list, &|id| *id != forgotten);
        let lives: Vec<&EdgeState> = g
            .edges()
            .iter()
            .filter(|e| e.relation == "lives_in")
            .collect();
        assert_eq!(lives.len(), 1);
        assert_eq!(lives[0].source_events, vec![rid(3)]);
        let ana = g.node(&person("ana")).unwrap();
        assert_eq!(ana.source_events, vec![rid(1), rid(3)]);
    }

    /// A small deterministic shuffle (xorshift), enough to try many orders.
    fn shuffle<T>(items: &mut [T], seed: &mut u64) {
        for i in (1..items.len()).rev() {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            let j = (*seed % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }

    #[test]
    fn order_independent_with_equal_digests() {
        let mut list = employment();
        list.extend(database_switch());
        list.push((
            rid(51),
            node(
                &[5],
                NodeType::Person,
                "ana",
                &["Ana Lima"],
                &["painter"],
                vec![
                    fact("likes", "pottery", FactMode::Set, "2025-03-01"),
                    fact("occupation", "banker", FactMode::State, "2025-01-01"),
                ],
            ),
        ));
        list.push((
            rid(52),
            node(
                &[6],
                NodeType::Person,
                "Ana Lima",
                &[],
                &[],
                vec![fact("occupation", "potter", FactMode::State, "2025-04-01")],
            ),
        ));
        // The same assertion twice is folded once.
        list.push(list[0].clone());
        let reference = fold(&list);
        let digest = reference.digest();
        assert_eq!(digest.len(), 64);
        assert!(digest.chars().all(|c| c.is_ascii_hexdigit()));
        let mut reversed = list.clone();
        reversed.reverse();
        assert_eq!(fold(&reversed), reference);
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..200 {
            shuffle(&mut list, &mut seed);
            let g = fold(&list);
            assert_eq!(g, reference);
            assert_eq!(g.digest(), digest);
        }
        // A different graph has a different digest.
        let fewer = &list[1..];
        assert_ne!(fold(fewer).digest(), digest);
        let ana = reference.node(&person("ana")).unwrap();
        let occupations: Vec<(&str, bool)> = ana
            .facts
            .iter()
            .filter(|f| f.key == "occupation")
            .map(|f| (f.values[0].as_str(), f.current))
            .collect();
        assert_eq!(occupations, vec![("banker", false), ("potter", true)]);
    }

    #[test]
    fn empty_input_gives_empty_graph() {
        let g = fold(&[]);
        assert!(g.nodes().is_empty() && g.edges().is_empty());
        assert_eq!(g.digest(), fold(&[]).digest());
    }
}
