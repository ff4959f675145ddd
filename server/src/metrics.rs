//! Request metrics and their Prometheus text exposition (`GET /metrics`).
//!
//! Requests are counted by route template and status, and their latency is
//! kept in a fixed-bucket histogram by route. Gauges of the store (queue
//! depth, messages stored, derivation backlog, model calls) are read when
//! scraped and passed to [`Metrics::render`]. Lines come out in a fixed
//! order (sorted label values), so two scrapes of the same state are equal.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5,
];

/// Latency histogram of one route.
#[derive(Clone, Debug, Default)]
struct Histogram {
    /// Observations at or below each bound (not cumulative; summed when rendered).
    buckets: [u64; BUCKETS.len()],
    /// Observations above the last bound.
    over: u64,
    /// Sum of the observations, in nanoseconds.
    sum_nanos: u128,
    /// Observations.
    count: u64,
}

impl Histogram {
    fn observe(&mut self, d: Duration) {
        let secs = d.as_secs_f64();
        match BUCKETS.iter().position(|b| secs <= *b) {
            Some(i) => {
                if let Some(slot) = self.buckets.get_mut(i) {
                    *slot += 1;
                }
            }
            None => self.over += 1,
        }
        self.sum_nanos += d.as_nanos();
        self.count += 1;
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// (route, status) → requests.
    requests: BTreeMap<(String, u16), u64>,
    /// route → latency.
    latency: BTreeMap<String, Histogram>,
}

/// A gauge read at scrape time.
#[derive(Clone, Debug)]
pub struct Gauge {
    /// Metric name (without the `strataflow_` prefix).
    pub name: &'static str,
    /// `# HELP` text.
    pub help: &'static str,
    /// Value.
    pub value: u64,
}

/// The server's request metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Counts one answered request of route template `route`.
    pub fn observe(&self, route: &str, status: u16, took: Duration) {
        let mut inner = match self.inner.lock() {
            Ok(g) => g,
            // A panic while counting leaves counts that are still valid numbers.
            Err(poisoned) => poisoned.into_inner(),
        };
        *inner
            .requests
            .entry((route.to_owned(), status))
            .or_insert(0) += 1;
        inner
            .latency
            .entry(route.to_owned())
            .or_default()
            .observe(took);
    }

    /// Requests counted so far for `route` (every status).
    pub fn requests(&self, route: &str) -> u64 {
        let inner = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        inner
            .requests
            .iter()
            .filter(|((r, _), _)| r == route)
            .map(|(_, n)| n)
            .sum()
    }

    /// The Prometheus text exposition (format 0.0.4) of the counters, the
    /// histograms and `gauges`.
    pub fn render(&self, gauges: &[Gauge]) -> String {
        let inner = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut out = String::new();
        out.push_str(
            "# HELP strataflow_http_requests_total HTTP requests answered, by route and status.\n",
        );
        out.push_str("# TYPE strataflow_http_requests_total counter\n");
        for ((route, status), n) in &inner.requests {
            let _ = writeln!(
                out,
                "strataflow_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
        out.push_str("# HELP strataflow_http_request_duration_seconds Time to answer an HTTP request, by route.\n");
        out.push_str("# TYPE strataflow_http_request_duration_seconds histogram\n");
        for (route, h) in &inner.latency {
            let route = escape(route);
            let mut cumulative = 0u64;
            for (bound, n) in BUCKETS.iter().zip(h.buckets.iter()) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "strataflow_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "strataflow_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                cumulative + h.over
            );
            // Nanoseconds as seconds with nine decimals: exact, no float formatting.
            let secs = h.sum_nanos / 1_000_000_000;
            let nanos = h.sum_nanos % 1_000_000_000;
            let _ = writeln!(
                out,
                "strataflow_http_request_duration_seconds_sum{{route=\"{route}\"}} {secs}.{nanos:09}"
            );
            let _ = writeln!(
                out,
                "strataflow_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
        for g in gauges {
            let _ = writeln!(out, "# HELP strataflow_{} {}", g.name, g.help);
            let _ = writeln!(out, "# TYPE strataflow_{} gauge", g.name);
            let _ = writeln!(out, "strataflow_{} {}", g.name, g.value);
        }
        out
    }
}

/// Escapes a label value (`\`, `"` and newlines).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histograms_and_gauges_in_a_fixed_order() {
        let m = Metrics::default();
        m.observe("/v1/search", 200, Duration::from_micros(300));
        m.observe("/v1/search", 200, Duration::from_millis(3));
        m.observe("/v1/search", 400, Duration::from_secs(5));
        m.observe("/healthz", 200, Duration::from_micros(50));
        let text = m.render(&[Gauge {
            name: "messages_stored",
            help: "Messages in the log.",
            value: 42,
        }]);
        assert!(
            text.contains(
                "strataflow_http_requests_total{route=\"/v1/search\",status=\"200\"} 2\n"
            )
        );
        assert!(
            text.contains(
                "strataflow_http_requests_total{route=\"/v1/search\",status=\"400\"} 1\n"
            )
        );
        assert!(text.contains("strataflow_http_request_duration_seconds_bucket{route=\"/v1/search\",le=\"0.0005\"} 1\n"));
        assert!(text.contains(
            "strataflow_http_request_duration_seconds_bucket{route=\"/v1/search\",le=\"0.005\"} 2\n"
        ));
        assert!(text.contains(
            "strataflow_http_request_duration_seconds_bucket{route=\"/v1/search\",le=\"+Inf\"} 3\n"
        ));
        assert!(text.contains(
            "strataflow_http_request_duration_seconds_sum{route=\"/v1/search\"} 5.003300000\n"
        ));
        assert!(
            text.contains(
                "strataflow_http_request_duration_seconds_count{route=\"/v1/search\"} 3\n"
            )
        );
        assert!(
            text.contains(
                "# TYPE strataflow_messages_stored gauge\nstrataflow_messages_stored 42\n"
            )
        );
        // /healthz sorts before /v1/search.
        let h = text.find("route=\"/healthz\"").unwrap();
        let s = text.find("route=\"/v1/search\"").unwrap();
        assert!(h < s);
        assert_eq!(m.requests("/v1/search"), 3);
        assert_eq!(
            text,
            m.render(&[Gauge {
                name: "messages_stored",
                help: "Messages in the log.",
                value: 42
            }])
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
