//! Text normalization and search tokens (spec §11.1).
//!
//! - [`normalize`]: NFKC, Unicode default lower-casing, whitespace runs
//!   collapsed to one space, trimmed.
//! - [`tokens`]: on the normalized text, one `word:<w>` token per word-like
//!   segment, then Han n-grams: for every maximal run of Han characters, a
//!   single character gives `han1:<c>`, a longer run every overlapping bigram
//!   `han2:<c1c2>` (no unigrams). No stopwords, no stemming; duplicates are
//!   kept (the token list is a multiset, segments first, then Han n-grams).
//! - [`fuzzy_match`]: equality or substring containment of normalized texts.
//! - [`weighted_tokens`]: field tokens repeated by field weight, so a weight
//!   acts on term frequency *and* on document length.
//!
//! ## Differences from the reference (`Intl.Segmenter`, ICU)
//!
//! Normalisation and word segments come from the shared text crate
//! ([`strataflow_text::normalise::search`],
//! [`strataflow_text::tokens::segments`]): the UAX #29 default word
//! boundaries, keeping segments with at least one
//! alphanumeric character. ICU's word segmenter is UAX #29 plus
//! dictionaries: it groups CJK (and Thai, Lao, Khmer, Burmese) text into
//! dictionary words, where UAX #29 yields one segment per ideograph. So for
//! `记忆系统` ICU gives `word:记忆`, `word:系统` where we give `word:记`,
//! `word:忆`, `word:系`, `word:统`. Han text is still matched through the Han
//! bigrams, which are identical in both; only the `word:` tokens of
//! dictionary scripts differ. Lower-casing is the locale-independent default
//! mapping (`str::to_lowercase`, with final sigma), i.e. what
//! `toLocaleLowerCase` does in a root/English locale (a Turkish locale would
//! map `I` differently).

use strataflow_text::tokens::segments;

/// Prefix of word-segment tokens.
pub const WORD_PREFIX: &str = "word:";
/// Prefix of the token of a one-character Han run.
pub const HAN1_PREFIX: &str = "han1:";
/// Prefix of the Han bigram tokens of longer runs.
pub const HAN2_PREFIX: &str = "han2:";

pub use strataflow_text::normalise::is_js_space;

/// Whether `c` has `Script=Han` (Unicode 15.1 `Scripts.txt`): CJK Unified
/// Ideographs U+4E00–U+9FFF, Extension A U+3400–U+4DBF, Extensions B–I
/// (U+20000–U+2EE5D), compatibility ideographs U+F900–U+FAD9 and
/// U+2F800–U+2FA1D, Extensions G–H (U+30000–U+323AF), the CJK and Kangxi
/// radicals, and the Han marks 々 (U+3005), 〇 (U+3007), Hangzhou numerals
/// U+3021–U+3029 and U+3038–U+303B, U+16FE2, U+16FE3, U+16FF0–U+16FF1.
pub fn is_han(c: char) -> bool {
    matches!(
        u32::from(c),
        0x2E80..=0x2E99
            | 0x2E9B..=0x2EF3
            | 0x2F00..=0x2FD5
            | 0x3005
            | 0x3007
            | 0x3021..=0x3029
            | 0x3038..=0x303B
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xF900..=0xFA6D
            | 0xFA70..=0xFAD9
            | 0x16FE2
            | 0x16FE3
            | 0x16FF0..=0x16FF1
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B739
            | 0x2B740..=0x2B81D
            | 0x2B820..=0x2CEA1
            | 0x2CEB0..=0x2EBE0
            | 0x2EBF0..=0x2EE5D
            | 0x2F800..=0x2FA1D
            | 0x30000..=0x3134A
            | 0x31350..=0x323AF
    )
}

/// `normalizeSearchText`: NFKC, then Unicode default lower-casing, then
/// every run of whitespace (see [`is_js_space`]) replaced by one space, and
/// leading/trailing space removed ([`strataflow_text::normalise::search`]).
///
/// `normalize("  ＡＢＣ\t Déjà ")` is `"abc déjà"`.
pub fn normalize(text: &str) -> String {
    strataflow_text::normalise::search(text)
}

/// `searchTokens`: the search tokens of `text`, in order — the `word:`
/// tokens of the word-like segments of [`normalize`]`(text)`, then the Han
/// tokens of every maximal Han run (`han1:<c>` for a run of one character,
/// else every overlapping bigram `han2:<c1c2>`).
///
/// `tokens("记忆系统")` is `word:记, word:忆, word:系, word:统, han2:记忆,
/// han2:忆系, han2:系统`; see the module docs for how the `word:` tokens of
/// Han text differ from ICU's.
pub fn tokens(text: &str) -> Vec<String> {
    let norm = normalize(text);
    let mut out: Vec<String> = segments(&norm)
        .into_iter()
        .map(|w| format!("{WORD_PREFIX}{}", w.text))
        .collect();
    let mut run: Vec<char> = Vec::new();
    for c in norm.chars() {
        if is_han(c) {
            run.push(c);
        } else {
            push_han_run(&run, &mut out);
            run.clear();
        }
    }
    push_han_run(&run, &mut out);
    out
}

/// Appends the Han tokens of one maximal run.
fn push_han_run(run: &[char], out: &mut Vec<String>) {
    match run {
        [] => {}
        [c] => out.push(format!("{HAN1_PREFIX}{c}")),
        _ => {
            for pair in run.windows(2) {
                if let [a, b] = pair {
                    out.push(format!("{HAN2_PREFIX}{a}{b}"));
                }
            }
        }
    }
}

/// `fuzzySearchMatch`: both texts non-empty after [`normalize`], and equal,
/// or one contains the other as a substring.
pub fn fuzzy_match(a: &str, b: &str) -> bool {
    let (a, b) = (normalize(a), normalize(b));
    !a.is_empty() && !b.is_empty() && (a == b || a.contains(&b) || b.contains(&a))
}

/// `weightedSearchTokens`: for each `(text, weight)` field in order,
/// `max(1, weight)` copies of [`tokens`]`(text)`, concatenated.
pub fn weighted_tokens(fields: &[(&str, u32)]) -> Vec<String> {
    let mut out = Vec::new();
    for (text, weight) in fields {
        let field = tokens(text);
        for _ in 0..(*weight).max(1) {
            out.extend(field.iter().cloned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<String> {
        tokens(text)
    }

    fn strs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn normalize_nfkc_lowercase_whitespace() {
        assert_eq!(normalize("ＡＢＣ"), "abc");
        assert_eq!(normalize("  Hello \t\n  World  "), "hello world");
        assert_eq!(normalize("ﬁle"), "file");
        // Ideographic space and NBSP become spaces (NFKC), BOM is JS space.
        assert_eq!(normalize("a\u{3000}b\u{a0}\u{feff}c"), "a b c");
        // Final sigma.
        assert_eq!(normalize("ΟΔΟΣ"), "\u{3bf}\u{3b4}\u{3bf}\u{3c2}");
        assert_eq!(normalize(""), "");
        assert_eq!(normalize(" \t "), "");
    }

    #[test]
    fn word_tokens() {
        assert_eq!(
            toks("Hello, World! The year 2024."),
            strs(&[
                "word:hello",
                "word:world",
                "word:the",
                "word:year",
                "word:2024"
            ])
        );
        assert_eq!(toks("memory-plugin"), strs(&["word:memory", "word:plugin"]));
        assert_eq!(toks("Ｍemory_Plugin"), strs(&["word:memory_plugin"]));
        assert_eq!(toks("3.14 can't"), strs(&["word:3.14", "word:can't"]));
        assert!(toks("  ...  !!").is_empty());
        // Duplicates are kept.
        assert_eq!(toks("a a"), strs(&["word:a", "word:a"]));
    }

    #[test]
    fn han_bigrams() {
        assert_eq!(
            toks("记忆系统"),
            strs(&[
                "word:记",
                "word:忆",
                "word:系",
                "word:统",
                "han2:记忆",
                "han2:忆系",
                "han2:系统",
            ])
        );
        assert_eq!(toks("猫"), strs(&["word:猫", "han1:猫"]));
        // Runs are maximal: broken by Latin text and spaces.
        let t = toks("使用 Rust 和 记忆");
        assert_eq!(
            t,
            strs(&[
                "word:使",
                "word:用",
                "word:rust",
                "word:和",
                "word:记",
                "word:忆",
                "han2:使用",
                "han1:和",
                "han2:记忆",
            ])
        );
        // 々 is Script=Han.
        assert!(toks("人々").contains(&"han2:人々".to_owned()));
        // Kana is not Han.
        assert!(!toks("ひらがな").iter().any(|t| t.starts_with("han")));
    }

    #[test]
    fn han_ranges() {
        for c in ['\u{4E00}', '\u{9FFF}', '\u{3400}', '\u{4DBF}', '\u{F900}'] {
            assert!(is_han(c), "{c:?}");
        }
        for c in ['\u{20000}', '\u{2A6DF}', '\u{2CEB0}', '\u{2EBE0}'] {
            assert!(is_han(c), "{c:?}");
        }
        for c in ['a', '1', 'あ', 'ア', '한', '\u{3000}', '。'] {
            assert!(!is_han(c), "{c:?}");
        }
    }

    #[test]
    fn fuzzy() {
        assert!(fuzzy_match("StrataGate", "strata"));
        assert!(fuzzy_match("gate", "  STRATAGATE "));
        assert!(fuzzy_match("ＡＢＣ", "abc"));
        assert!(!fuzzy_match("abc", "abd"));
        assert!(!fuzzy_match("", "abc"));
        assert!(!fuzzy_match("abc", "  "));
    }

    #[test]
    fn weighted() {
        assert_eq!(
            weighted_tokens(&[("a", 2), ("b", 0), ("", 5), ("c d", 1)]),
            strs(&["word:a", "word:a", "word:b", "word:c", "word:d"])
        );
    }

    #[test]
    fn deterministic() {
        let text = "StrataGate 记忆系统 uses BM25, RRF & 使用 — ２０２４";
        assert_eq!(tokens(text), tokens(text));
        assert!(tokens(text).contains(&"word:2024".to_owned()));
    }
}
