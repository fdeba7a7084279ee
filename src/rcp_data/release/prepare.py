"""Turn a built release directory into a publishable one: releases.json, task file, card.

``build`` writes the data and provenance; ``prepare`` adds what a release commit holds beside
them (docs/concepts, Releases): ``provenance/releases.json`` with the new release as
``"revision": null`` (the commit that will hold it), ``rcp_ndcg_tasks.py`` and ``README.md``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.history import History, read_history, write_history
from rcp_data.model.history import new_release_history as history_with_release
from rcp_data.model.layout import BUILD_MANIFEST, RELEASES_JSON
from rcp_data.model.release import open_release

log = logging.getLogger(__name__)


def new_release_history(root: Path, spec: SuiteSpec, repo: str, previous: History | None, *,
                        summary: str = "", date: str | None = None,
                        previous_revision: str | None = None) -> History:
    """The history of the repo with the release built in ``root`` appended as current
    (:func:`rcp_data.model.history.new_release_history`)."""
    release = open_release(Path(root), suite=spec)
    if release.manifest is None:
        raise InputError("no build manifest: build the release first",
                         path=str(Path(root) / BUILD_MANIFEST))
    return history_with_release(release.manifest, repo=repo, suite=spec.name,
                                previous=previous, summary=summary, date=date,
                                previous_revision=previous_revision,
                                synthetic=release.synthetic)


def render_release_files(root: Path, spec: SuiteSpec, history: History) -> None:
    """Write releases.json, the task file and the card of ``root`` from ``history``."""
    from rcp_data.core.outputs import record_written
    from rcp_data.documents.card import write_release_files

    root = Path(root)
    write_history(history, root / RELEASES_JSON)
    record_written(write_release_files(root, spec=spec, history=history, repo=history.repo))
    log.info("wrote releases.json (%d releases), task file and card into %s",
             len(history.releases), root)


def prepare_release(root: Path, spec: SuiteSpec, repo: str, *, previous: History | None = None,
                    summary: str = "", date: str | None = None,
                    previous_revision: str | None = None) -> History:
    """Add releases.json, the task file and the card to a freshly built release directory.

    A directory that already carries ``releases.json`` (e.g. a recalibration release) keeps its
    history; otherwise the new release is appended to ``previous`` (or starts a history).
    """
    root = Path(root)
    existing = root / RELEASES_JSON
    if existing.exists():
        history = read_history(existing)
    else:
        history = new_release_history(root, spec, repo, previous, summary=summary, date=date,
                                      previous_revision=previous_revision)
    render_release_files(root, spec, history)
    return history
