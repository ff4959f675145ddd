//! The three derivation stages of a block as pure functions: each runs one
//! operator and returns the records to append, its outputs followed by the
//! `Derivation` that names the operator, configuration, inputs, outputs and
//! outcome. Nothing here reads or writes the log, so the batch derivation
//! ([`crate::derive`]) and the backfill runtime ([`crate::runtime`]) make
//! byte-identical records from the same inputs.

use strataflow_log::envelope::Encoded;
use strataflow_log::record::{BlockSummary, Derivation, Event, Outcome, Record};
use strataflow_log::{Digest, RecordId, StoreError};
use strataflow_operators::model::ModelError;
use strataflow_operators::operator::{
    BlockInput, ExtractionInput, OperatorError, OperatorId, ProjectionInput, Timeline,
    analyse_messages,
};
use strataflow_operators::profile::Operators;
use strataflow_operators::validate;
use strataflow_text::Analysis;

/// Why a stage produced no run to append.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// Encoding the records failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The operator stopped the job (offline and the model call is not
    /// recorded, the model is not configured or unreachable): nothing of
    /// the run is written.
    #[error("{0}")]
    Halted(ModelError),
}

/// The stage's answer for an operator's error: a failed run to record, or
/// a halt.
impl From<strataflow_log::envelope::EncodeError> for StageError {
    fn from(e: strataflow_log::envelope::EncodeError) -> Self {
        Self::Store(e.into())
    }
}

fn on_error<T>(run: &Attempt, error: OperatorError) -> Result<StageRun<T>, StageError> {
    match error {
        OperatorError::Halted(cause) => Err(StageError::Halted(cause)),
        // A failed run records the error's text (`OperatorError::Model`'s is
        // the model error's, as `Failed` carried it before).
        other => Ok(failed(run, other.to_string())?),
    }
}

/// One operator run ready to append.
#[derive(Clone, Debug)]
pub struct StageRun<T> {
    /// The outputs, then the `Derivation`, encoded.
    pub records: Vec<Encoded>,
    /// What the stage produced, when it succeeded (or was skipped).
    pub output: Option<T>,
    /// The error, when it failed.
    pub error: Option<String>,
}

/// Who ran and on what: what a run's `Derivation` will say.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// Tenant of the input.
    pub tenant: String,
    /// Operator.
    pub op: OperatorId,
    /// Its configuration hash.
    pub config: Digest,
    /// Input record ids.
    pub inputs: Vec<RecordId>,
    /// Attempt number, from 1.
    pub attempt: u32,
}

/// The records of a run: `outputs` then a `Derivation` citing their ids.
fn with_derivation(
    run: &Attempt,
    outputs: Vec<Record>,
    outcome: Outcome,
) -> Result<(Vec<Encoded>, Vec<RecordId>), StoreError> {
    let mut outputs = outputs
        .into_iter()
        .map(Encoded::new)
        .collect::<Result<Vec<_>, _>>()?;
    let ids: Vec<RecordId> = outputs.iter().map(Encoded::id).collect();
    outputs.push(Encoded::new(Record::Derivation(Derivation {
        tenant: run.tenant.clone(),
        operator: run.op.to_string(),
        config_hash: run.config,
        inputs: run.inputs.clone(),
        outputs: ids.clone(),
        outcome,
        attempt: run.attempt,
    }))?);
    Ok((outputs, ids))
}

fn failed<T>(run: &Attempt, error: String) -> Result<StageRun<T>, StoreError> {
    let (records, _) = with_derivation(
        run,
        Vec::new(),
        Outcome::Failed {
            error: error.clone(),
        },
    )?;
    Ok(StageRun {
        records,
        output: None,
        error: Some(error),
    })
}

/// The summary attempt of a block.
pub fn summary_attempt(ops: &Operators, input: &BlockInput<'_>, attempt: u32) -> Attempt {
    Attempt {
        tenant: input.block.tenant.clone(),
        op: ops.summarizer.id(),
        config: ops.summarizer.config_hash(),
        inputs: vec![input.id],
        attempt,
    }
}

/// The text analyses of `input`'s messages for an operator that reads them
/// (`reads`) when the caller carried none, computed here; `None` when the
/// operator does not read them or the caller carried them. A caller that
/// runs the summarizer and the extractor of one block computes them once
/// (with [`analyse_messages`]) and carries them to both.
fn missing_analyses(reads: bool, input: &BlockInput<'_>) -> Option<Vec<Analysis>> {
    (reads && input.analyses.is_none()).then(|| analyse_messages(input.messages))
}

/// `input` carrying the text analyses of its messages when an operator
/// reads them (`reads`): those it already carries, else computed on first
/// use into `computed`, which holds them for the block's other stages.
pub fn carrying<'a>(
    reads: bool,
    input: &BlockInput<'a>,
    computed: &'a std::cell::OnceCell<Vec<Analysis>>,
) -> BlockInput<'a> {
    let analyses = match input.analyses {
        Some(carried) => Some(carried),
        None => reads.then(|| {
            computed
                .get_or_init(|| analyse_messages(input.messages))
                .as_slice()
        }),
    };
    BlockInput { analyses, ..*input }
}

/// Summarizes a block (L0–L2), validated.
pub fn summarize(
    ops: &Operators,
    input: &BlockInput<'_>,
    attempt: u32,
) -> Result<StageRun<(RecordId, BlockSummary)>, StageError> {
    let analyses = missing_analyses(ops.summarizer.reads_analysis(), input);
    let input = &BlockInput {
        attempt,
        analyses: analyses.as_deref().or(input.analyses),
        ..*input
    };
    let run = summary_attempt(ops, input, attempt);
    match ops
        .summarizer
        .summarize(input)
        .and_then(|s| validate::summary(input, s))
    {
        Ok(summary) => {
            let (records, ids) = with_derivation(
                &run,
                vec![Record::BlockSummary(summary.clone())],
                Outcome::Ok,
            )?;
            #[expect(
                clippy::expect_used,
                reason = "with_derivation returns one id per output, and there is one output"
            )]
            let id = ids.first().copied().expect("the summary's id");
            Ok(StageRun {
                records,
                output: Some((id, summary)),
                error: None,
            })
        }
        Err(e) => on_error(&run, e),
    }
}

/// What extraction needs besides the block.
#[derive(Clone, Copy, Debug)]
pub struct ExtractionContext<'a> {
    /// The block's summary record id.
    pub summary_id: RecordId,
    /// The block's summary.
    pub summary: &'a BlockSummary,
    /// Key points of the previous block of the thread, if summarized.
    pub previous_key_points: Option<&'a [String]>,
    /// Key points of the next block, if summarized.
    pub next_key_points: Option<&'a [String]>,
    /// Recent events of the thread, oldest first (read when the extractor
    /// asks for them).
    pub timeline: Timeline<'a>,
}

/// Extracts the events of a block, validated; skipped (no events, a
/// `Skipped` derivation) when the summary found nothing to extract.
pub fn extract(
    ops: &Operators,
    input: &BlockInput<'_>,
    context: &ExtractionContext<'_>,
    attempt: u32,
) -> Result<StageRun<Vec<(RecordId, Event)>>, StageError> {
    let input = &BlockInput { attempt, ..*input };
    let run = Attempt {
        tenant: input.block.tenant.clone(),
        op: ops.extractor.id(),
        config: ops.extractor.config_hash(),
        inputs: vec![input.id, context.summary_id],
        attempt,
    };
    if !context.summary.should_extract {
        let reason = "the summary found nothing to extract".to_owned();
        let (records, _) = with_derivation(&run, Vec::new(), Outcome::Skipped { reason })?;
        return Ok(StageRun {
            records,
            output: Some(Vec::new()),
            error: None,
        });
    }
    // The text analysis of the block's messages, computed here (in the
    // worker that owns the thread) for an extractor that reads it, unless
    // the caller carried one.
    let analyses = missing_analyses(ops.extractor.reads_analysis(), input);
    let target = BlockInput {
        analyses: analyses.as_deref().or(input.analyses),
        ..*input
    };
    let extraction_input = ExtractionInput {
        target,
        summary: context.summary,
        previous_key_points: context.previous_key_points,
        next_key_points: context.next_key_points,
        timeline: context.timeline,
    };
    let timeline_ids = context.timeline.ids();
    let result = ops.extractor.extract(&extraction_input).and_then(|x| {
        let (events, dropped) = validate::events(input, &timeline_ids, x.events);
        if x.should_extract && events.is_empty() {
            let reason = if x.reason.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", x.reason.trim())
            };
            return Err(OperatorError::Failed(format!(
                "extractor requested extraction but returned no valid events ({dropped} dropped){reason}"
            )));
        }
        Ok(events)
    });
    match result {
        Ok(events) => {
            let outputs = events.iter().cloned().map(Record::Event).collect();
            let (records, ids) = with_derivation(&run, outputs, Outcome::Ok)?;
            Ok(StageRun {
                records,
                output: Some(ids.into_iter().zip(events).collect()),
                error: None,
            })
        }
        Err(e) => on_error(&run, e),
    }
}

/// The projection attempt of a batch of events (anchored at the first).
pub fn projection_attempt(
    ops: &Operators,
    tenant: &str,
    events: &[(RecordId, Event)],
    attempt: u32,
) -> Attempt {
    Attempt {
        tenant: tenant.to_owned(),
        op: ops.projector.id(),
        config: ops.projector.config_hash(),
        inputs: events.iter().map(|(id, _)| *id).collect(),
        attempt,
    }
}

/// Projects a batch of events into graph assertions (only those citing
/// events of the batch are kept).
pub fn project(
    ops: &Operators,
    tenant: &str,
    events: &[(RecordId, Event)],
    attempt: u32,
) -> Result<StageRun<()>, StageError> {
    let run = projection_attempt(ops, tenant, events, attempt);
    match ops.projector.project(&ProjectionInput {
        tenant,
        events,
        attempt,
    }) {
        Ok(assertions) => {
            let outputs = validate::assertions(&run.inputs, assertions)
                .into_iter()
                .map(Record::GraphAssertion)
                .collect();
            let (records, _) = with_derivation(&run, outputs, Outcome::Ok)?;
            Ok(StageRun {
                records,
                output: Some(()),
                error: None,
            })
        }
        Err(e) => on_error(&run, e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn attempt() -> Attempt {
        Attempt {
            tenant: String::new(),
            op: OperatorId::new("llm-summarizer", 1),
            config: RecordId([7; 32]),
            inputs: vec![RecordId([1; 32])],
            attempt: 1,
        }
    }

    /// `carrying` computes a block's analyses once, on the first stage
    /// that reads them, hands the same ones to the next, keeps those the
    /// caller carried, and computes none for stages that read none.
    #[test]
    fn carrying_analyses_the_messages_once_for_the_stages_that_read_them() {
        use strataflow_log::record::{Block, Message, Role};
        use strataflow_log::time::SourceTime;
        let time = SourceTime::parse_rfc3339("2024-04-20T09:00:00+00:00").unwrap();
        let messages: Vec<(RecordId, Message)> = ["I met Prof. Lee. We talked.", "Nice!"]
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let message = Message {
                    tenant: String::new(),
                    thread: "t".into(),
                    external_id: format!("m{i}"),
                    position: i as u64,
                    role: Role::User,
                    speaker: None,
                    content: (*text).to_owned(),
                    tool_calls: vec![],
                    time,
                };
                (RecordId([i as u8; 32]), message)
            })
            .collect();
        let block = Block {
            tenant: String::new(),
            thread: "t".into(),
            ordinal: 1,
            start_turn: 1,
            end_turn: 1,
            first_position: 0,
            last_position: 1,
            messages: messages.iter().map(|(id, _)| *id).collect(),
            time,
            l4: String::new(),
            l3: String::new(),
        };
        let input = BlockInput {
            id: RecordId([9; 32]),
            block: &block,
            messages: &messages,
            attempt: 1,
            analyses: None,
        };
        let computed = std::cell::OnceCell::new();
        assert!(carrying(false, &input, &computed).analyses.is_none());
        assert!(computed.get().is_none(), "nothing computed for no reader");
        let first = carrying(true, &input, &computed).analyses.unwrap();
        assert_eq!(first, analyse_messages(&messages).as_slice());
        assert_eq!(first.first().unwrap().sentences.len(), 2);
        let second = carrying(true, &input, &computed).analyses.unwrap();
        assert!(std::ptr::eq(first, second), "the same analyses, not again");
        let other = std::cell::OnceCell::new();
        let carried = BlockInput {
            analyses: Some(first),
            ..input
        };
        assert!(std::ptr::eq(
            carrying(true, &carried, &other).analyses.unwrap(),
            first
        ));
        assert!(other.get().is_none(), "a carried analysis is kept");
    }

    fn recorded_error(run: &StageRun<()>) -> String {
        let last = run.records.last().unwrap();
        match last.record() {
            Record::Derivation(Derivation {
                outcome: Outcome::Failed { error },
                ..
            }) => error.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_halt_keeps_the_model_cause_and_records_nothing() {
        let cause = ModelError::Offline {
            operator: "llm-summarizer@1".into(),
            subject: "block b".into(),
        };
        let err = on_error::<()>(&attempt(), OperatorError::from(cause.clone())).unwrap_err();
        assert!(
            matches!(&err, StageError::Halted(c) if *c == cause),
            "{err:?}"
        );
    }

    #[test]
    fn a_model_failure_is_recorded_with_the_text_a_failed_run_had() {
        let cause = ModelError::Unavailable {
            status: Some(503),
            retryable: true,
            message: "HTTP 503 Service Unavailable: busy (gave up after 4 attempts)".into(),
        };
        let from_model = on_error::<()>(&attempt(), OperatorError::from(cause.clone())).unwrap();
        let as_text = on_error::<()>(&attempt(), OperatorError::Failed(cause.to_string())).unwrap();
        assert_eq!(
            recorded_error(&from_model),
            "model service: HTTP 503 Service Unavailable: busy (gave up after 4 attempts)"
        );
        // Byte-identical records: the typed cause changes no record id.
        let ids = |r: &StageRun<()>| r.records.iter().map(Encoded::id).collect::<Vec<_>>();
        assert_eq!(ids(&from_model), ids(&as_text));
        assert_eq!(from_model.error, as_text.error);
    }
}
