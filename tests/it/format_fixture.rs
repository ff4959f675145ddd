//! Format stability: `tests/fixtures/data-v1/` is a data directory written
//! by this version (what it holds: `tests/fixtures/README.md`). Every later
//! version must open it, audit it clean and find the same record ids and
//! view digests — or refuse it with an error naming the version. The tests
//! open a COPY (opening writes: fjall replays and truncates its journal).
//!
//! Regenerate it (only when the format changes on purpose, with a new
//! fixture directory beside the old one) with
//! `cargo test --test format_fixture -- --ignored regenerate`; it prints
//! the constants to pin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{ok, repo_file, run};
use strataflow::log::{RecordKind, Store};
use strataflow::operators::profile::{LEGACY_EXTRACTOR, LEGACY_PROJECTOR, LEGACY_SUMMARIZER};

/// Pins the profile `default` of a new directory to the legacy operators
/// (the `@1`s) the fixture and the first pinned outputs were derived with;
/// a new directory otherwise records the newest ones
/// (`tests/it/default_profile.rs`).
const PIN_LEGACY: &[&str] = &[
    "profile",
    "create",
    "default",
    "--summarizer",
    LEGACY_SUMMARIZER,
    "--extractor",
    LEGACY_EXTRACTOR,
    "--projector",
    LEGACY_PROJECTOR,
];

/// The checked-in directory.
const FIXTURE: &str = "tests/fixtures/data-v1";

/// Records per kind in the fixture (kinds not listed: none).
const COUNTS: &[(&str, u64)] = &[
    ("assessment", 1),
    ("block", 4),
    ("block_summary", 4),
    ("derivation", 9),
    ("event", 48),
    ("governance", 1),
    ("graph_assertion", 17),
    ("import_source", 1),
    ("message", 91),
    ("retrieval", 1),
    ("use_receipt", 1),
];

/// blake3 of every record id (hex, one per line) in sequence order.
const ALL_IDS: &str = "aa1a3bd5323d3c25df67af3f8229627ba7db911bf39d69a67108768d673f8aa1";

/// (kind, id) of records pinned one by one: the first message, the first
/// event, the governance record, the import source, the use receipt.
const PINNED: &[(&str, &str)] = &[
    (
        "message",
        "6cc1b8eacd78152e6694849d9b4cc5079729d91d9be24bb3a52756a3b05decaf",
    ),
    (
        "event",
        "d5b225490cf699d4a481517e937aa55e6bf82250f0848d63bc975d3bd049b0e4",
    ),
    (
        "governance",
        "4d6efd1b41b98369ecc92e90fd89ea4e8c17f85b0fb3bb3e2501552240e370a4",
    ),
    (
        "import_source",
        "01fef3b0db77395b1624e6172cac7ad8578c88bccce6ec09b88451361874f683",
    ),
    (
        "use_receipt",
        "ad827e7f98ee40ec4e6a4f05c18b58d4d9f91f9196e8fa0d7afd95bbf441c4cf",
    ),
];

/// `views --json` of the fixture: (view, tenant, last seq, digest).
const VIEWS: &[(&str, &str, u64, &str)] = &[
    (
        "graph_membership",
        "",
        178,
        "5fd56c41d92cfc998858691ed1b9c281010a3173620fb5075fdfddb021712cc8",
    ),
    (
        "block_levels",
        "",
        178,
        "b1f074ab454de187be17656478f480ae67b1894d2146dd2fe96c071c430dbb26",
    ),
    (
        "event_status",
        "",
        178,
        "581c8f0982860299e5c93b66995da70878251769f434c0d42065da17caed191f",
    ),
    (
        "weights",
        "",
        178,
        "68057da96ad102e72f21cdc9c5fd8fb14a4c72cb93dba78018980a6bef95eb26",
    ),
    (
        "search",
        "",
        178,
        "00c7eb710d68132935c5b904c09950b703737ae6f80b7d9a5122227478c08579",
    ),
];

/// A copy of the fixture in a temporary directory: (guard, data dir).
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    common::copy_dir(&repo_file(FIXTURE), &data);
    (dir, data)
}

/// (kind name, id hex) of every record, in sequence order.
fn records(data: &Path) -> Vec<(&'static str, String)> {
    let store = Store::open(data).unwrap();
    store
        .scan(1)
        .map(|r| {
            let r = r.unwrap();
            (r.record.kind().name(), r.id.to_hex())
        })
        .collect()
}

/// What is pinned, computed from a data directory.
struct Observed {
    counts: BTreeMap<String, u64>,
    all_ids: String,
    pinned: Vec<(String, String)>,
    views: Vec<(String, String, u64, String)>,
}

fn observe(data: &Path) -> Observed {
    let records = records(data);
    let mut counts = BTreeMap::new();
    for (kind, _) in &records {
        *counts.entry((*kind).to_owned()).or_insert(0) += 1;
    }
    let mut hasher = blake3::Hasher::new();
    for (_, id) in &records {
        hasher.update(id.as_bytes());
        hasher.update(b"\n");
    }
    let first = |kind: RecordKind| {
        records
            .iter()
            .find(|(k, _)| *k == kind.name())
            .map(|(k, id)| ((*k).to_owned(), id.clone()))
            .unwrap_or_else(|| panic!("the fixture holds no {} record", kind.name()))
    };
    let pinned = [
        RecordKind::Message,
        RecordKind::Event,
        RecordKind::Governance,
        RecordKind::ImportSource,
        RecordKind::UseReceipt,
    ]
    .into_iter()
    .map(first)
    .collect();
    Observed {
        counts,
        all_ids: hasher.finalize().to_hex().to_string(),
        pinned,
        views: common::view_digests(data),
    }
}

#[test]
fn the_fixture_opens_audits_clean_and_keeps_its_ids_and_digests() {
    let (_guard, data) = fixture_copy();
    let audit = run(&data, &["audit", "--json"]);
    assert!(
        audit.status.success(),
        "audit of the fixture failed ({}):\n{}\n{}",
        audit.status,
        String::from_utf8_lossy(&audit.stdout),
        String::from_utf8_lossy(&audit.stderr)
    );
    let seen = observe(&data);
    let counts: BTreeMap<String, u64> = COUNTS.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect();
    assert_eq!(seen.counts, counts, "records per kind");
    let stats = common::stats(&data);
    for (kind, n) in COUNTS {
        assert_eq!(stats["records"][kind].as_u64(), Some(*n), "stats: {kind}");
    }
    let pinned: Vec<(String, String)> = PINNED
        .iter()
        .map(|(k, id)| ((*k).to_owned(), (*id).to_owned()))
        .collect();
    assert_eq!(seen.pinned, pinned, "pinned record ids");
    for (kind, id) in PINNED {
        let shown: serde_json::Value = serde_json::from_str(&ok(&data, &["show", id])).unwrap();
        assert!(shown.is_object(), "show {kind} {id}: {shown}");
    }
    assert_eq!(seen.all_ids, ALL_IDS, "the ids of the records, in order");
    let views: Vec<(String, String, u64, String)> = VIEWS
        .iter()
        .map(|(v, t, s, d)| ((*v).to_owned(), (*t).to_owned(), *s, (*d).to_owned()))
        .collect();
    assert_eq!(seen.views, views, "view digests");
    ok(&data, &["views", "--verify"]);
}

/// Writes the fixture again (run on purpose, never in CI):
/// `cargo test --test format_fixture -- --ignored regenerate`.
#[test]
#[ignore = "writes tests/fixtures/data-v1; run by hand when the format changes on purpose"]
fn regenerate() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The fixture holds the legacy operators' outputs (written before a
    // directory recorded its default profile, it stores none).
    ok(&data, &["init"]);
    ok(&data, PIN_LEGACY);
    let sample = repo_file("examples/data/sample.jsonl");
    ok(&data, &["ingest", sample.to_str().unwrap(), "--quiet"]);
    let memory = repo_file("tests/fixtures/external-memory/new-memory.json");
    ok(&data, &["import", "memory", memory.to_str().unwrap()]);
    // What is written so far lives in table files, the rest only in the
    // journal: the fixture pins both of fjall's on-disk formats.
    Store::open(&data).unwrap().flush_for_test().unwrap();
    let events: serde_json::Value =
        serde_json::from_str(&ok(&data, &["events", "--json"])).unwrap();
    let event = events[0]["id"].as_str().unwrap().to_owned();
    ok(&data, &["pin", &event, "--reason", "fixture pin"]);
    let found: serde_json::Value = serde_json::from_str(&ok(
        &data,
        &["search", "all", "Sintra trip", "--budget", "100", "--json"],
    ))
    .unwrap();
    let batch = found["batch"].as_str().unwrap().to_owned();
    let top = found["hits"][0]["ref"].as_str().unwrap().to_owned();
    ok(
        &data,
        &[
            "assess",
            "--batch",
            &batch,
            "--verdict",
            "sufficient",
            "--evidence",
            &top,
            "--fit",
            "names the day of the trip",
            "--missing",
            "",
            "--next",
            "answer",
        ],
    );
    ok(&data, &["use", "--batch", &batch, &top]);
    ok(&data, &["views"]);
    // Open and close once more: fjall truncates the preallocated journal
    // to its valid length on open.
    ok(&data, &["audit"]);
    ok(&data, &["stats"]);
    let target = repo_file(FIXTURE);
    if target.exists() {
        std::fs::remove_dir_all(&target).unwrap();
    }
    common::copy_dir(&data, &target);
    let seen = observe(&data);
    println!("const COUNTS: &[(&str, u64)] = &{:?};", seen.counts);
    println!("const ALL_IDS: &str = {:?};", seen.all_ids);
    println!("const PINNED: &[(&str, &str)] = &{:?};", seen.pinned);
    println!(
        "const VIEWS: &[(&str, &str, u64, &str)] = &{:?};",
        seen.views
    );
}

/// The fixture copy with the schema version of the record at `seq`
/// changed to `version` (its id index entry is left as it was).
fn with_record_version(seq: u64, version: u16) -> (tempfile::TempDir, PathBuf) {
    let (guard, data) = fixture_copy();
    let store = Store::open(&data).unwrap();
    let mut bytes = store.raw_value(seq).unwrap().unwrap();
    bytes[3..5].copy_from_slice(&version.to_be_bytes());
    store.overwrite_value_for_test(seq, &bytes).unwrap();
    drop(store);
    (guard, data)
}

/// The one-line error of a failed command, after checking it failed with
/// `status` and did not panic.
fn failure(data: &Path, args: &[&str], status: i32) -> String {
    let out = run(data, args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        out.status.code(),
        Some(status),
        "strataflow {args:?}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn an_unknown_manifest_layout_is_refused_naming_the_version() {
    let (_guard, data) = fixture_copy();
    let manifest = data.join("strataflow.manifest");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(json["format"], 1, "the fixture's manifest layout");
    json["format"] = 99.into();
    std::fs::write(&manifest, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    let before = common::files_of(&data);
    for args in [&["stats"][..], &["audit"], &["audit", "--deep"]] {
        let err = failure(&data, args, 1);
        assert!(
            err.contains("written by a different strataflow version")
                && err.contains("strataflow.manifest has layout version 99")
                && err.contains("this build reads layout version 1"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("damaged"), "not damage: {err}");
    }
    assert_eq!(common::files_of(&data), before, "nothing in it was changed");
}

#[test]
fn an_unknown_record_schema_version_is_refused_naming_the_version() {
    let (_guard, data) = with_record_version(1, 2);
    let (kind, first_message) = PINNED[0];
    assert_eq!(kind, "message");
    for args in [
        &["show", first_message][..],
        &["blocks", "--thread", "trip-planning"],
        &["views", "--verify"],
    ] {
        let err = failure(&data, args, 1);
        assert!(
            err.contains("record at sequence 1 cannot be read")
                && err.contains("message record has schema version 2")
                && err.contains("this build reads version 1"),
            "{args:?}: {err}"
        );
    }
    // The audit flags the record (its bytes no longer hash to its id).
    let audit = run(&data, &["audit", "--json"]);
    assert_eq!(audit.status.code(), Some(4));
    let report = String::from_utf8(audit.stdout).unwrap();
    assert!(report.contains(first_message), "{report}");
}

/// What a store built from `args` holds: the blake3 of its record ids in
/// sequence order, its record count and every view digest (view, tenant,
/// digest), for pinning outputs across refactors.
fn built(args: &[&[&str]]) -> (String, usize, Vec<(String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for a in args {
        let mut a: Vec<String> = a.iter().map(|s| (*s).to_owned()).collect();
        for s in &mut a {
            if let Some(rel) = s.strip_prefix("@") {
                *s = common::repo_file(rel).to_string_lossy().into_owned();
            } else if let Some(name) = s.strip_prefix("%") {
                *s = dir.path().join(name).to_string_lossy().into_owned();
            }
        }
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        ok(&data, &a);
    }
    let ids = common::ordered_record_ids(&data);
    let mut hasher = blake3::Hasher::new();
    for id in &ids {
        hasher.update(id.as_bytes());
        hasher.update(b"\n");
    }
    let digests = common::view_digests(&data)
        .into_iter()
        .map(|(view, tenant, _, digest)| (view, tenant, digest))
        .collect();
    (hasher.finalize().to_hex().to_string(), ids.len(), digests)
}

/// The commands that import the two LoCoMo conversations.
const LOCOMO: &[&[&str]] = &[
    &[
        "import",
        "locomo",
        "@tests/data/locomo/conv-26.json",
        "--quiet",
    ],
    &[
        "import",
        "locomo",
        "@tests/data/locomo/conv-30.json",
        "--quiet",
    ],
];

/// The commands that write and ingest a generated archive.
const GENERATED: &[&[&str]] = &[
    &[
        "gen",
        "--messages",
        "20000",
        "--seed",
        "7",
        "-o",
        "%gen.jsonl",
    ],
    &["ingest", "%gen.jsonl", "--quiet"],
];

/// `commands` after `init` and [`PIN_LEGACY`].
fn legacy(commands: &[&'static [&'static str]]) -> Vec<&'static [&'static str]> {
    let mut all: Vec<&[&str]> = vec![&["init"], PIN_LEGACY];
    all.extend_from_slice(commands);
    all
}

/// Record ids, counts and view digests of the two LoCoMo conversations and
/// of a generated archive under the legacy operators (pinned explicitly:
/// these are the outputs every directory written before the default profile
/// was recorded holds), pinned: a change of crates, modules or text
/// analysis must leave every one of them as it is.
#[test]
fn outputs_on_locomo_and_a_generated_archive_are_pinned() {
    let locomo = built(&legacy(LOCOMO));
    let generated = built(&legacy(GENERATED));
    println!("locomo: {locomo:?}\ngenerated: {generated:?}");
    // Per-kind counts are covered by the id hash (it changes with any record).
    assert_eq!(locomo.0, PINNED_LOCOMO.0);
    assert_eq!(locomo.1, PINNED_LOCOMO.1);
    assert_eq!(generated.0, PINNED_GENERATED.0);
    assert_eq!(generated.1, PINNED_GENERATED.1);
    let pins = |p: &[(&str, &str)]| -> Vec<(String, String)> {
        p.iter()
            .map(|(v, d)| ((*v).to_owned(), (*d).to_owned()))
            .collect()
    };
    let got = |d: &[(String, String, String)]| -> Vec<(String, String)> {
        d.iter().map(|(v, _, g)| (v.clone(), g.clone())).collect()
    };
    assert_eq!(got(&locomo.2), pins(PINNED_LOCOMO.2));
    assert_eq!(got(&generated.2), pins(PINNED_GENERATED.2));
}

const PINNED_LOCOMO: (&str, usize, &[(&str, &str)]) = (
    "1b225cbd5ca81541bfd21f212269cc34107f36215948764687ff1c0aa4ddc61d",
    1405,
    &[
        (
            "graph_membership",
            "f1029404e03c7f9a28d0d0088fe921c96c59a110006da1012f3c85946f1246c3",
        ),
        (
            "block_levels",
            "090c000e3fd6300ab725b8ca457eb504d16b6fba66ba07f94305227c43db717a",
        ),
        (
            "event_status",
            "9afbb4f90d1ee42b750ffdb3a37836cfafb0c50e7d5966d94ad7b46da315b535",
        ),
        (
            "weights",
            "86d387b974172d4a0aebb917204cfa8879a8c4b774b5175b9a2d81b8f5dec0db",
        ),
        (
            "search",
            "e9a544d01f02b6797b030bf8326f0f6ef0b2301e42ac72bfca8c6597be002b48",
        ),
    ],
);
const PINNED_GENERATED: (&str, usize, &[(&str, &str)]) = (
    "6587229b58d4f024ea372edc42c9624a0e3a3f06df78fd0e86d7021968b677ab",
    36554,
    &[
        (
            "graph_membership",
            "5b6e6f09c070503de39889ecc972de3ae3e6c6ce9929444253fa8afe6a467c6f",
        ),
        (
            "block_levels",
            "7b9b437ec19ebfcfc392715663f0a7baac397469e00ebbde184cc16299296308",
        ),
        (
            "event_status",
            "4cd0d588ea4328c9e80d826681444d99ec4146342449c01af631fc9a43bcad55",
        ),
        (
            "weights",
            "f0dcb933c356d9dd31d0a355a16d3209d5ff5eab1faa4a88ae962e770a3c2387",
        ),
        (
            "search",
            "396d74b21401453683afe040b0fac2dac91c441841543c3975aff1b94027ec4f",
        ),
    ],
);

/// Pinned outputs: (blake3 of the record ids in order, records, (view,
/// digest) per view).
type Pinned = (&'static str, usize, &'static [(&'static str, &'static str)]);

/// What [`built`] returns.
type Built = (String, usize, Vec<(String, String, String)>);

/// The (view, digest) pairs of what [`built`] returned.
fn built_views(built: &Built) -> Vec<(String, String)> {
    built
        .2
        .iter()
        .map(|(v, _, d)| (v.clone(), d.clone()))
        .collect()
}

/// Asserts what [`built`] returned equals `pinned`.
fn check_pinned(name: &str, built: &Built, pinned: Pinned) {
    let views = built_views(built);
    assert_eq!(built.0, pinned.0, "{name}: record ids");
    assert_eq!(built.1, pinned.1, "{name}: records");
    let want: Vec<(String, String)> = pinned
        .2
        .iter()
        .map(|(v, d)| ((*v).to_owned(), (*d).to_owned()))
        .collect();
    assert_eq!(views, want, "{name}: view digests");
}

/// Record ids, counts and view digests of the sample, the two LoCoMo
/// conversations and a generated archive in new directories, under the
/// profile `default` a new directory records (the newest embedded
/// operators, `Profile::default_profile`). They change only when that
/// profile does, on purpose: then run
/// `cargo test --test it format_fixture::outputs_under -- --nocapture`
/// and paste the printed constants.
#[test]
fn outputs_under_the_default_profile_of_a_new_directory_are_pinned() {
    let sample = built(&[&["ingest", "@examples/data/sample.jsonl", "--quiet"]]);
    let locomo = built(LOCOMO);
    let generated = built(GENERATED);
    // In the form of the constants, to paste when they change on purpose.
    for (name, b) in [
        ("DEFAULT_SAMPLE", &sample),
        ("DEFAULT_LOCOMO", &locomo),
        ("DEFAULT_GENERATED", &generated),
    ] {
        println!(
            "const {name}: Pinned = ({:?}, {}, &{:?});",
            b.0,
            b.1,
            built_views(b)
        );
    }
    check_pinned("DEFAULT_SAMPLE", &sample, DEFAULT_SAMPLE);
    check_pinned("DEFAULT_LOCOMO", &locomo, DEFAULT_LOCOMO);
    check_pinned("DEFAULT_GENERATED", &generated, DEFAULT_GENERATED);
}

const DEFAULT_SAMPLE: Pinned = (
    "5f3b55e1fbd13f4057161c130e360244aa226e8e79953f400ceff4c58700fca0",
    192,
    &[
        (
            "graph_membership",
            "8fae7ae8261b579ee92ed1e44b805feb8371d45e163a72d5b89ec3ce0cf8e845",
        ),
        (
            "block_levels",
            "b1f074ab454de187be17656478f480ae67b1894d2146dd2fe96c071c430dbb26",
        ),
        (
            "event_status",
            "8d6c7173645ac559a1244c24765fdd0e348a21887031d6163b5acd3ae208bd5a",
        ),
        (
            "weights",
            "93a2157964014d638fc94e6c3a0ec9964104976069134bd4ab0550b149971e6b",
        ),
        (
            "search",
            "3a8d4d2f086f976f78e69c337859765003fce3d76b3b022982aaa0d670215fce",
        ),
    ],
);
const DEFAULT_LOCOMO: Pinned = (
    "84929bb432949fc5a17ab1e63a6a1d6f755ccc07be769cbab499b06f237aaf58",
    1578,
    &[
        (
            "graph_membership",
            "ee9a4c0b3936a37b701c5715e1cf411195c881bcb08060b52a6936ffc936bbb4",
        ),
        (
            "block_levels",
            "090c000e3fd6300ab725b8ca457eb504d16b6fba66ba07f94305227c43db717a",
        ),
        (
            "event_status",
            "a13fa50cc0cdd3c818ed891fc852064cb1795037869a06bea1b503a43cf03249",
        ),
        (
            "weights",
            "0d965d89aec88992106ab5a1b424f5847e4d57e03a2e9a70949f3d3b966f0bc5",
        ),
        (
            "search",
            "1a2e4825351eecad14f002184a176287be03aa9d5ee14710502a853bd5a7df94",
        ),
    ],
);
const DEFAULT_GENERATED: Pinned = (
    "f9047388675a77bc06260f3e983b82b755ccd341942afa6e8e8c2826ff01866f",
    38552,
    &[
        (
            "graph_membership",
            "6307bdcade07c1c1770debcb7a24f10ddd3011f69c42f2f4b39072b9339cb7ca",
        ),
        (
            "block_levels",
            "7b9b437ec19ebfcfc392715663f0a7baac397469e00ebbde184cc16299296308",
        ),
        (
            "event_status",
            "624569c8840a5f013ca246c52563d2ca92f6ad3ec1f1ec8a65b48846cb4e010a",
        ),
        (
            "weights",
            "61fd4a530d905f665a3721bf0e102308164bd4c6dffebd5a0e3b74e00c75c8fa",
        ),
        (
            "search",
            "ba3ca504ef5e1c7d90fc1e7bc25757381c61f65e4896a1b4ad5f0aa22d5eb14a",
        ),
    ],
);
