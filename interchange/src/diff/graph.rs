//! The graph difference of two profiles: facts and edges of two folded
//! [`GraphState`]s matched by their slot (node and fact key; from,
//! relation and to) and value.
//!
//! 1. Items with the same slot and values (an edge has no values) are
//!    paired in validity order. A pair whose `current` differs is
//!    **closed** (in force on one side, closed or ended on the other); a
//!    pair with another validity (or mode, or functional flag) is
//!    **different**; the rest are the same.
//! 2. Leftovers with the same slot are paired in order as **different**
//!    (the same node and key hold other values).
//! 3. What is left is **removed** (only in A) or **added** (only in B).

use std::collections::{BTreeMap, BTreeSet};

use strataflow_log::record::NodeKey;
use strataflow_log::{RecordId, Timestamp};
use strataflow_materializers::graph_state::GraphState;

/// A fact or an edge as the graph diff shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GraphItem {
    /// `fact` or `edge`.
    pub kind: &'static str,
    /// The fact's node, or the edge's source (`type:name`).
    pub node: String,
    /// The fact key, or the edge relation.
    pub key: String,
    /// The edge's target (`type:name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The fact's values (empty for an edge).
    pub values: Vec<String>,
    /// Fact mode (`state`, `set`, `relation`) or `functional` / `edge`.
    pub mode: String,
    /// Valid from (RFC 3339), if known.
    pub valid_from: Option<String>,
    /// Valid until (RFC 3339), if ended.
    pub valid_to: Option<String>,
    /// In force now.
    pub current: bool,
    /// External ids of the messages its source events cite.
    pub source_messages: Vec<String>,
}

/// A fact or edge present on both sides, but not identically.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GraphChange {
    /// A's item.
    pub a: GraphItem,
    /// B's item.
    pub b: GraphItem,
}

/// The graph difference of two profiles.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GraphDiff {
    /// Facts and edges identical on both sides.
    pub same: usize,
    /// Nodes only A has (`type:name`).
    pub nodes_only_a: Vec<String>,
    /// Nodes only B has.
    pub nodes_only_b: Vec<String>,
    /// Facts and edges only B has.
    pub added: Vec<GraphItem>,
    /// Facts and edges only A has.
    pub removed: Vec<GraphItem>,
    /// In force on one side, closed (or ended) on the other.
    pub closed: Vec<GraphChange>,
    /// Same slot, other values or validity.
    pub different: Vec<GraphChange>,
}

/// `type:name` of a node key.
pub fn node_label(key: &NodeKey) -> String {
    format!("{}:{}", key.node_type.name(), key.name)
}

fn time(t: Option<Timestamp>) -> Option<String> {
    t.map(|t| t.to_rfc3339())
}

/// The serde name of a value (`state`, …).
fn name_of<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The facts and edges of a graph, in its order.
fn items(g: &GraphState, sources: &dyn Fn(&[RecordId]) -> Vec<String>) -> Vec<GraphItem> {
    let mut out = Vec::new();
    for n in g.nodes() {
        let node = node_label(&n.key);
        for f in &n.facts {
            out.push(GraphItem {
                kind: "fact",
                node: node.clone(),
                key: f.key.clone(),
                target: None,
                values: f.values.clone(),
                mode: name_of(&f.mode),
                valid_from: time(f.valid_from),
                valid_to: time(f.valid_to),
                current: f.current,
                source_messages: sources(&f.source_events),
            });
        }
    }
    for e in g.edges() {
        out.push(GraphItem {
            kind: "edge",
            node: node_label(&e.from),
            key: e.relation.clone(),
            target: Some(node_label(&e.to)),
            values: Vec::new(),
            mode: if e.functional { "functional" } else { "edge" }.to_owned(),
            valid_from: time(e.valid_from),
            valid_to: time(e.valid_to),
            current: e.current,
            source_messages: sources(&e.source_events),
        });
    }
    out
}

type Slot = (&'static str, String, String, Option<String>);

fn slot(i: &GraphItem) -> Slot {
    (i.kind, i.node.clone(), i.key.clone(), i.target.clone())
}

/// Pairs items of A and B with equal `key`, in order; returns the pairs
/// and the unpaired items of each side.
fn pair<K: Ord>(
    a: Vec<GraphItem>,
    b: Vec<GraphItem>,
    key: impl Fn(&GraphItem) -> K,
) -> (Vec<(GraphItem, GraphItem)>, Vec<GraphItem>, Vec<GraphItem>) {
    let mut b_by: BTreeMap<K, std::collections::VecDeque<GraphItem>> = BTreeMap::new();
    let mut b_order: Vec<K> = Vec::new();
    for item in b {
        b_order.push(key(&item));
        b_by.entry(key(&item)).or_default().push_back(item);
    }
    let mut pairs = Vec::new();
    let mut rest_a = Vec::new();
    for item in a {
        match b_by.get_mut(&key(&item)).and_then(|q| q.pop_front()) {
            Some(other) => pairs.push((item, other)),
            None => rest_a.push(item),
        }
    }
    // B's leftovers in their original order.
    let mut rest_b = Vec::new();
    for k in b_order {
        if let Some(item) = b_by.get_mut(&k).and_then(|q| q.pop_front()) {
            rest_b.push(item);
        }
    }
    (pairs, rest_a, rest_b)
}

/// Compares two profiles' graphs. `sources` maps source events to the
/// external ids of the messages they cite.
pub fn diff_graphs(
    a: &GraphState,
    b: &GraphState,
    sources: &dyn Fn(&[RecordId]) -> Vec<String>,
) -> GraphDiff {
    let labels = |g: &GraphState| -> BTreeSet<String> {
        g.nodes().iter().map(|n| node_label(&n.key)).collect()
    };
    let (nodes_a, nodes_b) = (labels(a), labels(b));
    let mut out = GraphDiff {
        nodes_only_a: nodes_a.difference(&nodes_b).cloned().collect(),
        nodes_only_b: nodes_b.difference(&nodes_a).cloned().collect(),
        ..GraphDiff::default()
    };
    let (pairs, rest_a, rest_b) = pair(items(a, sources), items(b, sources), |i| {
        (slot(i), i.values.clone())
    });
    for (x, y) in pairs {
        if x.current != y.current {
            out.closed.push(GraphChange { a: x, b: y });
        } else if (&x.valid_from, &x.valid_to, &x.mode) != (&y.valid_from, &y.valid_to, &y.mode) {
            out.different.push(GraphChange { a: x, b: y });
        } else {
            out.same += 1;
        }
    }
    let (pairs, removed, added) = pair(rest_a, rest_b, slot);
    out.different
        .extend(pairs.into_iter().map(|(a, b)| GraphChange { a, b }));
    out.removed = removed;
    out.added = added;
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use strataflow_log::record::{Assertion, Fact, FactMode, GraphAssertion, NodeType};

    fn node(name: &str, key: &str, value: &str, from: i64) -> Assertion {
        Assertion::Node {
            key: NodeKey {
                node_type: NodeType::Person,
                name: name.into(),
            },
            name: name.into(),
            aliases: Vec::new(),
            tags: Vec::new(),
            facts: vec![Fact {
                key: key.into(),
                values: vec![value.into()],
                mode: FactMode::State,
                valid_from: Some(Timestamp(from)),
                valid_to: None,
            }],
        }
    }

    fn graph(assertions: &[Assertion]) -> GraphState {
        let records: Vec<(RecordId, GraphAssertion)> = assertions
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let ev = RecordId([u8::try_from(i).unwrap(); 32]);
                (
                    RecordId([u8::try_from(i + 100).unwrap(); 32]),
                    GraphAssertion {
                        tenant: String::new(),
                        source_events: vec![ev],
                        assertion: a.clone(),
                        confidence_milli: 900,
                    },
                )
            })
            .collect();
        GraphState::fold(&records, &|_| true)
    }

    #[test]
    fn facts_are_added_removed_closed_and_different() {
        let a = graph(&[
            node("Ann", "employer", "Acme", 1),
            node("Bob", "city", "Paris", 1),
            node("Cy", "pet", "cat", 1),
        ]);
        let b = graph(&[
            node("Ann", "employer", "Acme", 1),
            node("Ann", "employer", "Initech", 5),
            node("Bob", "city", "Rome", 1),
            node("Dee", "pet", "dog", 1),
        ]);
        let d = diff_graphs(&a, &b, &|ids| ids.iter().map(|i| i.to_hex()).collect());
        assert_eq!(d.same, 0);
        assert_eq!(d.closed.len(), 1, "{d:#?}");
        assert_eq!(d.closed[0].a.values, vec!["Acme"]);
        assert!(d.closed[0].a.current && !d.closed[0].b.current);
        assert_eq!(d.different.len(), 1);
        assert_eq!(d.different[0].a.values, vec!["Paris"]);
        assert_eq!(d.different[0].b.values, vec!["Rome"]);
        let added: Vec<_> = d.added.iter().map(|i| i.values[0].as_str()).collect();
        assert_eq!(added, vec!["Initech", "dog"]);
        assert_eq!(d.removed.len(), 1);
        assert_eq!(d.removed[0].node, "person:Cy");
        assert_eq!(d.nodes_only_a, vec!["person:Cy"]);
        assert_eq!(d.nodes_only_b, vec!["person:Dee"]);
        assert!(!d.removed[0].source_messages.is_empty());
        let same = diff_graphs(&a, &a, &|_| Vec::new());
        assert_eq!(same.same, 3);
        assert!(same.added.is_empty() && same.removed.is_empty());
    }
}
