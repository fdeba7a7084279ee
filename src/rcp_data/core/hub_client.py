"""One Hub client, passed in: endpoint, token and download cache, and one translation of Hub errors.

The CLI builds one :class:`HubClient` (:meth:`HubClient.from_env`) and hands it to every command
that reaches the Hub; library callers may pass their own, else get one built from the
environment. Nothing here sets environment variables, and the token is never printed or logged
(it is left out of the client's ``repr``).

A tag or branch is resolved to its commit sha first, and every download is made strictly by
that sha, so a tag that moves meanwhile cannot mix two revisions. Downloads go to the client's
``cache_dir`` (default: the user's Hugging Face cache) and take only the files a step reads
(``allow_patterns`` / ``ignore_patterns``), so a second run reuses them. With
``HF_HUB_OFFLINE=1`` a full 40-hex sha is used as it is, without asking the Hub, and files come
from the cache alone.

Uploads to the project's local Hub go through the legacy git-LFS path: ``huggingface_hub``
sends every ``lfs`` file through Xet whenever ``hf_xet`` is installed, which a local server
cannot offer. ``huggingface_hub`` reads ``HF_HUB_DISABLE_XET`` into
``huggingface_hub.constants`` once, at its import, and asks that constant at upload time, so
:meth:`HubClient.commit` sets the constant (never ``os.environ``) for the duration of the
commit, and only when the endpoint is a local Hub (:attr:`HubClient.is_local_hub`).

Every Hub call runs under :func:`hub_errors`, which turns ``huggingface_hub`` and HTTP-client
errors into the toolkit's: an unreachable Hub, a missing repo, revision or file, and any other
HTTP error exit 2 (could not run); a 412 (the branch moved under a commit) and a 409 (a
conflict) are refusals, exit 1. Every message is one line, and never carries credentials: the
userinfo of a URL (``HF_ENDPOINT=http://user:secret@host``) is replaced by ``***``
(:func:`redact`), in the endpoint a message names and in any detail it quotes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from rcp_data.core.errors import (  # the Hub's errors live in core.errors; kept importable here
    BranchMoved,
    HubConflict,
    HubNotFound,
    HubUnavailable,
    NotFoundError,
    RcpDataError,
    UsageError,
)
from rcp_data.core.redact import redact

if TYPE_CHECKING:
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import GitRefs

log = logging.getLogger(__name__)

REAL_HUB = "https://huggingface.co"
REPO_TYPE = "dataset"
_HF_PATH = re.compile(r"^hf://datasets/(?P<repo>[^@/]+/[^@/]+)(?:@(?P<rev>[^/]+))?/?$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
SHORT_SHA_RE = re.compile(r"^[0-9a-f]{7,39}$")  # an abbreviated commit sha, as git prints
_TRANSPORT_MODULES = ("httpx", "httpcore", "requests", "urllib3")
LOCAL_HUB_SERVER = "rcp-data-local-hub"   # the local Hub's ``Server`` header starts so




def _one_line(text: object) -> str:
    lines = [s.strip() for s in str(text).splitlines() if s.strip()]
    return lines[0] if lines else ""


def _is_transport_error(exc: BaseException) -> bool:
    return isinstance(exc, (ConnectionError, TimeoutError)) or \
        type(exc).__module__.split(".")[0] in _TRANSPORT_MODULES


def translate(exc: BaseException, what: str, endpoint: str) -> RcpDataError | None:
    """The toolkit's error for a Hub error met while doing ``what``; None if it is none. Its
    message names the endpoint and quotes the error without any URL's userinfo."""
    mapped = _translate(exc, what, redact(endpoint))
    if mapped is not None and redact(mapped.message) != mapped.message:
        mapped.message = redact(mapped.message)
        mapped.args = (mapped.message,)
    return mapped


def _translate(exc: BaseException, what: str, endpoint: str) -> RcpDataError | None:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, RcpDataError):
        return None
    if type(exc) is RuntimeError and isinstance(exc.__cause__, Exception):
        # huggingface_hub wraps a failed upload ("Error while uploading 'PATH' to the Hub.")
        return _translate(exc.__cause__, f"{what} ({_one_line(exc).rstrip('.')})", endpoint)
    if isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(exc, RepositoryNotFoundError):
            return HubNotFound(f"{what}: the dataset repo was not found on the Hub at {endpoint}")
        if isinstance(exc, RevisionNotFoundError):
            return HubNotFound(f"{what}: the revision was not found on the Hub at {endpoint}")
        if isinstance(exc, EntryNotFoundError) or status == 404:
            return HubNotFound(f"{what}: not found on the Hub at {endpoint}")
        if status == 412:
            return BranchMoved(
                f"{what}: the branch moved since its head was read, or the given parent is not "
                "its head; the Hub refused the commit (412). Nothing was committed or tagged")
        detail = _one_line(getattr(exc, "server_message", None) or exc)
        if status == 409:
            return HubConflict(f"{what}: the Hub refused it as a conflict (409): {detail}")
        return HubUnavailable(f"could not run: {what}: the Hub at {endpoint} answered "
                              f"{status}: {detail}")
    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is not JSON (a proxy's page)
        return HubUnavailable(f"could not run: {what}: the Hub at {endpoint} answered with a "
                              f"body that is not JSON ({_one_line(exc)})")
    if isinstance(exc, LocalEntryNotFoundError) and is_offline():
        return HubUnavailable(f"could not run: {what}: offline (HF_HUB_OFFLINE=1) and not "
                              f"(completely) in the download cache: {_one_line(exc)}")
    if isinstance(exc, LocalEntryNotFoundError) or _is_transport_error(exc):
        cause = exc.__cause__ or exc.__context__
        reason = _one_line(cause if isinstance(exc, LocalEntryNotFoundError) and cause else exc)
        return HubUnavailable(f"could not run: the Hub at {endpoint} is unreachable "
                              f"({what}: {reason or type(exc).__name__})")
    if isinstance(exc, EntryNotFoundError):
        return HubNotFound(f"{what}: not found on the Hub at {endpoint}")
    if isinstance(exc, HFValidationError):
        return UsageError(f"{what}: {_one_line(exc)}")
    return None


@contextmanager
def hub_errors(what: str, endpoint: str | None = None) -> Iterator[None]:
    """Run Hub calls; re-raise their errors as the toolkit's (see :func:`translate`)."""
    try:
        yield
    except Exception as exc:
        mapped = translate(exc, what, (endpoint or _default_endpoint()).rstrip("/"))
        if mapped is None:
            raise
        raise mapped from exc


def _default_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def is_offline() -> bool:
    """``HF_HUB_OFFLINE`` as ``huggingface_hub`` read it (at its import)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


# -- the legacy LFS path -------------------------------------------------------------------------
_XET_LOCK = threading.Lock()
_xet_off = {"holders": 0, "saved": False}


@contextmanager
def xet_disabled() -> Iterator[None]:
    """``huggingface_hub``'s ``HF_HUB_DISABLE_XET`` in force while the block runs.

    The library reads the variable into ``constants.HF_HUB_DISABLE_XET`` at import and asks the
    constant when it uploads, so the constant is set here and restored afterwards; the
    environment is left alone. Nested and concurrent blocks share one setting (restored when
    the last ends); an upload to another Hub running meanwhile in the same process would take
    the LFS path too.
    """
    from huggingface_hub import constants

    with _XET_LOCK:
        if _xet_off["holders"] == 0:
            _xet_off["saved"] = constants.HF_HUB_DISABLE_XET
            constants.HF_HUB_DISABLE_XET = True
        _xet_off["holders"] += 1
    try:
        yield
    finally:
        with _XET_LOCK:
            _xet_off["holders"] -= 1
            if _xet_off["holders"] == 0:
                constants.HF_HUB_DISABLE_XET = _xet_off["saved"]


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def identifies_as_local_hub(url: str, timeout: float = 5.0) -> bool | None:
    """Whether the server at ``url`` answers as the project's local Hub (its ``Server``
    header); None when it cannot be asked."""
    from huggingface_hub.utils import get_session

    try:
        response = get_session().head(f"{url.rstrip('/')}/api/rcp-data", timeout=timeout)
    except Exception:  # noqa: BLE001 - any failure to ask means "unknown"
        return None
    return response.headers.get("server", "").startswith(LOCAL_HUB_SERVER)


# -- paths and pins ------------------------------------------------------------------------------
@dataclass(frozen=True)
class PinnedRevision:
    repo: str
    requested: str
    sha: str
    is_tag: bool
    is_branch: bool


_REPO_LIKE = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<rev>[^/\s]+))?$")


def missing_release_dir(path: str | Path) -> NotFoundError:
    """"release directory not found", with the ``hf://`` spelling when ``path`` reads like a
    Hub repo id (``OWNER/NAME`` or ``OWNER/NAME@REV``)."""
    text = str(path)
    m = _REPO_LIKE.match(text)
    hint = (f" (a dataset on the Hub is named hf://datasets/{m.group('repo')}@"
            f"{m.group('rev') or 'main'})") if m else ""
    return NotFoundError(f"release directory not found: {text}{hint}")


def parse_hf_path(path: str) -> tuple[str, str] | None:
    """``hf://datasets/OWNER/NAME@REV`` -> (repo, rev); None for a local path."""
    if not str(path).startswith("hf://"):
        return None
    m = _HF_PATH.match(str(path))
    if not m:
        raise UsageError(f"expected hf://datasets/OWNER/NAME@REV, got {path!r}")
    return m.group("repo"), m.group("rev") or "main"


@dataclass(frozen=True)
class RemoteFile:
    """A file of a commit as the Hub lists it: git blob id, and the sha256 of an LFS file."""

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None = None

    @property
    def oid(self) -> str:
        """What identifies the content: the LFS sha256, else the git blob id."""
        return self.lfs_sha256 or self.blob_id


@dataclass(frozen=True)
class CommitEntry:
    """One commit of a branch's history, as the Hub lists it."""

    sha: str
    title: str


# -- the client ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class HubClient:
    """Where the Hub is, how to authenticate, where downloads go.

    ``endpoint`` None: ``huggingface_hub``'s default; ``token`` None: wherever
    ``huggingface_hub`` finds one (``$HF_TOKEN``, the login file), False: none;
    ``cache_dir`` None: the user's Hugging Face cache.
    """

    endpoint: str | None = None
    token: str | bool | None = field(default=None, repr=False)
    cache_dir: Path | None = None

    @classmethod
    def from_env(cls, *, endpoint: str | None = None, token: str | bool | None = None,
                 cache_dir: str | Path | None = None) -> HubClient:
        """The client of this process: ``endpoint``, else ``$HF_ENDPOINT`` (read now), else
        the real Hub."""
        url = endpoint or os.environ.get("HF_ENDPOINT") or REAL_HUB
        return cls(url.rstrip("/"), token, Path(cache_dir) if cache_dir is not None else None)

    @property
    def url(self) -> str:
        """The Hub's base URL (with any userinfo: for requests, never for messages)."""
        return (self.endpoint or _default_endpoint()).rstrip("/")

    @property
    def shown_url(self) -> str:
        """The Hub's base URL as messages and logs show it: userinfo redacted."""
        return redact(self.url)

    @cached_property
    def api(self) -> HfApi:
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.url, token=self.token)

    def errors(self, what: str):
        """:func:`hub_errors` for this client's Hub."""
        return hub_errors(what, self.url)

    @property
    def offline(self) -> bool:
        """``HF_HUB_OFFLINE``: no request reaches the Hub; files come from the cache."""
        return is_offline()

    @cached_property
    def is_local_hub(self) -> bool:
        """Whether the endpoint is the project's local Hub: its answers carry the local Hub's
        ``Server`` header (asked once); a loopback host when it cannot be asked; never the
        real Hub."""
        if self.url == REAL_HUB or self.offline:
            return False
        says = identifies_as_local_hub(self.url)
        return _is_loopback(self.url) if says is None else says

    def uploads(self):
        """The context of an upload: the legacy LFS path (Xet off) for a local Hub."""
        return xet_disabled() if self.is_local_hub else contextlib.nullcontext()

    def refs(self, repo: str) -> GitRefs:
        """Branches and tags of a dataset repo."""
        with self.errors(f"dataset repo {repo}"):
            return self.api.list_repo_refs(repo, repo_type=REPO_TYPE)

    def tags(self, repo: str) -> dict[str, str]:
        """``{tag: sha}`` of a dataset repo."""
        return {t.name: t.target_commit for t in self.refs(repo).tags}

    def resolve(self, repo: str, revision: str) -> PinnedRevision:
        """Resolve a tag, branch or sha of a dataset repo to its commit sha (offline: a full
        sha as it is; a tag or branch needs the Hub)."""
        if self.offline:
            if not SHA_RE.match(revision):
                raise UsageError(f"offline (HF_HUB_OFFLINE=1): give {repo}'s revision as a "
                                 f"full 40-hex commit sha, not {revision!r}; a tag or branch "
                                 "needs the Hub")
            return PinnedRevision(repo, revision, revision, False, False)
        refs = self.refs(repo)
        tags = {t.name: t.target_commit for t in refs.tags}
        branches = {b.name: b.target_commit for b in refs.branches}
        if revision in tags:
            return PinnedRevision(repo, revision, tags[revision], True, False)
        if revision in branches:
            return PinnedRevision(repo, revision, branches[revision], False, True)
        if SHORT_SHA_RE.match(revision):  # a short sha: the commits of the repo's refs
            return PinnedRevision(repo, revision, self._expand_short_sha(
                repo, revision, [*branches.values(), *tags.values()]), False, False)
        with self.errors(f"{repo}@{revision}"):
            info = self.api.dataset_info(repo, revision=revision)
        if not info.sha:
            raise HubUnavailable(f"revision {revision!r} of {repo!r} has no commit sha")
        return PinnedRevision(repo, revision, info.sha, False, False)

    def _expand_short_sha(self, repo: str, prefix: str, heads: Sequence[str]) -> str:
        """The one commit of ``repo`` (reachable from ``heads``, its branches and tags) whose
        sha starts with ``prefix``; refuses an unknown or an ambiguous prefix."""
        found: dict[str, None] = {}
        for head in dict.fromkeys(heads):
            for commit in self.commits(repo, head):
                if commit.sha.startswith(prefix):
                    found[commit.sha] = None
        if not found:
            raise NotFoundError(f"no commit of {repo} (on its branches and tags) starts with "
                                f"{prefix!r}")
        if len(found) > 1:
            raise UsageError(f"short sha {prefix!r} of {repo} is ambiguous: it starts "
                             f"{', '.join(sorted(found))}; give more of it")
        return next(iter(found))

    def files(self, repo: str, sha: str) -> dict[str, RemoteFile]:
        """``{path: RemoteFile}`` of every file of ``repo`` at commit ``sha``."""
        with self.errors(f"the file listing of {repo}@{sha}"):
            entries = list(self.api.list_repo_tree(repo, revision=sha, recursive=True,
                                                   repo_type=REPO_TYPE))
        out = {}
        for e in entries:
            blob = getattr(e, "blob_id", None)
            if blob is None:
                continue  # a folder
            lfs = getattr(e, "lfs", None)
            out[e.path] = RemoteFile(e.path, int(e.size), blob,
                                     getattr(lfs, "sha256", None) if lfs else None)
        return out

    def commits(self, repo: str, sha: str) -> list[CommitEntry]:
        """The history of commit ``sha`` of ``repo``, newest first (``sha`` itself first)."""
        with self.errors(f"the commit list of {repo}@{sha}"):
            entries = self.api.list_repo_commits(repo, revision=sha, repo_type=REPO_TYPE)
        return [CommitEntry(c.commit_id, c.title) for c in entries]

    def download(self, repo: str, sha: str, local_dir: Path | None = None, *,
                 allow_patterns: Sequence[str] | None = None,
                 ignore_patterns: Sequence[str] | None = None) -> Path:
        """The files of ``repo`` at commit ``sha`` (never by tag) that match the patterns
        (default: every file), into the cache or ``local_dir``; offline: from the cache."""
        from huggingface_hub import snapshot_download

        if not SHA_RE.match(sha):
            raise UsageError(f"downloads are made by full commit sha, got {sha!r}")
        with self.errors(f"{repo}@{sha}"):
            local = snapshot_download(
                repo, repo_type=REPO_TYPE, revision=sha, endpoint=self.url, token=self.token,
                cache_dir=str(self.cache_dir) if self.cache_dir else None,
                local_dir=str(local_dir) if local_dir else None,
                allow_patterns=list(allow_patterns) if allow_patterns else None,
                ignore_patterns=list(ignore_patterns) if ignore_patterns else None,
                local_files_only=self.offline)
        log.info("%s %s@%s%s at %s", "found" if self.offline else "downloaded", repo, sha[:12],
                 f" ({', '.join(allow_patterns)})" if allow_patterns else "", local)
        return Path(local)

    def download_file(self, repo: str, filename: str, revision: str) -> Path:
        """One file of ``repo`` at ``revision``; :class:`HubNotFound` when it is absent."""
        with self.errors(f"{filename} of {repo}@{revision}"):
            return Path(self.api.hf_hub_download(
                repo, filename, repo_type=REPO_TYPE, revision=revision,
                cache_dir=str(self.cache_dir) if self.cache_dir else None))

    def commit(self, repo: str, operations: list, *, branch: str, parent: str | None,
               message: str, description: str = "") -> str:
        """ONE commit on ``branch`` on top of ``parent`` (None: a branch without commits);
        :class:`BranchMoved` when the branch is elsewhere. Returns the commit's sha."""
        with self.errors(f"commit on branch {branch} of {repo} with parent {parent}"), \
                self.uploads():
            info = self.api.create_commit(
                repo, operations, commit_message=message, commit_description=description,
                repo_type=REPO_TYPE, revision=branch, parent_commit=parent)
        return info.oid

    def local_release(self, path: str | Path, *, allow_patterns: Sequence[str] | None = None,
                      ignore_patterns: Sequence[str] | None = None
                      ) -> tuple[Path, PinnedRevision | None]:
        """A release folder for ``path``: a local directory as is, or a pinned Hub snapshot of
        the files matching the patterns (default: all)."""
        parsed = parse_hf_path(str(path))
        if parsed is None:
            p = Path(path)
            if not p.is_dir():
                raise NotFoundError(f"release directory not found: {p}")
            return p, None
        repo, rev = parsed
        pin = self.resolve(repo, rev)
        return self.download(repo, pin.sha, allow_patterns=allow_patterns,
                             ignore_patterns=ignore_patterns), pin
