//! A text's analysis as plain data: computed once (by the pipeline, in the
//! worker that owns the thread) and carried to the operators that read the
//! same text, so that none of them splits or tokenises it again.
//!
//! An [`Analysis`] holds exactly what [`crate::sentences::split`] and
//! [`crate::tokens::words`] (folded) give for the text: each sentence's byte
//! span and the folded words of that sentence. It owns its data (no
//! borrow of the text), so it travels beside the message it was computed
//! from; [`Analysis::of`] is the one way to build it, and an operator
//! given one produces what it produces from the raw text.
//!
//! ```
//! let text = "My mentor Dr. Patel joined. She's kind.";
//! let a = strataflow_text::Analysis::of(text);
//! let sentences: Vec<&str> = a.sentences.iter().map(|s| s.text(text)).collect();
//! assert_eq!(sentences, ["My mentor Dr. Patel joined.", "She's kind."]);
//! assert_eq!(a.sentences[1].words().collect::<Vec<_>>(), ["she's", "kind"]);
//! ```

/// The analysis of one text (see the module docs).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct Analysis {
    /// The sentences of [`crate::sentences::split`], in order.
    pub sentences: Vec<AnalysedSentence>,
}

/// One sentence of an [`Analysis`].
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct AnalysedSentence {
    /// Byte offset of its first character in the text.
    pub start: usize,
    /// Byte offset just after its last character.
    pub end: usize,
    /// Its words ([`FoldedWords::of`] the sentence): see
    /// [`AnalysedSentence::words`].
    words: FoldedWords,
}

/// A text's words ([`crate::tokens::words`]), folded
/// ([`crate::Token::folded`]), one after the other in one string: one
/// allocation for the text, not one per word.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct FoldedWords {
    /// The words, concatenated.
    folded: String,
    /// Where each word ends in `folded` (each starts where the one before
    /// it ends).
    ends: Vec<u32>,
}

impl Analysis {
    /// Splits `text` into sentences and each sentence into folded words.
    pub fn of(text: &str) -> Self {
        let sentences = crate::sentences::split(text)
            .into_iter()
            .map(|s| AnalysedSentence {
                start: s.start,
                end: s.end,
                words: FoldedWords::of(s.text),
            })
            .collect();
        Self { sentences }
    }
}

impl FoldedWords {
    /// The folded words of `text`.
    pub fn of(text: &str) -> Self {
        let (folded, ends) = folded_words(text);
        Self { folded, ends }
    }

    /// The words, in order.
    pub fn words(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        self.ends.iter().enumerate().map(|(k, &end)| {
            let start = k
                .checked_sub(1)
                .and_then(|before| self.ends.get(before))
                .map_or(0, |&e| e as usize);
            self.folded.get(start..end as usize).unwrap_or_default()
        })
    }

    /// [`FoldedWords::words`] as a list (one allocation).
    pub fn to_list(&self) -> Vec<&str> {
        self.words().collect()
    }
}

/// [`crate::tokens::words`] of `text`, folded ([`crate::Token::folded`]),
/// one after the other, and where each ends; an ASCII text is read as
/// bytes (`tokens::ascii_word_spans`: the same words) and lowercased in
/// place.
fn folded_words(text: &str) -> (String, Vec<u32>) {
    let mut folded = String::with_capacity(text.len());
    // About one word per five bytes: room for most sentences' words at once.
    let mut ends = Vec::with_capacity(text.len() / 5 + 1);
    // A sentence is far below 4 GiB; one that is not keeps the words that fit.
    let mut push = |folded: &mut String, word: &str| {
        folded.push_str(word);
        if let Ok(end) = u32::try_from(folded.len()) {
            ends.push(end);
        }
    };
    if !text.is_ascii() {
        for token in crate::tokens::words(text) {
            push(&mut folded, &token.folded());
        }
        return (folded, ends);
    }
    for (from, at) in crate::tokens::ascii_word_spans(text) {
        if let Some(word) = text.get(from..at) {
            let start = folded.len();
            push(&mut folded, word);
            if let Some(added) = folded.get_mut(start..) {
                added.make_ascii_lowercase();
            }
        }
    }
    (folded, ends)
}

impl AnalysedSentence {
    /// Its words, in order ([`crate::tokens::words`] of the sentence,
    /// folded).
    pub fn words(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        self.words.words()
    }

    /// [`AnalysedSentence::words`] as a list (one allocation).
    pub fn word_list(&self) -> Vec<&str> {
        self.words.to_list()
    }

    /// The sentence's text in `text` (the text it was computed from; empty
    /// when the span is not in it).
    pub fn text<'a>(&self, text: &'a str) -> &'a str {
        text.get(self.start..self.end).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn an_analysis_is_the_split_and_the_folded_words_of_each_sentence() {
        let text = "  Hi Mr. Smith!  It’s 3.50 today.\nJ. R. R. Tolkien wrote it ";
        let a = Analysis::of(text);
        let split = crate::sentences::split(text);
        assert_eq!(a.sentences.len(), split.len());
        for (s, t) in a.sentences.iter().zip(&split) {
            assert_eq!(s.text(text), t.text);
            assert_eq!(s.word_list(), words_by_tokens(t.text));
        }
        assert_eq!(a.sentences[1].word_list(), ["it's", "3", "50", "today"]);
        assert_eq!(Analysis::of(""), Analysis::default());
    }

    /// [`FoldedWords::of`] `text`, one string per word.
    fn split_words(text: &str) -> Vec<String> {
        FoldedWords::of(text).words().map(str::to_owned).collect()
    }

    /// [`crate::tokens::words`] of `text`, folded: what an analysis's
    /// words must be.
    fn words_by_tokens(text: &str) -> Vec<String> {
        crate::tokens::words(text)
            .iter()
            .map(crate::Token::folded)
            .collect()
    }

    proptest::proptest! {
        /// Each sentence's words are the folded words of its text, for any
        /// text (ASCII or not).
        #[test]
        fn the_words_are_the_folded_words_for_any_text(text in "(\\PC|[A-Za-z' ’.!?]){0,40}") {
            let a = Analysis::of(&text);
            for s in &a.sentences {
                proptest::prop_assert_eq!(s.word_list(), words_by_tokens(s.text(&text)));
            }
        }

        /// The byte path on texts dense in apostrophes, letters and digits.
        #[test]
        fn ascii_words_around_apostrophes_are_the_folded_words(text in "[a'B1 .-]{0,30}") {
            proptest::prop_assert_eq!(split_words(&text), words_by_tokens(&text));
        }

        /// The byte path of ASCII text gives the folded words.
        #[test]
        fn ascii_words_read_as_bytes_are_the_folded_words(text in "[ -~\t\n]{0,40}") {
            proptest::prop_assert_eq!(split_words(&text), words_by_tokens(&text));
        }
    }
}
