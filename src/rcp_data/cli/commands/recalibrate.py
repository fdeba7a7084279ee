"""``rcp-data recalibrate``: release N+1 of a release directory from a calibration refit."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rcp_data.cli.commands.calibrate import STAGE_A_RULES
from rcp_data.cli.options import out_folder
from rcp_data.cli.output import say


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recalibrate", help="make release N+1 from a refit (new gains), with a diff report",
        description="Write release N+1 of RELEASE_DIR: same data, new theta and gain, the "
        "previous release marked superseded in provenance/releases.json. The refit is either "
        "a `rcp-data calibrate` output folder (--fit), or is run here from the judge's raw "
        "answers: the Stage A tournament read under --rule and refitted, then the 2PL MAP. The "
        "answers default to those RELEASE_DIR ships (provenance-judge-tournament, "
        "provenance-judge-criteria); --tournament and --criteria read other tables. Prints how "
        "many gains changed and how many printed table cells moved. The card and the task "
        "file of release N+1 are rendered into --out.")
    p.add_argument("release_dir", help="release N: a prepared release directory, or "
                   "hf://datasets/OWNER/NAME@REV (its commit sha is the previous revision)")
    p.add_argument("--fit", type=Path,
                   help="output folder of `rcp-data calibrate` (item_params.json, thetas.parquet)")
    p.add_argument("--rule", choices=STAGE_A_RULES,
                   help="refit from the raw answers, reading the Stage A tournament with this "
                        "rule (default, without --fit: the rule release N recorded)")
    p.add_argument("--tournament", type=Path,
                   help="Stage A answers parquet (default: the release's own)")
    p.add_argument("--criteria", type=Path,
                   help="Stage B verdict parquet (default: the release's own)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where a refit runs (default cpu)")
    p.add_argument("--out", type=out_folder, required=True,
                   help="release directory to write (new or empty; apart from the inputs)")
    p.add_argument("--force", action="store_true",
                   help="replace --out when it holds a release folder written earlier")
    p.add_argument("--previous-revision", help="commit sha of release N (when its releases.json "
                   "still says 'this commit')")
    p.add_argument("--summary", default="", help="one-line summary of the release")
    p.add_argument("--date", help="release date YYYY-MM-DD (default today)")
    p.add_argument("--json", action="store_true", help="print the diff report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.cli.extras import require_extra

    require_extra("calibrate")
    from rcp_data.release.recalibrate import recalibrate

    result = recalibrate(args.release_dir, args.out, fit=args.fit, rule=args.rule,
                         tournament=args.tournament, criteria=args.criteria, device=args.device,
                         summary=args.summary, date=args.date,
                         previous_revision=args.previous_revision, force=args.force,
                         client=args.hub_client)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        say(args, f"wrote release {result.entry['release']} ({result.entry['tag']}) into "
            f"{args.out}")
        print(result.diff.text())
    return 0
