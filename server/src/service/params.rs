//! The arguments of each operation, as JSON objects: the bodies of the
//! HTTP routes and the arguments of the MCP tools are the same shapes.
//! Unknown fields are refused, so a misspelt argument is an error naming it.

use schemars::JsonSchema;
use serde::Deserialize;

/// Where to search.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ChannelName {
    /// Extracted events.
    Events,
    /// Graph nodes (entities and their facts).
    Graph,
    /// Raw messages.
    Raw,
    /// The three fused (reciprocal rank fusion).
    #[default]
    All,
    /// The profile's derived embeddings by cosine similarity (a profile
    /// with an embedder): messages, block summaries and events, answered
    /// as `label`, `vectors` and `hits`, not as a retrieval batch.
    Dense,
}

/// `search`: compact records first, recorded as a retrieval batch whose
/// refs can then be assessed, expanded and used.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// What to look for, in the user's words.
    pub query: String,
    /// `events`, `graph`, `raw`, `all` (default) or `dense`.
    #[serde(default)]
    pub channel: ChannelName,
    /// Only this thread.
    pub thread: Option<String>,
    /// Most hits, 1 to 1000.
    pub limit: Option<u64>,
    /// Events with every one of these participants.
    #[serde(default)]
    pub participants: Vec<String>,
    /// Event type (decision, release, plan, meeting, …).
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    /// Happened no earlier than (a date or RFC 3339).
    pub from: Option<String>,
    /// Happened no later than (a date or RFC 3339).
    pub to: Option<String>,
    /// `first` or `latest`: order structured matches by time.
    pub intent: Option<String>,
    /// Stop before the compact texts exceed this many words, 1 to 1000000.
    pub budget: Option<u64>,
    /// Profile whose derivations are searched (default: the directory's).
    pub profile: Option<String>,
    /// Wait until the views reflect this log sequence (read your writes).
    pub min_seq: Option<u64>,
}

/// `expand`: the full record behind a ref of a batch.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpandParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// The ref to expand: `event:<id>`, `node:<id>` or `block:<id>` (ids
    /// may be unique prefixes).
    #[serde(rename = "ref")]
    pub reference: String,
    /// For a node: only facts valid at this RFC 3339 time.
    pub at: Option<String>,
    /// For a block: the level to expand to (`next`, `raw`, `L0`…`L5`;
    /// default `next`).
    pub level: Option<String>,
    /// Profile (default: the directory's).
    pub profile: Option<String>,
    /// Wait until the views reflect this log sequence.
    pub min_seq: Option<u64>,
}

/// `context`: the tenant's ready blocks at their decayed levels.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// Only this thread.
    pub thread: Option<String>,
    /// Profile (default: the directory's).
    pub profile: Option<String>,
    /// Wait until the views reflect this log sequence.
    pub min_seq: Option<u64>,
}

/// `events`: the events extracted for the tenant, with their status.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// Only this thread.
    pub thread: Option<String>,
    /// Profile (default: the directory's).
    pub profile: Option<String>,
    /// Wait until the views reflect this log sequence.
    pub min_seq: Option<u64>,
}

/// `graph`: the tenant's entity graph.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// Only facts and edges valid at this RFC 3339 time.
    pub at: Option<String>,
    /// Profile (default: the directory's).
    pub profile: Option<String>,
    /// Wait until the views reflect this log sequence.
    pub min_seq: Option<u64>,
}

/// Reads naming only the tenant (`status`, `weights`, `stats`, `views`).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// Wait until the views reflect this log sequence.
    pub min_seq: Option<u64>,
}

/// `blocks`: one thread's blocks and open tail.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlocksParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// The thread.
    pub thread: String,
    /// Wait until the views reflect this log sequence.
    pub min_seq: Option<u64>,
}

/// `show`: one record by id or unique prefix.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// Record id or unique hex prefix (4 to 64 digits).
    pub id: String,
    /// Wait until the log reaches this sequence.
    pub min_seq: Option<u64>,
}

/// `assess`: the five-field evidence gate on a retrieval batch.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssessParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// The batch (the `batch` of a search or expand), id or prefix.
    pub batch: String,
    /// `sufficient`, `partial` or `wrong`.
    pub verdict: String,
    /// Refs of that batch that are evidence for the answer.
    #[serde(default)]
    pub evidence: Vec<String>,
    /// How the evidence fits the question.
    #[serde(default)]
    pub fit: String,
    /// What is still missing (empty when sufficient).
    #[serde(default)]
    pub missing: String,
    /// Next step: `answer`, `search_events`, `expand_event`, `search_graph`,
    /// `expand_graph_node`, `search_raw_memory`, `expand_block`…
    pub next: String,
}

/// `use`: the refs the answer used, from a sufficiently assessed batch.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UseParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// The batch, id or prefix.
    pub batch: String,
    /// Refs the answer used (each adopted by the batch's sufficient
    /// assessment).
    pub refs: Vec<String>,
}

/// `forget`, `restore`, `pin`, `unpin`: a governance decision on an event.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GovernParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// The event, id or prefix (`event:` may stand before it).
    pub event: String,
    /// Why (kept in the governance record).
    pub reason: Option<String>,
}
