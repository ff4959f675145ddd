//! Text analysis shared by every strataflow crate: the one place that says
//! where a sentence ends, what a word is and how text is folded for search.
//!
//! - [`sentences`]: sentences with byte spans, aware of abbreviations
//!   (titles such as "Dr.", Latin such as "e.g."), initials ("J. R. R."),
//!   decimals, ellipses, closing quotes and brackets, "?!" runs.
//! - [`tokens`]: word tokens with byte offsets — the operators' plain words
//!   and the search index's UAX #29 word segments.
//! - [`normalise`]: the lower-casing and the search normalisation (NFKC,
//!   lower case, whitespace collapsed) the indexes use.
//! - [`abbreviations`]: the abbreviation table the splitter consults.
//! - [`analysis`]: a text's sentences and words as plain data, computed
//!   once and carried to every operator that reads the text.
//!
//! Deterministic, no allocation beyond the output, no model, no locale.
//!
//! ```
//! let s = strataflow_text::sentences::split("my mentor Dr. Patel joined. She is kind.");
//! let texts: Vec<&str> = s.iter().map(|s| s.text).collect();
//! assert_eq!(texts, ["my mentor Dr. Patel joined.", "She is kind."]);
//! ```
//!
//! Operator versions that already shipped keep their own (frozen) splitters
//! so that their outputs and record ids never change; new versions call
//! this crate (see `docs/ARCHITECTURE.md`, "frozen v1").

pub mod abbreviations;
pub mod analysis;
pub mod normalise;
pub mod sentences;
pub mod tokens;

pub use analysis::{AnalysedSentence, Analysis, FoldedWords};
pub use sentences::Sentence;
pub use tokens::Token;
