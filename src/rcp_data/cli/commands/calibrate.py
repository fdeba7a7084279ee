"""``rcp-data calibrate``: fit the 2PL calibration from a judge's verdicts."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from rcp_data.core.errors import UsageError
from rcp_data.core.outputs import CALIBRATION, check_output_dir

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="fit the 2PL calibration (item parameters, thetas, diagnostics) from verdicts",
        description=(
            "Fit the 2PL calibration of the paper (Sec. 3.3, App. C.3) by MAP from the judge's "
            "Stage B verdict table and its Stage A Bradley-Terry scores (theta_bt), or, with "
            "--rubric-only, by marginal maximum likelihood from the verdicts alone. Writes "
            "item_params.json, thetas.parquet (query-id, corpus-id, theta, theta_bt), "
            "queries.parquet (tau, alpha; MAP only) and diagnostics.json into --out."
        ),
    )
    p.add_argument("--criteria", required=True, type=Path,
                   help="verdict table parquet: query-id, call_index, corpus-id, C1..Cn")
    p.add_argument("--thetas", type=Path,
                   help="Stage A table parquet with query-id, corpus-id, theta_bt "
                        "(required unless --rubric-only)")
    p.add_argument("--out", required=True, type=Path,
                   help="output folder (new or empty; written atomically)")
    p.add_argument("--force", action="store_true",
                   help="replace --out when it holds a calibration written earlier")
    p.add_argument("--rubric-only", action="store_true",
                   help="2PL marginal ML without tournament scores (document = respondent)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the MAP fit runs (default cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from rcp_data.cli.extras import require_extra

    require_extra("calibrate")
    from rcp_data.stages.calibration.pipeline import calibrate_files

    if args.thetas is None and not args.rubric_only:
        raise UsageError("--thetas is required for the MAP fit (or pass --rubric-only)")
    # before the fit: a refused --out costs nothing
    check_output_dir(args.out, CALIBRATION, force=args.force,
                     inputs={"--criteria": args.criteria, "--thetas": args.thetas})
    cal = calibrate_files(args.criteria, args.thetas, args.out, rubric_only=args.rubric_only,
                          device=args.device, progress=not args.no_progress, force=args.force)
    d = cal.diagnostics
    rr = d["reading_rule"]
    gamma = ", ".join(f"{g:.3f}" for g in cal.params.gamma)
    beta = ", ".join(f"{b:.3f}" for b in cal.params.beta)
    print(f"{cal.method}: {d['n_documents']:,} documents, {d['n_responses']:,} responses; "
          f"windows used {rr['windows_used']:,}, left out {rr['windows_left_out']:,}")
    print(f"gamma = [{gamma}]  beta = [{beta}]  difficulties rising: {d['difficulties_rising']}")
    q3 = d["q3_mean_abs"]
    print(f"ECE {d['ece']:.4f}; mean |Q3| {q3 if q3 is None else round(q3, 4)} "
          f"({d['q3_pairs_over_0.2']} pairs over 0.2); converged: {d['fit']['converged']}")
    print(f"wrote {args.out}")
    return 0
