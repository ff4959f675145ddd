//! The refuse policy's spool for exports: the validation pass writes the
//! messages it read to an unnamed temporary file, and the storing pass reads
//! them back instead of parsing the export a second time. Parsing is the
//! largest cost of an export's reader (a ChatGPT export is about 3.5 times
//! the bytes of the same messages as JSONL); reading the spool back is a copy.
//!
//! The file has no name (the system deletes it when it is closed, a crash
//! included), and only the process that wrote it reads it, so its encoding
//! is private: a sequence of entries, each a tag byte, a little-endian `u32`
//! length and that many bytes. An items entry holds the source's counters
//! after the conversation (so progress and the summary of the storing pass
//! are those of a second parse) and its messages; the end entry holds the
//! counters at the end of the pass.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use strataflow_log::SourceTime;
use strataflow_log::record::{Role, ToolCall};

use super::export::ExportCounts;
use super::{Location, MessageInput};

const TAG_ITEMS: u8 = 1;
const TAG_END: u8 = 2;

/// Writes the spool of one pass.
pub(crate) struct SpoolWriter {
    out: BufWriter<File>,
    entry: Vec<u8>,
}

impl SpoolWriter {
    /// An empty spool in `dir`.
    pub fn create(dir: &Path) -> io::Result<Self> {
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, tempfile::tempfile_in(dir)?),
            entry: Vec::new(),
        })
    }

    /// One conversation's messages and the counters after it.
    pub fn items(&mut self, counts: &ExportCounts, items: &[&MessageInput]) -> io::Result<()> {
        self.entry.clear();
        put_counts(&mut self.entry, counts);
        put_u64(&mut self.entry, items.len() as u64);
        for m in items {
            put_message(&mut self.entry, m);
        }
        self.write_entry(TAG_ITEMS)
    }

    /// Ends the pass with its final counters: the file, ready to be read.
    pub fn finish(mut self, counts: &ExportCounts) -> io::Result<File> {
        self.entry.clear();
        put_counts(&mut self.entry, counts);
        self.write_entry(TAG_END)?;
        let mut file = self
            .out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        file.rewind()?;
        Ok(file)
    }

    fn write_entry(&mut self, tag: u8) -> io::Result<()> {
        let len = u32::try_from(self.entry.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a conversation of more than 4 GiB cannot be spooled",
            )
        })?;
        self.out.write_all(&[tag])?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&self.entry)
    }
}

/// An entry read back.
pub(crate) enum SpoolEntry {
    /// A conversation's messages and the counters after it.
    Items(ExportCounts, Vec<MessageInput>),
    /// The end of the pass, with its counters.
    End(ExportCounts),
}

/// Reads a spool written by [`SpoolWriter`].
pub(crate) struct SpoolReader {
    input: BufReader<File>,
    entry: Vec<u8>,
}

impl SpoolReader {
    /// Reads `file` from its start.
    pub fn new(file: File) -> Self {
        Self {
            input: BufReader::with_capacity(1 << 20, file),
            entry: Vec::new(),
        }
    }

    /// The next entry (the end entry is the last).
    pub fn next_entry(&mut self) -> io::Result<SpoolEntry> {
        let mut head = [0u8; 5];
        self.input.read_exact(&mut head)?;
        let [tag, a, b, c, d] = head;
        let len = u32::from_le_bytes([a, b, c, d]) as usize;
        self.entry.resize(len, 0);
        self.input.read_exact(&mut self.entry)?;
        let mut r = Cursor(&self.entry);
        let counts = r.counts()?;
        match tag {
            TAG_ITEMS => {
                let n = r.u64()?;
                let mut items = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(1 << 16));
                for _ in 0..n {
                    items.push(r.message()?);
                }
                Ok(SpoolEntry::Items(counts, items))
            }
            TAG_END => Ok(SpoolEntry::End(counts)),
            _ => Err(corrupt()),
        }
    }
}

fn corrupt() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "the import's spool file is corrupt",
    )
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

fn put_counts(out: &mut Vec<u8>, c: &ExportCounts) {
    for v in c.to_array() {
        put_u64(out, v);
    }
}

fn put_message(out: &mut Vec<u8>, m: &MessageInput) {
    put_str(out, &m.location.file);
    match m.location.line {
        None => out.push(0),
        Some(line) => {
            out.push(1);
            put_u64(out, line as u64);
        }
    }
    put_opt_str(out, m.location.path.as_deref());
    put_str(out, &m.tenant);
    put_str(out, &m.thread);
    put_str(out, &m.external_id);
    put_str(out, m.role.as_str());
    put_opt_str(out, m.speaker.as_deref());
    put_str(out, &m.content);
    put_u64(out, m.tool_calls.len() as u64);
    for call in &m.tool_calls {
        put_str(out, &call.name);
        put_opt_str(out, call.arguments.as_deref());
        put_opt_str(out, call.result.as_deref());
    }
    out.extend_from_slice(&m.time.utc_ms.to_le_bytes());
    match m.time.offset_minutes {
        None => out.push(0),
        Some(minutes) => {
            out.push(1);
            out.extend_from_slice(&minutes.to_le_bytes());
        }
    }
}

/// Reads an entry's bytes in order.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or_else(corrupt)?;
        self.0 = rest;
        Ok(*head)
    }

    fn u64(&mut self) -> io::Result<u64> {
        self.take::<8>().map(u64::from_le_bytes)
    }

    fn flag(&mut self) -> io::Result<bool> {
        match self.take::<1>()? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(corrupt()),
        }
    }

    fn string(&mut self) -> io::Result<String> {
        let len = usize::try_from(self.u64()?).map_err(|_| corrupt())?;
        if len > self.0.len() {
            return Err(corrupt());
        }
        let (text, rest) = self.0.split_at(len);
        self.0 = rest;
        String::from_utf8(text.to_vec()).map_err(|_| corrupt())
    }

    fn opt_string(&mut self) -> io::Result<Option<String>> {
        if self.flag()? {
            self.string().map(Some)
        } else {
            Ok(None)
        }
    }

    fn counts(&mut self) -> io::Result<ExportCounts> {
        let mut values = [0u64; ExportCounts::FIELDS];
        for v in &mut values {
            *v = self.u64()?;
        }
        Ok(ExportCounts::from_array(values))
    }

    fn message(&mut self) -> io::Result<MessageInput> {
        let file = self.string()?;
        let line = if self.flag()? {
            Some(usize::try_from(self.u64()?).map_err(|_| corrupt())?)
        } else {
            None
        };
        let path = self.opt_string()?;
        let tenant = self.string()?;
        let thread = self.string()?;
        let external_id = self.string()?;
        let role = Role::parse(&self.string()?).ok_or_else(corrupt)?;
        let speaker = self.opt_string()?;
        let content = self.string()?;
        let calls = self.u64()?;
        let mut tool_calls = Vec::new();
        for _ in 0..calls {
            tool_calls.push(ToolCall {
                name: self.string()?,
                arguments: self.opt_string()?,
                result: self.opt_string()?,
            });
        }
        let utc_ms = i64::from_le_bytes(self.take::<8>()?);
        let offset_minutes = if self.flag()? {
            Some(i16::from_le_bytes(self.take::<2>()?))
        } else {
            None
        };
        Ok(MessageInput {
            location: Location { file, line, path },
            tenant,
            thread,
            external_id,
            role,
            speaker,
            content,
            tool_calls,
            time: SourceTime {
                utc_ms,
                offset_minutes,
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn message(i: u64) -> MessageInput {
        MessageInput {
            location: Location {
                file: "export.zip/conversations.json".into(),
                line: i.is_multiple_of(2).then_some(i as usize),
                path: (!i.is_multiple_of(3))
                    .then(|| format!("conversation [{i}] id c{i} (byte {})", i * 7)),
            },
            tenant: "acme".into(),
            thread: format!("c{}", i / 3),
            external_id: format!("m{i}"),
            role: [Role::User, Role::Assistant, Role::Tool, Role::System][(i % 4) as usize],
            speaker: (i % 4 == 2).then(|| "python".into()),
            content: format!("message {i}: ünïcode ✓\n{}", "x".repeat(i as usize)),
            tool_calls: (0..i % 3)
                .map(|k| ToolCall {
                    name: format!("tool{k}"),
                    arguments: (k == 0).then(|| "{\"q\":1}".into()),
                    result: (k == 1).then(|| "[]".into()),
                })
                .collect(),
            time: SourceTime {
                utc_ms: 1_714_560_000_000 + i as i64 * 1250 - 5_000_000,
                offset_minutes: i.is_multiple_of(5).then_some(-(i as i16) * 15),
            },
        }
    }

    fn counts(seed: u64) -> ExportCounts {
        let mut values = [0u64; ExportCounts::FIELDS];
        for (k, v) in values.iter_mut().enumerate() {
            *v = seed * 100 + k as u64;
        }
        ExportCounts::from_array(values)
    }

    #[test]
    fn a_spool_reads_back_the_messages_and_counters_it_was_given() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = SpoolWriter::create(dir.path()).unwrap();
        let all: Vec<MessageInput> = (0..40).map(message).collect();
        let chunks: Vec<&[MessageInput]> = vec![&all[..1], &all[1..1], &all[1..17], &all[17..]];
        for (k, chunk) in chunks.iter().enumerate() {
            let refs: Vec<&MessageInput> = chunk.iter().collect();
            writer.items(&counts(k as u64), &refs).unwrap();
        }
        let file = writer.finish(&counts(9)).unwrap();
        // The file has no name in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut reader = SpoolReader::new(file);
        for (k, chunk) in chunks.iter().enumerate() {
            match reader.next_entry().unwrap() {
                SpoolEntry::Items(c, items) => {
                    assert_eq!(c, counts(k as u64));
                    assert_eq!(items.as_slice(), *chunk);
                }
                SpoolEntry::End(_) => panic!("end before entry {k}"),
            }
        }
        assert!(matches!(reader.next_entry().unwrap(), SpoolEntry::End(c) if c == counts(9)));
        // Past the end: the file ends, an error (never a silent empty entry).
        assert!(reader.next_entry().is_err());
    }

    #[test]
    fn a_damaged_entry_is_an_error_not_a_wrong_message() {
        let mut entry = Vec::new();
        put_counts(&mut entry, &counts(1));
        put_u64(&mut entry, 1);
        put_message(&mut entry, &message(5));
        for cut in [
            entry.len() - 1,
            entry.len() / 2,
            ExportCounts::FIELDS * 8 + 3,
        ] {
            let mut r = Cursor(entry.get(..cut).unwrap());
            r.counts().unwrap();
            let n = r.u64();
            assert!(n.is_err() || r.message().is_err(), "cut at {cut}");
        }
    }
}
