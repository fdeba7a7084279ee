"""One table of (query, document, grade) rows, as teams keep their benchmarks (format ``table``).

A CSV, TSV, JSON-lines or parquet file; each row a query, a document and its grade. The columns
of each role are given (``suite init --query-column`` ...) or detected from their names. Ids:
a ``query_id`` / ``document_id`` column when there is one, else made from the text: ``q-`` or
``d-`` and the first 12 hex digits of the SHA-256 of its NFC-normalised UTF-8 text (the same
text gives the same id on every machine, in every run). A grade that is not an integer is
mapped by the grade map (``2.1=2,2.2=2``) or refused, naming the file, row and value.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rcp_data.core.errors import InputError, UsageError

SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".parquet": "parquet"}
ROLES = ("query", "query_id", "document", "document_id", "title", "grade")
NAMES = {   # the column names detected for each role, first found
    "query": ("query", "query_text", "question", "topic"),
    "query_id": ("query_id", "query-id", "qid"),
    "document": ("document", "text", "doc", "doc_text", "paragraph", "passage", "contents"),
    "document_id": ("document_id", "doc_id", "corpus-id", "docid", "docno"),
    "title": ("title",),
    "grade": ("grade", "score", "relevance", "label", "rel"),
}
REQUIRED = ("query", "document", "grade")


@dataclass(frozen=True)
class TableRows:
    """The rows of a table file as strings, with the 1-based row each was read from (a header
    line counting as row 1 in CSV / TSV)."""

    path: Path
    frame: pd.DataFrame
    first_row: int


def is_table(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in SUFFIXES


def read_rows(path: Path) -> TableRows:
    """The file's rows, every cell a string (empty for a missing value)."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InputError(f"not a table file (expected {', '.join(SUFFIXES)})", path=str(path))
    if not path.is_file():
        raise InputError("file not found", path=str(path))
    try:
        if kind == "parquet":
            frame, first = pd.read_parquet(path), 1
        elif kind == "jsonl":
            frame, first = pd.read_json(path, lines=True, dtype=False), 1
        else:
            frame = pd.read_csv(path, sep="," if kind == "csv" else "\t", dtype=str,
                                keep_default_na=False, quoting=0 if kind == "csv" else 3)
            first = 2
    except (ValueError, pd.errors.ParserError, OSError) as exc:
        raise InputError(f"cannot read the {kind} table ({str(exc).splitlines()[0]})",
                         path=str(path)) from exc
    frame = frame.map(lambda v: "" if v is None or (isinstance(v, float) and v != v) else str(v))
    frame.columns = [str(c).strip() for c in frame.columns]
    return TableRows(path, frame, first)


def find_columns(rows: TableRows, given: dict[str, str]) -> dict[str, str]:
    """Role -> column: the ``given`` ones (checked), the others detected by name."""
    have = list(rows.frame.columns)
    unknown = sorted(set(given) - set(ROLES))
    if unknown:
        raise UsageError(f"unknown column role {unknown[0]!r} (roles: {', '.join(ROLES)})")
    out: dict[str, str] = {}
    for role in ROLES:
        name = given.get(role)
        if name:
            if name not in have:
                raise InputError(f"has no column {name!r} (has {', '.join(have)})",
                                 path=str(rows.path), row=1, field=name)
            out[role] = name
            continue
        taken = set(out.values()) | {v for v in given.values() if v}
        hit = next((c for c in NAMES[role] if c in have and c not in taken), None)
        if hit:
            out[role] = hit
    for role in REQUIRED:
        if role not in out:
            flag = "--doc-column" if role == "document" else f"--{role}-column"
            raise InputError(f"no {role} column found among {', '.join(have)}; name it with "
                             f"{flag}", path=str(rows.path), row=1)
    return out


def parse_grade_map(text: str) -> dict[str, int]:
    """``2.1=2,2.2=2`` (or a file holding such pairs, one a line or comma-separated)."""
    if not text:
        return {}
    source = Path(text)
    if "=" not in text or source.is_file():
        if not source.is_file():
            raise UsageError(f"--grade-map takes VALUE=GRADE pairs (2.1=2,2.2=2) or a file of "
                             f"them, got {text!r}")
        text = source.read_text(encoding="utf-8").replace("\n", ",")
    out: dict[str, int] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        raw, _, grade = pair.partition("=")
        try:
            out[raw.strip()] = int(grade.strip())
        except ValueError as exc:
            raise UsageError(f"--grade-map: {pair!r} does not map a value to an integer grade "
                             "(e.g. 2.1=2)") from exc
    return out


def stable_id(prefix: str, text: str) -> str:
    """``prefix-`` and 12 hex digits of the SHA-256 of the NFC-normalised text."""
    digest = hashlib.sha256(unicodedata.normalize("NFC", text).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:12]}"


def grade_value(raw: str, grade_map: dict[str, int], path: Path, row: int, column: str) -> int:
    """The integer grade of a cell: mapped, else an integer, else refused."""
    raw = raw.strip()
    if raw in grade_map:
        return grade_map[raw]
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if value != value or value != int(value):
        raise InputError(f"grade {raw!r} is not an integer; map it with --grade-map (e.g. "
                         f"{raw or 'VALUE'}=N) or [source] grade_map", path=str(path), row=row,
                         field=column)
    return int(value)


__all__ = ["NAMES", "REQUIRED", "ROLES", "SUFFIXES", "TableRows", "find_columns", "grade_value",
           "is_table", "parse_grade_map", "read_rows", "stable_id"]
