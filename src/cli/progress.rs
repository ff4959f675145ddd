//! Progress of long jobs on stderr: a live line on a terminal, plain
//! periodic lines otherwise.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use strataflow::pipeline::ingest::IngestStats;

/// Reports ingest progress at most once per interval.
pub struct Progress {
    label: String,
    enabled: bool,
    terminal: bool,
    interval: Duration,
    started: Instant,
    last: Option<Instant>,
    drew_line: bool,
    /// When the storing pass began (after validation).
    ingest_started: Option<Instant>,
}

impl Progress {
    /// `STRATAFLOW_PROGRESS_INTERVAL_MS` overrides the interval (default 1000 ms).
    pub fn new(label: &str, quiet: bool) -> Self {
        let ms = std::env::var("STRATAFLOW_PROGRESS_INTERVAL_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(1000);
        Self {
            label: label.to_owned(),
            enabled: !quiet,
            terminal: std::io::stderr().is_terminal(),
            interval: Duration::from_millis(ms),
            started: Instant::now(),
            last: Some(Instant::now()),
            drew_line: false,
            ingest_started: None,
        }
    }

    /// Time since start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Called after each committed batch (and during validation).
    pub fn update(&mut self, stats: &IngestStats) {
        if stats.stage == "validate" {
            let line = format!("{}: validating, {} items read", self.label, stats.expected);
            self.emit(&line);
            return;
        }
        if stats.stage == "derive" {
            let line = format!("{}: deriving blocks left underived", self.label);
            self.emit(&line);
            return;
        }
        let started = *self.ingest_started.get_or_insert_with(Instant::now);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let rate = stats.read as f64 / secs;
        let eta = if stats.expected > stats.read && rate > 0.0 {
            format!(", ETA {:.0} s", (stats.expected - stats.read) as f64 / rate)
        } else {
            String::new()
        };
        let done = if stats.expected > 0 {
            format!(
                " ({:.1}%)",
                100.0 * stats.read as f64 / stats.expected as f64
            )
        } else {
            String::new()
        };
        let line = format!(
            "{}: {} messages stored{done}, {} already stored, {} blocks sealed, {} events, {} graph assertions, {} rejected ({:.0} msg/s{eta})",
            self.label,
            stats.stored,
            stats.already_stored,
            stats.blocks_sealed,
            stats.events,
            stats.assertions,
            stats.rejected,
            rate
        );
        self.emit(&line);
    }

    /// Called during an export import: bytes of the current pass with
    /// their ETA, conversations and messages read, and what was stored.
    pub fn update_export(
        &mut self,
        stats: &IngestStats,
        source: &strataflow::pipeline::source::export::ExportCounts,
    ) {
        if stats.stage == "derive" {
            return self.update(stats);
        }
        let started = if stats.stage == "validate" {
            self.started
        } else {
            *self.ingest_started.get_or_insert_with(Instant::now)
        };
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let mb = |b: u64| b as f64 / 1e6;
        let rate = source.bytes_read as f64 / secs;
        let (done, eta) = if source.total_bytes > 0 {
            let left = source.total_bytes.saturating_sub(source.bytes_read) as f64;
            (
                format!(
                    " ({:.1}%)",
                    100.0 * source.bytes_read as f64 / source.total_bytes as f64
                ),
                if rate > 0.0 {
                    format!(", ETA {:.0} s", left / rate)
                } else {
                    String::new()
                },
            )
        } else {
            (String::new(), String::new())
        };
        let pass = if stats.stage == "validate" {
            "validating"
        } else {
            "storing"
        };
        let line = format!(
            "{}: {pass}: {:.1}/{:.1} MB read{done}, {} conversations, {} messages read, {} stored, {} already stored, {} rejected, {} blocks sealed ({:.1} MB/s{eta})",
            self.label,
            mb(source.bytes_read),
            mb(source.total_bytes),
            source.conversations,
            source.messages,
            stats.stored,
            stats.already_stored,
            stats.rejected,
            stats.blocks_sealed,
            rate / 1e6
        );
        self.emit(&line);
    }

    /// Prints a line if enabled and the interval has passed.
    fn emit(&mut self, line: &str) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < self.interval)
        {
            return;
        }
        self.last = Some(now);
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
            self.drew_line = true;
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Called as derivation moves on.
    pub fn update_derive(&mut self, stats: &strataflow::pipeline::derive::DeriveStats) {
        let line = format!(
            "{}: {} blocks seen, {} ready, {} operator runs ({} failed), {} events, {} graph assertions",
            self.label,
            stats.blocks,
            stats.ready,
            stats.runs,
            stats.failed_runs,
            stats.events,
            stats.assertions
        );
        self.emit(&line);
    }

    /// Clears the live line.
    pub fn finish(&mut self) {
        if self.drew_line {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}
