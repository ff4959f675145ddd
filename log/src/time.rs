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
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let t = DateTime::parse_from_rfc3339(text.trim()).ok()?;
        Some(Self::from_datetime(&t))
    }

    /// From a chrono time with a known offset.
    pub fn from_datetime(t: &DateTime<FixedOffset>) -> Self {
        let secs = t.offset().local_minus_utc() / 60;
        Self {
            utc_ms: t.timestamp_millis(),
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

    /// RFC 3339 in the original offset (UTC `Z` when the offset is unknown).
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
    fn rejects_garbage() {
        assert_eq!(SourceTime::parse_rfc3339("yesterday"), None);
        assert_eq!(SourceTime::parse_rfc3339("2023-05-08"), None);
    }
}
