//! Source times: UTC instants in milliseconds plus the original offset when known.
//!
//! Times in records always come from the input (a message's `ts`, a session's
//! date), never from the wall clock.

use std::fmt;

use chrono::{DateTime, FixedOffset, SecondsFormat, TimeZone, Utc};
use rkyv::{Archive, Deserialize, Serialize};

/// An instant in UTC milliseconds since the Unix epoch.
#[derive(Archive, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[rkyv(derive(Debug))]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// RFC 3339 in UTC with millisecond precision, e.g. `2023-05-08T13:56:00.000Z`.
    pub fn to_rfc3339(self) -> String {
        match Utc.timestamp_millis_opt(self.0).single() {
            Some(t) => t.to_rfc3339_opts(SecondsFormat::Millis, true),
            None => format!("@{}ms", self.0),
        }
    }
    /// The UTC date, `YYYY-MM-DD`; a year outside 0000..=9999 is written
    /// in ISO 8601's expanded form with its sign (`-0002-12-31`,
    /// `+10000-01-01`), never cut short.
    pub fn to_date(self) -> String {
        match Utc.timestamp_millis_opt(self.0).single() {
            Some(t) => t.format("%Y-%m-%d").to_string(),
            None => format!("@{}ms", self.0),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

/// When a message was written, as given by its source.
#[derive(Archive, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
#[rkyv(derive(Debug))]
pub struct SourceTime {
    /// The instant, UTC milliseconds since the Unix epoch.
    pub utc_ms: i64,
    /// The offset from UTC in minutes that the source wrote, when it wrote one.
    pub offset_minutes: Option<i16>,
}

impl SourceTime {
    /// Parses an RFC 3339 time such as `2023-05-08T13:56:00+02:00`, keeping the offset.
    /// A year outside 0000..=9999 is accepted in ISO 8601's expanded form,
    /// a sign then at least four digits (`-0002-12-31T00:00:00Z`), as
    /// [`SourceTime::to_rfc3339`] writes it, so every written time parses
    /// back.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let text = text.trim();
        let t = match DateTime::parse_from_rfc3339(text) {
            Ok(t) => t,
            Err(_) => parse_expanded_year(text)?,
        };
        Some(Self::from_datetime(&t))
    }

    /// From a chrono time with a known offset.
    pub fn from_datetime(t: &DateTime<FixedOffset>) -> Self {
        let secs = t.offset().local_minus_utc() / 60;
        Self {
            utc_ms: t.timestamp_millis(),
            // default: never `None`, chrono offsets are under a day (1440 min).
            offset_minutes: i16::try_from(secs).ok(),
        }
    }

    /// A UTC instant whose source gave no offset.
    pub fn utc_without_offset(utc_ms: i64) -> Self {
        Self {
            utc_ms,
            offset_minutes: None,
        }
    }

    /// The instant.
    pub fn instant(self) -> Timestamp {
        Timestamp(self.utc_ms)
    }

    /// The date in the original offset (UTC when unknown), `YYYY-MM-DD`; a
    /// year outside 0000..=9999 in ISO 8601's expanded form (`-0002-12-31`).
    pub fn to_date(self) -> String {
        let offset = self
            .offset_minutes
            .and_then(|m| FixedOffset::east_opt(i32::from(m) * 60));
        match (Utc.timestamp_millis_opt(self.utc_ms).single(), offset) {
            (Some(t), Some(o)) => t.with_timezone(&o).format("%Y-%m-%d").to_string(),
            (Some(t), None) => t.format("%Y-%m-%d").to_string(),
            (None, _) => format!("@{}ms", self.utc_ms),
        }
    }

    /// RFC 3339 in the original offset (UTC `Z` when the offset is unknown);
    /// a year outside 0000..=9999 in ISO 8601's expanded form, with its sign
    /// (`-0002-12-31T00:00:00.000Z`).
    pub fn to_rfc3339(self) -> String {
        let offset = self
            .offset_minutes
            .and_then(|m| FixedOffset::east_opt(i32::from(m) * 60));
        match (Utc.timestamp_millis_opt(self.utc_ms).single(), offset) {
            (Some(t), Some(o)) => t
                .with_timezone(&o)
                .to_rfc3339_opts(SecondsFormat::Millis, true),
            (Some(t), None) => t.to_rfc3339_opts(SecondsFormat::Millis, true),
            (None, _) => format!("@{}ms", self.utc_ms),
        }
    }
}

/// An RFC 3339 time whose year is in ISO 8601's expanded form: `+` or `-`,
/// at least four digits, then `-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`.
fn parse_expanded_year(text: &str) -> Option<DateTime<FixedOffset>> {
    let rest = text.strip_prefix(['+', '-'])?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits < 4 || rest.as_bytes().get(digits) != Some(&b'-') {
        return None;
    }
    let stamp = match text.strip_suffix(['Z', 'z']) {
        Some(stamp) => format!("{stamp}+00:00"),
        None => text.to_owned(),
    };
    let t = DateTime::parse_from_str(&stamp, "%Y-%m-%dT%H:%M:%S%.f%:z")
        .or_else(|_| DateTime::parse_from_str(&stamp, "%Y-%m-%dt%H:%M:%S%.f%:z"))
        // default: not RFC 3339 is `None` (documented).
        .ok()?;
    Some(t)
}

impl fmt::Debug for SourceTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl serde::Serialize for SourceTime {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_offset_and_instant() {
        let t = SourceTime::parse_rfc3339("2023-05-08T13:56:00+02:00");
        assert_eq!(
            t,
            Some(SourceTime {
                utc_ms: 1_683_546_960_000,
                offset_minutes: Some(120)
            })
        );
        let t = t.map(SourceTime::to_rfc3339);
        assert_eq!(t.as_deref(), Some("2023-05-08T13:56:00.000+02:00"));
    }

    #[test]
    fn years_outside_0000_9999_display_whole_and_parse_back() {
        for text in [
            "-0002-12-31T23:59:59.000Z",
            "-0002-12-31T10:00:00.000+02:00",
            "+10000-01-01T00:00:00.000Z",
            "-10000-06-15T12:30:00.250-05:30",
        ] {
            let t = SourceTime::parse_rfc3339(text);
            assert_eq!(t.map(SourceTime::to_rfc3339).as_deref(), Some(text));
        }
        let t = SourceTime::parse_rfc3339("-0002-12-31T23:59:59Z");
        assert_eq!(t.map(SourceTime::to_date).as_deref(), Some("-0002-12-31"));
        assert_eq!(
            t.map(|t| t.instant().to_date()).as_deref(),
            Some("-0002-12-31")
        );
        let t = SourceTime::parse_rfc3339("+10000-01-01T00:00:00Z");
        assert_eq!(t.map(SourceTime::to_date).as_deref(), Some("+10000-01-01"));
        // The date is the one of the source's offset.
        let t = SourceTime::parse_rfc3339("2024-03-01T00:30:00+01:00");
        assert_eq!(t.map(SourceTime::to_date).as_deref(), Some("2024-03-01"));
        assert_eq!(
            t.map(|t| t.instant().to_date()).as_deref(),
            Some("2024-02-29")
        );
        // Not expanded: a sign needs four digits or more, then a date.
        assert_eq!(SourceTime::parse_rfc3339("-002-12-31T00:00:00Z"), None);
        assert_eq!(SourceTime::parse_rfc3339("+10000-13-01T00:00:00Z"), None);
        assert_eq!(SourceTime::parse_rfc3339("-0002-12-31"), None);
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(SourceTime::parse_rfc3339("yesterday"), None);
        assert_eq!(SourceTime::parse_rfc3339("2023-05-08"), None);
    }
}
