#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;

/// Deterministic vectors in [-1, 1) (splitmix64).
fn vectors(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    (0..n)
        .map(|_| (0..dims).map(|_| next()).collect())
        .collect()
}

#[test]
fn exact_ranks_by_cosine_then_id_and_filters() {
    let mut index = ExactIndex::new(2);
    index.insert("c", &[1.0, 0.0]).unwrap();
    index.insert("a", &[2.0, 0.0]).unwrap(); // same direction as c
    index.insert("b", &[0.0, 1.0]).unwrap();
    index.insert("d", &[1.0, 1.0]).unwrap();
    let hits = index.search(&[1.0, 0.0], 3, None).unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.id).collect();
    assert_eq!(ids, ["a", "c", "d"]);
    assert!((hits[0].similarity - 1.0).abs() < 1e-6);
    assert!((hits[2].similarity - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    let not_a = |id: &&str| *id != "a";
    let ids: Vec<&str> = index
        .search(&[1.0, 0.0], 10, Some(&not_a))
        .unwrap()
        .iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(ids, ["c", "d", "b"]);
    assert!(index.search(&[1.0, 0.0], 0, None).unwrap().is_empty());
}

#[test]
fn insert_replaces_remove_moves_the_last_row_and_bad_vectors_are_refused() {
    let mut index = ExactIndex::new(2);
    index.insert(1u32, &[1.0, 0.0]).unwrap();
    index.insert(2, &[0.0, 1.0]).unwrap();
    index.insert(3, &[1.0, 1.0]).unwrap();
    index.insert(1, &[0.0, 3.0]).unwrap();
    assert_eq!(index.len(), 3);
    assert_eq!(index.get(&1), Some(&[0.0f32, 1.0][..]));
    assert!(index.remove(&1));
    assert!(!index.remove(&1));
    assert_eq!(index.len(), 2);
    let sq = std::f32::consts::FRAC_1_SQRT_2;
    assert_eq!(index.get(&3), Some(&[sq, sq][..]));
    let hits = index.search(&[0.0, 1.0], 5, None).unwrap();
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [2, 3]);

    assert_eq!(
        index.insert(4, &[1.0]),
        Err(VectorError::Dimensions {
            expected: 2,
            got: 1
        })
    );
    assert_eq!(
        index.insert(4, &[f32::NAN, 0.0]),
        Err(VectorError::NotFinite)
    );
    assert_eq!(index.insert(4, &[0.0, 0.0]), Err(VectorError::Zero));
    assert!(index.search(&[0.0, 0.0], 1, None).is_err());
    assert_eq!(index.len(), 2);
}

#[test]
fn dot_matches_the_plain_sum() {
    let v = vectors(2, 37, 7);
    let plain: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum();
    assert!((dot(&v[0], &v[1]) - plain).abs() < 1e-5);
}

#[test]
fn the_approximate_index_finds_most_neighbours_the_same_way_every_build() {
    let data = vectors(1200, 8, 42);
    let mut exact = ExactIndex::new(8);
    for (i, v) in data.iter().enumerate() {
        exact.insert(i as u32, v).unwrap();
    }
    let config = VectorConfig {
        approximate_above: 1000,
        ef_construction: 40,
        ..VectorConfig::default()
    };
    let index = VectorIndex::build(exact.clone(), &config).unwrap();
    assert!(index.is_approximate());
    let again = ApproxIndex::build(&exact, &config).unwrap();
    let queries = vectors(30, 8, 99);
    let (mut found, mut total) = (0, 0);
    for q in &queries {
        let truth = exact.search(q, 10, None).unwrap();
        let approx = index.search(q, 10, None).unwrap();
        assert_eq!(again.search(q, 10, None).unwrap().unwrap(), approx);
        total += truth.len();
        found += truth
            .iter()
            .filter(|t| approx.iter().any(|a| a.id == t.id))
            .count();
    }
    let recall = found as f64 / total as f64;
    assert!(recall > 0.9, "recall@10 {recall}");
    // A filter that leaves too few candidates falls back to exact.
    let only = |id: &u32| *id < 5;
    let hits = index.search(&queries[0], 10, Some(&only)).unwrap();
    assert_eq!(hits.len(), 5);
    // More than ef_search asked: exact.
    assert_eq!(
        index.search(&queries[0], 200, None).unwrap(),
        exact.search(&queries[0], 200, None).unwrap()
    );
}

#[test]
fn connections_outside_two_to_256_are_refused() {
    let mut exact = ExactIndex::new(2);
    exact.insert(1u32, &[1.0, 0.0]).unwrap();
    for connections in [0, 1, 257] {
        let config = VectorConfig {
            connections,
            ..VectorConfig::default()
        };
        assert!(matches!(
            ApproxIndex::build(&exact, &config),
            Err(VectorError::Build(_))
        ));
    }
}

#[test]
fn a_parallel_build_finds_most_neighbours_too() {
    let data = vectors(1500, 8, 43);
    let mut exact = ExactIndex::new(8);
    for (i, v) in data.iter().enumerate() {
        exact.insert(i as u32, v).unwrap();
    }
    let config = VectorConfig {
        build_threads: 2,
        ..VectorConfig::default()
    };
    let approx = ApproxIndex::build(&exact, &config).unwrap();
    assert_eq!(approx.len(), 1500);
    let (mut found, mut total) = (0, 0);
    for q in &vectors(30, 8, 98) {
        let truth = exact.search(q, 10, None).unwrap();
        let hits = approx.search(q, 10, None).unwrap().unwrap();
        total += truth.len();
        found += truth
            .iter()
            .filter(|t| hits.iter().any(|h| h.id == t.id))
            .count();
    }
    assert!(found as f64 / total as f64 > 0.9);
}
