"""RRF fusion and the TREC-DL pool rule against an independent brute force (seeded inputs)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from support import trecdl_fixtures as fx

from rcp_data.building.pools import build_pools, normalize_run, rrf_fuse
from rcp_data.core.errors import InputError

RETRIEVERS = list(fx.RETRIEVERS)


def _runs(seed: int, n_queries: int = 12, depth: int = 200, n_docs: int = 600,
          decimals: int = 1) -> pd.DataFrame:
    """Seeded SYNTHETIC first-stage runs; coarse scores so that many ties occur."""
    rng = np.random.default_rng(seed)
    parts = []
    for r in RETRIEVERS:
        for q in range(n_queries):
            docs = rng.choice(n_docs, size=depth, replace=False)
            frame = pd.DataFrame({"query-id": f"q{q}", "corpus-id": [f"d{d}" for d in docs],
                                  "score": np.round(rng.normal(size=depth), decimals)})
            parts.append(normalize_run(frame, r))
    return pd.concat(parts, ignore_index=True)


def _qrels(seed: int, n_queries: int = 12, n_docs: int = 900) -> pd.DataFrame:
    rng = np.random.default_rng(seed + 1)
    rows = []
    for q in range(n_queries):
        # judged passages: some retrieved (< 600), some never retrieved (>= 600)
        for d in rng.choice(n_docs, size=int(rng.integers(40, 260)), replace=False):
            rows.append((f"q{q}", f"d{d}", int(rng.integers(0, 4))))
    return pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rrf_matches_brute_force(seed):
    runs = _runs(seed)
    fused = rrf_fuse(runs, RETRIEVERS, k=60)
    for q, grp in runs.groupby("query-id"):
        per = {r: list(zip(g["corpus-id"], g["rank"], strict=True))
               for r, g in grp.groupby("retriever")}
        expected = fx.brute_force_fuse(per)
        got = fused[fused["query-id"] == q]
        assert got["corpus-id"].tolist() == [d for d, _ in expected]
        assert got["rank"].tolist() == list(range(1, len(expected) + 1))
        assert np.max(np.abs(got["score"].to_numpy() - [s for _, s in expected])) < 1e-15


def test_rrf_tie_rule_hand_worked():
    # every document scores 1/61 + 1/62 (a three-way tie): embed_v4 a 1, c 2; bm25 c 1, b 2;
    # octen b 1, a 2. Walking embed_v4, bm25, octen, the first appearances are a, c, b.
    runs = pd.DataFrame({
        "retriever": ["embed_v4", "embed_v4", "bm25", "bm25", "octen", "octen"],
        "query-id": "q", "corpus-id": ["a", "c", "c", "b", "b", "a"],
        "rank": [1, 2, 1, 2, 1, 2], "score": 1.0})
    fused = rrf_fuse(runs, RETRIEVERS)
    assert fused["corpus-id"].tolist() == ["a", "c", "b"]
    assert fused["score"].nunique() == 1 and fused["score"].iloc[0] == 1 / 61 + 1 / 62
    # another walk order, another tie order: octen first gives b, a, c
    fused = rrf_fuse(runs, ["octen", "bm25", "embed_v4"])
    assert fused["corpus-id"].tolist() == ["b", "a", "c"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_union_judged_pool_matches_brute_force(seed):
    runs, qrels = _runs(seed), _qrels(seed)
    qids = [f"q{q}" for q in range(12)]
    fused = rrf_fuse(runs, RETRIEVERS, k=60)
    pool = build_pools(fused, qrels, qids, rule="top-k-union-judged", size=150,
                       grade_positive=1)
    expected = fx.brute_force_pools(runs, qrels, qids)
    assert pool["query-id"].tolist() == expected["query-id"].tolist()
    assert pool["corpus-id"].tolist() == expected["corpus-id"].tolist()
    assert pool["pool_rank"].tolist() == expected["pool_rank"].tolist()
    assert pool["gt_injected"].tolist() == expected["gt_injected"].tolist()
    np.testing.assert_allclose(pool["rrf_score"], expected["rrf_score"], rtol=0, atol=1e-15)
    # sizes: 150 + judged passages outside the top 150
    for q in qids:
        top = set(fused[(fused["query-id"] == q) & (fused["rank"] <= 150)]["corpus-id"])
        judged = set(qrels[qrels["query-id"] == q]["corpus-id"])
        assert (pool["query-id"] == q).sum() == len(top | judged)
    # never-retrieved judged passages come last, by corpus-id
    for q, grp in pool.groupby("query-id"):
        retrieved = set(fused[fused["query-id"] == q]["corpus-id"])
        tail = [d for d in grp["corpus-id"] if d not in retrieved]
        assert tail == sorted(tail)
        assert grp["corpus-id"].tolist()[-len(tail):] == tail if tail else True


def test_tied_first_stage_gives_the_same_pool_on_every_run():
    runs = _runs(7, decimals=0)  # very coarse scores: large tie groups
    raw = runs.drop(columns=["rank", "retriever"]).assign(retriever=runs["retriever"])
    qrels = _qrels(7)
    qids = sorted(set(runs["query-id"]))
    pools = []
    for perm_seed in range(4):
        rng = np.random.default_rng(perm_seed)
        shuffled = raw.iloc[rng.permutation(len(raw))]
        parts = [normalize_run(g.drop(columns="retriever"), r)
                 for r, g in shuffled.groupby("retriever")]
        fused = rrf_fuse(pd.concat(parts, ignore_index=True), RETRIEVERS)
        pools.append(build_pools(fused, qrels, qids, rule="top-k-union-judged", size=150,
                                 grade_positive=1))
    for p in pools[1:]:
        pd.testing.assert_frame_equal(p, pools[0])


def test_normalize_run_tie_order_is_corpus_id_descending_bytewise():
    frame = pd.DataFrame({"query-id": "q", "corpus-id": ["10", "9", "100", "b"],
                          "score": [1.0, 1.0, 1.0, 2.0]})
    run = normalize_run(frame, "bm25")
    assert run["corpus-id"].tolist() == ["b", "9", "100", "10"]


@pytest.mark.parametrize("ranks, why, row", [([0, 1, 2], "is not an integer >= 1", 4),
                                             ([1, 2, 2], "repeats within query", 6)])
def test_normalize_run_refuses_ranks_that_do_not_count_from_one(ranks, why, row):
    # RRF adds 1 / (k + rank): a 0-based or repeated rank would silently change the fusion
    frame = pd.DataFrame({"query-id": "q", "corpus-id": ["a", "b", "c"], "score": [3.0, 2, 1],
                          "rank": ranks, "_line": [4, 5, 6]})
    with pytest.raises(InputError, match=why) as err:
        normalize_run(frame, "octen", source="octen.trec")
    assert err.value.row == row and err.value.path == "octen.trec"


def _inject_by_hand(fused: list[tuple[str, float]], grades: dict[str, int], size: int,
                    never: set[str]) -> list[tuple[str, float, bool]]:
    """The top-k-inject rule read literally, one missed positive at a time."""
    fused = [(d, s) for d, s in fused if d not in never]
    pos = {d for d, g in grades.items() if g >= 1 and d not in never}
    rank = {d: i for i, (d, _) in enumerate(fused)}
    pool = [(d, s, False) for d, s in fused[:size]]
    missed = sorted(pos - {d for d, _, _ in pool},
                    key=lambda d: (rank[d], "") if d in rank else (math.inf, d))
    for d in missed:
        if len(pool) == size:  # replace the lowest-ranked non-relevant candidate
            free = [i for i, (c, _, inj) in enumerate(pool) if not inj and c not in pos]
            if not free:
                break  # more positives than fit: the rest stay outside
            pool.pop(free[-1])
        pool.append((d, 0.0, True))
    return pool


@pytest.mark.parametrize("seed", range(40))
def test_inject_pool_matches_the_rule_read_literally(seed):
    # SYNTHETIC: small random runs, short fused lists, never-retrieved and unpoolable positives
    rng = np.random.default_rng(seed)
    n_docs, size = int(rng.integers(5, 60)), int(rng.integers(1, 20))
    parts = []
    for r in RETRIEVERS:
        docs = rng.choice(n_docs, size=int(rng.integers(0, min(n_docs, 25))), replace=False)
        parts.append(normalize_run(pd.DataFrame({
            "query-id": "q", "corpus-id": [f"d{d}" for d in docs],
            "score": np.round(rng.normal(size=len(docs)))}), r))
    pos = rng.choice(n_docs + 20, size=int(rng.integers(0, 25)), replace=False)
    qrels = pd.DataFrame({"query-id": "q", "corpus-id": [f"d{d}" for d in pos],
                          "score": rng.integers(0, 3, size=len(pos))})
    never = {f"d{d}" for d in rng.choice(n_docs, size=2)} if seed % 3 == 0 else set()
    fused = rrf_fuse(pd.concat(parts, ignore_index=True), RETRIEVERS)
    pool = build_pools(fused, qrels, ["q"], rule="top-k-inject", size=size, grade_positive=1,
                       never_pool=never)
    expected = _inject_by_hand(list(zip(fused["corpus-id"], fused["score"], strict=True)),
                               dict(zip(qrels["corpus-id"], qrels["score"], strict=True)),
                               size, never)
    assert pool["corpus-id"].tolist() == [d for d, _, _ in expected]
    assert pool["gt_injected"].tolist() == [i for _, _, i in expected]
    assert pool["rrf_score"].tolist() == [s for _, s, _ in expected]
    assert pool["pool_rank"].tolist() == list(range(1, len(expected) + 1))
