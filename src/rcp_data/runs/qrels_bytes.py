"""A canonical TREC qrels file split on its bytes by NumPy (no Arrow, no pandas, no object per
line): ``score --qrels`` starts without importing either.

Canonical: UTF-8, every line exactly four non-empty fields ``qid iter docid grade`` separated
by one space or one tab (as NIST writes them), a newline at each line's end (a missing final
one allowed, a leading byte-order mark dropped), no blank line, no other control byte, and
grades an optional minus and 1 to 18 ASCII digits. Such a file splits as ``str.split()``
splits its lines, and its grades are what ``int()`` reads; :func:`split_qrels` returns None
for every other file, which :func:`rcp_data.runs.qrels_files.read_qrels_table` then reads (and
names its bad line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rcp_data.core.io import BOM
from rcp_data.runs.compressed import read_bytes
from rcp_data.runs.id_spans import PAD, IdSpans
from rcp_data.runs.run_files import WIDE_SPACE

FIELDS = 4
MAX_DIGITS = 18                                          # below int64's 19
_NEWLINE, _SPACE, _TAB, _MINUS, _ZERO = 10, 32, 9, ord("-"), ord("0")


@dataclass(frozen=True)
class QrelsSpans:
    """A qrels file's judged pairs in file order: query and corpus ids as spans of its bytes,
    and each pair's grade."""

    queries: IdSpans
    docs: IdSpans
    grades: np.ndarray

    def __len__(self) -> int:
        return len(self.grades)


def read_qrels_spans(path: str | Path) -> QrelsSpans | None:
    """:func:`split_qrels` of a (possibly compressed) file; None where it is not canonical."""
    return split_qrels(read_bytes(path))


def split_qrels(data: bytes) -> QrelsSpans | None:
    """The pairs of a TREC qrels file's bytes, or None when they are not canonical."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    if not data or data.startswith(b"query-id"):         # empty, or a headed table
        return None
    if not data.endswith(b"\n"):
        data += b"\n"
    size = len(data)
    buf = np.zeros(size + PAD, dtype=np.uint8)
    buf[:size] = np.frombuffer(data, dtype=np.uint8)
    body = buf[:size]
    seps = np.flatnonzero(body <= _SPACE)
    if len(seps) == 0 or len(seps) % FIELDS or seps[0] == 0 or (np.diff(seps) == 1).any():
        return None                                      # an empty field, a blank line
    ends = seps.reshape(-1, FIELDS)
    kinds = body[ends]
    if not (kinds[:, -1] == _NEWLINE).all():
        return None
    gaps = kinds[:, :-1]
    if not ((gaps == _SPACE) | (gaps == _TAB)).all():
        return None
    lines = len(ends)
    starts = np.empty(lines, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1, -1] + 1
    grades = _integers(body, ends[:, 2] + 1, ends[:, 3])
    if grades is None:
        return None
    if (body >= 0x80).any():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if WIDE_SPACE.search(text):                     # str.split() would split there
            return None
    return QrelsSpans(IdSpans(buf, starts, ends[:, 0].astype(np.int64)),
                      IdSpans(buf, ends[:, 1] + 1, ends[:, 2].astype(np.int64)), grades)


def _integers(body: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The integer each field ``body[start:end]`` writes (an optional minus, 1 to
    :data:`MAX_DIGITS` digits), or None where one is any other text."""
    negative = body[starts] == _MINUS
    first = starts + negative
    length = ends - first
    if len(length) == 0 or length.min() < 1 or length.max() > MAX_DIGITS:
        return None
    value = np.zeros(len(starts), dtype=np.int64)
    for j in range(int(length.max())):
        live = length > j
        digit = body[np.where(live, first + j, 0)].astype(np.int64) - _ZERO
        if ((digit < 0) | (digit > 9))[live].any():
            return None
        value = np.where(live, value * 10 + digit, value)
    return np.where(negative, -value, value)


__all__ = ["QrelsSpans", "read_qrels_spans", "split_qrels"]
