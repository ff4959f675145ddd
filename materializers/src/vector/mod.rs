//! Vector indexes: top-k cosine over the vectors of one label, a pure data
//! structure (no storage; the views persist and refresh it).
//!
//! - [`ExactIndex`]: every row compared. Rows are scaled to unit length at
//!   insert and kept contiguous (`dims` f32 per row), so cosine is a dot
//!   product computed by a plain loop over eight lanes that the compiler
//!   vectorises; the same rows and query give the same answer bit for bit.
//! - [`ApproxIndex`]: an HNSW graph (`hnsw_rs`) over the same rows, the
//!   rows inserted in order (the same graph every run; more than one
//!   `build_threads` is faster, not reproducible). It can miss a near
//!   neighbour; the bench
//!   `benches/vectors.rs` measures its recall@10 against exact.
//! - [`VectorIndex`]: exact, plus the approximate graph when it holds more
//!   than [`VectorConfig::approximate_above`] rows.
//!
//! Every search returns at most `k` [`Hit`]s, most similar first, equal
//! similarities by id, only ids the filter keeps. Similarity is the cosine
//! (1 − cosine distance).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

/// Why a vector was not inserted or searched.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// The vector's length is not the index's dimensions.
    #[error("a vector of {got} dimensions for an index of {expected}")]
    Dimensions {
        /// The index's dimensions.
        expected: usize,
        /// The vector's length.
        got: usize,
    },
    /// The vector holds a NaN or an infinity.
    #[error("a vector with a value that is not finite")]
    NotFinite,
    /// The vector is all zeros: it has no direction.
    #[error("a zero vector has no direction")]
    Zero,
    /// The approximate index could not be built.
    #[error("cannot build the approximate index: {0}")]
    Build(String),
}

/// One match.
#[derive(Clone, PartialEq, Debug)]
pub struct Hit<Id> {
    /// The row's id.
    pub id: Id,
    /// Cosine similarity with the query, from −1 to 1.
    pub similarity: f32,
}

/// When and how the approximate index is used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VectorConfig {
    /// Rows above which [`VectorIndex`] builds and searches an HNSW graph.
    pub approximate_above: usize,
    /// Candidates kept while inserting (HNSW `ef_construction`).
    pub ef_construction: usize,
    /// Candidates kept while searching (HNSW `ef_search`); a search for more
    /// than this many hits is exact.
    pub ef_search: usize,
    /// Links kept per row and layer (HNSW `M`, 2..=256).
    pub connections: usize,
    /// Threads building the graph; 1 (rows inserted in order) builds the
    /// same graph every run, more do not.
    pub build_threads: usize,
}

impl Default for VectorConfig {
    fn default() -> Self {
        Self {
            approximate_above: 50_000,
            ef_construction: 40,
            ef_search: 100,
            connections: 12,
            build_threads: 1,
        }
    }
}

/// Checks a vector against `dims` and returns it scaled to unit length.
fn unit(dims: usize, vector: &[f32]) -> Result<Vec<f32>, VectorError> {
    if vector.len() != dims {
        return Err(VectorError::Dimensions {
            expected: dims,
            got: vector.len(),
        });
    }
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(VectorError::NotFinite);
    }
    let norm = dot(vector, vector).sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Err(VectorError::Zero);
    }
    Ok(vector.iter().map(|x| x / norm).collect())
}

/// The dot product over eight lanes (vectorised), lanes summed in order.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// A candidate in a top-k heap: "greater" is a better match (higher
/// similarity, then smaller id).
struct Ranked<'a, Id> {
    similarity: f32,
    id: &'a Id,
}

impl<Id: Ord> Ord for Ranked<'_, Id> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.similarity
            .total_cmp(&other.similarity)
            .then_with(|| other.id.cmp(self.id))
    }
}

impl<Id: Ord> PartialOrd for Ranked<'_, Id> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<Id: Ord> PartialEq for Ranked<'_, Id> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<Id: Ord> Eq for Ranked<'_, Id> {}

/// Keeps the best `k` of what it is offered.
struct TopK<'a, Id> {
    k: usize,
    /// A min-heap through `Reverse`: its top is the worst kept.
    heap: BinaryHeap<std::cmp::Reverse<Ranked<'a, Id>>>,
}

impl<'a, Id: Ord + Clone> TopK<'a, Id> {
    fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    fn offer(&mut self, similarity: f32, id: &'a Id) {
        if self.k == 0 {
            return;
        }
        let candidate = Ranked { similarity, id };
        if self.heap.len() < self.k {
            self.heap.push(std::cmp::Reverse(candidate));
        } else if self.heap.peek().is_some_and(|worst| candidate > worst.0) {
            self.heap.pop();
            self.heap.push(std::cmp::Reverse(candidate));
        }
    }

    fn hits(self) -> Vec<Hit<Id>> {
        let mut ranked: Vec<Ranked<'a, Id>> = self.heap.into_iter().map(|r| r.0).collect();
        ranked.sort_by(|a, b| b.cmp(a));
        ranked
            .into_iter()
            .map(|r| Hit {
                id: r.id.clone(),
                similarity: r.similarity,
            })
            .collect()
    }
}

/// Exact top-k cosine over contiguous unit rows.
#[derive(Clone, Debug)]
pub struct ExactIndex<Id> {
    dims: usize,
    ids: Vec<Id>,
    rows: Vec<f32>,
    positions: BTreeMap<Id, usize>,
}

impl<Id: Ord + Clone> ExactIndex<Id> {
    /// An empty index of vectors of `dims` values.
    pub fn new(dims: usize) -> Self {
        Self {
            dims,
            ids: Vec::new(),
            rows: Vec::new(),
            positions: BTreeMap::new(),
        }
    }

    /// The vectors' length.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Inserts `vector` under `id` (scaled to unit length), replacing the
    /// id's row when it has one.
    ///
    /// # Errors
    /// [`VectorError`] for a wrong length, a non-finite value or a zero
    /// vector; the index is unchanged.
    pub fn insert(&mut self, id: Id, vector: &[f32]) -> Result<(), VectorError> {
        let row = unit(self.dims, vector)?;
        match self.positions.get(&id) {
            Some(&i) => {
                if let Some(slot) = self.rows.get_mut(i * self.dims..(i + 1) * self.dims) {
                    slot.copy_from_slice(&row);
                }
            }
            None => {
                self.positions.insert(id.clone(), self.ids.len());
                self.ids.push(id);
                self.rows.extend_from_slice(&row);
            }
        }
        Ok(())
    }

    /// Removes an id's row; whether it had one. The last row takes its
    /// place.
    pub fn remove(&mut self, id: &Id) -> bool {
        let Some(i) = self.positions.remove(id) else {
            return false;
        };
        let last = self.ids.len() - 1;
        if i != last {
            self.rows
                .copy_within(last * self.dims..(last + 1) * self.dims, i * self.dims);
            self.ids.swap(i, last);
            if let Some(moved) = self.ids.get(i) {
                self.positions.insert(moved.clone(), i);
            }
        }
        self.ids.pop();
        self.rows.truncate(last * self.dims);
        true
    }

    /// The unit row of an id.
    pub fn get(&self, id: &Id) -> Option<&[f32]> {
        let &i = self.positions.get(id)?;
        self.row(i)
    }

    /// The ids in row order and their unit rows, contiguous (`dims` values
    /// each, row `i` at `i * dims`): what a persisted view stores.
    pub fn rows(&self) -> (&[Id], &[f32]) {
        (&self.ids, &self.rows)
    }

    /// An index of rows as [`ExactIndex::rows`] gave them: already unit
    /// length, so they are taken as they are (a persisted view reads back
    /// bit for bit). An id given twice keeps its first row's position.
    ///
    /// # Errors
    /// [`VectorError::Dimensions`] when `rows` is not `dims` values per
    /// id; [`VectorError::NotFinite`] for a NaN or an infinity.
    pub fn from_unit_rows(dims: usize, ids: Vec<Id>, rows: Vec<f32>) -> Result<Self, VectorError> {
        if Some(rows.len()) != ids.len().checked_mul(dims) {
            return Err(VectorError::Dimensions {
                expected: ids.len().saturating_mul(dims),
                got: rows.len(),
            });
        }
        if rows.iter().any(|v| !v.is_finite()) {
            return Err(VectorError::NotFinite);
        }
        let mut positions = BTreeMap::new();
        for (i, id) in ids.iter().enumerate() {
            positions.entry(id.clone()).or_insert(i);
        }
        Ok(Self {
            dims,
            ids,
            rows,
            positions,
        })
    }

    fn row(&self, i: usize) -> Option<&[f32]> {
        self.rows.get(i * self.dims..(i + 1) * self.dims)
    }

    /// The `k` rows most similar to `query` among those `filter` keeps.
    ///
    /// # Errors
    /// [`VectorError`] for a query of the wrong length, not finite or zero.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&dyn Fn(&Id) -> bool>,
    ) -> Result<Vec<Hit<Id>>, VectorError> {
        let query = unit(self.dims, query)?;
        let mut top = TopK::new(k);
        if self.dims == 0 {
            return Ok(top.hits());
        }
        for (id, row) in self.ids.iter().zip(self.rows.chunks_exact(self.dims)) {
            if filter.is_none_or(|keep| keep(id)) {
                top.offer(dot(&query, row), id);
            }
        }
        Ok(top.hits())
    }
}

/// Cosine distance of unit rows (1 − dot), never negative nor NaN.
#[derive(Clone, Copy, Default, Debug)]
struct UnitCosine;

impl hnsw_rs::prelude::Distance<f32> for UnitCosine {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// An HNSW graph (`hnsw_rs`) over a copy of an exact index's rows.
pub struct ApproxIndex<Id> {
    dims: usize,
    ids: Vec<Id>,
    hnsw: hnsw_rs::hnsw::Hnsw<'static, f32, UnitCosine>,
    ef_search: usize,
}

impl<Id> std::fmt::Debug for ApproxIndex<Id> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApproxIndex")
            .field("dims", &self.dims)
            .field("rows", &self.ids.len())
            .finish_non_exhaustive()
    }
}

/// Most layers of a graph (`hnsw_rs`' limit).
const MAX_LAYERS: usize = 16;

impl<Id: Ord + Clone + Send + Sync> ApproxIndex<Id> {
    /// Builds the graph over `exact`'s rows with `config`'s parameters:
    /// rows inserted one after the other in the index's order (the same
    /// graph every run), or on `build_threads` threads when more than 1
    /// (faster; the graph, hence an answer, may then differ between runs).
    ///
    /// # Errors
    /// [`VectorError::Build`] when the build's thread pool cannot start or
    /// `connections` is not in 2..=256.
    pub fn build(exact: &ExactIndex<Id>, config: &VectorConfig) -> Result<Self, VectorError> {
        if !(2..=256).contains(&config.connections) {
            return Err(VectorError::Build(format!(
                "connections must be in 2..=256, not {}",
                config.connections
            )));
        }
        let dims = exact.dims;
        let hnsw = hnsw_rs::hnsw::Hnsw::new(
            config.connections,
            exact.len().max(1),
            MAX_LAYERS,
            config.ef_construction.max(1),
            UnitCosine,
        );
        if dims > 0 {
            let rows: Vec<(&[f32], usize)> = exact
                .rows
                .chunks_exact(dims)
                .enumerate()
                .map(|(i, row)| (row, i))
                .collect();
            if config.build_threads > 1 {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(config.build_threads)
                    .build()
                    .map_err(|e| VectorError::Build(e.to_string()))?;
                pool.install(|| hnsw.parallel_insert_slice(&rows));
            } else {
                for row in rows {
                    hnsw.insert_slice(row);
                }
            }
        }
        Ok(Self {
            dims,
            ids: exact.ids.clone(),
            hnsw,
            ef_search: config.ef_search,
        })
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Up to `k` approximate nearest rows that `filter` keeps, from the
    /// graph's `ef_search` candidates; `None` when those are not enough
    /// (more than `ef_search` asked, or the filter left fewer than `k`), so
    /// that the caller searches exactly.
    ///
    /// # Errors
    /// [`VectorError`] for a query of the wrong length, not finite or zero.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&dyn Fn(&Id) -> bool>,
    ) -> Result<Option<Vec<Hit<Id>>>, VectorError> {
        let query = unit(self.dims, query)?;
        if k > self.ef_search {
            return Ok(None);
        }
        let keep = |row: &usize| {
            self.ids
                .get(*row)
                .is_some_and(|id| filter.is_none_or(|keep| keep(id)))
        };
        let found = self.hnsw.search_filter(
            &query,
            self.ef_search,
            self.ef_search,
            filter.map(|_| &keep as &dyn hnsw_rs::prelude::FilterT),
        );
        let mut top = TopK::new(k);
        let mut kept = 0usize;
        for n in &found {
            if let Some(id) = self.ids.get(n.d_id)
                && keep(&n.d_id)
            {
                kept += 1;
                top.offer(1.0 - n.distance, id);
            }
        }
        Ok((kept >= k.min(self.ids.len())).then(|| top.hits()))
    }
}

/// Exact rows, plus an HNSW graph above the configured size.
#[derive(Debug)]
pub struct VectorIndex<Id> {
    exact: ExactIndex<Id>,
    approx: Option<ApproxIndex<Id>>,
}

impl<Id: Ord + Clone + Send + Sync> VectorIndex<Id> {
    /// Takes the exact rows and builds the graph when they are more than
    /// `config.approximate_above`.
    ///
    /// # Errors
    /// [`VectorError::Build`] when the graph cannot be built.
    pub fn build(exact: ExactIndex<Id>, config: &VectorConfig) -> Result<Self, VectorError> {
        let approx = if exact.len() > config.approximate_above {
            Some(ApproxIndex::build(&exact, config)?)
        } else {
            None
        };
        Ok(Self { exact, approx })
    }

    /// The exact rows.
    pub fn exact(&self) -> &ExactIndex<Id> {
        &self.exact
    }

    /// Whether searches go through the graph.
    pub fn is_approximate(&self) -> bool {
        self.approx.is_some()
    }

    /// The `k` most similar rows that `filter` keeps: through the graph when
    /// there is one and its candidates suffice, else exactly.
    ///
    /// # Errors
    /// [`VectorError`] for a query of the wrong length, not finite or zero.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&dyn Fn(&Id) -> bool>,
    ) -> Result<Vec<Hit<Id>>, VectorError> {
        if let Some(approx) = &self.approx
            && let Some(hits) = approx.search(query, k, filter)?
        {
            return Ok(hits);
        }
        self.exact.search(query, k, filter)
    }
}

#[cfg(test)]
mod tests;
