//! The heuristic projector `heuristic-projector@3` ([`HeuristicProjectorV3`]):
//! version 2's patterns, then statement patterns that turn what people say
//! about themselves and others into compact typed facts and edges. The code
//! of versions 1 and 2 is not touched: this module only adds.
//!
//! # What version 3 adds
//!
//! - **Values are noun phrases**: after all patterns ran, every fact value
//!   loses its trailing function words and pronouns (`on`, `with my`, `us`);
//!   a value that starts with a verb, an auxiliary or a pronoun (`was there
//!   to celebrate us`), or is left empty, is dropped.
//! - **Not places**: `LGBTQ`, `LGBT`, `Pride`, and any name right before a
//!   vehicle or venue word (`the Alfa Pendular train`, `Hotel …`).
//! - **Statement patterns** (subject as in version 2: `I`/`we` → the
//!   speaker, a known person's name → that person; see `PATTERNS`):
//!   activities (`attended|went to a X`, `ran|gave|took|did a X`), hobbies
//!   and learning (`learning|practicing|playing|taking up X`), study
//!   (`studying X`, `continue my education`), starts (`started X`), plans,
//!   goals and decisions (`planning|going|looking forward to V X`,
//!   `want|hope|aim|dream to V X`, `decided|chose to V X`), things being
//!   considered (`researching|considering|looking into X`), possessions and
//!   pets (`I have|got|bought|own a X`, `my dog NAME`), unnamed family and
//!   relations (`my kids`, `my husband`, `my friends`), health (`twisted her
//!   ankle`, `have a cold`), and for work chat teams (`on the NAME team [at
//!   ORG]`), responsibilities (`we own|build|maintain the X`), migrations as
//!   decisions (`migration from A to B`) and colleagues named in the thread
//!   (`Priya wants …`, `Priya will lead …`).
//!
//! Keys: `activities`, `hobbies`, `studies`, `started`, `plans`, `goals`,
//! `decisions`, `considering`, `possessions`, `pets`, `family`,
//! `relationships`, `health`, `responsibilities` (Set facts) and `team`,
//! `employer` (State facts: a new value closes the earlier one).

use std::collections::{BTreeMap, BTreeSet};

use strataflow_record::record::{Event, FactMode, GraphAssertion, NodeType, Occurrence};
use strataflow_record::{Digest, RecordId};

use super::{
    Builder, EventCtx, NAME, Sent, Splitter, is_tech_like, kin, match_identity, match_job_loss,
    match_kinship, match_org_suffix, match_places, match_preferences, match_projects, match_tools,
    match_work, normalize_name, with_normalized_word,
};
use crate::operator::{OperatorError, OperatorId, ProjectionInput, Projector, config_hash};
use crate::text::WordSet;

/// Version of [`HeuristicProjectorV3`].
pub const VERSION_3: u32 = 3;

/// The pattern classes of version 3, in the order they run.
pub const PATTERNS: &[&str] = &[
    "activities",
    "hobbies",
    "studies",
    "started",
    "plans",
    "considering",
    "possessions",
    "family",
    "health",
    "work",
    "colleagues",
];

/// The heuristic projector `heuristic-projector@3` (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicProjectorV3;

impl Projector for HeuristicProjectorV3 {
    fn id(&self) -> OperatorId {
        OperatorId::new(NAME, VERSION_3)
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &self.id(),
            r#"{"sentences":"strataflow-text","statements":1}"#,
        )
    }

    /// Fails only when an event of the batch belongs to another tenant.
    fn project(&self, input: &ProjectionInput<'_>) -> Result<Vec<GraphAssertion>, OperatorError> {
        project_batch(input, None)
    }
}

/// Patterns a later version runs after version 3's, per sentence, with the
/// count of facts and edges version 3's patterns found in it.
pub(super) type Extra = fn(&mut EventCtx, &mut Builder, &mut Sent, usize);

/// Version 3's projection of a batch, then `extra` on every sentence.
pub(super) fn project_batch(
    input: &ProjectionInput<'_>,
    extra: Option<Extra>,
) -> Result<Vec<GraphAssertion>, OperatorError> {
    project_batch_with(input, extra, true)
}

/// [`project_batch`]; with `skip`, a pattern is skipped on a sentence that
/// holds none of its trigger words (see [`MATCHERS`]), which changes
/// nothing but the time taken (the tests compare both).
fn project_batch_with(
    input: &ProjectionInput<'_>,
    extra: Option<Extra>,
    skip: bool,
) -> Result<Vec<GraphAssertion>, OperatorError> {
    let mut builder = Builder::default();
    let mut seen = BTreeSet::new();
    for (id, event) in input.events {
        if event.tenant != input.tenant {
            return Err(OperatorError::Failed(format!(
                "event {id} belongs to tenant `{}`, not to `{}`",
                event.tenant, input.tenant
            )));
        }
    }
    // Names before a vehicle or venue word anywhere in the batch.
    // Each event's sentences, split and tokenised once for both passes.
    let mut vehicles: BTreeSet<String> = NOT_PLACES.iter().map(|w| (*w).to_owned()).collect();
    let mut split: Vec<Vec<Sent>> = Vec::with_capacity(input.events.len());
    for (_, event) in input.events {
        let sents: Vec<Sent> = event
            .quotes
            .iter()
            .flat_map(|q| Splitter::Shared.sentences(q))
            .collect();
        for s in &sents {
            mark_vehicles(&mut vehicles, s);
        }
        split.push(sents);
    }
    for ((id, event), sents) in input.events.iter().zip(split) {
        if seen.insert(*id) {
            project_event(*id, event, sents, &vehicles, &mut builder, extra, skip);
        }
    }
    clean_values(&mut builder);
    if extra.is_some() {
        super::clauses::drop_thin_facts(&mut builder);
    }
    let batch: Vec<RecordId> = seen.into_iter().collect();
    let out = builder.finish(input.tenant);
    Ok(crate::validate::assertions(&batch, out))
}

// ---------------------------------------------------------------------------
// Word lists.

/// Words a value never ends on: function words and pronouns.
#[rustfmt::skip]
pub const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "nor", "so", "yet", "of", "on", "in", "at", "to", "for",
    "from", "with", "without", "by", "about", "into", "onto", "over", "under", "up", "down", "out",
    "off", "as", "than", "like", "if", "because", "when", "while", "that", "which", "who", "whom",
    "whose", "what", "this", "these", "those", "there", "here", "is", "are", "was", "were", "be",
    "been", "being", "am", "do", "does", "did", "have", "has", "had", "will", "would", "can",
    "could", "should", "may", "might", "must", "not", "no", "very", "really", "just", "too",
    "also", "i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours", "he",
    "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs", "myself",
    "yourself", "herself", "himself", "itself", "ourselves", "themselves", "i'm", "it's", "some",
    "any", "all", "every", "each", "such", "much", "more", "most", "lot", "lots", "both",
    "either", "neither", "other", "another", "again", "now", "then", "soon", "even", "still",
    "ever", "never", "always", "around", "through", "after", "before", "since", "until", "though",
    "although", "whether", "how", "why", "where", "one", "ones", "thing", "things", "stuff",
    "kind", "sort", "bit", "way", "get", "got", "go", "make", "let", "lol", "haha",
];

/// [`FUNCTION_WORDS`] for look-ups.
pub(super) static FUNCTION_WORD_SET: WordSet = WordSet::classed(2, FUNCTION_WORDS);

/// Words a value never starts with (verbs and auxiliaries of a clause).
#[rustfmt::skip]
static BAD_STARTS: WordSet = WordSet::new(&[
    "was", "were", "is", "are", "am", "be", "been", "being", "has", "have", "had", "do", "does",
    "did", "will", "would", "can", "could", "should", "may", "might", "must", "get", "got", "go",
    "going", "gonna", "there", "here", "that", "this", "it", "what", "how", "why", "when",
    "where", "who", "which", "so", "very", "too", "not", "no", "on", "in", "at", "to", "for",
    "with", "from", "by", "of", "about", "few", "thinking", "looking", "seeing", "feeling",
    "getting", "trying", "doing", "caring", "huge", "first", "step", "tell", "pass",
]);

/// Units of a trailing duration dropped from a value (`three years`).
const DURATIONS: &[&str] = &[
    "minutes", "hours", "days", "weeks", "months", "years", "minute", "hour", "day", "week",
    "month", "year", "ago",
];

/// Words that end a noun phrase.
#[rustfmt::skip]
pub(super) static NP_END: WordSet = WordSet::classed(3, &[
    "and", "or", "but", "so", "because", "when", "while", "if", "that", "which", "who", "since",
    "until", "after", "before", "to", "for", "with", "from", "at", "in", "on", "by", "about",
    "as", "like", "than", "is", "are", "was", "were", "will", "would", "can", "could", "has",
    "have", "had", "i", "i'm", "we", "you", "he", "she", "they", "it", "it's", "yesterday",
    "today", "tomorrow", "tonight", "now", "recently", "lately", "again", "too", "last", "next",
    "this", "really", "so", "soon", "anymore", "though", "lol", "haha", "since", "ago", "every",
    "also", "there", "here", "then", "yet", "already", "just", "instead", "named", "called",
]);

/// Determiners skipped at the start of a noun phrase.
const DETERMINERS: &[&str] = &[
    "a", "an", "the", "my", "our", "some", "this", "these", "those", "his", "her", "their", "new",
];

/// Names that are never places.
const NOT_PLACES: &[&str] = &["lgbtq", "lgbt", "lgbtq+", "pride", "trans", "lgbtqia"];

/// Words after a name that make it a vehicle or venue, not a place.
const VEHICLES: &[&str] = &[
    "train",
    "trains",
    "bus",
    "ferry",
    "flight",
    "tram",
    "museum",
    "hotel",
    "restaurant",
    "app",
    "team",
    "project",
    "pipeline",
    "table",
];

/// Pets.
const PETS: &[&str] = &[
    "dog", "dogs", "cat", "cats", "puppy", "kitten", "bird", "parrot", "hamster", "horse",
    "rabbit", "bunny", "fish", "turtle", "guinea", "pup", "pet", "pets",
];

/// Unnamed relatives and relations after `my`.
const RELATIVES: &[(&str, &str, &str)] = &[
    ("kids", "family", "kids"),
    ("children", "family", "kids"),
    ("kid", "family", "kid"),
    ("child", "family", "kid"),
    ("family", "family", "family"),
    ("fam", "family", "family"),
    ("parents", "family", "parents"),
    ("siblings", "family", "siblings"),
    ("grandkids", "family", "grandchildren"),
    ("friends", "relationships", "friends"),
    ("mentors", "relationships", "mentors"),
    ("colleagues", "relationships", "colleagues"),
    ("coworkers", "relationships", "colleagues"),
    ("team", "relationships", "team"),
];

/// Whether a word is one of [`RELATIVES`] (`kids`, `family`, `friends`).
pub(super) fn is_relative(word: &str) -> bool {
    RELATIVES.iter().any(|(w, _, _)| *w == word)
}

/// Health words: conditions after `have|had|got a` and body injuries.
const CONDITIONS: &[&str] = &[
    "cold",
    "flu",
    "fever",
    "cough",
    "headache",
    "migraine",
    "injury",
    "infection",
    "surgery",
    "operation",
    "concussion",
    "allergy",
    "allergies",
    "asthma",
    "diabetes",
    "cancer",
    "depression",
    "anxiety",
    "covid",
    "virus",
    "sprain",
    "fracture",
];
const INJURIES: &[&str] = &[
    "hurt",
    "injured",
    "broke",
    "twisted",
    "sprained",
    "pulled",
    "strained",
    "bruised",
    "cut",
    "fractured",
];

/// Verbs of colleagues named in a thread (`Priya wants …`).
const NAMED_VERBS: &[&str] = &[
    "wants",
    "will",
    "said",
    "told",
    "asked",
    "leads",
    "recommended",
    "offered",
    "suggested",
    "approved",
    "owns",
    "manages",
    "needs",
    "thinks",
];

// ---------------------------------------------------------------------------
// Values.

/// A value cut to a noun phrase: trailing function words and pronouns
/// dropped; `None` when nothing is left or it starts with a verb, an
/// auxiliary or a pronoun.
pub fn clean_value(value: &str) -> Option<String> {
    let mut words: Vec<&str> = value.split_whitespace().collect();
    while let Some(last) = words.last() {
        if with_normalized_word(last, |l| l.is_empty() || FUNCTION_WORD_SET.contains(l)) {
            words.pop();
        } else {
            break;
        }
    }
    // A trailing duration (`transitioning three years`).
    if words.len() > 2
        && words
            .last()
            .is_some_and(|w| with_normalized_word(w, |l| DURATIONS.contains(&l)))
    {
        words.truncate(words.len() - 2);
    }
    let single = words.len() == 1;
    if with_normalized_word(words.first()?, |first| {
        BAD_STARTS.contains(first) || (single && FUNCTION_WORD_SET.contains(first))
    }) {
        return None;
    }
    let out = words.join(" ");
    let out = out.trim_end_matches([',', ';', ':', '-']).to_owned();
    (!out.is_empty()).then_some(out)
}

fn clean_values(b: &mut Builder) {
    for acc in b.nodes.values_mut() {
        for fact in &mut acc.facts {
            let values: Vec<String> = fact.values.iter().filter_map(|v| clean_value(v)).collect();
            fact.values = values;
        }
        acc.facts.retain(|f| !f.values.is_empty());
    }
}

/// A noun phrase at `i`: determiners skipped, then up to `max` words
/// before a phrase end or punctuation; with the index after it.
fn np_at(s: &Sent, i: usize, max: usize) -> Option<(usize, String)> {
    let mut k = i;
    while s.is_any(k, DETERMINERS) {
        k += 1;
    }
    let mut words: Vec<String> = Vec::new();
    while words.len() < max {
        match s.tok(k) {
            Some(t) if t.word && !t.is_any(&NP_END) => {
                // `of` joins two nouns (`a collection of books`).
                if t.lower() == "of" && words.is_empty() {
                    break;
                }
                words.push(if t.is_name_word() {
                    t.text.clone().into_owned()
                } else {
                    t.lower().to_owned()
                });
                k += 1;
            }
            Some(t) if t.word && t.lower() == "of" && !words.is_empty() => {
                words.push("of".to_owned());
                k += 1;
            }
            _ => break,
        }
    }
    let value = clean_value(&words.join(" "))?;
    Some((k, value))
}

/// `VERB X` at `i` for a plan or goal (`continue my education`).
fn verb_np_at(s: &Sent, i: usize) -> Option<String> {
    let verb = s.tok(i).filter(|t| t.word && !t.is_any(&NP_END))?;
    if verb.is_any(&FUNCTION_WORD_SET) {
        return None;
    }
    np_at(s, i + 1, 4).map(|(_, np)| format!("{} {np}", verb.lower()))
}

/// The subject of the verb at `i` when it is a person (the speaker or a
/// known person); the first person counts only when `I`/`we` is written.
fn subject(ctx: &EventCtx, s: &Sent, i: usize) -> Option<super::Key> {
    ctx.subject(s, i)
}

// ---------------------------------------------------------------------------
// One event.

fn project_event(
    id: RecordId,
    event: &Event,
    mut sents: Vec<Sent>,
    vehicles: &BTreeSet<String>,
    b: &mut Builder,
    extra: Option<Extra>,
    skip: bool,
) {
    let t = &event.temporal;
    let mentioned = Some(t.mentioned_at.instant());
    let time = if t.status == Occurrence::Planned {
        mentioned
    } else {
        t.happened_start.or(mentioned)
    };
    let mut ctx = EventCtx {
        id,
        time,
        status: t.status,
        speaker: None,
        persons: BTreeMap::new(),
        non_places: super::NonPlaces::over(vehicles),
    };
    ctx.add_participants(b, &t.participants);
    if extra.is_some() {
        sents.retain(|s| !super::clauses::addressed_to_listener(s));
    }
    let triggered: Vec<u32> = sents.iter().map(triggered_matchers).collect();
    let mut found = vec![0_usize; sents.len()];
    for (k, (matcher, triggers)) in MATCHERS.iter().enumerate() {
        let bit = 1_u32 << k;
        for ((s, n), mask) in sents.iter_mut().zip(found.iter_mut()).zip(&triggered) {
            if skip && triggers.is_some() && mask & bit == 0 {
                continue;
            }
            let before = b.found;
            matcher(&mut ctx, b, s);
            *n += b.found - before;
        }
    }
    if let Some(extra) = extra {
        for (s, n) in sents.iter_mut().zip(found) {
            extra(&mut ctx, b, s, n);
        }
    }
}

/// A pattern of version 3 and, when it reads nothing in a sentence that
/// holds none of them, its trigger words.
type Matcher = (
    fn(&mut EventCtx, &mut Builder, &mut Sent),
    Option<&'static [&'static str]>,
);

/// Version 3's patterns, in the order they run (each on every sentence
/// before the next). A pattern with trigger words starts from one of them
/// (its first test on a token is one of these words, and it changes
/// nothing before), or, for version 1's preferences, states a fact or
/// claims a token only in a sentence that holds one; so it is skipped on a
/// sentence that holds none: the same facts, edges and claims, without the
/// walk (`skipping_untriggered_patterns_changes_nothing` checks).
const MATCHERS: [Matcher; 21] = [
    (match_colleagues, Some(NAMED_VERBS)),
    (match_kinship, Some(&["my", "our"])),
    (
        match_job_loss,
        Some(&["lost", "quit", "left", "laid", "fired"]),
    ),
    // `on the NAME team`: nothing happens before `team` is found.
    (match_team, Some(&["team"])),
    (
        match_work,
        Some(&[
            "work",
            "works",
            "working",
            "worked",
            "job",
            "employed",
            "hired",
            "intern",
            "interning",
            "joined",
            "join",
            "joins",
            "joining",
            "study",
            "studies",
            "studying",
            "studied",
        ]),
    ),
    // Every fact it states needs one of its verbs (`love`, `can't stand`,
    // `into`, `a fan of` …); it claims nothing before.
    (
        match_preferences,
        Some(&[
            "love", "like", "enjoy", "prefer", "adore", "hate", "dislike", "detest", "despise",
            "loathe", "stand", "loves", "likes", "enjoys", "prefers", "adores", "hates",
            "dislikes", "detests", "despises", "into", "fan",
        ]),
    ),
    // From `i'm`, `im` or `i am`.
    (match_identity, Some(&["i'm", "im", "i"])),
    (
        match_org_suffix,
        Some(&["at", "for", "join", "joined", "from", "with", "by"]),
    ),
    (
        match_projects,
        Some(&["project", "work", "works", "working", "worked"]),
    ),
    (
        match_migration,
        Some(&[
            "migration",
            "switch",
            "move",
            "transition",
            "migrating",
            "moving",
        ]),
    ),
    (
        match_tools,
        Some(&[
            "use",
            "uses",
            "used",
            "using",
            "move",
            "moved",
            "moving",
            "moves",
            "switch",
            "switched",
            "switching",
            "switches",
            "migrate",
            "migrated",
            "migrating",
            "migrates",
            "upgrade",
            "upgraded",
            "upgrading",
            "port",
            "ported",
            "porting",
            "transitioned",
            "transitioning",
        ]),
    ),
    (
        match_places,
        Some(&[
            "in",
            "to",
            "from",
            "at",
            "around",
            "visited",
            "visit",
            "visiting",
            "visits",
            "toured",
            "touring",
            "explored",
            "exploring",
        ]),
    ),
    (
        match_activities,
        Some(&[
            "attended",
            "attend",
            "attending",
            "joined",
            "visited",
            "went",
            "go",
            "going",
            "ran",
            "gave",
            "took",
            "did",
            "hosted",
            "organized",
            "volunteered",
            "participated",
            "made",
            "painted",
            "wrote",
            "played",
            "finished",
            "won",
        ]),
    ),
    (
        match_hobbies,
        Some(&[
            "learning",
            "practicing",
            "practising",
            "playing",
            "learn",
            "taking",
            "took",
            "picked",
            "studying",
            "study",
            "studied",
            "majoring",
            "education",
            "degree",
            "studies",
        ]),
    ),
    (match_started, Some(&["started", "began", "start", "begun"])),
    (
        match_plans,
        Some(&[
            "planning",
            "plan",
            "plans",
            "going",
            "intend",
            "intending",
            "forward",
            "want",
            "wants",
            "wanted",
            "hope",
            "hoping",
            "aim",
            "aims",
            "dream",
            "dreams",
            "goal",
            "decided",
            "chose",
            "agreed",
        ]),
    ),
    (
        match_considering,
        Some(&[
            "researching",
            "considering",
            "exploring",
            "looking",
            "thinking",
        ]),
    ),
    (
        match_possessions,
        Some(&[
            "my", "our", "have", "has", "got", "bought", "own", "owns", "received", "adopted",
        ]),
    ),
    (match_family, Some(&["my", "our"])),
    (
        match_health,
        Some(&[
            "hurt",
            "injured",
            "broke",
            "twisted",
            "sprained",
            "pulled",
            "strained",
            "bruised",
            "cut",
            "fractured",
            "have",
            "has",
            "had",
            "got",
            "caught",
            "with",
            "from",
            "sick",
            "ill",
            "pregnant",
        ]),
    ),
    (
        match_responsibilities,
        Some(&["own", "maintain", "build", "run", "manage", "lead"]),
    ),
];

// A token's triggers are 32 bits, one per pattern.
const _: () = assert!(MATCHERS.len() <= 32);

/// Every trigger word of [`MATCHERS`], with the index of its pattern (all
/// are short enough to pack: a test checks). Each token carries the bits of
/// the patterns its word triggers, found with its classes.
pub(super) fn trigger_words() -> impl Iterator<Item = (&'static str, usize)> {
    MATCHERS
        .iter()
        .enumerate()
        .flat_map(|(k, (_, triggers))| triggers.iter().flat_map(|t| t.iter()).map(move |w| (*w, k)))
}

/// The bits of the patterns of [`MATCHERS`] one of whose trigger words the
/// sentence holds.
fn triggered_matchers(s: &Sent) -> u32 {
    s.toks
        .iter()
        .filter(|t| t.word)
        .fold(0, |mask, t| mask | t.triggers)
}

/// Names before a vehicle or venue word are no places.
fn mark_vehicles(out: &mut BTreeSet<String>, s: &Sent) {
    for i in 0..s.len() {
        if let Some(n) = s.any_name_at(i, 3) {
            let on_the = s.is(i.wrapping_sub(1), "the")
                && s.is_any(i.wrapping_sub(2), &["around", "on", "aboard", "board"]);
            if s.is_any(n.end, VEHICLES) || s.is(i.wrapping_sub(1), "hotel") || on_the {
                out.insert(normalize_name(&n.text));
            }
        }
    }
}

fn set_fact(ctx: &EventCtx, b: &mut Builder, who: Option<super::Key>, key: &str, value: String) {
    if let Some(who) = who {
        ctx.fact(b, &who, key, vec![value], FactMode::Set);
    }
}

// ---------------------------------------------------------------------------
// The patterns.

/// `attended|went to a X`, `ran|gave|took|did|hosted a X`.
fn match_activities(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let w = s.lower(i);
        let (at, verb) = match w {
            "attended" | "attend" | "attending" | "joined" | "visited" => (i + 1, "attended"),
            "went" | "go" | "going"
                if s.is(i + 1, "to") && s.is_any(i + 2, &["a", "an", "the", "my", "this"]) =>
            {
                (i + 2, "went to")
            }
            "ran" | "gave" | "took" | "did" | "hosted" | "organized" | "volunteered"
            | "participated" | "made" | "painted" | "wrote" | "played" | "finished" | "won" => {
                (i + 1, w)
            }
            _ => continue,
        };
        if s.negated(i)
            || !s.is_any(
                at,
                &[
                    "a", "an", "the", "my", "our", "some", "this", "in", "at", "for",
                ],
            )
        {
            continue;
        }
        let at = if s.is_any(at, &["in", "at", "for"]) {
            at + 1
        } else {
            at
        };
        let Some((_, np)) = np_at(s, at, 4) else {
            continue;
        };
        let who = subject(ctx, s, i);
        let value = if verb == "attended" || verb == "went to" {
            np
        } else {
            format!("{verb} {np}")
        };
        let key = if verb == "attended" || verb == "went to" {
            "attended"
        } else {
            "activities"
        };
        set_fact(ctx, b, who, key, value);
    }
}

/// `learning|practicing|playing|taking up X` → hobbies; `studying X` →
/// studies; `continue my education` → studies.
fn match_hobbies(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let w = s.lower(i);
        let (key, at) = match w {
            "learning" | "practicing" | "practising" | "playing" | "learn" => ("hobbies", i + 1),
            "taking" | "took" | "picked" if s.is(i + 1, "up") => ("hobbies", i + 2),
            "studying" | "study" | "studied" | "majoring" => {
                ("studies", if s.is(i + 1, "in") { i + 2 } else { i + 1 })
            }
            "education" | "degree" | "studies"
                if s.is_any(i.wrapping_sub(1), &["my", "her", "his"]) =>
            {
                let who = subject(ctx, s, i);
                set_fact(ctx, b, who, "studies", w.to_owned());
                continue;
            }
            _ => continue,
        };
        if s.negated(i) || s.is_any(at, &["to", "with", "about", "at"]) {
            continue;
        }
        let Some((_, np)) = np_at(s, at, 3) else {
            continue;
        };
        let who = subject(ctx, s, i);
        set_fact(ctx, b, who, key, np);
    }
}

/// `started|began X` (`started transitioning`).
fn match_started(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.is_any(i, &["started", "began", "start", "begun"]) || s.negated(i) {
            continue;
        }
        let at = if s.is(i + 1, "to") { i + 2 } else { i + 1 };
        let Some((_, np)) = np_at(s, at, 3) else {
            continue;
        };
        let who = subject(ctx, s, i);
        set_fact(ctx, b, who, "started", np);
    }
}

/// Plans, goals and decisions: `planning|going|looking forward to V X`,
/// `want|hope|aim|dream to V X`, `decided|chose to V X`.
fn match_plans(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let w = s.lower(i);
        let key = match w {
            "planning" | "plan" | "plans" | "going" | "intend" | "intending" => "plans",
            "forward" if s.is(i.wrapping_sub(1), "looking") || s.is(i.wrapping_sub(1), "look") => {
                "plans"
            }
            "want" | "wants" | "wanted" | "hope" | "hoping" | "aim" | "aims" | "dream"
            | "dreams" | "goal" => "goals",
            "decided" | "chose" | "agreed" => "decisions",
            _ => continue,
        };
        if !s.is(i + 1, "to") || s.negated(i) {
            continue;
        }
        let v = i + 2;
        let value = if s.tok(v).is_some_and(|t| t.lower().ends_with("ing"))
            || key == "plans" && w == "forward"
        {
            np_at(s, v, 4).map(|(_, np)| np)
        } else {
            verb_np_at(s, v)
        };
        let Some(value) = value else { continue };
        let who = subject(ctx, s, i);
        set_fact(ctx, b, who, key, value);
    }
}

/// `researching|considering|looking into|thinking about X`.
fn match_considering(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let at = match s.lower(i) {
            "researching" | "considering" | "exploring" => i + 1,
            "looking" if s.is(i + 1, "into") => i + 2,
            "thinking" if s.is(i + 1, "about") => i + 2,
            _ => continue,
        };
        if s.negated(i) {
            continue;
        }
        let Some((_, np)) = np_at(s, at, 4) else {
            continue;
        };
        let who = subject(ctx, s, i);
        set_fact(ctx, b, who, "considering", np);
    }
}

/// `I have|got|bought|own|received a X` → possessions (pets for a pet word);
/// `my dog NAME`, `a cat named NAME` → pets `dog NAME`.
fn match_possessions(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        // `my dog Oliver`.
        if let Some(n) = (s.is_any(i, &["my", "our"]) && s.is_any(i + 1, PETS))
            .then(|| s.any_name_at(i + 2, 2))
            .flatten()
        {
            let value = format!("{} {}", s.lower(i + 1), n.text);
            set_fact(ctx, b, ctx.speaker.clone(), "pets", value);
            continue;
        }
        if !s.is_any(
            i,
            &[
                "have", "has", "got", "bought", "own", "owns", "received", "adopted", "bought",
            ],
        ) || s.negated(i)
            || !s.is_any(i + 1, &["a", "an", "my", "two", "three", "some", "new"])
            || s.is(i + 1, "to")
        {
            continue;
        }
        if s.is_any(
            i + 2,
            &[
                "lot", "lots", "bit", "few", "couple", "great", "good", "hard", "chance",
                "feeling", "blast", "question", "time",
            ],
        ) {
            continue;
        }
        let Some((end, np)) = np_at(s, i + 1, 3) else {
            continue;
        };
        let last = np.rsplit(' ').next().unwrap_or_default().to_lowercase();
        if CONDITIONS.contains(&last.as_str()) {
            continue;
        }
        let who = subject(ctx, s, i);
        if PETS.contains(&last.as_str()) {
            let named = if s.is_any(end, &["named", "called"]) {
                s.any_name_at(end + 1, 2)
                    .map(|n| format!("{last} {}", n.text))
            } else {
                None
            };
            set_fact(ctx, b, who, "pets", named.unwrap_or(np));
        } else {
            set_fact(ctx, b, who, "possessions", np);
        }
    }
}

/// Unnamed relatives and relations: `my kids`, `my husband`, `my friends`.
fn match_family(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.is_any(i, &["my", "our"]) {
            continue;
        }
        let mut j = i + 1;
        while s.is_any(j, super::KIN_ADJECTIVES) {
            j += 1;
        }
        let w = s.lower(j);
        if let Some((_, key, value)) = RELATIVES.iter().find(|(k, _, _)| *k == w) {
            set_fact(ctx, b, ctx.speaker.clone(), key, (*value).to_owned());
        } else if let Some((rel, tag, _)) = kin(w) {
            let key = if tag == "family" || tag == "spouse" || tag == "partner" {
                "family"
            } else {
                "relationships"
            };
            set_fact(ctx, b, ctx.speaker.clone(), key, rel.to_owned());
        }
    }
}

/// Health: `twisted|hurt|broke my X`, `have|had|got a cold`, `sick`.
fn match_health(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let w = s.lower(i);
        if INJURIES.contains(&w) && s.is_any(i + 1, &["my", "her", "his", "their"]) {
            if let Some(part) = s
                .tok(i + 2)
                .filter(|t| t.word && !t.is_any(&FUNCTION_WORD_SET))
            {
                let value = format!("{w} {}", part.lower());
                let who = subject(ctx, s, i);
                set_fact(ctx, b, who, "health", value);
            }
        } else if s.is_any(i, &["have", "has", "had", "got", "caught", "with", "from"])
            && s.is_any(i + 1, &["a", "an", "the"])
            && s.is_any(i + 2, CONDITIONS)
        {
            let who = subject(ctx, s, i);
            set_fact(ctx, b, who, "health", s.lower(i + 2).to_owned());
        } else if s.is_any(i, &["sick", "ill", "pregnant", "injured"])
            && s.is_any(
                i.wrapping_sub(1),
                &["was", "am", "i'm", "is", "been", "got"],
            )
        {
            let who = subject(ctx, s, i);
            set_fact(ctx, b, who, "health", w.to_owned());
        }
    }
}

/// `on the NAME team [at ORG]` → team (State), an Organization node for
/// the team with the edge `member_of`, and with an ORG `works_at` and
/// employer (State).
fn match_team(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.is_any(i, &["on", "in", "join", "joined", "lead", "leading"]) {
            continue;
        }
        let at = s.skip_the(i + 1);
        let Some(team) = s.name_at(at, 3) else {
            continue;
        };
        if !s.is(team.end, "team") {
            continue;
        }
        let who = subject(ctx, s, i);
        let Some(key) = ctx.node(b, NodeType::Organization, &team.text, &["team"]) else {
            continue;
        };
        ctx.non_places.insert(normalize_name(&team.text));
        s.claim(team.start..team.end + 1);
        if let Some(w) = &who {
            ctx.fact(b, w, "team", vec![team.text.clone()], FactMode::State);
        }
        ctx.edge(b, who.as_ref(), &key, "member_of", true);
        let org = s
            .is_any(team.end + 1, &["at", "for", "in"])
            .then(|| s.name_at(team.end + 2, 4))
            .flatten();
        let Some(org) = org else { continue };
        let Some(org_key) = ctx.node(b, NodeType::Organization, &org.text, &["employer"]) else {
            continue;
        };
        ctx.non_places.insert(normalize_name(&org.text));
        s.claim(org.start..org.end);
        if let Some(w) = &who {
            ctx.fact(b, w, "employer", vec![org.text.clone()], FactMode::State);
        }
        ctx.edge(b, who.as_ref(), &org_key, "works_at", true);
        b.edge(ctx.id, &key, &org_key, "part_of", true, ctx.time);
    }
}

/// `migration|switch|move from A to B` (a noun, no verb) → Tool nodes,
/// edges `migrating_from`/`migrating_to` and a decision.
fn match_migration(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.is_any(
            i,
            &[
                "migration",
                "switch",
                "move",
                "transition",
                "migrating",
                "moving",
            ],
        ) || !s.is(i + 1, "from")
        {
            continue;
        }
        let Some(from) = s.name_at(i + 2, 3) else {
            continue;
        };
        if !s.is(from.end, "to") {
            continue;
        }
        let Some(to) = s.name_at(from.end + 1, 3) else {
            continue;
        };
        let who = subject(ctx, s, i);
        let (Some(fk), Some(tk)) = (
            ctx.node(b, NodeType::Tool, &from.text, &["tool"]),
            ctx.node(b, NodeType::Tool, &to.text, &["tool"]),
        ) else {
            continue;
        };
        ctx.non_places.insert(normalize_name(&from.text));
        ctx.non_places.insert(normalize_name(&to.text));
        s.claim(from.start..to.end);
        ctx.edge(b, who.as_ref(), &fk, "migrating_from", false);
        ctx.edge(b, who.as_ref(), &tk, "migrating_to", false);
        let value = format!("migrate from {} to {}", from.text, to.text);
        set_fact(ctx, b, who, "decisions", value);
    }
}

/// A name starting a clause before a verb of [`NAMED_VERBS`] (`Priya
/// wants the cutover…`) that is no tool → a Person node, and the speaker
/// `knows` them.
fn match_colleagues(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if i > 0 && !s.is_separator(i - 1) {
            continue;
        }
        let Some(n) = s.name_at(i, 2) else { continue };
        if !s.is_any(n.end, NAMED_VERBS) || is_tech_like(&n.text) || ctx.person(&n.text).is_some() {
            continue;
        }
        let Some(key) = ctx.node(b, NodeType::Person, &n.text, &["mentioned"]) else {
            continue;
        };
        ctx.add_person(&n.text, key.clone());
        let speaker = ctx.speaker.clone();
        ctx.edge(b, speaker.as_ref(), &key, "knows", false);
    }
}

/// `we own|build|maintain|run the X` → responsibilities.
fn match_responsibilities(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.is_any(i, &["own", "maintain", "build", "run", "manage", "lead"])
            || !s.is_any(i.wrapping_sub(1), &["we", "i"])
            || !s.is(i + 1, "the")
        {
            continue;
        }
        let Some((_, np)) = np_at(s, i + 1, 3) else {
            continue;
        };
        let who = subject(ctx, s, i);
        set_fact(ctx, b, who, "responsibilities", np);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
pub(crate) mod tests {
    use super::*;
    use crate::text::packed;
    use strataflow_record::record::{
        Assertion, Criticality, EventTemporal, EventType, Precision, Scope, TimeBasis,
    };
    use strataflow_record::{SourceTime, Timestamp};

    /// 2023-05-08T12:00:00Z.
    const T0: i64 = 1_683_547_200_000;

    fn event(quote: &str) -> Event {
        Event {
            tenant: "t".to_owned(),
            block: RecordId([200; 32]),
            source_messages: vec![RecordId([201; 32])],
            title: "title".to_owned(),
            summary: "summary".to_owned(),
            narrative: "narrative".to_owned(),
            tags: Vec::new(),
            quotes: vec![quote.to_owned()],
            temporal: EventTemporal {
                mentioned_at: SourceTime::utc_without_offset(T0),
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

    fn project(quotes: &[&str]) -> Vec<GraphAssertion> {
        let events: Vec<(RecordId, Event)> = quotes
            .iter()
            .enumerate()
            .map(|(i, q)| (RecordId([u8::try_from(i).unwrap() + 1; 32]), event(q)))
            .collect();
        HeuristicProjectorV3
            .project(&ProjectionInput {
                tenant: "t",
                events: &events,
                attempt: 1,
            })
            .unwrap()
    }

    /// `key: value` of every fact of Ana, and `relation -> target` of her
    /// edges.
    fn said(quote: &str) -> Vec<String> {
        ana_says(&project(&[quote]))
    }

    /// `key: value` of every fact of Ana's node in `out`, and `relation ->
    /// target` of her edges (shared with the clause tests).
    pub(crate) fn ana_says(out: &[GraphAssertion]) -> Vec<String> {
        let mut got = Vec::new();
        for a in out {
            match &a.assertion {
                Assertion::Node { key, facts, .. } if key.name == "ana" => {
                    for f in facts {
                        for v in &f.values {
                            got.push(format!("{}: {v}", f.key));
                        }
                    }
                }
                Assertion::Edge {
                    from, to, relation, ..
                } if from.name == "ana" => got.push(format!("{relation} -> {}", to.name)),
                _ => {}
            }
        }
        got
    }

    /// Every turn of the two LoCoMo conversations, as `(speaker, text)`.
    pub(crate) fn locomo_turns() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/locomo");
        let mut turns = Vec::new();
        for file in ["conv-26.json", "conv-30.json"] {
            let raw = std::fs::read_to_string(dir.join(file)).expect("LoCoMo fixture");
            let doc: serde_json::Value = serde_json::from_str(&raw).expect("LoCoMo JSON");
            let sessions = doc.as_object().into_iter().flatten();
            for turn in sessions.filter_map(|(_, v)| v.as_array()).flatten() {
                let text = turn.get("text").and_then(|t| t.as_str());
                let speaker = turn.get("speaker").and_then(|t| t.as_str());
                if let (Some(text), Some(speaker)) = (text, speaker) {
                    turns.push((speaker.to_owned(), text.to_owned()));
                }
            }
        }
        assert!(turns.len() > 500, "read {} turns", turns.len());
        turns
    }

    /// [`locomo_turns`] as blocks of ten messages of one thread (users and
    /// assistants in turn, all said at one time), each with its messages.
    pub(crate) fn locomo_blocks() -> Vec<(
        strataflow_record::record::Block,
        Vec<(RecordId, strataflow_record::record::Message)>,
    )> {
        use strataflow_record::record::{Block, Message, Role};
        use strataflow_record::time::SourceTime;
        let time = SourceTime::parse_rfc3339("2023-05-08T13:56:00+00:00").expect("a time");
        let turns = locomo_turns();
        let mut blocks = Vec::new();
        for (b, chunk) in turns.chunks(10).enumerate() {
            let msgs: Vec<(RecordId, Message)> = chunk
                .iter()
                .enumerate()
                .map(|(i, (speaker, text))| {
                    let position = (b * 10 + i) as u64;
                    let mut id = [0u8; 32];
                    id[..8].copy_from_slice(&position.to_be_bytes());
                    let role = if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    };
                    let message = Message {
                        tenant: String::new(),
                        thread: "t".into(),
                        external_id: format!("m{position}"),
                        position,
                        role,
                        speaker: Some(speaker.clone()),
                        content: text.clone(),
                        tool_calls: vec![],
                        time,
                    };
                    (RecordId(id), message)
                })
                .collect();
            let (Some(first), Some(last)) = (msgs.first(), msgs.last()) else {
                continue;
            };
            let block = Block {
                tenant: String::new(),
                thread: "t".into(),
                ordinal: b as u32 + 1,
                start_turn: 1,
                end_turn: 5,
                first_position: first.1.position,
                last_position: last.1.position,
                messages: msgs.iter().map(|(id, _)| *id).collect(),
                time,
                l4: String::new(),
                l3: String::new(),
            };
            blocks.push((block, msgs));
        }
        blocks
    }

    /// Every trigger word has a packed key, so every token's triggers hold
    /// all the patterns its word triggers.
    #[test]
    fn every_trigger_word_packs() {
        for (_, triggers) in &MATCHERS {
            for w in triggers.iter().flat_map(|t| t.iter()) {
                assert!(packed(w).is_some(), "{w}");
            }
        }
    }

    /// Skipping a pattern on a sentence without its trigger words changes
    /// nothing: versions 3 and 4 on every LoCoMo turn (in batches of 20
    /// events, as a block gives them) and on the statements of the table
    /// tests give the same assertions with and without the skip.
    #[test]
    fn skipping_untriggered_patterns_changes_nothing() {
        let mut turns = locomo_turns();
        for quote in [
            "My sister Marta moved to Lisbon last year.",
            "I lost my job as a banker at Acme Corp.",
            "I'm on the Orbit team at Northwind and we own the ingest pipeline.",
            "We are planning the migration from Postgres to ClickHouse.",
            "Priya wants the cutover done before the end of January.",
            "I twisted my ankle and had a cold, so I was sick.",
            "I have a dog named Oscar and my kids love him.",
            "I started learning guitar and I'm looking forward to play in a band.",
            "I've been researching adoption agencies and thinking about counseling.",
            "I work at Google as a software engineer and studied at MIT.",
            "I quit Initech and left Globex Corporation, then got laid off from Hooli.",
        ] {
            turns.push(("Ana".to_owned(), quote.to_owned()));
        }
        let events: Vec<(RecordId, Event)> = turns
            .iter()
            .enumerate()
            .map(|(i, (speaker, text))| {
                let mut e = event(text);
                e.temporal.participants = vec![speaker.clone()];
                let mut id = [0_u8; 32];
                id[..8].copy_from_slice(&(i as u64).to_be_bytes());
                (RecordId(id), e)
            })
            .collect();
        let mut compared = 0;
        for batch in events.chunks(20) {
            let input = ProjectionInput {
                tenant: "t",
                events: batch,
                attempt: 1,
            };
            for (extra, extra_walked) in [
                (None, None),
                (
                    Some(super::super::clauses::match_clauses as Extra),
                    Some(super::super::clauses::match_clauses_walked as Extra),
                ),
            ] {
                let skipped = project_batch_with(&input, extra, true).unwrap();
                let walked = project_batch_with(&input, extra_walked, false).unwrap();
                assert_eq!(skipped, walked);
                compared += skipped.len();
            }
        }
        assert!(compared > 200, "{compared} assertions compared");
    }

    #[test]
    fn word_sets_answer_as_their_lists() {
        for set in [
            &NP_END,
            &BAD_STARTS,
            &FUNCTION_WORD_SET,
            &super::super::CLAUSE_WORD_SET,
        ] {
            crate::text::tests::assert_same_answers(set);
        }
    }

    fn table(cases: &[(&str, &[&str])]) {
        for (quote, want) in cases {
            let got = said(quote);
            for w in *want {
                assert!(
                    got.iter().any(|g| g == w),
                    "{quote:?}: want {w:?}, got {got:?}"
                );
            }
        }
    }

    fn absent(cases: &[(&str, &str)]) {
        for (quote, not) in cases {
            let got = said(quote);
            assert!(
                !got.iter().any(|g| g.starts_with(not)),
                "{quote:?}: unwanted {not:?} in {got:?}"
            );
        }
    }

    #[test]
    fn activities() {
        table(&[
            (
                "I went to a LGBTQ support group yesterday and it was so powerful.",
                &["attended: LGBTQ support group"],
            ),
            (
                "I ran a charity race for mental health last Saturday.",
                &["activities: ran charity race"],
            ),
            (
                "Last week I attended an LGBTQ+ pride parade.",
                &["attended: LGBTQ+ pride parade"],
            ),
            (
                "I gave a talk at my school event.",
                &["activities: gave talk"],
            ),
        ]);
        absent(&[("I attended for a few weeks.", "attended: few")]);
    }

    #[test]
    fn hobbies_study_and_starts() {
        table(&[
            (
                "I'm learning the piano to get creative.",
                &["hobbies: piano"],
            ),
            ("I just took up pottery.", &["hobbies: pottery"]),
            (
                "I'm studying psychology at night.",
                &["studies: psychology"],
            ),
            (
                "I want to continue my education.",
                &["studies: education", "goals: continue education"],
            ),
            (
                "I started transitioning three years ago.",
                &["started: transitioning"],
            ),
        ]);
        absent(&[("I started thinking about it.", "started:")]);
    }

    #[test]
    fn plans_goals_and_decisions() {
        table(&[
            (
                "I'm planning to explore career options in counseling.",
                &["plans: explore career options"],
            ),
            (
                "I'm looking forward to a transgender conference this month.",
                &["plans: transgender conference"],
            ),
            (
                "We decided to take the train instead of flying.",
                &["decisions: take train"],
            ),
            (
                "I'm researching adoption agencies.",
                &["considering: adoption agencies"],
            ),
        ]);
        absent(&[("I want to tell you something.", "goals:")]);
    }

    #[test]
    fn possessions_pets_and_family() {
        table(&[
            ("I have a dog named Oliver.", &["pets: dog Oliver"]),
            ("My cat Luna sleeps all day.", &["pets: cat Luna"]),
            ("I bought a new bike.", &["possessions: bike"]),
            (
                "My kids and my husband love the beach.",
                &["family: kids", "family: husband"],
            ),
            (
                "My friends and mentors are my rocks.",
                &["relationships: friends"],
            ),
        ]);
        absent(&[("I have a lot of work.", "possessions:")]);
    }

    #[test]
    fn health() {
        table(&[
            (
                "I twisted my ankle playing padel.",
                &["health: twisted ankle"],
            ),
            ("I had a cold last week.", &["health: cold"]),
        ]);
    }

    #[test]
    fn work_chat_teams_migrations_and_colleagues() {
        table(&[
            (
                "I'm on the Orbit team at Northwind, we own the data pipeline.",
                &[
                    "team: Orbit",
                    "employer: Northwind",
                    "member_of -> orbit",
                    "works_at -> northwind",
                    "responsibilities: data pipeline",
                ],
            ),
            (
                "The big item is the migration from Postgres to ClickHouse.",
                &[
                    "decisions: migrate from Postgres to ClickHouse",
                    "migrating_to -> clickhouse",
                    "migrating_from -> postgres",
                ],
            ),
            (
                "Priya wants the cutover done before the end of January.",
                &["knows -> priya"],
            ),
        ]);
    }

    #[test]
    fn a_changed_team_closes_nothing_here_but_is_a_state_fact() {
        let out = project(&["I'm on the Orbit team.", "I'm on the Nova team."]);
        let facts: Vec<_> = out
            .iter()
            .filter_map(|a| match &a.assertion {
                Assertion::Node { key, facts, .. } if key.name == "ana" => Some(facts.clone()),
                _ => None,
            })
            .flatten()
            .filter(|f| f.key == "team")
            .collect();
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert!(facts.iter().all(|f| f.mode == FactMode::State));
    }

    #[test]
    fn values_are_noun_phrases() {
        for (raw, want) in [
            ("on", None),
            ("was there to celebrate us", None),
            ("on trains", None),
            ("camping trips with my", Some("camping trips")),
            ("window seats", Some("window seats")),
            ("transitioning three years", Some("transitioning")),
            ("hiking in the mountains", Some("hiking in the mountains")),
        ] {
            assert_eq!(clean_value(raw).as_deref(), want, "{raw:?}");
        }
        absent(&[
            ("I like on Sundays to rest.", "likes: on"),
            (
                "I prefer window seats, on trains and on planes.",
                "likes: on",
            ),
        ]);
    }

    #[test]
    fn vehicles_and_movements_are_no_places() {
        assert!(
            !format!(
                "{:?}",
                project(&["I'll plan around the Alfa Pendular on 17 May."])
            )
            .contains("alfa pendular")
        );
        let out = project(&[
            "The Alfa Pendular train takes about 3 hours.",
            "I'll plan around the Alfa Pendular on 17 May.",
            "I went to a LGBTQ support group.",
        ]);
        let places: Vec<String> = out
            .iter()
            .filter_map(|a| match &a.assertion {
                Assertion::Node { key, .. } if key.node_type == NodeType::Place => {
                    Some(key.name.clone())
                }
                _ => None,
            })
            .collect();
        assert!(!places.contains(&"alfa pendular".to_owned()), "{places:?}");
        assert!(!places.contains(&"lgbtq".to_owned()), "{places:?}");
    }

    #[test]
    fn facts_cite_their_events() {
        let out = project(&["I have a dog named Oliver.", "I'm learning the piano."]);
        let ana = out
            .iter()
            .find(|a| matches!(&a.assertion, Assertion::Node { key, .. } if key.name == "ana"))
            .unwrap();
        assert_eq!(ana.source_events.len(), 2);
        let _ = Timestamp(T0);
    }
}
