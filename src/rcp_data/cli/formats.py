"""``--format table|tsv|csv|json``: how every command that prints a table prints it.

- ``table`` (the default): for reading, as the command always printed it (the card's Markdown
  tables, aligned text for listings);
- ``tsv`` / ``csv``: one header row, then one row per record; numbers unrounded (fractions,
  not percent), a missing value an empty cell; for ``cut``, spreadsheets and pandas;
- ``json``: the command's JSON document (``--json`` is the same).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rcp_data.core.errors import UsageError

FORMATS = ("table", "tsv", "csv", "json")


def add_format_option(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    """``--format`` (and ``--json``, its alias for ``--format json``) on ``parser``."""
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="output format: table (default), tsv or csv (a header row, then "
                        "one row per record, numbers unrounded), json")
    if json_flag:
        parser.add_argument("--json", action="store_true", help="the same as --format json")


def chosen(args: argparse.Namespace) -> str:
    """The format asked for: ``--format``, else ``json`` with ``--json``, else ``table``."""
    fmt, as_json = getattr(args, "format", None), getattr(args, "json", False)
    if as_json and fmt not in (None, "json"):
        raise UsageError(f"--json and --format {fmt} disagree; give one")
    return fmt or ("json" if as_json else "table")


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):
        return ";".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def delimited(header: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str) -> str:
    """``rows`` under ``header`` as TSV or CSV text (``csv`` quoting where a cell needs it)."""
    if fmt not in ("tsv", "csv"):
        raise ValueError(f"not a delimited format: {fmt!r}")
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buf.getvalue()


def records(rows: Sequence[Mapping[str, Any]], fmt: str, *,
            columns: Sequence[str] | None = None) -> str:
    """Dict records as TSV/CSV, columns in first-seen order (or ``columns``)."""
    if columns is None:
        seen: dict[str, None] = {}
        for row in rows:
            seen.update(dict.fromkeys(row))
        columns = list(seen)
    return delimited(columns, ([row.get(c) for c in columns] for row in rows), fmt)


def metric_tables(tables: Mapping[str, Any], fmt: str, *, first: str = "model") -> str:
    """Result tables ``{metric: DataFrame (rows x columns)}`` as one TSV/CSV: ``metric,
    FIRST, column...`` (the union of the tables' columns), one row per metric and row."""
    columns: dict[str, None] = {}
    for table in tables.values():
        columns.update(dict.fromkeys(str(c) for c in table.columns))
    header = ["metric", first, *columns]
    rows = []
    for metric, table in tables.items():
        for name in table.index:
            rows.append([metric, name, *(float(table.at[name, c]) if c in table.columns
                                         else None for c in columns)])
    return delimited(header, rows, fmt)


def print_json(document: object) -> None:
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


__all__ = ["FORMATS", "add_format_option", "chosen", "delimited", "metric_tables",
           "print_json", "records"]
