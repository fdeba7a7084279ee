"""Run files: a ranking as a TREC run (``qid Q0 docid rank score tag``) or a parquet table
(``query-id``, ``corpus-id``, ``score``, optional ``rank`` and ``split``)."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rcp_data.core.errors import InputError, NotFoundError
from rcp_data.core.io import read_parquet, without_bom
from rcp_data.runs.compressed import compression_of, open_binary, read_bytes

# Builder-input tables may carry the provenance split (ViDoRe: the domain) when query ids
# repeat across splits; rows are then matched by (split, query-id).
SPLIT_COLUMN = "split"
# A TREC run line has exactly six fields (trec_eval's format); a line with more or fewer is
# refused, not read by position: a shifted column would score the wrong field.
TREC_RUN_FIELDS = 6
# A TREC run frame's ``attrs`` key for its one tag (None where its lines' tags differ).
TAG_ATTR = "tag"

if TYPE_CHECKING:
    import pandas as pd


def is_frame(obj: object) -> bool:
    """Whether ``obj`` is a pandas DataFrame, without importing pandas (an object cannot be
    one where pandas was never imported)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


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
    file (TREC runs and qrels; gzip, bzip2, xz or zstd decompressed, :mod:`.compressed`), a
    leading byte-order mark dropped (as every text reader does:
    :data:`rcp_data.core.io.TEXT_ENCODING`); a line that is not UTF-8 is an InputError naming
    it."""
    with (io.BytesIO(read_bytes(path)) if compression_of(path) else open_binary(path)) as fh:
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


TREC_RUN_COLUMNS = ("query-id", "Q0", "corpus-id", "rank", "score", "tag")


def read_trec_run_table(path: Path):
    """A TREC run file as an Arrow table ``query-id, corpus-id, rank, score`` (file order), or
    None when the file is not in the canonical shape :func:`read_fields_table` takes;
    :func:`read_run_file` reads every other file and names its bad lines, so this reader
    accepts nothing that one would refuse."""
    import pyarrow as pa

    table = read_fields_table(read_bytes(path), TREC_RUN_COLUMNS,
                              {"query-id": pa.string(), "corpus-id": pa.string(),
                               "rank": pa.string(), "score": pa.float64()})
    if table is None or not are_integers(table.column("rank")):
        return None
    try:
        return table.set_column(table.column_names.index("rank"), "rank",
                                table.column("rank").cast(pa.int64()))
    except pa.ArrowInvalid:                              # beyond int64: the line reader's
        return None


def read_fields_table(data: bytes, columns: tuple[str, ...], types: dict):
    """A text file's bytes as an Arrow table of the columns named in ``types`` (in file
    order), or None when the file is not canonical: UTF-8, every line exactly
    ``len(columns)`` non-empty fields joined by single spaces, no other whitespace or control
    byte, no blank line (a leading byte-order mark is dropped, as Arrow does; a missing final
    newline is allowed). Such a file splits as ``str.split()`` splits its lines."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    if not data or not _plain_fields(data):
        return None
    # One thread: the file is parsed in one block anyway, and a read that fails (a missing or
    # an extra field) must leave no Arrow worker running when the error ends the process
    # (one did, and the exit aborted: SIGABRT).
    try:                # a missing or an extra field: not len(columns) columns, refused
        return pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=list(columns), use_threads=False,
                                          block_size=min(len(data) + 1, _ONE_BLOCK)),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False,
                                            ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=list(types),
                strings_can_be_null=False, quoted_strings_can_be_null=False,
                null_values=[]))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def are_integers(texts) -> bool:
    """Whether every text of an Arrow string or binary column is an optional minus and ASCII
    digits, which ``int()`` reads (Arrow's cast to an integer also reads ``0x1``, which
    ``int()`` refuses)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_binary(texts.type) or pa.types.is_large_binary(texts.type):
        texts = texts.cast(pa.string())                  # ArrowInvalid: not UTF-8
    return bool(pc.all(pc.ascii_is_decimal(texts)).as_py()) or \
        bool(pc.all(pc.match_substring_regex(texts, "^-?[0-9]+$")).as_py())


# Files under this size are parsed in one block (less CPU than Arrow's default 1 MiB blocks).
_ONE_BLOCK = 1 << 26
# Whitespace beyond ASCII that ``str.split()`` splits on (the line reader's fields): every
# ``chr(c).isspace()`` above 0x7f, written out (tests/runs check the list against Python's).
WIDE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def _plain_fields(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 whose only control byte is the newline, whose only other
    whitespace is the ASCII space (what the fast reader splits as the line reader does), and
    with no empty field (no two separators in a row, none first): ``q1  d1 1 0.5 t`` is six
    Arrow columns with an empty Q0, but five fields to the line reader, which refuses it."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if np.count_nonzero(raw < 32) != np.count_nonzero(raw == 10):
        return False
    seps = raw <= 32
    if seps[0] or (seps[1:] & seps[:-1]).any():
        return False
    if data.isascii():
        return True
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return WIDE_SPACE.search(text) is None


def read_run_file(path: Path) -> pd.DataFrame:
    """A run as ``query-id, corpus-id, score`` (and ``rank`` when the file has one) in stored
    order, from a TREC run or parquet; ``_line`` is each row's line in the file. A TREC run's
    one tag (sixth field; None where lines differ) is ``frame.attrs[TAG_ATTR]``."""
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
    import pandas as pd

    rows = []
    tags: set[str] = set()
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
        if len(tags) < 2:
            tags.add(parts[5])
    frame = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score", "rank", "_line"])
    frame.attrs[TAG_ATTR] = next(iter(tags)) if len(tags) == 1 else None
    return frame


