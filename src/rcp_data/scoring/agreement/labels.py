"""The label layer: how a score orders documents the humans graded (paper B.2, E.4).

- :func:`ordered_pairs`: per group, the pairs of documents with different labels and how many
  the score orders like the labels, ties of the score counting 1/2 (a Mann-Whitney count);
- :func:`concordance`: within-query concordance (pairs of one query, different grades);
- :func:`pooled_auc`: the AUC of a grade threshold over all documents of all queries, with a
  query-clustered bootstrap (the value from one sort; the cross-query pair counts, a query x
  query matrix, only when an interval needs them);
- :func:`pooled_spearman`: Spearman of a score with the grade over all graded documents, with
  its ceiling (each query's values reassigned in grade order) and floor (shuffled within each
  query);
- :func:`count_share`: Count's gain of a document, its passed criteria over C times its
  Stage B windows (Eq. 5; :func:`rcp_data.core.gains.count_gain`).

Scores are any monotone stand-in of the gain: the calibrated theta for RCP, the centred raw
Bradley-Terry score for raw BT, the pass share for Count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from rcp_data.model.orders import (
    dense_codes,
    lex_order,
    sorting_order,
    stable_order,
)
from rcp_data.scoring.agreement.bootstrap import Interval, interval, ratio_of_sums

FLOOR_SHUFFLES = 20


@dataclass(frozen=True)
class PairCounts:
    """Per group: score-concordant pairs (ties 1/2) and pairs with different labels."""

    wins: np.ndarray
    pairs: np.ndarray

    @property
    def rate(self) -> float:
        total = self.pairs.sum()
        return float(self.wins.sum() / total) if total else float("nan")

    def with_interval(self, weights: np.ndarray | None) -> Interval:
        return ratio_of_sums(self.wins, self.pairs, weights)


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``np.unique(values, return_inverse=True)``'s codes and their count."""
    return dense_codes(values)


def _int_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Order-keeping codes of integers: the values less their minimum where the range is no
    larger than the array, else :func:`_codes`."""
    v = np.asarray(values)
    if v.dtype.kind in "iu" and len(v):
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < max(len(v), 1 << 16):
            return v.astype(np.int64) - lo, hi - lo + 1
    return _codes(v)


def ordered_pairs(score: np.ndarray, label: np.ndarray, group: np.ndarray,
                  n_groups: int | None = None, *, score_codes: tuple[np.ndarray, int] | None
                  = None, label_codes: tuple[np.ndarray, int] | None = None) -> PairCounts:
    """Pairs ``(i, j)`` of one group with ``label[i] > label[j]``: how many have
    ``score[i] > score[j]`` (plus half those with equal scores), per group code
    (``group``: ints ``0..n_groups-1``). O(n log n) per label level, no per-group loop.
    ``score_codes`` / ``label_codes``: ``(codes, n)`` of ints ``0..n-1`` in the order of the
    values, when the caller has them (only their order within a group counts)."""
    score = np.asarray(score, dtype=np.float64)
    group = np.asarray(group, dtype=np.int64)
    n_groups = int(group.max()) + 1 if n_groups is None and len(group) else (n_groups or 0)
    rank, n_ranks = _codes(score) if score_codes is None else score_codes
    level, n_levels = _codes(label) if label_codes is None else label_codes
    span = n_ranks + 1
    key = group * span + rank
    base = group * span
    wins = np.zeros(len(score))
    pairs = np.zeros(len(score))
    for b in range(n_levels - 1):
        kb = np.sort(key[level == b])
        above = level > b
        k, g0 = key[above], base[above]
        start = np.searchsorted(kb, g0, "left")
        left = np.searchsorted(kb, k, "left")
        right = np.searchsorted(kb, k, "right")
        end = np.searchsorted(kb, g0 + span, "left")
        wins[above] += (left - start) + 0.5 * (right - left)
        pairs[above] += end - start
    return PairCounts(np.bincount(group, wins, minlength=n_groups),
                      np.bincount(group, pairs, minlength=n_groups))


def concordance(score: np.ndarray, grade: np.ndarray, query: np.ndarray,
                n_queries: int | None = None) -> PairCounts:
    """Within-query concordance counts of ``score`` with ``grade`` (0.5 is chance)."""
    return ordered_pairs(score, grade, query, n_queries)


@dataclass(frozen=True)
class PooledAuc:
    """Pooled AUC counts: ``u``, Mann-Whitney's U over all positives x all negatives (ties
    1/2); per query ``positives`` and ``negatives``; and, computed on first use (an interval
    needs it, a value does not), ``wins[q1, q2]`` over positives of q1 and negatives of q2."""

    u: float
    positives: np.ndarray
    negatives: np.ndarray
    _score: np.ndarray = field(repr=False, compare=False)
    _positive: np.ndarray = field(repr=False, compare=False)
    _query: np.ndarray = field(repr=False, compare=False)

    @property
    def value(self) -> float:
        den = self.positives.sum() * self.negatives.sum()
        return float(self.u / den) if den else float("nan")

    @cached_property
    def wins(self) -> np.ndarray:
        """``(Q, Q)`` cross-query pair counts; ``wins.sum() == u`` (integer counts, exact)."""
        return _pair_matrix(self._score, self._positive, self._query, len(self.positives))

    def with_interval(self, weights: np.ndarray | None) -> Interval:
        if weights is None:
            return interval(self.value, None)
        num = np.einsum("bq,bq->b", weights @ self.wins, weights)
        with np.errstate(invalid="ignore", divide="ignore"):
            samples = num / ((weights @ self.positives) * (weights @ self.negatives))
        return interval(self.value, samples)


def _pair_matrix(score: np.ndarray, positive: np.ndarray, query: np.ndarray, n_q: int
                 ) -> np.ndarray:
    """``wins[q1, q2]``: Mann-Whitney's U of the positives of q1 against the negatives of q2."""
    s_pos, q_pos = score[positive], query[positive]
    order = np.argsort(score[~positive], kind="stable")
    s_neg, q_neg = score[~positive][order], query[~positive][order]
    # negatives below (left) and at most (right) each positive's score, all queries together
    left = np.searchsorted(s_neg, s_pos, "left")
    right = np.searchsorted(s_neg, s_pos, "right")
    cuts, where = np.unique(np.concatenate([left, right]), return_inverse=True)
    # below[c, q2]: negatives of q2 among the first cuts[c] (integer counts, so exact)
    block = np.searchsorted(cuts, np.arange(len(s_neg)), "right")
    below = np.bincount(block * n_q + q_neg, minlength=(len(cuts) + 1) * n_q)
    below = np.cumsum(below.reshape(-1, n_q), axis=0)[:-1].astype(np.float64)
    # hits[q1, c]: positives of q1 counting cuts[c], once for left and once for right
    hits = np.bincount(np.concatenate([q_pos, q_pos]) * len(cuts) + where.reshape(-1),
                       minlength=n_q * len(cuts)).reshape(n_q, -1).astype(np.float64)
    return (hits @ below) * 0.5            # left + (right - left) / 2: ties count 1/2


def pooled_auc(score: np.ndarray, positive: np.ndarray, query: np.ndarray,
               n_queries: int | None = None) -> PooledAuc:
    """AUC of ``score`` for ``positive`` over the documents of all queries pooled (ties 1/2):
    Mann-Whitney's U over (positives x negatives), from one sort of the negatives; the
    query x query matrix an interval needs is computed only when asked for."""
    score = np.asarray(score, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    query = np.asarray(query, dtype=np.int64)
    n_q = int(query.max()) + 1 if n_queries is None and len(query) else (n_queries or 0)
    s_neg = np.sort(score[~positive])
    left = np.searchsorted(s_neg, score[positive], "left")
    right = np.searchsorted(s_neg, score[positive], "right")
    # 2U = sum(left + right) in integers: exact, as the matrix's sum of half-integers is
    u = np.float64(int(left.sum(dtype=np.int64)) + int(right.sum(dtype=np.int64))) * 0.5
    return PooledAuc(u, np.bincount(query[positive], minlength=n_q).astype(float),
                     np.bincount(query[~positive], minlength=n_q).astype(float),
                     score, positive, query)


def _lex_order(minor: np.ndarray, major: np.ndarray) -> np.ndarray:
    """``np.lexsort((minor, major))`` (stable), from one sort of packed codes."""
    return lex_order(*_codes(minor), *_int_codes(major))


def ceiling_values(theta: np.ndarray, grade: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each query's values of ``theta`` reassigned in the order of its grades."""
    return _ceiling(np.asarray(theta, dtype=np.float64), _codes(theta), _codes(grade),
                    _int_codes(query))


def _ceiling(theta: np.ndarray, theta_codes: tuple[np.ndarray, int],
             grade_codes: tuple[np.ndarray, int], query_codes: tuple[np.ndarray, int]
             ) -> np.ndarray:
    """:func:`ceiling_values` from the values' codes (only their order counts)."""
    out = np.empty(len(theta), dtype=np.float64)
    out[lex_order(*grade_codes, *query_codes)] = theta[lex_order(*theta_codes, *query_codes)]
    return out


def _within_order(query: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The documents ordered by query, at random within each query (one float key: the query
    plus a uniform draw in [0, 1) that orders within it)."""
    return np.argsort(query + rng.random(len(query)) * 0.5)


def shuffled_within(theta: np.ndarray, query: np.ndarray, rng: np.random.Generator
                    ) -> np.ndarray:
    """``theta`` shuffled at random within each query."""
    query = np.asarray(query)
    out = np.empty(len(theta), dtype=np.float64)
    out[np.argsort(query, kind="stable")] = np.asarray(theta)[_within_order(query, rng)]
    return out


def midranks(values: np.ndarray) -> np.ndarray:
    """``scipy.stats.rankdata(values)`` (average ranks of ties) by one sort."""
    return _ranks_and_codes(values)[0]


def _ranks_and_codes(values: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, int]]:
    """:func:`midranks` and :func:`_codes` of ``values`` from one sort."""
    v = np.asarray(values, dtype=np.float64)
    if np.isnan(v).any():
        from scipy import stats  # here only: importing scipy.stats costs ~1 s cold

        return stats.rankdata(v), _codes(v)
    o = sorting_order(v)                          # ties take one value: any order will do
    new = np.empty(len(v), dtype=bool)
    new[:1] = True
    sv = v[o]
    np.not_equal(sv[1:], sv[:-1], out=new[1:])
    starts = np.flatnonzero(np.append(new, True))            # each tie group, and the end
    size = np.diff(starts)
    out = np.empty(len(v), dtype=np.float64)
    out[o] = np.repeat(starts[:-1] + (size + 1) / 2.0, size)
    codes = np.empty(len(v), dtype=np.int64)
    codes[o] = np.cumsum(new) - 1
    return out, (codes, len(size))


@dataclass(frozen=True)
class PooledSpearman:
    """Pooled Spearman of a score with the grade, its ceiling and floor (E.4)."""

    observed: Interval
    ceiling: float
    floor: float
    documents: int

    def to_json(self) -> dict:
        return {"observed": self.observed.to_json(), "ceiling": self.ceiling,
                "floor": self.floor, "documents": self.documents}


def _midranks(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted midranks (each document counted ``w`` times), ``w`` of shape ``(B, n)``."""
    inv, n_groups = _codes(values)
    tot = np.zeros((w.shape[0], n_groups))
    for b in range(w.shape[0]):
        tot[b] = np.bincount(inv, w[b], minlength=n_groups)
    before = np.cumsum(tot, axis=1) - tot
    return (before + (tot + 1.0) / 2.0)[:, inv]


def weighted_spearman(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Spearman of ``x`` with ``y`` on samples repeating document i ``w[b, i]`` times."""
    rx, ry = _midranks(x, w), _midranks(y, w)
    tw = w.sum(axis=1, keepdims=True)
    mx = (w * rx).sum(1, keepdims=True) / tw
    my = (w * ry).sum(1, keepdims=True) / tw
    cov = (w * (rx - mx) * (ry - my)).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return cov / np.sqrt((w * (rx - mx) ** 2).sum(1) * (w * (ry - my) ** 2).sum(1))


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x = x - x.mean()
    y = y - y.mean()
    den = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / den) if den else float("nan")


def pooled_spearman(theta: np.ndarray, grade: np.ndarray, query: np.ndarray, *,
                    weights: np.ndarray | None = None, seed: int = 0,
                    floor_shuffles: int = FLOOR_SHUFFLES, chunk: int = 100) -> PooledSpearman:
    """Spearman of ``theta`` with ``grade`` over all graded documents, with the ceiling and the
    floor (the mean over ``floor_shuffles`` seeded within-query shuffles); ``weights``:
    ``(B, Q)`` query multiplicities for an interval of the observed value (None: none).

    Shuffling or reassigning values within a query permutes their pooled ranks, so the ceiling
    and the floor are Pearson correlations of permuted midranks (no re-ranking per shuffle)."""
    theta = np.asarray(theta, dtype=np.float64)
    grade = np.asarray(grade, dtype=np.float64)
    query = np.asarray(query, dtype=np.int64)
    (rt, t_codes), (rg, g_codes) = _ranks_and_codes(theta), _ranks_and_codes(grade)
    q_codes = _int_codes(query)
    value = _pearson(rt, rg)
    ceiling = _pearson(_ceiling(rt, t_codes, g_codes, q_codes), rg)   # rt's codes: theta's
    rng = np.random.default_rng(seed)
    # a within-query shuffle of rt is rt[order] placed at the query-sorted positions, so
    # its Pearson with rg is a dot product with rg in query order (mean and norm unchanged)
    rt_c, rg_c = rt - rt.mean(), rg - rg.mean()
    den = np.sqrt((rt_c * rt_c).sum() * (rg_c * rg_c).sum())
    rg_by_query = rg_c[stable_order(*q_codes)]
    floor = float(np.mean([(rt_c[_within_order(query, rng)] * rg_by_query).sum() / den if den
                           else float("nan") for _ in range(floor_shuffles)]))
    samples = None
    if weights is not None:
        samples = np.concatenate([weighted_spearman(theta, grade, weights[i:i + chunk][:, query])
                                  for i in range(0, len(weights), chunk)])
    return PooledSpearman(interval(value, samples), ceiling, floor, len(theta))


def count_share(criteria: pd.DataFrame, *, source: str = "provenance/judge_criteria"
                ) -> pd.DataFrame:
    """Count's gain per ``(query-id, corpus-id)`` (Eq. 5): the Stage B verdicts read under the
    reading rule (:func:`rcp_data.calibration.verdicts.count_verdicts`: a window with a
    missing answer is left out) and :func:`rcp_data.core.gains.count_gain`, as replay and the
    card's Count-nDCG read them. Columns ``query-id, corpus-id, count``."""
    from rcp_data.calibration.verdicts import count_verdicts
    from rcp_data.scoring.baseline_gains import count_gains_frame

    frame = count_gains_frame(count_verdicts(criteria, source=source))
    return pd.DataFrame({"query-id": frame["query-id"].astype(str).to_numpy(),
                         "corpus-id": frame["corpus-id"].astype(str).to_numpy(),
                         "count": frame["count_ndcg"].to_numpy(dtype=np.float64)})


__all__ = ["FLOOR_SHUFFLES", "PairCounts", "PooledAuc", "PooledSpearman", "ceiling_values",
           "concordance", "count_share", "midranks", "ordered_pairs", "pooled_auc", "pooled_spearman",
           "shuffled_within", "weighted_spearman"]
