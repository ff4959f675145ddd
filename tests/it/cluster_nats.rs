//! Scale-out on NATS JetStream (issue 20): `ingest --nats` publishes raw
//! messages to the shared stream, `node` materialises the partitions it
//! owns into its own data directory; model calls are shared through the
//! calls stream. Real `nats-server` processes (`support::nats`) and a
//! scripted model server (`support::model_server`), loopback only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use strataflow::log::record::RecordKind;

use super::common::ok;
use super::support::llm_profile::create_llm_profile_with_cli;
use super::support::mirror_model;
use super::support::model_server::{ModelServer, Reply};
use super::support::nats;

/// Every record id of a data directory.
fn record_ids(data: &Path) -> BTreeSet<String> {
    let memory = strataflow::Memory::open_existing(data).unwrap();
    let mut ids = BTreeSet::new();
    for kind in RecordKind::ALL {
        for item in memory.store().ids_of_kind(kind) {
            ids.insert(item.unwrap().1.to_string());
        }
    }
    ids
}

/// `views --json` as (tenant, view) → digest (the sequences differ
/// between stores; the digests must not).
fn view_digests(data: &Path) -> BTreeMap<(String, String), String> {
    let json: serde_json::Value = serde_json::from_str(&ok(data, &["views", "--json"])).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                (
                    r["tenant"].as_str().unwrap().to_owned(),
                    r["view"].as_str().unwrap().to_owned(),
                ),
                r["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

pub(super) fn generate(dir: &Path, messages: u32, tenants: u32) -> std::path::PathBuf {
    generate_threads(dir, messages, 60, tenants)
}

fn generate_threads(dir: &Path, messages: u32, threads: u32, tenants: u32) -> std::path::PathBuf {
    let archive = dir.join("archive.jsonl");
    ok(
        dir,
        &[
            "gen",
            "--messages",
            &messages.to_string(),
            "--threads",
            &threads.to_string(),
            "--tenants",
            &tenants.to_string(),
            "--seed",
            "20",
            "-o",
            archive.to_str().unwrap(),
        ],
    );
    archive
}

/// A single-node `ingest` of `archive` into `dir/single`, the anchor every
/// cluster run is compared with.
fn single_ingest(dir: &Path, archive: &Path) -> std::path::PathBuf {
    let single = dir.join("single");
    ok(&single, &["ingest", "-q", archive.to_str().unwrap()]);
    single
}

/// The words of a line that follow `label` (`12 new` → 12).
fn count_before(line: &str, label: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .windows(2)
        .position(|w| w[1].trim_end_matches(',') == label)
        .unwrap_or_else(|| panic!("no `{label}` in {line}"));
    words[at].parse().unwrap()
}

#[test]
fn publishing_the_same_file_twice_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let archive = generate(dir.path(), 300, 5);
    let file = archive.to_str().unwrap();
    let first = ok(dir.path(), &["ingest", "--nats", &server.url(), "-q", file]);
    assert!(first.contains("1 replicas"), "{first}");
    assert_eq!(count_before(&first, "new"), 300, "{first}");
    // Again at once: inside the de-duplication window, and the publisher
    // reads the threads back, so nothing is even sent.
    let second = ok(dir.path(), &["ingest", "--nats", &server.url(), "-q", file]);
    assert_eq!(count_before(&second, "new"), 0, "{second}");
    assert_eq!(count_before(&second, "already"), 300, "{second}");
}

/// Runs one `node --drain` per partition list at once; returns their stdout.
fn run_nodes(url: &str, nodes: &[(&Path, &str)]) -> Vec<String> {
    let handles: Vec<_> = nodes
        .iter()
        .map(|(data, partitions)| {
            let (data, partitions, url) =
                (data.to_path_buf(), (*partitions).to_owned(), url.to_owned());
            std::thread::spawn(move || {
                ok(
                    &data,
                    &[
                        "node",
                        "--nats",
                        &url,
                        "--partitions",
                        &partitions,
                        "--drain",
                        "-q",
                    ],
                )
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// The union of the nodes' records is the single-node ingest's, and so are
/// the per-tenant view digests; returns the tenants compared.
pub(super) fn assert_union_equals_single(single: &Path, nodes: &[&Path]) -> BTreeSet<String> {
    let mut union = BTreeSet::new();
    let mut digests = BTreeMap::new();
    for node in nodes {
        let ids = record_ids(node);
        assert!(!ids.is_empty(), "node {} got nothing", node.display());
        union.extend(ids);
        for (key, digest) in view_digests(node) {
            if let Some(other) = digests.insert(key.clone(), digest.clone()) {
                assert_eq!(other, digest, "{key:?} on two nodes with different digests");
            }
        }
    }
    assert_eq!(
        union,
        record_ids(single),
        "the nodes' records differ from a single-node ingest"
    );
    assert_eq!(
        digests,
        view_digests(single),
        "per-tenant view digests differ"
    );
    digests.into_keys().map(|(tenant, _)| tenant).collect()
}

#[test]
fn a_conflict_with_the_stream_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let first = dir.path().join("first.jsonl");
    let line = |content: &str| {
        format!(
            "{{\"tenant\":\"acme.eu\",\"thread\":\"t 1\",\"id\":\"m1\",\"role\":\"user\",\"content\":\"{content}\",\"ts\":\"2024-01-01T00:00:00Z\"}}\n"
        )
    };
    std::fs::write(&first, line("hello")).unwrap();
    ok(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &server.url(),
            "-q",
            first.to_str().unwrap(),
        ],
    );
    let second = dir.path().join("second.jsonl");
    std::fs::write(&second, line("changed")).unwrap();
    let out = super::common::run(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &server.url(),
            "-q",
            second.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("second.jsonl:1") && stderr.contains("already in the stream"),
        "{stderr}"
    );
}

/// The issue's scale: 100,000 messages in 3,000 threads over 300 tenants,
/// published to a 3-server cluster with R3 streams, drained by 3 nodes at
/// once; their union equals a single-node ingest (every record id, and
/// 300 tenants × their views' digests).
#[test]
fn three_nodes_on_a_three_server_cluster_with_r3_equal_a_single_node_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = nats::cluster(dir.path());
    let archive = generate_threads(dir.path(), 100_000, 3000, 300);
    let file = archive.to_str().unwrap();
    let single = single_ingest(dir.path(), &archive);
    let published = ok(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &cluster.urls(),
            "--stream-partitions",
            "6",
            "-q",
            file,
        ],
    );
    assert!(published.contains("3 replicas"), "{published}");
    assert_eq!(count_before(&published, "new"), 100_000, "{published}");
    let nodes: Vec<std::path::PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("node-{i}")))
        .collect();
    // Each node talks to another server of the cluster.
    let urls: Vec<String> = cluster.servers.iter().map(nats::NatsServer::url).collect();
    let handles: Vec<_> = nodes
        .iter()
        .zip(["0,3", "1,4", "2,5"])
        .zip(urls)
        .map(|((data, partitions), url)| {
            let data = data.clone();
            std::thread::spawn(move || {
                ok(
                    &data,
                    &[
                        "node",
                        "--nats",
                        &url,
                        "--partitions",
                        partitions,
                        // More than the server's default of unacknowledged
                        // messages per consumer (1,000).
                        "--batch",
                        "2000",
                        "--drain",
                        "-q",
                    ],
                )
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let refs: Vec<&Path> = nodes.iter().map(std::path::PathBuf::as_path).collect();
    let tenants = assert_union_equals_single(&single, &refs);
    assert_eq!(tenants.len(), 300, "{tenants:?}");
}

#[test]
fn two_nodes_on_disjoint_partitions_equal_a_single_node_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let archive = generate(dir.path(), 2000, 30);
    let file = archive.to_str().unwrap();
    let single = single_ingest(dir.path(), &archive);

    ok(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &server.url(),
            "--stream-partitions",
            "4",
            "-q",
            file,
        ],
    );
    let a = dir.path().join("node-a");
    let b = dir.path().join("node-b");
    let url = server.url();
    let outs = run_nodes(&url, &[(&a, "0,2"), (&b, "1,3")]);
    assert!(outs.iter().all(|o| o.contains("stored")), "{outs:?}");
    assert_union_equals_single(&single, &[&a, &b]);

    // A node run again finds nothing new: acknowledged means consumed.
    let again = ok(
        &a,
        &[
            "node",
            "--nats",
            &url,
            "--partitions",
            "0,2",
            "--drain",
            "-q",
        ],
    );
    assert!(again.contains(" 0 messages delivered"), "{again}");

    // A node whose data directory is deleted rebuilds it from the stream
    // alone, with the same records and digests.
    std::fs::remove_dir_all(&a).unwrap();
    let node_a = [
        "node",
        "--nats",
        &url,
        "--partitions",
        "0,2",
        "--drain",
        "-q",
    ];
    let rebuilt = ok(&a, &node_a);
    assert!(!rebuilt.contains(" 0 messages delivered"), "{rebuilt}");
    assert_union_equals_single(&single, &[&a, &b]);
}

#[test]
fn a_program_publishing_through_the_stream_publisher_equals_a_single_node_ingest() {
    use strataflow_cluster::publish::PublishOptions;
    use strataflow_cluster::publisher::{StreamPublishError, StreamPublisher};

    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let archive = generate(dir.path(), 300, 5);
    let single = single_ingest(dir.path(), &archive);
    let publisher = StreamPublisher::connect(
        &server.url(),
        PublishOptions {
            prefix: "strataflow".into(),
            partitions: 2,
            replicas: None,
            publish_timeout: std::time::Duration::from_secs(30),
        },
    )
    .unwrap();
    assert_eq!(publisher.partitions(), 2);
    let text = std::fs::read_to_string(&archive).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // One message at a time, as an agent would, then the rest as batches.
    let (one_by_one, batched) = lines.split_at(40);
    for line in one_by_one {
        let published = publisher.append_json(line).unwrap();
        assert!(published.new, "{line}");
    }
    for chunk in batched.chunks(50) {
        let inputs = chunk
            .iter()
            .enumerate()
            .map(|(i, l)| {
                strataflow::pipeline::source::jsonl::parse_line("batch", i + 1, l).unwrap()
            })
            .collect();
        let published = publisher.append_batch(inputs).unwrap();
        assert!(published.iter().all(|p| p.new));
    }
    // Again: nothing new.
    assert!(!publisher.append_json(lines[0]).unwrap().new);

    // A message conflicting with the stream refuses its whole batch,
    // naming its index; a bad one names its field.
    let mut changed: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
    changed["content"] = "other words".into();
    let fresh = r#"{"thread": "new-thread", "id": "n1", "role": "user", "content": "not stored", "ts": "2024-01-01T00:00:00Z"}"#;
    let inputs = [fresh, &changed.to_string()]
        .iter()
        .enumerate()
        .map(|(i, l)| strataflow::pipeline::source::jsonl::parse_line("batch", i + 1, l).unwrap())
        .collect();
    match publisher.append_batch(inputs) {
        Err(StreamPublishError::Conflict { index, .. }) => assert_eq!(index, 1),
        other => panic!("expected a conflict: {other:?}"),
    }
    match publisher.append_json(r#"{"thread": "t", "id": "x", "role": "robot", "content": "c", "ts": "2024-01-01T00:00:00Z"}"#) {
        Err(StreamPublishError::Invalid(e)) => assert_eq!(e.field.as_deref(), Some("role")),
        other => panic!("expected an invalid message: {other:?}"),
    }
    drop(publisher);

    let node = dir.path().join("node");
    run_nodes(&server.url(), &[(&node, "0,1")]);
    assert_union_equals_single(&single, &[&node]);
}

#[test]
fn a_node_added_later_takes_a_partition_over_and_rebuilds_its_tenants_from_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let archive = generate(dir.path(), 1200, 16);
    let single = single_ingest(dir.path(), &archive);
    // The archive in two halves (by line, so every thread keeps its
    // order): the second is published after the node is added.
    let text = std::fs::read_to_string(&archive).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (head, tail) = lines.split_at(lines.len() / 2);
    let halves: Vec<std::path::PathBuf> = [head, tail]
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let path = dir.path().join(format!("half-{i}.jsonl"));
            std::fs::write(&path, part.join("\n") + "\n").unwrap();
            path
        })
        .collect();
    let url = server.url();
    let publish = |file: &Path| {
        ok(
            dir.path(),
            &[
                "ingest",
                "--nats",
                &url,
                "--stream-partitions",
                "4",
                "-q",
                file.to_str().unwrap(),
            ],
        )
    };
    publish(&halves[0]);
    let (a, b, c) = (
        dir.path().join("node-a"),
        dir.path().join("node-b"),
        dir.path().join("node-c"),
    );
    run_nodes(&url, &[(&a, "0,1"), (&b, "2,3")]);

    // Node c is added: a stops, and comes back owning partition 0 only; c
    // owns partition 1 and, its directory being new, rebuilds partition
    // 1's tenants from the stream's first message.
    publish(&halves[1]);
    run_nodes(&url, &[(&a, "0"), (&b, "2,3"), (&c, "1")]);

    // Each tenant is complete on its owner: its records and digests are
    // a single-node ingest's. (Node a still holds partition 1's tenants as
    // they were when it gave the partition up; nothing routes to them.)
    let owners = [(&a, vec![0]), (&b, vec![2, 3]), (&c, vec![1])];
    let expected = view_digests(&single);
    let mut union = BTreeSet::new();
    let mut compared = BTreeSet::new();
    for (node, partitions) in owners {
        union.extend(record_ids(node));
        for ((tenant, view), digest) in view_digests(node) {
            if partitions.contains(&strataflow_cluster::partition_of(&tenant, 4)) {
                assert_eq!(
                    Some(&digest),
                    expected.get(&(tenant.clone(), view.clone())),
                    "{tenant} {view} on {}",
                    node.display()
                );
                compared.insert(tenant);
            }
        }
    }
    assert_eq!(union, record_ids(&single));
    let all: BTreeSet<String> = expected.into_keys().map(|(t, _)| t).collect();
    assert_eq!(compared, all, "a tenant is on no owner");
}

#[test]
fn a_node_killed_mid_consumption_restarts_with_nothing_lost_or_duplicated() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let archive = generate(dir.path(), 2000, 30);
    let file = archive.to_str().unwrap();
    let single = single_ingest(dir.path(), &archive);
    ok(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &server.url(),
            "--stream-partitions",
            "2",
            "-q",
            file,
        ],
    );
    let data = dir.path().join("node");
    // Small batches, so the kill lands between a durable batch and its
    // acknowledgement or inside one, not after the end.
    let mut node = super::common::bin()
        .arg("--data")
        .arg(&data)
        .args([
            "node",
            "--nats",
            &server.url(),
            "--partitions",
            "0,1",
            "--batch",
            "20",
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    node.kill().unwrap(); // SIGKILL
    node.wait().unwrap();
    let again = ok(
        &data,
        &[
            "node",
            "--nats",
            &server.url(),
            "--partitions",
            "0,1",
            "--drain",
            "-q",
        ],
    );
    assert!(again.contains("stored"), "{again}");
    assert_union_equals_single(&single, &[&data]);
}

/// SIGKILL of a NATS server (the stream's leader) while `ingest --nats`
/// publishes: the publisher sends failed publishes again (same message id)
/// and keeps one unacknowledged publish per thread, so it exits 0 with
/// every message stored once and each thread in input order; the nodes'
/// union then equals a single-node ingest.
#[test]
fn a_nats_server_killed_mid_ingest_loses_nothing_and_keeps_thread_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = nats::cluster(dir.path());
    let total = 5000;
    let archive = generate(dir.path(), total, 30);
    let file = archive.to_str().unwrap();
    let single = single_ingest(dir.path(), &archive);
    let ingest = super::common::bin()
        .arg("--data")
        .arg(dir.path().join("publisher"))
        .args([
            "ingest",
            "--nats",
            &cluster.urls(),
            "--stream-partitions",
            "6",
            "--publish-timeout",
            "120",
            "-q",
            file,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ingest = ingest;
    // Kill once a fifth of the file is stored, so the kill lands mid-ingest.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let leader = loop {
        let (stored, leader) = cluster.servers[0].stream_state("strataflow_l5");
        if stored >= u64::from(total / 5) {
            break leader;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the ingest stored only {stored} messages"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let victim = cluster
        .servers
        .iter()
        .position(|s| Some(&s.name) == leader.as_ref())
        .unwrap_or(1);
    assert!(
        ingest.try_wait().unwrap().is_none(),
        "the ingest ended before the kill"
    );
    cluster.servers[victim].kill(); // SIGKILL
    let out = ingest.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ingest --nats failed after the kill of {leader:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(count_before(&stdout, "new"), u64::from(total), "{stdout}");
    let urls: Vec<String> = cluster
        .servers
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != victim)
        .map(|(_, s)| s.url())
        .collect();
    let url = urls.join(",");
    let nodes: Vec<std::path::PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("node-{i}")))
        .collect();
    run_nodes(
        &url,
        &[(&nodes[0], "0,3"), (&nodes[1], "1,4"), (&nodes[2], "2,5")],
    );
    let refs: Vec<&Path> = nodes.iter().map(std::path::PathBuf::as_path).collect();
    assert_union_equals_single(&single, &refs);
}

/// The stream's leader killed while three nodes consume: each node's
/// requests (fetch, ack, consumer info) fail for a while and are tried
/// again; a fetch that failed reopens its consumer after its ack floor, so
/// nothing is skipped and no thread is reordered.
#[test]
fn a_nats_server_killed_while_nodes_consume_loses_nothing_and_keeps_thread_order() {
    use std::io::BufRead;

    let dir = tempfile::tempdir().unwrap();
    let mut cluster = nats::cluster(dir.path());
    let total = 6000;
    let archive = generate(dir.path(), total, 30);
    let file = archive.to_str().unwrap();
    let single = single_ingest(dir.path(), &archive);
    ok(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &cluster.urls(),
            "--stream-partitions",
            "3",
            "-q",
            file,
        ],
    );
    let (_, leader) = cluster.servers[0].stream_state("strataflow_l5");
    let victim = cluster
        .servers
        .iter()
        .position(|s| Some(&s.name) == leader.as_ref())
        .unwrap_or(1);
    let nodes: Vec<std::path::PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("node-{i}")))
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let mut children = Vec::new();
    for (i, data) in nodes.iter().enumerate() {
        let mut child = super::common::bin()
            .arg("--data")
            .arg(data)
            .args([
                "node",
                "--nats",
                &cluster.urls(),
                "--partitions",
                &i.to_string(),
                "--batch",
                "50",
                "--drain",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send((i, line));
            }
        });
        children.push(child);
    }
    drop(tx);
    // Kill once the nodes have stored a fifth of the messages.
    let mut delivered = [0u64; 3];
    let mut log = Vec::new();
    while delivered.iter().sum::<u64>() < u64::from(total / 5) {
        let (i, line) = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .unwrap_or_else(|e| panic!("no progress from the nodes ({e}): {log:?}"));
        if let Some(n) = line
            .strip_prefix("node: ")
            .and_then(|rest| rest.split_whitespace().next())
        {
            delivered[i] = n.parse().unwrap();
        }
        log.push(line);
    }
    cluster.servers[victim].kill(); // SIGKILL
    // Every wait of a node is bounded: a node that neither finishes nor
    // fails within this is stuck.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    for (i, mut child) in children.into_iter().enumerate() {
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let rest: Vec<String> = rx.try_iter().map(|(_, l)| l).collect();
                panic!("node {i} still running 240 s after the kill of {leader:?}: {rest:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let rest: Vec<String> = rx.try_iter().map(|(_, l)| l).collect();
        assert!(
            status.success(),
            "node {i} failed after the kill of {leader:?}: {rest:?}"
        );
    }
    let refs: Vec<&Path> = nodes.iter().map(std::path::PathBuf::as_path).collect();
    assert_union_equals_single(&single, &refs);
}

/// A server paused (SIGSTOP) mid-ingest: it keeps the connection open and
/// answers nothing, so every send, ack and read of the publisher waits on
/// it. Each wait is bounded and retried until `--publish-timeout`; then the
/// ingest exits 1 naming the message (file:line) and its thread, instead
/// of waiting for ever.
#[test]
fn a_paused_nats_server_makes_the_ingest_exit_1_naming_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let total = 20_000;
    let archive = generate(dir.path(), total, 30);
    let mut ingest = super::common::bin()
        .arg("--data")
        .arg(dir.path().join("publisher"))
        .args([
            "ingest",
            "--nats",
            &server.url(),
            "--publish-timeout",
            "3",
            "-q",
            archive.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let (stored, _) = server.stream_state("strataflow_l5");
        if stored >= u64::from(total / 10) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the ingest stored only {stored} messages"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        ingest.try_wait().unwrap().is_none(),
        "the ingest ended before the pause"
    );
    server.signal("STOP");
    // 3 s of retries, each attempt bounded by at most as much, plus
    // backoff: well within a minute.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = ingest.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = ingest.kill();
            server.signal("CONT");
            panic!("the ingest still waits 60 s after the server was paused");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    server.signal("CONT");
    let out = ingest.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("archive.jsonl:"), "{stderr}");
    assert!(stderr.contains("of thread `"), "{stderr}");
    assert!(stderr.contains("retried for"), "{stderr}");
}

/// Makes the `llm` profile (the three `llm-*` operators against the
/// scripted model at `base_url`) the default of a data directory, with the
/// CLI, as for a single-node ingest.
fn use_llm_profile(data: &Path, base_url: &str) {
    ok(data, &["init"]);
    create_llm_profile_with_cli(data, base_url);
    ok(data, &["profile", "set-default", "llm"]);
}

/// Model calls shared through the calls stream: three nodes deriving with a
/// model-backed profile equal a single-node ingest with it (records, model
/// calls included, and view digests); a node whose data directory is
/// deleted rebuilds from the two streams alone with zero model requests
/// (the scripted server counts them) and the same digests.
#[test]
fn a_deleted_node_rebuilds_with_zero_model_requests_from_the_calls_stream() {
    let model = ModelServer::start(|body| Reply::Tool(mirror_model::answer(body)));
    let dir = tempfile::tempdir().unwrap();
    let cluster = nats::cluster(dir.path());
    let archive = generate(dir.path(), 1200, 12);
    let file = archive.to_str().unwrap();
    let single = dir.path().join("single");
    use_llm_profile(&single, &model.base_url());
    ok(&single, &["ingest", "-q", file]);
    let single_requests = model.requests();
    assert!(single_requests > 0, "the single-node ingest asked nothing");
    ok(
        dir.path(),
        &[
            "ingest",
            "--nats",
            &cluster.urls(),
            "--stream-partitions",
            "6",
            "-q",
            file,
        ],
    );
    let nodes: Vec<std::path::PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("node-{i}")))
        .collect();
    for node in &nodes {
        use_llm_profile(node, &model.base_url());
    }
    // Each node talks to another server of the cluster.
    let partitions = ["0,3", "1,4", "2,5"];
    let handles: Vec<_> = nodes
        .iter()
        .zip(partitions)
        .zip(&cluster.servers)
        .map(|((data, partitions), server)| {
            let (data, url) = (data.clone(), server.url());
            std::thread::spawn(move || {
                ok(
                    &data,
                    &[
                        "node",
                        "--nats",
                        &url,
                        "--partitions",
                        partitions,
                        "--drain",
                        "-q",
                    ],
                )
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let node_requests = model.requests() - single_requests;
    assert!(node_requests > 0, "the nodes asked the model nothing");
    let refs: Vec<&Path> = nodes.iter().map(std::path::PathBuf::as_path).collect();
    assert_union_equals_single(&single, &refs);
    let calls = record_count(&single, RecordKind::ModelCall);
    assert!(calls > 0);
    // Every call any node made is on the stream, once.
    let (on_stream, _) = cluster.servers[0].stream_state("strataflow_calls");
    assert_eq!(on_stream, calls, "calls on the stream");
    let digests_before = view_digests(&nodes[0]);
    assert!(!digests_before.is_empty());

    std::fs::remove_dir_all(&nodes[0]).unwrap();
    use_llm_profile(&nodes[0], &model.base_url());
    let rebuilt = ok(
        &nodes[0],
        &[
            "node",
            "--nats",
            &cluster.servers[1].url(),
            "--partitions",
            partitions[0],
            "--drain",
            "-q",
        ],
    );
    assert!(!rebuilt.contains(" 0 messages delivered"), "{rebuilt}");
    assert_eq!(
        model.requests() - single_requests,
        node_requests,
        "the rebuild asked the model"
    );
    assert_eq!(view_digests(&nodes[0]), digests_before);
    assert_union_equals_single(&single, &refs);
    let status = ok(&nodes[0], &["status"]);
    assert!(
        status.contains("copied from other nodes' calls"),
        "{status}"
    );
}

/// Records of one kind in a data directory.
fn record_count(data: &Path, kind: RecordKind) -> u64 {
    strataflow::Memory::open_existing(data)
        .unwrap()
        .store()
        .count(kind)
        .unwrap()
}

/// Two gateways (two nodes) asking the same request at once, from a model
/// that answers each request differently: both ask the model, the first
/// call published is kept, and both answer from it and record it (the
/// same record); a third asks the model nothing.
#[test]
fn two_gateways_asking_at_once_both_answer_from_the_first_call_stored() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};
    use strataflow::log::Store;
    use strataflow::model::{ModelSettings, RecordingGateway};
    use strataflow::operators::model::{ChatMessage, ModelGateway, ModelRequest, ToolSpec};
    use strataflow::operators::operator::OperatorId;
    use strataflow_cluster::calls::CallStream;

    let answers = AtomicUsize::new(0);
    let model = ModelServer::start(move |_| {
        let n = answers.fetch_add(1, Ordering::SeqCst);
        Reply::Tool(serde_json::json!({"events": [{"title": format!("answer {n}")}]}))
    });
    // Both requests are in flight at once: each lookup misses.
    model.set_latency(std::time::Duration::from_millis(1500));
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let subjects = strataflow_cluster::Subjects::new("strataflow").unwrap();
    let settings = ModelSettings {
        base_url: model.base_url(),
        model: "test-model".into(),
        api_key_env: None,
        timeout: std::time::Duration::from_secs(10),
        ..ModelSettings::default()
    };
    let node = |name: &str| {
        let store = Arc::new(Store::open(dir.path().join(name)).unwrap());
        let calls = CallStream::open(
            &server.url(),
            &subjects,
            None,
            std::time::Duration::from_secs(20),
        )
        .unwrap();
        let gateway = RecordingGateway::new(Arc::clone(&store), settings.clone(), false)
            .unwrap()
            .with_shared_calls(Arc::new(calls));
        (store, gateway)
    };
    let request = ModelRequest {
        operator: OperatorId::new("llm-extractor", 1),
        model: "test-model".into(),
        messages: vec![ChatMessage {
            role: "user".into(),
            content: "We moved to Lisbon.".into(),
        }],
        tool: ToolSpec {
            name: "record".into(),
            description: "Record the events.".into(),
            parameters: serde_json::json!({"type": "object"}),
        },
        temperature: 0.0,
        max_tokens: 64,
    };
    let (a, b) = (node("a"), node("b"));
    let barrier = Barrier::new(2);
    let ask = |gateway: &RecordingGateway| {
        barrier.wait();
        gateway.complete(&request, "the test block").unwrap()
    };
    let (reply_a, reply_b) = std::thread::scope(|s| {
        let first = s.spawn(|| ask(&a.1));
        let second = s.spawn(|| ask(&b.1));
        (first.join().unwrap(), second.join().unwrap())
    });
    assert_eq!(model.requests(), 2, "both asked the model");
    assert_eq!(reply_a, reply_b, "both answer from the call kept");
    let key = request.key();
    let (id_a, call_a) = a.0.model_call(&key).unwrap().unwrap();
    let (id_b, _) = b.0.model_call(&key).unwrap().unwrap();
    assert_eq!(id_a, id_b, "both recorded the same call");
    assert!(
        ["answer 0", "answer 1"]
            .iter()
            .any(|t| call_a.response.contains(t))
    );
    assert_eq!(server.stream_state("strataflow_calls").0, 1);
    assert_eq!(a.1.stats().made + b.1.stats().made, 2);

    // A third node finds it on the stream: no request, the same record.
    let c = node("c");
    let reply_c = c.1.complete(&request, "the test block").unwrap();
    assert_eq!(model.requests(), 2, "the third asked the model");
    assert_eq!(reply_c.arguments, reply_a.arguments);
    assert!(reply_c.from_log);
    assert_eq!(c.1.stats().served_from_shared, 1);
    assert_eq!(c.0.model_call(&key).unwrap().unwrap().0, id_a);
}

/// A calls stream that answers nothing (its server paused): the gateway's
/// lookup is bounded and retried, then the request stops with
/// `ModelError::SharedCalls` (a halt: nothing recorded) and no model
/// request is made.
#[test]
fn a_paused_calls_stream_halts_the_request_within_its_retry_limit() {
    use std::sync::Arc;
    use strataflow::log::Store;
    use strataflow::model::{ModelSettings, RecordingGateway};
    use strataflow::operators::model::{
        ChatMessage, ModelError, ModelGateway, ModelRequest, ToolSpec,
    };
    use strataflow::operators::operator::OperatorId;
    use strataflow_cluster::calls::CallStream;

    let model = ModelServer::answering(serde_json::json!({"events": []}));
    let dir = tempfile::tempdir().unwrap();
    let server = nats::single(dir.path());
    let calls = CallStream::open(
        &server.url(),
        &strataflow_cluster::Subjects::new("strataflow").unwrap(),
        None,
        std::time::Duration::from_secs(2),
    )
    .unwrap();
    let store = Arc::new(Store::open(dir.path().join("node")).unwrap());
    let settings = ModelSettings {
        base_url: model.base_url(),
        model: "test-model".into(),
        api_key_env: None,
        ..ModelSettings::default()
    };
    let gateway = RecordingGateway::new(Arc::clone(&store), settings, false)
        .unwrap()
        .with_shared_calls(Arc::new(calls));
    let request = ModelRequest {
        operator: OperatorId::new("llm-extractor", 1),
        model: "test-model".into(),
        messages: vec![ChatMessage {
            role: "user".into(),
            content: "hello".into(),
        }],
        tool: ToolSpec {
            name: "record".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
        },
        temperature: 0.0,
        max_tokens: 16,
    };
    server.signal("STOP");
    let started = std::time::Instant::now();
    let err = gateway.complete(&request, "the test block").unwrap_err();
    let waited = started.elapsed();
    server.signal("CONT");
    assert!(
        matches!(&err, ModelError::SharedCalls { .. }) && err.halts(),
        "{err:?}"
    );
    assert!(err.to_string().contains("retried for"), "{err}");
    assert!(
        waited < std::time::Duration::from_secs(30),
        "waited {waited:?}"
    );
    assert_eq!(model.requests(), 0);
    assert_eq!(store.count(RecordKind::ModelCall).unwrap(), 0);
}
