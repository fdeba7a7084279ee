"""A run's checks for scoring, and the canonical TREC run's one-pass reader: compiled
(``_run_scan``, C, built at install where a C compiler is there) or, in an install without
one (:data:`COMPILED` None), the same work in NumPy with the same results (the tests run both).

:func:`check_run` finds a run's blocks of rows with one query id, its first non-finite score,
its first row ranking a document its query ranked before, and whether it is ranked (each query
one block, scores not increasing in it). :func:`scan_trec_run` splits a canonical TREC run's
bytes and checks them in the same pass (compiled only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rcp_data.runs.id_spans import IdSpans

try:
    from rcp_data.runs import _run_scan as COMPILED
except ImportError:                                      # installed without a C compiler
    COMPILED = None

QUERY_SALT = np.uint64(0xD6E8FEB86659FD93)              # mixes a query index into a key
MIN_LINE = len("q Q d 1 0 t\n")                       # the shortest canonical TREC run line
BOUND_UP_TO = 1 << 28                                   # bytes: arrays of size // MIN_LINE rows


@dataclass(frozen=True)
class RunChecks:
    """``block_start[b]``: the first row of block ``b`` (rows with one query id), in file
    order; the first row (0-based) with a NaN or infinite score, and the first ranking a
    document its query ranked before (None when none); ``ranked``: each query one block,
    scores not increasing in it."""

    block_start: np.ndarray
    nonfinite: int | None
    repeat: int | None
    ranked: bool

    def block_of(self, row: int) -> int:
        return int(np.searchsorted(self.block_start, row, side="right")) - 1


def check_run(queries: IdSpans, docs: IdSpans, scores: np.ndarray) -> tuple[RunChecks, IdSpans]:
    """The checks of a run given as spans (one query id, corpus-id and float64 score a row),
    and the query id of each block."""
    if COMPILED is None:
        return _numpy_checks(queries, docs, scores)
    n = len(scores)
    start, bqs, bqe = (np.empty(n, dtype=np.int64) for _ in range(3))
    blocks, nonfinite, repeat, ranked = COMPILED.check_run(
        queries.buf, _ints(queries.starts), _ints(queries.ends), docs.buf, _ints(docs.starts),
        _ints(docs.ends), np.ascontiguousarray(scores, dtype=np.float64), start, bqs, bqe)
    return (_checks(start[:blocks], nonfinite, repeat, ranked),
            IdSpans(queries.buf, bqs[:blocks], bqe[:blocks]))


def scan_trec_run(raw: np.ndarray, size: int
                  ) -> tuple[IdSpans, np.ndarray, IdSpans, RunChecks, bool, bytes | None] | None:
    """``(docs, scores, block queries, checks, ascii, tag)`` of the canonical TREC run in
    ``raw[:size]`` (uint8, ``raw[size - 1]`` a newline, :data:`~.id_spans.PAD` bytes after
    it; ``ascii``: no byte above 0x7f, else the caller checks the UTF-8; ``tag``: the sixth
    field of every line, None where two differ), or None where the bytes are not canonical.
    Scores are what ``float()`` reads. Needs :data:`COMPILED`."""
    # room for every line: a bound where the file is small (pages never written cost nothing),
    # else the newlines counted
    room = size // MIN_LINE + 1 if size <= BOUND_UP_TO else COMPILED.count_lines(raw, size)
    ds, de, start, bqs, bqe = (np.empty(room, dtype=np.int64) for _ in range(5))
    scores = np.empty(room, dtype=np.float64)
    got = COMPILED.scan_trec_run(raw, size, ds, de, scores, start, bqs, bqe)
    if got is None:
        return None
    rows, ascii_only, blocks, nonfinite, repeat, ranked, tag0, tag1 = got
    return (IdSpans(raw, ds[:rows], de[:rows]), scores[:rows],
            IdSpans(raw, bqs[:blocks], bqe[:blocks]),
            _checks(start[:blocks], nonfinite, repeat, ranked), ascii_only,
            raw[tag0:tag1].tobytes() if tag0 >= 0 else None)


def _checks(start: np.ndarray, nonfinite: int, repeat: int, ranked: bool) -> RunChecks:
    return RunChecks(start, nonfinite if nonfinite >= 0 else None,
                     repeat if repeat >= 0 else None, bool(ranked))


def _ints(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _numpy_checks(queries: IdSpans, docs: IdSpans, scores: np.ndarray
                  ) -> tuple[RunChecks, IdSpans]:
    bad = ~np.isfinite(scores)
    nonfinite = int(bad.argmax()) if bad.any() else None
    start = queries.block_starts()
    local: dict[str, int] = {}
    ids = np.array([local.setdefault(q, len(local)) for q in queries.texts(start)],
                   dtype=np.int64)
    size = np.diff(np.append(start, len(scores)))
    repeat = _first_repeat(np.repeat(ids, size), docs)
    rises = scores[1:] > scores[:-1]
    rises[start[1:] - 1] = False                         # a new block may start higher
    ranked = len(local) == len(start) and not rises.any()
    return RunChecks(start, nonfinite, repeat, bool(ranked)), queries.take(start)


def _first_repeat(local: np.ndarray, docs: IdSpans) -> int | None:
    """The first row (0-based) ranking a document its query has ranked before, if any.

    One sort of a 64-bit key of each row's (query, corpus-id) clears almost every run
    (:meth:`IdSpans.quick_key`); where two keys are equal, those rows are compared exactly
    (length and every word), so a repeat is never missed and a shared key never taken for one."""
    if len(local) < 2:
        return None
    key = docs.quick_key() + local.astype(np.uint64) * QUERY_SALT
    sk = np.sort(key)
    if not np.any(sk[1:] == sk[:-1]):
        return None
    twice = sk[1:][sk[1:] == sk[:-1]]
    rows = np.flatnonzero(np.isin(key, twice))           # rows whose key is not unique
    cols = [docs.lengths[rows], local[rows]] + list(docs.take(rows).words().T)
    order = np.lexsort(cols[::-1])                       # stable: file order inside a group
    same = np.ones(len(order) - 1, dtype=bool)
    for col in cols:
        same &= col[order][1:] == col[order][:-1]
    return int(rows[order[1:][same]].min()) if same.any() else None


__all__ = ["COMPILED", "QUERY_SALT", "RunChecks", "check_run", "scan_trec_run"]
