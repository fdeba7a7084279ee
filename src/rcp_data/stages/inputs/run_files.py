"""Run files: a ranking as a TREC run (``qid Q0 docid rank score tag``) or a parquet table
(``query-id``, ``corpus-id``, ``score``, optional ``rank`` and ``split``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError, NotFoundError
from rcp_data.core.io import read_parquet, without_bom

# Builder-input tables may carry the provenance split (ViDoRe: the domain) when query ids
# repeat across splits; rows are then matched by (split, query-id).
SPLIT_COLUMN = "split"
# A TREC run line has exactly six fields (trec_eval's format); a line with more or fewer is
# refused, not read by position: a shifted column would score the wrong field.
TREC_RUN_FIELDS = 6


def ids_as_text(frame: pd.DataFrame, columns: tuple[str, ...] = ("query-id", "corpus-id")
                ) -> pd.DataFrame:
    """``frame`` with its id columns as text; a null id stays null (for the checks to name)."""
    frame = frame.copy()
    for col in columns:
        if col in frame.columns:
            values = frame[col]
            frame[col] = values.astype(object).where(values.isna(), values.astype(str))
    return frame


def text_lines(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """``(line number, line, whitespace-separated fields)`` of every non-blank line of a text
    file (TREC runs and qrels), a leading byte-order mark dropped (as every text reader does:
    :data:`rcp_data.core.io.TEXT_ENCODING`); a line that is not UTF-8 is an InputError naming
    it."""
    with Path(path).open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if n == 1:
                raw = without_bom(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                                 path=str(path), row=n) from None
            parts = line.split()
            if parts:
                yield n, line, parts


def read_run_file(path: Path) -> pd.DataFrame:
    """A run as ``query-id, corpus-id, score`` (and ``rank`` when the file has one) in stored
    order, from a TREC run or parquet; ``_line`` is each row's line in the file."""
    path = Path(path)
    if not path.exists():
        raise NotFoundError("file not found", path=str(path))
    if path.suffix == ".parquet":
        frame = read_parquet(path, required=("query-id", "corpus-id", "score"),
                             what="a run").to_pandas()
        keep = ["query-id", "corpus-id", "score"] + [c for c in ("rank", SPLIT_COLUMN)
                                                     if c in frame.columns]
        frame = ids_as_text(frame[keep])
        frame["_line"] = np.arange(1, len(frame) + 1)
        return frame
    rows = []
    for n, line, parts in text_lines(path):
        if len(parts) != TREC_RUN_FIELDS:
            raise InputError(f"expected {TREC_RUN_FIELDS} fields 'qid Q0 docid rank score tag', "
                             f"got {len(parts)}: {line.strip()!r}", path=str(path), row=n)
        try:
            score = float(parts[4])
        except ValueError as exc:
            raise InputError(f"score {parts[4]!r} is not a number", path=str(path), row=n,
                             field="score") from exc
        try:
            rank = int(parts[3])
        except ValueError as exc:
            raise InputError(f"rank {parts[3]!r} is not an integer", path=str(path), row=n,
                             field="rank") from exc
        rows.append((parts[0], parts[2], score, rank, n))
    frame = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score", "rank", "_line"])
    return frame


