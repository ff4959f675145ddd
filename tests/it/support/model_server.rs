//! A scripted OpenAI-compatible chat server on `127.0.0.1:0` for tests.
//!
//! It answers `POST /v1/chat/completions` and `POST /chat/completions`
//! (and the same for `/embeddings`, with `Reply::Raw` bodies) (HTTP/1.1, `Content-Length` bodies, one request per connection) from a
//! responder closure, after consuming a queue of injected faults one per
//! request. It counts requests by outcome, keeps the request bodies and
//! `Authorization` headers, tracks how many requests were in flight at
//! once, and stops when dropped.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// What the responder answers to a request body.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A standard tool-call completion with these arguments
    /// ([`tool_completion`]).
    Tool(Value),
    /// A raw status and body (sent as `application/json`).
    Raw(u16, String),
}

/// A fault injected before the responder is asked; one per request, in
/// order.
#[derive(Clone, Debug)]
pub enum Fault {
    /// This status with an error body, and `Retry-After: n` when given.
    Status(u16, Option<u64>),
    /// Wait this long, then answer normally.
    Delay(Duration),
    /// A 200 whose body is not JSON.
    Malformed,
    /// Answer normally but put the tool arguments as a fenced JSON block in
    /// `message.content` instead of a tool call.
    TextInsteadOfTool,
}

/// Requests seen, by outcome.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Counts {
    /// Every request to a completions path.
    pub total: usize,
    /// Answered by the responder (including delayed and text answers).
    pub answered: usize,
    /// Answered with an injected status.
    pub status: usize,
    /// Delayed before answering.
    pub delayed: usize,
    /// Answered with a body that is not JSON.
    pub malformed: usize,
    /// Answered with the JSON in the text.
    pub text: usize,
}

type Responder = dyn Fn(&Value) -> Reply + Send + Sync;

struct Shared {
    responder: Box<Responder>,
    faults: Mutex<VecDeque<Fault>>,
    counts: Mutex<Counts>,
    bodies: Mutex<Vec<Value>>,
    authorizations: Mutex<Vec<Option<String>>>,
    latency: Mutex<Duration>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// The running server.
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runtime: Option<Runtime>,
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A chat completion whose first choice calls `record` with `arguments`
/// (as a JSON string), with usage 11 prompt and 7 completion tokens.
pub fn tool_completion(arguments: &Value) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "record", "arguments": arguments.to_string()}
                }]
            },
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    })
}

/// A chat completion that answers in prose with the arguments in a fenced
/// JSON block.
pub fn text_completion(arguments: &Value) -> Value {
    let content = format!("Here is the result:\n```json\n{arguments:#}\n```\n");
    json!({
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 11, "completion_tokens": 9, "total_tokens": 20}
    })
}

impl ModelServer {
    /// Starts a server answering with `responder`.
    pub fn start(responder: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        // Bound here (not with `block_on`) so that a test running inside a
        // runtime can start a server too.
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            responder: Box::new(responder),
            faults: Mutex::new(VecDeque::new()),
            counts: Mutex::new(Counts::default()),
            bodies: Mutex::new(Vec::new()),
            authorizations: Mutex::new(Vec::new()),
            latency: Mutex::new(Duration::ZERO),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let accept_shared = Arc::clone(&shared);
        runtime.spawn(async move {
            let listener = TcpListener::from_std(std_listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                let shared = Arc::clone(&accept_shared);
                tokio::spawn(async move {
                    let _ = serve(stream, &shared).await;
                });
            }
        });
        Self {
            addr,
            shared,
            runtime: Some(runtime),
        }
    }

    /// A server that answers every request with a tool call carrying
    /// `arguments`.
    pub fn answering(arguments: Value) -> Self {
        Self::start(move |_| Reply::Tool(arguments.clone()))
    }

    /// The base URL to configure: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues faults, consumed one per request before the responder.
    pub fn inject(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared.faults.lock().unwrap().extend(faults);
    }

    /// Delays every normal answer by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        *self.shared.latency.lock().unwrap() = latency;
    }

    /// Requests seen, by outcome.
    pub fn counts(&self) -> Counts {
        *self.shared.counts.lock().unwrap()
    }

    /// Requests seen.
    pub fn requests(&self) -> usize {
        self.counts().total
    }

    /// The request bodies, in arrival order.
    pub fn bodies(&self) -> Vec<Value> {
        self.shared.bodies.lock().unwrap().clone()
    }

    /// The `Authorization` header of each request, in arrival order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared.authorizations.lock().unwrap().clone()
    }

    /// Most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

/// A parsed request.
struct Request {
    method: String,
    path: String,
    authorization: Option<String>,
    body: Vec<u8>,
}

async fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let path = request.path.split('?').next().unwrap_or_default();
    if request.method != "POST"
        || !matches!(
            path,
            "/v1/chat/completions" | "/chat/completions" | "/v1/embeddings" | "/embeddings"
        )
    {
        return write_response(&mut stream, 404, &[], "{\"error\":\"not found\"}").await;
    }
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let reply = answer(shared, request).await;
    // A request stops counting before its answer is written: once the
    // client has read it, it may send the next one at once.
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    write_response(&mut stream, reply.status, &reply.headers, &reply.body).await
}

/// An answer to write.
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

impl Answer {
    fn new(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

async fn answer(shared: &Shared, request: Request) -> Answer {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    shared.bodies.lock().unwrap().push(body.clone());
    shared
        .authorizations
        .lock()
        .unwrap()
        .push(request.authorization);
    let fault = shared.faults.lock().unwrap().pop_front();
    let bump = |f: fn(&mut Counts)| {
        let mut counts = shared.counts.lock().unwrap();
        counts.total += 1;
        f(&mut counts);
    };
    let mut text = false;
    match fault {
        Some(Fault::Status(status, retry_after)) => {
            bump(|c| c.status += 1);
            let header = retry_after.map(|s| ("Retry-After", s.to_string()));
            let body = format!("{{\"error\":{{\"message\":\"scripted status {status}\"}}}}");
            return Answer {
                status,
                headers: header.into_iter().collect(),
                body,
            };
        }
        Some(Fault::Malformed) => {
            bump(|c| c.malformed += 1);
            return Answer::new(200, "<html>upstream hiccup</html>");
        }
        Some(Fault::Delay(delay)) => {
            bump(|c| {
                c.delayed += 1;
                c.answered += 1;
            });
            tokio::time::sleep(delay).await;
        }
        Some(Fault::TextInsteadOfTool) => {
            bump(|c| {
                c.text += 1;
                c.answered += 1;
            });
            text = true;
        }
        None => bump(|c| c.answered += 1),
    }
    let latency = *shared.latency.lock().unwrap();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match (shared.responder)(&body) {
        Reply::Tool(arguments) => {
            let completion = if text {
                text_completion(&arguments)
            } else {
                tool_completion(&arguments)
            };
            Answer::new(200, completion.to_string())
        }
        Reply::Raw(status, body) => Answer::new(status, body),
    }
}

/// Reads one request (head, then `Content-Length` bytes of body).
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let path = first.next().unwrap_or_default().to_owned();
    let mut length = 0usize;
    let mut authorization = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("authorization") {
            authorization = Some(value.to_owned());
        }
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Some(Request {
        method,
        path,
        authorization,
        body,
    }))
}

async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await?;
    stream.shutdown().await
}
