"""Does a collection change the systems? (Parry et al. 2025: score changes by a paired t-test
with a multiple-comparison correction, rank changes by Wilcoxon's signed-rank test.)

Per compared collection (an assessor's label set) and per system, over the topics both the
primary and that collection score:

- score change: ``scipy.stats.ttest_rel`` of the system's per-topic values under the collection
  against the primary's; the p-values of one collection's systems (its family) corrected by
  Bonferroni and by Holm (as ``statsmodels.stats.multitest.multipletests`` corrects);
- rank change: per topic the systems are ranked under each label set (1 = best, ties averaged);
  ``scipy.stats.wilcoxon`` of the system's per-topic ranks under the collection against the
  primary's (no p-value when no rank moved).
"""

from __future__ import annotations

import numpy as np

ALPHA = 0.05


def _ranks(values: np.ndarray) -> np.ndarray:
    """``(S, Q)`` (or ``(S,)``) per-topic ranks of the systems, 1 = highest value, ties averaged."""
    from scipy.stats import rankdata

    return rankdata(-values, axis=0, method="average")


PERMUTATION_MAX = 13
"""scipy's ``wilcoxon`` (method ``auto``) on at most this many pairs with ties or zero
differences runs an exact permutation test over all ``2^n`` sign flips."""


def wilcoxon_p(x: np.ndarray, y: np.ndarray) -> float:
    """``scipy.stats.wilcoxon(x, y).pvalue`` (two-sided, zeros dropped, method ``auto``). Where
    scipy runs its exact permutation test (ties or zeros, ``n <= 13``: one statistic per sign
    flip, a Python loop of about a second), the same null distribution is enumerated at once:
    the signed-rank sums of all ``2^m`` sign flips of the ``m`` non-zero differences (the ranks
    of ``|d|`` do not change), p twice the smaller tail share, scipy's tolerance on ties."""
    from scipy import stats

    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    nz = d[d != 0]
    ties = len(np.unique(np.abs(nz))) < len(nz)
    if len(d) > PERMUTATION_MAX or not (ties or len(nz) < len(d)) or len(nz) == 0:
        return float(stats.wilcoxon(x, y).pvalue)
    ranks = stats.rankdata(np.abs(nz), method="average")
    observed = float(ranks[nz > 0].sum())
    flips = (np.arange(2 ** len(nz))[:, None] >> np.arange(len(nz))) & 1
    null = flips.astype(np.float64) @ ranks
    gamma = abs(np.finfo(np.float64).eps * 100 * observed)
    less = np.count_nonzero(null <= observed + gamma) / len(null)
    greater = np.count_nonzero(null >= observed - gamma) / len(null)
    return float(min(1.0, 2.0 * min(less, greater)))


def collection_changes(reference: np.ndarray, other: np.ndarray, systems: list[str], *,
                       alpha: float = ALPHA) -> dict:
    """The score and rank changes of every system from ``reference`` ``(S, Q)`` to ``other``
    ``(S, Q)`` (NaN: a topic that label set does not score; only topics both score count)."""
    from scipy import stats

    # statsmodels' multipletests, the same formulas (the tests compare), without its
    # per-call garbage collection (a tenth of a second each)
    from rcp_data.scoring.qrels_score import adjust_pvalues

    keep = ~(np.isnan(reference).any(axis=0) | np.isnan(other).any(axis=0))
    ref, oth = reference[:, keep], other[:, keep]
    n = int(keep.sum())
    rows = [{"system": s, "mean_primary": float(ref[i].mean()) if n else None,
             "mean_collection": float(oth[i].mean()) if n else None}
            for i, s in enumerate(systems)]
    p_t = np.full(len(systems), np.nan)
    if n >= 2:
        with np.errstate(invalid="ignore", divide="ignore"):
            res = stats.ttest_rel(oth, ref, axis=1)
        p_t = np.asarray(res.pvalue, dtype=np.float64)
        for row, t in zip(rows, np.asarray(res.statistic, dtype=np.float64), strict=True):
            row["t"] = float(t)
    finite = np.isfinite(p_t)
    bonf, holm = np.full_like(p_t, np.nan), np.full_like(p_t, np.nan)
    if finite.any():
        bonf[finite] = adjust_pvalues(p_t[finite], "bonferroni")
        holm[finite] = adjust_pvalues(p_t[finite], "holm")
    r_ref, r_oth = (_ranks(ref), _ranks(oth)) if n else (ref, oth)
    if n:
        board_ref, board_oth = _ranks(ref.mean(1)), _ranks(oth.mean(1))
        for i, row in enumerate(rows):
            row.update(rank_primary=float(board_ref[i]), rank_collection=float(board_oth[i]))
    for i, row in enumerate(rows):
        row.setdefault("t", None)
        row.update(p_t=float(p_t[i]), p_bonferroni=float(bonf[i]), p_holm=float(holm[i]),
                   changed_bonferroni=bool(bonf[i] < alpha), changed_holm=bool(holm[i] < alpha))
        diff = r_oth[i] - r_ref[i] if n else np.zeros(0)
        row["mean_rank_change"] = float(diff.mean()) if n else None
        row["p_wilcoxon"] = wilcoxon_p(r_oth[i], r_ref[i]) if np.any(diff != 0) else None
    moved = [r for r in rows if r["p_wilcoxon"] is not None and r["p_wilcoxon"] < alpha]
    return {"topics": n, "alpha": alpha, "family": "the systems of this collection",
            "systems": rows,
            "changed_bonferroni": int(sum(r["changed_bonferroni"] for r in rows)),
            "changed_holm": int(sum(r["changed_holm"] for r in rows)),
            "rank_changed_wilcoxon": len(moved)}


__all__ = ["ALPHA", "PERMUTATION_MAX", "collection_changes", "wilcoxon_p"]
