//! `eval locomo --graph`: how much of what LoCoMo's annotators observed
//! about each speaker the current-state graph holds, and how much of the
//! graph rests on those observations, for several projector versions in
//! the same run.
//!
//! LoCoMo files carry `session_N_observation`: per speaker, a list of
//! `[text, evidence]` ("Caroline attended an LGBTQ support group
//! recently…", `D1:3`). Each conversation is imported into its own
//! temporary data directory (as `eval locomo` does), derived with the
//! default profile, then with one more profile per other projector version
//! (same summarizer and extractor, so only the projector runs again).
//!
//! # The metric
//!
//! - **Content words** of a text: its lower-cased word tokens
//!   ([`strataflow_text::tokens::words`], folded, a trailing `'s` dropped),
//!   less the stop words of the search code
//!   ([`strataflow_operators::text::is_stop_word`]) and less the words of
//!   the speaker's own name. Overlaps compare sets of distinct words; the
//!   size of an item counts its content tokens.
//! - The **person node** of a speaker is the graph's `Person` node whose
//!   name, key or an alias has the speaker's [`identity_key`] (the
//!   projector names a participant's node after the speaker).
//! - Its **items**: every fact (current or closed), as its key and values,
//!   and every edge leaving it, as its relation and its target's name. An
//!   item of more than [`MAX_ITEM_WORDS`] content words is **oversize** and
//!   counts for neither figure (it covers nothing and is not grounded, but
//!   stays among the items): facts are compact, not restated sentences.
//! - An observation is **covered** when one item holds at least a third of
//!   the observation's content words, one of them at least
//!   [`MIN_LONG_WORD`] letters long. **Coverage** = covered / observations.
//! - An item is **grounded** when it shares at least
//!   [`MIN_GROUNDED_WORDS`] content words with some observation of its
//!   speaker. **Grounded share** = grounded / items.
//! - Overall figures add the counts of every conversation, then divide
//!   (an empty denominator gives 0).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use strataflow_log::record::NodeType;
use strataflow_materializers::graph_state::{GraphState, NodeState, identity_key};
use strataflow_operators::profile::{Profile, Registry};

use super::EvalError;
use crate::Memory;

/// The projector versions compared when none is named.
pub const DEFAULT_PROJECTORS: &[&str] = &["heuristic-projector@3", "heuristic-projector@4"];
/// An item of more content words than this counts for neither figure.
pub const MAX_ITEM_WORDS: usize = 10;
/// A covering item shares at least one word of this many letters.
pub const MIN_LONG_WORD: usize = 5;
/// A grounded item shares at least this many words with an observation.
pub const MIN_GROUNDED_WORDS: usize = 2;

/// One annotated observation about a speaker.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Observation {
    /// The speaker it is about (as the file names them).
    pub speaker: String,
    /// The observation.
    pub text: String,
    /// The dialogue ids it cites.
    pub evidence: Vec<String>,
}

/// The counts behind the two figures, and the graph's size.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct GraphFigures {
    /// Observations of the speakers.
    pub observations: usize,
    /// … covered by an item of that speaker's person node.
    pub covered: usize,
    /// covered / observations.
    pub coverage: f64,
    /// Facts and edges of the speakers' person nodes.
    pub items: usize,
    /// … sharing enough words with an observation of that speaker.
    pub grounded: usize,
    /// grounded / items.
    pub grounded_share: f64,
    /// Items of more than [`MAX_ITEM_WORDS`] content words.
    pub oversize: usize,
    /// Speakers with observations but no person node.
    pub speakers_without_node: usize,
    /// Nodes of the whole graph.
    pub nodes: usize,
    /// Facts of the whole graph (current and closed).
    pub facts: usize,
    /// Edges of the whole graph (current and closed).
    pub edges: usize,
}

impl GraphFigures {
    fn add(&mut self, o: &Self) {
        self.observations += o.observations;
        self.covered += o.covered;
        self.items += o.items;
        self.grounded += o.grounded;
        self.oversize += o.oversize;
        self.speakers_without_node += o.speakers_without_node;
        self.nodes += o.nodes;
        self.facts += o.facts;
        self.edges += o.edges;
        self.ratios();
    }

    fn ratios(&mut self) {
        let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        self.coverage = share(self.covered, self.observations);
        self.grounded_share = share(self.grounded, self.items);
    }
}

/// The figures of one projector version.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct VersionFigures {
    /// The projector id.
    pub projector: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: GraphFigures,
}

/// One conversation, every version.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ConversationGraph {
    /// The file it came from.
    pub file: String,
    /// The conversation (its thread: sample id or file stem).
    pub conversation: String,
    /// Per projector version, in [`GraphReport::projectors`] order.
    pub versions: Vec<VersionFigures>,
}

/// The whole graph evaluation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GraphReport {
    /// Files evaluated.
    pub files: Vec<String>,
    /// Projector versions compared; the first is the default profile's.
    pub projectors: Vec<String>,
    /// Per conversation.
    pub conversations: Vec<ConversationGraph>,
    /// Every conversation's counts added, per version.
    pub overall: Vec<VersionFigures>,
}

/// The content words of `text` (see the module docs), as a multiset in
/// text order.
pub fn content_words(text: &str, speaker: &str) -> Vec<String> {
    let name: BTreeSet<String> = folded(speaker).collect();
    folded(text)
        .filter(|w| !strataflow_operators::text::is_stop_word(w) && !name.contains(w))
        .collect()
}

fn folded(text: &str) -> impl Iterator<Item = String> + '_ {
    strataflow_text::tokens::words(text).into_iter().map(|t| {
        let w = t.folded();
        match w.strip_suffix("'s") {
            Some(stem) if !stem.is_empty() => stem.to_owned(),
            _ => w,
        }
    })
}

fn letters(w: &str) -> usize {
    w.chars().filter(|c| c.is_alphabetic()).count()
}

/// Whether an item (its content words) covers an observation (its
/// content words): it holds at least a third of them, one of at least
/// [`MIN_LONG_WORD`] letters.
pub fn covers(item: &[String], observation: &[String]) -> bool {
    if item.len() > MAX_ITEM_WORDS {
        return false;
    }
    let obs: BTreeSet<&String> = observation.iter().collect();
    let item: BTreeSet<&String> = item.iter().collect();
    let shared: Vec<&&String> = obs.intersection(&item).collect();
    !obs.is_empty()
        && 3 * shared.len() >= obs.len()
        && shared.iter().any(|w| letters(w) >= MIN_LONG_WORD)
}

/// Whether an item (its content words) is grounded in one observation:
/// at least [`MIN_GROUNDED_WORDS`] shared words.
pub fn grounded_in(item: &[String], observation: &[String]) -> bool {
    if item.len() > MAX_ITEM_WORDS {
        return false;
    }
    let obs: BTreeSet<&String> = observation.iter().collect();
    let item: BTreeSet<&String> = item.iter().collect();
    obs.intersection(&item).count() >= MIN_GROUNDED_WORDS
}

/// The person node of a speaker.
pub fn person_node<'g>(graph: &'g GraphState, speaker: &str) -> Option<&'g NodeState> {
    let want = identity_key(speaker);
    graph.nodes().iter().find(|n| {
        n.node_type == NodeType::Person
            && std::iter::once(&n.name)
                .chain(std::iter::once(&n.key.name))
                .chain(&n.aliases)
                .any(|name| identity_key(name) == want)
    })
}

/// The texts of a node's items: each fact as key and values, each edge
/// leaving it as relation and target name.
pub fn node_items(graph: &GraphState, node: &NodeState) -> Vec<String> {
    let facts = node
        .facts
        .iter()
        .map(|f| format!("{} {}", f.key, f.values.join(" ")));
    let edges = graph.edges_from(&node.key).into_iter().map(|e| {
        let target = graph.node(&e.to).map_or(e.to.name.as_str(), |n| &n.name);
        format!("{} {target}", e.relation)
    });
    facts.chain(edges).collect()
}

/// Scores a graph against observations (the graph-size counts included).
pub fn score(graph: &GraphState, observations: &[Observation]) -> GraphFigures {
    let mut speakers: Vec<&str> = observations.iter().map(|o| o.speaker.as_str()).collect();
    speakers.sort_unstable();
    speakers.dedup();
    let mut f = GraphFigures {
        nodes: graph.nodes().len(),
        facts: graph.nodes().iter().map(|n| n.facts.len()).sum(),
        edges: graph.edges().len(),
        ..GraphFigures::default()
    };
    for speaker in speakers {
        let observed: Vec<Vec<String>> = observations
            .iter()
            .filter(|o| o.speaker == speaker)
            .map(|o| content_words(&o.text, speaker))
            .collect();
        f.observations += observed.len();
        let Some(node) = person_node(graph, speaker) else {
            f.speakers_without_node += 1;
            continue;
        };
        let items: Vec<Vec<String>> = node_items(graph, node)
            .iter()
            .map(|t| content_words(t, speaker))
            .collect();
        f.items += items.len();
        f.oversize += items.iter().filter(|i| i.len() > MAX_ITEM_WORDS).count();
        f.grounded += items
            .iter()
            .filter(|i| observed.iter().any(|o| grounded_in(i, o)))
            .count();
        f.covered += observed
            .iter()
            .filter(|o| items.iter().any(|i| covers(i, o)))
            .count();
    }
    f.ratios();
    f
}

/// One conversation of a LoCoMo file: its thread name, the sample (to
/// import alone) and its observations.
struct Conversation {
    thread: String,
    sample: Value,
    observations: Vec<Observation>,
}

/// Reads the conversations of a LoCoMo file (either layout) with their
/// observations; a malformed observation is refused with where it is.
fn conversations(path: &Path) -> Result<Vec<Conversation>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|source| EvalError::MalformedJson {
        path: path.to_path_buf(),
        source,
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let samples: Vec<Value> = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    let mut out = Vec::new();
    for sample in samples {
        let thread = sample
            .get("sample_id")
            .and_then(Value::as_str)
            .unwrap_or(&stem)
            .to_owned();
        let observations = observations(path, &thread, &sample)?;
        if observations.is_empty() {
            return Err(EvalError::NoObservations {
                path: path.to_path_buf(),
                conversation: thread,
            });
        }
        out.push(Conversation {
            thread,
            sample,
            observations,
        });
    }
    Ok(out)
}

/// The `session_N_observation` entries of a sample: at its top level (the
/// one-conversation layout), under `observation` (locomo10.json) or under
/// `conversation`; sorted by session number, then speaker.
fn observations(path: &Path, thread: &str, sample: &Value) -> Result<Vec<Observation>, EvalError> {
    let mut sessions: Vec<(u64, &str, &Value)> = Vec::new();
    for holder in [
        Some(sample),
        sample.get("observation"),
        sample.get("conversation"),
    ]
    .into_iter()
    .flatten()
    {
        let Some(map) = holder.as_object() else {
            continue;
        };
        for (key, v) in map {
            if let Some(n) = key
                .strip_prefix("session_")
                .and_then(|k| k.strip_suffix("_observation"))
                .and_then(|n| n.parse().ok())
            {
                sessions.push((n, key, v));
            }
        }
    }
    sessions.sort_by_key(|(n, key, _)| (*n, *key));
    sessions.dedup_by_key(|(n, _, _)| *n);
    let mut out = Vec::new();
    for (_, key, session) in sessions {
        let bad = |speaker: &str, index: usize, what: &str| EvalError::BadObservation {
            path: path.to_path_buf(),
            conversation: thread.to_owned(),
            field: if speaker.is_empty() {
                key.to_owned()
            } else {
                format!("{key}.{speaker}[{index}]")
            },
            what: what.to_owned(),
        };
        let Some(speakers) = session.as_object() else {
            return Err(bad("", 0, "not an object of speakers"));
        };
        for (speaker, list) in speakers {
            let Some(list) = list.as_array() else {
                return Err(bad(speaker, 0, "not a list of [text, evidence]"));
            };
            for (i, entry) in list.iter().enumerate() {
                let Some(text) = entry.get(0).and_then(Value::as_str) else {
                    return Err(bad(speaker, i, "not [text, evidence]"));
                };
                let evidence = match entry.get(1) {
                    Some(Value::String(s)) => vec![s.clone()],
                    Some(Value::Array(a)) => a
                        .iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                };
                out.push(Observation {
                    speaker: speaker.clone(),
                    text: text.to_owned(),
                    evidence,
                });
            }
        }
    }
    Ok(out)
}

/// The versions compared: the base profile's projector first, then the
/// named ones (or [`DEFAULT_PROJECTORS`]), each once.
fn versions(base: &str, named: &[String]) -> Vec<String> {
    let named: Vec<String> = if named.is_empty() {
        DEFAULT_PROJECTORS.iter().map(|s| (*s).to_owned()).collect()
    } else {
        named.to_vec()
    };
    let mut out = vec![base.to_owned()];
    for id in named {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// Runs the graph evaluation: every conversation of `files`, with the
/// default profile (its extractor replaced by `extractor` when given) and
/// each projector of `projectors` (empty: [`DEFAULT_PROJECTORS`]).
pub fn evaluate_graph(
    files: &[PathBuf],
    projectors: &[String],
    extractor: Option<&str>,
) -> Result<GraphReport, EvalError> {
    let mut base = Profile {
        name: "eval".into(),
        ..Profile::default_profile()
    };
    if let Some(id) = extractor {
        id.clone_into(&mut base.extractor);
    }
    let versions = versions(&base.projector, projectors);
    let profiles: Vec<Profile> = versions
        .iter()
        .enumerate()
        .map(|(i, id)| Profile {
            name: if i == 0 {
                "eval".into()
            } else {
                format!("eval-graph-{i}")
            },
            projector: id.clone(),
            ..base.clone()
        })
        .collect();
    // Unknown ids are refused before anything is imported.
    let registry = Registry::builtin();
    for p in &profiles {
        registry
            .resolve(p)
            .map_err(|e| crate::MemoryError::from(crate::ProfileError::from(e)))?;
    }
    let mut conversations_out = Vec::new();
    let mut overall: Vec<GraphFigures> = versions.iter().map(|_| GraphFigures::default()).collect();
    for file in files {
        let convs = conversations(file)?;
        let single = convs.len() == 1;
        for conv in convs {
            let dir = tempfile::tempdir().map_err(EvalError::TempDir)?;
            let data = dir.path().join("data");
            let memory = Memory::open(&data)?;
            for p in &profiles {
                memory.save_profile(p)?;
            }
            memory.set_default_profile("eval")?;
            let mut options = memory.ingest_options()?;
            options.durability = strataflow_log::Durability::Buffered;
            let source = if single {
                file.clone()
            } else {
                let one = dir.path().join("conversation.json");
                let text = serde_json::to_vec(&Value::Array(vec![conv.sample.clone()])).map_err(
                    |source| EvalError::MalformedJson {
                        path: file.clone(),
                        source,
                    },
                )?;
                std::fs::write(&one, text).map_err(EvalError::TempDir)?;
                one
            };
            memory.default_tenant().import_locomo(
                &source,
                &options,
                strataflow_pipeline::ingest::OnInvalid::Refuse,
                &mut |_| {},
            )?;
            let mut rows = Vec::new();
            for (i, p) in profiles.iter().enumerate() {
                let name = (i > 0).then_some(p.name.as_str());
                if name.is_some() {
                    let mut derive = memory.derive_options();
                    derive.durability = strataflow_log::Durability::Buffered;
                    let stats = memory.derive(name, &derive, &mut |_| {})?;
                    if stats.failed_runs > 0 {
                        return Err(EvalError::DerivationFailed {
                            projector: p.projector.clone(),
                            runs: stats.failed_runs,
                        });
                    }
                }
                let graph = memory.default_tenant().graph(name)?;
                let figures = score(&graph, &conv.observations);
                if let Some(o) = overall.get_mut(i) {
                    o.add(&figures);
                }
                rows.push(VersionFigures {
                    projector: p.projector.clone(),
                    figures,
                });
            }
            conversations_out.push(ConversationGraph {
                file: file.display().to_string(),
                conversation: conv.thread,
                versions: rows,
            });
        }
    }
    Ok(GraphReport {
        files: files.iter().map(|f| f.display().to_string()).collect(),
        overall: versions
            .iter()
            .zip(overall)
            .map(|(projector, figures)| VersionFigures {
                projector: projector.clone(),
                figures,
            })
            .collect(),
        projectors: versions,
        conversations: conversations_out,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use strataflow_log::RecordId;
    use strataflow_log::record::{Assertion, Fact, FactMode, GraphAssertion, NodeKey};

    use super::*;

    fn words(text: &str) -> Vec<String> {
        content_words(text, "Caroline")
    }

    fn key(t: NodeType, name: &str) -> NodeKey {
        NodeKey {
            node_type: t,
            name: name.to_lowercase(),
        }
    }

    fn node(n: u8, t: NodeType, name: &str, facts: &[(&str, &str)]) -> (RecordId, GraphAssertion) {
        (
            RecordId([n; 32]),
            GraphAssertion {
                tenant: String::new(),
                source_events: vec![RecordId([200; 32])],
                assertion: Assertion::Node {
                    key: key(t, name),
                    name: name.to_owned(),
                    aliases: Vec::new(),
                    tags: Vec::new(),
                    facts: facts
                        .iter()
                        .map(|(k, v)| Fact {
                            key: (*k).to_owned(),
                            values: vec![(*v).to_owned()],
                            mode: FactMode::Set,
                            valid_from: None,
                            valid_to: None,
                        })
                        .collect(),
                },
                confidence_milli: 900,
            },
        )
    }

    fn edge(n: u8, from: &str, to: (NodeType, &str), relation: &str) -> (RecordId, GraphAssertion) {
        (
            RecordId([n; 32]),
            GraphAssertion {
                tenant: String::new(),
                source_events: vec![RecordId([200; 32])],
                assertion: Assertion::Edge {
                    from: key(NodeType::Person, from),
                    to: key(to.0, to.1),
                    relation: relation.to_owned(),
                    functional: false,
                    valid_from: None,
                    valid_to: None,
                },
                confidence_milli: 900,
            },
        )
    }

    fn obs(speaker: &str, text: &str) -> Observation {
        Observation {
            speaker: speaker.to_owned(),
            text: text.to_owned(),
            evidence: vec!["D1:1".to_owned()],
        }
    }

    #[test]
    fn content_words_drop_stop_words_the_speakers_name_and_possessives() {
        assert_eq!(
            words("Caroline's sister Marta is visiting her in Lisbon"),
            ["sister", "marta", "visiting", "lisbon"]
        );
        // Another person's name is a content word.
        assert_eq!(
            content_words("Caroline met Melanie", "Melanie"),
            ["caroline", "met"]
        );
        // Fact keys split at `_`.
        assert_eq!(words("works_at Northwind"), ["works", "northwind"]);
    }

    #[test]
    fn coverage_needs_a_third_of_the_observations_words() {
        // 6 content words: attended, lgbtq, support, group, recently, inspiring.
        let o = words("Caroline attended an LGBTQ support group recently, inspiring.");
        assert_eq!(o.len(), 6);
        assert!(covers(&words("attends: support group"), &o)); // 2 of 6
        assert!(!covers(&words("attends: support"), &o)); // 1 of 6
    }

    #[test]
    fn coverage_needs_a_shared_word_of_five_letters() {
        let o = words("Caroline has a dog and a cat"); // dog, cat
        assert!(!covers(&words("pets: dog cat"), &o));
        let o = words("Caroline has a puppy and a cat"); // puppy, cat
        assert!(covers(&words("pets: puppy"), &o));
    }

    #[test]
    fn items_of_more_than_ten_content_words_count_for_neither() {
        let o = words("Caroline paints lakes sunrises mountains rivers forests");
        let ten = words("likes paints lakes sunrises mountains rivers forests oils canvas brushes");
        assert_eq!(ten.len(), 10);
        assert!(covers(&ten, &o) && grounded_in(&ten, &o));
        let eleven = words(
            "likes paints lakes sunrises mountains rivers forests oils canvas brushes easels",
        );
        assert_eq!(eleven.len(), 11);
        assert!(!covers(&eleven, &o));
        assert!(!grounded_in(&eleven, &o));
    }

    #[test]
    fn the_speakers_name_is_no_shared_word() {
        // Without the name rule, "caroline" would be a second shared word.
        let o = words("Caroline loves painting");
        let item = words("caroline painting");
        assert!(!grounded_in(&item, &o));
        assert!(grounded_in(&words("loves painting"), &o));
    }

    #[test]
    fn grounded_needs_two_shared_words() {
        let o = words("Caroline adopted a puppy named Oscar");
        assert!(!grounded_in(&words("pet: puppy"), &o));
        assert!(grounded_in(&words("pet: puppy Oscar"), &o));
    }

    #[test]
    fn score_reads_the_speakers_person_node_facts_and_outgoing_edges() {
        let graph = GraphState::fold(
            &[
                node(1, NodeType::Person, "Caroline", &[("pet", "puppy Oscar")]),
                node(2, NodeType::Place, "Lisbon", &[]),
                node(3, NodeType::Person, "Melanie", &[("likes", "pottery")]),
                edge(4, "caroline", (NodeType::Place, "lisbon"), "visited"),
                // Melanie's edge is not Caroline's item.
                edge(5, "melanie", (NodeType::Place, "lisbon"), "visited"),
            ],
            &|_| true,
        );
        let observations = [
            obs("Caroline", "Caroline adopted a puppy named Oscar."),
            obs("Caroline", "Caroline visited Lisbon in May."),
            obs("Caroline", "Caroline started kickboxing classes."),
            obs("Jon", "Jon opened a dance studio."),
        ];
        let f = score(&graph, &observations);
        assert_eq!(f.observations, 4);
        // puppy+oscar covers the first, visited+lisbon the second.
        assert_eq!(f.covered, 2);
        // Caroline: the fact and one edge; Jon has no node.
        assert_eq!((f.items, f.grounded, f.oversize), (2, 2, 0));
        assert_eq!(f.speakers_without_node, 1);
        assert_eq!((f.nodes, f.facts, f.edges), (3, 2, 2));
        assert!((f.coverage - 0.5).abs() < 1e-9);
        assert!((f.grounded_share - 1.0).abs() < 1e-9);
    }

    #[test]
    fn versions_put_the_default_first_without_repeats() {
        assert_eq!(
            versions("heuristic-projector@1", &[]),
            [
                "heuristic-projector@1",
                "heuristic-projector@3",
                "heuristic-projector@4"
            ]
        );
        assert_eq!(
            versions("heuristic-projector@4", &[]),
            ["heuristic-projector@4", "heuristic-projector@3"]
        );
        assert_eq!(
            versions(
                "heuristic-projector@1",
                &[
                    "heuristic-projector@3".to_owned(),
                    "heuristic-projector@1".to_owned()
                ]
            ),
            ["heuristic-projector@1", "heuristic-projector@3"]
        );
    }

    #[test]
    fn observations_of_both_layouts_and_a_bad_entry() {
        let flat = serde_json::json!({
            "session_2_observation": {"Jon": [["Jon lost his job.", "D2:1"]]},
            "session_1_observation": {"Gina": [["Gina opened a store.", ["D1:1", "D1:2"]]]},
        });
        let got = observations(Path::new("f.json"), "f", &flat).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].speaker, "Gina");
        assert_eq!(got[0].evidence, ["D1:1", "D1:2"]);
        let nested = serde_json::json!({"observation": flat});
        assert_eq!(
            observations(Path::new("f.json"), "f", &nested).unwrap(),
            got
        );
        let bad = serde_json::json!({"session_1_observation": {"Jon": [[3, "D1:1"]]}});
        let e = observations(Path::new("f.json"), "conv-x", &bad)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "f.json: conversation `conv-x`, session_1_observation.Jon[0]: not [text, evidence]"
        );
    }
}
