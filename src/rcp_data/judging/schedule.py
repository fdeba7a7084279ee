"""The window schedules of one query (paper App. C.2), as generators a driver steps through.

A scheduler yields a batch of :class:`Window` s that can be asked at once and receives their
answers (``{seq: answer or None}``; an answer is a score vector for Stage A, a ``(w, C)`` 0/1
matrix for Stage B; ``None`` is a window stored invalid). What it yields next depends only on
the query's seeded random stream and the answers it received, so a resumed run that feeds it
the stored answers regenerates the very same windows (and window ids).

Stage A: random windows (balanced: each takes the documents shown least often so far, random
tie-breaks), each followed by its reversed copy; a Bradley-Terry fit, then stratified windows
of ``w`` consecutive documents of the estimated order (rounds from a random offset), reversed
too; then adaptive batches: before each a refit, the boundary values of Eq. 6,
``v_r = p_r (1 - p_r) / log2(r + 1) / (1 + n_r)``, and greedy picks of the windows of ``w``
consecutive ranks with the largest summed value, the boundaries a pick covers multiplied by the
discount (0.3). Adaptive windows lie within the top ``adaptive_depth`` (150) ranks of the
current order, as in the authors' toolkit: the ranks an nDCG weighs are refined, the tail of a
larger pool is left to the random and stratified windows. Adaptive windows are shown once, best
first in the current order.

Stage B: balanced windows first (least-shown documents, random ties), then a Rasch fit and
windows of documents with similar estimates (rounds of consecutive documents of that order
from a random offset). No reversed copies.
"""

from __future__ import annotations

import zlib
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from rcp_data.judging.estimates import fit_bt, fit_rasch
from rcp_data.judging.settings import QueryPlan, Schedule, plan_query

STAGES = ("A", "B")


@dataclass(frozen=True)
class Window:
    """One call: its stage, phase, sequence number (the call_index) and the pool positions
    of its documents in the order shown. ``twin``: the seq of the window it reverses."""

    stage: str
    phase: str
    seq: int
    docs: tuple[int, ...]
    twin: int | None = None
    batch: int = 0


Answers = dict[int, "np.ndarray | None"]
Scheduler = Generator[list[Window], Answers, None]


def query_rng(seed: int, stage: str, query_key: str) -> np.random.Generator:
    """The query's own random stream: independent of other queries and of call order."""
    return np.random.default_rng([seed, STAGES.index(stage),
                                  zlib.crc32(query_key.encode("utf-8"))])


def _balanced(counts: np.ndarray, w: int, rng: np.random.Generator) -> np.ndarray:
    """The ``w`` documents shown least often so far (random tie-breaks), in random order."""
    key = counts + rng.random(len(counts)) * 0.5
    pick = np.argsort(key, kind="stable")[:w]
    counts[pick] += 1
    return pick[rng.permutation(w)]


def _starts(n: int, w: int, offset: int) -> list[int]:
    """Window starts covering ranks ``0..n-1`` with windows of ``w`` from ``offset``."""
    starts = list(range(offset, n - w + 1, w))
    if offset > 0:
        starts = [0, *starts]
    if not starts or starts[-1] + w < n:
        starts.append(n - w)
    return starts


def _consecutive(order: np.ndarray, w: int, count: int, rng: np.random.Generator,
                 shuffle: bool) -> list[np.ndarray]:
    """``count`` windows of ``w`` consecutive documents of ``order``, in rounds."""
    out: list[np.ndarray] = []
    n = len(order)
    while len(out) < count:
        for s in _starts(n, w, int(rng.integers(0, w)) if n > w else 0):
            if len(out) == count:
                break
            win = order[s:s + w]
            out.append(win[rng.permutation(w)] if shuffle else win)
    return out


class _Seq:
    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next - 1


def stage_a(n: int, schedule: Schedule, rng: np.random.Generator,
            plan: QueryPlan | None = None) -> Scheduler:
    """The Stage A scheduler of a pool of ``n`` documents (see the module docstring)."""
    plan = plan or plan_query(n, schedule)
    s = schedule.stage_a
    w = plan.window_a
    seq = _Seq()
    answered: list[tuple[np.ndarray, np.ndarray]] = []
    shown: list[np.ndarray] = []

    def ask(batch: list[Window]) -> Generator[list[Window], Answers, None]:
        answers = yield batch
        for win in batch:
            docs = np.asarray(win.docs)
            shown.append(docs)
            a = (answers or {}).get(win.seq)
            if a is not None:
                answered.append((docs, np.asarray(a, dtype=np.float64)))

    def with_twins(phase: str, windows: list[np.ndarray]) -> list[Window]:
        out = []
        for docs in windows:
            k = seq.take()
            out.append(Window("A", phase, k, tuple(int(d) for d in docs)))
            if s.reversed_copies:
                out.append(Window("A", phase, seq.take(), tuple(int(d) for d in docs[::-1]),
                                  twin=k))
        return out

    if plan.random:
        counts = np.zeros(n)
        yield from ask(with_twins("random", [_balanced(counts, w, rng)
                                             for _ in range(plan.random)]))
    if plan.stratified:
        est = fit_bt(n, answered)
        order = np.argsort(-est + rng.random(n) * 1e-9, kind="stable")
        yield from ask(with_twins("stratified",
                                  _consecutive(order, w, plan.stratified, rng, shuffle=True)))
    for b in range(plan.adaptive_batches):
        est = fit_bt(n, answered)
        picks = adaptive_picks(est, shown, w, plan.adaptive_per_batch, s.discount,
                               depth=s.adaptive_depth)
        yield from ask([Window("A", "adaptive", seq.take(), tuple(int(d) for d in p), batch=b)
                        for p in picks])


def boundary_values(est: np.ndarray, shown: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The current order (best first) and the value of each boundary between its ranks
    ``r`` and ``r + 1`` (Eq. 6)."""
    n = len(est)
    order = np.argsort(-est, kind="stable")
    ranked = est[order]
    p = expit(ranked[:-1] - ranked[1:])
    rank_of = np.empty(n, dtype=np.int64)
    rank_of[order] = np.arange(n)
    together = np.zeros(n - 1)
    for docs in shown:
        held = np.zeros(n, dtype=bool)
        held[rank_of[docs]] = True
        together += held[:-1] & held[1:]
    r = np.arange(1, n)
    return order, p * (1 - p) / np.log2(r + 1) / (1 + together)


def adaptive_picks(est: np.ndarray, shown: list[np.ndarray], w: int, count: int,
                   discount: float, depth: int | None = None) -> list[np.ndarray]:
    """One adaptive batch: ``count`` greedy picks of ``w`` consecutive ranks, all within the
    top ``depth`` ranks of the current order (the whole pool when ``depth`` is None)."""
    order, value = boundary_values(est, shown)
    if depth is not None and len(order) > max(depth, w):
        order, value = order[:max(depth, w)], value[:max(depth, w) - 1]
    n = len(order)
    picks = []
    for _ in range(count):
        if n <= w:
            picks.append(order.copy())
            continue
        csum = np.concatenate([[0.0], np.cumsum(value)])
        window_value = csum[w - 1:] - csum[:n - w + 1]  # boundaries start .. start + w - 2
        start = int(np.argmax(window_value))
        picks.append(order[start:start + w].copy())
        value[start:start + w - 1] *= discount
    return picks


def stage_b(n: int, schedule: Schedule, rng: np.random.Generator,
            plan: QueryPlan | None = None) -> Scheduler:
    """The Stage B scheduler of a pool of ``n`` documents (see the module docstring)."""
    plan = plan or plan_query(n, schedule)
    w = plan.window_b
    seq = _Seq()
    rows: list[np.ndarray] = []
    answers_rows: list[np.ndarray] = []
    if plan.balanced:
        counts = np.zeros(n)
        batch = [Window("B", "balanced", seq.take(), tuple(int(d) for d in _balanced(counts, w,
                                                                                      rng)))
                 for _ in range(plan.balanced)]
        answers = yield batch
        for win in batch:
            a = (answers or {}).get(win.seq)
            if a is not None:
                rows.append(np.asarray(win.docs))
                answers_rows.append(np.asarray(a))
    if plan.grouped:
        if rows:
            est = fit_rasch(n, np.concatenate(rows), np.concatenate(answers_rows))
        else:
            est = np.zeros(n)
        order = np.argsort(-est + rng.random(n) * 1e-9, kind="stable")
        batch = [Window("B", "grouped", seq.take(), tuple(int(d) for d in docs))
                 for docs in _consecutive(order, w, plan.grouped, rng, shuffle=True)]
        yield batch
