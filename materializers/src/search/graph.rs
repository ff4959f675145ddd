//! Graph node search (spec §11.6, `searchGraphNodes`, V2 weights): pure
//! BM25 over the nodes of a [`GraphState`], no RRF.
//!
//! - **Candidates**: every node (node states carry no status here, so all
//!   count as active). Statistics are over all nodes.
//! - **Fields and weights** ([`GRAPH_FIELD_WEIGHTS`]): name 6, aliases 5,
//!   tags 5, type 2 (lowercase type name, e.g. `person`), currentState 4
//!   (current facts rendered `key: v1, v2`, one per line), facts 4 (every
//!   fact, current and historical, rendered `key v1 v2`, joined by spaces),
//!   relations 3 (the relation label of every incident edge, current or
//!   closed, in edge order, joined by spaces — a label shared by several
//!   edges counts once per edge).
//! - **Post-filter**: a node is kept only if some query token occurs in a
//!   field other than `relations` (relation-only hits are adjacency noise;
//!   type-only hits are allowed).
//! - `limit` is clamped to `1..=20` ([`DEFAULT_GRAPH_LIMIT`] is 8), applied
//!   after the post-filter. A query without tokens gives `[]`.
//! - Ties are broken by node order in the graph (type, then key name),
//!   standing in for the reference's id order.
//!
//! Each hit lists its `matched_fields`: the fields (in the order above)
//! containing some query token. Search never changes any state.

use std::collections::{BTreeSet, HashMap};

use strataflow_record::record::{NodeKey, NodeType};

use super::bm25::Bm25Index;
use super::tokenizer::{tokens, weighted_tokens};
use crate::graph_state::{GraphState, NodeState};
use crate::snapshot::{Decoder, Encoder, SnapshotError, SnapshotProblem};

/// Default number of results.
pub const DEFAULT_GRAPH_LIMIT: usize = 8;
/// Largest number of results.
pub const MAX_GRAPH_LIMIT: usize = 20;

/// BM25 field weights of graph nodes (spec §11.6, V2), in field order.
pub const GRAPH_FIELD_WEIGHTS: [(&str, u32); 7] = [
    ("name", 6),
    ("aliases", 5),
    ("tags", 5),
    ("type", 2),
    ("currentState", 4),
    ("facts", 4),
    ("relations", 3),
];

/// Name of the field whose hits alone never qualify a node.
const RELATIONS: &str = "relations";

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphHit {
    /// The node's key.
    pub key: NodeKey,
    /// BM25 score (ranking-only).
    pub score: f64,
    /// Fields with a query-token hit, among `name`, `aliases`, `tags`,
    /// `type`, `currentState`, `facts`, `relations`, in that order.
    pub matched_fields: Vec<&'static str>,
}

/// One indexed node: its key and the token set of each field.
#[derive(Clone, Debug)]
struct IndexedNode {
    key: NodeKey,
    fields: Vec<(&'static str, BTreeSet<String>)>,
}

/// A BM25 index over the nodes of one graph state. Build once, search many
/// times; rebuild when the graph changes.
#[derive(Clone, Debug, Default)]
pub struct GraphIndex {
    nodes: Vec<IndexedNode>,
    bm25: Bm25Index,
}

/// The field texts of a node, in [`GRAPH_FIELD_WEIGHTS`] order.
fn node_fields(node: &NodeState, relations: &[&str]) -> [String; 7] {
    let current_state: Vec<String> = node
        .facts
        .iter()
        .filter(|f| f.current)
        .map(|f| format!("{}: {}", f.key, f.values.join(", ")))
        .collect();
    let facts: Vec<String> = node
        .facts
        .iter()
        .map(|f| {
            std::iter::once(f.key.as_str())
                .chain(f.values.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    [
        node.name.clone(),
        node.aliases.join(" "),
        node.tags.join(" "),
        node.node_type.name().to_owned(),
        current_state.join("\n"),
        facts.join(" "),
        relations.join(" "),
    ]
}

impl GraphIndex {
    /// Indexes every node of `graph` (current and historical facts, all
    /// incident edges; see the module docs).
    pub fn build(graph: &GraphState) -> Self {
        let nodes = graph.nodes();
        // Lookup only (never iterated): node key → position.
        let position: HashMap<(NodeType, &str), usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| ((n.key.node_type, n.key.name.as_str()), i))
            .collect();
        let mut relations: Vec<Vec<&str>> = vec![Vec::new(); nodes.len()];
        for edge in graph.edges() {
            for end in [&edge.from, &edge.to] {
                if let Some(list) = position
                    .get(&(end.node_type, end.name.as_str()))
                    .and_then(|i| relations.get_mut(*i))
                {
                    list.push(edge.relation.as_str());
                }
            }
        }
        let mut index = Self::default();
        for (node, rels) in nodes.iter().zip(&relations) {
            let texts = node_fields(node, rels);
            let weighted: Vec<(&str, u32)> = texts
                .iter()
                .zip(GRAPH_FIELD_WEIGHTS)
                .map(|(t, (_, w))| (t.as_str(), w))
                .collect();
            index.bm25.add(&weighted_tokens(&weighted));
            let fields = texts
                .iter()
                .zip(GRAPH_FIELD_WEIGHTS)
                .map(|(t, (name, _))| (name, tokens(t).into_iter().collect()))
                .collect();
            index.nodes.push(IndexedNode {
                key: node.key.clone(),
                fields,
            });
        }
        index
    }

    /// Number of indexed nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is indexed.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Searches nodes (spec §11.6). See the module docs.
    pub fn search(&self, query: &str, limit: usize) -> Vec<GraphHit> {
        let limit = limit.clamp(1, MAX_GRAPH_LIMIT);
        let query_tokens = tokens(query);
        if query_tokens.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (doc, score) in self.bm25.search_all(&query_tokens) {
            let Some(node) = self.nodes.get(super::bm25::index(doc)) else {
                continue;
            };
            let matched_fields: Vec<&'static str> = node
                .fields
                .iter()
                .filter(|(_, set)| query_tokens.iter().any(|t| set.contains(t)))
                .map(|(name, _)| *name)
                .collect();
            if !matched_fields.iter().any(|f| *f != RELATIONS) {
                continue;
            }
            out.push(GraphHit {
                key: node.key.clone(),
                score,
                matched_fields,
            });
            if out.len() == limit {
                break;
            }
        }
        out
    }
}

/// Snapshot encoding ([`crate::snapshot`]).
impl GraphIndex {
    /// Writes the index: per node its type (rank), key name and the token
    /// set of each field in [`GRAPH_FIELD_WEIGHTS`] order, then the BM25
    /// index.
    pub fn encode(&self, e: &mut Encoder) {
        e.len(self.nodes.len());
        for node in &self.nodes {
            e.u8(node.key.node_type.rank());
            e.str(&node.key.name);
            for (_, set) in &node.fields {
                e.len(set.len());
                for token in set {
                    e.str(token);
                }
            }
        }
        self.bm25.encode(e);
    }

    /// Reads an index written by [`GraphIndex::encode`] (one BM25 doc per
    /// node).
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self, SnapshotError> {
        let count = d.count(1 + GRAPH_FIELD_WEIGHTS.len())?;
        let mut nodes = Vec::with_capacity(count);
        for _ in 0..count {
            let rank = d.u8()?;
            let node_type = NODE_TYPES
                .into_iter()
                .find(|t| t.rank() == rank)
                .ok_or_else(|| d.invalid(SnapshotProblem::NodeType { rank }))?;
            let name = d.string()?;
            let mut fields = Vec::with_capacity(GRAPH_FIELD_WEIGHTS.len());
            for (field, _) in GRAPH_FIELD_WEIGHTS {
                let n = d.count(1)?;
                let mut set = BTreeSet::new();
                for _ in 0..n {
                    set.insert(d.string()?);
                }
                fields.push((field, set));
            }
            nodes.push(IndexedNode {
                key: NodeKey { node_type, name },
                fields,
            });
        }
        let bm25 = Bm25Index::decode(d)?;
        if bm25.doc_count() != nodes.len() || bm25.len() != nodes.len() {
            return Err(d.invalid(SnapshotProblem::GraphDocs {
                nodes: nodes.len(),
                docs: bm25.doc_count(),
                live: bm25.len(),
            }));
        }
        Ok(Self { nodes, bm25 })
    }
}

/// Every node type.
const NODE_TYPES: [NodeType; 5] = [
    NodeType::Person,
    NodeType::Project,
    NodeType::Organization,
    NodeType::Tool,
    NodeType::Place,
];

/// Builds a [`GraphIndex`] over `graph` and searches it once.
pub fn search_graph(graph: &GraphState, query: &str, limit: usize) -> Vec<GraphHit> {
    GraphIndex::build(graph).search(query, limit)
}

#[cfg(test)]
mod tests {
    use strataflow_record::record::{Assertion, Fact, FactMode, GraphAssertion};
    use strataflow_record::{RecordId, Timestamp};

    use super::*;

    fn rid(n: u8) -> RecordId {
        RecordId([n; 32])
    }

    fn key(t: NodeType, name: &str) -> NodeKey {
        NodeKey {
            node_type: t,
            name: name.to_owned(),
        }
    }

    fn node(
        name: &str,
        t: NodeType,
        aliases: &[&str],
        tags: &[&str],
        facts: Vec<Fact>,
    ) -> GraphAssertion {
        GraphAssertion {
            tenant: "t".to_owned(),
            source_events: vec![rid(1)],
            assertion: Assertion::Node {
                key: key(t, &name.to_lowercase()),
                name: name.to_owned(),
                aliases: aliases.iter().map(|s| (*s).to_owned()).collect(),
                tags: tags.iter().map(|s| (*s).to_owned()).collect(),
                facts,
            },
            confidence_milli: 900,
        }
    }

    fn fact(k: &str, v: &str, from: i64) -> Fact {
        Fact {
            key: k.to_owned(),
            values: vec![v.to_owned()],
            mode: FactMode::State,
            valid_from: Some(Timestamp(from)),
            valid_to: None,
        }
    }

    fn edge(from: NodeKey, to: NodeKey, relation: &str) -> GraphAssertion {
        GraphAssertion {
            tenant: "t".to_owned(),
            source_events: vec![rid(1)],
            assertion: Assertion::Edge {
                from,
                to,
                relation: relation.to_owned(),
                functional: false,
                valid_from: Some(Timestamp(0)),
                valid_to: None,
            },
            confidence_milli: 900,
        }
    }

    fn graph() -> GraphState {
        let list = vec![
            (
                rid(10),
                node(
                    "StrataGate",
                    NodeType::Project,
                    &["Strata Gate"],
                    &["memory-plugin", "agent"],
                    vec![fact("status", "beta", 1), fact("status", "released", 2)],
                ),
            ),
            (
                rid(11),
                node(
                    "Ana",
                    NodeType::Person,
                    &[],
                    &["engineer"],
                    vec![fact("employer", "acme", 1)],
                ),
            ),
            (
                rid(12),
                node("Rust", NodeType::Tool, &["rustlang"], &["language"], vec![]),
            ),
            (
                rid(13),
                node("记忆系统", NodeType::Project, &[], &["系统"], vec![]),
            ),
            (
                rid(20),
                edge(
                    key(NodeType::Person, "ana"),
                    key(NodeType::Project, "stratagate"),
                    "使用",
                ),
            ),
            (
                rid(21),
                edge(
                    key(NodeType::Project, "stratagate"),
                    key(NodeType::Tool, "rust"),
                    "depends_on",
                ),
            ),
        ];
        GraphState::fold(&list, &|_| true)
    }

    fn names(hits: &[GraphHit]) -> Vec<&str> {
        hits.iter().map(|h| h.key.name.as_str()).collect()
    }

    #[test]
    fn relation_only_match_is_dropped() {
        let g = graph();
        // "使用" only occurs as a relation label of Ana's and StrataGate's edge.
        assert!(search_graph(&g, "使用", DEFAULT_GRAPH_LIMIT).is_empty());
        assert!(search_graph(&g, "depends_on", DEFAULT_GRAPH_LIMIT).is_empty());
    }

    #[test]
    fn tag_only_match_is_kept() {
        let g = graph();
        let hits = search_graph(&g, "memory-plugin", DEFAULT_GRAPH_LIMIT);
        assert_eq!(names(&hits), vec!["stratagate"]);
        assert_eq!(hits[0].matched_fields, vec!["tags"]);
        assert!(hits[0].score > 0.0);
    }

    #[test]
    fn fields_and_weights() {
        let g = graph();
        let idx = GraphIndex::build(&g);
        assert_eq!(idx.len(), 4);
        // Current state vs history: "released" is current, "beta" historical.
        let hits = idx.search("released", 8);
        assert_eq!(hits[0].matched_fields, vec!["currentState", "facts"]);
        let hits = idx.search("beta", 8);
        assert_eq!(hits[0].matched_fields, vec!["facts"]);
        // Type-only hits are allowed.
        let hits = idx.search("person", 8);
        assert_eq!(names(&hits), vec!["ana"]);
        assert_eq!(hits[0].matched_fields, vec!["type"]);
        // A relation hit is reported alongside a qualifying field.
        let hits = idx.search("ana 使用", 8);
        assert_eq!(names(&hits), vec!["ana"]);
        assert_eq!(hits[0].matched_fields, vec!["name", "relations"]);
        // Name (6) outranks alias (5): "rust" is Rust's name; "rustlang" an alias.
        let hits = idx.search("rust rustlang", 8);
        assert_eq!(hits[0].matched_fields, vec!["name", "aliases"]);
        // Han bigrams.
        let hits = idx.search("系统", 8);
        assert_eq!(names(&hits), vec!["记忆系统"]);
        assert_eq!(hits[0].matched_fields, vec!["name", "tags"]);
        // Nothing to rank.
        assert!(idx.search("", 8).is_empty());
        assert!(idx.search("  ...", 8).is_empty());
        assert!(idx.search("watermelon", 8).is_empty());
    }

    #[test]
    fn limit_and_determinism() {
        let g = graph();
        let idx = GraphIndex::build(&g);
        let all = idx.search("stratagate ana rust 系统", 20);
        assert_eq!(all.len(), 4);
        assert_eq!(idx.search("stratagate ana rust 系统", 0).len(), 1);
        assert_eq!(idx.search("stratagate ana rust 系统", 2).len(), 2);
        assert_eq!(all, idx.search("stratagate ana rust 系统", 20));
        assert_eq!(all, search_graph(&graph(), "stratagate ana rust 系统", 20));
        for w in all.windows(2) {
            assert!(w[0].score >= w[1].score);
        }
    }
}
