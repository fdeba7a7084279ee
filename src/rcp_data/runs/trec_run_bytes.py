"""A canonical TREC run file split on its bytes, with no Python object per line.

Canonical: UTF-8, every line exactly six non-empty fields ``qid Q0 docid rank score tag``
(any second field), no blank line (a leading byte-order mark is dropped, a missing final
newline allowed), ranks an optional minus and digits (any start: 0 or 1; they are checked,
never used for ordering, as trec_eval) and scores numbers that ``float()`` reads. The compiled
pass splits fields on any run of the whitespace ``str.split()`` splits on (spaces, tabs, a
carriage return: files as NIST distributes them); the NumPy fallback takes single spaces only.
A compressed file (gzip, bzip2, xz, zstd: :mod:`~rcp_data.runs.compressed`) is decompressed
into memory, then split. :func:`split_trec_run` returns None for any other file, and
:func:`rcp_data.runs.run_files.read_run_file` then reads it and names its bad line, so the fast
path accepts nothing the line reader would refuse and scores exactly what it reads.

The lines are split and the run checked (:class:`~rcp_data.runs.run_scan.RunChecks`)
by one compiled pass where the install has it
(:func:`~rcp_data.runs.run_scan.scan_trec_run`), else by NumPy and Arrow; both give
the same spans, scores and checks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rcp_data.core.io import BOM
from rcp_data.runs.compressed import compression_of, read_bytes
from rcp_data.runs.id_spans import PAD, IdSpans
from rcp_data.runs.run_files import WIDE_SPACE, are_integers
from rcp_data.runs.run_scan import COMPILED, RunChecks, check_run, scan_trec_run
from rcp_data.runs.run_tags import tag_of

if TYPE_CHECKING:
    import pyarrow as pa

FIELDS = 6
_SPACE, _NEWLINE = 32, 10
_ZEROS = np.uint64(0x3030303030303030)
_SIXES = np.uint64(0x7676767676767676)                   # 0..9 + 0x76 stays below 0x80
_HIGH = np.uint64(0x8080808080808080)
_LOW = np.array([(1 << (8 * r)) - 1 for r in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


@dataclass(frozen=True)
class TrecRunSpans:
    """A run's document ids as spans of the file's bytes, its float64 scores (row ``i`` is
    line ``i + 1``), the query id of each block of rows with one query id, its checks, and
    its tag (the sixth field of every line; None where two lines' differ)."""

    docs: IdSpans
    scores: np.ndarray
    block_queries: IdSpans
    checks: RunChecks
    tag: str | None = None

    def __len__(self) -> int:
        return len(self.scores)


def read_trec_run_spans(path: str | Path) -> TrecRunSpans | None:
    """:func:`split_trec_run` of a file, read into a buffer with room for the padding (no
    copy of its bytes); a compressed file is decompressed into memory first."""
    if compression_of(path) is not None:
        return split_trec_run(read_bytes(path))
    with Path(path).open("rb", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size
        raw = np.empty(size + PAD, dtype=np.uint8)
        got = fh.readinto(memoryview(raw)[:size])
    if got != size or not size or raw[:len(BOM)].tobytes() == BOM or raw[size - 1] != _NEWLINE:
        return split_trec_run(raw[:got].tobytes())      # rare: copy, then mend
    return _split(raw, size)


def split_trec_run(data: bytes) -> TrecRunSpans | None:
    """The run in ``data`` (a TREC run file's bytes), or None when it is not canonical."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    if not data.endswith(b"\n"):
        data += b"\n"
    raw = np.empty(len(data) + PAD, dtype=np.uint8)
    raw[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    return _split(raw, len(data))


def _split(raw: np.ndarray, size: int) -> TrecRunSpans | None:
    """The run in ``raw[:size]`` (``raw``: uint8 with :data:`PAD` spare bytes after ``size``,
    set to zero here; ``raw[size - 1]`` is a newline)."""
    raw[size:] = 0
    if size == 0 or raw[0] == _NEWLINE:
        return None
    if COMPILED is not None:
        split = scan_trec_run(raw, size)
        if split is None:
            return None
        docs, scores, block_queries, checks, ascii_only, tag = split
    else:
        spans = _numpy_split(raw, size)
        if spans is None:
            return None
        queries, docs, scores, ascii_only = spans
        checks, block_queries = check_run(queries, docs, scores)
        tag = _one_tag(raw, ends_of_lines=size)
    if not ascii_only:
        try:
            text = raw[:size].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            return None
        if WIDE_SPACE.search(text):                     # str.split() would split there
            return None
    try:
        text_tag = None if tag is None else tag.decode("utf-8")
    except UnicodeDecodeError:
        text_tag = None
    return TrecRunSpans(docs, scores, block_queries, checks, text_tag)


def _one_tag(raw: np.ndarray, ends_of_lines: int) -> bytes | None:
    """The NumPy path's tag: :func:`~rcp_data.runs.run_tags.tag_of` of the bytes."""
    tag = tag_of(raw[:ends_of_lines].tobytes())
    return None if tag is None else tag.encode("utf-8")


def _numpy_split(buf: np.ndarray, size: int
                 ) -> tuple[IdSpans, IdSpans, np.ndarray, bool] | None:
    """``(queries, docs, scores, ascii)`` of ``buf[:size]`` without the compiled pass: the
    separators found by NumPy, ranks and scores parsed by Arrow (scores that Arrow parses, as
    ``float()`` does; None for any other)."""
    import pyarrow as pa

    data = memoryview(buf)[:size]
    body = buf[:size]
    seps = np.flatnonzero(body <= _SPACE)               # spaces, newlines, control bytes
    if len(seps) % FIELDS or seps[0] == 0:
        return None
    ends = seps.reshape(-1, FIELDS)
    lines = len(ends)
    at_seps = body[seps]                                 # five spaces and a newline a line
    if np.count_nonzero(at_seps == _SPACE) != (FIELDS - 1) * lines or \
            not (at_seps[FIELDS - 1::FIELDS] == _NEWLINE).all():
        return None
    if (np.diff(seps) == 1).any():                       # an empty field or a blank line
        return None
    starts = np.empty(lines, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1, -1] + 1
    ranks = (ends[:, 2] + 1, ends[:, 3])
    try:
        if not _all_digits(buf, *ranks) and not are_integers(_column(data, *ranks)):
            return None                                  # ranks: checked only, as the line
        scores = _column(data, ends[:, 3] + 1, ends[:, 4]).cast(pa.float64())   # reader does
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return (IdSpans(buf, starts, ends[:, 0]), IdSpans(buf, ends[:, 1] + 1, ends[:, 2]),
            scores.to_numpy(zero_copy_only=False), not (body >= 0x80).any())


def _all_digits(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether every field ``buf[start:end]`` is 1 to 8 ASCII digits (one word each)."""
    spans = IdSpans(buf, starts, ends)
    if len(spans) == 0 or int(spans.lengths.max()) > 8 or int(spans.lengths.min()) == 0:
        return False
    word = spans.words(1)[:, 0]
    filled = word | (_ZEROS & ~_LOW[spans.lengths])     # '0' past the end
    low = filled - _ZEROS                               # each byte 0..9 when a digit
    return not ((filled | low | (low + _SIXES)) & _HIGH).any()


def _column(data: memoryview, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """One field of every line as an Arrow binary array (cast as strings are): the fields and the gaps between them
    make one array over the file's bytes (no copy), and every other value is taken."""
    import pyarrow as pa

    n = len(starts)
    big = len(data) >= 2**31 - 1
    offsets = np.empty(2 * n + 1, dtype=np.int64 if big else np.int32)
    offsets[0:-1:2] = starts
    offsets[1::2] = ends
    offsets[-1] = len(data)
    both = pa.Array.from_buffers(pa.large_binary() if big else pa.binary(), 2 * n,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return both.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))


__all__ = ["FIELDS", "TrecRunSpans", "read_trec_run_spans", "split_trec_run"]
