"""``rcp-data demo``: the main job on the embedded default, end to end, on SYNTHETIC data."""

from __future__ import annotations

import argparse
from pathlib import Path

from rcp_data.cli.options import out_folder


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="build, publish and verify the bundled SYNTHETIC demo suite on a local Hub",
        description="Build the bundled synthetic demo suite (release 1 and a recalibrated "
        "release 2), publish both to an embedded local Hub as tagged revisions, list them, "
        "verify both by tag, and stop the Hub.",
    )
    p.add_argument("--out", type=out_folder, default=Path("demo-out"),
                   help="folder to write (new or empty; default demo-out)")
    p.add_argument("--force", action="store_true",
                   help="replace --out when it holds a demo written earlier")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.cli.output import result, say
    from rcp_data.demo.pipeline import run_demo

    return run_demo(args.out, force=args.force, say=lambda text: say(args, text), show=result)
