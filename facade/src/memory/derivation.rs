//! Derivation on a [`Memory`]: profiles, running the operators, status,
//! and the events and graph a profile built.

use std::collections::BTreeMap;

use strataflow_log::record::{
    BlockSummary, EXTERNAL_IMPORT_THREAD_PREFIX, Event, GraphAssertion, Outcome, Record, RecordKind,
};
use strataflow_log::{RecordId, SourceTime, Timestamp};
use strataflow_materializers::event_status::{EventStatus, EventStatusView};
use strataflow_materializers::graph_state::GraphState;
use strataflow_operators::profile::{DEFAULT_PROFILE, Operators, Profile};
use strataflow_pipeline::derive::{
    self, DeriveOptions, DeriveStats, RetryPolicy, extraction_state, projection_state,
    summary_state,
};

use super::{Memory, MemoryError, ProfileError};

/// Configuration key of the default profile's name.
const DEFAULT_PROFILE_KEY: &str = "default_profile";

fn profile_key(name: &str) -> String {
    format!("profile/{name}")
}

/// Records the profile `default` of a new data directory: on the first
/// open of an empty log with no stored `default`, the newest embedded
/// operators ([`Profile::default_profile`]) are stored under
/// `profile/default`. A directory with records and no stored `default` was
/// written by an earlier build and keeps [`Profile::legacy_default`]; one
/// whose `default` was stored (by this rule or `profile create default`)
/// keeps it.
pub(super) fn record_default_profile(store: &strataflow_log::Store) -> Result<(), MemoryError> {
    let key = profile_key(DEFAULT_PROFILE);
    if store.last_seq()?.is_some() || store.config(&key)?.is_some() {
        return Ok(());
    }
    let profile = Profile::default_profile();
    let text = serde_json::to_string(&profile).map_err(|source| ProfileError::Encode {
        name: profile.name.clone(),
        source,
    })?;
    store.set_config(&key, &text)?;
    Ok(())
}

/// Refuses a profile name longer than the log's name limit before it
/// becomes a store key.
fn check_profile_name(name: &str) -> Result<(), MemoryError> {
    if name.len() > strataflow_log::MAX_NAME_BYTES {
        return Err(strataflow_log::StoreError::NameTooLong {
            field: "profile name",
            len: name.len(),
            max: strataflow_log::MAX_NAME_BYTES,
        }
        .into());
    }
    Ok(())
}

/// One event as listed by [`TenantMemory::events`](super::TenantMemory::events).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EventListing {
    /// Event id.
    pub id: RecordId,
    /// Source block.
    pub block: RecordId,
    /// Thread of the block.
    pub thread: String,
    /// External ids of its source messages.
    pub source_messages: Vec<String>,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Participants.
    pub participants: Vec<String>,
    /// Standard type.
    pub event_type: String,
    /// active / superseded / forgotten.
    pub status: EventStatus,
    /// occurred / planned / cancelled / ongoing / unknown.
    pub occurrence: strataflow_log::record::Occurrence,
    /// When it was said.
    pub mentioned_at: SourceTime,
    /// Start of when it happened.
    pub happened_start: Option<Timestamp>,
    /// End of when it happened (inclusive).
    pub happened_end: Option<Timestamp>,
    /// The time expression as written.
    pub time_text: Option<String>,
    /// Precision.
    pub precision: strataflow_log::record::Precision,
    /// Basis.
    pub basis: strataflow_log::record::TimeBasis,
    /// Pinned by governance.
    pub pinned: bool,
    /// Superseded by.
    pub superseded_by: Vec<RecordId>,
    /// Conflicts, both ways.
    pub conflicts_with: Vec<RecordId>,
}

/// A profile's events: `(id, thread, event)` in thread and block order, and
/// the external ids of the messages seen.
#[derive(Clone, Debug, Default)]
pub struct ProfileEvents {
    /// The events.
    pub events: Vec<(RecordId, String, Event)>,
    /// Message id → external id.
    pub external: BTreeMap<RecordId, String>,
}

/// Derivation state of one operator over the data directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OperatorStatus {
    /// Operator id.
    pub operator: String,
    /// Inputs done (ok or skipped).
    pub done: u64,
    /// Inputs not yet run (waiting for an earlier stage or never tried).
    pub pending: u64,
    /// Inputs that failed and will be retried by `resume`.
    pub retryable: u64,
    /// Inputs that failed the maximum number of times.
    pub failed: u64,
    /// The failed and retryable inputs with their last error.
    pub failures: Vec<FailureInfo>,
}

/// One failing input.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FailureInfo {
    /// The input (block, or first event of a batch).
    pub input: RecordId,
    /// Attempts made.
    pub attempts: u32,
    /// Terminal (no more retries).
    pub terminal: bool,
    /// Last error.
    pub error: String,
}

/// Derivation state of a profile.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DerivationStatus {
    /// Profile name.
    pub profile: String,
    /// Blocks.
    pub blocks: u64,
    /// Ready blocks.
    pub ready_blocks: u64,
    /// Per operator: summarizer, extractor, projector.
    pub operators: Vec<OperatorStatus>,
    /// Model calls of the data directory (all profiles).
    pub model_calls: super::ModelCallTotals,
    /// The profile's embedder and its vectors, when it names one.
    pub embedder: Option<EmbedderStatus>,
}

/// The embedder of a profile in its [`DerivationStatus`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmbedderStatus {
    /// The embedder, `name@version`.
    pub operator: String,
    /// Its label, `<provider>/<model>`.
    pub label: String,
    /// Rows of the tenants' dense views: the vectors `search dense` reads.
    pub vectors: u64,
}

impl Memory {
    /// The default profile of this directory: the one `profile set-default`
    /// named, else `default` (recorded when the directory was created, see
    /// `record_default_profile`; legacy for a directory of an earlier
    /// build).
    pub fn default_profile(&self) -> Result<Profile, MemoryError> {
        let name = self
            .store
            .config(DEFAULT_PROFILE_KEY)?
            .unwrap_or_else(|| DEFAULT_PROFILE.to_owned());
        self.profile(&name)
    }

    /// A stored profile by name.
    pub fn profile(&self, name: &str) -> Result<Profile, MemoryError> {
        check_profile_name(name)?;
        match self.store.config(&profile_key(name))? {
            Some(text) => serde_json::from_str(&text).map_err(|source| {
                ProfileError::Unreadable {
                    name: name.to_owned(),
                    source,
                }
                .into()
            }),
            // Every directory this build created recorded its `default`
            // ([`record_default_profile`]): one without it was written by
            // an earlier build, which derived with the legacy operators.
            None if name == DEFAULT_PROFILE => Ok(Profile::legacy_default()),
            None => Err(ProfileError::NotFound {
                name: name.to_owned(),
            }
            .into()),
        }
    }

    /// Every stored profile (the default one included), by name.
    pub fn profiles(&self) -> Result<Vec<Profile>, MemoryError> {
        let mut out = Vec::new();
        for (name, text) in self.store.configs_with_prefix(&profile_key(""))? {
            out.push(
                serde_json::from_str(&text)
                    .map_err(|source| ProfileError::Unreadable { name, source })?,
            );
        }
        let default = self.default_profile()?;
        if !out.iter().any(|p: &Profile| p.name == default.name) {
            out.push(default);
            out.sort_by(|a, b| a.name.cmp(&b.name));
        }
        Ok(out)
    }

    /// Makes a stored profile the default of every command.
    pub fn set_default_profile(&self, name: &str) -> Result<(), MemoryError> {
        let profile = self.profile(name)?;
        self.store.set_config(DEFAULT_PROFILE_KEY, &profile.name)?;
        Ok(())
    }

    /// What two profiles remember differently for a tenant: their events,
    /// graphs (each of its own derivations: [`Memory::profile_graph`]) and
    /// block summaries.
    pub(crate) fn diff(
        &self,
        a: &str,
        b: &str,
        tenant: &str,
    ) -> Result<strataflow_interchange::diff::ProfileDiff, MemoryError> {
        use strataflow_interchange::diff;
        let mut events_a = self.profile_events(Some(a), tenant, None)?;
        let events_b = self.profile_events(Some(b), tenant, None)?;
        events_a.external.extend(events_b.external);
        let events = diff::diff_events(&events_a.events, &events_b.events, &events_a.external);
        // Source events → the messages they cite, for the graph items.
        let cites: BTreeMap<RecordId, &[RecordId]> = events_a
            .events
            .iter()
            .chain(&events_b.events)
            .map(|(id, _, e)| (*id, e.source_messages.as_slice()))
            .collect();
        let sources = |ids: &[RecordId]| {
            let mut messages: Vec<RecordId> = ids
                .iter()
                .filter_map(|id| cites.get(id))
                .flat_map(|m| m.iter().copied())
                .collect();
            messages.sort_unstable();
            messages.dedup();
            diff::external_ids(&messages, &events_a.external)
        };
        let graph = diff::graph::diff_graphs(
            &self.profile_graph(Some(a), tenant)?,
            &self.profile_graph(Some(b), tenant)?,
            &sources,
        );
        let summaries = diff::summary::diff_summaries(
            &self.profile_summaries(Some(a), tenant)?,
            &self.profile_summaries(Some(b), tenant)?,
        );
        Ok(diff::ProfileDiff {
            events,
            graph,
            summaries,
        })
    }

    /// The block summaries a profile's summarizer produced for a tenant:
    /// `(block, thread, summary)` in thread and block order.
    pub(crate) fn profile_summaries(
        &self,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<Vec<(RecordId, String, BlockSummary)>, MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let mut out = Vec::new();
        for (t, th, _) in self.store.thread_heads()? {
            if t != tenant {
                continue;
            }
            for entry in self.store.thread_records(&t, &th, 0) {
                let (_, kind, block) = entry?;
                if kind != RecordKind::Block {
                    continue;
                }
                let s = summary_state(&self.store, &ops, &block)?;
                // default: An input not derived yet has no outputs (the documented meaning of `None`).
                for summary in s.done.map(|d| d.outputs).unwrap_or_default() {
                    if let Some(Record::BlockSummary(x)) =
                        self.store.get(&summary)?.map(|s| s.record)
                    {
                        out.push((block, th.clone(), x));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Stores a profile (after checking its operators exist).
    pub fn save_profile(&self, profile: &Profile) -> Result<(), MemoryError> {
        check_profile_name(&profile.name)?;
        if profile.uses_model() && profile.model.is_none() {
            return Err(ProfileError::ModelNotGiven {
                name: profile.name.clone(),
            }
            .into());
        }
        super::models::checking_registry(&self.registry, profile)
            .resolve(profile)
            .map_err(ProfileError::from)?;
        if let Some(spec) = &profile.embedder {
            // Checked offline: no API key is read and nothing is asked.
            let service = super::EmbeddingService {
                offline: true,
                ..self.embedding_service_for(profile)
            };
            super::embedder_from_spec(spec, Some(&service))?;
        }
        let text = serde_json::to_string(profile).map_err(|source| ProfileError::Encode {
            name: profile.name.clone(),
            source,
        })?;
        self.store.set_config(&profile_key(&profile.name), &text)?;
        Ok(())
    }

    /// The operators of a profile (`None`: the default).
    // reason: the streaming tests build their own `StreamOptions` from the
    // default profile's operators; embedders use `ingester`.
    #[doc(hidden)]
    pub fn operators(&self, profile: Option<&str>) -> Result<(Profile, Operators), MemoryError> {
        let profile = match profile {
            Some(name) => self.profile(name)?,
            None => self.default_profile()?,
        };
        let ops = self
            .registry_for(&profile)?
            .resolve(&profile)
            .map_err(ProfileError::from)?;
        Ok((profile, ops))
    }

    /// The profile named `name`, or the default profile (`None`).
    pub fn profile_or_default(&self, name: Option<&str>) -> Result<Profile, MemoryError> {
        match name {
            Some(name) => self.profile(name),
            None => self.default_profile(),
        }
    }

    /// Registers an extra summarizer (an embedder's own, or a test's): a
    /// saved profile may then name its id.
    pub fn register_summarizer(
        &mut self,
        op: std::sync::Arc<dyn strataflow_operators::operator::Summarizer>,
    ) {
        self.registry.add_summarizer(op);
    }

    /// Registers an extra extractor (see [`Memory::register_summarizer`]).
    pub fn register_extractor(
        &mut self,
        op: std::sync::Arc<dyn strataflow_operators::operator::Extractor>,
    ) {
        self.registry.add_extractor(op);
    }

    /// Registers an extra projector (see [`Memory::register_summarizer`]).
    pub fn register_projector(
        &mut self,
        op: std::sync::Arc<dyn strataflow_operators::operator::Projector>,
    ) {
        self.registry.add_projector(op);
    }

    /// Runs every pending or retryable derivation of a profile.
    pub fn derive(
        &self,
        profile: Option<&str>,
        options: &DeriveOptions,
        progress: &mut dyn FnMut(&DeriveStats),
    ) -> Result<DeriveStats, MemoryError> {
        let (resolved, ops) = self.operators(profile)?;
        let result =
            derive::derive(&self.store, &ops, options, progress).map_err(MemoryError::from);
        // The embeddings of what was derived (a profile with an embedder).
        let result = result.and_then(|mut stats| {
            let embedded = self.derive_embeddings(Some(&resolved.name))?;
            tracing::info!(
                written = embedded.written,
                already = embedded.already,
                "embeddings"
            );
            stats.embeddings = embedded.written;
            stats.embeddings_already = embedded.already;
            Ok(stats)
        });
        self.save_model_counters()?;
        result
    }

    /// Default derivation options: fsync, 3 attempts with 1 s / 2 s backoff,
    /// waiting out retries.
    pub fn derive_options(&self) -> DeriveOptions {
        DeriveOptions {
            retry: RetryPolicy::default(),
            wait_for_retries: true,
            ..DeriveOptions::default()
        }
    }

    /// The derivation state of a profile, per operator.
    pub fn status(&self, profile: Option<&str>) -> Result<DerivationStatus, MemoryError> {
        let (profile, ops) = self.operators(profile)?;
        let max = RetryPolicy::default().max_attempts;
        let mut summ = OperatorStatus {
            operator: ops.summarizer.id().to_string(),
            ..OperatorStatus::default()
        };
        let mut extr = OperatorStatus {
            operator: ops.extractor.id().to_string(),
            ..OperatorStatus::default()
        };
        let mut proj = OperatorStatus {
            operator: ops.projector.id().to_string(),
            ..OperatorStatus::default()
        };
        let mut out = DerivationStatus {
            profile: profile.name.clone(),
            ..DerivationStatus::default()
        };
        let tally = |st: &mut OperatorStatus, input: RecordId, s: &derive::StageState| {
            if s.done.is_some() {
                st.done += 1;
            } else if s.failures == 0 {
                st.pending += 1;
            } else {
                let terminal = s.failures >= max;
                if terminal {
                    st.failed += 1;
                } else {
                    st.retryable += 1;
                }
                st.failures.push(FailureInfo {
                    input,
                    attempts: s.failures,
                    terminal,
                    // default: A failure recorded without a message lists an empty error.
                    error: s.last_error.clone().unwrap_or_default(),
                });
            }
        };
        for entry in self.store.ids_of_kind(RecordKind::Block) {
            let (_, block) = entry?;
            out.blocks += 1;
            let s = summary_state(&self.store, &ops, &block)?;
            if s.done.is_none()
                && matches!(
                    self.store.get(&block)?.map(|b| b.record),
                    Some(Record::Block(b)) if b.thread.starts_with(EXTERNAL_IMPORT_THREAD_PREFIX)
                )
            {
                // An import's source block is never derived.
                out.blocks -= 1;
                continue;
            }
            tally(&mut summ, block, &s);
            if s.done.is_none() {
                extr.pending += 1;
                continue;
            }
            let e = extraction_state(&self.store, &ops, &block)?;
            tally(&mut extr, block, &e);
            let Some(done) = e.done else { continue };
            out.ready_blocks += 1;
            if let (Outcome::Ok, Some(first)) = (&done.outcome, done.outputs.first())
                && let Some(p) = projection_state(&self.store, &ops, &done.outputs)?
            {
                tally(&mut proj, *first, &p);
            }
        }
        out.operators = vec![summ, extr, proj];
        out.model_calls = self.model_calls()?;
        out.embedder = self.embedder_status(&profile)?;
        Ok(out)
    }

    /// The events a profile's extractor produced for a tenant, in thread
    /// and block order, with the external ids of the tenant's messages.
    pub(crate) fn profile_events(
        &self,
        profile: Option<&str>,
        tenant: &str,
        thread: Option<&str>,
    ) -> Result<ProfileEvents, MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let mut out = ProfileEvents::default();
        for (t, th, _) in self.store.thread_heads()? {
            if t != tenant || thread.is_some_and(|x| x != th) {
                continue;
            }
            for entry in self.store.thread_records(&t, &th, 0) {
                let (_, kind, id) = entry?;
                if kind == RecordKind::Message {
                    if let Some(Record::Message(m)) = self.store.get(&id)?.map(|s| s.record) {
                        out.external.insert(id, m.external_id);
                    }
                    continue;
                }
                if kind != RecordKind::Block {
                    continue;
                }
                if th.starts_with(EXTERNAL_IMPORT_THREAD_PREFIX) {
                    // An import's source block: its events come from the import.
                    for event_id in self.imported_events(&id)? {
                        if let Some(Record::Event(e)) = self.store.get(&event_id)?.map(|s| s.record)
                        {
                            out.events.push((event_id, th.clone(), e));
                        }
                    }
                    continue;
                }
                let s = extraction_state(&self.store, &ops, &id)?;
                // default: An input not derived yet has no outputs (the documented meaning of `None`).
                for event_id in s.done.map(|d| d.outputs).unwrap_or_default() {
                    if let Some(Record::Event(e)) = self.store.get(&event_id)?.map(|s| s.record) {
                        out.events.push((event_id, th.clone(), e));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The events a profile's extractor produced, in thread and block order,
    /// with their status.
    pub(crate) fn events(
        &self,
        profile: Option<&str>,
        tenant: &str,
        thread: Option<&str>,
    ) -> Result<Vec<EventListing>, MemoryError> {
        let found = self.profile_events(profile, tenant, thread)?;
        let status = self.event_status(tenant)?;
        Ok(found
            .events
            .iter()
            .map(|(id, th, e)| listing(*id, th, e, &found.external, &status))
            .collect())
    }

    /// The status view of a tenant's events: its persisted event status
    /// view, refreshed to the end of the log.
    pub(crate) fn event_status(&self, tenant: &str) -> Result<EventStatusView, MemoryError> {
        let (state, _) =
            self.refresh::<strataflow_materializers::view::EventStatusState>(tenant)?;
        Ok(state.view())
    }

    /// The graph assertions among `ids`, in that order (read in log order).
    fn graph_assertions(
        &self,
        ids: &[RecordId],
    ) -> Result<Vec<(RecordId, GraphAssertion)>, MemoryError> {
        let mut assertions = Vec::with_capacity(ids.len());
        for stored in self.store.get_many(ids)?.into_iter().flatten() {
            if let Record::GraphAssertion(a) = stored.record {
                assertions.push((stored.id, a));
            }
        }
        Ok(assertions)
    }

    /// The graph a profile's own derivations built for a tenant: the
    /// assertions its projector made from its extractor's events, block by
    /// block (found through their Derivation records), folded like
    /// [`Memory::graph`]. Profiles sharing a projector share its graph
    /// membership view, so this is what tells their graphs apart.
    pub(crate) fn profile_graph(
        &self,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<GraphState, MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let mut assertion_ids: Vec<RecordId> = Vec::new();
        for (t, th, _) in self.store.thread_heads()? {
            if t != tenant {
                continue;
            }
            for entry in self.store.thread_records(&t, &th, 0) {
                let (_, kind, block) = entry?;
                if kind != RecordKind::Block {
                    continue;
                }
                let e = extraction_state(&self.store, &ops, &block)?;
                let Some(done) = e.done else { continue };
                if !matches!(done.outcome, Outcome::Ok) {
                    continue;
                }
                let Some(p) = projection_state(&self.store, &ops, &done.outputs)? else {
                    continue;
                };
                // default: An input not derived yet has no outputs (the documented meaning of `None`).
                assertion_ids.extend(p.done.map(|d| d.outputs).unwrap_or_default());
            }
        }
        let assertions = self.graph_assertions(&assertion_ids)?;
        let status = self.event_status(tenant)?;
        Ok(GraphState::fold(&assertions, &|id| status.is_visible(id)))
    }

    /// The graph a profile's projector built for a tenant (from every
    /// assertion of that projector), leaving out what only forgotten events
    /// support.
    pub(crate) fn graph(
        &self,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<GraphState, MemoryError> {
        let status = self.event_status(tenant)?;
        self.graph_with(profile, tenant, &status)
    }

    /// [`Memory::graph`] with the tenant's statuses already read (each read
    /// of the event-status view loads and folds it again).
    pub(crate) fn graph_with(
        &self,
        profile: Option<&str>,
        tenant: &str,
        status: &EventStatusView,
    ) -> Result<GraphState, MemoryError> {
        let (key, fresh) = self.graph_membership_key(profile)?;
        let (membership, _) = self.refresh_keyed(&key, tenant, fresh)?;
        let assertion_ids: Vec<RecordId> = membership.assertions.into_iter().collect();
        let assertions = self.graph_assertions(&assertion_ids)?;
        Ok(GraphState::fold(&assertions, &|id| status.is_visible(id)))
    }
}

fn listing(
    id: RecordId,
    thread: &str,
    e: &Event,
    external: &BTreeMap<RecordId, String>,
    status: &EventStatusView,
) -> EventListing {
    let state = status.get(&id);
    EventListing {
        id,
        block: e.block,
        thread: thread.to_owned(),
        source_messages: strataflow_interchange::diff::external_ids(&e.source_messages, external),
        title: e.title.clone(),
        summary: e.summary.clone(),
        participants: e.temporal.participants.clone(),
        event_type: e.temporal.event_type.name().to_owned(),
        status: state.map_or(EventStatus::Active, |s| s.status),
        occurrence: e.temporal.status,
        mentioned_at: e.temporal.mentioned_at,
        happened_start: e.temporal.happened_start,
        happened_end: e.temporal.happened_end,
        time_text: e.temporal.original_text.clone(),
        precision: e.temporal.precision,
        basis: e.temporal.basis,
        pinned: state.is_some_and(|s| s.pinned),
        // default: An event without a status entry is active with no links.
        superseded_by: state.map(|s| s.superseded_by.clone()).unwrap_or_default(),
        conflicts_with: state.map(|s| s.conflicts_with.clone()).unwrap_or_default(),
    }
}
