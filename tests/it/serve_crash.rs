//! Crash (issue 15): the load of `serve_load` with the server SIGKILLed
//! once half of the batches are acknowledged, and restarted on the same
//! directory; the clients retry every batch not acknowledged (a retry of
//! stored content is acknowledged again with `new: false`). Then every
//! acknowledged id is stored — those acknowledged before the kill read back
//! through `GET /v1/records/{id}` — and the end state equals an `ingest` of
//! the same messages in the same order per thread.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::common::ok;
use super::serve_load::{
    Addr, TENANT, assert_same_end_state, drive, load_messages, plan, reference, stored_messages,
};
use super::serve_support::Server;

#[test]
fn acknowledged_appends_survive_a_sigkill_and_retries_converge() {
    let tmp = tempfile::tempdir().unwrap();
    let n = load_messages();
    let plan = plan(tmp.path(), n, 16);
    let total: usize = plan.batches.iter().map(Vec::len).sum();
    let served = tmp.path().join("served");
    ok(&served, &["init"]);
    let first = Server::start(&served, &[]);
    let addr: Addr = Arc::new(RwLock::new(first.addr.clone()));
    let epoch = AtomicU64::new(0);
    let mut slot = Some(first);
    let mut acked_at_kill = 0;

    let outcome = drive(&plan, &addr, &epoch, |acked| {
        let deadline = Instant::now() + Duration::from_secs(300);
        while acked.load(Ordering::SeqCst) < (total / 2) as u64 {
            assert!(
                Instant::now() < deadline,
                "half the batches were not acknowledged in time"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Requests sent from now on may reach the restarted server.
        epoch.store(1, Ordering::SeqCst);
        slot.take().unwrap().kill();
        acked_at_kill = acked.load(Ordering::SeqCst);
        let restarted = Server::start(&served, &[]);
        *addr.write().unwrap() = restarted.addr.clone();
        slot = Some(restarted);
    });
    let server = slot.take().unwrap();
    assert!(
        acked_at_kill < total as u64,
        "the kill came before the end of the load ({acked_at_kill} of {total} batches)"
    );
    assert!(
        outcome.append_retries > 0,
        "some batch was retried after the kill"
    );

    // Every message acknowledged, none acknowledged as new twice.
    let mut new_once = BTreeSet::new();
    let mut acked = BTreeSet::new();
    for (id, new, _, _) in &outcome.acks {
        acked.insert(id.clone());
        if *new {
            assert!(new_once.insert(id.clone()), "message {id} stored twice");
        }
    }
    assert_eq!(acked.len(), n, "every message acknowledged");

    // What the first server acknowledged reads back from the second: each
    // client's last 100 acknowledgements before the kill (the ones at
    // risk) and every 50th of its earlier ones.
    let mut before_kill: BTreeMap<usize, Vec<&String>> = BTreeMap::new();
    for (id, _, sent_in, client) in &outcome.acks {
        if *sent_in == 0 {
            before_kill.entry(*client).or_default().push(id);
        }
    }
    let checked: Vec<&String> = before_kill
        .values()
        .flat_map(|ids| {
            let recent = ids.len().saturating_sub(100);
            ids.iter()
                .enumerate()
                .filter(move |(i, _)| *i >= recent || i % 50 == 0)
                .map(|(_, id)| *id)
        })
        .collect();

    assert!(
        !checked.is_empty(),
        "some messages were acknowledged before the kill"
    );
    for id in &checked {
        let reply = server.get(&format!("/v1/records/{id}?tenant={TENANT}"), None);
        assert_eq!(
            reply.status, 200,
            "acknowledged message {id} lost: {}",
            reply.body
        );
        assert!(reply.body.contains(id.as_str()), "{}", reply.body);
    }

    let status = server.stop();
    assert!(status.success(), "serve stopped on SIGTERM with {status}");
    let stored = stored_messages(&served);
    assert_eq!(stored.len(), n, "every message stored once");
    assert_eq!(
        acked,
        stored.into_iter().collect(),
        "the stored messages are the acknowledged ones"
    );
    let reference = reference(tmp.path(), &served, &plan, &outcome);
    assert_same_end_state(&served, &reference);
    eprintln!(
        "serve_crash: {n} messages, SIGKILL after {acked_at_kill} of {total} batches, {} requests retried, {} acknowledgements checked through GET /v1/records",
        outcome.append_retries,
        checked.len()
    );
}
