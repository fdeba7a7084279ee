"""``rcp-data replay``: replay a release directory's result tables."""

from __future__ import annotations

import argparse
import sys

from rcp_data.cli.formats import add_format_option, chosen, metric_tables, print_json
from rcp_data.cli.options import add_without_positives_option
from rcp_data.core.specs import TIE_RULES, VIEWS, suite_key


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="replay RCP-nDCG@k and qrel-nDCG@k tables from a release directory",
        description="Compute per model the mean RCP-nDCG@k and qrel-nDCG@k per subset (or view "
        "column) and their unweighted mean, from the release's qrels, top_ranked, excluded "
        "and provenance runs. Prints the cards' Markdown tables, TSV/CSV (--format) or JSON (--json).",
    )
    p.add_argument("path", help="release directory in the published layout, or "
                   "hf://datasets/OWNER/NAME@REV (only the tables a replay reads, never the "
                   "corpus, downloaded by commit sha into the HF cache; HF_HUB_OFFLINE=1 "
                   "reads them from the cache, REV a full sha)")
    p.add_argument("--k", type=int, default=None,
                   help="cutoff (default: the card's main k, the suite spec's card_k; 10 when "
                   "it names none)")
    p.add_argument("--tie-rule", choices=TIE_RULES, default=None,
                   help="tie rule (default: the suite's paper rule, else doc-id)")
    p.add_argument("--view", choices=VIEWS, default="subsets",
                   help="table columns: subsets (default), or native/languages (one per domain)")
    p.add_argument("--include-judge", action="store_true", help="also replay is_judge runs")
    p.add_argument("--suite", type=suite_key, default=None,
                   help="suite spec to read the release with (default: detected)")
    add_without_positives_option(p)
    add_format_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.scoring.api import replay

    fmt = chosen(args)
    # bars as the CLI's output settings say (-q: none; a terminal: ours and the Hub's)
    result = replay(args.path, suite=args.suite, client=args.hub_client, k=args.k,
                    tie_rule=args.tie_rule, view=args.view, include_judge=args.include_judge,
                    progress=not args.quiet, without_positives=args.without_positives)
    if fmt == "json":
        print_json(result.to_json())
    elif fmt == "table":
        sys.stdout.write(result.markdown())
    else:
        sys.stdout.write(metric_tables(result.tables, fmt, first="model"))
    return 0
