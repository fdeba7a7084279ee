"""``rcp-data build SUITE --inputs DIR --out DIR``: sources + judge outputs -> release directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rcp_data.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build a release directory of a suite",
                       description="Read a suite's sources and a judge run's builder inputs, "
                       "and write a release directory in the published layout.")
    p.add_argument("suite", help="suite name (demo, trecdl, nanobeir, bright, vidore-v3)")
    p.add_argument("--inputs", type=Path, required=True,
                   help="builder inputs folder (judge/, first_stage/, runs/)")
    p.add_argument("--out", type=Path, required=True, help="release directory to write")
    p.add_argument("--link", default="weighted_discrimination", help="gain link")
    p.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option passed to the suite's source reader (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.build import build_release, read_inputs
    from rcp_data.sources.registry import read_suite
    from rcp_data.specs import load_spec

    options = {}
    for item in args.source_option:
        if "=" not in item:
            raise UsageError(f"--source-option expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        options[k] = v
    spec = load_spec(args.suite)
    inputs = read_inputs(args.inputs)
    source = read_suite(spec, options)
    manifest = build_release(spec, source, inputs, args.out, link=args.link)
    totals = {k: sum(c.get(k, 0) for c in manifest["counts"].values() if isinstance(c.get(k, 0), int))
              for k in ("queries", "pool_pairs", "gt_injected", "qrels_rows")}
    print(f"built {spec.name} into {args.out}: {len(manifest['counts'])} subsets, "
          + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in totals.items()))
    print(json.dumps({"out": str(args.out), **totals}))
    return 0
