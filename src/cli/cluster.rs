//! `ingest --nats` and `node`: the NATS JetStream scale-out
//! (`strataflow-cluster`, docs/guides/cluster.md).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use strataflow::pipeline::ingest::OnInvalid;
use strataflow::{JsonlFile, MemoryError};
use strataflow_cluster::ClusterError;
use strataflow_cluster::publish::{PublishOptions, publish};

use super::Failure;
use super::args::{IngestArgs, NatsPublishArgs, NodeArgs};
use super::progress::Progress;

impl From<ClusterError> for Failure {
    fn from(e: ClusterError) -> Self {
        match e {
            ClusterError::Memory(e) => e.into(),
            e => Self {
                message: e.to_string(),
                status: 1,
            },
        }
    }
}

/// `ingest --nats URL FILE`: validates as `ingest` does and publishes.
pub(super) fn ingest(
    out: &mut dyn Write,
    url: &str,
    file: &Path,
    args: &IngestArgs,
    nats: &NatsPublishArgs,
) -> Result<(), Failure> {
    let connection = strataflow_cluster::Connection::connect(url)?;
    let options = PublishOptions {
        prefix: nats.prefix.clone(),
        partitions: nats.stream_partitions,
        replicas: nats.replicas,
        publish_timeout: std::time::Duration::from_secs(nats.publish_timeout),
    };
    let source = JsonlFile(file.to_path_buf());
    // default: A path without a file name labels its progress with nothing.
    let label = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut progress = Progress::new(&label, args.quiet);
    let result = match &args.skip_invalid {
        None => publish(
            &connection,
            &source,
            &options,
            OnInvalid::Refuse,
            &mut |s| progress.update(s),
        ),
        Some(path) => {
            let f = File::create(path).map_err(|e| Failure {
                message: format!("cannot create rejects file {}: {e}", path.display()),
                status: 1,
            })?;
            let mut rejects = BufWriter::new(f);
            let result = publish(
                &connection,
                &source,
                &options,
                OnInvalid::Quarantine(&mut rejects),
                &mut |s| progress.update(s),
            );
            rejects.flush()?;
            result
        }
    };
    progress.finish();
    let report = result.map_err(|e| Failure::from(MemoryError::from(*e)))?;
    if args.json {
        let summary = serde_json::json!({
            "file": file.display().to_string(),
            "seconds": progress.elapsed().as_secs_f64(),
            "stream": report.stream,
            "partitions": report.partitions,
            "replicas": report.replicas,
            "published": report.published,
            "duplicates": report.duplicates,
            "already_stored": report.already_stored,
            "rejected": report.rejected,
            "retries": report.retries,
            "rejects": args.skip_invalid.as_ref().map(|p| p.display().to_string()),
        });
        writeln!(out, "{summary:#}")?;
        return Ok(());
    }
    writeln!(
        out,
        "published {} messages to stream {} ({} partitions, {} replicas): {} new, {} dropped as duplicates by the stream, {} already stored or repeated{}",
        report.published + report.duplicates,
        report.stream,
        report.partitions,
        report.replicas,
        report.published,
        report.duplicates,
        report.already_stored,
        if report.rejected > 0 {
            format!(", {} rejected", report.rejected)
        } else {
            String::new()
        }
    )?;
    if report.retries > 0 {
        writeln!(
            out,
            "{} publishes or reads sent again after a failure or timeout",
            report.retries
        )?;
    }
    Ok(())
}

/// `node --nats URL --partitions a,b,…`.
pub(super) fn node(out: &mut dyn Write, dir: &Path, args: &NodeArgs) -> Result<(), Failure> {
    let mut memory = super::open(dir)?;
    let connection = strataflow_cluster::Connection::connect(&args.nats)?;
    let options = strataflow_cluster::node::NodeOptions {
        prefix: args.prefix.clone(),
        partitions: args.partitions.clone(),
        batch: args.batch,
        drain: args.drain,
    };
    let quiet = args.quiet;
    let report = strataflow_cluster::node::run(&connection, &mut memory, &options, &mut |r| {
        if !quiet {
            eprintln!(
                "node: {} delivered, {} stored, {} already stored, {} batches",
                r.delivered, r.stored, r.already_stored, r.batches
            );
        }
    })?;
    writeln!(
        out,
        "node {}: partitions {:?}: {} messages delivered, {} stored, {} already stored, {} batches",
        dir.display(),
        args.partitions,
        report.delivered,
        report.stored,
        report.already_stored,
        report.batches
    )?;
    Ok(())
}
