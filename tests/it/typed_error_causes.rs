//! Typed errors built from their real causes: a derivation over a log whose
//! message record was overwritten is `DeriveError::Missing` naming the
//! message; an export whose manifest miscounts a file is refused naming the
//! file and both counts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok};
use strataflow::interchange::import::{ImportError, ImportProblem, TargetProblem, import_parquet};
use strataflow::log::Store;
use strataflow::log::record::{Record, RecordKind};
use strataflow::operators::profile::{Profile, Registry};
use strataflow::pipeline::derive::{DeriveError, DeriveOptions, derive};

fn imported(dir: &std::path::Path, derive: bool) -> std::path::PathBuf {
    let data = dir.join("data");
    let f = data_file("locomo/conv-30.json");
    let mut args = vec!["import", "locomo", f.to_str().unwrap(), "--quiet"];
    if !derive {
        args.push("--no-derive");
    }
    ok(&data, &args);
    data
}

/// Overwrites the first block's first message with the block's envelope;
/// returns the message's id.
fn overwrite_a_message(store: &Store) -> strataflow::log::RecordId {
    let (block_seq, block_id) = store
        .ids_of_kind(RecordKind::Block)
        .next()
        .unwrap()
        .unwrap();
    let Some(Record::Block(block)) = store.get(&block_id).unwrap().map(|s| s.record) else {
        panic!("block {block_id}");
    };
    let message = block.messages[0];
    let message_seq = store.seq_of(&message).unwrap().unwrap();
    // The message's slot now holds the block's envelope: the id index still
    // points there, but no message record is there.
    let block_bytes = store.raw_value(block_seq).unwrap().unwrap();
    store
        .overwrite_value_for_test(message_seq, &block_bytes)
        .unwrap();
    message
}

#[test]
fn a_block_whose_message_is_gone_is_derive_missing_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let data = imported(dir.path(), false);
    let store = Store::open(&data).unwrap();
    let message = overwrite_a_message(&store);
    let ops = Registry::builtin()
        .resolve(&Profile::default_profile())
        .unwrap();
    let err = derive(&store, &ops, &DeriveOptions::default(), &mut |_| {}).unwrap_err();
    match &err {
        DeriveError::Missing { kind, id } => {
            assert_eq!(*kind, "message");
            assert_eq!(*id, message);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!("damaged log: message {message} is missing")
    );
}

/// A derivation over a derived log reads no message of a block whose
/// stages are done (what makes the catch-up of every `ingest` cheap): the
/// same damage goes unread, and nothing is derived again.
#[test]
fn deriving_a_derived_log_again_reads_no_message() {
    let dir = tempfile::tempdir().unwrap();
    let data = imported(dir.path(), true);
    let store = Store::open(&data).unwrap();
    overwrite_a_message(&store);
    let ops = Registry::builtin()
        .resolve(&Profile::default_profile())
        .unwrap();
    let stats = derive(&store, &ops, &DeriveOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(stats.runs, 0, "{stats:?}");
    assert_eq!(stats.ready, stats.blocks, "{stats:?}");
    assert!(stats.blocks > 0);
}

#[test]
fn a_manifest_count_that_disagrees_with_its_file_names_file_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let data = imported(dir.path(), true);
    let export = dir.path().join("export");
    ok(&data, &["export", "parquet", export.to_str().unwrap()]);
    let manifest_path = export.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let files = manifest["files"].as_object_mut().unwrap();
    let (name, listed) = files.iter_mut().next().unwrap();
    let name = name.clone();
    let read = listed.as_u64().unwrap();
    *listed = serde_json::json!(read + 1);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();

    let target = dir.path().join("copy");
    let store = Store::open(&target).unwrap();
    let err = import_parquet(&store, &export).unwrap_err();
    match &err {
        ImportError::Bad { path, detail } => {
            assert_eq!(*path, export.join(&name));
            assert_eq!(
                *detail,
                ImportProblem::RowCount {
                    read,
                    listed: serde_json::json!(read + 1)
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "{}: holds {read} rows; the manifest lists {}",
            export.join(&name).display(),
            read + 1
        )
    );
    // Nothing was loaded.
    assert_eq!(store.last_seq().unwrap(), None);
}

#[test]
fn a_target_that_is_a_file_is_refused_as_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("file");
    std::fs::write(&target, "x").unwrap();
    let err = strataflow::interchange::import::StagedImport::begin(&target).unwrap_err();
    match &err {
        ImportError::Target { dir, detail } => {
            assert_eq!(*dir, target);
            assert_eq!(*detail, TargetProblem::NotADirectory);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!("{}: is not a directory", target.display())
    );
}
