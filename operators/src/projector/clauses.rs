//! The heuristic projector `heuristic-projector@4` ([`HeuristicProjectorV4`]):
//! version 3's patterns, then **clause facts** from every statement
//! sentence none of them read. The code of versions 1–3 is not touched:
//! their patterns run first, unchanged, and this module only adds.
//!
//! # Clause facts
//!
//! Every sentence of an event is also read clause by clause, for a
//! subject, a predicate and an object (general English patterns; see
//! `CLAUSE_PATTERNS`). Finally, every fact of version 4 (version 3's
//! included) needs two topic words in key and value together
//! (`family: family`, `felt: liberated` are dropped) and must not be junk
//! (see `junk`: light verbs with a vague object such as `got: possible
//! leads`, possessions that are no things, indefinite subjects such as
//! `nothing: serious`, dates as values; a verb cut from its object at the
//! end of a value is trimmed). Sentences that address the listener
//! (`Use FINAL …`, `Enjoy your lunch`) give no fact; a date after a
//! preposition ends an object (`on 20 May`: `May` is no modal):
//!
//! - **Subjects**: `I`, `I'm`, `I've`, `we`, `we're` … (the speaker), a known
//!   person's name (that person), and `my|our NOUN` at the start of a clause
//!   (the speaker, the noun joining the key: `My kids love the beach` →
//!   `kids love: beach`).
//! - **Verb** (`verb`): after the subject, auxiliaries, adverbs and
//!   negations, a lexical verb and its object: `I painted that lake
//!   sunrise` → `painted: lake sunrise`; a particle or preposition joins the
//!   key (`moved from: home country`, `carving out: me-time`); `VERB to
//!   VERB2 X` gives the key `VERB to VERB2` (`started to learn: guitar`); a
//!   present tense after `I` is put in the third person (`I love` →
//!   `loves`), a negation prefixes `not`, `will|'ll|going to` prefix
//!   `will`.
//! - **Copula with a noun** (`identity`): `I'm|I am|I was a(n) X` → `is: X`.
//! - **Copula with an adjective or participle** (`state`): `I'm keen on
//!   counseling` → `keen on: counseling`, `I've been blessed with loads of
//!   love` → `blessed with: love`, `I'm lucky to have my husband and kids` →
//!   `lucky to have: husband and kids`.
//! - **Possessed noun** (`possessed`): `my NOUN is|are X` → `NOUN: X` (`My
//!   goal is to give kids a loving home` → `goal: give kids loving home`).
//!
//! An object is a noun phrase: determiners and quantities (`a lot of`,
//! `loads of`, `some`, `that`) skipped, up to five words, nouns joined by
//! `and`/`or` and at most one prepositional phrase (`charity race for
//! mental health`), cut at a time expression (`last year`), a pronoun, a
//! clause word or punctuation, and cleaned like every value of version 3
//! (never ending on a function word or a pronoun). A value needs one
//! informative word: `did my best`, `had a great time` give nothing.
//! Verbs of thinking and saying (`think`, `feel`, `know`, `guess`, `mean`,
//! `say` …), whose object is a clause, give nothing. Key and value together
//! stay within ten words (the key at most four). Every clause fact is a
//! Set fact citing its event.

use strataflow_record::Digest;
use strataflow_record::record::{FactMode, GraphAssertion};
use strataflow_text::FoldedWords;

use super::statements::{FUNCTION_WORD_SET, clean_value};
use super::{Builder, EventCtx, Key, NAME, Sent};
use crate::operator::{OperatorError, OperatorId, ProjectionInput, Projector, config_hash};
use crate::text::WordSet;

/// Version of [`HeuristicProjectorV4`].
pub const VERSION_4: u32 = 4;

/// The clause pattern classes of version 4.
pub const CLAUSE_PATTERNS: &[&str] = &["verb", "identity", "state", "possessed"];

/// The heuristic projector `heuristic-projector@4` (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicProjectorV4;

impl Projector for HeuristicProjectorV4 {
    fn id(&self) -> OperatorId {
        OperatorId::new(NAME, VERSION_4)
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &self.id(),
            r#"{"sentences":"strataflow-text","statements":1,"clauses":1}"#,
        )
    }

    /// Fails only when an event of the batch belongs to another tenant.
    fn project(&self, input: &ProjectionInput<'_>) -> Result<Vec<GraphAssertion>, OperatorError> {
        super::statements::project_batch(input, Some(match_clauses))
    }
}

// ---------------------------------------------------------------------------
// Word lists.

/// Subjects meaning the speaker.
#[rustfmt::skip]
const SPEAKER_SUBJECTS: &[&str] = &[
    "i", "i'm", "im", "i've", "i'd", "i'll", "we", "we're", "we've", "we'd", "we'll",
];

/// Auxiliaries between a subject and its verb.
#[rustfmt::skip]
pub(super) static AUXILIARIES: WordSet = WordSet::classed(4, &[
    "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "do", "does",
    "did", "will", "would", "can", "could", "should", "might", "must", "may", "shall", "gonna",
    "wanna", "not", "never", "don't", "didn't", "doesn't", "won't", "can't", "cannot",
    "haven't", "hasn't", "hadn't", "wasn't", "weren't", "isn't", "aren't", "wouldn't",
    "couldn't", "shouldn't",
]);

/// Adverbs skipped anywhere before the verb.
#[rustfmt::skip]
pub(super) static SKIPPED_ADVERBS: WordSet = WordSet::classed(5, &[
    "really", "just", "also", "finally", "recently", "always", "usually", "still", "actually",
    "totally", "so", "already", "now", "even", "often", "sometimes", "kinda", "currently",
    "mostly", "truly", "definitely", "absolutely", "honestly", "genuinely", "officially",
    "basically", "seriously", "super", "pretty", "very", "too", "only", "all", "both", "lately",
    "slowly", "ever", "once", "again", "then", "probably", "certainly", "obviously", "literally",
    "especially", "regularly", "occasionally", "rarely", "hardly", "barely", "almost",
    "right", "hopefully", "happily", "soon",
]);

/// Verbs whose object is a clause or nothing worth keeping.
#[rustfmt::skip]
pub(super) static SKIP_VERBS: WordSet = WordSet::classed(6, &[
    "think", "thinks", "thought", "know", "knows", "knew", "guess", "mean", "means", "meant",
    "feel", "feels", "believe", "believes", "believed", "realize", "realized",
    "realise", "realised", "wonder", "wondered", "wish", "say", "says", "said", "tell", "told",
    "agree", "agreed", "bet", "suppose", "hear", "heard", "understand", "appreciate",
    "bet", "reckon", "hope", "hoped", "like", "love", "loved", "want", "wanted", "let", "gotta", "get", "gets", "go", "goes", "went", "come", "came", "be",
    "am", "is", "are", "was", "were", "been", "do", "does", "did", "done", "doing", "taking", "see", "saw", "seen", "seeing",
    "thanks", "thank", "hope", "hoping", "miss", "missed", "try", "tried", "trying", "keep",
    "kept", "keeping", "glad", "sure", "happy", "sorry", "can", "will", "would", "could",
    "should", "must", "might", "may", "gonna", "wanna", "look", "looks", "looked", "looking",
    "sounds", "sound", "seems", "seem", "seemed", "put", "mind", "care", "cared",
]);

/// Verbs of [`super::statements::FUNCTION_WORDS`] or [`SKIP_VERBS`] that still take an object
/// worth keeping (`had a picnic`, `make a family`, `love the beach`).
#[rustfmt::skip]
pub(super) static LIGHT_VERBS: WordSet = WordSet::classed(7, &[
    "have", "has", "had", "got", "get", "go", "goes", "went", "make", "made", "love", "loves",
    "like", "likes", "enjoy", "enjoys", "prefer", "prefers", "hate", "hates",
]);

/// Particles that join a verb in the key (`carving out`, `picked up`).
const PARTICLES: &[&str] = &[
    "up", "out", "off", "back", "over", "down", "away", "into", "together",
];

/// Prepositions that join a verb or adjective in the key.
#[rustfmt::skip]
const PREPOSITIONS: &[&str] = &[
    "to", "at", "in", "for", "with", "from", "on", "about", "of", "into", "as", "by",
];

/// Prepositions that may open the phrases attached to an object.
const ATTACHED: &[&str] = &["for", "with", "in", "at", "from", "about", "on", "by", "to"];

/// Determiners and quantities skipped at the start of an object.
#[rustfmt::skip]
pub(super) static OBJECT_DETERMINERS: WordSet = WordSet::classed(8, &[
    "a", "an", "the", "my", "our", "your", "his", "her", "their", "this", "that", "these",
    "those", "some", "any", "all", "each", "every", "lots", "loads", "plenty", "bunch",
    "couple", "few", "of", "one", "two", "three", "several", "many", "much", "more",
    "whole", "own", "such", "so", "another", "other", "quite", "really",
]);

/// Words that end an object (time expressions, clause words, pronouns).
#[rustfmt::skip]
pub(super) static OBJECT_END: WordSet = WordSet::classed(9, &[
    "and", "or", "but", "so", "because", "cause", "'cause", "when", "whenever", "while", "if",
    "that", "which", "who", "whom", "whose", "where", "since", "until", "after", "before", "than",
    "as", "like", "though", "although", "yesterday", "today", "tomorrow", "tonight", "now",
    "recently", "lately", "again", "too", "last", "next", "this", "these", "those", "ago", "soon",
    "already", "yet", "just", "also", "really", "very", "anymore", "instead", "though", "then",
    "there", "here", "every", "each", "lol", "haha", "i", "i'm", "me", "my", "we", "us", "you",
    "your", "he", "him", "his", "she", "her", "it", "it's", "they", "them", "their", "is", "are",
    "was", "were", "be", "been", "am", "will", "would", "can", "could", "should", "has", "have",
    "had", "do", "does", "did", "to", "not", "named", "called", "week", "weeks", "month",
    "months", "year", "years", "day", "days", "weekend", "morning", "night", "evening",
    "afternoon", "everyday", "sometime", "someday", "always", "never", "still", "even",
    "it'd", "it'll", "that's", "there's", "they're", "they've", "he's", "she's", "you're",
    "you've", "we're", "we've", "i'd", "i'll", "i've", "near", "during", "throughout",
    "despite", "without", "through", "around", "across", "behind", "cuz", "coz", "plus",
    "hopefully", "sooo", "soo", "super",
]);

/// Words with no information on their own: a value of only these (and
/// function words) is dropped.
#[rustfmt::skip]
static LIGHT: WordSet = WordSet::new(&[
    "best", "time", "times", "lot", "lots", "way", "ways", "day", "days", "thing", "things",
    "stuff", "much", "part", "sense", "fun", "chance", "break", "moment", "moments", "idea",
    "ideas", "difference", "sure", "great", "good", "nice", "cool", "amazing", "awesome",
    "happy", "glad", "sorry", "proud", "one", "ones", "everything", "anything", "something",
    "nothing", "kind", "sort", "bit", "deal", "point", "place", "today", "tomorrow", "yesterday",
    "people", "others", "other", "own", "same", "new", "first", "last", "next", "little",
    "lot", "world", "life", "work", "what", "job", "support", "love", "feeling", "feelings",
    "words", "help", "care", "luck", "hard", "tough", "easy", "big", "long", "mix",
]);

/// Phrases attached to an object at most (`took kids to museum for …`).
const ATTACHED_MAX: usize = 2;

/// Counts.
#[rustfmt::skip]
const NUMBERS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "few", "several", "many", "couple",
];

/// Words of an object at most.
const OBJECT_MAX: usize = 8;

/// Nouns after `my|our` that make a possessed-noun subject.
const POSSESSED_MAX: usize = 2;

// ---------------------------------------------------------------------------
// The matcher.

/// Clause facts of one sentence, when no earlier pattern found anything in
/// it (`found`: facts and edges the earlier patterns made from it).
pub(super) fn match_clauses(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent, found: usize) {
    match_clauses_with(ctx, b, s, found, true);
}

/// [`match_clauses`] without skipping a pattern on a sentence that holds
/// none of its words (the tests compare both).
#[cfg(test)]
pub(super) fn match_clauses_walked(
    ctx: &mut EventCtx,
    b: &mut Builder,
    s: &mut Sent,
    found: usize,
) {
    match_clauses_with(ctx, b, s, found, false);
}

fn match_clauses_with(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent, found: usize, skip: bool) {
    let _ = found;
    subjectless(ctx, b, s);
    // Both state a fact only from one of these words (`is my`, `NAME, my
    // NOUN`, `gives me`, `ADJ to me`, `one of my`) and change nothing
    // else: a sentence without any is not walked.
    let holds = |words: &[&str]| !skip || (0..s.len()).any(|k| s.is_any(k, words));
    if holds(&["my"]) {
        possessed_after(ctx, b, s);
    }
    if holds(&["my", "me", "us"]) {
        about_me(ctx, b, s);
    }
    let mut i = 0;
    while i < s.len() {
        let next = clause_fact(ctx, b, s, i);
        i = next.max(i + 1);
    }
}

/// A sentence that starts with its verb is the speaker's (`Lost my job as
/// a banker`, `Still following my passion for dance`): a past form or a
/// gerund at the start (after interjections, adverbs and commas) that is not
/// itself the subject (`Taking care of ourselves is vital`).
fn subjectless(ctx: &EventCtx, b: &mut Builder, s: &Sent) {
    let Some(speaker) = ctx.speaker.as_ref() else {
        return;
    };
    let mut k = 0;
    while s
        .tok(k)
        .is_some_and(|t| !t.word || t.is_any(&SKIPPED_ADVERBS) || t.is_any(LEADING_INTERJECTIONS))
    {
        k += 1;
    }
    let Some(t) = s.tok(k) else { return };
    let gerund = t.lower().ends_with("ing");
    let past = t.lower().ends_with("ed") || crate::extractor::temporal::is_past_verb(t.lower());
    if !(gerund || past) || !lexical_tok(t) || t.upper && k > 0 {
        return;
    }
    // A gerund subject: a verb follows its phrase.
    if gerund {
        let clause_end = (k + 1..s.len())
            .find(|&m| s.is_separator(m))
            .unwrap_or(s.len());
        if (k + 1..clause_end).any(|m| {
            s.is_any(
                m,
                &[
                    "is", "was", "are", "were", "has", "makes", "helps", "can", "will",
                ],
            )
        }) {
            return;
        }
    }
    let _ = verb_clause(ctx, b, s, speaker, k, false, "");
}

/// `X is my [ADJ] NOUN` → `NOUN: X` (`contemporary is my top pick` →
/// `top pick: contemporary`).
fn possessed_after(ctx: &EventCtx, b: &mut Builder, s: &Sent) {
    let Some(speaker) = ctx.speaker.as_ref() else {
        return;
    };
    for i in 1..s.len() {
        if !s.is(i, "my") || !s.is_any(i - 1, &["is", "are", "was", "were"]) {
            continue;
        }
        let start = s.clause(i - 1).start;
        if i - 1 <= start || i - 1 - start > 4 {
            continue;
        }
        let subject: Vec<&super::Tok> = (start..i - 1).filter_map(|k| s.tok(k)).collect();
        if subject
            .iter()
            .any(|t| !t.word || t.is_any(&FUNCTION_WORD_SET) && !t.is_any(&["the", "a", "an"]))
        {
            continue;
        }
        let value: Vec<String> = subject
            .iter()
            .map(|t| {
                if t.is_name_word() {
                    t.text.clone().into_owned()
                } else {
                    t.lower().to_owned()
                }
            })
            .collect();
        let mut key = Vec::new();
        let mut k = i + 1;
        while key.len() < 3
            && s.tok(k)
                .is_some_and(|t| t.word && !t.is_any(&FUNCTION_WORD_SET) && !t.is_any(&OBJECT_END))
        {
            key.push(s.lower(k).to_owned());
            k += 1;
        }
        if key.is_empty() {
            continue;
        }
        if let Some(value) = clean_value(&value.join(" ")) {
            emit(ctx, b, speaker, &key.join(" "), value);
        }
    }
}

/// A thing said to act on the speaker or to matter to them, at the start
/// of a clause: `Art gives me so much joy` → `art gives: joy`; `Painting
/// helps me explore my identity` → `painting helps: explore identity`;
/// `Representing inclusivity in my art is important to me` → `important:
/// representing inclusivity in art`; `Drawing flowers is one of my faves` →
/// `faves: drawing flowers`; `Oscar, my guinea pig` → `guinea pig: Oscar`.
fn about_me(ctx: &EventCtx, b: &mut Builder, s: &Sent) {
    let Some(speaker) = ctx.speaker.as_ref() else {
        return;
    };
    let mut start = 0;
    while start < s.len() {
        let end = (start..s.len())
            .find(|&m| s.tok(m).is_some_and(|t| !t.word))
            .unwrap_or(s.len());
        about_me_clause(ctx, b, s, speaker, start, end);
        start = end + 1;
    }
}

fn about_me_clause(ctx: &EventCtx, b: &mut Builder, s: &Sent, who: &Key, start: usize, end: usize) {
    let mut k = start;
    while s.is_any(k, LEADING_INTERJECTIONS) || s.is_any(k, &SKIPPED_ADVERBS) {
        k += 1;
    }
    // `NAME, my NOUN`.
    if let Some(n) = s.any_name_at(k, 2)
        && n.end == end
        && s.is_punct(end, ',')
        && s.is(end + 1, "my")
        && ctx.person(&n.text).is_none()
    {
        let noun: Vec<&str> = (end + 2..s.len())
            .map_while(|m| {
                s.tok(m)
                    .filter(|t| t.word && !t.is_any(&FUNCTION_WORD_SET) && !t.is_any(&OBJECT_END))
            })
            .map(|t| t.lower())
            .take(3)
            .collect();
        if !noun.is_empty() {
            emit(ctx, b, who, &noun.join(" "), n.text.clone());
        }
        return;
    }
    // The subject phrase: up to four words before a verb.
    let mut words: Vec<String> = Vec::new();
    let mut m = k;
    while m < end && words.len() < 4 {
        let Some(t) = s.tok(m) else { break };
        if t.is_any(&["is", "are", "was", "were"]) || (!words.is_empty() && verb_on_me(s, m)) {
            break;
        }
        if t.is_any(&["my", "our"]) {
            m += 1;
            continue;
        }
        if t.is_any(&FUNCTION_WORD_SET) && !t.is_any(&["and", "of", "in", "the"])
            || t.is_any(SPEAKER_SUBJECTS)
        {
            return;
        }
        let keep_case = t.is_name_word()
            && (m > k
                || ctx.person(&t.text).is_some()
                || t.text.chars().skip(1).any(char::is_uppercase));
        words.push(if keep_case {
            t.text.clone().into_owned()
        } else {
            t.lower().to_owned()
        });
        m += 1;
    }
    if words.is_empty() || m >= end {
        return;
    }
    let Some(subject) = clean_value(&words.join(" ")) else {
        return;
    };
    if verb_on_me(s, m) {
        // `Art gives me joy`, `Painting helps me explore X`.
        let verb = s.lower(m).to_owned();
        let at = m + 2;
        let value = if s.is(at, "to") {
            verb_object(s, at + 1)
        } else {
            object(s, at, 5).or_else(|| verb_object(s, at))
        };
        if let Some((_, value)) = value {
            emit(ctx, b, who, &format!("{subject} {verb}"), value);
        }
        return;
    }
    // `X is [so] ADJ to|for me`, `X is one of my faves`, `X is my favorite`.
    let mut j = m + 1;
    while s.is_any(j, &SKIPPED_ADVERBS) {
        j += 1;
    }
    if s.is(j, "one") && s.is(j + 1, "of") && s.is(j + 2, "my") {
        if let Some(key) = s
            .tok(j + 3)
            .filter(|t| t.word && !t.is_any(&FUNCTION_WORD_SET))
        {
            emit(ctx, b, who, key.lower(), subject);
        }
    } else if s
        .tok(j)
        .is_some_and(|t| t.word && !t.is_any(&FUNCTION_WORD_SET))
        && s.is_any(j + 1, &["to", "for"])
        && s.is_any(j + 2, &["me", "us"])
    {
        emit(ctx, b, who, s.lower(j), subject);
    }
}

/// A verb at `m` acting on the speaker: `gives me`, `helps me`, `keep me`.
fn verb_on_me(s: &Sent, m: usize) -> bool {
    s.tok(m).is_some_and(|t| {
        lexical_tok(t) || t.is_any(&["makes", "made", "keeps", "keep", "gives", "gave"])
    }) && s.is_any(m + 1, &["me", "us"])
}

/// Interjections before a subjectless verb.
const LEADING_INTERJECTIONS: &[&str] = &[
    "yeah", "yes", "oh", "well", "so", "and", "but", "anyway", "plus", "hey", "wow", "ok", "okay",
];

/// Reads a clause whose subject may start at `i`; returns where to go on.
fn clause_fact(ctx: &mut EventCtx, b: &mut Builder, s: &Sent, i: usize) -> usize {
    let Some(t) = s.tok(i) else {
        return i + 1;
    };
    if !t.word {
        return i + 1;
    }
    let clause_start = i == 0 || s.is_separator(i - 1);
    // The subject and the first token after it.
    let (who, after, first_person, lead) = if t.is_any(SPEAKER_SUBJECTS) {
        (ctx.speaker.clone(), i + 1, t.lower().starts_with('i'), None)
    } else if clause_start && s.is_any(i, &["my", "our"]) {
        let mut k = i + 1;
        let mut noun = Vec::new();
        while noun.len() < POSSESSED_MAX
            && s.tok(k).is_some_and(|t| {
                t.word
                    && !t.is_any(&FUNCTION_WORD_SET)
                    && !t.is_any(&AUXILIARIES)
                    && !is_verb_like(t)
            })
        {
            noun.push(s.lower(k).to_owned());
            k += 1;
        }
        if noun.is_empty() || !s.is_any(k, &["is", "are", "was", "were"]) && !verb_at(s, k) {
            return i + 1;
        }
        (ctx.speaker.clone(), k, false, Some(noun.join(" ")))
    } else if clause_start && t.is_name_word() {
        match s
            .any_name_at(i, 3)
            .and_then(|n| ctx.person(&n.text).map(|p| (p, n.end)))
        {
            Some((p, end)) => (Some(p), end, false, None),
            None => return i + 1,
        }
    } else {
        return i + 1;
    };
    let Some(who) = who else {
        return after;
    };
    let subject_word = t.lower();
    let mut be = matches!(subject_word, "i'm" | "im" | "we're");
    let mut will = matches!(subject_word, "i'll" | "we'll");
    let mut aux = matches!(subject_word, "i'd" | "we'd")
        || (matches!(subject_word, "i've" | "we've")
            && s.tok(after)
                .is_some_and(|n| is_verb_like(n) || n.negates() || n.is_any(&SKIPPED_ADVERBS)));
    let mut negated = false;
    let mut j = after;
    // Auxiliaries, negations and adverbs.
    while let Some(tok) = s.tok(j) {
        if !tok.word {
            break;
        }
        let w = tok.lower();
        if tok.negates() {
            negated = true;
        } else if matches!(
            w,
            "am" | "is" | "are" | "was" | "were" | "been" | "being" | "be"
        ) {
            be = true;
        } else if matches!(w, "will" | "gonna" | "shall") {
            will = true;
            be = false;
        } else if w == "used" && s.is(j + 1, "to") {
            j += 2;
            continue;
        } else if w == "going" && s.is(j + 1, "to") && !s.is_any(j + 2, &OBJECT_DETERMINERS) {
            will = true;
            be = false;
            j += 2;
            continue;
        } else if matches!(w, "do" | "does" | "did")
            && !s.tok(j + 1).is_some_and(|n| {
                !n.is_any(&OBJECT_DETERMINERS)
                    && (n.negates() || n.is_any(&SKIPPED_ADVERBS) || lexical_tok(n))
            })
        {
            // `do` before a noun is the verb (`We do all kinds of dances`).
            break;
        } else if matches!(w, "have" | "has" | "had" | "'ve")
            && !s.tok(j + 1).is_some_and(|n| is_verb_like(n) || n.negates())
        {
            // `have` before a noun is the verb (`We have unique paths`).
            break;
        } else if SKIPPED_ADVERBS.contains(w) || tok.is_any(&AUXILIARIES) {
            if !SKIPPED_ADVERBS.contains(w) {
                aux = true;
            }
        } else {
            break;
        }
        j += 1;
    }
    // `I'm off to go X`: a plan.
    if be && s.is(j, "off") && s.is(j + 1, "to") {
        be = false;
        will = true;
        j += 2;
    }
    let prefix = match (negated, will) {
        (true, _) => "not ",
        (false, true) => "will ",
        _ => "",
    };
    let lead = lead.map_or_else(String::new, |l| format!("{l} "));
    let head = s.lower(j);
    if head.is_empty() {
        return j;
    }
    // `I'm into X`.
    if be && lead.is_empty() && s.is(j, "into") {
        if let Some((end, value)) = object(s, j + 1, 5) {
            emit(ctx, b, &who, &format!("{prefix}into"), value);
            return end;
        }
        return j + 1;
    }
    // Copula with a noun: `I'm a nurse`.
    if be && s.is_any(j, &["a", "an"]) {
        if let Some((end, value)) = object(s, j, 5) {
            let past = (after..j).any(|k| s.is_any(k, &["was", "were"]));
            let key = if lead.is_empty() {
                format!("{prefix}{}", if past { "was" } else { "is" })
            } else {
                format!("{prefix}{}", lead.trim_end())
            };
            emit(ctx, b, &who, &key, value);
            return end;
        }
        return j + 1;
    }
    // A possessed noun with a copula: `my goal is to give …`, `my favorite
    // book is X`.
    if be && !lead.is_empty() {
        let at = if s.is(j, "to") { j + 1 } else { j };
        if s.is(j, "to") {
            if let Some((end, value)) = verb_object(s, at) {
                emit(ctx, b, &who, lead.trim_end(), value);
                return end;
            }
        } else if let Some((end, key_tail, value)) = adjective_object(s, j) {
            emit(ctx, b, &who, &format!("{lead}{key_tail}"), value);
            return end;
        } else if let Some((end, value)) = object(s, j, 5) {
            emit(ctx, b, &who, &format!("{prefix}{}", lead.trim_end()), value);
            return end;
        }
        return j + 1;
    }
    // Copula with an adjective or participle: `I'm keen on X`.
    if be && !head.ends_with("ing") {
        if let Some((end, key_tail, value)) = adjective_object(s, j) {
            emit(ctx, b, &who, &format!("{prefix}{key_tail}"), value);
            return end;
        }
        return j + 1;
    }
    // A lexical verb, and the verbs joined to it (`talked about X and
    // encouraged Y`).
    let third = first_person && !be && !aux && !will && !negated && lead.is_empty();
    let mut at = j;
    let mut first = true;
    loop {
        let Some(end) = verb_clause(ctx, b, s, &who, at, third, &format!("{prefix}{lead}")) else {
            return if first { j + 1 } else { at };
        };
        first = false;
        let mut k = end;
        if s.is_punct(k, ',') {
            k += 1;
        }
        if s.is_any(k, &["and", "or", "then"]) {
            k += 1;
        }
        if k == end || !s.tok(k).is_some_and(|t| lexical_tok(t) && is_verb_like(t)) {
            return end;
        }
        at = k;
    }
}

/// The verb at `j` and its object, as a fact of `who`; the index after it.
fn verb_clause(
    ctx: &EventCtx,
    b: &mut Builder,
    s: &Sent,
    who: &Key,
    j: usize,
    third: bool,
    prefix: &str,
) -> Option<usize> {
    if !verb_at(s, j) {
        return None;
    }
    let verb = s.lower(j).to_owned();
    let mut k = j + 1;
    // A past form stays as it is (`I learnt` → `learnt`, not `learnts`).
    let past = crate::extractor::temporal::is_past_verb(&verb) || PARTICIPLES.contains(&verb);
    let mut key = if third && !past {
        crate::extractor::heuristic::third_singular(&verb).unwrap_or_else(|| verb.clone())
    } else {
        verb.clone()
    };
    // `go swimming`, `went camping`.
    if matches!(verb.as_str(), "go" | "goes" | "went" | "gone")
        && s.tok(k)
            .is_some_and(|t| t.word && t.lower().ends_with("ing"))
    {
        let activity = s.lower(k).to_owned();
        k += 1;
        // `went hiking last week`: the activity is the value.
        if !s.is_any(k, PREPOSITIONS) && object(s, k, 6).is_none() {
            emit(ctx, b, who, &format!("{prefix}{key}"), activity);
            return Some(k);
        }
        key = format!("{key} {activity}");
    }
    if s.is_any(k, PARTICLES) {
        key = format!("{key} {}", s.lower(k));
        k += 1;
    }
    // `VERB to VERB2 X`.
    if s.is(k, "to") && s.tok(k + 1).is_some_and(lexical_tok) {
        let (end, value) = verb_object(s, k + 1)?;
        let (v2, rest) = value.split_once(' ').unwrap_or((value.as_str(), ""));
        if !rest.is_empty() {
            emit(
                ctx,
                b,
                who,
                &format!("{prefix}{key} to {v2}"),
                rest.to_owned(),
            );
        }
        return Some(end);
    }
    if s.is_any(k, PREPOSITIONS) {
        if s.is(k, "to") && s.tok(k + 1).is_some_and(|t| t.is_any(&SKIP_VERBS)) {
            return None;
        }
        key = format!("{key} {}", s.lower(k));
        k += 1;
    }
    let (end, value) = object(s, k, OBJECT_MAX)?;
    emit(ctx, b, who, &format!("{prefix}{key}"), value);
    Some(end)
}

/// `ADJ [PREP] X` or `ADJ to VERB X` at `j`: the key tail and the value.
fn adjective_object(s: &Sent, j: usize) -> Option<(usize, String, String)> {
    let adj = s.tok(j).filter(|t| {
        t.word && !t.is_any(&FUNCTION_WORD_SET) && !t.is_any(&OBJECT_END) && !t.is_name_word()
    })?;
    let mut k = j + 1;
    // `happy and thankful for`.
    if s.is_any(k, &["and", "or"])
        && s.tok(k + 1)
            .is_some_and(|t| t.word && !t.is_any(&FUNCTION_WORD_SET))
        && s.is_any(k + 2, PREPOSITIONS)
    {
        k += 2;
    }
    if s.is(k, "to") && verb_at(s, k + 1) {
        let (end, value) = verb_object(s, k + 1)?;
        let (v2, rest) = value.split_once(' ')?;
        return Some((end, format!("{} to {v2}", adj.lower()), rest.to_owned()));
    }
    if !s.is_any(k, PREPOSITIONS) {
        return None;
    }
    let prep = s.lower(k).to_owned();
    let at = k + 1;
    // `keen on working in X`: the gerund joins the value.
    let (end, value) = if s
        .tok(at)
        .is_some_and(|t| t.word && t.lower().ends_with("ing"))
    {
        object(s, at, OBJECT_MAX).or_else(|| verb_object(s, at))?
    } else {
        object(s, at, OBJECT_MAX)?
    };
    Some((end, format!("{} {prep}", adj.lower()), value))
}

/// `VERB X` at `i`: the verb and its object as one value.
fn verb_object(s: &Sent, i: usize) -> Option<(usize, String)> {
    let verb = s
        .tok(i)
        .filter(|t| lexical_tok(t) || t.is_any(&LIGHT_VERBS))?;
    let mut k = i + 1;
    let mut head = verb.lower().to_owned();
    if s.is_any(k, PARTICLES) || s.is_any(k, PREPOSITIONS) && !s.is(k, "to") {
        head = format!("{head} {}", s.lower(k));
        k += 1;
    }
    let (end, np) = object(s, k, OBJECT_MAX - 1)?;
    Some((end, format!("{head} {np}")))
}

/// A token that may be a lexical verb.
fn lexical_tok(t: &super::Tok) -> bool {
    t.word
        && (!t.is_name_word() || t.lower().ends_with("ed") || t.lower().ends_with("ing"))
        && !t.is_any(&FUNCTION_WORD_SET)
        && !t.is_any(&SKIP_VERBS)
        && !t.is_any(&OBJECT_END)
        && t.lower().chars().all(|c| c.is_alphabetic() || c == '-')
        && t.lower().len() >= 2
}

/// A lexical or light verb at `i`.
fn verb_at(s: &Sent, i: usize) -> bool {
    s.tok(i)
        .is_some_and(|t| lexical_tok(t) || t.is_any(&LIGHT_VERBS))
}

/// Verb-like: a past form, a gerund or a known verb.
fn is_verb_like(t: &super::Tok) -> bool {
    t.lower().ends_with("ed")
        || t.lower().ends_with("ing")
        || crate::extractor::temporal::is_past_verb(t.lower())
        || t.is_any(&SKIP_VERBS)
}

/// The object noun phrase at `i` (see the module docs): at most `max`
/// words, with the index after it.
fn object(s: &Sent, i: usize, max: usize) -> Option<(usize, String)> {
    let mut k = i;
    while s.is_any(k, &OBJECT_DETERMINERS) || s.is(k, "lot") && s.is(k + 1, "of") {
        k += 1;
    }
    if s.is_any(k, &["go", "going"]) && s.tok(k + 1).is_some_and(|t| t.lower().ends_with("ing")) {
        k += 1;
    }
    let mut words: Vec<String> = Vec::new();
    let mut attached = 0;
    while words.len() < max {
        let Some(t) = s.tok(k) else { break };
        if !t.word {
            break;
        }
        if t.is_any(&["and", "or"]) && !words.is_empty() {
            // Nouns joined: `husband and kids`, `counseling or mental health`.
            let mut m = k + 1;
            while s.is_any(m, &OBJECT_DETERMINERS) && !s.is(m, "of") {
                m += 1;
            }
            match s.tok(m) {
                Some(n)
                    if n.word
                        && !n.is_any(&OBJECT_END)
                        && !n.is_any(&FUNCTION_WORD_SET)
                        && !n.lower().ends_with("ed")
                        && !crate::extractor::temporal::is_past_verb(n.lower())
                        && words.len() + 2 <= max =>
                {
                    words.push(t.lower().to_owned());
                    k = m;
                    continue;
                }
                _ => break,
            }
        }
        if t.lower() == "of" {
            if words.is_empty() {
                k += 1;
                continue;
            }
            words.push("of".to_owned());
            k += 1;
            while s.is_any(k, &OBJECT_DETERMINERS) && !s.is(k, "of") {
                k += 1;
            }
            continue;
        }
        // `a place to open my dance studio`.
        if t.lower() == "to"
            && !words.is_empty()
            && attached < ATTACHED_MAX
            && words.len() + 3 <= max
            && s.tok(k + 1)
                .is_some_and(|v| lexical_tok(v) && !v.lower().ends_with("ing"))
            && let Some((end, vp)) = verb_object(s, k + 1)
        {
            words.push("to".to_owned());
            words.extend(vp.split_whitespace().map(str::to_owned));
            k = end;
            attached += 1;
            continue;
        }
        // `on 20 May`, `in May`: a date ends the object (`May` is no modal).
        if t.is_any(ATTACHED) && !words.is_empty() && date_at(s, k + 1) {
            break;
        }
        if t.is_any(ATTACHED) && !words.is_empty() && attached < ATTACHED_MAX {
            let mut m = k + 1;
            while s.is_any(m, &OBJECT_DETERMINERS) && !s.is(m, "of") {
                m += 1;
            }
            let ok = s
                .tok(m)
                .is_some_and(|n| n.word && !n.is_any(&OBJECT_END) && !n.is_any(&FUNCTION_WORD_SET))
                && words.len() + 2 <= max;
            if !ok {
                break;
            }
            attached += 1;
            words.push(t.lower().to_owned());
            k = m;
            continue;
        }
        // `for ten years`: a count before a time unit ends the object.
        if (t.is_any(NUMBERS) || t.lower().chars().all(|c| c.is_ascii_digit()))
            && s.is_any(k + 1, &OBJECT_END)
        {
            break;
        }
        // A second object: `give kids a loving home`.
        if t.is_any(&["a", "an", "the"]) && !words.is_empty() && words.len() + 2 <= max {
            k += 1;
            continue;
        }
        if t.is_any(&OBJECT_END) || (t.is_any(&FUNCTION_WORD_SET) && !t.is_name_word()) {
            break;
        }
        words.push(if t.is_name_word() {
            t.text.clone().into_owned()
        } else {
            t.lower().to_owned()
        });
        k += 1;
    }
    // `a cat named Bailey`.
    if !words.is_empty()
        && s.is_any(k, &["named", "called"])
        && let Some(n) = s.any_name_at(k + 1, 2)
    {
        words.push(s.lower(k).to_owned());
        words.push(n.text.clone());
        k = n.end;
    }
    let value = clean_value(&words.join(" "))?;
    let informative = value.split_whitespace().any(|w| {
        with_lowercase(w, |l| {
            l.chars().filter(|c| c.is_alphabetic()).count() >= 3
                && !FUNCTION_WORD_SET.contains(l)
                && !LIGHT.contains(l)
                && !crate::text::is_stop_word(l)
        })
    });
    informative.then_some((k, value))
}

/// Irregular past forms and participles (no present tense to conjugate).
#[rustfmt::skip]
static PARTICIPLES: WordSet = WordSet::new(&[
    "learnt", "dreamt", "burnt", "spent", "known", "shown", "grown", "drawn", "thrown", "flown",
    "seen", "given", "taken", "written", "driven", "eaten", "fallen", "gotten", "begun", "done",
    "gone", "worn", "torn", "met", "found", "made", "heard", "paid", "sold", "told", "held",
    "built", "felt", "kept", "left", "lost", "meant", "sent", "slept", "won", "bought",
    "brought", "caught", "taught", "thought", "became", "began", "knew", "grew", "drew", "flew",
]);

/// Base verbs that end a value cut before their object (`share story and
/// offer`).
#[rustfmt::skip]
static BASE_VERBS: WordSet = WordSet::new(&[
    "give", "keep", "offer", "create", "explore", "express", "learn", "remind", "reach", "start",
    "show", "make", "help", "take", "expect", "find", "get", "do", "go", "see", "try", "build",
    "bring", "share", "feel", "stay", "become", "put", "let",
]);

/// Verbs that end a value only when their object was cut (`dancing:
/// lets`, `talking to: community made`).
#[rustfmt::skip]
const CUT_VERBS: &[&str] = &[
    "lets", "made", "makes", "gets", "got", "gives", "gave", "helps", "brings", "brought",
    "takes", "took",
];

/// Sentence adverbs: no value on their own (`Thankfully`, `otherwise`).
fn adverb(w: &str) -> bool {
    let l = w.to_lowercase();
    let not_adverbs = [
        "family",
        "assembly",
        "butterfly",
        "supply",
        "reply",
        "italy",
        "july",
        "rally",
        "lily",
        "holly",
        "jelly",
        "belly",
        "bully",
        "ally",
        "anomaly",
        "monopoly",
    ];
    (l.len() > 5 && l.ends_with("ly") && !not_adverbs.contains(&l.as_str()))
        || [
            "otherwise",
            "anyway",
            "anymore",
            "together",
            "though",
            "instead",
            "either",
        ]
        .contains(&l.as_str())
}

/// Month names.
#[rustfmt::skip]
pub(super) static MONTHS: WordSet = WordSet::classed(10, &[
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
]);

/// Weekday names.
#[rustfmt::skip]
pub(super) static WEEKDAYS: WordSet = WordSet::classed(11, &[
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
]);

/// A day number (`20`, `20th`).
fn day_number(w: &str) -> bool {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    !digits.is_empty()
        && digits.len() <= 2
        && digits.chars().all(|c| c.is_ascii_digit())
        && matches!(&w[digits.len()..], "" | "st" | "nd" | "rd" | "th")
}

/// Whether a date starts at `m`: a day number before a month name
/// (`20 May`), or a capitalised month name (`May 20`, `in May`), a
/// weekday before either (`Monday 20 May`). A month name there is a date,
/// never a modal verb.
fn date_at(s: &Sent, m: usize) -> bool {
    let m = if s.is_any(m, &WEEKDAYS) { m + 1 } else { m };
    let day = |j: usize| s.tok(j).is_some_and(|t| t.word && day_number(t.lower()));
    (day(m) && s.is_any(m + 1, &MONTHS))
        || (s.is_any(m, &MONTHS) && s.tok(m).is_some_and(|t| t.upper))
}

/// Sentence openers that address the listener (imperatives and
/// pleasantries: `Use FINAL …`, `Enjoy your lunch`, `Let me know`): they
/// say nothing about the speaker, so version 4 reads no fact in them.
#[rustfmt::skip]
pub(super) static IMPERATIVES: WordSet = WordSet::classed(12, &[
    "use", "make", "let", "enjoy", "say", "check", "try", "add", "keep", "remember", "please",
    "don't", "call", "tell", "ask", "send", "put", "give", "pick", "consider", "run", "take",
    "have", "bring", "grab", "note", "avoid", "set", "see",
]);

/// Whether a sentence addresses the listener (see [`IMPERATIVES`]).
pub(super) fn addressed_to_listener(s: &Sent) -> bool {
    s.is_any(0, &IMPERATIVES)
}

/// Indefinite pronouns: no subject a fact is about (`Nothing serious`).
#[rustfmt::skip]
const INDEFINITES: &[&str] = &[
    "nothing", "something", "everything", "anything", "none", "nobody", "somebody",
    "everybody", "anybody", "someone", "everyone", "anyone",
];

/// Adjectives that say nothing of a thing on their own.
#[rustfmt::skip]
const VAGUE: &[&str] = &[
    "possible", "different", "unique", "huge", "real", "special", "certain", "various", "safe",
    "whole", "general", "main", "usual", "serene", "loving", "regular", "free",
];

/// Abstract nouns: no thing one has (`got possible leads`, `a serene vibe`).
#[rustfmt::skip]
static ABSTRACT: WordSet = WordSet::new(&[
    "path", "paths", "lead", "leads", "vibe", "vibes", "project", "projects", "offer", "offers",
    "option", "options", "opportunity", "opportunities", "experience", "experiences", "impact",
    "progress", "issue", "issues", "problem", "problems", "question", "questions", "plan",
    "plans", "goal", "goals", "dream", "dreams", "reason", "reasons", "mind", "heart",
]);

/// Light verbs: their facts rest on their object alone.
const LIGHT_KEYS: &[&str] = &[
    "got", "get", "gets", "had", "have", "has", "made", "make", "makes",
];

/// Whether a word carries a topic: three letters or more, no stop word,
/// function word, light, vague or abstract word.
fn topical(w: &str) -> bool {
    with_lowercase(w, |l| {
        l.chars().filter(|c| c.is_alphabetic()).count() >= 3
            && !crate::text::is_stop_word(l)
            && !FUNCTION_WORD_SET.contains(l)
            && !LIGHT.contains(l)
            && !VAGUE.contains(&l)
            && !ABSTRACT.contains(l)
    })
}

/// A value without a verb left at its end without its object (`share
/// story and offer` → `share story`, `made stained glass window to remind`
/// → `made stained glass window`); `None` when nothing is left.
fn trim_dangling_verb(value: String) -> Option<String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    // `community made`, `lets`: a clause's verb, its object cut.
    if let [rest @ .., last] = words.as_slice()
        && CUT_VERBS.contains(last)
    {
        return clean_value(&rest.join(" "));
    }
    if let [rest @ .., prev, last] = words.as_slice()
        && ["and", "or", "by", "to"].contains(prev)
        && with_lowercase(last, |last| {
            (last.len() > 4 && last.ends_with("ing")) || BASE_VERBS.contains(last)
        })
    {
        return clean_value(&rest.join(" "));
    }
    drop(words);
    Some(value)
}

/// `f` of `word.to_lowercase()`, without allocating when `word` is ASCII
/// and at most 32 bytes long.
fn with_lowercase<R>(word: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0_u8; 32];
    if word.is_ascii()
        && let Some(lower) = buf.get_mut(..word.len())
    {
        lower.copy_from_slice(word.as_bytes());
        lower.make_ascii_lowercase();
        if let Ok(lower) = std::str::from_utf8(lower) {
            return f(lower);
        }
    }
    f(&word.to_lowercase())
}

/// Whether a fact of version 4 is junk, carrying no information:
///
/// - its key starts with an indefinite pronoun (`nothing: serious`);
/// - its value starts with an auxiliary or a light verb in the past: the
///   verb's object is missing (`got: made huge difference`, `likes: is
///   awesome`);
/// - its value is only a date (`saved on: 27 april`);
/// - a light-verb key (`got`, `had`, `made` …) whose value has no topic
///   word before an infinitive (`got: possible leads`, `made: something to
///   catch eye`);
/// - a possession that is no thing: a person, an abstract or light head
///   noun, only vague words (`possessions: husband`, `possessions: serene
///   vibe`, `possessions: temp job`, `possessions: safe`).
fn junk(key: &str, key_words: &[&str], value: &str) -> bool {
    let value_words: Vec<&str> = value.split_whitespace().collect();
    let Some(first) = value_words.first() else {
        return true;
    };
    if key_words.first().is_some_and(|w| INDEFINITES.contains(w)) {
        return true;
    }
    // Written in lowercase: `May trip` is a month. Activities, goals and
    // plans are verb phrases by design (`activities: made own pots`).
    let verb_phrases = [
        "activities",
        "goals",
        "goal",
        "plans",
        "decisions",
        "hobbies",
    ];
    if *first == first.to_lowercase()
        && (AUXILIARIES.contains(first)
            || (["made", "got", "makes", "gets"].contains(first) && !verb_phrases.contains(&key)))
    {
        return true;
    }
    if value_words.iter().all(|w| {
        with_lowercase(w, |l| {
            day_number(l) || MONTHS.contains(l) || WEEKDAYS.contains(l)
        })
    }) {
        return true;
    }
    // `identity: mix`: no identity without a topic word.
    if ["identity", "is", "was"].contains(&key) && !value_words.iter().any(|w| topical(w)) {
        return true;
    }
    // `Thankfully`, `otherwise`: a lone adverb.
    if value_words.len() == 1 && adverb(first) {
        return true;
    }
    // `mix of excited`: an `of` phrase cut before its noun.
    if let [.., prev, last] = value_words.as_slice()
        && *prev == "of"
        && last.ends_with("ed")
    {
        return true;
    }
    let before_infinitive = || value_words.iter().take_while(|w| **w != "to");
    if !key_words.is_empty()
        && key_words.iter().all(|w| LIGHT_KEYS.contains(w))
        && !before_infinitive().any(|w| topical(w))
    {
        return true;
    }
    if key == "possessions" {
        let head = value_words
            .last()
            .map(|w| w.to_lowercase())
            .unwrap_or_default();
        let person = super::statements::is_relative(&head)
            || [
                "husband",
                "wife",
                "partner",
                "son",
                "daughter",
                "boyfriend",
                "girlfriend",
            ]
            .contains(&head.as_str());
        let light = LIGHT.contains(head.as_str()) || ABSTRACT.contains(&head);
        return person || light || !value_words.iter().any(|w| topical(w));
    }
    false
}

/// How many distinct topic words ([`is_topic_word`]) a fact holds, key and
/// value together, given its key's ([`key_topic_words`]).
fn topic_words(key_topic: &[&str], value: &str) -> usize {
    let words = FoldedWords::of(value);
    let mut seen: Vec<&str> = Vec::new();
    for w in words.words() {
        if is_topic_word(w) && !key_topic.contains(&w) && !seen.contains(&w) {
            seen.push(w);
        }
    }
    key_topic.len() + seen.len()
}

/// The distinct topic words of a fact's key, in order (see [`topic_words`]).
fn key_topic_words<'a>(key_words: &[&'a str]) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for &w in key_words {
        if is_topic_word(w) && !seen.contains(&w) {
            seen.push(w);
        }
    }
    seen
}

/// A word of three letters or more that is no stop word.
fn is_topic_word(w: &str) -> bool {
    w.chars().filter(|c| c.is_alphabetic()).count() >= 3 && !crate::text::is_stop_word(w)
}

/// Version 4 keeps a fact only when key and value hold two topic words or
/// more (`family: family`, `felt: liberated` say too little to rest on).
pub(super) fn drop_thin_facts(b: &mut Builder) {
    for acc in b.nodes.values_mut() {
        for fact in &mut acc.facts {
            let key = fact.key.as_str();
            let folded = FoldedWords::of(key);
            let key_words = folded.to_list();
            let key_topic = key_topic_words(&key_words);
            let mut values: Vec<String> = Vec::new();
            for v in fact.values.drain(..).filter_map(trim_dangling_verb) {
                if topic_words(&key_topic, &v) >= 2
                    && !junk(key, &key_words, &v)
                    && !values.contains(&v)
                {
                    values.push(v);
                }
            }
            fact.values = values;
        }
        acc.facts.retain(|f| !f.values.is_empty());
    }
}

/// Emits a clause fact when key and value stay compact.
fn emit(ctx: &EventCtx, b: &mut Builder, who: &Key, key: &str, value: String) {
    let key_words = key.split_whitespace().count();
    let value_words = value.split_whitespace().count();
    if key_words == 0 || key_words > 4 || key_words + value_words > 10 {
        return;
    }
    ctx.fact(b, who, key, vec![value], FactMode::Set);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use strataflow_record::record::{
        Criticality, Event, EventTemporal, EventType, Occurrence, Precision, Scope, TimeBasis,
    };
    use strataflow_record::{RecordId, SourceTime};

    fn event(quote: &str) -> Event {
        Event {
            tenant: "t".to_owned(),
            block: RecordId([200; 32]),
            source_messages: vec![RecordId([201; 32])],
            title: String::new(),
            summary: String::new(),
            narrative: String::new(),
            tags: Vec::new(),
            quotes: vec![quote.to_owned()],
            temporal: EventTemporal {
                mentioned_at: SourceTime::utc_without_offset(1_683_547_200_000),
                happened_start: None,
                happened_end: None,
                original_text: None,
                precision: Precision::Day,
                basis: TimeBasis::Relative,
                status: Occurrence::Occurred,
                participants: vec!["Ana".to_owned()],
                event_type: EventType::Other,
                supersedes: Vec::new(),
                conflicts_with: Vec::new(),
            },
            scope: Scope::User,
            criticality: Criticality::Routine,
            confidence_milli: 800,
        }
    }

    /// `key: value` of Ana's facts, `relation -> target` of her edges.
    fn said(quote: &str) -> Vec<String> {
        let events = vec![(RecordId([1; 32]), event(quote))];
        let out = HeuristicProjectorV4
            .project(&ProjectionInput {
                tenant: "t",
                events: &events,
                attempt: 1,
            })
            .unwrap();
        crate::projector::heuristic::statements::tests::ana_says(&out)
    }

    fn table(rows: &[(&str, &[&str])]) {
        let mut failures = Vec::new();
        for (quote, want) in rows {
            let got = said(quote);
            for w in *want {
                if !got.iter().any(|g| g == w) {
                    failures.push(format!("{quote:?}: want {w:?}, got {got:?}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    fn absent(rows: &[(&str, &str)]) {
        for (quote, not) in rows {
            let got = said(quote);
            assert!(
                !got.iter().any(|g| g.starts_with(not)),
                "{quote:?}: unwanted {not:?} in {got:?}"
            );
        }
    }

    #[test]
    fn word_sets_answer_as_their_lists() {
        for set in [
            &AUXILIARIES,
            &SKIPPED_ADVERBS,
            &SKIP_VERBS,
            &OBJECT_DETERMINERS,
            &OBJECT_END,
            &LIGHT,
            &FUNCTION_WORD_SET,
            &LIGHT_VERBS,
            &PARTICIPLES,
            &BASE_VERBS,
            &MONTHS,
            &IMPERATIVES,
            &ABSTRACT,
            &WEEKDAYS,
        ] {
            crate::text::tests::assert_same_answers(set);
        }
    }

    #[test]
    fn id_and_classes() {
        assert_eq!(
            HeuristicProjectorV4.id().to_string(),
            "heuristic-projector@4"
        );
        assert_eq!(CLAUSE_PATTERNS.len(), 4);
    }

    #[test]
    fn verb_clauses() {
        table(&[
            (
                "Yeah, I painted that lake sunrise last year!",
                &["painted: lake sunrise"],
            ),
            (
                "I ran a charity race for mental health last Saturday.",
                &["ran: charity race for mental health"],
            ),
            (
                "I moved from my home country four years ago.",
                &["moved from: home country"],
            ),
            (
                "So I'm carving out quiet time for reading.",
                &["carving out: quiet time for reading"],
            ),
            (
                "I cherish time with family.",
                &["cherishes: time with family"],
            ),
            ("We found these lovely flowers.", &["found: lovely flowers"]),
            (
                "I'm off to go swimming with the kids.",
                &["will go swimming with: kids"],
            ),
            ("I went hiking last week.", &["went: hiking"]),
            (
                "I talked about my transgender journey and encouraged students to get involved.",
                &["talked about: transgender journey", "encouraged: students"],
            ),
            (
                "I'm putting together an art show next month.",
                &["putting together: art show"],
            ),
            (
                "We had a great time at the pride event last month.",
                &["had: great time at pride event"],
            ),
            (
                "We got another cat named Bailey too.",
                &["got: cat named Bailey"],
            ),
            (
                "I'm working on my business and some new dance routines.",
                &["working on: business and new dance routines"],
            ),
            ("I'm gonna show my paintings.", &["will show: paintings"]),
            ("I don't eat red meat anymore.", &["not eat: red meat"]),
        ]);
        absent(&[
            ("I did my best.", "did:"),
            (
                "I'm starting to realize that self-care matters.",
                "starting to:",
            ),
            ("I think it's great.", "thinks"),
            ("We do all kinds of dances.", "kinds"),
        ]);
    }

    #[test]
    fn identity_clauses() {
        table(&[
            ("I'm a single parent.", &["is: single parent"]),
            (
                "I was a bank manager for ten years.",
                &["was: bank manager"],
            ),
            (
                "I've been into salsa dancing since I was little.",
                &["into: salsa dancing"],
            ),
        ]);
    }

    #[test]
    fn state_clauses() {
        table(&[
            (
                "I'm keen on counseling or working in mental health.",
                &["keen on: counseling or working in mental health"],
            ),
            (
                "I've been blessed with a loving family and great mentors.",
                &["blessed with: loving family and great mentors"],
            ),
            (
                "I'm thrilled to make a family for kids who need one.",
                &["thrilled to make: family for kids"],
            ),
            (
                "I'm determined to find the right spot.",
                &["determined to find: right spot"],
            ),
        ]);
        absent(&[(
            "I was so happy and thankful for all the support.",
            "thankful for:",
        )]);
    }

    #[test]
    fn possessed_clauses() {
        table(&[
            (
                "My goal is to give kids a loving home.",
                &["goal: give kids loving home"],
            ),
            ("My kids love the beach.", &["kids love: beach"]),
            (
                "I love all dances, but contemporary is my top pick.",
                &["top pick: contemporary"],
            ),
            (
                "Drawing flowers is one of my faves.",
                &["faves: drawing flowers"],
            ),
            (
                "Art gives me so much joy and freedom.",
                &["art gives: joy and freedom"],
            ),
            (
                "Representing diversity in my art is important to me.",
                &["important: representing diversity in art"],
            ),
            (
                "And yup, I do- Oscar, my guinea pig.",
                &["guinea pig: Oscar"],
            ),
            (
                "Finished a marathon in Porto.",
                &["finished: marathon in Porto"],
            ),
            (
                "Still following my passion for dance.",
                &["following: passion for dance"],
            ),
        ]);
        absent(&[("Taking care of ourselves is vital.", "taking")]);
    }

    #[test]
    fn values_are_compact_noun_phrases() {
        for quote in [
            "I'm keen on counseling or working in mental health - I'd love to support those with similar issues.",
            "I ran a charity race for mental health last Saturday – it was really rewarding.",
            "We roast marshmallows, tell stories around the campfire and just enjoy each other's company.",
            "I'm getting ready for a dance comp near me next month.",
        ] {
            for fact in said(quote) {
                let (key, value) = fact.split_once(": ").unwrap_or((&fact, ""));
                let last = value.rsplit(' ').next().unwrap_or_default().to_lowercase();
                assert!(
                    !super::super::statements::FUNCTION_WORDS.contains(&last.as_str()),
                    "{quote:?}: {fact:?}"
                );
                assert!(
                    key.split(' ').count() + value.split(' ').count() <= 10,
                    "{fact:?}"
                );
            }
        }
        // Thin facts say too little: two topic words at least.
        absent(&[
            ("I felt liberated.", "felt"),
            ("My family is great.", "family: family"),
        ]);
    }

    /// Junk removed, information kept: light verbs with a vague object,
    /// possessions that are no things, imperatives to the listener, dates
    /// as values, cut clauses.
    #[test]
    fn junk_facts_are_dropped() {
        absent(&[
            ("Nothing serious, but we cancelled the trip.", "nothing"),
            ("The help I got made a huge difference.", "got"),
            ("I got some possible leads.", "got"),
            ("I got some possible leads.", "possessions"),
            ("We all have unique paths.", "ha"),
            ("I made something to catch the eye.", "made"),
            ("I have a husband who cooks dinner.", "possessions"),
            ("I have a serene vibe.", "possessions"),
            ("I got a temp job to cover rent.", "possessions"),
            ("Use FINAL when you need exact reads.", "uses"),
            ("Enjoy your lunch with Marta!", ""),
            ("It matches what I saved on 27 April.", "saved"),
            ("I'm a mix of excited and scared.", "identity"),
        ]);
        table(&[
            // A month after a day number or a preposition is a date, never
            // the modal `may`: the date ends the object.
            (
                "I've taken the ferry trip on 20 May out of the plan.",
                &["taken: ferry trip"],
            ),
            ("I booked the ferry trip in May.", &["booked: ferry trip"]),
            // A past form is not put in the third person.
            (
                "I learnt patience from my grandfather.",
                &["learnt: patience from grandfather"],
            ),
            (
                "I've known these neighbours for years.",
                &["known: neighbours"],
            ),
            // A verb cut from its object is trimmed, the rest kept.
            (
                "I joined a choir to meet new people and learn.",
                &["joined: choir to meet new people"],
            ),
            // Light verbs with a topic keep it.
            (
                "I got a temp job to cover rent.",
                &["got: temp job to cover rent"],
            ),
            ("I had love for horses.", &["love for: horses"]),
            ("I got a kayak for my birthday.", &["possessions: kayak"]),
            (
                "I made a clay bowl in class.",
                &["made: clay bowl in class"],
            ),
        ]);
    }
}
