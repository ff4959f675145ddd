//! Case folding and the search normalisation.
//!
//! - [`push_lowercase`]: one character's Unicode default lowercase form
//!   (`char::to_lowercase`, ASCII fast path), as the operators fold words.
//! - [`search`]: what every search index (and its queries) reads instead of
//!   the text: NFKC, then `str::to_lowercase` (locale-independent, final
//!   sigma), then every run of [JavaScript whitespace](is_js_space) made one
//!   space, trimmed. Diacritics are kept ("déjà" stays "déjà"); NFKC folds
//!   compatibility forms ("ＡＢＣ" → "abc", "ﬁ" → "fi").
//!
//! ```
//! use strataflow_text::normalise::search;
//! assert_eq!(search("  ＡＢＣ\t Déjà "), "abc déjà");
//! ```

use unicode_normalization::UnicodeNormalization;

/// Appends the lowercase form of `c` (`char::to_lowercase`, with a fast
/// path for ASCII).
pub fn push_lowercase(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else {
        out.extend(c.to_lowercase());
    }
}

/// Whether `c` is whitespace for the JavaScript `\s` class (WhiteSpace and
/// LineTerminator of ECMA-262): tab, LF, VT, FF, CR, space, NBSP, OGHAM
/// SPACE MARK, U+2000–U+200A, LS, PS, NNBSP, MMSP, IDEOGRAPHIC SPACE and
/// BOM. Unlike [`char::is_whitespace`] it includes U+FEFF and excludes
/// U+0085 (NEL), as the reference's `replace(/\s+/g, ' ').trim()` does.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// `normalizeSearchText`: NFKC, then Unicode default lower-casing, then
/// every run of whitespace (see [`is_js_space`]) replaced by one space, and
/// leading/trailing space removed.
pub fn search(text: &str) -> String {
    let lowered = text.nfkc().collect::<String>().to_lowercase();
    let mut out = String::with_capacity(lowered.len());
    for part in lowered.split(is_js_space).filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_form() {
        assert_eq!(
            search("Hello\u{feff}\u{3000}World\u{85}"),
            "hello world\u{85}"
        );
        assert_eq!(search("ΟΔΟΣ"), "\u{3bf}\u{3b4}\u{3bf}\u{3c2}");
        assert_eq!(search(" \t "), "");
    }

    #[test]
    fn lowercase_expands() {
        let mut s = String::new();
        push_lowercase(&mut s, 'İ');
        push_lowercase(&mut s, 'A');
        assert_eq!(s, "i\u{307}a");
    }
}
