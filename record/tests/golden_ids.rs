//! Golden ids: an accidental change to the record encoding, the hash
//! definition or the rkyv format features changes these and fails loudly.
#![allow(clippy::unwrap_used)]

use strataflow_record::envelope::{decode, encode, encode_with_id};
use strataflow_record::record::{
    Actor, Block, Derivation, Governance, GovernanceAction, Message, Outcome, Record, Role,
    ToolCall,
};
use strataflow_record::{RecordId, SourceTime};

fn message() -> Message {
    Message {
        tenant: String::new(),
        thread: "conv-26".into(),
        external_id: "D1:1".into(),
        position: 0,
        role: Role::User,
        speaker: Some("Caroline".into()),
        content: "Hey Mel! Good to see you! How have you been?".into(),
        tool_calls: vec![],
        time: SourceTime::utc_without_offset(1_683_554_160_000),
    }
}

fn tool_message() -> Message {
    Message {
        tenant: "acme".into(),
        thread: "t-1".into(),
        external_id: "m2".into(),
        position: 1,
        role: Role::Assistant,
        speaker: None,
        content: "Checking the weather.".into(),
        tool_calls: vec![ToolCall {
            name: "weather".into(),
            arguments: Some(r#"{"city":"Paris"}"#.into()),
            result: Some(r#"{"summary":"sunny"}"#.into()),
        }],
        time: SourceTime::parse_rfc3339("2024-03-01T09:30:00+01:00").unwrap(),
    }
}

fn id(r: &Record) -> String {
    encode_with_id(r).unwrap().0.to_hex()
}

#[test]
fn message_envelope_bytes_are_pinned() {
    let bytes = encode(&Record::Message(message())).unwrap();
    assert_eq!(
        &bytes[..5],
        b"SF\x01\x00\x01",
        "header: magic, kind 1, schema 1"
    );
    assert_eq!(
        blake3::hash(&bytes).to_hex().to_string(),
        "211bdd61e2d9420469bd937e0d689264e503ab3927f1074c1283cc29866c0904",
        "the byte encoding of a Message changed"
    );
}

#[test]
fn record_ids_are_pinned() {
    let m1 = Record::Message(message());
    let m2 = Record::Message(tool_message());
    assert_eq!(
        id(&m1),
        "13c31a92c698f6470587ba59baf068eab118c8cf49c659197a73abc27cde8614"
    );
    assert_eq!(
        id(&m2),
        "5555caa10eaf7460045fa17f1e2c9483312e178328f2a232b2ac0dce771f19ee"
    );
    let m1_id: RecordId = id(&m1).parse().unwrap();
    let block = Record::Block(Block {
        tenant: String::new(),
        thread: "conv-26".into(),
        ordinal: 1,
        start_turn: 1,
        end_turn: 1,
        first_position: 0,
        last_position: 0,
        messages: vec![m1_id],
        time: SourceTime::utc_without_offset(1_683_554_160_000),
        l4: "User: Hey Mel! Good to see you! How have you been?".into(),
        l3: "User: Hey Mel! Good to see you! How have you been?".into(),
    });
    assert_eq!(
        id(&block),
        "50c953c19592a4735a1a9749750d4fbbadd64e6037f68c44e767ffc42cbb25f1"
    );
    let gov = Record::Governance(Governance {
        tenant: String::new(),
        target: m1_id,
        action: GovernanceAction::ExpandBlock { level: 3 },
        actor: Actor::Agent,
        reason: None,
        previous: None,
    });
    assert_eq!(
        id(&gov),
        "72647d55b827c06fc66e996d62fdfd04755baa75c0c8042aae9735423e18427a"
    );
    let derivation = Record::Derivation(Derivation {
        tenant: String::new(),
        operator: "heuristic-summarizer@1".into(),
        config_hash: RecordId([7; 32]),
        inputs: vec![m1_id],
        outputs: vec![],
        outcome: Outcome::Failed {
            error: "boom".into(),
        },
        attempt: 2,
    });
    assert_eq!(
        id(&derivation),
        "2dd90b1510fb65c6043e86c31b33591536a8d27089eadbb88cb924d5e3d9a14e"
    );
}

#[test]
fn parents_are_part_of_the_id() {
    let m1_id: RecordId = id(&Record::Message(message())).parse().unwrap();
    let gov = |target| {
        Record::Governance(Governance {
            tenant: String::new(),
            target,
            action: GovernanceAction::Forget,
            actor: Actor::User,
            reason: None,
            previous: None,
        })
    };
    assert_ne!(id(&gov(m1_id)), id(&gov(RecordId([0; 32]))));
}

type Change = Box<dyn Fn(&mut Message)>;

#[test]
fn every_field_changes_the_id() {
    let base = id(&Record::Message(message()));
    let variants: Vec<Change> = vec![
        Box::new(|m| m.tenant = "x".into()),
        Box::new(|m| m.thread = "conv-27".into()),
        Box::new(|m| m.external_id = "D1:2".into()),
        Box::new(|m| m.position = 1),
        Box::new(|m| m.role = Role::Assistant),
        Box::new(|m| m.speaker = None),
        Box::new(|m| m.content.push(' ')),
        Box::new(|m| m.time.utc_ms += 1),
        Box::new(|m| m.time.offset_minutes = Some(0)),
    ];
    for change in variants {
        let mut m = message();
        change(&mut m);
        assert_ne!(id(&Record::Message(m)), base);
    }
}

#[test]
fn decode_round_trips_and_rejects_other_versions() {
    for record in [Record::Message(message()), Record::Message(tool_message())] {
        let bytes = encode(&record).unwrap();
        assert_eq!(decode(&bytes).unwrap(), record);
        let mut newer = bytes.clone();
        newer[4] = 2;
        let err = decode(&newer).unwrap_err().to_string();
        assert!(err.contains("schema version 2"), "{err}");
        let mut foreign = bytes.clone();
        foreign[0] = b'X';
        assert!(decode(&foreign).unwrap_err().to_string().contains("magic"));
        assert!(decode(&bytes[..3]).is_err());
    }
}

/// One record of every kind, every field set to a value other than its
/// default (options `Some`, lists non-empty, enums away from their first
/// variant where a kind has several shapes), so a change to the encoding
/// of any field of any kind changes an id below.
mod every_kind {
    use strataflow_record::RecordId;
    use strataflow_record::envelope::{decode, encode_with_id};
    use strataflow_record::record::{
        Actor, Assertion, Assessment, Block, BlockSummary, Criticality, Derivation, Embedding,
        Event, EventTemporal, EventType, EvidenceRef, Fact, FactMode, Governance, GovernanceAction,
        GraphAssertion, ImportAction, ImportDecision, ImportSource, KeyedMemory, MemoryAction,
        MemoryPurge, Message, MetadataPair, ModelCall, NodeKey, NodeType, Occurrence, Outcome,
        Precision, Record, RecordKind, RefKind, Retrieval, Role, Scope, TimeBasis, TokenUsage,
        ToolCall, UseReceipt, Verdict,
    };
    use strataflow_record::{SourceTime, Timestamp};

    fn rid(byte: u8) -> RecordId {
        RecordId([byte; 32])
    }

    fn time() -> SourceTime {
        SourceTime::parse_rfc3339("2024-03-01T09:30:00+01:00").unwrap()
    }

    fn node(name: &str) -> NodeKey {
        NodeKey {
            node_type: NodeType::Place,
            name: name.into(),
        }
    }

    fn evidence() -> Vec<EvidenceRef> {
        vec![
            EvidenceRef {
                kind: RefKind::Event,
                id: rid(0x41),
                level: None,
            },
            EvidenceRef {
                kind: RefKind::Block,
                id: rid(0x42),
                level: Some(3),
            },
        ]
    }

    /// The records, in `RecordKind::ALL` order.
    pub fn records() -> Vec<Record> {
        vec![
            Record::Message(Message {
                tenant: "acme".into(),
                thread: "trip-planning".into(),
                external_id: "m-7".into(),
                position: 6,
                role: Role::Tool,
                speaker: Some("weather-bot".into()),
                content: "Sunny, 24 °C.".into(),
                tool_calls: vec![ToolCall {
                    name: "weather".into(),
                    arguments: Some(r#"{"city":"Lisbon"}"#.into()),
                    result: Some(r#"{"summary":"sunny"}"#.into()),
                }],
                time: time(),
            }),
            Record::Block(Block {
                tenant: "acme".into(),
                thread: "trip-planning".into(),
                ordinal: 2,
                start_turn: 13,
                end_turn: 24,
                first_position: 30,
                last_position: 61,
                messages: vec![rid(0x01), rid(0x02)],
                time: time(),
                l4: "Ana: Shall we go to Sintra?\nBot: Yes.".into(),
                l3: "Ana: go to Sintra?\nBot: Yes.".into(),
            }),
            Record::BlockSummary(BlockSummary {
                tenant: "acme".into(),
                block: rid(0x03),
                title: "Sintra day trip".into(),
                tags: vec!["travel".into(), "portugal".into()],
                summary: "Ana plans a day trip to Sintra.".into(),
                key_points: vec!["train from Rossio".into(), "Pena palace".into()],
                should_extract: true,
            }),
            Record::Event(Event {
                tenant: "acme".into(),
                block: rid(0x03),
                source_messages: vec![rid(0x01), rid(0x02)],
                title: "Sintra trip planned".into(),
                summary: "Ana will visit Sintra next Saturday.".into(),
                narrative: "Ana asked about trains; the trip is set for Saturday.".into(),
                tags: vec!["travel".into()],
                quotes: vec!["Shall we go to Sintra?".into()],
                temporal: EventTemporal {
                    mentioned_at: time(),
                    happened_start: Some(Timestamp(1_709_942_400_000)),
                    happened_end: Some(Timestamp(1_710_028_799_999)),
                    original_text: Some("next Saturday".into()),
                    precision: Precision::Day,
                    basis: TimeBasis::Relative,
                    status: Occurrence::Planned,
                    participants: vec!["Ana".into(), "Rui".into()],
                    event_type: EventType::Plan,
                    supersedes: vec![rid(0x04)],
                    conflicts_with: vec![rid(0x05)],
                },
                scope: Scope::Project,
                criticality: Criticality::Preference,
                confidence_milli: 875,
            }),
            Record::GraphAssertion(GraphAssertion {
                tenant: "acme".into(),
                source_events: vec![rid(0x06)],
                assertion: Assertion::Edge {
                    from: NodeKey {
                        node_type: NodeType::Person,
                        name: "ana".into(),
                    },
                    to: node("sintra"),
                    relation: "visits".into(),
                    functional: true,
                    valid_from: Some(Timestamp(1_709_942_400_000)),
                    valid_to: Some(Timestamp(1_710_028_799_999)),
                },
                confidence_milli: 640,
            }),
            Record::Derivation(Derivation {
                tenant: "acme".into(),
                operator: "heuristic-extractor@2".into(),
                config_hash: rid(0x07),
                inputs: vec![rid(0x03)],
                outputs: vec![rid(0x06)],
                outcome: Outcome::Skipped {
                    reason: "should_extract is false".into(),
                },
                attempt: 3,
            }),
            Record::ModelCall(ModelCall {
                request_hash: rid(0x08),
                operator: "llm-summarizer@1".into(),
                model: "qwen2.5-7b-instruct".into(),
                request: r#"{"messages":[{"content":"hi","role":"user"}]}"#.into(),
                response: r#"{"choices":[]}"#.into(),
                usage: TokenUsage {
                    prompt_tokens: 1234,
                    completion_tokens: 56,
                },
            }),
            Record::Governance(Governance {
                tenant: "acme".into(),
                target: rid(0x06),
                action: GovernanceAction::ExpandBlock { level: 4 },
                actor: Actor::Agent,
                reason: Some("needs the transcript".into()),
                previous: Some(rid(0x09)),
            }),
            Record::Retrieval(Retrieval {
                tenant: "acme".into(),
                ordinal: 17,
                call: "search all".into(),
                query: "Sintra trip".into(),
                filters: r#"{"budget":100,"participants":["Ana"]}"#.into(),
                refs: evidence(),
            }),
            Record::Assessment(Assessment {
                tenant: "acme".into(),
                batch: rid(0x0a),
                verdict: Verdict::Partial,
                evidence: evidence(),
                fit: "names the day".into(),
                missing: "the train time".into(),
                next: "expand_block".into(),
            }),
            Record::UseReceipt(UseReceipt {
                tenant: "acme".into(),
                batch: rid(0x0a),
                assessment: rid(0x0b),
                refs: evidence(),
            }),
            Record::ImportSource(ImportSource {
                tenant: "acme".into(),
                format: "stratagate.external-memory.v2".into(),
                source_system: "other-assistant".into(),
                message: rid(0x0c),
                block: rid(0x0d),
                imported_at: time(),
                decisions: vec![
                    ImportDecision {
                        index: 1,
                        candidate: "Ana lives in Lisbon".into(),
                        proposed: ImportAction::Supersede,
                        action: ImportAction::Supersede,
                        targets: vec![rid(0x0e)],
                        reason: "newer address".into(),
                        confidence_milli: 910,
                        requires_confirmation: true,
                        created_event: Some(rid(0x0f)),
                    },
                    ImportDecision {
                        index: 2,
                        candidate: "Ana likes trains".into(),
                        proposed: ImportAction::Conflict,
                        action: ImportAction::Ignore,
                        targets: vec![rid(0x10)],
                        reason: "not confirmed".into(),
                        confidence_milli: 420,
                        requires_confirmation: true,
                        created_event: None,
                    },
                ],
            }),
            Record::Embedding(
                Embedding::new(
                    "acme",
                    "strataflow/word-hash-4",
                    &[0.5, -0.5, 0.0, 0.707],
                    rid(0x11),
                    "word-hash@1",
                    rid(0x12),
                )
                .unwrap(),
            ),
            Record::KeyedMemory(KeyedMemory {
                tenant: "acme".into(),
                namespace: "incidents".into(),
                key: "inc-101".into(),
                action: MemoryAction::Remember {
                    text: "Checkout pods crash looping".into(),
                    content: r#"{"action":"roll back the deploy"}"#.into(),
                    metadata: vec![MetadataPair {
                        key: "service".into(),
                        value: "checkout".into(),
                    }],
                    created_at: Timestamp(1_000),
                    updated_at: Timestamp(2_000),
                },
                previous: Some(rid(0x13)),
            }),
            Record::MemoryPurge(MemoryPurge {
                tenant: "acme".into(),
                namespace: Some("incidents".into()),
                older_than: Timestamp(3_000),
                limit: 1000,
                purged: vec![rid(0x14), rid(0x15)],
            }),
        ]
    }

    /// A graph node assertion (the other `Assertion` shape), with a fact.
    fn node_assertion() -> Record {
        Record::GraphAssertion(GraphAssertion {
            tenant: "acme".into(),
            source_events: vec![rid(0x06), rid(0x11)],
            assertion: Assertion::Node {
                key: node("sintra"),
                name: "Sintra".into(),
                aliases: vec!["Cintra".into()],
                tags: vec!["town".into()],
                facts: vec![Fact {
                    key: "country".into(),
                    values: vec!["Portugal".into()],
                    mode: FactMode::Set,
                    valid_from: Some(Timestamp(1_000)),
                    valid_to: Some(Timestamp(2_000)),
                }],
            },
            confidence_milli: 990,
        })
    }

    /// (kind, record id, blake3 of the envelope, envelope length).
    const PINNED: [(RecordKind, &str, &str, usize); 15] = [
        (
            RecordKind::Message,
            "d5e142d64ebaf4b750e41cd95655fa7d57feab19e799a0ef3cbe38604a44212d",
            "ef53c8d8135a4ce346467bdf0029c529a28012ff1eaa54cc08030223e2a54075",
            174,
        ),
        (
            RecordKind::Block,
            "d41d5a06643bd52ddd3ce7fe80fc7a8e75085ca362f30031ac3df5ac074c275c",
            "fdfeb8f42e6303dd4fbc8f1c8418657b987fd87db8e0a3cff50e9fd65e3e0c81",
            226,
        ),
        (
            RecordKind::BlockSummary,
            "8c0abb819da9dd7b6d3cc2cb3af8c9eef0587ca1e023801e24cdd53a446dc4c1",
            "f34915c3047adf69f57eb78076b4dda509600bc323953dd7ed6f23a6d62cf944",
            184,
        ),
        (
            RecordKind::Event,
            "2950792db2b30d73ab96be34e95e3206bb09a73092f476ae56242a92fe6fd584",
            "d71adc84cc904eb5ab1ed63a71d53d2499b27a79dceb03a7e8fe5cf239e04b8e",
            466,
        ),
        (
            RecordKind::GraphAssertion,
            "9739010b70b341d5a9455883061a198b80715c8dfc127d314015f35c88e53fbb",
            "50e5c58b46d66bdeb12a85eafa070e03656949fbf42590ec78bef9c1fcecfa62",
            101,
        ),
        (
            RecordKind::Derivation,
            "16a4978d6c15c70948f653f2e26fc098ca980b6dfba0214fcf25f3dca9dddc5d",
            "e066ff9afad6dfbc2749009e9baa98003492106faaa2f7a690b8eabd6ff3b263",
            190,
        ),
        (
            RecordKind::ModelCall,
            "639cd12c5e03d24ba03650be4e7f21a48495f96b3d1080eafeba8505858958cb",
            "66cb8fb40efcf767b5e5cc1c200089e7552a1a243d2268520a662ded7fa1dc23",
            171,
        ),
        (
            RecordKind::Governance,
            "9013c801ca10f1572edc05bdd200cf8a7172b04bfb857b3c8f3ecd166b3c5e06",
            "74ffc2e0166d39382e92933b10413963f958396135b85b59a2c80413b9057bfb",
            110,
        ),
        (
            RecordKind::Retrieval,
            "034bd2203b6accb67a18edc8de372957c57d6925e47bf35bd773446084553a50",
            "8df05b3fa584b39434e08747758cbab6adbed3b660074eb3a2acb6ce03340fb7",
            181,
        ),
        (
            RecordKind::Assessment,
            "1d53622ed119fb8824deb66e24a9517803bcea08bcfac58e5caade7cf0d1046f",
            "92049b2cc0ef83dddc669e1c68d0177a5f1d4921fdc7dea6771cc188875790bf",
            187,
        ),
        (
            RecordKind::UseReceipt,
            "b81b3c3bb5ca15fa67633cd1c2264cb68d16cd22b761dc0e2c87e354ea3043ff",
            "50ea6e36e9e998ab8e49a33bff3cfe32cd1429df2f9e73c8f6c83792c02f3986",
            155,
        ),
        (
            RecordKind::ImportSource,
            "4a8988b6d252da9d57f61137f25fc624a0adc82e0837608caba7b9be1a1e34c3",
            "b5a354ef41aadb2135dd5bbd90fcee54ea488113b8ab364795fa976355b4d6be",
            413,
        ),
        (
            RecordKind::Embedding,
            "e6b47db80651f7ba0199310a4565be9b331d55d45def1a5fd6fc96b3f19ab89e",
            "eaf82026bd691b6d0beababc9134b443b5f655e85f6d4c781fae508a045aa1fa",
            154,
        ),
        (
            RecordKind::KeyedMemory,
            "996c94b54240d5d7fc0ba6e90be05a86f050a77c3c28ab6fad8849cde7c9a50e",
            "521fd31fc0ec60e03b104e56f8c06b193f80824af979f22a090716f679f9a2a8",
            188,
        ),
        (
            RecordKind::MemoryPurge,
            "2dec796624579868bce7ddf2d5101529c91ddc83d63aa8a38fc33f35a69790b5",
            "84a5ec1e27f7ef75df1d73e270947cd6611f16157ac6d0c986a41aad3dc2dfd7",
            115,
        ),
    ];

    const NODE_ASSERTION: (&str, &str, usize) = (
        "2dbbce259337d0a26d384a0ea1313199007065e79532cddc72d064ea71a74a95",
        "82d31753ca72f913b6566ceac17c23207c34020079cfba6c24576210d676aa29",
        192,
    );

    fn pin(record: &Record) -> (String, String, usize) {
        let (id, bytes) = encode_with_id(record).unwrap();
        assert_eq!(&decode(&bytes).unwrap(), record, "round trip");
        assert_eq!(bytes.get(2), Some(&record.kind().code()), "kind byte");
        (
            id.to_hex(),
            blake3::hash(&bytes).to_hex().to_string(),
            bytes.len(),
        )
    }

    #[test]
    fn the_list_covers_every_kind() {
        let kinds: Vec<RecordKind> = records().iter().map(Record::kind).collect();
        assert_eq!(kinds, RecordKind::ALL, "one record per kind, in code order");
        let pinned: Vec<RecordKind> = PINNED.iter().map(|p| p.0).collect();
        assert_eq!(pinned, RecordKind::ALL, "one pin per kind, in code order");
    }

    #[test]
    fn every_kind_has_pinned_id_and_bytes() {
        let mut changed = Vec::new();
        for (record, (kind, id, hash, len)) in records().iter().zip(PINNED) {
            let got = pin(record);
            if (got.0.as_str(), got.1.as_str(), got.2) != (id, hash, len) {
                changed.push(format!(
                    "(RecordKind::{kind:?}, \"{}\", \"{}\", {}),",
                    got.0, got.1, got.2
                ));
            }
        }
        assert!(
            changed.is_empty(),
            "the encoding of these kinds changed (new values):\n{}",
            changed.join("\n")
        );
    }

    #[test]
    fn node_assertion_is_pinned() {
        let got = pin(&node_assertion());
        assert_eq!(
            (got.0.as_str(), got.1.as_str(), got.2),
            NODE_ASSERTION,
            "the encoding of a node assertion changed"
        );
    }
}
