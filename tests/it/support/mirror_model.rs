//! A scripted model for the three `llm-*` operators: it answers each tool
//! from the request alone, deterministically, like a (very literal) model
//! would: the summary is the block's first message, one event per block
//! from its first long user message, one person node per participant.
// Indexing a `serde_json::Value` yields `Null` when absent; it never panics.
#![allow(clippy::indexing_slicing)]

use serde_json::{Value, json};

/// The tool a chat request forces.
pub fn tool_name(body: &Value) -> String {
    body["tool_choice"]["function"]["name"]
        .as_str()
        .or_else(|| body["tools"][0]["function"]["name"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The user turn of a chat request.
pub fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|x| x["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The JSON lines of the user turn that carry a `ref` (messages `m…` or
/// events `e…`).
pub fn ref_lines(body: &Value, prefix: char) -> Vec<Value> {
    user_text(body)
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["ref"].as_str().is_some_and(|r| r.starts_with(prefix)))
        .collect()
}

/// Whether the request is a retry after an invalid answer.
pub fn is_retry(body: &Value) -> bool {
    user_text(body).contains("an earlier attempt at this request gave no valid answer")
}

fn clip(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// The answer of the mirror model (the tool's arguments).
pub fn answer(body: &Value) -> Value {
    match tool_name(body).as_str() {
        "record_block_summary" => {
            let messages = ref_lines(body, 'm');
            let first = messages
                .first()
                .and_then(|m| m["content"].as_str())
                .unwrap_or("empty block");
            json!({
                "title": clip(first, 60),
                "tags": ["mirror"],
                "summary": clip(first, 300),
                "key_points": messages.iter().take(3)
                    .filter_map(|m| m["content"].as_str().map(|c| clip(c, 80)))
                    .collect::<Vec<_>>(),
                "should_extract": true,
            })
        }
        "record_events" => {
            let messages = ref_lines(body, 'm');
            let source = messages.iter().find(|m| {
                m["role"] == "user" && m["content"].as_str().is_some_and(|c| c.len() > 20)
            });
            match source {
                None => json!({"should_extract": false, "reason": "nothing durable", "events": []}),
                Some(m) => {
                    let content = m["content"].as_str().unwrap_or_default();
                    let speaker = m["speaker"].as_str().unwrap_or("someone");
                    json!({
                        "should_extract": true,
                        "reason": "one statement",
                        "events": [{
                            "sources": [m["ref"]],
                            "title": format!("{speaker}: {}", clip(content, 50)),
                            "summary": clip(content, 200),
                            "quotes": [],
                            "participants": [speaker],
                            "event_type": "other",
                            "status": "unknown",
                            "happened_start": null,
                            "happened_end": null,
                            "basis": "unknown",
                            "scope": "user",
                            "criticality": "routine",
                        }],
                    })
                }
            }
        }
        "record_graph" => {
            let mut nodes: Vec<Value> = Vec::new();
            for event in ref_lines(body, 'e') {
                let r = event["ref"].clone();
                for p in event["participants"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                {
                    let Some(name) = p.as_str() else { continue };
                    if let Some(node) = nodes.iter_mut().find(|n| n["name"] == name) {
                        if let Some(sources) = node["sources"].as_array_mut() {
                            sources.push(r.clone());
                        }
                        continue;
                    }
                    let n = nodes.len() + 1;
                    nodes.push(json!({
                        "ref": format!("n{n}"),
                        "type": "person",
                        "name": name,
                        "tags": [],
                        "sources": [r.clone()],
                    }));
                }
            }
            json!({"nodes": nodes, "edges": []})
        }
        other => json!({"error": format!("unknown tool {other}")}),
    }
}
