//! The heuristic extractor (`heuristic-extractor@1`), the embedded default.
//!
//! It reads the target block's messages sentence by sentence and turns
//! first-person statements of something that happened, is planned, is going
//! on or is preferred into event cards:
//!
//! - A sentence is a statement when it is not a question or a reaction, has
//!   at least three words, and is either in the first person with an event
//!   cue (a past-tense or action verb, a plan, a progressive "I'm …ing", a
//!   preference) or states a time in four words or more.
//! - The statements of one message are grouped by the time they refer to:
//!   a statement with its own time expression opens a group, a statement
//!   without one joins the group before it. A time stated in a sentence that
//!   is not a statement ("Last night was amazing!") dates the next statement
//!   of the same message. Each group becomes one event that cites exactly
//!   that message and quotes exactly those sentences.
//! - Time comes from the [temporal resolver](super::temporal): mention time
//!   from the message, the happened interval from the group's expression.
//!   A statement with no expression keeps an unknown time, except that a
//!   progressive or "currently" statement is dated to its mention day with
//!   basis `inferred` (it says it is going on then).
//! - Title and summary restate the quotes in the third person ("I went" →
//!   "Caroline went"); participants are the speaker plus people of the
//!   block named in the quotes or introduced as "my sister Marta".
//! - Type, status (occurred / planned / cancelled / ongoing) and
//!   criticality come from keyword cues; confidence from the time basis.
//! - A cancellation supersedes the latest planned event of the same speaker
//!   in the timeline that shares a topic word with it.
//!
//! **Version 2** (`heuristic-extractor@2`, [`HeuristicExtractorV2`]) does all
//! of the above and also takes statements *about the other person of the
//! block*, with an event, progressive or preference cue:
//! - in the third person by name: a sentence whose first word names another
//!   speaker of the block (or a prefix of three letters or more, "Mel" for
//!   "Melanie") as its subject ("Melanie went camping last week.");
//! - in the second person, when the block has exactly one other speaker:
//!   "So glad you got the support!", "Congrats on your new job, you earned
//!   it." — what one person reports about the other.
//!
//! Version 1 only takes first-person statements; everything else is
//! identical, which makes the two a clean pair for `strataflow diff`.
//!
//! **Version 3** (`heuristic-extractor@3`, [`HeuristicExtractorV3`]) is
//! version 2 on the sentences of the shared splitter
//! ([`strataflow_text::sentences`]: "Prof. Lee", "J. R. R. Tolkien", "cf."
//! and closing quotes kept in their sentence); versions 1 and 2 keep their
//! frozen splitter ([`crate::text::sentences`]).
//!
//! **Version 4** (`heuristic-extractor@4`, [`HeuristicExtractorV4`]) is
//! version 3 with the second temporal resolver
//! ([`Resolver::V2`]: a date without a year
//! is placed by the weekday named with it, by an arrangement such as
//! "Noted: … on …" or "booked", by the tense, else at the nearer occurrence,
//! and the narrative records which), and with a third-person restatement
//! that agrees in person and number ([`third_person_v2`]: "I prefer" →
//! "Ana prefers"; questions and imperatives kept as quotes).
//!
//! **Version 5** (`heuristic-extractor@5`, [`HeuristicExtractorV5`]) is
//! version 4 that also takes *informative self-statements* without an event
//! cue ([`is_self_statement`]): a sentence of four words or more whose
//! subject is the speaker (`I`, `we`, `my …`) or, as in version 2, a named
//! person of the block or the one listener, holding at least two
//! informative words (not stop words, interjections or feeling words):
//! identity, work and study, family and pets, possessions, activities,
//! preferences, goals, health, places ("I'm on the Orbit team at
//! Northwind", "I've been painting for years", "My kids love the beach").
//! Chit-chat stays out: questions, greetings, thanks and reactions ("That's
//! so sweet of you", "I'm so happy for you"), imperatives and "let's".
//! Version 5 also leaves out pleasantries to the listener
//! ([`is_pleasantry`]: "Enjoy your lunch, and say hi to Marta!"), restates
//! "let me X" as an intent ([`third_person_v3`]: "Ana will X"), types a
//! completion inside a wish as a plan ("wants the cutover done") and an
//! acknowledged arrangement ("Got it: Porto 14–17 May") as a plan, and
//! reads time with the third resolver
//! ([`Resolver::V3`]: deadlines such as
//! "before the end of January" run from the mention to then, a bare "for a
//! few days" is a length and dates nothing unless it runs up to now, and
//! "that Saturday" takes the date of an earlier sentence of the message).

use std::borrow::Cow;

use strataflow_record::record::{
    Criticality, Event, EventTemporal, EventType, Message, Occurrence, Precision, Role, Scope,
    TimeBasis,
};
use strataflow_record::{Digest, RecordId, SourceTime, Timestamp};
use strataflow_text::Analysis;

use super::temporal::{
    Resolver, Tense, TimeExpression, detect_tense, resolve_best_after_words, tense_of_words,
};
use crate::operator::{
    Extraction, ExtractionInput, Extractor, OperatorError, OperatorId, Timeline, config_hash,
};
use crate::text::{
    Splitter, WordSet, clip, has_event_cue, is_chatter, is_chatter_words, is_first_person,
    is_question, is_stop_word, words,
};

/// The heuristic extractor.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicExtractor;

/// Its operator id.
pub fn id() -> OperatorId {
    OperatorId::new("heuristic-extractor", 1)
}

/// Version 2: also statements about another person of the block by name.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicExtractorV2;

/// Version 2's operator id.
pub fn id_v2() -> OperatorId {
    OperatorId::new("heuristic-extractor", 2)
}

/// Version 3: version 2 on the shared sentence splitter.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicExtractorV3;

/// Version 3's operator id.
pub fn id_v3() -> OperatorId {
    OperatorId::new("heuristic-extractor", 3)
}

/// Version 4: version 3 with the second temporal resolver and agreeing
/// third-person restatements.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicExtractorV4;

/// Version 4's operator id.
pub fn id_v4() -> OperatorId {
    OperatorId::new("heuristic-extractor", 4)
}

/// Version 5: version 4 that also takes informative self-statements.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicExtractorV5;

/// Version 5's operator id.
pub fn id_v5() -> OperatorId {
    OperatorId::new("heuristic-extractor", 5)
}

/// Which statements a version takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Version {
    /// First person only.
    One,
    /// Also third person about a named person of the block.
    Two,
    /// Two, on the shared sentence splitter.
    Three,
    /// Three, with the second resolver and agreeing restatements.
    Four,
    /// Four, with informative self-statements.
    Five,
}

impl Version {
    fn splitter(self) -> Splitter {
        match self {
            Self::One | Self::Two => Splitter::V1,
            Self::Three | Self::Four | Self::Five => Splitter::Shared,
        }
    }

    fn resolver(self) -> Resolver {
        match self {
            Self::One | Self::Two | Self::Three => Resolver::V1,
            Self::Four => Resolver::V2,
            Self::Five => Resolver::V3,
        }
    }
}

impl Extractor for HeuristicExtractor {
    fn id(&self) -> OperatorId {
        id()
    }

    fn config_hash(&self) -> Digest {
        config_hash(&id(), r#"{"min_words":3,"group_by":"time expression"}"#)
    }

    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        extract(input, Version::One)
    }
}

impl Extractor for HeuristicExtractorV2 {
    fn id(&self) -> OperatorId {
        id_v2()
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &id_v2(),
            r#"{"min_words":3,"group_by":"time expression","third_person":"named block people"}"#,
        )
    }

    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        extract(input, Version::Two)
    }
}

impl Extractor for HeuristicExtractorV3 {
    fn id(&self) -> OperatorId {
        id_v3()
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &id_v3(),
            r#"{"min_words":3,"group_by":"time expression","third_person":"named block people","sentences":"strataflow-text"}"#,
        )
    }

    /// It reads the sentences and words of the shared splitter.
    fn reads_analysis(&self) -> bool {
        true
    }

    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        extract(input, Version::Three)
    }
}

impl Extractor for HeuristicExtractorV4 {
    fn id(&self) -> OperatorId {
        id_v4()
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &id_v4(),
            r#"{"min_words":3,"group_by":"time expression","third_person":"named block people","sentences":"strataflow-text","resolver":2,"restatement":"agreeing"}"#,
        )
    }

    /// It reads the sentences and words of the shared splitter.
    fn reads_analysis(&self) -> bool {
        true
    }

    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        extract(input, Version::Four)
    }
}

impl Extractor for HeuristicExtractorV5 {
    fn id(&self) -> OperatorId {
        id_v5()
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &id_v5(),
            r#"{"min_words":3,"group_by":"time expression","third_person":"named block people","sentences":"strataflow-text","resolver":2,"restatement":"agreeing","self_statements":1}"#,
        )
    }

    /// It reads the sentences and words of the shared splitter.
    fn reads_analysis(&self) -> bool {
        true
    }

    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError> {
        extract(input, Version::Five)
    }
}

fn extract(input: &ExtractionInput<'_>, version: Version) -> Result<Extraction, OperatorError> {
    let people = block_people(input);
    let mut events = Vec::new();
    for (index, (message_id, message)) in input.target.messages.iter().enumerate() {
        if !matches!(message.role, Role::User | Role::Assistant) {
            continue;
        }
        let others: Vec<&str> = match version {
            Version::One => Vec::new(),
            Version::Two | Version::Three | Version::Four | Version::Five => {
                let speaker = speaker_name(message);
                people
                    .iter()
                    .filter(|p| **p != speaker)
                    .map(String::as_str)
                    .collect()
            }
        };
        let analysis = input.target.analysis(index);
        for group in statement_groups(message, analysis, &others, version) {
            events.push(event_of(
                input,
                *message_id,
                message,
                &group,
                &people,
                version,
            ));
        }
    }
    supersede_cancelled_plans(&mut events, &input.timeline, version.splitter())?;
    let reason = if events.is_empty() {
        "no first-person statement of an event, plan or preference".to_owned()
    } else {
        format!("{} event statement(s)", events.len())
    };
    Ok(Extraction {
        should_extract: !events.is_empty(),
        reason,
        events,
    })
}

/// The speaker's display name, else the role's label.
pub fn speaker_name(message: &Message) -> String {
    message
        .speaker
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map_or_else(|| message.role.label().to_owned(), str::to_owned)
}

/// Statements of one message that refer to one time.
struct Group<'a> {
    sentences: Vec<String>,
    time: Option<TimeExpression>,
    /// The [`words`] of the sentences, in order, when the version's
    /// selection read them (version 5), else empty: the words of the joined
    /// sentences are those of each in turn (no word spans a space). Borrowed
    /// from the carried analysis when there is one.
    words: Vec<Cow<'a, str>>,
    /// How many of [`Group::words`] are the first sentence's.
    first_words: usize,
}

/// `others`: people of the block (not the speaker) whose named statements
/// count too (version 2; empty for version 1). `analysis`: the message's
/// carried text analysis, read by the versions on the shared splitter
/// (its sentences and words are theirs); else they split the text here.
fn statement_groups<'a>(
    message: &'a Message,
    analysis: Option<&'a Analysis>,
    others: &[&str],
    version: Version,
) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    // A time stated in a sentence that is not itself a statement ("Last
    // night was amazing!", "Guess what I did this week?") dates the next
    // statement of the message that states no time of its own.
    let mut carried: Option<TimeExpression> = None;
    // The dates of the message's sentences so far, for "that Saturday"
    // (read by the third resolver only).
    let mut earlier: Vec<TimeExpression> = Vec::new();
    // Each sentence with its words when the carried analysis gives them.
    let sentences: Vec<(&str, Option<Vec<&'a str>>)> = match analysis {
        Some(a) if version.splitter() == Splitter::Shared => a
            .sentences
            .iter()
            .map(|s| (s.text(&message.content), Some(s.word_list())))
            .collect(),
        _ => version
            .splitter()
            .sentences(&message.content)
            .into_iter()
            .map(|s| (s.text, None))
            .collect(),
    };
    for (text, given) in sentences {
        let given = given.as_deref();
        let best =
            resolve_best_after_words(text, given, &earlier, message.time, version.resolver());
        earlier.extend(best.iter().cloned());
        let states_time = best
            .as_ref()
            .is_some_and(|t| t.basis != TimeBasis::Inferred);
        let (taken, mut words) = if version == Version::Five {
            taken_words_v5(text, given, states_time, others)
                .map_or((false, Vec::new()), |w| (true, w))
        } else {
            (
                is_statement_given(text, given, states_time, others),
                Vec::new(),
            )
        };
        if !taken {
            if states_time {
                carried = best;
            }
            continue;
        }
        let time = best.or_else(|| carried.take());
        match (time, groups.last_mut()) {
            (None, Some(last)) => {
                last.sentences.push(text.to_owned());
                last.words.append(&mut words);
            }
            (Some(t), Some(last))
                if last.time.as_ref().is_some_and(|l| {
                    (l.happened_start, l.happened_end) == (t.happened_start, t.happened_end)
                }) =>
            {
                last.sentences.push(text.to_owned());
                last.words.append(&mut words);
            }
            (time, _) => groups.push(Group {
                sentences: vec![text.to_owned()],
                time,
                first_words: words.len(),
                words,
            }),
        }
    }
    groups
}

/// A statement: not a question or a reaction, at least three words, and
/// either first person with an event, progressive or preference cue, or a
/// sentence of four words or more that states a time ("Finishing up the
/// choreography for a festival next month.").
#[cfg(test)]
fn is_statement(sentence: &str, states_time: bool, others: &[&str]) -> bool {
    is_statement_given(sentence, None, states_time, others)
}

/// [`is_statement`] with the sentence's [`words`] when already computed
/// (`given`).
fn is_statement_given(
    sentence: &str,
    given: Option<&[&str]>,
    states_time: bool,
    others: &[&str],
) -> bool {
    if is_question(sentence) {
        return false;
    }
    fn past_question<W: AsRef<str>>(
        sentence: &str,
        w: &[W],
        states_time: bool,
        others: &[&str],
    ) -> bool {
        !(is_chatter_words(w) || sentence.starts_with("[image:"))
            && is_statement_words(sentence, w, states_time, others)
    }
    match given {
        Some(w) => past_question(sentence, w, states_time, others),
        None => past_question(sentence, &words(sentence), states_time, others),
    }
}

/// [`is_statement`] past its question and chatter test, on the sentence's
/// [`words`] `w`.
fn is_statement_words<W: AsRef<str>>(
    sentence: &str,
    w: &[W],
    states_time: bool,
    others: &[&str],
) -> bool {
    if w.len() < 3 {
        return false;
    }
    // The tests are pure: the cheapest run first, the cues only for a
    // sentence with a subject.
    (states_time && w.len() >= 4)
        || ((is_first_person(w) || names_another(sentence, w, others))
            && (has_event_cue(w) || is_progressive(w) || is_preference(w)))
}

/// Version 5's choice of a sentence: `(is_statement || is_self_statement)
/// && !is_pleasantry`, with the question and chatter tests and the words
/// of the sentence computed once; the words of a sentence taken.
fn taken_words_v5<'a>(
    sentence: &str,
    given: Option<&[&'a str]>,
    states_time: bool,
    others: &[&str],
) -> Option<Vec<Cow<'a, str>>> {
    if is_question(sentence) || sentence.starts_with("[image:") {
        return None;
    }
    fn taken<W: AsRef<str>>(sentence: &str, w: &[W], states_time: bool, others: &[&str]) -> bool {
        !is_chatter_words(w)
            && (is_statement_words(sentence, w, states_time, others)
                || is_self_statement_words(sentence, w, others))
            && !is_pleasantry_words(w)
    }
    match given {
        Some(w) => taken(sentence, w, states_time, others)
            .then(|| w.iter().map(|&x| Cow::Borrowed(x)).collect()),
        None => {
            let w = words(sentence);
            taken(sentence, &w, states_time, others)
                .then(|| w.into_iter().map(Cow::Owned).collect())
        }
    }
}

/// An informative self-statement (version 5): not a question, a reaction,
/// an imperative or `let's`; four words or more; its subject is the speaker
/// (`I`, `we`, `my …`, `our …`), a named person of the block or the one
/// listener (`names_another`); and at least two informative words
/// ([`informative_words`]).
pub fn is_self_statement(sentence: &str, others: &[&str]) -> bool {
    if is_question(sentence) || is_chatter(sentence) || sentence.starts_with("[image:") {
        return false;
    }
    is_self_statement_words(sentence, &words(sentence), others)
}

/// [`is_self_statement`] past its question and chatter test, on the
/// sentence's [`words`] `w`.
fn is_self_statement_words<W: AsRef<str>>(sentence: &str, w: &[W], others: &[&str]) -> bool {
    // Leading interjections ("Yeah, I painted that …") are no subject.
    let start = w
        .iter()
        .position(|x| !INTERJECTION_SET.contains(x.as_ref()))
        .unwrap_or(w.len());
    let Some(rest) = w.get(start..) else {
        return false;
    };
    if rest.len() < 4 {
        return false;
    }
    let first = rest.first().map_or("", AsRef::as_ref);
    if NON_STATEMENT_START_SET.contains(first) {
        return false;
    }
    let subject = is_first_person(rest) || names_another(sentence, w, others);
    subject && informative_words(rest) >= 2
}

/// Words of a sentence that carry information: not stop words, not
/// interjections, pronouns or feeling words, of three letters or more.
pub fn informative_words<W: AsRef<str>>(w: &[W]) -> usize {
    w.iter()
        .map(AsRef::as_ref)
        .filter(|x| {
            x.chars().filter(|c| c.is_alphabetic()).count() >= 3
                && !is_stop_word(x)
                && !INTERJECTION_SET.contains(x)
                && !FEELING_SET.contains(x)
                && !PRONOUN_SET.contains(x)
        })
        .count()
}

/// Interjections and reaction openers.
#[rustfmt::skip]
const INTERJECTIONS: &[&str] = &[
    "yeah", "yes", "yep", "yup", "no", "nope", "oh", "ohh", "ah", "aw", "aww", "awww", "wow",
    "hey", "hi", "hello", "ok", "okay", "well", "so", "haha", "hahaha", "lol", "omg", "hmm", "um",
    "uh", "totally", "absolutely", "definitely", "exactly", "sure", "true", "agreed", "thanks",
    "thank", "congrats", "congratulations", "cheers", "bye", "sorry", "also", "anyway", "honestly",
    "btw", "ya", "yay", "woah", "whoa", "gosh", "man", "dude", "cool", "nice", "great",
    "awesome", "amazing", "sweet", "right", "indeed", "alright",
];

/// [`INTERJECTIONS`] for look-ups.
static INTERJECTION_SET: WordSet = WordSet::new(INTERJECTIONS);

/// First words of an imperative or a suggestion (not a statement).
#[rustfmt::skip]
const NON_STATEMENT_STARTS: &[&str] = &[
    "let's", "lets", "let", "please", "remember", "remind", "keep", "take", "check", "look",
    "tell", "don't", "do", "try", "make", "go", "come", "see", "imagine", "stay", "enjoy",
    "hang", "good", "best", "glad", "sounds", "that's", "that", "it's", "you're", "you",
    "what", "how", "here's", "there's", "hope", "wishing", "wish", "can't", "cheers",
];

/// [`NON_STATEMENT_STARTS`] for look-ups.
static NON_STATEMENT_START_SET: WordSet = WordSet::new(NON_STATEMENT_STARTS);

/// Feeling and reaction words: no information on their own.
#[rustfmt::skip]
const FEELINGS: &[&str] = &[
    "amazing", "awesome", "glad", "happy", "proud", "sorry", "thankful", "grateful",
    "appreciate", "appreciated", "excited", "exciting", "thrilled", "lovely", "wonderful",
    "beautiful", "incredible", "fantastic", "sweet", "kind", "nice", "cool", "great", "love",
    "loved", "lucky", "sad", "hear", "heard", "means", "mean", "meant", "totally", "agree",
    "inspiring", "inspired", "stuff", "glad", "super", "pretty", "hope", "hoping", "wish", "miss",
    "care", "luck", "support", "cheering", "rooting", "words", "tough", "hard", "easy", "true",
    "definitely", "absolutely", "always", "sometimes", "everything", "anything", "nothing",
    "someone", "anyone", "everyone", "lots", "thing", "stuff", "bit", "kinda", "sorta",
];

/// [`FEELINGS`] for look-ups.
static FEELING_SET: WordSet = WordSet::new(FEELINGS);

/// Pronouns and contractions that are not stop words.
#[rustfmt::skip]
const PRONOUNS: &[&str] = &[
    "you've", "you'll", "you'd", "yours", "yourself", "she's", "he's", "they're", "they've",
    "they'll", "it'll", "that'll", "we've", "we'll", "we'd", "mine", "myself", "ourselves",
    "ours", "hers", "theirs", "itself", "there's", "here's", "can't", "won't", "didn't",
    "doesn't", "isn't", "aren't", "wasn't", "weren't", "haven't", "hasn't", "couldn't",
    "wouldn't", "shouldn't", "i'll", "i'd", "i've",
];

/// [`PRONOUNS`] for look-ups.
static PRONOUN_SET: WordSet = WordSet::new(PRONOUNS);

/// The sentence starts with the name of one of `others` (or a prefix of it
/// of three letters or more, "Mel" for "Melanie") as its subject: a name
/// followed by a comma addresses that person ("Caroline, so glad …") and
/// does not count.
///
/// `w`: the sentence's [`words`].
fn names_another<W: AsRef<str>>(sentence: &str, w: &[W], others: &[&str]) -> bool {
    let Some(raw) = sentence.split_whitespace().next() else {
        return false;
    };
    // Said to the one other person of the block, about them.
    if others.len() == 1
        && w.iter()
            .any(|w| matches!(w.as_ref(), "you" | "you've" | "you're" | "your"))
    {
        return true;
    }
    if raw.ends_with(',') {
        return false;
    }
    let first = raw.trim_matches(|c: char| !c.is_alphanumeric());
    first.chars().count() >= 3
        && first.chars().next().is_some_and(char::is_uppercase)
        && others.iter().any(|o| {
            o.split_whitespace()
                .next()
                .is_some_and(|n| n.starts_with(first))
        })
}

fn is_progressive<W: AsRef<str>>(w: &[W]) -> bool {
    w.windows(2).any(|p| match p {
        [a, b] => {
            matches!(a.as_ref(), "i'm" | "we're" | "am" | "are" | "currently")
                && b.as_ref().ends_with("ing")
        }
        _ => false,
    }) || w.iter().any(|x| x.as_ref() == "currently")
}

fn is_preference<W: AsRef<str>>(w: &[W]) -> bool {
    w.iter().any(|x| {
        matches!(
            x.as_ref(),
            "love" | "like" | "prefer" | "enjoy" | "hate" | "favorite" | "favourite"
        )
    })
}

fn event_of(
    input: &ExtractionInput<'_>,
    message_id: RecordId,
    message: &Message,
    group: &Group<'_>,
    people: &[String],
    version: Version,
) -> Event {
    let speaker = speaker_name(message);
    let text = group.sentences.join(" ");
    let joined: Vec<Cow<'_, str>>;
    let w: &[Cow<'_, str>] = if group.words.is_empty() {
        joined = words(&text).into_iter().map(Cow::Owned).collect();
        &joined
    } else {
        &group.words
    };
    // The sentence that opened the group sets its tense.
    let first = group.sentences.first().map_or("", String::as_str);
    let tense = group.time.as_ref().map_or_else(
        || match group.words.get(..group.first_words) {
            // The first sentence's words, read by version 5's selection.
            Some(first_words) if !group.words.is_empty() => tense_of_words(first_words),
            _ => detect_tense(first),
        },
        |t| t.tense,
    );
    let mut status = occurrence(w, tense);
    let mut event_type = event_type(w, status);
    if version == Version::Five {
        if is_wished_completion(w) {
            // "Priya wants the cutover done": a wish, not a completion.
            status = Occurrence::Planned;
            event_type = EventType::Plan;
        } else if is_acknowledgement(first) && status == Occurrence::Planned {
            // "Got it: Porto 14–17 May": confirmed arrangements.
            event_type = EventType::Plan;
        }
    }
    let (happened_start, happened_end, precision, basis, original_text) = match &group.time {
        Some(t) => (
            t.happened_start,
            t.happened_end,
            t.precision,
            t.basis,
            Some(t.text.clone()),
        ),
        None if status == Occurrence::Ongoing => {
            let (start, end) = mention_day(message.time);
            (
                Some(start),
                Some(end),
                Precision::Day,
                TimeBasis::Inferred,
                None,
            )
        }
        None => (None, None, Precision::Unknown, TimeBasis::Unknown, None),
    };
    let restated: Vec<String> = group
        .sentences
        .iter()
        .map(|s| match version {
            Version::Four => third_person_v2(s, &speaker),
            Version::Five => third_person_v3(s, &speaker),
            _ => third_person(s, &speaker),
        })
        .collect();
    let title = clip(restated.first().map_or("", String::as_str), 100);
    let summary = clip(&restated.join(" "), 600);
    let year_basis = group
        .time
        .as_ref()
        .and_then(|t| t.year_basis)
        .map_or_else(String::new, |b| format!("; {}", b.phrase()));
    let narrative = format!(
        "{summary} (said {}; {}{year_basis})",
        message.time.to_rfc3339(),
        match (happened_start, happened_end) {
            (Some(s), Some(e)) if s == e => format!("happened {}", s.to_rfc3339()),
            (Some(s), Some(e)) =>
                format!("happened between {} and {}", s.to_rfc3339(), e.to_rfc3339()),
            _ => "time it happened unknown".to_owned(),
        }
    );
    let mut participants = vec![speaker.clone()];
    for p in mentioned_people(&group.sentences, people, &speaker) {
        if !participants.contains(&p) {
            participants.push(p);
        }
    }
    let mut tags = vec![event_type.name().to_owned()];
    tags.extend(topic_words(w).into_iter().take(5));
    Event {
        tenant: input.target.block.tenant.clone(),
        block: input.target.id,
        source_messages: vec![message_id],
        title,
        summary,
        narrative,
        tags,
        quotes: group.sentences.clone(),
        temporal: EventTemporal {
            mentioned_at: message.time,
            happened_start,
            happened_end,
            original_text,
            precision,
            basis,
            status,
            participants,
            event_type,
            supersedes: Vec::new(),
            conflicts_with: Vec::new(),
        },
        scope: Scope::User,
        criticality: criticality(w),
        confidence_milli: match basis {
            TimeBasis::Explicit => 900,
            TimeBasis::Relative => 850,
            TimeBasis::Inferred => 700,
            TimeBasis::Unknown => 600,
        },
    }
}

/// The mention's calendar day in its offset (UTC when unknown).
fn mention_day(t: SourceTime) -> (Timestamp, Timestamp) {
    const DAY: i64 = 86_400_000;
    let offset = i64::from(t.offset_minutes.unwrap_or(0)) * 60_000;
    let local = t.utc_ms + offset;
    let start = local.div_euclid(DAY) * DAY - offset;
    (Timestamp(start), Timestamp(start + DAY - 1))
}

fn occurrence<W: AsRef<str>>(w: &[W], tense: Tense) -> Occurrence {
    let has = |x: &str| w.iter().any(|y| y.as_ref() == x);
    if has("cancelled") || has("canceled") || has("cancel") || (has("called") && has("off")) {
        Occurrence::Cancelled
    } else if tense == Tense::Future {
        Occurrence::Planned
    } else if is_progressive(w) || tense == Tense::Present {
        Occurrence::Ongoing
    } else {
        Occurrence::Occurred
    }
}

fn event_type<W: AsRef<str>>(w: &[W], status: Occurrence) -> EventType {
    let any = |list: &[&str]| {
        w.iter().map(AsRef::as_ref).any(|x| {
            list.contains(&x)
                || list
                    .iter()
                    .any(|p| p.ends_with('*') && x.starts_with(p.trim_end_matches('*')))
        })
    };
    if status == Occurrence::Cancelled {
        EventType::Cancellation
    } else if any(&["decided", "decide", "decision", "chose"]) {
        EventType::Decision
    } else if any(&[
        "released",
        "release",
        "launched",
        "launch",
        "shipped",
        "published",
        "opened",
    ]) {
        EventType::Release
    } else if any(&["migrat*"]) {
        EventType::Migration
    } else if any(&[
        "finished",
        "completed",
        "passed",
        "graduated",
        "done",
        "accepted",
    ]) {
        EventType::TaskCompleted
    } else if any(&[
        "meeting",
        "met",
        "meetup",
        "conference",
        "interview",
        "interviews",
        "council",
    ]) {
        EventType::Meeting
    } else if any(&[
        "accident", "hurt", "injured", "broke", "outage", "incident", "crash", "lost",
    ]) {
        EventType::Incident
    } else if any(&[
        "together",
        "collaborat*",
        "teamed",
        "joined",
        "join",
        "group",
    ]) {
        EventType::Collaboration
    } else if any(&["switched", "changed", "moved", "started", "new"]) {
        EventType::Change
    } else if status == Occurrence::Planned {
        EventType::Plan
    } else {
        EventType::Other
    }
}

fn criticality<W: AsRef<str>>(w: &[W]) -> Criticality {
    let any = |list: &[&str]| w.iter().any(|x| list.contains(&x.as_ref()));
    if any(&[
        "allergic",
        "allergy",
        "emergency",
        "hospital",
        "accident",
        "injured",
    ]) {
        Criticality::Safety
    } else if any(&["prefer", "love", "favorite", "favourite", "hate", "enjoy"]) {
        Criticality::Preference
    } else if any(&[
        "identify",
        "transgender",
        "born",
        "name",
        "religion",
        "married",
    ]) {
        Criticality::Identity
    } else {
        Criticality::Routine
    }
}

fn topic_words<W: AsRef<str>>(w: &[W]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in w.iter().map(AsRef::as_ref) {
        // Fewer than four bytes is fewer than four characters.
        if x.len() >= 4
            && x.chars().count() >= 4
            && !is_stop_word(x)
            && x.chars().all(char::is_alphabetic)
            && !out.iter().any(|o| o == x)
        {
            out.push(x.to_owned());
        }
    }
    out
}

/// Restates a first-person sentence about `speaker` in the third person.
pub fn third_person(sentence: &str, speaker: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let tokens: Vec<&str> = sentence.split(' ').collect();
    let mut i = 0;
    while let Some(tok) = tokens.get(i) {
        let core = tok.trim_start_matches(|c: char| !c.is_alphanumeric());
        // `core` is a suffix of `tok` and `bare` a prefix of `core` (trims),
        // so both `get`s always succeed: the defaults are never taken.
        let lead = tok.get(..tok.len() - core.len()).unwrap_or_default();
        let bare = core.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
        let tail = core.get(bare.len()..).unwrap_or_default();
        let next = tokens.get(i + 1).map(|t| t.to_ascii_lowercase());
        let replaced = match bare.replace('’', "'").as_str() {
            "I'm" => Some(format!("{speaker} is")),
            "I've" => Some(format!("{speaker} has")),
            "I'll" => Some(format!("{speaker} will")),
            "I'd" => Some(format!("{speaker} would")),
            "I" if next.as_deref() == Some("am") => {
                i += 1;
                Some(format!("{speaker} is"))
            }
            "I" => Some(speaker.to_owned()),
            "my" | "My" => Some(format!("{speaker}'s")),
            "me" | "myself" => Some(speaker.to_owned()),
            _ => None,
        };
        out.push(match replaced {
            Some(r) => format!("{lead}{r}{tail}"),
            None => (*tok).to_owned(),
        });
        i += 1;
    }
    out.join(" ")
}

/// Verbs that start an imperative ("Remind me to …", "Please book …").
const IMPERATIVE_STARTS: &[&str] = &[
    "remind", "book", "tell", "let", "let's", "please", "send", "call", "add", "remember", "check",
    "find", "show", "give", "help", "make", "take", "keep", "put", "note", "cancel", "change",
    "set", "use", "try", "ask", "bring", "pick", "buy", "reserve", "schedule", "write", "save",
    "don't", "email", "text", "look", "move", "update", "delete", "remove", "forward", "grab",
    "get", "stop", "wait", "imagine", "guess", "go",
];

/// Words that may stand between "I" and its verb ("I really like").
const SUBJECT_ADVERBS: &[&str] = &[
    "also",
    "really",
    "just",
    "still",
    "always",
    "never",
    "usually",
    "often",
    "sometimes",
    "actually",
    "totally",
    "definitely",
    "absolutely",
    "honestly",
    "mostly",
    "generally",
    "rarely",
    "truly",
    "only",
    "even",
    "already",
    "normally",
    "typically",
    "certainly",
    "personally",
    "kinda",
    "sort",
    "kind",
    "of",
    "def",
    "seriously",
    "genuinely",
    "finally",
    "now",
    "then",
    "too",
    "not",
    "much",
    "rather",
    "totally",
    "simply",
];

/// Verbs whose first-person form is also the third-person one (modals and
/// past forms of "be", "have", "do").
const SAME_IN_THIRD: &[&str] = &[
    "can",
    "could",
    "will",
    "would",
    "shall",
    "should",
    "may",
    "might",
    "must",
    "can't",
    "cannot",
    "couldn't",
    "won't",
    "wouldn't",
    "shouldn't",
    "mustn't",
    "did",
    "didn't",
    "was",
    "wasn't",
    "had",
    "hadn't",
    "used",
    "ought",
];

/// The third-person singular of a first-person present verb: "prefer" →
/// "prefers", "have" → "has", "go" → "goes", "try" → "tries", "don't" →
/// "doesn't". Modals and past forms are returned unchanged; `None` when the
/// word does not look like a verb.
pub(crate) fn third_singular(verb: &str) -> Option<String> {
    let lower = verb.to_lowercase();
    let irregular = match lower.as_str() {
        "am" => Some("is"),
        "have" => Some("has"),
        "do" => Some("does"),
        "don't" => Some("doesn't"),
        "haven't" => Some("hasn't"),
        "go" => Some("goes"),
        "were" => Some("was"),
        "weren't" => Some("wasn't"),
        "aren't" | "ain't" => Some("isn't"),
        _ => None,
    };
    if let Some(v) = irregular {
        return Some(v.to_owned());
    }
    if SAME_IN_THIRD.contains(&lower.as_str())
        || super::temporal::is_past_verb(&lower)
        || lower.ends_with("ing")
    {
        return Some(verb.to_owned());
    }
    if !lower.chars().all(|c| c.is_ascii_lowercase()) || lower.len() < 2 {
        return None;
    }
    let consonant_y = lower.ends_with('y')
        && lower
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| !"aeiou".contains(c));
    Some(if consonant_y {
        format!("{}ies", lower.trim_end_matches('y'))
    } else if ["s", "sh", "ch", "x", "z", "o"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    })
}

/// Whether a sentence is an imperative: its first word is one of
/// [`IMPERATIVE_STARTS`].
fn is_imperative(sentence: &str) -> bool {
    // Only the first word is folded (the rest are not read).
    strataflow_text::tokens::word_iter(sentence)
        .next()
        .is_some_and(|f| IMPERATIVE_STARTS.contains(&f.folded().as_str()))
}

/// A pleasantry or imperative addressed to the listener (version 5): no
/// statement ("Enjoy your lunch, and say hi to Marta!", "Let me know what
/// you decide.", "Take care!").
pub fn is_pleasantry(sentence: &str) -> bool {
    is_pleasantry_words(&words(sentence))
}

/// [`is_pleasantry`] on a sentence's [`words`] `w`.
fn is_pleasantry_words<W: AsRef<str>>(w: &[W]) -> bool {
    let start = w
        .iter()
        .position(|x| !INTERJECTION_SET.contains(x.as_ref()))
        .unwrap_or(w.len());
    let mut rest = w.get(start..).unwrap_or_default();
    // "Sounds good, have a lovely trip!"
    if rest.first().is_some_and(|x| x.as_ref() == "sounds") {
        rest = rest.get(2..).unwrap_or_default();
    }
    let at = |i: usize| rest.get(i).map_or("", AsRef::as_ref);
    matches!(
        at(0),
        "enjoy" | "have" | "say" | "feel" | "safe" | "good" | "best" | "happy" | "give" | "wishing"
    ) || matches!(
        (at(0), at(1), at(2)),
        ("take", "care", _)
            | ("let", "me" | "us", "know")
            | ("keep", "me" | "us", "posted")
            | ("don't", "worry" | "hesitate", _)
    )
}

/// "Got it", "Noted", "Understood", "Okay": an acknowledgement opening the
/// sentence (version 5).
fn is_acknowledgement(sentence: &str) -> bool {
    let w = words(sentence);
    matches!(
        (
            w.first().map_or("", String::as_str),
            w.get(1).map_or("", String::as_str)
        ),
        ("got", "it") | ("noted" | "understood" | "confirmed", _)
    )
}

/// A completion word ("done", "finished") inside a wish or plan ("wants
/// the cutover done", "needs it finished by Friday", version 5).
fn is_wished_completion<W: AsRef<str>>(w: &[W]) -> bool {
    let wish = w.iter().position(|x| {
        matches!(
            x.as_ref(),
            "want"
                | "wants"
                | "wanted"
                | "need"
                | "needs"
                | "hope"
                | "hopes"
                | "wish"
                | "wishes"
                | "expect"
                | "expects"
                | "plan"
                | "plans"
        )
    });
    wish.is_some_and(|i| {
        w.iter()
            .skip(i + 1)
            .any(|x| matches!(x.as_ref(), "done" | "finished" | "completed"))
    })
}

/// Version 5's restatement: [`third_person_v2`], with "let me X" read as
/// the speaker's intent ("let me paste the confirmation" → "Ana will paste
/// the confirmation"); a "let me know" request is kept as a quote. Never
/// "let Ana".
pub fn third_person_v3(sentence: &str, speaker: &str) -> String {
    // Every form read below holds `let ` in some ASCII case (no other
    // character lowercases to `l`, `e`, `t` or a space): without it, the
    // sentence is version 4's.
    if !crate::text::contains_any4_ascii_ci(sentence, [b"let "]) {
        return third_person_v2(sentence, speaker);
    }
    // ASCII text lowercases as ASCII: no copy needed to search it.
    let asks_to_be_told = if sentence.is_ascii() {
        crate::text::contains_ascii_ci(sentence, "let me know")
            || crate::text::contains_ascii_ci(sentence, "let us know")
    } else {
        let lower = sentence.to_lowercase();
        lower.contains("let me know") || lower.contains("let us know")
    };
    if asks_to_be_told {
        return format!("{speaker} said: \"{}\"", sentence.trim());
    }
    let mut out = String::new();
    let mut rest = sentence;
    let next = |r: &str| match (r.find("let me "), r.find("Let me ")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    while let Some(i) = next(rest) {
        let (before, after) = rest.split_at(i);
        out.push_str(before);
        out.push_str("I will ");
        // Both spellings are seven bytes long.
        rest = after.get("let me ".len()..).unwrap_or_default();
    }
    out.push_str(rest);
    third_person_v2(&out, speaker)
}

/// Restates a first-person sentence about `speaker` in the third person,
/// agreeing in person and number (version 4): "I prefer" → "Ana prefers",
/// "I'm" / "I am" → "Ana is", "I have" / "I've" → "Ana has", "I don't" →
/// "Ana doesn't", "I was" → "Ana was", "my" / "mine" → "Ana's", "me" /
/// "myself" → "Ana"; "Marta and I love" keeps the plural verb. Questions
/// and imperatives are not restated: they are kept as quotes (`Ana asked:
/// "…?"`, `Ana said: "Remind me …"`).
pub fn third_person_v2(sentence: &str, speaker: &str) -> String {
    let trimmed = sentence.trim();
    if is_question(trimmed) {
        return format!("{speaker} asked: \"{trimmed}\"");
    }
    if is_imperative(trimmed) {
        return format!("{speaker} said: \"{trimmed}\"");
    }
    let tokens = split_at_spaces(sentence);
    // The sentence with each restated word replaced: the text between two
    // replacements is copied as one piece (the tokens are the sentence's
    // pieces between single spaces, so it is theirs joined by spaces).
    let mut out = String::with_capacity(sentence.len() + 16);
    // `sentence` before this byte is in `out`.
    let mut copied = 0;
    // Byte offset of the token being read.
    let mut offset = 0;
    // "I" was just restated as the subject: its verb is still to agree.
    let mut pending = false;
    // The previous word is `and`, `or` or `nor` (in any case: no other
    // letter lowercases to theirs).
    let mut prev_conjunction = false;
    // The word before the previous one, as written.
    let mut before_prev = "";
    let mut prev_raw = "";
    let mut i = 0;
    while let Some(tok) = tokens.get(i) {
        let start = offset;
        // End of what a restatement replaces: this token, or "am" after "I".
        let mut end = start + tok.len();
        offset = end + 1;
        let core = tok.trim_start_matches(|c: char| !c.is_alphanumeric());
        // As in `third_person`: both `get`s always succeed.
        let lead = tok.get(..tok.len() - core.len()).unwrap_or_default();
        let bare = core.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
        let tail = core.get(bare.len()..).unwrap_or_default();
        let norm: std::borrow::Cow<'_, str> = if has_curly_apostrophe(bare) {
            bare.replace('’', "'").into()
        } else {
            bare.into()
        };
        let was_pending = pending;
        pending = false;
        let mut restated: Option<String> = None;
        // Every word restated below starts with `I`, `m` or `M`, unless it
        // is the verb after "I".
        if was_pending || matches!(norm.as_bytes().first(), Some(b'I' | b'm' | b'M')) {
            // Read only after `I` and `I'd`.
            let next = || {
                tokens
                    .get(i + 1)
                    .map(|t| {
                        t.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
                            .replace('’', "'")
                            .to_lowercase()
                    })
                    .unwrap_or_default()
            };
            // "Marta and I", "my sister and I": a plural subject (not "…, and
            // I coach").
            let plural = prev_conjunction
                && (before_prev.chars().next().is_some_and(char::is_uppercase)
                    || RELATIONS.contains(&before_prev.to_lowercase().as_str()));
            match &*norm {
                "I'm" => restated = Some(format!("{speaker} is")),
                "I've" => restated = Some(format!("{speaker} has")),
                "I'll" => restated = Some(format!("{speaker} will")),
                "I'd" => {
                    let had = matches!(next().as_str(), "been" | "had" | "gone" | "done" | "seen");
                    restated = Some(format!("{speaker} {}", if had { "had" } else { "would" }));
                }
                "I" if plural => restated = Some(speaker.to_owned()),
                "I" if tail.is_empty() && next() == "am" => {
                    i += 1;
                    restated = Some(format!("{speaker} is"));
                    // "I am" consumed its verb; a tail on "am" is kept.
                    if let Some(am) = tokens.get(i) {
                        let am_tail = am.trim_start_matches(|c: char| c.is_alphanumeric());
                        restated = Some(format!("{speaker} is{am_tail}"));
                        end = offset + am.len();
                        offset = end + 1;
                    }
                }
                "I" => {
                    restated = Some(speaker.to_owned());
                    pending = tail.is_empty();
                }
                "my" | "My" | "mine" | "Mine" => restated = Some(format!("{speaker}'s")),
                "me" | "Me" | "myself" | "Myself" => restated = Some(speaker.to_owned()),
                _ if was_pending => {
                    let lower = norm.to_lowercase();
                    if SUBJECT_ADVERBS.contains(&lower.as_str()) {
                        pending = tail.is_empty();
                    } else {
                        restated = third_singular(&norm).filter(|v| *v != norm).map(|v| {
                            if has_curly_apostrophe(bare) {
                                v.replace('\'', "’")
                            } else {
                                v
                            }
                        });
                    }
                }
                _ => {}
            }
        }
        if let Some(r) = restated {
            // The token's word (and "am" after "I") becomes `r`; its leading
            // and trailing punctuation stay.
            let from = start + lead.len();
            out.push_str(sentence.get(copied..from).unwrap_or_default());
            out.push_str(&r);
            copied = end - tail.len();
        }
        // A comma or stop after a word ends the phrase it could start.
        before_prev = std::mem::replace(&mut prev_raw, if tail.is_empty() { bare } else { "" });
        prev_conjunction = ["and", "or", "nor"]
            .iter()
            .any(|c| norm.eq_ignore_ascii_case(c));
        i += 1;
    }
    out.push_str(sentence.get(copied..).unwrap_or_default());
    out
}

/// `text.split(' ')`, read as bytes (a space is one byte, never inside a
/// character).
fn split_at_spaces(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / 4 + 1);
    let mut from = 0;
    for (at, b) in text.bytes().enumerate() {
        if b == b' ' {
            out.push(text.get(from..at).unwrap_or_default());
            from = at + 1;
        }
    }
    out.push(text.get(from..).unwrap_or_default());
    out
}

/// Whether `word` holds a `’` (no ASCII word does: the byte search is
/// skipped for it).
fn has_curly_apostrophe(word: &str) -> bool {
    !word.is_ascii() && word.contains('’')
}

/// People of the block: its speakers.
fn block_people(input: &ExtractionInput<'_>) -> Vec<String> {
    let mut people: Vec<String> = Vec::new();
    for (_, m) in input.target.messages {
        if matches!(m.role, Role::User | Role::Assistant) {
            let s = speaker_name(m);
            if !people.contains(&s) {
                people.push(s);
            }
        }
    }
    people
}

const RELATIONS: &[&str] = &[
    "aunt",
    "boss",
    "boyfriend",
    "brother",
    "colleague",
    "cousin",
    "dad",
    "daughter",
    "father",
    "friend",
    "girlfriend",
    "grandfather",
    "grandma",
    "grandmother",
    "grandpa",
    "husband",
    "mentor",
    "mom",
    "mother",
    "partner",
    "sister",
    "son",
    "uncle",
    "wife",
];

/// People named in the sentences: other speakers of the block (or a prefix
/// of at least three letters, "Mel" for "Melanie"), and names after a
/// relation word ("my sister Marta").
fn mentioned_people(sentences: &[String], people: &[String], speaker: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in sentences {
        let tokens: Vec<&str> = s
            .split_whitespace()
            .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
            .collect();
        for (i, tok) in tokens.iter().enumerate() {
            let capitalized = tok.chars().next().is_some_and(char::is_uppercase)
                && tok.chars().skip(1).all(char::is_lowercase)
                && tok.chars().count() >= 3;
            if !capitalized {
                continue;
            }
            let known = people
                .iter()
                .find(|p| p.as_str() != speaker && (p.as_str() == *tok || p.starts_with(*tok)));
            let after_relation = i > 0
                && tokens
                    .get(i - 1)
                    .is_some_and(|prev| RELATIONS.contains(&prev.to_lowercase().as_str()));
            let name = match (known, after_relation) {
                (Some(p), _) => Some(p.clone()),
                (None, true) => Some((*tok).to_owned()),
                _ => None,
            };
            if let Some(n) = name
                && n != speaker
                && !out.contains(&n)
            {
                out.push(n);
            }
        }
    }
    out
}

/// A cancellation supersedes the latest planned event of the same speaker
/// in the timeline that names the same thing: a shared capitalized word
/// other than the speaker ("Sintra"), or at least two shared topic words.
/// The timeline's events are read only when there is a cancellation.
fn supersede_cancelled_plans(
    events: &mut [Event],
    timeline: &Timeline<'_>,
    splitter: Splitter,
) -> Result<(), OperatorError> {
    for e in events.iter_mut() {
        if e.temporal.status != Occurrence::Cancelled {
            continue;
        }
        let timeline = timeline.events()?;
        // Every event of `event_of` names its speaker first.
        let Some(speaker) = e.temporal.participants.first().cloned() else {
            continue;
        };
        let text = e.quotes.join(" ");
        let mine = topic_words(&words(&text));
        let names = capitalized(&text, &speaker, splitter);
        let target = timeline.iter().rev().find(|(_, old)| {
            let old_text = old.quotes.join(" ");
            let shared = topic_words(&words(&old_text))
                .iter()
                .filter(|w| mine.contains(w))
                .count();
            let shared_name = capitalized(&old_text, &speaker, splitter)
                .iter()
                .any(|n| names.contains(n));
            old.temporal.status == Occurrence::Planned
                && old.temporal.participants.first() == Some(&speaker)
                && (shared_name || shared >= 2)
        });
        if let Some((id, _)) = target {
            e.temporal.supersedes.push(*id);
        }
    }
    Ok(())
}

/// Capitalized words after the first word of each sentence, but `I` and
/// the speaker.
fn capitalized(text: &str, speaker: &str, splitter: Splitter) -> Vec<String> {
    splitter
        .sentences(text)
        .iter()
        .flat_map(|s| s.text.split_whitespace().skip(1))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().count() > 1
                && !w.starts_with("I'")
                && *w != speaker
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_sets_answer_as_their_lists() {
        for set in [
            &INTERJECTION_SET,
            &NON_STATEMENT_START_SET,
            &FEELING_SET,
            &PRONOUN_SET,
        ] {
            crate::text::tests::assert_same_answers(set);
        }
    }

    /// Every version given the carried text analysis of its messages
    /// ([`crate::operator::analyse_messages`]) extracts exactly what it
    /// extracts from the raw text: every LoCoMo turn, in blocks of ten
    /// turns, under each of the five versions.
    #[test]
    fn the_carried_analysis_extracts_what_the_raw_text_does() {
        use crate::operator::{BlockInput, analyse_messages};
        use strataflow_record::record::BlockSummary;
        let extractors: [&dyn Extractor; 5] = [
            &HeuristicExtractor,
            &HeuristicExtractorV2,
            &HeuristicExtractorV3,
            &HeuristicExtractorV4,
            &HeuristicExtractorV5,
        ];
        let mut events = 0;
        for (b, (block, msgs)) in crate::projector::heuristic::statements::tests::locomo_blocks()
            .iter()
            .enumerate()
        {
            let summary = BlockSummary {
                tenant: String::new(),
                block: RecordId([9; 32]),
                title: String::new(),
                tags: vec![],
                summary: String::new(),
                key_points: vec![],
                should_extract: true,
            };
            let analyses = analyse_messages(msgs);
            for extractor in extractors {
                let [raw, carried] = [None, Some(analyses.as_slice())].map(|analyses| {
                    let target = BlockInput {
                        id: RecordId([8; 32]),
                        block,
                        messages: msgs,
                        attempt: 1,
                        analyses,
                    };
                    extractor
                        .extract(&ExtractionInput {
                            target,
                            summary: &summary,
                            previous_key_points: None,
                            next_key_points: None,
                            timeline: Timeline::EMPTY,
                        })
                        .unwrap()
                });
                events += raw.events.len();
                assert_eq!(raw, carried, "{} on block {b}", extractor.id());
            }
        }
        assert!(events > 1000, "{events} events");
    }

    #[test]
    fn third_person_restates_the_speaker() {
        assert_eq!(
            third_person("I went to my sister's place and I'm tired.", "Ana"),
            "Ana went to Ana's sister's place and Ana is tired."
        );
        assert_eq!(
            third_person("Yesterday I am here, I've seen it.", "Bo"),
            "Yesterday Bo is here, Bo has seen it."
        );
    }

    /// First-person sentences and their version-4 restatements about "Ana".
    #[rustfmt::skip]
    const THIRD_PERSON_ROWS: &[(&str, &str)] = &[
        ("I prefer window seats, on trains and on planes.", "Ana prefers window seats, on trains and on planes."),
        ("Also, just so you know, I prefer window seats.", "Also, just so you know, Ana prefers window seats."),
        ("I'm tired.", "Ana is tired."),
        ("I’m so excited about the trip.", "Ana is so excited about the trip."),
        ("I am a nurse.", "Ana is a nurse."),
        ("I am.", "Ana is."),
        ("I was in Lisbon in 2022 for a work conference.", "Ana was in Lisbon in 2022 for a work conference."),
        ("I have two cats.", "Ana has two cats."),
        ("I've seen it.", "Ana has seen it."),
        ("I have been to Porto.", "Ana has been to Porto."),
        ("I love my job.", "Ana loves Ana's job."),
        ("My colleague Joao lives there.", "Ana's colleague Joao lives there."),
        ("I like hiking with my dog.", "Ana likes hiking with Ana's dog."),
        ("I go swimming every Monday.", "Ana goes swimming every Monday."),
        ("I do yoga in the morning.", "Ana does yoga in the morning."),
        ("I don't eat meat.", "Ana doesn't eat meat."),
        ("I don’t like crowds.", "Ana doesn’t like crowds."),
        ("I haven't been to Sintra.", "Ana hasn't been to Sintra."),
        ("I try to run daily.", "Ana tries to run daily."),
        ("I play the guitar.", "Ana plays the guitar."),
        ("I watch a lot of films.", "Ana watches a lot of films."),
        ("I wish I had more time.", "Ana wishes Ana had more time."),
        ("I fix old bikes.", "Ana fixes old bikes."),
        ("I think I need a break.", "Ana thinks Ana needs a break."),
        ("I really enjoy painting.", "Ana really enjoys painting."),
        ("I also prefer aisle seats on buses.", "Ana also prefers aisle seats on buses."),
        ("I usually work from home.", "Ana usually works from home."),
        ("I never drink coffee.", "Ana never drinks coffee."),
        ("I always carry a book.", "Ana always carries a book."),
        ("I still live in Lisbon.", "Ana still lives in Lisbon."),
        ("I went to my sister's place.", "Ana went to Ana's sister's place."),
        ("I booked the train last week.", "Ana booked the train last week."),
        ("I just got accepted.", "Ana just got accepted."),
        ("I can swim.", "Ana can swim."),
        ("I will call Joao.", "Ana will call Joao."),
        ("I'll call Joao.", "Ana will call Joao."),
        ("I'd love to go.", "Ana would love to go."),
        ("I'd been there before.", "Ana had been there before."),
        ("I should rest.", "Ana should rest."),
        ("I could help.", "Ana could help."),
        ("I didn't go.", "Ana didn't go."),
        ("I wasn't sure.", "Ana wasn't sure."),
        ("I used to paint.", "Ana used to paint."),
        ("I'm going to Porto.", "Ana is going to Porto."),
        ("I'm not sure.", "Ana is not sure."),
        ("I am not ready.", "Ana is not ready."),
        ("Marta and I love Porto.", "Marta and Ana love Porto."),
        ("Marta and I are going.", "Marta and Ana are going."),
        ("Joao or I have the keys.", "Joao or Ana have the keys."),
        ("Marta keeps sending me pictures.", "Marta keeps sending Ana pictures."),
        ("I bought it for myself.", "Ana bought it for Ana."),
        ("That book is mine.", "That book is Ana's."),
        ("We decided to take the train.", "We decided to take the train."),
        ("I feel great today.", "Ana feels great today."),
        ("I need to rest.", "Ana needs to rest."),
        ("I hope Marta's ankle heals.", "Ana hopes Marta's ankle heals."),
        ("I teach math and I coach football.", "Ana teaches math and Ana coaches football."),
        ("I study biology.", "Ana studies biology."),
        ("I enjoy it and I'm happy.", "Ana enjoys it and Ana is happy."),
        ("I live next to the park.", "Ana lives next to the park."),
        ("I, too, went there.", "Ana, too, went there."),
        ("I mostly cook at home.", "Ana mostly cooks at home."),
        ("I miss my grandmother.", "Ana misses Ana's grandmother."),
        ("I have a dog named Rex.", "Ana has a dog named Rex."),
        ("How should we get from Porto to Lisbon?", "Ana asked: \"How should we get from Porto to Lisbon?\""),
        ("Do I need a visa?", "Ana asked: \"Do I need a visa?\""),
        ("Can you book my train?", "Ana asked: \"Can you book my train?\""),
        ("Remind me to call my mom tomorrow.", "Ana said: \"Remind me to call my mom tomorrow.\""),
        ("Please book me a window seat.", "Ana said: \"Please book me a window seat.\""),
        ("Let's plan Sintra as a full day.", "Ana said: \"Let's plan Sintra as a full day.\""),
        ("Book the hotel for me.", "Ana said: \"Book the hotel for me.\""),
        ("Tell me what I have planned.", "Ana said: \"Tell me what I have planned.\""),
    ];

    /// The first form of [`third_person_v2`] (every token pushed one by
    /// one): the reference the one that copies the text between
    /// restatements must agree with.
    fn third_person_v2_by_tokens(sentence: &str, speaker: &str) -> String {
        let trimmed = sentence.trim();
        if is_question(trimmed) {
            return format!("{speaker} asked: \"{trimmed}\"");
        }
        if is_imperative(trimmed) {
            return format!("{speaker} said: \"{trimmed}\"");
        }
        let tokens: Vec<&str> = sentence.split(' ').collect();
        // The tokens joined by single spaces, as they are restated.
        let mut out = String::with_capacity(sentence.len() + 16);
        // "I" was just restated as the subject: its verb is still to agree.
        let mut pending = false;
        // The previous word is `and`, `or` or `nor` (in any case: no other
        // letter lowercases to theirs).
        let mut prev_conjunction = false;
        // The word before the previous one, as written.
        let mut before_prev = "";
        let mut prev_raw = "";
        // Whether a token is in `out` (a space goes before the next one).
        let mut restated_any = false;
        let mut i = 0;
        while let Some(tok) = tokens.get(i) {
            let core = tok.trim_start_matches(|c: char| !c.is_alphanumeric());
            // As in `third_person`: both `get`s always succeed.
            let lead = tok.get(..tok.len() - core.len()).unwrap_or_default();
            let bare =
                core.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
            let tail = core.get(bare.len()..).unwrap_or_default();
            let norm: std::borrow::Cow<'_, str> = if has_curly_apostrophe(bare) {
                bare.replace('’', "'").into()
            } else {
                bare.into()
            };
            // Read only after `I` and `I'd`.
            let next = || {
                tokens
                    .get(i + 1)
                    .map(|t| {
                        t.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
                            .replace('’', "'")
                            .to_lowercase()
                    })
                    .unwrap_or_default()
            };
            // "Marta and I", "my sister and I": a plural subject (not "…, and
            // I coach").
            let plural = prev_conjunction
                && (before_prev.chars().next().is_some_and(char::is_uppercase)
                    || RELATIONS.contains(&before_prev.to_lowercase().as_str()));
            let mut restated: Option<String> = None;
            let was_pending = pending;
            pending = false;
            match &*norm {
                "I'm" => restated = Some(format!("{speaker} is")),
                "I've" => restated = Some(format!("{speaker} has")),
                "I'll" => restated = Some(format!("{speaker} will")),
                "I'd" => {
                    let had = matches!(next().as_str(), "been" | "had" | "gone" | "done" | "seen");
                    restated = Some(format!("{speaker} {}", if had { "had" } else { "would" }));
                }
                "I" if plural => restated = Some(speaker.to_owned()),
                "I" if tail.is_empty() && next() == "am" => {
                    i += 1;
                    restated = Some(format!("{speaker} is"));
                    // "I am" consumed its verb; a tail on "am" is kept below.
                    if let Some(am) = tokens.get(i) {
                        let am_tail = am.trim_start_matches(|c: char| c.is_alphanumeric());
                        restated = Some(format!("{speaker} is{am_tail}"));
                    }
                }
                "I" => {
                    restated = Some(speaker.to_owned());
                    pending = tail.is_empty();
                }
                "my" | "My" | "mine" | "Mine" => restated = Some(format!("{speaker}'s")),
                "me" | "Me" | "myself" | "Myself" => restated = Some(speaker.to_owned()),
                _ if was_pending => {
                    let lower = norm.to_lowercase();
                    if SUBJECT_ADVERBS.contains(&lower.as_str()) {
                        pending = tail.is_empty();
                    } else {
                        restated = third_singular(&norm).filter(|v| *v != norm).map(|v| {
                            if has_curly_apostrophe(bare) {
                                v.replace('\'', "’")
                            } else {
                                v
                            }
                        });
                    }
                }
                _ => {}
            }
            if restated_any {
                out.push(' ');
            }
            restated_any = true;
            match restated {
                Some(r) => {
                    out.push_str(lead);
                    out.push_str(&r);
                    out.push_str(tail);
                }
                None => out.push_str(tok),
            }
            // A comma or stop after a word ends the phrase it could start.
            before_prev = std::mem::replace(&mut prev_raw, if tail.is_empty() { bare } else { "" });
            prev_conjunction = ["and", "or", "nor"]
                .iter()
                .any(|c| norm.eq_ignore_ascii_case(c));
            i += 1;
        }
        out
    }

    /// Every sentence of the LoCoMo turns (and each turn whole) is restated
    /// as by the first form.
    #[test]
    fn restatement_by_pieces_is_the_restatement_by_tokens() {
        let mut n = 0;
        for (speaker, text) in crate::projector::heuristic::statements::tests::locomo_turns() {
            for s in strataflow_text::sentences::split(&text) {
                assert_eq!(
                    third_person_v2(s.text, &speaker),
                    third_person_v2_by_tokens(s.text, &speaker),
                    "{:?}",
                    s.text
                );
                n += 1;
            }
            assert_eq!(
                third_person_v2(&text, "Ana"),
                third_person_v2_by_tokens(&text, "Ana")
            );
        }
        assert!(n > 1_000, "{n} sentences");
    }

    proptest::proptest! {
        #[test]
        fn spaces_split_as_str_split(text in "[ a’é,]{0,16}") {
            let want: Vec<&str> = text.split(' ').collect();
            proptest::prop_assert_eq!(split_at_spaces(&text), want);
        }
    }

    proptest::proptest! {
        /// Any sequence of the words the restatement reads, with
        /// punctuation, curly apostrophes and runs of spaces.
        #[test]
        fn restatement_by_pieces_agrees_for_any_words(
            words in proptest::collection::vec(
                "(I|I'm|I’m|I'd|I’ve|I'll|am|am,|my|My|mine|me|Me|myself|and|or|Marta|sister|really|go|goes|been|love|\\(I|I,|\"I|x|é|)",
                0..12,
            ),
            seps in proptest::collection::vec("( |  |, | - )", 12),
        ) {
            let mut sentence = String::new();
            for (w, sep) in words.iter().zip(&seps) {
                sentence.push_str(w);
                sentence.push_str(sep);
            }
            proptest::prop_assert_eq!(
                third_person_v2(&sentence, "Ana"),
                third_person_v2_by_tokens(&sentence, "Ana")
            );
        }
    }

    #[test]
    fn third_person_v2_agrees_in_person_and_number() {
        let failures: Vec<String> = THIRD_PERSON_ROWS
            .iter()
            .filter_map(|(first, want)| {
                let got = third_person_v2(first, "Ana");
                (got != *want).then(|| format!("{first:?}: got {got:?}, want {want:?}"))
            })
            .collect();
        assert!(
            THIRD_PERSON_ROWS.len() >= 60,
            "{} rows",
            THIRD_PERSON_ROWS.len()
        );
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
        // Version 1 is unchanged.
        assert_eq!(
            third_person("I prefer window seats.", "Ana"),
            "Ana prefer window seats."
        );
    }

    #[test]
    fn statements_need_first_person_and_a_cue() {
        assert!(is_statement(
            "I went to a LGBTQ support group yesterday and it was so powerful.",
            true,
            &[]
        ));
        assert!(is_statement(
            "We're thinking about going camping next month.",
            true,
            &[]
        ));
        assert!(is_statement("I love pottery and painting.", false, &[]));
        assert!(is_statement(
            "Finishing up choreography for a festival next month.",
            true,
            &[]
        ));
        assert!(!is_statement("That's awesome, Caroline!", false, &[]));
        assert!(!is_statement("What did you do yesterday?", true, &[]));
        assert!(!is_statement("The weather was nice.", false, &[]));
    }

    #[test]
    fn version_two_also_takes_named_statements_about_others() {
        let s = "Melanie went camping with the kids last week.";
        assert!(!is_statement(s, false, &[]), "version 1: not first person");
        assert!(is_statement(s, false, &["Melanie"]));
        assert!(is_statement(
            "Mel went camping last week.",
            false,
            &["Melanie"]
        ));
        assert!(
            !is_statement("Ma went camping.", false, &["Mary"]),
            "prefix too short"
        );
        assert!(
            !is_statement("Melanie is nice.", false, &["Melanie"]),
            "no cue"
        );
        assert!(
            !is_statement(s, false, &["Caroline"]),
            "not a person of the block"
        );
        assert!(
            !is_statement("Melanie, Bob went camping.", false, &["Melanie", "Ana"]),
            "addressing someone is not a statement about them"
        );
        let said_to = "So glad you got the support!";
        assert!(!is_statement(said_to, false, &[]));
        assert!(is_statement(said_to, false, &["Caroline"]));
        assert!(
            !is_statement(said_to, false, &["Caroline", "Ana"]),
            "\"you\" is one person only in a two-person block"
        );
    }

    /// Version 5's self-statements, per class: sentence, listeners, taken.
    #[rustfmt::skip]
    const SELF_STATEMENT_ROWS: &[(&str, &str, bool)] = &[
        // identity
        ("I'm a single parent and a nurse.", "identity", true),
        // work and study, work chat
        ("I'm on the Orbit team at Northwind, we own the data pipeline.", "work", true),
        ("I study marine biology at the university.", "study", true),
        ("Our team keeps the billing service running.", "work", true),
        // family and pets
        ("My kids love the beach.", "family", true),
        ("My husband and kids keep me motivated.", "family", true),
        ("Oscar, my guinea pig, sleeps all day.", "pets", true),
        // possessions
        ("My new bike has a red frame.", "possessions", true),
        // activities and hobbies
        ("I've been painting landscapes for years.", "hobbies", true),
        ("Yeah, I carve out some quiet reading time each evening.", "activities", true),
        // preferences and dislikes
        ("Contemporary dance is my top pick.", "preferences", true),
        // goals and plans
        ("My goal is to give kids a loving home.", "goals", true),
        // health
        ("My knee still hurts after the marathon.", "health", true),
        // places
        ("I grew up in a small fishing town.", "places", true),
        // about the listener (two-person block)
        ("Your store looks amazing with the new furniture.", "listener", true),
        // chit-chat
        ("Thanks so much, that means a lot to me!", "thanks", false),
        ("I'm so happy for you!", "reaction", false),
        ("That's so sweet of you.", "reaction", false),
        ("Hey Mel, good to see you!", "greeting", false),
        ("What do you like to paint?", "question", false),
        ("Let's plan something fun for the summer.", "suggestion", false),
        ("Take care of yourself.", "imperative", false),
        ("I totally agree with you.", "reaction", false),
        ("The weather was nice.", "no subject", false),
    ];

    #[test]
    fn version_five_takes_informative_self_statements() {
        let failures: Vec<String> = SELF_STATEMENT_ROWS
            .iter()
            .filter(|(s, _, want)| is_self_statement(s, &["Other"]) != *want)
            .map(|(s, class, want)| format!("{class}: {s:?} want {want}"))
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // No cue: version 4 leaves them out.
        assert!(
            !is_statement("My kids love the beach.", false, &["Other"])
                || is_preference(&words("My kids love the beach."))
        );
        assert!(!is_statement(
            "I'm on the Orbit team at Northwind.",
            false,
            &["Other"]
        ));
        assert_eq!(id_v5().to_string(), "heuristic-extractor@5");
    }

    /// Version 5 on what a reading of the sample's events showed wrong.
    #[test]
    fn version_five_pleasantries_intents_wishes_and_acknowledgements() {
        // Pleasantries and requests to the listener are no statements.
        let pleasantries: &[(&str, bool)] = &[
            (
                "Enjoy your evening, and let me know what you both decide.",
                true,
            ),
            ("Enjoy your lunch, and say hi to Marta!", true),
            ("Sounds good, have a lovely trip!", true),
            ("Take care of that ankle.", true),
            ("Let me know when you land.", true),
            ("I enjoy long walks by the river.", false),
            ("Let me check the forecast for Lisbon.", false),
            ("We had a great time in Porto.", false),
        ];
        for (sentence, want) in pleasantries {
            assert_eq!(is_pleasantry(sentence), *want, "{sentence:?}");
        }
        // "let me X" is an intent: "Ana will X"; "let me know" stays a quote.
        let restated: &[(&str, &str)] = &[
            (
                "Oh, and I booked the hotel in Lisbon last night, let me paste the confirmation.",
                "Oh, and Ana booked the hotel in Lisbon last night, Ana will paste the confirmation.",
            ),
            ("Let me check the forecast.", "Ana will check the forecast."),
            (
                "Let me know what you decide.",
                "Ana said: \"Let me know what you decide.\"",
            ),
            ("I prefer window seats.", "Ana prefers window seats."),
        ];
        for (sentence, want) in restated {
            let got = third_person_v3(sentence, "Ana");
            assert_eq!(got, *want);
            assert!(
                !got.contains("let Ana") && !got.contains("Let Ana"),
                "{got}"
            );
        }
        // Version 4's restatement is unchanged.
        assert_eq!(
            third_person_v2("I booked it, let me paste it.", "Ana"),
            "Ana booked it, let Ana paste it."
        );
        // A completion inside a wish is a plan.
        let wishes: &[(&str, bool)] = &[
            (
                "Priya wants the cutover done before the end of January.",
                true,
            ),
            ("We need the report finished by Friday.", true),
            ("The cutover is done.", false),
            ("I finished the report and want a break.", false),
        ];
        for (sentence, want) in wishes {
            assert_eq!(
                is_wished_completion(&words(sentence)),
                *want,
                "{sentence:?}"
            );
        }
        // "Got it" acknowledges: no change.
        let acks: &[(&str, bool)] = &[
            ("Got it: Porto 14–17 May, Lisbon 17–21 May.", true),
            ("Noted: Sintra day trip on Monday 20 May.", true),
            ("I got it from my sister.", false),
        ];
        for (sentence, want) in acks {
            assert_eq!(is_acknowledgement(sentence), *want, "{sentence:?}");
        }
    }

    #[test]
    fn mentioned_people_finds_speakers_and_relations() {
        let people = vec!["Caroline".to_owned(), "Melanie".to_owned()];
        let s = vec!["Thanks Mel, my sister Marta and I went out.".to_owned()];
        assert_eq!(
            mentioned_people(&s, &people, "Caroline"),
            ["Melanie", "Marta"]
        );
    }
}
