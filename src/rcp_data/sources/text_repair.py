"""Repair of the MS MARCO passage fault: UTF-8 bytes that were decoded as Latin-1.

Some MS MARCO passages carry characters whose UTF-8 bytes were read as Latin-1, so "é"
appears as "Ã©" and "’" as "â\\x80\\x99" (one level, often mixed with correctly encoded
characters in the same passage). ``ir_datasets`` undoes this when it builds
``msmarco-passage``'s ``collection.tsv`` (``FixEncoding``); its output is the reference here.

The rule (a targeted algorithm, equivalent to ``FixEncoding`` on every string without a
newline): each run of characters in U+0080..U+00FF whose Latin-1 bytes form ONE well-formed
UTF-8 sequence (2, 3 or 4 bytes) is replaced by the character those bytes encode. Everything
else is left byte-identical: ASCII, correct accents (a lone "é"), CJK and its punctuation,
emoji, curly quotes, symbols, genuine C1 control characters.

Implementation: ``re`` finds runs of a lead character (U+00C2..U+00F4) and up to three
continuation characters (U+0080..U+00BF); each run whose start is one well-formed sequence is
decoded (cached per distinct run). On Arrow batches, ``pyarrow.compute`` first drops passages
that are ASCII or have no lead-then-continuation pair, so only candidates reach Python.

Why one left-to-right scan equals ir_datasets' three passes (windows of 4, then 3, then 2):
a window is only replaced when it decodes to exactly one character, i.e. it is one complete
UTF-8 sequence of characters <= U+00FF. Lead bytes (C2..F4) are never continuation bytes
(80..BF), so two such sequences never overlap, and every replacement yields a character that
no later window can use (>= U+0800 for 3/4 bytes; for 2 bytes the scan has moved past it).

Edge cases follow ir_datasets (see ``tests/sources/test_text.py``): a genuine C1 control stays; text
double-encoded twice is repaired ONE level per pass (so a second pass changes it again); a
literal "Ã©" in otherwise correct text becomes "é". ``ftfy.fix_encoding`` differs on the first
two (it maps C1 controls through cp1252 and undoes every level).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.errors import InputError
from rcp_data.core.io import atomic_path
from rcp_data.core.version import __version__

log = logging.getLogger(__name__)

#: Bump when the repair's output could change for some input.
REPAIR_VERSION = "1"

# A lead character (C2..F4) and the continuation characters (80..BF) after it, up to three.
# Whether the run starts with one well-formed UTF-8 sequence is decided in ``_fix``. A simple
# character-class pattern lets ``re`` scan quickly; continuation characters can never start a
# sequence, so consuming them with a failed or shorter match loses nothing.
_RUN_PATTERN = "[\xc2-\xf4][\x80-\xbf]{1,3}"
_RUN = re.compile(_RUN_PATTERN)

# Necessary condition for a change, evaluated by Arrow (RE2) on whole batches (after a cheaper
# ASCII test) so that only candidate passages reach Python.
_PREFILTER_PATTERN = "[\u00c2-\u00f4][\u0080-\u00bf]"

_CACHE_LIMIT = 1 << 16
_fixed_runs: dict[str, str] = {}


def _fix(match: re.Match[str]) -> str:
    run = match.group()
    out = _fixed_runs.get(run)
    if out is None:
        lead = ord(run[0])
        size = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        out = run
        if len(run) >= size:
            # Python's UTF-8 decoder rejects overlongs, surrogates and > U+10FFFF
            with contextlib.suppress(UnicodeDecodeError):
                out = run[:size].encode("latin-1").decode("utf-8") + run[size:]
        if len(_fixed_runs) < _CACHE_LIMIT:
            _fixed_runs[run] = out
    return out


def repair_text(text: str) -> str:
    """Undo one level of UTF-8-read-as-Latin-1 in ``text`` (same output as ir_datasets)."""
    if text.isascii():
        return text
    return _RUN.sub(_fix, text)


def needs_repair(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Boolean mask: True where :func:`repair_text` may change the passage (vectorized)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    non_ascii = pc.fill_null(pc.invert(pc.string_is_ascii(texts)), False)
    maybe = pc.match_substring_regex(texts.filter(non_ascii), _PREFILTER_PATTERN)
    return pc.replace_with_mask(non_ascii, non_ascii, maybe)


@dataclass(frozen=True)
class RepairResult:
    """A repaired batch and how many of its passages changed."""

    texts: pa.Array
    changed: int


def repair_array(texts: pa.Array | pa.ChunkedArray | Sequence[str]) -> RepairResult:
    """Repair a batch of passages; only pre-filtered candidates go through Python.

    Nulls stay null. The result has the input's length and order.
    """
    if not isinstance(texts, pa.Array | pa.ChunkedArray):
        texts = pa.array(texts, type=pa.string())
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if len(texts) == 0:
        return RepairResult(texts, 0)
    mask = needs_repair(texts)
    candidates = texts.filter(mask).to_numpy(zero_copy_only=False).tolist()
    if not candidates:
        return RepairResult(texts, 0)
    fixed = [_RUN.sub(_fix, t) for t in candidates]
    changed = sum(1 for a, b in zip(candidates, fixed, strict=True) if a != b)
    if changed == 0:
        return RepairResult(texts, 0)
    out = pc.replace_with_mask(texts, mask, pa.array(fixed, type=texts.type))
    return RepairResult(out, changed)


def count_changed(
    raw: pa.Array | pa.ChunkedArray | Sequence[str],
    repaired: pa.Array | pa.ChunkedArray | Sequence[str],
) -> int:
    """Number of positions where ``repaired`` differs from the aligned ``raw`` source.

    This is the provenance count the card reports ("2,025,452 of 8,841,823"). A null on either
    side counts as changed only when the other side is not null.
    """
    if len(raw) != len(repaired):
        raise ValueError(f"raw has {len(raw)} passages, repaired has {len(repaired)}")
    raw_a = raw if isinstance(raw, pa.Array | pa.ChunkedArray) else pa.array(raw, pa.string())
    rep_a = (
        repaired
        if isinstance(repaired, pa.Array | pa.ChunkedArray)
        else pa.array(repaired, pa.string())
    )
    differs = pc.not_equal(raw_a, rep_a)
    one_null = pc.xor(pc.is_null(raw_a), pc.is_null(rep_a))
    differs = pc.or_(pc.fill_null(differs, False), one_null)
    return int(pc.sum(pc.cast(differs, pa.int64())).as_py() or 0)


def repair_settings() -> dict:
    """What the repair is, for ``provenance/build_manifest.json``."""
    return {
        "name": "msmarco-utf8-read-as-latin1",
        "version": REPAIR_VERSION,
        "implementation": f"rcp_data.sources.text_repair.repair_text (rcp-data {__version__})",
        "fault": "UTF-8 bytes decoded as Latin-1 (ISO-8859-1), one level",
        "rule": "each run of U+0080-U+00FF characters that is one well-formed UTF-8 sequence "
        "(2-4 bytes) as Latin-1 bytes is replaced by the character it encodes; one level "
        "per pass; no Unicode normalization; everything else byte-identical",
        "run_pattern": ascii(_RUN_PATTERN),
        "equivalent_to": "ir_datasets msmarco_passage.FixEncoding (collection irds_version v2)",
    }


# -- TSV files (id<TAB>text) ---------------------------------------------------------------------
@dataclass(frozen=True)
class RepairStats:
    """Counts of a file repair."""

    documents: int
    repaired: int

    def as_dict(self) -> dict[str, int]:
        return {"documents": self.documents, "repaired": self.repaired}


def read_tsv_batches(path: Path, batch_size: int = 50_000) -> Iterator[tuple[list[str], list[str]]]:
    """Stream ``id<TAB>text`` lines as (ids, texts) batches; strict UTF-8.

    The text is everything after the first TAB up to the line's ``\\n``. A line without a TAB or
    with invalid UTF-8 raises :class:`InputError` naming the file and line (1-based).
    """
    ids: list[str] = []
    texts: list[str] = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"line {lineno} is not valid UTF-8 (byte {exc.start}: {exc.reason})",
                    path=str(path), row=lineno,
                ) from None
            pid, tab, text = line.partition("\t")
            if not tab:
                raise InputError(
                    f"line {lineno} has no TAB between id and text", path=str(path), row=lineno
                )
            ids.append(pid)
            texts.append(text)
            if len(ids) >= batch_size:
                yield ids, texts
                ids, texts = [], []
    if ids:
        yield ids, texts


def repair_tsv(input_path: Path, output_path: Path, batch_size: int = 50_000) -> RepairStats:
    """Repair an ``id<TAB>text`` file into ``output_path`` (written atomically)."""
    input_path, output_path = Path(input_path), Path(output_path)
    if not input_path.is_file():
        raise InputError("no such file", path=str(input_path))
    with atomic_path(output_path) as tmp, open(tmp, "wb") as out:
        stats = repair_tsv_to(input_path, out, batch_size)
    log.info("read %d passages from %s; repaired %d; wrote %s",
             stats.documents, input_path, stats.repaired, output_path)
    return stats


def repair_tsv_to(input_path: Path, out: BinaryIO, batch_size: int = 50_000) -> RepairStats:
    """Repair an ``id<TAB>text`` file into the binary stream ``out`` (e.g. stdout)."""
    input_path = Path(input_path)
    if not input_path.is_file():
        raise InputError("no such file", path=str(input_path))
    documents = repaired = 0
    for ids, texts in read_tsv_batches(input_path, batch_size):
        result = repair_array(texts)
        documents += len(ids)
        repaired += result.changed
        fixed: Iterable[str] = result.texts.to_pylist() if result.changed else texts
        out.write("".join(f"{i}\t{t}\n" for i, t in zip(ids, fixed, strict=True)).encode())
    return RepairStats(documents, repaired)
