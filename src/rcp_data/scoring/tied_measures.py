"""A measure's expected value over every order of a run's tied scores, computed exactly.

For a run whose scores tie often (an assessor's grades used as a run: a few hundred documents
share four scores), trec_eval's tie break by corpus-id is arbitrary. Here each tie group (the
rows of one query with one score) is taken in every order with equal probability and the
measure's expectation is computed in closed form, for the measures of
:mod:`rcp_data.scoring.measures` (their definitions, relevance at ``rel``, ``judged_only``):

- P, R, Judged, nDCG are linear in each row's gain, so each row of a group gets the group's
  mean gain (and the group's share of the cutoff), as ``score --tie-rule group-mean`` does;
- Success@k: one minus the chance that no relevant row reaches the top k (hypergeometric,
  groups independent);
- RR: the first group holding a relevant row decides; its first relevant row is at position
  ``x`` with probability ``C(n - x, r - 1) / C(n, r)`` (``n`` rows, ``r`` relevant);
- AP: a relevant row of a group with ``o`` rows and ``c`` relevant rows ranked above it is at
  ``o + 1 + z``, ``z`` uniform in ``0..n-1``, with ``z (r - 1) / (n - 1)`` relevant group rows
  above it in expectation; precision is linear in that count, so its expectation is exact
  (McSherry and Najork 2008 derive the same).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from rcp_data.scoring.measures import Measure


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    n, k = np.asarray(n, dtype=np.float64), np.asarray(k, dtype=np.float64)
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def compute_tied(measure: Measure, qpos: np.ndarray, scores: np.ndarray, grades: np.ndarray,
                 judged_grades: list, n_queries: int) -> np.ndarray:
    """``measure`` per query, in expectation over the orders of tied ``scores``; rows in any
    order with their query (``qpos``) and grade (-1: unjudged); ``judged_grades[q]``: the
    grades the qrels give query ``q``."""
    qpos = np.asarray(qpos, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    grades = np.asarray(grades, dtype=np.float64)
    if measure.judged_only:
        keep = grades >= 0
        qpos, scores, grades = qpos[keep], scores[keep], grades[keep]
    order = np.lexsort((-scores, qpos))
    qpos, scores, grades = qpos[order], scores[order], grades[order]
    n_rows = len(qpos)
    out = np.zeros(n_queries)
    if n_rows == 0:
        return out
    new_q = np.ones(n_rows, dtype=bool)
    new_q[1:] = qpos[1:] != qpos[:-1]
    new_g = new_q.copy()
    new_g[1:] |= scores[1:] != scores[:-1]
    g_start = np.flatnonzero(new_g)
    g_size = np.diff(np.append(g_start, n_rows))
    g_q = qpos[g_start]
    q_start = np.flatnonzero(new_q)
    q_first = np.repeat(q_start, np.diff(np.append(q_start, n_rows)))
    g_off = g_start - q_first[g_start]                       # rows of the query above the group
    k = measure.cutoff
    slots = g_size if k is None else np.clip(k - g_off, 0, g_size)   # the group's top-k rows
    fam = measure.family
    group_of = np.repeat(np.arange(len(g_start)), g_size)

    def per_group(values: np.ndarray) -> np.ndarray:
        return np.bincount(group_of, weights=values, minlength=len(g_start))

    if fam == "Judged":
        judged = per_group((grades >= 0).astype(np.float64))
        return np.bincount(g_q, weights=judged / g_size * slots, minlength=n_queries) / k
    if fam == "nDCG":
        gain = np.maximum(grades, 0.0)
        gain = gain if measure.gain == "linear" else np.exp2(gain) - 1.0
        depth = int(g_off.max() + g_size.max()) + 1
        cum_disc = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(depth) + 2.0))])
        disc = cum_disc[g_off + slots] - cum_disc[g_off]
        dcg = np.bincount(g_q, weights=per_group(gain) / g_size * disc, minlength=n_queries)
        ideal = np.zeros(n_queries)
        for q, g in enumerate(judged_grades):
            g = np.maximum(np.asarray(g, dtype=np.float64), 0.0)
            g = g if measure.gain == "linear" else np.exp2(g) - 1.0
            best = np.sort(g)[::-1][:k]
            ideal[q] = float(np.sum(best / np.log2(np.arange(len(best)) + 2.0)))
        return np.divide(dcg, ideal, out=np.zeros(n_queries), where=ideal > 0)
    rel = per_group((grades >= measure.rel).astype(np.float64))      # relevant rows per group
    relevant = np.array([np.count_nonzero(np.asarray(g) >= measure.rel) for g in judged_grades],
                        dtype=np.float64)
    if fam in ("P", "R"):
        hits = np.bincount(g_q, weights=rel / g_size * slots, minlength=n_queries)
        if fam == "P":
            return hits / k
        return np.divide(hits, relevant, out=np.zeros(n_queries), where=relevant > 0)
    if fam == "Success":
        # P(no relevant row among the group's top-k slots) = C(n - r, m) / C(n, m)
        free = g_size - rel
        none = np.where(slots > free, 0.0,
                        np.exp(_log_comb(free, np.minimum(slots, free)) - _log_comb(g_size, slots)))
        prod = np.ones(n_queries)
        np.multiply.at(prod, g_q, none)
        return 1.0 - prod
    if fam == "RR":
        with_rel = np.flatnonzero(rel > 0)
        _, first = np.unique(g_q[with_rel], return_index=True)     # the query's first such
        for g in with_rel[first]:
            n, r, o = int(g_size[g]), int(rel[g]), int(g_off[g])
            x = np.arange(1, n - r + 2)
            if k is not None:
                x = x[o + x <= k]
            p = np.exp(_log_comb(n - x, r - 1) - _log_comb(n, r))
            out[g_q[g]] = float(np.sum(p / (o + x)))
        return out
    # AP
    cum = np.cumsum(rel)
    first_group = np.flatnonzero(np.r_[True, g_q[1:] != g_q[:-1]])
    base = np.repeat(cum[first_group] - rel[first_group], np.diff(np.append(first_group,
                                                                            len(g_start))))
    above = cum - rel - base
    total = np.zeros(n_queries)
    for g in np.flatnonzero(rel > 0):
        n, r, o, c = int(g_size[g]), float(rel[g]), int(g_off[g]), float(above[g])
        z = np.arange(n if k is None else min(n, max(k - o, 0)), dtype=np.float64)
        share = (r - 1.0) / (n - 1.0) if n > 1 else 0.0
        total[g_q[g]] += r / n * float(np.sum((c + 1.0 + z * share) / (o + 1.0 + z)))
    return np.divide(total, relevant, out=np.zeros(n_queries), where=relevant > 0)


__all__ = ["compute_tied"]
