//! The heuristic summarizer (`heuristic-summarizer@1`), the embedded default.
//!
//! Extractive and deterministic: it never writes a word that is not in the
//! block (besides speaker names and the fixed phrase "talk about").
//!
//! - **Keeps**: statements in the first person that report something done,
//!   planned, decided or preferred ("I went to a support group yesterday"),
//!   sentences with a time expression or a named person, place or thing.
//! - **Drops**: greetings, reactions and thanks ("Wow, congrats!"),
//!   questions, system messages and tool payloads (their L4 line is kept in
//!   the block, not in the summary).
//!
//! L0 title: the most salient sentence, attributed to its speaker, cut at
//! 80 characters. L0 tags: up to 6 topic words, named things first, then the
//! most frequent content words. L1: who talks about what, then up to three
//! salient sentences (at most 600 characters). L2: up to 8 salient
//! sentences in conversation order, each cut at 160 characters.
//! should_extract: true when at least one sentence reports an event, plan or
//! preference.
//!
//! **Version 2** (`heuristic-summarizer@2`, [`HeuristicSummarizerV2`]) does
//! the same on the sentences of the shared splitter
//! ([`strataflow_text::sentences`]: "Prof. Lee", "J. R. R. Tolkien", "cf."
//! and closing quotes kept in their sentence); version 1 keeps its frozen
//! splitter ([`crate::text::sentences`]).

use std::collections::BTreeMap;

use strataflow_record::Digest;
use strataflow_record::record::{BlockSummary, Role};

use crate::extractor::temporal::find_time_expressions;
use crate::operator::{BlockInput, OperatorError, OperatorId, Summarizer, config_hash};
use crate::text::{
    Splitter, clip, has_event_cue, is_chatter, is_first_person, is_question, is_stop_word, words,
};

/// The heuristic summarizer.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicSummarizer;

/// Its operator id.
pub fn id() -> OperatorId {
    OperatorId::new("heuristic-summarizer", 1)
}

/// Version 2: version 1 on the shared sentence splitter.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicSummarizerV2;

/// Version 2's operator id.
pub fn id_v2() -> OperatorId {
    OperatorId::new("heuristic-summarizer", 2)
}

/// A sentence of the block with what the scoring needs.
struct Candidate {
    speaker: String,
    text: String,
    score: u32,
    eventful: bool,
    order: usize,
}

impl Summarizer for HeuristicSummarizer {
    fn id(&self) -> OperatorId {
        id()
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &id(),
            r#"{"title_chars":80,"tags":6,"summary_chars":600,"key_points":8}"#,
        )
    }

    fn summarize(&self, block: &BlockInput<'_>) -> Result<BlockSummary, OperatorError> {
        summarize(block, Splitter::V1)
    }
}

impl Summarizer for HeuristicSummarizerV2 {
    fn id(&self) -> OperatorId {
        id_v2()
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &id_v2(),
            r#"{"title_chars":80,"tags":6,"summary_chars":600,"key_points":8,"sentences":"strataflow-text"}"#,
        )
    }

    fn summarize(&self, block: &BlockInput<'_>) -> Result<BlockSummary, OperatorError> {
        summarize(block, Splitter::Shared)
    }
}

fn summarize(block: &BlockInput<'_>, splitter: Splitter) -> Result<BlockSummary, OperatorError> {
    let candidates = candidates(block, splitter);
    let speakers = speakers(block);
    let tags = topic_tags(block, &speakers, splitter);

    let mut ranked: Vec<&Candidate> = candidates.iter().filter(|c| c.score > 0).collect();
    ranked.sort_by(|a, b| b.score.cmp(&a.score).then(a.order.cmp(&b.order)));

    let title = match ranked.first() {
        Some(best) => clip(&format!("{}: {}", best.speaker, best.text), 80),
        None => fallback_title(block, &speakers),
    };

    let mut summary = match (speakers.is_empty(), tags.is_empty()) {
        (false, false) => format!(
            "{} talk about {}.",
            join_names(&speakers),
            tags.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ),
        (false, true) => format!("{} talk.", join_names(&speakers)),
        _ => String::from("Conversation."),
    };
    let mut top: Vec<&Candidate> = ranked.iter().take(3).copied().collect();
    top.sort_by_key(|c| c.order);
    for c in top {
        let sentence = format!(" {}: {}", c.speaker, c.text);
        if summary.chars().count() + sentence.chars().count() > 600 {
            break;
        }
        summary.push_str(&sentence);
    }

    let mut points: Vec<&Candidate> = ranked.iter().take(8).copied().collect();
    points.sort_by_key(|c| c.order);
    let key_points = points
        .into_iter()
        .map(|c| clip(&format!("{}: {}", c.speaker, c.text), 160))
        .collect();

    Ok(BlockSummary {
        tenant: block.block.tenant.clone(),
        block: block.id,
        title,
        tags,
        summary,
        key_points,
        should_extract: candidates.iter().any(|c| c.eventful),
    })
}

fn speaker_of(role: Role, speaker: Option<&str>) -> String {
    speaker
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map_or_else(|| role.label().to_owned(), str::to_owned)
}

fn speakers(block: &BlockInput<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, m) in block.messages {
        if matches!(m.role, Role::User | Role::Assistant) {
            let s = speaker_of(m.role, m.speaker.as_deref());
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

fn join_names(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn candidates(block: &BlockInput<'_>, splitter: Splitter) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (_, m) in block.messages {
        if !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        let speaker = speaker_of(m.role, m.speaker.as_deref());
        for s in splitter.sentences(&m.content) {
            if is_question(s.text) || is_chatter(s.text) || s.text.starts_with("[image:") {
                continue;
            }
            let w = words(s.text);
            let eventful = is_first_person(&w) && has_event_cue(&w);
            let timed = !find_time_expressions(s.text, m.time).is_empty();
            let named = named_words(s.text).len().min(2);
            let score = u32::from(eventful) * 3 + u32::from(timed) * 2 + named as u32;
            out.push(Candidate {
                speaker: speaker.clone(),
                text: s.text.to_owned(),
                score,
                eventful,
                order: out.len(),
            });
        }
    }
    out
}

/// Capitalized words that are not at the start of the sentence and not
/// the pronoun "I": a cheap stand-in for named things.
fn named_words(sentence: &str) -> Vec<String> {
    sentence
        .split_whitespace()
        .skip(1)
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().skip(1).any(char::is_lowercase)
                && !matches!(*w, "I" | "I'm" | "I've" | "I'll" | "I'd")
        })
        .map(str::to_owned)
        .collect()
}

fn topic_tags(block: &BlockInput<'_>, speakers: &[String], splitter: Splitter) -> Vec<String> {
    let speaker_words: Vec<String> = speakers.iter().map(|s| s.to_lowercase()).collect();
    let mut named: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut order = 0usize;
    for (_, m) in block.messages {
        if !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        for s in splitter.sentences(&m.content) {
            for n in named_words(s.text) {
                if !speaker_words.contains(&n.to_lowercase()) {
                    let e = named.entry(n).or_insert((0, order));
                    e.0 += 1;
                    order += 1;
                }
            }
        }
        for w in words(&m.content) {
            if w.chars().count() >= 4
                && !is_stop_word(&w)
                && !has_event_cue(std::slice::from_ref(&w))
                && !speaker_words.contains(&w)
                && w.chars().all(char::is_alphabetic)
            {
                let e = counts.entry(w).or_insert((0, order));
                e.0 += 1;
                order += 1;
            }
        }
    }
    let rank = |m: BTreeMap<String, (usize, usize)>| {
        let mut v: Vec<(String, (usize, usize))> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
        v.into_iter().map(|(w, _)| w).collect::<Vec<_>>()
    };
    let mut tags: Vec<String> = Vec::new();
    for t in rank(named).into_iter().take(3).chain(rank(counts)) {
        let key = t.to_lowercase();
        if !tags.iter().any(|x| x.to_lowercase() == key) {
            tags.push(t);
        }
        if tags.len() == 6 {
            break;
        }
    }
    tags
}

fn fallback_title(block: &BlockInput<'_>, speakers: &[String]) -> String {
    let first = block
        .messages
        .iter()
        .find(|(_, m)| m.role == Role::User && !m.content.trim().is_empty())
        .map(|(_, m)| m.content.split_whitespace().collect::<Vec<_>>().join(" "));
    match first {
        Some(text) => clip(&text, 80),
        None if !speakers.is_empty() => format!("Conversation of {}", join_names(speakers)),
        None => format!("Block {}", block.block.ordinal),
    }
}
