"""``rcp-data build SUITE --inputs DIR --out DIR``: sources + judge outputs -> release directory.

The release directory is publishable as it comes out: data and provenance, then
``provenance/releases.json`` (the repo's history with this release appended as current), the
mteb task file and the card (``--no-prepare`` stops after the data), by
:func:`rcp_data.release.cut.build_release_dir`. All of it is written to a
temporary folder beside ``--out`` and moved into place only when complete; ``--out`` must be new
or empty, or a release folder built earlier and ``--force`` given, and apart from ``--inputs``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from pathlib import Path

from rcp_data.cli.options import add_source_option, out_folder, source_options
from rcp_data.cli.output import say
from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.specs import shown_suites, suite_key

DEMO_SUITE = "demo"



def release_record_arguments(p: argparse.ArgumentParser) -> None:
    """``--history``, ``--previous-revision``, ``--date`` and ``--summary``: what the release's
    history entry says (``build``, ``release cut``)."""
    p.add_argument("--history", metavar="FILE|hf://datasets/OWNER/NAME",
                   help="the repo's release history: a releases.json file, or the Hub's own "
                   "(its head's releases.json, shas from its tags); default: the project's "
                   "release/<suite>.json when it tracks --repo; else a new history")
    p.add_argument("--previous-revision", metavar="SHA",
                   help="commit sha of the repo's current release when the history does not "
                   "know it (the sha its Hub tag points at)")
    p.add_argument("--date", help="release date YYYY-MM-DD (default: today)")
    p.add_argument("--summary", default="", help="one-line summary of the release")

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build a release directory of a suite",
                       description="Read a suite's sources and a judge run's builder inputs, "
                       "and write a publishable release directory in the published layout.")
    p.add_argument("suite", type=suite_key, nargs="?",
                   help=f"suite name ({shown_suites()}, or a spec in $RCP_DATA_BUILDERS)")
    p.add_argument("--spec", type=Path, metavar="FILE",
                   help="the suite's spec file, instead of a suite name (rcp-data suite init "
                   "writes one)")
    p.add_argument("--dense", action="append", default=[], metavar="[KEY=]MODEL",
                   help="a dense first-stage retriever: a sentence-transformers model (a local "
                   "folder or a cached Hub id), computed when no run is given; KEY names a "
                   "retriever the spec fuses (its model), else a new retriever fused beside "
                   "them by RRF, named KEY or after the model (repeatable; recorded in the "
                   "build manifest)")
    p.add_argument("--inputs", type=Path, required=True,
                   help="builder inputs folder (judge/, first_stage/, runs/)")
    p.add_argument("--out", type=out_folder, required=True,
                   help="release directory to write (new or empty; apart from --inputs)")
    p.add_argument("--force", action="store_true",
                   help="replace --out when it holds a release folder built earlier")
    p.add_argument("--link", default=None,
                   help="gain link (default: the default link, weighted_discrimination)")
    add_source_option(p)
    p.add_argument("--repo", metavar="OWNER/NAME",
                   help="Hub repo the release is for (required, except for the demo suite)")
    release_record_arguments(p)
    p.add_argument("--no-prepare", action="store_true",
                   help="write data and provenance only (no releases.json, task file, card)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (out, counts, release, tag, repo) and nothing "
                   "else on stdout")
    p.add_argument("--until", choices=("release", "pools"), default="release",
                   help="pools: stop after the pools (queries, corpus, provenance/pool; only "
                   "--inputs first_stage/ is read), for 'rcp-data judge' on a suite not judged "
                   "yet")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcp_data.cli.extras import require_extra

    if (args.suite is None) == (args.spec is None):
        raise UsageError("name a suite or give --spec FILE (one of the two)")
    spec_name = args.suite or str(args.spec)
    if args.until == "pools":
        return _pools_only(args)
    if not args.repo and spec_name != DEMO_SUITE and not args.no_prepare and args.spec is None:
        raise UsageError(f"building {spec_name} needs --repo OWNER/NAME: the Hub repository the "
                         "release is for (only the demo suite defaults to its own repo)")
    require_extra("build")
    from rcp_data.core.outputs import check_apart
    from rcp_data.core.specs import check_no_todo
    from rcp_data.release.cut import build_release_dir, project_history

    options = source_options(args)
    spec = _spec(args)
    check_apart(args.out, build_inputs(args, spec, options))  # before anything is read
    if not args.no_prepare:
        # a release to publish carries no TODO marker (--repo fills in [suite] repo)
        check_no_todo(spec, given=("suite.repo",) if args.repo else ())
    repo = args.repo or spec.repo
    previous = None
    if not args.no_prepare:
        previous = _history(args.history) if args.history else project_history(spec.name, repo)
    result = build_release_dir(
        spec, args.inputs, args.out, source_options=options, repo=repo, previous=previous,
        summary=args.summary, date=args.date, previous_revision=args.previous_revision,
        link=args.link, force=args.force, prepare=not args.no_prepare)
    synthetic = " SYNTHETIC" if result.synthetic else ""
    say(args, f"built{synthetic} {spec.name} into {args.out}: {result.subsets} "
        "subsets, " + ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in result.totals.items()))
    if result.prepared:
        say(args, f"prepared release {result.release} ({result.tag}) for {repo}: "
            "provenance/releases.json, rcp_ndcg_tasks.py, README.md")
    if args.json:
        print(json.dumps(result.to_dict()))
    return 0


def build_inputs(args: argparse.Namespace, spec, options: dict[str, str]) -> dict:
    """What a build (or ``suite first-stage``) reads, by flag: the output is kept apart from
    each (the builder inputs, the spec file, a history file, a local suite's data folder)."""
    found: dict[str, Path | None] = {"--spec": getattr(args, "spec", None)}
    if getattr(args, "inputs", None) is not None:
        found["--inputs"] = args.inputs
    history = getattr(args, "history", None)
    if history and not str(history).startswith("hf://"):
        found["--history"] = Path(history)
    if spec.source.path or options.get("path"):
        from rcp_data.sources.local_files import data_root

        with contextlib.suppress(InputError):   # the reader names it when it reads
            data = Path(os.path.normpath(data_root(spec, options)))
            if spec.source.format == "table" and spec.source.table:
                found["[source] table"] = data / spec.source.table   # the one file read
            else:
                found["[source] path"] = data
    return found


def _history(value: str):
    """``--history``: a history file, or the Hub's history of ``hf://datasets/OWNER/NAME``."""
    from rcp_data.core.hub_client import HubClient, parse_hf_path

    hub = parse_hf_path(value)
    if hub is None:
        return Path(value)
    from rcp_data.release.hub_history import history_from_hub

    return history_from_hub(HubClient.from_env(), *hub)


def _spec(args: argparse.Namespace):
    """The suite's spec (``--spec`` or the name) with the ``--dense`` retrievers."""
    from rcp_data.cli.extras import require_extra
    from rcp_data.core.specs import load_spec, load_spec_file, with_dense

    spec = load_spec_file(args.spec) if args.spec else load_spec(args.suite)
    if args.dense:
        spec = with_dense(spec, args.dense)
    if spec.pool.dense:
        require_extra("dense")
    return spec


def _pools_only(args: argparse.Namespace) -> int:
    from rcp_data.release.pools_only import build_pools_only

    spec = _spec(args)
    options = source_options(args)
    counts = build_pools_only(spec, args.inputs, args.out, source_options=options,
                              inputs_of=build_inputs(args, spec, options))
    if args.json:
        print(json.dumps({"out": str(args.out), **counts}))
    say(args, f"built the pools of {spec.name} into {args.out}: {counts['queries']:,} queries, "
        f"{counts['pool_documents']:,} pool documents (no judge output: not a release)")
    return 0
