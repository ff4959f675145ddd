//! Human-readable and JSON output of the commands.

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use strataflow::eval::graph::GraphReport;
use strataflow::eval::locomo::EvalReport;
use strataflow::log::{AuditReport, StoredRecord, Timestamp};
use strataflow::materializers::graph_state::GraphState;
use strataflow::pipeline::derive::DeriveStats;
use strataflow::pipeline::ingest::IngestStats;
use strataflow::{
    AssessOutcome, BlockView, DerivationPlan, DerivationStatus, EventListing, ExpandedEvent,
    ExpandedNode, Memory, SearchResponse, Stats, ThreadBlocks, UseOutcome, ViewReport,
};
use strataflow::{ExternalImportReport, UndoReport};

/// `value` as one pretty-printed JSON document and a line break.
pub fn json(out: &mut dyn Write, value: &impl serde::Serialize) -> io::Result<()> {
    json_line(out, value)
}

fn json_line(out: &mut dyn Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::other)?;
    writeln!(out)
}

/// After ingest or import: what was read, stored, sealed; the threads.
pub fn ingest_summary(
    out: &mut dyn Write,
    memory: &Memory,
    file: &Path,
    stats: &IngestStats,
    elapsed: Duration,
    rejects: Option<&Path>,
) -> Result<(), super::Failure> {
    let secs = elapsed.as_secs_f64();
    writeln!(
        out,
        "{}: {} messages read in {:.2} s ({:.0} msg/s)",
        file.display(),
        stats.read,
        secs,
        stats.read as f64 / secs.max(1e-9)
    )?;
    writeln!(
        out,
        "  stored {} new messages ({} already stored), sealed {} blocks, {} batches",
        stats.stored, stats.already_stored, stats.blocks_sealed, stats.batches
    )?;
    writeln!(
        out,
        "  derived {} summaries, {} events, {} graph assertions ({} failed operator runs)",
        stats.summaries, stats.events, stats.assertions, stats.failed_runs
    )?;
    if let Some(path) = rejects {
        writeln!(
            out,
            "  rejected {} items (written to {})",
            stats.rejected,
            path.display()
        )?;
    }
    let heads = memory.threads()?;
    let shown = 20;
    writeln!(out, "threads in {}:", memory.path().display())?;
    writeln!(
        out,
        "  {:<24} {:>9} {:>7} {:>10}",
        "thread", "messages", "blocks", "open tail"
    )?;
    for (tenant, thread, head) in heads.iter().take(shown) {
        let name = thread_label(tenant, thread);
        writeln!(
            out,
            "  {:<24} {:>9} {:>7} {:>10}",
            name,
            head.messages,
            head.blocks,
            head.open_tail()
        )?;
    }
    if heads.len() > shown {
        writeln!(
            out,
            "  … and {} more threads (see `strataflow stats`)",
            heads.len() - shown
        )?;
    }
    Ok(())
}

/// A thread as `tenant/thread` (just `thread` in the default tenant), with
/// a part quoted as a JSON string when it holds a `/`, a quote, a
/// backslash or a control character, or is empty: tenant `a/b`
/// with thread `c` is `"a/b"/c`, tenant `a` with thread `b/c` is `a/"b/c"`.
fn thread_label(tenant: &str, thread: &str) -> String {
    fn part(name: &str) -> String {
        let plain = !name.is_empty()
            && !name
                .chars()
                .any(|c| matches!(c, '/' | '"' | '\\') || c.is_control());
        if plain {
            name.to_owned()
        } else {
            serde_json::Value::from(name).to_string()
        }
    }
    if tenant.is_empty() {
        part(thread)
    } else {
        format!("{}/{}", part(tenant), part(thread))
    }
}

/// `stats`.
pub fn stats(out: &mut dyn Write, stats: &Stats, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, stats);
    }
    writeln!(out, "records:            {}", stats.total_records)?;
    for (kind, n) in &stats.records {
        if *n > 0 {
            writeln!(out, "  {kind:<18}{n}")?;
        }
    }
    writeln!(out, "tenants:            {}", stats.tenants)?;
    writeln!(out, "threads:            {}", stats.threads)?;
    writeln!(out, "messages:           {}", stats.messages)?;
    writeln!(
        out,
        "blocks:             {} ({} turns each)",
        stats.blocks, stats.block_turns
    )?;
    writeln!(out, "open-tail messages: {}", stats.open_tail_messages)?;
    writeln!(out, "bytes on disk:      {}", stats.bytes_on_disk)?;
    Ok(())
}

/// `blocks`.
pub fn blocks(out: &mut dyn Write, blocks: &ThreadBlocks, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, blocks);
    }
    writeln!(
        out,
        "{:>3}  {:>9}  {:>4}  {:<21}  {:>12}  {:>12}  id",
        "#", "turns", "msgs", "messages", "L4 chars/tok", "L3 chars/tok"
    )?;
    for b in &blocks.blocks {
        let range = match (b.messages.first(), b.messages.last()) {
            (Some(f), Some(l)) => format!("{f}..{l}"),
            _ => String::new(),
        };
        writeln!(
            out,
            "{:>3}  {:>9}  {:>4}  {:<21}  {:>12}  {:>12}  {}",
            b.ordinal,
            format!("{}-{}", b.start_turn, b.end_turn),
            b.messages.len(),
            range,
            format!("{}/{}", b.l4_chars, b.l4_tokens),
            format!("{}/{}", b.l3_chars, b.l3_tokens),
            b.id.short()
        )?;
    }
    match (blocks.open_tail.first(), blocks.open_tail.last()) {
        (Some(f), Some(l)) => writeln!(
            out,
            "open tail: {} messages ({f}..{l})",
            blocks.open_tail.len()
        ),
        _ => writeln!(out, "open tail: empty"),
    }
}

/// `show`.
pub fn record(out: &mut dyn Write, record: &StoredRecord) -> io::Result<()> {
    json_line(out, record)
}

/// `audit`.
pub fn audit(out: &mut dyn Write, report: &AuditReport, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, report);
    }
    if report.is_clean() {
        return writeln!(
            out,
            "audit OK: {} records, {} parent links, hashes and sequence intact",
            report.records, report.parent_links
        );
    }
    writeln!(out, "audit FAILED: {} records checked", report.records)?;
    for p in &report.problems {
        writeln!(out, "  {p}")?;
    }
    Ok(())
}

/// `recover`.
pub fn recovery(
    out: &mut dyn Write,
    report: &strataflow::log::recover::RecoveryReport,
    json: bool,
) -> io::Result<()> {
    if json {
        return json_line(out, report);
    }
    let expected = report
        .expected_last_seq
        .map_or_else(|| "unknown (no manifest)".to_owned(), |s| s.to_string());
    writeln!(
        out,
        "recovered {} records of {} into {} ({} lost; the last commit recorded {expected} records)",
        report.recovered,
        report.from.display(),
        report.to.display(),
        report.lost,
    )?;
    for damage in &report.journal_damage {
        writeln!(out, "  journal damage: {damage}")?;
    }
    writeln!(
        out,
        "  {:<16} {:>10} {:>10} {:>10}",
        "kind", "expected", "recovered", "lost"
    )?;
    for (kind, k) in &report.kinds {
        if k.expected.unwrap_or(0) == 0 && k.recovered == 0 {
            continue;
        }
        let lost = k.expected.map_or_else(
            || k.lost_found.to_string(),
            |e| e.saturating_sub(k.recovered).to_string(),
        );
        let expected = k.expected.map_or_else(|| "?".to_owned(), |e| e.to_string());
        writeln!(
            out,
            "  {kind:<16} {expected:>10} {:>10} {lost:>10}",
            k.recovered
        )?;
    }
    const SHOWN: usize = 20;
    for r in report.lost_ranges.iter().take(SHOWN) {
        let seqs = if r.from == r.to {
            format!("seq {}", r.from)
        } else {
            format!("seq {}..={}", r.from, r.to)
        };
        let kind = r.kind.map(|k| format!(" ({k})")).unwrap_or_default();
        writeln!(out, "  lost {seqs}{kind}: {}", r.reason.describe())?;
    }
    if report.lost_ranges.len() > SHOWN {
        writeln!(
            out,
            "  … and {} more lost ranges (see --json)",
            report.lost_ranges.len() - SHOWN
        )?;
    }
    if report.lost > 0 {
        writeln!(
            out,
            "derived records that were lost are derived again by `strataflow --data {} resume`",
            report.to.display()
        )?;
    }
    Ok(())
}

/// After derivation.
pub fn derive_summary(out: &mut dyn Write, s: &DeriveStats) -> io::Result<()> {
    writeln!(
        out,
        "derived: {} of {} blocks ready; wrote {} summaries, {} events, {} graph assertions in {} operator runs ({} failed)",
        s.ready, s.blocks, s.summaries, s.events, s.assertions, s.runs, s.failed_runs
    )?;
    if s.embeddings + s.embeddings_already > 0 {
        writeln!(
            out,
            "  embedded {} texts ({} already embedded)",
            s.embeddings, s.embeddings_already
        )?;
    }
    if s.terminal > 0 || s.waiting > 0 {
        writeln!(
            out,
            "  {} stages failed 3 times, {} wait for a retry: see `strataflow status`",
            s.terminal, s.waiting
        )?;
    }
    Ok(())
}

/// `status`.
pub fn status(out: &mut dyn Write, s: &DerivationStatus, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, s);
    }
    writeln!(
        out,
        "profile {}: {} of {} blocks ready",
        s.profile, s.ready_blocks, s.blocks
    )?;
    writeln!(
        out,
        "  {:<26} {:>7} {:>8} {:>10} {:>7}",
        "operator", "done", "pending", "retryable", "failed"
    )?;
    for op in &s.operators {
        writeln!(
            out,
            "  {:<26} {:>7} {:>8} {:>10} {:>7}",
            op.operator, op.done, op.pending, op.retryable, op.failed
        )?;
    }
    if let Some(e) = &s.embedder {
        writeln!(
            out,
            "  embedder {} ({}): {} vectors",
            e.operator, e.label, e.vectors
        )?;
    }
    let m = &s.model_calls;
    if m.made + m.served_from_log + m.served_from_shared + m.failed > 0 {
        let shared = if m.served_from_shared > 0 {
            format!(", {} copied from other nodes' calls", m.served_from_shared)
        } else {
            String::new()
        };
        writeln!(
            out,
            "  model calls: {} made ({} prompt + {} completion tokens), {} served from the log{shared}, {} failed, {} retried",
            m.made, m.prompt_tokens, m.completion_tokens, m.served_from_log, m.failed, m.retries
        )?;
    }
    for op in &s.operators {
        for f in &op.failures {
            writeln!(
                out,
                "  {} {} on {}: {} attempt(s): {}",
                op.operator,
                if f.terminal { "FAILED" } else { "retryable" },
                f.input.short(),
                f.attempts,
                f.error
            )?;
        }
    }
    Ok(())
}

/// `plan`.
pub fn plan(out: &mut dyn Write, p: &DerivationPlan, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, p);
    }
    writeln!(out, "profile {}: {} blocks", p.profile, p.blocks)?;
    writeln!(
        out,
        "  {:<26} {:>7} {:>12} {:>14}",
        "operator", "runs", "model calls", "input tokens"
    )?;
    for op in &p.operators {
        writeln!(
            out,
            "  {:<26} {:>7} {:>12} {:>14}",
            op.operator, op.runs, op.model_calls, op.input_tokens
        )?;
    }
    let calls: u64 = p.operators.iter().map(|o| o.model_calls).sum();
    let tokens: u64 = p.operators.iter().map(|o| o.input_tokens).sum();
    writeln!(
        out,
        "  at most {calls} model call(s), about {tokens} input tokens (projector: one run per block not yet extracted, an upper bound; recorded calls are served from the log)"
    )?;
    Ok(())
}

fn time(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "?".to_owned(), |t| t.to_rfc3339())
}

/// `events`.
pub fn events(out: &mut dyn Write, events: &[EventListing], json: bool) -> io::Result<()> {
    if json {
        return json_line(out, &events);
    }
    for e in events {
        let when = match (e.happened_start, e.happened_end) {
            (None, None) => "unknown".to_owned(),
            (s, t) if s == t => time(s),
            (s, t) => format!("{} .. {}", time(s), time(t)),
        };
        writeln!(
            out,
            "{}  [{}] {} ({}; {})",
            e.id.short(),
            format!("{:?}", e.status).to_lowercase(),
            e.title,
            e.event_type,
            e.participants.join(", ")
        )?;
        writeln!(
            out,
            "    said {} · happened {} ({}, {}{}) · from {}",
            e.mentioned_at.to_rfc3339(),
            when,
            format!("{:?}", e.precision).to_lowercase(),
            format!("{:?}", e.basis).to_lowercase(),
            e.time_text
                .as_ref()
                .map(|t| format!(", \"{t}\""))
                .unwrap_or_default(),
            e.source_messages.join(", ")
        )?;
    }
    writeln!(out, "{} events", events.len())
}

/// `graph`.
pub fn graph(out: &mut dyn Write, g: &GraphState, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, g);
    }
    for n in g.nodes() {
        let aliases = if n.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also {})", n.aliases.join(", "))
        };
        writeln!(out, "{:?} {}{}", n.node_type, n.name, aliases)?;
        for f in &n.facts {
            writeln!(
                out,
                "    {} {}: {}  [{} .. {}]",
                if f.current { "*" } else { " " },
                f.key,
                f.values.join(", "),
                time(f.valid_from),
                f.valid_to.map_or_else(String::new, |t| t.to_rfc3339())
            )?;
        }
    }
    if !g.edges().is_empty() {
        writeln!(out, "edges:")?;
    }
    for e in g.edges() {
        writeln!(
            out,
            "  {} {} -[{}]-> {}  [{} .. {}]",
            if e.current { "*" } else { " " },
            e.from.name,
            e.relation,
            e.to.name,
            time(e.valid_from),
            e.valid_to.map_or_else(String::new, |t| t.to_rfc3339())
        )?;
    }
    writeln!(
        out,
        "{} nodes, {} edges (* = current)",
        g.nodes().len(),
        g.edges().len()
    )
}

/// `search`.
pub fn search(out: &mut dyn Write, r: &SearchResponse, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, r);
    }
    for (i, h) in r.hits.iter().enumerate() {
        writeln!(out, "{:>2}. {} ({:.4})", i + 1, h.reference, h.score)?;
        writeln!(out, "    {}", h.text)?;
        if !h.source_messages.is_empty() {
            writeln!(out, "    from {}", h.source_messages.join(", "))?;
        }
    }
    writeln!(
        out,
        "{} hits, {} words; batch {}",
        r.hits.len(),
        r.words,
        r.batch.map_or_else(|| "-".to_owned(), |b| b.to_hex())
    )
}

/// `eval locomo`.
pub fn eval(out: &mut dyn Write, r: &EvalReport, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, r);
    }
    writeln!(out, "LoCoMo retrieval on {}", r.files.join(", "))?;
    for b in &r.budgets {
        writeln!(
            out,
            "budget {} words: search all | raw BM25 baseline",
            b.budget
        )?;
        writeln!(
            out,
            "  {:<9} {:>4}  {:>6} {:>6} {:>6}  | {:>6} {:>6} {:>6}",
            "category", "n", "hit", "full", "words", "hit", "full", "words"
        )?;
        for (cat, f) in &b.system {
            let base = b.baseline.get(cat).cloned().unwrap_or_default();
            writeln!(
                out,
                "  {:<9} {:>4}  {:>6.3} {:>6.3} {:>6.1}  | {:>6.3} {:>6.3} {:>6.1}",
                cat, f.questions, f.hit, f.full, f.mean_words, base.hit, base.full, base.mean_words
            )?;
        }
        writeln!(
            out,
            "  category 2, top evidence hit's happened interval contains the gold date: {}/{}",
            b.temporal_contains, b.temporal_questions
        )?;
    }
    Ok(())
}

/// `eval locomo --graph`.
pub fn eval_graph(out: &mut dyn Write, r: &GraphReport, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, r);
    }
    writeln!(out, "LoCoMo graph on {}", r.files.join(", "))?;
    writeln!(
        out,
        "  {:<14} {:<24} {:>8} {:>9} {:>8} {:>9} {:>5} {:>5} {:>5}",
        "conversation",
        "projector",
        "coverage",
        "obs",
        "grounded",
        "items",
        "nodes",
        "facts",
        "edges"
    )?;
    let rows = r
        .conversations
        .iter()
        .map(|c| (c.conversation.as_str(), &c.versions))
        .chain(std::iter::once(("overall", &r.overall)));
    for (name, versions) in rows {
        for v in versions {
            let f = &v.figures;
            writeln!(
                out,
                "  {:<14} {:<24} {:>8.3} {:>9} {:>8.3} {:>9} {:>5} {:>5} {:>5}",
                name,
                v.projector,
                f.coverage,
                format!("{}/{}", f.covered, f.observations),
                f.grounded_share,
                format!("{}/{}", f.grounded, f.items),
                f.nodes,
                f.facts,
                f.edges
            )?;
        }
    }
    Ok(())
}

/// `context` and `expand block`.
pub fn blocks_at_levels(out: &mut dyn Write, blocks: &[BlockView], json: bool) -> io::Result<()> {
    if json {
        return json_line(out, &blocks);
    }
    for b in blocks {
        writeln!(
            out,
            "== block {} ({} turns {}-{}) age {} · L{} {}{}",
            b.block.short(),
            b.thread,
            b.turns.0,
            b.turns.1,
            b.age,
            b.level,
            b.label,
            b.batch
                .map(|id| format!(" · batch {}", id.short()))
                .unwrap_or_default()
        )?;
        writeln!(out, "{}", b.content)?;
    }
    Ok(())
}

/// `assess`.
pub fn assessment(out: &mut dyn Write, a: &AssessOutcome, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, a);
    }
    writeln!(
        out,
        "batch {}: {} (next: {}){}",
        a.batch.short(),
        format!("{:?}", a.verdict).to_lowercase(),
        a.next,
        if a.missing.is_empty() {
            String::new()
        } else {
            format!("; missing: {}", a.missing)
        }
    )?;
    for r in &a.evidence {
        writeln!(out, "  adopted {r}")?;
    }
    for (r, why) in &a.rejected {
        writeln!(out, "  rejected {r}: {why}")?;
    }
    Ok(())
}

/// `use`.
pub fn used(out: &mut dyn Write, u: &UseOutcome, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, u);
    }
    writeln!(
        out,
        "recorded {} ref(s) of batch {} (receipt {}); reinforced {} event(s)",
        u.refs.len(),
        u.batch.short(),
        u.receipt.short(),
        u.events.len()
    )
}

/// `expand event`.
pub fn expanded_event(out: &mut dyn Write, x: &ExpandedEvent, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, x);
    }
    writeln!(
        out,
        "event {} [{}] weight {:.3}",
        x.id.short(),
        format!("{:?}", x.status).to_lowercase(),
        x.weight
    )?;
    writeln!(out, "{}", x.event.narrative)?;
    for q in &x.event.quotes {
        writeln!(out, "  > {q}")?;
    }
    for m in &x.source_messages {
        writeln!(
            out,
            "  {} {} ({}): {}",
            m.id,
            m.speaker,
            m.time.to_rfc3339(),
            m.content
        )?;
    }
    Ok(())
}

/// `expand block`: the block at its new level (`--json`: one object, as
/// `expand event` and `expand node` print, and as the server answers).
pub fn expanded_block(out: &mut dyn Write, x: &BlockView, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, x);
    }
    blocks_at_levels(out, std::slice::from_ref(x), false)
}

/// `expand node`.
pub fn expanded_node(out: &mut dyn Write, x: &ExpandedNode, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, x);
    }
    writeln!(out, "{:?} {}", x.node.node_type, x.node.name)?;
    for f in &x.node.facts {
        writeln!(
            out,
            "  {} {}: {}",
            if f.current { "*" } else { " " },
            f.key,
            f.values.join(", ")
        )?;
    }
    for e in &x.edges {
        writeln!(out, "  {} -[{}]-> {}", e.from.name, e.relation, e.to.name)?;
    }
    Ok(())
}

/// `views`.
pub fn views(out: &mut dyn Write, reports: &[ViewReport], json: bool) -> io::Result<()> {
    if json {
        return json_line(out, &reports);
    }
    for r in reports {
        let check = match &r.rebuilt {
            None => String::new(),
            Some(d) if *d == r.digest => "  rebuild: same".to_owned(),
            Some(d) => format!("  rebuild: DIFFERENT ({})", d.get(..16).unwrap_or_default()),
        };
        writeln!(
            out,
            "{:<14} tenant `{}`  seq {:>8}  digest {}{}",
            r.view,
            r.tenant,
            r.last_seq,
            r.digest.get(..16).unwrap_or_default(),
            check
        )?;
    }
    Ok(())
}

/// `diff`.
pub fn diff(
    out: &mut dyn Write,
    a: &str,
    b: &str,
    diff: &strataflow::interchange::diff::ProfileDiff,
    json: bool,
) -> io::Result<()> {
    use strataflow::interchange::diff::graph::GraphItem;
    if json {
        return json_line(out, diff);
    }
    let (d, g, s) = (&diff.events, &diff.graph, &diff.summaries);
    writeln!(
        out,
        "events: {} in both, {} changed, {} only in {a}, {} only in {b}",
        d.both,
        d.changed.len(),
        d.only_a.len(),
        d.only_b.len()
    )?;
    writeln!(
        out,
        "graph: {} facts and edges the same, {} added (only in {b}), {} removed (only in {a}), {} closed, {} different; nodes: {} only in {a}, {} only in {b}",
        g.same,
        g.added.len(),
        g.removed.len(),
        g.closed.len(),
        g.different.len(),
        g.nodes_only_a.len(),
        g.nodes_only_b.len()
    )?;
    writeln!(
        out,
        "summaries: {} blocks the same, {} differ, {} only in {a}, {} only in {b}",
        s.same,
        s.different.len(),
        s.only_a.len(),
        s.only_b.len()
    )?;
    let sources = |s: &strataflow::interchange::diff::EventSide| s.source_messages.join(", ");
    for c in &d.changed {
        writeln!(out, "changed  {} [{}]", c.a.thread, sources(&c.a))?;
        for f in &c.fields {
            writeln!(out, "  {:<13} {a}: {}", f.field, f.a)?;
            writeln!(out, "  {:<13} {b}: {}", "", f.b)?;
        }
    }
    for (label, sides) in [(a, &d.only_a), (b, &d.only_b)] {
        for s in sides {
            writeln!(
                out,
                "only {label}  {} [{}] {} ({})",
                s.thread,
                sources(s),
                s.title,
                s.event_type
            )?;
        }
    }
    let item = |i: &GraphItem| {
        let what = match &i.target {
            Some(to) => format!("{} -[{}]-> {}", i.node, i.key, to),
            None => format!("{} {}: {}", i.node, i.key, i.values.join(", ")),
        };
        format!(
            "{}{what}  [{} .. {}] [{}]",
            if i.current { "* " } else { "  " },
            i.valid_from.as_deref().unwrap_or("?"),
            i.valid_to.as_deref().unwrap_or(""),
            i.source_messages.join(", ")
        )
    };
    for i in &g.removed {
        writeln!(out, "graph removed  {}", item(i))?;
    }
    for i in &g.added {
        writeln!(out, "graph added    {}", item(i))?;
    }
    for (label, changes) in [("closed", &g.closed), ("different", &g.different)] {
        for c in changes {
            writeln!(out, "graph {label:<9} {a}: {}", item(&c.a))?;
            writeln!(out, "{:<16}{b}: {}", "", item(&c.b))?;
        }
    }
    for c in &s.different {
        writeln!(out, "summary  {} block {}", c.thread, c.block.short())?;
        for f in &c.fields {
            writeln!(out, "  {:<15} {a}: {}", f.field, f.a)?;
            writeln!(out, "  {:<15} {b}: {}", "", f.b)?;
        }
    }
    Ok(())
}

/// `diff --queries`.
pub fn query_diff(
    out: &mut dyn Write,
    d: &strataflow::eval::query_diff::QueryDiff,
    json: bool,
) -> io::Result<()> {
    if json {
        return json_line(out, d);
    }
    let (a, b) = (&d.a.profile, &d.b.profile);
    writeln!(
        out,
        "{}: {} questions ({} with evidence, {} skipped), search all at {} words",
        d.file, d.questions, d.with_evidence, d.skipped, d.budget
    )?;
    writeln!(
        out,
        "{:<12} {:>6} {:>6} {:>9}",
        "profile", "hit", "full", "hit rate"
    )?;
    for p in [&d.a, &d.b] {
        writeln!(
            out,
            "{:<12} {:>6} {:>6} {:>9.3}",
            p.profile, p.hits, p.full, p.hit_rate
        )?;
    }
    writeln!(
        out,
        "gained (hit in {b}, not {a}): {}; lost (hit in {a}, not {b}): {}; top result changed: {}",
        d.gained.len(),
        d.lost.len(),
        d.top_changed
    )?;
    let hit = |h: Option<bool>| match h {
        Some(true) => "hit",
        Some(false) => "miss",
        None => "-",
    };
    let top = |t: &Option<strataflow::eval::query_diff::TopHit>| match t {
        Some(t) => {
            let text: String = t.text.chars().take(70).collect();
            let short: String = t.reference.chars().take(18).collect();
            format!("{short} {text}")
        }
        None => "(nothing)".to_owned(),
    };
    for c in &d.changed {
        writeln!(
            out,
            "? {}{}",
            c.question,
            c.thread
                .as_deref()
                .map_or_else(String::new, |t| format!("  [{t}]"))
        )?;
        writeln!(out, "  {a:<10} {:<4} {}", hit(c.hit_a), top(&c.top_a))?;
        writeln!(out, "  {b:<10} {:<4} {}", hit(c.hit_b), top(&c.top_b))?;
    }
    Ok(())
}

/// `import memory`: the decisions (candidate, action, targets, confidence,
/// reason) and the import id.
pub fn external_import(
    out: &mut dyn Write,
    r: &ExternalImportReport,
    json: bool,
) -> io::Result<()> {
    if json {
        return json_line(out, r);
    }
    let mut counts = std::collections::BTreeMap::new();
    for d in &r.decisions {
        *counts.entry(d.action.name()).or_insert(0usize) += 1;
    }
    let from = if r.format == strataflow::operators::import::FORMAT_TEXT {
        format!(
            "plain text ({} part(s), extracted by llm-import-extractor@1)",
            r.text_parts
        )
    } else {
        r.source_system
            .clone()
            .unwrap_or_else(|| "an unnamed system".into())
    };
    writeln!(
        out,
        "{} candidates{} from {from} (imported at {}, decider {})",
        r.candidates,
        if r.dropped_candidates > 0 {
            format!(" (+{} beyond the 200 read, skipped)", r.dropped_candidates)
        } else {
            String::new()
        },
        r.imported_at.to_rfc3339(),
        r.decider
    )?;
    writeln!(
        out,
        "{:>3}  {:<40}  {:<10}  {:<12}  {:>5}  reason",
        "#", "candidate", "action", "targets", "conf"
    )?;
    for d in &r.decisions {
        let title: String = d.title.chars().take(40).collect();
        let action = if d.action == d.proposed {
            d.action.name().to_owned()
        } else {
            format!("{}?", d.proposed.name())
        };
        let targets = d
            .targets
            .iter()
            .map(|t| t.short())
            .collect::<Vec<_>>()
            .join(",");
        writeln!(
            out,
            "{:>3}  {:<40}  {:<10}  {:<12}  {:>5}  {}",
            d.index,
            title,
            action,
            if targets.is_empty() {
                "-".into()
            } else {
                targets
            },
            format!(
                "{}.{:03}",
                d.confidence_milli / 1000,
                d.confidence_milli % 1000
            ),
            d.reason
        )?;
    }
    let unconfirmed = r
        .decisions
        .iter()
        .filter(|d| d.action != d.proposed)
        .count();
    if unconfirmed > 0 {
        writeln!(
            out,
            "{unconfirmed} decision(s) marked `?` need confirmation (confidence < 0.85) and were {}; rerun with --accept-uncertain to apply them",
            if r.dry_run { "left out" } else { "ignored" }
        )?;
    }
    let summary = counts
        .iter()
        .map(|(a, n)| format!("{n} {a}"))
        .collect::<Vec<_>>()
        .join(", ");
    match (&r.import_id, r.dry_run) {
        (_, true) => writeln!(
            out,
            "dry run: {summary}; {} events would be written; nothing was written{}",
            r.created_events.len(),
            if r.format == strataflow::operators::import::FORMAT_TEXT
                || r.decider == strataflow::operators::import::decider_id().to_string()
            {
                " but the model calls (recorded, so the import does not pay for them again)"
            } else {
                ""
            }
        ),
        (Some(id), false) if r.already_imported => {
            writeln!(out, "already imported as {id}: nothing new")
        }
        (Some(id), false) => writeln!(
            out,
            "imported {id}: {summary}; {} events written (undo: strataflow import undo {})",
            r.created_events.len(),
            id.short()
        ),
        (None, false) => writeln!(out, "{summary}"),
    }
}

/// `import undo`.
pub fn undo_import(out: &mut dyn Write, r: &UndoReport, json: bool) -> io::Result<()> {
    if json {
        return json_line(out, r);
    }
    writeln!(
        out,
        "undid import {}: {} events removed, {} events active again (governance record {})",
        r.import_id,
        r.removed_events.len(),
        r.restored_events.len(),
        r.governance.short()
    )
}
