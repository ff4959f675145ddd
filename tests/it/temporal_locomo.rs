//! On the temporal (category 2) questions of conv-26 and conv-30 whose gold
//! answer is a date, week, month or year, the event extracted from the gold
//! evidence message must have a happened interval consistent with the gold
//! period (one contains the other) for at least 70% of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use chrono::NaiveDate;
use common::{data_file, ok};
use strataflow::eval::gold::{Period, day, gold_period, month_of};

fn date_of(rfc3339: &str) -> NaiveDate {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .date_naive()
}

#[test]
fn events_from_gold_evidence_carry_the_gold_time() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let mut hits = 0usize;
    let mut overlaps = 0usize;
    let mut total = 0usize;
    let mut misses = Vec::new();
    for conv in ["conv-26", "conv-30"] {
        let path = data_file(&format!("locomo/{conv}.json"));
        ok(
            data,
            &["import", "locomo", path.to_str().unwrap(), "--quiet"],
        );
        let events: Vec<serde_json::Value> =
            serde_json::from_str(&ok(data, &["events", "--thread", conv, "--json"])).unwrap();
        let raw: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for q in raw["qa"].as_array().unwrap() {
            if q["category"] != 2 {
                continue;
            }
            let answer = q["answer"]
                .as_str()
                .map_or_else(|| q["answer"].to_string(), str::to_owned);
            let Some(gold) = gold_period(&answer, 2023) else {
                continue;
            };
            total += 1;
            let evidence: Vec<&str> = q["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap())
                .collect();
            let candidates: Vec<&serde_json::Value> = events
                .iter()
                .filter(|e| {
                    e["source_messages"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|m| evidence.contains(&m.as_str().unwrap()))
                })
                .collect();
            let mut hit = false;
            let mut overlap = false;
            for e in &candidates {
                let (Some(s), Some(t)) = (e["happened_start"].as_str(), e["happened_end"].as_str())
                else {
                    continue;
                };
                let (s, t) = (date_of(s), date_of(t));
                let contains = s <= gold.start && gold.end <= t;
                let within = gold.start <= s && t <= gold.end;
                hit |= contains || within;
                overlap |= s <= gold.end && gold.start <= t;
            }
            if hit {
                hits += 1;
            } else {
                misses.push(format!(
                    "{conv} {evidence:?} gold `{answer}` ({} .. {}): {}",
                    gold.start,
                    gold.end,
                    if candidates.is_empty() {
                        "no event from that message".to_owned()
                    } else {
                        candidates
                            .iter()
                            .map(|e| format!("{} .. {}", e["happened_start"], e["happened_end"]))
                            .collect::<Vec<_>>()
                            .join("; ")
                    }
                ));
            }
            if overlap {
                overlaps += 1;
            }
        }
    }
    let rate = hits as f64 / total as f64;
    println!("temporal questions with a date/week/month/year answer: {total}");
    println!(
        "event interval consistent with gold: {hits}/{total} = {:.1}%",
        rate * 100.0
    );
    println!("event interval overlapping gold:     {overlaps}/{total}");
    for m in &misses {
        println!("  miss: {m}");
    }
    assert!(total >= 50, "{total} questions parsed");
    assert!(rate >= 0.70, "{hits}/{total} = {rate:.3} < 0.70");
}

#[test]
fn gold_answers_parse_as_periods() {
    let d = |y, m, dd| NaiveDate::from_ymd_opt(y, m, dd).unwrap();
    assert_eq!(gold_period("7 May 2023", 2023), Some(day(d(2023, 5, 7))));
    assert_eq!(
        gold_period("19 January, 2023", 2023),
        Some(day(d(2023, 1, 19)))
    );
    assert_eq!(gold_period("June 2023", 2023), Some(month_of(2023, 6)));
    assert_eq!(
        gold_period("The sunday before 25 May 2023", 2023),
        Some(day(d(2023, 5, 21)))
    );
    assert_eq!(
        gold_period("The week before 9 June 2023", 2023),
        Some(Period {
            start: d(2023, 5, 29),
            end: d(2023, 6, 4)
        })
    );
    assert_eq!(
        gold_period("two weekends before 17 July 2023", 2023),
        Some(Period {
            start: d(2023, 7, 8),
            end: d(2023, 7, 9)
        })
    );
    assert_eq!(gold_period("4 years", 2023), None);
    assert_eq!(gold_period("Since 2016", 2023), None);
}
