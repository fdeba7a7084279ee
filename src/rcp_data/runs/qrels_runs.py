"""A run read for ``score --qrels``: its ids as byte spans, checked, with no object per row.

:func:`read_run` reads a canonical TREC run file on its bytes
(:func:`~rcp_data.runs.trec_run_bytes.split_trec_run`) and every other run (parquet,
mteb predictions, a frame, a TREC file in another shape) as
:func:`~rcp_data.runs.runs_in.read_ranking_table` does, then checks it as the scorer needs:
finite scores, and no document ranked twice for a query (one line naming file, row and field).
The checks (:func:`~rcp_data.runs.run_scan.check_run`) are compiled where the install
has them, NumPy otherwise; both find the same rows. A canonical TREC run is split and checked
in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rcp_data.core.errors import InputError
from rcp_data.runs.id_spans import IdSpans, mix
from rcp_data.runs.run_files import text_lines
from rcp_data.runs.run_scan import QUERY_SALT, RunChecks, check_run
from rcp_data.runs.runs_in import is_text_run, read_ranking_table, run_tag
from rcp_data.runs.trec_run_bytes import read_trec_run_spans

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


@dataclass(frozen=True)
class ReadRun:
    """A run in file order: corpus-ids as spans, scores, and the blocks of rows with one query
    id (``block_start[b]``: the block's first row, ``block_query[b]``: its id). ``ranked``:
    as run files usually are, one block per query, scores not increasing in each. ``tag``:
    a TREC run file's one tag (sixth field of every line; None where lines differ or the run
    is no TREC file), read from the same bytes as the rows."""

    docs: IdSpans
    scores: np.ndarray
    block_start: np.ndarray
    block_query: tuple[str, ...]
    ranked: bool = False
    tag: str | None = None

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def block_size(self) -> np.ndarray:
        return np.diff(np.append(self.block_start, len(self.scores)))

    def query_texts(self) -> list[str]:
        """The query id of every row."""
        return np.repeat(np.array(self.block_query, dtype=object), self.block_size).tolist()


def top_rows(run: ReadRun, k: int) -> ReadRun:
    """The rows of ``run`` in each query's top ``k`` in trec_eval's order (score descending,
    ties by corpus-id descending, byte-wise), ranked so, one block per query: every measure
    with a cutoff up to ``k`` ranked that way scores it as it scores ``run`` (not a measure
    without a cutoff, nor a judged-only one, which ranks past unjudged rows)."""
    index: dict[str, int] = {}
    block_q = np.array([index.setdefault(q, len(index)) for q in run.block_query],
                       dtype=np.int64)
    row_q = np.repeat(block_q, run.block_size)
    rank = run.docs.byte_rank(run.docs.words())
    order = np.lexsort((-rank, -run.scores, row_q))
    q = row_q[order]
    head = np.ones(len(q), dtype=bool)
    head[1:] = q[1:] != q[:-1]
    starts = np.flatnonzero(head)
    position = np.arange(len(q)) - np.repeat(starts, np.diff(np.append(starts, len(q))))
    keep = order[position < k]
    kq = row_q[keep]
    first = np.ones(len(kq), dtype=bool)
    first[1:] = kq[1:] != kq[:-1]
    names = list(index)
    return ReadRun(run.docs.take(keep), run.scores[keep], np.flatnonzero(first),
                   tuple(names[i] for i in kq[first]), ranked=True)


def pair_keys(doc_fingerprints: np.ndarray, query: np.ndarray) -> np.ndarray:
    """One uint64 per (query index, document fingerprint)."""
    return mix(doc_fingerprints ^ (query.astype(np.uint64) * QUERY_SALT))


def read_run(run: str | Path | pd.DataFrame, source: str) -> ReadRun:
    """The run in ``run`` (a path or a frame ``query-id, corpus-id, score``), checked."""
    docs, scores, block_queries, checks, tag = _spans(run)
    names = tuple(block_queries.texts(np.arange(len(block_queries))))
    if checks.nonfinite is not None:
        row = checks.nonfinite
        raise InputError(f"score {float(scores[row])} is not finite", path=source,
                         row=_line_of(run, row), field="score")
    if checks.repeat is not None:
        row = checks.repeat
        raise InputError(f"document {docs.text(row)!r} is ranked twice for query "
                         f"{names[checks.block_of(row)]!r}", path=source,
                         row=_line_of(run, row), field="corpus-id")
    return ReadRun(docs, scores, checks.block_start, names, checks.ranked, tag)


def _line_of(run: str | Path | pd.DataFrame, row: int) -> int:
    """The 1-based line of a text run file that holds table row ``row`` (0-based): blank
    lines are no rows (a table's row number for any other input)."""
    if isinstance(run, str | Path) and Path(run).suffix not in (".parquet", ".json"):
        for i, (n, _line, _parts) in enumerate(text_lines(Path(run))):
            if i == row:
                return n
    return row + 1


def _spans(run: str | Path | pd.DataFrame
           ) -> tuple[IdSpans, np.ndarray, IdSpans, RunChecks, str | None]:
    """``(docs, scores, block queries, checks, tag)``: a canonical TREC run file in one pass
    (:func:`read_trec_run_spans`), any other run read into an Arrow table, then checked (a
    TREC file's tag then read apart: such files are rare)."""
    if is_text_run(run):
        split = read_trec_run_spans(run)
        if split is not None:
            return split.docs, split.scores, split.block_queries, split.checks, split.tag
    table = _table(run)
    tag = run_tag(run) if is_text_run(run) else None
    docs = IdSpans.from_arrow(table.column("corpus-id"))
    scores = table.column("score").to_numpy().astype(np.float64)
    checks, block_queries = check_run(IdSpans.from_arrow(table.column("query-id")), docs,
                                      scores)
    return docs, scores, block_queries, checks, tag


def _table(run: str | Path | pd.DataFrame) -> pa.Table:
    import pyarrow as pa

    if isinstance(run, str | Path):
        return read_ranking_table(run, split="")
    frame = run.astype({"query-id": str, "corpus-id": str})[["query-id", "corpus-id", "score"]]
    return pa.Table.from_pandas(frame.astype({"score": np.float64}), preserve_index=False)


__all__ = ["ReadRun", "pair_keys", "read_run", "top_rows"]
