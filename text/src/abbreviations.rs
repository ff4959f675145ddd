//! The abbreviations whose final `.` does not end a sentence.
//!
//! Words are compared case-insensitively (ASCII), without their final `.`
//! and with their inner dots ("e.g" for "e.g.").
//!
//! ```
//! use strataflow_text::abbreviations::{Abbreviation, lookup};
//! assert_eq!(lookup("Dr"), Some(Abbreviation::Title));
//! assert_eq!(lookup("e.g"), Some(Abbreviation::Latin));
//! assert_eq!(lookup("etc"), Some(Abbreviation::ListEnd));
//! assert_eq!(lookup("team"), None);
//! ```

/// What kind of abbreviation a word is, which decides whether its `.` can
/// still end a sentence.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Abbreviation {
    /// A title before a name ("Dr.", "Mr.", "St.") or a suffix after one
    /// ("Jr.", "Sr."): its `.` ends a sentence only at the end of the text.
    Title,
    /// A Latin or scholarly abbreviation inside a sentence ("e.g.", "i.e.",
    /// "vs.", "cf."): its `.` ends a sentence only at the end of the text.
    Latin,
    /// "etc.": ends a sentence when the next word starts with a capital
    /// letter ("… pears etc. Then we left."), not otherwise ("etc. are").
    ListEnd,
}

/// The table, sorted by word for binary search (lowercase, no final dot).
pub const ABBREVIATIONS: &[(&str, Abbreviation)] = &[
    ("cf", Abbreviation::Latin),
    ("dr", Abbreviation::Title),
    ("e.g", Abbreviation::Latin),
    ("etc", Abbreviation::ListEnd),
    ("i.e", Abbreviation::Latin),
    ("jr", Abbreviation::Title),
    ("mr", Abbreviation::Title),
    ("mrs", Abbreviation::Title),
    ("ms", Abbreviation::Title),
    ("prof", Abbreviation::Title),
    ("sr", Abbreviation::Title),
    ("st", Abbreviation::Title),
    ("viz", Abbreviation::Latin),
    ("vs", Abbreviation::Latin),
];

/// The class of `word` (without its final `.`), if it is an abbreviation.
pub fn lookup(word: &str) -> Option<Abbreviation> {
    let lower = word.to_ascii_lowercase();
    ABBREVIATIONS
        .binary_search_by(|(w, _)| (*w).cmp(lower.as_str()))
        .ok()
        .and_then(|i| ABBREVIATIONS.get(i))
        .map(|(_, class)| *class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_lowercase() {
        assert!(ABBREVIATIONS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(
            ABBREVIATIONS
                .iter()
                .all(|(w, _)| *w == w.to_ascii_lowercase() && !w.ends_with('.'))
        );
    }

    #[test]
    fn lookup_ignores_case() {
        assert_eq!(lookup("MRS"), Some(Abbreviation::Title));
        assert_eq!(lookup("I.E"), Some(Abbreviation::Latin));
        assert_eq!(lookup("Patel"), None);
    }
}
