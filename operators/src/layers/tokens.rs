//! Token estimate used for the monotonic cost guarantee (spec §4.5).

/// Estimates the token cost of `text`: each maximal run of ASCII code points
/// (≤ U+007F) counts `ceil(run / 4)`, and every non-ASCII code point counts 1.
///
/// ```
/// use strataflow_operators::layers::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert_eq!(estimate_tokens("abcde"), 2);
/// assert_eq!(estimate_tokens("ab日本cd"), 4);
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    let mut counter = TokenCounter::default();
    counter.push(text);
    counter.total()
}

/// [`estimate_tokens`] of a text given in pieces, without joining them: an
/// ASCII run may span pieces.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TokenCounter {
    /// Tokens of the runs and code points closed so far.
    closed: usize,
    /// Length of the ASCII run still open.
    ascii_run: usize,
}

impl TokenCounter {
    /// Counts the next piece.
    pub(super) fn push(&mut self, piece: &str) {
        if piece.is_ascii() {
            self.ascii_run += piece.len();
            return;
        }
        // By bytes: an ASCII byte is an ASCII code point, and each other
        // code point has exactly one byte that is not a continuation
        // (0b10xxxxxx).
        for b in piece.bytes() {
            if b.is_ascii() {
                self.ascii_run += 1;
            } else if b >= 0xC0 {
                self.closed += self.ascii_run.div_ceil(4) + 1;
                self.ascii_run = 0;
            }
        }
    }

    /// The estimate of everything pushed.
    pub(super) fn total(&self) -> usize {
        self.closed + self.ascii_run.div_ceil(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Counting by bytes equals counting by characters.
        #[test]
        fn counting_by_bytes_equals_counting_by_chars(text in "[a-d 日é\u{10348}\u{7f}\u{80}]{0,40}") {
            let mut tokens = 0;
            let mut ascii_run = 0usize;
            for c in text.chars() {
                if c.is_ascii() {
                    ascii_run += 1;
                } else {
                    tokens += ascii_run.div_ceil(4) + 1;
                    ascii_run = 0;
                }
            }
            proptest::prop_assert_eq!(estimate_tokens(&text), tokens + ascii_run.div_ceil(4));
        }
    }

    #[test]
    fn ascii_runs_count_a_quarter_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("\u{7f}"), 1);
    }

    #[test]
    fn non_ascii_code_points_count_one_each() {
        assert_eq!(estimate_tokens("日本語"), 3);
        assert_eq!(estimate_tokens("é"), 1);
        assert_eq!(estimate_tokens("😀"), 1);
        // Two ASCII runs split by a non-ASCII code point are counted apart.
        assert_eq!(estimate_tokens("ab日cd"), 3);
        assert_eq!(estimate_tokens("abcde日abcde"), 5);
    }
}
