//! Merges of the index keyspaces' level 0, on a thread of the store's own.
//!
//! fjall runs flushes and compactions on one background worker
//! ([`crate::store`]'s `FLUSH_WORKERS`), one task at a time. A merge of an
//! index keyspace's level 0 rewrites the keyspace's last level whole (its
//! keys are hashes, or begin with a kind, a thread or a parent, so every
//! level-0 table overlaps all of it): seconds at a few million records.
//! Meanwhile the flushes of `records` queued behind it, fjall halted the
//! writer at four sealed memtables, and the whole pipeline waited (267
//! halts of 100 ms in an ingest of 5M messages, measured with fjall's
//! debug log).
//!
//! So the index keyspaces are created with a level-0 threshold that fjall's
//! worker never meets in practice ([`FJALL_L0_BACKSTOP`]), and this thread
//! merges them at [`INDEX_L0_TABLES`] with the same leveled strategy: the
//! worker is left to flush. A flush of index entries asks for a merge
//! ([`IndexMerger::request`]) of each keyspace whose level 0 is full; the
//! thread starts on the first such request and is joined when the store
//! closes (after the merge it is running, if any: a merge is one atomic
//! change of the keyspace's tables, so stopping between merges loses
//! nothing, and a SIGKILL during one leaves the tables as they were).
//!
//! A merge keeps every version of a key (its garbage-collection threshold
//! is 0): the only shadowed entries of an index keyspace are the same
//! entries written again by a re-index after a crash, and the removed
//! model-call entries' tombstones, both rare. Reads see the newest.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use fjall::{AbstractTree, Keyspace};

/// Tables in level 0 of an index keyspace before this thread merges them
/// into the level below (fjall's default: 4). The index stage ingests one
/// sorted table per keyspace every [`crate::index::FLUSH_RECORDS`] records,
/// and each merge rewrites the keyspace's last level whole: with 4, merges
/// took most of fjall's one background worker (37 halts of 100 ms in an
/// ingest of 1M messages); 16, then 32 with tails of twice the records,
/// merge a quarter as often each (18% less CPU on 2.5M messages, then 5M
/// messages in 174-184 s instead of 235 s). Point reads check a Bloom
/// filter per level-0 table, and a thread's range reads merge up to 31
/// more runs.
pub(crate) const INDEX_L0_TABLES: u8 = 32;

/// The level-0 threshold fjall's worker is given for index keyspaces
/// created by this build: it merges there only if this thread has not
/// (u8's largest; level 0 never holds that many tables while the store is
/// open). Stores created before keep the threshold they were created with
/// (fjall keeps a keyspace's setting), so fjall's worker still merges
/// them too; a table being merged by one is skipped by the other.
pub(crate) const FJALL_L0_BACKSTOP: u8 = u8::MAX;

/// Level-0 runs at which fjall starts to slow writes into a keyspace (it
/// halts them at 30, until a merge brings level 0 down). A flush of index
/// entries into a keyspace with this many goes through bulk ingestion,
/// which fjall does not slow, instead of a write batch: with
/// [`INDEX_L0_TABLES`] above 30, a batch could otherwise wait for a merge
/// that only more tables would start.
pub(crate) const FJALL_L0_SLOWS_WRITES: usize = 20;

/// The merge thread of one store (see the module docs).
pub(crate) struct IndexMerger {
    keyspaces: [Keyspace; 6],
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Keyspaces (by position in [`IndexMerger::keyspaces`]) waiting for a
    /// merge.
    pending: [bool; 6],
    /// A merge is running.
    merging: bool,
    stopping: bool,
    /// A merge's error, reported by the next [`IndexMerger::request`].
    failed: Option<fjall::Error>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a set of flags: a panic left it whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl IndexMerger {
    /// A merger of `keyspaces` (the index keyspaces); its thread starts on
    /// the first request.
    pub(crate) fn new(keyspaces: [Keyspace; 6]) -> Self {
        Self {
            keyspaces,
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            }),
            thread: Mutex::new(None),
        }
    }

    /// Asks for a merge of each index keyspace whose level 0 holds
    /// [`INDEX_L0_TABLES`] tables or more, starting the thread if needed.
    /// Returns the error of a merge that failed since the last request
    /// (its tables stay where they were: nothing is lost), or the failure
    /// to start the thread.
    pub(crate) fn request(&self) -> Result<(), fjall::Error> {
        let full: Vec<usize> = (0..self.keyspaces.len())
            .filter(|&k| {
                self.keyspaces
                    .get(k)
                    .is_some_and(|ks| ks.l0_table_count() >= usize::from(INDEX_L0_TABLES))
            })
            .collect();
        {
            let mut state = self.shared.lock();
            if let Some(failed) = state.failed.take() {
                return Err(failed);
            }
            if full.is_empty() {
                return Ok(());
            }
            for k in full {
                if let Some(p) = state.pending.get_mut(k) {
                    *p = true;
                }
            }
        }
        self.shared.changed.notify_all();
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if thread.is_none() {
            let keyspaces = self.keyspaces.clone();
            let shared = Arc::clone(&self.shared);
            *thread = Some(
                std::thread::Builder::new()
                    .name("strataflow-merge".to_owned())
                    .spawn(move || merge_while_asked(&keyspaces, &shared))?,
            );
        }
        Ok(())
    }

    /// Waits until no merge is asked for or running.
    #[cfg(feature = "test-support")]
    pub(crate) fn wait_idle(&self) {
        let mut state = self.shared.lock();
        while !state.stopping && (state.merging || state.pending.iter().any(|p| *p)) {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Stops the thread after the merge it is running, if any.
    pub(crate) fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.changed.notify_all();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            // A panic in a merge was fjall's; the store closes all the same.
            let _ = thread.join();
        }
    }
}

/// The thread's loop: merges each keyspace asked for, until stopped.
fn merge_while_asked(keyspaces: &[Keyspace; 6], shared: &Shared) {
    let strategy =
        Arc::new(fjall::compaction::Leveled::default().with_l0_threshold(INDEX_L0_TABLES));
    loop {
        let next = {
            let mut state = shared.lock();
            loop {
                if state.stopping {
                    return;
                }
                if let Some(k) = state.pending.iter().position(|p| *p) {
                    if let Some(p) = state.pending.get_mut(k) {
                        *p = false;
                    }
                    state.merging = true;
                    break k;
                }
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        crate::pause::point("merge");
        let merged = keyspaces.get(next).map_or(Ok(()), |keyspace| {
            keyspace.tree.compact(strategy.clone(), 0)
        });
        {
            let mut state = shared.lock();
            state.merging = false;
            if let Err(e) = merged {
                state.failed = Some(e.into());
            }
        }
        shared.changed.notify_all();
    }
}

impl Drop for IndexMerger {
    fn drop(&mut self) {
        self.stop();
    }
}
