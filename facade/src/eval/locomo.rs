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
use std::path::PathBuf;

use super::EvalError;
use super::gold::gold_period;
use super::questions::{evidence_score as score, locomo_questions as questions};
use crate::Memory;
use crate::memory::{Channel, SearchHit, SearchRequest};

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

/// Runs the evaluation with the built-in default operators.
pub fn evaluate(files: &[PathBuf], budgets: &[usize]) -> Result<EvalReport, EvalError> {
    evaluate_with(files, budgets, None, None, None)
}

/// Runs the evaluation; with `extractor` or `projector` (operator ids such
/// as `heuristic-extractor@2`), each temporary directory derives with that
/// operator instead of the default profile's.
pub fn evaluate_with(
    files: &[PathBuf],
    budgets: &[usize],
    extractor: Option<&str>,
    projector: Option<&str>,
    embedder: Option<&str>,
) -> Result<EvalReport, EvalError> {
    let mut tallies: Vec<BudgetTally> = budgets.iter().map(|_| BudgetTally::default()).collect();
    for file in files {
        let dir = tempfile::tempdir().map_err(EvalError::TempDir)?;
        let memory = Memory::open(dir.path())?;
        if extractor.is_some() || projector.is_some() || embedder.is_some() {
            let mut profile = strataflow_operators::profile::Profile {
                name: "eval".into(),
                ..strataflow_operators::profile::Profile::default_profile()
            };
            if let Some(id) = extractor {
                id.clone_into(&mut profile.extractor);
            }
            if let Some(id) = projector {
                id.clone_into(&mut profile.projector);
            }
            profile.embedder = embedder.map(str::to_owned);
            memory.save_profile(&profile)?;
            memory.set_default_profile("eval")?;
        }
        let mut options = memory.ingest_options()?;
        options.durability = strataflow_log::Durability::Buffered;
        memory.default_tenant().import_locomo(
            file,
            &options,
            strataflow_pipeline::ingest::OnInvalid::Refuse,
            &mut |_| {},
        )?;
        memory.derive_embeddings(None)?;
        let searcher = memory.default_tenant().searcher(None)?;
        for q in questions(file)? {
            let category = q.category.unwrap_or(0);
            if !(1..=4).contains(&category) || q.evidence.is_empty() {
                continue;
            }
            let dense = memory.dense_ranking(None, "", &q.text)?;
            for (b, budget) in budgets.iter().enumerate() {
                let Some(t) = tallies.get_mut(b) else {
                    continue;
                };
                let (system, baseline) = (&mut t.system, &mut t.baseline);
                let request = SearchRequest {
                    query: q.text.clone(),
                    thread: q.thread.clone(),
                    budget: Some(*budget),
                    ..SearchRequest::default()
                };
                let hits = searcher.search_with_dense(Channel::All, &request, &dense)?;
                let (hit, full, words) = score(&hits, &q.evidence);
                system
                    .entry(category.to_string())
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
                    .entry(category.to_string())
                    .or_default()
                    .add(hit, full, words);
                baseline
                    .entry("overall".into())
                    .or_default()
                    .add(hit, full, words);
                if category == 2
                    && let Some(gold) = gold_period(&q.answer, q.year)
                {
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

fn contains(hit: &SearchHit, gold: super::gold::Period) -> bool {
    let (Some(s), Some(e)) = (hit.happened_start, hit.happened_end) else {
        return false;
    };
    let date = |t: strataflow_log::Timestamp| {
        chrono::DateTime::from_timestamp_millis(t.0).map(|d| d.date_naive())
    };
    matches!((date(s), date(e)), (Some(s), Some(e)) if s <= gold.start && gold.end <= e)
}
