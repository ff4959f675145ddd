//! A streaming reader over a top-level JSON array: yields one element's
//! bytes at a time, so a multi-gigabyte `conversations.json` is never held
//! whole (memory is one element plus the read buffer).
//!
//! The scanner only finds element boundaries (nesting depth outside
//! strings, string escapes); each element is then parsed on its own, so a
//! malformed element is one bad item, while a file that is not an array or
//! ends inside an element stops the read.

use std::io::BufRead;

/// Why the array could not be read.
#[derive(Debug)]
pub enum ScanError {
    /// Reading failed.
    Io(std::io::Error),
    /// The bytes are not a JSON array (at this byte offset).
    Format {
        /// Byte offset in the stream.
        offset: u64,
        /// What is wrong.
        problem: String,
    },
}

/// One element of the array.
pub struct Element {
    /// 0-based index in the array.
    pub index: u64,
    /// Byte offset of its first byte in the stream.
    pub offset: u64,
    /// Its bytes (one JSON value).
    pub bytes: Vec<u8>,
}

/// Elements of the top-level array of a stream, in order.
pub struct ArrayScanner<R> {
    reader: R,
    /// Bytes consumed so far.
    offset: u64,
    state: State,
    index: u64,
}

#[derive(PartialEq, Eq)]
enum State {
    /// Before the `[`.
    Start,
    /// After `[`: an element or `]`.
    First,
    /// After an element: `,` or `]`.
    Next,
    /// After the closing `]`.
    Done,
}

impl<R: BufRead> ArrayScanner<R> {
    /// A scanner at the start of `reader`.
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            offset: 0,
            state: State::Start,
            index: 0,
        }
    }

    fn format(&self, problem: impl Into<String>) -> ScanError {
        ScanError::Format {
            offset: self.offset,
            problem: problem.into(),
        }
    }

    /// The next byte that is not JSON whitespace, without consuming it.
    fn peek_significant(&mut self) -> Result<Option<u8>, ScanError> {
        loop {
            let buf = self.reader.fill_buf().map_err(ScanError::Io)?;
            if buf.is_empty() {
                return Ok(None);
            }
            let skip = buf
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
            match skip {
                Some(n) => {
                    let b = buf.get(n).copied();
                    self.consume(n);
                    return Ok(b);
                }
                None => {
                    let n = buf.len();
                    self.consume(n);
                }
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.reader.consume(n);
        self.offset += n as u64;
    }

    /// The next element, or `None` after the closing `]`.
    pub fn next_element(&mut self) -> Result<Option<Element>, ScanError> {
        if self.state == State::Start {
            // A UTF-8 byte order mark (written by some Windows tools) is not JSON.
            // Byte by byte: a read buffer may split it.
            for b in [0xEF, 0xBB, 0xBF] {
                let buf = self.reader.fill_buf().map_err(ScanError::Io)?;
                if buf.first() != Some(&b) {
                    break;
                }
                self.consume(1);
            }
            match self.peek_significant()? {
                Some(b'[') => {
                    self.consume(1);
                    self.state = State::First;
                }
                Some(_) => return Err(self.format("expected a JSON array (`[`) of conversations")),
                None => return Err(self.format("the file is empty; expected a JSON array")),
            }
        }
        loop {
            let next = self.peek_significant()?;
            match (&self.state, next) {
                (State::Done, None) => return Ok(None),
                (State::Done, Some(_)) => {
                    return Err(self.format("unexpected data after the closing `]` of the array"));
                }
                (_, None) => {
                    return Err(self.format(format!(
                        "the file ends inside the array (after {} elements): truncated?",
                        self.index
                    )));
                }
                (State::First | State::Next, Some(b']')) => {
                    self.consume(1);
                    self.state = State::Done;
                }
                (State::Next, Some(b',')) => {
                    self.consume(1);
                    self.state = State::First;
                    // `[1,]` is not JSON.
                    if self.peek_significant()? == Some(b']') {
                        return Err(self.format("a `,` before `]`: expected another element"));
                    }
                }
                (State::Next, Some(_)) => {
                    return Err(self.format("expected `,` or `]` after an array element"));
                }
                (State::First, Some(_)) => {
                    let offset = self.offset;
                    let bytes = self.element()?;
                    let index = self.index;
                    self.index += 1;
                    self.state = State::Next;
                    return Ok(Some(Element {
                        index,
                        offset,
                        bytes,
                    }));
                }
                (State::Start, Some(_)) => return Err(self.format("internal: scanner not started")),
            }
        }
    }

    /// Reads one value starting at the current (significant) byte.
    fn element(&mut self) -> Result<Vec<u8>, ScanError> {
        let mut out = Vec::new();
        let mut depth: u32 = 0;
        let mut in_string = false;
        let mut escaped = false;
        let mut started = false;
        loop {
            let buf = self.reader.fill_buf().map_err(ScanError::Io)?;
            if buf.is_empty() {
                if started && depth == 0 && !in_string {
                    // A scalar at the very end: the missing `]` is reported next.
                    return Ok(out);
                }
                return Err(self.format(format!(
                    "the file ends inside array element [{}]: truncated?",
                    self.index
                )));
            }
            let mut end = None;
            let mut i = 0;
            while let Some(&b) = buf.get(i) {
                if in_string {
                    if escaped {
                        escaped = false;
                        i += 1;
                        continue;
                    }
                    // Most of a conversation is the text of its strings:
                    // skip to the next quote or backslash at once.
                    let rest = buf.get(i..).unwrap_or_default();
                    let Some(k) = memchr::memchr2(b'"', b'\\', rest) else {
                        // The string goes on past this buffer.
                        break;
                    };
                    i += k;
                    if buf.get(i) == Some(&b'\\') {
                        escaped = true;
                    } else {
                        in_string = false;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    i += 1;
                    continue;
                }
                match b {
                    b'"' => {
                        in_string = true;
                        started = true;
                    }
                    b'{' | b'[' => {
                        depth += 1;
                        started = true;
                    }
                    b'}' | b']' => {
                        if depth == 0 {
                            // The end of the array after a scalar.
                            end = Some(i);
                            break;
                        }
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    b',' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => {
                        end = Some(i);
                        break;
                    }
                    _ => started = true,
                }
                i += 1;
            }
            match end {
                Some(0) if out.is_empty() => {
                    return Err(self.format("expected an array element"));
                }
                Some(n) => {
                    out.extend_from_slice(buf.get(..n).unwrap_or_default());
                    self.consume(n);
                    return Ok(out);
                }
                None => {
                    let n = buf.len();
                    out.extend_from_slice(buf);
                    self.consume(n);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn all(text: &[u8], buffer: usize) -> Result<Vec<String>, String> {
        let reader = std::io::BufReader::with_capacity(buffer, text);
        let mut s = ArrayScanner::new(reader);
        let mut out = Vec::new();
        loop {
            match s.next_element() {
                Ok(Some(e)) => out.push(String::from_utf8(e.bytes).unwrap()),
                Ok(None) => return Ok(out),
                Err(ScanError::Format { offset, problem }) => {
                    return Err(format!("{offset}: {problem}"));
                }
                Err(ScanError::Io(e)) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn elements_respect_strings_escapes_and_nesting_at_any_buffer_size() {
        let text = "\u{feff} [ {\"a\":\"x]}\\\"{\",\"b\":[1,{\"c\":[]}]} ,\n[2,3],\"s\\\\\",17 , null,{}]\n";
        for buffer in [1, 2, 3, 7, 64, 4096] {
            assert_eq!(
                all(text.as_bytes(), buffer).unwrap(),
                [
                    "{\"a\":\"x]}\\\"{\",\"b\":[1,{\"c\":[]}]}",
                    "[2,3]",
                    "\"s\\\\\"",
                    "17",
                    "null",
                    "{}"
                ],
                "buffer {buffer}"
            );
        }
        assert_eq!(all(b"[]", 1).unwrap(), Vec::<String>::new());
        assert_eq!(all(b" [ ] ", 1).unwrap(), Vec::<String>::new());
    }

    /// A JSON value whose strings are dense in what the scanner reads:
    /// quotes, backslashes, brackets, commas, spaces.
    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let text = "[a\"\\\\\\[\\]{}, :é😀\n]{0,12}";
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i32>().prop_map(serde_json::Value::from),
            text.prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                proptest::collection::btree_map(text, inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Any array of any values, compact or pretty, read through any
        /// buffer size: the elements as written.
        #[test]
        fn elements_are_the_values_as_written(
            values in proptest::collection::vec(json_value(), 0..5),
            pretty: bool,
            buffer in 1usize..40,
        ) {
            let write = |v: &serde_json::Value| if pretty {
                serde_json::to_string_pretty(v).unwrap()
            } else {
                serde_json::to_string(v).unwrap()
            };
            let written: Vec<String> = values.iter().map(write).collect();
            let text = format!("[{}]", written.join(if pretty { ",\n  " } else { "," }));
            proptest::prop_assert_eq!(all(text.as_bytes(), buffer).unwrap(), written);
        }
    }

    #[test]
    fn not_an_array_or_truncated_is_an_error_with_the_offset() {
        assert!(
            all(b"{\"a\":1}", 8)
                .unwrap_err()
                .contains("expected a JSON array")
        );
        assert!(all(b"", 8).unwrap_err().contains("empty"));
        assert_eq!(
            all(b"[{\"a\":1},{\"b\":", 8).unwrap_err(),
            "14: the file ends inside array element [1]: truncated?"
        );
        assert!(
            all(b"[{}", 8)
                .unwrap_err()
                .contains("ends inside the array")
        );
        assert!(
            all(b"[{} {}]", 8)
                .unwrap_err()
                .contains("expected `,` or `]`")
        );
        assert!(all(b"[{},]", 8).unwrap_err().contains("a `,` before `]`"));
        assert!(
            all(b"[,{}]", 8)
                .unwrap_err()
                .contains("expected an array element")
        );
        assert!(all(b"[{}] x", 8).unwrap_err().contains("after the closing"));
    }
}
