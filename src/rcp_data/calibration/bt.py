"""Stage A: the Bradley-Terry fit of a tournament (paper Sec. 3.1, App. C.2, Table 2).

Per query, the abilities minimize (docs/concepts "Stage A")

    sum(weight * BCE(sigmoid(theta_winner - theta_loser), label)) / sum(weight)
        + 0.5 * ridge * sum(theta^2),            ridge = 1e-4,

by L-BFGS, at most 250 iterations, from theta = 0 (:mod:`.bt_settings`); ``theta_bt`` is reported centred to mean
zero over the query's documents with observations, and a document without any gets 0. All
queries are fitted at once (:mod:`.lbfgs`: one L-BFGS per query in lockstep) on the sufficient
statistics of :mod:`.bt_pairs`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from scipy.stats import rankdata

from rcp_data.calibration.bt_pairs import PairStats, pair_statistics
from rcp_data.calibration.bt_settings import BT_SETTINGS, BtSettings
from rcp_data.calibration.fit import resolve_device
from rcp_data.calibration.lbfgs import LbfgsSettings, minimize_blocks
from rcp_data.calibration.reading import DEFAULT_RULE, ReadingStats
from rcp_data.calibration.tournament import (
    FALLBACK,
    PARTIAL,
    SOFT,
    UNREADABLE,
    Tournament,
    classify_windows,
)

log = logging.getLogger(__name__)

# Below this many distinct pairs the fit runs on one CPU thread: on a small problem torch's
# thread pool costs more than it gives (and far more when other processes share the cores).
SMALL_PROBLEM_PAIRS = 1_000_000


class BtObjective:
    """The Stage A loss of a set of queries (blocks) on a padded ``(B, dmax)`` layout."""

    def __init__(self, stats: PairStats, queries: np.ndarray, query_start: np.ndarray,
                 ridge: float, device: torch.device) -> None:
        self.device, self.ridge = device, ridge
        self.n_blocks = len(queries)
        sizes = np.diff(query_start)[queries]
        self.dmax = dmax = max(int(sizes.max()) if len(sizes) else 1, 1)
        first = query_start[queries]
        counts = stats.pair_start[queries + 1] - stats.pair_start[queries]
        # each document's place in the padded (B, dmax) layout
        index = np.int32 if self.n_blocks * dmax < 2**31 - 1 else np.int64
        docs = _ranges(first, sizes)
        flat = np.full(len(stats.linear), -1, dtype=index)
        flat[docs] = (np.repeat(np.arange(self.n_blocks, dtype=np.int64) * dmax - first, sizes)
                      + docs).astype(index)
        everything = len(queries) == len(query_start) - 1 and np.array_equal(
            queries, np.arange(len(queries)))
        rows = slice(None) if everything else _ranges(stats.pair_start[queries], counts)
        lo, hi = flat[stats.lo[rows]], flat[stats.hi[rows]]
        weight = stats.weight[rows]
        del rows, flat
        slot = (np.arange(dmax)[None, :] < sizes[:, None])
        doc = np.where(slot, first[:, None] + np.arange(dmax)[None, :], 0)
        linear = np.where(slot, stats.linear[doc], 0.0)
        inv = 1.0 / np.maximum(stats.weight_sum[queries], np.finfo(float).tiny)
        as_t = lambda a, dt=torch.float64: torch.as_tensor(a, dtype=dt, device=device)  # noqa: E731
        # int32 places (gathers are faster); pairs sorted by lo, so lo's sums are segments
        torch_index = torch.int32 if index is np.int32 else torch.long
        self.lo, self.hi = as_t(lo, torch_index), as_t(hi, torch_index)
        self.lo_lengths = as_t(np.bincount(lo, minlength=self.n_blocks * dmax), torch.long)
        del lo, hi
        self.weight = as_t(weight)
        self.lengths = as_t(counts, torch.long)
        self.linear, self.inv = as_t(linear), as_t(inv)
        self.ridge_mask = as_t(slot * ridge)  # the ridge on real documents, not the padding
        self._source = (stats, queries, query_start, ridge)

    def evaluate(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        flat = theta.reshape(-1)
        d = torch.index_select(flat, 0, self.lo)
        d -= torch.index_select(flat, 0, self.hi)
        ws = torch.sigmoid(d).mul_(self.weight)
        grad = torch.segment_reduce(ws, "sum", lengths=self.lo_lengths, unsafe=True, initial=0.0)
        grad.index_add_(0, self.hi, ws, alpha=-1)
        del ws
        sp = torch.nn.functional.softplus(d)
        del d
        pair_loss = torch.segment_reduce(sp.mul_(self.weight), "sum", lengths=self.lengths,
                                         unsafe=True, initial=0.0)
        del sp
        shrink = self.ridge_mask * theta
        value = (pair_loss + (self.linear * theta).sum(1)) * self.inv + 0.5 * (shrink * theta).sum(1)
        g = (grad.view_as(theta) + self.linear) * self.inv[:, None] + shrink
        return value, g

    def restrict(self, keep: torch.Tensor) -> BtObjective:
        stats, queries, query_start, ridge = self._source
        return BtObjective(stats, queries[keep.cpu().numpy()], query_start, ridge, self.device)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start, start + count)`` for each pair of arguments."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return np.arange(total) + offsets


@dataclass(frozen=True)
class StageAFit:
    """Stage A output: theta_bt per (query, document), per-query diagnostics, the totals."""

    thetas: pd.DataFrame  # [split,] query-id, corpus-id, theta_bt
    queries: pd.DataFrame  # per-query diagnostics (see :func:`fit_stage_a`)
    stats: ReadingStats
    summary: dict = field(default_factory=dict)


@contextlib.contextmanager
def _cpu_threads(n: int | None) -> Iterator[None]:
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_bt_arrays(stats: PairStats, query_start: np.ndarray, *,
                  settings: BtSettings | None = None, device: str = "cpu") -> dict:
    """Fit every query; ``theta`` (N,) centred over observed documents, and per-query arrays."""
    s = settings or BT_SETTINGS
    dev = resolve_device(device)
    n_queries = len(query_start) - 1
    queries = np.arange(n_queries)
    small = dev.type == "cpu" and stats.n_pairs < SMALL_PROBLEM_PAIRS
    with _cpu_threads(1 if small else None):
        obj = BtObjective(stats, queries, query_start, s.ridge, dev)
        x0 = torch.zeros((n_queries, obj.dmax), dtype=torch.float64, device=dev)
        res = minimize_blocks(obj, x0, LbfgsSettings(max_iter=s.max_iter, history=s.history,
                                                     tolerance_grad=s.tolerance_grad))
    theta_pad = res.x
    sizes = np.diff(query_start)
    slot = np.arange(obj.dmax)[None, :] < sizes[:, None]
    theta = theta_pad[slot]
    observed = np.zeros(len(theta), dtype=bool)
    observed[stats.lo] = True
    observed[stats.hi] = True
    doc_query = np.repeat(queries, sizes)
    n_obs = np.bincount(doc_query, weights=observed, minlength=n_queries)
    mean = np.bincount(doc_query, weights=np.where(observed, theta, 0.0),
                       minlength=n_queries) / np.maximum(n_obs, 1)
    theta = np.where(observed, theta - mean[doc_query], 0.0)
    return {"theta": theta, "observed": observed, "loss": res.value,
            "iterations": res.iterations, "converged": res.converged,
            "grad_max": res.grad_max, "evaluations": res.evaluations,
            "partial_evaluations": res.partial_evaluations,
            "seconds": res.seconds, "device": str(dev)}


def spearman_rows(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Spearman correlation of ``a`` and ``b`` per row over ``mask`` (average ranks for ties;
    NaN where fewer than 3 entries or a constant side)."""
    ra = rankdata(np.where(mask, a, np.nan), axis=1, nan_policy="omit")
    rb = rankdata(np.where(mask, b, np.nan), axis=1, nan_policy="omit")
    n = mask.sum(1)
    ra = np.where(mask, ra - np.nansum(ra, 1, keepdims=True) / np.maximum(n, 1)[:, None], 0.0)
    rb = np.where(mask, rb - np.nansum(rb, 1, keepdims=True) / np.maximum(n, 1)[:, None], 0.0)
    den = np.sqrt((ra * ra).sum(1) * (rb * rb).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (ra * rb).sum(1) / den
    return np.where((n >= 3) & (den > 0), rho, np.nan)


def _padded(values: np.ndarray, query_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.diff(query_start)
    dmax = max(int(sizes.max()), 1)
    slot = np.arange(dmax)[None, :] < sizes[:, None]
    out = np.zeros(slot.shape)
    out[slot] = values
    return out, slot


def fit_stage_a(t: Tournament, *, rule: str = DEFAULT_RULE, settings: BtSettings | None = None,
                device: str = "cpu") -> StageAFit:
    """Read ``t`` under ``rule``, fit theta_bt per query, and the diagnostics."""
    s = settings or BT_SETTINGS
    t0 = time.perf_counter()
    reading = classify_windows(t, rule)
    stats = pair_statistics(t, reading.status, settings=s)
    t1 = time.perf_counter()
    fit = fit_bt_arrays(stats, t.query_start, settings=s, device=device)
    doc_query = t.doc_query
    thetas = pd.DataFrame({"query-id": t.query_id[doc_query], "corpus-id": t.doc_id,
                           "theta_bt": fit["theta"]})
    if t.query_split is not None:
        thetas.insert(0, "split", t.query_split[doc_query])
    mean_score = np.divide(stats.score_sum, stats.score_count,
                           out=np.full(t.n_docs, np.nan), where=stats.score_count > 0)
    th_pad, slot = _padded(fit["theta"], t.query_start)
    ms_pad, _ = _padded(np.nan_to_num(mean_score), t.query_start)
    has_score, _ = _padded(stats.score_count > 0, t.query_start)
    observed, _ = _padded(fit["observed"], t.query_start)
    rho = spearman_rows(th_pad, ms_pad, slot & (has_score > 0) & (observed > 0))
    queries = _query_table(t, reading.status, fit, rho)
    if t.query_split is not None:
        queries.insert(0, "split", t.query_split)
    n_conv = int(fit["converged"].sum())
    summary = {
        "rule": reading.stats.rule,
        "reading": reading.stats.to_dict(),
        "queries": t.n_queries, "documents": t.n_docs,
        "documents_without_observations": int((~fit["observed"]).sum()),
        "observations": stats.observations, "distinct_pairs": stats.n_pairs,
        "settings": s.to_dict(),
        "fit": {"device": fit["device"], "converged_queries": n_conv,
                "not_converged_queries": t.n_queries - n_conv,
                "iterations_max": int(fit["iterations"].max()),
                "iterations_median": float(np.median(fit["iterations"])),
                "evaluations": fit["evaluations"],
                "partial_evaluations": fit["partial_evaluations"],
                "loss_median": float(np.median(fit["loss"])),
                "grad_max": float(fit["grad_max"].max()),
                "seconds_read": t1 - t0, "seconds_fit": fit["seconds"]},
        "spearman_theta_bt_mean_score": _quantiles(rho),
    }
    # the windows the reading left out were logged once, by the reading (tournament.py), and
    # are in the diagnostics: left-out windows are the rule at work, not a warning
    if n_conv < t.n_queries:
        log.warning("Stage A: %d of %d queries did not converge within %d iterations",
                    t.n_queries - n_conv, t.n_queries, s.max_iter)
    log.info("Stage A fit: %d queries, %s documents, %d evaluations, %.1f s on %s",
             t.n_queries, f"{t.n_docs:,}", fit["evaluations"], fit["seconds"], fit["device"])
    return StageAFit(thetas, queries, reading.stats, summary)


def _query_table(t: Tournament, status: np.ndarray, fit: dict, rho: np.ndarray) -> pd.DataFrame:
    q = t.window_query
    count = lambda mask: np.bincount(q[mask], minlength=t.n_queries)  # noqa: E731
    sizes = np.diff(t.query_start)
    observed = np.bincount(t.doc_query, weights=fit["observed"], minlength=t.n_queries)
    return pd.DataFrame({
        "query-id": t.query_id, "documents": sizes,
        "documents_observed": observed.astype(np.int64),
        "windows": np.bincount(q, minlength=t.n_queries),
        "windows_used": count(status <= FALLBACK), "windows_fallback": count(status == FALLBACK),
        "windows_unreadable": count(status == UNREADABLE),
        "windows_partial": count(status == PARTIAL), "windows_soft": count(status == SOFT),
        "loss": fit["loss"], "iterations": fit["iterations"].astype(np.int64),
        "converged": fit["converged"], "grad_max": fit["grad_max"],
        "spearman_mean_score": rho,
    })


def _quantiles(x: np.ndarray) -> dict:
    x = x[np.isfinite(x)]
    if not len(x):
        return {"queries": 0}
    return {"queries": len(x), "min": float(x.min()), "p5": float(np.quantile(x, 0.05)),
            "median": float(np.median(x)), "max": float(x.max())}
