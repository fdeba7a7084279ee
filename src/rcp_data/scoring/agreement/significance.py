"""Does a collection change the systems? (Parry et al. 2025: score changes by a paired t-test
with a multiple-comparison correction, rank changes by Wilcoxon's signed-rank test.)

Per compared collection (an assessor's label set) and per system, over the topics both the
primary and that collection score:

- score change: ``scipy.stats.ttest_rel`` of the system's per-topic values under the collection
  against the primary's; the p-values of one collection's systems (its family) corrected by
  Bonferroni and by Holm (``statsmodels.stats.multitest.multipletests``);
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


def collection_changes(reference: np.ndarray, other: np.ndarray, systems: list[str], *,
                       alpha: float = ALPHA) -> dict:
    """The score and rank changes of every system from ``reference`` ``(S, Q)`` to ``other``
    ``(S, Q)`` (NaN: a topic that label set does not score; only topics both score count)."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

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
        bonf[finite] = multipletests(p_t[finite], alpha=alpha, method="bonferroni")[1]
        holm[finite] = multipletests(p_t[finite], alpha=alpha, method="holm")[1]
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
        row["p_wilcoxon"] = float(stats.wilcoxon(r_oth[i], r_ref[i]).pvalue) \
            if np.any(diff != 0) else None
    moved = [r for r in rows if r["p_wilcoxon"] is not None and r["p_wilcoxon"] < alpha]
    return {"topics": n, "alpha": alpha, "family": "the systems of this collection",
            "systems": rows,
            "changed_bonferroni": int(sum(r["changed_bonferroni"] for r in rows)),
            "changed_holm": int(sum(r["changed_holm"] for r in rows)),
            "rank_changed_wilcoxon": len(moved)}


__all__ = ["ALPHA", "collection_changes"]
