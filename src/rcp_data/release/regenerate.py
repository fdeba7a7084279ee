"""Regenerate a published release's card, task file and releases.json on the Hub.

Reads the repo at a revision (the branch head), writes in the commit shas known by now (from
the Hub's tags) and publishes ONE commit that changes only ``README.md``, ``rcp_ndcg_tasks.py``
and ``provenance/releases.json`` (``parent_commit`` = that head). No tag is created or moved.
The Hub is the :class:`HubClient` passed in (default: built from the environment).

A release published without Diagnostics (``provenance/diagnostics.json`` and the pictures)
gets them in the same commit (:func:`with_diagnostics`): computed from its data as ``build``
computes them, added to its build manifest's file list (every other entry kept), and shown in
the card. No data file is written: the commit adds those files and changes the manifest only.

The read step (:func:`read_for_card`) downloads every file but the corpus into the client's
cache (reused by later runs; offline, read from it): the card's corpus facts come from the build
manifest's record of the corpus files. Only a release whose manifest lacks that record has its
corpus downloaded as well.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.hub_client import HubClient
from rcp_data.core.specs import check_no_todo
from rcp_data.documents.card import render_release_texts
from rcp_data.documents.diagnostics_files import read_record
from rcp_data.model.history import fill_known_shas, read_history
from rcp_data.model.layout import CARD_FILE, CORPUS_PATTERNS, RELEASES_JSON, TASK_FILE
from rcp_data.model.manifest import load_manifest
from rcp_data.model.suite import release_spec

log = logging.getLogger(__name__)

REGENERATED_FILES = (CARD_FILE, TASK_FILE, RELEASES_JSON)


@dataclass
class Regenerated:
    """Outcome of a regeneration: the new commit (None when nothing changed)."""

    parent: str
    commit: str | None
    changed: list[str]


def read_for_card(client: HubClient, repo: str, sha: str) -> Path:
    """The snapshot of ``repo`` at commit ``sha`` that a card is rendered from: every file but
    the corpus, unless the build manifest does not record the corpus files."""
    root = client.download(repo, sha, ignore_patterns=CORPUS_PATTERNS)
    if not (root / RELEASES_JSON).exists():
        raise InputError(f"{repo}@{sha[:8]} has no {RELEASES_JSON}; publish a release first")
    manifest = load_manifest(root)
    if manifest is None or manifest.corpus_files is None:
        log.info("%s@%s: the build manifest records no corpus files; downloading the corpus",
                 repo, sha[:8])
        root = client.download(repo, sha)
    return root


def with_diagnostics(snapshot: Path, spec, overlay: Path) -> tuple[Path, list[str]]:
    """``overlay``: the files of ``snapshot`` (links, never written through) with the
    Diagnostics (pictures and ``provenance/diagnostics.json``) computed from its data and
    added to its build manifest's file list; returns ``overlay`` and the paths written (the
    manifest last, when the snapshot has one)."""
    from rcp_data.core.files import release_paths
    from rcp_data.documents.diagnostics_files import write_diagnostics
    from rcp_data.model.layout import BUILD_MANIFEST
    from rcp_data.model.manifest import add_content

    for rel in release_paths(snapshot):
        target = overlay / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink((snapshot / rel).resolve(), target)
    written = [p.relative_to(overlay).as_posix() for p in write_diagnostics(overlay, spec)]
    if (overlay / BUILD_MANIFEST).exists():
        add_content(overlay, written)
        written.append(BUILD_MANIFEST)
    return overlay, written


def regenerate(repo: str, revision: str, *, branch: str = "main", suite: str | None = None,
               client: HubClient | None = None) -> Regenerated:
    """Regenerate card, task file and releases.json of ``repo`` at ``revision`` on the Hub,
    adding the Diagnostics where the revision has none."""
    client = client or HubClient.from_env()
    parent = client.resolve(repo, revision).sha
    root = read_for_card(client, repo, parent)
    log.info("read %s at %s from %s", repo, parent, root)
    history = read_history(root / RELEASES_JSON)
    history = fill_known_shas(history, client.refs(repo))
    spec = release_spec(root, suite, repo=repo, hint="; pass --suite")
    check_no_todo(spec, given=("suite.repo",))   # the card names the repo it is regenerated in
    with tempfile.TemporaryDirectory(prefix="rcp-regenerate-") as tmp:
        added: list[str] = []
        if read_record(root) is None:
            root, added = with_diagnostics(root, spec, Path(tmp))
            log.info("%s@%s has no Diagnostics: computed from its data (%s)", repo, parent[:8],
                     ", ".join(added))
        return _commit(client, repo, branch, parent, root, history, spec, added)


def _commit(client: HubClient, repo: str, branch: str, parent: str, root: Path, history,
            spec, added: list[str]) -> Regenerated:
    from huggingface_hub import CommitOperationAdd

    texts = render_release_texts(root, spec=spec, history=history, repo=repo)
    texts[RELEASES_JSON] = history.to_json()
    changed = []
    ops = []
    for rel in REGENERATED_FILES:
        data = texts[rel].encode("utf-8")
        old = (root / rel).read_bytes() if (root / rel).exists() else None
        if old != data:
            changed.append(rel)
            ops.append(CommitOperationAdd(path_in_repo=rel, path_or_fileobj=data))
    for rel in added:
        changed.append(rel)
        ops.append(CommitOperationAdd(path_in_repo=rel, path_or_fileobj=(root / rel).read_bytes()))
    if not ops:
        log.info("%s@%s: card, task file and releases.json are up to date", repo, parent[:8])
        return Regenerated(parent=parent, commit=None, changed=[])
    what = "README.md, rcp_ndcg_tasks.py and provenance/releases.json change"
    if added:
        what += ("; the Diagnostics (provenance/diagnostics.json and the pictures) are added "
                 "and listed in the build manifest")
    sha = client.commit(
        repo, ops, branch=branch, parent=parent,
        message="Regenerate dataset card, task file and releases.json"
                + (", add the Diagnostics" if added else ""),
        description=f"Only {what}; the data is untouched.")
    log.info("committed %s to %s@%s (%s)", ", ".join(changed), repo, branch, sha[:8])
    return Regenerated(parent=parent, commit=sha, changed=changed)
