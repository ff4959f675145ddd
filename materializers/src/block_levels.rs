//! The block levels view: the decayed detail level of every ready block
//! (spec §6.3, §6.5).
//!
//! Per thread, blocks get a position (1, 2, …) in the order they became
//! ready; a block is anchored at level 5 and its own position. An expansion
//! re-anchors the block at the requested level and at the thread's latest
//! position at that moment, so later decay starts from that level. The
//! level now is `decayed_level(anchor level, anchor position, latest
//! position, λ = 0.30)`. Pending blocks and the open tail never age a block.
//! Inputs are given in log order; positions come from that order, not from
//! any clock.

use std::collections::BTreeMap;

use strataflow_operators::decay::{BLOCK_DECAY_LAMBDA, decayed_level};
use strataflow_record::RecordId;

/// One record of the fold, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LevelInput {
    /// A block of the thread became ready.
    Ready(RecordId),
    /// A block was expanded to a level.
    Expand {
        /// The block.
        block: RecordId,
        /// The level it was expanded to.
        level: u8,
    },
}

/// The level state of one ready block.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockLevel {
    /// The block.
    pub block: RecordId,
    /// 1-based position among the thread's ready blocks.
    pub position: u32,
    /// Level it was anchored at.
    pub anchor_level: u8,
    /// Position it was anchored at.
    pub anchor_position: u32,
    /// Ready blocks after it.
    pub age: u32,
    /// Its decayed level now.
    pub level: u8,
}

/// Levels of the ready blocks of one thread.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ThreadLevels {
    /// Blocks in position order.
    pub blocks: Vec<BlockLevel>,
}

impl ThreadLevels {
    /// Folds one thread's inputs (in log order).
    pub fn fold(inputs: impl IntoIterator<Item = LevelInput>) -> Self {
        let mut blocks: Vec<BlockLevel> = Vec::new();
        let mut index: BTreeMap<RecordId, usize> = BTreeMap::new();
        for input in inputs {
            match input {
                LevelInput::Ready(id) => {
                    if index.contains_key(&id) {
                        continue;
                    }
                    let position = u32::try_from(blocks.len() + 1).unwrap_or(u32::MAX);
                    index.insert(id, blocks.len());
                    blocks.push(BlockLevel {
                        block: id,
                        position,
                        anchor_level: 5,
                        anchor_position: position,
                        age: 0,
                        level: 5,
                    });
                }
                LevelInput::Expand { block, level } => {
                    let latest = u32::try_from(blocks.len()).unwrap_or(u32::MAX);
                    if let Some(b) = index.get(&block).and_then(|i| blocks.get_mut(*i)) {
                        b.anchor_level = level.min(5);
                        b.anchor_position = latest;
                    }
                }
            }
        }
        let latest = u32::try_from(blocks.len()).unwrap_or(u32::MAX);
        for b in &mut blocks {
            b.age = latest.saturating_sub(b.position);
            b.level = decayed_level(
                b.anchor_level,
                b.anchor_position,
                latest,
                BLOCK_DECAY_LAMBDA,
            );
        }
        Self { blocks }
    }

    /// The state of one block.
    pub fn get(&self, block: &RecordId) -> Option<&BlockLevel> {
        self.blocks.iter().find(|b| b.block == *block)
    }

    /// blake3 hex over blocks, positions and anchors.
    pub fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow view block_levels v1");
        for b in &self.blocks {
            h.update(b.block.as_bytes());
            h.update(&b.position.to_be_bytes());
            h.update(&[b.anchor_level]);
            h.update(&b.anchor_position.to_be_bytes());
        }
        h.finalize().to_hex().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> RecordId {
        RecordId([n; 32])
    }

    #[test]
    fn levels_follow_the_decay_table_by_ready_block_age() {
        let levels = ThreadLevels::fold((1..=10).map(|n| LevelInput::Ready(id(n))));
        let got: Vec<u8> = levels.blocks.iter().rev().map(|b| b.level).collect();
        assert_eq!(got, vec![5, 5, 4, 3, 3, 2, 2, 1, 1, 0], "ages 0..9");
    }

    #[test]
    fn expansion_re_anchors_and_decays_from_the_new_level() {
        let mut inputs: Vec<LevelInput> = (1..=6).map(|n| LevelInput::Ready(id(n))).collect();
        inputs.push(LevelInput::Expand {
            block: id(1),
            level: 3,
        });
        let now = ThreadLevels::fold(inputs.clone());
        assert_eq!(
            now.get(&id(1)).map(|b| (b.level, b.anchor_position)),
            Some((3, 6))
        );
        inputs.extend((7..=8).map(|n| LevelInput::Ready(id(n))));
        let later = ThreadLevels::fold(inputs);
        assert_eq!(
            later.get(&id(1)).map(|b| b.level),
            Some(2),
            "decays from L3, never jumps to L5"
        );
    }
}
