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
//! splitter ([`crate::text::sentences`]). Version 2 reads the carried text
//! analysis of the block's messages ([`BlockInput::analyses`]) when the
//! pipeline computed it (the extractors of the shared splitter read the
//! same one): its sentences and their words are those of the splitter and
//! of [`words`], so the summary is the one it writes from the raw text,
//! without splitting and tokenising each message again.

use std::borrow::Cow;
use std::collections::HashMap;

use strataflow_record::Digest;
use strataflow_record::record::{BlockSummary, Role};
use strataflow_text::Analysis;

use crate::extractor::temporal::has_time_expression_after_words;
use crate::operator::{BlockInput, OperatorError, OperatorId, Summarizer, config_hash};
use crate::text::{
    Splitter, clip, has_event_cue, is_chatter, is_chatter_words, is_first_person, is_question,
    is_stop_word, words,
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

    fn reads_analysis(&self) -> bool {
        true
    }
}

/// The text of one message as the summarizer reads it: split by the
/// version's splitter (and tokenised where a test needs the words), or
/// taken from the carried analysis, which holds the shared splitter's
/// sentences and their [`words`].
#[derive(Clone, Copy)]
enum MessageText<'a> {
    Split(&'a str, Splitter),
    Analysed(&'a str, &'a Analysis),
}

impl<'a> MessageText<'a> {
    /// Message `index` of `block`, analysed when the pipeline carried the
    /// analysis and the version splits as it does.
    fn of(block: &BlockInput<'a>, index: usize, content: &'a str, splitter: Splitter) -> Self {
        match block.analysis(index) {
            Some(analysis) if splitter == Splitter::Shared => Self::Analysed(content, analysis),
            _ => Self::Split(content, splitter),
        }
    }

    /// Calls `each` on every sentence, in order, with its words when the
    /// text is analysed and `with_words`.
    fn each_sentence(self, with_words: bool, mut each: impl FnMut(&'a str, Option<&[&'a str]>)) {
        match self {
            Self::Split(content, splitter) => {
                for s in splitter.sentences(content) {
                    each(s.text, None);
                }
            }
            Self::Analysed(content, analysis) => {
                for s in &analysis.sentences {
                    let words = with_words.then(|| s.word_list());
                    each(s.text(content), words.as_deref());
                }
            }
        }
    }

    /// Calls `each` on every one of the [`words`] of the whole message.
    /// An ASCII text's words are its sentences' words one after the other:
    /// a word is a run of letters and digits (with inner apostrophes), a
    /// sentence ends only after a character that is none of these, and the
    /// text outside its sentences is whitespace or pieces without a letter
    /// or digit (`message_words_are_its_sentences_words` checks).
    fn each_word(self, mut each: impl FnMut(Cow<'a, str>)) {
        match self {
            Self::Analysed(content, analysis) if content.is_ascii() => {
                for w in analysis.sentences.iter().flat_map(|s| s.words()) {
                    each(Cow::Borrowed(w));
                }
            }
            Self::Analysed(content, _) | Self::Split(content, _) => {
                for w in words(content) {
                    each(Cow::Owned(w));
                }
            }
        }
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
    for (index, (_, m)) in block.messages.iter().enumerate() {
        if !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        let speaker = speaker_of(m.role, m.speaker.as_deref());
        MessageText::of(block, index, &m.content, splitter).each_sentence(true, |text, given| {
            let chatter = || given.map_or_else(|| is_chatter(text), is_chatter_words);
            if is_question(text) || chatter() || text.starts_with("[image:") {
                return;
            }
            let eventful = match given {
                Some(w) => is_first_person(w) && has_event_cue(w),
                None => {
                    let w = words(text);
                    is_first_person(&w) && has_event_cue(&w)
                }
            };
            let timed = has_time_expression_after_words(text, given, m.time);
            let named = named_words(text).take(2).count();
            let score = u32::from(eventful) * 3 + u32::from(timed) * 2 + named as u32;
            out.push(Candidate {
                speaker: speaker.clone(),
                text: text.to_owned(),
                score,
                eventful,
                order: out.len(),
            });
        });
    }
    out
}

/// Capitalized words that are not at the start of the sentence and not
/// the pronoun "I": a cheap stand-in for named things.
fn named_words(sentence: &str) -> impl Iterator<Item = &str> {
    sentence
        .split_whitespace()
        .skip(1)
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().skip(1).any(char::is_lowercase)
                && !matches!(*w, "I" | "I'm" | "I've" | "I'll" | "I'd")
        })
}

fn topic_tags(block: &BlockInput<'_>, speakers: &[String], splitter: Splitter) -> Vec<String> {
    let speaker_words: Vec<String> = speakers.iter().map(|s| s.to_lowercase()).collect();
    // Each word's (count, order of its first sighting). The orders are
    // distinct, so `rank`'s sort is a total order and the maps' own order
    // never shows (they are hashed, not sorted, for speed).
    let mut named: WordCounts = HashMap::default();
    let mut counts: WordCounts = HashMap::default();
    let mut order = 0usize;
    for (index, (_, m)) in block.messages.iter().enumerate() {
        if !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        let text = MessageText::of(block, index, &m.content, splitter);
        text.each_sentence(false, |sentence, _| {
            for n in named_words(sentence) {
                if !speaker_words.contains(&n.to_lowercase()) {
                    // A name seen before is counted without a copy of it.
                    match named.get_mut(n) {
                        Some(e) => e.0 += 1,
                        None => {
                            named.insert(n.to_owned(), (1, order));
                        }
                    }
                    order += 1;
                }
            }
        });
        text.each_word(|w| {
            if w.chars().count() >= 4
                && !is_stop_word(&w)
                && !has_event_cue(std::slice::from_ref(&w))
                && !speaker_words.iter().any(|s| *s == *w)
                && w.chars().all(char::is_alphabetic)
            {
                // A word seen before is counted without a copy of it.
                match counts.get_mut(&*w) {
                    Some(e) => e.0 += 1,
                    None => {
                        counts.insert(w.into_owned(), (1, order));
                    }
                }
                order += 1;
            }
        });
    }
    let rank = |m: WordCounts| {
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

/// Words with their (count, order of first sighting), in [`topic_tags`].
type WordCounts = HashMap<String, (usize, usize), foldhash::fast::FixedState>;

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::operator::analyse_messages;
    use strataflow_record::id::RecordId;

    /// Each version given the carried text analysis of its messages
    /// ([`analyse_messages`]) writes exactly the summary it writes from the
    /// raw text: every LoCoMo turn in blocks of ten, and messages with
    /// abbreviations, initials, quotes, line breaks and non-ASCII text.
    #[test]
    fn the_carried_analysis_summarizes_what_the_raw_text_does() {
        use crate::projector::heuristic::statements::tests::locomo_blocks;
        let mut blocks = locomo_blocks();
        let (block, mut msgs) = blocks.first().cloned().unwrap();
        for (m, text) in msgs.iter_mut().zip([
            "I met Prof. Lee at the café yesterday. J. R. R. Tolkien was on the shelf!",
            "We moved to São Paulo in 2019 — my sister Zoë said \"welcome home.\" Then we left.",
            "I booked the trip…\nMonday 20 May: Sintra. Noted.",
            "Naïve question: did you adopt the dog? I adopted Luna last week",
            "我们去了北京。I visited Beijing last month, e.g. the Great Wall.",
        ]) {
            m.1.content = text.to_owned();
        }
        blocks.push((block, msgs));
        let mut summaries = 0;
        for (b, (block, msgs)) in blocks.iter().enumerate() {
            let analyses = analyse_messages(msgs);
            let summarizers: [&dyn Summarizer; 2] = [&HeuristicSummarizer, &HeuristicSummarizerV2];
            for summarizer in summarizers {
                let [raw, carried] = [None, Some(analyses.as_slice())].map(|analyses| {
                    summarizer
                        .summarize(&BlockInput {
                            id: RecordId([8; 32]),
                            block,
                            messages: msgs,
                            attempt: 1,
                            analyses,
                        })
                        .unwrap()
                });
                assert_eq!(raw, carried, "{} on block {b}", summarizer.id());
                summaries += usize::from(!raw.key_points.is_empty());
            }
        }
        assert!(summaries > 100, "{summaries} summaries with key points");
    }

    /// Version 2 given the analysis reads it (not the raw text); version 1,
    /// whose splitter is another, and a block whose analyses do not match
    /// its messages, read the raw text.
    #[test]
    fn only_the_shared_splitter_reads_a_matching_analysis() {
        use crate::projector::heuristic::statements::tests::locomo_blocks;
        let blocks = locomo_blocks();
        let (block, msgs) = blocks.first().unwrap();
        let analyses = analyse_messages(msgs);
        let input = |analyses| BlockInput {
            id: RecordId([8; 32]),
            block,
            messages: msgs,
            attempt: 1,
            analyses,
        };
        let content = msgs.first().unwrap().1.content.as_str();
        let full = input(Some(analyses.as_slice()));
        let short = input(analyses.get(1..));
        assert!(matches!(
            MessageText::of(&full, 0, content, Splitter::Shared),
            MessageText::Analysed(..)
        ));
        assert!(matches!(
            MessageText::of(&full, 0, content, Splitter::V1),
            MessageText::Split(..)
        ));
        assert!(matches!(
            MessageText::of(&short, 0, content, Splitter::Shared),
            MessageText::Split(..)
        ));
        assert!(HeuristicSummarizerV2.reads_analysis() && !HeuristicSummarizer.reads_analysis());
    }

    proptest::proptest! {
        /// The words of an ASCII text are its sentences' words one after the
        /// other ([`MessageText::each_word`] reads them so).
        #[test]
        fn message_words_are_its_sentences_words(
            text in "[a-zA-Z0-9 .,!?'\"()\\[\\]\n:;-]{0,80}"
        ) {
            let analysis = strataflow_text::Analysis::of(&text);
            let joined: Vec<String> = analysis
                .sentences
                .iter()
                .flat_map(|s| s.words().map(str::to_owned))
                .collect();
            proptest::prop_assert_eq!(words(&text), joined);
        }
    }
}
