//! The agent protocol: assess a batch, use the refs an answer used, and the
//! governance decisions (forget, restore, pin, unpin).

use strataflow::log::record::{Actor, GovernanceAction};
use strataflow::operators::evidence_gate::{AssessmentInput, STRATEGIES};

use super::error::from_memory;
use super::params::{AssessParams, GovernParams, UseParams};
use super::read::cut;
use super::{Answer, Service};
use crate::http::auth::Caller;
use crate::http::error::ApiError;

/// Verdicts an assessment may give.
const VERDICTS: [&str; 3] = ["sufficient", "partial", "wrong"];

impl Service {
    /// Assesses a retrieval batch (the five-field evidence gate).
    pub async fn assess(&self, caller: &Caller, p: AssessParams) -> Result<Answer, ApiError> {
        self.local_write("an assessment")?;
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        if !VERDICTS.contains(&p.verdict.as_str()) {
            return Err(ApiError::invalid(format!(
                "`verdict` `{}`: expected sufficient, partial or wrong",
                cut(&p.verdict)
            ))
            .at_field("verdict"));
        }
        if !STRATEGIES.contains(&p.next.as_str()) {
            return Err(ApiError::invalid(format!(
                "`next` `{}`: expected one of {}",
                cut(&p.next),
                STRATEGIES.join(", ")
            ))
            .at_field("next"));
        }
        let batch = p.batch;
        let input = AssessmentInput {
            verdict: p.verdict,
            evidence: p.evidence,
            fit: p.fit,
            missing: p.missing,
            next: p.next,
        };
        self.read(None, move |m| {
            m.tenant(&tenant)
                .assess(&batch, &input)
                .map_err(from_memory)
        })
        .await
    }

    /// Records the refs an answer used (reinforcing their events).
    pub async fn use_refs(&self, caller: &Caller, p: UseParams) -> Result<Answer, ApiError> {
        self.local_write("a use of refs")?;
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        if p.refs.is_empty() {
            return Err(
                ApiError::invalid("`refs` is empty: name the refs the answer used")
                    .at_field("refs"),
            );
        }
        let (batch, refs) = (p.batch, p.refs);
        self.read(None, move |m| {
            m.tenant(&tenant)
                .use_refs(&batch, &refs)
                .map_err(from_memory)
        })
        .await
    }

    /// A governance decision on one of the tenant's events; answers the
    /// governance record and the event's status after it.
    pub async fn govern(
        &self,
        caller: &Caller,
        action: GovernanceAction,
        p: GovernParams,
    ) -> Result<Answer, ApiError> {
        self.local_write("a governance decision")?;
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let (event, reason) = (p.event, p.reason);
        self.read(None, move |m| {
            let t = m.tenant(&tenant);
            let record = t
                .govern(&event, action, Actor::Agent, reason)
                .map_err(from_memory)?;
            let event = t.show(&event).map_err(from_memory)?.id;
            let status = t.event_status().map_err(from_memory)?;
            let state = status.get(&event);
            Ok(serde_json::json!({
                "record": record.to_string(),
                "event": event.to_string(),
                "status": state.map(|s| s.status.name()),
                "pinned": state.is_some_and(|s| s.pinned),
            }))
        })
        .await
    }
}
