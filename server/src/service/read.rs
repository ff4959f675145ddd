//! Reads: search, expand, context, events, graph, blocks, show, stats,
//! status, weights, views. (Search and expand also record a retrieval
//! batch, as the evidence gate needs.)

use strataflow::log::{SourceTime, Timestamp};
use strataflow::operators::decay::parse_expand_target;
use strataflow::{
    Channel, ContextOptions, EventsQuery, ExpandOptions, SearchOptions, SearchRequest, ViewsOptions,
};

use super::error::from_memory;
use super::params::{
    BlocksParams, ChannelName, ContextParams, EventsParams, ExpandParams, GraphParams,
    SearchParams, ShowParams, TenantParams,
};
use super::{Answer, Service};
use crate::http::auth::Caller;
use crate::http::error::ApiError;

impl Service {
    /// Runs a search and records it as a retrieval batch.
    pub async fn search(&self, caller: &Caller, p: SearchParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        if p.query.trim().is_empty() {
            return Err(ApiError::invalid("`query` must not be empty").at_field("query"));
        }
        if p.channel == ChannelName::Dense {
            return self.dense_search(tenant, p).await;
        }
        let request = SearchRequest {
            query: p.query,
            thread: p.thread,
            limit: in_range("limit", p.limit, strataflow::limits::SEARCH_LIMIT)?,
            participants: p.participants,
            event_type: p.event_type,
            from: p.from,
            to: p.to,
            intent: p.intent,
            budget: in_range("budget", p.budget, strataflow::limits::SEARCH_BUDGET)?,
        };
        let options = SearchOptions {
            profile: p.profile,
            channel: match p.channel {
                ChannelName::Events => Channel::Events,
                ChannelName::Graph => Channel::Graph,
                ChannelName::Raw => Channel::Raw,
                ChannelName::All | ChannelName::Dense => Channel::All,
            },
        };
        let searchers = std::sync::Arc::clone(&self.searchers);
        self.read(p.min_seq, move |m| {
            let hits = searchers
                .with(m, &tenant, options.profile.as_deref(), |s| {
                    s.search(options.channel, &request)
                })
                .map_err(from_memory)?;
            m.tenant(&tenant)
                .record_search(options.channel, &request, hits)
                .map_err(from_memory)
        })
        .await
    }

    /// `search` with channel `dense`: the tenant's derived embeddings of
    /// the profile's embedder most like the query (of one thread when
    /// given), the body of `search dense --json`. The event filters do
    /// not apply and are refused.
    async fn dense_search(&self, tenant: String, p: SearchParams) -> Result<Answer, ApiError> {
        let filters = [
            ("participants", !p.participants.is_empty()),
            ("type", p.event_type.is_some()),
            ("from", p.from.is_some()),
            ("to", p.to.is_some()),
            ("intent", p.intent.is_some()),
            ("budget", p.budget.is_some()),
        ];
        if let Some((field, _)) = filters.iter().find(|(_, given)| *given) {
            return Err(ApiError::invalid(format!(
                "`{field}` does not apply to channel `dense` (only `thread` and `limit` do)"
            ))
            .at_field(*field));
        }
        let limit = in_range("limit", p.limit, strataflow::limits::SEARCH_LIMIT)?;
        let SearchParams {
            query,
            thread,
            profile,
            ..
        } = p;
        self.read(p.min_seq, move |m| {
            m.dense_search_in(
                profile.as_deref(),
                &tenant,
                &query,
                limit,
                thread.as_deref(),
            )
            .map_err(from_memory)
        })
        .await
    }

    /// Expands a ref: an event's card, a graph node, or a block to a level.
    pub async fn expand(&self, caller: &Caller, p: ExpandParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let at = p.at.as_deref().map(|t| parse_time("at", t)).transpose()?;
        let reference = p.reference.trim().to_owned();
        let Some((kind, id)) = reference.split_once(':') else {
            return Err(ApiError::invalid(format!(
                "`ref` `{}` names no kind: give event:<id>, node:<id> or block:<id>",
                cut(&reference)
            ))
            .at_field("ref"));
        };
        let (kind, id) = (kind.to_owned(), id.to_owned());
        if kind == "block" {
            // It records the expansion, which later decay starts from.
            self.local_write("a block expansion")?;
        }
        let target = match (kind.as_str(), p.level.as_deref()) {
            ("block", Some(level)) => Some(parse_expand_target(level).ok_or_else(|| {
                ApiError::invalid(format!(
                    "`level` `{}`: expected L0…L5, next or raw",
                    cut(level)
                ))
                .at_field("level")
            })?),
            ("block", None) => parse_expand_target("next"),
            (_, Some(_)) => {
                return Err(
                    ApiError::invalid("`level` applies to block refs only").at_field("level")
                );
            }
            _ => None,
        };
        let options = ExpandOptions {
            profile: p.profile,
            at,
        };
        self.read(p.min_seq, move |m| {
            let t = m.tenant(&tenant);
            let value = match (kind.as_str(), target) {
                ("event", _) => serde_json::to_value(t.expand_event(&id).map_err(from_memory)?),
                ("node", _) => {
                    serde_json::to_value(t.expand_node(&id, &options).map_err(from_memory)?)
                }
                ("block", Some(target)) => serde_json::to_value(
                    t.expand_block(&id, target, &options).map_err(from_memory)?,
                ),
                ("msg", _) => {
                    return Err(ApiError::invalid(
                        "a msg ref is a raw message already: `show` it, or expand its block",
                    )
                    .at_field("ref"));
                }
                (other, _) => {
                    return Err(ApiError::invalid(format!(
                        "`ref` kind `{}`: expected event, node or block",
                        cut(other)
                    ))
                    .at_field("ref"));
                }
            };
            value.map_err(|e| ApiError::internal(e.to_string()))
        })
        .await
    }

    /// The tenant's ready blocks at their decayed levels.
    pub async fn context(&self, caller: &Caller, p: ContextParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let options = ContextOptions {
            profile: p.profile,
            thread: p.thread,
        };
        self.read(p.min_seq, move |m| {
            m.tenant(&tenant).context(&options).map_err(from_memory)
        })
        .await
    }

    /// The events extracted for the tenant, with their status.
    pub async fn events(&self, caller: &Caller, p: EventsParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let query = EventsQuery {
            profile: p.profile,
            thread: p.thread,
        };
        self.read(p.min_seq, move |m| {
            m.tenant(&tenant).events(&query).map_err(from_memory)
        })
        .await
    }

    /// The tenant's graph (only what is valid at `at`, if given).
    pub async fn graph(&self, caller: &Caller, p: GraphParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let at = p.at.as_deref().map(|t| parse_time("at", t)).transpose()?;
        let profile = p.profile;
        self.read(p.min_seq, move |m| {
            let graph = m
                .tenant(&tenant)
                .graph(profile.as_deref())
                .map_err(from_memory)?;
            Ok(match at {
                Some(at) => graph.at(at),
                None => graph,
            })
        })
        .await
    }

    /// One thread's blocks and open tail.
    pub async fn blocks(&self, caller: &Caller, p: BlocksParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let thread = p.thread;
        self.read(p.min_seq, move |m| {
            m.tenant(&tenant).blocks(&thread).map_err(from_memory)
        })
        .await
    }

    /// One of the tenant's records.
    pub async fn show(&self, caller: &Caller, p: ShowParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let id = p.id;
        self.read(p.min_seq, move |m| {
            m.tenant(&tenant).show(&id).map_err(from_memory)
        })
        .await
    }

    /// What the directory holds: every tenant for an admin key asking for
    /// no tenant, else the tenant's own counts.
    pub async fn stats(&self, caller: &Caller, p: TenantParams) -> Result<Answer, ApiError> {
        let whole = caller.scope == crate::keys::Scope::Admin && p.tenant.is_none();
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        self.read(p.min_seq, move |m| {
            if whole {
                serde_json::to_value(m.stats().map_err(from_memory)?)
            } else {
                serde_json::to_value(m.tenant(&tenant).stats().map_err(from_memory)?)
            }
            .map_err(|e| ApiError::internal(e.to_string()))
        })
        .await
    }

    /// The tenant's counts and the log sequence, and for an admin key the
    /// derivation status of the default profile.
    pub async fn status(&self, caller: &Caller, p: TenantParams) -> Result<Answer, ApiError> {
        let admin = caller.scope == crate::keys::Scope::Admin;
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let queued = self.ingester.queued();
        self.read(p.min_seq, move |m| {
            let stats = m.tenant(&tenant).stats().map_err(from_memory)?;
            let derivation = if admin {
                Some(m.status(None).map_err(from_memory)?)
            } else {
                None
            };
            Ok(serde_json::json!({
                "tenant": tenant,
                "seq": stats.last_seq,
                "ingest_queue_depth": queued,
                "stats": stats,
                "derivation": derivation,
            }))
        })
        .await
    }

    /// The weights of the tenant's events, one entry per event.
    pub async fn weights(&self, caller: &Caller, p: TenantParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        self.read(p.min_seq, move |m| {
            m.tenant(&tenant).weights().map_err(from_memory)
        })
        .await
    }

    /// The tenant's persisted views and their digests.
    pub async fn views(&self, caller: &Caller, p: TenantParams) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        self.read(p.min_seq, move |m| {
            m.tenant(&tenant)
                .views(&ViewsOptions::default())
                .map_err(from_memory)
        })
        .await
    }
}

/// A number argument inside its range.
fn in_range(
    field: &'static str,
    value: Option<u64>,
    (min, max): (u64, u64),
) -> Result<Option<usize>, ApiError> {
    match value {
        None => Ok(None),
        Some(n) if (min..=max).contains(&n) => Ok(usize::try_from(n).ok()),
        Some(n) => Err(ApiError::invalid(format!(
            "`{field}` {n} is out of range: expected {min} to {max}"
        ))
        .at_field(field)
        .with_value(&n.to_string())),
    }
}

/// An RFC 3339 time argument.
fn parse_time(field: &'static str, text: &str) -> Result<Timestamp, ApiError> {
    SourceTime::parse_rfc3339(text)
        .map(SourceTime::instant)
        .ok_or_else(|| {
            ApiError::invalid(format!(
                "`{field}` `{}` is not an RFC 3339 time (e.g. 2023-06-01T00:00:00Z)",
                cut(text)
            ))
            .at_field(field)
            .with_value(text)
        })
}

/// A value as quoted in a message: its first 72 characters.
pub(super) fn cut(text: &str) -> String {
    text.chars().take(72).collect()
}
