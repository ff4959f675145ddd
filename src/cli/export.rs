//! `import chatgpt|claude|chat-jsonl`: chat archives streamed through the
//! ingest, with byte-level progress and a summary (text or `--json`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use strataflow::MemoryError;
use strataflow::pipeline::ingest::{IngestError, IngestStats, OnInvalid};
use strataflow::pipeline::source::SourceError;
use strataflow::pipeline::source::export::{ExportCounts, ExportSettings, ExportSource};

pub use strataflow::pipeline::source::export::ExportFormat as Format;

use super::args::IngestArgs;
use super::{EXIT_REFUSED, EXIT_USAGE, Failure, Progress, check_rejects, open, render};

/// The settings from the command line (`--start` checked).
pub fn settings(tenant: String, start: Option<&str>) -> Result<ExportSettings, Failure> {
    let start = start
        .map(|t| {
            strataflow::log::SourceTime::parse_rfc3339(t).ok_or_else(|| Failure {
                message: format!(
                    "--start `{t}` is not an RFC 3339 time (e.g. 2024-05-01T09:00:00Z)"
                ),
                status: EXIT_USAGE,
            })
        })
        .transpose()?;
    Ok(ExportSettings {
        tenant,
        start,
        spool_dir: None,
    })
}

/// Runs the import and prints its summary.
pub fn run(
    out: &mut dyn Write,
    dir: &Path,
    file: &Path,
    format: Format,
    settings: ExportSettings,
    args: &IngestArgs,
) -> Result<(), Failure> {
    check_rejects(args, file, dir)?;
    let tenant = settings.tenant.clone();
    let memory = open(dir)?;
    // The validation pass spools what it read into the data directory (an
    // unnamed file), so that the storing pass does not parse the export again.
    let settings = ExportSettings {
        spool_dir: Some(dir.to_path_buf()),
        ..settings
    };
    let source = ExportSource::new(file, format, settings);
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
    let result = {
        let mut report = |s: &IngestStats| progress.update_export(s, &source.counters().snapshot());
        match &args.skip_invalid {
            None => memory.ingest_source(&source, &options, OnInvalid::Refuse, &mut report),
            Some(path) => {
                let f = File::create(path).map_err(|e| Failure {
                    message: format!("cannot create rejects file {}: {e}", path.display()),
                    status: 1,
                })?;
                let mut rejects = BufWriter::new(f);
                let result = memory.ingest_source(
                    &source,
                    &options,
                    OnInvalid::Quarantine(&mut rejects),
                    &mut report,
                );
                rejects.flush()?;
                result
            }
        }
    };
    progress.finish();
    let stats = result.map_err(|e| match &e {
        // A file that is not in the format at all is refused input too.
        MemoryError::Ingest(inner)
            if matches!(**inner, IngestError::Source(SourceError::Format(_))) =>
        {
            Failure {
                message: e.to_string(),
                status: EXIT_REFUSED,
            }
        }
        _ => Failure::from(e),
    })?;
    let counts = source.counters().snapshot();
    let elapsed = progress.elapsed();
    if args.json {
        let summary = serde_json::json!({
            "file": file.display().to_string(),
            "format": format.name(),
            "tenant": tenant,
            "seconds": elapsed.as_secs_f64(),
            "messages_per_second": stats.read as f64 / elapsed.as_secs_f64().max(1e-9),
            "source": counts,
            "ingest": stats,
            "rejects": args.skip_invalid.as_ref().map(|p| p.display().to_string()),
        });
        writeln!(out, "{summary:#}")?;
        return Ok(());
    }
    render::ingest_summary(
        out,
        &memory,
        file,
        &stats,
        elapsed,
        args.skip_invalid.as_deref(),
    )?;
    write_counts(out, format, &counts)?;
    Ok(())
}

fn write_counts(out: &mut dyn Write, format: Format, c: &ExportCounts) -> std::io::Result<()> {
    let unit = if format == Format::ChatJsonl {
        "lines"
    } else {
        "conversations"
    };
    writeln!(
        out,
        "  {} {unit} ({} empty, {} rejected), {} messages read ({} thread headers), {} times inferred",
        c.conversations,
        c.empty_conversations,
        c.rejected_conversations,
        c.messages,
        c.headers,
        c.inferred_times
    )?;
    writeln!(
        out,
        "  skipped {} messages on branches left behind, {} hidden, {} empty, {} of kinds not kept",
        c.skipped_branch, c.skipped_hidden, c.skipped_empty, c.skipped_unsupported
    )
}
