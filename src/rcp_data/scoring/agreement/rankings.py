"""The ranking layer: leaderboards and how two of them, or two label sets, agree.

Per-query values are ``(Q, S)`` arrays (queries x systems); NaN marks a query a metric leaves
out (no positive label). Leaderboard comparisons take ``(..., S)`` arrays, so one call serves a
single pair or every bootstrap resample at once.

- :func:`leaderboard`: mean per system over the queries the metric keeps;
  :func:`leaderboard_intervals`: 95% query-bootstrap intervals of a leaderboard averaged over
  strata (subsets), the queries resampled within each stratum (B.3);
- :func:`kendall_tau_b`, :func:`spearman_rho`: rank correlations (scipy's tau-b and rho);
- :func:`rbo_extrapolated` (Webber et al. 2010, Eq. 32, equal-length lists) and
  :func:`rbo_package` (what the PyPI ``rbo`` package's ``RankingSimilarity.rbo(p=p)`` returns:
  no extrapolation; p = 1 is the average overlap);
- :func:`separation`: paired t-tests of every system pair, optionally per bootstrap resample;
  :func:`sensitivity` and :func:`decisive_agreement` count over them (B.2, C.7, H.1);
- :func:`failure_modes`: per query, whether nDCG@k saturates, floors or compresses (G.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from rcp_data.scoring.agreement.bootstrap import (
    LEVEL,
    RESAMPLES,
    SEED,
    Interval,
    interval,
    percentile,
    query_weights,
    ratio_of_sums,
)

ALPHA = 0.05
TIE = 1e-6
RBO_P = 0.9
RBO_VARIANTS = ("extrapolated (Webber et al. 2010)", "rbo package .rbo(p)")


def pair_index(n_systems: int) -> np.ndarray:
    """``(P, 2)`` system pairs ``i < j`` in the order of :func:`itertools.combinations`."""
    return np.array(list(combinations(range(n_systems), 2)), dtype=np.int64).reshape(-1, 2)


def kept(values: np.ndarray) -> np.ndarray:
    """Queries without a NaN value (the queries a metric keeps)."""
    return ~np.isnan(np.asarray(values, dtype=np.float64)).any(axis=1)


def leaderboard(values: np.ndarray) -> np.ndarray:
    """Mean per system over the kept queries of ``values`` ``(Q, S)``."""
    v = np.asarray(values, dtype=np.float64)
    return v[kept(v)].mean(axis=0)


def leaderboard_intervals(strata: Sequence[np.ndarray], *, resamples: int = RESAMPLES,
                          seed: int = SEED, level: float = LEVEL) -> np.ndarray:
    """``(S, 2)`` percentile intervals of each system's unweighted mean over strata of its
    per-stratum mean; ``strata[s]`` is ``(queries of s, S)`` without NaN; the queries are
    resampled within each stratum (:func:`~.bootstrap.query_weights`)."""
    parts = [np.asarray(v, dtype=np.float64) for v in strata]
    if not parts:
        return np.zeros((0, 2))
    sizes = [len(v) for v in parts]
    w = query_weights(int(sum(sizes)), resamples=resamples, seed=seed,
                      strata=np.repeat(np.arange(len(parts)), sizes))
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    total = sum(w[:, bounds[i]:bounds[i + 1]] @ v / len(v) for i, v in enumerate(parts))
    means = total / len(parts)                                           # (B, S)
    return np.array([percentile(means[:, j], level) for j in range(means.shape[1])]
                    ).reshape(-1, 2)


def order(board: np.ndarray) -> np.ndarray:
    """Systems from best to worst (``(..., S)``); equal means keep the system order."""
    return np.argsort(-np.asarray(board, dtype=np.float64), axis=-1, kind="stable")


def _signs(x: np.ndarray) -> np.ndarray:
    idx = pair_index(x.shape[-1])
    return np.sign(x[..., idx[:, 0]] - x[..., idx[:, 1]])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Kendall's tau-b between two leaderboards (last axis: systems)."""
    sx, sy = _signs(np.asarray(x, float)), _signs(np.asarray(y, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (sx * sy).sum(-1) / np.sqrt((sx * sx).sum(-1) * (sy * sy).sum(-1))
    return float(t) if np.ndim(t) == 0 else t


def spearman_rho(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Spearman's rho (midranks) between two leaderboards (last axis: systems)."""
    from scipy import stats

    rx = stats.rankdata(np.asarray(x, float), axis=-1)
    ry = stats.rankdata(np.asarray(y, float), axis=-1)
    rx = rx - rx.mean(-1, keepdims=True)
    ry = ry - ry.mean(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (rx * ry).sum(-1) / np.sqrt((rx * rx).sum(-1) * (ry * ry).sum(-1))
    return float(r) if np.ndim(r) == 0 else r


def overlaps(order_a: np.ndarray, order_b: np.ndarray) -> np.ndarray:
    """``X[..., d-1]``: systems shared by the top d of two orders, d = 1..S."""
    a, b = np.atleast_2d(order_a), np.atleast_2d(np.broadcast_to(order_b, np.shape(order_a)))
    n = a.shape[-1]
    rows = np.arange(a.shape[0])[:, None]
    pos_a = np.empty_like(a)
    pos_b = np.empty_like(b)
    pos_a[rows, a] = np.arange(n)
    pos_b[rows, b] = np.arange(n)
    depth = np.maximum(pos_a, pos_b)                     # the depth from which a system is shared
    counts = np.zeros(a.shape, dtype=np.float64)
    np.add.at(counts, (np.broadcast_to(rows, depth.shape), depth), 1.0)
    x = np.cumsum(counts, axis=-1)
    return x if np.ndim(order_a) > 1 else x[0]


def rbo_package(order_a: np.ndarray, order_b: np.ndarray, p: float = 1.0) -> np.ndarray | float:
    """The PyPI ``rbo`` package's ``RankingSimilarity(a, b).rbo(p=p)`` for two orders of the
    same systems: sum of (1 - p) p^(d-1) A_d (A_d = X_d / d), not extrapolated; p = 1 gives the
    average overlap, mean of A_d."""
    x = overlaps(order_a, order_b)
    n = x.shape[-1]
    agree = x / np.arange(1, n + 1)
    out = agree.mean(-1) if p == 1.0 else (agree * (1 - p) * p ** np.arange(n)).sum(-1)
    return float(out) if np.ndim(out) == 0 else out


def rbo_extrapolated(order_a: np.ndarray, order_b: np.ndarray, p: float = RBO_P
                     ) -> np.ndarray | float:
    """Extrapolated RBO (Webber et al. 2010, Eq. 32) of two orders of the same systems:
    ``X_k/k p^k + (1-p)/p sum_d X_d/d p^d``; identical orders give 1."""
    x = overlaps(order_a, order_b)
    n = x.shape[-1]
    d = np.arange(1, n + 1)
    out = x[..., -1] / n * p ** n + (1 - p) / p * (x / d * p ** d).sum(-1)
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class Separation:
    """Per system pair: the paired t-test's p-value, the mean difference ``i - j``, whether
    p < alpha; ``samples`` the same per bootstrap resample ``(B, P)`` (None without)."""

    pvalue: np.ndarray
    diff: np.ndarray
    separated: np.ndarray
    sample_diff: np.ndarray | None = None
    sample_separated: np.ndarray | None = None


def _t_stats(sum_w: np.ndarray, s1: np.ndarray, s2: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, |t| (NaN for zero variance) and degrees of freedom per resample and pair."""
    n = sum_w[..., None]
    mean = s1 / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(s2 - n * mean ** 2, 0.0) / (n - 1)
        t = np.abs(mean) / np.sqrt(var / n)
    return mean, np.where(var > 1e-24, t, np.nan), n - 1


def paired_t_pvalues(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``scipy.stats.ttest_rel(a, b, axis=0).pvalue`` (two-sided), bit for bit (the tests
    compare), without importing scipy.stats (about 1 s cold): the same mean, variance
    (ddof 1) and Student t tail (``scipy.special.stdtr``); NaN with fewer than 2 rows."""
    from scipy import special

    d = np.moveaxis(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64), 0, -1)
    n = d.shape[-1]
    if n < 2:
        return np.full(d.shape[:-1], np.nan)
    mean = d.mean(axis=-1, keepdims=True)
    var = ((d - mean) ** 2).mean(axis=-1) * (n / (n - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = mean[..., 0] / np.sqrt(var / n)
    return 2 * special.stdtr(float(n - 1), -np.abs(t))


def separation(values: np.ndarray, *, weights: np.ndarray | None = None,
               alpha: float = ALPHA, correction: str | None = None) -> Separation:
    """Paired t-tests (``scipy.stats.ttest_rel``) of every system pair over the kept queries;
    with ``weights`` ``(B, Q)`` also per query-bootstrap resample. A pair whose differences
    are all equal is not separated. ``correction``: ``holm`` or ``bonferroni`` over the family
    of pairs (Parry et al. use Bonferroni); ``pvalue`` is then the adjusted one."""
    v = np.asarray(values, dtype=np.float64)
    keep = kept(v)
    idx = pair_index(v.shape[1])
    first, second = v[keep][:, idx[:, 0]], v[keep][:, idx[:, 1]]
    d = first - second
    p = paired_t_pvalues(first, second)
    if correction is not None:      # imported here: its module imports scipy.stats
        from rcp_data.scoring.qrels_score import adjust_pvalues

        p = adjust_pvalues(np.nan_to_num(p, nan=1.0), correction)
    sep = np.nan_to_num(p, nan=1.0) < alpha
    if weights is None:
        return Separation(p, d.mean(axis=0), sep)
    w = weights if keep.all() else weights[:, keep]
    from scipy import special, stats  # per resample: the t quantile (agree's intervals)

    mean, t, df = _t_stats(w.sum(1), w @ d, w @ (d * d))
    if correction is None:                 # |t| above the critical value: p < alpha
        with np.errstate(invalid="ignore"):
            dfs, at = np.unique(df[:, 0], return_inverse=True)   # one value per df
            crit = stats.t.ppf(1.0 - alpha / 2.0, dfs)[at.reshape(-1)][:, None]
            sample_sep = np.nan_to_num(t, nan=0.0) > crit
    else:
        pb = 2.0 * special.stdtr(df, -np.nan_to_num(t, nan=0.0))
        pb = np.where(np.isnan(t), 1.0, pb)
        sample_sep = np.vstack([adjust_pvalues(row, correction) for row in pb]) < alpha
    return Separation(p, d.mean(axis=0), sep, mean, sample_sep)


def sensitivity(sep: Separation) -> Interval:
    """Share of system pairs separated (about alpha by chance), with its interval."""
    samples = None if sep.sample_separated is None else sep.sample_separated.mean(axis=1)
    return interval(float(sep.separated.mean()) if len(sep.separated) else float("nan"),
                    samples)


@dataclass(frozen=True)
class Decisive:
    """Pairs the reference separates, and those on which a metric's mean difference has the
    reference's sign (C.7's NIST-decisive pairs)."""

    decisive: int
    agree: int
    rate: Interval

    def to_json(self) -> dict:
        return {"decisive": self.decisive, "agree": self.agree, "rate": self.rate.to_json()}


def decisive_agreement(metric: Separation, reference: Separation) -> Decisive:
    """Agreement of ``metric`` with the pairs ``reference`` separates."""
    dec = reference.separated
    agree = dec & (np.sign(metric.diff) == np.sign(reference.diff))
    samples = None
    if metric.sample_diff is not None and reference.sample_separated is not None:
        d = reference.sample_separated
        a = d & (np.sign(metric.sample_diff) == np.sign(reference.sample_diff))
        with np.errstate(invalid="ignore", divide="ignore"):
            samples = a.sum(1) / d.sum(1)
    rate = float(agree.sum() / dec.sum()) if dec.sum() else float("nan")
    return Decisive(int(dec.sum()), int(agree.sum()), interval(rate, samples))


FAILURE_MODES = ("saturates", "floors", "compresses")


def failure_modes(values: np.ndarray, *, tie: float = TIE) -> dict[str, np.ndarray]:
    """Per kept query (G.1): ``saturates`` (every system scores 1), ``floors`` (every one 0),
    ``compresses`` (neither, and at least half the system pairs differ by at most ``tie``),
    ``any``; and ``kept``, the mask of the queries judged (others are all False)."""
    v = np.asarray(values, dtype=np.float64)
    keep = kept(v)
    filled = np.where(np.isnan(v), 0.0, v)
    idx = pair_index(v.shape[1])
    sat = keep & (np.abs(filled - 1.0) <= 1e-12).all(axis=1)
    flo = keep & (np.abs(filled) <= 1e-12).all(axis=1)
    ties = (np.abs(filled[:, idx[:, 0]] - filled[:, idx[:, 1]]) <= tie).sum(axis=1)
    comp = keep & ~sat & ~flo & (2 * ties >= len(idx))
    return {"saturates": sat, "floors": flo, "compresses": comp, "any": sat | flo | comp,
            "kept": keep}


def failure_shares(modes: dict[str, np.ndarray], weights: np.ndarray | None = None
                   ) -> dict[str, Interval]:
    """Share of the kept queries in each failure mode (and ``any``), with intervals."""
    den = modes["kept"].astype(float)
    return {m: ratio_of_sums(modes[m].astype(float), den, weights)
            for m in (*FAILURE_MODES, "any")}


__all__ = ["ALPHA", "FAILURE_MODES", "RBO_P", "RBO_VARIANTS", "TIE", "Decisive", "Separation",
           "decisive_agreement", "failure_modes", "failure_shares", "kendall_tau_b", "kept",
           "leaderboard", "leaderboard_intervals", "order", "overlaps", "pair_index",
           "paired_t_pvalues", "rbo_extrapolated", "rbo_package",
           "sensitivity", "separation", "spearman_rho"]
