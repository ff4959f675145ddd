#!/usr/bin/env python3
"""numpy brute-force top-10 cosine over the vectors the `vectors` bench
wrote, for the note beside its exact and approximate figures. The bench
runs it itself on the rows of each run; by hand:

    STRATAFLOW_BENCH_VECTORS_OUT=/tmp/vec cargo bench --bench vectors
    python3 scripts/vectors_numpy.py /tmp/vec [DIMS]

Reads PATH.vectors.f32 and PATH.queries.f32 (little-endian f32 rows of DIMS,
default 384), scales the rows to unit length once (as the index does at
insert), then times one query at a time: a matrix-vector product and an
argpartition for the top 10, sorted. Prints p50 and p99 in milliseconds and
the threads numpy's BLAS may use.
"""

import sys
import time

import numpy as np


def main() -> None:
    path = sys.argv[1]
    dims = int(sys.argv[2]) if len(sys.argv) > 2 else 384
    rows = np.fromfile(f"{path}.vectors.f32", dtype="<f4").reshape(-1, dims)
    queries = np.fromfile(f"{path}.queries.f32", dtype="<f4").reshape(-1, dims)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    k = 10
    times = []
    for q in queries:
        start = time.perf_counter()
        q = q / np.linalg.norm(q)
        scores = rows @ q
        top = np.argpartition(-scores, k)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        times.append(time.perf_counter() - start)
    times.sort()
    p = lambda f: times[min(len(times) - 1, round((len(times) - 1) * f))] * 1e3
    try:
        import threadpoolctl  # optional: how many BLAS threads

        blas = threadpoolctl.threadpool_info()
        threads = ",".join(str(b.get("num_threads")) for b in blas) or "?"
    except ImportError:
        threads = "?"
    print(
        f"numpy {np.__version__} brute force top-{k} over {rows.shape[0]} x {dims}: "
        f"p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms ({len(times)} queries, BLAS threads {threads})"
    )


if __name__ == "__main__":
    main()
