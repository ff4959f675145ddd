//! `remember`, `recall`, `memory forget`, `memory purge`: keyed memories
//! (seed 002) of a tenant, embedded by the data directory's embedder.

use std::io::Write;
use std::path::Path;

use strataflow::{PurgeOptions, RecallOptions, RememberEntry};

use super::args::{MemoryCommand, RecallArgs, RememberArgs};
use super::{EXIT_USAGE, Failure, open, open_existing};
// The one clock reading of keyed memories, shared with `serve`.
use strataflow_server::service::keyed::now;

fn usage(message: String) -> Failure {
    Failure {
        message,
        status: EXIT_USAGE,
    }
}

fn print_json(out: &mut dyn Write, value: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Failure {
        message: e.to_string(),
        status: 1,
    })?;
    writeln!(out, "{text}")?;
    Ok(())
}

/// `remember`.
pub fn remember(out: &mut dyn Write, dir: &Path, args: RememberArgs) -> Result<(), Failure> {
    let content = match &args.content {
        None => serde_json::Value::Null,
        Some(text) => {
            serde_json::from_str(text).map_err(|e| usage(format!("--content is not JSON: {e}")))?
        }
    };
    let memory = open(dir)?;
    let embedder = memory.keyed_embedder(args.embedder.as_deref())?;
    let entry = RememberEntry {
        namespace: args.namespace,
        id: args.id,
        text: args.text,
        content,
        metadata: args.metadata,
    };
    let r = memory.remember(&args.scope.tenant, embedder.as_ref(), &entry, now())?;
    if args.scope.json {
        return print_json(out, &r);
    }
    writeln!(
        out,
        "{} {}/{} (record {}, created {}, updated {})",
        if r.replaced { "replaced" } else { "remembered" },
        r.entry.namespace,
        r.entry.id,
        r.entry.record.short(),
        r.entry.created_at.to_rfc3339(),
        r.entry.updated_at.to_rfc3339()
    )?;
    Ok(())
}

/// `recall`.
pub fn recall(out: &mut dyn Write, dir: &Path, args: RecallArgs) -> Result<(), Failure> {
    let memory = open_existing(dir)?;
    let embedder = memory.keyed_embedder(args.embedder.as_deref())?;
    let options = RecallOptions {
        limit: args.limit,
        min_similarity: args.min_similarity,
        exclude: args.exclude,
        metadata: args.metadata,
    };
    let matches = memory.recall(
        &args.scope.tenant,
        embedder.as_ref(),
        &args.namespace,
        &args.text,
        &options,
    )?;
    if args.scope.json {
        return print_json(out, &matches);
    }
    for m in &matches {
        writeln!(
            out,
            "{} {:.3} {}",
            m.entry.id,
            m.similarity,
            serde_json::to_string(&m.entry.content).unwrap_or_default()
        )?;
    }
    Ok(())
}

/// `memory forget` and `memory purge`.
pub fn memory(out: &mut dyn Write, dir: &Path, command: MemoryCommand) -> Result<(), Failure> {
    match command {
        MemoryCommand::Forget {
            id,
            namespace,
            scope,
        } => {
            let memory = open_existing(dir)?;
            let record = memory.forget_memory(&scope.tenant, &namespace, &id)?;
            if scope.json {
                return print_json(
                    out,
                    &serde_json::json!({"forgotten": record.is_some(), "record": record}),
                );
            }
            match record {
                Some(r) => writeln!(out, "forgot {namespace}/{id} (record {})", r.short())?,
                None => writeln!(out, "{namespace}/{id}: no such memory")?,
            }
        }
        MemoryCommand::Purge {
            older_than,
            namespace,
            limit,
            scope,
        } => {
            let cutoff = strataflow::older_than_cutoff(&older_than, now())
                .map_err(|e| usage(e.to_string()))?;
            let memory = open_existing(dir)?;
            let report = memory.purge(&scope.tenant, cutoff, &PurgeOptions { namespace, limit })?;
            if scope.json {
                return print_json(out, &report);
            }
            writeln!(
                out,
                "purged {} keyed memor{} last written before {}",
                report.purged,
                if report.purged == 1 { "y" } else { "ies" },
                cutoff.to_rfc3339()
            )?;
        }
    }
    Ok(())
}
