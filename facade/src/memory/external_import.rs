//! External memory import on a [`Memory`] (spec §14): decide what each
//! candidate of a `stratagate.external-memory.v2` export becomes, commit it
//! in one batch, and undo it by import id.
//!
//! A file that is not JSON (after a whole-text fence, its first character
//! is not `{`) is plain text: the profile's model extracts its candidates
//! (`llm-import-extractor@1`, one request per part of at most 12,000
//! characters), which are then decided and committed the same way. Model
//! calls are recorded like every other, in a dry run too.
//!
//! One import appends, in one atomic batch: the source `Message` (the whole
//! text, role user, thread `external-import:<hash>`), its `Block` (never
//! summarized or extracted), a `BlockSummary`, one `Event` per applied
//! ADD / MERGE / SUPERSEDE / CONFLICT (citing that message; MERGE and
//! SUPERSEDE supersede their targets, CONFLICT conflicts with them), and
//! the `ImportSource` with every decision, whose id is the import id.
//! Undo is a `Governance` record (`UndoImport`) on the `ImportSource`; the
//! event status view then shows the imported events as removed.

use std::collections::{BTreeMap, BTreeSet};

use strataflow_log::record::{
    Actor, Block, BlockSummary, EXTERNAL_IMPORT_THREAD_PREFIX, Governance, GovernanceAction,
    ImportAction, ImportDecision, ImportSource, Message, Record, RecordKind, Role,
};
use strataflow_log::{Durability, RecordId, SourceTime};
use strataflow_materializers::event_status::{EventStatus, chain_tail};
use strataflow_materializers::search::{EventQuery, normalize};
use strataflow_operators::import::{
    Candidate, DEFAULT_TOP_K, ExistingEvent, ExternalMemoryError, ExternalMemoryExport,
    FORMAT_TEXT, FORMAT_V2, FallbackDecider, ImportDecider, ImportedEventSource, Proposal,
    TextExtractor, TextImportError, imported_event, looks_like_export, parse_export, parse_mention,
};
use strataflow_operators::layers::{TranscriptMessage, deterministic_layers};

use super::{Expected, ImportError, Memory, MemoryError, QueryError};

/// Title of the source block when the text has no non-empty line.
const DEFAULT_BLOCK_TITLE: &str = "External AI memory import";
/// Tag of every import source block.
pub const IMPORT_BLOCK_TAG: &str = "external-memory-import";

/// Options of [`Memory::import_external_memory`].
pub struct ExternalImportOptions<'a> {
    /// Tenant to import into.
    pub tenant: String,
    /// Decide and report; write nothing.
    pub dry_run: bool,
    /// Apply decisions that require confirmation (confidence < 0.85);
    /// otherwise they are reported and applied as IGNORE.
    pub accept_uncertain: bool,
    /// The import time; when `None`, the file's `exportedAt`.
    pub imported_at: Option<SourceTime>,
    /// The decider; `None`: the model of `profile` when it names one
    /// (`llm-import-decider@1`, calls recorded like every model call), else
    /// the deterministic [`FallbackDecider`].
    pub decider: Option<&'a dyn ImportDecider>,
    /// Profile whose model decides when `decider` is `None` (`None`: the
    /// default profile).
    pub profile: Option<String>,
    /// Matches shown to the decider (clamped to 1..=20; default 5).
    pub top_k: usize,
}

impl Default for ExternalImportOptions<'_> {
    fn default() -> Self {
        Self {
            tenant: String::new(),
            dry_run: false,
            accept_uncertain: false,
            imported_at: None,
            decider: None,
            profile: None,
            top_k: DEFAULT_TOP_K,
        }
    }
}

/// One candidate's decision, as reported.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ReportedDecision {
    /// 0-based index in the file.
    pub index: usize,
    /// Candidate title.
    pub title: String,
    /// What the decider proposed.
    pub proposed: ImportAction,
    /// What was (or, in a dry run, would be) applied.
    pub action: ImportAction,
    /// Existing events it relates to.
    pub targets: Vec<RecordId>,
    /// Confidence in per-mille.
    pub confidence_milli: u16,
    /// Below the auto-apply threshold.
    pub requires_confirmation: bool,
    /// Why.
    pub reason: String,
    /// The event written for it.
    pub created_event: Option<RecordId>,
}

/// What an import did (or would do).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ExternalImportReport {
    /// The `ImportSource` record id (`None` in a dry run).
    pub import_id: Option<RecordId>,
    /// Nothing was written.
    pub dry_run: bool,
    /// The import was already in the log (identical decisions): nothing new.
    pub already_imported: bool,
    /// Tenant.
    pub tenant: String,
    /// The input's format: the export's `schemaVersion` (default
    /// `stratagate.external-memory.v2`) or `text` for plain text.
    pub format: String,
    /// Plain text: the parts it was cut into, one extraction request each
    /// (0 for a JSON export).
    pub text_parts: usize,
    /// The exporting system.
    pub source_system: Option<String>,
    /// The import time used.
    pub imported_at: SourceTime,
    /// The decider (`name@version`).
    pub decider: String,
    /// Candidates read.
    pub candidates: usize,
    /// Candidates beyond the 200 read.
    pub dropped_candidates: usize,
    /// Per candidate, in file order.
    pub decisions: Vec<ReportedDecision>,
    /// Events written (or that would be).
    pub created_events: Vec<RecordId>,
    /// The source message and block.
    pub source_block: Option<RecordId>,
}

/// What an undo did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UndoReport {
    /// The import undone.
    pub import_id: RecordId,
    /// The `Governance` record written.
    pub governance: RecordId,
    /// Imported events now removed.
    pub removed_events: Vec<RecordId>,
    /// Events the import had superseded, active again.
    pub restored_events: Vec<RecordId>,
}

impl Memory {
    /// Imports an external memory export or a plain text (see the module
    /// docs). Errors: the text is not a valid export
    /// ([`MemoryError::ExternalImport`]); it is plain text and the profile
    /// has no model, or the model could not extract its candidates
    /// ([`MemoryError::ImportText`]); no import time is known; or the
    /// decider's model failed. Nothing is written on an error but the model
    /// calls made.
    pub fn import_external_memory(
        &self,
        text: &str,
        options: &ExternalImportOptions<'_>,
    ) -> Result<ExternalImportReport, MemoryError> {
        let is_export = looks_like_export(text);
        // A plain text is extracted by the profile's model, whatever decides.
        let profile = if options.decider.is_none() || !is_export {
            Some(match &options.profile {
                Some(name) => self.profile(name)?,
                None => self.default_profile()?,
            })
        } else {
            None
        };
        let endpoint = profile.as_ref().and_then(|p| p.model.clone());
        if !is_export && endpoint.is_none() {
            return Err(MemoryError::ImportText(TextImportError::NoModel {
                // default: No profile was resolved only when a decider was given; the error then names none.
                profile: profile.map(|p| p.name).unwrap_or_default(),
            }));
        }
        let export = if is_export {
            Some(parse_export(text)?)
        } else {
            None
        };
        let exported_at = export.as_ref().and_then(|e| e.exported_at.clone());
        let imported_at = match (options.imported_at, &exported_at) {
            (Some(t), _) => t,
            (None, Some(e)) => parse_mention(e).ok_or_else(|| ImportError::BadExportedAt {
                exported_at: e.clone(),
            })?,
            (None, None) => {
                return Err(ImportError::NoImportTime {
                    plain_text: !is_export,
                }
                .into());
            }
        };
        let tenant = options.tenant.as_str();
        let gateway = endpoint.as_ref().map(|e| self.gateway(e)).transpose()?;
        let (export, format, text_parts) = match export {
            Some(export) => {
                let format = export
                    .schema_version
                    .clone()
                    .unwrap_or_else(|| FORMAT_V2.to_owned());
                (export, format, 0)
            }
            None => {
                let (Some(g), Some(e)) = (&gateway, &endpoint) else {
                    return Err(MemoryError::ImportText(TextImportError::NoModel {
                        // default: No profile was resolved only when a decider was given; the error then names none.
                        profile: profile.map(|p| p.name).unwrap_or_default(),
                    }));
                };
                let extractor = TextExtractor {
                    gateway: g.as_ref(),
                    model: e.model.clone(),
                };
                let extracted = extractor.extract(text);
                self.save_model_counters()?;
                let extracted = extracted?;
                let export = ExternalMemoryExport {
                    schema_version: None,
                    source_system: None,
                    exported_at: None,
                    coverage: None,
                    coverage_note: None,
                    uncertain_items: Vec::new(),
                    candidates: extracted.candidates,
                    dropped_candidates: extracted.dropped,
                };
                (export, FORMAT_TEXT.to_owned(), extracted.parts)
            }
        };
        let fallback = FallbackDecider;
        let model_decider = gateway.as_ref().zip(endpoint.as_ref()).map(|(g, e)| {
            strataflow_operators::import::decider::ModelDecider {
                gateway: g.as_ref(),
                model: e.model.clone(),
            }
        });
        let decider: &dyn ImportDecider = match (options.decider, &model_decider) {
            (Some(d), _) => d,
            (None, Some(m)) => m,
            (None, None) => &fallback,
        };
        let proposals = self.propose(tenant, &export.candidates, decider, options.top_k);
        self.save_model_counters()?;
        let proposals = proposals?;

        // The records.
        let thread = import_thread(tenant, text, imported_at);
        let message = Message {
            tenant: tenant.to_owned(),
            thread: thread.clone(),
            external_id: "import".into(),
            position: 0,
            role: Role::User,
            speaker: export.source_system.clone(),
            content: text.to_owned(),
            tool_calls: Vec::new(),
            time: imported_at,
        };
        let message_id = record_id(&Record::Message(message.clone()))?;
        let layers = deterministic_layers(&[TranscriptMessage::from(&message)]);
        let block = Block {
            tenant: tenant.to_owned(),
            thread,
            ordinal: 1,
            start_turn: 1,
            end_turn: 1,
            first_position: 0,
            last_position: 0,
            messages: vec![message_id],
            time: imported_at,
            l4: layers.l4,
            l3: layers.l3,
        };
        let block_id = record_id(&Record::Block(block.clone()))?;
        let summary = source_summary(tenant, block_id, text);
        let source = ImportedEventSource {
            tenant,
            block: block_id,
            message: message_id,
            imported_at,
        };
        let mut events = Vec::new();
        let mut decisions = Vec::new();
        let mut reported = Vec::new();
        for (candidate, proposal) in export.candidates.iter().zip(proposals) {
            let applied = proposal.action != ImportAction::Ignore
                && (!proposal.requires_confirmation || options.accept_uncertain);
            let action = if applied {
                proposal.action
            } else {
                ImportAction::Ignore
            };
            let created_event = if applied {
                let body = proposal.merged.as_ref().unwrap_or(candidate);
                let event = imported_event(&source, body, action, &proposal.targets);
                let record = Record::Event(event);
                let id = record_id(&record)?;
                events.push(record);
                Some(id)
            } else {
                None
            };
            let index = u32::try_from(candidate.index).unwrap_or(u32::MAX);
            decisions.push(ImportDecision {
                index,
                candidate: candidate.title.clone(),
                proposed: proposal.action,
                action,
                targets: proposal.targets.clone(),
                reason: proposal.reason.clone(),
                confidence_milli: proposal.confidence_milli,
                requires_confirmation: proposal.requires_confirmation,
                created_event,
            });
            reported.push(ReportedDecision {
                index: candidate.index,
                title: candidate.title.clone(),
                proposed: proposal.action,
                action,
                targets: proposal.targets,
                confidence_milli: proposal.confidence_milli,
                requires_confirmation: proposal.requires_confirmation,
                reason: proposal.reason,
                created_event,
            });
        }
        let created_events: Vec<RecordId> =
            reported.iter().filter_map(|d| d.created_event).collect();
        let mut report = ExternalImportReport {
            import_id: None,
            dry_run: options.dry_run,
            already_imported: false,
            tenant: tenant.to_owned(),
            format: format.clone(),
            text_parts,
            source_system: export.source_system.clone(),
            imported_at,
            decider: decider.id().to_string(),
            candidates: export.candidates.len(),
            dropped_candidates: export.dropped_candidates,
            decisions: reported,
            created_events,
            source_block: None,
        };
        if options.dry_run {
            return Ok(report);
        }
        let import = Record::ImportSource(ImportSource {
            tenant: tenant.to_owned(),
            format,
            // default: docs/format.md: `sourceSystem` absent is stored as "".
            source_system: export.source_system.clone().unwrap_or_default(),
            message: message_id,
            block: block_id,
            imported_at,
            decisions,
        });
        let import_id = record_id(&import)?;
        if self.store.contains(&import_id)? {
            if let Some(undo) = self.undo_of(&import_id)? {
                return Err(ImportError::Undone {
                    import: import_id,
                    undo,
                }
                .into());
            }
            report.already_imported = true;
        }
        let mut records = vec![
            Record::Message(message),
            Record::Block(block),
            Record::BlockSummary(summary),
        ];
        records.extend(events);
        records.push(import);
        self.store.append(&records, Durability::Sync)?;
        self.refresh_views(tenant)?;
        report.import_id = Some(import_id);
        report.source_block = Some(block_id);
        Ok(report)
    }

    /// One proposal per candidate: exact duplicates of a stored event
    /// (same normalized title and summary, not forgotten or removed) and
    /// repeats of an earlier candidate are IGNORE without asking the
    /// decider; the rest are decided against their top-K matches.
    fn propose(
        &self,
        tenant: &str,
        candidates: &[Candidate],
        decider: &dyn ImportDecider,
        top_k: usize,
    ) -> Result<Vec<Proposal>, MemoryError> {
        let searcher = self.searcher(None, tenant)?;
        let index = searcher.event_index();
        let mut stored: BTreeMap<String, RecordId> = BTreeMap::new();
        for doc in index.docs().filter(|d| !d.status.is_hidden()) {
            stored
                .entry(fingerprint(&doc.event.title, &doc.event.summary))
                .or_insert(doc.id);
        }
        let mut seen = BTreeSet::new();
        let mut out = Vec::with_capacity(candidates.len());
        for c in candidates {
            let fp = fingerprint(&c.title, &c.summary);
            let proposal = if let Some(existing) = stored.get(&fp) {
                Proposal::exact_duplicate(*existing)
            } else if seen.contains(&fp) {
                Proposal::batch_duplicate()
            } else {
                let query = EventQuery {
                    text: format!("{} {} {}", c.title, c.summary, c.tags.join(" ")),
                    limit: top_k.clamp(1, 20),
                    ..EventQuery::default()
                };
                let matches: Vec<ExistingEvent> = index
                    .search(&query)
                    .into_iter()
                    .filter_map(|(id, _)| index.get(&id))
                    .map(|d| ExistingEvent {
                        id: d.id,
                        title: d.event.title.clone(),
                        summary: d.event.summary.clone(),
                        tags: d.event.tags.clone(),
                        status: d.status.name().to_owned(),
                        happened: d.event.temporal.happened_start.map(|t| t.to_rfc3339()),
                    })
                    .collect();
                decider
                    .decide(c, &matches)
                    .map_err(|source| MemoryError::ImportDecider {
                        candidate: c.index,
                        source,
                    })?
            };
            seen.insert(fp);
            out.push(proposal);
        }
        Ok(out)
    }

    /// Undoes an import of `tenant` (by `ImportSource` id or unique prefix): appends an
    /// `UndoImport` governance record on it. Its events become removed
    /// (hidden, their links ignored), so what they superseded is active
    /// again. Undoing twice is an error.
    pub(crate) fn undo_import(
        &self,
        tenant: &str,
        import: &str,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<UndoReport, MemoryError> {
        let target = self.show(tenant, import)?;
        let Record::ImportSource(source) = &target.record else {
            return Err(QueryError::WrongKind {
                id: target.id,
                kind: target.record.kind(),
                expected: Expected::Import,
            }
            .into());
        };
        if let Some(undo) = self.undo_of(&target.id)? {
            return Err(ImportError::AlreadyUndone {
                import: target.id,
                undo,
            }
            .into());
        }
        let before = self.event_status(&source.tenant)?;
        let earlier = self.governance_on(&target.id)?;
        let record = Record::Governance(Governance {
            tenant: source.tenant.clone(),
            target: target.id,
            action: GovernanceAction::UndoImport,
            actor,
            reason,
            previous: chain_tail(&earlier),
        });
        let governance = self.append_one(record)?;
        self.refresh_views(&source.tenant)?;
        let after = self.event_status(&source.tenant)?;
        let status = |v: &strataflow_materializers::event_status::EventStatusView,
                      id: &RecordId| v.get(id).map(|s| s.status);
        let removed_events = source
            .decisions
            .iter()
            .filter_map(|d| d.created_event)
            .filter(|id| status(&after, id) == Some(EventStatus::Removed))
            .collect();
        let targets: BTreeSet<RecordId> = source
            .decisions
            .iter()
            .flat_map(|d| d.targets.iter().copied())
            .collect();
        let restored_events = targets
            .into_iter()
            .filter(|id| {
                status(&before, id) == Some(EventStatus::Superseded)
                    && status(&after, id) == Some(EventStatus::Active)
            })
            .collect();
        Ok(UndoReport {
            import_id: target.id,
            governance,
            removed_events,
            restored_events,
        })
    }

    /// Governance records on a target.
    fn governance_on(&self, target: &RecordId) -> Result<Vec<(RecordId, Governance)>, MemoryError> {
        Ok(self
            .store
            .children_of_kind(target, RecordKind::Governance)?
            .into_iter()
            .filter_map(|s| match s.record {
                Record::Governance(g) if g.target == *target => Some((s.id, g)),
                _ => None,
            })
            .collect())
    }

    /// The `UndoImport` record on an import, if any.
    fn undo_of(&self, import: &RecordId) -> Result<Option<RecordId>, MemoryError> {
        Ok(self
            .governance_on(import)?
            .into_iter()
            .find(|(_, g)| g.action == GovernanceAction::UndoImport)
            .map(|(id, _)| id))
    }

    /// The events created by the imports whose source block is `block`.
    pub(crate) fn imported_events(&self, block: &RecordId) -> Result<Vec<RecordId>, MemoryError> {
        let mut out = Vec::new();
        for stored in self
            .store
            .children_of_kind(block, RecordKind::ImportSource)?
        {
            if let Record::ImportSource(s) = stored.record {
                for id in s.decisions.iter().filter_map(|d| d.created_event) {
                    if !out.contains(&id) {
                        out.push(id);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A record's id.
fn record_id(record: &Record) -> Result<RecordId, MemoryError> {
    strataflow_log::envelope::encode_with_id(record)
        .map(|(id, _)| id)
        .map_err(MemoryError::from)
}

/// Exact-duplicate key: normalized title, a zero character, normalized
/// summary (spec §14.2).
pub fn fingerprint(title: &str, summary: &str) -> String {
    format!("{}\u{0}{}", normalize(title), normalize(summary))
}

/// `external-import:<32 hex digits>`: a hash of tenant, text and import time.
fn import_thread(tenant: &str, text: &str, at: SourceTime) -> String {
    let mut h = blake3::Hasher::new_derive_key("strataflow external import thread v1");
    for part in [tenant.as_bytes(), text.as_bytes()] {
        h.update(&(part.len() as u64).to_be_bytes());
        h.update(part);
    }
    h.update(&at.utc_ms.to_be_bytes());
    h.update(&at.offset_minutes.map_or(i32::MIN, i32::from).to_be_bytes());
    let hex = h.finalize().to_hex();
    format!(
        "{EXTERNAL_IMPORT_THREAD_PREFIX}{}",
        // default: A blake3 hex digest has 64 digits: the cut always exists.
        hex.get(..32).unwrap_or_default()
    )
}

/// The source block's L0–L2 (spec §14.3): title = first non-empty line
/// (≤ 80 characters) or `External AI memory import`, tag
/// `external-memory-import`, summary = the whitespace-collapsed text
/// (≤ 500), key points = the first 8 non-empty lines, never extracted.
fn source_summary(tenant: &str, block: RecordId, text: &str) -> BlockSummary {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let title = lines.first().map_or_else(
        || DEFAULT_BLOCK_TITLE.to_owned(),
        |l| l.chars().take(80).collect(),
    );
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    BlockSummary {
        tenant: tenant.to_owned(),
        block,
        title,
        tags: vec![IMPORT_BLOCK_TAG.to_owned()],
        summary: collapsed.chars().take(500).collect(),
        key_points: lines.iter().take(8).map(|l| (*l).to_owned()).collect(),
        should_extract: false,
    }
}

impl From<TextImportError> for MemoryError {
    fn from(e: TextImportError) -> Self {
        Self::ImportText(e)
    }
}

impl From<ExternalMemoryError> for MemoryError {
    fn from(e: ExternalMemoryError) -> Self {
        Self::ExternalImport(e)
    }
}
