"""``rcp-data compare``: compare result tables with a reference, cell by cell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rcp_data.cli.formats import add_format_option, chosen, print_json, records
from rcp_data.core.specs import suite_key


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare result tables (replay JSON, card, paper values) with a reference",
        description="Match cells by metric, model (short name or hub id), column and tie rule "
        "(a card's table for the suite's paper rule is the one compared with the paper); "
        "tolerance 0.05 points; the paper's known deviations are reported as 'known'. "
        "Exit 1 when any cell fails.",
    )
    p.add_argument("tables", type=Path, help="replay JSON, card (README.md / text) or paper values")
    p.add_argument("--against", type=Path, required=True, metavar="REFERENCE",
                   help="the reference: replay JSON, card or paper_values.json")
    p.add_argument("--suite", type=suite_key, default=None,
                   help="suite spec (default: inferred)")
    p.add_argument("--known-deviations", type=Path, default=None,
                   help="known deviations file (default provenance/known_deviations.json)")
    add_format_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.scoring.compare import compare_files

    fmt = chosen(args)
    result = compare_files(args.tables, args.against, suite=args.suite,
                           known_path=args.known_deviations)
    if fmt == "json":
        print_json(result.to_json())
    elif fmt == "table":
        print(result.summary())
    else:
        sys.stdout.write(records(result.rows, fmt))
    return 0 if result.ok else 1
