//! The deterministic transcript layers of a conversation block (spec §4).
//!
//! A sealed block keeps its messages at several levels of detail. The three
//! finest are computed here, as pure functions of the block's messages:
//!
//! - **L5, raw**: the messages themselves. For cost comparisons they are
//!   rendered by [`render_raw`]: `"{role}: {content}"` for every message
//!   (system included, content verbatim) plus one
//!   `Tool call (raw): {"name":…,"arguments":…,"result":…}` line per tool
//!   call, joined with blank lines.
//! - **L4, readable** ([`render_readable`]): near-verbatim. System messages
//!   are dropped; content is trimmed and kept as written; a `tool` message
//!   whose whole body is a tool-call JSON payload becomes one
//!   `Tool call: name (result summary)` line; every tool call becomes such a
//!   line. Tool arguments are never shown.
//! - **L3, condensed** ([`render_condensed`]): L4's content with only these
//!   removals: standalone greetings and confirmations
//!   ([`FILLER_ONLY`], e.g. the `Okay.` of `"Okay.\nThe source must remain
//!   available."`), raw tool-call arguments (name and bounded result summary
//!   kept), and exact repeats of long pastes (paragraphs of at least
//!   [`REPEATED_PASTE_MIN_CHARS`] characters, code-like paragraphs, fenced
//!   code blocks) after their first occurrence in the block, replaced by
//!   [`REPEATED_PASTE_MARKER`]. Nothing is paraphrased; a paragraph from
//!   which nothing was removed is kept unchanged.
//!
//! [`deterministic_layers`] adds the cost guarantee: in [`estimate_tokens`],
//! L3 ≤ L4 ≤ the raw rendering. When the readable rendering would cost more
//! than the raw one, L4 is the raw rendering; when the condensed rendering
//! would cost more than L4, L3 is L4.
//!
//! Tool results are JSON text; JSON is read with JavaScript `JSON.parse`
//! semantics and property order so that summaries match the reference
//! implementation. "Characters" are Unicode scalar values throughout.

mod condensed;
mod json;
mod raw;
mod readable;
mod text;
mod tokens;
mod tool_summary;

use strataflow_record::record::{Message, Role, ToolCall};

pub use condensed::{
    FILLER_ONLY, REPEATED_PASTE_MARKER, REPEATED_PASTE_MIN_CHARS, render_condensed,
};
pub use raw::render_raw;
pub use readable::render_readable;
pub use tokens::estimate_tokens;
pub use tool_summary::{result_summary, summarize_tool_json, summarize_tool_trace};

/// The parts of a message the transcript layers read, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranscriptMessage<'a> {
    /// Who wrote the message.
    pub role: Role,
    /// The content, verbatim (untrimmed).
    pub content: &'a str,
    /// The tool calls made in the message.
    pub tool_calls: &'a [ToolCall],
}

impl<'a> TranscriptMessage<'a> {
    /// A message with text only, no tool calls.
    pub fn text(role: Role, content: &'a str) -> Self {
        Self {
            role,
            content,
            tool_calls: &[],
        }
    }
}

impl<'a> From<&'a Message> for TranscriptMessage<'a> {
    fn from(message: &'a Message) -> Self {
        Self {
            role: message.role,
            content: &message.content,
            tool_calls: &message.tool_calls,
        }
    }
}

/// The deterministic layers of a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    /// L4, the readable near-verbatim transcript (or the raw rendering when
    /// that is cheaper).
    pub l4: String,
    /// L3, the rule-condensed transcript (or L4 when that is cheaper).
    pub l3: String,
}

/// Computes L4 and L3 for a block's messages with the monotonic cost
/// guarantee `estimate_tokens(l3) <= estimate_tokens(l4) <=
/// estimate_tokens(render_raw(messages))` (spec §4.5).
pub fn deterministic_layers(messages: &[TranscriptMessage<'_>]) -> Layers {
    // The raw rendering is counted, and built only when it is L4.
    let readable = render_readable(messages);
    let readable_tokens = estimate_tokens(&readable);
    let (l4, l4_tokens) = match raw::raw_tokens(messages) {
        raw_tokens if readable_tokens <= raw_tokens => (readable, readable_tokens),
        raw_tokens => (render_raw(messages), raw_tokens),
    };
    let condensed = render_condensed(messages);
    let l3 = if estimate_tokens(&condensed) <= l4_tokens {
        condensed
    } else {
        l4.clone()
    };
    Layers { l4, l3 }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn msg(role: Role, content: &str) -> TranscriptMessage<'_> {
        TranscriptMessage::text(role, content)
    }

    #[test]
    fn from_message_borrows_the_fields() {
        let message = Message {
            tenant: String::new(),
            thread: "t".into(),
            external_id: "m1".into(),
            position: 0,
            role: Role::Tool,
            speaker: None,
            content: " body ".into(),
            tool_calls: vec![ToolCall {
                name: "n".into(),
                arguments: None,
                result: None,
            }],
            time: strataflow_record::SourceTime::utc_without_offset(0),
        };
        let view = TranscriptMessage::from(&message);
        assert_eq!(view.role, Role::Tool);
        assert_eq!(view.content, " body ");
        assert_eq!(view.tool_calls, message.tool_calls.as_slice());
    }

    #[test]
    fn block_example_from_the_spec() {
        let paste = "The retention policy says the raw transcript stays available for audit, and derived layers may be rebuilt from it at any time.";
        let calls = [ToolCall {
            name: "search_events".into(),
            arguments: Some(r#"{"privateQuery":"retention"}"#.into()),
            result: Some(r#"{"events":[1,2]}"#.into()),
        }];
        let messages = [
            msg(Role::System, "You are a memory agent."),
            msg(Role::User, "Okay.\nThe source must remain available."),
            TranscriptMessage {
                role: Role::Assistant,
                content: "Checking.",
                tool_calls: &calls,
            },
            msg(Role::User, paste),
            msg(Role::Assistant, "Thanks!"),
            msg(Role::User, paste),
        ];
        let layers = deterministic_layers(&messages);
        let raw = render_raw(&messages);

        assert!(!layers.l4.contains("You are a memory agent"));
        assert!(
            layers
                .l4
                .contains("User: Okay.\nThe source must remain available.")
        );
        assert!(layers.l4.contains("Tool call: search_events (events: 2)"));
        assert!(!layers.l4.contains("privateQuery"));
        assert_eq!(layers.l4.matches(paste).count(), 2);

        assert_eq!(
            layers.l3,
            format!(
                "User: The source must remain available.\n\n\
                 Assistant: Checking.\n\nTool call: search_events (events: 2)\n\n\
                 User: {paste}\n\nUser: {REPEATED_PASTE_MARKER}"
            )
        );
        assert_eq!(raw.matches(paste).count(), 2);
        assert!(raw.contains("privateQuery"));
        assert!(estimate_tokens(&layers.l3) <= estimate_tokens(&layers.l4));
        assert!(estimate_tokens(&layers.l4) <= estimate_tokens(&raw));
    }

    #[test]
    fn l4_falls_back_to_raw_when_the_readable_form_costs_more() {
        // `\u65e5` escapes are one long ASCII run in the raw rendering, but
        // decode to `日`, which splits the readable summary into many runs.
        let content = format!("{{\"tool\":\"{}\"}}", "a\\u65e5".repeat(40));
        let messages = [msg(Role::Tool, &content)];
        let readable = render_readable(&messages);
        let raw = render_raw(&messages);
        assert!(readable.starts_with("Tool: Tool call: a日a日"));
        assert!(estimate_tokens(&readable) > estimate_tokens(&raw));
        let layers = deterministic_layers(&messages);
        assert_eq!(layers.l4, raw);
        assert_eq!(layers.l3, raw);
    }

    #[test]
    fn l3_falls_back_to_l4_when_the_marker_costs_more() {
        // A short code-like paragraph is a paste candidate; its repeat would
        // be replaced by the longer marker.
        let messages = [msg(Role::User, "a;\nb"), msg(Role::User, "a;\nb")];
        assert!(render_condensed(&messages).contains(REPEATED_PASTE_MARKER));
        let layers = deterministic_layers(&messages);
        assert_eq!(layers.l4, "User: a;\nb\n\nUser: a;\nb");
        assert_eq!(layers.l3, layers.l4);
    }

    #[test]
    fn empty_block() {
        let layers = deterministic_layers(&[]);
        assert_eq!(
            layers,
            Layers {
                l4: String::new(),
                l3: String::new()
            }
        );
    }

    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("Okay.".to_owned()),
            Just("好的。".to_owned()),
            Just("Thanks!".to_owned()),
            Just("\n".to_owned()),
            Just("\n\n".to_owned()),
            Just(" ".to_owned()),
            Just("```".to_owned()),
            Just("```json\n".to_owned()),
            Just("const x = 1;".to_owned()),
            Just("{\"name\":\"t\",\"arguments\":{},\"result\":\"ok\"}".to_owned()),
            Just("\"tool_calls\" \"name\": \"q\"".to_owned()),
            Just("A long pasted line of text that is clearly over the eighty character limit for pastes.".to_owned()),
            Just("第一句保持原样。".to_owned()),
            "[a-z ]{0,12}",
            "\\PC{0,8}",
        ]
    }

    fn content() -> impl Strategy<Value = String> {
        prop::collection::vec(fragment(), 0..8).prop_map(|parts| parts.concat())
    }

    fn json_text() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some("null".to_owned())),
            Just(Some("{\"ok\":true}".to_owned())),
            Just(Some("{\"error\":\"bad  thing\"}".to_owned())),
            Just(Some("{\"items\":[1,2,3],\"q\":\"x\"}".to_owned())),
            "\\PC{0,30}".prop_map(Some),
            "[a-z]{0,200}".prop_map(|s| Some(format!("\"{s}\""))),
        ]
    }

    fn tool_call() -> impl Strategy<Value = ToolCall> {
        let arguments = prop_oneof![
            Just(None),
            "[a-z 日]{0,40}".prop_map(|q| Some(format!("{{\"privateQuery\":\"{q}\"}}"))),
        ];
        ("[a-z_日]{0,12}", arguments, json_text()).prop_map(|(name, arguments, result)| ToolCall {
            name,
            arguments,
            result,
        })
    }

    fn role() -> impl Strategy<Value = Role> {
        prop_oneof![
            Just(Role::User),
            Just(Role::Assistant),
            Just(Role::Tool),
            Just(Role::System)
        ]
    }

    fn messages() -> impl Strategy<Value = Vec<(Role, String, Vec<ToolCall>)>> {
        prop::collection::vec(
            (role(), content(), prop::collection::vec(tool_call(), 0..3)),
            0..10,
        )
    }

    fn views(owned: &[(Role, String, Vec<ToolCall>)]) -> Vec<TranscriptMessage<'_>> {
        owned
            .iter()
            .map(|(role, content, tool_calls)| TranscriptMessage {
                role: *role,
                content,
                tool_calls,
            })
            .collect()
    }

    proptest! {
        #[test]
        fn layers_are_monotonic_in_cost(owned in messages()) {
            let messages = views(&owned);
            let layers = deterministic_layers(&messages);
            let raw = render_raw(&messages);
            prop_assert!(estimate_tokens(&layers.l3) <= estimate_tokens(&layers.l4));
            prop_assert!(estimate_tokens(&layers.l4) <= estimate_tokens(&raw));
        }

        #[test]
        fn raw_tokens_count_the_raw_rendering(owned in messages()) {
            let messages = views(&owned);
            prop_assert_eq!(raw::raw_tokens(&messages), estimate_tokens(&render_raw(&messages)));
        }

        /// The layers are those of comparing the three renderings whole.
        #[test]
        fn layers_choose_as_comparing_whole_renderings(owned in messages()) {
            let messages = views(&owned);
            let raw = render_raw(&messages);
            let readable = render_readable(&messages);
            let l4 = if estimate_tokens(&readable) <= estimate_tokens(&raw) { readable } else { raw };
            let condensed = render_condensed(&messages);
            let l3 = if estimate_tokens(&condensed) <= estimate_tokens(&l4) { condensed } else { l4.clone() };
            prop_assert_eq!(deterministic_layers(&messages), Layers { l4, l3 });
        }

        #[test]
        fn layers_are_deterministic(owned in messages()) {
            let messages = views(&owned);
            let first = deterministic_layers(&messages);
            let cloned = owned.clone();
            let second = deterministic_layers(&views(&cloned));
            prop_assert_eq!(&first, &second);
            prop_assert_eq!(render_condensed(&messages), render_condensed(&messages));
        }

        #[test]
        fn system_messages_are_dropped_and_arguments_never_rendered(owned in messages()) {
            let messages = views(&owned);
            let without_system: Vec<_> =
                messages.iter().copied().filter(|m| m.role != Role::System).collect();
            let readable = render_readable(&messages);
            let condensed = render_condensed(&messages);
            prop_assert_eq!(&readable, &render_readable(&without_system));
            prop_assert_eq!(&condensed, &render_condensed(&without_system));
            // Only tool-call arguments hold `privateQuery`.
            prop_assert!(!readable.contains("privateQuery"));
            prop_assert!(!condensed.contains("privateQuery"));
            prop_assert!(render_raw(&messages).contains("privateQuery")
                || !owned.iter().any(|(_, _, calls)| calls.iter().any(|c| c.arguments.is_some())));
        }
    }
}
