"""Label-free checks of a calibration fit (paper Sec. 4.1, App. E.1-E.3).

- tau and alpha percentiles over queries (with the p95/p5 ratio of tau);
- ECE of the predicted pass probabilities against the judge's own answers: 20 equal-width bins
  of the prediction, each (document, criterion) weighted by its placements (so the ECE over
  all responses), size-weighted mean |mean prediction - observed pass rate| per bin;
- Yen's Q3 for every criterion pair: the correlation over documents of the residuals
  ``S_c / n - P_c(theta)`` (|Q3| > 0.2 is the warning sign);
- whether the difficulties rise C1..Cn, and the criteria nobody or everybody passed.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from rcp_data.core.gains import ItemParams

PERCENTILES = (5, 25, 50, 75, 95)
Q3_WARNING = 0.2


def percentiles(values: np.ndarray) -> dict:
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return {}
    out = {f"p{p}": float(np.percentile(v, p)) for p in PERCENTILES}
    out.update(min=float(v.min()), max=float(v.max()), mean=float(v.mean()))
    return out


def _bin_sums(pred: np.ndarray, passes: np.ndarray, n: np.ndarray, bins: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = np.asarray(pred, dtype=np.float64).ravel()
    s = np.asarray(passes, dtype=np.float64).ravel()
    w = np.broadcast_to(np.asarray(n, dtype=np.float64)[:, None], np.shape(pred)).ravel()
    idx = np.minimum((p * bins).astype(np.int64), bins - 1)
    return np.bincount(idx, w, bins), np.bincount(idx, w * p, bins), np.bincount(idx, s, bins)


def reliability_bins(pred: np.ndarray, passes: np.ndarray, n: np.ndarray, bins: int = 20
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ECE's bins: ``(weight, mean prediction, observed pass rate)`` per equal-width bin of
    the prediction (NaN in an empty bin), each (document, criterion) weighted by its
    placements ``n`` (the reliability diagram's points)."""
    wsum, psum, ssum = _bin_sums(pred, passes, n, bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return wsum, psum / wsum, ssum / wsum


def expected_calibration_error(pred: np.ndarray, passes: np.ndarray, n: np.ndarray,
                               bins: int = 20) -> float:
    """ECE of predictions ``pred`` (D, C) against pass counts ``passes`` out of ``n`` (D,)."""
    wsum, psum, ssum = _bin_sums(pred, passes, n, bins)
    used = wsum > 0
    gaps = np.abs(psum[used] - ssum[used]) / wsum[used]
    return float((wsum[used] * gaps).sum() / wsum.sum())


def yen_q3(pred: np.ndarray, passes: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Q3 matrix (C, C): correlations of the residuals over documents (NaN if one is constant)."""
    resid = np.asarray(passes, np.float64) / np.asarray(n, np.float64)[:, None] - pred
    resid = resid - resid.mean(0)
    sd = np.sqrt((resid**2).sum(0))
    with np.errstate(invalid="ignore", divide="ignore"):
        q3 = (resid.T @ resid) / np.outer(sd, sd)
    q3[:, sd == 0] = np.nan
    q3[sd == 0, :] = np.nan
    return q3


def raw_correlations(passes: np.ndarray, n: np.ndarray) -> np.ndarray:
    share = np.asarray(passes, np.float64) / np.asarray(n, np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.corrcoef(share, rowvar=False)


def _pairs(mat: np.ndarray, names: list[str]) -> dict[str, float | None]:
    return {f"{names[i]}-{names[j]}": (None if np.isnan(mat[i, j]) else float(mat[i, j]))
            for i, j in combinations(range(len(names)), 2)}


def fit_diagnostics(params: ItemParams, theta: np.ndarray, n: np.ndarray, passes: np.ndarray,
                    *, tau: np.ndarray | None = None, alpha: np.ndarray | None = None,
                    bins: int = 20) -> dict:
    """All checks of one fit, as a JSON-ready dict. ``theta`` per document of the counts."""
    names = params.criteria
    pred = params.pass_probabilities(theta)
    q3 = yen_q3(pred, passes, n)
    raw = raw_correlations(passes, n)
    q3_pairs = _pairs(q3, names)
    finite = [abs(v) for v in q3_pairs.values() if v is not None]
    raw_finite = [abs(v) for v in _pairs(raw, names).values() if v is not None]
    beta = np.asarray(params.beta)
    total_pass = passes.sum(0)
    total_n = n.sum()
    out: dict = {
        "criteria": names,
        "difficulties_rising": bool(np.all(np.diff(beta) > 0)),
        "difficulty_order": [names[i] for i in np.argsort(beta, kind="stable")],
        "largest_discrimination": names[int(np.argmax(params.gamma))],
        "pass_rate": {c: float(total_pass[i] / total_n) for i, c in enumerate(names)},
        "criteria_never_passed": [c for i, c in enumerate(names) if total_pass[i] == 0],
        "criteria_always_passed": [c for i, c in enumerate(names) if total_pass[i] == total_n],
        "ece": expected_calibration_error(pred, passes, n, bins),
        "ece_bins": bins,
        "q3": q3_pairs,
        "q3_mean_abs": float(np.mean(finite)) if finite else None,
        "q3_pairs_over_0.2": int(sum(v > Q3_WARNING for v in finite)),
        "raw_correlation_mean_abs": float(np.mean(raw_finite)) if raw_finite else None,
        "theta": percentiles(theta),
        "share_below_beta_first": float(np.mean(theta < beta[0])),
    }
    if tau is not None:
        t = percentiles(tau)
        if t:
            t["p95_over_p5"] = t["p95"] / t["p5"] if t["p5"] > 0 else None
        out["tau"] = t
    if alpha is not None:
        out["alpha"] = percentiles(alpha)
    return out
