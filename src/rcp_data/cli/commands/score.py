"""``rcp-data score --dataset DATASET RUN...``: score your own rankings on a release;
``rcp-data score --qrels FILE RUN...``: score them on any graded qrels, without a release."""

from __future__ import annotations

import argparse
import sys

from rcp_data.cli.formats import add_format_option, chosen, metric_tables, print_json
from rcp_data.cli.options import add_without_positives_option
from rcp_data.core.rules import TIE_RULES, VIEWS
from rcp_data.model.cells import CARD_K

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

--qrels FILE scores the runs on graded judgements instead of a release: TREC qrels (qid iter
docid grade), or a parquet / CSV table with query-id, corpus-id and grade. nDCG@k for each
--k (repeatable, or a list: --k 10,20), gain linear (the grade) or exp (2^grade - 1), the ideal
over every judged document, unjudged documents gain 0 (--judged-only removes them first).
Queries: those with a positive grade; a query a run misses scores 0. Measures are named as
ir-measures names them (nDCG@10, nDCG(dcg='exp-log2')@20, nDCG(judged_only=True)@10).
--measure M (repeatable, or a list: --measure "P(rel=2)@10,AP(rel=2)") scores ir-measures'
names instead, as trec_eval ranks (score descending, ties by corpus-id descending):
nDCG@k, P@k, R@k, RR, RR@k, AP, AP@k, Success@k, Judged@k, (rel=r) for P, R, RR, AP and
Success; --judged-only applies to each, --gain to nDCG, each --k to a measure named without
its cutoff (--measure P --k 5,10).
--format tsv prints a header line run<TAB>measure<TAB>query<TAB>value, then one row per run and
measure (query "all": the mean; one row per query too with --per-query); --no-header drops the
header (trec_eval's shape); csv the same with a header; table and json add, with two runs
or more, each pair's mean difference, paired t-test, 95% interval from 2000 query-bootstrap
resamples (seed 0) and, with --correction, p-values adjusted over the pairs.
"""


def k_list(text: str) -> list[int]:
    """``--k 10`` or ``--k 10,20``."""
    try:
        values = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--k {text!r}: expected integers (10 or 10,20)") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--k {text!r}: expected positive integers")
    return values


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score", help="score your own rankings (RCP-nDCG@10 and qrel-nDCG@10) on a release",
        description="Score one or more rankings against a dataset revision with the engine "
        "of the card's tables: RCP-nDCG@k and qrel-nDCG@k per subset (or view column) and "
        "their unweighted mean. Prints the card's table layout, TSV/CSV (--format) or JSON "
        "(--json: also the dataset's resolved commit sha).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset",
                     help="release directory, or hf://datasets/OWNER/NAME@REV (downloaded by "
                     "commit sha)")
    src.add_argument("--qrels", metavar="FILE",
                     help="graded qrels to score on instead of a release (TREC qrels, or "
                     "parquet/CSV with query-id, corpus-id, grade)")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="TREC run file, parquet table or mteb prediction folder")
    p.add_argument("--name", action="append", default=None, metavar="NAME",
                   help="name of each run, once per RUN in order (default: a TREC run's tag where "
                   "its file holds one, else the file's name without a compression suffix)")
    p.add_argument("--tie-rule", choices=TIE_RULES, default=None,
                   help="tie rule (default: the suite's paper rule, else doc-id; with "
                   "--qrels doc-id, trec_eval's: score descending, then corpus-id descending)")
    p.add_argument("--view", choices=VIEWS, default="subsets",
                   help="table columns: subsets (default), or native/languages (per domain)")
    p.add_argument("--k", type=k_list, action="append", default=None, metavar="K",
                   help="cutoff (default: the card's main k, the suite spec's card_k; with "
                   f"--qrels {CARD_K}); with --qrels repeatable or a list (10,20)")
    p.add_argument("--depth", type=int, default=None,
                   help="use only each query's DEPTH best-scored candidates of a run (default: "
                   "every candidate it scores)")
    p.add_argument("--against", nargs="+", default=None, metavar="MODEL",
                   help="published rerankers to compare with (short names or hub ids), or all")
    add_without_positives_option(p)
    add_format_option(p)
    q = p.add_argument_group("with --qrels")
    q.add_argument("--gain", choices=("linear", "exp"), default="linear",
                   help="linear: the grade (default, trec_eval's); exp: 2^grade - 1")
    q.add_argument("--judged-only", action="store_true",
                   help="remove unjudged documents from each run before ranking")
    q.add_argument("--per-query", action="store_true", help="also print each query's value")
    q.add_argument("--measure", action="append", default=None, metavar="M",
                   help="a measure by its ir-measures name (repeatable, or a list): nDCG@k, "
                   "P@k, R@k, RR, RR@k, AP, AP@k, Success@k, Judged@k, with (rel=r) for P, R, "
                   "RR, AP, Success (default: nDCG@k for each --k)")
    q.add_argument("--no-header", action="store_true",
                   help="--format tsv without its header line (trec_eval's shape)")
    q.add_argument("--correction", choices=("holm", "bonferroni"), default=None,
                   help="adjust the pairs' p-values over the family of pairs")
    p.set_defaults(func=run)


QRELS_ONLY = ("gain", "judged_only", "per_query", "correction", "measure", "no_header")


def run(args: argparse.Namespace) -> int:
    from rcp_data.core.errors import UsageError

    if args.qrels is not None:
        return run_qrels(args, [k for group in (args.k or [[CARD_K]]) for k in group])
    ks = [k for group in (args.k or [[None]]) for k in group]
    used = [f"--{n.replace('_', '-')}" for n in QRELS_ONLY
            if getattr(args, n) not in (None, False, "linear")]
    if used:
        raise UsageError(f"{', '.join(used)} only apply with --qrels")
    if len(ks) != 1:
        raise UsageError("--dataset scores one cutoff; give --k once")
    args.k = ks[0]
    from rcp_data.scoring.api import score

    result = score(args.dataset, args.runs, names=args.name, client=args.hub_client, k=args.k,
                   tie_rule=args.tie_rule, view=args.view, depth=args.depth,
                   against=args.against, progress=not args.quiet,
                   without_positives=args.without_positives)
    fmt = chosen(args)
    if fmt == "json":
        print_json(result.to_json())
    elif fmt == "table":
        sys.stdout.write(result.text())
    else:
        sys.stdout.write(metric_tables({m: t.loc[result.names] for m, t in result.tables.items()},
                                       fmt, first="run"))
    return 0


def run_qrels(args: argparse.Namespace, ks: list[int]) -> int:
    from rcp_data.core.errors import UsageError
    from rcp_data.scoring.qrels_score import DEFAULT_TIE_RULE, score_qrels

    if args.against or args.depth is not None or args.view != "subsets" \
            or args.without_positives != "skip":
        raise UsageError("--against, --depth, --view and --queries-without-positives need a "
                         "release (--dataset)")
    result = score_qrels(args.qrels, args.runs, names=args.name, k=ks, gain=args.gain,
                         judged_only=args.judged_only,
                         tie_rule=args.tie_rule or DEFAULT_TIE_RULE, correction=args.correction,
                         measures=args.measure, compare=chosen(args) in ("table", "json"))
    fmt = chosen(args)
    sys.stdout.write(result.render(fmt, per_query=args.per_query, header=not args.no_header))
    return 0
