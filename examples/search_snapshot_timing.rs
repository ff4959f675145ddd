//! Ad-hoc timing: building a tenant's searcher from the log versus resuming
//! it from its persisted snapshot. `cargo run --release --example
//! search_snapshot_timing -- DATA_DIR [TENANT]` on an imported, derived
//! data directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use strataflow::Memory;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: search_snapshot_timing DATA_DIR [TENANT]");
    let tenant = args.next().unwrap_or_default();
    let memory = Memory::open(std::path::Path::new(&dir)).unwrap();
    let key = memory.search_view_key(None).unwrap();
    // Warm the other views (status, weights, graph membership) so both
    // timings below pay only for the search indexes and their refresh.
    memory
        .tenant(&tenant)
        .views(&strataflow::ViewsOptions {
            verify: false,
            ..Default::default()
        })
        .unwrap();
    for round in 0..3 {
        let t = Instant::now();
        let fresh = memory.searcher_rebuilt(None, &tenant).unwrap();
        let build = t.elapsed();
        let t = Instant::now();
        let resumed = memory.tenant(&tenant).searcher(None).unwrap();
        let load = t.elapsed();
        assert_eq!(fresh.digest(), resumed.digest());
        // What every refresh pays whatever the snapshot: the views it reads.
        let t = Instant::now();
        memory.tenant(&tenant).event_status().unwrap();
        memory.tenant(&tenant).weights().unwrap();
        memory.tenant(&tenant).graph(None).unwrap();
        let views = t.elapsed();
        let bytes = memory
            .store()
            .view_chunks(&key, &tenant)
            .unwrap()
            .map_or(0, |(_, b)| b.len());
        println!(
            "round {round}: seq {} events {} | build from log {:.1} ms | resume from snapshot {:.1} ms (resumed: {}) | of which views read {:.1} ms | snapshot {:.2} MB",
            fresh.last_seq(),
            fresh.event_count(),
            build.as_secs_f64() * 1e3,
            load.as_secs_f64() * 1e3,
            resumed.resumed_from().is_some(),
            views.as_secs_f64() * 1e3,
            bytes as f64 / 1e6
        );
    }
}
