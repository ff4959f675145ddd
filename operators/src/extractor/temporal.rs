//! The temporal resolver (being written).

use strataflow_log::record::{Precision, TimeBasis};
use strataflow_log::{SourceTime, Timestamp};

/// Direction of a statement relative to its mention.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Tense {
    /// Already happened.
    Past,
    /// Happening now.
    Present,
    /// Yet to happen.
    Future,
}

/// A time expression found in text and resolved against the mention time.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TimeExpression {
    /// Byte offset of the expression in the text.
    pub start: usize,
    /// Byte offset just after it.
    pub end: usize,
    /// The expression as written.
    pub text: String,
    /// Start of the interval.
    pub happened_start: Option<Timestamp>,
    /// End of the interval (inclusive: its last millisecond).
    pub happened_end: Option<Timestamp>,
    /// Precision.
    pub precision: Precision,
    /// Basis.
    pub basis: TimeBasis,
    /// Whether it lies before, around or after the mention.
    pub tense: Tense,
}

/// The tense of a sentence.
pub fn detect_tense(_text: &str) -> Tense {
    Tense::Past
}

/// Every time expression in `text`, in order.
pub fn find_time_expressions(_text: &str, _mention: SourceTime) -> Vec<TimeExpression> {
    Vec::new()
}
