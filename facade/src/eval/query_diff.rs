//! `diff --queries`: the same questions searched under two profiles, and
//! what changed — evidence hit rates, questions gained and lost, and the
//! questions whose top result differs.
//!
//! Every question is asked with `search all` under a word budget, with
//! its thread as the filter when it has one. Category 5 (LoCoMo's
//! adversarial questions, which have no answer in the conversation) is
//! skipped. A question with evidence is **hit** under a profile when one
//! of its evidence messages is among the source messages of the returned
//! items, graph nodes excluded — counted exactly as `eval locomo` does
//! ([`evidence_score`]).

use std::path::Path;

use super::EvalError;
use super::questions::{Question, evidence_score, load_questions};
use crate::Memory;
use crate::memory::{Channel, SearchHit, SearchRequest};

/// Default word budget of each search.
pub const DEFAULT_QUERY_BUDGET: usize = 300;

/// Evidence figures of one profile.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ProfileScore {
    /// Profile name.
    pub profile: String,
    /// Questions with evidence that were hit.
    pub hits: usize,
    /// … of which every evidence message was returned.
    pub full: usize,
    /// `hits` / questions with evidence (0 when there are none).
    pub hit_rate: f64,
}

/// The first result of a search.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TopHit {
    /// `event:<id>`, `node:<id>` or `msg:<id>`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// event / node / message.
    pub kind: &'static str,
    /// Its compact text.
    pub text: String,
}

/// A question whose top result or hit differs between the profiles.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct QuestionChange {
    /// The question.
    pub question: String,
    /// Its thread filter.
    pub thread: Option<String>,
    /// Its evidence.
    pub evidence: Vec<String>,
    /// A's top result.
    pub top_a: Option<TopHit>,
    /// B's top result.
    pub top_b: Option<TopHit>,
    /// The top results have different refs.
    pub top_changed: bool,
    /// Hit under A (`None`: the question has no evidence).
    pub hit_a: Option<bool>,
    /// Hit under B.
    pub hit_b: Option<bool>,
}

/// The comparison.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct QueryDiff {
    /// The question file.
    pub file: String,
    /// Word budget of each search.
    pub budget: usize,
    /// Questions asked.
    pub questions: usize,
    /// Questions skipped (category 5).
    pub skipped: usize,
    /// Questions asked that have evidence.
    pub with_evidence: usize,
    /// Profile A.
    pub a: ProfileScore,
    /// Profile B.
    pub b: ProfileScore,
    /// Questions hit under B, not under A.
    pub gained: Vec<String>,
    /// Questions hit under A, not under B.
    pub lost: Vec<String>,
    /// Questions whose top result changed.
    pub top_changed: usize,
    /// Every question whose top result or hit changed, in file order.
    pub changed: Vec<QuestionChange>,
}

fn top(hits: &[SearchHit]) -> Option<TopHit> {
    hits.first().map(|h| TopHit {
        reference: h.reference.clone(),
        kind: h.kind,
        text: h.text.clone(),
    })
}

/// Asks every question of `file` (LoCoMo or JSONL) under profiles `a` and
/// `b` of a tenant, `budget` words each, and compares.
pub fn diff_queries(
    memory: &Memory,
    a: &str,
    b: &str,
    tenant: &str,
    file: &Path,
    budget: usize,
) -> Result<QueryDiff, EvalError> {
    let questions: Vec<Question> = load_questions(file)?;
    let searcher_a = memory.tenant(tenant).searcher(Some(a))?;
    let searcher_b = memory.tenant(tenant).searcher(Some(b))?;
    let mut out = QueryDiff {
        file: file.display().to_string(),
        budget,
        a: ProfileScore {
            profile: a.to_owned(),
            ..ProfileScore::default()
        },
        b: ProfileScore {
            profile: b.to_owned(),
            ..ProfileScore::default()
        },
        ..QueryDiff::default()
    };
    for q in questions {
        if q.category == Some(5) {
            out.skipped += 1;
            continue;
        }
        out.questions += 1;
        let request = SearchRequest {
            query: q.text.clone(),
            thread: q.thread.clone(),
            budget: Some(budget),
            ..SearchRequest::default()
        };
        let hits_a = searcher_a.search(Channel::All, &request)?;
        let hits_b = searcher_b.search(Channel::All, &request)?;
        let (hit_a, hit_b) = if q.evidence.is_empty() {
            (None, None)
        } else {
            out.with_evidence += 1;
            let (hit_a, full_a, _) = evidence_score(&hits_a, &q.evidence);
            let (hit_b, full_b, _) = evidence_score(&hits_b, &q.evidence);
            out.a.hits += usize::from(hit_a);
            out.a.full += usize::from(full_a);
            out.b.hits += usize::from(hit_b);
            out.b.full += usize::from(full_b);
            if hit_b && !hit_a {
                out.gained.push(q.text.clone());
            }
            if hit_a && !hit_b {
                out.lost.push(q.text.clone());
            }
            (Some(hit_a), Some(hit_b))
        };
        let (top_a, top_b) = (top(&hits_a), top(&hits_b));
        let top_changed =
            top_a.as_ref().map(|t| &t.reference) != top_b.as_ref().map(|t| &t.reference);
        out.top_changed += usize::from(top_changed);
        if top_changed || hit_a != hit_b {
            out.changed.push(QuestionChange {
                question: q.text,
                thread: q.thread,
                evidence: q.evidence,
                top_a,
                top_b,
                top_changed,
                hit_a,
                hit_b,
            });
        }
    }
    let rate = |hits: usize| {
        if out.with_evidence == 0 {
            0.0
        } else {
            hits as f64 / out.with_evidence as f64
        }
    };
    out.a.hit_rate = rate(out.a.hits);
    out.b.hit_rate = rate(out.b.hits);
    Ok(out)
}
