"""Turn a built release directory into a publishable one: releases.json, task file, card.

``build`` writes the data and provenance; ``prepare`` adds what a release commit holds beside
them (design note, Releases): ``provenance/releases.json`` with the new release as
``"revision": null`` (the commit that will hold it), ``rcp_ndcg_tasks.py`` and ``README.md``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.gains import link_name
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.history import (
    SCHEMA,
    History,
    add_release,
    calibration_record,
    read_history,
    write_history,
)
from rcp_data.model.layout import RELEASES_JSON
from rcp_data.model.release import Release, release_is_synthetic

log = logging.getLogger(__name__)


SYNTHETIC_SUMMARY = "SYNTHETIC data (generated; not a benchmark). "


def synthetic_summary(summary: str, synthetic: bool) -> str:
    """A release summary, starting with SYNTHETIC for a release built from generated data."""
    if not synthetic or summary.startswith("SYNTHETIC"):
        return summary
    return SYNTHETIC_SUMMARY + summary


def new_release_history(root: Path, spec: SuiteSpec, repo: str, previous: History | None, *,
                        summary: str = "", date: str | None = None,
                        previous_revision: str | None = None) -> History:
    """The history of the repo with the release built in ``root`` appended as current."""
    manifest = Release(Path(root), spec).manifest()
    judge = manifest.get("judge")
    calibration = manifest.get("calibration")
    if not judge or not calibration:
        raise InputError("the build manifest names no judge/calibration",
                         path=str(Path(root) / "provenance/build_manifest.json"))
    history = previous or History(repo=repo, releases=(), schema=SCHEMA,
                                  extra={"suite": spec.name})
    if history.repo != repo:
        raise InputError(f"the release history is for {history.repo}, not {repo}")
    synthetic = release_is_synthetic(root, synthetic_suite=spec.synthetic)
    return add_release(
        history,
        judge={"model": judge["model"], "revision": judge.get("revision")},
        calibration=calibration_record(calibration),
        summary=synthetic_summary(summary or f"Judge {judge['model']}, 2PL IRT calibration, "
                                             f"{link_name(calibration)} gains.", synthetic),
        date=date,
        previous_revision=previous_revision,
        extra={"synthetic": True} if synthetic else None,
    )


def render_release_files(root: Path, spec: SuiteSpec, history: History) -> None:
    """Write releases.json, the task file and the card of ``root`` from ``history``."""
    from rcp_data.documents.card import write_release_files

    root = Path(root)
    write_history(history, root / RELEASES_JSON)
    write_release_files(root, spec=spec, history=history, repo=history.repo)
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
