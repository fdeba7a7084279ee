"""``rcp-data card``: render a release's card and task file, or regenerate them on the Hub.

- ``card render RELEASE_DIR [--out FILE] [--repo OWNER/NAME]``: write ``README.md``,
  ``rcp_ndcg_tasks.py``, the pictures (``provenance/pictures/*.png``) and the numbers behind
  them (``provenance/diagnostics.json``; listed in the build manifest) into the release
  directory, which must be one (it has
  ``provenance/releases.json`` or a build manifest), replacing a card or task file there only
  while it is what rcp-data wrote (else ``--force``); with ``--out``: only the card, to FILE
  (a new file outside RELEASE_DIR, or an existing one with ``--force``; ``--out -`` prints it).
  Every file is written atomically.
- ``card regenerate --repo OWNER/NAME --revision REV [--branch main]``: read the repo at REV,
  write in the commit shas known by now (from the Hub's tags), and publish ONE commit on the
  branch that changes only ``README.md``, ``rcp_ndcg_tasks.py`` and ``provenance/releases.json``
  (and, for a release published without Diagnostics, adds them: the pictures and
  ``provenance/diagnostics.json``, listed in the build manifest; no data file changes).
  REV must be the branch head (``parent_commit``); no tag is created or moved.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from rcp_data.cli.output import result as result_line
from rcp_data.cli.output import say
from rcp_data.core.errors import UsageError
from rcp_data.core.specs import suite_key

log = logging.getLogger(__name__)

__all__ = ["register"]

def _release_root(args: argparse.Namespace) -> Path:
    """The release folder to render: a local one, or a Hub snapshot read like ``card
    regenerate`` reads it (everything but the corpus; ``--out`` required)."""
    from rcp_data.core.hub_client import parse_hf_path
    from rcp_data.release.regenerate import read_for_card

    parsed = parse_hf_path(args.release_dir)
    if parsed is None:
        root = Path(args.release_dir)
        if not root.is_dir():
            raise UsageError(f"not a release directory: {root}")
        return root
    if not args.out:
        raise UsageError("a Hub snapshot is read-only: pass --out FILE (or --out -)")
    repo, rev = parsed
    pin = args.hub_client.resolve(repo, rev)
    return read_for_card(args.hub_client, repo, pin.sha)


def _render(args: argparse.Namespace) -> int:
    from rcp_data.core.io import atomic_write_text
    from rcp_data.core.outputs import (
        check_output_file,
        check_rewritable,
        own_path,
        record_written,
        writable,
    )
    from rcp_data.documents.card import render_card, render_release_texts
    from rcp_data.model.layout import RELEASE, RELEASES_JSON
    from rcp_data.model.release import open_release

    root = _release_root(args)
    if args.out and args.out != "-":
        out = check_output_file(args.out, inputs={"RELEASE_DIR": root}, force=args.force)
    elif not args.out and not ((root / RELEASES_JSON).is_file() or RELEASE.written_here(root)):
        raise UsageError(f"{root} is not a release directory (it has neither {RELEASES_JSON} "
                         f"nor {RELEASE.manifest}); nothing was written")
    release = open_release(root, suite=args.suite, hint="; pass --suite")
    root, spec = release.root, release.spec
    from rcp_data.core.specs import check_no_todo

    check_no_todo(spec, given=("suite.repo",) if args.repo else ())   # as build refuses them
    if args.out:
        text = render_card(root, spec=spec, repo=args.repo)
        if args.out == "-":
            sys.stdout.write(text)
        else:
            with writable(out):
                atomic_write_text(out, text)
            say(args, f"wrote {out}")
        return 0
    # the card and task file are replaced only while they are what rcp-data wrote (hand
    # edits are kept unless --force)
    texts = render_release_texts(root, spec=spec, repo=args.repo)
    check_rewritable(root, texts, force=args.force, what="card or task file")
    written = []
    with writable(root):
        written += _diagnostics(root, spec)
        texts = render_release_texts(root, spec=spec, repo=args.repo)
        for rel, text in texts.items():   # a symbolic link there is replaced, not followed
            atomic_write_text(own_path(root, rel), text)
            written.append(root / rel)
        record_written(written)
    say(args, f"wrote {' and '.join(p.name for p in written)} in {root}")
    return 0


def _diagnostics(root: Path, spec) -> list[Path]:
    """Write the release's pictures and Diagnostics numbers (where its data gives them) and
    list them in its build manifest."""
    from rcp_data.documents.diagnostics_files import write_diagnostics
    from rcp_data.model.layout import BUILD_MANIFEST
    from rcp_data.model.manifest import record_content

    written = write_diagnostics(root, spec)
    if (root / BUILD_MANIFEST).is_file():
        record_content(root)
    return written


def _regenerate(args: argparse.Namespace) -> int:
    from rcp_data.cli.options import dataset_revision
    from rcp_data.release.regenerate import regenerate

    args.repo, args.revision = dataset_revision(args.dataset, args.repo, args.revision)
    result = regenerate(args.repo, args.revision, branch=args.branch, suite=args.suite,
                        client=args.hub_client)
    if result.commit is None:
        result_line(f"{args.repo}@{result.parent[:8]}: already up to date, nothing committed")
    else:                                      # the new commit is the command's result
        result_line(f"{args.repo}: committed {result.commit} on {args.branch} "
                    f"(changed: {', '.join(result.changed)}; no tag moved)")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("card", help="render or regenerate dataset cards and task files",
                              description="Render a release's dataset card (README.md) and "
                              "task file, or publish a commit that regenerates them on the Hub.")
    sub = p.add_subparsers(dest="card_command", metavar="ACTION")
    r = sub.add_parser("render", help="write README.md and rcp_ndcg_tasks.py of a release dir",
                       description="Write the dataset card (README.md) and the task file "
                       "(rcp_ndcg_tasks.py) of a release directory from its data, or only the "
                       "card to --out.")
    r.add_argument("release_dir", metavar="RELEASE_DIR",
                   help="a release directory, or hf://datasets/OWNER/NAME@REV (read without "
                   "its corpus; needs --out)")
    r.add_argument("--out", help="write only the card, to this file ('-' = stdout)")
    r.add_argument("--force", action="store_true",
                   help="replace an existing --out file, or a README.md / task file in "
                   "RELEASE_DIR that rcp-data did not write (hand edits)")
    r.add_argument("--repo", help="Hub repo id the card names (default: releases.json or spec)")
    r.add_argument("--suite", type=suite_key, help="suite name (default: read from the release)")
    r.set_defaults(func=_render)
    g = sub.add_parser("regenerate",
                       help="publish a commit updating only the card, task file, releases.json",
                       description="Render the card, task file and releases.json of a "
                       "published release again and commit only those files on --branch, on "
                       "top of the revision named (hf://datasets/OWNER/NAME@REV, or --repo and "
                       "--revision); a release without Diagnostics gets them in the same "
                       "commit (pictures and provenance/diagnostics.json, computed from its "
                       "data, which is left untouched); no tag is moved.")
    g.add_argument("dataset", nargs="?", metavar="hf://datasets/OWNER/NAME@REV",
                   help="the dataset revision to build on (the head of --branch); "
                   "--repo/--revision are the same, spelled apart")
    g.add_argument("--repo", metavar="OWNER/NAME",
                   help="dataset repo id (with --revision: an alias of the hf:// name)")
    g.add_argument("--revision", help="tag, branch or commit sha, 7+ hex (with --repo)")
    g.add_argument("--branch", default="main", help="the branch to commit on (default main)")
    g.add_argument("--suite", type=suite_key, help="suite name (default: read from the repo)")
    g.set_defaults(func=_regenerate)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
