"""Stage B verdicts: the reading rule and the per-(query, document) pass counts a fit needs.

A verdict table holds one row per (window, document): ``query-id``, ``call_index`` (one window
= one ``(query-id, call_index)``), ``corpus-id``, ``C1..Cn`` (0/1, null when the judge gave no
answer) and ``finish_reason``. The reading rule (:mod:`.reading`, ``complete``; the ViDoRe
card's): a window enters the fit only if it gives all criteria for every document it shows; the
windows and rows left out are counted, by cause (unreadable: no answer at all; partial).

The 2PL likelihood depends on the verdicts only through each document's number of placements
``n`` and its pass counts ``S_c``, so the table is reduced to those counts here (vectorized; a
14.5M-row table becomes ~2.2M documents x C).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.calibration.reading import DEFAULT_RULE, ReadingStats, check_rule
from rcp_data.core.errors import InputError, SchemaError, shown
from rcp_data.core.io import read_parquet, read_parquet_schema
from rcp_data.model.schemas import criteria_columns

log = logging.getLogger(__name__)

KEY_COLUMNS = ("query-id", "call_index", "corpus-id")


@dataclass
class VerdictCounts:
    """Per-(query, document) placements ``n`` and pass counts ``passes[:, c]`` of criterion c."""

    query_id: np.ndarray  # object (str), shape (D,)
    corpus_id: np.ndarray  # object (str), shape (D,)
    n: np.ndarray  # int64, shape (D,)
    passes: np.ndarray  # int64, shape (D, C)
    criteria: list[str]
    stats: ReadingStats

    @property
    def n_docs(self) -> int:
        return int(self.n.shape[0])

    @property
    def n_responses(self) -> int:
        return int(self.n.sum())

    def frame(self) -> pd.DataFrame:
        """The counts as a table: query-id, corpus-id, n, C1..Cn (pass counts)."""
        df = pd.DataFrame({"query-id": self.query_id, "corpus-id": self.corpus_id, "n": self.n})
        for i, c in enumerate(self.criteria):
            df[c] = self.passes[:, i]
        return df


def read_verdicts(path: str | Path) -> pa.Table:
    """Read a verdict parquet (ids dictionary-encoded to keep 14.5M rows small)."""
    path = Path(path)
    what = "the verdict table"
    names = read_parquet_schema(path, what=what).names
    crit = criteria_columns(names)
    if not crit:
        raise SchemaError(f"no criterion columns C1..Cn (has {', '.join(names)})",
                          path=str(path))
    table = read_parquet(path, [*KEY_COLUMNS, *crit], what=what,
                         read_dictionary=["query-id", "corpus-id"])
    log.info("read %s verdict rows (%d criteria) from %s", f"{table.num_rows:,}", len(crit), path)
    return table


def dictionary_codes(col: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Dense int codes and the dictionary of a (string or dictionary) column."""
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    col = col.unify_dictionaries() if isinstance(col, pa.ChunkedArray) else col
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not chunks:
        return np.zeros(0, dtype=np.int64), pa.array([], pa.string())
    dictionary = chunks[0].dictionary
    codes = np.concatenate(
        [c.indices.to_numpy(zero_copy_only=False).astype(np.int64) for c in chunks]
    )
    return codes, dictionary


def sorted_rank(dictionary: pa.Array) -> np.ndarray:
    """Position of each dictionary entry in byte-wise sorted order."""
    idx = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(len(idx), dtype=np.int64)
    rank[idx] = np.arange(len(idx))
    return rank


def _answers(col: pa.ChunkedArray, name: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """0/1 answers (int8, nulls as 0) and the null mask of one criterion column."""
    missing = pc.is_null(col, nan_is_null=True).to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(col.type):
        col = pc.cast(col, pa.int8())
    values = pc.fill_null(col, 0).to_numpy(zero_copy_only=False)
    if values.dtype.kind == "f":
        values = np.nan_to_num(values, nan=0.0)
    elif values.dtype.kind not in "iub":
        raise SchemaError(f"column {name!r} has type {col.type}, expected int8 0/1",
                          path=source, field=name)
    bad = np.flatnonzero((values != 0) & (values != 1) & ~missing)
    if bad.size:
        row = int(bad[0])
        raise InputError(
            f"answer {shown(values[row])} is not 0 or 1 ({bad.size:,} such rows)",
            path=source, row=row, field=name,
        )
    return values.astype(np.int8), missing


def count_verdicts(table: pa.Table | pd.DataFrame, *, source: str = "<verdicts>",
                   rule: str = DEFAULT_RULE) -> VerdictCounts:
    """Apply the reading rule and reduce the verdicts to per-(query, document) counts."""
    rule = check_rule(rule, "B")
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    names = table.column_names
    for col in KEY_COLUMNS:
        if col not in names:
            raise SchemaError(f"missing column {col!r} (has {', '.join(names)})",
                              path=source, field=col)
    crit = criteria_columns(names)
    if not crit:
        raise SchemaError(f"no criterion columns C1..Cn (has {', '.join(names)})", path=source)
    expected = [f"C{i + 1}" for i in range(len(crit))]
    if crit != expected:
        raise SchemaError(f"criterion columns {crit} are not C1..C{len(crit)} without gaps",
                          path=source)
    n_rows = table.num_rows
    for col in ("query-id", "corpus-id", "call_index"):
        nulls = table.column(col).null_count
        if nulls:
            row = int(np.flatnonzero(pc.is_null(table.column(col)).to_numpy(
                zero_copy_only=False))[0])
            raise InputError(f"{nulls:,} rows have no {col}", path=source, row=row, field=col)

    qcode, qdict = dictionary_codes(table.column("query-id"))
    dcode, ddict = dictionary_codes(table.column("corpus-id"))
    calls = table.column("call_index").to_numpy()
    _, call_code = np.unique(calls, return_inverse=True)
    n_calls = int(call_code.max()) + 1 if n_rows else 1
    window, _ = pd.factorize(qcode * n_calls + call_code.astype(np.int64), sort=False)
    n_windows = int(window.max()) + 1 if n_rows else 0

    answers = np.empty((n_rows, len(crit)), dtype=np.int8)
    n_missing = np.zeros(n_rows, dtype=np.int64)
    missing_by: dict[str, int] = {}
    for i, c in enumerate(crit):
        answers[:, i], missing = _answers(table.column(c), c, source)
        missing_by[c] = int(missing.sum())
        n_missing += missing
    # per window: answers missing, and answers asked (documents x criteria)
    missed = np.bincount(window, weights=n_missing, minlength=n_windows)
    asked = np.bincount(window, minlength=n_windows) * len(crit)
    window_bad = missed > 0
    keep = ~window_bad[window]
    unreadable = int(((missed == asked) & window_bad).sum())
    stats = ReadingStats(
        rows_total=n_rows,
        rows_used=int(keep.sum()),
        windows_total=n_windows,
        windows_used=int(n_windows - window_bad.sum()),
        missing_by_criterion=missing_by,
        rule=rule,
        windows_unreadable=unreadable,
        windows_partial=int(window_bad.sum()) - unreadable,
    )
    if stats.windows_left_out:
        log.warning("Stage B reading: %s (%s rows left out)", stats.text(),
                    f"{stats.rows_left_out:,}")
    if stats.rows_used == 0:
        raise InputError("no window gives all criteria for every document it shows; "
                         f"nothing to fit ({n_windows:,} windows left out)", path=source)

    qk, dk, ans = qcode[keep], dcode[keep], answers[keep]
    pair, uniques = pd.factorize(qk * (len(ddict) or 1) + dk, sort=True)
    n_docs = len(uniques)
    n = np.bincount(pair, minlength=n_docs).astype(np.int64)
    passes = np.empty((n_docs, len(crit)), dtype=np.int64)
    for i in range(len(crit)):
        passes[:, i] = np.bincount(pair, weights=ans[:, i], minlength=n_docs).astype(np.int64)
    uq = uniques // (len(ddict) or 1)
    ud = uniques % (len(ddict) or 1)
    order = np.lexsort((sorted_rank(ddict)[ud], sorted_rank(qdict)[uq]))  # by query-id, then corpus-id
    uq, ud = uq[order], ud[order]
    query_id = qdict.take(pa.array(uq)).to_numpy(zero_copy_only=False)
    corpus_id = ddict.take(pa.array(ud)).to_numpy(zero_copy_only=False)
    counts = VerdictCounts(query_id, corpus_id, n[order], passes[order], crit, stats)
    log.info(
        "verdicts: %s rows in %s windows -> %s (query, document) pairs over %s queries",
        f"{stats.rows_used:,}", f"{stats.windows_used:,}", f"{n_docs:,}",
        f"{len(np.unique(uq)):,}",
    )
    return counts
