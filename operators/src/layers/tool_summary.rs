//! Tool-payload summaries (spec §4.2): a tool call is shown as its name and a
//! bounded summary of its result; its arguments are never rendered.

use std::sync::LazyLock;

use regex::Regex;
use strataflow_record::record::ToolCall;

use super::json::{self, JsValue, js_number_to_string};
use super::text::{collapse_and_trim, collapse_spaces, first_chars, is_js_space, js_trim};

/// Longest plain-text result summary, in characters.
const RESULT_SUMMARY_CHARS: usize = 160;
/// Longest error text in a `failed: …` summary, in characters.
const ERROR_SUMMARY_CHARS: usize = 140;
/// Keys whose array values are request echoes, not result counts.
const REQUEST_KEYS: [&str; 4] = ["arguments", "params", "input", "request"];

/// `/(tool_calls|tool_call|"function"|"arguments")/iu`: marks unparsable text
/// that still looks like a tool-call payload.
static TOOL_PAYLOAD_HINT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)tool_calls|tool_call|"function"|"arguments""#).ok());

/// A bounded one-line summary of a tool result (`resultSummary`, spec §4.2).
///
/// - string: whitespace collapsed and trimmed; empty gives `""`; text that is
///   itself JSON is summarized as that value; otherwise its first 160 chars;
/// - number, boolean: the value as JavaScript prints it; `null`: `""`;
/// - object or array: `failed: <error>` (140 chars) for a string `error`, else
///   a string `summary` or `message` (160 chars, whitespace collapsed), else
///   `key: length` for each array-valued key other than `arguments`,
///   `params`, `input` and `request` (160 chars), else `completed` /
///   `not completed` for `ok: true` / `ok: false`, else
///   `structured result returned`.
///
/// Object keys are taken in JavaScript's enumeration order (array-index keys
/// ascending first, then the map's own order).
pub fn result_summary(value: &serde_json::Value) -> String {
    summarize_value(&JsValue::from(value))
}

/// One line for a tool call: `Tool call: <name>`, plus ` (<summary>)` when
/// its result summarizes to something. The arguments are never rendered.
///
/// The result is JSON text; text that does not parse is summarized as a JSON
/// string holding it.
pub fn summarize_tool_trace(call: &ToolCall) -> String {
    let summary = match call.result.as_deref() {
        None => String::new(),
        Some(text) => match json::parse(text) {
            Some(value) => summarize_value(&value),
            None => summarize_string(text),
        },
    };
    with_summary(format!("Tool call: {}", call.name), &summary)
}

/// Summarizes a message whose whole body is a tool-call payload; `None` when
/// it is not one (`summarizeToolJson`, spec §4.2).
///
/// After trimming and removing a leading ```` ``` ```` / ```` ```json ```` fence
/// and a trailing ```` ``` ````, the text is parsed as JSON:
/// - parsed: the tool names are collected recursively (objects with a string
///   `name` and an `arguments` or `parameters` key, a string `tool`, or a
///   string `function.name`), first occurrence first. No names gives `None`;
///   otherwise `Tool call: n1, n2`, plus ` (<summary>)` of the top-level
///   `result` (or, when that is absent or null, `content`).
/// - not JSON but mentioning `tool_calls`, `tool_call`, `"function"` or
///   `"arguments"` (any case): `Tool call: a, b (raw arguments omitted)` with
///   the `"name": "…"` values found, or `Tool call (raw arguments omitted)`.
/// - otherwise `None`.
pub fn summarize_tool_json(text: &str) -> Option<String> {
    let body = strip_code_fence(js_trim(text));
    match json::parse(body) {
        Some(parsed) => {
            let mut names = Vec::new();
            collect_tool_names(&parsed, &mut names);
            if names.is_empty() {
                return None;
            }
            let outcome = match parsed.get("result") {
                Some(JsValue::Null) | None => parsed.get("content"),
                found => found,
            };
            // Neither `result` nor `content`: no summary (the empty one).
            let summary = outcome.map(summarize_value).unwrap_or_default();
            Some(with_summary(
                format!("Tool call: {}", names.join(", ")),
                &summary,
            ))
        }
        None => {
            if !looks_like_tool_payload(body) {
                return None;
            }
            let names = raw_names(body);
            Some(if names.is_empty() {
                "Tool call (raw arguments omitted)".to_owned()
            } else {
                format!("Tool call: {} (raw arguments omitted)", names.join(", "))
            })
        }
    }
}

fn with_summary(mut line: String, summary: &str) -> String {
    if !summary.is_empty() {
        line.push_str(" (");
        line.push_str(summary);
        line.push(')');
    }
    line
}

/// The string case of `resultSummary`.
fn summarize_string(text: &str) -> String {
    let collapsed = collapse_and_trim(text);
    if collapsed.is_empty() {
        return String::new();
    }
    match json::parse(&collapsed) {
        Some(value) => summarize_value(&value),
        None => first_chars(&collapsed, RESULT_SUMMARY_CHARS).to_owned(),
    }
}

fn summarize_value(value: &JsValue) -> String {
    match value {
        JsValue::Null => String::new(),
        JsValue::Bool(b) => b.to_string(),
        JsValue::Number(n) => js_number_to_string(*n),
        JsValue::String(s) => summarize_string(s),
        JsValue::Array(items) => {
            // An array has only index keys: no `error`, `summary`, `ok`, …
            let counts: Vec<String> = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| match item {
                    JsValue::Array(inner) => Some(format!("{i}: {}", inner.len())),
                    _ => None,
                })
                .collect();
            summarize_counts(&counts).unwrap_or_else(|| "structured result returned".to_owned())
        }
        JsValue::Object(entries) => {
            if let Some(JsValue::String(error)) = value.get("error") {
                let error = collapse_spaces(error);
                return format!("failed: {}", first_chars(&error, ERROR_SUMMARY_CHARS));
            }
            for key in ["summary", "message"] {
                if let Some(JsValue::String(text)) = value.get(key) {
                    return first_chars(&collapse_spaces(text), RESULT_SUMMARY_CHARS).to_owned();
                }
            }
            let counts: Vec<String> = entries
                .iter()
                .filter(|(key, _)| !REQUEST_KEYS.contains(&key.as_str()))
                .filter_map(|(key, item)| match item {
                    JsValue::Array(inner) => Some(format!("{key}: {}", inner.len())),
                    _ => None,
                })
                .collect();
            if let Some(summary) = summarize_counts(&counts) {
                return summary;
            }
            match value.get("ok") {
                Some(JsValue::Bool(true)) => "completed".to_owned(),
                Some(JsValue::Bool(false)) => "not completed".to_owned(),
                _ => "structured result returned".to_owned(),
            }
        }
    }
}

fn summarize_counts(counts: &[String]) -> Option<String> {
    (!counts.is_empty()).then(|| first_chars(&counts.join(", "), RESULT_SUMMARY_CHARS).to_owned())
}

/// Removes `/^```(?:json)?\s*/i` and then `/\s*```$/` (no trimming otherwise).
fn strip_code_fence(text: &str) -> &str {
    let mut body = text;
    if let Some(rest) = body.strip_prefix("```") {
        let rest = strip_json_tag(rest).unwrap_or(rest);
        body = rest.trim_start_matches(is_js_space);
    }
    if let Some(rest) = body.strip_suffix("```") {
        body = rest.trim_end_matches(is_js_space);
    }
    body
}

/// Strips a case-insensitive `json` (Unicode simple case folding, so the
/// long s `ſ` matches `s`, as in a JavaScript `/iu` regex).
fn strip_json_tag(text: &str) -> Option<&str> {
    let mut chars = text.char_indices();
    let expected: [&[char]; 4] = [&['j', 'J'], &['s', 'S', 'ſ'], &['o', 'O'], &['n', 'N']];
    for options in expected {
        let (_, c) = chars.next()?;
        if !options.contains(&c) {
            return None;
        }
    }
    Some(chars.as_str())
}

fn looks_like_tool_payload(text: &str) -> bool {
    // Every alternative holds `_` or `"`, which match only themselves
    // even case-insensitively: a text with neither cannot match.
    if memchr::memchr2(b'_', b'"', text.as_bytes()).is_none() {
        return false;
    }
    match &*TOOL_PAYLOAD_HINT {
        Some(hint) => hint.is_match(text),
        None => {
            let lower = text.to_ascii_lowercase();
            ["tool_call", "\"function\"", "\"arguments\""]
                .iter()
                .any(|needle| lower.contains(needle))
        }
    }
}

/// Recursively collects tool names in JavaScript visiting order.
fn collect_tool_names(value: &JsValue, names: &mut Vec<String>) {
    let mut add = |name: &str| {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    };
    match value {
        JsValue::Array(items) => {
            for item in items {
                collect_tool_names(item, names);
            }
        }
        JsValue::Object(entries) => {
            if let Some(JsValue::String(name)) = value.get("name")
                && (value.has("arguments") || value.has("parameters"))
            {
                add(name);
            }
            if let Some(JsValue::String(tool)) = value.get("tool") {
                add(tool);
            }
            if let Some(JsValue::String(name)) = value.get("function").and_then(|f| f.get("name")) {
                add(name);
            }
            for (_, item) in entries {
                collect_tool_names(item, names);
            }
        }
        _ => {}
    }
}

/// The distinct captures of `/"name"\s*:\s*"([^"\\]+)"/g`, in order.
fn raw_names(text: &str) -> Vec<String> {
    const KEY: &str = "\"name\"";
    let mut names: Vec<String> = Vec::new();
    let mut rest = text;
    // `at` is where the ASCII KEY starts, `consumed` a byte count of
    // `after` that `name_value` read: all char boundaries, so the defaults
    // below are never taken.
    while let Some(at) = rest.find(KEY) {
        let after = rest.get(at + KEY.len()..).unwrap_or_default();
        match name_value(after) {
            Some((name, consumed)) => {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
                rest = after.get(consumed..).unwrap_or_default();
            }
            None => rest = rest.get(at + 1..).unwrap_or_default(),
        }
    }
    names
}

/// Matches `\s*:\s*"([^"\\]+)"` at the start of `text`: the captured name and
/// the length of the match.
fn name_value(text: &str) -> Option<(&str, usize)> {
    let rest = text.trim_start_matches(is_js_space).strip_prefix(':')?;
    let rest = rest.trim_start_matches(is_js_space).strip_prefix('"')?;
    let end = rest.find(['"', '\\'])?;
    let name = rest.get(..end)?;
    if name.is_empty() || !rest.get(end..)?.starts_with('"') {
        return None;
    }
    let consumed = text.len() - rest.len() + end + 1;
    Some((name, consumed))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Option<&str>, result: Option<&str>) -> ToolCall {
        ToolCall {
            name: name.to_owned(),
            arguments: arguments.map(str::to_owned),
            result: result.map(str::to_owned),
        }
    }

    proptest::proptest! {
        /// The byte prefilter never turns away a text the hint matches
        /// (case variants included: `ſ` is `s`, U+212A is `k`).
        #[test]
        fn the_payload_prefilter_answers_as_the_hint(
            text in "([a-z \"_]|(?i:tool_calls?|\"function\"|\"arguments\")|\u{17f}|\u{212a}|TOOL\u{17f}){0,8}",
        ) {
            let hint = TOOL_PAYLOAD_HINT.as_ref().unwrap();
            proptest::prop_assert_eq!(looks_like_tool_payload(&text), hint.is_match(&text));
        }
    }

    #[test]
    fn result_summary_cases() {
        assert_eq!(result_summary(&json!(null)), "");
        assert_eq!(result_summary(&json!("  ")), "");
        assert_eq!(result_summary(&json!(" found \n 3  rows ")), "found 3 rows");
        assert_eq!(result_summary(&json!("{\"ok\": true}")), "completed");
        assert_eq!(result_summary(&json!("42")), "42");
        assert_eq!(result_summary(&json!(1.0)), "1");
        assert_eq!(result_summary(&json!(false)), "false");
        assert_eq!(
            result_summary(&json!({"error": "boom\n now"})),
            "failed: boom now"
        );
        assert_eq!(result_summary(&json!({"summary": "s", "error": 1})), "s");
        assert_eq!(result_summary(&json!({"message": "m"})), "m");
        assert_eq!(
            result_summary(&json!({"items": [1, 2], "arguments": [1], "tags": []})),
            "items: 2, tags: 0"
        );
        assert_eq!(result_summary(&json!({"ok": true})), "completed");
        assert_eq!(result_summary(&json!({"ok": false})), "not completed");
        assert_eq!(
            result_summary(&json!({"x": 1})),
            "structured result returned"
        );
        assert_eq!(result_summary(&json!([[1, 2], 3, []])), "0: 2, 2: 0");
        assert_eq!(result_summary(&json!([1])), "structured result returned");
    }

    #[test]
    fn result_summary_bounds_length_in_chars() {
        let long = "日".repeat(300);
        assert_eq!(result_summary(&json!(long)).chars().count(), 160);
        let error = "e".repeat(300);
        assert_eq!(
            result_summary(&json!({ "error": error })),
            format!("failed: {}", "e".repeat(140))
        );
    }

    #[test]
    fn tool_trace_never_renders_arguments() {
        let trace = call(
            "search_events",
            Some(r#"{"privateQuery":"secret"}"#),
            Some(r#"{"events":[1,2,3]}"#),
        );
        let line = summarize_tool_trace(&trace);
        assert_eq!(line, "Tool call: search_events (events: 3)");
        assert!(!line.contains("privateQuery") && !line.contains("secret"));
        assert_eq!(
            summarize_tool_trace(&call("noop", None, None)),
            "Tool call: noop"
        );
        assert_eq!(
            summarize_tool_trace(&call("t", None, Some("null"))),
            "Tool call: t"
        );
        // Unparsable result text is summarized as a string.
        assert_eq!(
            summarize_tool_trace(&call("t", None, Some("plain  text"))),
            "Tool call: t (plain text)"
        );
    }

    #[test]
    fn tool_json_payloads() {
        assert_eq!(
            summarize_tool_json(r#"{"name":"search","arguments":{"q":"x"},"result":{"ok":true}}"#)
                .as_deref(),
            Some("Tool call: search (completed)")
        );
        assert_eq!(
            summarize_tool_json(
                "```json\n{\"tool_calls\":[{\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}},{\"tool\":\"a\"}],\"content\":\"done\"}\n```"
            )
            .as_deref(),
            Some("Tool call: b, a (done)")
        );
        // Names are collected in document order, not sorted.
        assert_eq!(
            summarize_tool_json(
                r#"{"z":{"name":"zeta","parameters":{}},"a":{"name":"alpha","arguments":{}}}"#
            )
            .as_deref(),
            Some("Tool call: zeta, alpha")
        );
        assert_eq!(summarize_tool_json(r#"{"name":"not a tool"}"#), None);
        assert_eq!(summarize_tool_json("plain words"), None);
        assert_eq!(summarize_tool_json("42"), None);
        assert_eq!(
            summarize_tool_json(r#"{"tool_call": {"name": "x", "name":"y", "arguments": {"#)
                .as_deref(),
            Some("Tool call: x, y (raw arguments omitted)")
        );
        assert_eq!(
            summarize_tool_json(r#"broken "ARGUMENTS" payload"#).as_deref(),
            Some("Tool call (raw arguments omitted)")
        );
    }

    #[test]
    fn code_fence_stripping() {
        assert_eq!(strip_code_fence("```json\n{}\n```"), "{}");
        assert_eq!(strip_code_fence("```JSON {} ```"), "{}");
        assert_eq!(strip_code_fence("```\n[1]```"), "[1]");
        assert_eq!(strip_code_fence("{}"), "{}");
    }

    #[test]
    fn raw_name_matching() {
        assert_eq!(
            raw_names(r#""name" : "a", "name":"", "name":"b\"c", "name":"a""#),
            ["a"]
        );
        assert_eq!(raw_names(r#""name""name": "z""#), ["z"]);
    }
}
