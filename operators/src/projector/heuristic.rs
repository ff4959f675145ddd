//! The heuristic projector `heuristic-projector@1`: graph assertions from a
//! batch of events by simple, documented English patterns (spec §10). It
//! needs no model: it reads the events' participants and verbatim quotes and
//! is a pure, deterministic function of them.
//!
//! **Version 2** (`heuristic-projector@2`, [`HeuristicProjectorV2`]) applies
//! the same patterns to the sentences of the shared splitter
//! ([`strataflow_text::sentences`]), which keeps "my mentor Dr. Patel",
//! "e.g. Rust" or "J. R. R. Tolkien" in one sentence; version 1 ends a
//! sentence at every `.` that does not join two letters or digits (so "my
//! mentor Dr. Patel" is two sentences and no `mentor` edge). Everything else
//! is identical.
//!
//! # What it reads
//!
//! - `temporal.participants[0]` is the *speaker*, who stated the event; the
//!   other participants are further named persons. Every participant becomes
//!   a [`NodeType::Person`] node (tag `speaker` or `participant`).
//! - `quotes` are the verbatim sentences the event rests on. First person
//!   (`I`, `my`, `we`, …) refers to the speaker. Only quotes are searched for
//!   entities; `title`, `summary`, `narrative` and `tags` are derived text
//!   and are not read.
//! - Times: every fact and edge of an event is valid from the event's
//!   `happened_start`, else from the instant it was mentioned
//!   (`mentioned_at`). A planned event (`status = Planned`) is valid from its
//!   mention, since a plan holds from when it is stated (its
//!   `happened_start` is when the plan is to be carried out).
//!
//! # Names
//!
//! A *name* is a run of up to 3–5 capitalized words (with `of`, `de`, `da`,
//! `van`, `von`, `&`, … allowed between two capitalized words), whose words
//! are not pronouns, articles, weekdays, months, holidays, interjections or
//! other common words (see `STOP_WORDS`). A trailing possessive `'s` is
//! dropped. Names are only taken right after a trigger below, so a
//! capitalized word at the start of a sentence is never a name by itself.
//! A node's key is its normalized name ([`normalize_name`]): lowercase,
//! whitespace collapsed, surrounding punctuation stripped; the display name
//! keeps the spelling as written.
//!
//! # Patterns (applied in this order; a token used by one is not reused)
//!
//! 1. **Relations between people**: `my|our [little|big|older|younger|best|…]
//!    REL [,] [Dr|Mr|Mrs|Ms|Prof] NAME` with REL one of sister, brother, mom/mum/mother,
//!    dad/father, daughter, son, wife, husband, partner, boyfriend,
//!    girlfriend, friend, colleague/coworker, boss, mentor, cousin, aunt,
//!    uncle, grandma/grandmother, grandpa/grandfather, niece, nephew,
//!    neighbor → Person NAME and edge `speaker -[REL]-> NAME` (the canonical
//!    word: `mom` → `mother`, …). Functional for wife, husband, partner.
//! 2. **Leaving a job**: `lost my job [at ORG | as a ROLE]`, `laid off
//!    [from|by|at] ORG`, `fired from ORG`, `quit|left my job [at ORG | as a
//!    ROLE]`, `quit ORG`, `left ORG` (ORG with an organization suffix or
//!    already known as one) → State fact `employment` = `lost job at ORG`,
//!    `lost job as ROLE`, `lost job`, `left ORG`, `left job as ROLE` or `left
//!    job`, and with an ORG an Organization node and edge `worked_at`
//!    (non-functional).
//! 3. **Work and study**: `work(s|ed|ing) at|for ORG`, `[my] job at|with
//!    ORG`, `employed at|by ORG`, `hired by|at ORG`, `join(ed|s|ing) ORG`,
//!    `intern(ing) at ORG` → Organization node and edge `works_at`
//!    (functional) — `worked_at` (non-functional) for `worked`/`used to
//!    work`; `stud(y|ies|ied|ying) at ORG` → `studies_at`/`studied_at`. Under
//!    a negation (`not`, `n't`, `never`, `no longer` just before), a job
//!    search (`applied`, `interview`, `looking`) or a plan, only the node is
//!    made. Roles: `work(s|ed|ing) as a(n) ROLE`, `[my] job as a(n) ROLE` →
//!    State fact `occupation` = ROLE (`former ROLE` after `worked as`), and
//!    `… ROLE at|for ORG` adds the `works_at` edge; `… ORG [≤3 words] as a(n)
//!    ROLE` in the same clause (`joined Stripe in March as a product
//!    manager`) also sets `occupation`. A ROLE is at most 3 words, ending at
//!    punctuation or a function word.
//! 4. **Preferences**: `I|we [really|…] love|like|enjoy|prefer|adore X`,
//!    `I'm [really] into X`, `I'm a [big] fan of X` → Set fact `likes`;
//!    `I hate|dislike|detest|despise X`, `I don't like|love|enjoy X`, `I
//!    can't stand X` → Set fact `dislikes`; the third-person forms (`loves`,
//!    `hates`, `doesn't like`, …) after a known person's name set the fact on
//!    that person. X is the following phrase of at most 6 words, ending at
//!    punctuation other than a comma or at but/because/when/so/if/…; it is
//!    split at `and`/`or`/commas into several values (a part starting with a
//!    pronoun ends the list); a leading `to`/`a`/`an`/`the` is dropped; an
//!    object that is a pronoun (`it`, `that`, `you`, `how`, …) is ignored.
//! 5. **Identity and occupation**: `I'm|I am [also|…] a(n) X` (X at most 4
//!    words) → State fact `occupation` = X when the last word of X is a known
//!    occupation (`OCCUPATIONS`: teacher, nurse, banker, engineer, …; then
//!    `… at|for ORG` adds `works_at`), else Set fact `identity` = X.
//! 6. **Organizations by suffix**: `at|for|join|joined|from|with|by` + a name
//!    containing Inc, Corp, Ltd, LLC, Company, University, College, School,
//!    Bank, Institute, Hospital, Group, Labs, Foundation, … → Organization
//!    node (no edge).
//! 7. **Projects**: `project NAME`, `Project NAME` (alias `Project NAME`),
//!    `NAME project`, `work(s|ed|ing) on NAME` → Project node and edge
//!    `works_on` (non-functional); `working on` a known technology makes a
//!    Tool node and a `uses` edge instead.
//! 8. **Tools**: `use(s|d)|using [the] NAME` (a list `A, B and C` gives
//!    several) → Tool node and edge `uses`;
//!    `switch(ed)|migrat(e|ed|ing)|upgrad(e|ed|ing)|port(ed|ing) [over] [up
//!    to 3 words] [from NAME] to NAME [from NAME]` → Tool nodes and edges
//!    `migrating_to`
//!    and `migrating_from` (non-functional); `move(d)|moving` only with a
//!    technology-like name (a known technology, a digit, `.`, `+`, `#`, or an
//!    inner capital as in `PostgreSQL`).
//! 9. **Places** (a name that is not a known person, organization, tool,
//!    technology or language/nationality; `X and Y` / `X, Y` lists give
//!    several places):
//!    - `live(s|d)|living|based|reside(s) in P` → edge `lives_in`
//!      (functional), `lived in`/`used to live in` → `lived_in`;
//!    - a functional relation takes the first place of a list only (`born
//!      in Dublin, Ireland` → `born_in` Dublin; Ireland is a node);
//!    - `moved|relocated to P` → `lives_in` (functional); `move|moving to P`
//!      → `plans_to_move_to`; `moved from P` → `lived_in`;
//!    - `born in P` → `born_in` (functional); `I'm|is|are|originally|come(s)
//!      from P`, `grew up in P` → `comes_from`;
//!    - `visit(ed|ing|s)|toured|explored P` → `visited`, or `plans_to_visit`
//!      for a plan;
//!    - `to|from P` after a travel word earlier in the sentence (been, went,
//!      trip, flew, vacation, …) → `visited` / `plans_to_visit`;
//!    - `in|at|around P` → the Place node, and the visit edge only after a
//!      travel word (which here includes `was`, `stayed`, `I'm`, …).
//!
//!    Whether a visit is past or planned is read from the clause (past
//!    markers: went, been, was, yesterday, ago, last, …; plan markers: will,
//!    'll, gonna, going to, plan, want, next, tomorrow, soon, …; cancelled:
//!    cancel(l)ed, called off, postponed → no edge), else from the event's
//!    status.
//!
//! The subject of a verb pattern is the first subject-like word of its
//! clause (clauses split at punctuation and and/but/so/because/when/who/
//! that/… and reporting verbs said/told/think/…; an empty clause falls back
//! to the one before): `I`/`me`/`we`/`my` →
//! the speaker; a known person's name (participant or a NAME from pattern 1)
//! → that person; `my sister Marta` → Marta; `he`/`she`/`they`/`it`/`his`/…
//! or an unknown name → unknown, and then no edge or fact is made. A clause
//! with no subject (`Lost my job…`, `Been to Paris`) is the speaker's.
//!
//! # Output
//!
//! One Node assertion per node of the batch, merging the names, aliases,
//! tags (at most [`MAX_NODE_TAGS`], semantic roles such as `speaker`,
//! `family`, `place`, `home`, `employer`, `tool`) and facts of every event
//! that mentions it, citing those events; one Edge assertion per (from, to,
//! relation), citing the events it was found in, valid from the earliest of
//! their times. An edge is only emitted when both endpoints have a Node
//! assertion and differ. Assertions are sorted: nodes by (type, key), then
//! edges by (from, to, relation). Finally [`crate::validate::assertions`] and
//! [`crate::validate::retain_anchored_edges`] drop anything that would fail the acceptance
//! rule of spec §10.2.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use strataflow_record::record::{
    Assertion, Event, Fact, FactMode, GraphAssertion, NodeKey, NodeType, Occurrence,
};
use strataflow_record::{Digest, RecordId, Timestamp};

use crate::operator::{OperatorError, OperatorId, ProjectionInput, Projector, config_hash};
use crate::text::{PackedMap, WordSet, packed};

/// Version 3 (`heuristic-projector@3`): its own file, only adding patterns.
#[path = "statements.rs"]
pub mod statements;
pub use statements::{HeuristicProjectorV3, VERSION_3};

/// Version 4 (`heuristic-projector@4`): version 3 plus clause facts.
#[path = "clauses.rs"]
pub mod clauses;
pub use clauses::{HeuristicProjectorV4, VERSION_4};

/// Operator name.
pub const NAME: &str = "heuristic-projector";
/// Operator version.
pub const VERSION: u32 = 1;
/// Version of [`HeuristicProjectorV2`].
pub const VERSION_2: u32 = 2;
/// Confidence of the participants' Person nodes, in per-mille.
pub const PARTICIPANT_CONFIDENCE_MILLI: u16 = 900;
/// Confidence of everything found by a pattern, in per-mille.
pub const HEURISTIC_CONFIDENCE_MILLI: u16 = 700;
/// At most this many tags per node (the first ones in sorted order).
pub const MAX_NODE_TAGS: usize = 6;
/// At most this many aliases per node.
pub const MAX_NODE_ALIASES: usize = 20;

/// The heuristic projector `heuristic-projector@1` (see the module docs for
/// its patterns). It has no configuration: its configuration text is `{}`.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicProjector;

impl Projector for HeuristicProjector {
    fn id(&self) -> OperatorId {
        OperatorId::new(NAME, VERSION)
    }

    fn config_hash(&self) -> Digest {
        config_hash(&self.id(), "{}")
    }

    /// Fails only when an event of the batch belongs to another tenant.
    fn project(&self, input: &ProjectionInput<'_>) -> Result<Vec<GraphAssertion>, OperatorError> {
        project(input, Splitter::V1)
    }
}

/// The heuristic projector `heuristic-projector@2`: version 1's patterns on
/// the sentences of [`strataflow_text::sentences`] (abbreviations, initials
/// and closing quotes kept whole).
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicProjectorV2;

impl Projector for HeuristicProjectorV2 {
    fn id(&self) -> OperatorId {
        OperatorId::new(NAME, VERSION_2)
    }

    fn config_hash(&self) -> Digest {
        config_hash(&self.id(), r#"{"sentences":"strataflow-text"}"#)
    }

    /// Fails only when an event of the batch belongs to another tenant.
    fn project(&self, input: &ProjectionInput<'_>) -> Result<Vec<GraphAssertion>, OperatorError> {
        project(input, Splitter::Shared)
    }
}

/// Where a version cuts quotes into sentences.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Splitter {
    /// Frozen: [`sentences`], version 1.
    V1,
    /// [`strataflow_text::sentences::split`], then [`sentence_tokens`].
    Shared,
}

impl Splitter {
    fn sentences(self, text: &str) -> Vec<Sent<'_>> {
        match self {
            Self::V1 => sentences(text),
            Self::Shared => strataflow_text::sentences::split(text)
                .iter()
                .flat_map(|s| sentence_tokens(s.text))
                .collect(),
        }
    }
}

fn project(
    input: &ProjectionInput<'_>,
    splitter: Splitter,
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
        if seen.insert(*id) {
            project_event(*id, event, splitter, &mut builder);
        }
    }
    let batch: Vec<RecordId> = seen.into_iter().collect();
    let out = builder.finish(input.tenant);
    Ok(crate::validate::assertions(&batch, out))
}

/// The normalized form of a name, used as a node key: `’` read as `'`,
/// lowercase, whitespace collapsed to single spaces, surrounding punctuation
/// (other than `+` and `#`, as in `C++`) stripped.
pub fn normalize_name(name: &str) -> String {
    if name.is_ascii() {
        // ASCII holds no curly quote and lowercases byte by byte: the
        // words are folded straight into the output (one allocation).
        let mut out = String::with_capacity(name.len());
        for word in name.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.extend(word.chars().map(|c| c.to_ascii_lowercase()));
        }
        let trimmed = out.trim_matches(name_edge);
        return if trimmed.len() == out.len() {
            out
        } else {
            trimmed.to_owned()
        };
    }
    let lower = name.replace(['’', '‘'], "'").to_lowercase();
    let collapsed = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.trim_matches(name_edge).to_owned()
}

/// `f` of [`normalize_name`]`(word)`, without allocating when `word` is
/// ASCII, holds no whitespace and is at most 32 bytes long (the common
/// case: a word of a value looked up in a word list).
fn with_normalized_word<R>(word: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0_u8; 32];
    // ASCII: `normalize_name` lowercases byte by byte and strips
    // punctuation, which has no case, so stripping first is the same.
    let trimmed = word.trim_matches(name_edge);
    if word.is_ascii()
        && !word.bytes().any(|b| b.is_ascii_whitespace())
        && let Some(lower) = buf.get_mut(..trimmed.len())
    {
        lower.copy_from_slice(trimmed.as_bytes());
        lower.make_ascii_lowercase();
        if let Ok(lower) = std::str::from_utf8(lower) {
            return f(lower);
        }
    }
    f(&normalize_name(word))
}

/// `text`'s words (split at whitespace) joined by single spaces; borrowed
/// when `text` already is that.
fn single_spaced(text: &str) -> std::borrow::Cow<'_, str> {
    let already = !text.starts_with(char::is_whitespace)
        && !text.ends_with(char::is_whitespace)
        && !text.contains(|c: char| c.is_whitespace() && c != ' ')
        && !text.contains("  ");
    if already {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

/// Adds `value` to `set`, copying it only when it is not there yet.
fn insert_str(set: &mut BTreeSet<String>, value: &str) {
    if !set.contains(value) {
        set.insert(value.to_owned());
    }
}

/// What [`normalize_name`] strips around a name: whitespace and
/// punctuation other than `+` and `#`.
fn name_edge(c: char) -> bool {
    c.is_whitespace()
        || (c.is_ascii_punctuation() && c != '+' && c != '#')
        || matches!(c, '“' | '”' | '«' | '»' | '…' | '—' | '–')
}

// ---------------------------------------------------------------------------
// Word lists.

/// Words that never start (or continue) a name.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "im", "me", "my", "mine", "myself", "we", "we're", "we've",
    "we'd", "we'll", "our", "ours", "us", "you", "you're", "you've", "you'd", "you'll", "your",
    "he", "he's", "he'd", "he'll", "him", "his", "she", "she's", "she'd", "she'll", "her", "it",
    "it's", "its", "they", "they're", "they've", "they'd", "they'll", "them", "their", "this",
    "that", "these", "those", "there", "here", "the", "a", "an", "and", "but", "or", "so", "not",
    "no", "yes", "yeah", "yep", "nope", "oh", "ok", "okay", "hi", "hey", "hello", "thanks", "thank",
    "wow", "well", "just", "also", "anyway", "lol", "omg", "haha", "god", "sorry", "please",
    "congrats", "congratulations", "happy", "good", "great", "nice", "cool", "awesome", "amazing",
    "love", "like", "maybe", "sure", "really", "very", "actually", "mom", "mum", "dad", "mama",
    "papa", "mr", "mrs", "ms", "dr", "today", "tomorrow", "yesterday", "tonight", "everyone",
    "everybody", "someone", "anyone", "nobody", "something", "anything", "everything", "nothing",
    "last", "next", "then", "now", "what", "when", "where", "why", "how", "who", "which", "whose",
    "if", "because", "after", "before", "during", "since", "until", "while", "with", "without",
    "for", "from", "to", "in", "on", "at", "by", "of", "as", "into", "about", "is", "are", "was",
    "were", "be", "been", "am", "do", "does", "did", "have", "has", "had", "can", "could", "will",
    "would", "should", "might", "must", "let's", "let", "all", "some", "any", "every", "each",
    "one", "many", "much", "more", "most", "other", "another", "such", "only", "even", "still",
    "again", "too", "ever", "never", "always", "sometimes", "often", "weekend", "morning",
    "evening", "night", "afternoon", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december", "christmas", "easter", "halloween",
    "thanksgiving", "hanukkah", "ramadan", "diwali",
];

/// [`STOP_WORDS`] for look-ups.
static STOP_WORD_SET: WordSet = WordSet::classed(STOP_WORD_CLASS, STOP_WORDS);

/// [`STOP_WORD_SET`]'s bit of [`Tok::classes`].
const STOP_WORD_CLASS: u8 = 0;

/// Words between two capitalized words of one name (`University of Porto`).
const NAME_CONNECTORS: &[&str] = &[
    "of", "de", "da", "do", "dos", "das", "del", "della", "di", "du", "van", "von", "der", "den",
    "la", "le", "&",
];

/// Languages and nationalities, which are not places (`fluent in Spanish`).
#[rustfmt::skip]
const LANGUAGES: &[&str] = &[
    "english", "spanish", "french", "german", "italian", "portuguese", "chinese", "japanese",
    "korean", "russian", "arabic", "hindi", "dutch", "greek", "swedish", "polish", "turkish",
    "thai", "vietnamese", "american", "canadian", "mexican", "brazilian", "indian", "african",
    "european", "asian", "british", "irish", "scottish", "australian", "latin", "hebrew", "persian",
    "ukrainian", "norwegian", "danish", "finnish",
];

/// Known technologies (lowercase): tools, not places or projects.
#[rustfmt::skip]
const TECH_WORDS: &[&str] = &[
    "rust", "python", "java", "javascript", "typescript", "golang", "ruby", "php", "swift",
    "kotlin", "scala", "haskell", "elixir", "erlang", "perl", "sql", "sqlite", "postgres",
    "postgresql", "mysql", "mariadb", "mongodb", "redis", "kafka", "docker", "kubernetes",
    "terraform", "ansible", "react", "vue", "angular", "svelte", "django", "flask", "rails", "node",
    "deno", "linux", "ubuntu", "debian", "windows", "macos", "ios", "android", "excel", "notion",
    "slack", "figma", "photoshop", "lightroom", "git", "github", "gitlab", "jira", "confluence",
    "aws", "azure", "gcp", "vscode", "vim", "emacs", "tensorflow", "pytorch", "pandas", "spark",
    "hadoop", "elasticsearch", "graphql", "nginx", "rocksdb", "duckdb", "clickhouse", "snowflake",
    "bigquery", "tableau", "trello", "asana", "zoom", "chatgpt", "copilot", "blender", "unity",
    "wordpress", "shopify", "canva", "obsidian", "evernote", "dropbox", "grafana", "prometheus",
    "airflow", "dbt", "fjall",
];

/// Words marking an organization name.
#[rustfmt::skip]
const ORG_SUFFIXES: &[&str] = &[
    "inc", "corp", "corporation", "ltd", "llc", "company", "co", "university", "college", "school",
    "bank", "institute", "hospital", "group", "labs", "lab", "foundation", "agency", "academy",
    "studio", "studios", "gmbh", "plc", "clinic", "association", "society", "club", "ministry",
    "department", "technologies", "systems", "solutions", "partners", "ventures", "consulting",
];

/// Occupations: `I'm a(n) …` ending in one of them is an occupation.
#[rustfmt::skip]
const OCCUPATIONS: &[&str] = &[
    "teacher", "nurse", "doctor", "engineer", "developer", "programmer", "designer", "lawyer",
    "accountant", "banker", "chef", "cook", "writer", "author", "artist", "musician", "student",
    "scientist", "researcher", "professor", "manager", "consultant", "analyst", "architect",
    "pharmacist", "dentist", "therapist", "counselor", "counsellor", "firefighter", "pilot",
    "driver", "mechanic", "electrician", "plumber", "carpenter", "farmer", "journalist",
    "photographer", "editor", "baker", "barista", "waiter", "waitress", "cashier", "salesperson",
    "clerk", "secretary", "assistant", "librarian", "veterinarian", "vet", "surgeon", "paramedic",
    "officer", "soldier", "lecturer", "tutor", "coach", "trainer", "intern", "freelancer",
    "entrepreneur", "founder", "ceo", "cto", "cfo", "director", "administrator", "technician",
    "translator", "interpreter", "actor", "actress", "dancer", "singer", "economist",
    "psychologist", "psychiatrist", "physician", "nanny", "caregiver", "cleaner", "janitor",
    "realtor", "broker", "trader", "recruiter", "marketer", "producer", "illustrator", "animator",
    "mathematician", "physicist", "chemist", "biologist", "tester", "sysadmin", "policeman",
    "policewoman", "worker",
];

/// Adjectives allowed between `my` and a relation word.
const KIN_ADJECTIVES: &[&str] = &[
    "little", "big", "older", "younger", "elder", "eldest", "youngest", "oldest", "best", "old",
    "new", "twin", "baby", "dear", "late", "step", "close",
];

/// Words a role/identity phrase never contains: it ends before them.
#[rustfmt::skip]
const PHRASE_END: &[&str] = &[
    "and", "or", "but", "at", "for", "in", "with", "from", "of", "on", "to", "because", "when",
    "so", "since", "while", "who", "that", "which", "yesterday", "today", "tomorrow", "now",
    "anymore", "again", "too", "last", "next", "this", "until", "after", "before", "though",
    "although", "like", "by", "as", "if", "then", "right", "lol", "haha", "is", "was", "are",
    "were", "here", "there", "already", "yet", "i", "i'm", "i've", "i'd", "i'll", "we", "you", "he",
    "she", "they", "it", "it's",
];

/// First words that make `I'm a …` no identity (`I'm a bit tired`).
const PHRASE_REJECT: &[&str] = &[
    "bit", "little", "lot", "couple", "few", "tad", "kind", "sort", "fan", "huge", "big", "great",
    "total", "complete", "mess", "part", "way", "good", "bad",
];

/// Adverbs skipped between a subject and its verb.
#[rustfmt::skip]
const ADVERBS: &[&str] = &[
    "really", "absolutely", "just", "totally", "also", "truly", "so", "still", "genuinely", "kinda",
    "actually", "definitely", "honestly", "always", "now", "officially", "basically", "finally",
    "proudly", "do", "does", "too", "very", "much",
];

/// Words that end a preference phrase.
#[rustfmt::skip]
const OBJECT_END: &[&str] = &[
    "but", "because", "when", "whenever", "so", "if", "since", "while", "though", "although",
    "cause", "'cause", "until", "yesterday", "today", "tomorrow", "tonight", "lately", "now",
];

/// Preference objects that are no interest (`I love it`, `I like how…`).
#[rustfmt::skip]
const OBJECT_REJECT: &[&str] = &[
    "it", "it's", "that", "this", "you", "him", "her", "them", "me", "us", "what", "how", "when",
    "where", "why", "who", "everything", "anything", "something", "nothing", "those", "these",
    "there", "here", "so", "too", "very", "much", "being", "yours", "ya",
];

/// Pronouns that start a new clause inside a preference list.
const PRONOUN_STARTS: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "you", "you're", "he", "he's", "she", "she's", "we",
    "we're", "they", "they're", "it", "it's",
];

/// Subjects meaning the speaker.
#[rustfmt::skip]
const FIRST_PERSON: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "im", "me", "we", "we're", "we've", "we'd", "we'll",
    "myself", "ourselves",
];

/// Subjects that are not resolved to a node.
const OTHER_SUBJECTS: &[&str] = &[
    "he", "he's", "he'd", "he'll", "she", "she's", "she'd", "she'll", "they", "they're", "they've",
    "they'd", "they'll", "you", "you're", "you've", "you'd", "you'll", "it", "it's", "his", "her",
    "their", "your", "its", "this", "these", "those",
];

/// Words that start a new clause (reporting verbs included: in `Bob said I
/// should use X` the subject of `use` is `I`).
#[rustfmt::skip]
const CLAUSE_WORDS: &[&str] = &[
    "and", "but", "so", "because", "while", "when", "whenever", "then", "although", "though",
    "after", "before", "until", "since", "who", "which", "that", "where", "or", "cause", "if",
    "said", "says", "told", "tells", "think", "thinks", "thought", "believe", "believes", "guess",
    "feel", "felt", "suggested", "mentioned", "recommended", "asked",
];

static CLAUSE_WORD_SET: WordSet = WordSet::classed(1, CLAUSE_WORDS);

/// Words making a later `to|from|in|at PLACE` a trip.
#[rustfmt::skip]
const TRAVEL_WORDS: &[&str] = &[
    "been", "went", "go", "goes", "going", "gone", "trip", "trips", "travel", "travels", "traveled",
    "travelled", "traveling", "travelling", "flew", "fly", "flying", "flight", "drove", "drive",
    "driving", "headed", "heading", "returned", "back", "came", "come", "coming", "arrived",
    "arrive", "vacation", "holiday", "holidays", "journey", "visit", "visited", "visiting",
    "stayed", "stay", "staying", "spent", "was", "were", "honeymoon", "getaway", "cruise", "i'm",
    "we're", "am", "landed", "left",
];

/// Past markers of a clause.
#[rustfmt::skip]
const PAST_MARKERS: &[&str] = &[
    "went", "been", "was", "were", "visited", "flew", "drove", "got", "came", "returned",
    "yesterday", "ago", "last", "had", "spent", "stayed", "left", "traveled", "travelled",
    "arrived", "toured", "explored", "did",
];

/// Plan markers of a clause.
const PLAN_MARKERS: &[&str] = &[
    "will", "gonna", "plan", "plans", "planning", "planned", "want", "wanna", "hope", "hoping",
    "next", "tomorrow", "soon", "upcoming", "someday", "would", "intend", "thinking",
];

/// Cancellation markers of a clause.
#[rustfmt::skip]
const CANCEL_MARKERS: &[&str] = &[
    "cancel", "cancelled", "canceled", "cancelling", "canceling", "postponed",
];

/// Negations just before a verb.
const NEGATIONS: &[&str] = &["not", "never", "no", "longer"];

/// Job-search words: `applied for a job at X` is no employment.
#[rustfmt::skip]
const JOB_SEARCH: &[&str] = &[
    "applied", "applying", "apply", "interview", "interviewing", "interviewed", "looking",
];

/// The relation word, the tag of the relative and whether the relation is
/// functional, for a relation word of pattern 1.
fn kin(word: &str) -> Option<(&'static str, &'static str, bool)> {
    Some(match word {
        "sister" => ("sister", "family", false),
        "brother" => ("brother", "family", false),
        "mom" | "mum" | "mother" => ("mother", "family", false),
        "dad" | "father" => ("father", "family", false),
        "daughter" => ("daughter", "family", false),
        "son" => ("son", "family", false),
        "wife" => ("wife", "spouse", true),
        "husband" => ("husband", "spouse", true),
        "partner" => ("partner", "partner", true),
        "boyfriend" => ("boyfriend", "partner", false),
        "girlfriend" => ("girlfriend", "partner", false),
        "friend" | "bff" => ("friend", "friend", false),
        "colleague" | "coworker" | "co-worker" => ("colleague", "colleague", false),
        "boss" => ("boss", "colleague", false),
        "mentor" => ("mentor", "mentor", false),
        "cousin" => ("cousin", "family", false),
        "aunt" => ("aunt", "family", false),
        "uncle" => ("uncle", "family", false),
        "grandma" | "grandmother" => ("grandmother", "family", false),
        "grandpa" | "grandfather" => ("grandfather", "family", false),
        "niece" => ("niece", "family", false),
        "nephew" => ("nephew", "family", false),
        "neighbor" | "neighbour" => ("neighbor", "neighbor", false),
        _ => return None,
    })
}

fn is_tech_like(name: &str) -> bool {
    let lower = normalize_name(name);
    if TECH_WORDS.contains(&lower.as_str()) {
        return true;
    }
    if name
        .chars()
        .any(|c| c.is_ascii_digit() || matches!(c, '.' | '+' | '#'))
    {
        return true;
    }
    // An inner capital after a lowercase letter (`PostgreSQL`, `GitHub`,
    // `iOS`), but not a `Mc`/`Mac`/`O'` surname or place.
    name.split_whitespace().any(|w| {
        let inner = w.char_indices().skip(1).any(|(i, c)| {
            c.is_uppercase()
                && w.get(..i)
                    .is_some_and(|p| p.chars().any(char::is_lowercase))
        });
        inner && !w.starts_with("Mc") && !w.starts_with("Mac") && !w.starts_with("O'")
    })
}

fn has_org_suffix(name: &str) -> bool {
    name.split_whitespace()
        .skip(1)
        .chain(name.split_whitespace().take(1).filter(|w| {
            // A leading `University`/`Bank` (`University of Porto`).
            matches!(w.to_lowercase().as_str(), "university" | "bank" | "college")
        }))
        .any(|w| ORG_SUFFIXES.contains(&normalize_name(w).as_str()))
}

fn is_language(name: &str) -> bool {
    let lower = normalize_name(name);
    LANGUAGES.contains(&lower.as_str())
        || (!lower.contains(' ') && (lower.ends_with("ish") || lower.ends_with("ese")))
}

// ---------------------------------------------------------------------------
// Tokens and sentences.

/// A word list a token is looked up in: a slice or array (one comparison
/// per word) or a [`WordSet`] (binary search, for long lists).
trait Words {
    fn has(&self, word: &str) -> bool;

    /// Whether a word token is one of the list.
    fn has_tok(&self, tok: &Tok) -> bool {
        self.has(tok.lower())
    }
}

impl Words for [&str] {
    fn has(&self, word: &str) -> bool {
        self.contains(&word)
    }
}

impl<const N: usize> Words for [&str; N] {
    fn has(&self, word: &str) -> bool {
        self.contains(&word)
    }
}

impl Words for WordSet {
    fn has(&self, word: &str) -> bool {
        self.contains(word)
    }

    /// A set of [`CLASSED`] by the token's bit, others by look-up.
    fn has_tok(&self, tok: &Tok) -> bool {
        match self.class() {
            Some(class) => tok.classes >> class & 1 == 1,
            None => self.contains(tok.lower()),
        }
    }
}

/// The word sets whose membership every word token carries as one bit of
/// [`Tok::classes`] (set `k` is `WordSet::classed(k, …)`, which a test
/// checks): one look-up per token instead of one per set and question.
static CLASSED: [&WordSet; 13] = [
    &STOP_WORD_SET,
    &CLAUSE_WORD_SET,
    &statements::FUNCTION_WORD_SET,
    &statements::NP_END,
    &clauses::AUXILIARIES,
    &clauses::SKIPPED_ADVERBS,
    &clauses::SKIP_VERBS,
    &clauses::LIGHT_VERBS,
    &clauses::OBJECT_DETERMINERS,
    &clauses::OBJECT_END,
    &clauses::MONTHS,
    &clauses::WEEKDAYS,
    &clauses::IMPERATIVES,
];

/// By packed key, for every word of [`CLASSED`] or a trigger word of
/// version 3's patterns: its classes (low 32 bits) and the bits of the
/// patterns it triggers (high 32 bits, see
/// [`statements::trigger_words`]).
static CLASS_MAP: std::sync::LazyLock<PackedMap<u64>> = std::sync::LazyLock::new(|| {
    let mut classes: BTreeMap<u128, u64> = BTreeMap::new();
    for set in CLASSED {
        let Some(class) = set.class() else { continue };
        for key in set.words().iter().filter_map(|w| packed(w)) {
            *classes.entry(key).or_default() |= 1 << class;
        }
    }
    for (word, pattern) in statements::trigger_words() {
        if let Some(key) = packed(word) {
            *classes.entry(key).or_default() |= 1 << (32 + pattern);
        }
    }
    PackedMap::of(&classes.into_iter().collect::<Vec<_>>())
});

/// The bits of the sets of [`CLASSED`] that hold `lower`, and those of
/// the patterns it triggers.
fn classes_of(lower: &str) -> (u32, u32) {
    match packed(lower) {
        Some(key) if !lower.is_empty() => {
            let bits = CLASS_MAP.get(key).unwrap_or(0);
            #[expect(clippy::cast_possible_truncation, reason = "two halves of the bits")]
            (bits as u32, (bits >> 32) as u32)
        }
        // Trigger words all have packed keys (a test checks).
        _ => (
            CLASSED
                .iter()
                .filter(|set| set.contains(lower))
                .filter_map(|set| set.class())
                .fold(0, |mask, class| mask | 1 << class),
            0,
        ),
    }
}

#[derive(Clone, Debug)]
struct Tok<'a> {
    /// As written (apostrophes normalized to `'`): borrowed from the quote
    /// unless normalizing changed it.
    text: Cow<'a, str>,
    /// Lowercase, when it differs from `text` (see [`Tok::lower`]).
    lowered: Option<String>,
    /// Length of [`Tok::base`], a prefix of `text`.
    base_len: usize,
    /// A word (else punctuation).
    word: bool,
    /// Starts with an uppercase letter.
    upper: bool,
    /// Ends with a possessive `'s`.
    possessive: bool,
    /// [`Tok::is_name_word`], computed once.
    name_word: bool,
    /// Bit `k`: the lowercase word is one of [`CLASSED`]`[k]`.
    classes: u32,
    /// Bit `k`: the lowercase word is a trigger word of version 3's
    /// pattern `k` ([`statements::trigger_words`]).
    triggers: u32,
}

impl<'a> Tok<'a> {
    fn word(text: Cow<'a, str>) -> Self {
        // An ASCII word lowercases byte by byte (the same string); most
        // words are written in lowercase and keep no second copy.
        let lowered = if text.is_ascii() {
            text.bytes()
                .any(|b| b.is_ascii_uppercase())
                .then(|| text.to_ascii_lowercase())
        } else {
            Some(text.to_lowercase()).filter(|lower| *lower != *text)
        };
        let lower = lowered.as_deref().unwrap_or(&text);
        let (classes, triggers) = classes_of(lower);
        let stop_word = classes >> STOP_WORD_CLASS & 1 == 1;
        let stripped = text
            .strip_suffix("'s")
            .or_else(|| text.strip_suffix("'S"))
            .filter(|b| !b.is_empty());
        // `it's`, `he's`, `she's`, `let's`… are contractions, not possessives.
        let possessive = stripped.is_some() && !stop_word;
        let upper = text.chars().next().is_some_and(char::is_uppercase);
        let base = match stripped {
            Some(base) if possessive => base,
            _ => &*text,
        };
        // The base of a word that is no possessive is the word, whose
        // lowercase is `lower`: only a possessive's is folded again.
        let name_word =
            upper && !stop_word && (!possessive || !STOP_WORD_SET.contains(&base.to_lowercase()));
        let base_len = base.len();
        Self {
            base_len,
            text,
            lowered,
            word: true,
            upper,
            possessive,
            name_word,
            classes,
            triggers,
        }
    }

    fn punct(text: Cow<'a, str>) -> Self {
        Self {
            lowered: None,
            base_len: text.len(),
            text,
            word: false,
            upper: false,
            possessive: false,
            name_word: false,
            classes: 0,
            triggers: 0,
        }
    }

    /// Lowercase.
    fn lower(&self) -> &str {
        self.lowered.as_deref().unwrap_or(&self.text)
    }

    /// Without a possessive `'s`.
    fn base(&self) -> &str {
        self.text.get(..self.base_len).unwrap_or(&self.text)
    }

    fn is_any(&self, words: &(impl Words + ?Sized)) -> bool {
        self.word && words.has_tok(self)
    }

    /// A word written with a capital that is no stop word (nor is its
    /// base without `'s`).
    fn is_name_word(&self) -> bool {
        self.name_word
    }

    fn negates(&self) -> bool {
        self.is_any(NEGATIONS) || (self.word && self.lower().ends_with("n't"))
    }
}

/// Splits a quote into sentences of tokens. Words are runs of letters and
/// digits, joined by `'`, `-`, `_`, `.`, `&` between two of them, with
/// trailing `+`/`#` (`C++`, `C#`); `.`, `!`, `?` and line breaks end a
/// sentence; other punctuation is kept as a token.
///
/// Frozen: the sentences of `heuristic-projector@1` (it splits "Dr. Patel"
/// at the `.`); do not change. Version 2 uses [`sentence_tokens`].
fn sentences(text: &str) -> Vec<Sent<'_>> {
    tokenize(text, true)
}

/// The tokens of one sentence of the shared splitter, as one [`Sent`] (none
/// when it has no token): the words and punctuation of [`sentences`], where
/// `.`, `!`, `?`, `…` and line breaks end nothing and are dropped.
fn sentence_tokens(sentence: &str) -> Option<Sent<'_>> {
    let mut sents = tokenize(sentence, false);
    debug_assert!(sents.len() <= 1);
    sents.pop()
}

/// [`sentences`]' word and punctuation rules; with `split`, `.`, `!`, `?`,
/// `…` and line breaks end a sentence, else they are dropped.
fn tokenize(text: &str, split: bool) -> Vec<Sent<'_>> {
    let normalized = |c: char| match c {
        '’' | '‘' | '`' => '\'',
        '“' | '”' => '"',
        c => c,
    };
    // The word being read: its byte span in `text`, and whether it holds a
    // character [`normalized`] changes (else it is copied as written).
    struct Word {
        start: usize,
        end: usize,
        changed: bool,
    }
    let take = |word: Word| {
        let written = text.get(word.start..word.end).unwrap_or_default();
        Tok::word(if word.changed {
            Cow::Owned(written.chars().map(normalized).collect())
        } else {
            Cow::Borrowed(written)
        })
    };
    let bytes = text.as_bytes();
    let char_at = |at: usize| text.get(at..).and_then(|rest| rest.chars().next());
    // One sentence of the shared splitter is one `Sent`: room for its
    // tokens at once (about one per four bytes) spares the vector's growth.
    let mut out = Vec::with_capacity(usize::from(!split));
    let mut toks: Vec<Tok> = Vec::with_capacity(if split { 0 } else { text.len() / 4 + 1 });
    let mut word: Option<Word> = None;
    // Whether the previous character is a letter or digit.
    let mut previous_alphanumeric = false;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        // A run of ASCII letters and digits joins the word as it is.
        if byte.is_ascii_alphanumeric() {
            let run = bytes
                .get(at..)
                .unwrap_or_default()
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric())
                .count();
            let end = at + run;
            match &mut word {
                Some(w) => w.end = end,
                None => {
                    word = Some(Word {
                        start: at,
                        end,
                        changed: false,
                    });
                }
            }
            previous_alphanumeric = true;
            at = end;
            continue;
        }
        let raw = if byte.is_ascii() {
            char::from(byte)
        } else {
            let Some(raw) = char_at(at) else { break };
            raw
        };
        let c = normalized(raw);
        let start = at;
        let after = at + raw.len_utf8();
        let joins = c.is_alphanumeric()
            || (matches!(c, '\'' | '-' | '_' | '.' | '&')
                && previous_alphanumeric
                && char_at(after).is_some_and(char::is_alphanumeric))
            || (matches!(c, '+' | '#') && word.is_some());
        previous_alphanumeric = c.is_alphanumeric();
        at = after;
        if joins {
            match &mut word {
                Some(w) => {
                    w.end = after;
                    w.changed |= c != raw;
                }
                None => {
                    word = Some(Word {
                        start,
                        end: after,
                        changed: c != raw,
                    });
                }
            }
            continue;
        }
        if let Some(w) = word.take() {
            toks.push(take(w));
        }
        match c {
            '.' | '!' | '?' | '\n' | '…' if split && !toks.is_empty() => {
                out.push(Sent::new(std::mem::take(&mut toks)));
            }
            ',' | ';' | ':' | '(' | ')' | '"' | '-' | '—' | '–' | '/' | '[' | ']' => {
                // Borrowed from the text unless normalizing changed it.
                let written = text.get(start..after).filter(|_| c == raw);
                toks.push(Tok::punct(
                    written.map_or_else(|| Cow::Owned(c.to_string()), Cow::Borrowed),
                ));
            }
            _ => {}
        }
    }
    if let Some(w) = word.take() {
        toks.push(take(w));
    }
    if !toks.is_empty() {
        out.push(Sent::new(toks));
    }
    out
}

/// A span of tokens read as a name.
#[derive(Clone, Debug)]
struct Span {
    start: usize,
    end: usize,
    text: String,
}

#[derive(Debug)]
struct Sent<'a> {
    toks: Vec<Tok<'a>>,
    claimed: Vec<bool>,
    /// [`Sent::is_separator`] of each token, computed on the first call.
    separators: std::cell::OnceCell<Vec<bool>>,
}

impl<'a> Sent<'a> {
    fn new(toks: Vec<Tok<'a>>) -> Self {
        let claimed = vec![false; toks.len()];
        Self {
            toks,
            claimed,
            separators: std::cell::OnceCell::new(),
        }
    }

    fn len(&self) -> usize {
        self.toks.len()
    }

    fn tok(&self, i: usize) -> Option<&Tok<'a>> {
        self.toks.get(i)
    }

    fn lower(&self, i: usize) -> &str {
        self.tok(i)
            .map_or("", |t| if t.word { t.lower() } else { "" })
    }

    fn is(&self, i: usize, word: &str) -> bool {
        self.tok(i).is_some_and(|t| t.word && t.lower() == word)
    }

    fn is_any(&self, i: usize, words: &(impl Words + ?Sized)) -> bool {
        self.tok(i).is_some_and(|t| t.is_any(words))
    }

    fn is_punct(&self, i: usize, c: char) -> bool {
        self.tok(i)
            .is_some_and(|t| !t.word && t.text.starts_with(c))
    }

    fn free(&self, range: Range<usize>) -> bool {
        range
            .into_iter()
            .all(|k| !matches!(self.claimed.get(k), Some(true)))
    }

    fn claim(&mut self, range: Range<usize>) {
        for k in range {
            if let Some(c) = self.claimed.get_mut(k) {
                *c = true;
            }
        }
    }

    /// Skips one `the` at `i`.
    fn skip_the(&self, i: usize) -> usize {
        if self.is(i, "the") { i + 1 } else { i }
    }

    /// Skips adverbs from `i`.
    fn skip_adverbs(&self, mut i: usize) -> usize {
        while self.is_any(i, ADVERBS) {
            i += 1;
        }
        i
    }

    /// Whether token `i` is punctuation or one of [`CLAUSE_WORDS`].
    fn is_separator(&self, i: usize) -> bool {
        let separators = self.separators.get_or_init(|| {
            self.toks
                .iter()
                .map(|t| !t.word || t.is_any(&CLAUSE_WORD_SET))
                .collect()
        });
        separators.get(i).copied().unwrap_or(false)
    }

    /// The clause holding token `i`: `[start, end)`.
    fn clause(&self, i: usize) -> Range<usize> {
        let start = (0..i)
            .rev()
            .find(|&k| self.is_separator(k))
            .map_or(0, |k| k + 1);
        let end = (i + 1..self.len())
            .find(|&k| self.is_separator(k))
            .unwrap_or(self.len());
        start..end
    }

    /// A name starting at `i` of at most `max` words, whatever the claims.
    fn any_name_at(&self, i: usize, max: usize) -> Option<Span> {
        let first = self.tok(i)?;
        if !first.is_name_word() {
            return None;
        }
        let mut words = vec![first.base().to_owned()];
        let mut end = i + 1;
        let mut closed = first.possessive;
        while !closed && words.len() < max {
            match self.tok(end) {
                Some(t) if t.is_name_word() => {
                    words.push(t.base().to_owned());
                    closed = t.possessive;
                    end += 1;
                }
                Some(t) if t.is_any(NAME_CONNECTORS) || (!t.word && t.text == "&") => {
                    match self.tok(end + 1) {
                        Some(next) if next.is_name_word() => {
                            words.push(t.text.clone().into_owned());
                            words.push(next.base().to_owned());
                            closed = next.possessive;
                            end += 2;
                        }
                        _ => break,
                    }
                }
                _ => break,
            }
        }
        // A possessive inside an organization name: `St Mary's Hospital`.
        let room = max.saturating_sub(words.len());
        if closed && room > 0 {
            let ext = self.any_name_at(end, room).filter(|e| {
                e.text
                    .split_whitespace()
                    .any(|w| ORG_SUFFIXES.contains(&normalize_name(w).as_str()))
            });
            if let Some(ext) = ext {
                if let (Some(last), Some(t)) = (words.last_mut(), self.tok(end - 1)) {
                    (*t.text).clone_into(last);
                }
                words.push(ext.text);
                end = ext.end;
            }
        }
        Some(Span {
            start: i,
            end,
            text: words.join(" "),
        })
    }

    /// A name at `i` none of whose tokens is claimed.
    fn name_at(&self, i: usize, max: usize) -> Option<Span> {
        self.any_name_at(i, max)
            .filter(|span| self.free(span.start..span.end))
    }

    /// Whether one of the three tokens before `i` in its clause negates.
    fn negated(&self, i: usize) -> bool {
        let clause = self.clause(i);
        (clause.start.max(i.saturating_sub(3))..i).any(|k| self.tok(k).is_some_and(Tok::negates))
    }

    /// Whether a word of `words` occurs before `i` in the clause of `i`.
    fn clause_has_before(&self, i: usize, words: &[&str]) -> bool {
        let clause = self.clause(i);
        (clause.start..i).any(|k| self.is_any(k, words))
    }

    /// Whether a word of `words` occurs before `i` in the sentence.
    fn sentence_has_before(&self, i: usize, words: &[&str]) -> bool {
        (0..i).any(|k| self.is_any(k, words))
    }

    /// A role or identity phrase at `i` (after an optional `a`/`an`/`the`)
    /// of at most `max` words, lowercase.
    fn phrase_at(&self, i: usize, max: usize) -> Option<(usize, String)> {
        let start = if self.is_any(i, &["a", "an", "the"]) {
            i + 1
        } else {
            i
        };
        let mut words = Vec::new();
        let mut k = start;
        while words.len() < max {
            match self.tok(k) {
                Some(t) if t.word && !t.is_any(PHRASE_END) => {
                    words.push(t.lower().to_owned());
                    k += 1;
                }
                _ => break,
            }
        }
        let first = words.first()?;
        if PHRASE_REJECT.contains(&first.as_str()) {
            return None;
        }
        Some((k, words.join(" ")))
    }
}

/// A finite verb after a sentence-initial name (`Bob moved…`), which makes
/// the name the subject.
fn finite_verb(t: &Tok) -> bool {
    t.is_any(&[
        "is", "was", "has", "had", "moved", "went", "lived", "worked", "got", "said", "will",
        "would", "can", "and", "just", "also", "loved", "started", "joined", "visited", "left",
    ]) || (t.word && t.lower().len() >= 4 && t.lower().ends_with('s') && !t.lower().ends_with("ss"))
}

// ---------------------------------------------------------------------------
// The batch accumulator.

type Key = (u8, String);

struct NodeAcc {
    key: NodeKey,
    names: BTreeSet<String>,
    aliases: BTreeSet<String>,
    tags: BTreeSet<String>,
    facts: Vec<Fact>,
    sources: BTreeSet<RecordId>,
    confidence: u16,
}

struct EdgeAcc {
    from: NodeKey,
    to: NodeKey,
    relation: String,
    functional: bool,
    valid_from: Option<Timestamp>,
    sources: BTreeSet<RecordId>,
}

#[derive(Default)]
struct Builder {
    nodes: BTreeMap<Key, NodeAcc>,
    edges: BTreeMap<(Key, Key, String), EdgeAcc>,
    /// Facts and edges recorded so far (what a pattern found; no output).
    found: usize,
}

impl Builder {
    /// Records that event `ev` mentions a node; `None` for an empty name.
    fn node(
        &mut self,
        ev: RecordId,
        node_type: NodeType,
        display: &str,
        tags: &[&str],
        alias: Option<&str>,
        confidence: u16,
    ) -> Option<Key> {
        let name = normalize_name(display);
        if name.is_empty() || name.chars().count() > 160 {
            return None;
        }
        let display = single_spaced(display);
        let key = (node_type.rank(), name);
        // Strings are copied only for what the node does not hold yet.
        if !self.nodes.contains_key(&key) {
            let acc = NodeAcc {
                key: NodeKey {
                    node_type,
                    name: key.1.clone(),
                },
                names: BTreeSet::new(),
                aliases: BTreeSet::new(),
                tags: BTreeSet::new(),
                facts: Vec::new(),
                sources: BTreeSet::new(),
                confidence,
            };
            self.nodes.insert(key.clone(), acc);
        }
        let acc = self.nodes.get_mut(&key)?;
        insert_str(&mut acc.names, &display);
        if let Some(alias) = alias {
            insert_str(&mut acc.aliases, alias);
        }
        for tag in tags {
            insert_str(&mut acc.tags, tag);
        }
        acc.sources.insert(ev);
        acc.confidence = acc.confidence.max(confidence);
        Some(key)
    }

    fn fact(&mut self, ev: RecordId, node: &Key, fact: Fact) {
        if let Some(acc) = self.nodes.get_mut(node) {
            acc.facts.push(fact);
            acc.sources.insert(ev);
            self.found += 1;
        }
    }

    fn edge(
        &mut self,
        ev: RecordId,
        from: &Key,
        to: &Key,
        relation: &str,
        functional: bool,
        valid_from: Option<Timestamp>,
    ) {
        if from == to {
            return;
        }
        let (Some(f), Some(t)) = (self.nodes.get(from), self.nodes.get(to)) else {
            return;
        };
        let (from_key, to_key) = (f.key.clone(), t.key.clone());
        self.found += 1;
        let acc = self
            .edges
            .entry((from.clone(), to.clone(), relation.to_owned()))
            .or_insert_with(|| EdgeAcc {
                from: from_key,
                to: to_key,
                relation: relation.to_owned(),
                functional,
                valid_from,
                sources: BTreeSet::new(),
            });
        acc.valid_from = match (acc.valid_from, valid_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        acc.sources.insert(ev);
    }

    fn finish(self, tenant: &str) -> Vec<GraphAssertion> {
        let mut out = Vec::with_capacity(self.nodes.len() + self.edges.len());
        for acc in self.nodes.into_values() {
            let name = acc
                .names
                .iter()
                .next()
                .cloned()
                .unwrap_or_else(|| acc.key.name.clone());
            let aliases = acc
                .aliases
                .iter()
                .filter(|a| normalize_name(a) != acc.key.name)
                .take(MAX_NODE_ALIASES)
                .cloned()
                .collect();
            out.push(GraphAssertion {
                tenant: tenant.to_owned(),
                source_events: acc.sources.into_iter().collect(),
                assertion: Assertion::Node {
                    key: acc.key,
                    name,
                    aliases,
                    tags: acc.tags.into_iter().take(MAX_NODE_TAGS).collect(),
                    facts: merge_facts(acc.facts),
                },
                confidence_milli: acc.confidence,
            });
        }
        for acc in self.edges.into_values() {
            out.push(GraphAssertion {
                tenant: tenant.to_owned(),
                source_events: acc.sources.into_iter().collect(),
                assertion: Assertion::Edge {
                    from: acc.from,
                    to: acc.to,
                    relation: acc.relation,
                    functional: acc.functional,
                    valid_from: acc.valid_from,
                    valid_to: None,
                },
                confidence_milli: HEURISTIC_CONFIDENCE_MILLI,
            });
        }
        out
    }
}

/// Sorts and deduplicates a node's facts; Set facts with the same key and
/// interval are merged into one with the sorted union of their values.
fn merge_facts(facts: Vec<Fact>) -> Vec<Fact> {
    type Group = (
        String,
        u8,
        Option<Timestamp>,
        Option<Timestamp>,
        Vec<String>,
    );
    let mut groups: BTreeMap<Group, (FactMode, BTreeSet<String>)> = BTreeMap::new();
    for f in facts {
        let values = if f.mode == FactMode::Set {
            Vec::new()
        } else {
            f.values.clone()
        };
        let group = (f.key, f.mode.rank(), f.valid_from, f.valid_to, values);
        groups
            .entry(group)
            .or_insert_with(|| (f.mode, BTreeSet::new()))
            .1
            .extend(f.values);
    }
    groups
        .into_iter()
        .map(|((key, _, valid_from, valid_to, _), (mode, values))| Fact {
            key,
            values: values.into_iter().collect(),
            mode,
            valid_from,
            valid_to,
        })
        .collect()
}

// ---------------------------------------------------------------------------
// One event.

/// Whether a found relation happened, is planned or was called off.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum When {
    Past,
    Planned,
    Cancelled,
}

struct EventCtx<'a> {
    id: RecordId,
    time: Option<Timestamp>,
    status: Occurrence,
    speaker: Option<Key>,
    /// Normalized full names and first names of known persons.
    persons: BTreeMap<String, Key>,
    /// Normalized names of organizations and tools found so far.
    non_places: NonPlaces<'a>,
}

/// Normalized names that are no place: a set shared by the events of a
/// batch (borrowed, not copied per event) and the names an event's
/// patterns add.
#[derive(Debug, Default)]
struct NonPlaces<'a> {
    shared: Option<&'a BTreeSet<String>>,
    added: BTreeSet<String>,
}

impl<'a> NonPlaces<'a> {
    /// `shared`, and nothing added yet.
    fn over(shared: &'a BTreeSet<String>) -> Self {
        Self {
            shared: Some(shared),
            added: BTreeSet::new(),
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.added.contains(name) || self.shared.is_some_and(|s| s.contains(name))
    }

    fn insert(&mut self, name: String) {
        if !self.shared.is_some_and(|s| s.contains(&name)) {
            self.added.insert(name);
        }
    }
}

impl EventCtx<'_> {
    /// The event's participants as person nodes (the first is the
    /// speaker), known to the event's patterns by name.
    fn add_participants(&mut self, b: &mut Builder, participants: &[String]) {
        for (i, p) in participants.iter().enumerate() {
            let tag = if i == 0 { "speaker" } else { "participant" };
            let key = b.node(
                self.id,
                NodeType::Person,
                p.trim(),
                &[tag],
                None,
                PARTICIPANT_CONFIDENCE_MILLI,
            );
            if let Some(key) = key {
                if i == 0 {
                    self.speaker = Some(key.clone());
                }
                self.add_person(p, key);
            }
        }
    }

    fn add_person(&mut self, display: &str, key: Key) {
        let full = normalize_name(display);
        if let Some(first) = full.split(' ').next().filter(|f| *f != full) {
            self.persons
                .entry(first.to_owned())
                .or_insert_with(|| key.clone());
        }
        self.persons.entry(full).or_insert(key);
    }

    fn person(&self, display: &str) -> Option<Key> {
        let full = normalize_name(display);
        self.persons.get(&full).cloned().or_else(|| {
            full.split(' ')
                .next()
                .and_then(|first| self.persons.get(first).cloned())
        })
    }

    fn fact(&self, b: &mut Builder, node: &Key, key: &str, values: Vec<String>, mode: FactMode) {
        let values: Vec<String> = values.into_iter().filter(|v| !v.is_empty()).collect();
        if values.is_empty() {
            return;
        }
        b.fact(
            self.id,
            node,
            Fact {
                key: key.to_owned(),
                values,
                mode,
                valid_from: self.time,
                valid_to: None,
            },
        );
    }

    fn node(&self, b: &mut Builder, t: NodeType, name: &str, tags: &[&str]) -> Option<Key> {
        b.node(self.id, t, name, tags, None, HEURISTIC_CONFIDENCE_MILLI)
    }

    fn edge(
        &self,
        b: &mut Builder,
        from: Option<&Key>,
        to: &Key,
        relation: &str,
        functional: bool,
    ) {
        if let Some(from) = from {
            b.edge(self.id, from, to, relation, functional, self.time);
        }
    }

    /// The subject of the verb at `trigger` (see the module docs).
    fn subject(&self, s: &Sent, trigger: usize) -> Option<Key> {
        let mut end = trigger;
        loop {
            let start = (0..end)
                .rev()
                .find(|&k| s.is_separator(k))
                .map_or(0, |k| k + 1);
            if let Some(found) = self.first_subject(s, start..end) {
                return found;
            }
            if start == 0 {
                return self.speaker.clone();
            }
            end = start - 1;
        }
    }

    /// The first subject-like word of a clause: `Some(None)` for an unknown
    /// subject, `None` when there is none.
    fn first_subject(&self, s: &Sent, range: Range<usize>) -> Option<Option<Key>> {
        for k in range {
            let Some(t) = s.tok(k) else { break };
            if !t.word {
                continue;
            }
            if t.is_any(FIRST_PERSON) {
                return Some(self.speaker.clone());
            }
            if t.is_any(OTHER_SUBJECTS) {
                return Some(None);
            }
            if t.is_any(&["my", "our"]) {
                let mut j = k + 1;
                while s.is_any(j, KIN_ADJECTIVES) {
                    j += 1;
                }
                if kin(s.lower(j)).is_some() {
                    let named = s.any_name_at(kin_name_start(s, j + 1), 3);
                    return Some(named.and_then(|n| self.person(&n.text)));
                }
                return Some(self.speaker.clone());
            }
            if t.is_name_word() {
                if let Some(p) = s.any_name_at(k, 3).and_then(|n| self.person(&n.text)) {
                    return Some(Some(p));
                }
                if k > 0 || s.tok(k + 1).is_some_and(finite_verb) {
                    return Some(None);
                }
            }
        }
        None
    }

    /// Past, planned or cancelled, for the clause of token `i`.
    fn when(&self, s: &Sent, i: usize) -> When {
        let clause = s.clause(i);
        let words = || clause.clone().filter_map(move |k| s.tok(k));
        if words().any(|t| t.is_any(CANCEL_MARKERS))
            || clause
                .clone()
                .any(|k| s.is(k, "called") && s.is(k + 1, "off"))
        {
            return When::Cancelled;
        }
        if words().any(|t| t.is_any(PAST_MARKERS)) {
            return When::Past;
        }
        let planned = words().any(|t| t.is_any(PLAN_MARKERS) || t.lower().ends_with("'ll"))
            || clause
                .clone()
                .any(|k| s.is(k, "going") && s.is(k + 1, "to"));
        if planned {
            return When::Planned;
        }
        match self.status {
            Occurrence::Planned => When::Planned,
            Occurrence::Cancelled => When::Cancelled,
            _ => When::Past,
        }
    }

    /// Whether a name may be a place.
    fn place_ok(&self, span: &Span) -> bool {
        self.person(&span.text).is_none()
            && !self.non_places.contains(&normalize_name(&span.text))
            && !has_org_suffix(&span.text)
            && !is_language(&span.text)
            && !is_tech_like(&span.text)
    }

    /// Places at `i` and after it in a list (`Paris, Rome and Lisbon`).
    fn places_at(&self, s: &Sent, i: usize) -> Vec<Span> {
        match s.name_at(s.skip_the(i), 4).filter(|n| self.place_ok(n)) {
            Some(first) => name_list(s, first, 4, |n| self.place_ok(n)),
            None => Vec::new(),
        }
    }
}

/// Where the name after a relation word starts: after an optional comma
/// and title (`my mentor, Dr Patel`).
fn kin_name_start(s: &Sent, mut i: usize) -> usize {
    if s.is_punct(i, ',') {
        i += 1;
    }
    if s.is_any(
        i,
        &[
            "dr",
            "mr",
            "mrs",
            "ms",
            "prof",
            "professor",
            "aunt",
            "uncle",
        ],
    ) {
        i += 1;
    }
    i
}

/// `first` and the names after it in a list (`A, B and C`), each at most
/// `max` words and accepted by `accept`; at most 6.
fn name_list(s: &Sent, first: Span, max: usize, accept: impl Fn(&Span) -> bool) -> Vec<Span> {
    let mut end = first.end;
    let mut out = vec![first];
    while out.len() < 6 {
        let mut k = end;
        if s.is_punct(k, ',') {
            k += 1;
        }
        if s.is_any(k, &["and", "or"]) {
            k += 1;
        }
        if k == end {
            break;
        }
        match s.name_at(s.skip_the(k), max).filter(|n| accept(n)) {
            Some(next) => {
                end = next.end;
                out.push(next);
            }
            None => break,
        }
    }
    out
}

/// The possessive owner at `i` (`my` → the speaker, `his` → unknown), with
/// the index after it; `None` when there is no possessive.
fn owner(ctx: &EventCtx, s: &Sent, i: usize) -> Option<(Option<Key>, usize)> {
    if s.is_any(i, &["my", "our"]) {
        Some((ctx.speaker.clone(), i + 1))
    } else if s.is_any(i, &["his", "her", "their", "your"]) {
        Some((None, i + 1))
    } else {
        None
    }
}

fn project_event(id: RecordId, event: &Event, splitter: Splitter, b: &mut Builder) {
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
        non_places: NonPlaces::default(),
    };
    ctx.add_participants(b, &t.participants);
    let mut sents: Vec<Sent> = event
        .quotes
        .iter()
        .flat_map(|q| splitter.sentences(q))
        .collect();
    let matchers: [fn(&mut EventCtx, &mut Builder, &mut Sent); 9] = [
        match_kinship,
        match_job_loss,
        match_work,
        match_preferences,
        match_identity,
        match_org_suffix,
        match_projects,
        match_tools,
        match_places,
    ];
    for matcher in matchers {
        for s in &mut sents {
            matcher(&mut ctx, b, s);
        }
    }
}

// ---------------------------------------------------------------------------
// The patterns.

/// Pattern 1: `my sister Marta`.
fn match_kinship(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.is_any(i, &["my", "our"]) || !s.free(i..i + 1) {
            continue;
        }
        let mut j = i + 1;
        while s.is_any(j, KIN_ADJECTIVES) {
            j += 1;
        }
        let Some((relation, tag, functional)) = kin(s.lower(j)) else {
            continue;
        };
        let Some(name) = s.name_at(kin_name_start(s, j + 1), 3) else {
            continue;
        };
        s.claim(i..name.end);
        let Some(person) = ctx.node(b, NodeType::Person, &name.text, &[tag]) else {
            continue;
        };
        ctx.add_person(&name.text, person.clone());
        let speaker = ctx.speaker.clone();
        ctx.edge(b, speaker.as_ref(), &person, relation, functional);
    }
}

/// Pattern 2: `lost my job as a banker`, `quit Acme Corp`.
fn match_job_loss(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let verb = s.lower(i);
        let lost = match verb {
            "lost" => true,
            "quit" | "left" => false,
            "laid" | "fired" => true,
            _ => continue,
        };
        if !s.free(i..i + 1) || s.negated(i) {
            continue;
        }
        let (subject, mut j) = match owner(ctx, s, i + 1) {
            Some((who, j)) => (who, j),
            None => (ctx.subject(s, i), i + 1),
        };
        let mut org: Option<Span> = None;
        let mut role: Option<String> = None;
        let mut end;
        if verb == "laid" || verb == "fired" {
            // `laid off from|by|at ORG`, `fired from ORG`.
            if verb == "laid" {
                if !s.is(j, "off") {
                    continue;
                }
                j += 1;
            }
            if !s.is_any(j, &["from", "by", "at"]) {
                continue;
            }
            org = s.name_at(s.skip_the(j + 1), 5);
            let Some(o) = &org else { continue };
            end = o.end;
        } else if s.is(j, "job") || (s.is_any(j, &["new", "old", "current"]) && s.is(j + 1, "job"))
        {
            j += if s.is(j, "job") { 1 } else { 2 };
            end = j;
            if s.is_any(j, &["at", "with"]) {
                org = s.name_at(s.skip_the(j + 1), 5);
                if let Some(o) = &org {
                    end = o.end;
                }
            } else if s.is(j, "as")
                && let Some((e, r)) = s.phrase_at(j + 1, 3)
            {
                end = e;
                role = Some(r);
            }
        } else if lost {
            continue;
        } else {
            // `quit ORG` (any name), `left ORG` (an organization only).
            let Some(o) = s.name_at(s.skip_the(j), 5) else {
                continue;
            };
            let known_org = ctx.non_places.contains(&normalize_name(&o.text));
            let is_org = verb == "quit" || has_org_suffix(&o.text) || known_org;
            if !is_org || ctx.person(&o.text).is_some() {
                continue;
            }
            end = o.end;
            org = Some(o);
        }
        s.claim(i..end);
        let value = match (lost, &org, &role) {
            (true, Some(o), _) => format!("lost job at {}", o.text),
            (true, None, Some(r)) => format!("lost job as {r}"),
            (true, None, None) => "lost job".to_owned(),
            (false, Some(o), _) => format!("left {}", o.text),
            (false, None, Some(r)) => format!("left job as {r}"),
            (false, None, None) => "left job".to_owned(),
        };
        let org_key = org.as_ref().and_then(|o| {
            ctx.non_places.insert(normalize_name(&o.text));
            ctx.node(
                b,
                NodeType::Organization,
                &o.text,
                &["former_employer", "organization"],
            )
        });
        if let Some(subject) = subject {
            ctx.fact(b, &subject, "employment", vec![value], FactMode::State);
            if let Some(o) = &org_key {
                ctx.edge(b, Some(&subject), o, "worked_at", false);
            }
        }
    }
}

/// Pattern 3: `I work at Acme`, `my job as a nurse`, `studying at MIT`.
fn match_work(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let verb = s.lower(i);
        let work_verb = matches!(verb, "work" | "works" | "working" | "worked");
        let used_to = i >= 2 && s.is(i - 2, "used") && s.is(i - 1, "to");
        let past = verb == "worked" || used_to;
        if !s.free(i..i + 1) {
            continue;
        }
        // The employer-or-school relation and where its name starts.
        let (relation, functional, tag, at): (&str, bool, &str, usize) = match verb {
            _ if work_verb && s.is_any(i + 1, &["at", "for"]) => {
                if past {
                    ("worked_at", false, "former_employer", i + 2)
                } else {
                    ("works_at", true, "employer", i + 2)
                }
            }
            "job" if s.is_any(i + 1, &["at", "with"]) => ("works_at", true, "employer", i + 2),
            "employed" if s.is_any(i + 1, &["at", "by"]) => ("works_at", true, "employer", i + 2),
            "hired" if s.is_any(i + 1, &["at", "by"]) => ("works_at", true, "employer", i + 2),
            "intern" | "interning" if s.is(i + 1, "at") => ("works_at", true, "employer", i + 2),
            "joined" | "join" | "joins" | "joining" => ("works_at", true, "employer", i + 1),
            "study" | "studies" | "studying" if s.is(i + 1, "at") => {
                ("studies_at", false, "school", i + 2)
            }
            "studied" if s.is(i + 1, "at") => ("studied_at", false, "school", i + 2),
            _ => {
                match_role(ctx, b, s, i, work_verb, past);
                continue;
            }
        };
        let Some(org) = s.name_at(s.skip_the(at), 5) else {
            continue;
        };
        if ctx.person(&org.text).is_some() {
            continue;
        }
        let is_job = verb == "job";
        s.claim(i..org.end);
        ctx.non_places.insert(normalize_name(&org.text));
        let Some(org_key) = ctx.node(b, NodeType::Organization, &org.text, &[tag, "organization"])
        else {
            continue;
        };
        let planned = !past && relation == "works_at" && planned_clause(s, i);
        let hypothetical = s.negated(i) || s.clause_has_before(i, JOB_SEARCH) || planned;
        if hypothetical {
            continue;
        }
        let subject = if is_job {
            job_owner(ctx, s, i)
        } else {
            ctx.subject(s, i)
        };
        ctx.edge(b, subject.as_ref(), &org_key, relation, functional);
        // `working at Google last week as a software engineer`.
        let role_at = (org.end..s.clause(org.end).end.min(org.end + 4)).find(|&k| s.is(k, "as"));
        if let (Some(subject), Some(k), true) = (subject, role_at, tag != "school")
            && let Some((end, role)) = s.phrase_at(k + 1, 3)
        {
            s.claim(k..end);
            let value = if past { format!("former {role}") } else { role };
            ctx.fact(b, &subject, "occupation", vec![value], FactMode::State);
        }
    }
}

/// Whether the clause of `i` itself speaks of a plan (`going to join`).
fn planned_clause(s: &Sent, i: usize) -> bool {
    let clause = s.clause(i);
    clause.clone().any(|k| {
        s.is_any(k, PLAN_MARKERS)
            || s.lower(k).ends_with("'ll")
            || (s.is(k, "going") && s.is(k + 1, "to"))
    })
}

/// The owner of a `job` at `i`: `my (new) job` → the speaker.
fn job_owner(ctx: &EventCtx, s: &Sent, i: usize) -> Option<Key> {
    for back in 1..=2 {
        let Some(k) = i.checked_sub(back) else { break };
        if let Some((who, _)) = owner(ctx, s, k) {
            return who;
        }
    }
    ctx.subject(s, i)
}

/// Roles of pattern 3: `work as a nurse`, `my job as a teacher at X`.
fn match_role(
    ctx: &mut EventCtx,
    b: &mut Builder,
    s: &mut Sent,
    i: usize,
    work_verb: bool,
    past: bool,
) {
    let is_job = s.is(i, "job");
    if !(work_verb || is_job) || !s.is(i + 1, "as") || s.negated(i) {
        return;
    }
    let Some((end, role)) = s.phrase_at(i + 2, 3) else {
        return;
    };
    if !s.free(i..end) {
        return;
    }
    s.claim(i..end);
    let subject = if is_job {
        job_owner(ctx, s, i)
    } else {
        ctx.subject(s, i)
    };
    let Some(subject) = subject else { return };
    let value = if past { format!("former {role}") } else { role };
    ctx.fact(b, &subject, "occupation", vec![value], FactMode::State);
    role_employer(ctx, b, s, end, &subject, past);
}

/// `… ROLE at|for ORG` → `works_at` (or `worked_at`).
fn role_employer(
    ctx: &mut EventCtx,
    b: &mut Builder,
    s: &mut Sent,
    at: usize,
    subject: &Key,
    past: bool,
) {
    if !s.is_any(at, &["at", "for"]) {
        return;
    }
    let Some(org) = s.name_at(s.skip_the(at + 1), 5) else {
        return;
    };
    if ctx.person(&org.text).is_some() {
        return;
    }
    s.claim(at..org.end);
    ctx.non_places.insert(normalize_name(&org.text));
    let (relation, functional, tag) = if past {
        ("worked_at", false, "former_employer")
    } else {
        ("works_at", true, "employer")
    };
    if let Some(org_key) = ctx.node(b, NodeType::Organization, &org.text, &[tag, "organization"]) {
        ctx.edge(b, Some(subject), &org_key, relation, functional);
    }
}

/// Pattern 4: `I love pottery and painting`, `Marta hates flying`.
fn match_preferences(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let (subject, after_subject, first_person) = if s
            .is_any(i, &["i", "we", "i'm", "im", "we're"])
            || (s.is_any(i, &["am", "are"]) && i > 0 && s.is_any(i - 1, &["i", "we"]))
        {
            (ctx.speaker.clone(), i + 1, true)
        } else if let Some(p) = s
            .tok(i)
            .filter(|t| t.is_name_word())
            .and_then(|_| s.any_name_at(i, 3))
            .filter(|n| n.start == i)
            .and_then(|n| ctx.person(&n.text).map(|p| (p, n.end)))
        {
            (Some(p.0), p.1, false)
        } else {
            continue;
        };
        let copula = s.is_any(i, &["i'm", "im", "we're", "am", "are"]);
        let j = s.skip_adverbs(after_subject);
        let (key, object_at) = if copula {
            if s.is(j, "into") {
                ("likes", j + 1)
            } else if s.is(j, "a") {
                let mut k = j + 1;
                while s.is_any(k, &["big", "huge", "massive", "great", "real"]) {
                    k += 1;
                }
                if s.is(k, "fan") && s.is(k + 1, "of") {
                    ("likes", k + 2)
                } else {
                    continue;
                }
            } else {
                continue;
            }
        } else if first_person {
            let w = s.lower(j);
            if matches!(w, "love" | "like" | "enjoy" | "prefer" | "adore") {
                ("likes", j + 1)
            } else if matches!(w, "hate" | "dislike" | "detest" | "despise" | "loathe") {
                ("dislikes", j + 1)
            } else if matches!(w, "don't" | "dont" | "didn't") || (w == "do" && s.is(j + 1, "not"))
            {
                let v = s.skip_adverbs(if w == "do" { j + 2 } else { j + 1 });
                if s.is_any(v, &["like", "love", "enjoy"]) {
                    ("dislikes", v + 1)
                } else {
                    continue;
                }
            } else if matches!(w, "can't" | "cannot") && s.is(j + 1, "stand") {
                ("dislikes", j + 2)
            } else {
                continue;
            }
        } else {
            let w = s.lower(j);
            if matches!(w, "loves" | "likes" | "enjoys" | "prefers" | "adores") {
                ("likes", j + 1)
            } else if matches!(w, "hates" | "dislikes" | "detests" | "despises") {
                ("dislikes", j + 1)
            } else if matches!(w, "doesn't" | "didn't")
                && s.is_any(j + 1, &["like", "love", "enjoy"])
            {
                ("dislikes", j + 2)
            } else {
                continue;
            }
        };
        let Some(values) = object_values(s, object_at) else {
            continue;
        };
        // Only the subject and verb are claimed: the object stays free for
        // other patterns (`I love living in Lisbon`).
        s.claim(i..object_at);
        if let Some(subject) = subject {
            ctx.fact(b, &subject, key, values, FactMode::Set);
        }
    }
}

/// The values of a preference object at `i` (see pattern 4).
fn object_values(s: &Sent, i: usize) -> Option<Vec<String>> {
    let mut k = if s.is(i, "to") { i + 1 } else { i };
    let mut parts: Vec<Vec<String>> = vec![Vec::new()];
    let mut words = 0;
    while words < 6 {
        let Some(t) = s.tok(k) else { break };
        if !t.word {
            if t.text == "," {
                parts.push(Vec::new());
                k += 1;
                continue;
            }
            break;
        }
        if t.is_any(OBJECT_END) {
            break;
        }
        words += 1;
        k += 1;
        if t.is_any(&["and", "or"]) {
            parts.push(Vec::new());
            continue;
        }
        if let Some(last) = parts.last_mut() {
            last.push(t.text.clone().into_owned());
        }
    }
    let mut values = Vec::new();
    for (n, mut part) in parts.into_iter().enumerate() {
        while part
            .first()
            .is_some_and(|w| matches!(w.to_lowercase().as_str(), "a" | "an" | "the" | "to"))
        {
            part.remove(0);
        }
        let Some(first) = part.first().map(|w| w.to_lowercase()) else {
            continue;
        };
        if PRONOUN_STARTS.contains(&first.as_str()) {
            break;
        }
        if OBJECT_REJECT.contains(&first.as_str()) {
            if n == 0 {
                return None;
            }
            break;
        }
        values.push(part.join(" "));
    }
    (!values.is_empty()).then_some(values)
}

/// Pattern 5: `I'm a nurse`, `I am a single mom`.
fn match_identity(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        let j = if s.is_any(i, &["i'm", "im"]) {
            i + 1
        } else if s.is(i, "i") && s.is(i + 1, "am") {
            i + 2
        } else {
            continue;
        };
        let j = s.skip_adverbs(j);
        if !s.is_any(j, &["a", "an"]) || !s.free(i..j + 1) {
            continue;
        }
        let Some((end, phrase)) = s.phrase_at(j, 4) else {
            continue;
        };
        if !s.free(i..end) || s.negated(i) {
            continue;
        }
        s.claim(i..end);
        let Some(speaker) = ctx.speaker.clone() else {
            continue;
        };
        // `rsplit` yields at least one piece: never the default.
        let head = phrase.rsplit(' ').next().unwrap_or_default();
        if OCCUPATIONS.contains(&head) {
            ctx.fact(b, &speaker, "occupation", vec![phrase], FactMode::State);
            role_employer(ctx, b, s, end, &speaker, false);
        } else {
            ctx.fact(b, &speaker, "identity", vec![phrase], FactMode::Set);
        }
    }
}

/// Pattern 6: `at|for|join|from … ORG-with-suffix`.
fn match_org_suffix(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.is_any(i, &["at", "for", "join", "joined", "from", "with", "by"]) {
            continue;
        }
        let Some(org) = s.name_at(s.skip_the(i + 1), 5) else {
            continue;
        };
        if !has_org_suffix(&org.text) {
            continue;
        }
        s.claim(org.start..org.end);
        ctx.non_places.insert(normalize_name(&org.text));
        ctx.node(b, NodeType::Organization, &org.text, &["organization"]);
    }
}

/// Pattern 7: `project Atlas`, `the Atlas project`, `working on Atlas`.
fn match_projects(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.free(i..i + 1) {
            continue;
        }
        let (name, alias, trigger) = if s.is(i, "project") {
            if let Some(n) = s.name_at(i + 1, 3) {
                let capital = s.tok(i).is_some_and(|t| t.upper);
                let alias = capital.then(|| format!("Project {}", n.text));
                (n, alias, i)
            } else {
                // `the Atlas project`: the name ends just before.
                let mut start = i;
                while start > 0
                    && i - start < 3
                    && s.tok(start - 1).is_some_and(Tok::is_name_word)
                    && s.free(start - 1..start)
                {
                    start -= 1;
                }
                if start == i {
                    continue;
                }
                let Some(n) = s.name_at(start, i - start).filter(|n| n.end == i) else {
                    continue;
                };
                (n, None, start)
            }
        } else if s.is_any(i, &["work", "works", "working", "worked"]) && s.is(i + 1, "on") {
            let Some(n) = s.name_at(s.skip_the(i + 2), 3) else {
                continue;
            };
            (n, None, i)
        } else {
            continue;
        };
        if ctx.person(&name.text).is_some() {
            continue;
        }
        // `working on Project Atlas`: the name is `Atlas`.
        let (text, alias) = match name.text.strip_prefix("Project ") {
            Some(rest) => (rest.to_owned(), Some(name.text.clone())),
            None => (name.text.clone(), alias),
        };
        s.claim(trigger.min(i)..name.end.max(i + 1));
        let negated = s.negated(trigger);
        let subject = ctx.subject(s, trigger);
        ctx.non_places.insert(normalize_name(&text));
        let (node, relation) = if alias.is_none() && !s.is(i, "project") && is_tech_like(&text) {
            (ctx.node(b, NodeType::Tool, &text, &["tool"]), "uses")
        } else {
            let node = b.node(
                ctx.id,
                NodeType::Project,
                &text,
                &["project"],
                alias.as_deref(),
                HEURISTIC_CONFIDENCE_MILLI,
            );
            (node, "works_on")
        };
        if let (Some(node), false) = (node, negated) {
            ctx.edge(b, subject.as_ref(), &node, relation, false);
        }
    }
}

/// Pattern 8: `we use Notion`, `migrated from SQLite to PostgreSQL`.
fn match_tools(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.free(i..i + 1) {
            continue;
        }
        let verb = s.lower(i);
        if matches!(verb, "use" | "uses" | "used" | "using") {
            let accept = |n: &Span| ctx.person(&n.text).is_none() && !is_language(&n.text);
            let Some(first) = s.name_at(s.skip_the(i + 1), 3).filter(|n| accept(n)) else {
                continue;
            };
            let names = name_list(s, first, 3, accept);
            let negated = s.negated(i);
            let subject = ctx.subject(s, i);
            s.claim(i..i + 1);
            for name in names {
                s.claim(name.start..name.end);
                ctx.non_places.insert(normalize_name(&name.text));
                if let Some(tool) = ctx.node(b, NodeType::Tool, &name.text, &["tool"])
                    && !negated
                {
                    ctx.edge(b, subject.as_ref(), &tool, "uses", false);
                }
            }
            continue;
        }
        let moving = matches!(verb, "move" | "moved" | "moving" | "moves");
        let migrating = moving
            || matches!(
                verb,
                "switch"
                    | "switched"
                    | "switching"
                    | "switches"
                    | "migrate"
                    | "migrated"
                    | "migrating"
                    | "migrates"
                    | "upgrade"
                    | "upgraded"
                    | "upgrading"
                    | "port"
                    | "ported"
                    | "porting"
                    | "transitioned"
                    | "transitioning"
            );
        if !migrating {
            continue;
        }
        let accept = |n: &Span| {
            ctx.person(&n.text).is_none()
                && !is_language(&n.text)
                && (!moving || is_tech_like(&n.text))
        };
        // Up to 3 object words before `from`/`to` (`migrated our database
        // from …`).
        let mut k = i + 1;
        if s.is(k, "over") {
            k += 1;
        }
        let mut skipped = 0;
        while skipped < 3
            && !s.is_any(k, &["from", "to"])
            && s.tok(k)
                .is_some_and(|t| t.word && !t.upper && !t.is_any(CLAUSE_WORDS))
        {
            k += 1;
            skipped += 1;
        }
        let mut found: Vec<(Span, &str)> = Vec::new();
        if s.is(k, "from")
            && let Some(n) = s.name_at(s.skip_the(k + 1), 3).filter(|n| accept(n))
        {
            k = n.end;
            found.push((n, "migrating_from"));
        }
        if s.is(k, "to")
            && let Some(n) = s.name_at(s.skip_the(k + 1), 3).filter(|n| accept(n))
        {
            k = n.end;
            found.push((n, "migrating_to"));
        }
        // `switched to Linear from Jira`.
        if s.is(k, "from")
            && found.len() == 1
            && !s.is(i + 1, "from")
            && let Some(n) = s.name_at(s.skip_the(k + 1), 3).filter(|n| accept(n))
        {
            found.push((n, "migrating_from"));
        }
        if found.is_empty() {
            continue;
        }
        let negated = s.negated(i);
        let subject = ctx.subject(s, i);
        for (n, relation) in found {
            s.claim(n.start..n.end);
            ctx.non_places.insert(normalize_name(&n.text));
            if let Some(tool) = ctx.node(b, NodeType::Tool, &n.text, &["tool"])
                && !negated
            {
                ctx.edge(b, subject.as_ref(), &tool, relation, false);
            }
        }
        s.claim(i..i + 1);
    }
}

/// Pattern 9: places.
fn match_places(ctx: &mut EventCtx, b: &mut Builder, s: &mut Sent) {
    for i in 0..s.len() {
        if !s.free(i..i + 1) {
            continue;
        }
        // Borrowed: the sentence is only read until the claims below.
        let w = s.lower(i);
        let prev = if i > 0 { s.lower(i - 1) } else { "" };
        let used_to = i >= 3 && s.is(i - 3, "used") && s.is(i - 2, "to");
        // (relation, functional, tag, first place token, a visit whose
        // tense is read from the clause)
        let found: Option<(Option<&str>, bool, &str, usize, bool)> = match w {
            "in" if matches!(
                prev,
                "live" | "lives" | "living" | "based" | "reside" | "resides" | "residing"
            ) =>
            {
                if used_to && prev == "live" {
                    Some((Some("lived_in"), false, "home", i + 1, false))
                } else {
                    Some((Some("lives_in"), true, "home", i + 1, false))
                }
            }
            "in" if prev == "lived" => Some((Some("lived_in"), false, "home", i + 1, false)),
            "in" if prev == "born" => Some((Some("born_in"), true, "origin", i + 1, false)),
            "in" if prev == "up" && i >= 2 && s.is(i - 2, "grew") => {
                Some((Some("comes_from"), false, "origin", i + 1, false))
            }
            "to" if matches!(prev, "moved" | "relocated")
                || (prev == "back" && i >= 2 && s.is(i - 2, "moved")) =>
            {
                Some((Some("lives_in"), true, "home", i + 1, false))
            }
            "to" if matches!(
                prev,
                "move" | "moving" | "moves" | "relocate" | "relocating"
            ) =>
            {
                Some((Some("plans_to_move_to"), false, "destination", i + 1, false))
            }
            "from" if matches!(prev, "moved" | "relocated" | "move" | "moving") => {
                Some((Some("lived_in"), false, "home", i + 1, false))
            }
            "from"
                if matches!(
                    prev,
                    "i'm"
                        | "im"
                        | "am"
                        | "is"
                        | "are"
                        | "we're"
                        | "she's"
                        | "he's"
                        | "they're"
                        | "originally"
                        | "come"
                        | "comes"
                ) =>
            {
                Some((Some("comes_from"), false, "origin", i + 1, false))
            }
            "visited" | "visit" | "visiting" | "visits" | "toured" | "touring" | "explored"
            | "exploring" => Some((None, false, "destination", i + 1, true)),
            "to" | "from" => {
                if s.sentence_has_before(i, TRAVEL_WORDS) {
                    Some((None, false, "destination", i + 1, true))
                } else {
                    None
                }
            }
            "in" | "at" | "around" => {
                let trip = s.sentence_has_before(i, TRAVEL_WORDS);
                Some((
                    None,
                    false,
                    if trip { "destination" } else { "place" },
                    i + 1,
                    trip,
                ))
            }
            _ => None,
        };
        let Some((relation, functional, tag, at, visit)) = found else {
            continue;
        };
        let places = ctx.places_at(s, at);
        if places.is_empty() {
            continue;
        }
        let relation = if visit {
            match ctx.when(s, i) {
                When::Past => Some("visited"),
                When::Planned => Some("plans_to_visit"),
                When::Cancelled => None,
            }
        } else {
            relation
        };
        // Only a visit verb, a travel word or a residence verb makes an edge.
        let relation = if matches!(w, "in" | "at" | "around") && visit_less(s, i, relation) {
            None
        } else {
            relation
        };
        let negated = s.negated(i) || (i > 0 && s.negated(i - 1));
        let subject = ctx.subject(s, i);
        for (n, p) in places.into_iter().enumerate() {
            s.claim(p.start..p.end);
            let Some(place) = ctx.node(b, NodeType::Place, &p.text, &["place", tag]) else {
                continue;
            };
            // A functional relation has one target: `born in Dublin,
            // Ireland` relates to the first place only.
            if let (Some(relation), false, true) = (relation, negated, n == 0 || !functional) {
                ctx.edge(b, subject.as_ref(), &place, relation, functional);
            }
        }
        s.claim(i..i + 1);
    }
}

/// Whether a generic `in|at|around PLACE` lacks a travel word before it.
fn visit_less(s: &Sent, i: usize, relation: Option<&str>) -> bool {
    matches!(relation, Some("visited" | "plans_to_visit"))
        && !s.sentence_has_before(i, TRAVEL_WORDS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use strataflow_record::SourceTime;
    use strataflow_record::record::{
        Criticality, EventTemporal, EventType, Precision, Scope, TimeBasis,
    };

    const DAY: i64 = 86_400_000;
    /// 2023-05-08T12:00:00Z.
    const T0: i64 = 1_683_547_200_000;

    /// Each token's classes answer as each classed set's look-up does.
    #[test]
    fn token_classes_are_the_classed_sets_lookups() {
        let mut words: Vec<&str> = CLASSED
            .iter()
            .flat_map(|set| set.words())
            .copied()
            .collect();
        words.extend([
            "",
            "x",
            "bach",
            "kickboxing",
            "counseling",
            "extraordinarily-long-word",
            "i'm",
            "don't",
            "café",
            "naïveté",
            "mays",
            "monday's",
        ]);
        for (k, set) in CLASSED.iter().enumerate() {
            assert_eq!(
                set.class().map(usize::from),
                Some(k),
                "set {k} is classed {k}"
            );
        }
        for word in words {
            let (classes, _) = classes_of(word);
            for (k, set) in CLASSED.iter().enumerate() {
                assert_eq!(
                    classes >> k & 1 == 1,
                    set.contains(word),
                    "`{word}` in set {k}"
                );
            }
        }
    }

    /// The allocation-free path is `normalize_name` of one word.
    #[test]
    fn a_normalized_word_is_its_normalized_name() {
        for word in [
            "",
            "a",
            "The",
            "'s",
            "Bach,",
            "(C++)",
            "C#.",
            "\"Hello\"",
            "Caroline's",
            "it’s",
            "Café!",
            "x y",
            "—dash—",
            "ALLCAPS",
            "...",
            "tab\tbed",
            "a-very-long-ascii-word-of-40-bytes-xx",
            "a-word-of-exactly-thirty-two-by",
            "under_score",
            "+plus+",
        ] {
            assert_eq!(
                with_normalized_word(word, str::to_owned),
                normalize_name(word),
                "`{word}`"
            );
        }
    }

    fn rid(n: u8) -> RecordId {
        RecordId([n; 32])
    }

    fn event(speaker: &str, quote: &str, status: Occurrence, happened: Option<i64>) -> Event {
        Event {
            tenant: "t".to_owned(),
            block: rid(200),
            source_messages: vec![rid(201)],
            title: "title".to_owned(),
            summary: "summary".to_owned(),
            narrative: "narrative".to_owned(),
            tags: vec!["tag".to_owned()],
            quotes: vec![quote.to_owned()],
            temporal: EventTemporal {
                mentioned_at: SourceTime::utc_without_offset(T0),
                happened_start: happened.map(Timestamp),
                happened_end: None,
                original_text: None,
                precision: Precision::Day,
                basis: TimeBasis::Relative,
                status,
                participants: vec![speaker.to_owned()],
                event_type: EventType::Other,
                supersedes: Vec::new(),
                conflicts_with: Vec::new(),
            },
            scope: Scope::User,
            criticality: Criticality::Routine,
            confidence_milli: 800,
        }
    }

    fn fixture() -> Vec<(RecordId, Event)> {
        vec![
            (
                rid(1),
                event(
                    "Ana",
                    "My sister Marta lives in Porto.",
                    Occurrence::Ongoing,
                    None,
                ),
            ),
            (
                rid(2),
                event(
                    "Ana",
                    "I've been to Paris yesterday!",
                    Occurrence::Occurred,
                    Some(T0 - DAY),
                ),
            ),
            (
                rid(3),
                event(
                    "Ana",
                    "Lost my job as a banker yesterday, so I'm gonna take a shot at starting my own business.",
                    Occurrence::Occurred,
                    Some(T0 - DAY),
                ),
            ),
            (
                rid(4),
                event(
                    "Ana",
                    "I love pottery and painting.",
                    Occurrence::Ongoing,
                    None,
                ),
            ),
        ]
    }

    fn project(events: &[(RecordId, Event)]) -> Vec<GraphAssertion> {
        HeuristicProjector
            .project(&ProjectionInput {
                tenant: "t",
                events,
                attempt: 1,
            })
            .unwrap()
    }

    fn key(t: NodeType, name: &str) -> NodeKey {
        NodeKey {
            node_type: t,
            name: name.to_owned(),
        }
    }

    fn fact(key: &str, values: &[&str], mode: FactMode, at: i64) -> Fact {
        Fact {
            key: key.to_owned(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
            mode,
            valid_from: Some(Timestamp(at)),
            valid_to: None,
        }
    }

    fn node(out: &[GraphAssertion], k: &NodeKey) -> Option<GraphAssertion> {
        out.iter()
            .find(|a| matches!(&a.assertion, Assertion::Node { key, .. } if key == k))
            .cloned()
    }

    /// (from, relation, to, functional, sources) of every edge.
    fn edges(out: &[GraphAssertion]) -> Vec<(String, String, String, bool, Vec<RecordId>)> {
        out.iter()
            .filter_map(|a| match &a.assertion {
                Assertion::Edge {
                    from,
                    to,
                    relation,
                    functional,
                    ..
                } => Some((
                    from.name.clone(),
                    relation.clone(),
                    to.name.clone(),
                    *functional,
                    a.source_events.clone(),
                )),
                Assertion::Node { .. } => None,
            })
            .collect()
    }

    fn node_keys(out: &[GraphAssertion]) -> Vec<NodeKey> {
        out.iter()
            .filter_map(|a| match &a.assertion {
                Assertion::Node { key, .. } => Some(key.clone()),
                Assertion::Edge { .. } => None,
            })
            .collect()
    }

    fn facts_of(out: &[GraphAssertion], k: &NodeKey) -> Vec<Fact> {
        match node(out, k).map(|a| a.assertion) {
            Some(Assertion::Node { facts, .. }) => facts,
            _ => Vec::new(),
        }
    }

    fn edges_of(quote: &str) -> Vec<(String, String, String)> {
        edges(&project(&[(
            rid(9),
            event("Ana", quote, Occurrence::Unknown, None),
        )]))
        .into_iter()
        .map(|(f, r, t, _, _)| (f, r, t))
        .collect()
    }

    fn e(from: &str, relation: &str, to: &str) -> (String, String, String) {
        (from.to_owned(), relation.to_owned(), to.to_owned())
    }

    fn edges_by(p: &dyn Projector, quote: &str) -> Vec<(String, String, String)> {
        let events = [(rid(9), event("Ana", quote, Occurrence::Unknown, None))];
        let out = p
            .project(&ProjectionInput {
                tenant: "t",
                events: &events,
                attempt: 1,
            })
            .unwrap();
        edges(&out)
            .into_iter()
            .map(|(f, r, t, _, _)| (f, r, t))
            .collect()
    }

    /// [`normalize_name`] as it was written first (every name through
    /// the general path): the ASCII fast path must answer the same.
    fn normalize_name_general(name: &str) -> String {
        let lower = name.replace(['’', '‘'], "'").to_lowercase();
        let collapsed = lower.split_whitespace().collect::<Vec<_>>().join(" ");
        collapsed.trim_matches(name_edge).to_owned()
    }

    /// Every run of one to four whitespace-separated tokens of every LoCoMo
    /// turn, and edge cases (empty, punctuation only, `C++`, control
    /// whitespace, non-ASCII), normalise the same on both paths.
    #[test]
    fn the_ascii_path_of_normalize_name_changes_nothing() {
        let mut names = 0;
        for (speaker, text) in super::statements::tests::locomo_turns() {
            let toks: Vec<&str> = text.split(' ').collect();
            for n in 1..=4 {
                for w in toks.windows(n) {
                    let name = w.join(" ");
                    assert_eq!(
                        normalize_name(&name),
                        normalize_name_general(&name),
                        "{name:?}"
                    );
                    names += 1;
                }
            }
            assert_eq!(normalize_name(&speaker), normalize_name_general(&speaker));
        }
        assert!(names > 50_000, "{names} names");
        for name in [
            "",
            " ",
            "...",
            "\"C++,\"",
            " Dr.  Patel\t\n",
            "C#",
            "\u{b}A\u{c}B\r",
            "-x-",
            "ΣΑΣ",
            "Mel’s",
            "“Orbit”",
            "São  Paulo!",
            "İstanbul",
            "a\u{85}b",
        ] {
            assert_eq!(
                normalize_name(name),
                normalize_name_general(name),
                "{name:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn normalize_name_paths_agree(name in "[ -~\t\n\u{b}\u{c}\r’ΣÉ]{0,24}") {
            proptest::prop_assert_eq!(normalize_name(&name), normalize_name_general(&name));
        }
    }

    /// The first form of [`tokenize`] (over a vector of characters): the
    /// reference the one that reads byte spans must agree with.
    fn tokenize_by_chars(text: &str, split: bool) -> Vec<Sent<'_>> {
        let chars: Vec<char> = text
            .chars()
            .map(|c| match c {
                '’' | '‘' | '`' => '\'',
                '“' | '”' => '"',
                c => c,
            })
            .collect();
        let mut out = Vec::new();
        let mut toks: Vec<Tok> = Vec::new();
        let mut word = String::new();
        let alnum = |k: Option<usize>| {
            k.and_then(|k| chars.get(k))
                .is_some_and(|c| c.is_alphanumeric())
        };
        for (i, &c) in chars.iter().enumerate() {
            let joins = c.is_alphanumeric()
                || (matches!(c, '\'' | '-' | '_' | '.' | '&')
                    && alnum(i.checked_sub(1))
                    && alnum(Some(i + 1)))
                || (matches!(c, '+' | '#') && !word.is_empty());
            if joins {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                toks.push(Tok::word(Cow::Owned(std::mem::take(&mut word))));
            }
            match c {
                '.' | '!' | '?' | '\n' | '…' if split && !toks.is_empty() => {
                    out.push(Sent::new(std::mem::take(&mut toks)));
                }
                ',' | ';' | ':' | '(' | ')' | '"' | '-' | '—' | '–' | '/' | '[' | ']' => {
                    toks.push(Tok::punct(Cow::Owned(c.to_string())));
                }
                _ => {}
            }
        }
        if !word.is_empty() {
            toks.push(Tok::word(Cow::Owned(word)));
        }
        if !toks.is_empty() {
            out.push(Sent::new(toks));
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn tokenize_agrees_with_its_first_form(
            text in "[a-zA-Z0-9 .,!?'’‘`“”&_+#:;()\\-—…/\n\\[\\]éÉ記]{0,40}",
            split: bool,
        ) {
            proptest::prop_assert_eq!(
                format!("{:?}", tokenize(&text, split)),
                format!("{:?}", tokenize_by_chars(&text, split))
            );
        }
    }

    #[test]
    fn version_2_keeps_a_title_in_its_sentence_version_1_does_not() {
        let quote = "my mentor Dr. Patel joined the team. She said I should use Figma.";
        let v1 = edges_by(&HeuristicProjector, quote);
        let v2 = edges_by(&HeuristicProjectorV2, quote);
        assert_eq!(v1, vec![e("ana", "uses", "figma")]);
        assert_eq!(
            v2,
            vec![e("ana", "mentor", "patel"), e("ana", "uses", "figma")]
        );
        let quote = "My friend Prof. Lee lives in Porto.";
        assert_eq!(edges_by(&HeuristicProjector, quote), vec![]);
        assert_eq!(
            edges_by(&HeuristicProjectorV2, quote),
            vec![e("ana", "friend", "lee"), e("lee", "lives_in", "porto")]
        );
    }

    #[test]
    fn versions_agree_without_abbreviations() {
        for quote in [
            "My mentor Dr Patel said I should use Figma and Python.",
            "We switched to Linear from Jira last sprint! I moved to Lisbon.",
            "I work at Acme Corp as a product manager. My wife Ana loves tea.",
        ] {
            assert_eq!(
                edges_by(&HeuristicProjector, quote),
                edges_by(&HeuristicProjectorV2, quote),
                "{quote}"
            );
        }
    }

    #[test]
    fn version_2_id_and_config_hash() {
        let p = HeuristicProjectorV2;
        assert_eq!(p.id().to_string(), "heuristic-projector@2");
        assert_ne!(p.config_hash(), HeuristicProjector.config_hash());
    }

    #[test]
    fn id_and_config_hash() {
        let p = HeuristicProjector;
        assert_eq!(p.id().to_string(), "heuristic-projector@1");
        assert_eq!(
            p.config_hash(),
            config_hash(&OperatorId::new("heuristic-projector", 1), "{}")
        );
    }

    #[test]
    fn golden_fixture() {
        let out = project(&fixture());
        assert_eq!(
            node_keys(&out),
            vec![
                key(NodeType::Person, "ana"),
                key(NodeType::Person, "marta"),
                key(NodeType::Place, "paris"),
                key(NodeType::Place, "porto"),
            ]
        );
        let ana = node(&out, &key(NodeType::Person, "ana")).unwrap();
        assert_eq!(ana.source_events, vec![rid(1), rid(2), rid(3), rid(4)]);
        assert_eq!(ana.confidence_milli, PARTICIPANT_CONFIDENCE_MILLI);
        match &ana.assertion {
            Assertion::Node {
                name,
                aliases,
                tags,
                facts,
                ..
            } => {
                assert_eq!(name, "Ana");
                assert!(aliases.is_empty());
                assert_eq!(tags, &vec!["speaker".to_owned()]);
                assert_eq!(
                    facts,
                    &vec![
                        fact(
                            "employment",
                            &["lost job as banker"],
                            FactMode::State,
                            T0 - DAY
                        ),
                        fact("likes", &["painting", "pottery"], FactMode::Set, T0),
                    ]
                );
            }
            Assertion::Edge { .. } => panic!("not a node"),
        }
        let marta = node(&out, &key(NodeType::Person, "marta")).unwrap();
        assert_eq!(marta.source_events, vec![rid(1)]);
        match &marta.assertion {
            Assertion::Node {
                name, tags, facts, ..
            } => {
                assert_eq!(name, "Marta");
                assert_eq!(tags, &vec!["family".to_owned()]);
                assert!(facts.is_empty());
            }
            Assertion::Edge { .. } => panic!("not a node"),
        }
        let porto = node(&out, &key(NodeType::Place, "porto")).unwrap();
        match &porto.assertion {
            Assertion::Node { name, tags, .. } => {
                assert_eq!(name, "Porto");
                assert_eq!(tags, &vec!["home".to_owned(), "place".to_owned()]);
            }
            Assertion::Edge { .. } => panic!("not a node"),
        }
        assert_eq!(
            edges(&out),
            vec![
                (
                    "ana".to_owned(),
                    "sister".to_owned(),
                    "marta".to_owned(),
                    false,
                    vec![rid(1)]
                ),
                (
                    "ana".to_owned(),
                    "visited".to_owned(),
                    "paris".to_owned(),
                    false,
                    vec![rid(2)]
                ),
                (
                    "marta".to_owned(),
                    "lives_in".to_owned(),
                    "porto".to_owned(),
                    true,
                    vec![rid(1)]
                ),
            ]
        );
        // Edge times: the event's happened_start, else its mention.
        for a in &out {
            if let Assertion::Edge {
                to,
                valid_from,
                valid_to,
                ..
            } = &a.assertion
            {
                let want = if to.name == "paris" { T0 - DAY } else { T0 };
                assert_eq!(*valid_from, Some(Timestamp(want)));
                assert_eq!(*valid_to, None);
            }
            assert_eq!(a.tenant, "t");
        }
    }

    #[test]
    fn deterministic_and_order_independent() {
        let events = fixture();
        let a = project(&events);
        assert_eq!(a, project(&events));
        let mut reversed = events.clone();
        reversed.reverse();
        assert_eq!(a, project(&reversed));
        let mut rotated = events.clone();
        rotated.rotate_left(2);
        assert_eq!(a, project(&rotated));
        let swapped = vec![
            events[2].clone(),
            events[0].clone(),
            events[3].clone(),
            events[1].clone(),
        ];
        assert_eq!(a, project(&swapped));
    }

    #[test]
    fn sources_lie_in_the_batch() {
        let events = fixture();
        let ids: BTreeSet<RecordId> = events.iter().map(|(id, _)| *id).collect();
        for a in project(&events) {
            assert!(!a.source_events.is_empty());
            assert!(a.source_events.iter().all(|id| ids.contains(id)));
            let mut sorted = a.source_events.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted, a.source_events);
        }
    }

    #[test]
    fn no_pattern_gives_only_participants() {
        let mut ev = event(
            "Caroline",
            "The weather was nice and the food was great. Really!",
            Occurrence::Occurred,
            None,
        );
        ev.temporal.participants.push("Melanie".to_owned());
        let out = project(&[(rid(7), ev)]);
        assert_eq!(
            node_keys(&out),
            vec![
                key(NodeType::Person, "caroline"),
                key(NodeType::Person, "melanie"),
            ]
        );
        assert!(edges(&out).is_empty());
        assert!(facts_of(&out, &key(NodeType::Person, "caroline")).is_empty());
    }

    #[test]
    fn retain_batch_sources_drops_foreign_and_empty() {
        let out = project(&fixture());
        let n = out.len();
        let mut extra = out.clone();
        let mut foreign = out[0].clone();
        foreign.source_events.push(rid(99));
        extra.push(foreign);
        let mut empty = out[0].clone();
        empty.source_events.clear();
        extra.push(empty);
        let ids: Vec<RecordId> = fixture().iter().map(|(id, _)| *id).collect();
        assert_eq!(crate::validate::assertions(&ids, extra).len(), n);
        // Dropping events from the batch drops what cites them.
        let kept = crate::validate::assertions(&[rid(1)], out);
        assert!(kept.iter().all(|a| a.source_events == vec![rid(1)]));
        // marta, porto, lives_in; the ana node cites other events too, so
        // it goes, and the sister edge from ana goes with it (unanchored).
        assert_eq!(kept.len(), 3);
    }

    #[test]
    fn anchored_edges_need_both_nodes() {
        let out = project(&fixture());
        let without_paris: Vec<GraphAssertion> = out
            .into_iter()
            .filter(|a| node_keys(std::slice::from_ref(a)) != vec![key(NodeType::Place, "paris")])
            .collect();
        let kept = crate::validate::retain_anchored_edges(without_paris);
        assert!(edges(&kept).iter().all(|(_, _, to, _, _)| to != "paris"));
        assert_eq!(edges(&kept).len(), 2);
    }

    #[test]
    fn tenant_mismatch_is_an_error() {
        let mut ev = event("Ana", "I love tea.", Occurrence::Unknown, None);
        ev.tenant = "other".to_owned();
        let r = HeuristicProjector.project(&ProjectionInput {
            tenant: "t",
            events: &[(rid(1), ev)],
            attempt: 1,
        });
        assert!(r.is_err());
    }

    #[test]
    fn normalizes_names() {
        assert_eq!(normalize_name("  Marta   Silva. "), "marta silva");
        assert_eq!(normalize_name("\"Porto\""), "porto");
        assert_eq!(normalize_name("C++"), "c++");
        assert_eq!(normalize_name("O’Brien"), "o'brien");
    }

    #[test]
    fn work_and_jobs() {
        assert_eq!(
            edges_of("I'm a nurse at St Mary's Hospital."),
            vec![e("ana", "works_at", "st mary's hospital")]
        );
        let out = project(&[(
            rid(5),
            event(
                "Ana",
                "Joined Stripe in March as a product manager.",
                Occurrence::Occurred,
                Some(T0),
            ),
        )]);
        assert_eq!(
            facts_of(&out, &key(NodeType::Person, "ana")),
            vec![fact(
                "occupation",
                &["product manager"],
                FactMode::State,
                T0
            )]
        );
        assert_eq!(
            edges_of("I work at Acme Corp as an engineer."),
            vec![e("ana", "works_at", "acme corp")]
        );
        assert_eq!(
            edges_of("I worked for Globex for ten years."),
            vec![e("ana", "worked_at", "globex")]
        );
        assert_eq!(
            edges_of("I applied for a job at Initech."),
            Vec::<(String, String, String)>::new()
        );
        assert_eq!(
            edges_of("I don't work at Initech anymore."),
            Vec::<(String, String, String)>::new()
        );
        let out = project(&[(
            rid(5),
            event(
                "Ana",
                "I lost my job at Initech last month.",
                Occurrence::Occurred,
                Some(T0),
            ),
        )]);
        assert_eq!(
            facts_of(&out, &key(NodeType::Person, "ana")),
            vec![fact(
                "employment",
                &["lost job at Initech"],
                FactMode::State,
                T0
            )]
        );
        assert_eq!(
            edges(&out)
                .into_iter()
                .map(|(f, r, t, fun, _)| (f, r, t, fun))
                .collect::<Vec<_>>(),
            vec![(
                "ana".to_owned(),
                "worked_at".to_owned(),
                "initech".to_owned(),
                false
            )]
        );
        let out = project(&[(
            rid(5),
            event(
                "Ana",
                "I'm a teacher at Lincoln School, and I work as a tutor.",
                Occurrence::Ongoing,
                Some(T0),
            ),
        )]);
        assert_eq!(
            facts_of(&out, &key(NodeType::Person, "ana")),
            vec![
                fact("occupation", &["teacher"], FactMode::State, T0),
                fact("occupation", &["tutor"], FactMode::State, T0),
            ]
        );
        assert_eq!(
            edges(&out)
                .into_iter()
                .map(|(f, r, t, _, _)| (f, r, t))
                .collect::<Vec<_>>(),
            vec![e("ana", "works_at", "lincoln school")]
        );
    }

    #[test]
    fn identity_and_preferences() {
        let out = project(&[(
            rid(5),
            event(
                "Caroline",
                "I'm a transgender woman. I'm a big fan of jazz, and I hate traffic jams because they're slow. I love it.",
                Occurrence::Ongoing,
                Some(T0),
            ),
        )]);
        assert_eq!(
            facts_of(&out, &key(NodeType::Person, "caroline")),
            vec![
                fact("dislikes", &["traffic jams"], FactMode::Set, T0),
                fact("identity", &["transgender woman"], FactMode::Set, T0),
                fact("likes", &["jazz"], FactMode::Set, T0),
            ]
        );
        assert!(edges(&out).is_empty());
        // Third person: the fact goes to the named person.
        let out = project(&[(
            rid(5),
            event(
                "Ana",
                "My friend Bob loves hiking.",
                Occurrence::Ongoing,
                Some(T0),
            ),
        )]);
        assert_eq!(
            facts_of(&out, &key(NodeType::Person, "bob")),
            vec![fact("likes", &["hiking"], FactMode::Set, T0)]
        );
        assert_eq!(edges(&out).len(), 1);
    }

    #[test]
    fn places_and_trips() {
        assert_eq!(
            edges_of("We took a short trip last week to Rome and Florence."),
            vec![e("ana", "visited", "florence"), e("ana", "visited", "rome")]
        );
        assert_eq!(
            edges_of("Next month I'm going to Tokyo."),
            vec![e("ana", "plans_to_visit", "tokyo")]
        );
        assert_eq!(
            edges_of("We cancelled our trip to Lisbon."),
            Vec::<(String, String, String)>::new()
        );
        assert_eq!(
            edges_of("I moved to Berlin and I'm originally from Sweden."),
            vec![
                e("ana", "lives_in", "berlin"),
                e("ana", "comes_from", "sweden")
            ]
        );
        // A functional relation takes the first place of a list only.
        assert_eq!(
            edges_of("I was born in Dublin, Ireland."),
            vec![e("ana", "born_in", "dublin")]
        );
        // A person is not a place; an unknown subject gives no edge.
        assert_eq!(
            edges_of("I talked to Marta in English. He moved to Oslo."),
            Vec::<(String, String, String)>::new()
        );
        let out = project(&[(
            rid(9),
            event("Ana", "He moved to Oslo.", Occurrence::Unknown, None),
        )]);
        assert!(node(&out, &key(NodeType::Place, "oslo")).is_some());
        // A plan is valid from its mention.
        let out = project(&[(
            rid(9),
            event(
                "Ana",
                "I will visit Kyoto.",
                Occurrence::Planned,
                Some(T0 + 30 * DAY),
            ),
        )]);
        for a in &out {
            if let Assertion::Edge {
                relation,
                valid_from,
                ..
            } = &a.assertion
            {
                assert_eq!(relation, "plans_to_visit");
                assert_eq!(*valid_from, Some(Timestamp(T0)));
            }
        }
        assert_eq!(edges(&out).len(), 1);
    }

    #[test]
    fn projects_and_tools() {
        assert_eq!(
            edges_of("We migrated the database from SQLite to PostgreSQL."),
            vec![
                e("ana", "migrating_to", "postgresql"),
                e("ana", "migrating_from", "sqlite"),
            ]
        );
        assert_eq!(
            edges_of("I'm working on Project Atlas and we use Notion for notes."),
            vec![e("ana", "works_on", "atlas"), e("ana", "uses", "notion")]
        );
        let out = project(&[(
            rid(9),
            event(
                "Ana",
                "The Apollo project is late.",
                Occurrence::Unknown,
                None,
            ),
        )]);
        assert!(node(&out, &key(NodeType::Project, "apollo")).is_some());
        assert_eq!(
            edges_of("We switched to Linear from Jira last sprint."),
            vec![
                e("ana", "migrating_from", "jira"),
                e("ana", "migrating_to", "linear"),
            ]
        );
        assert_eq!(
            edges_of("My mentor Dr Patel said I should use Figma and Python."),
            vec![
                e("ana", "mentor", "patel"),
                e("ana", "uses", "figma"),
                e("ana", "uses", "python"),
            ]
        );
        assert_eq!(
            edges_of("We are moving to Kubernetes."),
            vec![e("ana", "migrating_to", "kubernetes")]
        );
    }

    #[test]
    fn relations_between_people() {
        let out = project(&[(
            rid(9),
            event(
                "Ana",
                "My husband Tom and my best friend, Lucy Gray, went to Madrid.",
                Occurrence::Occurred,
                None,
            ),
        )]);
        assert_eq!(
            edges(&out)
                .into_iter()
                .map(|(f, r, t, fun, _)| (f, r, t, fun))
                .collect::<Vec<_>>(),
            vec![
                (
                    "ana".to_owned(),
                    "friend".to_owned(),
                    "lucy gray".to_owned(),
                    false
                ),
                (
                    "ana".to_owned(),
                    "husband".to_owned(),
                    "tom".to_owned(),
                    true
                ),
                (
                    "lucy gray".to_owned(),
                    "visited".to_owned(),
                    "madrid".to_owned(),
                    false
                ),
            ]
        );
    }

    #[test]
    fn merges_mentions_across_events() {
        let events = vec![
            (
                rid(1),
                event("Ana", "I visited Paris.", Occurrence::Occurred, Some(T0)),
            ),
            (
                rid(2),
                event(
                    "Ana",
                    "I was in Paris again.",
                    Occurrence::Occurred,
                    Some(T0 + DAY),
                ),
            ),
        ];
        let out = project(&events);
        let paris = node(&out, &key(NodeType::Place, "paris")).unwrap();
        assert_eq!(paris.source_events, vec![rid(1), rid(2)]);
        let visited: Vec<_> = out
            .iter()
            .filter_map(|a| match &a.assertion {
                Assertion::Edge { valid_from, .. } => Some((a.source_events.clone(), *valid_from)),
                Assertion::Node { .. } => None,
            })
            .collect();
        assert_eq!(visited, vec![(vec![rid(1), rid(2)], Some(Timestamp(T0)))]);
    }
}
