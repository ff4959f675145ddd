//! The `strataflow` command line: parse, run, report one clear error line.

mod args;
mod cluster;
mod export;
mod memories;
#[cfg(test)]
mod no_panic;
mod paths;
mod progress;
mod remote;
mod render;
mod server;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use strataflow::eval::EvalError;
use strataflow::log::StoreError;
use strataflow::pipeline::ingest::{IngestError, IngestStats, OnInvalid};
use strataflow::{Memory, MemoryError, QueryError};

use args::{
    Cli, Command, EvalCommand, ExpandCommand, ExportCommand, GovernArgs, ImportCommand, IngestArgs,
    ProfileCommand, SearchArgs, SearchChannel,
};
use progress::Progress;
use strataflow::log::record::{Actor, GovernanceAction};
use strataflow::operators::decay::parse_expand_target;
use strataflow::operators::evidence_gate::AssessmentInput;
use strataflow::{Channel, SearchRequest, ViewsOptions};

/// Exit status of a usage error.
const EXIT_USAGE: u8 = 2;
/// Exit status when input was refused.
const EXIT_REFUSED: u8 = 3;
/// Exit status when audit found problems.
const EXIT_AUDIT_FAILED: u8 = 4;

/// A command's failure: message and exit status.
struct Failure {
    message: String,
    status: u8,
}

impl From<MemoryError> for Failure {
    fn from(e: MemoryError) -> Self {
        let status = match &e {
            MemoryError::Ingest(e) if matches!(**e, IngestError::Refused { .. }) => EXIT_REFUSED,
            MemoryError::Store(StoreError::Damaged { .. }) => EXIT_AUDIT_FAILED,
            MemoryError::Ingest(e)
                if matches!(**e, IngestError::Store(StoreError::Damaged { .. })) =>
            {
                EXIT_AUDIT_FAILED
            }
            MemoryError::Query(QueryError::InvalidId { .. } | QueryError::InvalidFilter { .. }) => {
                EXIT_USAGE
            }
            // A refused argument of a keyed-memory call; a failed embedding is 1.
            MemoryError::KeyedMemory(k) => match k {
                strataflow::KeyedMemoryError::Embed { .. } => 1,
                _ => EXIT_USAGE,
            },
            _ => 1,
        };
        let mut message = e.to_string();
        if matches!(e, MemoryError::Store(StoreError::InUse { .. })) {
            message.push_str(
                "; if that process is `strataflow serve`, run read commands against it with --server URL",
            );
        }
        Self { message, status }
    }
}

impl From<EvalError> for Failure {
    fn from(e: EvalError) -> Self {
        match e {
            EvalError::Memory(e) => Self::from(e),
            e @ (EvalError::NoObservations { .. } | EvalError::BadObservation { .. }) => Self {
                message: e.to_string(),
                status: EXIT_REFUSED,
            },
            other => Self {
                message: other.to_string(),
                status: 1,
            },
        }
    }
}

impl From<paths::Refusal> for Failure {
    fn from(r: paths::Refusal) -> Self {
        Self {
            message: r.0,
            status: EXIT_USAGE,
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        // A reader that stopped early (`| head`) is not an error.
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Self {
                message: String::new(),
                status: 0,
            };
        }
        Self {
            message: e.to_string(),
            status: 1,
        }
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if !f.message.is_empty() {
                eprintln!("error: {}", f.message);
            }
            ExitCode::from(f.status)
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // With tracing-subscriber's `tracing-log` feature, `try_init` also
    // bridges the `log` crate (fjall's and lsm-tree's records) into this
    // subscriber, at the filter's maximum level.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn data_dir(cli: &Cli) -> PathBuf {
    cli.data
        .clone()
        .or_else(|| std::env::var_os("STRATAFLOW_DATA").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("strataflow-data"))
}

/// `--offline`, for every data directory this process opens.
static OFFLINE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Opens (creating if needed) a data directory, honouring `--offline`.
fn open(dir: &Path) -> Result<Memory, Failure> {
    let mut memory = Memory::open(dir)?;
    memory.set_offline(OFFLINE.load(std::sync::atomic::Ordering::Relaxed))?;
    Ok(memory)
}

/// Opens an existing data directory, honouring `--offline`.
fn open_existing(dir: &Path) -> Result<Memory, Failure> {
    let mut memory = Memory::open_existing(dir)?;
    memory.set_offline(OFFLINE.load(std::sync::atomic::Ordering::Relaxed))?;
    Ok(memory)
}

fn run(cli: Cli) -> Result<(), Failure> {
    let dir = data_dir(&cli);
    OFFLINE.store(cli.offline, std::sync::atomic::Ordering::Relaxed);
    let mut out = std::io::stdout().lock();
    if let Some(server) = &cli.server {
        if remote::run(&mut out, server, cli.api_key.as_deref(), &cli.command)? {
            return Ok(());
        }
        if !matches!(cli.command, Command::Serve(_)) {
            return Err(Failure {
                message: format!(
                    "this command works on the data directory itself and cannot run against --server {server}"
                ),
                status: EXIT_USAGE,
            });
        }
    }
    match cli.command {
        Command::Init { block_turns, json } => {
            let memory = Memory::open_with(&dir, block_turns)?;
            if json {
                render::json(
                    &mut out,
                    &serde_json::json!({
                        "data_dir": dir,
                        "block_turns": memory.block_turns(),
                    }),
                )?;
            } else {
                writeln!(
                    out,
                    "data directory {} ready: blocks of {} turns",
                    dir.display(),
                    memory.block_turns()
                )?;
            }
        }
        Command::Gen {
            messages,
            threads,
            tenants,
            seed,
            output,
            json,
        } => {
            // `gen` uses no data directory: its output is kept out of one
            // only when `--data` names an existing store.
            if let Some(path) = &output
                && strataflow::log::integrity::looks_like_store(&dir)
            {
                paths::check_output("-o", path, &[], &dir)?;
            }
            let options = strataflow_testkit::synthetic::SyntheticOptions {
                messages,
                threads,
                seed,
                tenants,
            };
            let stats = match &output {
                Some(path) => {
                    let file = File::create(path).map_err(|e| Failure {
                        message: format!("cannot create {}: {e}", path.display()),
                        status: 1,
                    })?;
                    let mut w = BufWriter::new(file);
                    let stats = strataflow_testkit::synthetic::write_archive(&options, &mut w)?;
                    w.flush()?;
                    stats
                }
                None => {
                    let mut w = BufWriter::new(&mut out);
                    let stats = strataflow_testkit::synthetic::write_archive(&options, &mut w)?;
                    w.flush()?;
                    stats
                }
            };
            if json {
                // `--json` requires `-o`: the archive is not on standard output.
                render::json(
                    &mut out,
                    &serde_json::json!({
                        "messages": stats.messages,
                        "threads": stats.threads,
                        "bytes": stats.bytes,
                        "tool_calls": stats.tool_calls,
                        "output": output,
                    }),
                )?;
            } else if let Some(path) = output {
                eprintln!(
                    "wrote {} messages in {} threads ({} bytes) to {}",
                    stats.messages,
                    stats.threads,
                    stats.bytes,
                    path.display()
                );
            }
        }
        Command::Ingest {
            file,
            options,
            nats,
        } => {
            if let Some(url) = &nats.nats {
                return cluster::ingest(&mut out, url, &file, &options, &nats);
            }
            check_rejects(&options, &file, &dir)?;
            let memory = open(&dir)?;
            run_ingest(
                &mut out,
                &memory,
                &file,
                &options,
                |opts, on_invalid, progress| memory.ingest_jsonl(&file, opts, on_invalid, progress),
            )?;
        }
        Command::Import(ImportCommand::Locomo {
            file,
            tenant,
            options,
        }) => {
            check_rejects(&options, &file, &dir)?;
            let memory = open(&dir)?;
            run_ingest(
                &mut out,
                &memory,
                &file,
                &options,
                |opts, on_invalid, progress| {
                    memory
                        .tenant(&tenant)
                        .import_locomo(&file, opts, on_invalid, progress)
                },
            )?;
        }
        Command::Import(ImportCommand::Chatgpt {
            file,
            tenant,
            options,
        }) => {
            let settings = export::settings(tenant, None)?;
            export::run(
                &mut out,
                &dir,
                &file,
                export::Format::Chatgpt,
                settings,
                &options,
            )?;
        }
        Command::Import(ImportCommand::Claude {
            file,
            tenant,
            options,
        }) => {
            let settings = export::settings(tenant, None)?;
            export::run(
                &mut out,
                &dir,
                &file,
                export::Format::Claude,
                settings,
                &options,
            )?;
        }
        Command::Import(ImportCommand::ChatJsonl {
            file,
            tenant,
            start,
            options,
        }) => {
            let settings = export::settings(tenant, start.as_deref())?;
            export::run(
                &mut out,
                &dir,
                &file,
                export::Format::ChatJsonl,
                settings,
                &options,
            )?;
        }
        Command::Import(ImportCommand::Parquet { dir: from }) => {
            use strataflow::interchange::import::StagedImport;
            let failed = |e: strataflow::interchange::import::ImportError| Failure {
                message: e.to_string(),
                status: 1,
            };
            // All or nothing: load beside the target, rename into place
            // once records and views are complete.
            let staged = StagedImport::begin(&dir).map_err(failed)?;
            let report = {
                let memory = open(staged.staging())?;
                memory.import_parquet(&from)?
            };
            staged.finish().map_err(failed)?;
            writeln!(
                out,
                "imported {} records from {} (last sequence {})",
                report.records,
                from.display(),
                report.last_seq
            )?;
        }
        Command::Import(ImportCommand::Memory {
            file,
            tenant,
            dry_run,
            accept_uncertain,
            imported_at,
            profile,
            json,
        }) => {
            let imported_at = imported_at
                .map(|t| {
                    strataflow::log::SourceTime::parse_rfc3339(&t).ok_or_else(|| Failure {
                        message: format!("--imported-at `{t}` is not an RFC 3339 time"),
                        status: 2,
                    })
                })
                .transpose()?;
            let text = std::fs::read_to_string(&file).map_err(|e| Failure {
                message: format!("cannot read {}: {e}", file.display()),
                status: 1,
            })?;
            let memory = if dry_run {
                open_existing(&dir)?
            } else {
                open(&dir)?
            };
            let options = strataflow::ExternalImportOptions {
                tenant,
                dry_run,
                accept_uncertain,
                imported_at,
                profile,
                ..strataflow::ExternalImportOptions::default()
            };
            let report = memory
                .import_external_memory(&text, &options)
                .map_err(|e| match e {
                    MemoryError::ExternalImport(e) => Failure {
                        message: format!("{}: {e}", file.display()),
                        status: EXIT_REFUSED,
                    },
                    MemoryError::ImportText(e) => Failure {
                        message: format!("{}: {e}", file.display()),
                        status: 1,
                    },
                    other => Failure::from(other),
                })?;
            render::external_import(&mut out, &report, json)?;
        }
        Command::Import(ImportCommand::Undo {
            id,
            tenant,
            reason,
            json,
        }) => {
            let memory = open_existing(&dir)?;
            let report = memory
                .tenant(&tenant)
                .undo_import(&id, Actor::User, reason)?;
            render::undo_import(&mut out, &report, json)?;
        }
        Command::Stats { json } => {
            let memory = open_existing(&dir)?;
            render::stats(&mut out, &memory.stats()?, json)?;
        }
        Command::Blocks {
            thread,
            tenant,
            json,
        } => {
            let memory = open_existing(&dir)?;
            render::blocks(&mut out, &memory.tenant(&tenant).blocks(&thread)?, json)?;
        }
        Command::Show { id, tenant } => {
            let memory = open_existing(&dir)?;
            render::record(&mut out, &memory.tenant(&tenant).show(&id)?)?;
        }
        Command::Resume { profile, json } => {
            let memory = open_existing(&dir)?;
            run_derive(&mut out, &memory, profile.as_deref(), false, json)?;
        }
        Command::Status { profile, json } => {
            let memory = open_existing(&dir)?;
            render::status(&mut out, &memory.status(profile.as_deref())?, json)?;
        }
        Command::Plan { profile, json } => {
            let memory = open_existing(&dir)?;
            render::plan(&mut out, &memory.plan(profile.as_deref())?, json)?;
        }
        Command::Events {
            thread,
            tenant,
            profile,
            json,
        } => {
            let memory = open_existing(&dir)?;
            let events = memory
                .tenant(&tenant)
                .events(&strataflow::EventsQuery { profile, thread })?;
            render::events(&mut out, &events, json)?;
        }
        Command::Graph {
            tenant,
            at,
            profile,
            json,
        } => {
            let memory = open_existing(&dir)?;
            let graph = memory.tenant(&tenant).graph(profile.as_deref())?;
            let graph = match at {
                Some(text) => graph.at(parse_at(&text)?),
                None => graph,
            };
            render::graph(&mut out, &graph, json)?;
        }
        Command::Search(a) => search(&mut out, &dir, a)?,
        Command::Views {
            tenant,
            verify,
            json,
        } => {
            let memory = open_existing(&dir)?;
            let tenants = match tenant {
                Some(t) => vec![t],
                None => memory.tenants()?,
            };
            let options = ViewsOptions {
                profile: None,
                verify,
            };
            let reports = memory.views(&tenants, &options)?;
            render::views(&mut out, &reports, json)?;
            let differ = reports
                .iter()
                .filter(|r| r.rebuilt.as_ref().is_some_and(|d| *d != r.digest))
                .count();
            if differ > 0 {
                return Err(Failure {
                    message: format!("{differ} view(s) differ from a rebuild"),
                    status: EXIT_AUDIT_FAILED,
                });
            }
        }
        Command::Replay {
            profile,
            verify,
            json,
        } => replay(&mut out, &dir, profile.as_deref(), verify, json)?,
        Command::Expand(e) => expand(&mut out, &dir, e)?,
        Command::Profile(p) => profile(&mut out, &dir, p)?,
        Command::Export(ExportCommand::Parquet {
            dir: to,
            tenant,
            since,
            profile,
            json,
        }) => {
            paths::check_output("export directory", &to, &[], &dir)?;
            let memory = open_existing(&dir)?;
            let options = strataflow::interchange::export::ExportOptions { tenant, since };
            let manifest = memory.export_parquet(&to, &options, profile.as_deref())?;
            if json {
                render::json(&mut out, &manifest)?;
            } else {
                writeln!(
                    out,
                    "exported records {}..={} to {}:",
                    manifest.since_seq + 1,
                    manifest.through_seq,
                    to.display()
                )?;
                for (file, rows) in &manifest.files {
                    writeln!(out, "  {file:<26} {rows:>10} rows")?;
                }
                writeln!(
                    out,
                    "views of profile `{}`:",
                    // default: An export without views has no profile: printed as "".
                    manifest.profile.as_deref().unwrap_or_default()
                )?;
                for (file, rows) in &manifest.views {
                    writeln!(out, "  {file:<26} {rows:>10} rows")?;
                }
            }
        }
        Command::Diff {
            a,
            b,
            tenant,
            queries,
            budget,
            json,
        } => {
            let memory = open_existing(&dir)?;
            for profile in [&a, &b] {
                let status = memory.status(Some(profile))?;
                if status.ready_blocks < status.blocks {
                    eprintln!(
                        "warning: profile `{profile}` has derived {} of {} blocks; the diff shows only what is derived (run `strataflow replay --profile {profile}`)",
                        status.ready_blocks, status.blocks
                    );
                }
            }
            match queries {
                Some(file) => {
                    let diff = strataflow::eval::query_diff::diff_queries(
                        &memory, &a, &b, &tenant, &file, budget,
                    )?;
                    render::query_diff(&mut out, &diff, json)?;
                }
                None => {
                    let diff = memory.tenant(&tenant).diff(&a, &b)?;
                    render::diff(&mut out, &a, &b, &diff, json)?;
                }
            }
        }
        Command::Context {
            thread,
            tenant,
            profile,
            json,
        } => {
            let memory = open_existing(&dir)?;
            let blocks = memory
                .tenant(&tenant)
                .context(&strataflow::ContextOptions { profile, thread })?;
            render::blocks_at_levels(&mut out, &blocks, json)?;
        }
        Command::Assess {
            batch,
            tenant,
            verdict,
            evidence,
            fit,
            missing,
            next,
            json,
        } => {
            let memory = open_existing(&dir)?;
            let input = AssessmentInput {
                verdict: verdict.name().to_owned(),
                evidence,
                fit,
                missing,
                next,
            };
            let outcome = memory.tenant(&tenant).assess(&batch, &input)?;
            render::assessment(&mut out, &outcome, json)?;
        }
        Command::Use {
            batch,
            tenant,
            refs,
            json,
        } => {
            let memory = open_existing(&dir)?;
            let outcome = memory.tenant(&tenant).use_refs(&batch, &refs)?;
            render::used(&mut out, &outcome, json)?;
        }
        Command::Eval(EvalCommand::Locomo {
            files,
            budgets,
            extractor,
            graph,
            projectors,
            embedder,
            json,
        }) => {
            if graph {
                let report = strataflow::eval::graph::evaluate_graph(
                    &files,
                    &projectors,
                    extractor.as_deref(),
                )?;
                render::eval_graph(&mut out, &report, json)?;
            } else {
                if projectors.len() > 1 {
                    return Err(Failure {
                        message: "--projector: give one without --graph (it derives with it); repeat it only with --graph".into(),
                        status: 2,
                    });
                }
                let report = strataflow::eval::locomo::evaluate_with(
                    &files,
                    &budgets,
                    extractor.as_deref(),
                    projectors.first().map(String::as_str),
                    embedder.as_deref(),
                )?;
                render::eval(&mut out, &report, json)?;
            }
        }
        Command::Forget(a) => govern(&mut out, &dir, a, GovernanceAction::Forget)?,
        Command::Restore(a) => govern(&mut out, &dir, a, GovernanceAction::Restore)?,
        Command::Pin(a) => govern(&mut out, &dir, a, GovernanceAction::Pin)?,
        Command::Unpin(a) => govern(&mut out, &dir, a, GovernanceAction::Unpin)?,
        Command::Remember(args) => memories::remember(&mut out, &dir, args)?,
        Command::Recall(args) => memories::recall(&mut out, &dir, args)?,
        Command::Memory(command) => memories::memory(&mut out, &dir, command)?,
        Command::Serve(args) => server::serve(&mut out, &dir, &args)?,
        Command::Node(args) => cluster::node(&mut out, &dir, &args)?,
        Command::Mcp { tenant, queue } => {
            drop(out);
            server::mcp(&dir, tenant, queue)?;
            return Ok(());
        }
        Command::Keys(command) => server::keys(&mut out, &dir, command)?,
        Command::Recover {
            dir: from,
            to,
            json,
        } => {
            let report = Memory::recover(&from, &to)?;
            render::recovery(&mut out, &report, json)?;
        }
        Command::Audit { deep, json } => {
            let (memory, damage) = if deep {
                let (mut memory, damage) = Memory::open_for_deep_audit(&dir)?;
                memory.set_offline(OFFLINE.load(std::sync::atomic::Ordering::Relaxed))?;
                (memory, damage)
            } else {
                (open_existing(&dir)?, None)
            };
            let report = if deep {
                memory.audit_deep()?
            } else {
                memory.audit()?
            };
            if let Some(damage) = damage {
                render::audit(&mut out, &report, json)?;
                return Err(Failure {
                    message: format!(
                        "{damage}; {} problem(s) found reading every entry (copy what is intact with `strataflow recover {} --to NEW_DIR`)",
                        report.problems.len(),
                        dir.display()
                    ),
                    status: EXIT_AUDIT_FAILED,
                });
            }
            render::audit(&mut out, &report, json)?;
            if !report.is_clean() {
                return Err(Failure {
                    message: format!("audit found {} problem(s)", report.problems.len()),
                    status: EXIT_AUDIT_FAILED,
                });
            }
            // The records are intact: every persisted view must equal a rebuild.
            let mut differ = Vec::new();
            let mut checked = 0;
            let verify = ViewsOptions {
                profile: None,
                verify: true,
            };
            for r in memory.views(&memory.tenants()?, &verify)? {
                checked += 1;
                if r.rebuilt.as_ref() != Some(&r.digest) {
                    differ.push(format!("view {} of tenant `{}`", r.view, r.tenant));
                }
            }
            if !json {
                writeln!(
                    out,
                    "views: {checked} checked, {} differ from a rebuild",
                    differ.len()
                )?;
            }
            if !differ.is_empty() {
                return Err(Failure {
                    message: format!("{} differ from a rebuild", differ.join(", ")),
                    status: EXIT_AUDIT_FAILED,
                });
            }
        }
    }
    Ok(())
}

/// Parses `--at TIME`.
fn parse_at(text: &str) -> Result<strataflow::log::Timestamp, Failure> {
    strataflow::log::SourceTime::parse_rfc3339(text)
        .map(strataflow::log::SourceTime::instant)
        .ok_or_else(|| Failure {
            message: format!("--at `{text}` is not an RFC 3339 time (e.g. 2023-06-01T00:00:00Z)"),
            status: 2,
        })
}

/// `expand event|node|block`.
fn expand(out: &mut dyn Write, dir: &Path, e: ExpandCommand) -> Result<(), Failure> {
    let memory = open_existing(dir)?;
    match e {
        ExpandCommand::Event { id, tenant, json } => {
            let x = memory.tenant(&tenant).expand_event(&id)?;
            render::expanded_event(out, &x, json)?;
        }
        ExpandCommand::Node {
            id,
            at,
            tenant,
            profile,
            json,
        } => {
            let at = at.as_deref().map(parse_at).transpose()?;
            let x = memory
                .tenant(&tenant)
                .expand_node(&id, &strataflow::ExpandOptions { profile, at })?;
            render::expanded_node(out, &x, json)?;
        }
        ExpandCommand::Block {
            id,
            tenant,
            level,
            profile,
            json,
        } => {
            let target = parse_expand_target(&level).ok_or_else(|| Failure {
                message: format!("--level `{level}`: expected L0…L5, next or raw"),
                status: 2,
            })?;
            let options = strataflow::ExpandOptions { profile, at: None };
            let x = memory.tenant(&tenant).expand_block(&id, target, &options)?;
            render::expanded_block(out, &x, json)?;
        }
    }
    Ok(())
}

/// `search`: one query, or every line of a queries file.
/// `search dense`: the profile's derived embeddings by cosine.
fn dense_search(out: &mut dyn Write, memory: &Memory, a: &SearchArgs) -> Result<(), Failure> {
    if a.queries.is_some() {
        return Err(Failure {
            message: "search dense takes one QUERY, not --queries".to_owned(),
            status: EXIT_USAGE,
        });
    }
    let Some(query) = a.query.as_deref().filter(|q| !q.trim().is_empty()) else {
        return Err(Failure {
            message: "search dense needs a QUERY".to_owned(),
            status: EXIT_USAGE,
        });
    };
    let response = memory.dense_search_in(
        a.profile.as_deref(),
        &a.tenant,
        query,
        a.limit,
        a.thread.as_deref(),
    )?;
    if a.json {
        let text = serde_json::to_string(&response).map_err(|e| Failure {
            message: e.to_string(),
            status: 1,
        })?;
        writeln!(out, "{text}")?;
    } else {
        for hit in &response.hits {
            writeln!(
                out,
                "{:.4} {} {} {}",
                hit.similarity,
                hit.kind,
                hit.id,
                hit.text.replace('\n', " ")
            )?;
        }
    }
    Ok(())
}

/// Tenants a warning names at most.
const TENANTS_NAMED: usize = 5;

/// Warns on stderr when `tenant` is none of the directory's tenants (a
/// search that found nothing because `--tenant` was left out, after an
/// ingest whose lines name a tenant), naming the tenants it has.
fn warn_of_an_unknown_tenant(memory: &Memory, dir: &Path, tenant: &str) -> Result<(), Failure> {
    let tenants = memory.tenants()?;
    if tenants.is_empty() || tenants.iter().any(|t| t == tenant) {
        return Ok(());
    }
    let mut named: Vec<String> = tenants
        .iter()
        .take(TENANTS_NAMED)
        .map(|t| format!("`{t}`"))
        .collect();
    if tenants.len() > TENANTS_NAMED {
        named.push(format!("and {} more", tenants.len() - TENANTS_NAMED));
    }
    eprintln!(
        "warning: tenant `{tenant}` holds no messages in {}; its tenants are {} (pass --tenant NAME)",
        dir.display(),
        named.join(", ")
    );
    Ok(())
}

fn search(out: &mut dyn Write, dir: &Path, a: SearchArgs) -> Result<(), Failure> {
    let memory = open_existing(dir)?;
    let channel = match a.channel {
        SearchChannel::Dense => return dense_search(out, &memory, &a),
        SearchChannel::Events => Channel::Events,
        SearchChannel::Graph => Channel::Graph,
        SearchChannel::Raw => Channel::Raw,
        SearchChannel::All => Channel::All,
    };
    let base = SearchRequest {
        // default: No query text: a search by its filters only (README).
        query: a.query.clone().unwrap_or_default(),
        thread: a.thread.clone(),
        limit: a.limit,
        participants: a.participants.clone(),
        event_type: a.event_type.clone(),
        from: a.from.clone(),
        to: a.to.clone(),
        intent: a.intent.clone(),
        budget: a.budget,
    };
    let Some(file) = &a.queries else {
        let tenant = memory.tenant(&a.tenant);
        let options = strataflow::SearchOptions {
            profile: a.profile.clone(),
            channel,
        };
        let response = tenant.search(&base, &options)?;
        render::search(out, &response, a.json)?;
        if response.hits.is_empty() {
            warn_of_an_unknown_tenant(&memory, dir, &a.tenant)?;
        }
        return Ok(());
    };
    let text = std::fs::read_to_string(file).map_err(|e| Failure {
        message: format!("cannot read {}: {e}", file.display()),
        status: 1,
    })?;
    // A line's `tenant` field searches that tenant (else `--tenant`).
    let mut searchers: std::collections::BTreeMap<String, strataflow::Searcher> =
        std::collections::BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let refused = |message: String| Failure {
            message: format!("{}:{}: {message}", file.display(), i + 1),
            status: EXIT_REFUSED,
        };
        let mut value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| refused(e.to_string()))?;
        let tenant = match value.as_object_mut().and_then(|o| o.remove("tenant")) {
            None => a.tenant.clone(),
            Some(serde_json::Value::String(t)) => t,
            Some(other) => {
                return Err(refused(format!(
                    "field `tenant`: expected a string, found {other}"
                )));
            }
        };
        let mut request: SearchRequest =
            serde_json::from_value(value).map_err(|e| refused(e.to_string()))?;
        if request.budget.is_none() {
            request.budget = base.budget;
        }
        if request.thread.is_none() {
            request.thread.clone_from(&base.thread);
        }
        let searcher = match searchers.entry(tenant.clone()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(memory.tenant(&tenant).searcher(a.profile.as_deref())?)
            }
        };
        let hits = searcher.search(channel, &request).map_err(|e| match e {
            e @ MemoryError::Query(QueryError::InvalidFilter { .. }) => refused(e.to_string()),
            other => Failure::from(other),
        })?;
        let response = memory
            .tenant(&tenant)
            .record_search(channel, &request, hits)?;
        serde_json::to_writer(&mut *out, &response).map_err(std::io::Error::other)?;
        writeln!(out)?;
    }
    Ok(())
}

/// Appends one governance decision and reports the event's new status.
fn govern(
    out: &mut dyn Write,
    dir: &Path,
    args: GovernArgs,
    action: GovernanceAction,
) -> Result<(), Failure> {
    let memory = open_existing(dir)?;
    let name = match &action {
        GovernanceAction::Forget => "forgot",
        GovernanceAction::Restore => "restored",
        GovernanceAction::Pin => "pinned",
        GovernanceAction::Unpin => "unpinned",
        GovernanceAction::ExpandBlock { .. } => "expanded",
        GovernanceAction::UndoImport => "undid the import of",
    };
    let tenant = memory.tenant(&args.tenant);
    let record = tenant.govern(&args.event, action, Actor::User, args.reason)?;
    let event = tenant.show(&args.event)?.id;
    let status = tenant.event_status()?;
    let state = status.get(&event);
    if args.json {
        let result = serde_json::json!({
            "action": name,
            "event": event.to_string(),
            "status": state.map(|s| s.status.name()),
            "pinned": state.is_some_and(|s| s.pinned),
            "record": record.to_string(),
        });
        writeln!(out, "{result:#}")?;
        return Ok(());
    }
    writeln!(
        out,
        "{name} event {}: now {}{} (governance record {})",
        event.short(),
        state.map_or("unknown", |s| s.status.name()),
        if state.is_some_and(|s| s.pinned) {
            ", pinned"
        } else {
            ""
        },
        record.short()
    )?;
    Ok(())
}

/// `replay`: derive what a profile lacks, refresh its views, report.
fn replay(
    out: &mut dyn Write,
    dir: &Path,
    profile: Option<&str>,
    verify: bool,
    json: bool,
) -> Result<(), Failure> {
    let memory = open_existing(dir)?;
    let tenants = memory.tenants()?;
    let options = |verify| ViewsOptions {
        profile: profile.map(str::to_owned),
        verify,
    };
    let before = memory.views(&tenants, &options(false))?;
    let records_before = memory.stats()?.total_records;
    let stats = memory.derive(profile, &memory.derive_options(), &mut |_| {})?;
    let after = memory.views(&tenants, &options(verify))?;
    let written = memory.stats()?.total_records - records_before;
    let name = memory.profile_or_default(profile)?.name;
    let mut differ = Vec::new();
    // Per view after the replay: whether its digest changed, and the
    // rebuild check (with `--verify`).
    let mut rows = Vec::with_capacity(after.len());
    for view in &after {
        let old = before
            .iter()
            .find(|b| b.view == view.view && b.tenant == view.tenant)
            .map(|b| b.digest.as_str());
        let changed = old != Some(view.digest.as_str());
        let same = view.rebuilt.as_ref().map(|d| *d == view.digest);
        if same == Some(false) {
            differ.push(format!("{} of tenant `{}`", view.view, view.tenant));
        }
        rows.push((view, changed, same));
    }
    if json {
        let views: Vec<serde_json::Value> = rows
            .iter()
            .map(|(view, changed, same)| {
                serde_json::json!({
                    "view": view.view,
                    "tenant": view.tenant,
                    "last_seq": view.last_seq,
                    "digest": view.digest,
                    "changed": changed,
                    "rebuilt": view.rebuilt,
                    "rebuild_same": same,
                })
            })
            .collect();
        let report = serde_json::json!({
            "profile": name,
            "operator_runs": stats.runs,
            "records_written": written,
            "derive": stats,
            "views": views,
        });
        writeln!(out, "{report:#}")?;
    } else {
        writeln!(
            out,
            "replay of profile `{name}`: {} operator runs, {written} records written",
            stats.runs
        )?;
        for (view, changed, same) in &rows {
            let change = if *changed { "changed" } else { "unchanged" };
            let check = match (same, &view.rebuilt) {
                (Some(true), _) => ", rebuild: same".into(),
                (Some(false), Some(d)) => {
                    format!(", REBUILD DIFFERS: {}", d.get(..16).unwrap_or(d))
                }
                _ => String::new(),
            };
            writeln!(
                out,
                "  {:<16} tenant `{}`  digest {}  {change}{check}",
                view.view,
                view.tenant,
                view.digest.get(..16).unwrap_or(&view.digest)
            )?;
        }
    }
    if !differ.is_empty() {
        return Err(Failure {
            message: format!(
                "{} view(s) differ from a rebuild: {}",
                differ.len(),
                differ.join(", ")
            ),
            status: EXIT_AUDIT_FAILED,
        });
    }
    terminal_failures(&memory, profile)
}

/// An error when operator runs of the profile failed for good: everything
/// else was done and stays, but a script must not take the profile as
/// derived.
fn terminal_failures(memory: &Memory, profile: Option<&str>) -> Result<(), Failure> {
    let terminal: u64 = memory
        .status(profile)?
        .operators
        .iter()
        .map(|o| o.failed)
        .sum();
    if terminal == 0 {
        return Ok(());
    }
    Err(Failure {
        message: format!(
            "{terminal} operator run(s) failed the maximum number of times and are not retried; \
             `strataflow status` lists them with their last error"
        ),
        status: 1,
    })
}

/// `profile` subcommands.
fn profile(out: &mut dyn Write, dir: &Path, command: ProfileCommand) -> Result<(), Failure> {
    let memory = open_existing(dir)?;
    match command {
        ProfileCommand::List { json } => {
            let default = memory.default_profile()?.name;
            let profiles = memory.profiles()?;
            if json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&profiles).map_err(|e| Failure {
                        message: e.to_string(),
                        status: 1,
                    })?
                )?;
            } else {
                for p in profiles {
                    let mark = if p.name == default { " (default)" } else { "" };
                    writeln!(
                        out,
                        "{}{mark}: {} {} {}",
                        p.name, p.summarizer, p.extractor, p.projector
                    )?;
                }
            }
        }
        ProfileCommand::Show { name } => {
            let p = memory.profile(&name)?;
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&p).map_err(|e| Failure {
                    message: e.to_string(),
                    status: 1,
                })?
            )?;
        }
        ProfileCommand::Create {
            name,
            summarizer,
            extractor,
            projector,
            model,
            base_url,
            api_key_env,
            concurrency,
            timeout,
            embedder,
        } => {
            let base = memory.default_profile()?;
            let p = strataflow::operators::profile::Profile {
                name,
                summarizer: summarizer.unwrap_or(base.summarizer),
                extractor: extractor.unwrap_or(base.extractor),
                projector: projector.unwrap_or(base.projector),
                model: model.map(|model| strataflow::operators::profile::ModelEndpoint {
                    model,
                    base_url,
                    api_key_env,
                    concurrency: concurrency.max(1),
                    timeout_secs: timeout.max(1),
                }),
                embedder,
            };
            memory.save_profile(&p)?;
            writeln!(
                out,
                "profile {}: {} {} {} (derive with `strataflow resume --profile {}`)",
                p.name, p.summarizer, p.extractor, p.projector, p.name
            )?;
        }
        ProfileCommand::SetDefault { name } => {
            memory.set_default_profile(&name)?;
            writeln!(out, "default profile: {name}")?;
        }
    }
    Ok(())
}

/// Runs derivation for a profile with progress, then prints its summary.
fn run_derive(
    out: &mut dyn Write,
    memory: &Memory,
    profile: Option<&str>,
    quiet: bool,
    json: bool,
) -> Result<(), Failure> {
    let mut progress = Progress::new("derive", quiet);
    let stats = memory.derive(profile, &memory.derive_options(), &mut |s| {
        progress.update_derive(s)
    });
    progress.finish();
    let stats = stats?;
    if json {
        let summary = serde_json::json!({
            "profile": memory.profile_or_default(profile)?.name,
            "seconds": progress.elapsed().as_secs_f64(),
            "derive": stats,
        });
        writeln!(out, "{summary:#}")?;
    } else {
        render::derive_summary(out, &stats)?;
    }
    terminal_failures(memory, profile)
}

/// Refuses a `--skip-invalid` rejects file that is the input file or lies
/// in the data directory, before anything is created.
fn check_rejects(args: &IngestArgs, input: &Path, dir: &Path) -> Result<(), Failure> {
    if let Some(rejects) = &args.skip_invalid {
        paths::check_output("--skip-invalid", rejects, &[input], dir)?;
    }
    Ok(())
}

/// Runs an ingest with the shared options, progress and rejects file, then
/// prints its summary.
fn run_ingest(
    out: &mut dyn Write,
    memory: &Memory,
    file: &Path,
    args: &IngestArgs,
    call: impl FnOnce(
        &strataflow::pipeline::ingest::IngestOptions,
        OnInvalid<'_>,
        &mut dyn FnMut(&IngestStats),
    ) -> Result<IngestStats, MemoryError>,
) -> Result<(), Failure> {
    let mut options = memory.ingest_options()?;
    options.batch_records = args.batch_records;
    if let Some(workers) = args.workers {
        options.workers = workers;
    }
    if args.no_fsync {
        options.durability = strataflow::log::Durability::Buffered;
    }
    if args.no_derive {
        options.operators = None;
    }
    // default: A path without a file name labels its progress with nothing.
    let label = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut progress = Progress::new(&label, args.quiet);
    let result = match &args.skip_invalid {
        None => call(&options, OnInvalid::Refuse, &mut |s| progress.update(s)),
        Some(path) => {
            let file = File::create(path).map_err(|e| Failure {
                message: format!("cannot create rejects file {}: {e}", path.display()),
                status: 1,
            })?;
            let mut rejects = BufWriter::new(file);
            let result = call(&options, OnInvalid::Quarantine(&mut rejects), &mut |s| {
                progress.update(s)
            });
            rejects.flush()?;
            result
        }
    };
    progress.finish();
    let stats = result?;
    if args.json {
        let elapsed = progress.elapsed().as_secs_f64();
        let summary = serde_json::json!({
            "file": file.display().to_string(),
            "seconds": elapsed,
            "messages_per_second": stats.read as f64 / elapsed.max(1e-9),
            "ingest": stats,
            "rejects": args.skip_invalid.as_ref().map(|p| p.display().to_string()),
        });
        writeln!(out, "{summary:#}")?;
        return Ok(());
    }
    render::ingest_summary(
        out,
        memory,
        file,
        &stats,
        progress.elapsed(),
        args.skip_invalid.as_deref(),
    )?;
    Ok(())
}
