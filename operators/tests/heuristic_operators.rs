//! Golden outputs of the heuristic summarizer and extractor on a small
//! fixture block, and the cancellation → supersede path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use strataflow_operators::extractor::HeuristicExtractor;
use strataflow_operators::extractor::heuristic::{HeuristicExtractorV2, HeuristicExtractorV3};
use strataflow_operators::operator::{
    BlockInput, ExtractionInput, Extractor, Summarizer, Timeline,
};
use strataflow_operators::summarizer::HeuristicSummarizer;
use strataflow_operators::summarizer::heuristic::HeuristicSummarizerV2;
use strataflow_record::record::{
    Block, BlockSummary, Message, Occurrence, Precision, Role, TimeBasis,
};
use strataflow_record::{RecordId, SourceTime};

fn message(i: u64, role: Role, speaker: &str, content: &str, ts: &str) -> (RecordId, Message) {
    (
        RecordId([u8::try_from(i).unwrap() + 1; 32]),
        Message {
            tenant: String::new(),
            thread: "t".into(),
            external_id: format!("m{i}"),
            position: i,
            role,
            speaker: Some(speaker.into()),
            content: content.into(),
            tool_calls: vec![],
            time: SourceTime::parse_rfc3339(ts).unwrap(),
        },
    )
}

fn fixture() -> (Block, Vec<(RecordId, Message)>) {
    let ts = "2024-05-10T21:30:00+02:00";
    let msgs = vec![
        message(
            0,
            Role::User,
            "Ana",
            "Hi! I went to Porto with my sister Marta last weekend.",
            ts,
        ),
        message(1, Role::Assistant, "Bot", "Wow, that's great!", ts),
        message(
            2,
            Role::User,
            "Ana",
            "We're going to Sintra on 20 May. I prefer window seats on trains.",
            ts,
        ),
        message(3, Role::Assistant, "Bot", "Noted. Anything else?", ts),
        message(4, Role::User, "Ana", "What do you think about hiking?", ts),
    ];
    let block = Block {
        tenant: String::new(),
        thread: "t".into(),
        ordinal: 1,
        start_turn: 1,
        end_turn: 3,
        first_position: 0,
        last_position: 4,
        messages: msgs.iter().map(|(id, _)| *id).collect(),
        time: msgs[4].1.time,
        l4: String::new(),
        l3: String::new(),
    };
    (block, msgs)
}

fn summarize(block: &Block, msgs: &[(RecordId, Message)]) -> BlockSummary {
    let input = BlockInput {
        id: RecordId([99; 32]),
        block,
        messages: msgs,
        attempt: 1,
        analyses: None,
    };
    HeuristicSummarizer.summarize(&input).unwrap()
}

#[test]
fn summarizer_golden() {
    let (block, msgs) = fixture();
    let s = summarize(&block, &msgs);
    assert_eq!(
        s.title,
        "Ana: I went to Porto with my sister Marta last weekend."
    );
    assert_eq!(
        s.tags,
        vec!["Porto", "Marta", "Sintra", "sister", "weekend", "window"]
    );
    assert_eq!(
        s.summary,
        "Ana and Bot talk about Porto, Marta, Sintra. Ana: I went to Porto with my sister Marta last weekend. Ana: We're going to Sintra on 20 May. Ana: I prefer window seats on trains."
    );
    assert_eq!(
        s.key_points,
        vec![
            "Ana: I went to Porto with my sister Marta last weekend.",
            "Ana: We're going to Sintra on 20 May.",
            "Ana: I prefer window seats on trains."
        ]
    );
    assert!(s.should_extract);
    // Same input, same bytes.
    assert_eq!(s, summarize(&block, &msgs));
}

#[test]
fn extractor_golden() {
    let (block, msgs) = fixture();
    let summary = summarize(&block, &msgs);
    let input = ExtractionInput {
        target: BlockInput {
            id: RecordId([99; 32]),
            block: &block,
            messages: &msgs,
            attempt: 1,
            analyses: None,
        },
        summary: &summary,
        previous_key_points: None,
        next_key_points: None,
        timeline: Timeline::EMPTY,
    };
    let x = HeuristicExtractor.extract(&input).unwrap();
    assert!(x.should_extract);
    let got: Vec<String> = x
        .events
        .iter()
        .map(|e| {
            format!(
                "{} | {:?} {:?} {:?} | {} .. {} | {:?} | {:?}",
                e.title,
                e.temporal.status,
                e.temporal.precision,
                e.temporal.basis,
                e.temporal
                    .happened_start
                    .map_or("?".into(), |t| t.to_rfc3339()),
                e.temporal
                    .happened_end
                    .map_or("?".into(), |t| t.to_rfc3339()),
                e.temporal.participants,
                e.source_messages.iter().map(|m| m.0[0]).collect::<Vec<_>>(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            "Ana went to Porto with Ana's sister Marta last weekend. | Occurred Range Relative | 2024-05-03T22:00:00.000Z .. 2024-05-05T21:59:59.999Z | [\"Ana\", \"Marta\"] | [1]",
            "We're going to Sintra on 20 May. | Planned Day Explicit | 2024-05-19T22:00:00.000Z .. 2024-05-20T21:59:59.999Z | [\"Ana\"] | [3]"
        ]
    );
    for e in &x.events {
        assert_eq!(e.temporal.mentioned_at, msgs[0].1.time);
        assert!(!e.quotes.is_empty());
    }
    assert_eq!(
        x,
        HeuristicExtractor.extract(&input).unwrap(),
        "deterministic"
    );
}

#[test]
fn a_cancellation_supersedes_the_matching_plan_in_the_timeline() {
    let (block, msgs) = fixture();
    let summary = summarize(&block, &msgs);
    let target = BlockInput {
        id: RecordId([99; 32]),
        block: &block,
        messages: &msgs,
        attempt: 1,
        analyses: None,
    };
    let first = HeuristicExtractor
        .extract(&ExtractionInput {
            target,
            summary: &summary,
            previous_key_points: None,
            next_key_points: None,
            timeline: Timeline::EMPTY,
        })
        .unwrap();
    let plan = first
        .events
        .iter()
        .find(|e| e.temporal.status == Occurrence::Planned)
        .unwrap()
        .clone();
    assert_eq!(plan.temporal.precision, Precision::Day);
    assert_eq!(plan.temporal.basis, TimeBasis::Explicit);
    let plan_id = RecordId([50; 32]);

    let later = vec![message(
        5,
        Role::User,
        "Ana",
        "Marta twisted her ankle, so we cancelled the Sintra day trip.",
        "2024-05-12T10:00:00+02:00",
    )];
    let block2 = Block {
        ordinal: 2,
        messages: vec![later[0].0],
        first_position: 5,
        last_position: 5,
        ..block.clone()
    };
    let summary2 = summarize(&block2, &later);
    let timeline = vec![(plan_id, plan)];
    let x = HeuristicExtractor
        .extract(&ExtractionInput {
            target: BlockInput {
                id: RecordId([98; 32]),
                block: &block2,
                messages: &later,
                attempt: 1,
                analyses: None,
            },
            summary: &summary2,
            previous_key_points: None,
            next_key_points: None,
            timeline: (&timeline).into(),
        })
        .unwrap();
    let cancel = x
        .events
        .iter()
        .find(|e| e.temporal.status == Occurrence::Cancelled)
        .unwrap();
    assert_eq!(cancel.temporal.supersedes, vec![plan_id]);
}

/// One block of one message with abbreviations.
fn abbreviation_block() -> (Block, Vec<(RecordId, Message)>) {
    let msgs = vec![message(
        0,
        Role::User,
        "Ana",
        "My mentor Dr. Patel joined the team. She is great. I met Prof. Lee in Porto last week.",
        "2024-05-10T21:30:00+02:00",
    )];
    let block = Block {
        tenant: String::new(),
        thread: "t".into(),
        ordinal: 1,
        start_turn: 1,
        end_turn: 1,
        first_position: 0,
        last_position: 0,
        messages: msgs.iter().map(|(id, _)| *id).collect(),
        time: msgs[0].1.time,
        l4: String::new(),
        l3: String::new(),
    };
    (block, msgs)
}

fn quotes(x: &dyn Extractor, block: &Block, msgs: &[(RecordId, Message)]) -> Vec<Vec<String>> {
    let target = BlockInput {
        id: RecordId([99; 32]),
        block,
        messages: msgs,
        attempt: 1,
        analyses: None,
    };
    let summary = HeuristicSummarizer.summarize(&target).unwrap();
    x.extract(&ExtractionInput {
        target,
        summary: &summary,
        previous_key_points: None,
        next_key_points: None,
        timeline: Timeline::EMPTY,
    })
    .unwrap()
    .events
    .into_iter()
    .map(|e| e.quotes)
    .collect()
}

#[test]
fn shared_splitter_versions_keep_abbreviations_whole() {
    let (block, msgs) = abbreviation_block();
    let input = BlockInput {
        id: RecordId([99; 32]),
        block: &block,
        messages: &msgs,
        attempt: 1,
        analyses: None,
    };
    let v1 = HeuristicSummarizer.summarize(&input).unwrap();
    let v2 = HeuristicSummarizerV2.summarize(&input).unwrap();
    // Both splitters keep "Dr. Patel"; only the shared one keeps "Prof. Lee".
    assert_eq!(
        v1.key_points,
        [
            "Ana: My mentor Dr. Patel joined the team.",
            "Ana: I met Prof.",
            "Ana: Lee in Porto last week."
        ]
    );
    assert_eq!(
        v2.key_points,
        [
            "Ana: My mentor Dr. Patel joined the team.",
            "Ana: I met Prof. Lee in Porto last week."
        ]
    );
    assert_eq!(
        quotes(&HeuristicExtractorV2, &block, &msgs),
        [
            vec!["My mentor Dr. Patel joined the team.", "I met Prof."],
            vec!["Lee in Porto last week."]
        ]
    );
    assert_eq!(
        quotes(&HeuristicExtractorV3, &block, &msgs),
        [
            vec!["My mentor Dr. Patel joined the team."],
            vec!["I met Prof. Lee in Porto last week."]
        ]
    );
}
