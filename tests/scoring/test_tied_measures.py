"""Measures in expectation over every order of tied scores equal the mean of ir-measures'
(pytrec_eval provider) values over all those orders, enumerated, on SYNTHETIC queries."""

from __future__ import annotations

from itertools import permutations, product

import numpy as np
import pytest

from rcp_data.scoring.measures import parse_measure
from rcp_data.scoring.tied_measures import compute_tied

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")

NAMES = ["P@2", "P@5", "P(rel=2)@3", "R@3", "R(rel=2)@6", "RR", "RR@2", "RR(rel=2)@4",
         "AP", "AP@4", "AP(rel=2)", "nDCG@3", "nDCG@10", "Success@2", "Success(rel=2)@3",
         "nDCG(judged_only=True)@3", "P(rel=2,judged_only=True)@3", "AP(judged_only=True)",
         "RR(judged_only=True)@3"]

# SYNTHETIC: per query, the run's tie groups (best first) of grades (-1: unjudged), and the
# grades of judged documents the run does not rank
QUERIES = {
    "a": ([[2, 0, -1, 1], [0, 3, 2], [0, 1]], [3, 1]),
    "b": ([[0, 0, 2, 1, 0], [1, -1]], []),
    "c": ([[0, -1, 0], [0]], [2, 1]),                  # nothing relevant ranked
    "d": ([[1], [0, 0, 0], [3, 0]], []),
}


def _tables() -> tuple[dict, dict, list]:
    """Every tie order of every query as its own pseudo-query (strict scores), for
    ir-measures; and the tied rows, for compute_tied."""
    qrels, runs, rows = {}, {}, []
    for q, (groups, extra) in QUERIES.items():
        judged = {}
        docs = []
        for gi, group in enumerate(groups):
            ids = [f"{q}{gi}_{i}" for i in range(len(group))]
            docs.append(ids)
            for d, g in zip(ids, group, strict=True):
                if g >= 0:
                    judged[d] = g
                rows.append((q, len(groups) - gi, g))
        judged.update({f"{q}x{i}": g for i, g in enumerate(extra)})
        for n, orders in enumerate(product(*(permutations(ids) for ids in docs))):
            pq = f"{q}#{n}"
            qrels[pq] = judged
            flat = [d for part in orders for d in part]
            runs[pq] = {d: float(len(flat) - i) for i, d in enumerate(flat)}
    return qrels, runs, rows


def _reference(name: str, qrels: dict, runs: dict) -> dict[str, float]:
    measure = ir_measures.parse_measure(name)
    if not ir_measures.pytrec_eval.supports(measure) and name.startswith("RR") and "@" in name:
        k = int(name.rsplit("@", 1)[1])                  # RR@k: RR of the top k
        if "judged_only=True" in name:
            runs = {q: {d: v for d, v in docs.items() if d in qrels[q]} for q, docs in
                    runs.items()}
        runs = {q: dict(sorted(docs.items(), key=lambda x: -x[1])[:k]) for q, docs in
                runs.items()}
        measure = ir_measures.parse_measure(name.rsplit("@", 1)[0])
    values: dict[str, list[float]] = {}
    for m in ir_measures.pytrec_eval.iter_calc([measure], qrels, runs):
        values.setdefault(m.query_id.split("#")[0], []).append(m.value)
    return {q: float(np.mean(v)) for q, v in values.items()}


@pytest.mark.parametrize("name", NAMES)
def test_expectation_over_tie_orders_equals_enumerated_ir_measures(name: str) -> None:
    qrels, runs, rows = _tables()
    ids = list(QUERIES)
    qpos = np.array([ids.index(q) for q, _, _ in rows])
    scores = np.array([s for _, s, _ in rows], dtype=np.float64)
    grades = np.array([g for _, _, g in rows], dtype=np.float64)
    judged = [np.array([g for g in (*sum(QUERIES[q][0], []), *QUERIES[q][1]) if g >= 0])
              for q in ids]
    got = compute_tied(parse_measure(name), qpos, scores, grades, judged, len(ids))
    # the rows in another order give the same values
    perm = np.random.default_rng(0).permutation(len(rows))
    again = compute_tied(parse_measure(name), qpos[perm], scores[perm], grades[perm], judged,
                         len(ids))
    ref = _reference(name, qrels, runs)
    assert got == pytest.approx([ref[q] for q in ids], abs=1e-12)
    assert again == pytest.approx(got, abs=1e-12)


def test_no_ties_is_the_measure_itself() -> None:
    """Distinct scores: one order, so compute_tied is the plain measure (AP by hand)."""
    qpos = np.zeros(4, dtype=np.int64)
    grades = np.array([2.0, 0.0, 1.0, 0.0])
    got = compute_tied(parse_measure("AP"), qpos, np.array([4.0, 3.0, 2.0, 1.0]), grades,
                       [np.array([2, 0, 1, 0, 3])], 1)
    assert got[0] == pytest.approx((1 / 1 + 2 / 3) / 3)
