//! A tenant's views depend only on its messages and their order within
//! each thread, never on how its threads interleaved in the log: the
//! shipped sample's two threads, plus a copy of its `build-pipeline` thread
//! said during the trip planning (so threads overlap in time), ingested in
//! the file's order, thread after thread, round robin and in seeded random
//! interleavings, then the same search and use, give the same digest for
//! every view.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{ok, view_digests};
use crate::views_incremental::use_top_hit;
use strataflow::Memory;

/// The sample's lines with their thread, then its `build-pipeline` thread
/// again as `overlap`, said on the days of the trip planning.
fn sample_lines() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/sample.jsonl"),
    )
    .unwrap();
    let mut out: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["thread"].as_str().unwrap().to_owned(), l.to_owned())
        })
        .collect();
    let overlap: Vec<(String, String)> = out
        .iter()
        .filter(|(t, _)| t == "build-pipeline")
        .map(|(_, l)| {
            let l = l
                .replace("\"build-pipeline\"", "\"overlap\"")
                .replace("2025-01-14T09", "2024-04-20T19")
                .replace("2025-01-16T10", "2024-04-27T10");
            ("overlap".to_owned(), l)
        })
        .collect();
    assert_eq!(overlap.len(), 28);
    out.extend(overlap);
    out
}

/// Interleaves the threads' lines, keeping each thread's order: `pick`
/// chooses the next thread among those with lines left.
fn interleave(
    lines: &[(String, String)],
    mut pick: impl FnMut(&[&String]) -> usize,
) -> Vec<String> {
    let mut queues: BTreeMap<&String, std::collections::VecDeque<&String>> = BTreeMap::new();
    for (thread, line) in lines {
        queues.entry(thread).or_default().push_back(line);
    }
    let mut out = Vec::new();
    loop {
        let open: Vec<&String> = queues
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(t, _)| *t)
            .collect();
        if open.is_empty() {
            return out;
        }
        let thread = open[pick(&open) % open.len()];
        out.push(queues.get_mut(thread).unwrap().pop_front().unwrap().clone());
    }
}

/// Every view's digest after ingesting `lines`, a search and a use.
fn digests(dir: &Path, name: &str, lines: &[String]) -> BTreeMap<(String, String), String> {
    let file = dir.join(format!("{name}.jsonl"));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let data = dir.join(name);
    ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    {
        let memory = Memory::open(&data).unwrap();
        use_top_hit(&memory, "which seat does Ana prefer on trains");
    }
    view_digests(&data)
        .into_iter()
        .map(|(view, tenant, _, digest)| ((view, tenant), digest))
        .collect()
}

#[test]
fn views_do_not_depend_on_how_threads_interleave() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = sample_lines();
    let file_order: Vec<String> = lines.iter().map(|(_, l)| l.clone()).collect();
    let mut orders: Vec<(String, Vec<String>)> = vec![
        ("file".into(), file_order.clone()),
        ("threads-ascending".into(), interleave(&lines, |_| 0)),
    ];
    let mut turn = 0usize;
    orders.push((
        "round-robin".into(),
        interleave(&lines, |_| {
            turn += 1;
            turn
        }),
    ));
    for seed in 1..=4u64 {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        orders.push((
            format!("random-{seed}"),
            interleave(&lines, |_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 33) as usize
            }),
        ));
    }
    // The orders really differ from the file's.
    for (name, order) in &orders[1..] {
        assert!(order != &file_order, "{name} is the file's order");
    }
    let want = digests(tmp.path(), "file", &file_order);
    for view in [
        "event_status",
        "weights",
        "graph_membership",
        "block_levels",
        "search",
    ] {
        assert!(
            want.keys()
                .any(|(v, _)| v == view || v.starts_with(&format!("{view}/"))),
            "view {view} is compared: {want:?}"
        );
    }
    for (name, order) in &orders[1..] {
        assert_eq!(
            digests(tmp.path(), name, order),
            want,
            "views after the `{name}` interleaving differ from the file's order"
        );
    }
}
