//! Helpers of the server tests: start `strataflow serve` on a free
//! loopback port, talk HTTP/1.1 to it (a plain blocking client, one
//! connection per request, bounded by time-outs), stop or kill it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::common::bin;

/// How long a server may take to start, and a request to be answered.
const START: Duration = Duration::from_secs(60);
const REQUEST: Duration = Duration::from_secs(60);

/// A running `strataflow serve`.
pub struct Server {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The data directory.
    pub dir: PathBuf,
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `strataflow-seq` header.
    pub fn seq(&self) -> u64 {
        self.header("strataflow-seq")
            .unwrap_or_else(|| panic!("no strataflow-seq header: {self:?}"))
            .parse()
            .unwrap()
    }
}

impl Server {
    /// Starts `strataflow --data DIR serve --listen 127.0.0.1:0 EXTRA…` and
    /// waits for its `listening on` line.
    pub fn start(dir: &Path, extra: &[&str]) -> Self {
        let mut child = bin()
            .arg("--data")
            .arg(dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let line = match rx.recv_timeout(START) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("serve did not announce itself within {START:?}");
            }
        };
        let addr = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        Self {
            child: Some(child),
            addr,
            dir: dir.to_path_buf(),
        }
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sends a request; `key` as `Authorization: Bearer`.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> Reply {
        request(&self.addr, method, path, key, body)
    }

    /// GET.
    pub fn get(&self, path: &str, key: Option<&str>) -> Reply {
        self.request("GET", path, key, None)
    }

    /// POST with a JSON body.
    pub fn post(&self, path: &str, key: Option<&str>, body: &serde_json::Value) -> Reply {
        self.request("POST", path, key, Some(&body.to_string()))
    }

    /// SIGTERM, then waits (bounded) for the exit status.
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + START;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("serve did not stop within {START:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, and waits for the process to be gone.
    pub fn kill(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`).
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> Reply {
    try_request(addr, method, path, key, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// [`request`], with connection errors returned (for crash tests).
pub fn try_request(
    addr: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(REQUEST))?;
    stream.set_write_timeout(Some(REQUEST))?;
    let body = body.unwrap_or("");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    if let Some(key) = key {
        head.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Err(std::io::Error::other(format!("no HTTP answer: {text:?}")));
    };
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line: {head:?}")))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect::<Vec<_>>();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// Joins the chunks of a chunked body.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// Makes a key with `strataflow keys add` and returns it.
pub fn add_key(dir: &Path, scope: &[&str]) -> String {
    let mut args = vec!["keys", "add"];
    args.extend_from_slice(scope);
    super::common::ok(dir, &args).trim().to_owned()
}
