//! Observers of the records a run commits: told of each committed batch,
//! in log order, so that state derived from the log (the persisted views)
//! can follow the run instead of reading the log back after it.

use strataflow_log::envelope::Encoded;

/// Told of the records a run commits ([`crate::ingest::IngestOptions::observer`]).
///
/// [`CommitObserver::committed`] is called on the run's writer thread right
/// after each commit, before the next one, with the batch's new records in
/// sequence order (records the log already held are left out). A run
/// commits nothing else, but the log may: other writers, or a pass before
/// the run, so an observer checks that the sequences it is given follow
/// the last it saw.
pub trait CommitObserver: Send + Sync {
    /// The new records of one committed batch, `(sequence, record)`.
    fn committed(&self, records: &[(u64, &Encoded)]);
}
