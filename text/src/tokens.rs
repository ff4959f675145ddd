//! Word tokens with byte offsets.
//!
//! Two tokenizers, for two jobs:
//! - [`words`]: the operators' words — runs of letters and digits, joined
//!   by an apostrophe (`'` or `’`) between two of them ("I'll", "Mel’s").
//!   [`Token::folded`] gives the lowercase form with a plain apostrophe.
//! - [`segments`]: the search index's words — the UAX #29 word segments
//!   that hold a letter or digit ("3.5", "e.g", "don’t" stay whole, hyphens
//!   split). A query must be analysed with the tokenizer of the index it
//!   searches, so search code uses only this one.
//!
//! ```
//! use strataflow_text::tokens::{segments, words};
//! let w: Vec<String> = words("I’ll pay 3.5 now").iter().map(|t| t.folded()).collect();
//! assert_eq!(w, ["i'll", "pay", "3", "5", "now"]);
//! let s: Vec<&str> = segments("I’ll pay 3.5 now").iter().map(|t| t.text).collect();
//! assert_eq!(s, ["I’ll", "pay", "3.5", "now"]);
//! ```

use unicode_segmentation::UnicodeSegmentation;

use crate::normalise::push_lowercase;

/// A word of a text with its byte span.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Token<'a> {
    /// The word as written.
    pub text: &'a str,
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset just after its last character.
    pub end: usize,
}

impl Token<'_> {
    /// Lowercase ([`push_lowercase`]), with `’` made a plain `'`.
    pub fn folded(&self) -> String {
        // ASCII holds no `’` and lowercases byte by byte.
        if self.text.is_ascii() {
            return self.text.to_ascii_lowercase();
        }
        let mut out = String::with_capacity(self.text.len());
        for c in self.text.chars() {
            if c == '’' {
                out.push('\'');
            } else {
                push_lowercase(&mut out, c);
            }
        }
        out
    }

    /// Whether it begins with an uppercase letter.
    pub fn is_capitalised(&self) -> bool {
        self.text.chars().next().is_some_and(char::is_uppercase)
    }
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '’'
}

/// The operators' words: runs of letters and digits (`char::is_alphanumeric`)
/// joined by an apostrophe between two of them.
pub fn words(text: &str) -> Vec<Token<'_>> {
    // About one word per five bytes: room for most texts' words at once.
    let mut out = Vec::with_capacity(text.len() / 5 + 1);
    if text.is_ascii() {
        ascii_words(text, &mut out);
        return out;
    }
    // One loop (not `word_iter(text).collect()`, slower by a tenth on the
    // operators' texts); the tests hold both to the same words.
    let mut start: Option<usize> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let inner_apostrophe = is_apostrophe(c)
            && start.is_some()
            && chars.peek().is_some_and(|&(_, n)| n.is_alphanumeric());
        if c.is_alphanumeric() {
            start.get_or_insert(at);
        } else if !inner_apostrophe && let Some(from) = start.take() {
            out.extend(token(text, from, at));
        }
    }
    if let Some(from) = start {
        out.extend(token(text, from, text.len()));
    }
    out
}

/// [`words`] of an ASCII text ([`ascii_word_spans`]).
fn ascii_words<'a>(text: &'a str, out: &mut Vec<Token<'a>>) {
    out.extend(ascii_word_spans(text).filter_map(|(start, end)| token(text, start, end)));
}

/// The byte spans of [`words`] in an ASCII text, read as bytes: for an
/// ASCII character `char::is_alphanumeric` is `u8::is_ascii_alphanumeric`
/// and `'` is the only apostrophe, so a word is a run of letters and
/// digits continued past each `'` that has one after it (the tests hold
/// it to [`word_iter`]). Not for text that is not ASCII.
pub(crate) fn ascii_word_spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let alnum = move |at: usize| bytes.get(at).is_some_and(u8::is_ascii_alphanumeric);
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !alnum(at) {
            at += 1;
        }
        if at >= bytes.len() {
            return None;
        }
        let from = at;
        loop {
            while alnum(at) {
                at += 1;
            }
            if bytes.get(at) == Some(&b'\'') && alnum(at + 1) {
                at += 1;
            } else {
                break;
            }
        }
        Some((from, at))
    })
}

/// [`words`] one at a time: the same words, read only as far as they are
/// taken (the first word of a long text costs the first word).
pub fn word_iter(text: &str) -> Words<'_> {
    Words {
        text,
        chars: text.char_indices().peekable(),
    }
}

/// The iterator of [`word_iter`].
#[derive(Clone, Debug)]
pub struct Words<'a> {
    text: &'a str,
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
}

impl<'a> Iterator for Words<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let mut start: Option<usize> = None;
        while let Some((at, c)) = self.chars.next() {
            let inner_apostrophe = is_apostrophe(c)
                && start.is_some()
                && self.chars.peek().is_some_and(|&(_, n)| n.is_alphanumeric());
            if c.is_alphanumeric() {
                start.get_or_insert(at);
            } else if !inner_apostrophe && let Some(from) = start {
                // A span of the text between character boundaries.
                if let Some(t) = token(self.text, from, at) {
                    return Some(t);
                }
                start = None;
            }
        }
        start.and_then(|from| token(self.text, from, self.text.len()))
    }
}

fn token(text: &str, start: usize, end: usize) -> Option<Token<'_>> {
    text.get(start..end).map(|t| Token {
        text: t,
        start,
        end,
    })
}

/// The search index's words: UAX #29 word segments holding at least one
/// letter or digit (what `unicode_words` yields), with their spans.
pub fn segments(text: &str) -> Vec<Token<'_>> {
    text.unicode_word_indices()
        .map(|(start, t)| Token {
            text: t,
            start,
            end: start + t.len(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> Vec<String> {
        words(text).iter().map(Token::folded).collect()
    }

    proptest::proptest! {
        /// The iterator gives the words of [`words`], for any text.
        #[test]
        fn the_word_iterator_gives_the_same_words(text in "(\\PC|[a-z' ’.]){0,30}") {
            let all = words(&text);
            proptest::prop_assert_eq!(word_iter(&text).collect::<Vec<_>>(), all.clone());
            proptest::prop_assert_eq!(word_iter(&text).next(), all.first().copied());
        }

        /// ASCII text, read as bytes, gives the iterator's words, dense in
        /// apostrophes, digits and punctuation.
        #[test]
        fn ascii_text_gives_the_iterators_words(text in "[a-zA-Z0-9' .,!?-]{0,40}|[ -~\t\n]{0,40}") {
            proptest::prop_assert_eq!(words(&text), word_iter(&text).collect::<Vec<_>>());
        }
    }

    #[test]
    fn words_keep_inner_apostrophes_only() {
        assert_eq!(folded("I'm at Mel's, OK?"), ["i'm", "at", "mel's", "ok"]);
        assert_eq!(
            folded("'quoted' rock'n'roll x'"),
            ["quoted", "rock'n'roll", "x"]
        );
        assert_eq!(folded("Ünïcode ÉTÉ"), ["ünïcode", "été"]);
    }

    #[test]
    fn spans_point_into_the_text() {
        let text = "Dr. Patel’s e-mail: 3.5";
        for t in words(text).into_iter().chain(segments(text)) {
            assert_eq!(&text[t.start..t.end], t.text);
        }
    }

    #[test]
    fn segments_are_uax29_words() {
        let text = "Dr. Patel’s e-mail: 3.5 记忆";
        let s: Vec<&str> = segments(text).iter().map(|t| t.text).collect();
        let reference: Vec<&str> = text.unicode_words().collect();
        assert_eq!(s, reference);
        assert_eq!(s, ["Dr", "Patel’s", "e", "mail", "3.5", "记", "忆"]);
    }
}
