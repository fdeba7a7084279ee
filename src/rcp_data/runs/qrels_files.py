"""Graded relevance judgements from a file: TREC qrels (``qid iter docid grade``), or a
parquet / CSV / headed TSV table with ``query-id``, ``corpus-id`` and ``grade`` (or ``score``,
BEIR's name) columns. Grades are integers (trec_eval reads them as such)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rcp_data.core.errors import InputError, NotFoundError
from rcp_data.core.io import TEXT_ENCODING, int_values, read_parquet
from rcp_data.runs.compressed import open_binary, read_bytes
from rcp_data.runs.run_files import are_integers, read_fields_table, text_lines

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

QRELS_COLUMNS = ("query-id", "corpus-id", "grade")
GRADE_ALIASES = ("grade", "score", "relevance")
_TREC_FIELDS = ("query-id", "iter", "corpus-id", "grade")


def read_qrels(path: str | Path, *, keep_rows: bool = False) -> pd.DataFrame:
    """``query-id, corpus-id`` (text) and ``grade`` (int64), one row per judged pair, in file
    order. A malformed row is an :class:`InputError` naming the file, row and field.
    ``keep_rows``: also a ``row`` column, each pair's row (line) in the file, for messages."""

    path = Path(path)
    if not path.is_file():
        raise NotFoundError("qrels file not found", path=str(path))
    frame = _read_any(path)
    if frame.empty:
        raise InputError("no judged pair (the qrels file is empty)", path=str(path))
    return _rows(frame, keep_rows)


def _read_any(path: Path) -> pd.DataFrame:
    import pandas as pd
    if path.suffix == ".parquet":
        table = read_parquet(path, what="qrels (query-id, corpus-id, grade)")
        frame = table.to_pandas()
        return _from_table(frame, str(path), first_row=1)
    with _open_text(path) as fh:
        try:
            head = fh.readline()
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path=str(path), row=1) from None
    if path.suffix == ".csv" or head.startswith("query-id"):
        delimiter = "," if path.suffix == ".csv" else "\t"
        with _open_text(path) as fh:
            rows = list(csv.reader(fh, delimiter=delimiter))
        if not rows:
            raise InputError("empty qrels table", path=str(path))
        frame = pd.DataFrame(rows[1:], columns=[c.strip() for c in rows[0]], dtype=object)
        return _from_table(frame, str(path), first_row=2)
    return _read_trec(path)


def read_qrels_table(path: str | Path) -> pa.Table:
    """The qrels :func:`read_qrels` reads, as an Arrow table ``query-id, corpus-id`` (string),
    ``grade`` (int64); a canonical TREC qrels file is read without pandas (``score --qrels``)
    and its pairs are not checked for repeats (the caller finds them: :func:`read_qrels` then
    names the row), any other file as :func:`read_qrels` reads it (and names its errors)."""
    import pyarrow as pa

    path = Path(path)
    if path.is_file() and path.suffix not in (".parquet", ".csv"):
        try:
            with _open_text(path) as fh:
                head = fh.readline()
        except (UnicodeDecodeError, OSError, EOFError):
            head = "query-id"                           # read_qrels names the problem
        table = None if head.startswith("query-id") else _trec_table(path)
        if table is not None:           # a pair judged twice: the caller's check_unique
            return table
    return pa.Table.from_pandas(read_qrels(path), preserve_index=False)


def _open_text(path: Path) -> io.TextIOWrapper:
    """A (possibly compressed) text file as UTF-8 text, newlines as written (for csv)."""
    return io.TextIOWrapper(open_binary(path), encoding=TEXT_ENCODING, newline="")


def _rows(frame: pd.DataFrame, keep: bool) -> pd.DataFrame:
    frame = frame.rename(columns={"_row": "row"})
    return frame if keep else frame.drop(columns="row")


def _read_trec(path: Path) -> pd.DataFrame:
    import pandas as pd

    fast = _read_trec_fields(path)
    if fast is not None:
        return _unique(fast, str(path))
    qids, dids, grades, rows = [], [], [], []
    for n, line, parts in text_lines(path):
        if len(parts) != 4:
            raise InputError(f"expected 'qid iter docid grade', got {line.strip()!r}",
                             path=str(path), row=n)
        grades.append(_grade(parts[3], str(path), n))
        qids.append(parts[0])
        dids.append(parts[2])
        rows.append(n)
    frame = pd.DataFrame({"query-id": qids, "corpus-id": dids,
                          "grade": np.asarray(grades, dtype=np.int64)})
    frame["_row"] = np.asarray(rows, dtype=np.int64)
    return _unique(frame, str(path))


def _read_trec_fields(path: Path) -> pd.DataFrame | None:
    """A canonical TREC qrels file (:func:`_trec_table`) as the frame the line loop builds;
    None for every other file (the loop reads it, or names its bad line)."""
    table = _trec_table(path)
    if table is None:
        return None
    frame = table.select(["query-id", "corpus-id"]).to_pandas()   # pandas' text columns
    frame["grade"] = int_values(table.column("grade"))
    frame["_row"] = np.arange(1, len(frame) + 1, dtype=np.int64)
    return frame


def _trec_table(path: Path) -> pa.Table | None:
    """A canonical TREC qrels file (:func:`read_fields_table`: four fields joined by single
    spaces, no blank line, so row = line) whose grades are all plain integers, read by Arrow:
    ``query-id, corpus-id, grade`` (int64); None for every other file."""
    import pyarrow as pa

    table = read_fields_table(read_bytes(path), _TREC_FIELDS,
                              {"query-id": pa.string(), "corpus-id": pa.string(),
                               "grade": pa.string()})
    if table is None or not are_integers(table.column("grade")):
        return None
    try:
        grades = table.column("grade").cast(pa.int64())
    except pa.ArrowInvalid:                              # beyond int64
        return None
    return table.select(["query-id", "corpus-id"]).append_column("grade", grades)


_INT64 = np.iinfo(np.int64)


def _grade(text: object, path: str, row: int) -> int:
    value = str(text).strip()
    try:
        grade = int(value)
    except ValueError:
        try:
            as_float = float(value)
        except ValueError:
            as_float = None
        if as_float is None or not as_float.is_integer():
            raise InputError(f"grade {_shorten(value)} is not an integer", path=path, row=row,
                             field="grade") from None
        grade = int(as_float)
    if not _INT64.min <= grade <= _INT64.max:
        raise InputError(f"grade {_shorten(value)} is out of range (at most 19 digits)",
                         path=path, row=row, field="grade")
    return grade


def _shorten(value: str, keep: int = 30) -> str:
    return repr(value if len(value) <= keep else f"{value[:keep]}... ({len(value)} characters)")


def _from_table(frame: pd.DataFrame, path: str, *, first_row: int) -> pd.DataFrame:
    missing = [c for c in QRELS_COLUMNS[:2] if c not in frame.columns]
    grade_col = next((c for c in GRADE_ALIASES if c in frame.columns), None)
    if missing or grade_col is None:
        need = missing + ([] if grade_col else ["grade"])
        raise InputError(f"qrels table lacks column(s) {', '.join(need)} (has "
                         f"{', '.join(map(str, frame.columns))})", path=path)
    import pandas as pd

    rows = np.arange(first_row, first_row + len(frame), dtype=np.int64)
    for col in ("query-id", "corpus-id", grade_col):
        null = frame[col].isna().to_numpy()
        if null.any():
            raise InputError("empty value", path=path, row=int(rows[null.argmax()]), field=col)
    grades = [_grade(g, path, int(r)) for g, r in zip(frame[grade_col].tolist(), rows,
                                                      strict=True)]
    out = pd.DataFrame({"query-id": frame["query-id"].astype(str).to_numpy(),
                        "corpus-id": frame["corpus-id"].astype(str).to_numpy(),
                        "grade": np.asarray(grades, dtype=np.int64), "_row": rows})
    return _unique(out, path)


def _unique(frame: pd.DataFrame, path: str) -> pd.DataFrame:
    dup = frame.duplicated(["query-id", "corpus-id"]).to_numpy()
    if dup.any():
        i = int(dup.argmax())
        raise InputError(f"document {frame['corpus-id'].iat[i]!r} is judged twice for query "
                         f"{frame['query-id'].iat[i]!r}", path=path, row=int(frame["_row"].iat[i]),
                         field="corpus-id")
    return frame.reset_index(drop=True)


__all__ = ["QRELS_COLUMNS", "read_qrels", "read_qrels_table"]
