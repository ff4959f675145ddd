//! `--server URL`: the read commands and the agent protocol sent to a
//! running `strataflow serve` instead of opening the data directory (which
//! the server holds). They print the server's JSON, one line.

use std::io::Write;

use serde_json::{Map, Value, json};

use super::args::{Command, ExpandCommand, GovernArgs, SearchArgs, SearchChannel};
use super::{EXIT_USAGE, Failure};

/// How long a request may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// A request to the server: method, path with query, JSON body.
type Request = (&'static str, String, Option<Value>);

/// The request a command makes, or `None` when it cannot run remotely.
fn request_of(command: &Command) -> Result<Option<Request>, Failure> {
    let usage = |message: &str| Failure {
        message: message.to_owned(),
        status: EXIT_USAGE,
    };
    let get = |path: &str, query: Map<String, Value>| -> Result<_, Failure> {
        let pairs: Vec<(String, String)> = query
            .into_iter()
            .filter_map(|(k, v)| match v {
                Value::Null => None,
                Value::String(s) => Some((k, s)),
                other => Some((k, other.to_string())),
            })
            .collect();
        let encoded = serde_urlencoded::to_string(pairs).map_err(|e| usage(&e.to_string()))?;
        let path = if encoded.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{encoded}")
        };
        Ok(Some(("GET", path, None)))
    };
    let post = |path: &str, body: Value| Ok(Some(("POST", path.to_owned(), Some(body))));
    match command {
        Command::Search(a) => post("/v1/search", search_body(a)?),
        Command::Expand(e) => {
            let body = match e {
                ExpandCommand::Event { id, tenant, .. } => {
                    json!({"tenant": tenant_of(tenant), "ref": format!("event:{id}")})
                }
                ExpandCommand::Node {
                    id,
                    at,
                    tenant,
                    profile,
                    ..
                } => {
                    json!({"tenant": tenant_of(tenant), "ref": format!("node:{id}"), "at": at, "profile": profile})
                }
                ExpandCommand::Block {
                    id,
                    tenant,
                    level,
                    profile,
                    ..
                } => {
                    json!({"tenant": tenant_of(tenant), "ref": format!("block:{id}"), "level": level, "profile": profile})
                }
            };
            post("/v1/expand", drop_nulls(body))
        }
        Command::Context {
            thread,
            tenant,
            profile,
            ..
        } => get(
            "/v1/context",
            object(json!({"tenant": tenant_of(tenant), "thread": thread, "profile": profile})),
        ),
        Command::Events {
            thread,
            tenant,
            profile,
            ..
        } => get(
            "/v1/events",
            object(json!({"tenant": tenant_of(tenant), "thread": thread, "profile": profile})),
        ),
        Command::Graph {
            tenant,
            at,
            profile,
            ..
        } => get(
            "/v1/graph",
            object(json!({"tenant": tenant_of(tenant), "at": at, "profile": profile})),
        ),
        Command::Blocks { thread, tenant, .. } => get(
            "/v1/blocks",
            object(json!({"tenant": tenant_of(tenant), "thread": thread})),
        ),
        Command::Show { id, tenant } => get(
            &format!("/v1/records/{}", encode_segment(id)),
            object(json!({"tenant": tenant_of(tenant)})),
        ),
        Command::Stats { .. } => get("/v1/stats", Map::new()),
        Command::Status { profile, .. } => {
            if profile.is_some() {
                return Err(usage(
                    "status --profile cannot run against --server (it reports the default profile)",
                ));
            }
            get("/v1/status", Map::new())
        }
        Command::Views { tenant, verify, .. } => {
            if *verify {
                return Err(usage(
                    "views --verify rebuilds every view: run it on the data directory, not against --server",
                ));
            }
            get("/v1/views", object(json!({"tenant": tenant})))
        }
        Command::Assess {
            batch,
            tenant,
            verdict,
            evidence,
            fit,
            missing,
            next,
            ..
        } => post(
            "/v1/assess",
            drop_nulls(json!({
                "tenant": tenant_of(tenant), "batch": batch, "verdict": verdict.name(),
                "evidence": evidence, "fit": fit, "missing": missing, "next": next,
            })),
        ),
        Command::Use {
            batch,
            tenant,
            refs,
            ..
        } => post(
            "/v1/use",
            drop_nulls(json!({"tenant": tenant_of(tenant), "batch": batch, "refs": refs})),
        ),
        Command::Forget(a) => post("/v1/forget", govern_body(a)),
        Command::Restore(a) => post("/v1/restore", govern_body(a)),
        Command::Pin(a) => post("/v1/pin", govern_body(a)),
        Command::Unpin(a) => post("/v1/unpin", govern_body(a)),
        _ => Ok(None),
    }
}

/// The tenant a command names: the CLI's default `""` leaves it to the key.
fn tenant_of(tenant: &str) -> Option<&str> {
    (!tenant.is_empty()).then_some(tenant)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn drop_nulls(value: Value) -> Value {
    Value::Object(
        object(value)
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .collect(),
    )
}

fn govern_body(a: &GovernArgs) -> Value {
    drop_nulls(json!({"tenant": tenant_of(&a.tenant), "event": a.event, "reason": a.reason}))
}

fn search_body(a: &SearchArgs) -> Result<Value, Failure> {
    if a.queries.is_some() {
        return Err(Failure {
            message: "search --queries cannot run against --server: send one query per request"
                .into(),
            status: EXIT_USAGE,
        });
    }
    let channel = match a.channel {
        SearchChannel::Events => "events",
        SearchChannel::Graph => "graph",
        SearchChannel::Raw => "raw",
        SearchChannel::All => "all",
        SearchChannel::Dense => "dense",
    };
    Ok(drop_nulls(json!({
        "tenant": tenant_of(&a.tenant),
        "query": a.query.clone().unwrap_or_default(),
        "channel": channel,
        "thread": a.thread,
        "limit": a.limit,
        "participants": a.participants,
        "type": a.event_type,
        "from": a.from,
        "to": a.to,
        "intent": a.intent,
        "budget": a.budget,
        "profile": a.profile,
    })))
}

/// Percent-encodes a path segment.
fn encode_segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Runs `command` against the server at `base`; `Ok(false)` when the
/// command cannot run remotely.
pub fn run(
    out: &mut dyn Write,
    base: &str,
    key: Option<&str>,
    command: &Command,
) -> Result<bool, Failure> {
    let Some((method, path, body)) = request_of(command)? else {
        return Ok(false);
    };
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let client = reqwest::blocking::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| Failure {
            message: format!("HTTP client: {e}"),
            status: 1,
        })?;
    let mut request = if method == "GET" {
        client.get(&url)
    } else {
        client.post(&url)
    };
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().map_err(|e| Failure {
        message: format!("cannot reach the server at {base}: {e}"),
        status: 1,
    })?;
    let status = response.status();
    let text = response.text().map_err(|e| Failure {
        message: format!("reading the answer of {url}: {e}"),
        status: 1,
    })?;
    if status.is_success() {
        writeln!(out, "{}", text.trim_end())?;
        return Ok(true);
    }
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            v.get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| text.trim().to_owned());
    Err(Failure {
        message: format!("server answered {}: {message}", status.as_u16()),
        status: if status.as_u16() == 400 {
            EXIT_USAGE
        } else {
            1
        },
    })
}
