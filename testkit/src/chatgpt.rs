//! A deterministic ChatGPT-format export (`conversations.json`) of the
//! synthetic archive's messages, and beside it, optionally, the same
//! messages in the JSONL message format, so an `import chatgpt` and an
//! `ingest` of one archive can be compared.
//!
//! Conversation `i` holds the messages of a one-thread synthetic archive of
//! seed `seed ^ i` (tool calls left out), as a tree like the real export's:
//! a root node without a message, a hidden empty system message, then the
//! messages; every tenth conversation also has a regenerated answer, whose
//! first version is a branch left behind. Nodes carry the metadata fields
//! of a real export, so bytes per message are realistic. The JSONL twin
//! holds what the import stores: a `system` header line per conversation
//! (same content as the import's header) and the messages on the current
//! branch, in order.

use std::io::Write;

use crate::synthetic::{SyntheticOptions, messages};

/// What [`write_chatgpt_export`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChatgptStats {
    /// Conversations written.
    pub conversations: u64,
    /// Messages on current branches (what the import stores, headers left out).
    pub messages: u64,
    /// Messages on branches left behind.
    pub left_behind: u64,
    /// Bytes of `conversations.json`.
    pub bytes: u64,
    /// Lines of the JSONL twin (headers included).
    pub twin_lines: u64,
}

/// Writes `conversations.json` with `options.threads` conversations sharing
/// `options.messages` messages (and their JSONL twin to `twin`). Stops
/// early, after a whole conversation, once `max_bytes` are written (0: no
/// limit).
pub fn write_chatgpt_export(
    options: &SyntheticOptions,
    max_bytes: u64,
    out: &mut dyn Write,
    mut twin: Option<&mut dyn Write>,
) -> std::io::Result<ChatgptStats> {
    let conversations = u64::from(options.threads.max(1));
    let mut stats = ChatgptStats::default();
    let mut buf = String::with_capacity(1 << 20);
    let mut twin_buf = String::with_capacity(1 << 20);
    buf.push('[');
    for i in 0..conversations {
        let quota =
            options.messages / conversations + u64::from(i < options.messages % conversations);
        if quota == 0 {
            continue;
        }
        if stats.conversations > 0 {
            buf.push(',');
        }
        conversation(options.seed, i, quota, &mut buf, &mut twin_buf, &mut stats);
        stats.conversations += 1;
        stats.bytes += buf.len() as u64;
        out.write_all(buf.as_bytes())?;
        buf.clear();
        if let Some(t) = twin.as_mut() {
            t.write_all(twin_buf.as_bytes())?;
        }
        twin_buf.clear();
        if max_bytes > 0 && stats.bytes >= max_bytes {
            break;
        }
    }
    buf.push_str("]\n");
    stats.bytes += buf.len() as u64;
    out.write_all(buf.as_bytes())?;
    out.flush()?;
    if let Some(t) = twin {
        t.flush()?;
    }
    Ok(stats)
}

fn node_id(conversation: u64, n: u64) -> String {
    format!("{conversation:08x}-5a1e-4c0d-8e00-{n:012x}")
}

fn push_time(out: &mut String, utc_ms: i64) {
    out.push_str(&format!(
        "{}.{:03}",
        utc_ms.div_euclid(1000),
        utc_ms.rem_euclid(1000)
    ));
}

#[allow(clippy::too_many_arguments)]
fn push_node(
    out: &mut String,
    first: &mut bool,
    id: &str,
    parent: Option<&str>,
    children: &[String],
    role: &str,
    text: &str,
    utc_ms: Option<i64>,
    hidden: bool,
) {
    if !*first {
        out.push(',');
    }
    *first = false;
    json_string(out, id);
    out.push_str(":{\"id\":");
    json_string(out, id);
    out.push_str(",\"message\":{\"id\":");
    json_string(out, id);
    out.push_str(",\"author\":{\"role\":\"");
    out.push_str(role);
    out.push_str("\",\"name\":null,\"metadata\":{}},\"create_time\":");
    match utc_ms {
        Some(ms) => push_time(out, ms),
        None => out.push_str("null"),
    }
    out.push_str(",\"update_time\":null,\"content\":{\"content_type\":\"text\",\"parts\":[");
    json_string(out, text);
    out.push_str("]},\"status\":\"finished_successfully\",\"end_turn\":");
    out.push_str(if role == "assistant" { "true" } else { "null" });
    out.push_str(",\"weight\":1.0,\"metadata\":{");
    if hidden {
        out.push_str("\"is_visually_hidden_from_conversation\":true");
    } else if role == "assistant" {
        out.push_str("\"finish_details\":{\"type\":\"stop\",\"stop_tokens\":[200002]},\"is_complete\":true,\"citations\":[],\"content_references\":[],\"model_slug\":\"gpt-4o\",\"default_model_slug\":\"auto\",\"parent_id\":");
        json_string(out, parent.unwrap_or(""));
        out.push_str(",\"request_id\":\"8f1c2b3a4d5e6f70-LIS\",\"message_type\":null,\"timestamp_\":\"absolute\"");
    } else {
        out.push_str("\"selected_github_repos\":[],\"serialization_metadata\":{\"custom_symbol_offsets\":[]},\"request_id\":\"8f1c2b3a4d5e6f70-LIS\",\"message_source\":null,\"timestamp_\":\"absolute\",\"message_type\":null");
    }
    out.push_str("},\"recipient\":\"all\",\"channel\":null},\"parent\":");
    match parent {
        Some(p) => json_string(out, p),
        None => out.push_str("null"),
    }
    out.push_str(",\"children\":[");
    for (k, c) in children.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        json_string(out, c);
    }
    out.push_str("]}");
}

fn conversation(
    seed: u64,
    index: u64,
    quota: u64,
    out: &mut String,
    twin: &mut String,
    stats: &mut ChatgptStats,
) {
    let msgs: Vec<_> = messages(&SyntheticOptions {
        messages: quota,
        threads: 1,
        seed: seed ^ index,
        tenants: 1,
    })
    .collect();
    let id = format!("{index:08x}-c0c0-4a7a-9b00-{seed:012x}");
    let title = msgs
        .first()
        .map(|m| {
            m.content
                .split_whitespace()
                .take(5)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let start_ms = msgs.first().map_or(0, |m| m.utc_ms) - 1000;
    let regenerate = index % 10 == 3;
    let root = node_id(index, 0);
    let system = node_id(index, 1);
    let ids: Vec<String> = (0..msgs.len() as u64)
        .map(|n| node_id(index, n + 2))
        .collect();
    let left_behind = node_id(index, 1 << 40);
    // The regenerated answer: the first assistant message's sibling.
    let regenerated_at = msgs
        .iter()
        .position(|m| m.role == "assistant")
        .filter(|_| regenerate);
    let current = ids.last().cloned().unwrap_or_else(|| system.clone());

    out.push_str("{\"title\":");
    json_string(out, &title);
    out.push_str(",\"create_time\":");
    push_time(out, start_ms);
    out.push_str(",\"update_time\":");
    push_time(out, msgs.last().map_or(start_ms, |m| m.utc_ms));
    out.push_str(",\"mapping\":{");
    let mut first = true;
    push_node_root(out, &mut first, &root, &system);
    push_node(
        out,
        &mut first,
        &system,
        Some(&root),
        &ids.first().cloned().into_iter().collect::<Vec<_>>(),
        "system",
        "",
        None,
        true,
    );
    for (k, m) in msgs.iter().enumerate() {
        let parent = if k == 0 {
            system.clone()
        } else {
            ids.get(k - 1).cloned().unwrap_or_default()
        };
        let mut children: Vec<String> = ids.get(k + 1).cloned().into_iter().collect();
        if regenerated_at == Some(k + 1) {
            children.insert(0, left_behind.clone());
        }
        let own = ids.get(k).cloned().unwrap_or_default();
        push_node(
            out,
            &mut first,
            &own,
            Some(&parent),
            &children,
            m.role,
            &m.content,
            Some(m.utc_ms),
            false,
        );
        if regenerated_at == Some(k + 1) {
            push_node(
                out,
                &mut first,
                &left_behind,
                Some(&own),
                &[],
                "assistant",
                "An earlier answer, regenerated since.",
                Some(m.utc_ms + 500),
                false,
            );
            stats.left_behind += 1;
        }
    }
    out.push_str("},\"moderation_results\":[],\"current_node\":");
    json_string(out, &current);
    out.push_str(",\"plugin_ids\":null,\"conversation_id\":");
    json_string(out, &id);
    out.push_str(",\"conversation_template_id\":null,\"gizmo_id\":null,\"is_archived\":false,\"safe_urls\":[],\"default_model_slug\":\"auto\",\"id\":");
    json_string(out, &id);
    out.push('}');

    // The twin: the header the import writes, then the messages.
    let mut header = String::new();
    header.push_str("{\"format\":\"chatgpt\",\"id\":");
    json_string(&mut header, &id);
    header.push_str(",\"inferred_time\":[],\"title\":");
    json_string(&mut header, &title);
    header.push('}');
    twin_line(twin, &id, "meta", "system", &header, start_ms);
    stats.twin_lines += 1;
    for (m, own) in msgs.iter().zip(&ids) {
        twin_line(twin, &id, own, m.role, &m.content, m.utc_ms);
        stats.twin_lines += 1;
        stats.messages += 1;
    }
}

fn push_node_root(out: &mut String, first: &mut bool, root: &str, child: &str) {
    if !*first {
        out.push(',');
    }
    *first = false;
    json_string(out, root);
    out.push_str(":{\"id\":");
    json_string(out, root);
    out.push_str(",\"message\":null,\"parent\":null,\"children\":[");
    json_string(out, child);
    out.push_str("]}");
}

fn twin_line(out: &mut String, thread: &str, id: &str, role: &str, content: &str, utc_ms: i64) {
    out.push_str("{\"thread\":");
    json_string(out, thread);
    out.push_str(",\"id\":");
    json_string(out, id);
    out.push_str(",\"role\":\"");
    out.push_str(role);
    out.push_str("\",\"content\":");
    json_string(out, content);
    out.push_str(",\"ts\":\"");
    out.push_str(&rfc3339_utc(utc_ms));
    out.push_str("\"}\n");
}

fn rfc3339_utc(utc_ms: i64) -> String {
    let secs = utc_ms.div_euclid(1000);
    let ms = utc_ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_export_is_deterministic_json_and_its_twin_matches() {
        let options = SyntheticOptions {
            messages: 300,
            threads: 12,
            seed: 7,
            tenants: 1,
        };
        let (mut a, mut b, mut twin) = (Vec::new(), Vec::new(), Vec::new());
        let s = write_chatgpt_export(&options, 0, &mut a, Some(&mut twin)).unwrap();
        write_chatgpt_export(&options, 0, &mut b, None).unwrap();
        assert_eq!(a, b);
        assert_eq!((s.conversations, s.messages, s.left_behind), (12, 300, 1));
        assert_eq!(s.bytes, a.len() as u64);
        assert_eq!(s.twin_lines, 312);
        assert_eq!(
            String::from_utf8(twin.clone()).unwrap().lines().count(),
            312
        );
        assert_eq!(rfc3339_utc(1_714_560_001_250), "2024-05-01T10:40:01.250Z");
        // The import reads it: every message of the current branches plus
        // one header per conversation, as in the twin.
        use strataflow_pipeline::source::export::{ExportFormat, ExportSettings, read_bytes};
        let items = read_bytes(
            "c.json",
            ExportFormat::Chatgpt,
            &ExportSettings::default(),
            &a,
        )
        .unwrap();
        let items: Vec<_> = items.into_iter().map(Result::unwrap).collect();
        assert_eq!(items.len(), 312);
        let twin: Vec<String> = String::from_utf8(twin)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        for (item, line) in items.iter().zip(&twin) {
            let t = strataflow_pipeline::source::jsonl::parse_line("t", 1, line).unwrap();
            assert_eq!(
                (&item.thread, &item.content, item.role),
                (&t.thread, &t.content, t.role)
            );
            assert_eq!(item.time.utc_ms, t.time.utc_ms);
            if item.role != strataflow_log::record::Role::System {
                assert_eq!(item.external_id, t.external_id);
            }
        }
    }
}
