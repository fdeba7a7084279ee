"""``rcp-data card``: render a release's card and task file, or regenerate them on the Hub.

- ``card render RELEASE_DIR [--out FILE] [--repo OWNER/NAME]``: write ``README.md`` and
  ``rcp_ndcg_tasks.py`` into the release directory (with ``--out``: only the card, to FILE;
  ``--out -`` prints it).
- ``card regenerate --repo OWNER/NAME --revision REV [--branch main]``: read the repo at REV,
  write in the commit shas known by now (from the Hub's tags), and publish ONE commit on the
  branch that changes only ``README.md``, ``rcp_ndcg_tasks.py`` and ``provenance/releases.json``.
  REV must be the branch head (``parent_commit``); no tag is created or moved.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rcp_data.card import render_release_files, write_release_files
from rcp_data.errors import InputError, RefusedError, UsageError
from rcp_data.layout import CARD_FILE, RELEASES_JSON, TASK_FILE, detect_suite
from rcp_data.release.history import fill_known_shas, read_history
from rcp_data.specs import SuiteSpec, load_spec

log = logging.getLogger(__name__)

REGENERATED_FILES = (CARD_FILE, TASK_FILE, RELEASES_JSON)


__all__ = ["REGENERATED_FILES", "Regenerated", "regenerate", "register",
           "render_release_files", "write_release_files"]


def _spec_of(root: Path, suite: str | None) -> SuiteSpec:
    name = suite or detect_suite(root)
    if name is None:
        raise InputError("cannot tell the suite of this release; pass --suite", path=str(root))
    return load_spec(name)


@dataclass
class Regenerated:
    """Outcome of a regeneration: the new commit (None when nothing changed)."""

    parent: str
    commit: str | None
    changed: list[str]


def regenerate(repo: str, revision: str, *, branch: str = "main", suite: str | None = None,
               workdir: Path | None = None) -> Regenerated:
    """Regenerate card, task file and releases.json of ``repo`` at ``revision`` on the Hub."""
    from huggingface_hub import CommitOperationAdd, HfApi, snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    api = HfApi()
    try:
        info = api.dataset_info(repo, revision=revision)
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
        raise UsageError(f"{repo}@{revision}: not found on the Hub ({type(exc).__name__})") from exc
    parent = info.sha
    with tempfile.TemporaryDirectory(prefix="rcp-card-", dir=workdir) as tmp:
        root = Path(snapshot_download(repo, repo_type="dataset", revision=parent,
                                      local_dir=Path(tmp) / "snapshot"))
        log.info("read %s at %s into %s", repo, parent, root)
        if not (root / RELEASES_JSON).exists():
            raise InputError(f"{repo}@{parent[:8]} has no {RELEASES_JSON}; publish a release "
                             "first")
        history = read_history(root / RELEASES_JSON)
        refs = api.list_repo_refs(repo, repo_type="dataset")
        history = fill_known_shas(history, refs)
        spec = _spec_of(root, suite)
        texts = render_release_files(root, spec=spec, history=history, repo=repo)
        texts[RELEASES_JSON] = history.to_json()
        changed = []
        ops = []
        for rel in REGENERATED_FILES:
            data = texts[rel].encode("utf-8")
            old = (root / rel).read_bytes() if (root / rel).exists() else None
            if old != data:
                changed.append(rel)
                ops.append(CommitOperationAdd(path_in_repo=rel, path_or_fileobj=data))
        if not ops:
            log.info("%s@%s: card, task file and releases.json are up to date", repo, parent[:8])
            return Regenerated(parent=parent, commit=None, changed=[])
        try:
            commit = api.create_commit(
                repo, operations=ops, repo_type="dataset", revision=branch,
                parent_commit=parent,
                commit_message="Regenerate dataset card, task file and releases.json",
                commit_description="Only README.md, rcp_ndcg_tasks.py and "
                                   "provenance/releases.json change; the data is untouched.",
            )
        except HfHubHTTPError as exc:
            status = getattr(exc.response, "status_code", None)
            if status == 412:
                raise RefusedError(f"{repo}: branch {branch!r} is no longer at {parent[:8]} "
                                   "(it moved, or --revision is not its head); nothing was "
                                   "committed") from exc
            raise
    sha = commit.oid
    log.info("committed %s to %s@%s (%s)", ", ".join(changed), repo, branch, sha[:8])
    return Regenerated(parent=parent, commit=sha, changed=changed)


def _render(args: argparse.Namespace) -> int:
    root = Path(args.release_dir)
    if not root.is_dir():
        raise UsageError(f"not a release directory: {root}")
    spec = _spec_of(root, args.suite)
    if args.out:
        from rcp_data.card import render_card

        text = render_card(root, spec=spec, repo=args.repo)
        if args.out == "-":
            sys.stdout.write(text)
        else:
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            print(f"wrote {out}")
        return 0
    for path in write_release_files(root, spec=spec, repo=args.repo):
        print(f"wrote {path}")
    return 0


def _regenerate(args: argparse.Namespace) -> int:
    result = regenerate(args.repo, args.revision, branch=args.branch, suite=args.suite)
    if result.commit is None:
        print(f"{args.repo}@{result.parent[:8]}: already up to date, nothing committed")
    else:
        print(f"{args.repo}: committed {result.commit} on {args.branch} "
              f"(changed: {', '.join(result.changed)}; no tag moved)")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("card", help="render or regenerate dataset cards and task files")
    sub = p.add_subparsers(dest="card_command", metavar="ACTION")
    r = sub.add_parser("render", help="write README.md and rcp_ndcg_tasks.py of a release dir")
    r.add_argument("release_dir", metavar="RELEASE_DIR")
    r.add_argument("--out", help="write only the card, to this file ('-' = stdout)")
    r.add_argument("--repo", help="Hub repo id the card names (default: releases.json or spec)")
    r.add_argument("--suite", help="suite name (default: read from the release)")
    r.set_defaults(func=_render)
    g = sub.add_parser("regenerate",
                       help="publish a commit updating only the card, task file, releases.json")
    g.add_argument("--repo", required=True, metavar="OWNER/NAME")
    g.add_argument("--revision", required=True, help="the branch head to build on")
    g.add_argument("--branch", default="main")
    g.add_argument("--suite", help="suite name (default: read from the repo)")
    g.set_defaults(func=_regenerate)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
