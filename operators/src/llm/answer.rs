//! Reading a model's answer: typed access to the fields of its JSON
//! arguments, with errors that name the item and field, and the time forms
//! an answer may use.
//!
//! Every problem is an [`OperatorError::Failed`] whose text names where it
//! is (`event 2: missing required field `title``), so the failed
//! `Derivation` says why and a later attempt asks again.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, TimeZone};
use serde_json::{Map, Value};
use strataflow_record::Timestamp;
use strataflow_record::record::Precision;

use crate::operator::OperatorError;

/// One JSON object of an answer and where it is (`answer`, `event 2`,
/// `node 1`, `node 1 fact 2`).
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    at: &'a str,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A failed run whose reason starts with `at`.
pub fn failed(at: &str, problem: impl std::fmt::Display) -> OperatorError {
    OperatorError::Failed(format!("{at}: {problem}"))
}

impl<'a> Fields<'a> {
    /// `value` as an object at `at`.
    pub fn of(value: &'a Value, at: &'a str) -> Result<Self, OperatorError> {
        match value {
            Value::Object(map) => Ok(Self { map, at }),
            other => Err(failed(
                at,
                format_args!("expected a JSON object, got {}", kind(other)),
            )),
        }
    }

    /// Where this object is.
    pub fn at(&self) -> &'a str {
        self.at
    }

    fn required(&self, key: &str) -> Result<&'a Value, OperatorError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Err(failed(
                self.at,
                format_args!("missing required field `{key}`"),
            )),
            Some(v) => Ok(v),
        }
    }

    fn optional(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn wrong(&self, key: &str, expected: &str, got: &Value) -> OperatorError {
        failed(
            self.at,
            format_args!("field `{key}` must be {expected}, got {}", kind(got)),
        )
    }

    /// A required string.
    pub fn string(&self, key: &str) -> Result<&'a str, OperatorError> {
        let v = self.required(key)?;
        v.as_str().ok_or_else(|| self.wrong(key, "a string", v))
    }

    /// An optional string (absent or null: `None`).
    pub fn opt_string(&self, key: &str) -> Result<Option<&'a str>, OperatorError> {
        match self.optional(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a string or null", v)),
        }
    }

    /// A required boolean.
    pub fn boolean(&self, key: &str) -> Result<bool, OperatorError> {
        let v = self.required(key)?;
        v.as_bool().ok_or_else(|| self.wrong(key, "a boolean", v))
    }

    /// An optional boolean.
    pub fn opt_boolean(&self, key: &str) -> Result<Option<bool>, OperatorError> {
        match self.optional(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a boolean", v)),
        }
    }

    /// A required array.
    pub fn array(&self, key: &str) -> Result<&'a [Value], OperatorError> {
        let v = self.required(key)?;
        v.as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| self.wrong(key, "an array", v))
    }

    /// An optional array (absent or null: empty).
    pub fn opt_array(&self, key: &str) -> Result<&'a [Value], OperatorError> {
        match self.optional(key) {
            None => Ok(&[]),
            Some(v) => v
                .as_array()
                .map(Vec::as_slice)
                .ok_or_else(|| self.wrong(key, "an array", v)),
        }
    }

    fn strings_of(&self, key: &str, items: &[Value]) -> Result<Vec<String>, OperatorError> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    failed(
                        self.at,
                        format_args!("`{key}[{}]` must be a string, got {}", i + 1, kind(v)),
                    )
                })
            })
            .collect()
    }

    /// A required array of strings.
    pub fn strings(&self, key: &str) -> Result<Vec<String>, OperatorError> {
        self.strings_of(key, self.array(key)?)
    }

    /// An optional array of strings (absent or null: empty).
    pub fn opt_strings(&self, key: &str) -> Result<Vec<String>, OperatorError> {
        self.strings_of(key, self.opt_array(key)?)
    }

    /// A required string that must be one of `names`, mapped to its value.
    pub fn one_of<T: Copy>(&self, key: &str, table: &[(&str, T)]) -> Result<T, OperatorError> {
        let text = self.string(key)?;
        let wanted = text.trim().to_lowercase();
        table
            .iter()
            .find(|(name, _)| *name == wanted)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                failed(
                    self.at,
                    format_args!(
                        "field `{key}` is `{text}`, expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }

    /// An optional confidence from 0 to 1 as per-mille (`default` when
    /// absent); values outside [0, 1] are clamped.
    pub fn confidence_milli(&self, key: &str, default: u16) -> Result<u16, OperatorError> {
        match self.optional(key) {
            None => Ok(default),
            Some(v) => {
                let x = v
                    .as_f64()
                    .ok_or_else(|| self.wrong(key, "a number from 0 to 1", v))?;
                // Rounded to an integer before it reaches a record.
                let milli = (x.clamp(0.0, 1.0) * 1000.0).round();
                Ok(if milli >= 1000.0 { 1000 } else { milli as u16 })
            }
        }
    }
}

/// A time an answer gave, resolved to an interval.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Interval {
    /// First millisecond.
    pub start: Timestamp,
    /// Last millisecond (equal to `start` for an instant).
    pub end: Timestamp,
    /// Year, month, day or instant.
    pub precision: Precision,
}

/// Parses a time an answer gave: RFC 3339 (an instant), a local date-time
/// `YYYY-MM-DDTHH:MM[:SS]` (an instant in `offset_minutes`), `YYYY-MM-DD`,
/// `YYYY-MM` or `YYYY` (the whole day, month or year in `offset_minutes`,
/// UTC when `None`). `None` when it is none of these.
pub fn parse_time(text: &str, offset_minutes: Option<i16>) -> Option<Interval> {
    let text = text.trim();
    let offset = FixedOffset::east_opt(i32::from(offset_minutes.unwrap_or(0)) * 60)?;
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        let at = Timestamp(t.timestamp_millis());
        return Some(instant(at));
    }
    for form in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, form) {
            let t = offset.from_local_datetime(&t).single()?;
            return Some(instant(Timestamp(t.timestamp_millis())));
        }
    }
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = text.split('-').collect();
    let (first, last, precision) = match parts.as_slice() {
        [y] if digits(y, 4) => {
            let y: i32 = y.parse().ok()?;
            (
                NaiveDate::from_ymd_opt(y, 1, 1)?,
                NaiveDate::from_ymd_opt(y + 1, 1, 1)?,
                Precision::Year,
            )
        }
        [y, m] if digits(y, 4) && digits(m, 2) => {
            let first = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, 1)?;
            let next = first.checked_add_months(chrono::Months::new(1))?;
            (first, next, Precision::Month)
        }
        [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2) => {
            let first = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)?;
            (first, first.succ_opt()?, Precision::Day)
        }
        _ => return None,
    };
    let ms = |d: NaiveDate| -> Option<i64> {
        let t = offset
            .from_local_datetime(&d.and_hms_opt(0, 0, 0)?)
            .single()?;
        Some(t.timestamp_millis())
    };
    Some(Interval {
        start: Timestamp(ms(first)?),
        end: Timestamp(ms(last)? - 1),
        precision,
    })
}

fn instant(at: Timestamp) -> Interval {
    Interval {
        start: at,
        end: at,
        precision: Precision::Instant,
    }
}

/// A required-or-null time field of `fields`, parsed with [`parse_time`].
pub fn time_field(
    fields: &Fields<'_>,
    key: &str,
    offset_minutes: Option<i16>,
) -> Result<Option<Interval>, OperatorError> {
    let Some(text) = fields.opt_string(key)? else {
        return Ok(None);
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    parse_time(text, offset_minutes).map(Some).ok_or_else(|| {
        failed(
            fields.at(),
            format_args!(
                "field `{key}` is `{text}`, not a time (expected YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339)"
            ),
        )
    })
}

/// The start and end of an occurrence from two optional times: one of them
/// alone or both naming the same period keep that period and its precision;
/// two different ones make a range from the start of the first to the end
/// of the second, which must not end before it starts.
pub fn span(
    fields: &Fields<'_>,
    start_key: &str,
    end_key: &str,
    offset_minutes: Option<i16>,
) -> Result<(Option<Timestamp>, Option<Timestamp>, Precision), OperatorError> {
    let start = time_field(fields, start_key, offset_minutes)?;
    let end = time_field(fields, end_key, offset_minutes)?;
    Ok(match (start, end) {
        (None, None) => (None, None, Precision::Unknown),
        (Some(s), None) => (Some(s.start), Some(s.end), s.precision),
        (None, Some(e)) => (None, Some(e.end), Precision::Range),
        (Some(s), Some(e)) if s == e => (Some(s.start), Some(s.end), s.precision),
        (Some(s), Some(e)) => {
            if e.end < s.start {
                let text = |k: &str| fields.opt_string(k).ok().flatten().unwrap_or_default();
                return Err(failed(
                    fields.at(),
                    format_args!(
                        "`{end_key}` `{}` is before `{start_key}` `{}`",
                        text(end_key),
                        text(start_key)
                    ),
                ));
            }
            (Some(s.start), Some(e.end), Precision::Range)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(text: &str) -> Timestamp {
        Timestamp(
            DateTime::parse_from_rfc3339(text)
                .map(|t| t.timestamp_millis())
                .unwrap_or(i64::MIN),
        )
    }

    #[test]
    fn times_in_every_accepted_form() {
        let day = parse_time("2023-05-08", Some(120)).unwrap();
        assert_eq!(day.start, ts("2023-05-08T00:00:00+02:00"));
        assert_eq!(day.end, Timestamp(ts("2023-05-09T00:00:00+02:00").0 - 1));
        assert_eq!(day.precision, Precision::Day);
        let month = parse_time("2023-12", None).unwrap();
        assert_eq!(month.start, ts("2023-12-01T00:00:00Z"));
        assert_eq!(month.end, Timestamp(ts("2024-01-01T00:00:00Z").0 - 1));
        assert_eq!(month.precision, Precision::Month);
        let year = parse_time("2022", Some(-300)).unwrap();
        assert_eq!(year.start, ts("2022-01-01T00:00:00-05:00"));
        assert_eq!(year.precision, Precision::Year);
        let at = parse_time("2023-05-08T13:56:00+02:00", None).unwrap();
        assert_eq!((at.start, at.end), (at.start, at.start));
        assert_eq!(at.start, ts("2023-05-08T11:56:00Z"));
        assert_eq!(at.precision, Precision::Instant);
        let local = parse_time("2023-05-08T13:56", Some(120)).unwrap();
        assert_eq!(local.start, at.start);
    }

    #[test]
    fn rejects_other_time_forms() {
        for bad in [
            "yesterday",
            "2023-13",
            "2023-02-30",
            "23-05-08",
            "2023/05/08",
            "May 2023",
            "",
            "20234",
        ] {
            assert_eq!(parse_time(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn spans_and_their_errors() {
        let v = json!({"a": "2023-05", "b": "2023-05-20", "c": "2023-04", "n": null});
        let f = Fields::of(&v, "event 1").unwrap();
        let (s, e, p) = span(&f, "a", "b", None).unwrap();
        assert_eq!(s, Some(ts("2023-05-01T00:00:00Z")));
        assert_eq!(e, Some(Timestamp(ts("2023-05-21T00:00:00Z").0 - 1)));
        assert_eq!(p, Precision::Range);
        assert_eq!(span(&f, "a", "a", None).unwrap().2, Precision::Month);
        assert_eq!(
            span(&f, "n", "x", None).unwrap(),
            (None, None, Precision::Unknown)
        );
        let err = span(&f, "a", "c", None).unwrap_err();
        assert_eq!(
            err,
            OperatorError::Failed("event 1: `c` `2023-04` is before `a` `2023-05`".into())
        );
    }

    #[test]
    fn field_errors_name_item_and_field() {
        let v = json!({"s": 1, "list": ["a", 2], "kind": "maybe"});
        let f = Fields::of(&v, "event 3").unwrap();
        let msg = |e: OperatorError| e.to_string();
        assert_eq!(
            msg(f.string("title").unwrap_err()),
            "event 3: missing required field `title`"
        );
        assert_eq!(
            msg(f.string("s").unwrap_err()),
            "event 3: field `s` must be a string, got a number"
        );
        assert_eq!(
            msg(f.strings("list").unwrap_err()),
            "event 3: `list[2]` must be a string, got a number"
        );
        assert_eq!(
            msg(f.one_of("kind", &[("yes", 1), ("no", 0)]).unwrap_err()),
            "event 3: field `kind` is `maybe`, expected one of yes, no"
        );
        assert_eq!(
            msg(Fields::of(&json!([1]), "answer").unwrap_err()),
            "answer: expected a JSON object, got an array"
        );
    }

    #[test]
    fn confidence_is_per_mille() {
        let v = json!({"a": 0.8765, "b": 7, "c": "x"});
        let f = Fields::of(&v, "x").unwrap();
        assert_eq!(f.confidence_milli("a", 0).unwrap(), 877);
        assert_eq!(f.confidence_milli("b", 0).unwrap(), 1000);
        assert_eq!(f.confidence_milli("none", 800).unwrap(), 800);
        assert!(f.confidence_milli("c", 0).is_err());
    }
}
