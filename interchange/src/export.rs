//! Parquet export: one file per record kind, with typed Arrow columns
//! (timestamps as UTC millisecond timestamps, lists as lists, ids as
//! 64-digit lowercase hex so they join as text), zstd-compressed, and a
//! `manifest.json` saying what was exported: schema version, the log
//! sequence range, row counts.
//!
//! Every row also carries the record's `envelope` (its exact log bytes),
//! so that [`crate::import`] can load an export into an empty data
//! directory and get the same records, ids and views back.
//!
//! Rows are written in row groups of [`ROW_GROUP_ROWS`] while the log is
//! scanned once, so memory does not grow with the log.
//!
//! [`export_parquet_with_views`] also writes one table per view of a
//! profile (`export/views.rs`): event status, weights, block levels and the graph
//! state (nodes, facts, edges). Views are derived from the records, so
//! these tables carry no envelope and import skips them; the manifest
//! lists them apart (`views`) with the view digests they were read at.

mod views;

pub use views::TenantViews;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Float64Builder, Int16Builder, ListBuilder,
    StringBuilder, TimestampMillisecondBuilder, UInt16Builder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use strataflow_log::record::{Record, RecordKind};
use strataflow_log::{RecordId, SourceTime, Store, StoreError, Timestamp};

/// Version of the export's schemas (in the manifest).
pub const EXPORT_SCHEMA_VERSION: u32 = 1;

/// Rows per Parquet row group.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// Error of an export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Reading the log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A value could not be written as JSON (a record's JSON column, the
    /// manifest): a bug, never written as an empty value.
    #[error("cannot write {what} as JSON: {source}")]
    Json {
        /// What (`graph assertion at sequence 12`, `manifest.json`).
        what: String,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// Arrow or Parquet refused the data. `detail` is their message (their
    /// errors are opaque to a caller, who acts on the file).
    #[error("cannot write {}: {detail}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
}

/// What to export.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Only this tenant's records.
    pub tenant: Option<String>,
    /// Only records after this sequence number (incremental export).
    pub since: u64,
}

/// `manifest.json`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExportManifest {
    /// [`EXPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Records after this sequence were exported…
    pub since_seq: u64,
    /// …up to and including this one (the log's last when the export ran).
    pub through_seq: u64,
    /// Tenant filter, if any.
    pub tenant: Option<String>,
    /// File name → rows (record tables: the ones import reads).
    pub files: BTreeMap<String, u64>,
    /// The profile whose views were exported, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// View table file name → rows (derived; import skips them).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub views: BTreeMap<String, u64>,
    /// Tenant → view name → digest of the view the tables were read from
    /// (the digests `strataflow views` prints).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub view_digests: BTreeMap<String, BTreeMap<String, String>>,
    /// The data directory's embedder setting (the spec its keyed memories
    /// are embedded with), if it has one: `import parquet` sets it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
}

/// Column kinds of the export.
enum Column {
    Str(StringBuilder),
    OptStr(StringBuilder),
    U64(UInt64Builder),
    U32(UInt32Builder),
    U16(UInt16Builder),
    OptI16(Int16Builder),
    Bool(BooleanBuilder),
    F64(Float64Builder),
    Ts(TimestampMillisecondBuilder),
    StrList(ListBuilder<StringBuilder>),
    Bin(BinaryBuilder),
}

impl Column {
    fn data_type(&self) -> DataType {
        match self {
            Self::Str(_) | Self::OptStr(_) => DataType::Utf8,
            Self::U64(_) => DataType::UInt64,
            Self::U32(_) => DataType::UInt32,
            Self::U16(_) => DataType::UInt16,
            Self::OptI16(_) => DataType::Int16,
            Self::Bool(_) => DataType::Boolean,
            Self::F64(_) => DataType::Float64,
            Self::Ts(_) => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            Self::StrList(_) => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            Self::Bin(_) => DataType::Binary,
        }
    }

    fn nullable(&self) -> bool {
        // Only optional values and timestamps (unknown times) may be null.
        matches!(self, Self::OptStr(_) | Self::OptI16(_) | Self::Ts(_))
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Str(b) | Self::OptStr(b) => Arc::new(b.finish()),
            Self::U64(b) => Arc::new(b.finish()),
            Self::U32(b) => Arc::new(b.finish()),
            Self::U16(b) => Arc::new(b.finish()),
            Self::OptI16(b) => Arc::new(b.finish()),
            Self::Bool(b) => Arc::new(b.finish()),
            Self::F64(b) => Arc::new(b.finish()),
            Self::Ts(b) => Arc::new(b.finish().with_timezone("UTC")),
            Self::StrList(b) => Arc::new(b.finish()),
            Self::Bin(b) => Arc::new(b.finish()),
        }
    }
}

/// A value pushed into the next column of a row.
enum Value<'a> {
    Str(&'a str),
    OptStr(Option<&'a str>),
    U64(u64),
    U32(u32),
    U16(u16),
    OptI16(Option<i16>),
    Bool(bool),
    F64(f64),
    Ts(Option<i64>),
    StrList(Vec<String>),
    Bin(&'a [u8]),
}

/// One output file being written.
struct Table {
    name: &'static str,
    path: PathBuf,
    names: Vec<&'static str>,
    columns: Vec<Column>,
    rows: usize,
    total: u64,
    writer: Option<ArrowWriter<File>>,
}

impl Table {
    /// A record table: the columns and the record's `envelope`.
    fn new(dir: &Path, name: &'static str, columns: Vec<(&'static str, Column)>) -> Self {
        let mut columns = columns;
        columns.push(("envelope", Column::Bin(BinaryBuilder::new())));
        Self::plain(dir, name, columns)
    }

    /// A table of exactly these columns.
    fn plain(dir: &Path, name: &'static str, columns: Vec<(&'static str, Column)>) -> Self {
        let (names, columns): (Vec<_>, Vec<_>) = columns.into_iter().unzip();
        Self {
            name,
            path: dir.join(format!("{name}.parquet")),
            names,
            columns,
            rows: 0,
            total: 0,
            writer: None,
        }
    }

    fn schema(&self) -> Arc<Schema> {
        Arc::new(Schema::new(
            self.names
                .iter()
                .zip(&self.columns)
                .map(|(n, c)| Field::new(*n, c.data_type(), c.nullable()))
                .collect::<Vec<_>>(),
        ))
    }

    fn push<'a>(
        &mut self,
        envelope: &'a [u8],
        mut values: Vec<Value<'a>>,
    ) -> Result<(), ExportError> {
        values.push(Value::Bin(envelope));
        self.push_row(values)
    }

    /// Appends one row of exactly the table's columns.
    fn push_row(&mut self, values: Vec<Value<'_>>) -> Result<(), ExportError> {
        if values.len() != self.columns.len() {
            return Err(ExportError::Parquet {
                path: self.path.clone(),
                detail: "a row does not match the table's columns".into(),
            });
        }
        for (column, value) in self.columns.iter_mut().zip(values) {
            match (column, value) {
                (Column::Str(b), Value::Str(v)) => b.append_value(v),
                (Column::OptStr(b), Value::OptStr(v)) => b.append_option(v),
                (Column::U64(b), Value::U64(v)) => b.append_value(v),
                (Column::U32(b), Value::U32(v)) => b.append_value(v),
                (Column::U16(b), Value::U16(v)) => b.append_value(v),
                (Column::OptI16(b), Value::OptI16(v)) => b.append_option(v),
                (Column::Bool(b), Value::Bool(v)) => b.append_value(v),
                (Column::F64(b), Value::F64(v)) => b.append_value(v),
                (Column::Ts(b), Value::Ts(v)) => b.append_option(v),
                (Column::Bin(b), Value::Bin(v)) => b.append_value(v),
                (Column::StrList(b), Value::StrList(v)) => {
                    for s in v {
                        b.values().append_value(s);
                    }
                    b.append(true);
                }
                _ => {
                    return Err(ExportError::Parquet {
                        path: self.path.clone(),
                        detail: "a value does not match its column".into(),
                    });
                }
            }
        }
        self.rows += 1;
        self.total += 1;
        if self.rows >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows == 0 && self.writer.is_some() {
            return Ok(());
        }
        let schema = self.schema();
        let parquet_error = |e: &dyn std::fmt::Display, path: &Path| ExportError::Parquet {
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        if self.writer.is_none() {
            let file = File::create(&self.path).map_err(|source| ExportError::Io {
                path: self.path.clone(),
                source,
            })?;
            let props = WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .build();
            self.writer = Some(
                ArrowWriter::try_new(file, Arc::clone(&schema), Some(props))
                    .map_err(|e| parquet_error(&e, &self.path))?,
            );
        }
        let columns: Vec<ArrayRef> = self.columns.iter_mut().map(Column::finish).collect();
        let batch =
            RecordBatch::try_new(schema, columns).map_err(|e| parquet_error(&e, &self.path))?;
        if let Some(w) = self.writer.as_mut() {
            w.write(&batch).map_err(|e| parquet_error(&e, &self.path))?;
        }
        self.rows = 0;
        Ok(())
    }

    fn close(mut self) -> Result<(&'static str, u64), ExportError> {
        self.flush()?;
        if let Some(w) = self.writer.take() {
            w.close().map_err(|e| ExportError::Parquet {
                path: self.path.clone(),
                detail: e.to_string(),
            })?;
        }
        Ok((self.name, self.total))
    }
}

fn hex(id: &RecordId) -> String {
    id.to_hex()
}

fn hexes(ids: &[RecordId]) -> Vec<String> {
    ids.iter().map(RecordId::to_hex).collect()
}

/// The serde name of an enum value (`"occurred"`, `"day"`, …).
fn name_of<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn ts(t: Option<Timestamp>) -> Value<'static> {
    Value::Ts(t.map(|t| t.0))
}

fn source_ts(t: SourceTime) -> Value<'static> {
    Value::Ts(Some(t.utc_ms))
}

/// The tables of an export, in file order.
struct Tables {
    messages: Table,
    blocks: Table,
    summaries: Table,
    events: Table,
    assertions: Table,
    derivations: Table,
    /// Governance, retrievals, assessments, use receipts, model calls and
    /// import sources: seq, id, tenant, the record as JSON.
    others: BTreeMap<RecordKind, Table>,
}

impl Tables {
    fn new(dir: &Path) -> Self {
        use Column as C;
        let s = || C::Str(StringBuilder::new());
        let os = || C::OptStr(StringBuilder::new());
        let u64c = || C::U64(UInt64Builder::new());
        let u32c = || C::U32(UInt32Builder::new());
        let tsc = || C::Ts(TimestampMillisecondBuilder::new());
        let list = || C::StrList(ListBuilder::new(StringBuilder::new()));
        Self {
            messages: Table::new(
                dir,
                "messages",
                vec![
                    ("seq", u64c()),
                    ("id", s()),
                    ("tenant", s()),
                    ("thread", s()),
                    ("external_id", s()),
                    ("position", u64c()),
                    ("role", s()),
                    ("speaker", os()),
                    ("content", s()),
                    ("time", tsc()),
                    ("offset_minutes", C::OptI16(Int16Builder::new())),
                    ("tool_calls", list()),
                ],
            ),
            blocks: Table::new(
                dir,
                "blocks",
                vec![
                    ("seq", u64c()),
                    ("id", s()),
                    ("tenant", s()),
                    ("thread", s()),
                    ("ordinal", u32c()),
                    ("start_turn", u32c()),
                    ("end_turn", u32c()),
                    ("first_position", u64c()),
                    ("last_position", u64c()),
                    ("messages", list()),
                    ("time", tsc()),
                ],
            ),
            summaries: Table::new(
                dir,
                "summaries",
                vec![
                    ("seq", u64c()),
                    ("id", s()),
                    ("tenant", s()),
                    ("block", s()),
                    ("title", s()),
                    ("summary", s()),
                    ("tags", list()),
                    ("key_points", list()),
                    ("should_extract", C::Bool(BooleanBuilder::new())),
                ],
            ),
            events: Table::new(
                dir,
                "events",
                vec![
                    ("seq", u64c()),
                    ("id", s()),
                    ("tenant", s()),
                    ("block", s()),
                    ("source_messages", list()),
                    ("title", s()),
                    ("summary", s()),
                    ("event_type", s()),
                    ("status", s()),
                    ("participants", list()),
                    ("tags", list()),
                    ("mentioned_at", tsc()),
                    ("happened_start", tsc()),
                    ("happened_end", tsc()),
                    ("time_text", os()),
                    ("precision", s()),
                    ("basis", s()),
                    ("criticality", s()),
                    ("confidence_milli", C::U16(UInt16Builder::new())),
                    ("supersedes", list()),
                    ("conflicts_with", list()),
                ],
            ),
            assertions: Table::new(
                dir,
                "graph_assertions",
                vec![
                    ("seq", u64c()),
                    ("id", s()),
                    ("tenant", s()),
                    ("source_events", list()),
                    ("assertion", s()),
                    ("confidence_milli", C::U16(UInt16Builder::new())),
                ],
            ),
            derivations: Table::new(
                dir,
                "derivations",
                vec![
                    ("seq", u64c()),
                    ("id", s()),
                    ("tenant", s()),
                    ("operator", s()),
                    ("config_hash", s()),
                    ("inputs", list()),
                    ("outputs", list()),
                    ("outcome", s()),
                    ("error", os()),
                    ("attempt", u32c()),
                ],
            ),
            others: [
                (RecordKind::Governance, "governance"),
                (RecordKind::Retrieval, "retrievals"),
                (RecordKind::Assessment, "assessments"),
                (RecordKind::UseReceipt, "use_receipts"),
                (RecordKind::ModelCall, "model_calls"),
                (RecordKind::ImportSource, "import_sources"),
                (RecordKind::Embedding, "embeddings"),
                (RecordKind::KeyedMemory, "keyed_memories"),
                (RecordKind::MemoryPurge, "memory_purges"),
            ]
            .into_iter()
            .map(|(kind, name)| {
                (
                    kind,
                    Table::new(
                        dir,
                        name,
                        vec![
                            ("seq", u64c()),
                            ("id", s()),
                            ("tenant", s()),
                            ("record", s()),
                        ],
                    ),
                )
            })
            .collect(),
        }
    }

    fn push(
        &mut self,
        seq: u64,
        id: &RecordId,
        record: &Record,
        envelope: &[u8],
    ) -> Result<(), ExportError> {
        let id_hex = hex(id);
        let env = envelope;
        match record {
            Record::Message(m) => self.messages.push(
                env,
                vec![
                    Value::U64(seq),
                    Value::Str(&id_hex),
                    Value::Str(&m.tenant),
                    Value::Str(&m.thread),
                    Value::Str(&m.external_id),
                    Value::U64(m.position),
                    Value::Str(m.role.as_str()),
                    Value::OptStr(m.speaker.as_deref()),
                    Value::Str(&m.content),
                    source_ts(m.time),
                    Value::OptI16(m.time.offset_minutes),
                    Value::StrList(m.tool_calls.iter().map(|c| c.name.clone()).collect()),
                ],
            ),
            Record::Block(b) => self.blocks.push(
                env,
                vec![
                    Value::U64(seq),
                    Value::Str(&id_hex),
                    Value::Str(&b.tenant),
                    Value::Str(&b.thread),
                    Value::U32(b.ordinal),
                    Value::U32(b.start_turn),
                    Value::U32(b.end_turn),
                    Value::U64(b.first_position),
                    Value::U64(b.last_position),
                    Value::StrList(hexes(&b.messages)),
                    source_ts(b.time),
                ],
            ),
            Record::BlockSummary(s) => self.summaries.push(
                env,
                vec![
                    Value::U64(seq),
                    Value::Str(&id_hex),
                    Value::Str(&s.tenant),
                    Value::Str(&hex(&s.block)),
                    Value::Str(&s.title),
                    Value::Str(&s.summary),
                    Value::StrList(s.tags.clone()),
                    Value::StrList(s.key_points.clone()),
                    Value::Bool(s.should_extract),
                ],
            ),
            Record::Event(e) => {
                let t = &e.temporal;
                let (kind, status, precision, basis, criticality) = (
                    t.event_type.name().to_owned(),
                    name_of(&t.status),
                    name_of(&t.precision),
                    name_of(&t.basis),
                    name_of(&e.criticality),
                );
                self.events.push(
                    env,
                    vec![
                        Value::U64(seq),
                        Value::Str(&id_hex),
                        Value::Str(&e.tenant),
                        Value::Str(&hex(&e.block)),
                        Value::StrList(hexes(&e.source_messages)),
                        Value::Str(&e.title),
                        Value::Str(&e.summary),
                        Value::Str(&kind),
                        Value::Str(&status),
                        Value::StrList(t.participants.clone()),
                        Value::StrList(e.tags.clone()),
                        source_ts(t.mentioned_at),
                        ts(t.happened_start),
                        ts(t.happened_end),
                        Value::OptStr(t.original_text.as_deref()),
                        Value::Str(&precision),
                        Value::Str(&basis),
                        Value::Str(&criticality),
                        Value::U16(e.confidence_milli),
                        Value::StrList(hexes(&t.supersedes)),
                        Value::StrList(hexes(&t.conflicts_with)),
                    ],
                )
            }
            Record::GraphAssertion(a) => {
                let assertion =
                    serde_json::to_string(&a.assertion).map_err(|source| ExportError::Json {
                        what: format!("the graph assertion at sequence {seq}"),
                        source,
                    })?;
                self.assertions.push(
                    env,
                    vec![
                        Value::U64(seq),
                        Value::Str(&id_hex),
                        Value::Str(&a.tenant),
                        Value::StrList(hexes(&a.source_events)),
                        Value::Str(&assertion),
                        Value::U16(a.confidence_milli),
                    ],
                )
            }
            Record::Derivation(d) => {
                let (outcome, error) = match &d.outcome {
                    strataflow_log::record::Outcome::Ok => ("ok", None),
                    strataflow_log::record::Outcome::Skipped { .. } => ("skipped", None),
                    strataflow_log::record::Outcome::Failed { error } => {
                        ("failed", Some(error.as_str()))
                    }
                };
                self.derivations.push(
                    env,
                    vec![
                        Value::U64(seq),
                        Value::Str(&id_hex),
                        Value::Str(&d.tenant),
                        Value::Str(&d.operator),
                        Value::Str(&hex(&d.config_hash)),
                        Value::StrList(hexes(&d.inputs)),
                        Value::StrList(hexes(&d.outputs)),
                        Value::Str(outcome),
                        Value::OptStr(error),
                        Value::U32(d.attempt),
                    ],
                )
            }
            other => match self.others.get_mut(&other.kind()) {
                Some(table) => {
                    let json =
                        serde_json::to_string(other).map_err(|source| ExportError::Json {
                            what: format!("the {} record at sequence {seq}", other.kind().name()),
                            source,
                        })?;
                    table.push(
                        env,
                        vec![
                            Value::U64(seq),
                            Value::Str(&id_hex),
                            Value::Str(other.tenant()),
                            Value::Str(&json),
                        ],
                    )
                }
                None => Ok(()),
            },
        }
    }

    fn close(self) -> Result<BTreeMap<String, u64>, ExportError> {
        let mut files = BTreeMap::new();
        for table in [
            self.messages,
            self.blocks,
            self.summaries,
            self.events,
            self.assertions,
            self.derivations,
        ]
        .into_iter()
        .chain(self.others.into_values())
        {
            let (name, rows) = table.close()?;
            files.insert(format!("{name}.parquet"), rows);
        }
        Ok(files)
    }
}

/// Exports the log's records after `options.since` into `dir` (created if
/// needed): one Parquet file per kind and `manifest.json`.
pub fn export_parquet(
    store: &Store,
    dir: &Path,
    options: &ExportOptions,
) -> Result<ExportManifest, ExportError> {
    let manifest = export_records(store, dir, options)?;
    write_manifest(dir, &manifest)?;
    Ok(manifest)
}

/// [`export_parquet`], plus one table per view of `profile` for each
/// tenant of `views` (`view_*.parquet`), listed in the manifest with
/// their row counts and digests, and the directory's `embedder` setting.
pub fn export_parquet_with_views(
    store: &Store,
    dir: &Path,
    options: &ExportOptions,
    profile: &str,
    views: &[TenantViews],
    embedder: Option<&str>,
) -> Result<ExportManifest, ExportError> {
    let mut manifest = export_records(store, dir, options)?;
    manifest.profile = Some(profile.to_owned());
    manifest.embedder = embedder.map(str::to_owned);
    manifest.views = views::write(dir, views)?;
    manifest.view_digests = views
        .iter()
        .map(|v| (v.tenant.clone(), v.digests.clone()))
        .collect();
    write_manifest(dir, &manifest)?;
    Ok(manifest)
}

fn export_records(
    store: &Store,
    dir: &Path,
    options: &ExportOptions,
) -> Result<ExportManifest, ExportError> {
    std::fs::create_dir_all(dir).map_err(|source| ExportError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let through = store.last_seq()?.unwrap_or(0);
    let mut tables = Tables::new(dir);
    // The stored value is the envelope: it is exported as read (no
    // re-encoding), and the record decoded from it fills the columns.
    for item in store.scan_raw(options.since + 1) {
        let (seq, envelope) = item?;
        if seq > through {
            break;
        }
        let record = strataflow_log::envelope::decode(&envelope)
            .map_err(|source| ExportError::Store(StoreError::Decode { seq, source }))?;
        if options
            .tenant
            .as_deref()
            .is_some_and(|t| t != record.tenant())
        {
            continue;
        }
        let id = strataflow_log::envelope::id_of(&envelope);
        tables.push(seq, &id, &record, &envelope)?;
    }
    Ok(ExportManifest {
        schema_version: EXPORT_SCHEMA_VERSION,
        since_seq: options.since,
        through_seq: through,
        tenant: options.tenant.clone(),
        files: tables.close()?,
        profile: None,
        views: BTreeMap::new(),
        view_digests: BTreeMap::new(),
        embedder: None,
    })
}

fn write_manifest(dir: &Path, manifest: &ExportManifest) -> Result<(), ExportError> {
    let path = dir.join("manifest.json");
    let text = serde_json::to_string_pretty(manifest).map_err(|source| ExportError::Json {
        what: "manifest.json".into(),
        source,
    })?;
    std::fs::write(&path, text).map_err(|source| ExportError::Io { path, source })
}
