//! Sentences with byte spans.
//!
//! A sentence ends
//! - at a line break;
//! - after a run of `!`/`?` (also "?!", "!!!"), followed by closing quotes
//!   or brackets, when whitespace or the end of the text follows;
//! - after a `.` followed (after closing quotes or brackets) by whitespace or
//!   the end of the text, unless the word before it is an
//!   [abbreviation](crate::abbreviations) — a title ("Dr.") or a Latin
//!   abbreviation ("e.g.") never ends a sentence before more text, "etc."
//!   ends one only before a capitalised word — or a capital initial ("J.")
//!   before a capitalised word ("J. R. R. Tolkien"; `I` is not read as an
//!   initial). A `.` followed by a letter or digit ("3.5", "example.com")
//!   never ends one;
//! - after an ellipsis (`…` or `..`, `...`) only before a capitalised word
//!   ("Well... I guess" ends, "Wait... what?" does not);
//! - after the CJK stops `。！？` always.
//!
//! Sentences are trimmed; pieces without a letter or digit are dropped.
//!
//! ```
//! use strataflow_text::sentences::split;
//! let text = "J. R. R. Tolkien wrote it, e.g. in 1937. It cost 3.5 pounds?! Yes.";
//! let s: Vec<&str> = split(text).iter().map(|s| s.text).collect();
//! assert_eq!(s, ["J. R. R. Tolkien wrote it, e.g. in 1937.", "It cost 3.5 pounds?!", "Yes."]);
//! ```

use crate::abbreviations::{Abbreviation, lookup};

/// One sentence of a text with its byte span.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sentence<'a> {
    /// The sentence, trimmed.
    pub text: &'a str,
    /// Byte offset of its first character in the text.
    pub start: usize,
    /// Byte offset just after its last character (`start + text.len()`).
    pub end: usize,
}

/// Characters that end a sentence.
fn is_stop(c: char) -> bool {
    matches!(
        c,
        '.' | '!' | '?' | '…' | '‼' | '⁇' | '⁈' | '⁉' | '。' | '！' | '？'
    )
}

/// CJK stops: end a sentence without a following space.
fn is_cjk_stop(c: char) -> bool {
    matches!(c, '。' | '！' | '？')
}

/// Closing quotes and brackets that stay with the sentence they close.
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '”' | '’' | '»' | '›' | ')' | ']' | '}' | '」' | '』'
    )
}

/// Opening quotes and brackets skipped when looking at the next word.
fn is_opener(c: char) -> bool {
    matches!(c, '"' | '\'' | '“' | '‘' | '«' | '‹' | '(' | '[' | '{')
}

/// Splits `text` into sentences (see the module docs for the rules).
pub fn split(text: &str) -> Vec<Sentence<'_>> {
    let mut out = Vec::new();
    let mut start = 0usize;
    // Byte offset of the next character to look at.
    let mut at = 0usize;
    loop {
        let rest = text.get(at..).unwrap_or_default();
        let Some((offset, c)) = next_stop(rest) else {
            break;
        };
        at += offset;
        if c == '\n' {
            push(text, start, at + 1, &mut out);
            start = at + 1;
            at += 1;
            continue;
        }
        let rest = text.get(at..).unwrap_or_default();
        let run = rest
            .get(..rest.find(|c| !is_stop(c)).unwrap_or(rest.len()))
            .unwrap_or_default();
        let after_run = text.get(at + run.len()..).unwrap_or_default();
        let closed = at + run.len() + after_run.find(|c| !is_closer(c)).unwrap_or(after_run.len());
        let tail = text.get(closed..).unwrap_or_default();
        let next = tail.chars().next();
        let next_word = tail.chars().find(|c| !c.is_whitespace() && !is_opener(*c));
        let capital_follows = next_word.is_some_and(char::is_uppercase);
        let ends = if run.chars().any(is_cjk_stop) || next.is_none() || next_word.is_none() {
            true
        } else if !next.is_some_and(char::is_whitespace) {
            false
        } else if run.chars().any(|c| !matches!(c, '.' | '…')) {
            true
        } else if run.chars().nth(1).is_some() || run.contains('…') {
            capital_follows
        } else {
            let before = text.get(start..at).unwrap_or_default();
            let word = before
                .rsplit(char::is_whitespace)
                .next()
                .unwrap_or_default()
                .trim_start_matches(|c: char| !c.is_alphanumeric());
            match lookup(word) {
                Some(Abbreviation::ListEnd) => capital_follows,
                Some(_) => false,
                None => !(is_initial(word) && capital_follows),
            }
        };
        if ends {
            push(text, start, closed, &mut out);
            start = closed;
        }
        // `closed` is past the run, which holds `c`.
        at = closed.max(at + c.len_utf8());
    }
    push(text, start, text.len(), &mut out);
    out
}

/// The first line break or stop of `text` ([`is_stop`]) and its byte
/// offset. Read as bytes: every such character is an ASCII byte or starts
/// with a byte of at least `0xE2` (`…` is `E2 80 A6`, `。` `E3 80 82`, `！`
/// `EF BC 81`), and a byte of at least `0xE2` always starts a character;
/// only those characters are decoded.
fn next_stop(text: &str) -> Option<(usize, char)> {
    let bytes = text.as_bytes();
    let mut from = 0;
    loop {
        let at = from
            + bytes
                .get(from..)?
                .iter()
                .position(|&b| matches!(b, b'\n' | b'.' | b'!' | b'?') || b >= 0xE2)?;
        let c = text.get(at..)?.chars().next()?;
        if c == '\n' || is_stop(c) {
            return Some((at, c));
        }
        from = at + c.len_utf8();
    }
}

/// A capital letter alone (not `I`), as in "J. R. R. Tolkien".
fn is_initial(word: &str) -> bool {
    let mut chars = word.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if c.is_uppercase() && c != 'I')
}

fn push<'a>(text: &'a str, start: usize, end: usize, out: &mut Vec<Sentence<'a>>) {
    let Some(piece) = text.get(start..end) else {
        return;
    };
    let trimmed = piece.trim();
    if trimmed.chars().any(char::is_alphanumeric) {
        let from = start + (piece.len() - piece.trim_start().len());
        out.push(Sentence {
            text: trimmed,
            start: from,
            end: from + trimmed.len(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first form of [`split`] (over a vector of characters): the
    /// reference [`split`] must agree with.
    fn split_by_chars(text: &str) -> Vec<Sentence<'_>> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let byte_at = |k: usize| chars.get(k).map_or(text.len(), |&(b, _)| b);
        let mut out = Vec::new();
        let mut start = 0usize;
        let mut i = 0usize;
        while let Some(&(at, c)) = chars.get(i) {
            if c == '\n' {
                push(text, start, at + 1, &mut out);
                start = at + 1;
                i += 1;
                continue;
            }
            if !is_stop(c) {
                i += 1;
                continue;
            }
            let run_end = (i..)
                .find(|&k| chars.get(k).is_none_or(|&(_, c)| !is_stop(c)))
                .unwrap_or(chars.len());
            let closed = (run_end..)
                .find(|&k| chars.get(k).is_none_or(|&(_, c)| !is_closer(c)))
                .unwrap_or(chars.len());
            let run: Vec<char> = chars
                .get(i..run_end)
                .unwrap_or_default()
                .iter()
                .map(|&(_, c)| c)
                .collect();
            let next = chars.get(closed).map(|&(_, c)| c);
            let next_word = chars
                .get(closed..)
                .unwrap_or_default()
                .iter()
                .map(|&(_, c)| c)
                .find(|c| !c.is_whitespace() && !is_opener(*c));
            let capital_follows = next_word.is_some_and(char::is_uppercase);
            let ends =
                if run.iter().any(|&c| is_cjk_stop(c)) || next.is_none() || next_word.is_none() {
                    true
                } else if !next.is_some_and(char::is_whitespace) {
                    false
                } else if run.iter().any(|&c| !matches!(c, '.' | '…')) {
                    true
                } else if run.len() > 1 || run.contains(&'…') {
                    capital_follows
                } else {
                    let before = text.get(start..at).unwrap_or_default();
                    let word = before
                        .rsplit(char::is_whitespace)
                        .next()
                        .unwrap_or_default()
                        .trim_start_matches(|c: char| !c.is_alphanumeric());
                    match lookup(word) {
                        Some(Abbreviation::ListEnd) => capital_follows,
                        Some(_) => false,
                        None => !(is_initial(word) && capital_follows),
                    }
                };
            if ends {
                let end = byte_at(closed);
                push(text, start, end, &mut out);
                start = end;
            }
            i = closed.max(i + 1);
        }
        push(text, start, text.len(), &mut out);
        out
    }

    /// The table: each text and the sentences it must give.
    const TABLE: &[(&str, &[&str])] = &[
        // Titles.
        (
            "my mentor Dr. Patel joined",
            &["my mentor Dr. Patel joined"],
        ),
        (
            "my mentor Dr. Patel joined the team. She is great.",
            &["my mentor Dr. Patel joined the team.", "She is great."],
        ),
        (
            "Mr. and Mrs. Smith came. Ms. Lee did too.",
            &["Mr. and Mrs. Smith came.", "Ms. Lee did too."],
        ),
        (
            "Prof. Xavier lives on St. Mark's Place. Martin Luther King Jr. spoke; Sr. Ana sang.",
            &[
                "Prof. Xavier lives on St. Mark's Place.",
                "Martin Luther King Jr. spoke; Sr. Ana sang.",
            ],
        ),
        // Latin.
        (
            "Bring fruit, e.g. apples. Use a key, i.e. a password. Done.",
            &[
                "Bring fruit, e.g. apples.",
                "Use a key, i.e. a password.",
                "Done.",
            ],
        ),
        (
            "Cats vs. dogs is old. See cf. the report. Fine.",
            &["Cats vs. dogs is old.", "See cf. the report.", "Fine."],
        ),
        (
            "Apples, pears, etc. are fruit. I bought bread etc. Then I left.",
            &[
                "Apples, pears, etc. are fruit.",
                "I bought bread etc.",
                "Then I left.",
            ],
        ),
        // Initials.
        (
            "J. R. R. Tolkien wrote it. I read it.",
            &["J. R. R. Tolkien wrote it.", "I read it."],
        ),
        ("So did I. Then we left.", &["So did I.", "Then we left."]),
        // Decimals and inner dots.
        (
            "It cost 3.5 dollars. Cheap! See example.com now.",
            &["It cost 3.5 dollars.", "Cheap!", "See example.com now."],
        ),
        // Ellipses.
        (
            "Well... I guess so. Wait… what happened?",
            &["Well...", "I guess so.", "Wait… what happened?"],
        ),
        // Closing quotes and brackets.
        (
            "She said \"stop.\" Then she left. (See the notes.) Next.",
            &[
                "She said \"stop.\"",
                "Then she left.",
                "(See the notes.)",
                "Next.",
            ],
        ),
        // Runs of ? and !.
        ("Really?! Yes!!! Why?", &["Really?!", "Yes!!!", "Why?"]),
        // True ends after an abbreviation-like word.
        ("I met the Dr.", &["I met the Dr."]),
        (
            "I met the Dr.\nHe was kind.",
            &["I met the Dr.", "He was kind."],
        ),
        ("That is all, etc.", &["That is all, etc."]),
        // Line breaks and CJK stops.
        ("first line\nsecond line", &["first line", "second line"]),
        ("你好。再见！", &["你好。", "再见！"]),
    ];

    #[test]
    fn abbreviation_table() {
        for (text, want) in TABLE {
            let got: Vec<&str> = split(text).iter().map(|s| s.text).collect();
            assert_eq!(&got, want, "splitting {text:?}");
        }
    }

    #[test]
    fn spans_point_into_the_text() {
        let text = "  One.  Two!\n\n Dr. Who? ";
        let s = split(text);
        assert_eq!(s.len(), 3);
        for s in s {
            assert_eq!(&text[s.start..s.end], s.text);
        }
    }

    /// The table's texts and every text of stops, closers, openers,
    /// spaces, line breaks, initials, abbreviations and CJK stops split as
    /// the first form did.
    #[test]
    fn split_agrees_with_its_first_form_on_the_table() {
        for (text, _) in TABLE {
            assert_eq!(split(text), split_by_chars(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn split_agrees_with_its_first_form(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "Bo", "I", "J", " ", "  ", "\n", ".", "..", "…", "!", "?", "?!", "。",
                    "！", "\"", "'", "’", ")", "(", "“", "Dr", "etc", "e.g", "3", "é", "Ünï", "記",
                    "—", "‼", "⁉", "？", "€", "\u{ff5e}",
                ]),
                0..24,
            )
        ) {
            let text: String = pieces.concat();
            proptest::prop_assert_eq!(split(&text), split_by_chars(&text));
        }
    }

    #[test]
    fn empty_and_punctuation_only_give_nothing() {
        assert!(split("").is_empty());
        assert!(split(" ... !? \n").is_empty());
    }
}
