//! Writes: appending messages (one request, all or nothing) and ingesting
//! a JSONL or LoCoMo body, both through the server's one streaming
//! ingester, so blocks seal and derive in the log order of the input.

use serde::Serialize;
use serde_json::Value;
use strataflow::pipeline::source::jsonl::parse_line;
use strataflow::pipeline::source::{InputError, MessageInput, SourceItem, locomo};
use strataflow::pipeline::stream::StreamError;

use super::Service;
use super::read::cut;
use crate::http::auth::Caller;
use crate::http::error::ApiError;

/// One message made durable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoredMessage {
    /// Its record id.
    pub id: String,
    /// False when the same message was stored before (nothing written).
    pub new: bool,
}

/// The answer of an append: each message's record id, in request order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Remembered {
    /// Per message, in request order.
    pub messages: Vec<StoredMessage>,
    /// A log sequence at or after every message of the request: read with
    /// `min_seq` set to it to see them (unless `pending`).
    pub seq: u64,
    /// On a clustered node: the shared stream that stored the messages
    /// (with its replicas) before this answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// On a clustered node: true when its consumer had not stored every
    /// message here within the append time-out; they are safe in the
    /// stream, and `seq` does not cover them yet.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
}

/// A rejected line of an ingest body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RejectedItem {
    /// 1-based line (JSONL), or 0 for a LoCoMo item.
    pub line: usize,
    /// The field at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
}

/// The summary of an ingest call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IngestSummary {
    /// Messages read.
    pub read: usize,
    /// Messages newly stored.
    pub stored: usize,
    /// Messages already stored with the same content.
    pub already_stored: usize,
    /// Items skipped (with `skip_invalid`).
    pub rejected: Vec<RejectedItem>,
    /// A log sequence at or after every stored message (unless
    /// `pending`).
    pub seq: u64,
    /// On a clustered node: the messages are in the shared stream but its
    /// consumer had not stored them all here within the append time-out.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
}

impl Service {
    /// Appends messages, all or nothing: an invalid message, or one whose
    /// id is stored with other content, refuses the request (naming its
    /// index and field) and stores nothing.
    pub async fn remember(
        &self,
        caller: &Caller,
        tenant: Option<&str>,
        items: Vec<Value>,
    ) -> Result<Remembered, ApiError> {
        if items.is_empty() {
            return Err(ApiError::invalid(
                "no message: send one object or a non-empty array",
            ));
        }
        let tenant = self.tenant_of(caller, tenant)?;
        let mut inputs = Vec::with_capacity(items.len());
        for (index, mut item) in items.into_iter().enumerate() {
            let Some(object) = item.as_object_mut() else {
                return Err(
                    ApiError::invalid(format!("message {index} is not a JSON object"))
                        .at_index(index),
                );
            };
            match object.get("tenant") {
                None => {
                    object.insert("tenant".into(), Value::String(tenant.clone()));
                }
                Some(Value::String(named)) if named == &tenant => {}
                Some(Value::String(named)) => {
                    // A key may not write another tenant, and a message may
                    // not contradict the tenant the request names.
                    caller.tenant(Some(named)).map_err(|e| e.at_index(index))?;
                    return Err(ApiError::invalid(format!(
                        "message {index}: `tenant` `{}` differs from the request's tenant `{}`",
                        cut(named),
                        cut(&tenant)
                    ))
                    .at_index(index)
                    .at_field("tenant"));
                }
                Some(_) => {
                    return Err(ApiError::invalid(format!(
                        "message {index}: `tenant` must be a string"
                    ))
                    .at_index(index)
                    .at_field("tenant"));
                }
            }
            let text = item.to_string();
            let input =
                parse_line("request", index + 1, &text).map_err(|e| input_error(index, &e))?;
            inputs.push(input);
        }
        self.append_all(inputs).await
    }

    /// Ingests a JSONL (`format = "jsonl"`) or LoCoMo (`"locomo"`) body
    /// into the tenant: invalid items refuse it whole, storing nothing,
    /// unless `skip_invalid`, which stores the rest and lists them.
    pub async fn ingest(
        &self,
        caller: &Caller,
        tenant: Option<&str>,
        format: &str,
        skip_invalid: bool,
        thread: Option<&str>,
        body: &str,
    ) -> Result<IngestSummary, ApiError> {
        let tenant = self.tenant_of(caller, tenant)?;
        if thread.is_some() && format != "locomo" {
            return Err(ApiError::invalid(
                "`thread` applies to format=locomo only (a JSONL line names its thread)",
            )
            .at_field("thread"));
        }
        let mut inputs = Vec::new();
        // The 1-based line of each input (0 for a LoCoMo item).
        let mut lines: Vec<usize> = Vec::new();
        let mut rejected = Vec::new();
        let mut reject = |line: usize, e: &InputError| -> Result<(), ApiError> {
            if !skip_invalid {
                let mut refusal = ApiError::invalid(format!("line {line}: {}", one_line(e)));
                if let Some(field) = &e.field {
                    refusal = refusal.at_field(field.clone());
                }
                return Err(refusal);
            }
            rejected.push(RejectedItem {
                line,
                field: e.field.clone(),
                problem: e.problem.clone(),
            });
            Ok(())
        };
        match format {
            "jsonl" => {
                for (i, line) in body.lines().enumerate() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    match parse_line("request", i + 1, line) {
                        Ok(input) if input.tenant.is_empty() || input.tenant == tenant => {
                            let mut input = input;
                            input.tenant.clone_from(&tenant);
                            inputs.push(input);
                            lines.push(i + 1);
                        }
                        Ok(input) => {
                            caller.tenant(Some(&input.tenant))?;
                            let at = strataflow::pipeline::source::Location {
                                file: "request".into(),
                                line: Some(i + 1),
                                path: None,
                            };
                            reject(
                                i + 1,
                                &InputError::field(
                                    &at,
                                    "tenant",
                                    "differs from the request's tenant",
                                ),
                            )?;
                        }
                        Err(e) => reject(i + 1, &e)?,
                    }
                }
            }
            "locomo" => {
                let items: Vec<SourceItem> =
                    locomo::parse("request", thread.unwrap_or("request"), body, &tenant)
                        .map_err(|e| ApiError::invalid(e.to_string()))?;
                for item in items {
                    match item {
                        Ok(input) => {
                            inputs.push(input);
                            lines.push(0);
                        }
                        Err(r) => reject(0, &r.error)?,
                    }
                }
            }
            other => {
                return Err(ApiError::invalid(format!(
                    "`format` `{}`: expected jsonl or locomo",
                    cut(other)
                ))
                .at_field("format"));
            }
        }
        let read = inputs.len() + rejected.len();
        // One batch, so the body is stored all or nothing, as `ingest`
        // stores a file (the body is bounded by the server's body limit).
        if inputs.is_empty() {
            return Ok(IngestSummary {
                read,
                stored: 0,
                already_stored: 0,
                rejected,
                seq: self.last_seq()?,
                pending: false,
            });
        }
        let answer = self.append_all(inputs).await.map_err(|e| {
            // Name the refused message's line of the body.
            let Some(index) = e.at.as_ref().and_then(|p| p.index) else {
                return e;
            };
            let cause = e
                .message
                .strip_prefix(&format!("message {index}: "))
                .unwrap_or(&e.message)
                .to_owned();
            let message = match lines.get(index) {
                Some(&line) if line > 0 => format!("line {line}: {cause}"),
                _ => format!("message {index}: {cause}"),
            };
            ApiError { message, ..e }.at_index(index)
        })?;
        let stored = answer.messages.iter().filter(|m| m.new).count();
        let already_stored = answer.messages.len() - stored;
        Ok(IngestSummary {
            read,
            stored,
            already_stored,
            rejected,
            seq: answer.seq,
            pending: answer.pending,
        })
    }

    /// Appends `inputs` as one all-or-nothing group, bounded by the append
    /// time-out (503 with `Retry-After` past it: a retry of the same
    /// messages is safe, the same content is acknowledged again).
    async fn append_all(&self, inputs: Vec<MessageInput>) -> Result<Remembered, ApiError> {
        if let Some(node) = &self.node {
            return self.publish_all(node, inputs).await;
        }
        let appended = tokio::time::timeout(
            self.options.append_timeout,
            self.ingester.append_batch(inputs),
        )
        .await
        .map_err(|_| {
            ApiError::unavailable(
                format!(
                    "the ingest queue did not take the messages within {} s; retry (appending the same messages again is safe)",
                    self.options.append_timeout.as_secs()
                ),
                1,
            )
        })?;
        let acks = appended.map_err(stream_error)?;
        let seq = self.last_seq()?;
        Ok(Remembered {
            messages: acks
                .into_iter()
                .map(|a| StoredMessage {
                    id: a.id.to_string(),
                    new: a.new,
                })
                .collect(),
            seq,
            stream: None,
            pending: false,
        })
    }

    /// [`Self::append_all`] on a clustered node: publishes to the shared
    /// stream (all or nothing), then waits, up to the append time-out, for
    /// this node's consumer to store them (the node owns their tenant, so
    /// it is the one that stores them), so that `seq` covers them as on a
    /// single node; past the wait they are in the stream but not yet here
    /// (`pending`).
    async fn publish_all(
        &self,
        node: &super::node::ClusterNode,
        inputs: Vec<MessageInput>,
    ) -> Result<Remembered, ApiError> {
        let tenants: Vec<String> = inputs.iter().map(|i| i.tenant.clone()).collect();
        let publisher = node.clone();
        let published = tokio::task::spawn_blocking(move || publisher.publish(inputs))
            .await
            .map_err(|e| ApiError::internal(format!("the publish task failed: {e}")))??;
        let deadline = tokio::time::Instant::now() + self.options.append_timeout;
        let mut waiting: Vec<(String, String)> = tenants
            .into_iter()
            .zip(&published)
            .map(|(tenant, p)| (tenant, p.id.to_string()))
            .collect();
        loop {
            let memory = self.memory();
            let left = tokio::task::spawn_blocking(move || {
                waiting.retain(|(tenant, id)| memory.tenant(tenant).show(id).is_err());
                waiting
            })
            .await
            .map_err(|e| ApiError::internal(format!("the wait for the consumer failed: {e}")))?;
            waiting = left;
            if waiting.is_empty() || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(CONSUMER_POLL).await;
        }
        Ok(Remembered {
            messages: published
                .into_iter()
                .map(|p| StoredMessage {
                    id: p.id.to_string(),
                    new: p.new,
                })
                .collect(),
            seq: self.last_seq()?,
            stream: Some(node.stream().to_owned()),
            pending: !waiting.is_empty(),
        })
    }
}

/// How often a clustered node's write looks whether its consumer has
/// stored the request's messages.
const CONSUMER_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// An invalid message of a request.
fn input_error(index: usize, e: &InputError) -> ApiError {
    let mut refusal =
        ApiError::invalid(format!("message {index}: {}", one_line(e))).at_index(index);
    if let Some(field) = &e.field {
        refusal = refusal.at_field(field.clone());
    }
    refusal
}

/// An input error without its location (the request names it otherwise).
fn one_line(e: &InputError) -> String {
    match &e.field {
        Some(field) => format!("`{field}` {}", e.problem),
        None => e.problem.clone(),
    }
}

/// A refusal of the ingester.
fn stream_error(e: StreamError) -> ApiError {
    match e {
        // A refused message of a batch: the cause, naming its index.
        StreamError::InBatch { index, source } => {
            let cause = stream_error(*source).at_index(index);
            ApiError {
                message: format!("message {index}: {}", cause.message),
                ..cause
            }
        }
        StreamError::Conflict { .. } | StreamError::Twice { .. } => {
            ApiError::new(axum::http::StatusCode::CONFLICT, "conflict", e.to_string())
        }
        StreamError::Closed => ApiError::unavailable("the server is stopping", 1),
        other => ApiError::internal(other.to_string()),
    }
}
