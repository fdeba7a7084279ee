"""The one-sort trec_eval order of a run's rows (score descending, ties by corpus-id
descending, byte-wise) equals Python's ``sorted`` on the same keys, for ranked runs (only the
ties sorted) and any other; ids of one word (8 bytes or fewer) or up to three, UTF-8, prefixes
of one another, with zero bytes."""

from __future__ import annotations

import numpy as np
import pytest

from rcp_data.runs.id_spans import IdSpans
from rcp_data.scoring.qrels_score import trec_order

LONG = ["d100000000", "d1000000000000000001", "a" * 20, "a" * 19 + "b"]


@pytest.mark.parametrize("ranked", [True, False])
@pytest.mark.parametrize("kind", ["short", "zero bytes", "long"])
def test_trec_order_equals_sorted(ranked: bool, kind: str) -> None:
    rng = np.random.default_rng(11)
    pool = ["d", "d1", "d10", "\u00e9t\u00e9", "zz", "d1000000"] + [f"doc{i}" for i in range(40)] \
        + {"short": [], "zero bytes": ["d\x00", "d\x00\x00"], "long": LONG}[kind]
    rows = []
    for q in rng.permutation(30):
        docs = rng.choice(pool, size=int(rng.integers(1, 25)), replace=False)
        scores = np.round(rng.normal(size=len(docs)), 0)           # long ties
        if ranked:
            scores = np.sort(scores)[::-1]
        rows += [(int(q), str(d), float(s)) for d, s in zip(docs, scores, strict=True)]
    qpos = np.array([r[0] for r in rows])
    scores = np.array([r[2] for r in rows])
    docs = IdSpans.of([r[1] for r in rows])
    order = trec_order(qpos, scores, docs, docs.words(), ranked=ranked)
    got = [rows[i] for i in order]
    # grouped by query (any order of the groups), each query's rows as trec_eval ranks them
    groups = list(dict.fromkeys(r[0] for r in got))
    assert sorted(groups) == sorted(set(qpos.tolist()))
    want = []
    for q in groups:
        mine = [r for r in rows if r[0] == q]
        want += sorted(mine, key=lambda r: (r[2], r[1].encode()), reverse=True)
    assert got == want
