"""The verifying part of the public Python API (``rcp_data.verify``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.core.progress import bars, hub_bars

if TYPE_CHECKING:
    from rcp_data.checks.reports import VerifyReport
    from rcp_data.core.hub_client import HubClient
    from rcp_data.model.release import Release


def verify(release: Release | str | Path, *, reference: str | Path | None = None,
           histories: str | Path | None = None, client: HubClient | None = None,
           cache_dir: str | Path | None = None, quick: bool = False, sources: bool = False,
           source_options: Mapping[str, str] | None = None,
           progress: bool = False, digest: str | None = None,
           git: bool = False) -> VerifyReport:
    """Verify a release as ``rcp-data verify`` does: integrity, provenance, the card's tables
    replayed, the paper's numbers where they apply, the card and task file rendered again.

    ``release``: a release directory, ``"hf://datasets/OWNER/NAME@REV"`` (resolved to its
    commit sha, downloaded by sha and checked against the Hub's tags), or an opened
    :class:`~rcp_data.model.release.Release` (one opened from the Hub is verified at its
    pinned revision). ``reference``: the paper's numbers (default: the project's);
    ``histories``: a folder of ``<suite>.json`` release records the tags are checked against;
    ``quick``, ``sources``, ``source_options``, ``digest``, ``git``: as the CLI's ``--quick``,
    ``--sources``, ``--source-option``, ``--digest``, ``--git``.

    A failed check does not raise: the returned
    :class:`~rcp_data.checks.reports.VerifyReport` says ``ok`` (``report.failed`` lists what
    failed), ``anchor`` what outside the repository vouches for a Hub revision (None: nothing;
    ``report.exit_code`` is then 3), and ``digest`` the release's content digest. Raises :class:`~rcp_data.core.errors.NotFoundError` (a ``FileNotFoundError``)
    when the directory, repo or revision does not exist and
    :class:`~rcp_data.core.hub_client.HubUnavailable` when the Hub cannot be reached.
    """
    from rcp_data.checks.verify import verify as verify_release

    repo = revision = None
    path: str | Path | None = release
    if not isinstance(release, str | Path):           # an opened Release
        if release.repo and release.revision:
            repo, revision, path = release.repo, release.revision, None
        else:
            path = release.root
    remote = path is None or str(path).startswith("hf://")
    with bars(progress), hub_bars(progress or not remote):
        return verify_release(repo=repo, revision=revision, path=path, reference=reference,
                              cache_dir=cache_dir, histories=histories, client=client,
                              quick=quick, sources=sources, digest=digest, git=git,
                              source_options=None if source_options is None
                              else dict(source_options))


__all__ = ["verify"]
