//! `search all` with a dense list and a budget: the lexical hits that fill
//! the first `LEXICAL_FIRST_WORDS` words keep their places, and the dense
//! list is fused below them.
#![allow(clippy::unwrap_used)]

use crate::support;

use strataflow::Memory;
use support::llm_profile::{ingest, write_archive};

#[test]
fn search_all_keeps_the_lexical_hits_of_the_first_words_above_the_dense_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("archive.jsonl");
    write_archive(&file, 2, 6);
    let memory = Memory::open(tmp.path().join("data")).unwrap();
    ingest(&memory, &file);
    // A reply that shares no word with the query: no lexical channel finds it.
    let reply = memory
        .store()
        .message_by_external_id("", "thread-1", "1-4-a")
        .unwrap()
        .unwrap();
    let request = strataflow::SearchRequest {
        query: "train tickets".into(),
        budget: Some(strataflow::LEXICAL_FIRST_WORDS),
        ..Default::default()
    };
    let searcher = memory.default_tenant().searcher(None).unwrap();
    let lexical = searcher.search(strataflow::Channel::All, &request).unwrap();
    let words: usize = lexical.iter().map(|h| h.words).sum();
    assert!(lexical.len() > 1 && words <= strataflow::LEXICAL_FIRST_WORDS);
    // The dense list ranks the reply first, then the lexical hits in
    // reverse: fused with equal weights, that would reorder them.
    let mut dense = vec![reply];
    dense.extend(
        lexical
            .iter()
            .rev()
            .filter_map(|h| h.reference.split_once(':'))
            .filter(|(kind, _)| matches!(*kind, "msg" | "event"))
            .map(|(_, id)| id.parse::<strataflow::log::RecordId>().unwrap()),
    );
    let fused = searcher
        .search_with_dense(strataflow::Channel::All, &request, &dense)
        .unwrap();
    let refs = |hits: &[strataflow::SearchHit]| -> Vec<String> {
        hits.iter().map(|h| h.reference.clone()).collect()
    };
    assert_eq!(refs(&fused[..lexical.len()]), refs(&lexical));
    assert_eq!(fused[lexical.len()].reference, format!("msg:{reply}"));
}
