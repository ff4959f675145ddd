//! Cost plan: how many operator runs, model calls and input tokens a
//! derivation of a profile would make, computed from the blocks and their
//! recorded derivations before any call.

use strataflow_log::RecordId;
use strataflow_log::record::{Block, Outcome, Record, RecordKind};
use strataflow_operators::operator::BlockInput;
use strataflow_operators::profile::is_model_backed;
use strataflow_pipeline::derive::{extraction_state, projection_state, summary_state};

use super::{Memory, MemoryError};

/// What one operator of a profile would do.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OperatorPlan {
    /// Operator id.
    pub operator: String,
    /// Whether it calls a model.
    pub model_backed: bool,
    /// Runs still to make (inputs with no successful derivation). For the
    /// projector of blocks not yet extracted this is an upper bound: one
    /// run per block, whether or not it yields events.
    pub runs: u64,
    /// Of those runs, the ones that call a model (one request each; a
    /// request already recorded in the log is served from it instead).
    pub model_calls: u64,
    /// Approximate input tokens of those calls (from block sizes and the
    /// operator's prompt).
    pub input_tokens: u64,
}

/// The plan of a profile over the data directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DerivationPlan {
    /// Profile name.
    pub profile: String,
    /// Blocks in the log.
    pub blocks: u64,
    /// Summarizer, extractor, projector.
    pub operators: Vec<OperatorPlan>,
}

impl Memory {
    /// How many runs, model calls and input tokens deriving `profile`
    /// (`None`: the default) would take now. Makes no call and writes
    /// nothing. A call already recorded in the log is served from it during
    /// the run, so the plan is an upper bound on the requests made.
    pub fn plan(&self, profile: Option<&str>) -> Result<DerivationPlan, MemoryError> {
        let (profile, ops) = self.operators(profile)?;
        let mut summ = OperatorPlan {
            operator: ops.summarizer.id().to_string(),
            model_backed: is_model_backed(&profile.summarizer),
            ..OperatorPlan::default()
        };
        let mut extr = OperatorPlan {
            operator: ops.extractor.id().to_string(),
            model_backed: is_model_backed(&profile.extractor),
            ..OperatorPlan::default()
        };
        let mut proj = OperatorPlan {
            operator: ops.projector.id().to_string(),
            model_backed: is_model_backed(&profile.projector),
            ..OperatorPlan::default()
        };
        let mut out = DerivationPlan {
            profile: profile.name.clone(),
            ..DerivationPlan::default()
        };
        let any_model = summ.model_backed || extr.model_backed || proj.model_backed;
        for entry in self.store.ids_of_kind(RecordKind::Block) {
            let (_, block_id) = entry?;
            out.blocks += 1;
            let summarized = summary_state(&self.store, &ops, &block_id)?;
            let extracted = extraction_state(&self.store, &ops, &block_id)?;
            // The projector runs on the events of an extracted block; for a
            // block not yet extracted, count one run as an upper bound.
            let projection_pending = match &extracted.done {
                None => true,
                Some(d) => {
                    matches!(d.outcome, Outcome::Ok)
                        && projection_state(&self.store, &ops, &d.outputs)?
                            .is_some_and(|p| p.done.is_none())
                }
            };
            let pending = [
                summarized.done.is_none(),
                extracted.done.is_none(),
                projection_pending,
            ];
            if !pending.iter().any(|p| *p) {
                continue;
            }
            let loaded = if any_model {
                Some(self.block_with_messages(&block_id)?)
            } else {
                None
            };
            let input = loaded.as_ref().map(|(block, messages)| BlockInput {
                id: block_id,
                block,
                messages,
                attempt: 1,
                analyses: None,
            });
            let estimates = [
                input
                    .as_ref()
                    .and_then(|i| ops.summarizer.planned_input_tokens(i)),
                input
                    .as_ref()
                    .and_then(|i| ops.extractor.planned_input_tokens(i)),
                input
                    .as_ref()
                    .and_then(|i| ops.projector.planned_input_tokens(i)),
            ];
            for ((plan, pending), estimate) in [&mut summ, &mut extr, &mut proj]
                .into_iter()
                .zip(pending)
                .zip(estimates)
            {
                if !pending {
                    continue;
                }
                plan.runs += 1;
                if let Some(tokens) = estimate {
                    plan.model_calls += 1;
                    plan.input_tokens += tokens;
                }
            }
        }
        out.operators = vec![summ, extr, proj];
        Ok(out)
    }

    /// A block and its messages, in order.
    fn block_with_messages(
        &self,
        id: &RecordId,
    ) -> Result<(Block, Vec<(RecordId, strataflow_log::record::Message)>), MemoryError> {
        let Some(Record::Block(block)) = self.store.get(id)?.map(|s| s.record) else {
            return Err(MemoryError::MissingRecord { id: *id, of: None });
        };
        let mut messages = Vec::with_capacity(block.messages.len());
        for m in &block.messages {
            match self.store.get(m)?.map(|s| s.record) {
                Some(Record::Message(message)) => messages.push((*m, message)),
                _ => {
                    return Err(MemoryError::MissingRecord {
                        id: *m,
                        of: Some(*id),
                    });
                }
            }
        }
        Ok((block, messages))
    }
}
