//! Writes a generated ChatGPT-format export (`conversations.json`) of about
//! a given size, and the same messages in the JSONL message format, to
//! compare `import chatgpt` with `ingest` (peak RSS and message rate):
//!
//! ```sh
//! cargo run --release --example chatgpt_export -- 1000000000 /tmp/big.json /tmp/big.jsonl
//! /usr/bin/time -v target/release/strataflow --data /tmp/a import chatgpt /tmp/big.json --quiet
//! /usr/bin/time -v target/release/strataflow --data /tmp/b ingest /tmp/big.jsonl --quiet
//! ```
//!
//! Arguments: target bytes (default 1 GB), the JSON path, the JSONL path
//! (optional). About 1.1 kB per message; conversations of 25 messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::{BufWriter, Write};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bytes: u64 = args
        .first()
        .map_or(1_000_000_000, |a| a.parse().expect("bytes"));
    let json = args.get(1).map_or("conversations.json", String::as_str);
    let twin = args.get(2);
    // A generous message count; the writer stops at `bytes`.
    let messages = bytes / 500 + 100;
    let options = strataflow_testkit::synthetic::SyntheticOptions {
        messages,
        threads: u32::try_from(messages / 25).unwrap_or(u32::MAX).max(1),
        seed: 19,
        tenants: 1,
    };
    let mut out =
        BufWriter::with_capacity(1 << 20, File::create(json).expect("create the JSON file"));
    let mut twin_out = twin.map(|p| {
        BufWriter::with_capacity(1 << 20, File::create(p).expect("create the JSONL file"))
    });
    let stats = strataflow_testkit::chatgpt::write_chatgpt_export(
        &options,
        bytes,
        &mut out,
        twin_out.as_mut().map(|w| w as &mut dyn Write),
    )
    .expect("write");
    eprintln!(
        "wrote {} conversations, {} messages ({} left behind), {} bytes to {json}; {} JSONL lines",
        stats.conversations, stats.messages, stats.left_behind, stats.bytes, stats.twin_lines
    );
}
