"""Every file of a revision can be read as what the layout says it is.

A malformed file (a parquet file that is not parquet, a table with no rows or with a missing
or mistyped column, JSON that does not parse, text that is not UTF-8) is a failed check naming
the file, never a traceback: ``verify`` runs this first, and the checks that read the data
after it report what they could not read instead of stopping.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.checks.reports import Check
from rcp_data.core.io import schema_diff
from rcp_data.model.layout import SUBSET_KINDS
from rcp_data.model.schemas import OPTIONAL_COLUMNS, SCHEMAS, criteria_columns

TEXT_SUFFIXES = (".md", ".py", ".txt", ".json", ".yaml", ".yml", ".toml", ".gitattributes")


def table_kind(path: str) -> str | None:
    """The layout's table kind of a release path (None for a file of no known kind)."""
    parts = path.split("/")
    if not path.endswith(".parquet"):
        return None
    if parts[0] == "corpus" and len(parts) == 3:
        return "corpus"
    if parts[0] == "provenance" and len(parts) == 3:
        return parts[1] if parts[1] in SCHEMAS else None
    stem = parts[-1].removesuffix(".parquet")
    if len(parts) == 2 and stem in SUBSET_KINDS:
        return stem
    return None


def parquet_problem(path: Path, kind: str | None) -> str | None:
    """Why a parquet file cannot serve as a table of ``kind`` (None when it can)."""
    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except (pa.ArrowException, OSError) as exc:
        return f"not a readable parquet file ({exc})"
    if meta.num_rows == 0:
        return "an empty table (0 rows)"
    if kind is None:
        return None
    diff = schema_diff(schema, SCHEMAS[kind], OPTIONAL_COLUMNS.get(kind, ()))
    problems = [f"missing column {c!r}" for c in diff.missing]
    problems += [f"column {c!r} is {have}, expected {want}" for c, have, want in diff.mistyped]
    if kind == "judge_criteria" and not criteria_columns(schema.names):
        problems.append("no C1..Cn criterion columns")
    return "; ".join(problems) or None


def text_problem(path: Path) -> str | None:
    """Why a text file cannot be read (not UTF-8; JSON that does not parse)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    if path.suffix == ".json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            return f"not valid JSON ({exc})"
    return None


def check_readable(root: Path, paths: list[str]) -> tuple[list[Check], set[str]]:
    """Read every file of ``paths`` (parquet: footer and schema; text: decoded; JSON: parsed).

    Returns the checks (one failed check per unreadable file, else one passed check) and the
    set of unreadable paths.
    """
    root = Path(root)
    what = "the file can be read as the layout says"
    checks, bad = [], set()
    n_tables = n_text = 0
    for rel in paths:
        path = root / rel
        if not path.is_file():
            continue  # not downloaded (--quick): proven by its LFS sha256
        if rel.endswith(".parquet"):
            kind = table_kind(rel)
            problem = parquet_problem(path, kind)
            expected = f"a {kind} table with rows" if kind else "a parquet table with rows"
            n_tables += 1
        elif rel.endswith(TEXT_SUFFIXES) or rel == ".gitattributes":
            problem = text_problem(path)
            expected = "UTF-8 text" + (" holding valid JSON" if rel.endswith(".json") else "")
            n_text += 1
        else:
            continue
        if problem:
            bad.add(rel)
            checks.append(Check.failed("file-readable", what, expected, problem, rel))
    if not checks:
        checks.append(Check.passed("files-readable", "every table is readable parquet with "
                                   "rows and the layout's columns; every text file is UTF-8 "
                                   "and every JSON file parses",
                                   f"{n_tables} tables, {n_text} text files"))
    return checks, bad


__all__ = ["check_readable", "parquet_problem", "table_kind", "text_problem"]
