"""Label variation (Parry et al. 2025): how a leaderboard moves when each topic's labels come
from another assessor.

Input: per-query values of every system under every assessor's labels, ``(A, S, Q)`` (NaN
where that assessor's labels leave the query out or did not judge it). A draw picks one
assessor per topic among those who judged it, so a collection is one of up to ``A^Q``
combinations; the systems' means under the draw are compared with the reference leaderboard.
Draws are seeded and vectorised (a gather over ``(draws, Q, S)`` in chunks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rcp_data.scoring.agreement.bootstrap import percentile
from rcp_data.scoring.agreement.rankings import (
    RBO_P,
    kendall_tau_b,
    order,
    pair_index,
    rbo_extrapolated,
    rbo_package,
    spearman_rho,
)

DRAWS = 10_000
SEED = 0


@dataclass(frozen=True)
class Variation:
    """Per system pair (``pair_index`` order): the share of draws that order the pair against
    the reference (``swap_vs_reference``; equal means count 1/2) and the chance that the pair
    swaps, ``min(P(i above j), P(j above i))`` in [0, 0.5]; per draw the agreement of the
    drawn leaderboard with the reference (``kendall``, ``spearman``, ``rbo_ext``, ``rbo``)."""

    draws: int
    swap_vs_reference: np.ndarray
    swap: np.ndarray
    kendall: np.ndarray
    spearman: np.ndarray
    rbo_ext: np.ndarray
    rbo: np.ndarray
    rbo_p: float

    def summary(self) -> dict:
        def dist(x: np.ndarray) -> dict:
            lo, hi = percentile(x)
            return {"mean": float(np.nanmean(x)), "lo": lo, "hi": hi,
                    "min": float(np.nanmin(x)), "max": float(np.nanmax(x))}
        return {"draws": self.draws, "rbo_p": self.rbo_p,
                "swap_max": float(self.swap.max()) if len(self.swap) else None,
                "swap_mean": float(self.swap.mean()) if len(self.swap) else None,
                "kendall": dist(self.kendall), "spearman": dist(self.spearman),
                "rbo_extrapolated": dist(self.rbo_ext), "rbo_package": dist(self.rbo)}


def draw_assessors(available: np.ndarray, draws: int = DRAWS, seed: int = SEED) -> np.ndarray:
    """``(draws, Q)`` assessor per topic, uniform among those ``available`` ``(A, Q)``."""
    available = np.asarray(available, dtype=bool)
    n_avail = available.sum(axis=0)
    if (n_avail == 0).any():
        raise ValueError(f"topic {int(np.flatnonzero(n_avail == 0)[0])} has no assessor")
    rng = np.random.default_rng(seed)
    pick = (rng.random((draws, available.shape[1])) * n_avail).astype(np.int64)
    # the pick-th available assessor of each topic
    rank = np.cumsum(available, axis=0) - 1                  # (A, Q)
    lookup = np.full((available.shape[1], available.shape[0]), -1, dtype=np.int64)
    a_idx, q_idx = np.nonzero(available)
    lookup[q_idx, rank[a_idx, q_idx]] = a_idx
    return lookup[np.arange(available.shape[1])[None, :], pick]


def drawn_leaderboards(values: np.ndarray, assessors: np.ndarray) -> np.ndarray:
    """``(draws, S)`` means over the topics the drawn labels keep."""
    v = np.asarray(values, dtype=np.float64)                 # (A, S, Q)
    q = np.arange(v.shape[2])
    picked = v[assessors, :, q[None, :]]                     # (draws, Q, S)
    return np.nanmean(picked, axis=1)


def label_variation(values: np.ndarray, reference: np.ndarray, *,
                    available: np.ndarray | None = None, draws: int = DRAWS, seed: int = SEED,
                    rbo_p: float = RBO_P, chunk: int = 2000) -> Variation:
    """Draw ``draws`` label combinations and compare each leaderboard with ``reference``
    (``(S,)`` means, e.g. the reference label set's leaderboard)."""
    v = np.asarray(values, dtype=np.float64)
    if available is None:
        available = ~np.isnan(v).all(axis=1)                 # (A, Q)
    ref = np.asarray(reference, dtype=np.float64)
    ref_order = order(ref)
    idx = pair_index(v.shape[1])
    ref_sign = np.sign(ref[idx[:, 0]] - ref[idx[:, 1]])
    who = draw_assessors(available, draws, seed)
    above = np.zeros(len(idx))
    against = np.zeros(len(idx))
    parts: dict[str, list[np.ndarray]] = {"kendall": [], "spearman": [], "rbo_ext": [],
                                          "rbo": []}
    for start in range(0, draws, chunk):
        boards = drawn_leaderboards(v, who[start:start + chunk])
        s = np.sign(boards[:, idx[:, 0]] - boards[:, idx[:, 1]])
        above += (s > 0).sum(0) + 0.5 * (s == 0).sum(0)
        against += np.where(ref_sign != 0, (s == -ref_sign) + 0.5 * (s == 0), 0.5).sum(0)
        parts["kendall"].append(np.atleast_1d(kendall_tau_b(boards, ref)))
        parts["spearman"].append(np.atleast_1d(spearman_rho(boards, ref)))
        o = order(boards)
        parts["rbo_ext"].append(np.atleast_1d(rbo_extrapolated(o, ref_order, rbo_p)))
        parts["rbo"].append(np.atleast_1d(rbo_package(o, ref_order, rbo_p)))
    p_above = above / draws
    return Variation(draws, against / draws, np.minimum(p_above, 1 - p_above),
                     *(np.concatenate(parts[k]) for k in ("kendall", "spearman", "rbo_ext",
                                                          "rbo")), rbo_p)


__all__ = ["DRAWS", "SEED", "Variation", "draw_assessors", "drawn_leaderboards",
           "label_variation"]
