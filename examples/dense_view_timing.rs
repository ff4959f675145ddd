//! Ad-hoc timing of `search dense`: a query that reads the persisted dense
//! view against one that must rebuild it from the log (the view removed
//! first), and against reading every `Embedding` record of the log, which
//! is what each dense query did before the view was persisted.
//! `cargo run --release --example dense_view_timing -- DATA_DIR PROFILE
//! [TENANT]` on a directory derived with a profile that names an embedder.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use strataflow::Memory;
use strataflow::log::record::{Record, RecordKind};

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: dense_view_timing DATA_DIR PROFILE [TENANT]";
    let dir = args.next().expect(usage);
    let profile = args.next().expect(usage);
    let tenant = args.next().unwrap_or_default();
    let memory = Memory::open(std::path::Path::new(&dir)).unwrap();
    let key = memory
        .dense_view_key(Some(&profile))
        .unwrap()
        .expect("the profile names an embedder");
    let query = "What did she say about the adoption agency and the kids?";
    let label = memory
        .dense_search(Some(&profile), &tenant, query, Some(1))
        .unwrap()
        .label;
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for round in 0..5 {
        // Every Embedding record read and its label and tenant checked:
        // the work each dense query did before the view.
        let t = Instant::now();
        let mut scanned = 0usize;
        for entry in memory.store().ids_of_kind(RecordKind::Embedding) {
            let (_, id) = entry.unwrap();
            if let Some(Record::Embedding(e)) = memory.store().get(&id).unwrap().map(|s| s.record)
                && e.tenant == tenant
                && e.label == label
            {
                std::hint::black_box(e.values());
                scanned += 1;
            }
        }
        let scan = ms(t);
        // The view removed: the query rebuilds it from the log and saves it.
        let (seq, _) = memory.store().view_chunks(&key, &tenant).unwrap().unwrap();
        memory
            .store()
            .save_view_chunks(&key, &tenant, seq, &[])
            .unwrap();
        let t = Instant::now();
        let cold = memory
            .dense_search(Some(&profile), &tenant, query, Some(10))
            .unwrap();
        let rebuild = ms(t);
        let t = Instant::now();
        let warm = memory
            .dense_search(Some(&profile), &tenant, query, Some(10))
            .unwrap();
        let read = ms(t);
        assert_eq!(cold, warm);
        let bytes = memory
            .store()
            .view_chunks(&key, &tenant)
            .unwrap()
            .map_or(0, |(_, b)| b.len());
        println!(
            "round {round}: {} vectors ({scanned} scanned) | scan of every Embedding record {scan:.1} ms | query rebuilding the view {rebuild:.1} ms | query reading the view {read:.1} ms | view {:.2} MB",
            warm.vectors,
            bytes as f64 / 1e6
        );
    }
}
