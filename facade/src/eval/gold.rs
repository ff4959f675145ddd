//! Gold answers of LoCoMo temporal questions as calendar periods.
//!
//! LoCoMo writes dates as "7 May 2023", "19 January, 2023", "June 2023",
//! "2022", "The week before 9 June 2023", "The Friday before 15 July 2023",
//! "two weekends before 17 July 2023"… This module turns those into inclusive
//! day ranges with the conventions of the temporal resolver (ISO weeks,
//! Saturday–Sunday weekends). Durations ("4 years", "Since 2016") are not
//! periods and give `None`.

use chrono::{Datelike, Duration, NaiveDate, Weekday};
use strataflow_operators::extractor::temporal::MONTHS;

/// A gold period as inclusive UTC day bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// First day.
    pub start: NaiveDate,
    /// Last day (inclusive).
    pub end: NaiveDate,
}

/// One day.
pub fn day(d: NaiveDate) -> Period {
    Period { start: d, end: d }
}

/// A calendar month.
pub fn month_of(year: i32, month: u32) -> Period {
    // default: Callers pass a month of a parsed date (1..=12); the default is never reached.
    let start = NaiveDate::from_ymd_opt(year, month, 1).unwrap_or_default();
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    }
    .unwrap_or_default();
    Period {
        start,
        end: next - Duration::days(1),
    }
}

fn iso_week(d: NaiveDate, weeks_back: i64) -> Period {
    let monday = d
        - Duration::days(i64::from(d.weekday().num_days_from_monday()))
        - Duration::weeks(weeks_back);
    Period {
        start: monday,
        end: monday + Duration::days(6),
    }
}

fn month_number(name: &str) -> Option<u32> {
    MONTHS
        .iter()
        .position(|n| *n == name.to_lowercase())
        .and_then(|i| u32::try_from(i + 1).ok())
}

fn weekday(name: &str) -> Option<Weekday> {
    match name.to_lowercase().as_str() {
        "monday" => Some(Weekday::Mon),
        "tuesday" => Some(Weekday::Tue),
        "wednesday" => Some(Weekday::Wed),
        "thursday" => Some(Weekday::Thu),
        "friday" => Some(Weekday::Fri),
        "saturday" => Some(Weekday::Sat),
        "sunday" => Some(Weekday::Sun),
        _ => None,
    }
}

/// "7 May 2023", "19 January, 2023", "13 August" (year from the session).
fn parse_date(text: &str, default_year: i32) -> Option<NaiveDate> {
    let words: Vec<&str> = text.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    match words.as_slice() {
        [d, m, y] => NaiveDate::from_ymd_opt(y.parse().ok()?, month_number(m)?, d.parse().ok()?),
        [d, m] => NaiveDate::from_ymd_opt(default_year, month_number(m)?, d.parse().ok()?),
        _ => None,
    }
}

/// The gold answer as a period, or None when it is not a date, week, month
/// or year (durations such as "4 years" or "Since 2016").
pub fn gold_period(answer: &str, default_year: i32) -> Option<Period> {
    let a = answer.trim().trim_end_matches('.');
    let lower = a.to_lowercase();
    if let Ok(y) = a.parse::<i32>() {
        return Some(Period {
            start: NaiveDate::from_ymd_opt(y, 1, 1)?,
            end: NaiveDate::from_ymd_opt(y, 12, 31)?,
        });
    }
    if let Some(rest) = lower.strip_prefix("the week before ") {
        return Some(iso_week(parse_date(rest, default_year)?, 1));
    }
    if let Some(rest) = lower.strip_prefix("the week of ") {
        return Some(iso_week(parse_date(rest, default_year)?, 0));
    }
    if let Some(rest) = lower.strip_prefix("the weekend before ") {
        let w = iso_week(parse_date(rest, default_year)?, 1);
        return Some(Period {
            start: w.start + Duration::days(5),
            end: w.end,
        });
    }
    if let Some(rest) = lower.strip_prefix("two weekends before ") {
        let w = iso_week(parse_date(rest, default_year)?, 2);
        return Some(Period {
            start: w.start + Duration::days(5),
            end: w.end,
        });
    }
    if let Some(rest) = lower.strip_prefix("the ") {
        // "The Friday before 15 July 2023"
        let (wd, rest) = rest.split_once(" before ")?;
        let anchor = parse_date(rest, default_year)?;
        let wd = weekday(wd)?;
        let mut d = anchor - Duration::days(1);
        while d.weekday() != wd {
            d -= Duration::days(1);
        }
        return Some(day(d));
    }
    let words: Vec<&str> = a.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    if let [m, y] = words.as_slice()
        && let (Some(m), Ok(y)) = (month_number(m), y.parse::<i32>())
    {
        return Some(month_of(y, m));
    }
    parse_date(a, default_year).map(day)
}
