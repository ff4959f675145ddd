//! The search indexes are a persisted view: a searcher resumed from its
//! snapshot and refreshed equals one built afresh (conv-26, then conv-30
//! with governance and use in between), and a damaged, older-format or
//! foreign snapshot is rebuilt, never trusted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::path::Path;

use common::{data_file, ok};
use strataflow::log::Store;
use strataflow::log::record::{Actor, GovernanceAction};
use strataflow::{Channel, Memory, SearchRequest, Searcher};

const QUERIES: [&str; 5] = [
    "Paris",
    "pottery class",
    "When did Jon lose his job?",
    "adoption agency",
    "Caroline support group",
];

fn import(data: &Path, file: &str) {
    let path = data_file(file);
    ok(
        data,
        &["import", "locomo", path.to_str().unwrap(), "--quiet"],
    );
}

/// Governs the `event`-th event of the default tenant (in the order
/// `events` lists them) as the user; returns that list.
fn govern(
    memory: &Memory,
    event: usize,
    action: GovernanceAction,
) -> Vec<strataflow::EventListing> {
    let events = memory
        .default_tenant()
        .events(&strataflow::EventsQuery::default())
        .unwrap();
    memory
        .default_tenant()
        .govern(&events[event].id.to_hex(), action, Actor::User, None)
        .unwrap();
    events
}

fn assert_same(a: &Searcher, b: &Searcher) {
    assert_eq!(a.last_seq(), b.last_seq());
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a.event_count(), b.event_count());
    for q in QUERIES {
        for channel in [Channel::Events, Channel::Graph, Channel::Raw, Channel::All] {
            let request = SearchRequest {
                query: q.into(),
                ..SearchRequest::default()
            };
            assert_eq!(
                a.search(channel, &request).unwrap(),
                b.search(channel, &request).unwrap(),
                "{q} on {channel:?}"
            );
        }
        let request = SearchRequest {
            query: q.into(),
            thread: Some("conv-26".into()),
            intent: Some("latest".into()),
            budget: Some(200),
            ..SearchRequest::default()
        };
        assert_eq!(
            a.search(Channel::All, &request).unwrap(),
            b.search(Channel::All, &request).unwrap(),
            "{q} in a thread"
        );
    }
}

#[test]
fn a_searcher_resumed_from_its_snapshot_equals_one_built_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    import(data, "locomo/conv-26.json");
    let memory = Memory::open(data).unwrap();
    let first = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(first.resumed_from(), None, "no snapshot yet");
    let saved = first.last_seq();
    // Nothing appended: the snapshot is read and not rewritten.
    let again = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(again.resumed_from(), Some(saved));
    assert_same(&again, &memory.searcher_rebuilt(None, "").unwrap());
    drop(memory);

    import(data, "locomo/conv-30.json");
    let memory = Memory::open(data).unwrap();
    let events = govern(&memory, 2, GovernanceAction::Forget);
    // The next searcher resumes from the conv-26 snapshot and applies
    // conv-30 and the governance.
    let resumed = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(resumed.resumed_from(), Some(saved));
    assert!(resumed.last_seq() > saved);
    let fresh = memory.searcher_rebuilt(None, "").unwrap();
    assert_eq!(fresh.resumed_from(), None);
    assert_same(&resumed, &fresh);
    // It was saved back: a new process resumes from the new sequence.
    let last = resumed.last_seq();
    drop(memory);
    let memory = Memory::open(data).unwrap();
    let reopened = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(reopened.resumed_from(), Some(last));
    assert_same(&reopened, &fresh);
    // The forgotten event stays hidden after the round trip.
    memory
        .default_tenant()
        .govern(
            &events[2].id.to_hex(),
            GovernanceAction::Restore,
            Actor::User,
            None,
        )
        .unwrap();
    let restored = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(restored.resumed_from(), Some(last));
    assert_same(&restored, &memory.searcher_rebuilt(None, "").unwrap());
    drop(memory);
    let out = ok(data, &["views", "--verify"]);
    assert!(out.contains("search"), "{out}");
    assert_eq!(out.matches("rebuild: same").count(), 5, "{out}");
}

/// Saves `bytes` as the tenant's snapshot at `seq`, in a process of its own.
fn replace_snapshot(data: &Path, key: &str, tenant: &str, seq: u64, bytes: &[u8]) {
    let store = Store::open(data).unwrap();
    store.save_view_chunks(key, tenant, seq, bytes).unwrap();
}

fn snapshot(data: &Path, key: &str, tenant: &str) -> (u64, Vec<u8>) {
    let store = Store::open(data).unwrap();
    store.view_chunks(key, tenant).unwrap().unwrap()
}

#[test]
fn a_damaged_older_or_foreign_snapshot_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    import(data, "locomo/conv-26.json");
    let memory = Memory::open(data).unwrap();
    let key = memory.search_view_key(None).unwrap();
    let built = memory.default_tenant().searcher(None).unwrap();
    let want = built.digest();
    drop(memory);
    let (seq, good) = snapshot(data, &key, "");
    assert_eq!(seq, built.last_seq());

    let check = |label: &str| {
        let memory = Memory::open(data).unwrap();
        let s = memory.default_tenant().searcher(None).unwrap();
        assert_eq!(s.resumed_from(), None, "{label}: must be rebuilt");
        assert_eq!(s.digest(), want, "{label}");
        drop(memory);
        // Rebuilt and saved back: the next open resumes from it.
        assert_eq!(snapshot(data, &key, "").1, good, "{label}: saved back");
        let memory = Memory::open(data).unwrap();
        assert_eq!(
            memory
                .default_tenant()
                .searcher(None)
                .unwrap()
                .resumed_from(),
            Some(seq),
            "{label}"
        );
    };

    // One flipped byte deep inside the body: the checksum catches it.
    let mut flipped = good.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x40;
    replace_snapshot(data, &key, "", seq, &flipped);
    check("flipped byte");

    // An older format version, otherwise intact.
    let mut older = good.clone();
    older[0] = 0;
    replace_snapshot(data, &key, "", seq, &older);
    check("older version");

    // Truncated.
    replace_snapshot(data, &key, "", seq, &good[..good.len() - 7]);
    check("truncated");

    // Garbage written as a plain (unchunked) view state under the key.
    {
        let store = Store::open(data).unwrap();
        store
            .save_view_state(&key, "", seq, b"not a snapshot at all")
            .unwrap();
    }
    check("garbage head");

    // The right bytes at the wrong sequence.
    replace_snapshot(data, &key, "", seq - 1, &good);
    check("wrong sequence");

    // Another tenant's snapshot: the tenant named inside it differs.
    replace_snapshot(data, &key, "", seq, &{
        let memory = Memory::open(data).unwrap();
        memory.tenant("other").searcher(None).unwrap();
        drop(memory);
        snapshot(data, &key, "other").1
    });
    check("foreign tenant");
}

#[test]
fn searches_do_not_rewrite_the_snapshot_their_batches_alone_pass() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    import(data, "locomo/conv-26.json");
    let memory = Memory::open(data).unwrap();
    let saved = memory.default_tenant().searcher(None).unwrap().last_seq();
    let key = memory.search_view_key(None).unwrap();
    let before = memory.store().view_chunks(&key, "").unwrap().unwrap();
    assert_eq!(before.0, saved);
    // Each search records a retrieval batch of this tenant, which changes
    // nothing a searcher holds.
    for query in QUERIES {
        let request = SearchRequest {
            query: query.into(),
            ..SearchRequest::default()
        };
        let options = strataflow::SearchOptions {
            channel: Channel::All,
            ..Default::default()
        };
        let response = memory.default_tenant().search(&request, &options).unwrap();
        assert!(response.batch.is_some(), "{query}: a batch is recorded");
    }
    // Each searcher resumed where the one before it ended: the snapshot
    // saved at `saved`, held through the batches before its own.
    let batches = QUERIES.len() as u64;
    let resumed = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(resumed.resumed_from(), Some(saved + batches - 1));
    assert_eq!(resumed.last_seq(), saved + batches);
    assert_same(&resumed, &memory.searcher_rebuilt(None, "").unwrap());
    assert_eq!(
        memory.store().view_chunks(&key, "").unwrap().unwrap(),
        before,
        "the snapshot was not rewritten"
    );
    // A record that changes what the searcher reads (a use receipt would;
    // a governance record does) is applied and saved.
    govern(&memory, 0, GovernanceAction::Forget);
    let governed = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(governed.resumed_from(), Some(saved + batches));
    assert_same(&governed, &memory.searcher_rebuilt(None, "").unwrap());
    let after = memory.store().view_chunks(&key, "").unwrap().unwrap();
    assert_eq!(after.0, governed.last_seq(), "saved at the governance");
    // The through entry names the older snapshot: ignored.
    let next = memory.default_tenant().searcher(None).unwrap();
    assert_eq!(next.resumed_from(), Some(after.0));
    // A malformed one, or one past the end of the log, is ignored too.
    let through = format!("{key}/through");
    for (seq, bytes) in [
        (after.0 + 9, b"garbage".to_vec()),
        (after.0 + 9, after.0.to_be_bytes().to_vec()),
    ] {
        memory
            .store()
            .save_view_chunks(&through, "", seq, &bytes)
            .unwrap();
        let s = memory.default_tenant().searcher(None).unwrap();
        assert_eq!(s.resumed_from(), Some(after.0), "{bytes:?}");
        assert_same(&s, &memory.searcher_rebuilt(None, "").unwrap());
    }
}
