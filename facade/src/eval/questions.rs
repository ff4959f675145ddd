//! Question sets for retrieval checks, and how a search result is scored
//! against a question's gold evidence.
//!
//! Two inputs are read (the content decides, not the file name):
//!
//! - a **LoCoMo** file (either layout: `locomo10.json`, an array of
//!   samples, or one sample object with `qa` and `conversation`): every
//!   question of every sample, with the sample id as its thread;
//! - a **JSONL** file: one `{"question": "…", "evidence": ["D1:3", …],
//!   "thread": "…", "category": n}` object per line, only `question`
//!   required; blank lines are skipped. A bad line is refused with its
//!   line number.

use std::path::Path;

use serde_json::Value;

use super::EvalError;
use crate::memory::SearchHit;

/// One question.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Question {
    /// Thread filter (LoCoMo: the sample id).
    pub thread: Option<String>,
    /// The question.
    pub text: String,
    /// Category (LoCoMo: 1–5; 5 is adversarial, without evidence).
    pub category: Option<u64>,
    /// External ids of the gold evidence messages.
    pub evidence: Vec<String>,
    /// Gold answer (LoCoMo), as text.
    pub answer: String,
    /// Year of the conversation's first session (LoCoMo; 2023 otherwise),
    /// for gold dates written without a year.
    pub year: i32,
}

/// One JSONL line.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    question: String,
    #[serde(default)]
    evidence: Vec<String>,
    #[serde(default)]
    thread: Option<String>,
    #[serde(default)]
    category: Option<u64>,
    #[serde(default)]
    answer: Option<Value>,
}

/// The questions of a file: a LoCoMo file or a JSONL question file,
/// told apart by content.
pub fn load_questions(path: &Path) -> Result<Vec<Question>, EvalError> {
    let text = read(path)?;
    match serde_json::from_str::<Value>(&text) {
        Ok(value) if is_locomo(&value) => Ok(from_locomo(path, &value)),
        _ => jsonl_questions(path, &text),
    }
}

/// The questions of a LoCoMo file (either layout), with their thread.
pub fn locomo_questions(path: &Path) -> Result<Vec<Question>, EvalError> {
    let text = read(path)?;
    let value: Value = serde_json::from_str(&text).map_err(|source| EvalError::MalformedJson {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(from_locomo(path, &value))
}

/// Whether the hits hold the evidence: (at least one evidence message
/// returned, every one returned, words of the returned texts). Graph nodes
/// are left out of the count: a node's text is a few facts ("likes:
/// painting") merged from many messages, so citing them all does not mean
/// its text holds any one message's evidence.
pub fn evidence_score(hits: &[SearchHit], evidence: &[String]) -> (bool, bool, usize) {
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

fn read(path: &Path) -> Result<String, EvalError> {
    std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A LoCoMo document: an array of samples with `qa`, or one sample.
fn is_locomo(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(|s| s.get("qa").is_some()),
        Value::Object(o) => o.contains_key("qa") || o.contains_key("conversation"),
        _ => false,
    }
}

fn jsonl_questions(path: &Path, text: &str) -> Result<Vec<Question>, EvalError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let q: Line = serde_json::from_str(line).map_err(|source| EvalError::NotAQuestion {
            path: path.to_path_buf(),
            line: n + 1,
            source,
        })?;
        if q.question.trim().is_empty() {
            return Err(EvalError::EmptyQuestion {
                path: path.to_path_buf(),
                line: n + 1,
            });
        }
        out.push(Question {
            thread: q.thread,
            text: q.question,
            category: q.category,
            evidence: q.evidence,
            answer: q.answer.map(|a| answer_text(&a)).unwrap_or_default(),
            year: 2023,
        });
    }
    Ok(out)
}

fn answer_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn from_locomo(path: &Path, value: &Value) -> Vec<Question> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let samples: Vec<(String, &Value, &Value)> = match value {
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
                vec![(id, qa, value)]
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
            out.push(Question {
                thread: Some(thread.clone()),
                text: q
                    .get("question")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                category: q.get("category").and_then(Value::as_u64),
                evidence: q
                    .get("evidence")
                    .and_then(Value::as_array)
                    .map(|e| {
                        e.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                answer: q.get("answer").map(answer_text).unwrap_or_default(),
                year,
            });
        }
    }
    out
}
