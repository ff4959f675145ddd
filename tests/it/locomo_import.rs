//! `import locomo` stores every message of a conversation and seals its
//! complete 12-turn blocks; importing again changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use common::{data_file, ok, stats};

#[test]
fn conv_26_gives_419_messages_and_17_blocks_and_reimport_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv26 = data_file("locomo/conv-26.json");
    ok(
        data,
        &["import", "locomo", conv26.to_str().unwrap(), "--quiet"],
    );
    let first = stats(data);
    assert_eq!(first["messages"], 419);
    assert_eq!(first["blocks"], 17);
    assert_eq!(first["threads"], 1);
    assert_eq!(first["records"]["message"], 419);

    let blocks: serde_json::Value =
        serde_json::from_str(&ok(data, &["blocks", "--thread", "conv-26", "--json"])).unwrap();
    assert_eq!(blocks["blocks"].as_array().unwrap().len(), 17);

    let again = ok(
        data,
        &["import", "locomo", conv26.to_str().unwrap(), "--quiet"],
    );
    assert!(
        again.contains("stored 0 new messages (419 already stored)"),
        "{again}"
    );
    let mut second = stats(data);
    let mut first = first;
    // Disk usage may move as the engine compacts; everything else is identical.
    first["bytes_on_disk"] = 0.into();
    second["bytes_on_disk"] = 0.into();
    assert_eq!(first, second);
}

#[test]
fn conv_30_gives_369_messages_and_15_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv30 = data_file("locomo/conv-30.json");
    ok(
        data,
        &["import", "locomo", conv30.to_str().unwrap(), "--quiet"],
    );
    let s = stats(data);
    assert_eq!(s["messages"], 369);
    assert_eq!(s["blocks"], 15);
    let blocks: serde_json::Value =
        serde_json::from_str(&ok(data, &["blocks", "--thread", "conv-30", "--json"])).unwrap();
    assert_eq!(blocks["thread"], "conv-30");
    assert_eq!(blocks["blocks"].as_array().unwrap().len(), 15);
}

#[test]
fn image_captions_and_session_times_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let conv26 = data_file("locomo/conv-26.json");
    ok(
        data,
        &["import", "locomo", conv26.to_str().unwrap(), "--quiet"],
    );
    let store = strataflow::log::Store::open(data).unwrap();
    let id = store
        .message_by_external_id("", "conv-26", "D1:5")
        .unwrap()
        .unwrap();
    let m = match store.get(&id).unwrap().unwrap().record {
        strataflow::log::Record::Message(m) => m,
        other => panic!("not a message: {other:?}"),
    };
    assert_eq!(m.speaker.as_deref(), Some("Caroline"));
    assert_eq!(m.role, strataflow::log::record::Role::User);
    assert!(
        m.content
            .ends_with("[image: a photo of a dog walking past a wall with a painting of a woman]"),
        "{}",
        m.content
    );
    assert_eq!(m.time.to_rfc3339(), "2023-05-08T13:56:00.000Z");
    assert_eq!(m.position, 4);
}
