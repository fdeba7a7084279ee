"""Benchmark (b): RRF fusion + TREC-DL pools for 597 queries x 3 runs x 1,000 deep.

On demand, not a test:

    .venv/bin/python bench/pools.py                 # 597 queries, 1,000 deep
    .venv/bin/python bench/pools.py --queries 100   # smaller

SYNTHETIC input (seeded): three first-stage runs per query over a 200k-passage id space with
coarse scores (ties), and ~300 judged passages per query (some never retrieved). Times
``normalize_run`` + ``rrf_fuse`` + ``build_pools`` (rule ``top-k-union-judged``, k 150) against a
naive pure-Python baseline measured in the same run (dict sums per query, ``sorted``), checks
that both give the same pools, and prints the ratio.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict

import numpy as np
import pandas as pd

from rcp_data.building.pools import build_pools, normalize_run, rrf_fuse

RETRIEVERS = ("embed_v4", "bm25", "octen")


def make_input(n_queries: int, depth: int, seed: int = 597) -> tuple[dict, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    runs = {}
    for r in RETRIEVERS:
        q = np.repeat([f"q{i}" for i in range(n_queries)], depth)
        d = np.concatenate([rng.choice(200_000, size=depth, replace=False)
                            for _ in range(n_queries)])
        runs[r] = pd.DataFrame({"query-id": q, "corpus-id": d.astype(str),
                                "score": np.round(rng.normal(size=len(q)), 2)})
    rows = []
    for i in range(n_queries):
        judged = rng.choice(220_000, size=int(rng.integers(150, 450)), replace=False)
        rows.append(pd.DataFrame({"query-id": f"q{i}", "corpus-id": judged.astype(str),
                                  "score": rng.integers(0, 4, size=len(judged))}))
    return runs, pd.concat(rows, ignore_index=True)


def library(runs: dict, qrels: pd.DataFrame, qids: list[str]) -> pd.DataFrame:
    norm = pd.concat([normalize_run(f, r) for r, f in runs.items()], ignore_index=True)
    fused = rrf_fuse(norm, RETRIEVERS, k=60)
    return build_pools(fused, qrels, qids, rule="top-k-union-judged", size=150, grade_positive=1)


def naive(runs: dict, qrels: pd.DataFrame, qids: list[str]) -> list[tuple]:
    """Pure Python: rank each run, fuse with dicts, union the judged passages."""
    per_query: dict = defaultdict(lambda: defaultdict(list))
    for r, f in runs.items():
        for q, d, s in zip(f["query-id"], f["corpus-id"], f["score"], strict=True):
            per_query[q][r].append((d, s))
    grades: dict = defaultdict(dict)
    for q, d, g in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"], strict=True):
        grades[q][d] = g
    out = []
    for q in qids:
        score: dict = {}
        first: dict = {}
        walk = 0
        for r in RETRIEVERS:
            ranked = sorted(per_query[q][r], key=lambda x: (-x[1], tuple(-b for b in x[0].encode())
                                                            + (1,)))
            for rank, (d, _) in enumerate(ranked, start=1):
                score[d] = score.get(d, 0.0) + 1.0 / (60 + rank)
                first.setdefault(d, walk)
                walk += 1
        order = sorted(score, key=lambda d: (-score[d], first[d]))
        pos = {d: i for i, d in enumerate(order)}
        top = order[:150]
        top_set = set(top)
        added = sorted((d for d in grades[q] if d not in top_set),
                       key=lambda d: (pos[d], "") if d in pos else (math.inf, d))
        out += [(q, d) for d in top + added]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=597)
    parser.add_argument("--depth", type=int, default=1000)
    args = parser.parse_args()
    runs, qrels = make_input(args.queries, args.depth)
    qids = [f"q{i}" for i in range(args.queries)]
    print(f"SYNTHETIC input: {args.queries} queries x {len(RETRIEVERS)} runs x {args.depth} deep "
          f"({sum(len(f) for f in runs.values()):,} run rows), {len(qrels):,} judged pairs")
    t0 = time.perf_counter()
    pool = library(runs, qrels, qids)
    t_lib = time.perf_counter() - t0
    t0 = time.perf_counter()
    base = naive(runs, qrels, qids)
    t_naive = time.perf_counter() - t0
    same = list(zip(pool["query-id"], pool["corpus-id"], strict=True)) == base
    print(f"rcp_data.building.pools (normalize_run + rrf_fuse + build_pools): {t_lib:7.2f} s, "
          f"{len(pool):,} pool pairs")
    print(f"naive pure-Python baseline:                              {t_naive:7.2f} s")
    print(f"ratio baseline / library: {t_naive / t_lib:.2f}x; same pools: {same}")
    if not same:
        raise SystemExit("the library and the baseline disagree")


if __name__ == "__main__":
    main()
