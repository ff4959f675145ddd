//! The temporal resolver.
//!
//! Event cards keep *when it was said* (the mention time, from the message)
//! apart from *when it happened*. This module finds time expressions in a
//! sentence or message ("yesterday", "last Sat", "two weekends ago",
//! "8 May 2023", "for four years", "since 2016") and resolves each one
//! against the mention time.
//!
//! It is pure and deterministic: no clock, no randomness, no hash-map
//! iteration. All calendar arithmetic happens in the mention's own UTC
//! offset (UTC when the source gave none). Intervals are inclusive: from the
//! first millisecond of the period to its last, converted to UTC.
//!
//! Matching is case-insensitive and works on word tokens, so punctuation
//! around an expression does not matter. Text that holds no recognised
//! expression yields nothing: the resolver never invents a time.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::sync::LazyLock;

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};
use regex::{Captures, Regex};
use strataflow_record::record::{Precision, TimeBasis};
use strataflow_record::{SourceTime, Timestamp};

use crate::text::WordSet;

/// Direction of a statement relative to its mention.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Tense {
    /// Already happened.
    Past,
    /// Happening now.
    Present,
    /// Yet to happen.
    Future,
}

/// A time expression found in text and resolved against the mention time.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TimeExpression {
    /// Byte offset of the expression in the text.
    pub start: usize,
    /// Byte offset just after it.
    pub end: usize,
    /// The expression as written.
    pub text: String,
    /// Start of the interval.
    pub happened_start: Option<Timestamp>,
    /// End of the interval (inclusive: its last millisecond).
    pub happened_end: Option<Timestamp>,
    /// Precision.
    pub precision: Precision,
    /// Basis.
    pub basis: TimeBasis,
    /// Whether it lies before, around or after the mention.
    pub tense: Tense,
    /// How the year of a date written without one was chosen
    /// ([`Resolver::V2`] only; `None` otherwise).
    pub year_basis: Option<YearBasis>,
}

/// Which resolver reads the text. [`Resolver::V1`] is the frozen resolver
/// of `heuristic-extractor@1`–`@3`; [`Resolver::V2`] (used by `@4`) places a
/// date without a year by all the evidence of its sentence (see
/// [`YearBasis`]) and reads day ranges ("14–17 May"); [`Resolver::V3`]
/// (used by `@5`) is V2 that also reads deadlines, dates a duration only
/// when it runs up to now, and takes "that Saturday" from an earlier
/// mention ([`resolve_best_after`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Resolver {
    /// The resolver of extractor versions 1 to 3.
    #[default]
    V1,
    /// Weekday, modality and recurrence aware.
    V2,
    /// V2, plus deadlines ("before the end of January": from the mention
    /// to then), durations dated only in the perfect ("I've been here for
    /// 3 years"; "dual-write for a few days" is a length, not a time) and
    /// anaphoric days ("that Saturday": the earlier-mentioned date that
    /// falls on it, else no date).
    V3,
}

/// The evidence that placed a date written without a year ([`Resolver::V2`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum YearBasis {
    /// The named weekday fits only that year among the mention's year and
    /// its neighbours ("Monday 20 May" said in April 2024: 2024).
    Weekday,
    /// An arrangement ("noted: … on …", "booked", "got it:", "cancelled"):
    /// the next occurrence on or after the mention day.
    Arrangement,
    /// The tense of the sentence: future → the next occurrence, past → the
    /// latest one.
    Tense,
    /// No evidence: the occurrence nearer to the mention.
    Nearest,
    /// [`Resolver::V3`]: "that Saturday", "that day" — the date of an
    /// earlier mention in the same message.
    Antecedent,
}

impl YearBasis {
    /// A short phrase for narratives ("year from the weekday").
    pub fn phrase(self) -> &'static str {
        match self {
            Self::Weekday => "year from the weekday",
            Self::Arrangement => "year from the arrangement",
            Self::Tense => "year from the tense",
            Self::Nearest => "year nearest the mention",
            Self::Antecedent => "date from an earlier mention",
        }
    }
}

/// The tense of a sentence, from its wording alone.
///
/// [`Tense::Future`] when it holds a future marker ("will", "'ll", "going
/// to", "gonna", "plan to", "planning", "thinking about", "next week",
/// "tomorrow", "upcoming", "soon", "can't wait", "this coming", "want to",
/// "hope to", "looking forward"); else [`Tense::Past`] when it holds a past
/// marker (a common irregular past verb, a verb-like word ending in "-ed",
/// "ago", "last", "yesterday", "used to"); else [`Tense::Present`].
pub fn detect_tense(text: &str) -> Tense {
    tense_of(&tokenize(text))
}

/// [`detect_tense`] over the words of a text already tokenized.
fn tense_of(toks: &[Tok<'_>]) -> Tense {
    tense_by(toks.len(), |k| toks.get(k).map_or("", |t| t.lower.as_ref()))
}

/// [`detect_tense`] over a text's folded words
/// ([`strataflow_text::tokens::words`], [`strataflow_text::Token::folded`]:
/// the `lower` of the tokens it reads).
pub fn tense_of_words<W: AsRef<str>>(words: &[W]) -> Tense {
    tense_by(words.len(), |k| words.get(k).map_or("", AsRef::as_ref))
}

/// [`detect_tense`] over `count` words, the `k`-th folded word given by
/// `word(k)` (empty past the end).
fn tense_by<'a>(count: usize, word: impl Fn(usize) -> &'a str) -> Tense {
    let mut past = false;
    for k in 0..count {
        let prev = k.checked_sub(1).map_or("", &word);
        let (cur, next) = (word(k), word(k + 1));
        if is_future_marker(prev, cur, next) {
            return Tense::Future;
        }
        past = past || is_past_marker(cur, next);
    }
    if past { Tense::Past } else { Tense::Present }
}

/// Every time expression in `text`, resolved against `mention`, in text
/// order and without overlaps (where matches overlap, the longest wins).
///
/// Results are remembered per thread for the latest texts
/// (`RECENT_TEXTS`): the extractors on this resolver may read a sentence
/// more than once. The function is pure, so this changes only the time it
/// takes.
pub fn find_time_expressions(text: &str, mention: SourceTime) -> Vec<TimeExpression> {
    find_time_expressions_with(text, mention, Resolver::V1)
}

/// [`find_time_expressions`] given the text's words when already computed
/// (`words`: [`strataflow_text::tokens::words`] of `text`, folded, as a
/// carried [`strataflow_text::Analysis`] holds them): a text none of whose
/// words is an anchor has none, and is neither tokenised nor looked up.
pub fn find_time_expressions_after_words(
    text: &str,
    words: Option<&[&str]>,
    mention: SourceTime,
) -> Vec<TimeExpression> {
    if words.is_some_and(|w| !w.iter().any(|w| is_anchor(w))) {
        return Vec::new();
    }
    find_time_expressions(text, mention)
}

/// Whether `text` holds a time expression under [`Resolver::V1`]: exactly
/// `!find_time_expressions_after_words(text, words, mention).is_empty()`,
/// without resolving more than the first expression found (the summarizer
/// asks only this). Every candidate a parser finds is kept by the overlap
/// rule or displaced by a longer one, so there is an expression as soon as
/// there is a candidate (`has_time_expression_is_a_nonempty_find` checks).
pub fn has_time_expression_after_words(
    text: &str,
    words: Option<&[&str]>,
    mention: SourceTime,
) -> bool {
    if words.is_some_and(|w| !w.iter().any(|w| is_anchor(w))) {
        return false;
    }
    let toks = tokenize(text);
    if !toks.iter().any(|t| is_anchor(&t.lower)) {
        return false;
    }
    let Some(ctx) = Ctx::new(text, toks, mention, Resolver::V1) else {
        return false;
    };
    !ctx.iso.is_empty()
        || (0..ctx.toks.len()).any(|i| ctx.may_start(i) && ctx.any_at(i, ctx.tense, true))
}

/// The words, besides [`is_anchor`]'s, at which a parser of [`Ctx::at`]
/// may start a candidate: the prepositions, determiners and adverbs the
/// parsers open with (`MONTH_TRIGGERS`, `YEAR_TRIGGERS`, the first words
/// of `REL_DAYS` and `REL_PERIODS`, "from"/"between", "early"/"mid"/"late",
/// "earlier"/"later", "just", "not", "right", "at", "these", "since"…) and
/// every count ("a", "couple", "few", [`number_word`]'s words). A test
/// checks the lists it must hold, and that skipping the other tokens
/// finds what trying every token finds.
#[rustfmt::skip]
static STARTERS: WordSet = WordSet::new(&[
    "the", "from", "between", "on", "in", "during", "for", "over", "since", "last", "this",
    "next", "earlier", "later", "early", "mid", "late", "just", "recently", "lately", "not",
    "currently", "nowadays", "right", "at", "these", "of", "until", "till", "by", "today",
    "tonight", "yesterday", "day", "tomorrow",
    "a", "an", "couple", "few",
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty",
]);

/// [`find_time_expressions`] with a chosen resolver. Only [`Resolver::V1`]'s
/// results are remembered: the extractors on it may read a text more than
/// once; the later resolvers are read once per
/// text (by the extractor of their version), and remembering their
/// results would only cost the copies.
pub fn find_time_expressions_with(
    text: &str,
    mention: SourceTime,
    resolver: Resolver,
) -> Vec<TimeExpression> {
    if resolver != Resolver::V1 {
        return find_uncached(text, mention, resolver);
    }
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        let key = (text.to_owned(), mention.utc_ms, mention.offset_minutes);
        if let Some(found) = recent.get(&key) {
            return found.clone();
        }
        let found = find_uncached(text, mention, resolver);
        if recent.len() >= RECENT_TEXTS {
            recent.clear();
        }
        recent.insert(key, found.clone());
        found
    })
}

/// Texts whose time expressions a thread remembers (the map is emptied
/// when full: a block's sentences are read within a few hundred texts).
const RECENT_TEXTS: usize = 2048;

/// Key of a remembered text: the text and its mention time.
type RecentKey = (String, i64, Option<i16>);

thread_local! {
    static RECENT: std::cell::RefCell<std::collections::HashMap<RecentKey, Vec<TimeExpression>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn find_uncached(text: &str, mention: SourceTime, resolver: Resolver) -> Vec<TimeExpression> {
    let toks = tokenize(text);
    if !toks.iter().any(|t| is_anchor(&t.lower)) {
        return Vec::new();
    }
    find_in(text, toks, mention, resolver)
}

/// Whether a word can be part of the one word that every time expression
/// holds: a digit (dates, years, ISO times, counts such as "3 days"), a
/// unit ("days", "weekend"), a day word ("yesterday", "tonight",
/// "morning"), "ago", a weekday, a month, a named decade, or a word of an
/// inferred time ("just", "recently", "now", "moment", "present"). Every
/// parser needs one of these, so a text without any has no expression and
/// is not parsed (`anchors_are_necessary` checks this against the
/// unfiltered parser).
fn is_anchor(w: &str) -> bool {
    w.bytes().any(|b| b.is_ascii_digit())
        || (ANCHOR_LENGTHS.contains(&w.len()) && ANCHOR_WORDS.contains(w))
}

/// The byte lengths of [`ANCHOR_WORDS`] (`may` to `wednesday's`): a word of
/// another length is looked up no further (the test of the list checks).
const ANCHOR_LENGTHS: std::ops::RangeInclusive<usize> = 3..=11;

/// Every word [`unit_of`], [`weekday_any`] (a full weekday also with `'s`)
/// or [`month_any`] reads, and the day and inferred-time words of
/// [`is_anchor`] (`anchor_words_are_what_the_parsers_read` checks the list
/// against the parsers).
#[rustfmt::skip]
static ANCHOR_WORDS: WordSet = WordSet::new(&[
    "day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years",
    "decade", "decades",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "monday's", "tuesday's", "wednesday's", "thursday's", "friday's", "saturday's", "sunday's",
    "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "ago", "today", "tonight", "yesterday", "tomorrow", "morning", "afternoon", "evening",
    "night", "sixties", "seventies", "eighties", "nineties", "just", "recently", "lately",
    "currently", "nowadays", "now", "moment", "present",
]);

/// [`find_uncached`] without the anchor check.
fn find_in<'a>(
    text: &'a str,
    toks: Vec<Tok<'a>>,
    mention: SourceTime,
    resolver: Resolver,
) -> Vec<TimeExpression> {
    find_from(text, toks, mention, resolver, Ctx::may_start)
}

/// [`find_in`], trying the parsers at each token for which `starts`
/// holds ([`Ctx::may_start`]; the tests pass every token to compare).
fn find_from<'a>(
    text: &'a str,
    toks: Vec<Tok<'a>>,
    mention: SourceTime,
    resolver: Resolver,
    starts: fn(&Ctx<'a>, usize) -> bool,
) -> Vec<TimeExpression> {
    let Some(ctx) = Ctx::new(text, toks, mention, resolver) else {
        return Vec::new();
    };
    let mut cands = ctx.iso.clone();
    for i in (0..ctx.toks.len()).filter(|&i| starts(&ctx, i)) {
        cands.extend(ctx.at(i, ctx.tense, true));
    }
    // Longest first; the sort is stable, so ties keep parser order.
    cands.sort_by_key(|c| (Reverse(c.end - c.start), c.start));
    let mut chosen: Vec<Cand> = Vec::new();
    for c in cands {
        if chosen.iter().all(|o| c.end <= o.start || c.start >= o.end) {
            chosen.push(c);
        }
    }
    chosen.sort_by_key(|c| c.start);
    if resolver == Resolver::V3 {
        chosen = chosen.into_iter().map(|c| ctx.deadline(c)).collect();
    }
    chosen.into_iter().map(|c| ctx.finish(c)).collect()
}

/// Words that make the date after them a deadline ([`Resolver::V3`]).
const DEADLINE_WORDS: &[&str] = &["by", "before", "until", "till"];

impl Ctx<'_> {
    /// [`Resolver::V3`]: a date after "by", "before", "until" or "till"
    /// (optionally "… the end of"), in text that is not in the past and
    /// reaching past the mention day, is a deadline: the interval runs from
    /// the mention day to the end of that date ("before the end of
    /// January", "by Friday", "until 14 May").
    fn deadline(&self, c: Cand) -> Cand {
        // Past text is a deadline only when it wishes or obliges ("wants
        // it done by", "needs to be finished before").
        let wish = self.toks.iter().any(|t| {
            matches!(
                t.lower.as_ref(),
                "want" | "wants" | "need" | "needs" | "must" | "should" | "have" | "has"
            )
        });
        if self.tense == Tense::Past && !wish {
            return c;
        }
        let Some(first) = self.toks.iter().position(|t| t.start == c.start) else {
            return c;
        };
        let word = |k: usize| self.toks.get(k).map(|t| t.lower.as_ref());
        // "… the end of" + date, or "… the end" + "of date"; a parser may
        // have taken the deadline word itself ("until the end of June").
        let mut k = first;
        if self.is(first, DEADLINE_WORDS) {
            k = first + 1;
        } else if word(k) == Some("of") {
            if k >= 2 && word(k - 1) == Some("end") && word(k - 2) == Some("the") {
                k -= 2;
            } else {
                return c;
            }
        } else if k >= 3
            && word(k - 1) == Some("of")
            && word(k - 2) == Some("end")
            && word(k - 3) == Some("the")
        {
            k -= 3;
        }
        let Some(trigger) = k.checked_sub(1) else {
            return c;
        };
        if !self.is(trigger, DEADLINE_WORDS) {
            return c;
        }
        let Some((today, _)) = self.span_ms(self.today, self.today) else {
            return c;
        };
        let Some(start) = self.toks.get(trigger).map(|t| t.start) else {
            return c;
        };
        if c.hi < today {
            return c;
        }
        Cand {
            start,
            lo: today,
            precision: Precision::Range,
            tense: Some(Tense::Future),
            ..c
        }
    }
}

/// [`resolve_best_with`] for a sentence that follows `earlier` (the time
/// expressions of the sentences before it in the same message, in order).
/// Under [`Resolver::V3`] an anaphoric day — "that Saturday", "that
/// day", "the same day" — takes the latest earlier single-day date (on that
/// weekday, when one is named), with [`YearBasis::Antecedent`]; with none,
/// the anaphor dates nothing. Other resolvers ignore `earlier`.
pub fn resolve_best_after(
    text: &str,
    earlier: &[TimeExpression],
    mention: SourceTime,
    resolver: Resolver,
) -> Option<TimeExpression> {
    resolve_best_after_words(text, None, earlier, mention, resolver)
}

/// [`resolve_best_after`] given the text's words when already computed
/// (`words`: [`strataflow_text::tokens::words`] of `text`, folded, as a
/// carried [`strataflow_text::Analysis`] holds them). A text none of whose
/// words is an anchor has no expression (the parser finds none without
/// one), so it is neither tokenised nor looked up: the same answer without
/// the work.
pub fn resolve_best_after_words(
    text: &str,
    words: Option<&[&str]>,
    earlier: &[TimeExpression],
    mention: SourceTime,
    resolver: Resolver,
) -> Option<TimeExpression> {
    let anchored = words.is_none_or(|w| w.iter().any(|w| is_anchor(w)));
    let best = if anchored {
        resolve_best_with(text, mention, resolver)
    } else {
        None
    };
    if resolver != Resolver::V3
        || best
            .as_ref()
            .is_some_and(|b| b.basis == TimeBasis::Explicit)
    {
        return best;
    }
    // Every anaphor holds `that` or `same`; a folded token equal to either
    // is spelled in ASCII letters (no other letter lowercases to them), so
    // a sentence without either spelling needs no tokens.
    if !crate::text::contains_any4_ascii_ci(text, [b"that", b"same"]) {
        return best;
    }
    // The given words are the tokens' folded words (`tokenize` reads the
    // same `strataflow_text::tokens::words`): a sentence whose words hold
    // no anaphor is not tokenised.
    if words.is_some_and(|w| anaphor_at(w.len(), |k| w.get(k).copied()).is_none()) {
        return best;
    }
    let toks = tokenize(text);
    let offset_ms = i64::from(mention.offset_minutes.unwrap_or(0)) * 60_000;
    let anaphor = anaphor_at(toks.len(), |k| toks.get(k).map(|t| t.lower.as_ref()))
        .and_then(|(i, day)| Some((toks.get(i)?.start, toks.get(i + 1)?.end, day)));
    let Some((start, end, weekday)) = anaphor else {
        return best;
    };
    let local_day = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms.checked_add(offset_ms)?).map(|t| t.date_naive())
    };
    let antecedent = earlier.iter().rev().find(|e| {
        let (Some(a), Some(b)) = (e.happened_start, e.happened_end) else {
            return false;
        };
        let (Some(da), Some(db)) = (local_day(a.0), local_day(b.0)) else {
            return false;
        };
        da == db && weekday.is_none_or(|wd| da.weekday() == wd)
    })?;
    Some(TimeExpression {
        start,
        end,
        text: text.get(start..end).unwrap_or_default().to_owned(),
        happened_start: antecedent.happened_start,
        happened_end: antecedent.happened_end,
        precision: Precision::Day,
        basis: TimeBasis::Relative,
        tense: antecedent.tense,
        year_basis: Some(YearBasis::Antecedent),
    })
}

/// The first anaphoric day among `count` folded words (the `k`-th given by
/// `word(k)`): "that Saturday" (a full weekday, with its weekday), "that
/// day" or "the same day"; the index of its first word (`that` or `same`).
fn anaphor_at<'a>(
    count: usize,
    word: impl Fn(usize) -> Option<&'a str>,
) -> Option<(usize, Option<Weekday>)> {
    (0..count.saturating_sub(1)).find_map(|i| {
        let day = match (word(i)?, word(i + 1)?) {
            ("that", d) => weekday_full(d).map(Some).or((d == "day").then_some(None))?,
            ("same", "day") if i > 0 && word(i - 1) == Some("the") => None,
            _ => return None,
        };
        Some((i, day))
    })
}

/// The first time expression in `text`, in text order.
pub fn resolve_first(text: &str, mention: SourceTime) -> Option<TimeExpression> {
    find_time_expressions(text, mention).into_iter().next()
}

/// The expression that best dates `text`: the first explicit one (a stated
/// date beats a weekday next to it: "Monday 20 May"), else the first
/// relative one, else the first inferred one ("just", "recently").
pub fn resolve_best(text: &str, mention: SourceTime) -> Option<TimeExpression> {
    resolve_best_with(text, mention, Resolver::V1)
}

/// [`resolve_best`] with a chosen resolver.
pub fn resolve_best_with(
    text: &str,
    mention: SourceTime,
    resolver: Resolver,
) -> Option<TimeExpression> {
    let all = find_time_expressions_with(text, mention, resolver);
    let k = [TimeBasis::Explicit, TimeBasis::Relative]
        .iter()
        .find_map(|basis| all.iter().position(|e| e.basis == *basis))
        .unwrap_or(0);
    all.into_iter().nth(k)
}

// ---------------------------------------------------------------------------
// Lexicon

/// English month names, January first.
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Parts of a day that may follow "yesterday", "tomorrow" or a weekday.
const PARTS_OF_DAY: &[&str] = &["morning", "afternoon", "evening", "night"];

/// Words after which a bare weekday name is not a date ("every Saturday",
/// "Black Friday").
const LOOSE_WEEKDAY_BLOCK: &[&str] = &[
    "every", "each", "black", "good", "cyber", "easter", "ash", "holy", "super", "palm", "maundy",
];

/// Words before a month name that make it a month ("in June").
const MONTH_TRIGGERS: &[&str] = &[
    "in", "on", "of", "until", "till", "by", "during", "last", "next", "this",
];

/// Words before a four-digit number that make it a year ("in 2022").
const YEAR_TRIGGERS: &[&str] = &["in", "during", "of", "from", "by", "until", "till"];

/// Hedges allowed between "for" and a count ("for about four years").
const HEDGES: &[&str] = &[
    "about", "around", "almost", "nearly", "over", "roughly", "like", "maybe",
];

/// Common irregular past forms (and a few participles) that mark the past.
static PAST_IRREGULAR: WordSet = WordSet::new(&[
    "went",
    "was",
    "were",
    "had",
    "did",
    "got",
    "made",
    "took",
    "saw",
    "met",
    "bought",
    "ran",
    "came",
    "found",
    "gave",
    "felt",
    "began",
    "wrote",
    "lost",
    "left",
    "told",
    "thought",
    "sold",
    "won",
    "brought",
    "caught",
    "taught",
    "kept",
    "slept",
    "spent",
    "sent",
    "built",
    "heard",
    "held",
    "paid",
    "said",
    "stood",
    "understood",
    "became",
    "broke",
    "chose",
    "drove",
    "ate",
    "fell",
    "flew",
    "forgot",
    "grew",
    "knew",
    "led",
    "meant",
    "rode",
    "rang",
    "sang",
    "shot",
    "spoke",
    "stole",
    "swam",
    "threw",
    "woke",
    "wore",
    "drew",
    "drank",
    "fought",
    "froze",
    "hung",
    "lent",
    "sank",
    "shook",
    "stuck",
    "struck",
    "swore",
    "swept",
    "swung",
    "overcame",
    "been",
    "done",
    "gotten",
    "begun",
    "seen",
    "taken",
    "given",
    "written",
]);

/// Words ending in "-ed" that are not past verbs (or are mostly adjectives).
static ED_EXCLUDE: WordSet = WordSet::new(&[
    "need",
    "feed",
    "seed",
    "weed",
    "deed",
    "heed",
    "reed",
    "speed",
    "breed",
    "bleed",
    "greed",
    "steed",
    "tweed",
    "indeed",
    "exceed",
    "succeed",
    "proceed",
    "embed",
    "shed",
    "sled",
    "shred",
    "hundred",
    "kindred",
    "sacred",
    "naked",
    "wicked",
    "rugged",
    "ragged",
    "jagged",
    "crooked",
    "beloved",
    "excited",
    "interested",
    "tired",
    "married",
    "bored",
    "scared",
    "worried",
    "stressed",
    "thrilled",
    "pleased",
    "blessed",
    "determined",
    "motivated",
    "supposed",
    "talented",
    "dedicated",
    "related",
    "limited",
    "detailed",
    "advanced",
    "experienced",
    "concerned",
    "involved",
    "united",
    "obsessed",
    "amazed",
    "overwhelmed",
    "prepared",
]);

/// Past verbs after "just" that do not report an event ("I just wanted to").
const JUST_EXCLUDE: &[&str] = &["was", "were", "wanted", "needed", "thought", "meant"];

/// Words that make "next" a future marker ("next week", "next Saturday").
const NEXT_TIME_WORDS: &[&str] = &[
    "week", "weekend", "month", "year", "time", "summer", "winter", "spring", "fall", "autumn",
    "morning", "evening", "day", "days", "weeks", "months", "years", "few", "couple",
];

fn month_full(w: &str) -> Option<u32> {
    let p = MONTHS.iter().position(|m| *m == w)?;
    u32::try_from(p + 1).ok()
}

fn month_any(w: &str) -> Option<u32> {
    month_full(w).or(match w {
        "jan" => Some(1),
        "feb" => Some(2),
        "mar" => Some(3),
        "apr" => Some(4),
        "jun" => Some(6),
        "jul" => Some(7),
        "aug" => Some(8),
        "sep" | "sept" => Some(9),
        "oct" => Some(10),
        "nov" => Some(11),
        "dec" => Some(12),
        _ => None,
    })
}

/// Month names that are also common verbs.
fn is_verb_month(w: &str) -> bool {
    matches!(w, "may" | "march" | "mar")
}

fn weekday_full(w: &str) -> Option<Weekday> {
    match w.strip_suffix("'s").unwrap_or(w) {
        "monday" => Some(Weekday::Mon),
        "tuesday" => Some(Weekday::Tue),
        "wednesday" => Some(Weekday::Wed),
        "thursday" => Some(Weekday::Thu),
        "friday" => Some(Weekday::Fri),
        "saturday" => Some(Weekday::Sat),
        "sunday" => Some(Weekday::Sun),
        _ => None,
    }
}

fn weekday_abbr(w: &str) -> Option<Weekday> {
    match w {
        "mon" => Some(Weekday::Mon),
        "tue" | "tues" => Some(Weekday::Tue),
        "wed" => Some(Weekday::Wed),
        "thu" | "thur" | "thurs" => Some(Weekday::Thu),
        "fri" => Some(Weekday::Fri),
        "sat" => Some(Weekday::Sat),
        "sun" => Some(Weekday::Sun),
        _ => None,
    }
}

fn number_word(w: &str) -> Option<i64> {
    let n = match w {
        "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        "thirteen" => 13,
        "fourteen" => 14,
        "fifteen" => 15,
        "sixteen" => 16,
        "seventeen" => 17,
        "eighteen" => 18,
        "nineteen" => 19,
        "twenty" => 20,
        "thirty" => 30,
        "forty" => 40,
        "fifty" => 50,
        _ => return None,
    };
    Some(n)
}

fn is_digits(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())
}

/// A day of the month as written: "8", "08", "8th", "1st", "22nd", "23rd".
/// Returns the day and whether it was written as an ordinal.
fn day_num(w: &str) -> Option<(u32, bool)> {
    let (digits, ordinal) = match ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|s| w.strip_suffix(s))
    {
        Some(d) => (d, true),
        None => (w, false),
    };
    if !is_digits(digits) || digits.len() > 2 {
        return None;
    }
    let d: u32 = digits.parse().ok()?;
    (1..=31).contains(&d).then_some((d, ordinal))
}

/// The first year of a decade as written: "1990s", "1990's", "90s", "nineties".
fn decade_start(w: &str, current_year: i32) -> Option<i32> {
    let named = match w {
        "sixties" => Some(1960),
        "seventies" => Some(1970),
        "eighties" => Some(1980),
        "nineties" => Some(1990),
        _ => None,
    };
    if named.is_some() {
        return named;
    }
    let digits = w.strip_suffix("'s").or_else(|| w.strip_suffix('s'))?;
    if !is_digits(digits) {
        return None;
    }
    let v: i32 = digits.parse().ok()?;
    if v % 10 != 0 {
        return None;
    }
    match digits.len() {
        4 if (1000..=2990).contains(&v) => Some(v),
        2 if v <= current_year.rem_euclid(100) => Some(2000 + v),
        2 => Some(1900 + v),
        _ => None,
    }
}

fn is_regular_past(w: &str) -> bool {
    w.len() >= 4
        && w.ends_with("ed")
        && w.bytes().all(|b| b.is_ascii_alphabetic())
        && !ED_EXCLUDE.contains(w)
}

pub(crate) fn is_past_verb(w: &str) -> bool {
    PAST_IRREGULAR.contains(w) || is_regular_past(w)
}

fn is_just_verb(w: &str) -> bool {
    is_past_verb(w) && !JUST_EXCLUDE.contains(&w)
}

fn is_future_marker(prev: &str, cur: &str, next: &str) -> bool {
    match cur {
        "will" | "won't" | "shall" | "gonna" | "wanna" | "tomorrow" | "upcoming" | "soon"
        | "planning" => true,
        "going" => next == "to" && !matches!(prev, "was" | "were"),
        "plan" | "plans" => matches!(next, "to" | "on"),
        "thinking" => matches!(next, "about" | "of"),
        "can't" | "cannot" | "cant" => next == "wait",
        "this" => next == "coming",
        "want" | "hope" | "hoping" | "intend" => next == "to",
        "looking" => next == "forward",
        "next" => {
            prev != "the"
                && (NEXT_TIME_WORDS.contains(&next)
                    || weekday_any(next).is_some()
                    || month_full(next).is_some())
        }
        _ => cur.ends_with("'ll"),
    }
}

/// Words that state an arrangement: the date they give is the date of
/// something still to come ("Noted: Sintra day trip on Monday 20 May", "I
/// booked the train: 17 May", "we cancelled the trip on 20 May").
const ARRANGEMENT_WORDS: &[&str] = &[
    "noted",
    "booked",
    "reserved",
    "scheduled",
    "rescheduled",
    "postponed",
    "cancelled",
    "canceled",
    "confirmed",
    "arranged",
    "planned",
    "plan",
    "plans",
    "due",
];

/// [`Resolver::V2`]: the text states an arrangement (a word of
/// [`ARRANGEMENT_WORDS`], "got it" or "called off").
fn is_arranged(toks: &[Tok<'_>]) -> bool {
    toks.iter().enumerate().any(|(k, t)| {
        ARRANGEMENT_WORDS.contains(&t.lower.as_ref())
            || (t.lower == "got" && toks.get(k + 1).is_some_and(|n| n.lower == "it"))
            || (t.lower == "called" && toks.get(k + 1).is_some_and(|n| n.lower == "off"))
    })
}

/// [`Resolver::V2`]: the text states a recurrence ("every 20 May", "each
/// year on 14 May", "annually").
fn is_recurring(toks: &[Tok<'_>]) -> bool {
    toks.iter()
        .enumerate()
        .any(|(k, t)| match t.lower.as_ref() {
            "annually" | "yearly" => true,
            "every" | "each" => toks.get(k + 1).is_some_and(|n| {
                let n = n.lower.as_ref();
                matches!(n, "year" | "on") || day_num(n).is_some() || month_any(n).is_some()
            }),
            _ => false,
        })
}

fn is_past_marker(cur: &str, next: &str) -> bool {
    matches!(cur, "ago" | "last" | "yesterday")
        || (cur == "used" && next == "to")
        || is_past_verb(cur)
}

fn weekday_any(w: &str) -> Option<Weekday> {
    weekday_full(w).or_else(|| weekday_abbr(w))
}

// ---------------------------------------------------------------------------
// Calendar arithmetic (all on local dates)

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    Day,
    Week,
    Weekend,
    Month,
    Year,
    Decade,
}

fn unit_of(w: &str) -> Option<Unit> {
    match w {
        "day" | "days" => Some(Unit::Day),
        "week" | "weeks" => Some(Unit::Week),
        "weekend" | "weekends" => Some(Unit::Weekend),
        "month" | "months" => Some(Unit::Month),
        "year" | "years" => Some(Unit::Year),
        "decade" | "decades" => Some(Unit::Decade),
        _ => None,
    }
}

fn unit_precision(unit: Unit) -> Precision {
    match unit {
        Unit::Day => Precision::Day,
        Unit::Month => Precision::Month,
        Unit::Year => Precision::Year,
        Unit::Week | Unit::Weekend | Unit::Decade => Precision::Range,
    }
}

fn add_days(d: NaiveDate, n: i64) -> Option<NaiveDate> {
    let k = Days::new(n.unsigned_abs());
    if n >= 0 {
        d.checked_add_days(k)
    } else {
        d.checked_sub_days(k)
    }
}

fn add_months(d: NaiveDate, n: i64) -> Option<NaiveDate> {
    let k = Months::new(u32::try_from(n.unsigned_abs()).ok()?);
    if n >= 0 {
        d.checked_add_months(k)
    } else {
        d.checked_sub_months(k)
    }
}

fn monday_of(d: NaiveDate) -> Option<NaiveDate> {
    add_days(d, -i64::from(d.weekday().num_days_from_monday()))
}

fn month_bounds(y: i32, m: u32) -> Option<(NaiveDate, NaiveDate)> {
    let first = NaiveDate::from_ymd_opt(y, m, 1)?;
    let last = first.checked_add_months(Months::new(1))?.pred_opt()?;
    Some((first, last))
}

fn year_bounds(y: i32) -> Option<(NaiveDate, NaiveDate)> {
    Some((
        NaiveDate::from_ymd_opt(y, 1, 1)?,
        NaiveDate::from_ymd_opt(y, 12, 31)?,
    ))
}

/// The calendar period `n` units away from the one holding `today`
/// (weeks are ISO weeks, Monday to Sunday; a weekend is its Saturday and Sunday).
fn period(today: NaiveDate, unit: Unit, n: i64) -> Option<(NaiveDate, NaiveDate)> {
    match unit {
        Unit::Day => {
            let d = add_days(today, n)?;
            Some((d, d))
        }
        Unit::Week | Unit::Weekend => {
            let monday = add_days(monday_of(today)?, n.checked_mul(7)?)?;
            let first = if unit == Unit::Week { 0 } else { 5 };
            Some((add_days(monday, first)?, add_days(monday, 6)?))
        }
        Unit::Month => {
            let first = NaiveDate::from_ymd_opt(today.year(), today.month(), 1)?;
            let first = add_months(first, n)?;
            month_bounds(first.year(), first.month())
        }
        Unit::Year => year_bounds(i32::try_from(i64::from(today.year()).checked_add(n)?).ok()?),
        Unit::Decade => None,
    }
}

/// "a few units ago" (2 to 4 units back) or "in a few units" (2 to 4 ahead).
fn few_span(today: NaiveDate, unit: Unit, future: bool) -> Option<(NaiveDate, NaiveDate)> {
    if future {
        Some((period(today, unit, 2)?.0, period(today, unit, 4)?.1))
    } else {
        Some((period(today, unit, -4)?.0, period(today, unit, -2)?.1))
    }
}

/// The same calendar day `n` units before `today` (clamped to month ends).
fn units_back(today: NaiveDate, unit: Unit, n: i64) -> Option<NaiveDate> {
    match unit {
        Unit::Day => add_days(today, n.checked_neg()?),
        Unit::Week => add_days(today, n.checked_mul(-7)?),
        Unit::Month => add_months(today, n.checked_neg()?),
        Unit::Year => add_months(today, n.checked_mul(-12)?),
        Unit::Decade => add_months(today, n.checked_mul(-120)?),
        Unit::Weekend => None,
    }
}

/// The latest `wd` strictly before `today`.
fn prev_weekday(today: NaiveDate, wd: Weekday) -> Option<NaiveDate> {
    let back = (7 + today.weekday().num_days_from_monday() - wd.num_days_from_monday()) % 7;
    add_days(today, -i64::from(if back == 0 { 7 } else { back }))
}

/// The earliest `wd` strictly after `today`.
fn next_weekday(today: NaiveDate, wd: Weekday) -> Option<NaiveDate> {
    let ahead = (7 + wd.num_days_from_monday() - today.weekday().num_days_from_monday()) % 7;
    add_days(today, i64::from(if ahead == 0 { 7 } else { ahead }))
}

/// `wd` in the ISO week `n` weeks from the one holding `today`.
fn week_weekday(today: NaiveDate, n: i64, wd: Weekday) -> Option<NaiveDate> {
    let monday = add_days(monday_of(today)?, n.checked_mul(7)?)?;
    add_days(monday, i64::from(wd.num_days_from_monday()))
}

/// A day and month without a year, placed by tense: past → the latest such
/// date on or before today, future → the earliest on or after today,
/// present → whichever is nearer (the past one on a tie).
fn day_by_tense(today: NaiveDate, month: u32, day: u32, dir: Tense) -> Option<NaiveDate> {
    let y = today.year();
    let at = |yy: i32| NaiveDate::from_ymd_opt(yy, month, day);
    match dir {
        Tense::Past => (0..8).find_map(|k| at(y - k).filter(|d| *d <= today)),
        Tense::Future => (0..8).find_map(|k| at(y + k).filter(|d| *d >= today)),
        Tense::Present => {
            let past = day_by_tense(today, month, day, Tense::Past);
            let future = day_by_tense(today, month, day, Tense::Future);
            match (past, future) {
                (Some(p), Some(f)) => Some(if f - today < today - p { f } else { p }),
                (p, f) => p.or(f),
            }
        }
    }
}

/// The year of a named month without a year, placed by tense: past → the
/// latest occurrence up to this month, future → the next from this month on,
/// present → this month, else the nearer occurrence.
fn month_year_by_tense(today: NaiveDate, month: u32, dir: Tense) -> i32 {
    let (y, cur) = (today.year(), today.month());
    let past = if month <= cur { y } else { y - 1 };
    let future = if month >= cur { y } else { y + 1 };
    match dir {
        Tense::Past => past,
        Tense::Future => future,
        Tense::Present => {
            let ahead = (month + 12 - cur) % 12;
            let back = (cur + 12 - month) % 12;
            if ahead < back { future } else { past }
        }
    }
}

// ---------------------------------------------------------------------------
// Tokens

#[derive(Debug)]
struct Tok<'a> {
    /// Byte offset of the first character.
    start: usize,
    /// Byte offset just after the last character.
    end: usize,
    /// Lowercased, with typographic apostrophes made plain: the text's own
    /// word when that is already so (most words), so that tokenising
    /// allocates only for the others.
    lower: Cow<'a, str>,
    /// Whether the original began with an uppercase letter.
    cap: bool,
}

/// Words: runs of letters and digits, with apostrophes inside ("I'll"),
/// as [`strataflow_text::tokens::words`] cuts them.
fn tokenize(text: &str) -> Vec<Tok<'_>> {
    strataflow_text::tokens::words(text)
        .iter()
        .map(|t| Tok {
            start: t.start,
            end: t.end,
            // An ASCII word without uppercase letters is its own fold.
            lower: if t
                .text
                .bytes()
                .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
            {
                Cow::Borrowed(t.text)
            } else {
                Cow::Owned(t.folded())
            },
            cap: t.is_capitalised(),
        })
        .collect()
}

fn is_space(gap: &str) -> bool {
    !gap.is_empty() && gap.chars().all(char::is_whitespace)
}

// ---------------------------------------------------------------------------
// Matching

/// A resolved match before selection.
#[derive(Clone, Debug)]
struct Cand {
    start: usize,
    end: usize,
    lo: i64,
    hi: i64,
    precision: Precision,
    basis: TimeBasis,
    tense: Option<Tense>,
    year_basis: Option<YearBasis>,
}

#[derive(Clone, Copy, Debug)]
enum Count {
    N(i64),
    /// "a few": 2 to 4.
    Few,
}

type Parser<'a> = fn(&Ctx<'a>, usize, Tense) -> Option<Cand>;

/// A table of word sequences and what they resolve to.
type Table<T> = &'static [(&'static [&'static str], T)];

/// Relative days: words, (first day, last day) from today, part of day may follow.
const REL_DAYS: Table<(i64, i64, bool)> = &[
    (&["today"], (0, 0, false)),
    (&["tonight"], (0, 0, false)),
    (&["this", "morning"], (0, 0, false)),
    (&["this", "afternoon"], (0, 0, false)),
    (&["this", "evening"], (0, 0, false)),
    (&["earlier", "today"], (0, 0, false)),
    (&["later", "today"], (0, 0, false)),
    (&["later", "tonight"], (0, 0, false)),
    (&["yesterday"], (-1, -1, true)),
    (&["last", "night"], (-1, -1, false)),
    (&["the", "day", "before", "yesterday"], (-2, -2, false)),
    (&["day", "before", "yesterday"], (-2, -2, false)),
    (&["tomorrow"], (1, 1, true)),
    (&["the", "day", "after", "tomorrow"], (2, 2, false)),
    (&["day", "after", "tomorrow"], (2, 2, false)),
    (&["the", "other", "day"], (-7, -1, false)),
];

/// The first words of [`REL_DAYS`]' entries.
const REL_DAY_FIRSTS: &[&str] = &[
    "today",
    "tonight",
    "this",
    "earlier",
    "later",
    "yesterday",
    "last",
    "the",
    "day",
    "tomorrow",
];

/// The first words of [`REL_PERIODS`]' entries.
const REL_PERIOD_FIRSTS: &[&str] = &["last", "the", "this", "next"];

/// Named relative periods: words, (unit, shift from the current period).
const REL_PERIODS: Table<(Unit, i64)> = &[
    (&["last", "week"], (Unit::Week, -1)),
    (&["the", "week", "before"], (Unit::Week, -1)),
    (&["the", "previous", "week"], (Unit::Week, -1)),
    (&["this", "past", "week"], (Unit::Week, -1)),
    (&["this", "week"], (Unit::Week, 0)),
    (&["next", "week"], (Unit::Week, 1)),
    (&["this", "coming", "week"], (Unit::Week, 1)),
    (&["the", "week", "before", "last"], (Unit::Week, -2)),
    (&["the", "week", "after", "next"], (Unit::Week, 2)),
    (&["last", "weekend"], (Unit::Weekend, -1)),
    (&["this", "past", "weekend"], (Unit::Weekend, -1)),
    (&["the", "past", "weekend"], (Unit::Weekend, -1)),
    (&["the", "weekend", "before"], (Unit::Weekend, -1)),
    (&["the", "previous", "weekend"], (Unit::Weekend, -1)),
    (&["this", "weekend"], (Unit::Weekend, 0)),
    (&["next", "weekend"], (Unit::Weekend, 1)),
    (&["the", "weekend", "before", "last"], (Unit::Weekend, -2)),
    (&["last", "month"], (Unit::Month, -1)),
    (&["the", "previous", "month"], (Unit::Month, -1)),
    (&["this", "month"], (Unit::Month, 0)),
    (&["next", "month"], (Unit::Month, 1)),
    (&["the", "month", "before", "last"], (Unit::Month, -2)),
    (&["the", "month", "after", "next"], (Unit::Month, 2)),
    (&["last", "year"], (Unit::Year, -1)),
    (&["the", "previous", "year"], (Unit::Year, -1)),
    (&["this", "year"], (Unit::Year, 0)),
    (&["next", "year"], (Unit::Year, 1)),
    (&["the", "year", "before", "last"], (Unit::Year, -2)),
    (&["the", "year", "after", "next"], (Unit::Year, 2)),
];

static ISO_DATE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"([0-9]{4})-([0-9]{2})-([0-9]{2})",
        r"(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]{1,9}))?)?",
        r"([Zz]|[+-][0-9]{2}:?[0-9]{2})?)?",
    ))
    .ok()
});

struct Ctx<'a> {
    text: &'a str,
    toks: Vec<Tok<'a>>,
    /// The mention's local date.
    today: NaiveDate,
    /// The mention's offset from UTC.
    offset_ms: i64,
    /// The tense of the whole text.
    tense: Tense,
    /// ISO dates and date-times found by pattern.
    iso: Vec<Cand>,
    /// Which resolver reads the text.
    resolver: Resolver,
    /// [`Resolver::V2`]: the text states an arrangement ("noted:", "booked").
    arranged: bool,
    /// [`Resolver::V2`]: the text states a recurrence ("every year").
    recurring: bool,
    /// [`Resolver::V3`]: the text is in the perfect ("have been", "I've"),
    /// so a bare "for N units" runs up to now.
    perfect: bool,
}

impl<'a> Ctx<'a> {
    fn new(
        text: &'a str,
        toks: Vec<Tok<'a>>,
        mention: SourceTime,
        resolver: Resolver,
    ) -> Option<Self> {
        let offset_ms = i64::from(mention.offset_minutes.unwrap_or(0)) * 60_000;
        let local =
            chrono::DateTime::from_timestamp_millis(mention.utc_ms.checked_add(offset_ms)?)?;
        let mut tense = tense_of(&toks);
        let v2 = matches!(resolver, Resolver::V2 | Resolver::V3);
        let arranged = v2 && is_arranged(&toks);
        if arranged {
            tense = Tense::Future;
        }
        let recurring = v2 && is_recurring(&toks);
        let perfect = toks.iter().any(|t| {
            matches!(t.lower.as_ref(), "have" | "has" | "been") || t.lower.ends_with("'ve")
        });
        let mut ctx = Self {
            text,
            toks,
            today: local.date_naive(),
            offset_ms,
            tense,
            iso: Vec::new(),
            resolver,
            arranged,
            recurring,
            perfect,
        };
        ctx.iso = ctx.iso_dates();
        Some(ctx)
    }

    // -- conversion ---------------------------------------------------------

    /// First millisecond of local day `d`, in UTC.
    fn day_start(&self, d: NaiveDate) -> Option<i64> {
        d.and_hms_opt(0, 0, 0)?
            .and_utc()
            .timestamp_millis()
            .checked_sub(self.offset_ms)
    }

    /// First and last millisecond of the local days `a..=b`, in UTC.
    fn span_ms(&self, a: NaiveDate, b: NaiveDate) -> Option<(i64, i64)> {
        let lo = self.day_start(a)?;
        let hi = self.day_start(b.succ_opt()?)?.checked_sub(1)?;
        (lo <= hi).then_some((lo, hi))
    }

    /// A candidate covering tokens `i..e` resolved to the days `span`.
    fn cand(
        &self,
        i: usize,
        e: usize,
        span: (NaiveDate, NaiveDate),
        precision: Precision,
        basis: TimeBasis,
    ) -> Option<Cand> {
        let start = self.toks.get(i)?.start;
        let end = self.toks.get(e.checked_sub(1)?)?.end;
        let (lo, hi) = self.span_ms(span.0, span.1)?;
        Some(Cand {
            start,
            end,
            lo,
            hi,
            precision,
            basis,
            tense: None,
            year_basis: None,
        })
    }

    fn finish(&self, c: Cand) -> TimeExpression {
        let tense = c.tense.unwrap_or_else(|| self.tense_of(c.lo, c.hi));
        TimeExpression {
            start: c.start,
            end: c.end,
            // Candidate spans run from a token's start to a token's end:
            // char boundaries of the text, so the default is never taken.
            text: self
                .text
                .get(c.start..c.end)
                .unwrap_or_default()
                .to_string(),
            happened_start: Some(Timestamp(c.lo)),
            happened_end: Some(Timestamp(c.hi)),
            precision: c.precision,
            basis: c.basis,
            tense,
            year_basis: c.year_basis,
        }
    }

    /// Past if the interval ends before the mention day, future if it starts
    /// after it, else present.
    fn tense_of(&self, lo: i64, hi: i64) -> Tense {
        match self.span_ms(self.today, self.today) {
            Some((a, _)) if hi < a => Tense::Past,
            Some((_, b)) if lo > b => Tense::Future,
            _ => Tense::Present,
        }
    }

    // -- token access -------------------------------------------------------

    fn tok(&self, j: usize) -> Option<&Tok<'a>> {
        self.toks.get(j)
    }

    fn w(&self, j: usize) -> Option<&str> {
        self.tok(j).map(|t| t.lower.as_ref())
    }

    /// The text between token `j - 1` (or the start) and token `j`.
    fn gap(&self, j: usize) -> &str {
        let Some(t) = self.tok(j) else { return "" };
        let from = j
            .checked_sub(1)
            .and_then(|p| self.tok(p))
            .map_or(0, |p| p.end);
        self.text.get(from..t.start).unwrap_or("")
    }

    /// Token `j` follows the previous one after whitespace only.
    fn sp(&self, j: usize) -> bool {
        is_space(self.gap(j))
    }

    fn is(&self, j: usize, alts: &[&str]) -> bool {
        self.w(j).is_some_and(|w| alts.contains(&w))
    }

    /// Token `j` is one of `alts` and follows the previous one after whitespace.
    fn word_is(&self, j: usize, alts: &[&str]) -> bool {
        self.sp(j) && self.is(j, alts)
    }

    /// The words `words` start at token `i`; returns the index after them.
    fn seq(&self, i: usize, words: &[&str]) -> Option<usize> {
        let (first, rest) = words.split_first()?;
        if !self.is(i, &[first]) {
            return None;
        }
        for (k, w) in rest.iter().enumerate() {
            if !self.word_is(i + 1 + k, &[w]) {
                return None;
            }
        }
        Some(i + words.len())
    }

    /// The longest entry of `table` whose words start at token `i`.
    /// `firsts` are the first words of the table's entries (a test checks
    /// each table's list): a token that is none of them starts no entry,
    /// and the table is not read.
    fn longest<T: Copy>(
        &self,
        i: usize,
        (firsts, table): (&[&str], Table<T>),
    ) -> Option<(usize, T)> {
        let w = self.w(i)?;
        if !firsts.contains(&w) {
            return None;
        }
        let mut best: Option<(usize, T)> = None;
        for (words, v) in table {
            if words.first() != Some(&w) {
                continue;
            }
            let Some(e) = self.seq(i, words) else {
                continue;
            };
            if best.is_none_or(|(b, _)| e > b) {
                best = Some((e, *v));
            }
        }
        best
    }

    /// A count starting at token `j`: digits, one..fifty, "a"/"an",
    /// "a couple (of)", "couple of", "a few", "few".
    fn count(&self, j: usize) -> Option<(Count, usize)> {
        let w = self.w(j)?;
        match w {
            "a" | "an" => {
                if self.word_is(j + 1, &["couple"]) {
                    let k = if self.word_is(j + 2, &["of"]) {
                        j + 3
                    } else {
                        j + 2
                    };
                    Some((Count::N(2), k))
                } else if self.word_is(j + 1, &["few"]) {
                    Some((Count::Few, j + 2))
                } else {
                    Some((Count::N(1), j + 1))
                }
            }
            "couple" => self.word_is(j + 1, &["of"]).then_some((Count::N(2), j + 2)),
            "few" => Some((Count::Few, j + 1)),
            _ => {
                let n = match number_word(w) {
                    Some(n) => n,
                    None if is_digits(w) && w.len() <= 3 => w.parse().ok()?,
                    None => return None,
                };
                (n >= 1).then_some((Count::N(n), j + 1))
            }
        }
    }

    fn unit_at(&self, j: usize) -> Option<Unit> {
        if self.sp(j) {
            unit_of(self.w(j)?)
        } else {
            None
        }
    }

    /// A weekday name or abbreviation at token `j` (after whitespace).
    fn weekday_at(&self, j: usize) -> Option<Weekday> {
        if self.sp(j) {
            weekday_any(self.w(j)?)
        } else {
            None
        }
    }

    /// Token `j` followed by a part of day ("night") extends to it.
    fn part_of_day(&self, e: usize) -> usize {
        if self.word_is(e, PARTS_OF_DAY) {
            e + 1
        } else {
            e
        }
    }

    /// A plausible year at token `j` within `lo..=hi`, not glued to other
    /// numbers or currency ("$2022", "2022-23", "2022%").
    fn year_tok(&self, j: usize, lo: i32, hi: i32) -> Option<i32> {
        let t = self.tok(j)?;
        if t.lower.len() != 4 || !is_digits(&t.lower) {
            return None;
        }
        let y: i32 = t.lower.parse().ok()?;
        if !(lo..=hi).contains(&y) {
            return None;
        }
        let before = self.text.get(..t.start)?.chars().next_back();
        if before.is_some_and(|c| "$£€¥#/".contains(c)) {
            return None;
        }
        let mut after = self.text.get(t.end..)?.chars();
        match (after.next(), after.next()) {
            (Some('%'), _) => None,
            (Some(c), Some(d)) if "-/.:,".contains(c) && d.is_ascii_digit() => None,
            _ => Some(y),
        }
    }

    /// A year at token `j` completing a date: after whitespace or a comma.
    fn year_after(&self, j: usize) -> Option<i32> {
        let gap = self.gap(j);
        if !(is_space(gap) || gap.trim() == ",") {
            return None;
        }
        self.year_tok(j, 1000, 2999)
    }

    /// A month name at token `j` standing alone: not starting a fuller date
    /// ("May 8", "May 2023"), and not the verbs "may"/"march" in lowercase
    /// followed by another word.
    fn bare_month(&self, j: usize) -> Option<u32> {
        let t = self.tok(j)?;
        let month = month_full(&t.lower)?;
        if self.month_day(j, Tense::Past).is_some() || self.month_year(j, Tense::Past).is_some() {
            return None;
        }
        if !t.cap && is_verb_month(&t.lower) && self.tok(j + 1).is_some() && self.sp(j + 1) {
            return None;
        }
        Some(month)
    }

    // -- parsers --------------------------------------------------------------

    /// Every candidate starting at token `i`.
    fn at(&self, i: usize, dir: Tense, allow_since: bool) -> Vec<Cand> {
        let mut out: Vec<Cand> = Self::PARSERS
            .iter()
            .filter_map(|p| p(self, i, dir))
            .collect();
        if allow_since {
            out.extend(self.since(i));
        }
        out
    }

    /// Whether a parser may start a candidate at token `i`: its word is
    /// an anchor ([`is_anchor`]: digits, units, day words, weekdays,
    /// months…) or one of [`STARTERS`]. Every parser reads its first
    /// token as one of these, so the others are not tried.
    fn may_start(&self, i: usize) -> bool {
        self.w(i)
            .is_some_and(|w| is_anchor(w) || STARTERS.contains(w))
    }

    /// Whether [`Ctx::at`] finds a candidate at `i`: the parsers in the
    /// same order, stopping at the first that does.
    fn any_at(&self, i: usize, dir: Tense, allow_since: bool) -> bool {
        Self::PARSERS.iter().any(|p| p(self, i, dir).is_some())
            || (allow_since && self.since(i).is_some())
    }

    /// The parsers [`Ctx::at`] tries at each token, in order.
    const PARSERS: [Parser<'a>; 19] = [
        Self::day_range,
        Self::rel_day,
        Self::ago,
        Self::in_future,
        Self::rel_period,
        Self::part_of_period,
        Self::weekend_special,
        Self::weekday_fixed,
        Self::weekday_loose,
        Self::day_month,
        Self::month_day,
        Self::month_year,
        Self::early_mid_late,
        Self::month_alone,
        Self::year_alone,
        Self::year_span,
        Self::decade,
        Self::duration,
        Self::inferred,
    ];

    /// "today", "yesterday (morning)", "the day before yesterday",
    /// "tomorrow (night)", "the other day", ...
    fn rel_day(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let (e, (a, b, suffix)) = self.longest(i, (REL_DAY_FIRSTS, REL_DAYS))?;
        let e = if suffix { self.part_of_day(e) } else { e };
        let span = (add_days(self.today, a)?, add_days(self.today, b)?);
        let precision = if a == b {
            Precision::Day
        } else {
            Precision::Range
        };
        self.cand(i, e, span, precision, TimeBasis::Relative)
    }

    /// "two days ago", "a few weeks ago", "3 years ago", "two weekends ago".
    fn ago(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let (count, j) = self.count(i)?;
        let unit = self.unit_at(j)?;
        if !self.word_is(j + 1, &["ago"]) {
            return None;
        }
        let (span, precision) = match count {
            Count::N(n) => (period(self.today, unit, -n)?, unit_precision(unit)),
            Count::Few => (few_span(self.today, unit, false)?, Precision::Range),
        };
        self.cand(i, j + 2, span, precision, TimeBasis::Relative)
    }

    /// "in 3 days", "in two weeks", "in a few months" (not in past-tense text,
    /// where "in two years" is usually a duration).
    fn in_future(&self, i: usize, dir: Tense) -> Option<Cand> {
        if dir == Tense::Past || !self.is(i, &["in"]) || !self.sp(i + 1) {
            return None;
        }
        let (count, k) = self.count(i + 1)?;
        let unit = self.unit_at(k)?;
        if matches!(unit, Unit::Weekend | Unit::Decade) {
            return None;
        }
        let (span, precision) = match count {
            Count::N(n) => (period(self.today, unit, n)?, unit_precision(unit)),
            Count::Few => (few_span(self.today, unit, true)?, Precision::Range),
        };
        self.cand(i, k + 1, span, precision, TimeBasis::Relative)
    }

    /// "last week", "this weekend", "next month", "the year before last", ...
    fn rel_period(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let (e, (unit, n)) = self.longest(i, (REL_PERIOD_FIRSTS, REL_PERIODS))?;
        let span = period(self.today, unit, n)?;
        self.cand(i, e, span, unit_precision(unit), TimeBasis::Relative)
    }

    /// "earlier this month" (its first day to today), "later this week"
    /// (today to its last day).
    fn part_of_period(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let earlier = match self.w(i)? {
            "earlier" => true,
            "later" => false,
            _ => return None,
        };
        if !self.word_is(i + 1, &["this"]) || !self.word_is(i + 2, &["week", "month", "year"]) {
            return None;
        }
        let unit = unit_of(self.w(i + 2)?)?;
        let (a, b) = period(self.today, unit, 0)?;
        let span = if earlier {
            (a, self.today)
        } else {
            (self.today, b)
        };
        self.cand(i, i + 3, span, Precision::Range, TimeBasis::Relative)
    }

    /// "this coming weekend" (the next weekend that has not started) and
    /// "over the weekend" (by tense).
    fn weekend_special(&self, i: usize, dir: Tense) -> Option<Cand> {
        let wd = self.today.weekday();
        let (e, n) = if let Some(e) = self.seq(i, &["this", "coming", "weekend"]) {
            (e, i64::from(matches!(wd, Weekday::Sat | Weekday::Sun)))
        } else if let Some(e) = self.seq(i, &["over", "the", "weekend"]) {
            let back = dir == Tense::Past && wd != Weekday::Sun;
            (e, if back { -1 } else { 0 })
        } else {
            return None;
        };
        let span = period(self.today, Unit::Weekend, n)?;
        self.cand(i, e, span, Precision::Range, TimeBasis::Relative)
    }

    /// Weekdays whose direction the words fix: "last Sat", "this past
    /// Friday", "the Saturday before (last)", "Saturday before last",
    /// "this Monday", "next Tuesday", "this coming Saturday".
    fn weekday_fixed(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let today = self.today;
        let (date, e) = match self.w(i)? {
            "last" => (prev_weekday(today, self.weekday_at(i + 1)?)?, i + 2),
            "this" if self.word_is(i + 1, &["past"]) => {
                (prev_weekday(today, self.weekday_at(i + 2)?)?, i + 3)
            }
            "this" if self.word_is(i + 1, &["coming"]) => {
                (next_weekday(today, self.weekday_at(i + 2)?)?, i + 3)
            }
            "this" => (week_weekday(today, 0, self.weekday_at(i + 1)?)?, i + 2),
            "next" => (week_weekday(today, 1, self.weekday_at(i + 1)?)?, i + 2),
            "the" => {
                let t = self.tok(i + 1)?;
                let wd = weekday_full(&t.lower)
                    .or_else(|| weekday_abbr(&t.lower).filter(|_| t.cap))
                    .filter(|_| self.sp(i + 1))?;
                if !self.word_is(i + 2, &["before"]) {
                    return None;
                }
                let prev = prev_weekday(today, wd)?;
                if self.word_is(i + 3, &["last"]) {
                    (add_days(prev, -7)?, i + 4)
                } else {
                    (prev, i + 3)
                }
            }
            w => {
                let wd = weekday_any(w)?;
                if !(self.word_is(i + 1, &["before"]) && self.word_is(i + 2, &["last"])) {
                    return None;
                }
                (add_days(prev_weekday(today, wd)?, -7)?, i + 3)
            }
        };
        let e = self.part_of_day(e);
        self.cand(i, e, (date, date), Precision::Day, TimeBasis::Relative)
    }

    /// A weekday whose direction the words leave open: "Saturday",
    /// "on Saturday", "on Sat". Past text → the latest before today, future
    /// text → the next after today, present → today if it is that day, else
    /// the latest before.
    fn weekday_loose(&self, i: usize, dir: Tense) -> Option<Cand> {
        let (j, wd) = if self.is(i, &["on"]) {
            let t = self.tok(i + 1)?;
            let wd = weekday_full(&t.lower).or_else(|| weekday_abbr(&t.lower).filter(|_| t.cap));
            (i + 1, wd.filter(|_| self.sp(i + 1))?)
        } else {
            let wd = weekday_full(self.w(i)?)?;
            let blocked = i
                .checked_sub(1)
                .is_some_and(|p| self.is(p, LOOSE_WEEKDAY_BLOCK) && self.sp(i));
            if blocked {
                return None;
            }
            let anaphoric = i
                .checked_sub(1)
                .is_some_and(|p| self.is(p, &["that"]) && self.sp(i));
            if anaphoric && self.resolver == Resolver::V3 {
                // V3: "that Saturday" points back ([`resolve_best_after`]).
                return None;
            }
            (i, wd)
        };
        let today = self.today;
        let date = match dir {
            Tense::Past => prev_weekday(today, wd)?,
            Tense::Future => next_weekday(today, wd)?,
            Tense::Present if today.weekday() == wd => today,
            Tense::Present => prev_weekday(today, wd)?,
        };
        let e = self.part_of_day(j + 1);
        self.cand(i, e, (date, date), Precision::Day, TimeBasis::Relative)
    }

    /// "8 May 2023", "8th May, 2023", "the 8th of May 2023", "18 May",
    /// "the 18th of May" (no year: placed by tense).
    fn day_month(&self, i: usize, dir: Tense) -> Option<Cand> {
        let j = if self.is(i, &["the"]) {
            if !self.sp(i + 1) {
                return None;
            }
            i + 1
        } else {
            i
        };
        let (day, _) = day_num(self.w(j)?)?;
        let mut k = j + 1;
        if self.word_is(k, &["of"]) {
            k += 1;
        }
        if !self.sp(k) {
            return None;
        }
        let month = month_any(self.w(k)?)?;
        let (date, e, year_basis) = match self.year_after(k + 1) {
            Some(y) => (NaiveDate::from_ymd_opt(y, month, day)?, k + 2, None),
            None => {
                let (d, b) = self.yearless(i, month, day, dir)?;
                (d, k + 1, b)
            }
        };
        let mut c = self.cand(i, e, (date, date), Precision::Day, TimeBasis::Explicit)?;
        c.year_basis = year_basis;
        Some(c)
    }

    /// "May 8, 2023", "May 8th, 2023", "May 8th" (no year: placed by tense).
    fn month_day(&self, i: usize, dir: Tense) -> Option<Cand> {
        let t = self.tok(i)?;
        let month = month_any(&t.lower)?;
        if !self.sp(i + 1) {
            return None;
        }
        let dt = self.tok(i + 1)?;
        let (day, ordinal) = day_num(&dt.lower)?;
        // "May 8:30", "May 8.5", "May 8-10": not a plain date.
        let mut after = self.text.get(dt.end..)?.chars();
        match (after.next(), after.next()) {
            (Some(':'), _) => return None,
            (Some('.' | '-' | '/'), Some(d)) if d.is_ascii_digit() => return None,
            _ => {}
        }
        let (date, e, year_basis) = match self.year_after(i + 2) {
            Some(y) => (NaiveDate::from_ymd_opt(y, month, day)?, i + 3, None),
            None => {
                // "we may 2 ..." is the verb; "May 2", "may 2nd" are dates.
                if !t.cap && !ordinal && is_verb_month(&t.lower) {
                    return None;
                }
                let (d, b) = self.yearless(i, month, day, dir)?;
                (d, i + 2, b)
            }
        };
        let mut c = self.cand(i, e, (date, date), Precision::Day, TimeBasis::Explicit)?;
        c.year_basis = year_basis;
        Some(c)
    }

    /// A day and month written without a year, starting at token `i`.
    /// [`Resolver::V1`]: placed by tense. [`Resolver::V2`]: nothing when the
    /// text states a recurrence ("every 20 May"); else the year the weekday
    /// named just before fits ("Monday 20 May", "on Monday, the 20th of
    /// May"), among the mention's year and its neighbours, the nearest to
    /// the mention; else the next occurrence for an arrangement; else by
    /// tense (the nearer occurrence in the present tense).
    fn yearless(
        &self,
        i: usize,
        month: u32,
        day: u32,
        dir: Tense,
    ) -> Option<(NaiveDate, Option<YearBasis>)> {
        if self.resolver == Resolver::V1 {
            return Some((day_by_tense(self.today, month, day, dir)?, None));
        }
        if self.recurring {
            return None;
        }
        let named = i.checked_sub(1).and_then(|p| {
            let gap = self.gap(i);
            let glued = is_space(gap) || gap.trim() == ",";
            weekday_any(self.w(p)?).filter(|_| glued)
        });
        if let Some(wd) = named {
            let y = self.today.year();
            let fits = (y - 1..=y + 1)
                .filter_map(|yy| NaiveDate::from_ymd_opt(yy, month, day))
                .filter(|d| d.weekday() == wd)
                .min_by_key(|d| ((*d - self.today).num_days().abs(), *d < self.today));
            if let Some(d) = fits {
                return Some((d, Some(YearBasis::Weekday)));
            }
        }
        let basis = if self.arranged {
            YearBasis::Arrangement
        } else if dir == Tense::Present {
            YearBasis::Nearest
        } else {
            YearBasis::Tense
        };
        Some((day_by_tense(self.today, month, day, dir)?, Some(basis)))
    }

    /// [`Resolver::V2`] only: a range of days in one month, "14–17 May",
    /// "14-17 May 2024", "14 to 17 May", "from 14 until 17 May" (no year:
    /// placed as a date of its first day, see [`Ctx::yearless`]).
    fn day_range(&self, i: usize, dir: Tense) -> Option<Cand> {
        if self.resolver == Resolver::V1 {
            return None;
        }
        let j = if self.is(i, &["from", "between"]) && self.sp(i + 1) {
            i + 1
        } else {
            i
        };
        let (a, _) = day_num(self.w(j)?)?;
        let link = self.gap(j + 1).trim();
        let k = if matches!(link, "-" | "\u{2013}" | "\u{2014}") {
            j + 1
        } else if self.word_is(j + 1, &["to", "until", "till", "through", "and"]) && self.sp(j + 2)
        {
            j + 2
        } else {
            return None;
        };
        let (b, _) = day_num(self.w(k)?)?;
        if !self.sp(k + 1) || b < a {
            return None;
        }
        let month = month_any(self.w(k + 1)?)?;
        let (first, e, year_basis) = match self.year_after(k + 2) {
            Some(y) => (NaiveDate::from_ymd_opt(y, month, a)?, k + 3, None),
            None => {
                let (d, basis) = self.yearless(i, month, a, dir)?;
                (d, k + 2, basis)
            }
        };
        let last = NaiveDate::from_ymd_opt(first.year(), month, b)?;
        let mut c = self.cand(i, e, (first, last), Precision::Range, TimeBasis::Explicit)?;
        c.year_basis = year_basis;
        Some(c)
    }

    /// "May 2023", "May of 2023", "May, 2023".
    fn month_year(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let month = month_any(self.w(i)?)?;
        let (y, e) = if self.word_is(i + 1, &["of"]) {
            if !self.sp(i + 2) {
                return None;
            }
            (self.year_tok(i + 2, 1000, 2999)?, i + 3)
        } else {
            (self.year_after(i + 1)?, i + 2)
        };
        let span = month_bounds(y, month)?;
        self.cand(i, e, span, Precision::Month, TimeBasis::Explicit)
    }

    /// "early June" (1st–10th), "mid-June" (11th–20th), "late June" (21st to
    /// the end), optionally with a year; "early 2020" (Jan–Apr), "mid 2020"
    /// (May–Aug), "late 2020" (Sep–Dec).
    fn early_mid_late(&self, i: usize, dir: Tense) -> Option<Cand> {
        let part: u8 = match self.w(i)? {
            "early" => 0,
            "mid" => 1,
            "late" => 2,
            _ => return None,
        };
        let j = i + 1;
        let gap = self.gap(j);
        if !(is_space(gap) || gap == "-") {
            return None;
        }
        if let Some(y) = self.year_tok(j, 1900, 2099) {
            let (a, b) = match part {
                0 => (1, 4),
                1 => (5, 8),
                _ => (9, 12),
            };
            let span = (month_bounds(y, a)?.0, month_bounds(y, b)?.1);
            return self.cand(i, j + 1, span, Precision::Range, TimeBasis::Explicit);
        }
        let t = self.tok(j)?;
        let month = month_full(&t.lower)?;
        let (y, e) = match self.year_after(j + 1) {
            Some(y) => (y, j + 2),
            None => {
                if !t.cap && is_verb_month(&t.lower) && self.tok(j + 1).is_some() && self.sp(j + 1)
                {
                    return None;
                }
                (month_year_by_tense(self.today, month, dir), j + 1)
            }
        };
        let (first, last) = month_bounds(y, month)?;
        let span = match part {
            0 => (first, add_days(first, 9)?),
            1 => (add_days(first, 10)?, add_days(first, 19)?),
            _ => (add_days(first, 20)?, last),
        };
        self.cand(i, e, span, Precision::Range, TimeBasis::Explicit)
    }

    /// A month name after a trigger: "in June", "during May", "last June"
    /// (the latest June before this month), "next June" (the first after
    /// it), "this June" (this year's). Others are placed by tense.
    fn month_alone(&self, i: usize, dir: Tense) -> Option<Cand> {
        let trigger = self.w(i)?;
        if !MONTH_TRIGGERS.contains(&trigger) || !self.sp(i + 1) {
            return None;
        }
        let month = self.bare_month(i + 1)?;
        if self.recurring {
            // [`Resolver::V2`]: "every year in May" is no one month.
            return None;
        }
        let (y, cur) = (self.today.year(), self.today.month());
        let year = match trigger {
            "last" if month < cur => y,
            "last" => y - 1,
            "next" if month > cur => y,
            "next" => y + 1,
            "this" => y,
            _ => month_year_by_tense(self.today, month, dir),
        };
        let span = month_bounds(year, month)?;
        self.cand(i, i + 2, span, Precision::Month, TimeBasis::Explicit)
    }

    /// A four-digit year after a trigger: "in 2022", "during 1999", "by 2025".
    fn year_alone(&self, i: usize, _dir: Tense) -> Option<Cand> {
        if !self.is(i, YEAR_TRIGGERS) || !self.sp(i + 1) {
            return None;
        }
        let y = self.year_tok(i + 1, 1900, 2099)?;
        self.cand(
            i,
            i + 2,
            year_bounds(y)?,
            Precision::Year,
            TimeBasis::Explicit,
        )
    }

    /// "from 2019 to 2021", "between 2019 and 2021".
    fn year_span(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let links: &[&str] = match self.w(i)? {
            "from" => &["to", "until", "till", "through"],
            "between" => &["and"],
            _ => return None,
        };
        if !self.sp(i + 1) || !self.word_is(i + 2, links) || !self.sp(i + 3) {
            return None;
        }
        let a = self.year_tok(i + 1, 1900, 2099)?;
        let b = self.year_tok(i + 3, 1900, 2099)?;
        if a > b {
            return None;
        }
        let span = (year_bounds(a)?.0, year_bounds(b)?.1);
        self.cand(i, i + 4, span, Precision::Range, TimeBasis::Explicit)
    }

    /// "the 90s", "in the 1990s", "the '80s", "the nineties".
    fn decade(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let j = if self.is(i, &["in", "during"]) && self.word_is(i + 1, &["the"]) {
            i + 2
        } else if self.is(i, &["the"]) {
            i + 1
        } else {
            return None;
        };
        let gap = self.gap(j);
        let quoted = gap.starts_with(char::is_whitespace) && matches!(gap.trim(), "'" | "\u{2019}");
        if !(is_space(gap) || quoted) {
            return None;
        }
        let start = decade_start(self.w(j)?, self.today.year())?;
        let span = (year_bounds(start)?.0, year_bounds(start + 9)?.1);
        self.cand(i, j + 1, span, Precision::Range, TimeBasis::Explicit)
    }

    /// Durations up to now: "for 4 years", "for about a year", "for the past
    /// 5 years", "over the last two months", "the past week", "seven years
    /// now". The range runs from the same calendar day N units back to the
    /// end of today. "for N units" in future-tense text is a future stay, not
    /// resolved.
    fn duration(&self, i: usize, dir: Tense) -> Option<Cand> {
        let w0 = self.w(i)?;
        let prep = matches!(w0, "for" | "over" | "in" | "during");
        let mut j = i;
        let mut past_last = false;
        let mut implied_ok = false;
        if prep {
            j = i + 1;
            if w0 == "for" && self.word_is(j, HEDGES) {
                j += 1;
            }
            if self.word_is(j, &["the"]) && self.word_is(j + 1, &["past", "last"]) {
                past_last = true;
                implied_ok = true;
                j += 2;
            } else if w0 != "for" {
                return None;
            }
            if !self.sp(j) {
                return None;
            }
        } else if w0 == "the" && self.word_is(i + 1, &["past", "last"]) {
            past_last = true;
            implied_ok = self.is(i + 1, &["past"]);
            j = i + 2;
            if !self.sp(j) {
                return None;
            }
        }
        let (count, unit, mut e) = match self.count(j) {
            Some((c, k)) if self.unit_at(k).is_some() => (c, self.unit_at(k)?, k + 1),
            _ if implied_ok => (Count::N(1), unit_of(self.w(j)?)?, j + 1),
            _ => return None,
        };
        if unit == Unit::Weekend {
            return None;
        }
        let now = self.word_is(e, &["now"]);
        if now {
            e += 1;
        }
        if !prep && !past_last && !now {
            return None;
        }
        if w0 == "for" && !past_last && !now && dir == Tense::Future {
            return None;
        }
        if w0 == "for" && !past_last && !now && self.resolver == Resolver::V3 && !self.perfect {
            // V3: "for a few days" says how long, not when, unless the text
            // is in the perfect (it runs up to now).
            return None;
        }
        let n = match count {
            Count::N(n) => n,
            Count::Few => 4,
        };
        let start = units_back(self.today, unit, n)?;
        self.cand(
            i,
            e,
            (start, self.today),
            Precision::Range,
            TimeBasis::Relative,
        )
    }

    /// "just" + a past verb within two words ("I just got", "just joined",
    /// "just finally finished") → today, past; "recently", "lately", "not
    /// long ago" → the last 30 days; "currently", "right now", "at the
    /// moment", "these days", "nowadays" → today, present.
    fn inferred(&self, i: usize, _dir: Tense) -> Option<Cand> {
        let today = self.today;
        let (e, span, precision, tense) = match self.w(i)? {
            "just" if self.word_is(i + 1, &["now"]) => {
                (i + 2, (today, today), Precision::Day, Some(Tense::Past))
            }
            "just" => {
                let verb_at = |k: usize| self.sp(k) && self.w(k).is_some_and(is_just_verb);
                let e = if verb_at(i + 1) {
                    i + 2
                } else if self.sp(i + 1) && verb_at(i + 2) {
                    i + 3
                } else {
                    return None;
                };
                (e, (today, today), Precision::Day, Some(Tense::Past))
            }
            "recently" | "lately" => (
                i + 1,
                (add_days(today, -30)?, today),
                Precision::Range,
                None,
            ),
            "not" => (
                self.seq(i, &["not", "long", "ago"])?,
                (add_days(today, -30)?, today),
                Precision::Range,
                None,
            ),
            "currently" | "nowadays" => {
                (i + 1, (today, today), Precision::Day, Some(Tense::Present))
            }
            "right" | "at" | "these" => {
                let e = self
                    .seq(i, &["right", "now"])
                    .or_else(|| self.seq(i, &["at", "the", "moment"]))
                    .or_else(|| self.seq(i, &["at", "present"]))
                    .or_else(|| self.seq(i, &["these", "days"]))?;
                (e, (today, today), Precision::Day, Some(Tense::Present))
            }
            _ => return None,
        };
        let mut c = self.cand(i, e, span, precision, TimeBasis::Inferred)?;
        c.tense = tense;
        Some(c)
    }

    /// "since X": from the start of X (placed in the past) to the end of
    /// today. X is a year, a month, an ISO date or any other expression.
    fn since(&self, i: usize) -> Option<Cand> {
        if !self.is(i, &["since"]) || !self.sp(i + 1) {
            return None;
        }
        let j = i + 1;
        let mut inner = self.at(j, Tense::Past, false);
        if let Some(y) = self.year_tok(j, 1900, 2099) {
            inner.extend(self.cand(
                j,
                j + 1,
                year_bounds(y)?,
                Precision::Year,
                TimeBasis::Explicit,
            ));
        }
        if let Some(m) = self.bare_month(j) {
            let y = month_year_by_tense(self.today, m, Tense::Past);
            inner.extend(self.cand(
                j,
                j + 1,
                month_bounds(y, m)?,
                Precision::Month,
                TimeBasis::Explicit,
            ));
        }
        let start_byte = self.tok(j)?.start;
        inner.extend(self.iso.iter().filter(|c| c.start == start_byte).cloned());
        inner.retain(|c| c.basis != TimeBasis::Inferred);
        let mut best: Option<Cand> = None;
        for c in inner {
            if best.as_ref().is_none_or(|b| c.end > b.end) {
                best = Some(c);
            }
        }
        let best = best?;
        let (_, hi) = self.span_ms(self.today, self.today)?;
        if best.lo > hi {
            return None;
        }
        Some(Cand {
            start: self.tok(i)?.start,
            end: best.end,
            lo: best.lo,
            hi,
            precision: Precision::Range,
            basis: best.basis,
            tense: None,
            year_basis: best.year_basis,
        })
    }

    // -- ISO ------------------------------------------------------------------

    /// "2023-05-08" (a day) and "2023-05-08T10:30[:00[.000]][Z|+02:00]"
    /// (an instant; without an offset, the mention's offset applies).
    fn iso_dates(&self) -> Vec<Cand> {
        let Some(re) = ISO_DATE.as_ref() else {
            return Vec::new();
        };
        re.captures_iter(self.text)
            .filter_map(|c| self.iso_cand(&c))
            .collect()
    }

    fn iso_cand(&self, c: &Captures<'_>) -> Option<Cand> {
        let m = c.get(0)?;
        let before = self.text.get(..m.start())?.chars().next_back();
        if before.is_some_and(|ch| ch.is_alphanumeric() || "-/.:+$".contains(ch)) {
            return None;
        }
        let after = self.text.get(m.end()..)?.chars().next();
        if after.is_some_and(|ch| ch.is_alphanumeric() || "-/:".contains(ch)) {
            return None;
        }
        let num = |k: usize| c.get(k).and_then(|g| g.as_str().parse::<u32>().ok());
        let y: i32 = c.get(1)?.as_str().parse().ok()?;
        let date = NaiveDate::from_ymd_opt(y, num(2)?, num(3)?)?;
        let (lo, hi, precision) = match num(4) {
            None => {
                let (lo, hi) = self.span_ms(date, date)?;
                (lo, hi, Precision::Day)
            }
            Some(h) => {
                let milli = match c.get(7) {
                    Some(g) => format!("{:0<3}", g.as_str()).get(..3)?.parse().ok()?,
                    None => 0,
                };
                let local = date
                    .and_hms_milli_opt(h, num(5)?, num(6).unwrap_or(0), milli)?
                    .and_utc()
                    .timestamp_millis();
                let offset = match c.get(8).map(|g| g.as_str()) {
                    None => self.offset_ms,
                    Some("Z" | "z") => 0,
                    Some(o) => parse_offset(o)?,
                };
                let utc = local.checked_sub(offset)?;
                (utc, utc, Precision::Instant)
            }
        };
        Some(Cand {
            start: m.start(),
            end: m.end(),
            lo,
            hi,
            precision,
            basis: TimeBasis::Explicit,
            tense: None,
            year_basis: None,
        })
    }
}

/// "+02:00", "-0530" → milliseconds east of UTC.
fn parse_offset(o: &str) -> Option<i64> {
    let sign = if o.starts_with('-') { -1 } else { 1 };
    let digits: String = o.chars().filter(char::is_ascii_digit).collect();
    if digits.len() != 4 {
        return None;
    }
    let h: i64 = digits.get(..2)?.parse().ok()?;
    let m: i64 = digits.get(2..)?.parse().ok()?;
    (h <= 23 && m <= 59).then_some(sign * (h * 60 + m) * 60_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Precision as P;
    use TimeBasis as B;

    #[test]
    fn past_verb_word_sets_answer_as_their_lists() {
        crate::text::tests::assert_same_answers(&PAST_IRREGULAR);
        crate::text::tests::assert_same_answers(&ED_EXCLUDE);
    }

    /// A mention time: `Z` times are taken as UTC with no known offset (as
    /// LoCoMo gives them), others keep their offset.
    fn mention(s: &str) -> SourceTime {
        let t = SourceTime::parse_rfc3339(s).expect("mention time");
        if s.ends_with('Z') {
            SourceTime::utc_without_offset(t.utc_ms)
        } else {
            t
        }
    }

    type Row = (
        &'static str,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
        Precision,
        TimeBasis,
    );

    /// (text, mention, expected start, expected end, precision, basis) of the
    /// expression that best dates the text (`resolve_best`). One row per line.
    #[rustfmt::skip]
    const ROWS: &[Row] = &[
        // LoCoMo sentences.
        ("I went to a LGBTQ support group yesterday", "2023-05-08T13:56:00Z", Some("2023-05-07T00:00:00.000Z"), Some("2023-05-07T23:59:59.999Z"), P::Day, B::Relative),
        ("I ran a charity race for mental health last Saturday", "2023-05-25T13:14:00Z", Some("2023-05-20T00:00:00.000Z"), Some("2023-05-20T23:59:59.999Z"), P::Day, B::Relative),
        ("We're thinking about going camping next month", "2023-05-25T13:14:00Z", Some("2023-06-01T00:00:00.000Z"), Some("2023-06-30T23:59:59.999Z"), P::Month, B::Relative),
        ("I wanted to tell you about my school event last week", "2023-06-09T19:55:00Z", Some("2023-05-29T00:00:00.000Z"), Some("2023-06-04T23:59:59.999Z"), P::Range, B::Relative),
        ("I've known these friends for 4 years", "2023-06-09T19:55:00Z", Some("2019-06-09T00:00:00.000Z"), Some("2023-06-09T23:59:59.999Z"), P::Range, B::Relative),
        ("A friend made it for my 18th birthday ten years ago", "2023-06-27T10:00:00Z", Some("2013-01-01T00:00:00.000Z"), Some("2013-12-31T23:59:59.999Z"), P::Year, B::Relative),
        ("I'm going to a transgender conference this month", "2023-07-03T10:00:00Z", Some("2023-07-01T00:00:00.000Z"), Some("2023-07-31T23:59:59.999Z"), P::Month, B::Relative),
        ("I went to an LGBTQ conference two days ago", "2023-07-12T10:00:00Z", Some("2023-07-10T00:00:00.000Z"), Some("2023-07-10T23:59:59.999Z"), P::Day, B::Relative),
        ("This book I read last year", "2023-07-12T10:00:00Z", Some("2022-01-01T00:00:00.000Z"), Some("2022-12-31T23:59:59.999Z"), P::Year, B::Relative),
        ("Last Fri I finally took my kids to a pottery workshop", "2023-07-15T13:51:00Z", Some("2023-07-14T00:00:00.000Z"), Some("2023-07-14T23:59:59.999Z"), P::Day, B::Relative),
        ("I went camping with my fam two weekends ago", "2023-07-17T10:00:00Z", Some("2023-07-08T00:00:00.000Z"), Some("2023-07-09T23:59:59.999Z"), P::Range, B::Relative),
        ("Last weekend I joined a mentorship program", "2023-07-17T10:00:00Z", Some("2023-07-15T00:00:00.000Z"), Some("2023-07-16T23:59:59.999Z"), P::Range, B::Relative),
        ("I just joined a new LGBTQ activist group last Tues", "2023-07-20T10:00:00Z", Some("2023-07-18T00:00:00.000Z"), Some("2023-07-18T23:59:59.999Z"), P::Day, B::Relative),
        ("Last night was amazing! We celebrated my daughter's birthday", "2023-08-14T10:00:00Z", Some("2023-08-13T00:00:00.000Z"), Some("2023-08-13T23:59:59.999Z"), P::Day, B::Relative),
        ("Guess what I did this week?", "2023-08-23T10:00:00Z", Some("2023-08-21T00:00:00.000Z"), Some("2023-08-27T23:59:59.999Z"), P::Range, B::Relative),
        ("that roadtrip this past weekend was insane", "2023-10-20T10:00:00Z", Some("2023-10-14T00:00:00.000Z"), Some("2023-10-15T23:59:59.999Z"), P::Range, B::Relative),
        ("The official opening night is tomorrow", "2023-06-19T10:00:00Z", Some("2023-06-20T00:00:00.000Z"), Some("2023-06-20T23:59:59.999Z"), P::Day, B::Relative),
        ("I just got accepted for a fashion internship", "2023-05-27T10:00:00Z", Some("2023-05-27T00:00:00.000Z"), Some("2023-05-27T23:59:59.999Z"), P::Day, B::Inferred),
        ("I'm currently reading The Lean Startup", "2023-05-27T10:00:00Z", Some("2023-05-27T00:00:00.000Z"), Some("2023-05-27T23:59:59.999Z"), P::Day, B::Inferred),
        ("Seven years now, and I've finally found my real muses", "2023-09-13T10:00:00Z", Some("2016-09-13T00:00:00.000Z"), Some("2023-09-13T23:59:59.999Z"), P::Range, B::Relative),
        ("Got the tattoo a few years ago", "2023-02-08T10:00:00Z", Some("2019-01-01T00:00:00.000Z"), Some("2021-12-31T23:59:59.999Z"), P::Range, B::Relative),
        ("since 2016", "2023-09-13T10:00:00Z", Some("2016-01-01T00:00:00.000Z"), Some("2023-09-13T23:59:59.999Z"), P::Range, B::Explicit),
        ("going to Lisbon in June", "2024-04-20T10:00:00+02:00", Some("2024-05-31T22:00:00.000Z"), Some("2024-06-30T21:59:59.999Z"), P::Month, B::Explicit),
        ("we went to Porto in June", "2024-04-20T10:00:00+02:00", Some("2023-05-31T22:00:00.000Z"), Some("2023-06-30T21:59:59.999Z"), P::Month, B::Explicit),
        ("We want to do a walking tour on 18 May", "2024-04-27T10:00:00Z", Some("2024-05-18T00:00:00.000Z"), Some("2024-05-18T23:59:59.999Z"), P::Day, B::Explicit),
        ("We moved there in 2022", "2023-06-01T10:00:00Z", Some("2022-01-01T00:00:00.000Z"), Some("2022-12-31T23:59:59.999Z"), P::Year, B::Explicit),
        ("It opened on 8 May 2023", "2024-01-10T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        ("We met on May 8th", "2023-06-01T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        ("The release was 2023-05-08", "2023-06-01T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        // Explicit dates and times.
        ("8th May 2023", "2024-01-10T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        ("It was May 8, 2023.", "2024-01-10T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        ("(May 8th, 2023)", "2024-01-10T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        ("on 8 May, 2023 we left", "2024-01-10T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        ("the 8th of May 2023", "2024-01-10T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Explicit),
        ("The meeting is at 2023-05-08T10:30.", "2023-06-01T10:00:00Z", Some("2023-05-08T10:30:00.000Z"), Some("2023-05-08T10:30:00.000Z"), P::Instant, B::Explicit),
        ("logged 2023-05-08T10:30:15+02:00", "2023-06-01T10:00:00Z", Some("2023-05-08T08:30:15.000Z"), Some("2023-05-08T08:30:15.000Z"), P::Instant, B::Explicit),
        ("at 2023-05-08T10:30:00.250Z", "2023-06-01T10:00:00Z", Some("2023-05-08T10:30:00.250Z"), Some("2023-05-08T10:30:00.250Z"), P::Instant, B::Explicit),
        ("at 2023-05-08T10:30", "2023-06-01T10:00:00+02:00", Some("2023-05-08T08:30:00.000Z"), Some("2023-05-08T08:30:00.000Z"), P::Instant, B::Explicit),
        ("2023-05-08", "2023-06-01T10:00:00+02:00", Some("2023-05-07T22:00:00.000Z"), Some("2023-05-08T21:59:59.999Z"), P::Day, B::Explicit),
        ("We moved in May 2023", "2024-01-10T10:00:00Z", Some("2023-05-01T00:00:00.000Z"), Some("2023-05-31T23:59:59.999Z"), P::Month, B::Explicit),
        ("It was May of 2023", "2024-01-10T10:00:00Z", Some("2023-05-01T00:00:00.000Z"), Some("2023-05-31T23:59:59.999Z"), P::Month, B::Explicit),
        ("I'll be there in May", "2023-06-01T10:00:00Z", Some("2024-05-01T00:00:00.000Z"), Some("2024-05-31T23:59:59.999Z"), P::Month, B::Explicit),
        ("We went hiking in May", "2023-05-20T10:00:00Z", Some("2023-05-01T00:00:00.000Z"), Some("2023-05-31T23:59:59.999Z"), P::Month, B::Explicit),
        ("I visited last June", "2023-05-10T10:00:00Z", Some("2022-06-01T00:00:00.000Z"), Some("2022-06-30T23:59:59.999Z"), P::Month, B::Explicit),
        ("I visited last June", "2023-07-10T10:00:00Z", Some("2023-06-01T00:00:00.000Z"), Some("2023-06-30T23:59:59.999Z"), P::Month, B::Explicit),
        ("We'll go next June", "2023-05-10T10:00:00Z", Some("2023-06-01T00:00:00.000Z"), Some("2023-06-30T23:59:59.999Z"), P::Month, B::Explicit),
        ("this June was hot", "2023-09-01T10:00:00Z", Some("2023-06-01T00:00:00.000Z"), Some("2023-06-30T23:59:59.999Z"), P::Month, B::Explicit),
        ("I grew up in the 90s", "2023-06-01T10:00:00Z", Some("1990-01-01T00:00:00.000Z"), Some("1999-12-31T23:59:59.999Z"), P::Range, B::Explicit),
        ("music from the 1980s", "2023-06-01T10:00:00Z", Some("1980-01-01T00:00:00.000Z"), Some("1989-12-31T23:59:59.999Z"), P::Range, B::Explicit),
        ("I've lived here since June", "2023-09-13T10:00:00Z", Some("2023-06-01T00:00:00.000Z"), Some("2023-09-13T23:59:59.999Z"), P::Range, B::Explicit),
        ("We've been friends since last year", "2023-09-13T10:00:00Z", Some("2022-01-01T00:00:00.000Z"), Some("2023-09-13T23:59:59.999Z"), P::Range, B::Relative),
        ("We went in early June", "2023-09-01T10:00:00Z", Some("2023-06-01T00:00:00.000Z"), Some("2023-06-10T23:59:59.999Z"), P::Range, B::Explicit),
        ("She moved in late 2019", "2023-09-01T10:00:00Z", Some("2019-09-01T00:00:00.000Z"), Some("2019-12-31T23:59:59.999Z"), P::Range, B::Explicit),
        ("I worked there from 2015 to 2018", "2023-09-01T10:00:00Z", Some("2015-01-01T00:00:00.000Z"), Some("2018-12-31T23:59:59.999Z"), P::Range, B::Explicit),
        ("8 May 2023", "2023-06-01T10:00:00+05:30", Some("2023-05-07T18:30:00.000Z"), Some("2023-05-08T18:29:59.999Z"), P::Day, B::Explicit),
        // Relative days.
        ("I'm so tired today", "2023-05-08T13:56:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Relative),
        ("this morning I ran", "2023-05-08T13:56:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Relative),
        ("We talked the day before yesterday", "2023-05-08T13:56:00Z", Some("2023-05-06T00:00:00.000Z"), Some("2023-05-06T23:59:59.999Z"), P::Day, B::Relative),
        ("Let's meet the day after tomorrow", "2023-05-08T13:56:00Z", Some("2023-05-10T00:00:00.000Z"), Some("2023-05-10T23:59:59.999Z"), P::Day, B::Relative),
        ("I'll see you in 3 days", "2023-05-08T13:56:00Z", Some("2023-05-11T00:00:00.000Z"), Some("2023-05-11T23:59:59.999Z"), P::Day, B::Relative),
        ("I saw her a few days ago", "2023-05-08T13:56:00Z", Some("2023-05-04T00:00:00.000Z"), Some("2023-05-06T23:59:59.999Z"), P::Range, B::Relative),
        ("I saw her the other day", "2023-05-08T13:56:00Z", Some("2023-05-01T00:00:00.000Z"), Some("2023-05-07T23:59:59.999Z"), P::Range, B::Relative),
        ("I saw her a couple of days ago", "2023-05-08T13:56:00Z", Some("2023-05-06T00:00:00.000Z"), Some("2023-05-06T23:59:59.999Z"), P::Day, B::Relative),
        ("We'll meet in a couple of days", "2023-05-08T13:56:00Z", Some("2023-05-10T00:00:00.000Z"), Some("2023-05-10T23:59:59.999Z"), P::Day, B::Relative),
        ("yesterday", "2024-04-20T00:30:00+02:00", Some("2024-04-18T22:00:00.000Z"), Some("2024-04-19T21:59:59.999Z"), P::Day, B::Relative),
        ("I saw it yesterday morning", "2023-05-08T13:56:00Z", Some("2023-05-07T00:00:00.000Z"), Some("2023-05-07T23:59:59.999Z"), P::Day, B::Relative),
        ("Tomorrow night we party!", "2023-05-08T13:56:00Z", Some("2023-05-09T00:00:00.000Z"), Some("2023-05-09T23:59:59.999Z"), P::Day, B::Relative),
        ("tomorrow", "2024-04-20T23:30:00-05:00", Some("2024-04-21T05:00:00.000Z"), Some("2024-04-22T04:59:59.999Z"), P::Day, B::Relative),
        // Weekdays (2023-07-20 is a Thursday, 2023-07-15 a Saturday).
        ("I ran last Saturday", "2023-07-15T10:00:00Z", Some("2023-07-08T00:00:00.000Z"), Some("2023-07-08T23:59:59.999Z"), P::Day, B::Relative),
        ("We met Saturday before last", "2023-07-20T10:00:00Z", Some("2023-07-08T00:00:00.000Z"), Some("2023-07-08T23:59:59.999Z"), P::Day, B::Relative),
        ("this past Saturday was fun", "2023-07-20T10:00:00Z", Some("2023-07-15T00:00:00.000Z"), Some("2023-07-15T23:59:59.999Z"), P::Day, B::Relative),
        ("I went there on Saturday", "2023-07-20T10:00:00Z", Some("2023-07-15T00:00:00.000Z"), Some("2023-07-15T23:59:59.999Z"), P::Day, B::Relative),
        ("I'll go on Saturday", "2023-07-20T10:00:00Z", Some("2023-07-22T00:00:00.000Z"), Some("2023-07-22T23:59:59.999Z"), P::Day, B::Relative),
        ("See you this Saturday", "2023-07-20T10:00:00Z", Some("2023-07-22T00:00:00.000Z"), Some("2023-07-22T23:59:59.999Z"), P::Day, B::Relative),
        ("It started this Monday", "2023-07-20T10:00:00Z", Some("2023-07-17T00:00:00.000Z"), Some("2023-07-17T23:59:59.999Z"), P::Day, B::Relative),
        ("Let's meet next Saturday", "2023-07-20T10:00:00Z", Some("2023-07-29T00:00:00.000Z"), Some("2023-07-29T23:59:59.999Z"), P::Day, B::Relative),
        ("Let's meet this coming Saturday", "2023-07-20T10:00:00Z", Some("2023-07-22T00:00:00.000Z"), Some("2023-07-22T23:59:59.999Z"), P::Day, B::Relative),
        ("We hiked last Sat.", "2023-07-20T10:00:00Z", Some("2023-07-15T00:00:00.000Z"), Some("2023-07-15T23:59:59.999Z"), P::Day, B::Relative),
        ("We hiked the Saturday before", "2023-07-20T10:00:00Z", Some("2023-07-15T00:00:00.000Z"), Some("2023-07-15T23:59:59.999Z"), P::Day, B::Relative),
        ("We hiked on Wed", "2023-07-20T10:00:00Z", Some("2023-07-19T00:00:00.000Z"), Some("2023-07-19T23:59:59.999Z"), P::Day, B::Relative),
        ("Saturday night was wild", "2023-07-20T10:00:00Z", Some("2023-07-15T00:00:00.000Z"), Some("2023-07-15T23:59:59.999Z"), P::Day, B::Relative),
        // Weeks and weekends (the week of 2023-07-20 starts on Monday 17 July).
        ("I moved two weeks ago", "2023-07-20T10:00:00Z", Some("2023-07-03T00:00:00.000Z"), Some("2023-07-09T23:59:59.999Z"), P::Range, B::Relative),
        ("I'll start in two weeks", "2023-07-20T10:00:00Z", Some("2023-07-31T00:00:00.000Z"), Some("2023-08-06T23:59:59.999Z"), P::Range, B::Relative),
        ("It happened the week before last", "2023-07-20T10:00:00Z", Some("2023-07-03T00:00:00.000Z"), Some("2023-07-09T23:59:59.999Z"), P::Range, B::Relative),
        ("I saw him a couple of weeks ago", "2023-07-20T10:00:00Z", Some("2023-07-03T00:00:00.000Z"), Some("2023-07-09T23:59:59.999Z"), P::Range, B::Relative),
        ("I saw him a few weeks ago", "2023-07-20T10:00:00Z", Some("2023-06-19T00:00:00.000Z"), Some("2023-07-09T23:59:59.999Z"), P::Range, B::Relative),
        ("Next week I'm off", "2023-07-20T10:00:00Z", Some("2023-07-24T00:00:00.000Z"), Some("2023-07-30T23:59:59.999Z"), P::Range, B::Relative),
        ("this weekend we relax", "2023-07-20T10:00:00Z", Some("2023-07-22T00:00:00.000Z"), Some("2023-07-23T23:59:59.999Z"), P::Range, B::Relative),
        ("next weekend we relax", "2023-07-20T10:00:00Z", Some("2023-07-29T00:00:00.000Z"), Some("2023-07-30T23:59:59.999Z"), P::Range, B::Relative),
        ("this past weekend was fun", "2023-07-16T10:00:00Z", Some("2023-07-08T00:00:00.000Z"), Some("2023-07-09T23:59:59.999Z"), P::Range, B::Relative),
        ("this coming weekend", "2023-07-16T10:00:00Z", Some("2023-07-22T00:00:00.000Z"), Some("2023-07-23T23:59:59.999Z"), P::Range, B::Relative),
        ("this coming weekend", "2023-07-20T10:00:00Z", Some("2023-07-22T00:00:00.000Z"), Some("2023-07-23T23:59:59.999Z"), P::Range, B::Relative),
        ("last week", "2024-04-22T00:30:00+02:00", Some("2024-04-14T22:00:00.000Z"), Some("2024-04-21T21:59:59.999Z"), P::Range, B::Relative),
        // Months and years.
        ("I started last month", "2023-01-15T10:00:00Z", Some("2022-12-01T00:00:00.000Z"), Some("2022-12-31T23:59:59.999Z"), P::Month, B::Relative),
        ("I started two months ago", "2023-01-15T10:00:00Z", Some("2022-11-01T00:00:00.000Z"), Some("2022-11-30T23:59:59.999Z"), P::Month, B::Relative),
        ("We'll move in 3 months", "2023-11-15T10:00:00Z", Some("2024-02-01T00:00:00.000Z"), Some("2024-02-29T23:59:59.999Z"), P::Month, B::Relative),
        ("I quit a few months ago", "2023-05-08T10:00:00Z", Some("2023-01-01T00:00:00.000Z"), Some("2023-03-31T23:59:59.999Z"), P::Range, B::Relative),
        ("earlier this month", "2023-05-08T10:00:00Z", Some("2023-05-01T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Range, B::Relative),
        ("next year", "2023-05-08T10:00:00Z", Some("2024-01-01T00:00:00.000Z"), Some("2024-12-31T23:59:59.999Z"), P::Year, B::Relative),
        ("I moved 3 years ago", "2023-05-08T10:00:00Z", Some("2020-01-01T00:00:00.000Z"), Some("2020-12-31T23:59:59.999Z"), P::Year, B::Relative),
        ("this year has been great", "2023-05-08T10:00:00Z", Some("2023-01-01T00:00:00.000Z"), Some("2023-12-31T23:59:59.999Z"), P::Year, B::Relative),
        // Durations up to the mention day.
        ("I've been learning guitar for 3 months", "2023-05-31T10:00:00Z", Some("2023-02-28T00:00:00.000Z"), Some("2023-05-31T23:59:59.999Z"), P::Range, B::Relative),
        ("I've been sick for two weeks", "2023-05-08T10:00:00Z", Some("2023-04-24T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Range, B::Relative),
        ("I've been sick for 10 days", "2023-05-08T10:00:00Z", Some("2023-04-28T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Range, B::Relative),
        ("I've lived here for a year", "2023-05-08T10:00:00Z", Some("2022-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Range, B::Relative),
        ("for the past 5 years I have painted", "2023-05-08T10:00:00Z", Some("2018-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Range, B::Relative),
        ("over the last 2 years", "2023-05-08T10:00:00Z", Some("2021-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Range, B::Relative),
        // Inferred.
        ("I've been running a lot recently", "2023-05-08T10:00:00Z", Some("2023-04-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Range, B::Inferred),
        ("I'm at home right now", "2023-05-08T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Inferred),
        ("These days I paint a lot", "2023-05-08T10:00:00Z", Some("2023-05-08T00:00:00.000Z"), Some("2023-05-08T23:59:59.999Z"), P::Day, B::Inferred),
        // Negatives: no time expression at all.
        ("I love pottery", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("May I ask you something?", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("I have 2022 reasons", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("the 4 of us", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("March forward", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("second place", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("a few people", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("I'm 25 years old", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("I sat on the sun lounger", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("We may go, it may rain", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("This may take a while", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("Every Saturday we play chess", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("I paid $2022 for it", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("I spent most of my 20s there", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("since you asked, yes", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("I'll be in Paris for two weeks", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
        ("", "2023-05-08T10:00:00Z", None, None, P::Unknown, B::Unknown),
    ];

    #[test]
    fn table() {
        let mut failures = Vec::new();
        for (k, &(text, at, start, end, precision, basis)) in ROWS.iter().enumerate() {
            let found = resolve_best(text, mention(at));
            let got = found.as_ref().map(|e| {
                (
                    e.happened_start.map(Timestamp::to_rfc3339),
                    e.happened_end.map(Timestamp::to_rfc3339),
                    e.precision,
                    e.basis,
                )
            });
            let want = start.map(|s| {
                (
                    Some(s.to_string()),
                    end.map(str::to_string),
                    precision,
                    basis,
                )
            });
            if got != want {
                failures.push(format!(
                    "row {k} {text:?} @ {at}: got {found:?}, want {want:?}"
                ));
            }
            if let Some(e) = &found {
                assert_eq!(text.get(e.start..e.end), Some(e.text.as_str()));
            }
        }
        assert!(ROWS.len() >= 70);
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    /// Text, mention, expected first and last local day.
    type V2Row = (
        &'static str,
        &'static str,
        Option<(&'static str, &'static str)>,
    );

    /// (text, mention, expected first and last local day) of the
    /// expression that best dates the text under [`Resolver::V2`]
    /// (`heuristic-extractor@4`); `None`: no single interval. Future plans
    /// with and without weekdays, past events, recurring events, cancelled
    /// plans, durations and ranges, "last"/"next" around year boundaries.
    #[rustfmt::skip]
    const V2_ROWS: &[V2Row] = &[
        ("Noted: Sintra day trip on Monday 20 May.", "2024-04-20T19:09:35+02:00", Some(("2024-05-20", "2024-05-20"))),
        ("Noted: dinner with Joao on Thursday 16 May.", "2024-05-10T21:46:48+02:00", Some(("2024-05-16", "2024-05-16"))),
        ("Check-in is on Friday 17 May from 15:00.", "2024-05-10T10:00:00Z", Some(("2024-05-17", "2024-05-17"))),
        ("Check-out is Tuesday 21 May by 11:00.", "2024-05-10T10:00:00Z", Some(("2024-05-21", "2024-05-21"))),
        ("We'll meet on Wednesday, 3 January.", "2023-12-20T10:00:00Z", Some(("2024-01-03", "2024-01-03"))),
        ("The party is on Saturday 6 January.", "2023-12-28T10:00:00Z", Some(("2024-01-06", "2024-01-06"))),
        ("My flight leaves on Friday 10 January.", "2024-11-02T10:00:00Z", Some(("2025-01-10", "2025-01-10"))),
        ("The workshop runs on Thursday 14 March.", "2024-02-01T10:00:00Z", Some(("2024-03-14", "2024-03-14"))),
        ("Our anniversary dinner is Friday 28 June.", "2024-06-01T10:00:00Z", Some(("2024-06-28", "2024-06-28"))),
        ("Noted: dentist on Wednesday 2 October.", "2024-09-15T10:00:00Z", Some(("2024-10-02", "2024-10-02"))),
        ("Noted: call with Priya on Monday 5 January.", "2025-12-30T10:00:00Z", Some(("2026-01-05", "2026-01-05"))),
        ("I'm flying out on Friday 9 August.", "2024-07-01T10:00:00Z", Some(("2024-08-09", "2024-08-09"))),
        ("The review is scheduled for Monday 1 April.", "2024-03-01T10:00:00Z", Some(("2024-04-01", "2024-04-01"))),
        ("We are going to hike on Saturday 27 April.", "2024-04-01T10:00:00Z", Some(("2024-04-27", "2024-04-27"))),
        ("The concert is on Sunday 5 May.", "2024-05-01T10:00:00Z", Some(("2024-05-05", "2024-05-05"))),
        ("We'll meet on Monday, May 20.", "2024-04-20T10:00:00Z", Some(("2024-05-20", "2024-05-20"))),
        ("Noted: demo on Tuesday January 9.", "2023-12-15T10:00:00Z", Some(("2024-01-09", "2024-01-09"))),
        ("The match is on Saturday August 24th.", "2024-08-01T10:00:00Z", Some(("2024-08-24", "2024-08-24"))),
        ("I'll see you Friday, November 1.", "2024-10-30T10:00:00Z", Some(("2024-11-01", "2024-11-01"))),
        ("We go on Monday, the 20th of May.", "2024-05-01T10:00:00Z", Some(("2024-05-20", "2024-05-20"))),
        ("Our trip starts on Monday February 2.", "2025-11-20T10:00:00Z", Some(("2026-02-02", "2026-02-02"))),
        ("The launch is Thursday February 29.", "2024-01-02T10:00:00Z", Some(("2024-02-29", "2024-02-29"))),
        ("Booked: the spa on Saturday 8 June.", "2024-05-28T10:00:00Z", Some(("2024-06-08", "2024-06-08"))),
        ("We went hiking on Saturday 4 May.", "2024-05-10T10:00:00Z", Some(("2024-05-04", "2024-05-04"))),
        ("We celebrated on Sunday 31 December.", "2024-01-05T10:00:00Z", Some(("2023-12-31", "2023-12-31"))),
        ("I ran a half marathon on Sunday 18 February.", "2024-03-01T10:00:00Z", Some(("2024-02-18", "2024-02-18"))),
        ("The storm hit on Tuesday 24 December.", "2025-01-03T10:00:00Z", Some(("2024-12-24", "2024-12-24"))),
        ("My sister visited on Saturday, June 1.", "2024-06-15T10:00:00Z", Some(("2024-06-01", "2024-06-01"))),
        ("We moved in on Friday 17 November.", "2024-02-10T10:00:00Z", Some(("2023-11-17", "2023-11-17"))),
        ("I started the job on Monday 2 September.", "2024-09-30T10:00:00Z", Some(("2024-09-02", "2024-09-02"))),
        ("We adopted the cat on Saturday, April 13.", "2024-04-15T10:00:00Z", Some(("2024-04-13", "2024-04-13"))),
        ("I had surgery on Tuesday 3 December.", "2024-12-28T10:00:00Z", Some(("2024-12-03", "2024-12-03"))),
        ("The outage was on Tuesday 16 January.", "2024-01-20T10:00:00Z", Some(("2024-01-16", "2024-01-16"))),
        ("We fixed Monday 20 May for the trip.", "2024-04-20T10:00:00Z", Some(("2024-05-20", "2024-05-20"))),
        ("She said Tuesday 2 January works.", "2023-12-20T10:00:00Z", Some(("2024-01-02", "2024-01-02"))),
        ("He told me Friday 3 January.", "2024-12-20T10:00:00Z", Some(("2025-01-03", "2025-01-03"))),
        ("I'm going to Porto on 14 May.", "2024-04-20T10:00:00Z", Some(("2024-05-14", "2024-05-14"))),
        ("We will fly on 3 January.", "2023-12-20T10:00:00Z", Some(("2024-01-03", "2024-01-03"))),
        ("I plan to visit on 2 February.", "2024-03-01T10:00:00Z", Some(("2025-02-02", "2025-02-02"))),
        ("We're going to the lake on 10 August.", "2024-08-20T10:00:00Z", Some(("2025-08-10", "2025-08-10"))),
        ("I'll call her on May 8th.", "2023-06-01T10:00:00Z", Some(("2024-05-08", "2024-05-08"))),
        ("We are planning a party on 1 March.", "2024-02-20T10:00:00Z", Some(("2024-03-01", "2024-03-01"))),
        ("Noted: Sintra day trip on 20 May.", "2024-04-20T10:00:00Z", Some(("2024-05-20", "2024-05-20"))),
        ("Noted: dinner with Joao in Porto on 16 May.", "2024-05-10T21:46:48+02:00", Some(("2024-05-16", "2024-05-16"))),
        ("I booked the train: 17 May, 11:09 from Porto.", "2024-05-10T21:40:22+02:00", Some(("2024-05-17", "2024-05-17"))),
        ("I reserved a table for 2 January.", "2023-12-29T10:00:00Z", Some(("2024-01-02", "2024-01-02"))),
        ("The invoice is due on 5 January.", "2023-12-15T10:00:00Z", Some(("2024-01-05", "2024-01-05"))),
        ("Got it — two window seats on 17 May.", "2024-04-27T10:16:05+02:00", Some(("2024-05-17", "2024-05-17"))),
        ("The talk is scheduled for 12 March.", "2024-01-10T10:00:00Z", Some(("2024-03-12", "2024-03-12"))),
        ("We confirmed the venue for 30 June.", "2024-07-05T10:00:00Z", Some(("2025-06-30", "2025-06-30"))),
        ("I'll be back on the 2nd of January.", "2024-12-20T10:00:00Z", Some(("2025-01-02", "2025-01-02"))),
        ("We want to marry on 9 September.", "2024-10-01T10:00:00Z", Some(("2025-09-09", "2025-09-09"))),
        ("Can't wait for 24 December!", "2024-11-01T10:00:00Z", Some(("2024-12-24", "2024-12-24"))),
        ("I hope to finish by 15 April.", "2024-01-15T10:00:00Z", Some(("2024-04-15", "2024-04-15"))),
        ("We're thinking about going on 4 July.", "2024-07-10T10:00:00Z", Some(("2025-07-04", "2025-07-04"))),
        ("Looking forward to 1 January.", "2024-12-31T10:00:00Z", Some(("2025-01-01", "2025-01-01"))),
        ("The contract was arranged for 1 February.", "2024-01-20T10:00:00Z", Some(("2024-02-01", "2024-02-01"))),
        ("I postponed the visit to 3 June.", "2024-05-15T10:00:00Z", Some(("2024-06-03", "2024-06-03"))),
        ("We rescheduled the call to 7 May.", "2024-04-30T10:00:00Z", Some(("2024-05-07", "2024-05-07"))),
        ("I'm gonna start on 6 January.", "2024-12-01T10:00:00Z", Some(("2025-01-06", "2025-01-06"))),
        ("We will move on 30 November.", "2024-11-30T10:00:00Z", Some(("2024-11-30", "2024-11-30"))),
        ("We met on 8 May.", "2024-06-01T10:00:00Z", Some(("2024-05-08", "2024-05-08"))),
        ("I visited Lisbon on 28 December.", "2024-01-05T10:00:00Z", Some(("2023-12-28", "2023-12-28"))),
        ("We went to the beach on 2 July.", "2024-07-01T10:00:00Z", Some(("2023-07-02", "2023-07-02"))),
        ("I finished the course on 30 January.", "2024-02-02T10:00:00Z", Some(("2024-01-30", "2024-01-30"))),
        ("My son was born on 12 October.", "2024-03-01T10:00:00Z", Some(("2023-10-12", "2023-10-12"))),
        ("We adopted Luna on June 5th.", "2024-06-10T10:00:00Z", Some(("2024-06-05", "2024-06-05"))),
        ("I got married on 20 May.", "2024-04-20T10:00:00Z", Some(("2023-05-20", "2023-05-20"))),
        ("The team shipped the release on 3 March.", "2024-03-20T10:00:00Z", Some(("2024-03-03", "2024-03-03"))),
        ("I ran my first race on 31 December.", "2024-01-01T10:00:00Z", Some(("2023-12-31", "2023-12-31"))),
        ("We started dating on 14 February.", "2024-02-13T10:00:00Z", Some(("2023-02-14", "2023-02-14"))),
        ("I lost my keys on the 9th of April.", "2024-04-12T10:00:00Z", Some(("2024-04-09", "2024-04-09"))),
        ("She called me on 1 January.", "2024-01-01T10:00:00Z", Some(("2024-01-01", "2024-01-01"))),
        ("We migrated to ClickHouse on 15 November.", "2024-01-10T10:00:00Z", Some(("2023-11-15", "2023-11-15"))),
        ("I stopped smoking on 2 August.", "2024-08-01T10:00:00Z", Some(("2023-08-02", "2023-08-02"))),
        ("We sold the house on 25 September.", "2024-10-01T10:00:00Z", Some(("2024-09-25", "2024-09-25"))),
        ("The concert is on 3 June.", "2024-05-20T10:00:00Z", Some(("2024-06-03", "2024-06-03"))),
        ("My birthday is 2 January.", "2023-12-28T10:00:00Z", Some(("2024-01-02", "2024-01-02"))),
        ("Her birthday is 30 December.", "2024-01-03T10:00:00Z", Some(("2023-12-30", "2023-12-30"))),
        ("The deadline is 1 March.", "2024-02-20T10:00:00Z", Some(("2024-03-01", "2024-03-01"))),
        ("Payday is 15 May.", "2024-05-14T10:00:00Z", Some(("2024-05-15", "2024-05-15"))),
        ("The exam is on 10 July.", "2024-07-12T10:00:00Z", Some(("2024-07-10", "2024-07-10"))),
        ("Our office closes 24 December.", "2024-01-10T10:00:00Z", Some(("2023-12-24", "2023-12-24"))),
        ("The ferry on 11 April is full.", "2024-04-01T10:00:00Z", Some(("2024-04-11", "2024-04-11"))),
        ("Every 20 May we go back to Sintra.", "2024-04-20T10:00:00Z", None),
        ("Each year on 14 May I call my grandmother.", "2024-04-20T10:00:00Z", None),
        ("We celebrate annually on 3 June.", "2024-04-20T10:00:00Z", None),
        ("Every 1st of January we swim in the sea.", "2024-04-20T10:00:00Z", None),
        ("Each 25 December the whole family meets.", "2024-04-20T10:00:00Z", None),
        ("Every year on 4 July we have a barbecue.", "2024-04-20T10:00:00Z", None),
        ("My rent is due yearly on 1 March.", "2024-04-20T10:00:00Z", None),
        ("Every Saturday we play chess.", "2024-04-20T10:00:00Z", None),
        ("Every Monday I go swimming.", "2024-04-20T10:00:00Z", None),
        ("Each Friday we order pizza.", "2024-04-20T10:00:00Z", None),
        ("Nothing serious, but we cancelled the Sintra day trip on 20 May.", "2024-05-10T21:31:38+02:00", Some(("2024-05-20", "2024-05-20"))),
        ("I've taken the Sintra trip on 20 May out of the plan.", "2024-05-10T21:31:49+02:00", Some(("2024-05-20", "2024-05-20"))),
        ("We canceled the dinner on 16 May.", "2024-05-10T10:00:00Z", Some(("2024-05-16", "2024-05-16"))),
        ("The flight on 3 January was cancelled.", "2023-12-20T10:00:00Z", Some(("2024-01-03", "2024-01-03"))),
        ("They cancelled the concert on Saturday 8 June.", "2024-05-30T10:00:00Z", Some(("2024-06-08", "2024-06-08"))),
        ("I cancelled my appointment on 2 February.", "2024-01-28T10:00:00Z", Some(("2024-02-02", "2024-02-02"))),
        ("We called off the trip on 12 August.", "2024-08-01T10:00:00Z", Some(("2024-08-12", "2024-08-12"))),
        ("Got it: Porto 14–17 May, Lisbon 17–21 May.", "2024-04-20T19:07:12+02:00", Some(("2024-05-14", "2024-05-17"))),
        ("Roughly 14 to 17 May in Porto, then Lisbon.", "2024-04-20T19:07:00+02:00", Some(("2024-05-14", "2024-05-17"))),
        ("We'll be in Rome from 3 to 9 June.", "2024-05-01T10:00:00Z", Some(("2024-06-03", "2024-06-09"))),
        ("We were in Rome from 3 to 9 June.", "2024-07-01T10:00:00Z", Some(("2024-06-03", "2024-06-09"))),
        ("We were in Rome 3-9 June.", "2024-05-01T10:00:00Z", Some(("2023-06-03", "2023-06-09"))),
        ("The conference runs 28–30 December.", "2024-12-01T10:00:00Z", Some(("2024-12-28", "2024-12-30"))),
        ("Booked the cabin 2–5 January.", "2024-12-10T10:00:00Z", Some(("2025-01-02", "2025-01-05"))),
        ("We stayed 10-12 March 2023 at a farm.", "2024-05-01T10:00:00Z", Some(("2023-03-10", "2023-03-12"))),
        ("I was off between 5 and 8 August.", "2024-08-20T10:00:00Z", Some(("2024-08-05", "2024-08-08"))),
        ("I've lived here for four years.", "2024-04-20T10:00:00Z", Some(("2020-04-20", "2024-04-20"))),
        ("I have been running for the past 5 years.", "2024-01-10T10:00:00Z", Some(("2019-01-10", "2024-01-10"))),
        ("We've been together for two months now.", "2024-03-31T10:00:00Z", Some(("2024-01-31", "2024-03-31"))),
        ("I worked there for about a year.", "2024-02-29T10:00:00Z", Some(("2023-02-28", "2024-02-29"))),
        ("I've been learning Portuguese since 2022.", "2024-04-20T10:00:00Z", Some(("2022-01-01", "2024-04-20"))),
        ("We've been friends since March.", "2024-01-15T10:00:00Z", Some(("2023-03-01", "2024-01-15"))),
        ("I'll be in Paris for two weeks.", "2024-04-20T10:00:00Z", None),
        ("We will stay for three nights.", "2024-04-20T10:00:00Z", None),
        ("See you next month.", "2023-12-15T10:00:00Z", Some(("2024-01-01", "2024-01-31"))),
        ("We moved last month.", "2024-01-10T10:00:00Z", Some(("2023-12-01", "2023-12-31"))),
        ("We'll renovate next year.", "2023-12-31T10:00:00Z", Some(("2024-01-01", "2024-12-31"))),
        ("I graduated last year.", "2024-01-01T10:00:00Z", Some(("2023-01-01", "2023-12-31"))),
        ("I was sick last week.", "2024-01-03T10:00:00Z", Some(("2023-12-25", "2023-12-31"))),
        ("I start the job next week.", "2023-12-28T10:00:00Z", Some(("2024-01-01", "2024-01-07"))),
        ("We'll talk next Friday.", "2023-12-27T10:00:00Z", Some(("2024-01-05", "2024-01-05"))),
        ("I saw her last Friday.", "2024-01-02T10:00:00Z", Some(("2023-12-29", "2023-12-29"))),
        ("We're getting married next May.", "2023-12-10T10:00:00Z", Some(("2024-05-01", "2024-05-31"))),
        ("We went skiing last December.", "2024-01-15T10:00:00Z", Some(("2023-12-01", "2023-12-31"))),
        ("We went skiing last December.", "2024-12-20T10:00:00Z", Some(("2023-12-01", "2023-12-31"))),
        ("We'll go skiing next January.", "2024-12-20T10:00:00Z", Some(("2025-01-01", "2025-01-31"))),
        ("We'll go skiing next January.", "2025-01-10T10:00:00Z", Some(("2026-01-01", "2026-01-31"))),
        ("I was in Tokyo last January.", "2024-01-20T10:00:00Z", Some(("2023-01-01", "2023-01-31"))),
        ("We met last weekend.", "2024-01-02T10:00:00Z", Some(("2023-12-30", "2023-12-31"))),
        ("We'll meet next weekend.", "2023-12-28T10:00:00Z", Some(("2024-01-06", "2024-01-07"))),
        ("See you next Monday.", "2023-12-31T10:00:00Z", Some(("2024-01-01", "2024-01-01"))),
        ("I called him last Sunday.", "2024-01-01T10:00:00Z", Some(("2023-12-31", "2023-12-31"))),
        ("We're visiting in January.", "2023-12-05T10:00:00Z", Some(("2024-01-01", "2024-01-31"))),
        ("We visited in December.", "2024-01-05T10:00:00Z", Some(("2023-12-01", "2023-12-31"))),
        ("I'll fly home tomorrow.", "2023-12-31T10:00:00Z", Some(("2024-01-01", "2024-01-01"))),
        ("I flew home yesterday.", "2024-01-01T10:00:00Z", Some(("2023-12-31", "2023-12-31"))),
        ("We went two weeks ago.", "2024-01-05T10:00:00Z", Some(("2023-12-18", "2023-12-24"))),
        ("I'll go in three days.", "2023-12-30T10:00:00Z", Some(("2024-01-02", "2024-01-02"))),
        ("The year before last we hiked.", "2024-01-05T10:00:00Z", Some(("2022-01-01", "2022-12-31"))),
        ("We'll see each other the month after next.", "2023-11-20T10:00:00Z", Some(("2024-01-01", "2024-01-31"))),
        ("We met on 8 May 2023.", "2024-01-10T10:00:00Z", Some(("2023-05-08", "2023-05-08"))),
        ("The trip is on Monday 20 May 2024.", "2023-01-10T10:00:00Z", Some(("2024-05-20", "2024-05-20"))),
        ("I was in Lisbon in 2022 for a work conference.", "2024-04-20T10:00:00Z", Some(("2022-01-01", "2022-12-31"))),
        ("We'll launch on 2025-03-01.", "2024-04-20T10:00:00Z", Some(("2025-03-01", "2025-03-01"))),
        ("Noted: review on May 3, 2025.", "2024-04-20T10:00:00Z", Some(("2025-05-03", "2025-05-03"))),
        ("I prefer window seats, on trains and on planes.", "2024-04-20T10:00:00Z", None),
        ("Sintra is a must.", "2024-04-20T10:00:00Z", None),
        ("May I ask you something?", "2024-04-20T10:00:00Z", None),
        ("We may go, it may rain.", "2024-04-20T10:00:00Z", None),
        ("I love pottery.", "2024-04-20T10:00:00Z", None),
    ];

    /// The first and last millisecond of local days `a..=b` at the offset of
    /// `at`, in UTC.
    fn local_days(a: &str, b: &str, at: SourceTime) -> (String, String) {
        let off = i64::from(at.offset_minutes.unwrap_or(0)) * 60_000;
        let day = |d: &str| {
            NaiveDate::parse_from_str(d, "%Y-%m-%d")
                .expect("row date")
                .and_hms_opt(0, 0, 0)
                .expect("midnight")
                .and_utc()
                .timestamp_millis()
                - off
        };
        (
            Timestamp(day(a)).to_rfc3339(),
            Timestamp(day(b) + 86_400_000 - 1).to_rfc3339(),
        )
    }

    /// The failure of one table row, if the found interval is not the
    /// wanted local days.
    fn row_failure(
        k: usize,
        text: &str,
        at: &str,
        found: Option<TimeExpression>,
        want: Option<(&str, &str)>,
    ) -> Option<String> {
        let when = mention(at);
        let got = found
            .as_ref()
            .and_then(|e| Some((e.happened_start?.to_rfc3339(), e.happened_end?.to_rfc3339())));
        let want = want.map(|(a, b)| local_days(a, b, when));
        (got != want).then(|| {
            format!(
                "row {k} {text:?} @ {at}: got {got:?} ({:?}), want {want:?}",
                found.map(|e| e.text)
            )
        })
    }

    fn assert_no_failures(failures: &[String]) {
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn v2_table() {
        let failures: Vec<String> = V2_ROWS
            .iter()
            .enumerate()
            .filter_map(|(k, &(text, at, want))| {
                let found = resolve_best_with(text, mention(at), Resolver::V2);
                row_failure(k, text, at, found, want)
            })
            .collect();
        assert!(V2_ROWS.len() >= 150, "{} rows", V2_ROWS.len());
        assert_no_failures(&failures);
    }

    /// (earlier sentence of the message, text, mention, expected first and
    /// last local day) under [`Resolver::V3`] (`heuristic-extractor@5`).
    type V3Row = (
        Option<&'static str>,
        &'static str,
        &'static str,
        Option<(&'static str, &'static str)>,
    );

    const V3_ROWS: &[V3Row] = &[
        // A duration says how long, not when, unless it runs up to now.
        (
            None,
            "Dual-write for a few days, then backfill the history.",
            "2025-01-14T09:08:47Z",
            None,
        ),
        (
            None,
            "I was in Paris for a week.",
            "2024-05-01T10:00:00Z",
            None,
        ),
        (
            None,
            "We'll stay in Porto for three days.",
            "2024-05-01T10:00:00Z",
            None,
        ),
        (
            None,
            "I've been painting for 3 years.",
            "2024-05-01T10:00:00Z",
            Some(("2021-05-01", "2024-05-01")),
        ),
        (
            None,
            "She has been sick for a few days.",
            "2024-03-10T10:00:00Z",
            Some(("2024-03-06", "2024-03-10")),
        ),
        (
            None,
            "I have lived in Lisbon for two years.",
            "2024-05-01T10:00:00Z",
            Some(("2022-05-01", "2024-05-01")),
        ),
        (
            None,
            "We've been dating for 6 months now.",
            "2024-05-01T10:00:00Z",
            Some(("2023-11-01", "2024-05-01")),
        ),
        (
            None,
            "I've done yoga for the past 5 years.",
            "2024-05-01T10:00:00Z",
            Some(("2019-05-01", "2024-05-01")),
        ),
        // Deadlines: from the mention to the end of the date.
        (
            None,
            "Priya wants the cutover done before the end of January.",
            "2025-01-14T09:08:47Z",
            Some(("2025-01-14", "2025-01-31")),
        ),
        (
            None,
            "I will finish the report by Friday.",
            "2024-05-08T10:00:00Z",
            Some(("2024-05-08", "2024-05-10")),
        ),
        (
            None,
            "Free cancellation until 14 May 2024.",
            "2024-04-27T10:20:38+02:00",
            Some(("2024-04-27", "2024-05-14")),
        ),
        (
            None,
            "The offer is valid until the end of June.",
            "2024-06-03T10:00:00Z",
            Some(("2024-06-03", "2024-06-30")),
        ),
        (
            None,
            "We have to submit before 20 December.",
            "2024-12-02T10:00:00Z",
            Some(("2024-12-02", "2024-12-20")),
        ),
        (
            None,
            "By the end of next week the migration will be done.",
            "2025-01-14T09:00:00Z",
            Some(("2025-01-14", "2025-01-26")),
        ),
        (
            None,
            "I'll send it till 3 March.",
            "2025-02-10T10:00:00Z",
            Some(("2025-02-10", "2025-03-03")),
        ),
        // A deadline in the past, or already passed, is the date itself.
        (
            None,
            "I finished it before the end of January.",
            "2024-03-01T10:00:00Z",
            Some(("2024-01-01", "2024-01-31")),
        ),
        (
            None,
            "We paid by 2 February 2024.",
            "2024-03-01T10:00:00Z",
            Some(("2024-02-02", "2024-02-02")),
        ),
        // "that Saturday", "that day", "the same day": the earlier date.
        (
            Some("Can you check the weather for Lisbon on 18 May?"),
            "We want to do a walking tour that Saturday.",
            "2024-04-27T10:22:10+02:00",
            Some(("2024-05-18", "2024-05-18")),
        ),
        (
            None,
            "We want to do a walking tour that Saturday.",
            "2024-04-27T10:22:10+02:00",
            None,
        ),
        (
            Some("The concert is on Friday 7 June."),
            "We want to do a walking tour that Saturday.",
            "2024-05-01T10:00:00Z",
            None,
        ),
        (
            Some("We land on 3 March."),
            "I'll rest that day.",
            "2025-02-10T10:00:00Z",
            Some(("2025-03-03", "2025-03-03")),
        ),
        (
            Some("My exam is on 12 June."),
            "I'm flying home the same day.",
            "2024-05-01T10:00:00Z",
            Some(("2024-06-12", "2024-06-12")),
        ),
        (
            Some("We arrive on Friday 17 May."),
            "That Friday we'll have dinner at the hotel.",
            "2024-05-01T10:00:00Z",
            Some(("2024-05-17", "2024-05-17")),
        ),
        // Everything else reads as V2 does.
        (
            None,
            "Noted: Sintra day trip on Monday 20 May.",
            "2024-04-20T19:09:35+02:00",
            Some(("2024-05-20", "2024-05-20")),
        ),
        (
            None,
            "Got it: Porto 14–17 May, Lisbon 17–21 May.",
            "2024-04-20T19:07:12+02:00",
            Some(("2024-05-14", "2024-05-17")),
        ),
    ];

    /// `resolve_best_after` skips its anaphor scan when the text spells
    /// neither `that` nor `same` in ASCII: that holds only if no other
    /// character folds to one of their letters.
    #[test]
    fn only_ascii_letters_fold_to_the_anaphor_letters() {
        for c in (0..=0x10_FFFF_u32).filter_map(char::from_u32) {
            let mut folded = String::new();
            crate::text::push_lowercase(&mut folded, c);
            if folded.chars().any(|f| "thasme".contains(f)) {
                assert!(c.is_ascii_alphabetic(), "{c:?} folds to {folded:?}");
            }
        }
        assert!(crate::text::contains_ascii_ci("on THAT Saturday", "that"));
        assert!(crate::text::contains_ascii_ci("the Same day", "same"));
        assert!(!crate::text::contains_ascii_ci("on Saturday", "that"));
    }

    #[test]
    fn v3_table() {
        let failures: Vec<String> = V3_ROWS
            .iter()
            .enumerate()
            .filter_map(|(k, &(before, text, at, want))| {
                let when = mention(at);
                let earlier: Vec<TimeExpression> = before
                    .and_then(|b| resolve_best_with(b, when, Resolver::V3))
                    .into_iter()
                    .collect();
                let found = resolve_best_after(text, &earlier, when, Resolver::V3);
                row_failure(k, text, at, found, want)
            })
            .collect();
        assert_no_failures(&failures);
    }

    #[test]
    fn v3_agrees_with_v2_but_for_durations_deadlines_and_anaphora() {
        // Rows of the V2 table that V3 reads otherwise, by design.
        let changed: Vec<&str> = V2_ROWS
            .iter()
            .filter(|(text, at, _)| {
                let when = mention(at);
                let span = |r| {
                    resolve_best_with(text, when, r).map(|e| (e.happened_start, e.happened_end))
                };
                span(Resolver::V2) != span(Resolver::V3)
            })
            .map(|(text, _, _)| *text)
            .collect();
        for text in &changed {
            let w = text.to_lowercase();
            assert!(
                [" for ", "by ", "before ", "until ", "till ", "that "]
                    .iter()
                    .any(|cue| w.contains(cue)),
                "V3 reads {text:?} otherwise than V2 with no duration, deadline or anaphor"
            );
        }
        // The anaphor and the deadline leave V1 and V2 as they were.
        let at = mention("2024-04-27T10:22:10+02:00");
        let text = "We want to do a walking tour that Saturday.";
        let earlier = resolve_best_with("on 18 May", at, Resolver::V3)
            .into_iter()
            .collect::<Vec<_>>();
        for r in [Resolver::V1, Resolver::V2] {
            assert_eq!(
                resolve_best_after(text, &earlier, at, r),
                resolve_best_with(text, at, r)
            );
        }
        let v3 = resolve_best_after(text, &earlier, at, Resolver::V3).expect("dated");
        assert_eq!(v3.year_basis, Some(YearBasis::Antecedent));
        assert_eq!(v3.text, "that Saturday");
        let deadline = resolve_best_with(
            "Priya wants the cutover done before the end of January.",
            mention("2025-01-14T09:08:47Z"),
            Resolver::V3,
        )
        .expect("dated");
        assert_eq!(deadline.text, "before the end of January");
        assert_eq!(deadline.precision, Precision::Range);
        assert_eq!(deadline.tense, Tense::Future);
    }

    #[test]
    fn v2_records_the_year_basis_and_v1_is_unchanged() {
        let at = mention("2024-04-20T19:09:35+02:00");
        let text = "Noted: Sintra day trip on Monday 20 May.";
        let v1 = resolve_best(text, at).expect("v1 date");
        let v2 = resolve_best_with(text, at, Resolver::V2).expect("v2 date");
        assert_eq!(
            v1.happened_start.map(Timestamp::to_rfc3339).as_deref(),
            Some("2023-05-19T22:00:00.000Z"),
            "version 1 stays as it was"
        );
        assert_eq!(v1.year_basis, None);
        assert_eq!(
            v2.happened_start.map(Timestamp::to_rfc3339).as_deref(),
            Some("2024-05-19T22:00:00.000Z")
        );
        assert_eq!(v2.year_basis, Some(YearBasis::Weekday));
        assert_eq!(v2.tense, Tense::Future);
        let basis = |t: &str, m: &str| {
            resolve_best_with(t, mention(m), Resolver::V2).and_then(|e| e.year_basis)
        };
        let m = "2024-05-10T10:00:00Z";
        assert_eq!(
            basis("I booked the train: 17 May.", m),
            Some(YearBasis::Arrangement)
        );
        assert_eq!(basis("We met on 8 May.", m), Some(YearBasis::Tense));
        assert_eq!(
            basis("The concert is on 3 June.", m),
            Some(YearBasis::Nearest)
        );
        assert_eq!(basis("We met on 8 May 2023.", m), None);
        // Version 1 reads no day range.
        let r = resolve_best("Got it: Porto 14–17 May.", mention(m)).expect("v1");
        assert_eq!(r.text, "17 May");
    }

    fn texts(text: &str, at: &str) -> Vec<String> {
        find_time_expressions(text, mention(at))
            .into_iter()
            .map(|e| e.text)
            .collect()
    }

    #[test]
    fn expressions_in_order_without_overlap() {
        let all = texts(
            "I just joined a new LGBTQ activist group last Tues",
            "2023-07-20T10:00:00Z",
        );
        assert_eq!(all, ["just joined", "last Tues"]);
        let all = texts(
            "Yesterday I ran; the day before yesterday I swam, and next week I'll bike.",
            "2023-07-20T10:00:00Z",
        );
        assert_eq!(all, ["Yesterday", "the day before yesterday", "next week"]);
        let all = texts(
            "We met on 8 May 2023 and again since 2016.",
            "2024-01-10T10:00:00Z",
        );
        assert_eq!(all, ["8 May 2023", "since 2016"]);
        let all = texts("I've been here for four years now.", "2024-01-10T10:00:00Z");
        assert_eq!(all, ["for four years now"]);
    }

    #[test]
    fn expression_tense() {
        let tense = |text: &str, at: &str| resolve_best(text, mention(at)).map(|e| e.tense);
        let at = "2024-04-20T10:00:00+02:00";
        assert_eq!(tense("going to Lisbon in June", at), Some(Tense::Future));
        assert_eq!(tense("we went to Porto in June", at), Some(Tense::Past));
        assert_eq!(tense("I'm currently reading", at), Some(Tense::Present));
        assert_eq!(tense("I just got accepted", at), Some(Tense::Past));
        assert_eq!(tense("this week is busy", at), Some(Tense::Present));
        assert_eq!(tense("yesterday", at), Some(Tense::Past));
        assert_eq!(tense("tomorrow", at), Some(Tense::Future));
        assert_eq!(tense("in April", at), Some(Tense::Present));
    }

    #[test]
    fn detect_tense_markers() {
        let cases = [
            ("I will call you", Tense::Future),
            ("We'll see", Tense::Future),
            ("I'm going to a conference", Tense::Future),
            ("gonna be fun", Tense::Future),
            ("We plan to hike", Tense::Future),
            ("We're planning a trip", Tense::Future),
            ("We're thinking about going camping", Tense::Future),
            ("see you next week", Tense::Future),
            ("the show is tomorrow", Tense::Future),
            ("an upcoming talk", Tense::Future),
            ("I can't wait to see it", Tense::Future),
            ("this coming Friday", Tense::Future),
            ("I went to a support group", Tense::Past),
            ("It was great", Tense::Past),
            ("We celebrated her birthday", Tense::Past),
            ("two days ago", Tense::Past),
            ("We used to paint", Tense::Past),
            ("I was going to call", Tense::Past),
            ("the next day we left", Tense::Past),
            ("I love pottery", Tense::Present),
            ("I'm so excited and interested", Tense::Present),
            ("We need to feed the dog", Tense::Present),
            ("I live next to the park", Tense::Present),
            ("", Tense::Present),
        ];
        for (text, want) in cases {
            assert_eq!(detect_tense(text), want, "{text:?}");
        }
    }

    #[test]
    fn ambiguous_month_day_follows_tense() {
        let at = "2023-06-01T10:00:00Z";
        let start = |text: &str| {
            resolve_best(text, mention(at))
                .and_then(|e| e.happened_start)
                .map(Timestamp::to_rfc3339)
        };
        assert_eq!(
            start("We met on May 8th").as_deref(),
            Some("2023-05-08T00:00:00.000Z")
        );
        assert_eq!(
            start("We'll meet on May 8th").as_deref(),
            Some("2024-05-08T00:00:00.000Z")
        );
        assert_eq!(
            start("We'll meet on the 1st of June").as_deref(),
            Some("2023-06-01T00:00:00.000Z")
        );
        assert_eq!(
            start("We met on June 1st").as_deref(),
            Some("2023-06-01T00:00:00.000Z")
        );
    }

    #[test]
    fn deterministic() {
        let at = mention("2023-07-20T10:00:00Z");
        let text = "Last weekend I joined; next Saturday I'll go; since 2016; in June.";
        assert_eq!(
            find_time_expressions(text, at),
            find_time_expressions(text, at)
        );
    }

    /// The parser without the anchor check.
    fn unfiltered(text: &str, at: SourceTime) -> Vec<TimeExpression> {
        find_in(text, tokenize(text), at, Resolver::V1)
    }

    /// Every word of the lexicon and of the parsers, with fillers: any
    /// expression the parsers know is made of these.
    const LEXICON: &[&str] = &[
        "last",
        "next",
        "this",
        "the",
        "a",
        "an",
        "few",
        "couple",
        "of",
        "since",
        "in",
        "on",
        "for",
        "ago",
        "now",
        "past",
        "previous",
        "coming",
        "over",
        "week",
        "weeks",
        "weekend",
        "weekends",
        "month",
        "months",
        "year",
        "years",
        "day",
        "days",
        "decade",
        "decades",
        "before",
        "after",
        "other",
        "earlier",
        "later",
        "today",
        "tonight",
        "yesterday",
        "tomorrow",
        "morning",
        "afternoon",
        "evening",
        "night",
        "just",
        "recently",
        "lately",
        "currently",
        "nowadays",
        "right",
        "at",
        "moment",
        "present",
        "these",
        "not",
        "long",
        "May",
        "may",
        "june",
        "March",
        "sept",
        "Sat",
        "sat",
        "Saturday",
        "monday's",
        "wed",
        "2016",
        "1999",
        "8th",
        "31",
        "3",
        "two",
        "twenty",
        "2023-05-08",
        "early",
        "mid",
        "late",
        "90s",
        "'80s",
        "nineties",
        "from",
        "to",
        "until",
        "till",
        "through",
        "between",
        "and",
        "by",
        "during",
        "about",
        "almost",
        "around",
        "nearly",
        "roughly",
        "spring",
        "summer",
        "got",
        "finished",
        "went",
        "will",
        "was",
        "every",
        "black",
        "we",
        "it",
        ",",
        "-",
        ".",
    ];

    /// No sequence of up to three words of the lexicon that holds no
    /// anchor is an expression (every multi-word pattern without a unit,
    /// day, weekday, month or digit would be found here: "not long ago"
    /// once "ago" is left out of the anchors).
    /// Skipping a text none of whose carried words is an anchor changes
    /// nothing: every sentence of every LoCoMo turn (after the sentences
    /// before it in the turn, for "that Saturday"), under each resolver,
    /// at a mention with and without an offset, resolves the same with its
    /// words given as without, and has the same expressions.
    #[test]
    fn a_text_without_anchor_words_resolves_to_nothing_without_parsing() {
        let turns = crate::projector::heuristic::statements::tests::locomo_turns();
        let mentions = locomo_mentions();
        let (mut sentences, mut skipped) = (0, 0);
        for (_, text) in &turns {
            let analysis = strataflow_text::Analysis::of(text);
            for resolver in [Resolver::V1, Resolver::V2, Resolver::V3] {
                for at in mentions {
                    let mut earlier: Vec<TimeExpression> = Vec::new();
                    for s in &analysis.sentences {
                        let sentence = s.text(text);
                        let words = s.word_list();
                        let with = resolve_best_after_words(
                            sentence,
                            Some(&words),
                            &earlier,
                            at,
                            resolver,
                        );
                        let without = resolve_best_after(sentence, &earlier, at, resolver);
                        assert_eq!(with, without, "{sentence:?} under {resolver:?}");
                        assert_eq!(
                            find_time_expressions_after_words(sentence, Some(&words), at),
                            find_time_expressions(sentence, at),
                            "{sentence:?}"
                        );
                        assert_eq!(
                            has_time_expression_after_words(sentence, Some(&words), at),
                            !find_time_expressions(sentence, at).is_empty(),
                            "{sentence:?}"
                        );
                        skipped += usize::from(!s.words().any(is_anchor));
                        sentences += 1;
                        earlier.extend(without);
                    }
                }
            }
        }
        assert!(sentences > 10_000, "{sentences} sentences");
        assert!(skipped * 3 > sentences, "{skipped} of {sentences} skipped");
    }

    /// Every word a parser opens with is a starter: the triggers, the
    /// tables' first words and the counts.
    #[test]
    fn starters_hold_the_words_the_parsers_open_with() {
        let starts = |w: &str| is_anchor(w) || STARTERS.contains(w);
        for w in MONTH_TRIGGERS
            .iter()
            .chain(YEAR_TRIGGERS)
            .chain(REL_DAY_FIRSTS)
            .chain(REL_PERIOD_FIRSTS)
            .chain(&[
                "from", "between", "early", "mid", "late", "earlier", "later", "since",
            ])
            .chain(&[
                "just",
                "recently",
                "lately",
                "not",
                "currently",
                "nowadays",
                "right",
            ])
            .chain(&[
                "at", "these", "for", "over", "during", "the", "a", "an", "couple", "few",
            ])
        {
            assert!(starts(w), "{w}");
        }
        let units = ["", "ty", "teen"];
        let stems = [
            "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
            "eleven", "twelve", "thir", "fif", "twen", "for", "eigh", "hundred", "dozen",
        ];
        for stem in stems {
            for unit in units {
                let w = format!("{stem}{unit}");
                if number_word(&w).is_some() {
                    assert!(starts(&w), "{w}");
                }
            }
        }
    }

    /// The mentions the LoCoMo sentences are read at: one in UTC, one
    /// with an offset that puts its local day before the UTC one.
    fn locomo_mentions() -> [SourceTime; 2] {
        [
            mention("2023-05-08T13:56:00Z"),
            mention("2023-05-08T23:56:00-07:00"),
        ]
    }

    /// Trying the parsers only where [`Ctx::may_start`] holds finds what
    /// trying them at every token finds: every sentence of every LoCoMo
    /// turn, under each resolver, at a mention with and without an offset.
    #[test]
    fn parsers_tried_only_at_starters_find_what_every_token_finds() {
        let turns = crate::projector::heuristic::statements::tests::locomo_turns();
        let mentions = locomo_mentions();
        let (mut found, mut sentences) = (0, 0);
        for (_, text) in &turns {
            for s in &strataflow_text::Analysis::of(text).sentences {
                let sentence = s.text(text);
                if !s.words().any(is_anchor) {
                    continue;
                }
                for resolver in [Resolver::V1, Resolver::V2, Resolver::V3] {
                    for at in mentions {
                        let every =
                            find_from(sentence, tokenize(sentence), at, resolver, |_, _| true);
                        let some =
                            find_from(sentence, tokenize(sentence), at, resolver, Ctx::may_start);
                        assert_eq!(some, every, "{sentence:?} under {resolver:?}");
                        found += usize::from(!every.is_empty());
                        sentences += 1;
                    }
                }
            }
        }
        assert!(sentences > 1_000 && found > 500, "{found} of {sentences}");
    }

    /// Each table's list of first words is exactly the first words of its
    /// entries, so skipping a token that is none of them skips nothing.
    #[test]
    fn the_first_words_of_each_table_are_listed() {
        fn firsts<T>(table: Table<T>) -> std::collections::BTreeSet<&'static str> {
            table
                .iter()
                .filter_map(|(words, _)| words.first().copied())
                .collect()
        }
        for (listed, table) in [
            (REL_DAY_FIRSTS, firsts(REL_DAYS)),
            (REL_PERIOD_FIRSTS, firsts(REL_PERIODS)),
        ] {
            assert_eq!(
                listed
                    .iter()
                    .copied()
                    .collect::<std::collections::BTreeSet<_>>(),
                table
            );
            assert_eq!(listed.len(), table.len(), "no word listed twice");
        }
    }

    /// The first form of [`is_anchor`]: the parsers' own word tests.
    fn is_anchor_by_parsers(w: &str) -> bool {
        w.bytes().any(|b| b.is_ascii_digit())
            || unit_of(w).is_some()
            || weekday_any(w).is_some()
            || month_any(w).is_some()
            || matches!(
                w,
                "ago"
                    | "today"
                    | "tonight"
                    | "yesterday"
                    | "tomorrow"
                    | "morning"
                    | "afternoon"
                    | "evening"
                    | "night"
                    | "sixties"
                    | "seventies"
                    | "eighties"
                    | "nineties"
                    | "just"
                    | "recently"
                    | "lately"
                    | "currently"
                    | "nowadays"
                    | "now"
                    | "moment"
                    | "present"
            )
    }

    /// Every listed word is read by a parser, and every word of the LoCoMo
    /// turns (and each listed word with a letter more or less) is an
    /// anchor exactly when the parsers read it.
    #[test]
    fn anchor_words_are_what_the_parsers_read() {
        for w in ANCHOR_WORDS.words() {
            assert!(ANCHOR_LENGTHS.contains(&w.len()), "{w}");
            assert!(is_anchor_by_parsers(w), "{w}");
            for probe in [
                format!("{w}s"),
                format!("x{w}"),
                w[1..].to_owned(),
                format!("{w}'s"),
            ] {
                assert_eq!(is_anchor(&probe), is_anchor_by_parsers(&probe), "{probe}");
            }
        }
        let mut words = 0;
        for (_, text) in crate::projector::heuristic::statements::tests::locomo_turns() {
            for t in strataflow_text::tokens::words(&text) {
                let w = t.folded();
                assert_eq!(is_anchor(&w), is_anchor_by_parsers(&w), "{w}");
                words += 1;
            }
        }
        assert!(words > 10_000, "{words} words");
    }

    proptest::proptest! {
        #[test]
        fn anchors_are_what_the_parsers_read(w in "[a-z0-9'’]{0,12}") {
            proptest::prop_assert_eq!(is_anchor(&w), is_anchor_by_parsers(&w));
        }
    }

    #[test]
    fn anchors_are_necessary_in_short_phrases() {
        let at = mention("2023-05-08T13:56:00Z");
        let plain: Vec<&str> = LEXICON
            .iter()
            .copied()
            .filter(|w| !tokenize(w).iter().any(|t| is_anchor(&t.lower)))
            .collect();
        let mut phrases = 0;
        for a in &plain {
            for b in std::iter::once(&"").chain(&plain) {
                for c in std::iter::once(&"").chain(&plain) {
                    let text = format!("{a} {b} {c}");
                    assert_eq!(unfiltered(&text, at), Vec::new(), "{text:?}");
                    phrases += 1;
                }
            }
        }
        assert!(phrases > 100_000, "{phrases} phrases");
    }

    #[test]
    fn anchors_are_necessary_on_locomo() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/locomo");
        let at = [
            mention("2023-05-08T13:56:00Z"),
            mention("2023-05-08T13:56:00+02:00"),
        ];
        let mut texts = 0;
        for file in ["conv-26.json", "conv-30.json"] {
            let raw = std::fs::read_to_string(dir.join(file)).expect("LoCoMo fixture");
            let doc: serde_json::Value = serde_json::from_str(&raw).expect("LoCoMo JSON");
            let sessions = doc.as_object().into_iter().flatten();
            for turn in sessions.filter_map(|(_, v)| v.as_array()).flatten() {
                let Some(text) = turn.get("text").and_then(|t| t.as_str()) else {
                    continue;
                };
                for when in at {
                    assert_eq!(
                        find_uncached(text, when, Resolver::V1),
                        unfiltered(text, when),
                        "{text:?}"
                    );
                }
                texts += 1;
            }
        }
        assert!(texts > 500, "read {texts} turns");
    }

    /// The tokenizer of this module before it moved to the text crate.
    fn tokenize_before_the_move(text: &str) -> Vec<(usize, usize, String, bool)> {
        let mut toks = Vec::new();
        let mut cur: Option<(usize, usize, String, bool)> = None;
        let mut chars = text.char_indices().peekable();
        while let Some((idx, c)) = chars.next() {
            let apostrophe = c == '\'' || c == '\u{2019}';
            if c.is_alphanumeric() {
                let t = cur.get_or_insert_with(|| (idx, idx, String::new(), c.is_uppercase()));
                crate::text::push_lowercase(&mut t.2, c);
                t.1 = idx + c.len_utf8();
            } else if apostrophe
                && cur.is_some()
                && chars.peek().is_some_and(|(_, n)| n.is_alphanumeric())
            {
                if let Some(t) = cur.as_mut() {
                    t.2.push('\'');
                    t.1 = idx + c.len_utf8();
                }
            } else if let Some(t) = cur.take() {
                toks.push(t);
            }
        }
        toks.extend(cur);
        toks
    }

    proptest::proptest! {
        #[test]
        fn tokens_are_unchanged_by_the_move(text in "[a-zA-Z0-9 '’.,:İÉé-]{0,40}|\\PC{0,40}") {
            let now: Vec<_> = tokenize(&text).into_iter().map(|t| (t.start, t.end, t.lower.into_owned(), t.cap)).collect();
            proptest::prop_assert_eq!(now, tokenize_before_the_move(&text));
        }
    }

    proptest::proptest! {
        /// The tense of a text's folded words is the text's.
        #[test]
        fn the_tense_of_the_folded_words_is_the_texts(
            words in proptest::collection::vec(
                proptest::sample::select(
                    [
                        LEXICON,
                        &["will", "We'll", "going", "to", "gonna", "plan", "planning", "can't",
                          "wait", "coming", "upcoming", "went", "was", "Used", "celebrated",
                          "day", "I’m", "tomorrow", "see", "you"],
                    ]
                    .concat(),
                ),
                0..8,
            ),
            extra in "[a-zA-Z' ’.,]{0,12}",
        ) {
            let text = format!("{} {extra}", words.join(" "));
            proptest::prop_assert_eq!(
                tense_of_words(&crate::text::words(&text)),
                detect_tense(&text),
                "{}",
                text
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn anchors_are_necessary(words in proptest::collection::vec(proptest::sample::select(LEXICON.to_vec()), 0..8), ms in 0i64..4_000_000_000_000i64) {
            let text = words.join(" ");
            let at = SourceTime::utc_without_offset(ms);
            proptest::prop_assert_eq!(find_uncached(&text, at, Resolver::V1), unfiltered(&text, at), "{}", text);
        }

        #[test]
        fn never_panics_and_spans_are_sane(text in "\\PC{0,80}", ms in -10_000_000_000_000i64..10_000_000_000_000i64, off in proptest::option::of(-840i16..=840)) {
            let found = find_time_expressions(&text, SourceTime { utc_ms: ms, offset_minutes: off });
            let mut last_end = 0;
            for e in &found {
                proptest::prop_assert!(e.start >= last_end && e.start < e.end);
                proptest::prop_assert_eq!(text.get(e.start..e.end), Some(e.text.as_str()));
                proptest::prop_assert!(e.happened_start <= e.happened_end);
                last_end = e.end;
            }
        }

        /// The summarizer's question, "is there a time expression", stops
        /// at the first candidate and answers as the whole find does.
        #[test]
        fn has_time_expression_is_a_nonempty_find(
            words in proptest::collection::vec(proptest::sample::select(vec![
                "last", "next", "this", "the", "a", "few", "couple", "of", "since", "in", "on",
                "for", "ago", "now", "past", "week", "weekend", "month", "year", "days", "by",
                "May", "june", "Saturday", "sat", "2016", "8th", "31", "just", "got", "2023-05-08",
                "early", "mid", "late", "90s", "from", "to", "yesterday", "tomorrow", ",", "-",
                "I", "went", "will", "was", "that", "day", "morning", "every", "until",
            ]), 0..12),
            ms in -10_000_000_000_000i64..10_000_000_000_000i64,
            off in proptest::option::of(-840i16..=840),
        ) {
            let text = words.join(" ");
            let at = SourceTime { utc_ms: ms, offset_minutes: off };
            let folded: Vec<String> = strataflow_text::tokens::words(&text)
                .iter()
                .map(strataflow_text::Token::folded)
                .collect();
            let folded: Vec<&str> = folded.iter().map(String::as_str).collect();
            let found = !find_time_expressions(&text, at).is_empty();
            proptest::prop_assert_eq!(has_time_expression_after_words(&text, None, at), found, "{}", text);
            proptest::prop_assert_eq!(has_time_expression_after_words(&text, Some(&folded), at), found, "{}", text);
        }

        /// Word soups of the parsers' words, under each resolver: the
        /// starters' filter finds what every token finds.
        #[test]
        fn starters_find_what_every_token_finds_in_soups(
            words in proptest::collection::vec(proptest::sample::select([
                LEXICON,
                &["since", "between", "from", "to", "and", "until", "by", "before", "early",
                  "mid", "late", "earlier", "later", "just", "now", "recently", "not", "long",
                  "right", "at", "moment", "present", "these", "days", "for", "about", "over",
                  "during", "in", "on", "of", "couple", "few", "three", "twenty", "8th", "31",
                  "2016", "90s", "May", "june", "Saturday", "sat", "weekend", "-", "got",
                  "went", "have", "been", "every", "year", "that", "day", "I"],
            ].concat()), 0..10),
            ms in 0i64..4_000_000_000_000i64,
            off in proptest::option::of(-840i16..=840),
        ) {
            let text = words.join(" ");
            let at = SourceTime { utc_ms: ms, offset_minutes: off };
            for resolver in [Resolver::V1, Resolver::V2, Resolver::V3] {
                let every = find_from(&text, tokenize(&text), at, resolver, |_, _| true);
                let some = find_from(&text, tokenize(&text), at, resolver, Ctx::may_start);
                proptest::prop_assert_eq!(some, every, "{} under {:?}", text, resolver);
            }
        }

        #[test]
        fn word_soup_never_panics(words in proptest::collection::vec(proptest::sample::select(vec![
            "last", "next", "this", "the", "a", "few", "couple", "of", "since", "in", "on", "for",
            "ago", "now", "past", "week", "weekend", "month", "year", "days", "before", "after",
            "May", "june", "Saturday", "sat", "2016", "8th", "31", "just", "got", "2023-05-08",
            "early", "mid", "late", "90s", "from", "to", "yesterday", "tomorrow", ",", "-",
        ]), 0..12)) {
            let text = words.join(" ");
            let found = find_time_expressions(&text, mention("2024-02-29T23:59:59Z"));
            for pair in found.windows(2) {
                proptest::prop_assert!(pair[0].end <= pair[1].start);
            }
        }
    }
}
