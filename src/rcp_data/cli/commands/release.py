"""``rcp-data release``: check, publish and list releases; render RELEASES.md and card tables."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from rcp_data.cli.formats import add_format_option, chosen, print_json, records
from rcp_data.cli.options import record_path
from rcp_data.cli.output import say
from rcp_data.core.errors import UsageError

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "release", help="check, publish and list tagged Hub releases",
        description="Publish a release directory as ONE tagged Hub commit, list a repo's "
                    "releases, render RELEASES.md. The Hub is $HF_ENDPOINT (the real Hub when "
                    "unset).")
    sub = parser.add_subparsers(dest="release_command", metavar="ACTION")

    p = sub.add_parser("check", help="run the pre-publish checks of a release directory",
                       description="Run the checks a publish runs first (files, schemas, "
                       "configs, releases.json, card) on a release directory; uploads "
                       "nothing. Exit 1 with the problems listed when one fails.")
    p.add_argument("release_dir", type=Path, metavar="RELEASE_DIR",
                   help="the release directory (from 'rcp-data build')")
    p.set_defaults(func=_check)

    _register_cut(sub)

    p = sub.add_parser("publish", help="check, commit (one commit) and tag a release directory",
                       description="Check a release directory, then upload it as ONE commit "
                       "on --branch and tag it with its release tag. Re-running is safe: a "
                       "release already published changes nothing; tags are never moved.")
    p.add_argument("release_dir", type=Path, metavar="RELEASE_DIR",
                   help="the release directory (from 'rcp-data build')")
    p.add_argument("--repo", required=True, metavar="OWNER/NAME", help="dataset repo id")
    p.add_argument("--branch", default="main", help="the branch to commit on (default main)")
    p.add_argument("--parent-commit", metavar="SHA",
                   help="the head the release was built against; refuse if the branch moved")
    p.add_argument("--create-repo", action="store_true",
                   help="create the dataset repo when it does not exist")
    p.add_argument("--record-to", type=record_path, metavar="DIR|FILE.json",
                   default=os.environ.get("RCP_DATA_RECORD_TO") or None,
                   help="record the published release (with its sha) in DIR/<suite>.json or "
                        "FILE.json, started from the packaged history when new; in a checkout, "
                        "--record-to release/ updates the project's record (default: "
                        "$RCP_DATA_RECORD_TO, else nowhere)")
    p.add_argument("--reverify", action="store_true",
                   help="run the release check and every check of the verification again, "
                        "even when an earlier 'rcp-data verify' or publish passed on exactly "
                        "these bytes (every file is hashed either way)")
    p.set_defaults(func=_publish)

    p = sub.add_parser("list", help="the Hub's tags and the repo's releases.json side by side",
                       description="List a dataset repo's releases: its release tags on the Hub "
                       "beside the releases.json on --branch, flagging where they disagree "
                       "(exit 1 then).")
    p.add_argument("--repo", required=True, metavar="OWNER/NAME", help="dataset repo id")
    p.add_argument("--branch", default="main",
                   help="the branch whose releases.json is read (default main)")
    add_format_option(p)
    p.set_defaults(func=_list)

    p = sub.add_parser("render-md", help="render RELEASES.md from the release histories",
                       description="Render RELEASES.md (every suite's releases, with date, "
                       "tag, sha and summary) from a folder of <suite>.json release histories; "
                       "files of another kind in the folder are skipped.")
    p.add_argument("--out", type=Path,
                   help="file to write ('-' or none: print to stdout)")
    p.add_argument("--histories", type=Path,
                   help="folder of <suite>.json histories (default: the packaged ones)")
    p.add_argument("--check", action="store_true",
                   help="fail (exit 1) if the file named by --out is stale")
    p.set_defaults(func=_render_md)

    p = sub.add_parser("table", help="print a card's release table from a releases file",
                       description="Print the release table a dataset card shows, from a "
                       "suite's packaged history or a releases.json file.")
    p.add_argument("source", metavar="SUITE|RELEASES_JSON",
                   help="a suite name (its release/<suite>.json) or a releases.json path")
    p.add_argument("--text", action="store_true",
                   help="the card's tab-separated text table instead of Markdown")
    add_format_option(p)
    p.set_defaults(func=_table)

    parser.set_defaults(func=lambda args: _usage(parser))


def _register_cut(sub: argparse._SubParsersAction) -> None:
    from rcp_data.cli.commands.build import release_record_arguments
    from rcp_data.cli.commands.calibrate import DEFAULT_RULE, STAGE_A_RULES
    from rcp_data.cli.commands.judge import run_arguments, schedule_options
    from rcp_data.cli.options import add_source_option
    from rcp_data.core.specs import shown_suites, suite_key

    p = sub.add_parser(
        "cut", help="pools -> judge -> calibrate -> build -> check, resumable",
        description="Cut a judge release in one go, into one work folder: the pools of SUITE "
        "(with the first-stage and reranker runs of --inputs), the judge run against the "
        "endpoint, the calibration, the build (pictures and Diagnostics included) and "
        "publish's release check. Each step is the command of its own name; a rerun with the "
        "same --work continues where the last one stopped. Prints the release publish "
        "command to run; publishes nothing.")
    p.add_argument("suite", type=suite_key, nargs="?",
                   help=f"suite name ({shown_suites()}, or a spec in $RCP_DATA_BUILDERS)")
    p.add_argument("--spec", type=Path, metavar="FILE",
                   help="the suite's spec file, instead of a suite name")
    p.add_argument("--inputs", type=Path, required=True, metavar="DIR",
                   help="the runs to carry: DIR/runs/ (runs.json and a file per reranker run) "
                   "and DIR/first_stage/ (optional: BM25 is computed when absent)")
    p.add_argument("--work", type=Path, required=True, metavar="DIR",
                   help="the work folder: inputs/, store/, release/ (a rerun resumes here)")
    p.add_argument("--repo", required=True, metavar="OWNER/NAME",
                   help="the Hub repo the release is for")
    release_record_arguments(p)
    p.add_argument("--rule", choices=STAGE_A_RULES, default=DEFAULT_RULE,
                   help=f"calibrate's Stage A reading rule (default {DEFAULT_RULE})")
    add_source_option(p)
    run_arguments(p)
    schedule_options(p)
    p.set_defaults(func=_cut)


def _cut(args: argparse.Namespace) -> int:
    from rcp_data.cli.commands.build import _history
    from rcp_data.cli.commands.calibrate import print_fit
    from rcp_data.cli.commands.judge import judged_line, run_options
    from rcp_data.cli.extras import require_extra
    from rcp_data.cli.options import source_options
    from rcp_data.core.specs import check_no_todo
    from rcp_data.release.cut import project_history
    from rcp_data.release.cut_flow import cut_release

    if (args.suite is None) == (args.spec is None):
        raise UsageError("name a suite or give --spec FILE (one of the two)")
    require_extra("build")
    require_extra("judge")
    require_extra("calibrate")
    from rcp_data.core.specs import load_spec, load_spec_file

    spec = load_spec_file(args.spec) if args.spec else load_spec(args.suite)
    if spec.pool.dense:
        require_extra("dense")
    check_no_todo(spec, given=("suite.repo",))
    previous = _history(args.history) if args.history else project_history(spec.name,
                                                                            args.repo)
    options = run_options(args)

    def step(name: str, result) -> None:
        if name == "pools":
            say(args, f"pools: {result['queries']:,} queries, {result['pool_documents']:,} "
                f"pool documents into {args.work / 'inputs'}")
        elif name == "judge":
            say(args, judged_line(result))
        elif name == "calibrate":
            print_fit(result)
            say(args, f"wrote {result.out}")
        elif name == "build":
            say(args, f"built {result.suite} release {result.release} ({result.tag}) into "
                f"{result.out}")
        elif name == "check":
            print(f"{args.work / 'release'}: release check passed ({len(result.files)} files, "
                  f"{result.qrels_rows} qrels rows, suite {result.suite})")

    result = cut_release(spec, args.work, args.inputs, repo=args.repo, judge_options=options,
                         source_options=source_options(args), previous=previous,
                         previous_revision=args.previous_revision, summary=args.summary,
                         date=args.date, rule=args.rule, progress=options["progress"],
                         step=step)
    for name in result.skipped:
        say(args, f"{name}: done in an earlier run, not run again")
    print(f"release {result.tag} of {result.repo} is ready; publish it with:")
    print(result.publish_command)
    return 0


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _check(args: argparse.Namespace) -> int:
    from rcp_data.checks.release_check import check_release_dir

    report = check_release_dir(args.release_dir)
    report.raise_if_failed()
    print(f"{args.release_dir}: release check passed ({len(report.files)} files, "
          f"{report.qrels_rows} qrels rows, suite {report.suite})")
    return 0


def _publish(args: argparse.Namespace) -> int:
    from rcp_data.release.publish import publish

    result = publish(args.release_dir, args.repo, branch=args.branch,
                     parent_commit=args.parent_commit, create_repo=args.create_repo,
                     record_to=args.record_to, client=args.hub_client,
                     reverify=args.reverify)
    for msg in result.messages:  # the result: what was published, at which commit
        print(msg)
    if result.digest:  # the anchor to keep: a result, on stdout
        print(f"release digest {result.digest} (commit {result.commit}; pin it with "
              f"rcp-data verify --digest)")
    if result.record_error:  # the release is out, but the record asked for is not
        print(f"rcp-data release: error: {result.record_error}", file=sys.stderr)
        return 1
    if result.recorded:
        say(args, f"recorded in {result.recorded}")
    elif result.status == "published":
        log.info("the release is recorded in no project history (pass --record-to DIR)")
    return 0


def _list(args: argparse.Namespace) -> int:
    from rcp_data.release.refs import list_releases, render_listing

    fmt = chosen(args)
    listing = list_releases(args.repo, branch=args.branch, client=args.hub_client)
    if fmt == "json":
        print(json.dumps(listing.to_dict(), indent=2))
    elif fmt == "table":
        print(render_listing(listing), end="")
    else:
        sys.stdout.write(records(listing.to_dict()["releases"], fmt))
    return 0 if listing.ok else 1


def _render_md(args: argparse.Namespace) -> int:
    from rcp_data.documents.releases_md import render_releases_md, write_releases_md
    from rcp_data.model.history import load_project_histories

    if args.out is None or str(args.out) == "-":
        if args.check:
            raise UsageError("--check needs --out FILE (the RELEASES.md to check)")
        sys.stdout.write(render_releases_md(load_project_histories(args.histories)))
        return 0
    if not args.check:   # RELEASES.md is never written over or into the histories it renders
        from rcp_data.core.outputs import check_apart
        from rcp_data.model.history import histories_dir

        check_apart(args.out, {"--histories": args.histories or histories_dir()})
    path = write_releases_md(args.out, folder=args.histories, check=args.check)
    say(args, f"{path} is up to date" if args.check else f"wrote {path}")
    return 0


def _table(args: argparse.Namespace) -> int:
    from rcp_data.documents.releases_md import (
        release_table_rows,
        render_release_table,
        render_release_table_text,
    )
    from rcp_data.model.history import history_path, read_history

    path = Path(args.source)
    if not path.exists():
        path = history_path(args.source)
        if not path.exists():
            raise UsageError(f"{args.source!r} is neither a file nor a suite with a history")
    fmt = chosen(args)
    if args.text and fmt != "table":
        raise UsageError(f"--text and --format {fmt} disagree; give one")
    history = read_history(path)
    if fmt == "json":
        print_json(release_table_rows(history))
    elif fmt in ("tsv", "csv"):
        sys.stdout.write(records(release_table_rows(history), fmt))
    else:
        print(render_release_table_text(history) if args.text
              else render_release_table(history), end="")
    return 0
