"""Stage A answers: the tournament table, its checks, and what a reading rule lets in.

The table (builder input ``judge/tournament.parquet``, published as
``provenance/judge_tournament/{split}.parquet``) holds one row per document shown in a window:
``query-id``, ``call_index`` (one window = one ``(query-id, call_index)``), ``phase`` (random |
stratified | adaptive | other), ``position`` (0-based place as shown), ``corpus-id``,
``judge_rank`` (1-based place in the answer, null if absent), ``score`` (the judge's score in
[-5, 5], null if absent) and ``finish_reason``. Builder inputs may add ``split`` (query ids
that repeat across provenance splits); a query is then ``(split, query-id)``.

:func:`load_tournament` checks the table (an error names file, row and field; rows count from
1 in file order) and encodes it as integers, documents numbered query by query in corpus-id
byte order. :func:`classify_windows` applies a reading rule (:mod:`.reading`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rcp_data.calibration.reading import HARD_FALLBACK, ReadingStats, check_rule
from rcp_data.calibration.verdicts import dictionary_codes, sorted_rank
from rcp_data.core.errors import InputError, SchemaError
from rcp_data.model.layout import TOURNAMENT_PHASES
from rcp_data.model.schemas import SCHEMAS

log = logging.getLogger(__name__)

SCORE_RANGE = (-5.0, 5.0)
SPLIT = "split"
# window status after a reading rule
SOFT, FALLBACK, UNREADABLE, PARTIAL = 0, 1, 2, 3


@dataclass(frozen=True)
class Tournament:
    """A checked tournament table as integer codes, rows in window order (window, position)."""

    query_id: np.ndarray  # (Q,) str, sorted by (split, query-id)
    query_split: np.ndarray | None  # (Q,) str, or None without a split column
    doc_id: np.ndarray  # (N,) str: corpus-id of each document
    query_start: np.ndarray  # (Q + 1,) first document of each query
    window_start: np.ndarray  # (K + 1,) first row of each window
    window_query: np.ndarray  # (K,)
    window_call: np.ndarray  # (K,) call_index
    window_phase: np.ndarray  # (K,) index into TOURNAMENT_PHASES
    row_doc: np.ndarray  # (R,) document of each row
    row_score: np.ndarray  # (R,) float64, NaN when null
    row_rank: np.ndarray  # (R,) int64, 0 when null
    row_file: np.ndarray  # (R,) 0-based row in the file
    source: str = "<tournament>"

    @property
    def n_queries(self) -> int:
        return len(self.query_id)

    @property
    def n_docs(self) -> int:
        return len(self.doc_id)

    @property
    def n_windows(self) -> int:
        return len(self.window_query)

    @property
    def n_rows(self) -> int:
        return len(self.row_doc)

    @property
    def window_size(self) -> np.ndarray:
        return np.diff(self.window_start)

    @property
    def doc_query(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_queries), np.diff(self.query_start))

    def window_name(self, k: int) -> str:
        split = f"split {self.query_split[self.window_query[k]]!r}, " if (
            self.query_split is not None) else ""
        return (f"window ({split}query {self.query_id[self.window_query[k]]!r}, call_index "
                f"{int(self.window_call[k])})")


@dataclass(frozen=True)
class WindowReading:
    """Each window's status under a reading rule, and the totals."""

    status: np.ndarray  # (K,) SOFT | FALLBACK | UNREADABLE | PARTIAL
    stats: ReadingStats

    @property
    def entered(self) -> np.ndarray:
        return self.status <= FALLBACK


def read_tournament(path: str | Path, *, for_fit: bool = False) -> pa.Table:
    """Read a tournament parquet (ids dictionary-encoded; 31M rows stay small). ``for_fit``:
    without ``finish_reason``, which the fit does not read."""
    path = Path(path)
    if not path.exists():
        raise InputError("missing file (expected the Stage A tournament table)", path=str(path))
    try:
        names = pq.read_schema(path).names
        _require_columns(names, str(path))
        columns = [c for c in names if not (for_fit and c == "finish_reason")]
        dict_cols = [c for c in ("query-id", "corpus-id", "phase", "finish_reason", SPLIT)
                     if c in columns]
        table = pq.read_table(path, columns=columns, read_dictionary=dict_cols)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"cannot read parquet ({exc})", path=str(path)) from exc
    log.info("read %s tournament rows from %s", f"{table.num_rows:,}", path)
    return table


def _require_columns(names: list[str], source: str, *, fit_only: bool = False) -> None:
    for name in SCHEMAS["judge_tournament"].names:
        if name not in names and not (fit_only and name == "finish_reason"):
            raise SchemaError(f"missing column {name!r} (has {', '.join(names)})",
                              path=source, field=name)


def _base_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _check_types(table: pa.Table, source: str) -> None:
    kinds = {"query-id": "string", "corpus-id": "string", "phase": "string",
             "finish_reason": "string", SPLIT: "string", "call_index": "integer",
             "position": "integer", "judge_rank": "integer", "score": "number"}
    for name, kind in kinds.items():
        if name not in table.column_names:
            continue
        t = _base_type(table.schema.field(name).type)
        ok = {"string": pa.types.is_string(t) or pa.types.is_large_string(t),
              "integer": pa.types.is_integer(t),
              "number": pa.types.is_integer(t) or pa.types.is_floating(t)}[kind]
        if pa.types.is_null(t) and name in ("judge_rank", "score", "finish_reason"):
            ok = True
        if name == "judge_rank" and pa.types.is_floating(t):
            ok = True  # pandas stores an integer column with nulls as float: whole numbers only
        if not ok:
            raise SchemaError(f"column {name!r} has type {t}, expected {kind}", path=source,
                              field=name)


def _first_null(table: pa.Table, name: str, source: str) -> None:
    col = table.column(name)
    if col.null_count:
        row = int(np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False))[0])
        raise InputError(f"{col.null_count:,} rows have no {name}", path=source, row=row + 1,
                         field=name)


def _ints(col: pa.ChunkedArray, fill: int, source: str = "", name: str = "") -> np.ndarray:
    if pa.types.is_null(col.type):
        return np.full(len(col), fill, dtype=np.int64)
    values = pc.fill_null(col, fill).to_numpy(zero_copy_only=False)
    if values.dtype.kind == "f":
        values = np.where(np.isnan(values), fill, values)
        bad = np.flatnonzero(values != np.round(values))
        if bad.size:
            raise InputError(f"{name} {float(values[bad[0]]):g} is not a whole number", path=source,
                             row=int(bad[0]) + 1, field=name)
    return values.astype(np.int64)


def _dict_keys(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Per row: byte-order rank of the value; per rank: dictionary code; the dictionary."""
    codes, dictionary = dictionary_codes(col)
    rank = sorted_rank(dictionary)
    inverse = np.empty_like(rank)
    inverse[rank] = np.arange(len(rank))
    return rank[codes], inverse, dictionary


def _strings(dictionary: pa.Array, codes: np.ndarray) -> np.ndarray:
    return dictionary.take(pa.array(codes, pa.int64())).to_numpy(zero_copy_only=False)


def load_tournament(table: pa.Table | pd.DataFrame, *, source: str = "<tournament>"
                    ) -> Tournament:
    """Check a tournament table and encode it (see the module docstring)."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    # a table read for the fit alone comes without finish_reason (read_tournament checked it)
    _require_columns(table.column_names, source, fit_only=True)
    _check_types(table, source)
    n = table.num_rows
    if n == 0:
        raise InputError("the tournament table has no rows", path=source)
    for name in ("query-id", "call_index", "phase", "position", "corpus-id"):
        _first_null(table, name, source)
    has_split = SPLIT in table.column_names
    if has_split:
        _first_null(table, SPLIT, source)

    # queries: (split, query-id) in byte order; documents: query by query, corpus-id order.
    # 31M rows at ViDoRe scale: intermediate arrays are dropped as soon as they are used.
    qrank, qinv, qdict = _dict_keys(table.column("query-id"))
    if has_split:
        srank, sinv, sdict = _dict_keys(table.column(SPLIT))
        qrank = srank * len(qdict) + qrank
        del srank
    row_query, qkeys = pd.factorize(qrank, sort=True)
    del qrank
    query_id = _strings(qdict, qinv[qkeys % len(qdict)])
    query_split = _strings(sdict, sinv[qkeys // len(qdict)]) if has_split else None
    drank, dinv, ddict = _dict_keys(table.column("corpus-id"))
    drank += row_query.astype(np.int64) * len(ddict)
    row_doc, dkeys = pd.factorize(drank, sort=True)
    del drank
    doc_id = _strings(ddict, dinv[dkeys % len(ddict)])
    query_start = np.searchsorted(dkeys // len(ddict), np.arange(len(qkeys) + 1))

    call_code, call_values = pd.factorize(table.column("call_index").to_numpy(), sort=True)
    call_values = np.asarray(call_values, dtype=np.int64)
    key = row_query.astype(np.int64) * len(call_values) + call_code
    del call_code, row_query
    row_window, wkeys = pd.factorize(key, sort=True)
    del key
    position = table.column("position").to_numpy().astype(np.int64)
    if (position < 0).any():
        row = int(np.flatnonzero(position < 0)[0])
        raise InputError(f"position {position[row]} is negative (0-based place as shown)",
                         path=source, row=row + 1, field="position")
    key = row_window.astype(np.int64) * (int(position.max()) + 1) + position
    order = np.argsort(key, kind="stable")
    del key
    order = order.astype(_index_type(n))
    row_window = row_window[order]
    position = position[order]
    n_windows = len(wkeys)
    window_start = np.zeros(n_windows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_window, minlength=n_windows), out=window_start[1:])
    t = Tournament(
        query_id=query_id, query_split=query_split, doc_id=doc_id, query_start=query_start,
        window_start=window_start, window_query=(wkeys // len(call_values)).astype(np.int64),
        window_call=call_values[wkeys % len(call_values)],
        window_phase=np.zeros(n_windows, dtype=np.int8),
        row_doc=row_doc[order].astype(_index_type(len(doc_id))),
        row_score=_scores(table.column("score"))[order],
        row_rank=_ints(table.column("judge_rank"), 0, source, "judge_rank")[order].astype(
            np.int32),
        row_file=order, source=source)
    del row_doc
    _check_positions(t, row_window, position)
    t = replace(t, window_phase=_phases(t, table.column("phase"), order, row_window))
    _check_ranks(t, table.column("judge_rank"), order)
    _check_repeats(t)
    log.info("tournament: %s rows, %s windows, %s documents of %s queries", f"{n:,}",
             f"{n_windows:,}", f"{t.n_docs:,}", f"{t.n_queries:,}")
    return t


def _index_type(n: int) -> type:
    """int32 for indices below 2^31 (halves the row arrays at ViDoRe scale), else int64."""
    return np.int32 if n < 2**31 - 1 else np.int64


def _scores(col: pa.ChunkedArray) -> np.ndarray:
    if pa.types.is_null(col.type):
        return np.full(len(col), np.nan)
    return pc.fill_null(pc.cast(col, pa.float64()), np.nan).to_numpy(zero_copy_only=False)


def _fail(t: Tournament, k: int, sorted_row: int, field: str, what: str) -> None:
    raise InputError(f"{t.window_name(k)}: {what}", path=t.source,
                     row=int(t.row_file[sorted_row]) + 1, field=field)


def _check_positions(t: Tournament, row_window: np.ndarray, position: np.ndarray) -> None:
    expected = np.arange(t.n_rows) - t.window_start[row_window]
    bad = np.flatnonzero(position != expected)
    if bad.size:
        r = int(bad[0])
        k = int(row_window[r])
        shown = position[t.window_start[k]:t.window_start[k + 1]].tolist()
        _fail(t, k, r, "position", f"positions {shown[:12]} are not 0..{len(shown) - 1}, each "
              "once (0-based places as shown)")


def _phases(t: Tournament, col: pa.ChunkedArray, order: np.ndarray,
            row_window: np.ndarray) -> np.ndarray:
    codes, dictionary = dictionary_codes(col)
    names = dictionary.to_pylist()
    index = np.array([TOURNAMENT_PHASES.index(v) if v in TOURNAMENT_PHASES else -1
                      for v in names], dtype=np.int8)
    phase = index[codes[order]] if len(index) else np.zeros(t.n_rows, np.int8)
    bad = np.flatnonzero(phase < 0)
    if bad.size:
        r = int(bad[0])
        raise InputError(f"phase {names[codes[order][r]]!r} is not one of "
                         f"{', '.join(TOURNAMENT_PHASES)}", path=t.source,
                         row=int(t.row_file[r]) + 1, field="phase")
    first = phase[t.window_start[:-1]]
    mixed = np.flatnonzero(phase != first[row_window])
    if mixed.size:
        r = int(mixed[0])
        _fail(t, int(row_window[r]), r, "phase", "rows of one window name different phases")
    return first


def _check_ranks(t: Tournament, col: pa.ChunkedArray, order: np.ndarray) -> None:
    """A rank present is a 1-based place (null: the document is absent from the answer)."""
    raw = _ints(col, 1, t.source, "judge_rank")[order]
    bad = np.flatnonzero(raw < 1)
    if bad.size:
        r = int(bad[0])
        raise InputError(f"judge_rank {int(raw[r])} is not a 1-based place (null when the "
                         "answer leaves the document out)", path=t.source,
                         row=int(t.row_file[r]) + 1, field="judge_rank")


def _by_size(t: Tournament, windows: np.ndarray):
    """``(w, windows of size w, their rows as a (n, w) matrix)`` for each window size."""
    sizes = t.window_size[windows]
    for w in np.unique(sizes):
        sel = windows[sizes == w]
        yield int(w), sel, t.window_start[sel][:, None] + np.arange(w)


def _check_repeats(t: Tournament) -> None:
    for w, sel, rows in _by_size(t, np.arange(t.n_windows)):
        if w < 2:
            continue
        docs = np.sort(t.row_doc[rows], axis=1)
        rep = np.flatnonzero((docs[:, 1:] == docs[:, :-1]).any(axis=1))
        if rep.size:
            k = int(sel[rep[0]])
            r = rows[rep[0]]
            dup = docs[rep[0]][np.flatnonzero(docs[rep[0], 1:] == docs[rep[0], :-1])[0]]
            second = int(r[np.flatnonzero(t.row_doc[r] == dup)[1]])
            _fail(t, k, second, "corpus-id",
                  f"document {t.doc_id[dup]!r} is shown twice in one window")


def classify_windows(t: Tournament, rule: str) -> WindowReading:
    """Each window's status under ``rule``: soft, fallback (hard-fallback only), or left out
    as unreadable (no readable score) or partial (some score or rank missing)."""
    rule = check_rule(rule, "A")
    lo, hi = SCORE_RANGE
    readable = np.isfinite(t.row_score) & (t.row_score >= lo) & (t.row_score <= hi)
    row_window = np.repeat(np.arange(t.n_windows), t.window_size)
    n_read = np.bincount(row_window, weights=readable, minlength=t.n_windows)
    n_rank = np.bincount(row_window, weights=t.row_rank > 0, minlength=t.n_windows)
    size = t.window_size
    ranked = n_rank == size
    status = np.full(t.n_windows, PARTIAL, dtype=np.int8)
    status[(n_read == size) & ranked] = SOFT
    status[n_read == 0] = UNREADABLE
    if rule == HARD_FALLBACK:
        candidates = np.flatnonzero((status == UNREADABLE) & ranked)
        for _w, sel, rows in _by_size(t, candidates):
            ranks = np.sort(t.row_rank[rows], axis=1)
            distinct = (ranks[:, 1:] != ranks[:, :-1]).all(axis=1)
            status[sel[distinct]] = FALLBACK
    entered = status <= FALLBACK
    missing_score = int((~readable).sum())
    stats = ReadingStats(
        rows_total=t.n_rows, rows_used=int(size[entered].sum()), windows_total=t.n_windows,
        windows_used=int(entered.sum()),
        missing_by_criterion={"score": missing_score,
                              "judge_rank": int((t.row_rank <= 0).sum())},
        rule=rule, windows_unreadable=int((status == UNREADABLE).sum()),
        windows_partial=int((status == PARTIAL).sum()),
        windows_fallback=int((status == FALLBACK).sum()))
    log.info("Stage A reading: %s", stats.text())
    return WindowReading(status, stats)
