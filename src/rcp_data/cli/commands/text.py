"""``rcp-data text repair --input F.tsv --output F.tsv [--json]``: undo the MS MARCO fault."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rcp_data.cli.output import say
from rcp_data.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("text", help="text tools (MS MARCO encoding repair)",
                       description="Text tools.")
    text_sub = p.add_subparsers(dest="text_command", metavar="ACTION", required=True)
    r = text_sub.add_parser(
        "repair",
        help="undo UTF-8-read-as-Latin-1 in an id<TAB>text file",
        description="Repair the MS MARCO double encoding (UTF-8 bytes read as Latin-1) in a "
        "TSV file of id<TAB>text lines, giving the same text as ir_datasets' repair and "
        "leaving correct text byte-identical. The output is written atomically.",
    )
    r.add_argument("--input", type=Path, required=True, help="TSV file: id<TAB>text per line")
    r.add_argument("--output", type=Path, required=True,
                   help="TSV file to write (a new file; an existing one only with --force; "
                        "'-' = stdout)")
    r.add_argument("--force", action="store_true", help="replace an existing --output file")
    r.add_argument("--json", action="store_true",
                   help='print {"documents": N, "repaired": M} as JSON')
    r.set_defaults(func=run_repair)


def run_repair(args: argparse.Namespace) -> int:
    from rcp_data.core.outputs import check_output_file
    from rcp_data.sources.text_repair import repair_tsv, repair_tsv_to

    if str(args.output) == "-":  # stdout holds the repaired text, so no status line or JSON
        if args.json:
            raise UsageError("--json prints to stdout, which --output - already fills")
        sys.stdout.flush()
        repair_tsv_to(args.input, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return 0
    check_output_file(args.output, flag="--output", inputs={"--input": args.input},
                      force=args.force)
    stats = repair_tsv(args.input, args.output)
    if args.json:
        print(json.dumps(stats.as_dict()))
    else:
        say(args, f"repaired {stats.repaired} of {stats.documents} passages; wrote {args.output}")
    return 0
