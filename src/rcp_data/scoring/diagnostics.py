"""Agreement of a score with graded labels, and of leaderboards: pure functions on arrays.

Definitions (``../shared/design/evaluation.md``, paper B.2, B.3, E.4, G.1):

- :func:`concordance`: within-query concordance, the share of same-query pairs with different
  grades that the score orders like the grades (0.5 is chance); score ties count 1/2;
- :func:`auc`: over pooled documents, the share of pairs, one graded ``>= threshold`` and one
  not, that the score orders correctly; ties count 1/2 (the Mann-Whitney U over n1 * n0);
- :func:`pooled_spearman`: Spearman's rho of the score with the grade over all graded documents
  of all queries, with its ceiling (each query's score values reassigned in the order of its
  grades) and floor (the values shuffled at random within each query; mean over seeded draws);
- :func:`sensitivity`: the share of system pairs a two-sided paired t-test separates at 5%;
- :func:`failure_modes`: per query, nDCG@10 saturates (every system 1), floors (every system 0)
  or compresses (neither, and at least half of the system pairs differ by at most 1e-6);
- :func:`leaderboard_intervals`: 95% percentile intervals of each system's mean over strata
  (subsets) from a query bootstrap within each stratum (2,000 resamples, seed 0).

Nothing here reads a file; :mod:`rcp_data.scoring.release_diagnostics` feeds a release in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

ALPHA = 0.05
TIE = 1e-6
RESAMPLES = 2000
SEED = 0
FLOOR_DRAWS = 20


def _groups(query: np.ndarray) -> list[np.ndarray]:
    """Row indices of each query (in order of first appearance)."""
    _, inverse = np.unique(np.asarray(query, dtype=object).astype(str), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    return np.split(order, bounds)


def concordance(query: np.ndarray, score: np.ndarray, grade: np.ndarray) -> float | None:
    """Within-query concordance of ``score`` with ``grade`` (None without a pair)."""
    score = np.asarray(score, dtype=np.float64)
    grade = np.asarray(grade, dtype=np.float64)
    agree = 0.0
    pairs = 0
    for rows in _groups(query):
        g, s = grade[rows], score[rows]
        dg = np.sign(g[:, None] - g[None, :])
        ds = np.sign(s[:, None] - s[None, :])
        upper = np.triu(dg != 0, 1)
        pairs += int(upper.sum())
        agree += float(((dg == ds) & upper).sum() + 0.5 * ((ds == 0) & upper).sum())
    return agree / pairs if pairs else None


def auc(score: np.ndarray, grade: np.ndarray, threshold: float = 1) -> float | None:
    """Pooled AUC of ``score`` for ``grade >= threshold`` (None without both classes)."""
    from scipy.stats import rankdata

    score = np.asarray(score, dtype=np.float64)
    pos = np.asarray(grade, dtype=np.float64) >= threshold
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if not n1 or not n0:
        return None
    ranks = rankdata(score)                               # average ranks: ties count 1/2
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


@dataclass(frozen=True)
class SpearmanBounds:
    """Pooled Spearman of a score with the grade, with its ceiling and floor (E.4)."""

    rho: float | None
    ceiling: float | None
    floor: float | None

    def to_json(self) -> dict:
        return {"rho": self.rho, "ceiling": self.ceiling, "floor": self.floor}


def _rho(a: np.ndarray, b: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if len(a) < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return None
    return float(spearmanr(a, b).statistic)


def pooled_spearman(query: np.ndarray, score: np.ndarray, grade: np.ndarray, *,
                    draws: int = FLOOR_DRAWS, seed: int = SEED) -> SpearmanBounds:
    """Pooled Spearman of ``score`` with ``grade``, its ceiling and its floor."""
    score = np.asarray(score, dtype=np.float64)
    grade = np.asarray(grade, dtype=np.float64)
    groups = _groups(query)
    best = np.empty_like(score)
    for rows in groups:                      # the query's values in the order of its grades
        best[rows[np.argsort(grade[rows], kind="stable")]] = np.sort(score[rows])
    rng = np.random.default_rng(seed)
    floors = []
    for _ in range(draws):
        shuffled = np.empty_like(score)
        for rows in groups:
            shuffled[rows] = rng.permutation(score[rows])
        floors.append(_rho(shuffled, grade))
    defined = [f for f in floors if f is not None]
    return SpearmanBounds(_rho(score, grade), _rho(best, grade),
                          float(np.mean(defined)) if defined else None)


def paired_p_values(values: np.ndarray) -> np.ndarray:
    """Two-sided paired t-test p-values of every system pair, ``values`` (systems, queries);
    ``(pairs,)`` in :func:`itertools.combinations` order, NaN where undefined."""
    from scipy.stats import ttest_rel

    values = np.asarray(values, dtype=np.float64)
    pairs = list(combinations(range(values.shape[0]), 2))
    if not pairs or values.shape[1] < 2:
        return np.full(len(pairs), np.nan)
    a = values[[i for i, _ in pairs]]
    b = values[[j for _, j in pairs]]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.atleast_1d(ttest_rel(a, b, axis=1).pvalue)


def sensitivity(values: np.ndarray, alpha: float = ALPHA) -> float | None:
    """Share of system pairs a paired t-test separates at ``alpha`` (an undefined test does
    not separate)."""
    p = paired_p_values(values)
    return float(np.mean(np.nan_to_num(p, nan=1.0) < alpha)) if len(p) else None


@dataclass(frozen=True)
class FailureModes:
    """Shares of queries on which nDCG@10 saturates, floors, compresses, or any of these."""

    saturates: float
    floors: float
    compresses: float
    any: float
    queries: int

    def to_json(self) -> dict:
        return {"saturates": self.saturates, "floors": self.floors,
                "compresses": self.compresses, "any": self.any, "queries": self.queries}


def failure_modes(values: np.ndarray, tie: float = TIE) -> FailureModes:
    """G.1 on ``values`` (systems, queries) of nDCG@10."""
    v = np.asarray(values, dtype=np.float64)
    n_q = v.shape[1]
    if n_q == 0:
        return FailureModes(0.0, 0.0, 0.0, 0.0, 0)
    sat = np.all(np.abs(v - 1.0) <= tie, axis=0)
    flo = np.all(np.abs(v) <= tie, axis=0)
    pairs = list(combinations(range(v.shape[0]), 2))
    if pairs:
        diff = np.abs(v[[i for i, _ in pairs]] - v[[j for _, j in pairs]])
        comp = ~sat & ~flo & ((diff <= tie).sum(axis=0) * 2 >= len(pairs))
    else:
        comp = np.zeros(n_q, dtype=bool)
    return FailureModes(float(sat.mean()), float(flo.mean()), float(comp.mean()),
                        float((sat | flo | comp).mean()), n_q)


def leaderboard_intervals(strata: Sequence[np.ndarray], *, resamples: int = RESAMPLES,
                          seed: int = SEED) -> np.ndarray:
    """95% percentile intervals ``(systems, 2)`` of each system's unweighted mean over strata;
    ``strata[s]`` is ``(systems, queries of s)``; queries resampled within each stratum."""
    rng = np.random.default_rng(seed)
    total = None
    for values in strata:
        values = np.asarray(values, dtype=np.float64)
        n = values.shape[1]
        draws = rng.integers(0, n, size=(resamples, n))
        counts = np.zeros((resamples, n))
        np.add.at(counts, (np.repeat(np.arange(resamples), n), draws.ravel()), 1.0)
        means = values @ counts.T / n                              # (systems, resamples)
        total = means if total is None else total + means
    if total is None:
        return np.zeros((0, 2))
    return np.percentile(total / len(strata), [2.5, 97.5], axis=1).T


def kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b between two leaderboards (the same systems' scores)."""
    from scipy.stats import kendalltau

    if len(a) < 2:
        return None
    tau = kendalltau(a, b, variant="b").statistic
    return None if np.isnan(tau) else float(tau)


__all__ = ["FailureModes", "SpearmanBounds", "auc", "concordance", "failure_modes",
           "kendall_tau_b", "leaderboard_intervals", "paired_p_values", "pooled_spearman",
           "sensitivity"]
