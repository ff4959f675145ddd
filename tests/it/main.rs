//! The integration tests, one module per behaviour, linked into one test
//! binary (one link of the whole crate instead of one per file). Shared
//! helpers: `common` (run the binary, read shipped data), `support` (test
//! doubles of services), `import_support` (external memory import setup).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;
mod import_support;
mod support;

mod audit_detects_tampering;
mod block_size_config;
mod blocks_cover_every_message;
mod cli_arguments;
mod crash_pipeline_points;
mod crash_resume;
mod default_profile;
mod derivation_locomo;
mod derivation_profiles;
mod derivation_retries;
mod diff_graph;
mod diff_queries_bad_line;
mod diff_queries_jsonl;
mod diff_queries_locomo;
mod diff_summaries;
mod eval_graph;
mod eval_locomo;
mod evidence_gate;
mod export_import_roundtrip;
mod export_parquet;
mod external_import_add;
mod external_import_conflict;
mod external_import_dry_run;
mod external_import_duplicate;
mod external_import_merge;
mod external_import_supersede;
mod external_import_text;
mod external_import_undo;
mod extractor_v4;
mod facade_api;
mod format_fixture;
mod governance;
mod input_readers;
mod invalid_input;
mod jsonl_ingest;
mod locomo_import;
mod log_bridge;
mod model_backfill_faults;
mod model_diff;
mod model_gateway;
mod model_invalid_output;
mod model_profile_without_key;
mod model_replay_offline;
mod pipeline_determinism;
mod profile_diff;
mod projector_v3;
mod quarantine_backfill;
mod query_scope;
mod replay_verify;
mod resume_terminal_failures;
mod search_snapshot;
mod second_process;
mod serve_cli;
mod serve_crash;
mod serve_http;
mod serve_load;
mod serve_mcp;
mod serve_support;
mod serve_tenants;
mod store_damage;
mod streaming_backpressure;
mod temporal_locomo;
mod tenant_isolation;
mod text_versions;
mod typed_error_causes;
mod views_incremental;
mod views_one_pass;
