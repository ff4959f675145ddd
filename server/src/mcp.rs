//! The MCP tools: the service's operations for agents, on stdio
//! (`strataflow mcp`) and on streamable HTTP at `/mcp` of `serve`.
//!
//! The tool descriptions teach the evidence-gate protocol: search compact
//! records first; assess the batch (verdict, evidence refs, fit, missing,
//! next strategy); expand or search again when partial; answer; then `use`
//! only the refs the answer used.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use strataflow::log::record::GovernanceAction;

use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::service::keyed::{
    ForgetMemoryParams, PurgeMemoryParams, RecallMemoryParams, RememberMemoryParams,
};
use crate::service::params::{
    AssessParams, ContextParams, EventsParams, ExpandParams, GovernParams, GraphParams,
    SearchParams, TenantParams, UseParams,
};
use crate::service::{Answer, Service};

/// What the server tells an agent at initialisation.
const INSTRUCTIONS: &str = "strataflow is long-term memory with an evidence gate. To answer from memory: \
1. `search` compact records first (events, graph nodes, raw messages); every search is a retrieval batch. \
2. `assess` that batch: verdict (sufficient, partial, wrong), the refs of the batch that are evidence, how they fit, what is missing, and the next strategy. \
3. When partial, `expand` a ref (event:, node:, block:) or search again, and assess the new batch. \
4. Answer. 5. `use` only the refs your answer used, from a batch assessed as sufficient: that reinforces those memories. \
`remember` appends messages; `forget` hides an event; `events`, `graph`, `context` and `status` read the rest. \
Keyed memories (a text under a namespace and id, recalled by similarity) are `memory_remember`, `memory_recall`, `memory_forget` and `memory_purge`.";

/// Arguments of `remember`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// Messages in the JSONL message format: each with `thread`, `id`,
    /// `role` (user, assistant, system, tool), `content`, `ts` (RFC 3339),
    /// and optionally `speaker`.
    pub messages: Vec<serde_json::Value>,
}

/// Tool arguments parsed so that an error names the argument at fault
/// (`limit: invalid type…`), with the schema of `T`.
#[derive(Clone, Debug)]
pub struct Checked<T>(pub T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Checked<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        serde_path_to_error::deserialize(value)
            .map(Checked)
            .map_err(|e| {
                let path = e.path().to_string();
                serde::de::Error::custom(format!("`{path}`: {}", e.into_inner()))
            })
    }
}

impl<T: JsonSchema> JsonSchema for Checked<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

/// The MCP server of one data directory.
#[derive(Clone)]
pub struct MemoryTools {
    service: Arc<Service>,
    /// The caller of stdio sessions (over HTTP, the request's key decides).
    local: Caller,
}

impl MemoryTools {
    /// Tools over `service`; `local` is the caller when a request carries
    /// none (stdio).
    pub fn new(service: Arc<Service>, local: Caller) -> Self {
        Self { service, local }
    }

    /// The caller of a request: the one the HTTP layer authenticated, or
    /// the local one.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Caller {
        ctx.extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .unwrap_or_else(|| self.local.clone())
    }
}

/// An answer as a tool result: its JSON as one text block.
fn result(answer: Result<Answer, ApiError>) -> Result<CallToolResult, McpError> {
    let answer = answer.map_err(mcp_error)?;
    Ok(CallToolResult::success(vec![ContentBlock::text(
        answer.body.to_string(),
    )]))
}

/// A refusal as an MCP error: a bad argument is `invalid_params` whose
/// message names it; what does not exist is `resource_not_found`.
fn mcp_error(e: ApiError) -> McpError {
    let data = serde_json::to_value(&e).ok();
    match e.status.as_u16() {
        400 | 403 | 409 | 413 => McpError::invalid_params(e.message, data),
        404 => McpError::resource_not_found(e.message, data),
        _ => McpError::internal_error(e.message, data),
    }
}

#[tool_router]
impl MemoryTools {
    #[tool(
        description = "Append messages to memory (durable when this returns; blocks seal and derive in the background). All or nothing: an invalid message or an id already stored with other content refuses the call, naming its index. Answers each message's record id and `seq` (pass it as `min_seq` to read your writes)."
    )]
    async fn remember(
        &self,
        Parameters(Checked(p)): Parameters<Checked<RememberParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let caller = self.caller(&ctx);
        let done = self
            .service
            .remember(&caller, p.tenant.as_deref(), p.messages)
            .await
            .map_err(mcp_error)?;
        let body = serde_json::to_string(&done)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(body)]))
    }

    #[tool(
        description = "Step 1 of answering from memory: search compact records (channel events, graph, raw or all). The answer is a retrieval batch: `batch` and `hits`, each with a `ref` (event:…, node:…, msg:…), its compact text and source message ids. Next, assess that batch. Channel dense (a profile with an embedder) ranks messages, block summaries and events by cosine similarity instead: its answer is `label`, `vectors` and `hits` (id, kind, text, similarity), not a batch."
    )]
    async fn search(
        &self,
        Parameters(Checked(p)): Parameters<Checked<SearchParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.search(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "Step 2: assess a retrieval batch with the five-field evidence gate: verdict (sufficient, partial, wrong), evidence (refs of THAT batch), fit, missing, next (answer, search_events, expand_event, search_graph, expand_graph_node, search_raw_memory, expand_block…). Refs not in the batch are rejected and listed."
    )]
    async fn assess(
        &self,
        Parameters(Checked(p)): Parameters<Checked<AssessParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.assess(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "Step 3 when an assessment is partial: expand a ref to the full record behind it: event:<id> (the event's card with quotes and its source messages), node:<id> (a graph node with facts and edges, `at` a time), block:<id> (a block at a `level`: next, raw, L0…L5). The expansion is a new batch to assess."
    )]
    async fn expand(
        &self,
        Parameters(Checked(p)): Parameters<Checked<ExpandParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.expand(&self.caller(&ctx), p).await)
    }

    #[tool(
        name = "use",
        description = "Last step, after answering: record the refs the answer used, from a batch assessed as sufficient (only refs that assessment adopted). This reinforces exactly those events' weights. Use each batch once."
    )]
    async fn r#use(
        &self,
        Parameters(Checked(p)): Parameters<Checked<UseParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.use_refs(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "The tenant's recent memory as context: its ready blocks at their decayed levels (recent detail, older summaries), thread by thread."
    )]
    async fn context(
        &self,
        Parameters(Checked(p)): Parameters<Checked<ContextParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.context(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "List the events extracted for the tenant (optionally one thread), with status (active, superseded, forgotten), time and source messages."
    )]
    async fn events(
        &self,
        Parameters(Checked(p)): Parameters<Checked<EventsParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.events(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "The tenant's entity graph: nodes (people, places, things) with facts and edges; `at` keeps only what was valid at that RFC 3339 time."
    )]
    async fn graph(
        &self,
        Parameters(Checked(p)): Parameters<Checked<GraphParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.graph(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "Forget an event: it leaves search and the graph (reversible with restore; the source messages stay in the log)."
    )]
    async fn forget(
        &self,
        Parameters(Checked(p)): Parameters<Checked<GovernParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(
            self.service
                .govern(&self.caller(&ctx), GovernanceAction::Forget, p)
                .await,
        )
    }

    #[tool(description = "Undo a forget: the event is active again.")]
    async fn restore(
        &self,
        Parameters(Checked(p)): Parameters<Checked<GovernParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(
            self.service
                .govern(&self.caller(&ctx), GovernanceAction::Restore, p)
                .await,
        )
    }

    #[tool(
        description = "The tenant's counts (threads, messages, blocks), the log sequence and the ingest queue depth."
    )]
    async fn status(
        &self,
        Parameters(Checked(p)): Parameters<Checked<TenantParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.status(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "Keyed memory: remember a text under (namespace, id) for the tenant, with JSON `content` and string `metadata`. Remembering an existing id replaces it but keeps its created_at. Recall it by similarity with memory_recall."
    )]
    async fn memory_remember(
        &self,
        Parameters(Checked(p)): Parameters<Checked<RememberMemoryParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(
            self.service
                .remember_memory(&self.caller(&ctx), None, p)
                .await,
        )
    }

    #[tool(
        description = "Keyed memory: the entries of a namespace most similar to `text` (cosine similarity, most similar first, equal similarities by id), at most `limit` (default 10); `min_similarity`, `exclude` ids and `metadata` pairs filter before the ranking."
    )]
    async fn memory_recall(
        &self,
        Parameters(Checked(p)): Parameters<Checked<RecallMemoryParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(
            self.service
                .recall_memory(&self.caller(&ctx), None, p)
                .await,
        )
    }

    #[tool(description = "Keyed memory: forget the entry (namespace, id).")]
    async fn memory_forget(
        &self,
        Parameters(Checked(p)): Parameters<Checked<ForgetMemoryParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(
            self.service
                .forget_memory(&self.caller(&ctx), None, p)
                .await,
        )
    }

    #[tool(
        description = "Keyed memory: remove the entries last written before `older_than` (a duration such as 30d, or an RFC 3339 time), oldest first, at most `limit` (default 1000); answers how many. Call again while it returns the limit."
    )]
    async fn memory_purge(
        &self,
        Parameters(Checked(p)): Parameters<Checked<PurgeMemoryParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.purge_memories(&self.caller(&ctx), p).await)
    }

    #[tool(
        description = "The weight of each of the tenant's events (how often answers used it, and when last), as `use` reinforces them."
    )]
    async fn weights(
        &self,
        Parameters(Checked(p)): Parameters<Checked<TenantParams>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        result(self.service.weights(&self.caller(&ctx), p).await)
    }
}

#[tool_handler]
impl ServerHandler for MemoryTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("strataflow", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
