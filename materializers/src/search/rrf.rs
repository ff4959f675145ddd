//! Reciprocal rank fusion (spec §11.3, `rrfRank`).
//!
//! `score(item) = Σ_r weight_r / (k + rank_r(item) + 1)` over the rankings
//! that contain the item, with 0-based ranks (so `k = 60` means 1-based
//! ranks `60 + rank`). Results are sorted by score descending, then by the
//! item's best (smallest) rank, then by the item ascending. Scores are
//! ranking-only, not confidences.
//!
//! Per item the contributions are summed in ranking order, so results are
//! deterministic. An item listed twice in one ranking contributes once per
//! listing (the reference walks each ranking in full).

use std::collections::BTreeMap;

/// The RRF constant of the reference.
pub const RRF_K: f64 = 60.0;

/// Fuses rankings with weight 1 each. See the module docs.
pub fn rrf<K: Ord + Clone>(rankings: &[Vec<K>], k: f64) -> Vec<(K, f64)> {
    fuse(rankings.iter().map(|r| (r.as_slice(), 1.0)), k)
}

/// Fuses weighted rankings: each `(ranking, weight)` contributes
/// `weight / (k + rank + 1)`; a ranking with `weight ≤ 0` (or NaN) is
/// skipped entirely (it sets no best rank either).
pub fn rrf_weighted<K: Ord + Clone>(rankings: &[(Vec<K>, f64)], k: f64) -> Vec<(K, f64)> {
    fuse(rankings.iter().map(|(r, w)| (r.as_slice(), *w)), k)
}

fn fuse<'a, K: Ord + Clone + 'a>(
    rankings: impl Iterator<Item = (&'a [K], f64)>,
    k: f64,
) -> Vec<(K, f64)> {
    // item → (score, best rank)
    let mut acc: BTreeMap<&K, (f64, usize)> = BTreeMap::new();
    for (ranking, weight) in rankings {
        if weight.is_nan() || weight <= 0.0 {
            continue;
        }
        for (rank, item) in ranking.iter().enumerate() {
            let add = weight / (k + rank as f64 + 1.0);
            let entry = acc.entry(item).or_insert((0.0, rank));
            entry.0 += add;
            entry.1 = entry.1.min(rank);
        }
    }
    let mut out: Vec<(&K, f64, usize)> = acc.into_iter().map(|(k, (s, r))| (k, s, r)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(b.0)));
    out.into_iter().map(|(k, s, _)| (k.clone(), s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_and_order() {
        let r = rrf(&[vec!["a", "b", "c"], vec!["b", "d"]], RRF_K);
        let ids: Vec<&str> = r.iter().map(|x| x.0).collect();
        assert_eq!(ids, vec!["b", "a", "d", "c"]);
        assert!((r[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert!((r[1].1 - 1.0 / 61.0).abs() < 1e-12);
        // d (rank 1) and c (rank 2) differ in score.
        assert!((r[2].1 - 1.0 / 62.0).abs() < 1e-12);
        assert!((r[3].1 - 1.0 / 63.0).abs() < 1e-12);
    }

    #[test]
    fn ties_by_best_rank_then_id() {
        // z and w: 1/61 each, best rank 0 → by id; p and q: 1/62, rank 1.
        let r = rrf(&[vec!["z", "q"], vec!["w", "p"]], RRF_K);
        let ids: Vec<&str> = r.iter().map(|x| x.0).collect();
        assert_eq!(ids, vec!["w", "z", "p", "q"]);
        // Exact score tie with different best ranks (k = 0): a = 2/(0+1+1)
        // = 1 at best rank 1, b = 1/(0+0+1) = 1 at best rank 0; the best
        // rank wins over the id.
        let r = rrf_weighted(&[(vec!["x", "a"], 2.0), (vec!["b"], 1.0)], 0.0);
        assert_eq!(r[1].1, r[2].1);
        let ids: Vec<&str> = r.iter().map(|x| x.0).collect();
        assert_eq!(ids, vec!["x", "b", "a"]);
    }

    #[test]
    fn weights_skip_non_positive() {
        let r = rrf_weighted(
            &[(vec![1, 2], 1.0), (vec![3, 1], -1.0), (vec![4], f64::NAN)],
            60.0,
        );
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2]);
        let r = rrf_weighted(&[(vec![1, 2], 0.5), (vec![2], 2.0)], 60.0);
        assert_eq!(r[0].0, 2);
        assert!((r[0].1 - (0.5 / 62.0 + 2.0 / 61.0)).abs() < 1e-12);
        assert!(rrf::<u32>(&[], 60.0).is_empty());
        assert!(rrf::<u32>(&[vec![], vec![]], 60.0).is_empty());
    }

    #[test]
    fn deterministic() {
        let rankings = vec![vec![5, 3, 9, 1], vec![9, 1, 7], vec![2, 5]];
        assert_eq!(rrf(&rankings, 60.0), rrf(&rankings, 60.0));
    }
}
