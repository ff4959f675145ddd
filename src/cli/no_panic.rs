//! Property tests: no input panics. Random argument vectors built from the
//! real subcommand and option names go to the parser (and the output-path
//! check); random and mutated bytes go to the JSONL message reader, the
//! LoCoMo reader, the `search --queries` line parser, the question
//! loader of `eval`/`diff` and the chat export readers (ChatGPT, Claude,
//! chat-jsonl). Each must return Ok or Err.
//!
//! 11,500 cases in all (see `CASES`, and 1,500 for the export readers).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

use super::args::Cli;
use super::paths;

/// Cases per property: 4,000 + 2,000 + 1,000 + 1,500 + 1,500 = 10,000.
const CASES: [u32; 5] = [4_000, 2_000, 1_000, 1_500, 1_500];

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every subcommand path and every option spelling of the real parser.
struct Names {
    commands: Vec<Vec<String>>,
    options: Vec<String>,
}

fn names() -> Names {
    fn walk(cmd: &clap::Command, path: &mut Vec<String>, names: &mut Names) {
        names.commands.push(path.clone());
        for arg in cmd.get_arguments() {
            if let Some(long) = arg.get_long() {
                names.options.push(format!("--{long}"));
            }
            if let Some(short) = arg.get_short() {
                names.options.push(format!("-{short}"));
            }
        }
        for sub in cmd.get_subcommands() {
            path.push(sub.get_name().to_owned());
            walk(sub, path, names);
            path.pop();
        }
    }
    let mut names = Names {
        commands: Vec::new(),
        options: Vec::new(),
    };
    walk(&Cli::command(), &mut Vec::new(), &mut names);
    names.options.sort();
    names.options.dedup();
    names
}

/// A value an attacker would type: numbers at and past every bound,
/// negatives, unicode, huge and empty strings, option-like text.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9]{1,25}",
        "-[0-9]{1,25}",
        Just("0".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("-1".to_owned()),
        Just("1e9".to_owned()),
        Just(String::new()),
        Just("--".to_owned()),
        Just("-".to_owned()),
        Just("é✓🦀\u{0}".to_owned()),
        (1usize..80_000).prop_map(|n| "x".repeat(n)),
        "[a-z_]{1,12}",
        "\\PC{0,40}",
    ]
}

/// One token: an option of the whole parser, or a value, or `--opt=value`.
fn token(options: usize) -> impl Strategy<Value = Token> {
    prop_oneof![
        (0..options).prop_map(Token::Option),
        value().prop_map(Token::Value),
        ((0..options), value()).prop_map(|(o, v)| Token::Joined(o, v)),
    ]
}

#[derive(Clone, Debug)]
enum Token {
    Option(usize),
    Value(String),
    Joined(usize, String),
}

fn argv(names: &Names, command: Index, tokens: &[Token]) -> Vec<String> {
    let mut argv = vec!["strataflow".to_owned()];
    argv.extend(command.get(&names.commands).iter().cloned());
    for t in tokens {
        match t {
            Token::Option(o) => argv.push(names.options[*o].clone()),
            Token::Value(v) => argv.push(v.clone()),
            Token::Joined(o, v) => argv.push(format!("{}={v}", names.options[*o])),
        }
    }
    argv
}

#[test]
fn the_parser_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn random_argument_vectors_never_panic_the_parser() {
    let names = names();
    assert!(names.commands.len() > 30 && names.options.len() > 40);
    let n = names.options.len();
    proptest!(config(CASES[0]), |(
        command in any::<Index>(),
        tokens in prop::collection::vec(token(n), 0..8),
        output in value(),
        input in value(),
        data in value(),
    )| {
        let argv = argv(&names, command, &tokens);
        let _ = Cli::try_parse_from(&argv);
        // The check that runs after parsing, on the same kind of values.
        let _ = paths::check_output("-o", Path::new(&output), &[Path::new(&input)], Path::new(&data));
    });
}

/// Valid input of each reader, to mutate.
fn sample_lines() -> Vec<String> {
    let text = std::fs::read_to_string(repo("examples/data/sample.jsonl")).unwrap_or_default();
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    assert!(!lines.is_empty());
    lines
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A small LoCoMo conversation cut from a shipped one: two sessions of a
/// few turns and three questions, so mutations reach every part quickly.
fn small_locomo() -> String {
    let text = std::fs::read_to_string(repo("tests/data/locomo/conv-30.json")).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    let conversation = match value.get_mut("conversation") {
        Some(c) => c,
        None => &mut value,
    };
    if let Value::Object(map) = conversation {
        map.retain(|k, _| match k.strip_prefix("session_") {
            Some(rest) => matches!(rest, "1" | "2" | "1_date_time" | "2_date_time"),
            None => !k.starts_with("events_"),
        });
        for session in ["session_1", "session_2"] {
            if let Some(Value::Array(turns)) = map.get_mut(session) {
                turns.truncate(3);
            }
        }
    }
    if let Some(Value::Array(qa)) = value.get_mut("qa") {
        qa.truncate(3);
    }
    serde_json::to_string(&value).unwrap()
}

/// Byte edits: flip, insert, delete, or splice in a hostile snippet.
#[derive(Clone, Debug)]
enum Edit {
    Flip(Index, u8),
    Insert(Index, u8),
    Delete(Index),
    Splice(Index, &'static str),
}

const SNIPPETS: &[&str] = &[
    "1e999999",
    "-1",
    "18446744073709551616",
    "-9223372036854775809",
    "0.5",
    "null",
    "[]",
    "{}",
    "\"\"",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "\u{feff}",
    "\"x\":",
    "{\"a\":",
    ",",
    "\n",
    "\"9999-12-31T23:59:59+14:00\"",
    "\"0000-01-01T00:00:00-23:59\"",
    "\"1:56 pm on 8 May, 99999\"",
    "\"D1:1\"",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 1u8..).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<Index>().prop_map(Edit::Delete),
        (any::<Index>(), prop::sample::select(SNIPPETS)).prop_map(|(i, s)| Edit::Splice(i, s)),
    ]
}

fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for e in edits {
        let len = bytes.len();
        match e {
            Edit::Flip(i, b) if len > 0 => bytes[i.index(len)] ^= b,
            Edit::Insert(i, b) => bytes.insert(i.index(len + 1), *b),
            Edit::Delete(i) if len > 0 => {
                bytes.remove(i.index(len));
            }
            Edit::Splice(i, s) => {
                let at = i.index(len + 1);
                bytes.splice(at..at, s.bytes());
            }
            _ => {}
        }
    }
    bytes
}

/// Random bytes, or a valid input with up to eight edits.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..512),
        4 => (prop::sample::select(seeds), prop::collection::vec(edit(), 1..8))
            .prop_map(|(seed, edits)| mutate(&seed, &edits)),
    ]
}

#[test]
fn the_jsonl_reader_never_panics() {
    use strataflow::pipeline::source::jsonl::{JsonlReader, parse_line};
    let lines = sample_lines();
    let seeds: Vec<Vec<u8>> = lines.iter().map(|l| l.clone().into_bytes()).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    proptest!(config(CASES[1]), |(bytes in input(seeds), next in any::<Index>())| {
        let _ = parse_line("in.jsonl", 1, &String::from_utf8_lossy(&bytes));
        // The reader over the bytes, then a valid line: it goes on.
        let mut file = bytes.clone();
        file.push(b'\n');
        file.extend_from_slice(next.get(&lines).as_bytes());
        std::fs::write(&path, &file).unwrap();
        for item in JsonlReader::open(&path).unwrap() {
            let _ = item;
        }
    });
}

#[test]
fn the_locomo_reader_never_panics() {
    use strataflow::pipeline::source::locomo;
    let seeds = vec![small_locomo().into_bytes()];
    proptest!(config(CASES[2]), |(bytes in input(seeds), tenant in value())| {
        let text = String::from_utf8_lossy(&bytes);
        let _ = locomo::parse("conv.json", "conv", &text, &tenant);
    });
}

#[test]
fn the_queries_line_parser_never_panics() {
    let seeds: Vec<Vec<u8>> = [
        r#"{"query":"Sintra trip","thread":"trip-planning","limit":5,"participants":["Ana","Rui"],"type":"plan","from":"2024-01-01","to":"2024-12-31T23:59:59Z","intent":"latest","budget":100}"#,
        r#"{"query":"when did Gina open her store?"}"#,
        r#"{"query":"","limit":1000,"budget":1000000,"participants":[]}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    proptest!(config(CASES[3]), |(bytes in input(seeds))| {
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines() {
            let _ = serde_json::from_str::<strataflow::SearchRequest>(line);
        }
    });
}

#[test]
fn the_question_loader_never_panics() {
    use strataflow::eval::questions::load_questions;
    let seeds: Vec<Vec<u8>> = vec![
        small_locomo().into_bytes(),
        br#"{"question":"Where did Ana go in May?","evidence":["D1:3","D2:1"],"thread":"trip-planning","category":2,"answer":"Sintra"}
{"question":"Who is Rui?","evidence":[],"category":1}"#
            .to_vec(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("questions");
    proptest!(config(CASES[4]), |(bytes in input(seeds))| {
        std::fs::write(&path, &bytes).unwrap();
        let _ = load_questions(&path);
    });
}

#[test]
fn the_chat_export_readers_never_panic() {
    use strataflow::pipeline::source::export::{ExportFormat, ExportSettings, read_bytes};
    let read = |rel: &str| std::fs::read(repo(&format!("tests/data/exports/{rel}"))).unwrap();
    let formats = [
        (ExportFormat::Chatgpt, read("chatgpt/conversations.json")),
        (ExportFormat::Claude, read("claude/conversations.json")),
        (ExportFormat::ChatJsonl, read("chat.jsonl")),
    ];
    let settings = ExportSettings {
        tenant: String::new(),
        start: Some(strataflow::log::SourceTime::utc_without_offset(0)),
        spool_dir: None,
    };
    for (format, seed) in formats {
        proptest!(config(500), |(bytes in input(vec![seed.clone()]))| {
            let _ = read_bytes("x.json", format, &settings, &bytes);
        });
    }
}
