//! English text helpers shared by the heuristic operators: sentences,
//! words, stop words and the cues that mark a sentence as worth
//! remembering. Deterministic and allocation-light; no model.
//!
//! Words come from the shared text crate ([`strataflow_text::tokens`]).
//! [`sentences`] is the frozen splitter of the operator versions that
//! shipped with it; newer versions split with
//! [`strataflow_text::sentences`] (see [`Splitter`]).

/// A sentence of a message with its byte span.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sentence<'a> {
    /// The sentence, trimmed.
    pub text: &'a str,
    /// Byte offset in the message.
    pub start: usize,
}

/// Which sentence splitter an operator version uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Splitter {
    /// [`sentences`], frozen: the splitter of `heuristic-summarizer@1` and
    /// `heuristic-extractor@1`/`@2`.
    V1,
    /// The shared [`strataflow_text::sentences::split`].
    Shared,
}

impl Splitter {
    /// The sentences of `text`.
    pub fn sentences(self, text: &str) -> Vec<Sentence<'_>> {
        match self {
            Self::V1 => sentences(text),
            Self::Shared => strataflow_text::sentences::split(text)
                .into_iter()
                .map(|s| Sentence {
                    text: s.text,
                    start: s.start,
                })
                .collect(),
        }
    }
}

/// Splits text into sentences at `.`, `!`, `?`, `…` (followed by space or
/// end) and at line breaks. Abbreviations like "Mr." and decimals are kept
/// whole. Empty pieces are dropped.
///
/// Frozen: the output of `heuristic-summarizer@1` and
/// `heuristic-extractor@1`/`@2` depends on it; do not change (it does not
/// know "Prof.", "cf.", initials or closing quotes — new versions use
/// [`Splitter::Shared`]).
pub fn sentences(text: &str) -> Vec<Sentence<'_>> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0usize;
    while let Some(&(at, c)) = chars.get(i) {
        let next = chars.get(i + 1).map(|&(_, n)| n);
        let boundary = match c {
            '\n' => true,
            '!' | '?' | '…' | '。' | '！' | '？' => !matches!(next, Some('!' | '?')),
            '.' => {
                // `start` and `at` are char boundaries of `text` (ends and
                // starts of its chars), so `get` always succeeds, and
                // `rsplit` yields at least one piece: neither default is
                // ever taken.
                let word_before = text.get(start..at).unwrap_or_default();
                let last_word = word_before.rsplit(' ').next().unwrap_or_default();
                let abbreviation = matches!(
                    last_word.to_ascii_lowercase().as_str(),
                    "mr" | "mrs" | "ms" | "dr" | "st" | "vs" | "etc" | "e.g" | "i.e" | "jr" | "sr"
                );
                let decimal = next.is_some_and(|n| n.is_ascii_digit());
                !abbreviation && !decimal && next.is_none_or(|n| n.is_whitespace() || n == '"')
            }
            _ => false,
        };
        if boundary {
            let end = at + c.len_utf8();
            push_sentence(text, start, end, &mut out);
            start = end;
        }
        i += 1;
    }
    push_sentence(text, start, text.len(), &mut out);
    out
}

fn push_sentence<'a>(text: &'a str, start: usize, end: usize, out: &mut Vec<Sentence<'a>>) {
    let Some(piece) = text.get(start..end) else {
        return;
    };
    let trimmed = piece.trim();
    if trimmed.chars().any(char::is_alphanumeric) {
        let offset = piece.len() - piece.trim_start().len();
        out.push(Sentence {
            text: trimmed,
            start: start + offset,
        });
    }
}

/// Lowercase words (letters, digits, apostrophes inside words):
/// [`strataflow_text::tokens::words`], folded.
pub fn words(text: &str) -> Vec<String> {
    strataflow_text::tokens::words(text)
        .iter()
        .map(strataflow_text::Token::folded)
        .collect()
}

#[cfg(test)]
pub(crate) use strataflow_text::normalise::push_lowercase;

/// A word list looked up by hashing: given in any order (as it is written,
/// for reading), indexed once on first use. Same answers as
/// `list.contains(&word)`: a word of at most `PACKED_MAX` bytes is looked
/// up as its `packed` key in an open-addressing table (one multiply and a
/// probe or two, no string comparison); a longer one by binary search.
#[derive(Debug)]
pub struct WordSet {
    words: &'static [&'static str],
    /// The bit a tokenizer may carry this set's membership in (see
    /// [`WordSet::classed`]).
    class: Option<u8>,
    index: std::sync::OnceLock<Index>,
}

/// A [`WordSet`]'s words, indexed: the packed keys of the short ones in a
/// table of a power-of-two size at least twice their number (so a probe
/// meets an empty slot soon), the long ones sorted.
#[derive(Debug)]
struct Index {
    /// Slots of packed keys; [`EMPTY_SLOT`] marks a free one.
    slots: Vec<u128>,
    /// `slots.len() - 1`.
    mask: usize,
    /// Whether the empty word is one of the list (its packed key is the
    /// free slot's mark).
    has_empty: bool,
    long: Vec<&'static str>,
}

/// The mark of a free slot of an [`Index`]: the packed key of the empty
/// word, which is kept apart.
const EMPTY_SLOT: u128 = 0;

impl Index {
    fn of(words: &'static [&'static str]) -> Self {
        let (mut short, mut long) = (Vec::new(), Vec::new());
        for w in words {
            match packed(w) {
                Some(key) => short.push(key),
                None => long.push(*w),
            }
        }
        short.sort_unstable();
        short.dedup();
        long.sort_unstable();
        long.dedup();
        let has_empty = short.first() == Some(&EMPTY_SLOT);
        let size = (short.len() * 2).next_power_of_two().max(2);
        let mask = size - 1;
        let mut slots = vec![EMPTY_SLOT; size];
        for key in short.into_iter().filter(|k| *k != EMPTY_SLOT) {
            let mut at = slot_of(key, mask);
            while slots.get(at).is_some_and(|s| *s != EMPTY_SLOT) {
                at = (at + 1) & mask;
            }
            if let Some(slot) = slots.get_mut(at) {
                *slot = key;
            }
        }
        Self {
            slots,
            mask,
            has_empty,
            long,
        }
    }

    fn contains_key(&self, key: u128) -> bool {
        if key == EMPTY_SLOT {
            return self.has_empty;
        }
        let mut at = slot_of(key, self.mask);
        // The table is at most half full: a free slot ends every probe.
        while let Some(&slot) = self.slots.get(at) {
            if slot == key {
                return true;
            }
            if slot == EMPTY_SLOT {
                return false;
            }
            at = (at + 1) & self.mask;
        }
        false
    }
}

/// Packed words ([`packed`]) to values, in an open-addressing table as a
/// [`WordSet`]'s (a probe or two per lookup, no string comparison, no
/// binary search's unpredictable branches). The empty word has no entry.
/// Keys and values are apart, and the table at most two thirds full: the
/// probes read 16-byte keys of a table half the size of one of pairs at
/// most half full, which stays in the nearer caches (a look-up is made for
/// every token the projector reads).
#[derive(Debug)]
pub(crate) struct PackedMap<V> {
    /// Keys; [`EMPTY_SLOT`] marks a free slot.
    keys: Vec<u128>,
    /// The value of the key in the same slot.
    values: Vec<V>,
    /// `keys.len() - 1`.
    mask: usize,
}

impl<V: Copy + Default> PackedMap<V> {
    /// The map of `entries` (distinct keys; the empty word's is skipped).
    pub(crate) fn of(entries: &[(u128, V)]) -> Self {
        // At most two thirds full: a free slot ends every probe.
        let size = (entries.len() * 3 / 2 + 1).next_power_of_two().max(2);
        let mask = size - 1;
        let mut keys = vec![EMPTY_SLOT; size];
        let mut values = vec![V::default(); size];
        for &(key, value) in entries.iter().filter(|(k, _)| *k != EMPTY_SLOT) {
            let mut at = slot_of(key, mask);
            while keys.get(at).is_some_and(|s| *s != EMPTY_SLOT && *s != key) {
                at = (at + 1) & mask;
            }
            if let (Some(k), Some(v)) = (keys.get_mut(at), values.get_mut(at)) {
                *k = key;
                *v = value;
            }
        }
        Self { keys, values, mask }
    }

    /// The value of `key`, if it has one.
    pub(crate) fn get(&self, key: u128) -> Option<V> {
        if key == EMPTY_SLOT {
            return None;
        }
        let mut at = slot_of(key, self.mask);
        while let Some(&slot) = self.keys.get(at) {
            if slot == key {
                return self.values.get(at).copied();
            }
            if slot == EMPTY_SLOT {
                return None;
            }
            at = (at + 1) & self.mask;
        }
        None
    }
}

/// The first slot of `key` in a table of `mask + 1` slots.
fn slot_of(key: u128, mask: usize) -> usize {
    // Both halves mixed by one odd multiplier; the high bits are the best
    // mixed. Only the table's layout depends on it, never an answer.
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    let mixed = folded.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 40) as usize & mask
}

impl WordSet {
    /// The set of `words`.
    pub const fn new(words: &'static [&'static str]) -> Self {
        Self {
            words,
            class: None,
            index: std::sync::OnceLock::new(),
        }
    }

    /// The set of `words`, whose membership a tokenizer may compute once
    /// per token for all such sets, as bit `class` of one mask (the
    /// projector's token classes): the same answers as [`WordSet::new`]'s.
    pub const fn classed(class: u8, words: &'static [&'static str]) -> Self {
        Self {
            words,
            class: Some(class),
            index: std::sync::OnceLock::new(),
        }
    }

    /// The bit of [`WordSet::classed`], if any.
    pub fn class(&self) -> Option<u8> {
        self.class
    }

    /// Whether `word` is one of the list.
    pub fn contains(&self, word: &str) -> bool {
        let index = self.index.get_or_init(|| Index::of(self.words));
        match packed(word) {
            Some(key) => index.contains_key(key),
            None => index.long.binary_search(&word).is_ok(),
        }
    }

    /// The list as written.
    pub fn words(&self) -> &'static [&'static str] {
        self.words
    }
}

/// The longest word [`packed`] gives a key for, in bytes.
pub(crate) const PACKED_MAX: usize = 15;

/// A word of at most [`PACKED_MAX`] bytes as one number (its bytes and its
/// length: two words have the same key exactly when they are equal); `None`
/// for a longer word.
pub(crate) fn packed(word: &str) -> Option<u128> {
    let bytes = word.as_bytes();
    let len = bytes.len();
    // Byte `k` at bits `8k..8k+8`, the length in the last byte. The bytes
    // are read in two loads that may overlap (a byte read twice lands on
    // the same bits), not copied one by one into a buffer: the lookups of
    // the word sets run on every token.
    let at = |k: usize| u128::from(bytes.get(k).copied().unwrap_or(0));
    let four = |b: Option<&[u8; 4]>| b.map_or(0, |b| u64::from(u32::from_le_bytes(*b)));
    let eight = |b: Option<&[u8; 8]>| b.map_or(0, |b| u64::from_le_bytes(*b));
    // The first and the last bytes of the word, and the byte the last start at.
    let (head, tail, tail_at) = match len {
        0 => (0, 0, 0),
        1..=3 => (at(0) | at(len / 2) << (8 * (len / 2)), at(len - 1), len - 1),
        4..=7 => (
            u128::from(four(bytes.first_chunk())),
            u128::from(four(bytes.last_chunk())),
            len - 4,
        ),
        8..=PACKED_MAX => (
            u128::from(eight(bytes.first_chunk())),
            u128::from(eight(bytes.last_chunk())),
            len - 8,
        ),
        _ => return None,
    };
    let data = head | tail << (8 * tail_at);
    Some(data | (len as u128) << (8 * PACKED_MAX))
}

/// Whether `text` holds `needle` (ASCII) in any mix of ASCII case.
pub(crate) fn contains_ascii_ci(text: &str, needle: &str) -> bool {
    let (hay, needle) = (text.as_bytes(), needle.as_bytes());
    let Some(&first) = needle.first() else {
        return true;
    };
    hay.iter().enumerate().any(|(at, b)| {
        b.eq_ignore_ascii_case(&first)
            && hay
                .get(at..at + needle.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(needle))
    })
}

/// Whether `text` holds one of `needles`, four ASCII bytes each, where a
/// lowercase letter of a needle matches that letter in either ASCII case
/// and any other byte only itself: [`contains_ascii_ci`] of each needle, in
/// one pass that compares four bytes at a time.
pub(crate) fn contains_any4_ascii_ci<const N: usize>(text: &str, needles: [&[u8; 4]; N]) -> bool {
    // Per needle: the bits that fold a letter's case, and the needle.
    let folds = needles.map(|n| {
        let mask = n.map(|b| if b.is_ascii_lowercase() { 0x20 } else { 0 });
        (u32::from_le_bytes(mask), u32::from_le_bytes(*n))
    });
    text.as_bytes().windows(4).any(|w| {
        let x = w
            .first_chunk::<4>()
            .map_or(0, |four| u32::from_le_bytes(*four));
        folds.iter().any(|&(mask, needle)| x | mask == needle)
    })
}

/// Words that carry no topic.
pub fn is_stop_word(word: &str) -> bool {
    static SET: WordSet = WordSet::new(STOP_WORDS);
    SET.contains(word)
}

/// Sorted for binary search.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "also",
    "always",
    "am",
    "an",
    "and",
    "any",
    "are",
    "around",
    "as",
    "at",
    "awesome",
    "back",
    "be",
    "because",
    "been",
    "before",
    "being",
    "but",
    "by",
    "can",
    "can't",
    "cool",
    "could",
    "day",
    "did",
    "do",
    "does",
    "doing",
    "don't",
    "done",
    "each",
    "even",
    "ever",
    "every",
    "feel",
    "felt",
    "for",
    "from",
    "fun",
    "get",
    "getting",
    "go",
    "going",
    "gonna",
    "good",
    "got",
    "great",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hey",
    "hi",
    "him",
    "his",
    "how",
    "i",
    "i'd",
    "i'll",
    "i'm",
    "i've",
    "if",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "just",
    "know",
    "last",
    "let",
    "let's",
    "like",
    "lot",
    "made",
    "make",
    "me",
    "more",
    "much",
    "my",
    "new",
    "next",
    "no",
    "not",
    "now",
    "of",
    "oh",
    "ok",
    "okay",
    "on",
    "one",
    "or",
    "other",
    "our",
    "out",
    "over",
    "really",
    "right",
    "said",
    "same",
    "see",
    "she",
    "so",
    "some",
    "something",
    "still",
    "such",
    "sure",
    "take",
    "than",
    "thank",
    "thanks",
    "that",
    "that's",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "through",
    "time",
    "to",
    "too",
    "up",
    "us",
    "very",
    "want",
    "was",
    "way",
    "we",
    "we're",
    "well",
    "were",
    "what",
    "what's",
    "when",
    "where",
    "which",
    "while",
    "who",
    "why",
    "will",
    "with",
    "would",
    "wow",
    "yeah",
    "yes",
    "yet",
    "you",
    "you're",
    "your",
];

/// Whether a sentence is a question.
pub fn is_question(sentence: &str) -> bool {
    sentence.trim_end().ends_with('?')
}

/// Cues of a personal, memory-worthy statement: first person plus an
/// action, plan, state or preference.
pub fn is_first_person<W: AsRef<str>>(words: &[W]) -> bool {
    words.iter().any(|w| {
        matches!(
            w.as_ref(),
            "i" | "i'm"
                | "i've"
                | "i'd"
                | "i'll"
                | "my"
                | "we"
                | "we're"
                | "we've"
                | "our"
                | "me"
                | "us"
        )
    })
}

/// Verbs and phrases that mark something that happened, is planned or is
/// a lasting fact about the speaker.
pub fn has_event_cue<W: AsRef<str>>(words: &[W]) -> bool {
    static SET: WordSet = WordSet::new(EVENT_WORDS);
    words.iter().map(AsRef::as_ref).any(|w| {
        SET.contains(w) || (w.len() >= 5 && w.ends_with("ed") && !NOT_VERBS_ED.contains(&w))
    })
}

/// Sorted for binary search.
const EVENT_WORDS: &[&str] = &[
    "adopt",
    "applied",
    "apply",
    "ate",
    "attend",
    "been",
    "bought",
    "broke",
    "built",
    "buy",
    "came",
    "cancel",
    "cancelled",
    "celebrate",
    "chose",
    "decide",
    "decided",
    "did",
    "drew",
    "drove",
    "fell",
    "finish",
    "finished",
    "found",
    "gave",
    "going",
    "gonna",
    "got",
    "had",
    "hate",
    "hurt",
    "join",
    "joined",
    "launch",
    "left",
    "lost",
    "love",
    "made",
    "meet",
    "met",
    "move",
    "moved",
    "open",
    "paint",
    "painted",
    "plan",
    "planning",
    "plans",
    "prefer",
    "ran",
    "read",
    "saw",
    "sold",
    "start",
    "started",
    "take",
    "taking",
    "thinking",
    "took",
    "travel",
    "trip",
    "visit",
    "went",
    "will",
    "won",
    "work",
    "working",
    "works",
    "wrote",
];

/// Words ending in "ed" that are not past-tense verbs.
const NOT_VERBS_ED: &[&str] = &[
    "bored",
    "excited",
    "indeed",
    "interested",
    "married",
    "needed",
    "pleased",
    "scared",
    "seed",
    "speed",
    "stressed",
    "tired",
    "worried",
];

/// Greetings and reactions that carry no memory on their own.
pub fn is_chatter(sentence: &str) -> bool {
    is_chatter_words(&words(sentence))
}

/// [`is_chatter`] on a sentence's [`words`] `w`.
pub fn is_chatter_words<W: AsRef<str>>(w: &[W]) -> bool {
    if w.is_empty() {
        return true;
    }
    w.iter().all(|x| is_stop_word(x.as_ref()))
        || (w.len() <= 4
            && w.iter().any(|x| {
                matches!(
                    x.as_ref(),
                    "congrats"
                        | "congratulations"
                        | "amazing"
                        | "wow"
                        | "thanks"
                        | "thank"
                        | "bye"
                        | "awesome"
                        | "cool"
                        | "nice"
                        | "great"
                        | "hey"
                        | "hi"
                        | "hello"
                )
            }))
}

/// Cuts text to at most `max` characters at a word boundary, adding `…`
/// when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    if let Some(space) = out.rfind(' ')
        && space > max / 2
    {
        out.truncate(space);
    }
    let trimmed = out.trim_end_matches([',', ';', ':', ' ', '-', '–']);
    format!("{trimmed}…")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A word of the list, the list's words changed a little (case, a
    /// letter more or less, an apostrophe) and unrelated words: `WordSet`
    /// answers as the list does.
    pub(crate) fn assert_same_answers(set: &WordSet) {
        let list = set.words();
        let mut probes: Vec<String> = vec![String::new(), "zzz".into(), "a'".into(), "é".into()];
        for w in list {
            probes.push((*w).to_owned());
            probes.push(w.to_uppercase());
            probes.push(format!("{w}s"));
            probes.push(format!("x{w}"));
            probes.push(format!("{w}'"));
            probes.extend(w.get(1..).map(str::to_owned));
            probes.extend(w.get(..w.len().saturating_sub(1)).map(str::to_owned));
        }
        for p in &probes {
            assert_eq!(set.contains(p), list.contains(&p.as_str()), "{p:?}");
        }
        assert!(list.iter().all(|w| set.contains(w)));
    }

    #[test]
    fn word_sets_answer_as_their_lists() {
        static SET: WordSet = WordSet::new(&["the", "a", "an", "the", "zebra", "i'm"]);
        assert_same_answers(&SET);
        assert!(SET.contains("i'm") && !SET.contains("im"));
    }

    #[test]
    fn word_sets_answer_for_words_around_the_packed_length() {
        static SET: WordSet = WordSet::new(&[
            "abcdefghijklmno",
            "abcdefghijklmnop",
            "abcdefghijklmnopq",
            "a",
            "",
        ]);
        assert_same_answers(&SET);
        for w in [
            "abcdefghijklmn",
            "abcdefghijklmnO",
            "abcdefghijklmnoq",
            "abcdefghijklmnopqr",
            "a\0",
            "\0",
        ] {
            assert_eq!(SET.contains(w), SET.words().contains(&w), "{w:?}");
        }
        let mut le = [0u8; 16];
        le[..3].copy_from_slice(b"ab'");
        le[15] = 3;
        assert_eq!(packed("ab'"), Some(u128::from_le_bytes(le)));
        assert_ne!(packed("a"), packed("a\0"));
        assert_eq!(packed("abcdefghijklmno").map(|_| ()), Some(()));
        assert_eq!(packed("abcdefghijklmnop"), None);
    }

    /// The first form of [`packed`]: the word copied into a buffer of 16
    /// bytes, its length in the last.
    fn packed_by_copy(word: &str) -> Option<u128> {
        let bytes = word.as_bytes();
        let mut key = [0u8; 16];
        key.get_mut(..bytes.len())?.copy_from_slice(bytes);
        *key.get_mut(PACKED_MAX)? = u8::try_from(bytes.len()).ok()?;
        (bytes.len() <= PACKED_MAX).then(|| u128::from_le_bytes(key))
    }

    proptest::proptest! {
        /// Any word of any length (every length class of the loads, and
        /// bytes of every value): the same key as the first form.
        #[test]
        fn packed_keys_are_the_copied_bytes(
            word in "[a-z'\u{0}\u{7f}é€😀]{0,18}",
        ) {
            proptest::prop_assert_eq!(packed(&word), packed_by_copy(&word));
        }
    }

    proptest::proptest! {
        /// A packed map answers as the sorted list of its entries, for any
        /// entries dense in short words (colliding probes) and any probe.
        #[test]
        fn packed_maps_answer_as_their_entries(
            words in proptest::collection::btree_set("[a-c']{0,3}", 0..40),
            probe in "[a-c']{0,3}",
        ) {
            let entries: Vec<(u128, u32)> = words
                .iter()
                .enumerate()
                .filter_map(|(k, w)| packed(w).map(|p| (p, u32::try_from(k).unwrap_or(0) + 1)))
                .collect();
            let map = PackedMap::of(&entries);
            let want = packed(&probe)
                .filter(|_| !probe.is_empty())
                .and_then(|p| entries.iter().find(|(k, _)| *k == p).map(|(_, v)| *v));
            proptest::prop_assert_eq!(map.get(packed(&probe).unwrap_or_default()), want);
        }
    }

    proptest::proptest! {
        #[test]
        fn word_sets_answer_as_their_lists_for_any_word(word in "[a-e']{0,3}") {
            static SET: WordSet = WordSet::new(&["e", "ab", "a", "b'a", "dd", "ca", "b", "aaa"]);
            proptest::prop_assert_eq!(SET.contains(&word), SET.words().contains(&word.as_str()));
        }

        /// Any list (dense in short words, so that probes collide), any
        /// word: the table answers as the list.
        #[test]
        fn word_sets_of_any_list_answer_as_the_list(
            list in proptest::collection::vec("[ab']{0,3}|[a-z]{14,17}", 0..60),
            probes in proptest::collection::vec("[ab']{0,3}|[a-z]{14,17}", 0..20),
        ) {
            let words: &'static [&'static str] =
                Vec::leak(list.into_iter().map(|w| &*String::leak(w)).collect());
            let set = WordSet::new(words);
            for p in probes.iter().map(String::as_str).chain(words.iter().copied()) {
                proptest::prop_assert_eq!(set.contains(p), words.contains(&p), "{:?}", p);
            }
        }
    }

    proptest::proptest! {
        /// Four bytes at a time answer as [`contains_ascii_ci`] of each
        /// needle, for any text and case (also around the letters' case
        /// bit: `@`, `` ` ``, `{`, `[`, a space, `\0`).
        #[test]
        fn four_byte_needles_answer_as_contains_ascii_ci(
            text in "([tThHaAsSmMeElL `@\\[{\0]|\\PC){0,24}",
        ) {
            let expected = contains_ascii_ci(&text, "that") || contains_ascii_ci(&text, "same");
            proptest::prop_assert_eq!(contains_any4_ascii_ci(&text, [b"that", b"same"]), expected);
            proptest::prop_assert_eq!(
                contains_any4_ascii_ci(&text, [b"let "]),
                contains_ascii_ci(&text, "let ")
            );
        }
    }

    #[test]
    fn stop_and_event_word_lists_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(EVENT_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn splits_sentences_keeping_abbreviations_and_decimals() {
        let s: Vec<_> = sentences("Hi Mr. Smith! It cost 3.50 today. Really?\nYes")
            .into_iter()
            .map(|s| s.text)
            .collect();
        assert_eq!(
            s,
            ["Hi Mr. Smith!", "It cost 3.50 today.", "Really?", "Yes"]
        );
    }

    #[test]
    fn sentence_offsets_point_into_the_text() {
        let text = "One.  Two!";
        for s in sentences(text) {
            assert_eq!(&text[s.start..s.start + s.text.len()], s.text);
        }
    }

    /// The words of this module before they moved to the text crate.
    fn words_before_the_move(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut current = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let inner_apostrophe = (c == '\'' || c == '’')
                && !current.is_empty()
                && chars.peek().is_some_and(|n| n.is_alphanumeric());
            if c.is_alphanumeric() {
                push_lowercase(&mut current, c);
            } else if inner_apostrophe {
                current.push('\'');
            } else if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            out.push(current);
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn words_are_unchanged_by_the_move(text in "[a-zA-Z0-9 '’.,İÉé\u{2019}-]{0,40}") {
            proptest::prop_assert_eq!(words(&text), words_before_the_move(&text));
        }
    }

    #[test]
    fn v1_splits_where_the_shared_splitter_does_not() {
        let text = "Prof. Xavier came. J. R. R. Tolkien wrote it.";
        let v1: Vec<_> = Splitter::V1
            .sentences(text)
            .iter()
            .map(|s| s.text)
            .collect();
        let shared: Vec<_> = Splitter::Shared
            .sentences(text)
            .iter()
            .map(|s| s.text)
            .collect();
        assert_eq!(
            v1,
            [
                "Prof.",
                "Xavier came.",
                "J.",
                "R.",
                "R.",
                "Tolkien wrote it."
            ]
        );
        assert_eq!(shared, ["Prof. Xavier came.", "J. R. R. Tolkien wrote it."]);
    }

    #[test]
    fn words_are_lowercase_and_keep_inner_apostrophes() {
        assert_eq!(words("I'm at Mel's, OK?"), ["i'm", "at", "mel's", "ok"]);
    }

    #[test]
    fn cues() {
        assert!(is_first_person(&words("We went camping")));
        assert!(has_event_cue(&words("We went camping")));
        assert!(has_event_cue(&words("I just joined a group")));
        assert!(!has_event_cue(&words("I am so excited")));
        assert!(is_chatter("Wow, congrats!"));
        assert!(is_chatter("Thanks!"));
        assert!(!is_chatter("I went to a support group yesterday."));
    }

    #[test]
    fn clip_cuts_at_a_word() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("one two three four five", 12), "one two…");
    }
}
