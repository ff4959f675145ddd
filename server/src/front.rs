//! The cluster's front (`serve --cluster FILE`, docs/guides/cluster.md):
//! it holds no data; each request of the JSON API goes to the node that
//! owns the partition of its tenant, and that node's answer comes back
//! as it is. The tenant is the unit of placement, so every view of a
//! tenant is complete on its node and nothing is merged across nodes.
//!
//! A request's tenant is the one it names (`tenant` in its query, or in
//! its JSON body) or its key's; the front checks the key as a node does
//! (same key file), so a request never reaches a node for a tenant its key
//! may not read. MCP sessions are not forwarded: an MCP client connects to
//! the node of its tenant.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use strataflow_cluster::subject::partition_of;

use crate::http::auth::Keys;
use crate::http::error::ApiError;
use crate::options::{ServeError, ServeOptions};

/// Header of every forwarded answer: the node that gave it.
pub const NODE_HEADER: &str = "strataflow-node";

/// The headers a request keeps on its way to a node, and an answer on its
/// way back.
const FORWARDED: [HeaderName; 3] = [header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT];
const ANSWERED: [&str; 3] = [
    "content-type",
    crate::http::routes::SEQ_HEADER,
    "retry-after",
];

/// Which node owns which partitions (the file of `serve --cluster`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterMap {
    /// The stream's partition count.
    pub partitions: u32,
    /// The node of each partition (every partition has exactly one).
    owners: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MapFile {
    partitions: u32,
    nodes: Vec<NodeEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeEntry {
    url: String,
    partitions: Vec<u32>,
}

/// A cluster map that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// The file cannot be read.
    #[error("cannot read the cluster map {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a map (JSON with `partitions` and `nodes`).
    #[error("cluster map {path}: {detail}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        detail: String,
    },
}

impl ClusterMap {
    /// Reads and checks a map file: `{"partitions": P, "nodes": [{"url":
    /// "http://…", "partitions": [0, 3]}, …]}`, every partition below P
    /// owned by exactly one node.
    pub fn load(path: &Path) -> Result<Self, MapError> {
        let text = std::fs::read_to_string(path).map_err(|source| MapError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|detail| MapError::Invalid {
            path: path.to_path_buf(),
            detail,
        })
    }

    /// Checks a map's text; the error names the field at fault.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: MapFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.partitions == 0 {
            return Err("`partitions` must be at least 1".into());
        }
        let mut owners: BTreeMap<u32, (usize, String)> = BTreeMap::new();
        for (i, node) in file.nodes.iter().enumerate() {
            let url = node.url.trim_end_matches('/');
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "`nodes[{i}].url` `{url}`: expected http://host:port or https://…"
                ));
            }
            if node.partitions.is_empty() {
                return Err(format!("`nodes[{i}].partitions` is empty"));
            }
            for (j, &p) in node.partitions.iter().enumerate() {
                if p >= file.partitions {
                    return Err(format!(
                        "`nodes[{i}].partitions[{j}]` = {p}: the stream has partitions 0..{}",
                        file.partitions - 1
                    ));
                }
                if let Some((other, _)) = owners.insert(p, (i, url.to_owned())) {
                    return Err(format!(
                        "partition {p} is owned by nodes[{other}] and nodes[{i}]: each partition has one node"
                    ));
                }
            }
        }
        let missing: Vec<u32> = (0..file.partitions)
            .filter(|p| !owners.contains_key(p))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "partitions {missing:?} have no node: each of 0..{} needs one",
                file.partitions - 1
            ));
        }
        Ok(Self {
            partitions: file.partitions,
            owners: owners.into_values().map(|(_, url)| url).collect(),
        })
    }

    /// The partition of `tenant` and the URL of its node.
    pub fn owner(&self, tenant: &str) -> (u32, &str) {
        let partition = partition_of(tenant, self.partitions);
        let url = usize::try_from(partition)
            .ok()
            .and_then(|p| self.owners.get(p))
            .map_or("", String::as_str);
        (partition, url)
    }

    /// Every node's URL, once each.
    pub fn nodes(&self) -> Vec<&str> {
        let mut urls: Vec<&str> = self.owners.iter().map(String::as_str).collect();
        urls.sort_unstable();
        urls.dedup();
        urls
    }
}

#[derive(Clone)]
struct Front {
    map: Arc<ClusterMap>,
    keys: Arc<Keys>,
    client: reqwest::Client,
    max_body_bytes: usize,
}

/// Serves the front until SIGTERM or SIGINT; `announce` is called with the
/// bound address once requests are accepted.
pub fn run_front(
    map: ClusterMap,
    options: &ServeOptions,
    announce: impl FnOnce(SocketAddr, &Keys),
) -> Result<(), ServeError> {
    let keys = crate::run::checked_keys(options)?;
    let client = reqwest::Client::builder()
        .timeout(options.request_timeout)
        .build()
        .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strataflow-front")
        .build()?;
    runtime.block_on(async move {
        let (listener, bound) = crate::options::bind(options.listen).await?;
        let front = Front {
            map: Arc::new(map),
            keys: Arc::new(keys),
            client,
            max_body_bytes: options.max_body_bytes,
        };
        announce(bound, &front.keys);
        let app = Router::new()
            .route("/healthz", axum::routing::get(healthz))
            .fallback(forward)
            .with_state(front);
        axum::serve(listener, app)
            .with_graceful_shutdown(crate::run::stop_signal())
            .await?;
        Ok(())
    })
}

/// Forwards one request to its tenant's node.
async fn forward(State(front): State<Front>, request: Request) -> Response {
    match forward_request(&front, request).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn forward_request(front: &Front, request: Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    if !path.starts_with("/v1/") {
        return Err(ApiError::not_found(format!(
            "no route {} {path} on the cluster's front: it forwards the JSON API (/v1/…); an MCP client connects to the node of its tenant",
            parts.method
        )));
    }
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let caller = front.keys.caller(authorization)?;
    let body = axum::body::to_bytes(body, front.max_body_bytes)
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!(
                    "the body could not be read within {} bytes: {e}",
                    front.max_body_bytes
                ),
            )
        })?;
    let named = named_tenant(parts.uri.query(), &body);
    let tenant = caller.tenant(named.as_deref())?;
    let (partition, node) = front.map.owner(&tenant);
    let target = format!(
        "{node}{}",
        parts.uri.path_and_query().map_or(path, |p| p.as_str())
    );
    let mut outgoing = front.client.request(parts.method.clone(), &target);
    for name in FORWARDED {
        if let Some(value) = parts.headers.get(&name) {
            outgoing = outgoing.header(name, value);
        }
    }
    let answer = outgoing.body(body).send().await.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "node_unavailable",
            format!(
                "the node of partition {partition} ({node}) did not answer: {e}; retry once it is back (its partition's messages wait in the stream)"
            ),
        )
        .retry(1)
    })?;
    let status = answer.status();
    let mut headers = Vec::new();
    for name in ANSWERED {
        if let Some(value) = answer.headers().get(name) {
            headers.push((name, value.clone()));
        }
    }
    let bytes = answer.bytes().await.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "node_unavailable",
            format!("the answer of {node} broke off: {e}"),
        )
    })?;
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    for (name, value) in headers {
        response.headers_mut().insert(name, value);
    }
    if let Ok(value) = HeaderValue::from_str(node) {
        response.headers_mut().insert(NODE_HEADER, value);
    }
    Ok(response)
}

/// The tenant a request names: `tenant` in its query, else a string
/// `tenant` of its JSON object body.
fn named_tenant(query: Option<&str>, body: &[u8]) -> Option<String> {
    if let Some(q) = query
        && let Some((_, t)) = form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "tenant")
    {
        return Some(t.into_owned());
    }
    // Only an object body names a tenant (an array of messages does not).
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        && let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(body)
        && let Some(serde_json::Value::String(t)) = o.get("tenant")
    {
        return Some(t.clone());
    }
    None
}

/// `/healthz`: ok when every node answers its own.
async fn healthz(State(front): State<Front>) -> Response {
    let mut nodes = Vec::new();
    let mut all_ok = true;
    for url in front.map.nodes() {
        let ok = matches!(
            front.client.get(format!("{url}/healthz")).send().await,
            Ok(r) if r.status().is_success()
        );
        all_ok &= ok;
        nodes
            .push(serde_json::json!({"url": url, "status": if ok { "ok" } else { "unavailable" }}));
    }
    let status = if all_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        axum::Json(serde_json::json!({
            "status": if all_ok { "ok" } else { "degraded" },
            "partitions": front.map.partitions,
            "nodes": nodes,
        })),
    )
        .into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_map_gives_each_partition_one_node() {
        let map = ClusterMap::parse(
            r#"{"partitions": 3, "nodes": [{"url": "http://127.0.0.1:1/", "partitions": [0, 2]}, {"url": "http://127.0.0.1:2", "partitions": [1]}]}"#,
        )
        .unwrap();
        for tenant in ["a", "b", "c", "acme", ""] {
            let (p, url) = map.owner(tenant);
            assert_eq!(p, partition_of(tenant, 3));
            let want = if p == 1 {
                "http://127.0.0.1:2"
            } else {
                "http://127.0.0.1:1"
            };
            assert_eq!(url, want, "{tenant}");
        }
        assert_eq!(
            map.nodes(),
            vec!["http://127.0.0.1:1", "http://127.0.0.1:2"]
        );
    }

    #[test]
    fn a_bad_map_is_refused_naming_the_field() {
        let cases = [
            (
                r#"{"partitions": 0, "nodes": []}"#,
                "`partitions` must be at least 1",
            ),
            (
                r#"{"partitions": 2, "nodes": [{"url": "http://a:1", "partitions": [0, 1]}, {"url": "http://b:1", "partitions": [1]}]}"#,
                "partition 1 is owned by nodes[0] and nodes[1]",
            ),
            (
                r#"{"partitions": 2, "nodes": [{"url": "http://a:1", "partitions": [0, 2]}]}"#,
                "`nodes[0].partitions[1]` = 2",
            ),
            (
                r#"{"partitions": 3, "nodes": [{"url": "http://a:1", "partitions": [0]}]}"#,
                "partitions [1, 2] have no node",
            ),
            (
                r#"{"partitions": 1, "nodes": [{"url": "a:1", "partitions": [0]}]}"#,
                "`nodes[0].url` `a:1`",
            ),
            (
                r#"{"partitions": 1, "nodes": [], "extra": 1}"#,
                "unknown field `extra`",
            ),
        ];
        for (text, want) in cases {
            let e = ClusterMap::parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn the_tenant_comes_from_the_query_then_the_body() {
        assert_eq!(
            named_tenant(Some("q=x&tenant=a%20b"), b"{}"),
            Some("a b".into())
        );
        assert_eq!(
            named_tenant(None, br#" {"tenant": "t", "q": "x"}"#),
            Some("t".into())
        );
        assert_eq!(
            named_tenant(Some("tenant=q"), br#"{"tenant": "b"}"#),
            Some("q".into())
        );
        assert_eq!(named_tenant(None, br#"[{"tenant": "t"}]"#), None);
        assert_eq!(named_tenant(None, b"not json"), None);
    }
}
