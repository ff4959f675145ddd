//! L4: the readable near-verbatim transcript (spec §4.3,
//! `formatReadableTranscript`).

use strataflow_record::record::Role;

use super::TranscriptMessage;
use super::text::js_trim;
use super::tool_summary::{summarize_tool_json, summarize_tool_trace};

/// Renders L4: for each non-system message, `"{Label}: {text}"` with the
/// trimmed content (omitted when empty) followed by one
/// [`summarize_tool_trace`] line per tool call; all lines joined with
/// `"\n\n"`.
///
/// Natural-language content is kept verbatim. Only a `tool` message whose
/// whole body is a tool-call payload is replaced by its
/// [`summarize_tool_json`] line; system messages are dropped.
pub fn render_readable(messages: &[TranscriptMessage<'_>]) -> String {
    let mut out = String::new();
    let mut first = true;
    let mut line = |out: &mut String, parts: &[&str]| {
        if !std::mem::take(&mut first) {
            out.push_str("\n\n");
        }
        parts.iter().for_each(|part| out.push_str(part));
    };
    for message in messages.iter().filter(|m| m.role != Role::System) {
        let text = js_trim(message.content);
        let summarized = match message.role {
            Role::Tool => summarize_tool_json(text),
            _ => None,
        };
        let inline = summarized.as_deref().unwrap_or(text);
        if !inline.is_empty() {
            line(&mut out, &[message.role.label(), ": ", inline]);
        }
        for call in message.tool_calls {
            line(&mut out, &[&summarize_tool_trace(call)]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use strataflow_record::record::ToolCall;

    use super::*;

    fn msg(role: Role, content: &str) -> TranscriptMessage<'_> {
        TranscriptMessage::text(role, content)
    }

    #[test]
    fn keeps_text_verbatim_and_drops_system() {
        let messages = [
            msg(Role::System, "secret system prompt"),
            msg(Role::User, "  Okay.\nThe source must remain available.  "),
            msg(Role::Assistant, "   "),
            msg(Role::Assistant, "Sure!"),
        ];
        assert_eq!(
            render_readable(&messages),
            "User: Okay.\nThe source must remain available.\n\nAssistant: Sure!"
        );
    }

    #[test]
    fn summarizes_tool_payloads_and_traces() {
        let calls = [ToolCall {
            name: "search_events".into(),
            arguments: Some(r#"{"privateQuery":"x"}"#.into()),
            result: Some(r#"{"summary":"2 hits"}"#.into()),
        }];
        let messages = [
            TranscriptMessage {
                role: Role::Assistant,
                content: "",
                tool_calls: &calls,
            },
            msg(
                Role::Tool,
                r#"{"name":"lookup","arguments":{"id":7},"result":"found it"}"#,
            ),
            // Only `tool` messages are summarized inline.
            msg(Role::User, r#"{"name":"lookup","arguments":{}}"#),
        ];
        let l4 = render_readable(&messages);
        assert_eq!(
            l4,
            "Tool call: search_events (2 hits)\n\n\
             Tool: Tool call: lookup (found it)\n\n\
             User: {\"name\":\"lookup\",\"arguments\":{}}"
        );
        assert!(!l4.contains("privateQuery"));
    }
}
