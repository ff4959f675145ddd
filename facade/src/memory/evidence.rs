//! The evidence gate on a [`Memory`] (spec §12): assess a retrieval batch,
//! record the refs used, and the weights that use reinforces (spec §13).
//!
//! A batch is a `Retrieval` record. It may be assessed until refs of it are
//! recorded as used; the latest assessment counts. `use` accepts only refs
//! that the batch's latest assessment adopted as sufficient evidence, then
//! appends a `UseReceipt` — after which the batch is closed.

use strataflow_log::RecordId;
use strataflow_log::record::{
    Assessment, Record, RecordKind, RefKind, Retrieval, UseReceipt, Verdict,
};
use strataflow_materializers::event_status::EventStatusView;
use strataflow_materializers::view::WeightsState;
use strataflow_materializers::weights::WeightsView;
use strataflow_operators::evidence_gate::{
    AssessmentInput, NormalizedAssessment, check_use, format_ref, normalize_assessment, parse_ref,
};

use super::{EvidenceError, Expected, Memory, MemoryError, QueryError};

/// What `assess` stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AssessOutcome {
    /// The assessment record.
    pub assessment: RecordId,
    /// The batch.
    pub batch: RecordId,
    /// sufficient / partial / insufficient (the spec's "wrong").
    pub verdict: Verdict,
    /// Adopted refs (valid refs of the batch).
    pub evidence: Vec<String>,
    /// Fit.
    pub fit: String,
    /// What is missing.
    pub missing: String,
    /// Next strategy.
    pub next: String,
    /// Refs left out, with why.
    pub rejected: Vec<(String, &'static str)>,
}

/// What `use` stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UseOutcome {
    /// The use receipt.
    pub receipt: RecordId,
    /// The batch, now closed.
    pub batch: RecordId,
    /// Refs recorded.
    pub refs: Vec<String>,
    /// Events reinforced (event refs, and the source events of node refs).
    pub events: Vec<RecordId>,
    /// Refs given twice (recorded once).
    pub duplicates: Vec<String>,
}

impl Memory {
    fn batch(&self, tenant: &str, batch: &str) -> Result<(RecordId, Retrieval), MemoryError> {
        let stored = self.show(tenant, batch)?;
        match stored.record {
            Record::Retrieval(r) => Ok((stored.id, r)),
            other => Err(QueryError::WrongKind {
                id: stored.id,
                kind: other.kind(),
                expected: Expected::Batch,
            }
            .into()),
        }
    }

    fn ensure_open(&self, batch: &RecordId) -> Result<(), MemoryError> {
        if !self
            .store
            .children_of_kind(batch, RecordKind::UseReceipt)?
            .is_empty()
        {
            return Err(EvidenceError::BatchClosed { batch: *batch }.into());
        }
        Ok(())
    }

    /// Assesses a batch of `tenant` (spec §12.2) and records the assessment.
    pub(crate) fn assess(
        &self,
        tenant: &str,
        batch: &str,
        input: &AssessmentInput,
    ) -> Result<AssessOutcome, MemoryError> {
        let (batch_id, retrieval) = self.batch(tenant, batch)?;
        self.ensure_open(&batch_id)?;
        let refs: Vec<String> = retrieval.refs.iter().map(format_ref).collect();
        let n: NormalizedAssessment = normalize_assessment(input, &refs);
        let record = Assessment {
            tenant: retrieval.tenant.clone(),
            batch: batch_id,
            verdict: n.verdict,
            evidence: n.evidence.iter().filter_map(|r| parse_ref(r)).collect(),
            fit: n.fit.clone(),
            missing: n.missing.clone(),
            next: n.next.clone(),
        };
        let id = self.append_one(Record::Assessment(record))?;
        Ok(AssessOutcome {
            assessment: id,
            batch: batch_id,
            verdict: n.verdict,
            evidence: n.evidence,
            fit: n.fit,
            missing: n.missing,
            next: n.next,
            rejected: n
                .rejected
                .iter()
                .map(|r| (r.reference.clone(), r.reason.as_str()))
                .collect(),
        })
    }

    /// Records refs of a batch of `tenant` as used (spec §12.3): only refs
    /// its latest assessment adopted as sufficient. Closes the batch.
    pub(crate) fn use_refs(
        &self,
        tenant: &str,
        batch: &str,
        refs: &[String],
    ) -> Result<UseOutcome, MemoryError> {
        let (batch_id, retrieval) = self.batch(tenant, batch)?;
        self.ensure_open(&batch_id)?;
        let batch_refs: Vec<String> = retrieval.refs.iter().map(format_ref).collect();
        let latest = self
            .store
            .children_of_kind(&batch_id, RecordKind::Assessment)?
            .into_iter()
            .filter_map(|s| match s.record {
                Record::Assessment(a) => Some((s.seq, s.id, a)),
                _ => None,
            })
            .max_by_key(|(seq, _, _)| *seq);
        let Some((_, assessment_id, assessment)) = latest else {
            return Err(EvidenceError::NotAssessed { batch: batch_id }.into());
        };
        let adopted: Vec<String> = if assessment.verdict == Verdict::Sufficient {
            assessment.evidence.iter().map(format_ref).collect()
        } else {
            Vec::new()
        };
        let accepted = check_use(refs, &batch_refs, &adopted).map_err(EvidenceError::from)?;
        let parsed: Vec<_> = accepted.refs.iter().filter_map(|r| parse_ref(r)).collect();
        let mut events = Vec::new();
        for r in &parsed {
            events.extend(self.reinforced_events(r)?);
        }
        events.sort_unstable();
        events.dedup();
        let record = UseReceipt {
            tenant: retrieval.tenant,
            batch: batch_id,
            assessment: assessment_id,
            refs: parsed,
        };
        Ok(UseOutcome {
            receipt: self.append_one(Record::UseReceipt(record))?,
            batch: batch_id,
            refs: accepted.refs,
            events,
            duplicates: accepted.duplicates,
        })
    }

    /// The events a used ref reinforces: the event itself, or the source
    /// events of a graph node's assertion.
    fn reinforced_events(
        &self,
        r: &strataflow_log::record::EvidenceRef,
    ) -> Result<Vec<RecordId>, MemoryError> {
        Ok(match r.kind {
            RefKind::Event => vec![r.id],
            RefKind::Node => match self.store.get(&r.id)?.map(|s| s.record) {
                Some(Record::GraphAssertion(a)) => a.source_events,
                _ => Vec::new(),
            },
            RefKind::Message | RefKind::Block => Vec::new(),
        })
    }

    /// The weights of a tenant's events: the persisted weights view,
    /// refreshed to the end of the log, with the current statuses.
    pub(crate) fn weights(&self, tenant: &str) -> Result<WeightsView, MemoryError> {
        let status = self.event_status(tenant)?;
        self.weights_with(tenant, &status)
    }

    /// [`Memory::weights`] with the tenant's statuses already read.
    pub(crate) fn weights_with(
        &self,
        tenant: &str,
        status: &EventStatusView,
    ) -> Result<WeightsView, MemoryError> {
        let (state, _) = self.refresh::<WeightsState>(tenant)?;
        Ok(state.view(status))
    }
}
