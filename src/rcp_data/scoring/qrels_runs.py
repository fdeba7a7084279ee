"""A run read for ``score --qrels``: its ids as byte spans, checked, with no object per row.

:func:`read_run` reads a canonical TREC run file on its bytes
(:func:`~rcp_data.stages.inputs.trec_run_bytes.split_trec_run`) and every other run (parquet,
mteb predictions, a frame, a TREC file in another shape) as
:func:`~rcp_data.scoring.runs_in.read_ranking_table` does, then checks it as the scorer needs:
finite scores, and no document ranked twice for a query (one line naming file, row and field).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from rcp_data.core.errors import InputError
from rcp_data.scoring.runs_in import read_ranking_table
from rcp_data.stages.inputs.id_spans import IdSpans, mix
from rcp_data.stages.inputs.run_files import text_lines
from rcp_data.stages.inputs.trec_run_bytes import read_trec_run_spans

_QUERY_SALT = np.uint64(0xD6E8FEB86659FD93)


@dataclass(frozen=True)
class ReadRun:
    """A run in file order: query ids and corpus-ids as spans, scores, and the blocks of rows
    with one query id (``block_start[b]``: the block's first row, ``block_query[b]``: its id).
    ``ranked``: as run files usually are, one block per query, scores not increasing in each."""

    queries: IdSpans
    docs: IdSpans
    scores: np.ndarray
    block_start: np.ndarray
    block_query: tuple[str, ...]
    ranked: bool = False

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def block_size(self) -> np.ndarray:
        return np.diff(np.append(self.block_start, len(self.scores)))


def pair_keys(doc_fingerprints: np.ndarray, query: np.ndarray) -> np.ndarray:
    """One uint64 per (query index, document fingerprint)."""
    return mix(doc_fingerprints ^ (query.astype(np.uint64) * _QUERY_SALT))


def read_run(run: str | Path | pd.DataFrame, source: str) -> ReadRun:
    """The run in ``run`` (a path or a frame ``query-id, corpus-id, score``), checked."""
    queries, docs, scores = _spans(run)
    if len(scores) and not np.isfinite(scores).all():
        row = int((~np.isfinite(scores)).argmax())
        raise InputError(f"score {float(scores[row])} is not finite", path=source,
                         row=_line_of(run, row), field="score")
    start, names = _blocks(queries)
    local: dict[str, int] = {}
    ids = np.array([local.setdefault(q, len(local)) for q in names], dtype=np.int64)
    size = np.diff(np.append(start, len(scores)))
    repeat = _first_repeat(np.repeat(ids, size), docs)
    if repeat is not None:
        raise InputError(f"document {docs.text(repeat)!r} is ranked twice for query "
                         f"{queries.text(repeat)!r}", path=source, row=_line_of(run, repeat),
                         field="corpus-id")
    rises = scores[1:] > scores[:-1]
    rises[start[1:] - 1] = False                         # a new block may start higher
    ranked = len(local) == len(names) and not rises.any()
    return ReadRun(queries, docs, scores, start, tuple(names), ranked)


def _line_of(run: str | Path | pd.DataFrame, row: int) -> int:
    """The 1-based line of a text run file that holds table row ``row`` (0-based): blank
    lines are no rows (a table's row number for any other input)."""
    if isinstance(run, str | Path) and Path(run).suffix not in (".parquet", ".json"):
        for i, (n, _line, _parts) in enumerate(text_lines(Path(run))):
            if i == row:
                return n
    return row + 1


def _spans(run: str | Path | pd.DataFrame) -> tuple[IdSpans, IdSpans, np.ndarray]:
    if isinstance(run, str | Path) and Path(run).is_file() and \
            Path(run).suffix not in (".parquet", ".json"):
        split = read_trec_run_spans(run)
        if split is not None:
            return split.queries, split.docs, split.scores
    table = _table(run)
    return (IdSpans.from_arrow(table.column("query-id")),
            IdSpans.from_arrow(table.column("corpus-id")),
            table.column("score").to_numpy().astype(np.float64))


def _table(run: str | Path | pd.DataFrame) -> pa.Table:
    if not isinstance(run, pd.DataFrame):
        return read_ranking_table(run, split="")
    frame = run.astype({"query-id": str, "corpus-id": str})[["query-id", "corpus-id", "score"]]
    return pa.Table.from_pandas(frame.astype({"score": np.float64}), preserve_index=False)


def _blocks(queries: IdSpans) -> tuple[np.ndarray, list[str]]:
    """The first row of each block of equal query ids, and each block's id."""
    n = len(queries)
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    words, lengths = queries.words(), queries.lengths
    new = np.ones(n, dtype=bool)
    new[1:] = (lengths[1:] != lengths[:-1]) | (words[1:] != words[:-1]).any(axis=1)
    start = np.flatnonzero(new)
    return start, queries.texts(start)


def _first_repeat(local: np.ndarray, docs: IdSpans) -> int | None:
    """The first row (0-based) ranking a document its query has ranked before, if any.

    One sort of a 64-bit key of each row's (query, corpus-id) clears almost every run
    (:meth:`IdSpans.quick_key`); where two keys are equal, those rows are compared exactly
    (length and every word), so a repeat is never missed and a shared key never taken for one."""
    if len(local) < 2:
        return None
    key = docs.quick_key() + local.astype(np.uint64) * _QUERY_SALT
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


__all__ = ["ReadRun", "pair_keys", "read_run"]
