//! Chat archives as people have them: ChatGPT's and Claude's data exports
//! (`conversations.json`, alone or inside the export ZIP) and
//! chat-completion logs (one `{"messages": [...]}` object per line), read as
//! a stream ([`ExportSource`]).
//!
//! A reader thread decompresses (ZIP entries are streamed, never
//! extracted), finds each conversation's bytes ([`super::json_array`]) and
//! parses it; the ingest reads its messages from a bounded channel, so
//! memory stays at a few conversations whatever the file's size.
//!
//! A conversation is all or nothing: any problem in it (a missing
//! `current_node`, a message of an unknown role…) rejects the whole
//! conversation, named by its index in the file, its id and the field, so
//! no thread is stored with a hole that a corrected file could not fill in
//! order.
//!
//! Each ChatGPT or Claude thread starts with a header: a `system` message
//! (never rendered in L4/L3) whose content is canonical JSON `{"format",
//! "id", "title", "inferred_time": [external ids], …}`, the conversation's
//! metadata that the message record has no field for. Its external id is
//! `meta:` and 12 hex digits of the content's blake3 hash, so the same
//! export imported again adds nothing, while a renamed conversation adds a
//! new header instead of being refused.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use serde_json::Value;
use strataflow_log::SourceTime;
use strataflow_log::record::{Role, ToolCall};

use super::json_array::{ArrayScanner, ScanError};
use super::spool::{SpoolEntry, SpoolReader, SpoolWriter};
use super::{
    InputError, Location, MessageInput, Rejected, SourceError, SourceItem, canonical_json,
    check_name,
};
use crate::ingest::Source;

/// The formats of [`ExportSource`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ExportFormat {
    /// ChatGPT's `conversations.json` (or the export ZIP holding it).
    Chatgpt,
    /// Claude's `conversations.json` (or the export ZIP holding it).
    Claude,
    /// One chat-completion object (`{"messages": [...]}`) per line.
    ChatJsonl,
}

impl ExportFormat {
    /// The name used on the command line and in headers.
    pub fn name(self) -> &'static str {
        match self {
            Self::Chatgpt => "chatgpt",
            Self::Claude => "claude",
            Self::ChatJsonl => "chat-jsonl",
        }
    }
}

/// Settings of an export import.
#[derive(Clone, Debug, Default)]
pub struct ExportSettings {
    /// Tenant of every thread.
    pub tenant: String,
    /// chat-jsonl: the time of a line that gives none (its messages are one
    /// second apart from it).
    pub start: Option<SourceTime>,
    /// Where the refuse policy's validation pass may spool the messages it
    /// read, so that the storing pass reads them back instead of parsing
    /// the export again (an unnamed temporary file, about the size
    /// of the messages' text). `None`: the storing pass parses again.
    pub spool_dir: Option<PathBuf>,
}

/// Live counters of the current pass over an export (reset at each pass).
#[derive(Debug, Default)]
pub struct ExportCounters {
    bytes_read: AtomicU64,
    total_bytes: AtomicU64,
    conversations: AtomicU64,
    empty_conversations: AtomicU64,
    rejected_conversations: AtomicU64,
    messages: AtomicU64,
    headers: AtomicU64,
    inferred_times: AtomicU64,
    skipped_branch: AtomicU64,
    skipped_hidden: AtomicU64,
    skipped_empty: AtomicU64,
    skipped_unsupported: AtomicU64,
}

/// A snapshot of [`ExportCounters`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ExportCounts {
    /// Bytes of the JSON read so far (decompressed, for a ZIP).
    pub bytes_read: u64,
    /// Bytes of the JSON in all (the entry's size, for a ZIP).
    pub total_bytes: u64,
    /// Conversations (or lines) read.
    pub conversations: u64,
    /// Conversations with no message kept (nothing stored for them).
    pub empty_conversations: u64,
    /// Conversations rejected.
    pub rejected_conversations: u64,
    /// Messages read (headers included).
    pub messages: u64,
    /// Thread headers among them.
    pub headers: u64,
    /// Messages whose time was inferred.
    pub inferred_times: u64,
    /// ChatGPT messages on branches left behind by an edit or a regeneration.
    pub skipped_branch: u64,
    /// Hidden messages (ChatGPT `is_visually_hidden_from_conversation`).
    pub skipped_hidden: u64,
    /// Messages with no text and no tool call (empty system prompts…).
    pub skipped_empty: u64,
    /// Messages of a kind not kept (model reasoning, memory contexts,
    /// unknown content types without text).
    pub skipped_unsupported: u64,
}

impl ExportCounts {
    /// The number of counters.
    pub(crate) const FIELDS: usize = 12;

    /// The counters in a fixed order (the spool's).
    pub(crate) fn to_array(self) -> [u64; Self::FIELDS] {
        [
            self.bytes_read,
            self.total_bytes,
            self.conversations,
            self.empty_conversations,
            self.rejected_conversations,
            self.messages,
            self.headers,
            self.inferred_times,
            self.skipped_branch,
            self.skipped_hidden,
            self.skipped_empty,
            self.skipped_unsupported,
        ]
    }

    /// The counters from [`Self::to_array`]'s order.
    pub(crate) fn from_array(values: [u64; Self::FIELDS]) -> Self {
        let [
            bytes_read,
            total_bytes,
            conversations,
            empty_conversations,
            rejected_conversations,
            messages,
            headers,
            inferred_times,
            skipped_branch,
            skipped_hidden,
            skipped_empty,
            skipped_unsupported,
        ] = values;
        Self {
            bytes_read,
            total_bytes,
            conversations,
            empty_conversations,
            rejected_conversations,
            messages,
            headers,
            inferred_times,
            skipped_branch,
            skipped_hidden,
            skipped_empty,
            skipped_unsupported,
        }
    }
}

impl ExportCounters {
    fn all(&self) -> [&AtomicU64; ExportCounts::FIELDS] {
        [
            &self.bytes_read,
            &self.total_bytes,
            &self.conversations,
            &self.empty_conversations,
            &self.rejected_conversations,
            &self.messages,
            &self.headers,
            &self.inferred_times,
            &self.skipped_branch,
            &self.skipped_hidden,
            &self.skipped_empty,
            &self.skipped_unsupported,
        ]
    }

    /// The counters now.
    pub fn snapshot(&self) -> ExportCounts {
        ExportCounts::from_array(self.all().map(|a| a.load(Ordering::Relaxed)))
    }

    /// Sets every counter (a pass read back from the spool).
    fn set(&self, counts: &ExportCounts) {
        for (a, v) in self.all().into_iter().zip(counts.to_array()) {
            a.store(v, Ordering::Relaxed);
        }
    }

    fn reset(&self) {
        self.set(&ExportCounts::default());
    }
}

/// Why a message was skipped.
#[derive(Clone, Copy)]
pub(crate) enum Skip {
    Branch,
    Hidden,
    Empty,
    Unsupported,
}

/// What the format readers share: the file's name in errors, the tenant,
/// the counters.
pub(crate) struct Ctx {
    pub file: String,
    pub format: ExportFormat,
    pub settings: ExportSettings,
    pub counters: Arc<ExportCounters>,
}

impl Ctx {
    pub fn skipped(&self, why: Skip, n: u64) {
        let c = &self.counters;
        let a = match why {
            Skip::Branch => &c.skipped_branch,
            Skip::Hidden => &c.skipped_hidden,
            Skip::Empty => &c.skipped_empty,
            Skip::Unsupported => &c.skipped_unsupported,
        };
        a.fetch_add(n, Ordering::Relaxed);
    }
}

/// A message of a conversation before it is named and placed.
pub(crate) struct Draft {
    pub external_id: String,
    pub role: Role,
    pub speaker: Option<String>,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub time: SourceTime,
    /// The source gave no time; it is the previous message's (or the
    /// conversation's).
    pub inferred: bool,
}

/// A conversation read by a format reader.
pub(crate) struct Parsed {
    pub thread: String,
    pub title: Option<String>,
    /// More header fields (e.g. Claude's `summary`).
    pub extra: Vec<(&'static str, Value)>,
    /// The conversation's own time (the header's time), if it has one.
    pub time: Option<SourceTime>,
    pub drafts: Vec<Draft>,
}

/// Dates messages that have no time of their own: the previous one's, or
/// the conversation's.
pub(crate) struct TimeCursor(Option<SourceTime>);

impl TimeCursor {
    pub fn new(conversation: Option<SourceTime>) -> Self {
        Self(conversation)
    }

    /// The time of a message with `own` time (`None`: inferred).
    pub fn take(&mut self, own: Option<SourceTime>) -> (Option<SourceTime>, bool) {
        match own {
            Some(t) => {
                self.0 = Some(t);
                (Some(t), false)
            }
            None => (self.0, true),
        }
    }
}

pub(crate) use super::jsonl::{optional_list, type_name};

/// Where conversation `index` (at byte `offset`) is.
pub(crate) fn conversation_location(
    file: &str,
    index: u64,
    offset: u64,
    id: Option<&str>,
) -> Location {
    let id = id.map(|id| format!(" id {id}")).unwrap_or_default();
    Location {
        file: file.to_owned(),
        line: None,
        path: Some(format!("conversation [{index}]{id} (byte {offset})")),
    }
}

/// Reads one conversation (element `index` of the array, at byte
/// `offset`) that was parsed once into `parsed`: named by the id `id` finds
/// in it or, when it did not parse, by `id_of`'s lenient look at its bytes
/// (refused as "not a `what` conversation").
#[expect(clippy::too_many_arguments, reason = "one call per export format")]
pub(crate) fn parsed_conversation_items<C>(
    ctx: &Ctx,
    index: u64,
    offset: u64,
    bytes: &[u8],
    parsed: Result<C, serde_json::Error>,
    id: impl FnOnce(&C) -> Option<String>,
    id_of: fn(&[u8]) -> Option<String>,
    read: impl FnOnce(&Location, C) -> Result<Parsed, InputError>,
) -> Vec<SourceItem> {
    match parsed {
        Ok(c) => {
            let at = conversation_location(&ctx.file, index, offset, id(&c).as_deref());
            conversation_items_at(ctx, &at, bytes, |at| read(at, c))
        }
        Err(e) => {
            let at = conversation_location(&ctx.file, index, offset, id_of(bytes).as_deref());
            let what = match ctx.format {
                ExportFormat::Claude => "Claude",
                _ => "ChatGPT",
            };
            conversation_items_at(ctx, &at, bytes, |at| {
                Err(InputError::item(
                    at,
                    format!("not a {what} conversation: {e}"),
                ))
            })
        }
    }
}

/// Reads one conversation at `at` with `read`: its messages (header
/// first), or one rejected item holding `input`.
pub(crate) fn conversation_items_at(
    ctx: &Ctx,
    at: &Location,
    input: &[u8],
    read: impl FnOnce(&Location) -> Result<Parsed, InputError>,
) -> Vec<SourceItem> {
    ctx.counters.conversations.fetch_add(1, Ordering::Relaxed);
    let result = read(at).and_then(|parsed| place(ctx, at, parsed));
    match result {
        Ok(items) => {
            if items.is_empty() {
                ctx.counters
                    .empty_conversations
                    .fetch_add(1, Ordering::Relaxed);
            }
            ctx.counters
                .messages
                .fetch_add(items.len() as u64, Ordering::Relaxed);
            items.into_iter().map(Ok).collect()
        }
        Err(error) => {
            ctx.counters
                .rejected_conversations
                .fetch_add(1, Ordering::Relaxed);
            vec![Err(Rejected {
                error,
                input: String::from_utf8_lossy(input).into_owned(),
            })]
        }
    }
}

/// Names the drafts and puts the header first (none for an empty
/// conversation or for chat-jsonl).
fn place(ctx: &Ctx, at: &Location, parsed: Parsed) -> Result<Vec<MessageInput>, InputError> {
    let tenant = &ctx.settings.tenant;
    check_name(at, "tenant", tenant, true)?;
    if parsed.drafts.is_empty() {
        return Ok(Vec::new());
    }
    let inferred: Vec<&str> = parsed
        .drafts
        .iter()
        .filter(|d| d.inferred)
        .map(|d| d.external_id.as_str())
        .collect();
    ctx.counters
        .inferred_times
        .fetch_add(inferred.len() as u64, Ordering::Relaxed);
    let mut out = Vec::with_capacity(parsed.drafts.len() + 1);
    if ctx.format != ExportFormat::ChatJsonl {
        let mut header = serde_json::Map::new();
        header.insert("format".into(), ctx.format.name().into());
        header.insert("id".into(), parsed.thread.clone().into());
        header.insert("title".into(), parsed.title.clone().into());
        header.insert("inferred_time".into(), inferred.into());
        for (k, v) in parsed.extra {
            header.insert(k.into(), v);
        }
        let content = canonical_json(&Value::Object(header));
        let hash = blake3::hash(content.as_bytes()).to_hex();
        let first = parsed.drafts.first().map(|d| d.time);
        out.push(MessageInput {
            location: at.clone(),
            tenant: tenant.clone(),
            thread: parsed.thread.clone(),
            external_id: format!("meta:{}", hash.get(..12).unwrap_or_default()),
            role: Role::System,
            speaker: None,
            content,
            tool_calls: Vec::new(),
            // default: never taken, there is a first draft.
            time: parsed
                .time
                .or(first)
                .unwrap_or(SourceTime::utc_without_offset(0)),
        });
        ctx.counters.headers.fetch_add(1, Ordering::Relaxed);
    }
    for d in parsed.drafts {
        out.push(MessageInput {
            location: at.clone(),
            tenant: tenant.clone(),
            thread: parsed.thread.clone(),
            external_id: d.external_id,
            role: d.role,
            speaker: d.speaker,
            content: d.content,
            tool_calls: d.tool_calls,
            time: d.time,
        });
    }
    Ok(out)
}

/// An export file read afresh on each pass (the refuse policy reads twice),
/// or, for the pass after a spooled one, read back from the spool.
pub struct ExportSource {
    path: PathBuf,
    format: ExportFormat,
    settings: ExportSettings,
    counters: Arc<ExportCounters>,
    spool: Arc<Mutex<SpoolState>>,
}

/// Whether the next pass writes a spool, reads one, or neither.
#[derive(Default)]
enum SpoolState {
    #[default]
    Off,
    /// A second pass will follow: the next pass writes a spool.
    Wanted,
    /// The last pass ended and spooled everything it read (the input's
    /// name in errors, the spool).
    Ready(String, File),
}

/// Conversations the reader thread may hold ready ahead of the ingest.
const CHANNEL_CONVERSATIONS: usize = 16;

enum Chunk {
    Items(Vec<SourceItem>),
    Failed(SourceError),
    Done,
}

impl ExportSource {
    /// A source reading `path` in `format`.
    pub fn new(path: &Path, format: ExportFormat, settings: ExportSettings) -> Self {
        Self {
            path: path.to_path_buf(),
            format,
            settings,
            counters: Arc::default(),
            spool: Arc::default(),
        }
    }

    /// The counters of the current (or last) pass.
    pub fn counters(&self) -> &ExportCounters {
        &self.counters
    }

    fn display(&self) -> String {
        self.path.display().to_string()
    }

    /// Opens the input: the file, or its `conversations.json` entry when it
    /// is a ZIP. Returns the name errors give it and a reader over its
    /// bytes, opened in the reader thread by `open`.
    fn open(&self) -> Result<(String, Opened), SourceError> {
        let display = self.display();
        let io = |source| SourceError::Io {
            file: display.clone(),
            source,
        };
        let mut file = File::open(&self.path).map_err(io)?;
        let mut magic = [0u8; 4];
        let n = read_up_to(&mut file, &mut magic).map_err(io)?;
        let is_zip = n == 4 && magic == *b"PK\x03\x04";
        drop(file);
        if !is_zip {
            let file = File::open(&self.path).map_err(io)?;
            let size = file.metadata().map_err(io)?.len();
            return Ok((display, Opened::Plain(file, size)));
        }
        if self.format == ExportFormat::ChatJsonl {
            return Err(SourceError::Format(InputError::item(
                &Location {
                    file: display,
                    line: None,
                    path: None,
                },
                "is a ZIP archive; chat-jsonl reads a plain .jsonl file (unzip it first)",
            )));
        }
        let file = File::open(&self.path).map_err(io)?;
        let format_error = |problem: String| {
            SourceError::Format(InputError::item(
                &Location {
                    file: display.clone(),
                    line: None,
                    path: None,
                },
                problem,
            ))
        };
        let mut archive = zip::ZipArchive::new(BufReader::new(file))
            .map_err(|e| format_error(format!("not a readable ZIP archive: {e}")))?;
        let names: Vec<String> = archive
            .file_names()
            .filter_map(Result::ok)
            .map(std::borrow::Cow::into_owned)
            .collect();
        let mut candidates: Vec<&String> = names
            .iter()
            .filter(|n| *n == "conversations.json" || n.ends_with("/conversations.json"))
            .collect();
        // The shallowest one (an export has one at its root).
        candidates.sort_by_key(|n| (n.matches('/').count(), n.as_str()));
        let Some(name) = candidates.first().map(|n| (*n).clone()) else {
            let mut listed: Vec<&str> = names.iter().map(String::as_str).take(10).collect();
            if names.len() > 10 {
                listed.push("…");
            }
            return Err(format_error(format!(
                "the ZIP holds no conversations.json (entries: {})",
                listed.join(", ")
            )));
        };
        let index = archive
            .index_for_name(&name)
            .ok_or_else(|| format_error(format!("entry {name} vanished")))?;
        let size = archive
            .by_index(index)
            .map_err(|e| format_error(format!("cannot read entry {name}: {e}")))?
            .size();
        Ok((
            format!("{display}/{name}"),
            Opened::Zip(Box::new(archive), index, size),
        ))
    }
}

/// What [`ExportSource::open`] opened.
enum Opened {
    Plain(File, u64),
    Zip(Box<zip::ZipArchive<BufReader<File>>>, usize, u64),
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(buf.get_mut(n..).unwrap_or_default())? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    counters: Arc<ExportCounters>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counters
            .bytes_read
            .fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl Source for ExportSource {
    fn expect_second_pass(&self) {
        if self.settings.spool_dir.is_some() {
            *lock(&self.spool) = SpoolState::Wanted;
        }
    }

    fn items(
        &self,
    ) -> Result<Box<dyn Iterator<Item = Result<SourceItem, SourceError>> + '_>, SourceError> {
        let state = std::mem::take(&mut *lock(&self.spool));
        let (tx, rx) = sync_channel(CHANNEL_CONVERSATIONS);
        let (file, spawned) = if let SpoolState::Ready(file, spool) = state {
            // The export itself is not opened again.
            let counters = Arc::clone(&self.counters);
            let display = file.clone();
            let spawned = std::thread::Builder::new()
                .name("export-reader".into())
                .spawn(move || replay(&display, &counters, spool, &tx));
            (file, spawned)
        } else {
            let (file, opened) = self.open()?;
            self.counters.reset();
            let writer = match (&state, &self.settings.spool_dir) {
                (SpoolState::Wanted, Some(dir)) => match SpoolWriter::create(dir) {
                    Ok(w) => Some(w),
                    Err(e) => {
                        tracing::warn!(dir = %dir.display(), error = %e, "no spool: the storing pass parses the export again");
                        None
                    }
                },
                _ => None,
            };
            let ctx = Ctx {
                file: file.clone(),
                format: self.format,
                settings: self.settings.clone(),
                counters: Arc::clone(&self.counters),
            };
            let spool = Arc::clone(&self.spool);
            let spawned = std::thread::Builder::new()
                .name("export-reader".into())
                .spawn(move || {
                    let mut out = Output {
                        send: &|chunk| tx.send(chunk).is_ok(),
                        spool: writer,
                    };
                    if let Some(spooled) = produce(&ctx, opened, &mut out) {
                        *lock(&spool) = SpoolState::Ready(ctx.file.clone(), spooled);
                    }
                    out.done();
                });
            (file, spawned)
        };
        spawned.map_err(|source| SourceError::Io {
            file: file.clone(),
            source,
        })?;
        Ok(Box::new(Items {
            file,
            rx,
            pending: VecDeque::new(),
            done: false,
        }))
    }
}

fn lock(spool: &Mutex<SpoolState>) -> std::sync::MutexGuard<'_, SpoolState> {
    // A panic while holding it left a state that is still one of the three.
    spool
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where a pass's conversations go: to the ingest, and to the spool while
/// one is being written (dropped at the first rejected conversation: a
/// refused input has no second pass).
struct Output<'a> {
    send: &'a dyn Fn(Chunk) -> bool,
    spool: Option<SpoolWriter>,
}

/// Why [`Output::items`] stopped the read.
struct HungUp;

impl Output<'_> {
    /// One conversation's items. `Err`: the ingest hung up.
    fn items(&mut self, counters: &ExportCounters, items: Vec<SourceItem>) -> Result<(), HungUp> {
        if let Some(writer) = &mut self.spool {
            let messages: Option<Vec<&MessageInput>> =
                items.iter().map(|i| i.as_ref().ok()).collect();
            let written = match messages {
                Some(messages) => writer
                    .items(&counters.snapshot(), &messages)
                    .map_err(|e| tracing::warn!(error = %e, "spool dropped: the storing pass parses the export again")),
                None => Err(()),
            };
            if written.is_err() {
                self.spool = None;
            }
        }
        if items.is_empty() || (self.send)(Chunk::Items(items)) {
            Ok(())
        } else {
            Err(HungUp)
        }
    }

    fn failed(&self, e: SourceError) {
        (self.send)(Chunk::Failed(e));
    }

    fn done(&self) {
        (self.send)(Chunk::Done);
    }
}

/// The reader thread: every conversation's items, then the complete spool
/// if one was written (the caller then sends `Done`), or the error that
/// stopped it. Stops early when the ingest hangs up.
fn produce(ctx: &Ctx, opened: Opened, out: &mut Output<'_>) -> Option<File> {
    match opened {
        Opened::Plain(file, size) => {
            ctx.counters.total_bytes.store(size, Ordering::Relaxed);
            stream(ctx, file, out)
        }
        Opened::Zip(mut archive, index, size) => {
            ctx.counters.total_bytes.store(size, Ordering::Relaxed);
            match archive.by_index(index) {
                Ok(entry) => stream(ctx, entry, out),
                Err(e) => {
                    out.failed(SourceError::Format(InputError::item(
                        &Location {
                            file: ctx.file.clone(),
                            line: None,
                            path: None,
                        },
                        format!("cannot read the ZIP entry: {e}"),
                    )));
                    None
                }
            }
        }
    }
}

/// The pass after a spooled one: the spool's items and counters, then
/// `Done`.
fn replay(file: &str, counters: &ExportCounters, spool: File, tx: &SyncSender<Chunk>) {
    let mut reader = SpoolReader::new(spool);
    loop {
        match reader.next_entry() {
            Ok(SpoolEntry::Items(counts, items)) => {
                counters.set(&counts);
                if tx
                    .send(Chunk::Items(items.into_iter().map(Ok).collect()))
                    .is_err()
                {
                    return;
                }
            }
            Ok(SpoolEntry::End(counts)) => {
                counters.set(&counts);
                // default: a send fails only when the ingest hung up.
                let _ = tx.send(Chunk::Done);
                return;
            }
            Err(source) => {
                let _ = tx.send(Chunk::Failed(SourceError::Io {
                    file: format!("{file} (the import's spool)"),
                    source,
                }));
                return;
            }
        }
    }
}

/// Reads the whole input; `Some(spool)` when a spool was written and the
/// input read to its end, `Done` not yet sent.
fn stream(ctx: &Ctx, reader: impl Read, out: &mut Output<'_>) -> Option<File> {
    let reader = BufReader::with_capacity(
        1 << 20,
        Counting {
            inner: reader,
            counters: Arc::clone(&ctx.counters),
        },
    );
    let result = match ctx.format {
        ExportFormat::ChatJsonl => lines(ctx, reader, out),
        ExportFormat::Chatgpt | ExportFormat::Claude => array(ctx, reader, out),
    };
    match result {
        Ok(Ok(())) => {
            let writer = out.spool.take()?;
            writer
                .finish(&ctx.counters.snapshot())
                .map_err(|e| tracing::warn!(error = %e, "spool dropped: the storing pass parses the export again"))
                .ok()
        }
        Ok(Err(HungUp)) => None,
        Err(e) => {
            out.failed(e);
            None
        }
    }
}

/// The conversations of a JSON array.
fn array(
    ctx: &Ctx,
    reader: impl BufRead,
    out: &mut Output<'_>,
) -> Result<Result<(), HungUp>, SourceError> {
    let mut scanner = ArrayScanner::new(reader);
    loop {
        let element = match scanner.next_element() {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(Ok(())),
            Err(ScanError::Io(source)) => {
                return Err(SourceError::Io {
                    file: ctx.file.clone(),
                    source,
                });
            }
            Err(ScanError::Format { offset, problem }) => {
                return Err(SourceError::Format(InputError::item(
                    &Location {
                        file: ctx.file.clone(),
                        line: None,
                        path: Some(format!("byte {offset}")),
                    },
                    problem,
                )));
            }
        };
        let items = match ctx.format {
            ExportFormat::Claude => {
                super::claude::conversation(ctx, element.index, element.offset, &element.bytes)
            }
            _ => super::chatgpt::conversation(ctx, element.index, element.offset, &element.bytes),
        };
        if let Err(hung_up) = out.items(&ctx.counters, items) {
            return Ok(Err(hung_up));
        }
    }
}

/// The lines of a chat-jsonl file.
fn lines(
    ctx: &Ctx,
    mut reader: impl BufRead,
    out: &mut Output<'_>,
) -> Result<Result<(), HungUp>, SourceError> {
    let mut buf = Vec::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| SourceError::Io {
                file: ctx.file.clone(),
                source,
            })?;
        if n == 0 {
            return Ok(Ok(()));
        }
        line += 1;
        let items = super::chat_jsonl::line(ctx, line, &buf);
        if let Err(hung_up) = out.items(&ctx.counters, items) {
            return Ok(Err(hung_up));
        }
    }
}

/// The ingest's side of the channel.
struct Items {
    file: String,
    rx: Receiver<Chunk>,
    pending: VecDeque<SourceItem>,
    done: bool,
}

impl Iterator for Items {
    type Item = Result<SourceItem, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match self.rx.recv() {
                Ok(Chunk::Items(items)) => self.pending.extend(items),
                Ok(Chunk::Done) => self.done = true,
                Ok(Chunk::Failed(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                // The thread ended without `Done`: never a silent truncation.
                Err(_) => {
                    self.done = true;
                    return Some(Err(SourceError::Io {
                        file: self.file.clone(),
                        source: std::io::Error::other("the reader thread stopped unexpectedly"),
                    }));
                }
            }
        }
    }
}

/// Every item of an export held in memory (tests, fuzzing): the same
/// reading as [`ExportSource`] without a file or a thread.
pub fn read_bytes(
    file: &str,
    format: ExportFormat,
    settings: &ExportSettings,
    bytes: &[u8],
) -> Result<Vec<SourceItem>, SourceError> {
    let ctx = Ctx {
        file: file.to_owned(),
        format,
        settings: settings.clone(),
        counters: Arc::default(),
    };
    let out = std::cell::RefCell::new(Vec::new());
    let failed = std::cell::RefCell::new(None);
    let send = |chunk: Chunk| {
        match chunk {
            Chunk::Items(items) => out.borrow_mut().extend(items),
            Chunk::Failed(e) => *failed.borrow_mut() = Some(e),
            Chunk::Done => {}
        }
        true
    };
    let mut output = Output {
        send: &send,
        spool: None,
    };
    stream(&ctx, bytes, &mut output);
    output.done();
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    Ok(out.into_inner())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn errors(format: ExportFormat, text: &str) -> Vec<String> {
        read_bytes(
            "x.json",
            format,
            &ExportSettings::default(),
            text.as_bytes(),
        )
        .unwrap()
        .into_iter()
        .filter_map(|i| i.err().map(|r| r.error.to_string()))
        .collect()
    }

    const NODE: &str = r#"{"author":{"role":"user"},"create_time":1.5,"content":{"content_type":"text","parts":["hi"]}}"#;

    #[test]
    fn broken_trees_reject_their_conversation_naming_the_field() {
        let conv = |mapping: &str, current: &str| {
            format!(r#"[{{"id":"c","current_node":{current},"mapping":{{{mapping}}}}}]"#)
        };
        let a = format!(r#""a":{{"parent":"zz","message":{NODE}}}"#);
        assert_eq!(
            errors(ExportFormat::Chatgpt, &conv(&a, "\"a\"")),
            [
                "x.json: conversation [0] id c (byte 1): field `mapping.a.parent`: `zz` is not a node of `mapping`"
            ]
        );
        let cycle = format!(r#""a":{{"parent":"b","message":{NODE}}},"b":{{"parent":"a"}}"#);
        assert_eq!(
            errors(ExportFormat::Chatgpt, &conv(&cycle, "\"a\"")),
            [
                "x.json: conversation [0] id c (byte 1): field `mapping.b.parent`: the parent links form a cycle (back to `a`)"
            ]
        );
        let one = format!(r#""a":{{"parent":null,"message":{NODE}}}"#);
        assert_eq!(
            errors(ExportFormat::Chatgpt, &conv(&one, "\"q\"")),
            [
                "x.json: conversation [0] id c (byte 1): field `current_node`: `q` is not a node of `mapping`"
            ]
        );
        let role = one.replace("\"user\"", "\"critic\"");
        assert_eq!(
            errors(ExportFormat::Chatgpt, &conv(&role, "\"a\"")),
            [
                "x.json: conversation [0] id c (byte 1): field `mapping.a.message.author.role`: `critic` is not one of user, assistant, tool, system"
            ]
        );
        // A conversation that is not even an object names itself by index.
        assert_eq!(
            errors(ExportFormat::Chatgpt, "[7]")[0]
                .split(": not a")
                .next(),
            Some("x.json: conversation [0] (byte 1)")
        );
        // Each format names itself; an element that parses only in part is
        // named by its id.
        for (format, what) in [
            (ExportFormat::Chatgpt, "ChatGPT"),
            (ExportFormat::Claude, "Claude"),
        ] {
            assert!(
                errors(format, "[7]")[0].starts_with(&format!(
                    "x.json: conversation [0] (byte 1): not a {what} conversation: "
                )),
                "{what}"
            );
        }
        assert!(
            errors(ExportFormat::Chatgpt, r#"[{"id":"k","mapping":7}]"#)[0].starts_with(
                "x.json: conversation [0] id k (byte 1): not a ChatGPT conversation: "
            )
        );
        assert!(errors(ExportFormat::Chatgpt, &conv(&one, "\"a\"")).is_empty());
    }

    /// Every item and the counters after each pass of `source`.
    fn passes(source: &ExportSource, n: usize) -> Vec<(Vec<SourceItem>, ExportCounts)> {
        (0..n)
            .map(|_| {
                let items: Vec<SourceItem> = source.items().unwrap().map(Result::unwrap).collect();
                (items, source.counters().snapshot())
            })
            .collect()
    }

    #[test]
    fn the_pass_after_a_spooled_one_reads_the_spool_not_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("conversations.json");
        let conv = |id: &str, text: &str| {
            let node = NODE.replace("hi", text);
            format!(
                r#"{{"id":"{id}","title":"t","current_node":"b","mapping":{{"a":{{"parent":null,"message":{node}}},"b":{{"parent":"a","message":{NODE}}},"x":{{"parent":"a","message":{NODE}}}}}}}"#
            )
        };
        let original = format!(
            "[{},{},{}]",
            conv("c1", "one"),
            conv("c2", r"two\n✓"),
            r#"{"id":"e","current_node":"a","mapping":{"a":{"parent":null}}}"#
        );
        let changed = format!("[{}]", conv("c9", "nine"));
        let settings = |spool: bool| ExportSettings {
            tenant: "t".into(),
            start: None,
            spool_dir: spool.then(|| dir.path().to_path_buf()),
        };
        let read_after_change = |spool: bool| {
            std::fs::write(&file, &original).unwrap();
            let source = ExportSource::new(&file, ExportFormat::Chatgpt, settings(spool));
            source.expect_second_pass();
            let mut out = passes(&source, 1);
            if spool {
                // The spooled pass does not open the export again.
                std::fs::remove_file(&file).unwrap();
                out.extend(passes(&source, 1));
            }
            std::fs::write(&file, &changed).unwrap();
            out.extend(passes(&source, if spool { 1 } else { 2 }));
            out
        };
        let spooled = read_after_change(true);
        // Two conversations with a header and two messages each; the empty
        // one is counted, not stored; the branch left behind is skipped.
        assert_eq!(spooled[0].0.len(), 6, "{:?}", spooled[0]);
        assert_eq!(spooled[0].1.conversations, 3);
        assert_eq!(spooled[0].1.empty_conversations, 1);
        assert_eq!(spooled[0].1.skipped_branch, 2);
        // The second pass is the spool's: the same items and counters as the
        // first, although the file is gone.
        assert_eq!(spooled[1], spooled[0]);
        // The spool serves one pass: the third reads the file again.
        assert_eq!(spooled[2].1.conversations, 1);
        assert!(
            spooled[2]
                .0
                .iter()
                .all(|i| i.as_ref().unwrap().thread == "c9")
        );
        // Without a spool directory each pass reads the file.
        let plain = read_after_change(false);
        assert_eq!(plain[0], spooled[0]);
        assert_eq!(plain[1], spooled[2]);
        // The spool left nothing in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_rejected_conversation_drops_the_spool() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("conversations.json");
        let good = format!(
            r#"{{"id":"c","current_node":"a","mapping":{{"a":{{"parent":null,"message":{NODE}}}}}}}"#
        );
        std::fs::write(&file, format!(r#"[{good},{{"id":"bad"}}]"#)).unwrap();
        let source = ExportSource::new(
            &file,
            ExportFormat::Chatgpt,
            ExportSettings {
                tenant: "t".into(),
                start: None,
                spool_dir: Some(dir.path().to_path_buf()),
            },
        );
        source.expect_second_pass();
        let first = passes(&source, 1);
        assert_eq!(first[0].1.rejected_conversations, 1);
        std::fs::write(&file, format!("[{good}]")).unwrap();
        // Not spooled: the next pass reads the corrected file.
        let second = passes(&source, 1);
        assert_eq!(second[0].1.rejected_conversations, 0);
        assert_eq!(second[0].0.len(), 2);
    }

    #[test]
    fn a_truncated_file_stops_the_read_with_its_byte() {
        let e = read_bytes(
            "x.json",
            ExportFormat::Claude,
            &ExportSettings::default(),
            b"[{\"uuid\":\"a\"",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.json: byte 12: the file ends inside array element [0]: truncated?"
        );
    }
}
