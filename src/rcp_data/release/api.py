"""The building and publishing part of the public Python API (``rcp_data.build``,
``rcp_data.publish``): thin, quiet wrappers of :mod:`rcp_data.release.cut` and
:mod:`rcp_data.release.publish`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.core.progress import bars, hub_bars

if TYPE_CHECKING:
    from rcp_data.core.hub_client import HubClient
    from rcp_data.core.specs import SuiteSpec
    from rcp_data.model.history import History
    from rcp_data.model.release import Release
    from rcp_data.release.cut import BuildResult
    from rcp_data.release.publish import PublishResult


def build(suite: str | SuiteSpec, inputs: str | Path, out: str | Path, *,
          repo: str | None = None, source_options: Mapping[str, str] | None = None,
          previous: History | str | Path | None = None, summary: str = "",
          date: str | None = None, force: bool = False, prepare: bool = True,
          progress: bool = False) -> BuildResult:
    """Build a release directory of ``suite`` from a judge run's builder inputs, as
    ``rcp-data build`` does: read the suite's sources, build the data and provenance and
    (unless ``prepare`` is False) add ``provenance/releases.json``, the mteb task file and
    the card.

    ``inputs``: the builder inputs folder (``judge/``, ``first_stage/``, ``runs/``); ``out``:
    a new or empty folder (``force``: or a release folder built earlier); ``repo``: the Hub
    repo the release is for (default: the spec's); ``previous``: the repo's history so far;
    ``source_options``: the suite reader's options. Returns the
    :class:`~rcp_data.release.cut.BuildResult`; ``out`` is written only when complete.
    """
    from rcp_data.core.specs import SuiteSpec, load_spec
    from rcp_data.release.cut import build_release_dir

    spec = suite if isinstance(suite, SuiteSpec) else load_spec(suite)
    with bars(progress):
        return build_release_dir(spec, Path(inputs), Path(out), repo=repo,
                                 source_options=None if source_options is None
                                 else dict(source_options),
                                 previous=previous, summary=summary, date=date, force=force,
                                 prepare=prepare)


def publish(release: Release | str | Path, repo: str, *, branch: str = "main",
            parent_commit: str | None = None, client: HubClient | None = None,
            create_repo: bool = False, record_to: str | Path | None = None,
            reverify: bool = False, progress: bool = False) -> PublishResult:
    """Check, commit and tag one release directory on the Hub, as ``rcp-data release
    publish`` does: the release is verified first (or a receipt of a passed verification of
    the same bytes is used), then committed on ``branch`` (on ``parent_commit`` when given)
    and tagged.

    ``release``: a release directory or an opened local
    :class:`~rcp_data.model.release.Release`. ``record_to``: a folder of ``<suite>.json``
    histories (or one file) to record the published release in. Returns the
    :class:`~rcp_data.release.publish.PublishResult` (``status`` ``"published"`` or
    ``"already-published"``; ``record_error`` says why a record asked for could not be
    made: the release is out then, its record not). Raises :class:`~rcp_data.core.errors.RefusedError` (a
    ``PermissionError``) when the release fails its checks or the branch moved, and
    :class:`~rcp_data.core.errors.NotFoundError` for a missing directory or repo.
    """
    from rcp_data.release.publish import publish as publish_release

    root = release if isinstance(release, str | Path) else release.root
    with bars(progress), hub_bars(progress):
        return publish_release(root, repo, branch=branch, parent_commit=parent_commit,
                               client=client, create_repo=create_repo, record_to=record_to,
                               reverify=reverify)


__all__ = ["build", "publish"]
