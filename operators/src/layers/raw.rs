//! The raw (L5) rendering used for the monotonic cost comparison (spec §4.1,
//! V3 `formatRawTranscript`).

use strataflow_record::record::ToolCall;

use super::TranscriptMessage;
use super::tokens::TokenCounter;

/// Renders every message, system messages included, as
/// `"{role}: {content}"` (lowercase role, content verbatim), each followed by
/// one `Tool call (raw): {"name":…,"arguments":…,"result":…}` line per tool
/// call. All lines are joined with a blank line (`"\n\n"`).
///
/// `arguments` and `result` are embedded as JSON values (`null` when absent;
/// text that is not JSON is embedded as a JSON string).
pub fn render_raw(messages: &[TranscriptMessage<'_>]) -> String {
    let mut out = String::with_capacity(
        messages
            .iter()
            .map(|m| m.content.len() + m.role.as_str().len() + 4)
            .sum(),
    );
    raw_pieces(messages, |piece| out.push_str(piece));
    out
}

/// [`estimate_tokens`](super::estimate_tokens) of [`render_raw`], counted
/// piece by piece without building the rendering (only tool-call lines are
/// formatted).
pub(super) fn raw_tokens(messages: &[TranscriptMessage<'_>]) -> usize {
    let mut counter = TokenCounter::default();
    raw_pieces(messages, |piece| counter.push(piece));
    counter.total()
}

/// The raw rendering's text, piece by piece, in order.
fn raw_pieces(messages: &[TranscriptMessage<'_>], mut piece: impl FnMut(&str)) {
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            piece("\n\n");
        }
        piece(message.role.as_str());
        piece(": ");
        piece(message.content);
        for call in message.tool_calls {
            piece("\n\n");
            piece(&raw_tool_line(call));
        }
    }
}

fn raw_tool_line(call: &ToolCall) -> String {
    let json = |text: Option<&str>| match text {
        None => serde_json::Value::Null,
        Some(text) => serde_json::from_str(text)
            .unwrap_or_else(|_| serde_json::Value::String(text.to_owned())),
    };
    format!(
        "Tool call (raw): {{\"name\":{},\"arguments\":{},\"result\":{}}}",
        serde_json::Value::String(call.name.clone()),
        json(call.arguments.as_deref()),
        json(call.result.as_deref()),
    )
}

#[cfg(test)]
mod tests {
    use strataflow_record::record::Role;

    use super::*;

    #[test]
    fn renders_every_message_and_raw_tool_calls() {
        let calls = [
            ToolCall {
                name: "search".into(),
                arguments: Some(r#"{"q":"x"}"#.into()),
                result: None,
            },
            ToolCall {
                name: "say \"hi\"".into(),
                arguments: None,
                result: Some("not json".into()),
            },
        ];
        let messages = [
            TranscriptMessage {
                role: Role::System,
                content: "be brief",
                tool_calls: &[],
            },
            TranscriptMessage {
                role: Role::Assistant,
                content: " looking ",
                tool_calls: &calls,
            },
        ];
        assert_eq!(
            render_raw(&messages),
            "system: be brief\n\nassistant:  looking \n\n\
             Tool call (raw): {\"name\":\"search\",\"arguments\":{\"q\":\"x\"},\"result\":null}\n\n\
             Tool call (raw): {\"name\":\"say \\\"hi\\\"\",\"arguments\":null,\"result\":\"not json\"}"
        );
        assert_eq!(render_raw(&[]), "");
    }
}
