"""SYNTHETIC Stage A tournaments: the window schedule of paper App. C.2 and a noisy judge.

Nothing here is real judge data: every row says ``finish_reason`` ``synthetic`` (or
``synthetic-length`` for a cut-off answer). The schedule, per query of ``D`` documents and
window size ``w``:

1. random: windows from random permutations (a permutation cut into windows of ``w``; the last
   window of a round overlaps the one before when ``w`` does not divide ``D``); each window is
   shown twice, the second time in reverse order;
2. stratified: windows of ``w`` consecutive documents of the current estimated order, each
   round from a random offset; each shown twice, reversed;
3. adaptive: ``batches`` batches of ``batch_windows`` windows; before each, the estimate is
   refitted and each boundary between ranks ``r`` and ``r + 1`` (1-based) is valued
   ``p (1 - p) / log2(r + 1) / (1 + n_r)`` (Eq. 6; ``p`` the predicted preference, ``n_r`` the
   windows that held both documents); a batch greedily takes the windows of ``w`` consecutive
   ranks with the largest summed value, discounting the boundaries each pick covers by
   ``discount``; adaptive windows are shown once, in the estimated order.

The judge scores a shown document ``clip(round(relevance + noise, 1), -5, 5)``, ``noise ~
N(0, judge_noise)``, and ranks by score (ties: the earlier place first). Answers can fail: an
``unreadable`` share of windows loses every score (half of them keep a complete ranking), a
``partial`` share loses some documents' score and rank.

The estimate is the Bradley-Terry fit of everything seen so far (``estimator="bt"``) or, much
cheaper at benchmark scale, each document's mean score so far (``"mean-score"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.special import expit

PHASES = ("random", "stratified", "adaptive")


@dataclass(frozen=True)
class ScheduleSettings:
    window: int = 10
    random_windows: int = 20  # distinct windows; each shown twice
    stratified_windows: int = 20  # distinct windows; each shown twice
    batches: int = 7
    batch_windows: int = 8
    discount: float = 0.3
    judge_noise: float = 0.6
    unreadable: float = 0.0  # share of windows without readable scores
    partial: float = 0.0  # share of windows with some documents missing
    estimator: str = "bt"  # or "mean-score"


@dataclass
class _Log:
    """Windows shown so far for a group of queries with the same number of documents."""

    docs: list  # per window: (Q, w) document positions
    phase: list
    scores: list  # per window: (Q, w) float, NaN when missing
    ranks: list  # per window: (Q, w) int, 0 when missing
    finish: list  # per window: (Q,) 0 stop, 1 cut off


def _judge(rel: np.ndarray, docs: np.ndarray, s: ScheduleSettings, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, 1-based ranks (ties: earlier place first) and finish codes of windows ``docs``
    ``(Q, w)`` with relevance ``rel`` ``(Q, D)``."""
    q, w = docs.shape
    true = np.take_along_axis(rel, docs, axis=1)
    score = np.clip(np.round(true + rng.normal(0, s.judge_noise, (q, w)), 1), -5.0, 5.0)
    order = np.argsort(-score, axis=1, kind="stable")
    rank = np.empty((q, w), dtype=np.int64)
    np.put_along_axis(rank, order, np.arange(1, w + 1)[None, :].repeat(q, 0), axis=1)
    finish = np.zeros(q, dtype=np.int8)
    u = rng.random(q)
    unread = u < s.unreadable
    partial = (u >= s.unreadable) & (u < s.unreadable + s.partial)
    score[unread] = np.nan
    lost = unread & (rng.random(q) < 0.5)
    rank[lost] = 0
    finish[lost] = 1
    if partial.any() and w > 1:
        k = rng.integers(1, w, partial.sum())  # documents cut off the end of the answer
        cut = np.argsort(np.argsort(-score[partial], axis=1, kind="stable"), axis=1) >= (
            w - k)[:, None]
        sc, rk = score[partial], rank[partial]
        sc[cut], rk[cut] = np.nan, 0
        score[partial], rank[partial] = sc, rk
        finish[partial] = 1
    return score, rank, finish


def _show(log: _Log, rel, docs, phase, s, rng, *, reversed_copy: bool) -> None:
    for d in (docs, docs[:, ::-1]) if reversed_copy else (docs,):
        sc, rk, fin = _judge(rel, d, s, rng)
        log.docs.append(d)
        log.phase.append(phase)
        log.scores.append(sc)
        log.ranks.append(rk)
        log.finish.append(fin)


def _starts(n_docs: int, w: int, offset: int = 0) -> list[int]:
    starts = list(range(offset, n_docs - w + 1, w))
    if offset > 0:
        starts = [0, *starts]
    if not starts or starts[-1] + w < n_docs:
        starts.append(n_docs - w)
    return starts


def _estimate(log: _Log, n_docs: int, s: ScheduleSettings) -> np.ndarray:
    """(Q, D) current estimate of every document (see the module docstring)."""
    docs = np.concatenate(log.docs, axis=1)
    scores = np.concatenate(log.scores, axis=1)
    q = docs.shape[0]
    if s.estimator == "mean-score":
        ok = np.isfinite(scores)
        key = (np.arange(q)[:, None] * n_docs + docs)[ok]
        tot = np.bincount(key, weights=scores[ok], minlength=q * n_docs)
        cnt = np.bincount(key, minlength=q * n_docs)
        return (tot / np.maximum(cnt, 1)).reshape(q, n_docs)
    from rcp_data.calibration.bt import fit_bt_arrays
    from rcp_data.calibration.bt_pairs import pair_statistics
    from rcp_data.calibration.tournament import classify_windows, load_tournament

    # fixed-width ids sort as the numbers do: query i, document j stay in place
    t = load_tournament(_table(log, [f"{i:07d}" for i in range(q)],
                               [[f"{j:07d}" for j in range(n_docs)]] * q))
    stats = pair_statistics(t, classify_windows(t, "hard-fallback").status)
    theta = fit_bt_arrays(stats, t.query_start)["theta"]
    est = np.zeros((q, n_docs))
    est[t.doc_query, t.doc_id.astype(np.int64) % n_docs] = theta
    return est


def _adaptive_batch(log: _Log, est: np.ndarray, s: ScheduleSettings, w: int) -> np.ndarray:
    """(Q, batch_windows, w) windows of consecutive estimated ranks, best first (Eq. 6)."""
    q, n = est.shape
    order = np.argsort(-est, axis=1, kind="stable")
    ranked = np.take_along_axis(est, order, axis=1)
    p = expit(ranked[:, :-1] - ranked[:, 1:])
    # n_r: windows that held both documents of boundary r
    inv = np.empty_like(order)
    np.put_along_axis(inv, order, np.arange(n)[None, :].repeat(q, 0), axis=1)
    together = np.zeros((q, n - 1))
    for d in log.docs:
        r = np.sort(np.take_along_axis(inv, d, axis=1), axis=1)  # ranks held by the window
        held = np.zeros((q, n), dtype=bool)
        np.put_along_axis(held, r, True, axis=1)
        together += held[:, :-1] & held[:, 1:]
    value = p * (1 - p) / np.log2(np.arange(2, n + 1))[None, :] / (1 + together)
    picks = []
    for _ in range(s.batch_windows):
        csum = np.concatenate([np.zeros((q, 1)), np.cumsum(value, axis=1)], axis=1)
        window_value = csum[:, w - 1:] - csum[:, :n - w + 1]  # boundaries start..start+w-2
        start = np.argmax(window_value, axis=1)
        picks.append(np.take_along_axis(order, start[:, None] + np.arange(w)[None, :], axis=1))
        covered = (np.arange(n - 1)[None, :] >= start[:, None]) & (
            np.arange(n - 1)[None, :] <= (start + w - 2)[:, None])
        value = np.where(covered, value * s.discount, value)
    return np.stack(picks, axis=1)


def simulate_group(rel: np.ndarray, s: ScheduleSettings, rng: np.random.Generator) -> _Log:
    """The schedule for ``Q`` queries of ``D`` documents each (``rel`` is ``(Q, D)``)."""
    q, n = rel.shape
    w = min(s.window, n)
    log = _Log([], [], [], [], [])
    shown = 0
    while shown < s.random_windows:
        perm = np.argsort(rng.random((q, n)), axis=1)
        for start in _starts(n, w):
            if shown == s.random_windows:
                break
            _show(log, rel, perm[:, start:start + w], "random", s, rng, reversed_copy=True)
            shown += 1
    shown = 0
    while shown < s.stratified_windows:
        order = np.argsort(-_estimate(log, n, s), axis=1, kind="stable")
        for start in _starts(n, w, int(rng.integers(0, w))):
            if shown == s.stratified_windows:
                break
            _show(log, rel, order[:, start:start + w], "stratified", s, rng, reversed_copy=True)
            shown += 1
    for _ in range(s.batches):
        batch = _adaptive_batch(log, _estimate(log, n, s), s, w)
        for k in range(batch.shape[1]):
            _show(log, rel, batch[:, k], "adaptive", s, rng, reversed_copy=False)
    return log


def _table(log: _Log, query_ids: list[str], doc_ids: list[list[str]]) -> pa.Table:
    """The log as a tournament table (dictionary-encoded ids), windows in call order."""
    docs = np.stack(log.docs, axis=1)  # (Q, K, w)
    q, k, w = docs.shape
    scores, ranks = np.stack(log.scores, axis=1), np.stack(log.ranks, axis=1)
    finish = np.repeat(np.stack(log.finish, axis=1)[:, :, None], w, axis=2)
    phase = np.broadcast_to(np.array([PHASES.index(p) for p in log.phase])[None, :, None],
                            (q, k, w))
    qidx = np.broadcast_to(np.arange(q)[:, None, None], (q, k, w))
    codes, vocab = pd.factorize(np.array([d for ids in doc_ids for d in ids], dtype=object))
    offsets = np.cumsum([0] + [len(ids) for ids in doc_ids[:-1]])
    flat_doc = codes[(offsets[qidx] + docs).ravel()]
    rank = ranks.ravel()
    return pa.table({
        "query-id": pa.DictionaryArray.from_arrays(pa.array(qidx.ravel().astype(np.int32)),
                                                   pa.array(query_ids)),
        "call_index": np.broadcast_to(np.arange(k)[None, :, None], (q, k, w)).ravel().astype(
            np.int64),
        "phase": pa.DictionaryArray.from_arrays(pa.array(phase.ravel().astype(np.int8)),
                                                pa.array(list(PHASES))),
        "position": np.broadcast_to(np.arange(w)[None, None, :], (q, k, w)).ravel().astype(
            np.int64),
        "corpus-id": pa.DictionaryArray.from_arrays(pa.array(flat_doc.astype(np.int32)),
                                                    pa.array(vocab.astype(str))),
        "judge_rank": pa.array(rank, mask=rank == 0, type=pa.int64()),
        "score": pa.array(scores.ravel(), mask=np.isnan(scores.ravel()), type=pa.float64()),
        "finish_reason": pa.DictionaryArray.from_arrays(
            pa.array(finish.ravel().astype(np.int8)),
            pa.array(["synthetic", "synthetic-length"])),
    })


def simulate_tournament(query_ids: list[str], doc_ids: list[list[str]],
                        relevance: list[np.ndarray], *, settings: ScheduleSettings | None = None,
                        seed: int = 42) -> pa.Table:
    """A SYNTHETIC tournament table for the given queries (documents and true relevance per
    query); queries with the same number of documents are simulated together."""
    s = settings or ScheduleSettings()
    rng = np.random.default_rng(seed)
    sizes = np.array([len(d) for d in doc_ids])
    parts = []
    for n in np.unique(sizes):
        idx = np.flatnonzero(sizes == n)
        rel = np.stack([np.asarray(relevance[i], dtype=np.float64) for i in idx])
        log = simulate_group(rel, s, rng)
        parts.append(_table(log, [query_ids[i] for i in idx], [doc_ids[i] for i in idx]))
    return pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
