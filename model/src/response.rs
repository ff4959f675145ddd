//! Reading a chat completion: the tool call's arguments (or JSON found in
//! the text when the model answered in prose) and the token usage.

use serde_json::Value;
use strataflow_log::record::TokenUsage;

/// What a chat completion answered.
#[derive(Clone, PartialEq, Debug)]
pub struct CompletionAnswer {
    /// The arguments of the first tool call, or the JSON object found in the
    /// message text.
    pub arguments: Value,
    /// Token usage the service reported (zero when it reported none).
    pub usage: TokenUsage,
}

/// Whether `body` is a chat completion at all: a JSON object with a
/// `choices` array. A body that is not (an HTML error page from a proxy, a
/// truncated body) is a transport fault the client retries; a completion
/// whose answer is unusable is recorded and reported by
/// [`parse_completion`].
pub(crate) fn check_completion(body: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| format!("response is not JSON ({e}): {}", clip(body, 200)))?;
    if value.get("choices").is_some_and(Value::is_array) {
        Ok(value)
    } else {
        Err(format!(
            "response is not a chat completion (no `choices` array): {}",
            clip(body, 200)
        ))
    }
}

/// Parses a stored chat completion body: `choices[0].message.tool_calls[0]
/// .function.arguments` (a JSON string, or an object), else the legacy
/// `function_call.arguments`, else JSON in `message.content` (the body of a
/// fenced code block, the whole text, or the first balanced `{…}` that
/// parses). The error says what is missing.
pub fn parse_completion(body: &str) -> Result<CompletionAnswer, String> {
    let value = check_completion(body)?;
    let usage = usage_of(&value);
    let message = value
        .pointer("/choices/0/message")
        .ok_or("the completion has no `choices[0].message`")?;
    let arguments = message
        .pointer("/tool_calls/0/function/arguments")
        .or_else(|| message.pointer("/function_call/arguments"));
    let arguments = match arguments {
        Some(Value::String(text)) => serde_json::from_str(text).map_err(|e| {
            format!(
                "the tool call's arguments are not JSON ({e}): {}",
                clip(text, 200)
            )
        })?,
        Some(object @ Value::Object(_)) => object.clone(),
        Some(other) => {
            return Err(format!(
                "the tool call's arguments are neither a JSON string nor an object: {}",
                clip(&other.to_string(), 200)
            ));
        }
        None => match message.get("content") {
            Some(Value::String(text)) => json_in_text(text).ok_or_else(|| {
                format!(
                    "no tool call, and the text holds no JSON object: {}",
                    clip(text, 200)
                )
            })?,
            _ => return Err("no tool call and no text in the message".into()),
        },
    };
    Ok(CompletionAnswer { arguments, usage })
}

/// `usage.prompt_tokens` and `usage.completion_tokens` of a completion
/// (saturated to `u32`, zero when absent).
pub fn usage_of(completion: &Value) -> TokenUsage {
    let count = |field: &str| {
        completion
            .pointer(&format!("/usage/{field}"))
            .and_then(Value::as_u64)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    TokenUsage {
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
    }
}

/// The JSON a model wrote in prose: the body of the first fenced code
/// block if it parses, else the whole text if it is an object, else the
/// first balanced `{…}` that parses.
fn json_in_text(text: &str) -> Option<Value> {
    if let Some(fenced) = fenced_block(text)
        && let Ok(value) = serde_json::from_str(fenced)
    {
        return Some(value);
    }
    if let Ok(value @ Value::Object(_)) = serde_json::from_str(text.trim()) {
        return Some(value);
    }
    let bytes = text.as_bytes();
    for (start, _) in text.match_indices('{') {
        if let Some(end) = balanced_end(bytes, start)
            && let Some(Ok(value)) = text.get(start..=end).map(serde_json::from_str::<Value>)
        {
            return Some(value);
        }
    }
    None
}

/// The body of the first ```` ``` ```` fence (the language tag line
/// skipped).
fn fenced_block(text: &str) -> Option<&str> {
    let open = text.find("```")?;
    let after = text.get(open + 3..)?;
    let body_start = after.find('\n')? + 1;
    let body = after.get(body_start..)?;
    let close = body.find("```")?;
    body.get(..close).map(str::trim)
}

/// Index of the `}` closing the `{` at `start`, skipping braces inside
/// JSON strings.
fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// At most `max` characters of `text`, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn completion(message: Value) -> String {
        json!({
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
        })
        .to_string()
    }

    #[test]
    fn reads_the_tool_call_arguments_and_usage() {
        let body = completion(json!({"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":[1,2]}"}}
        ]}));
        let answer = parse_completion(&body).unwrap();
        assert_eq!(answer.arguments, json!({"a": [1, 2]}));
        assert_eq!(
            answer.usage,
            TokenUsage {
                prompt_tokens: 12,
                completion_tokens: 5
            }
        );
    }

    #[test]
    fn falls_back_to_json_in_the_text() {
        let fenced = "Here you go:\n```json\n{\"a\": \"x}\"}\n```\nThanks";
        let body = completion(json!({"role": "assistant", "content": fenced}));
        assert_eq!(
            parse_completion(&body).unwrap().arguments,
            json!({"a": "x}"})
        );
        let prose = "The answer is {\"b\": {\"c\": \"{not a brace\"}} and more {";
        let body = completion(json!({"role": "assistant", "content": prose}));
        assert_eq!(
            parse_completion(&body).unwrap().arguments,
            json!({"b": {"c": "{not a brace"}})
        );
    }

    #[test]
    fn says_what_is_missing() {
        let body = completion(json!({"role": "assistant", "content": "no idea"}));
        let err = parse_completion(&body).unwrap_err();
        assert!(err.contains("no JSON object"), "{err}");
        let body = completion(json!({"tool_calls": [{"function": {"arguments": "{oops"}}]}));
        let err = parse_completion(&body).unwrap_err();
        assert!(err.contains("arguments are not JSON"), "{err}");
        let err = parse_completion("<html>bad gateway</html>").unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
        let err = parse_completion("{\"error\": 1}").unwrap_err();
        assert!(err.contains("choices"), "{err}");
    }

    #[test]
    fn clip_cuts_at_a_character_boundary() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
    }
}
