//! Golden ids: an accidental change to the record encoding, the hash
//! definition or the rkyv format features changes these and fails loudly.
#![allow(clippy::unwrap_used)]

use strataflow_log::envelope::{decode, encode, encode_with_id};
use strataflow_log::record::{
    Actor, Block, Derivation, Governance, GovernanceAction, Message, Outcome, Record, Role,
    ToolCall,
};
use strataflow_log::{RecordId, SourceTime};

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
