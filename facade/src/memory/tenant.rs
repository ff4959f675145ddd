//! [`TenantMemory`]: one tenant of a [`Memory`], carrying the per-tenant
//! verbs (search, expand, context, the evidence gate, governance, events,
//! graph, views), and the option structs those verbs take instead of
//! positional `Option<&str>`s.

use std::path::Path;

use strataflow_log::record::{Actor, BlockSummary, GovernanceAction};
use strataflow_log::{RecordId, StoredRecord, Timestamp};
use strataflow_materializers::event_status::EventStatusView;
use strataflow_materializers::graph_state::GraphState;
use strataflow_materializers::weights::WeightsView;
use strataflow_operators::decay::ExpandTarget;
use strataflow_operators::evidence_gate::AssessmentInput;
use strataflow_pipeline::ingest::{IngestOptions, IngestStats, OnInvalid};

use super::{
    AssessOutcome, BlockView, Channel, EventListing, ExpandedEvent, ExpandedNode, Memory,
    MemoryError, ProfileEvents, SearchHit, SearchRequest, SearchResponse, Searcher, ThreadBlocks,
    UndoReport, UseOutcome, ViewReport,
};

/// How [`TenantMemory::search`] runs a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchOptions {
    /// The profile whose derivations are searched (`None`: the data
    /// directory's default profile).
    pub profile: Option<String>,
    /// Which index to read (default: [`Channel::All`], the three fused).
    pub channel: Channel,
}

/// Which events [`TenantMemory::events`] and
/// [`TenantMemory::extracted_events`] list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventsQuery {
    /// The profile whose extractor produced them (`None`: the default).
    pub profile: Option<String>,
    /// Only this thread (`None`: every thread of the tenant).
    pub thread: Option<String>,
}

/// What [`TenantMemory::context`] renders.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextOptions {
    /// The profile whose summaries and readiness decide the levels (`None`:
    /// the default).
    pub profile: Option<String>,
    /// Only this thread (`None`: every thread of the tenant).
    pub thread: Option<String>,
}

/// How [`TenantMemory::expand_node`] and [`TenantMemory::expand_block`]
/// read the derivations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpandOptions {
    /// The profile whose graph or block levels are read (`None`: the
    /// default).
    pub profile: Option<String>,
    /// For a node: only the facts valid at this time (`None`: all). Blocks
    /// ignore it.
    pub at: Option<Timestamp>,
}

/// What [`TenantMemory::views`] and [`Memory::views`] report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewsOptions {
    /// The profile whose graph membership, block levels and search views
    /// are reported (`None`: the default).
    pub profile: Option<String>,
    /// Also rebuild every view from the first record and report that
    /// digest beside the persisted one.
    pub verify: bool,
}

/// One tenant of a [`Memory`]: every read and write through it sees and
/// touches that tenant's records only (a record of another tenant is not
/// found, exactly as a missing one). Get it with [`Memory::tenant`] or
/// [`Memory::default_tenant`]; it is cheap to make and borrows the memory.
#[derive(Clone, Debug)]
pub struct TenantMemory<'m> {
    memory: &'m Memory,
    name: String,
}

impl Memory {
    /// The tenant `name` of this data directory (`""` is the default,
    /// empty tenant: [`Memory::default_tenant`]). A tenant needs no
    /// creation: it exists once a record of it is stored, and a tenant
    /// with no records simply finds nothing.
    pub fn tenant(&self, name: &str) -> TenantMemory<'_> {
        TenantMemory {
            memory: self,
            name: name.to_owned(),
        }
    }

    /// The default tenant, `""`: the tenant of messages that name none,
    /// of LoCoMo imports without `--tenant`, and of model calls.
    pub fn default_tenant(&self) -> TenantMemory<'_> {
        self.tenant("")
    }
}

impl<'m> TenantMemory<'m> {
    /// The tenant's name (`""` for the default tenant).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The memory this tenant belongs to.
    pub fn memory(&self) -> &'m Memory {
        self.memory
    }

    /// A record of the tenant by full id or unique hex prefix (4 to 64
    /// digits, optionally after `event:`, `msg:`, `block:` or `node:`).
    pub fn show(&self, id: &str) -> Result<StoredRecord, MemoryError> {
        self.memory.show(&self.name, id)
    }

    /// The blocks and open tail of one of the tenant's threads.
    pub fn blocks(&self, thread: &str) -> Result<ThreadBlocks, MemoryError> {
        self.memory.blocks(&self.name, thread)
    }

    /// Imports a LoCoMo file (either layout) into this tenant.
    pub fn import_locomo(
        &self,
        path: &Path,
        options: &IngestOptions,
        on_invalid: OnInvalid<'_>,
        progress: &mut dyn FnMut(&IngestStats),
    ) -> Result<IngestStats, MemoryError> {
        self.memory
            .import_locomo(path, &self.name, options, on_invalid, progress)
    }

    /// Runs a search and records it as a retrieval batch (whose refs can
    /// then be assessed and used).
    pub fn search(
        &self,
        request: &SearchRequest,
        options: &SearchOptions,
    ) -> Result<SearchResponse, MemoryError> {
        self.memory.search(
            options.profile.as_deref(),
            &self.name,
            options.channel,
            request,
        )
    }

    /// The tenant's search indexes under a profile (`None`: the default),
    /// up to the end of the log, to answer many queries with
    /// [`Searcher::search`] (record each answer with
    /// [`TenantMemory::record_search`]).
    pub fn searcher(&self, profile: Option<&str>) -> Result<Searcher, MemoryError> {
        self.memory.searcher(profile, &self.name)
    }

    /// Records the hits of a [`Searcher::search`] on `channel` as a
    /// retrieval batch, exactly as [`TenantMemory::search`] does.
    pub fn record_search(
        &self,
        channel: Channel,
        request: &SearchRequest,
        hits: Vec<SearchHit>,
    ) -> Result<SearchResponse, MemoryError> {
        self.memory.record_batch(
            &self.name,
            &format!("search {}", channel.name()),
            request,
            hits,
        )
    }

    /// The full card of one of the tenant's events with its source
    /// messages; recorded as a batch.
    pub fn expand_event(&self, id: &str) -> Result<ExpandedEvent, MemoryError> {
        self.memory.expand_event(&self.name, id)
    }

    /// A graph node (by the id of one of its assertions) with its edges;
    /// recorded as a batch.
    pub fn expand_node(
        &self,
        id: &str,
        options: &ExpandOptions,
    ) -> Result<ExpandedNode, MemoryError> {
        self.memory
            .expand_node(options.profile.as_deref(), &self.name, id, options.at)
    }

    /// Expands a ready block to a level (`next`, `raw`, `L0`…`L5`): records
    /// the expansion, so later decay starts from that level, and a batch.
    pub fn expand_block(
        &self,
        id: &str,
        target: ExpandTarget,
        options: &ExpandOptions,
    ) -> Result<BlockView, MemoryError> {
        self.memory
            .expand_block(options.profile.as_deref(), &self.name, id, target)
    }

    /// The tenant's ready blocks at their decayed levels, thread by thread.
    pub fn context(&self, options: &ContextOptions) -> Result<Vec<BlockView>, MemoryError> {
        self.memory.context(
            options.profile.as_deref(),
            &self.name,
            options.thread.as_deref(),
        )
    }

    /// Assesses one of the tenant's retrieval batches and records the
    /// assessment.
    pub fn assess(
        &self,
        batch: &str,
        input: &AssessmentInput,
    ) -> Result<AssessOutcome, MemoryError> {
        self.memory.assess(&self.name, batch, input)
    }

    /// Records refs of one of the tenant's batches as used: only refs its
    /// latest assessment adopted as sufficient. Closes the batch.
    pub fn use_refs(&self, batch: &str, refs: &[String]) -> Result<UseOutcome, MemoryError> {
        self.memory.use_refs(&self.name, batch, refs)
    }

    /// Appends a governance decision (forget, restore, pin, unpin) on one
    /// of the tenant's events; returns its record id.
    pub fn govern(
        &self,
        event: &str,
        action: GovernanceAction,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<RecordId, MemoryError> {
        self.memory.govern(&self.name, event, action, actor, reason)
    }

    /// Undoes one of the tenant's external memory imports (by id or unique
    /// prefix). Undoing twice is an error.
    pub fn undo_import(
        &self,
        import: &str,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<UndoReport, MemoryError> {
        self.memory.undo_import(&self.name, import, actor, reason)
    }

    /// The events a profile's extractor produced for the tenant, in thread
    /// and block order, each listed with its status, links and the external
    /// ids of its source messages.
    pub fn events(&self, query: &EventsQuery) -> Result<Vec<EventListing>, MemoryError> {
        self.memory.events(
            query.profile.as_deref(),
            &self.name,
            query.thread.as_deref(),
        )
    }

    /// The event records themselves, as the profile's extractor produced
    /// them (no status), with the external ids of the tenant's messages:
    /// what [`TenantMemory::events`] lists, unrendered.
    pub fn extracted_events(&self, query: &EventsQuery) -> Result<ProfileEvents, MemoryError> {
        self.memory.profile_events(
            query.profile.as_deref(),
            &self.name,
            query.thread.as_deref(),
        )
    }

    /// The status of each of the tenant's events (active, superseded,
    /// forgotten, removed; pins, links), refreshed to the end of the log.
    pub fn event_status(&self) -> Result<EventStatusView, MemoryError> {
        self.memory.event_status(&self.name)
    }

    /// The weights of the tenant's events, refreshed to the end of the log.
    pub fn weights(&self) -> Result<WeightsView, MemoryError> {
        self.memory.weights(&self.name)
    }

    /// The graph a profile's projector built for the tenant (`None`: the
    /// default profile), from every assertion of that projector, leaving
    /// out what only forgotten events support. Profiles sharing a
    /// projector share this graph.
    pub fn graph(&self, profile: Option<&str>) -> Result<GraphState, MemoryError> {
        self.memory.graph(profile, &self.name)
    }

    /// The graph of a profile's own derivations only: the assertions its
    /// projector made from its own extractor's events. This is what tells
    /// apart the graphs of profiles sharing a projector
    /// ([`TenantMemory::graph`] does not).
    pub fn graph_of_profile_derivations(
        &self,
        profile: Option<&str>,
    ) -> Result<GraphState, MemoryError> {
        self.memory.profile_graph(profile, &self.name)
    }

    /// The block summaries a profile's summarizer produced for the tenant:
    /// `(block, thread, summary)` in thread and block order.
    pub fn block_summaries(
        &self,
        profile: Option<&str>,
    ) -> Result<Vec<(RecordId, String, BlockSummary)>, MemoryError> {
        self.memory.profile_summaries(profile, &self.name)
    }

    /// What two profiles remember differently for the tenant: events,
    /// graphs of their own derivations, block summaries.
    pub fn diff(
        &self,
        a: &str,
        b: &str,
    ) -> Result<strataflow_interchange::diff::ProfileDiff, MemoryError> {
        self.memory.diff(a, b, &self.name)
    }

    /// Refreshes every persisted view of the tenant and reports their
    /// digests (with [`ViewsOptions::verify`], beside a rebuild's).
    pub fn views(&self, options: &ViewsOptions) -> Result<Vec<ViewReport>, MemoryError> {
        self.memory.tenants_views(
            options.profile.as_deref(),
            std::slice::from_ref(&self.name),
            options.verify,
        )
    }
}
