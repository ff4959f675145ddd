//! `serve`, `mcp` and `keys`: strataflow as a service.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use strataflow_server::http::auth::Caller;
use strataflow_server::keys::{KeyFile, Scope};
use strataflow_server::options::{ServeError, ServeOptions};

use super::args::{KeysCommand, ServeArgs};
use super::{EXIT_USAGE, Failure, open};

/// Name of the key file `serve` and `keys` use inside the data directory
/// when no `--keys` is given.
const DEFAULT_KEY_FILE: &str = "keys.json";

impl From<ServeError> for Failure {
    fn from(e: ServeError) -> Self {
        let status = match e {
            // The facade's error decides its own exit status.
            ServeError::Memory(m) => return Self::from(*m),
            ServeError::OpenOnNetwork { .. } | ServeError::Keys(_) => EXIT_USAGE,
            _ => 1,
        };
        Self {
            message: e.to_string(),
            status,
        }
    }
}

/// The key file of a command: `--keys`, else `DIR/keys.json`.
fn key_file(keys: Option<&Path>, dir: &Path) -> PathBuf {
    keys.map_or_else(|| dir.join(DEFAULT_KEY_FILE), Path::to_path_buf)
}

/// `--retention-older-than` and `--retention-every`, checked before the
/// directory is opened.
fn retention(args: &ServeArgs) -> Result<Option<strataflow_server::options::Retention>, Failure> {
    let parse = |text: &str, option: &str| {
        strataflow::parse_duration(text).map_err(|_| Failure {
            message: format!("--{option} `{text}` is not a duration (30d, 12h, 90m, 45s)"),
            status: EXIT_USAGE,
        })
    };
    let Some(older_than) = &args.retention_older_than else {
        return Ok(None);
    };
    Ok(Some(strataflow_server::options::Retention {
        older_than: parse(older_than, "retention-older-than")?,
        every: match &args.retention_every {
            Some(every) => parse(every, "retention-every")?,
            None => strataflow_server::options::DEFAULT_RETENTION_EVERY,
        },
    }))
}

/// `serve`.
pub fn serve(out: &mut dyn Write, dir: &Path, args: &ServeArgs) -> Result<(), Failure> {
    let keys = match &args.keys {
        Some(path) => Some(path.clone()),
        None => {
            let default = dir.join(DEFAULT_KEY_FILE);
            default.exists().then_some(default)
        }
    };
    let options = ServeOptions {
        listen: args.listen,
        keys,
        max_body_bytes: args.max_body,
        queue: args.queue,
        append_timeout: Duration::from_secs(args.append_timeout),
        min_seq_wait: Duration::from_millis(args.min_seq_wait),
        request_timeout: Duration::from_secs(args.request_timeout),
        retention: retention(args)?,
    };
    // Refuse a bad --listen or key file before opening the directory.
    strataflow_server::run::check(&options)?;
    let mode = |keys: &strataflow_server::http::auth::Keys| {
        if keys.required() {
            format!(
                "API keys required ({})",
                options
                    .keys
                    .as_deref()
                    .map_or_else(String::new, |p| p.display().to_string())
            )
        } else {
            "no key file: loopback only, every caller is admin".to_owned()
        }
    };
    // The first line of a server: where it listens, what it is and how
    // it admits callers.
    let mut announced = Ok(());
    let mut announce = |what: String, keys: &strataflow_server::http::auth::Keys| {
        announced = writeln!(out, "{what}; {})", mode(keys)).and_then(|()| out.flush());
    };
    if let Some(map) = &args.cluster {
        let map = strataflow_server::front::ClusterMap::load(map).map_err(|e| Failure {
            message: e.to_string(),
            status: EXIT_USAGE,
        })?;
        let nodes = map.nodes().len();
        let partitions = map.partitions;
        strataflow_server::front::run_front(map, &options, |addr, keys| {
            announce(
                format!(
                    "listening on http://{addr} (cluster front: {partitions} partitions on {nodes} nodes"
                ),
                keys,
            );
        })?;
        announced?;
        return Ok(());
    }
    let memory = open(dir)?;
    let Some(url) = &args.nats.nats else {
        strataflow_server::run::run(memory, &options, |addr, keys| {
            announce(
                format!("listening on http://{addr} (MCP at http://{addr}/mcp"),
                keys,
            );
        })?;
        announced?;
        return Ok(());
    };
    if args.partitions.is_empty() {
        return Err(Failure {
            message: "serve --nats needs --partitions P,…: the partitions this node owns".into(),
            status: EXIT_USAGE,
        });
    }
    let publish = strataflow_cluster::publish::PublishOptions {
        prefix: args.nats.prefix.clone(),
        partitions: args.nats.stream_partitions,
        replicas: args.nats.replicas,
        publish_timeout: Duration::from_secs(args.nats.publish_timeout),
    };
    let node =
        strataflow_server::service::node::ClusterNode::connect(url, publish, &args.partitions)?;
    let consumer = strataflow_cluster::node::NodeOptions {
        prefix: args.nats.prefix.clone(),
        partitions: args.partitions.clone(),
        batch: args.batch,
        drain: false,
    };
    let stream = node.stream().to_owned();
    strataflow_server::run::run_node(memory, &options, node, &consumer, |addr, keys| {
        announce(
            format!(
                "listening on http://{addr} (MCP at http://{addr}/mcp; node of stream {stream}, partitions {:?}",
                args.partitions
            ),
            keys,
        );
    })?;
    announced?;
    Ok(())
}

/// `mcp`: the tools on stdin/stdout.
pub fn mcp(dir: &Path, tenant: Option<String>, queue: usize) -> Result<(), Failure> {
    let memory = open(dir)?;
    let caller = Caller {
        scope: tenant.map_or(Scope::Admin, Scope::Tenant),
        key_id: None,
    };
    strataflow_server::run::run_stdio(memory, queue, caller)?;
    Ok(())
}

/// `keys add|list|revoke`.
pub fn keys(out: &mut dyn Write, dir: &Path, command: KeysCommand) -> Result<(), Failure> {
    let failed = |e: strataflow_server::keys::KeyError| Failure {
        message: e.to_string(),
        status: 1,
    };
    match command {
        KeysCommand::Add {
            tenant,
            admin,
            label,
            keys,
            json,
        } => {
            let path = key_file(keys.as_deref(), dir);
            let mut file = KeyFile::load_or_new(&path).map_err(failed)?;
            let scope = match (tenant, admin) {
                (Some(t), false) => Scope::Tenant(t),
                (None, true) => Scope::Admin,
                _ => {
                    return Err(Failure {
                        message: "give exactly one of --tenant T and --admin".into(),
                        status: EXIT_USAGE,
                    });
                }
            };
            let made = file.add(scope, label).map_err(failed)?;
            file.save().map_err(failed)?;
            if json {
                let value = serde_json::json!({
                    "id": made.entry.id,
                    "key": made.key,
                    "scope": made.entry.scope.to_string(),
                    "file": path.display().to_string(),
                });
                writeln!(out, "{value}")?;
            } else {
                writeln!(out, "{}", made.key)?;
                eprintln!(
                    "key {} for {} added to {} (shown once: only its hash is stored)",
                    made.entry.id,
                    made.entry.scope,
                    path.display()
                );
            }
        }
        KeysCommand::List { keys, json } => {
            let path = key_file(keys.as_deref(), dir);
            let file = KeyFile::load(&path).map_err(failed)?;
            for e in file.entries() {
                let (tenant, admin) = match &e.scope {
                    Scope::Tenant(t) => (Some(t.as_str()), false),
                    _ => (None, true),
                };
                if json {
                    let value = serde_json::json!({
                        "id": e.id, "tenant": tenant, "admin": admin, "label": e.label,
                    });
                    writeln!(out, "{value}")?;
                } else {
                    writeln!(
                        out,
                        "{}  {}{}",
                        e.id,
                        e.scope,
                        e.label
                            .as_deref()
                            .map_or_else(String::new, |l| format!("  ({l})"))
                    )?;
                }
            }
        }
        KeysCommand::Revoke { id, keys } => {
            let path = key_file(keys.as_deref(), dir);
            let mut file = KeyFile::load(&path).map_err(failed)?;
            let gone = file.revoke(&id).map_err(failed)?;
            file.save().map_err(failed)?;
            writeln!(out, "revoked key {} ({})", gone.id, gone.scope)?;
        }
    }
    Ok(())
}
