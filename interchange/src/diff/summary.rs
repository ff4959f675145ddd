//! The summary difference of two profiles: the block summary each
//! profile's summarizer produced, compared block by block.

use std::collections::BTreeMap;

use strataflow_log::RecordId;
use strataflow_log::record::BlockSummary;

use super::FieldChange;

/// A block whose two summaries differ.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SummaryChange {
    /// The block.
    pub block: RecordId,
    /// Its thread.
    pub thread: String,
    /// What differs (title, tags, summary, key points, should_extract).
    pub fields: Vec<FieldChange>,
}

/// The summary difference of two profiles.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SummaryDiff {
    /// Blocks whose summaries are equal (shared summarizer: the same record).
    pub same: usize,
    /// Blocks whose summaries differ.
    pub different: Vec<SummaryChange>,
    /// Blocks only A has summarized.
    pub only_a: Vec<RecordId>,
    /// Blocks only B has summarized.
    pub only_b: Vec<RecordId>,
}

/// Compares two profiles' summaries, given as `(block, thread, summary)`
/// in thread and block order.
pub fn diff_summaries(
    a: &[(RecordId, String, BlockSummary)],
    b: &[(RecordId, String, BlockSummary)],
) -> SummaryDiff {
    let by_block: BTreeMap<RecordId, &BlockSummary> = b.iter().map(|(id, _, s)| (*id, s)).collect();
    let in_a: BTreeMap<RecordId, ()> = a.iter().map(|(id, _, _)| (*id, ())).collect();
    let mut out = SummaryDiff::default();
    for (block, thread, x) in a {
        let Some(y) = by_block.get(block) else {
            out.only_a.push(*block);
            continue;
        };
        let fields = changes(x, y);
        if fields.is_empty() {
            out.same += 1;
        } else {
            out.different.push(SummaryChange {
                block: *block,
                thread: thread.clone(),
                fields,
            });
        }
    }
    out.only_b = b
        .iter()
        .filter(|(id, _, _)| !in_a.contains_key(id))
        .map(|(id, _, _)| *id)
        .collect();
    out
}

fn changes(a: &BlockSummary, b: &BlockSummary) -> Vec<FieldChange> {
    let mut out = Vec::new();
    let mut field = |name: &'static str, x: String, y: String| {
        if x != y {
            out.push(FieldChange {
                field: name,
                a: x,
                b: y,
            });
        }
    };
    field("title", a.title.clone(), b.title.clone());
    field("tags", a.tags.join(", "), b.tags.join(", "));
    field("summary", a.summary.clone(), b.summary.clone());
    field(
        "key_points",
        a.key_points.join(" | "),
        b.key_points.join(" | "),
    );
    field(
        "should_extract",
        a.should_extract.to_string(),
        b.should_extract.to_string(),
    );
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn summary(title: &str, extract: bool) -> BlockSummary {
        BlockSummary {
            tenant: String::new(),
            block: RecordId::default(),
            title: title.into(),
            tags: vec!["t".into()],
            summary: "s".into(),
            key_points: vec!["k".into()],
            should_extract: extract,
        }
    }

    #[test]
    fn differing_fields_are_named_per_block() {
        let (b1, b2, b3) = (RecordId([1; 32]), RecordId([2; 32]), RecordId([3; 32]));
        let a = vec![
            (b1, "t".to_owned(), summary("x", true)),
            (b2, "t".to_owned(), summary("y", true)),
        ];
        let b = vec![
            (b1, "t".to_owned(), summary("x", true)),
            (b2, "t".to_owned(), summary("z", false)),
            (b3, "t".to_owned(), summary("w", true)),
        ];
        let d = diff_summaries(&a, &b);
        assert_eq!(d.same, 1);
        assert_eq!(d.different.len(), 1);
        let names: Vec<_> = d.different[0].fields.iter().map(|f| f.field).collect();
        assert_eq!(names, vec!["title", "should_extract"]);
        assert_eq!(d.only_b, vec![b3]);
        assert!(d.only_a.is_empty());
    }
}
