//! `eval locomo`: how often a word-budgeted `search all` returns the gold
//! evidence of LoCoMo questions, beside plain BM25 over raw messages at the
//! same budget (the baseline), in the same run.
//!
//! Each file is imported into a fresh temporary data directory (so nothing
//! of the user's memory is touched), derived with the default profile, and
//! every category 1–4 question (category 5, adversarial, has no evidence)
//! is asked with its conversation as the thread filter. A question is a
//! **hit** when at least one gold evidence message is among the source
//! messages of the returned hits, **full** when all are. Source messages are
//! the messages a hit's text states (an event cites exactly the message it
//! restates; a raw hit its message, with the answer when it asks a
//! question). Graph node hits are not counted: their facts merge many
//! messages, and a short fact does not hold any one message's evidence.
//! Category 2 also reports how often the top hit citing the evidence is an
//! event whose happened interval contains the gold date.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::gold::gold_period;
use crate::memory::{Channel, SearchHit, SearchRequest};
use crate::{Memory, MemoryError};

/// Hit, full and words of one category (or all).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Figures {
    /// Questions asked.
    pub questions: usize,
    /// Share with at least one gold evidence message returned.
    pub hit: f64,
    /// Share with every gold evidence message returned.
    pub full: f64,
    /// Mean words of the returned texts.
    pub mean_words: f64,
}

/// Results at one budget.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct BudgetReport {
    /// The word budget.
    pub budget: usize,
    /// `search all` per category ("1".."4") and "overall".
    pub system: BTreeMap<String, Figures>,
    /// Raw-message BM25 at the same budget.
    pub baseline: BTreeMap<String, Figures>,
    /// Category 2 with a date/week/month/year gold answer: questions.
    pub temporal_questions: usize,
    /// … of which the top hit citing the evidence is an event whose
    /// happened interval contains the gold period.
    pub temporal_contains: usize,
}

/// The whole evaluation.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct EvalReport {
    /// Files evaluated.
    pub files: Vec<String>,
    /// Per budget.
    pub budgets: Vec<BudgetReport>,
}

#[derive(Default)]
struct Tally {
    n: usize,
    hit: usize,
    full: usize,
    words: usize,
}

impl Tally {
    fn add(&mut self, hit: bool, full: bool, words: usize) {
        self.n += 1;
        self.hit += usize::from(hit);
        self.full += usize::from(full);
        self.words += words;
    }

    fn figures(&self) -> Figures {
        let n = self.n.max(1) as f64;
        Figures {
            questions: self.n,
            hit: self.hit as f64 / n,
            full: self.full as f64 / n,
            mean_words: self.words as f64 / n,
        }
    }
}

/// Running counts at one budget.
#[derive(Default)]
struct BudgetTally {
    system: BTreeMap<String, Tally>,
    baseline: BTreeMap<String, Tally>,
    temporal_questions: usize,
    temporal_contains: usize,
}

/// A question of a conversation.
struct Question {
    thread: String,
    text: String,
    category: u64,
    evidence: Vec<String>,
    answer: String,
    year: i32,
}

/// Runs the evaluation with the built-in default operators.
pub fn evaluate(files: &[PathBuf], budgets: &[usize]) -> Result<EvalReport, MemoryError> {
    evaluate_with(files, budgets, None)
}

/// Runs the evaluation; with `extractor` (an operator id such as
/// `heuristic-extractor@2`), each temporary directory derives with that
/// extractor instead of the default one.
pub fn evaluate_with(
    files: &[PathBuf],
    budgets: &[usize],
    extractor: Option<&str>,
) -> Result<EvalReport, MemoryError> {
    let mut tallies: Vec<BudgetTally> = budgets.iter().map(|_| BudgetTally::default()).collect();
    for file in files {
        let dir = tempfile::tempdir().map_err(|e| {
            MemoryError::Invalid(format!("cannot create a temporary directory: {e}"))
        })?;
        let memory = Memory::open(dir.path())?;
        if let Some(id) = extractor {
            let profile = strataflow_operators::profile::Profile {
                name: "eval".into(),
                extractor: id.to_owned(),
                ..strataflow_operators::profile::Profile::default_profile()
            };
            memory.save_profile(&profile)?;
            memory.set_default_profile("eval")?;
        }
        let mut options = memory.ingest_options()?;
        options.durability = strataflow_log::Durability::Buffered;
        let stats = memory.import_locomo(
            file,
            "",
            &options,
            strataflow_pipeline::ingest::OnInvalid::Refuse,
            &mut |_| {},
        )?;
        if stats.failed_runs > 0 {
            let mut derive = memory.derive_options();
            derive.durability = strataflow_log::Durability::Buffered;
            memory.derive(None, &derive, &mut |_| {})?;
        }
        let searcher = memory.searcher(None, "")?;
        for q in questions(file)? {
            if !(1..=4).contains(&q.category) || q.evidence.is_empty() {
                continue;
            }
            for (b, budget) in budgets.iter().enumerate() {
                let Some(t) = tallies.get_mut(b) else {
                    continue;
                };
                let (system, baseline) = (&mut t.system, &mut t.baseline);
                let request = SearchRequest {
                    query: q.text.clone(),
                    thread: Some(q.thread.clone()),
                    budget: Some(*budget),
                    ..SearchRequest::default()
                };
                let hits = searcher.search(Channel::All, &request)?;
                let (hit, full, words) = score(&hits, &q.evidence);
                system
                    .entry(q.category.to_string())
                    .or_default()
                    .add(hit, full, words);
                system
                    .entry("overall".into())
                    .or_default()
                    .add(hit, full, words);
                let raw = searcher.search(
                    Channel::Raw,
                    &SearchRequest {
                        limit: Some(60),
                        ..request
                    },
                )?;
                let (hit, full, words) = score(&raw, &q.evidence);
                baseline
                    .entry(q.category.to_string())
                    .or_default()
                    .add(hit, full, words);
                baseline
                    .entry("overall".into())
                    .or_default()
                    .add(hit, full, words);
                if q.category == 2 {
                    if let Some(gold) = gold_period(&q.answer, q.year) {
                        t.temporal_questions += 1;
                        let top = hits
                            .iter()
                            .find(|h| h.source_messages.iter().any(|m| q.evidence.contains(m)));
                        if top.is_some_and(|h| contains(h, gold)) {
                            t.temporal_contains += 1;
                        }
                    }
                }
            }
        }
    }
    Ok(EvalReport {
        files: files.iter().map(|f| f.display().to_string()).collect(),
        budgets: budgets
            .iter()
            .zip(tallies)
            .map(|(budget, t)| BudgetReport {
                budget: *budget,
                system: t
                    .system
                    .iter()
                    .map(|(k, x)| (k.clone(), x.figures()))
                    .collect(),
                baseline: t
                    .baseline
                    .iter()
                    .map(|(k, x)| (k.clone(), x.figures()))
                    .collect(),
                temporal_questions: t.temporal_questions,
                temporal_contains: t.temporal_contains,
            })
            .collect(),
    })
}

/// Graph nodes are left out of the count: a node's text is a few facts
/// ("likes: painting") merged from many messages, so citing them all does
/// not mean its text holds any one message's evidence.
fn score(hits: &[SearchHit], evidence: &[String]) -> (bool, bool, usize) {
    let returned: Vec<&String> = hits
        .iter()
        .filter(|h| h.kind != "node")
        .flat_map(|h| h.source_messages.iter())
        .collect();
    let found = evidence.iter().filter(|e| returned.contains(e)).count();
    (
        found > 0,
        found == evidence.len(),
        hits.iter().map(|h| h.words).sum(),
    )
}

fn contains(hit: &SearchHit, gold: super::gold::Period) -> bool {
    let (Some(s), Some(e)) = (hit.happened_start, hit.happened_end) else {
        return false;
    };
    let date = |t: strataflow_log::Timestamp| {
        chrono::DateTime::from_timestamp_millis(t.0).map(|d| d.date_naive())
    };
    matches!((date(s), date(e)), (Some(s), Some(e)) if s <= gold.start && gold.end <= e)
}

/// The questions of a LoCoMo file (either layout), with their thread.
fn questions(path: &Path) -> Result<Vec<Question>, MemoryError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| MemoryError::Invalid(format!("cannot read {}: {e}", path.display())))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| MemoryError::Invalid(format!("{}: malformed JSON: {e}", path.display())))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let samples: Vec<(String, &Value, &Value)> = match &value {
        Value::Array(items) => items
            .iter()
            .filter_map(|s| {
                Some((
                    s.get("sample_id")?.as_str()?.to_owned(),
                    s.get("qa")?,
                    s.get("conversation")?,
                ))
            })
            .collect(),
        Value::Object(o) if o.contains_key("conversation") => value
            .get("qa")
            .zip(value.get("conversation"))
            .map(|(qa, c)| {
                let id = value
                    .get("sample_id")
                    .and_then(Value::as_str)
                    .unwrap_or(&stem)
                    .to_owned();
                vec![(id, qa, c)]
            })
            .unwrap_or_default(),
        Value::Object(o) => o
            .get("qa")
            .map(|qa| {
                let id = o
                    .get("sample_id")
                    .and_then(Value::as_str)
                    .unwrap_or(&stem)
                    .to_owned();
                vec![(id, qa, &value)]
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for (thread, qa, conversation) in samples {
        let year = conversation
            .get("session_1_date_time")
            .and_then(Value::as_str)
            .and_then(|s| s.rsplit(' ').next())
            .and_then(|y| y.trim().parse().ok())
            .unwrap_or(2023);
        for q in qa.as_array().map(Vec::as_slice).unwrap_or_default() {
            let answer = match q.get("answer") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            out.push(Question {
                thread: thread.clone(),
                text: q
                    .get("question")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                category: q.get("category").and_then(Value::as_u64).unwrap_or(0),
                evidence: q
                    .get("evidence")
                    .and_then(Value::as_array)
                    .map(|e| {
                        e.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                answer,
                year,
            });
        }
    }
    Ok(out)
}
