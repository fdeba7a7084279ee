"""Query-clustered percentile bootstrap (paper B.3): the query is the unit of resampling.

A resample is a vector of query multiplicities (how often each query is drawn); statistics
that are sums over queries become matrix products with these weights, so 2,000 resamples cost
a few products instead of 2,000 recomputations. Strata (subsets, years) are resampled
independently, each keeping its own number of queries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
#: The fewest queries an interval is shown from; below it a bootstrap over queries has too few
#: distinct resamples to mean anything (one query gives ``[x, x]``).
MIN_QUERIES = 5


@dataclass(frozen=True)
class Interval:
    """A point estimate and its percentile interval (NaN bounds without resamples)."""

    value: float
    lo: float
    hi: float

    def to_json(self) -> dict:
        return {"value": _num(self.value), "lo": _num(self.lo), "hi": _num(self.hi)}


def _num(v: float) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


def query_weights(n_queries: int, *, resamples: int = RESAMPLES, seed: int = SEED,
                  strata: np.ndarray | None = None) -> np.ndarray:
    """``(resamples, n_queries)`` multiplicities: each row draws ``n`` queries with
    replacement (per stratum when ``strata`` labels each query)."""
    rng = np.random.default_rng(seed)
    if strata is None:
        strata = np.zeros(n_queries, dtype=np.int64)
    strata = np.asarray(strata)
    w = np.zeros((resamples, n_queries), dtype=np.float64)
    for s in np.unique(strata):
        members = np.flatnonzero(strata == s)
        n = len(members)
        draws = rng.integers(0, n, size=(resamples, n))
        counts = np.bincount((draws + n * np.arange(resamples)[:, None]).reshape(-1),
                             minlength=resamples * n)
        w[:, members] += counts.reshape(resamples, n)
    return w


def percentile(samples: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The ``level`` percentile interval of bootstrap ``samples`` (NaN samples dropped)."""
    s = np.asarray(samples, dtype=np.float64)
    s = s[np.isfinite(s)]
    if not len(s):
        return float("nan"), float("nan")
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(s, [a, 1.0 - a])
    return float(lo), float(hi)


def interval(value: float, samples: np.ndarray | None, level: float = LEVEL) -> Interval:
    if samples is None:
        return Interval(float(value), float("nan"), float("nan"))
    return Interval(float(value), *percentile(samples, level))


def interval_text(lo: float | None, hi: float | None, queries: int,
                  fmt: Callable[[float], str] = "{:.3f}".format) -> str:
    """How an interval is shown: ``[lo, hi]`` with ``fmt``, or ``n too small (n=K)`` when it
    was computed from fewer than :data:`MIN_QUERIES` queries (per stratum: the smallest);
    ``–`` for a missing bound."""
    if queries < MIN_QUERIES:
        return f"n too small (n={queries})"
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return "[–, –]"
    return f"[{fmt(lo)}, {fmt(hi)}]"


def ratio_of_sums(num: np.ndarray, den: np.ndarray, weights: np.ndarray | None = None,
                  level: float = LEVEL) -> Interval:
    """``sum(num) / sum(den)`` over queries, with its interval from ``weights``
    (``(B, Q)`` multiplicities; None: no interval)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    total = den.sum()
    value = num.sum() / total if total else float("nan")
    if weights is None:
        return interval(value, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        samples = np.einsum("bq,q->b", weights, num) / np.einsum("bq,q->b", weights, den)
    return interval(value, samples, level)


__all__ = ["LEVEL", "MIN_QUERIES", "RESAMPLES", "SEED", "Interval", "interval", "interval_text",
           "percentile", "query_weights", "ratio_of_sums"]
