//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use strataflow::log::MAX_NAME_BYTES;

/// Ranges of the numeric options (inclusive), enforced by the parser.
pub mod limits {
    /// `init --block-turns`.
    pub const BLOCK_TURNS: (u64, u64) = (1, 1_000);
    /// `gen --messages`.
    pub const GEN_MESSAGES: (u64, u64) = (1, 10_000_000_000);
    /// `gen --threads`.
    pub const GEN_THREADS: (u64, u64) = (1, 1_000_000);
    /// `gen --tenants`.
    pub const GEN_TENANTS: (u64, u64) = (1, 1_000_000);
    /// `ingest --workers`.
    pub const WORKERS: (u64, u64) = (1, 256);
    /// `ingest --batch-records`.
    pub const BATCH_RECORDS: (u64, u64) = (1, 1_000_000);
    /// `search --limit`.
    pub const LIMIT: (u64, u64) = strataflow::limits::SEARCH_LIMIT;
    /// `--budget` of search, diff and eval, in words.
    pub const BUDGET: (u64, u64) = strataflow::limits::SEARCH_BUDGET;
    /// `profile create --concurrency`.
    pub const CONCURRENCY: (u64, u64) = (1, 256);
    /// `profile create --timeout`, in seconds.
    pub const TIMEOUT_SECS: (u64, u64) = (1, 86_400);
    /// `serve --queue`, `mcp --queue`.
    pub const QUEUE: (u64, u64) = (1, 1_000_000);
    /// `serve --max-body`, in bytes.
    pub const BODY: (u64, u64) = (1, 1 << 30);
    /// `serve --append-timeout`, `--request-timeout`, in seconds.
    pub const SECONDS: (u64, u64) = (1, 3_600);
    /// `serve --min-seq-wait`, in milliseconds.
    pub const MILLIS: (u64, u64) = (1, 3_600_000);
}

/// A parser of whole numbers in `range` (inclusive): anything else is a
/// usage error naming the option and the range.
fn in_range<T>(range: (u64, u64)) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: TryFrom<u64>,
{
    move |text: &str| {
        let (min, max) = range;
        let n: u64 = text
            .parse()
            .map_err(|_| format!("expected a whole number from {min} to {max}"))?;
        if n < min {
            return Err(format!("must be at least {min} (range {min}..={max})"));
        }
        if n > max {
            return Err(format!("must be at most {max} (range {min}..={max})"));
        }
        T::try_from(n).map_err(|_| format!("must be at most {max} (range {min}..={max})"))
    }
}

/// A tenant, thread or profile name: at most [`MAX_NAME_BYTES`] bytes (the
/// log's key limit), checked before it reaches the store. The error names
/// the argument and the length, not the (long) value.
#[derive(Clone, Copy, Debug)]
pub struct Name;

impl clap::builder::TypedValueParser for Name {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let what = arg.map_or_else(|| "a name".to_owned(), ToString::to_string);
        let Some(text) = value.to_str() else {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidUtf8,
                format!("{what} is not valid UTF-8\n"),
            )
            .with_cmd(cmd));
        };
        if text.len() > MAX_NAME_BYTES {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "{what} is {} bytes; the limit is {MAX_NAME_BYTES} bytes\n",
                    text.len()
                ),
            )
            .with_cmd(cmd));
        }
        Ok(text.to_owned())
    }
}

/// `assess --verdict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VerdictArg {
    /// The evidence answers the question (needs a ref of the batch and `--next answer`).
    Sufficient,
    /// Some evidence, not enough.
    Partial,
    /// The batch does not answer the question.
    Wrong,
}

impl VerdictArg {
    /// The name the evidence gate reads.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sufficient => "sufficient",
            Self::Partial => "partial",
            Self::Wrong => "wrong",
        }
    }
}

/// strataflow: long-term memory for AI agents over a content-hashed log.
#[derive(Debug, Parser)]
#[command(name = "strataflow", version, about, long_about = None)]
pub struct Cli {
    /// Data directory [default: $STRATAFLOW_DATA, else ./strataflow-data]
    #[arg(long, global = true, value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// Never call a model: serve model-backed operators only from recorded
    /// calls, and stop with an error naming the block when one is missing.
    #[arg(long, global = true)]
    pub offline: bool,

    /// Run read commands (search, expand, context, events, graph, blocks,
    /// show, stats, status, views) and the agent protocol (assess, use,
    /// forget, restore, pin, unpin) against this running server instead of
    /// opening the data directory; they print its JSON.
    #[arg(long, global = true, value_name = "URL", env = "STRATAFLOW_SERVER")]
    pub server: Option<String>,

    /// API key for --server.
    #[arg(
        long,
        global = true,
        value_name = "KEY",
        env = "STRATAFLOW_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or configure a data directory.
    Init {
        /// Turns per sealed block, 1..=1000 (default 12; fixed once messages exist).
        #[arg(long, value_name = "N", value_parser = in_range::<u32>(limits::BLOCK_TURNS))]
        block_turns: Option<u32>,
        /// Print the directory and its block size as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a deterministic synthetic conversation archive (JSONL) for
    /// benchmarks and trials: same options, same bytes.
    Gen {
        /// Messages in all, 1..=10000000000.
        #[arg(long, value_name = "N", value_parser = in_range::<u64>(limits::GEN_MESSAGES))]
        messages: u64,
        /// Threads (conversations), 1..=1000000.
        #[arg(long, value_name = "T", default_value_t = 100, value_parser = in_range::<u32>(limits::GEN_THREADS))]
        threads: u32,
        /// Tenants the threads are spread over, 1..=1000000.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = in_range::<u32>(limits::GEN_TENANTS))]
        tenants: u32,
        /// Seed of the generator.
        #[arg(long, value_name = "S", default_value_t = 1)]
        seed: u64,
        /// Output file (default: standard output).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print what was written (messages, threads, bytes, tool calls,
        /// file) as JSON on standard output; needs `-o`.
        #[arg(long, requires = "output")]
        json: bool,
    },
    /// Ingest a JSONL message file (one message per line; see docs/format.md).
    Ingest {
        /// The file.
        file: PathBuf,
        /// Ingest options.
        #[command(flatten)]
        options: IngestArgs,
        /// Publishing to NATS JetStream instead.
        #[command(flatten)]
        nats: NatsPublishArgs,
    },
    /// Materialise the tenants of some partitions of a NATS JetStream
    /// stream into the data directory (docs/guides/cluster.md).
    Node(NodeArgs),
    /// Import from another format.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Records per kind, tenants, threads, messages, blocks, open tail, bytes on disk.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The blocks of a thread: ordinal, turns, message ids, L3/L4 sizes, and the open tail.
    Blocks {
        /// Thread.
        #[arg(long, value_parser = Name)]
        thread: String,
        /// Tenant.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Any record as JSON, by id or unique id prefix.
    Show {
        /// Record id (64 hex digits) or a unique prefix of at least 4.
        id: String,
        /// Tenant (a record of another tenant is not found).
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
    },
    /// Run whatever derivation is pending or retryable (summaries, events, graph).
    Resume {
        /// Profile (default: the data directory's default profile).
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Derivation state per operator: done, pending, retryable and failed.
    Status {
        /// Profile.
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Cost plan, before any call: operator runs, model calls and input
    /// tokens a derivation (resume or replay) of a profile would make.
    Plan {
        /// Profile.
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The events a profile extracted, with times, participants and status.
    Events {
        /// Only this thread.
        #[arg(long, value_parser = Name)]
        thread: Option<String>,
        /// Tenant.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Profile.
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The current-state graph: nodes with facts, and edges.
    Graph {
        /// Tenant.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Show the facts and edges valid at this RFC 3339 time instead of the current ones.
        #[arg(long, value_name = "TIME")]
        at: Option<String>,
        /// Profile.
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search memory: events, graph nodes, raw messages, or all fused.
    Search(SearchArgs),
    /// Expand an event, a graph node or a block (each a retrieval batch).
    #[command(subcommand)]
    Expand(ExpandCommand),
    /// Replay a profile from L5: run its operators where no derivation
    /// exists yet, bring every view up to date and report whether anything
    /// changed; `--verify` also rebuilds each view from the log and compares.
    Replay {
        /// Profile (default: the directory's default).
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Compare every persisted view with a rebuild (exit 4 on a mismatch).
        #[arg(long)]
        verify: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Export the log for offline analysis.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Operator profiles: list, show, create, set the default.
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// What two profiles remember differently: events (only in A, only in
    /// B, in both, changed pairs with the fields that differ), graph facts
    /// and edges, block summaries; with --queries, how the same questions
    /// search under each.
    Diff {
        /// Profile A.
        #[arg(value_parser = Name)]
        a: String,
        /// Profile B.
        #[arg(value_parser = Name)]
        b: String,
        /// Tenant.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Compare searches instead: every question of FILE (a LoCoMo file, or JSONL of `{"question", "evidence", "thread", "category"}`) under A and B.
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
        /// Word budget of each search with --queries, 1..=1000000.
        #[arg(long, value_name = "WORDS", default_value_t = strataflow::eval::query_diff::DEFAULT_QUERY_BUDGET, requires = "queries", value_parser = in_range::<usize>(limits::BUDGET))]
        budget: usize,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Ready blocks at their decayed levels.
    Context {
        /// Only this thread.
        #[arg(long, value_parser = Name)]
        thread: Option<String>,
        /// Tenant.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Profile.
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Assess a retrieval batch (the five-field evidence gate).
    Assess {
        /// The batch (id or prefix).
        #[arg(long)]
        batch: String,
        /// Tenant (a record of another tenant is not found).
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// sufficient, partial or wrong.
        #[arg(long, value_enum)]
        verdict: VerdictArg,
        /// Refs of the batch that are evidence (repeat).
        #[arg(long = "evidence", value_name = "REF")]
        evidence: Vec<String>,
        /// How the evidence fits the question.
        #[arg(long, default_value = "")]
        fit: String,
        /// What is still missing.
        #[arg(long, default_value = "")]
        missing: String,
        /// Next step: answer, search_events, expand_event, search_graph, expand_graph_node, search_raw_memory, expand_block…
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(strataflow::operators::evidence_gate::STRATEGIES))]
        next: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Record refs of a sufficiently assessed batch as used (reinforces their events).
    Use {
        /// The batch (id or prefix).
        #[arg(long)]
        batch: String,
        /// Tenant (a record of another tenant is not found).
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Refs adopted by the batch's sufficient assessment.
        refs: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Persisted views: refresh them and print their digests; --verify rebuilds each from the log and compares.
    Views {
        /// Tenant (default: every tenant).
        #[arg(long, value_parser = Name)]
        tenant: Option<String>,
        /// Rebuild from the log and compare digests (exit 4 on a difference).
        #[arg(long)]
        verify: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Built-in evaluations.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Forget an event (reversible: a new governance record).
    Forget(GovernArgs),
    /// Undo a forget.
    Restore(GovernArgs),
    /// Pin an event (full weight).
    Pin(GovernArgs),
    /// Undo a pin.
    Unpin(GovernArgs),
    /// Recompute every hash, check parents and sequence; exit 4 with the offending ids if not intact.
    Audit {
        /// Also hash every table file of the storage engine against its
        /// recorded checksum and read every entry of every keyspace,
        /// naming damaged files and the records affected.
        #[arg(long)]
        deep: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remember a text under (tenant, namespace, id) with JSON content and
    /// metadata: a keyed memory, recalled by similarity (replacing a key
    /// keeps its created_at).
    Remember(RememberArgs),
    /// The keyed memories of a namespace most similar to a text.
    Recall(RecallArgs),
    /// Keyed memories: forget a key, purge by age.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Serve the data directory over HTTP (the JSON API under /v1, MCP at
    /// /mcp) while it ingests, until SIGTERM or SIGINT.
    Serve(ServeArgs),
    /// Serve the MCP tools on stdin/stdout (for a desktop agent); holds the
    /// data directory like any command.
    Mcp {
        /// Act for this tenant only (default: every tenant, as admin).
        #[arg(long, value_parser = Name)]
        tenant: Option<String>,
        /// Messages the ingest queue holds, 1..=1000000.
        #[arg(long, value_name = "N", default_value_t = 4096, value_parser = in_range::<usize>(limits::QUEUE))]
        queue: usize,
    },
    /// API keys of `serve`: each bound to one tenant, or admin.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Copy every intact record of a damaged data directory, in sequence
    /// order, into a new directory (indexes and views rebuilt) and report
    /// what was lost by sequence range and kind. DIR is never written.
    Recover {
        /// The damaged data directory.
        dir: PathBuf,
        /// The new data directory (must not exist, or be empty).
        #[arg(long, value_name = "NEW_DIR")]
        to: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Which index `search` reads.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SearchChannel {
    /// Event cards: BM25 plus structured rankings fused by RRF.
    Events,
    /// Graph nodes: BM25F over names, aliases, tags, facts, relations.
    Graph,
    /// Raw messages: BM25.
    Raw,
    /// The three fused by RRF.
    All,
    /// Messages, block summaries and events by cosine similarity of the
    /// profile's derived embeddings (a profile with `--embedder`).
    Dense,
}

/// Arguments of `search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Where to search.
    #[arg(value_enum)]
    pub channel: SearchChannel,
    /// The query (omit with --queries).
    pub query: Option<String>,
    /// Answer every query of a JSONL file (`{"query": …, filters…}` per line), one JSON object per line.
    #[arg(long, value_name = "FILE", conflicts_with = "query")]
    pub queries: Option<PathBuf>,
    /// Tenant.
    #[arg(long, default_value = "", value_parser = Name)]
    pub tenant: String,
    /// Only this thread.
    #[arg(long, value_parser = Name)]
    pub thread: Option<String>,
    /// Most hits, 1..=1000.
    #[arg(long, value_parser = in_range::<usize>(limits::LIMIT))]
    pub limit: Option<usize>,
    /// Events with this participant (repeat for several; all must match).
    #[arg(long = "participant", value_name = "NAME")]
    pub participants: Vec<String>,
    /// Event type (decision, release, task_completed, plan, change, cancellation, incident, meeting, collaboration, migration, other).
    #[arg(long = "type", value_name = "TYPE")]
    pub event_type: Option<String>,
    /// Happened no earlier than (date or RFC 3339).
    #[arg(long)]
    pub from: Option<String>,
    /// Happened no later than (date or RFC 3339).
    #[arg(long)]
    pub to: Option<String>,
    /// Order structured matches by time: first or latest.
    #[arg(long, value_parser = ["first", "latest"])]
    pub intent: Option<String>,
    /// Stop before the compact texts exceed this many words, 1..=1000000.
    #[arg(long, value_name = "WORDS", value_parser = in_range::<usize>(limits::BUDGET))]
    pub budget: Option<usize>,
    /// Profile.
    #[arg(long, value_parser = Name)]
    pub profile: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `export` subcommands.
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// One Parquet file per record kind (messages, blocks, summaries,
    /// events, graph assertions, derivations), one per view of a profile
    /// (event status, weights, block levels, graph nodes, facts, edges)
    /// and a manifest.json.
    Parquet {
        /// Output directory (created if needed).
        dir: PathBuf,
        /// Only this tenant.
        #[arg(long, value_parser = Name)]
        tenant: Option<String>,
        /// Profile whose views are exported (default: the directory's default).
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Only records after this log sequence number (incremental).
        #[arg(long, value_name = "SEQ", default_value_t = 0)]
        since: u64,
        /// Print the manifest (files, rows, sequence range, views) as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = strataflow_server::options::DEFAULT_LISTEN)]
    pub listen: std::net::SocketAddr,
    /// Key file [default: DIR/keys.json when it exists]; without keys the
    /// server listens on loopback only.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Largest request body in bytes (413 above), 1..=1073741824.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024, value_parser = in_range::<usize>(limits::BODY))]
    pub max_body: usize,
    /// Messages the ingest queue holds before appends wait, 1..=1000000.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = in_range::<usize>(limits::QUEUE))]
    pub queue: usize,
    /// Seconds an append waits for the queue and durability before 503 with Retry-After, 1..=3600.
    #[arg(long, value_name = "S", default_value_t = 30, value_parser = in_range::<u64>(limits::SECONDS))]
    pub append_timeout: u64,
    /// Milliseconds a read with min_seq waits for it before 503, 1..=3600000.
    #[arg(long, value_name = "MS", default_value_t = 5000, value_parser = in_range::<u64>(limits::MILLIS))]
    pub min_seq_wait: u64,
    /// Seconds any /v1 request may take before 503, 1..=3600.
    #[arg(long, value_name = "S", default_value_t = 60, value_parser = in_range::<u64>(limits::SECONDS))]
    pub request_timeout: u64,
    /// Purge keyed memories last written longer ago than this (`30d`,
    /// `12h`…) on a timer; no default: off unless given (not on a
    /// cluster node or front).
    #[arg(long, value_name = "DURATION", conflicts_with_all = ["nats", "cluster"])]
    pub retention_older_than: Option<String>,
    /// How often the retention purge runs (default 1h).
    #[arg(long, value_name = "DURATION", requires = "retention_older_than")]
    pub retention_every: Option<String>,
    /// Serve as a node of a NATS JetStream cluster: messages written to
    /// this server go to the shared stream, and a consumer stores the
    /// partitions of `--partitions` into the data directory, whose tenants
    /// alone it answers (docs/guides/cluster.md).
    #[command(flatten)]
    pub nats: NatsPublishArgs,
    /// With --nats: the partitions this node owns (comma-separated).
    #[arg(long, value_name = "P,…", value_delimiter = ',', requires = "nats")]
    pub partitions: Vec<u32>,
    /// With --nats: messages the consumer fetches and stores per batch,
    /// 1..=10000.
    #[arg(long, value_name = "N", requires = "nats", default_value_t = 500, value_parser = in_range::<usize>((1, strataflow_cluster::node::MAX_BATCH)))]
    pub batch: usize,
    /// Serve as the cluster's front: hold no data, forward each /v1
    /// request to the node that owns its tenant's partition, as the map
    /// file says (`{"partitions": P, "nodes": [{"url": "http://…",
    /// "partitions": [0, 2]}, …]}`).
    #[arg(long, value_name = "MAP", conflicts_with = "nats")]
    pub cluster: Option<PathBuf>,
}

/// Options every keyed-memory command shares.
#[derive(Debug, Args)]
pub struct MemoryScope {
    /// Tenant (default "").
    #[arg(long, value_parser = Name, default_value = "")]
    pub tenant: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `remember`.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// The id, unique within the namespace and tenant (1 to 256 bytes).
    pub id: String,
    /// The text to embed.
    pub text: String,
    /// The kind of memory (1 to 256 bytes); a recall never crosses one.
    #[arg(long)]
    pub namespace: String,
    /// JSON content kept with the entry (default null).
    #[arg(long, value_name = "JSON")]
    pub content: Option<String>,
    /// A metadata pair, repeatable.
    #[arg(long, value_name = "K=V", value_parser = key_value)]
    pub metadata: Vec<(String, String)>,
    /// The embedder (`word-hash@1[:DIMS]`, `local-embeddings@1:PATH` or
    /// `openai-embeddings@1:MODEL:DIMS`); stored as the directory's at
    /// first use, refused when it differs from the stored one.
    #[arg(long, value_name = "SPEC")]
    pub embedder: Option<String>,
    #[command(flatten)]
    pub scope: MemoryScope,
}

/// Arguments of `recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// The text to compare with.
    pub text: String,
    /// The namespace searched.
    #[arg(long)]
    pub namespace: String,
    /// The most matches, 1..=1000.
    #[arg(long, default_value_t = 10, value_parser = in_range::<u32>((1, 1000)))]
    pub limit: u32,
    /// Drop matches less similar than this (-1..=1).
    #[arg(long, value_name = "S")]
    pub min_similarity: Option<f32>,
    /// An id never returned, repeatable.
    #[arg(long, value_name = "ID")]
    pub exclude: Vec<String>,
    /// Only entries with this pair, repeatable.
    #[arg(long, value_name = "K=V", value_parser = key_value)]
    pub metadata: Vec<(String, String)>,
    /// The embedder (as for `remember`).
    #[arg(long, value_name = "SPEC")]
    pub embedder: Option<String>,
    #[command(flatten)]
    pub scope: MemoryScope,
}

/// `memory` subcommands.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Forget one keyed memory.
    Forget {
        /// Its id.
        id: String,
        /// Its namespace.
        #[arg(long)]
        namespace: String,
        #[command(flatten)]
        scope: MemoryScope,
    },
    /// Remove the keyed memories last written before a cutoff, oldest first.
    Purge {
        /// A duration before now (`30d`, `12h`, `90m`, `45s`) or an RFC 3339 time.
        #[arg(long, value_name = "DURATION|TIME")]
        older_than: String,
        /// Only this namespace (default: all of the tenant's).
        #[arg(long)]
        namespace: Option<String>,
        /// The most entries removed, 1..=1000000.
        #[arg(long, default_value_t = 1000, value_parser = in_range::<u32>((1, 1_000_000)))]
        limit: u32,
        #[command(flatten)]
        scope: MemoryScope,
    },
}

/// `K=V` of `--metadata`.
fn key_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got `{text}`"))
}

/// `keys` subcommands.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a key for one tenant (or --admin) and print it once; only its
    /// hash is stored.
    Add {
        /// The tenant the key may act on.
        #[arg(long, value_parser = Name, required_unless_present = "admin", conflicts_with = "admin")]
        tenant: Option<String>,
        /// A key for every tenant (and /metrics).
        #[arg(long)]
        admin: bool,
        /// A label to tell keys apart in `keys list`.
        #[arg(long)]
        label: Option<String>,
        /// Key file [default: DIR/keys.json].
        #[arg(long, value_name = "FILE")]
        keys: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The keys of the file: id, scope, label (never the key).
    List {
        /// Key file [default: DIR/keys.json].
        #[arg(long, value_name = "FILE")]
        keys: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a key by its id; a running server refuses it from its next request.
    Revoke {
        /// The key's id (from `keys list`).
        id: String,
        /// Key file [default: DIR/keys.json].
        #[arg(long, value_name = "FILE")]
        keys: Option<PathBuf>,
    },
}

/// `profile` subcommands.
#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Every profile and its operators.
    List {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// One profile.
    Show {
        /// Profile name.
        #[arg(value_parser = Name)]
        name: String,
    },
    /// Create (or replace) a profile; operators not given are the default
    /// profile's.
    Create {
        /// Profile name.
        #[arg(value_parser = Name)]
        name: String,
        /// Summarizer id (`name@version`).
        #[arg(long)]
        summarizer: Option<String>,
        /// Extractor id, e.g. `heuristic-extractor@2`.
        #[arg(long)]
        extractor: Option<String>,
        /// Projector id.
        #[arg(long)]
        projector: Option<String>,
        /// Model of its `llm-*` operators, e.g. `gpt-4o-mini`.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Base URL of the OpenAI-compatible API.
        #[arg(long, value_name = "URL", default_value = "https://api.openai.com/v1")]
        base_url: String,
        /// Environment variable holding the API key (the key itself is
        /// never stored).
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        /// Model requests in flight at most, 1..=256.
        #[arg(long, value_name = "N", default_value_t = 4, value_parser = in_range::<u32>(limits::CONCURRENCY))]
        concurrency: u32,
        /// Seconds before a model request times out (then it is retried), 1..=86400.
        #[arg(long, value_name = "S", default_value_t = 120, value_parser = in_range::<u32>(limits::TIMEOUT_SECS))]
        timeout: u32,
        /// Embedder of its derived embeddings (`word-hash@1[:DIMS]`,
        /// `local-embeddings@1:PATH`, `openai-embeddings@1:MODEL:DIMS`, the
        /// last through `--base-url`); none when not given.
        #[arg(long, value_name = "SPEC")]
        embedder: Option<String>,
    },
    /// Make a profile the default of every command.
    SetDefault {
        /// Profile name.
        #[arg(value_parser = Name)]
        name: String,
    },
}

/// `expand` subcommands.
#[derive(Debug, Subcommand)]
pub enum ExpandCommand {
    /// The full card of an event, with quotes, narrative and source messages.
    Event {
        /// Event id or prefix.
        id: String,
        /// Tenant (a record of another tenant is not found).
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A graph node (by an assertion id) with its facts and edges.
    Node {
        /// Assertion id or prefix (the `node:` ref of a search hit).
        id: String,
        /// Facts and edges valid at this RFC 3339 time.
        #[arg(long)]
        at: Option<String>,
        /// Tenant (a record of another tenant is not found).
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Profile.
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A block at a level; later decay starts from that level.
    Block {
        /// Block id or prefix.
        id: String,
        /// Tenant (a record of another tenant is not found).
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// L0…L5, next or raw.
        #[arg(long, default_value = "next")]
        level: String,
        /// Profile.
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `eval` subcommands.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Retrieval on LoCoMo conversations against gold evidence, beside a raw BM25 baseline.
    Locomo {
        /// LoCoMo files (either layout).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Word budget (repeat for several), 1..=1000000.
        #[arg(long = "budget", value_name = "WORDS", default_values_t = [300usize], value_parser = in_range::<usize>(limits::BUDGET))]
        budgets: Vec<usize>,
        /// Derive with this extractor (e.g. `heuristic-extractor@2`) instead of the default.
        #[arg(long, value_name = "ID")]
        extractor: Option<String>,
        /// Evaluate the graph instead: coverage of the files' `session_N_observation` and grounded share, per projector version.
        #[arg(long, conflicts_with = "budgets")]
        graph: bool,
        /// Derive with this projector instead of the default; with --graph: a projector version to compare beside the default one (repeat; default `heuristic-projector@3` and `@4`).
        #[arg(long = "projector", value_name = "ID")]
        projectors: Vec<String>,
        /// Derive embeddings with this embedder spec (e.g. `word-hash@1`,
        /// `local-embeddings@1:PATH`): `all` gets the dense RRF channel.
        #[arg(long, value_name = "SPEC", conflicts_with = "graph")]
        embedder: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of forget / restore / pin / unpin.
#[derive(Debug, Args)]
pub struct GovernArgs {
    /// Event id or unique prefix.
    pub event: String,
    /// Tenant (an event of another tenant is not found).
    #[arg(long, default_value = "", value_parser = Name)]
    pub tenant: String,
    /// Why (kept in the record).
    #[arg(long)]
    pub reason: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `import` subcommands.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import LoCoMo conversations (locomo10.json or one-conversation files).
    Locomo {
        /// The file.
        file: PathBuf,
        /// Tenant to import into.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Ingest options.
        #[command(flatten)]
        options: IngestArgs,
    },
    /// Import a ChatGPT data export (`conversations.json`, or the export
    /// ZIP holding it, streamed): one thread per conversation, the messages
    /// on the path from the root to `current_node`.
    Chatgpt {
        /// conversations.json or the export ZIP.
        file: PathBuf,
        /// Tenant to import into.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Ingest options.
        #[command(flatten)]
        options: IngestArgs,
    },
    /// Import a Claude data export (`conversations.json`, or the export ZIP
    /// holding it, streamed): one thread per conversation, `chat_messages`
    /// in order.
    Claude {
        /// conversations.json or the export ZIP.
        file: PathBuf,
        /// Tenant to import into.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Ingest options.
        #[command(flatten)]
        options: IngestArgs,
    },
    /// Import chat-completion logs: one `{"messages": [{role, content}…]}`
    /// object per line, each line one thread.
    #[command(name = "chat-jsonl")]
    ChatJsonl {
        /// The JSONL file.
        file: PathBuf,
        /// Tenant to import into.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Time (RFC 3339) of a line that gives none (`created`,
        /// `created_at`, `timestamp`, `ts`); its messages are one second
        /// apart from it. Without it such a line is refused.
        #[arg(long, value_name = "RFC3339")]
        start: Option<String>,
        /// Ingest options.
        #[command(flatten)]
        options: IngestArgs,
    },
    /// Load a full `export parquet` directory into an empty data directory
    /// (same records, ids and view digests).
    Parquet {
        /// The export directory (with manifest.json).
        dir: PathBuf,
    },
    /// Import memories exported by another AI system
    /// (`stratagate.external-memory.v2` JSON, or plain text whose memories
    /// the profile's model extracts): each candidate is added, merged,
    /// superseding, conflicting or ignored; prints the import id.
    Memory {
        /// The export file: JSON, or plain text (needs a profile with a model).
        file: PathBuf,
        /// Tenant to import into.
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Print the decisions and write nothing (model calls are still
        /// recorded, so the real import does not pay for them again).
        #[arg(long)]
        dry_run: bool,
        /// Also apply decisions below the auto-apply confidence (0.85);
        /// otherwise they are reported and ignored.
        #[arg(long)]
        accept_uncertain: bool,
        /// Import time (RFC 3339): the mention time of candidates without
        /// one [default: the file's exportedAt].
        #[arg(long, value_name = "RFC3339")]
        imported_at: Option<String>,
        /// Profile whose model decides (its `--model`) and extracts the
        /// memories of a plain-text file; a profile without a model uses the
        /// deterministic decider and cannot read plain text [default: the
        /// default profile].
        #[arg(long, value_parser = Name)]
        profile: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Undo an external memory import: its events are removed from every
    /// view and what they superseded is active again.
    Undo {
        /// The import id (or a unique prefix) printed by `import memory`.
        id: String,
        /// Tenant (a record of another tenant is not found).
        #[arg(long, default_value = "", value_parser = Name)]
        tenant: String,
        /// Why (kept in the record).
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Options shared by ingest and import.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Store the valid items and write rejected ones, with reasons, to FILE (JSONL).
    #[arg(long, value_name = "FILE")]
    pub skip_invalid: Option<PathBuf>,
    /// Acknowledge batches once in OS buffers instead of fsyncing each one
    /// (survives a process crash, not a power loss).
    #[arg(long)]
    pub no_fsync: bool,
    /// Records per committed batch, 1..=1000000.
    #[arg(long, value_name = "N", default_value_t = strataflow::pipeline::ingest::DEFAULT_BATCH_RECORDS, value_parser = in_range::<usize>(limits::BATCH_RECORDS))]
    pub batch_records: usize,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Store and seal only; leave summaries, events and the graph to `resume`.
    #[arg(long)]
    pub no_derive: bool,
    /// Worker threads, 1..=256 (default: the machine's cores). Results do not depend on it.
    #[arg(long, value_name = "N", value_parser = in_range::<usize>(limits::WORKERS))]
    pub workers: Option<usize>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `ingest --nats`: publish to a JetStream stream instead of storing.
#[derive(Debug, Args)]
pub struct NatsPublishArgs {
    /// Publish each valid message to this NATS JetStream server
    /// (comma-separated URLs for a cluster) instead of storing it here.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// Stream replicas if the stream is created now (default: 3 on a NATS
    /// cluster, 1 on a single server).
    #[arg(long, value_name = "N", requires = "nats", value_parser = in_range::<usize>((1, 5)))]
    pub replicas: Option<usize>,
    /// Partitions if the stream is created now (an existing stream keeps
    /// its own), 1..=1024.
    #[arg(long, value_name = "P", requires = "nats", default_value_t = strataflow_cluster::DEFAULT_PARTITIONS, value_parser = in_range::<u32>((1, 1024)))]
    pub stream_partitions: u32,
    /// Subject and stream prefix.
    #[arg(
        long,
        value_name = "PREFIX",
        requires = "nats",
        default_value = "strataflow"
    )]
    pub prefix: String,
    /// Seconds a failed publish (a server killed, a leader election) is
    /// sent again, with backoff, before the ingest stops with its error,
    /// 1..=3600.
    #[arg(long, value_name = "S", requires = "nats", default_value_t = 60, value_parser = in_range::<u64>((1, 3600)))]
    pub publish_timeout: u64,
}

/// `node`: a strataflow node of a NATS JetStream cluster.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The NATS server (comma-separated URLs for a cluster).
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// The partitions this node owns (comma-separated numbers).
    #[arg(long, value_name = "P,…", value_delimiter = ',', required = true)]
    pub partitions: Vec<u32>,
    /// Subject and stream prefix.
    #[arg(long, value_name = "PREFIX", default_value = "strataflow")]
    pub prefix: String,
    /// Messages fetched and stored per batch, 1..=10000.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = in_range::<usize>((1, strataflow_cluster::node::MAX_BATCH)))]
    pub batch: usize,
    /// Exit once the owned partitions are consumed to their end and the
    /// views refreshed, instead of waiting for more.
    #[arg(long)]
    pub drain: bool,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
}
