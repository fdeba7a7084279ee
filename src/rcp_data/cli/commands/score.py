"""``rcp-data score --dataset DATASET RUN...``: score your own rankings on a release."""

from __future__ import annotations

import argparse
import json
import sys

from rcp_data.core.specs import TIE_RULES, VIEWS
from rcp_data.model.card_format import CARD_K

EPILOG = """\
Runs: a TREC run file (qid Q0 docid rank score tag), a parquet table (query-id, corpus-id,
score; an optional subset column), or a folder of mteb's saved predictions
(mteb.evaluate(..., prediction_folder=DIR)).

The candidates are each query's top_ranked list, excluded documents removed, as in the card's
tables. A run's rows naming other documents are ignored (counted in "ignored_rows"). A
candidate the run does not score ranks below every scored one. A query the run scores no
candidate of counts 0 (qrel-nDCG leaves out queries without a positive label, as the card).

--against adds, per published reranker: the mean difference (run minus reranker), the paired
t-test over queries (scipy.stats.ttest_rel, the paper's test) and a 95% interval from 2000
query-bootstrap resamples (seed 0).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score", help="score your own rankings (RCP-nDCG@10 and qrel-nDCG@10) on a release",
        description="Score one or more rankings against a dataset revision with the engine "
        "of the card's tables: RCP-nDCG@k and qrel-nDCG@k per subset (or view column) and "
        "their unweighted mean. Prints the card's table layout, or JSON with --json.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True,
                   help="release directory, or hf://datasets/OWNER/NAME@REV (downloaded by "
                   "commit sha)")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="TREC run file, parquet table or mteb prediction folder")
    p.add_argument("--name", action="append", default=None, metavar="NAME",
                   help="name of each run, once per RUN in order (default: the file stem)")
    p.add_argument("--tie-rule", choices=TIE_RULES, default=None,
                   help="tie rule (default: the suite's paper rule, else doc-id)")
    p.add_argument("--view", choices=VIEWS, default="subsets",
                   help="table columns: subsets (default), or native/languages (per domain)")
    p.add_argument("--k", type=int, default=CARD_K, help=f"cutoff (default {CARD_K}, the card's)")
    p.add_argument("--depth", type=int, default=None,
                   help="use only each query's DEPTH best-scored candidates of a run (default: "
                   "every candidate it scores)")
    p.add_argument("--against", nargs="+", default=None, metavar="MODEL",
                   help="published rerankers to compare with (short names or hub ids), or all")
    p.add_argument("--json", action="store_true", help="print unrounded fractions as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.scoring.api import score

    result = score(args.dataset, args.runs, names=args.name, client=args.hub_client, k=args.k,
                   tie_rule=args.tie_rule, view=args.view, depth=args.depth,
                   against=args.against, progress=not args.quiet)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(result.text())
    return 0
