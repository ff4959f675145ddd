//! Small string helpers with JavaScript semantics.
//!
//! The reference implementation trims and collapses with JavaScript's `\s`
//! and `String.prototype.trim`, whose whitespace set differs slightly from
//! Rust's `char::is_whitespace` (JavaScript counts U+FEFF and not U+0085).

/// Whether `c` is whitespace for JavaScript's `\s` and `trim()`.
pub(super) fn is_js_space(c: char) -> bool {
    c == '\u{FEFF}' || (c != '\u{85}' && c.is_whitespace())
}

/// Whether `c` ends a line for JavaScript's multiline `^`.
pub(super) fn is_js_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// `s.trim()` in JavaScript.
pub(super) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `s.replace(/\s+/g, ' ')` in JavaScript: every whitespace run becomes one
/// space. Does not trim.
pub(super) fn collapse_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_run = false;
    let mut rest = s;
    while !rest.is_empty() {
        // A run of printable ASCII (no space, no control byte, no byte of
        // a wider character) holds no whitespace: copied at once.
        let plain = rest
            .bytes()
            .position(|b| b <= b' ' || !b.is_ascii())
            .unwrap_or(rest.len());
        if plain > 0 {
            let (run, after) = rest.split_at(plain);
            out.push_str(run);
            in_run = false;
            rest = after;
            continue;
        }
        let mut chars = rest.chars();
        let Some(c) = chars.next() else { break };
        if is_js_space(c) {
            if !in_run {
                out.push(' ');
                in_run = true;
            }
        } else {
            out.push(c);
            in_run = false;
        }
        rest = chars.as_str();
    }
    out
}

/// Collapses whitespace runs to one space, then trims: computed as
/// trimming then collapsing (the same text, one copy).
pub(super) fn collapse_and_trim(s: &str) -> String {
    collapse_spaces(js_trim(s))
}

/// The first `n` Unicode scalar values of `s`.
pub(super) fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((end, _)) => s.get(..end).unwrap_or(s),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_follows_javascript() {
        assert!(is_js_space('\u{FEFF}'));
        assert!(!is_js_space('\u{85}'));
        assert!(is_js_space('\u{3000}'));
        assert_eq!(js_trim("\u{FEFF} a \u{3000}"), "a");
        assert_eq!(collapse_spaces(" a \n\t b "), " a b ");
        assert_eq!(collapse_and_trim(" a \n\t b "), "a b");
    }

    /// The first form of [`collapse_spaces`], character by character.
    fn collapse_spaces_by_char(s: &str) -> String {
        let mut out = String::new();
        let mut in_run = false;
        for c in s.chars() {
            if is_js_space(c) {
                if !in_run {
                    out.push(' ');
                    in_run = true;
                }
            } else {
                out.push(c);
                in_run = false;
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn collapsing_by_ascii_runs_equals_collapsing_by_char(
            s in "([a-z0-9 .,!?'\t\n\r\u{0b}\u{0c}\u{1}\u{7f}\u{85}\u{a0}\u{2028}\u{3000}\u{feff}é日]|[ -~]{1,12}){0,40}"
        ) {
            proptest::prop_assert_eq!(collapse_spaces(&s), collapse_spaces_by_char(&s));
        }

        #[test]
        fn trimming_then_collapsing_equals_collapsing_then_trimming(
            s in "[a-z \t\n\u{85}\u{a0}\u{3000}\u{feff}é]{0,30}"
        ) {
            let collapsed = collapse_spaces(&s);
            proptest::prop_assert_eq!(collapse_and_trim(&s), js_trim(&collapsed));
        }
    }

    #[test]
    fn first_chars_counts_scalars() {
        assert_eq!(first_chars("héllo", 2), "hé");
        assert_eq!(first_chars("日本語", 5), "日本語");
        assert_eq!(first_chars("abc", 0), "");
    }
}
