"""``rcp-data agree``: does the judge agree with people? (label and ranking agreement)."""

from __future__ import annotations

import argparse
import json
import sys

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import TIE_RULES, suite_key
from rcp_data.model.card_format import CARD_K


def _label(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=QRELS, got {text!r}")
    return name, path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agree",
        help="agreement of a release's gains with human labels (its qrels and extra label sets)",
        description="Label layer (within-query concordance, AUC, pooled Spearman with ceiling "
        "and floor, for RCP theta, raw BT and Count where the release carries them), ranking "
        "layer per label set (leaderboards of nDCG@k over the provenance runs, Kendall tau-b, "
        "Spearman rho, RBO extrapolated and the rbo package's value, sensitivity, "
        "decisive-pair agreement, failure modes) and, with two extra label sets or more, label "
        "variation; 95%% query-bootstrap intervals on every rate. A table, or JSON with --json.",
    )
    p.add_argument("path", nargs="*", metavar="PATH|RUN",
                   help="release directory, or hf://datasets/OWNER/NAME@REV; with --qrels: "
                   "the runs (TREC run files, parquet, mteb predictions, as score --qrels reads)")
    f = p.add_argument_group("plain files (no release, no judge)")
    f.add_argument("--qrels", metavar="PRIMARY", default=None,
                   help="the primary assessor's qrels; with --labels NAME=QRELS per secondary "
                   "assessor. Statistics on the documents the raters compared both judged")
    f.add_argument("--measure", default="nDCG@10",
                   help="measure of the runs under each label set and of the ceilings, by its "
                   "ir-measures name (default nDCG@10; also P@10, P(rel=2)@10, RR@10, R@100, "
                   "AP, nDCG(judged_only=True)@10, ...); several comma-separated "
                   "(nDCG@10,P(rel=2)@10) share one scoring pass per label set")
    f.add_argument("--groups", action="append", default=None, metavar="A,B,...",
                   help="a group of assessors (label set names) for Fleiss' kappa; repeat per "
                   "group (default: assessors linked by a topic not every assessor judged)")
    f.add_argument("--kappa-method", choices=("textbook", "study"), default="textbook",
                   help="textbook (default): one kappa / overlap pooled over every document "
                   "the raters compared, as the statistics are defined; study: one per topic, "
                   "averaged over topics, the primary counted once per secondary assessor in "
                   "Fleiss' kappa, overlap = share of documents given the same grade "
                   "(how Parry et al.'s notebooks computed their published numbers)")
    f.add_argument("--draw-primary", action="store_true",
                   help="label variation also draws the primary assessor (default: secondary "
                   "assessors only, the study's natural combinations)")
    f.add_argument("--pictures", metavar="DIR", default=None,
                   help="also draw kappa per group, swap probabilities, rank changes and "
                   "ceilings (PNG)")
    f.add_argument("--no-all-zero", action="store_true",
                   help="never draw an assessor who graded a topic all 0 (default: drawn, "
                   "the topic then scores 0, as in the study)")
    p.add_argument("--labels", type=_label, action="append", default=[], metavar="NAME=QRELS",
                   help="an extra label set (one per assessor or source): TREC qrels, parquet "
                   "or CSV with query-id, corpus-id, grade; repeat for several")
    p.add_argument("--aggregate", choices=("max", "min", "mean", "consensus"), default=None,
                   help="also a label set combining the extra ones per document (consensus: "
                   "the most frequent grade, ties to the lower; needs two assessors or more)")
    p.add_argument("--reference", default="qrels",
                   help="the reference label set (default: qrels, the release's own)")
    p.add_argument("--k", type=int, default=CARD_K, help=f"cutoff (default {CARD_K})")
    p.add_argument("--gain", choices=("linear", "exp"), default="linear",
                   help="gain of the label sets' grades (exp: 2^g - 1; default linear)")
    p.add_argument("--tie-rule", choices=TIE_RULES, default=None,
                   help="tie rule (default: the suite's paper rule, else doc-id)")
    p.add_argument("--threshold", type=int, default=None,
                   help="grade threshold of the AUC (default: the suite's lowest positive grade); "
                   "with --qrels: relevant at grade >= THRESHOLD (default 2, the study's rel=2)")
    p.add_argument("--rbo-p", type=float, default=0.9,
                   help="RBO persistence p (default 0.9; 1.0: the package's average overlap)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and draws")
    p.add_argument("--resamples", type=int, default=2000,
                   help="bootstrap resamples (default 2,000)")
    p.add_argument("--draws", type=int, default=10_000,
                   help="label-variation draws (default 10,000)")
    p.add_argument("--suite", type=suite_key, default=None,
                   help="suite spec to read the release with (default: detected)")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.scoring.agreement.analysis import agree

    names = [n for n, _ in args.labels]
    if len(set(names)) != len(names):
        raise UsageError(f"--labels names a label set twice: {', '.join(names)}")
    if args.qrels is not None:
        return _plain(args)
    if len(args.path) != 1:
        raise UsageError("give one release directory (or --qrels PRIMARY --labels NAME=QRELS "
                         "... RUN ...)")
    args.path = args.path[0]
    result = agree(args.path, dict(args.labels), aggregate_by=args.aggregate,
                   reference=args.reference, k=args.k, tie_rule=args.tie_rule, gain=args.gain,
                   threshold=args.threshold, rbo_p=args.rbo_p, seed=args.seed,
                   resamples=args.resamples, draws=args.draws, suite=args.suite,
                   client=args.hub_client)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(result.table())
    return 0


def _plain(args: argparse.Namespace) -> int:
    from rcp_data.scoring.agreement.plain import agree_files, check_label_name
    from rcp_data.scoring.qrels_score import split_names

    for name, _ in args.labels:
        check_label_name(name)
    if args.pictures:   # before any statistic is computed: a refused folder costs nothing
        from rcp_data.core.outputs import check_apart

        check_apart(args.pictures, {"--qrels": args.qrels,
                                    **{f"--labels {n}": path for n, path in args.labels},
                                    **{f"RUN {i}": run for i, run in enumerate(args.path, 1)}},
                    flag="--pictures")
    groups = None if args.groups is None else [
        [n.strip() for n in g.split(",") if n.strip()] for g in args.groups]
    result = agree_files(args.qrels, dict(args.labels), args.path,
                         measure=[m.strip() for m in split_names(args.measure)],
                         threshold=2 if args.threshold is None else args.threshold,
                         groups=groups, draws=args.draws, seed=args.seed, rbo_p=args.rbo_p,
                         draw_primary=args.draw_primary, draw_zero=not args.no_all_zero,
                         kappa_method=args.kappa_method)
    if args.pictures:
        from rcp_data.documents.agree_pictures import agreement_pictures

        agreement_pictures(result.to_json(), args.pictures)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(result.table())
    return 0
