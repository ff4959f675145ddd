//! L3: the rule-condensed transcript (spec §4.4, `condenseTranscript`).
//!
//! The only removals allowed: standalone greetings, acknowledgements and
//! confirmations ([`FILLER_ONLY`]); raw tool-call arguments (a tool call
//! keeps its name and a bounded result summary); and exact repeats of long
//! pasted text or code after its first occurrence in the block. Nothing is
//! paraphrased, and short repeated natural messages are kept.

use std::collections::HashSet;

use strataflow_record::record::Role;

use super::TranscriptMessage;
use super::text::{collapse_and_trim, is_js_line_terminator, is_js_space, js_trim};
use super::tool_summary::{summarize_tool_json, summarize_tool_trace};

/// Sentences that are dropped when they stand alone (compared after trimming,
/// removing trailing `。！？，、,.!?～~` and lowercasing).
pub const FILLER_ONLY: [&str; 26] = [
    "ok",
    "okay",
    "got it",
    "thanks",
    "thank you",
    "yes",
    "correct",
    "sure",
    "好",
    "好的",
    "嗯",
    "嗯嗯",
    "明白",
    "收到",
    "谢谢",
    "感谢",
    "辛苦了",
    "是",
    "是的",
    "对",
    "对的",
    "没错",
    "可以",
    "行",
    "同意",
    "就这样",
];

/// A paragraph at least this long (in characters, after whitespace is
/// collapsed and trimmed) is a paste candidate even when it is not code.
pub const REPEATED_PASTE_MIN_CHARS: usize = 80;

/// Replaces a repeated long paste after its first occurrence in a block.
pub const REPEATED_PASTE_MARKER: &str = "[repeated paste omitted; original remains in L5]";

/// Whether `c` is trailing punctuation ignored when matching
/// [`FILLER_ONLY`]: one of `。！？，、,.!?～~`.
fn is_filler_trailing(c: char) -> bool {
    matches!(
        c,
        '。' | '！' | '？' | '，' | '、' | ',' | '.' | '!' | '?' | '～' | '~'
    )
}

/// Whether `c` ends a sentence (a paragraph is split after it): one of
/// `。！？!?`.
fn is_sentence_end(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?')
}

/// Line-start keywords that mark a multi-line paragraph as code.
const CODE_KEYWORDS: [&str; 11] = [
    "const", "let", "var", "function", "class", "import", "export", "def", "SELECT", "INSERT",
    "UPDATE",
];

const CODE_FENCE: &str = "```";

/// Renders L3. System messages are skipped. Each message becomes
/// `"{Label}: "` followed by its parts joined with `"\n\n"`; a message with
/// no parts is omitted; messages are joined with `"\n\n"`.
///
/// A message's parts: its whole (trimmed) body summarized as one line when
/// it is a tool-call payload ([`summarize_tool_json`](super::summarize_tool_json));
/// otherwise each fenced code block (a paste candidate) and each
/// blank-line-separated text paragraph with standalone fillers removed
/// (a paste candidate when it looks like code or is at least
/// [`REPEATED_PASTE_MIN_CHARS`] long). Then one
/// [`summarize_tool_trace`](super::summarize_tool_trace) line per tool call.
/// A paste candidate whose normalized text (whitespace collapsed, trimmed,
/// lowercased) already appeared in the block is replaced by
/// [`REPEATED_PASTE_MARKER`].
pub fn render_condensed(messages: &[TranscriptMessage<'_>]) -> String {
    // Only asked for membership (never iterated), so its order never shows.
    let mut seen: HashSet<String, foldhash::fast::FixedState> = HashSet::default();
    let mut out = String::new();
    for message in messages.iter().filter(|m| m.role != Role::System) {
        let mut parts = condense_message(message.content);
        parts.extend(message.tool_calls.iter().map(|call| Part {
            text: summarize_tool_trace(call),
            paste_candidate: false,
        }));
        if parts.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(message.role.label());
        out.push_str(": ");
        for (k, part) in parts.iter().enumerate() {
            if k > 0 {
                out.push_str("\n\n");
            }
            if part.paste_candidate && !seen.insert(normalized_paragraph(&part.text)) {
                out.push_str(REPEATED_PASTE_MARKER);
            } else {
                out.push_str(&part.text);
            }
        }
    }
    out
}

struct Part {
    text: String,
    paste_candidate: bool,
}

fn condense_message(content: &str) -> Vec<Part> {
    let source = js_trim(content);
    if let Some(summary) = summarize_tool_json(source) {
        return vec![Part {
            text: summary,
            paste_candidate: false,
        }];
    }
    let mut parts = Vec::new();
    for span in split_text_and_code(source) {
        match span {
            Span::Code(code) => {
                let code = js_trim(code);
                if !code.is_empty() {
                    parts.push(Part {
                        text: code.to_owned(),
                        paste_candidate: true,
                    });
                }
            }
            Span::Text(text) => {
                for paragraph in split_paragraphs(text) {
                    let kept = remove_standalone_fillers(paragraph);
                    if kept.is_empty() {
                        continue;
                    }
                    let paste_candidate = looks_like_code(&kept) || is_long_for_a_paste(&kept);
                    parts.push(Part {
                        text: kept,
                        paste_candidate,
                    });
                }
            }
        }
    }
    parts
}

enum Span<'a> {
    Text(&'a str),
    Code(&'a str),
}

/// Splits on the fenced code blocks of ```` /```[\s\S]*?```/g ````.
fn split_text_and_code(source: &str) -> Vec<Span<'_>> {
    let mut spans = Vec::new();
    let mut cursor = 0;
    while let Some(open) = source.get(cursor..).and_then(find_fence) {
        let start = cursor + open;
        let body_start = start + CODE_FENCE.len();
        let Some(close) = source.get(body_start..).and_then(find_fence) else {
            // No closing fence after this one means no later match either.
            break;
        };
        let end = body_start + close + CODE_FENCE.len();
        if start > cursor {
            spans.extend(source.get(cursor..start).map(Span::Text));
        }
        spans.extend(source.get(start..end).map(Span::Code));
        cursor = end;
    }
    if cursor < source.len() {
        spans.extend(source.get(cursor..).map(Span::Text));
    }
    spans
}

/// `text.find(CODE_FENCE)`, by a search for a backtick first: a text
/// without one (most) is read once, by the byte search.
fn find_fence(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'`', text.as_bytes().get(from..)?) {
        let at = from + i;
        if text.get(at..)?.starts_with(CODE_FENCE) {
            return Some(at);
        }
        // A backtick is one byte: `at + 1` is a character boundary.
        from = at + 1;
    }
    None
}

/// `text.split(/\n\s*\n+/)`: a separator starts at the first `\n` of a
/// whitespace run holding at least two `\n` and ends after its last `\n`.
fn split_paragraphs(text: &str) -> Vec<&str> {
    let mut paragraphs = Vec::new();
    let mut piece_start = 0;
    let mut at = 0;
    // From each `\n` (found by a byte search), the whitespace run after it.
    while let Some(i) = text.get(at..).and_then(|rest| rest.find('\n')) {
        let newline = at + i;
        let run_start = newline + 1;
        let mut run_end = run_start;
        let mut last_newline_end = None;
        for (k, c) in text.get(run_start..).unwrap_or_default().char_indices() {
            if !is_js_space(c) {
                break;
            }
            run_end = run_start + k + c.len_utf8();
            if c == '\n' {
                last_newline_end = Some(run_end);
            }
        }
        if let Some(end) = last_newline_end {
            paragraphs.extend(text.get(piece_start..newline));
            piece_start = end;
        }
        at = run_end;
    }
    paragraphs.extend(text.get(piece_start..));
    paragraphs
}

/// Drops standalone filler sentences from a paragraph. The paragraph is
/// split after each of `。！？!?` and on newline runs; pieces are trimmed and
/// empty ones dropped. When no piece is a filler the trimmed paragraph is
/// returned unchanged (V3); otherwise the kept pieces are joined with `\n`.
fn remove_standalone_fillers(paragraph: &str) -> String {
    let pieces = split_sentences(paragraph);
    let kept: Vec<&str> = pieces
        .iter()
        .copied()
        .filter(|piece| !is_filler_sentence(piece))
        .collect();
    if kept.len() == pieces.len() {
        js_trim(paragraph).to_owned()
    } else {
        kept.join("\n")
    }
}

/// `paragraph.split(/(?<=[。！？!?])|\n+/)`, trimmed, without empty pieces.
///
/// Frozen: part of the L3 layer of every sealed block (block record ids
/// depend on it); do not change, and do not replace it with
/// [`strataflow_text::sentences`]. It never splits at `.`, so "Dr. Patel"
/// stays whole here already; it only finds standalone fillers ("ok!").
fn split_sentences(paragraph: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut cut = |i: usize, c: char| {
        let end = if c == '\n' {
            Some((i, i + 1))
        } else if is_sentence_end(c) {
            Some((i + c.len_utf8(), i + c.len_utf8()))
        } else {
            None
        };
        if let Some((piece_end, next_start)) = end {
            pieces.extend(paragraph.get(start..piece_end));
            start = next_start;
        }
    };
    if paragraph.is_ascii() {
        // Each byte is a character: read without decoding.
        for (i, b) in paragraph.bytes().enumerate() {
            cut(i, char::from(b));
        }
    } else {
        for (i, c) in paragraph.char_indices() {
            cut(i, c);
        }
    }
    pieces.extend(paragraph.get(start..));
    pieces
        .into_iter()
        .map(js_trim)
        .filter(|piece| !piece.is_empty())
        .collect()
}

fn is_filler_sentence(sentence: &str) -> bool {
    let stripped = js_trim(sentence).trim_end_matches(is_filler_trailing);
    let trimmed = js_trim(stripped);
    if trimmed.is_ascii() {
        // ASCII lowercases byte for byte: compared in place, no copy.
        return FILLER_ONLY
            .iter()
            .any(|filler| filler.eq_ignore_ascii_case(trimmed));
    }
    let normalized = trimmed.to_lowercase();
    FILLER_ONLY.contains(&normalized.as_str())
}

/// Whether [`normalized_paragraph`] of `text` has at least
/// [`REPEATED_PASTE_MIN_CHARS`] characters, counted without building it
/// when that settles it: collapsing whitespace after trimming counts as
/// after, and lowercasing never shortens a text in characters (each maps to
/// one or more), so the collapsed count already answers when it reaches
/// the threshold, or when the text is ASCII (lowercased one for one).
fn is_long_for_a_paste(text: &str) -> bool {
    let trimmed = js_trim(text);
    let mut count = 0usize;
    let mut in_space = false;
    let mut long = |space: bool| {
        if !(space && in_space) {
            count += 1;
        }
        in_space = space;
        count >= REPEATED_PASTE_MIN_CHARS
    };
    if trimmed.is_ascii() {
        // ASCII whitespace for JavaScript and for `is_js_space`: `\t` to
        // `\r` and the space.
        return trimmed
            .bytes()
            .any(|b| long(matches!(b, b' ' | b'\t'..=b'\r')));
    }
    if trimmed.chars().any(|c| long(is_js_space(c))) {
        return true;
    }
    normalized_paragraph(text).chars().count() >= REPEATED_PASTE_MIN_CHARS
}

/// Whitespace collapsed to single spaces, trimmed, lowercased.
fn normalized_paragraph(text: &str) -> String {
    let mut collapsed = collapse_and_trim(text);
    if collapsed.is_ascii() {
        // What `to_lowercase` gives for ASCII, in place.
        collapsed.make_ascii_lowercase();
        return collapsed;
    }
    collapsed.to_lowercase()
}

/// `looksLikeCode`: multi-line, and a line (after leading whitespace) starts
/// with a code keyword as a whole word, or the text contains `=>`, `{`, `}`
/// or `;`.
fn looks_like_code(text: &str) -> bool {
    if !text.contains('\n') {
        return false;
    }
    if text.contains("=>") || text.contains(['{', '}', ';']) {
        return true;
    }
    let line_starts = std::iter::once(0).chain(
        text.char_indices()
            .filter(|&(_, c)| is_js_line_terminator(c))
            .map(|(i, c)| i + c.len_utf8()),
    );
    line_starts.into_iter().any(|start| {
        // `start` is 0 or just after a line terminator: a char boundary,
        // so the default is never taken.
        let line = text
            .get(start..)
            .unwrap_or_default()
            .trim_start_matches(is_js_space);
        CODE_KEYWORDS.iter().any(|keyword| {
            line.strip_prefix(keyword).is_some_and(|rest| {
                !rest
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use strataflow_record::record::ToolCall;

    use super::*;

    fn msg(role: Role, content: &str) -> TranscriptMessage<'_> {
        TranscriptMessage::text(role, content)
    }

    #[test]
    fn drops_standalone_okay() {
        let l3 = render_condensed(&[msg(Role::User, "Okay.\nThe source must remain available.")]);
        assert_eq!(l3, "User: The source must remain available.");
    }

    #[test]
    fn unchanged_paragraph_stays_on_one_line() {
        let l3 = render_condensed(&[msg(Role::Assistant, "第一句保持原样。第二句也保持原样。")]);
        assert_eq!(l3, "Assistant: 第一句保持原样。第二句也保持原样。");
    }

    #[test]
    fn removing_a_filler_splits_the_rest_into_lines() {
        let l3 = render_condensed(&[msg(Role::User, "好的。第一句。第二句！ Thanks!")]);
        assert_eq!(l3, "User: 第一句。\n第二句！");
    }

    #[test]
    fn filler_only_messages_are_omitted() {
        let l3 = render_condensed(&[
            msg(Role::User, "Got it!"),
            msg(Role::Assistant, "嗯嗯～\n\n收到，"),
            msg(Role::User, "Okay, let's go."),
        ]);
        assert_eq!(l3, "User: Okay, let's go.");
    }

    #[test]
    fn long_repeated_paste_becomes_marker_short_repeat_is_kept() {
        let paste = "This is a long pasted paragraph that goes on and on, well past the eighty character threshold.";
        assert!(paste.chars().count() >= REPEATED_PASTE_MIN_CHARS);
        let first = format!("Here it is:\n\n{paste}");
        // Whitespace and case differences still count as the same paste.
        let again = paste.to_uppercase().replace(' ', "  \n");
        let messages = [
            msg(Role::User, &first),
            msg(Role::Assistant, "see above"),
            msg(Role::User, &again),
            msg(Role::Assistant, "see above"),
        ];
        let l3 = render_condensed(&messages);
        assert_eq!(
            l3,
            format!(
                "User: Here it is:\n\n{paste}\n\nAssistant: see above\n\nUser: {REPEATED_PASTE_MARKER}\n\nAssistant: see above"
            )
        );
        assert_eq!(l3.matches(paste).count(), 1);
    }

    #[test]
    fn repeated_code_blocks_are_deduplicated() {
        let code = "```rust\nfn main() {}\n```";
        let first = format!("Try this:\n{code}\nthen run it");
        let l3 = render_condensed(&[msg(Role::User, &first), msg(Role::User, code)]);
        assert_eq!(
            l3,
            format!("User: Try this:\n\n{code}\n\nthen run it\n\nUser: {REPEATED_PASTE_MARKER}")
        );
        // A short multi-line code-like paragraph is a paste candidate too.
        let snippet = "x = 1;\ny = 2;";
        let l3 = render_condensed(&[msg(Role::User, snippet), msg(Role::User, snippet)]);
        assert_eq!(
            l3,
            format!("User: {snippet}\n\nUser: {REPEATED_PASTE_MARKER}")
        );
    }

    #[test]
    fn system_messages_are_dropped() {
        let l3 = render_condensed(&[
            msg(Role::System, "You are helpful."),
            msg(Role::User, "hi there"),
        ]);
        assert_eq!(l3, "User: hi there");
    }

    #[test]
    fn tool_payloads_and_traces_are_summarized_without_arguments() {
        let calls = [ToolCall {
            name: "search_events".into(),
            arguments: Some(r#"{"privateQuery":"where is alice"}"#.into()),
            result: Some(r#"{"events":[{"id":1}]}"#.into()),
        }];
        let messages = [
            TranscriptMessage {
                role: Role::Assistant,
                content: "Let me check.",
                tool_calls: &calls,
            },
            msg(
                Role::Tool,
                r#"{"name":"search_events","arguments":{"privateQuery":"where is alice"},"result":{"ok":true}}"#,
            ),
        ];
        let l3 = render_condensed(&messages);
        assert_eq!(
            l3,
            "Assistant: Let me check.\n\nTool call: search_events (events: 1)\n\nTool: Tool call: search_events (completed)"
        );
        assert!(!l3.contains("privateQuery"));
    }

    #[test]
    fn paragraph_and_sentence_splitting() {
        assert_eq!(
            split_paragraphs("a \n \n b\n\n\nc\nd"),
            ["a ", " b", "c\nd"]
        );
        assert_eq!(split_paragraphs(""), [""]);
        assert_eq!(split_sentences("a!b?\n\nc。 d"), ["a!", "b?", "c。", "d"]);
        assert_eq!(split_sentences("!!"), ["!", "!"]);
    }

    #[test]
    fn fenced_code_splitting() {
        let spans = split_text_and_code("a```x```b``````c```");
        let rendered: Vec<String> = spans
            .iter()
            .map(|s| match s {
                Span::Text(t) => format!("T:{t}"),
                Span::Code(c) => format!("C:{c}"),
            })
            .collect();
        assert_eq!(rendered, ["T:a", "C:```x```", "T:b", "C:``````", "T:c```"]);
    }

    #[test]
    fn code_detection() {
        assert!(!looks_like_code("const x = 1"));
        assert!(looks_like_code("intro\n  const x = 1"));
        assert!(looks_like_code("intro\nSELECT *"));
        assert!(!looks_like_code("intro\nconstant values"));
        assert!(!looks_like_code("intro\nselect all"));
        assert!(looks_like_code("a\nb => c"));
        assert!(looks_like_code("a\nb;"));
        assert!(looks_like_code("def f():\n  pass"));
    }

    /// The form of [`split_paragraphs`] that reads every character: the
    /// reference of the proptest below.
    fn split_paragraphs_by_char(text: &str) -> Vec<&str> {
        let mut paragraphs = Vec::new();
        let mut piece_start = 0;
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c != '\n' {
                continue;
            }
            let mut last_newline_end = None;
            while let Some(&(j, next)) = chars.peek() {
                if !is_js_space(next) {
                    break;
                }
                if next == '\n' {
                    last_newline_end = Some(j + 1);
                }
                chars.next();
            }
            if let Some(end) = last_newline_end {
                paragraphs.extend(text.get(piece_start..i));
                piece_start = end;
            }
        }
        paragraphs.extend(text.get(piece_start..));
        paragraphs
    }

    proptest::proptest! {
        #[test]
        fn splitting_paragraphs_by_search_equals_by_char(
            text in "[a \t\n\r\u{a0}\u{85}\u{2028}\u{3000}é]{0,40}",
        ) {
            proptest::prop_assert_eq!(split_paragraphs(&text), split_paragraphs_by_char(&text));
        }
    }

    /// The first form of [`split_sentences`], reading every character
    /// decoded: the reference of the proptest below.
    fn split_sentences_by_char(paragraph: &str) -> Vec<&str> {
        let mut pieces = Vec::new();
        let mut start = 0;
        for (i, c) in paragraph.char_indices() {
            let end = if c == '\n' {
                Some((i, i + 1))
            } else if is_sentence_end(c) {
                Some((i + c.len_utf8(), i + c.len_utf8()))
            } else {
                None
            };
            if let Some((piece_end, next_start)) = end {
                pieces.extend(paragraph.get(start..piece_end));
                start = next_start;
            }
        }
        pieces.extend(paragraph.get(start..));
        pieces
            .into_iter()
            .map(js_trim)
            .filter(|piece| !piece.is_empty())
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn splitting_sentences_by_byte_equals_by_char(
            paragraph in "[a .!?\n\t]{0,40}|[a .!?\n。！？é\u{3000}]{0,40}",
        ) {
            proptest::prop_assert_eq!(
                split_sentences(&paragraph),
                split_sentences_by_char(&paragraph)
            );
        }

        #[test]
        fn the_fence_search_finds_what_the_substring_search_finds(
            text in "[`a\né]{0,30}",
        ) {
            proptest::prop_assert_eq!(find_fence(&text), text.find(CODE_FENCE));
        }
    }

    /// The characters of [`is_filler_trailing`] and [`is_sentence_end`]
    /// as the reference wrote them.
    const FILLER_TRAILING_PUNCTUATION: &str = "。！？，、,.!?～~";
    const SENTENCE_ENDS: &str = "。！？!?";

    #[test]
    fn the_character_tests_agree_with_their_lists() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(is_sentence_end(c), SENTENCE_ENDS.contains(c), "{c:?}");
            assert_eq!(
                is_filler_trailing(c),
                FILLER_TRAILING_PUNCTUATION.contains(c),
                "{c:?}"
            );
        }
    }

    #[test]
    fn filler_detection() {
        for filler in [
            "Okay.",
            " ok ",
            "Thank you!",
            "好的。",
            "是的～",
            "Sure!?",
            "GOT IT",
        ] {
            assert!(is_filler_sentence(filler), "{filler:?}");
        }
        for text in ["Okay then", "好的吧", "yes please", ""] {
            assert!(!is_filler_sentence(text), "{text:?}");
        }
        // U+212A KELVIN SIGN lowercases to `k`: not ASCII, yet a filler.
        assert!(is_filler_sentence("O\u{212a}!"));
    }

    proptest::proptest! {
        /// The in-place filler match answers as lowercasing a copy does.
        #[test]
        fn filler_matching_equals_matching_a_lowercased_copy(
            sentence in "(?i:ok|okay|got it|thank you|sure)[ .!?。～]{0,3}|好的[。！]?|[a-zA-Z \u{212a}\u{130}\u{3a3}.!]{0,12}",
        ) {
            let stripped = js_trim(&sentence)
                .trim_end_matches(|c| FILLER_TRAILING_PUNCTUATION.contains(c));
            let by_copy = FILLER_ONLY.contains(&js_trim(stripped).to_lowercase().as_str());
            proptest::prop_assert_eq!(is_filler_sentence(&sentence), by_copy);
        }

        /// The counted paste length answers as counting the normalized
        /// paragraph does, around the threshold and with characters whose
        /// lowercase is longer (U+0130) or narrower (U+212A).
        #[test]
        fn the_counted_paste_length_equals_the_normalized_one(
            text in "[a-zA-Z \t\n]{60,100}|[a-zA-Z \t\n\u{a0}\u{3000}\u{feff}\u{85}\u{130}\u{212a}好]{60,100}",
        ) {
            proptest::prop_assert_eq!(
                is_long_for_a_paste(&text),
                normalized_paragraph(&text).chars().count() >= REPEATED_PASTE_MIN_CHARS
            );
        }
    }
}
