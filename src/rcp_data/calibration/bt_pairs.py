"""The Bradley-Terry observations of the entered windows, reduced to sufficient statistics.

Design note "Stage A": every pair of an entered window of ``w`` scored documents is one
observation with soft label ``sigmoid(|s_i - s_j|)`` clipped to [0.01, 0.99] for the winner
(the higher score) and weight ``2 / w``; a fallback window (hard-fallback rule) gives one
observation per pair of its ranking, label 1 for the higher-ranked, weight 1. The loss of a
query is the weighted mean cross-entropy plus the ridge.

Written for the lower-numbered document ``lo`` of each pair, with ``d = theta_lo - theta_hi``
and ``p`` the label that ``lo`` wins (``clip(sigmoid(s_lo - s_hi))``, or 0/1), an observation
costs ``weight * (softplus(d) - p d)``. So a query's summed loss is

    sum over distinct pairs of W_lh softplus(d_lh)  +  c . theta,

with ``W_lh`` the summed weight of the pair and ``c`` one number per document (minus the
weighted labels it wins as ``lo``, plus those as ``hi``). The 140M observations of ViDoRe
become a few tens of millions of distinct pairs and a vector, built query chunk by chunk.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from rcp_data.calibration.bt_settings import BT_SETTINGS, BtSettings
from rcp_data.calibration.tournament import FALLBACK, SOFT, Tournament

log = logging.getLogger(__name__)

CHUNK_BINS = 1 << 24  # dense (query, lo, hi) bins per chunk of queries


@dataclass(frozen=True)
class PairStats:
    """Sufficient statistics of the BT loss: distinct pairs (query-major) and per-document terms."""

    lo: np.ndarray  # (P,) document (int32 below 2^31 documents), lo < hi, sorted by (lo, hi)
    hi: np.ndarray  # (P,)
    weight: np.ndarray  # (P,) summed observation weight
    pair_start: np.ndarray  # (Q + 1,) first pair of each query
    linear: np.ndarray  # (N,) c
    weight_sum: np.ndarray  # (Q,) sum of observation weights (the mean's denominator)
    observations: int  # observations before reduction
    doc_windows: np.ndarray  # (N,) entered windows that show the document
    score_sum: np.ndarray  # (N,) its readable scores in entered soft windows
    score_count: np.ndarray  # (N,)

    @property
    def n_pairs(self) -> int:
        return len(self.lo)


def _observations(t: Tournament, status: np.ndarray, windows: np.ndarray, w: int,
                  row_key: np.ndarray, first_row: int, settings: BtSettings
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, p, weight)`` of every pair of the given windows of size ``w``, ``lo < hi``
    as keys ``query * dmax + place`` (``row_key`` holds them for the rows from
    ``first_row``), ``p`` the label that ``lo`` wins. Each window's rows are put in key order
    first, so that every pair ``i < j`` of places is already ``lo, hi``."""
    rows = t.window_start[windows][:, None] + np.arange(w)
    keys = row_key[rows - first_row]
    order = np.argsort(keys, axis=1)
    keys = np.take_along_axis(keys, order, axis=1)
    rows = np.take_along_axis(rows, order, axis=1)
    i, j = np.triu_indices(w, 1)
    soft = status[windows] == SOFT
    p = np.empty((len(windows), len(i)))
    if soft.any():
        # sigmoid(s_i - s_j) = e_i / (e_i + e_j), e = exp(s): one exp per row, not per pair
        e = np.exp(t.row_score[rows[soft]])
        ei = e[:, i]
        p[soft] = np.clip(ei / (ei + e[:, j]), *settings.label_clip)
    if (~soft).any():
        r = t.row_rank[rows[~soft]]
        p[~soft] = r[:, i] < r[:, j]
    weight = np.repeat(np.where(soft, settings.soft_weight / w, settings.fallback_weight),
                       len(i))
    return keys[:, i].ravel(), keys[:, j].ravel(), p.ravel(), weight


def pair_statistics(t: Tournament, status: np.ndarray, *,
                    settings: BtSettings = BT_SETTINGS) -> PairStats:
    """Reduce the observations of the windows with status SOFT or FALLBACK (see module doc;
    the weights and label clip: ``settings``)."""
    entered = status <= FALLBACK
    n_docs, n_queries = t.n_docs, t.n_queries
    dmax = max(int(np.diff(t.query_start).max()), 1)
    per_chunk = max(1, CHUNK_BINS // (dmax * dmax))
    linear = np.zeros(n_docs)
    weight_sum = np.zeros(n_queries)
    row_query = np.repeat(t.window_query.astype(np.int32), t.window_size)
    row_pos = (t.row_doc - t.query_start[row_query]).astype(np.int32)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    n_obs = 0
    window_bounds = np.searchsorted(t.window_query, np.arange(n_queries + 1))
    for q0 in range(0, n_queries, per_chunk):
        q1 = min(n_queries, q0 + per_chunk)
        nq = q1 - q0
        windows = np.arange(window_bounds[q0], window_bounds[q1])
        windows = windows[entered[windows]]
        sizes = t.window_size[windows]
        r0, r1 = t.window_start[window_bounds[q0]], t.window_start[window_bounds[q1]]
        row_key = (row_query[r0:r1].astype(np.int64) - q0) * dmax + row_pos[r0:r1]
        dense = np.zeros(nq * dmax * dmax)
        c = np.zeros(nq * dmax)
        for w in np.unique(sizes[sizes >= 2]):
            sel = windows[sizes == w]
            lo, hi, p, wt = _observations(t, status, sel, int(w), row_key, r0, settings)
            n_obs += len(lo)
            dense += np.bincount(lo * dmax + hi % dmax, weights=wt, minlength=len(dense))
            wp = wt * p  # -p d = -p (theta_lo - theta_hi): c_lo -= w p, c_hi += w p
            c += np.bincount(hi, weights=wp, minlength=len(c))
            c -= np.bincount(lo, weights=wp, minlength=len(c))
            del lo, hi, p, wt, wp
        sizes_q = np.diff(t.query_start[q0:q1 + 1])
        slot = np.arange(dmax)[None, :] < sizes_q[:, None]
        linear[t.query_start[q0]:t.query_start[q1]] = c.reshape(nq, dmax)[slot]
        weight_sum[q0:q1] = dense.reshape(nq, -1).sum(axis=1)
        nz = np.flatnonzero(dense)
        qloc, rest = np.divmod(nz, dmax * dmax)
        plo, phi = np.divmod(rest, dmax)
        first = t.query_start[q0 + qloc]
        index = np.int32 if n_docs < 2**31 - 1 else np.int64
        parts.append(((first + plo).astype(index), (first + phi).astype(index), dense[nz]))
        del dense, nz, qloc, rest, plo, phi, first
    del row_query, row_pos
    lo = np.concatenate([x[0] for x in parts]) if parts else np.zeros(0, np.int32)
    hi = np.concatenate([x[1] for x in parts]) if parts else np.zeros(0, np.int32)
    weight = np.concatenate([x[2] for x in parts]) if parts else np.zeros(0)
    del parts
    pair_start = np.searchsorted(t.doc_query[lo] if len(lo) else lo, np.arange(n_queries + 1))
    row_entered = np.repeat(entered, t.window_size)
    doc_windows = np.bincount(t.row_doc[row_entered], minlength=n_docs)
    row_soft = np.repeat(status == SOFT, t.window_size)
    score_sum = np.bincount(t.row_doc[row_soft], weights=t.row_score[row_soft], minlength=n_docs)
    score_count = np.bincount(t.row_doc[row_soft], minlength=n_docs)
    log.info("Stage A: %s observations -> %s distinct pairs of %s documents", f"{n_obs:,}",
             f"{len(lo):,}", f"{n_docs:,}")
    return PairStats(lo, hi, weight, pair_start.astype(np.int64), linear, weight_sum, n_obs,
                     doc_windows, score_sum, score_count)

