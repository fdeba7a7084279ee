"""Pinned Hub revisions as local folders: ``hf://datasets/OWNER/NAME@REV`` -> a snapshot.

A tag or branch is resolved to its commit sha first, and every download is made strictly by
that sha, so a tag that moves meanwhile cannot mix two revisions. Downloads go to the client's
cache (``$HF_HOME``) or ``cache_dir``; nothing is ever written to the Hub.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from rcp_data.core.errors import RcpDataError, UsageError

log = logging.getLogger(__name__)

_HF_PATH = re.compile(r"^hf://datasets/(?P<repo>[^@/]+/[^@/]+)(?:@(?P<rev>[^/]+))?/?$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")


class HubUnavailable(RcpDataError):
    """The repo or revision cannot be reached (exit 2: the check could not run)."""


@dataclass(frozen=True)
class PinnedRevision:
    repo: str
    requested: str
    sha: str
    is_tag: bool
    is_branch: bool


def parse_hf_path(path: str) -> tuple[str, str] | None:
    """``hf://datasets/OWNER/NAME@REV`` -> (repo, rev); None for a local path."""
    if not str(path).startswith("hf://"):
        return None
    m = _HF_PATH.match(str(path))
    if not m:
        raise UsageError(f"expected hf://datasets/OWNER/NAME@REV, got {path!r}")
    return m.group("repo"), m.group("rev") or "main"


def hub_api(endpoint: str | None = None):
    """An ``HfApi`` for ``endpoint``, else ``$HF_ENDPOINT`` (read now, not at import), else the
    real Hub."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None)


def resolve_revision(repo: str, revision: str) -> PinnedRevision:
    """Resolve a tag, branch or sha of a dataset repo to its commit sha."""
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    api = hub_api()
    try:
        refs = api.list_repo_refs(repo, repo_type="dataset")
    except RepositoryNotFoundError as exc:
        raise HubUnavailable(f"dataset repo {repo!r} not found on {api.endpoint}") from exc
    tags = {t.name: t.target_commit for t in refs.tags}
    branches = {b.name: b.target_commit for b in refs.branches}
    if revision in tags:
        return PinnedRevision(repo, revision, tags[revision], True, False)
    if revision in branches:
        return PinnedRevision(repo, revision, branches[revision], False, True)
    try:
        info = api.dataset_info(repo, revision=revision)
    except (RevisionNotFoundError, RepositoryNotFoundError) as exc:
        raise HubUnavailable(f"revision {revision!r} not found in dataset repo {repo!r}") from exc
    if not info.sha:
        raise HubUnavailable(f"revision {revision!r} of {repo!r} has no commit sha")
    return PinnedRevision(repo, revision, info.sha, False, False)


def download_snapshot(repo: str, sha: str, cache_dir: Path | None = None) -> Path:
    """Download every file of ``repo`` at commit ``sha`` (never by tag) and return the folder."""
    from huggingface_hub import snapshot_download

    if not SHA_RE.match(sha):
        raise UsageError(f"downloads are made by full commit sha, got {sha!r}")
    local = snapshot_download(repo, repo_type="dataset", revision=sha,
                              cache_dir=str(cache_dir) if cache_dir else None,
                              endpoint=os.environ.get("HF_ENDPOINT") or None)
    log.info("downloaded %s@%s to %s", repo, sha[:12], local)
    return Path(local)


def local_release(path: str | Path, cache_dir: Path | None = None) -> tuple[Path, PinnedRevision | None]:
    """A release folder for ``path``: a local directory as is, or a pinned Hub snapshot."""
    parsed = parse_hf_path(str(path))
    if parsed is None:
        p = Path(path)
        if not p.is_dir():
            raise UsageError(f"release directory not found: {p}")
        return p, None
    repo, rev = parsed
    pin = resolve_revision(repo, rev)
    return download_snapshot(repo, pin.sha, cache_dir), pin
