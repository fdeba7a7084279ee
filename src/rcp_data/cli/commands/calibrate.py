"""``rcp-data calibrate``: fit the 2PL calibration from a judge's verdicts."""

from __future__ import annotations

import argparse
from pathlib import Path

from rcp_data.cli.options import out_folder
from rcp_data.cli.output import say
from rcp_data.core.errors import UsageError

# the reading rules of rcp_data.calibration.reading (not imported here: it needs torch)
STAGE_A_RULES = ("complete", "hard-fallback")
DEFAULT_RULE = "complete"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="fit the 2PL calibration (item parameters, thetas, diagnostics) from verdicts",
        description=(
            "Fit the 2PL calibration of the paper (Sec. 3.3, App. C.3) by MAP from the judge's "
            "Stage B verdict table and Stage A: either its Bradley-Terry scores (--thetas) or "
            "its raw tournament answers (--tournament), read under a reading rule (--rule) and "
            "fitted first (Sec. 3.1, App. C.2: ridge 1e-4, L-BFGS, at most 250 iterations per "
            "query). With --rubric-only, marginal maximum likelihood from the verdicts alone. "
            "Writes item_params.json (with the reading rules), thetas.parquet (query-id, "
            "corpus-id, theta, theta_bt), queries.parquet (tau, alpha; MAP only), "
            "stage_a_queries.parquet (with --tournament) and diagnostics.json into --out."
        ),
    )
    p.add_argument("--inputs", type=Path, metavar="DIR",
                   help="a judge run's --out (builder inputs): read its judge/criteria.parquet "
                        "and judge/tournament.parquet, write the calibration to "
                        "DIR/calibration/, where build --inputs DIR reads it")
    p.add_argument("--criteria", type=Path,
                   help="verdict table parquet: query-id, call_index, corpus-id, C1..Cn "
                        "(required without --inputs)")
    p.add_argument("--thetas", type=Path,
                   help="Stage A table parquet with query-id, corpus-id, theta_bt")
    p.add_argument("--tournament", type=Path,
                   help="Stage A answers parquet (query-id, call_index, phase, position, "
                        "corpus-id, judge_rank, score, finish_reason): fit theta_bt first")
    p.add_argument("--rule", choices=STAGE_A_RULES, default=DEFAULT_RULE,
                   help="how the tournament answers are read (default complete: a window "
                        "enters only if every shown document has a score in [-5, 5] and a "
                        "rank; hard-fallback: also unreadable windows with a complete ranking, "
                        "as hard preferences)")
    p.add_argument("--out", type=out_folder,
                   help="output folder (new or empty; written atomically; required without "
                        "--inputs, default DIR/calibration with it)")
    p.add_argument("--force", action="store_true",
                   help="replace --out when it holds a calibration written earlier")
    p.add_argument("--rubric-only", action="store_true",
                   help="2PL marginal ML without tournament scores (document = respondent)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the Stage A and MAP fits run (default cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true",
                   help="print the fit as JSON (method, item parameters, diagnostics, --out)")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from rcp_data.cli.extras import require_extra

    if args.inputs is None and (args.criteria is None or args.out is None):
        raise UsageError("give --criteria and --out (or --inputs, a judge run's --out)")
    require_extra("calibrate")
    from rcp_data.release.calibrate_run import calibrate

    cal = calibrate(args.criteria, args.out, inputs=args.inputs, thetas=args.thetas,
                    tournament=args.tournament, rule=args.rule, rubric_only=args.rubric_only,
                    device=args.device, force=args.force, progress=not args.no_progress)
    if args.json:
        from rcp_data.cli.formats import print_json

        print_json(cal.to_json())
        return 0
    print_fit(cal)
    say(args, f"wrote {cal.out}")
    return 0


def print_fit(cal) -> None:
    """The fit's summary lines on stdout (``calibrate``, ``release cut``)."""
    d = cal.diagnostics
    rr = d["reading_rule"]
    if "stage_a" in d:
        a = d["stage_a"]
        sp = a["spearman_theta_bt_mean_score"]
        print(f"Stage A ({a['reading']['rule']}): {a['queries']:,} queries, "
              f"{a['documents']:,} documents; windows used {a['reading']['windows_used']:,} "
              f"({a['reading']['windows_fallback']:,} as hard preferences), left out "
              f"{a['reading']['windows_left_out']:,} (unreadable "
              f"{a['reading']['windows_left_out_by_cause']['unreadable']:,}, partial "
              f"{a['reading']['windows_left_out_by_cause']['partial']:,}); converged "
              f"{a['fit']['converged_queries']:,} of {a['queries']:,}; Spearman(theta_bt, mean "
              f"score) median {sp.get('median', float('nan')):.3f}")
    gamma = ", ".join(f"{g:.3f}" for g in cal.params.gamma)
    beta = ", ".join(f"{b:.3f}" for b in cal.params.beta)
    print(f"{cal.method}: {d['n_documents']:,} documents, {d['n_responses']:,} responses; "
          f"windows used {rr['windows_used']:,}, left out {rr['windows_left_out']:,}")
    print(f"gamma = [{gamma}]  beta = [{beta}]  difficulties rising: {d['difficulties_rising']}")
    q3 = d["q3_mean_abs"]
    print(f"ECE {d['ece']:.4f}; mean |Q3| {q3 if q3 is None else round(q3, 4)} "
          f"({d['q3_pairs_over_0.2']} pairs over 0.2); converged: {d['fit']['converged']}")
