"""Git-backed storage for the local Hub: one bare repository per Hub repository.

Everything goes through git plumbing run as subprocesses (``hash-object``, ``read-tree``,
``update-index``, ``write-tree``, ``commit-tree``, ``update-ref``), so a repository written here
is an ordinary bare git repository: ``git clone`` and ``git push`` work on it directly. LFS
objects live beside it (``rcp_data.hub.lfs``); the tree holds their git-lfs pointer files.

A commit is atomic: objects are written first, then the branch moves with a compare-and-swap
``git update-ref <ref> <new> <old>`` under a per-repository lock, so concurrent writers on one
``parentCommit`` get exactly one winner.

After a crash: ``recover()`` (run at start-up, once ``lock_root()`` holds the root, so the
server that wrote there is gone) removes the server's temporary files (``.tmp/hub-*``) and every
ref lock, all left by a killed writer whatever their age; a lock found later while moving a ref is
removed once it is ``STALE_LOCK_SECONDS`` old (no git holds a ref lock that long), so a dead
writer's ``refs/heads/main.lock`` never turns commits into 412s. ``lock_root()`` makes sure one
server at a time serves a root.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from rcp_data.hub.errors import (
    HubError,
    entry_not_found,
    repo_not_found,
    revision_not_found,
)
from rcp_data.hub.lfs import (
    DEFAULT_CHUNK_SIZE,
    POINTER_MAX_SIZE,
    LfsPointer,
    LfsStore,
    parse_pointer,
    pointer_bytes,
)
from rcp_data.hub.names import (
    SHA_RE,
    check_ref_format,
    validate_path,
    validate_ref_name,
    validate_repo_name,
)

log = logging.getLogger(__name__)

REPO_TYPES = ("model", "dataset", "space")
DEFAULT_BRANCH = "main"
ZERO_SHA = "0" * 40
STALE_PARENT_MESSAGE = (
    "The branch was updated since you opened this page. Please refresh and try again."
)
STALE_LOCK_SECONDS = 2.0
TMP_PREFIX = "hub-"
_COMMITTER = "local-hub"
_POINTER_CACHE_MAX = 200_000
_UNKNOWN = object()

__all__ = [
    "DEFAULT_BRANCH",
    "REPO_TYPES",
    "CommitRecord",
    "GitStore",
    "Operation",
    "Ref",
    "TreeEntry",
    "iso_date",
    "root_refs",
    "root_served",
]


@dataclass(frozen=True)
class TreeEntry:
    """One path in a commit's tree; ``size`` is the content's (the LFS object's for a pointer)."""

    path: str
    kind: str  # "file" or "directory"
    oid: str
    size: int
    lfs: LfsPointer | None = None


@dataclass(frozen=True)
class CommitRecord:
    """One commit, as ``git log`` reports it."""

    sha: str
    author: str
    timestamp: int
    title: str
    message: str

    @property
    def date(self) -> str:
        return iso_date(self.timestamp)


@dataclass(frozen=True)
class Ref:
    """A git ref with the commit it finally points at (tags peeled)."""

    name: str  # full name, e.g. refs/tags/v1
    target: str  # commit sha


@dataclass
class Operation:
    """One line of a Hub commit: ``file`` (content in ``source`` or ``content``), ``lfsFile``
    (an uploaded object ``oid`` of ``size`` bytes), ``deletedFile`` or ``deletedFolder``."""

    kind: str
    path: str
    content: bytes | None = None
    source: Path | None = None
    oid: str | None = None
    size: int | None = None
    blob: str | None = None


def iso_date(timestamp: int) -> str:
    """Seconds since the epoch as the Hub's date format (``2024-01-02T03:04:05.000Z``)."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class GitStore:
    """All repositories under ``root``: ``root/<type>s/<namespace>/<name>.git``."""

    def __init__(self, root: Path, git: str = "git", lfs_chunk_size: int | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.git = shutil.which(git) or git
        self._blob_cache = self.root / ".blob-cache"
        self.tmp = self.root / ".tmp"
        self.tmp.mkdir(exist_ok=True)
        self.lfs = LfsStore(self.tmp, lfs_chunk_size or DEFAULT_CHUNK_SIZE)
        self._locks: dict[Path, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._pointers: dict[str, LfsPointer | None] = {}
        self._root_lock: int | None = None
        self._env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "HOME": str(self.root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_AUTHOR_NAME": _COMMITTER,
            "GIT_AUTHOR_EMAIL": f"{_COMMITTER}@localhost",
            "GIT_COMMITTER_NAME": _COMMITTER,
            "GIT_COMMITTER_EMAIL": f"{_COMMITTER}@localhost",
        }

    # -- life cycle -----------------------------------------------------------------------------

    def lock_root(self) -> None:
        """Hold ``root/.lock`` while serving: a second server on the same root is refused."""
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RuntimeError(f"another local Hub is serving {self.root}") from None
        self._root_lock = fd

    def unlock_root(self) -> None:
        fd, self._root_lock = self._root_lock, None
        if fd is not None:
            os.close(fd)  # closing releases the lock

    def recover(self) -> None:
        """Start-up cleaning after a crash or a kill: temporary files and stale git locks."""
        removed = 0
        for leftover in self.tmp.glob(f"{TMP_PREFIX}*"):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
            removed += 1
        if self._blob_cache.is_dir():
            for leftover in self._blob_cache.glob("*/.tmp-*"):
                leftover.unlink(missing_ok=True)
                removed += 1
        for repo in self._repositories():
            for lock in [*repo.glob("refs/**/*.lock"), repo / "packed-refs.lock", repo / "HEAD.lock"]:
                if lock.is_file():
                    lock.unlink(missing_ok=True)
                    removed += 1
        if removed:
            log.info("removed %d temporary files and stale locks left by a previous run", removed)

    def _repositories(self) -> Iterator[Path]:
        for rtype in REPO_TYPES:
            yield from (self.root / f"{rtype}s").glob("*/*.git")

    def all_refs(self) -> dict[str, dict[str, str]]:
        """``{"datasets/OWNER/NAME": {ref name: commit sha}}`` of every repository here."""
        return {repo.relative_to(self.root).as_posix().removesuffix(".git"):
                {ref.name: ref.target for ref in self.refs(repo)}
                for repo in sorted(self._repositories())}

    @staticmethod
    def _stale(lock: Path) -> bool:
        try:
            return time.time() - lock.stat().st_mtime >= STALE_LOCK_SECONDS
        except OSError:
            return False

    # -- plumbing -------------------------------------------------------------------------------

    def _run(
        self,
        repo: Path,
        *args: str,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        if any("\x00" in arg for arg in args):  # no git argument can hold one
            raise HubError(400, "Invalid NUL character in the request")
        proc = subprocess.run(
            [self.git, "--git-dir", str(repo), *args],
            input=stdin,
            capture_output=True,
            env={**self._env, **(env or {})},
            check=False,
        )
        if check and proc.returncode != 0:
            # the details (paths on this disk) go to the server's log, never to the client
            log.error("git %s in %s failed: %s", args[0], repo, proc.stderr.decode(errors="replace"))
            raise HubError(500, f"Internal error: git {args[0]} failed")
        return proc

    def git_environment(self) -> dict[str, str]:
        """The environment every git this store runs gets (no user or system config)."""
        return dict(self._env)

    def _out(self, repo: Path, *args: str, **kw) -> str:
        return self._run(repo, *args, **kw).stdout.decode()

    def _lock(self, repo: Path) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(repo, threading.Lock())

    def _temp_dir(self, kind: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{kind}-", dir=self.tmp))

    @contextlib.contextmanager
    def workdir(self, kind: str) -> Iterator[Path]:
        """A temporary folder under ``.tmp`` (removed afterwards, or at the next start-up)."""
        path = self._temp_dir(kind)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    # -- repositories ---------------------------------------------------------------------------

    def repo_path(self, repo_type: str, repo_id: str) -> Path:
        if repo_type not in REPO_TYPES:
            raise HubError(400, f"Invalid repo type {repo_type[:20]!r}")
        namespace, _, name = repo_id.partition("/")
        validate_repo_name(namespace, "namespace")
        validate_repo_name(name, "repository name")
        return self.root / f"{repo_type}s" / namespace / f"{name}.git"

    def existing(self, repo_type: str, repo_id: str) -> Path:
        try:
            path = self.repo_path(repo_type, repo_id)
        except HubError:
            raise repo_not_found(repo_id[:200]) from None
        if not (path / "HEAD").is_file():
            raise repo_not_found(repo_id)
        return path

    def create_repo(self, repo_type: str, repo_id: str) -> bool:
        """Create a bare repo whose ``main`` holds one empty commit; False if it already exists."""
        path = self.repo_path(repo_type, repo_id)
        if (path / "HEAD").is_file():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.workdir("newrepo") as work:
            tmp = work / path.name
            proc = subprocess.run(
                [self.git, "init", "--bare", "--quiet", f"--initial-branch={DEFAULT_BRANCH}", str(tmp)],
                capture_output=True,
                env=self._env,
                check=False,
            )
            if proc.returncode != 0:
                log.error("git init failed: %s", proc.stderr.decode(errors="replace"))
                raise HubError(500, "Internal error: git init failed")
            empty_tree = self._out(tmp, "mktree", stdin=b"").strip()
            first = self._out(tmp, "commit-tree", empty_tree, "-m", "initial commit").strip()
            self._run(tmp, "update-ref", f"refs/heads/{DEFAULT_BRANCH}", first, ZERO_SHA)
            try:
                os.rename(tmp, path)
            except OSError:
                return False
        return True

    def delete_repo(self, repo_type: str, repo_id: str) -> None:
        path = self.existing(repo_type, repo_id)
        with self._lock(path), self.workdir("deleted") as trash:
            os.rename(path, trash / path.name)

    # -- refs and revisions ---------------------------------------------------------------------

    def refs(self, repo: Path) -> list[Ref]:
        fmt = "%(refname)%00%(objectname)%00%(*objectname)"
        out = self._out(repo, "for-each-ref", f"--format={fmt}")
        refs = []
        for line in out.splitlines():
            name, obj, peeled = line.split("\x00")
            refs.append(Ref(name, peeled or obj))
        return refs

    def resolve(self, repo: Path, revision: str) -> str:
        """A branch, tag, full ref name (``refs/...``) or full commit sha -> commit sha."""
        if SHA_RE.match(revision):
            proc = self._run(repo, "cat-file", "-t", revision, check=False)
            if proc.returncode == 0 and proc.stdout.strip() == b"commit":
                return revision
        refs = {ref.name: ref.target for ref in self.refs(repo)}
        if revision.startswith("refs/"):
            candidates = [revision]
        else:
            candidates = [f"refs/heads/{revision}", f"refs/tags/{revision}"]
        for candidate in candidates:
            if candidate in refs:
                return refs[candidate]
        raise revision_not_found(revision)

    def branch_head(self, repo: Path, branch: str) -> str:
        target = {r.name: r.target for r in self.refs(repo)}.get(f"refs/heads/{branch}")
        if target is None:
            raise revision_not_found(branch)
        return target

    def _ref_value(self, repo: Path, ref: str) -> str | None:
        proc = self._run(repo, "rev-parse", "--verify", "--quiet", ref, check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def _update_ref(self, repo: Path, ref: str, new: str | None, old: str, conflict: HubError) -> None:
        """Move (``new``) or delete (None) ``ref`` if it is at ``old`` (ZERO_SHA: absent).

        ``conflict`` when the ref is elsewhere; a stale lock is removed and the move retried; a
        live lock held past the wait is 503."""
        args = ["update-ref", ref, new, old] if new else ["update-ref", "-d", ref, old]
        for attempt in range(2):
            if self._run(repo, *args, check=False).returncode == 0:
                return
            if self._ref_value(repo, ref) != (None if old == ZERO_SHA else old):
                raise conflict
            if attempt == 0 and not self._clear_stale_lock(repo, ref):
                break
        raise HubError(
            503,
            "The repository is locked by another git process; try again",
            headers={"Retry-After": "2"},
        )

    def _clear_stale_lock(self, repo: Path, ref: str) -> bool:
        """Remove a lock on ``ref`` once it is stale (waiting for that); whether one was there."""
        locks = [repo / f"{ref}.lock", repo / "packed-refs.lock"]
        if not any(lock.exists() for lock in locks):
            return False
        deadline = time.monotonic() + STALE_LOCK_SECONDS + 1
        while time.monotonic() < deadline:
            present = [lock for lock in locks if lock.exists()]
            if not present:
                return True  # its git finished
            stale = [lock for lock in present if self._stale(lock)]
            for lock in stale:
                log.warning("removing the stale git lock %s (a killed writer's)", lock)
                lock.unlink(missing_ok=True)
            if stale:
                return True
            time.sleep(0.1)
        return False

    def _check_new_ref(self, repo: Path, kind: str, name: str) -> str:
        """Validate a new branch/tag name; 409 when a branch and a tag would share it."""
        validate_ref_name(name, kind)
        other = "tags" if kind == "heads" else "heads"
        if any(r.name == f"refs/{other}/{name}" for r in self.refs(repo)):
            what = "a tag" if other == "tags" else "a branch"
            raise HubError(409, f"Reference name {name!r} is already used by {what}")
        return f"refs/{kind}/{name}"

    def create_tag(self, repo: Path, tag: str, revision: str, message: str | None) -> str:
        """Tag the commit ``revision`` resolves to; 409 if the tag exists. Returns the commit."""
        with self._lock(repo):
            ref = self._check_new_ref(repo, "tags", tag)
            target = self.resolve(repo, revision)
            exists = HubError(409, f"Tag reference {ref} already exists")
            if any(r.name == ref for r in self.refs(repo)):
                raise exists
            obj = target
            if message:
                stamp = int(datetime.now(UTC).timestamp())
                body = (
                    f"object {target}\ntype commit\ntag {tag}\n"
                    f"tagger {_COMMITTER} <{_COMMITTER}@localhost> {stamp} +0000\n\n{message}\n"
                )
                obj = self._out(repo, "mktag", stdin=body.encode()).strip()
            self._update_ref(repo, ref, obj, ZERO_SHA, exists)
        return target

    def delete_ref(self, repo: Path, ref: str) -> None:
        if not check_ref_format(ref):
            raise revision_not_found(ref.split("/", 2)[-1])
        with self._lock(repo):
            current = self._ref_value(repo, ref)
            if current is None:
                raise revision_not_found(ref.split("/", 2)[-1])
            self._update_ref(repo, ref, None, current, revision_not_found(ref.split("/", 2)[-1]))

    def create_branch(self, repo: Path, branch: str, starting_point: str | None) -> str:
        with self._lock(repo):
            ref = self._check_new_ref(repo, "heads", branch)
            target = self.resolve(repo, starting_point or DEFAULT_BRANCH)
            self._update_ref(
                repo, ref, target, ZERO_SHA, HubError(409, f"Reference {ref} already exists")
            )
        return target

    # -- reading --------------------------------------------------------------------------------

    def commit_tree(self, repo: Path, commit: str) -> str:
        return self._out(repo, "rev-parse", f"{commit}^{{tree}}").strip()

    def log(self, repo: Path, commit: str) -> list[CommitRecord]:
        """The whole chain of commits reachable from ``commit``, newest first."""
        fmt = "%H%x00%an%x00%ct%x00%s%x00%b%x1e"
        out = self._out(repo, "log", f"--format={fmt}", commit)
        records = []
        for chunk in out.split("\x1e"):
            chunk = chunk.strip("\n")
            if not chunk:
                continue
            sha, author, stamp, title, body = chunk.split("\x00")
            records.append(CommitRecord(sha, author, int(stamp), title, body.strip("\n")))
        return records

    def log_head(self, repo: Path, commit: str) -> CommitRecord:
        record = self.last_commit(repo, commit, None)
        if record is None:
            raise revision_not_found(commit)
        return record

    def last_commit(self, repo: Path, commit: str, path: str | None) -> CommitRecord | None:
        """The newest commit reachable from ``commit`` touching ``path`` (any when None)."""
        fmt = "%H%x00%an%x00%ct%x00%s%x00%b"
        spec = ["--", path] if path is not None else []
        out = self._out(repo, "log", "-1", f"--format={fmt}", commit, *spec)
        if not out.strip():
            return None
        sha, author, stamp, title, body = out.split("\x00")
        return CommitRecord(sha, author, int(stamp), title, body.strip("\n"))

    def _ls_tree(self, repo: Path, commit: str, *args: str) -> list[TreeEntry]:
        out = self._run(repo, "ls-tree", "-l", "-z", "--full-tree", *args).stdout
        entries = []
        for record in out.split(b"\x00"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, oid, size = meta.decode().split()
            if kind == "commit":  # submodule: not a Hub concept
                continue
            entries.append(
                TreeEntry(
                    path=path.decode(errors="replace"),
                    kind="directory" if kind == "tree" else "file",
                    oid=oid,
                    size=0 if size == "-" else int(size),
                )
            )
        return self._with_lfs(repo, entries)

    def _with_lfs(self, repo: Path, entries: list[TreeEntry]) -> list[TreeEntry]:
        """Entries whose blob is a pointer to a stored LFS object carry it (and its size)."""
        small = {e.oid for e in entries if e.kind == "file" and e.size < POINTER_MAX_SIZE}
        known: dict[str, LfsPointer | None] = {}
        for oid in small:  # the cache maps blob ids (immutable) to what they point to
            found = self._pointers.get(oid, _UNKNOWN)
            if found is not _UNKNOWN:
                known[oid] = found
        missing = [oid for oid in small if oid not in known]
        if missing:
            blobs = self._read_small_blobs(repo, missing)
            parsed = {oid: parse_pointer(blobs.get(oid, b"")) for oid in missing}
            known.update(parsed)
            with self._locks_guard:
                if len(self._pointers) > _POINTER_CACHE_MAX:
                    self._pointers.clear()
                self._pointers.update(parsed)
        out = []
        for entry in entries:
            pointer = known.get(entry.oid)
            if pointer is not None and self.lfs.stored_size(repo, pointer.oid) == pointer.size:
                entry = replace(entry, size=pointer.size, lfs=pointer)
            out.append(entry)
        return out

    def _read_small_blobs(self, repo: Path, oids: list[str]) -> dict[str, bytes]:
        out = self._run(repo, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode())
        data, pos, found = out.stdout, 0, {}
        while pos < len(data):
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            pos = end + 1
            if len(header) != 3:  # "<oid> missing"
                continue
            size = int(header[2])
            found[header[0].decode()] = data[pos : pos + size]
            pos += size + 1
        return found

    @staticmethod
    def _readable(path: str) -> bool:
        """Whether ``path`` can name an entry (no empty, ``.`` or ``..`` component, no NUL)."""
        return "\x00" not in path and not any(p in ("", ".", "..") for p in path.split("/"))

    def entry(self, repo: Path, commit: str, path: str) -> TreeEntry | None:
        path = path.strip("/")
        if not path:
            return TreeEntry("", "directory", self.commit_tree(repo, commit), 0)
        if not self._readable(path):
            return None
        found = self._ls_tree(repo, commit, commit, "--", path)
        return found[0] if found and found[0].path == path else None

    def list_tree(self, repo: Path, commit: str, path: str, recursive: bool) -> list[TreeEntry]:
        """Entries under directory ``path`` ('' for the root); 404 if it is not a directory."""
        path = path.strip("/")
        if path:
            entry = self.entry(repo, commit, path)
            if entry is None or entry.kind != "directory":
                raise entry_not_found(path)
        args = ["-r", "-t"] if recursive else []
        spec = [f"{path}/"] if path else []
        entries = self._ls_tree(repo, commit, *args, commit, "--", *spec)
        return [e for e in entries if e.path != path]

    def files(self, repo: Path, commit: str) -> list[TreeEntry]:
        return [e for e in self._ls_tree(repo, commit, "-r", commit) if e.kind == "file"]

    def read_blob(self, repo: Path, oid: str) -> bytes:
        return self._run(repo, "cat-file", "blob", oid).stdout

    def content_file(self, repo: Path, entry: TreeEntry) -> Path:
        """A plain file holding ``entry``'s content: the LFS object, or the (cached) blob."""
        if entry.lfs is not None:
            return self.lfs.object_path(repo, entry.lfs.oid)
        return self.blob_file(repo, entry.oid)

    def blob_file(self, repo: Path, oid: str) -> Path:
        """A plain file holding blob ``oid`` (cached, content-addressed) for ranged reads."""
        target = self._blob_cache / oid[:2] / oid[2:]
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                proc = subprocess.run(
                    [self.git, "--git-dir", str(repo), "cat-file", "blob", oid],
                    stdout=fh,
                    stderr=subprocess.PIPE,
                    env=self._env,
                    check=False,
                )
            if proc.returncode != 0:
                log.error("git cat-file %s failed: %s", oid, proc.stderr.decode(errors="replace"))
                raise HubError(500, "Internal error: git cat-file failed")
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return target

    # -- writing --------------------------------------------------------------------------------

    def _write_blobs(self, repo: Path, operations: list[Operation], work: Path) -> None:
        """Write the added contents (inline files and LFS pointers) as blobs in one
        ``hash-object`` call."""
        additions = [op for op in operations if op.kind in ("file", "lfsFile")]
        if not additions:
            return
        names = []
        for i, op in enumerate(additions):
            if op.source is None:
                op.source = work / f"content-{i}"
                op.source.write_bytes(op.content or b"")
            names.append(str(op.source))
        out = self._out(
            repo,
            "hash-object",
            "-w",
            "--no-filters",
            "--stdin-paths",
            stdin="\n".join(names).encode() + b"\n",
        )
        for op, oid in zip(additions, out.split(), strict=True):
            op.blob = oid

    def _lfs_pointer(self, repo: Path, op: Operation) -> bytes:
        stored = self.lfs.stored_size(repo, op.oid or "")
        if stored is None or (op.size is not None and op.size != stored):
            raise HubError(
                400,
                f"LFS object {op.oid} for {op.path!r} was not uploaded"
                + ("" if stored is None else f" with size {op.size}"),
            )
        return pointer_bytes(op.oid or "", stored)

    def commit(
        self,
        repo: Path,
        branch: str,
        operations: Iterable[Operation],
        summary: str,
        description: str = "",
        parent_commit: str | None = None,
    ) -> tuple[str, bool]:
        """Apply ``operations`` on ``branch``; returns (commit sha, whether a commit was made).

        A stale ``parent_commit`` raises 412; a commit that leaves the tree unchanged makes no
        commit and returns the current head.
        """
        ops = list(operations)
        for op in ops:
            validate_path(op.path.rstrip("/") if op.kind == "deletedFolder" else op.path)
            if op.kind == "lfsFile":
                op.content, op.source = self._lfs_pointer(repo, op), None
        if not summary.strip():
            raise HubError(400, "Commit summary must not be empty")
        message = summary.strip() + (f"\n\n{description.strip()}" if description.strip() else "")
        with self.workdir("index") as work:
            self._write_blobs(repo, ops, work)
            with self._lock(repo):
                head = self.branch_head(repo, branch)
                if parent_commit and not head.startswith(parent_commit.lower()):
                    raise HubError(412, STALE_PARENT_MESSAGE)
                env = {"GIT_INDEX_FILE": str(work / "index")}
                self._run(repo, "read-tree", head, env=env)
                listed = self._run(repo, "ls-files", "-z", env=env).stdout
                present = {p.decode() for p in listed.split(b"\x00") if p}
                records = b"".join(
                    line.encode() for op in ops for line in self._index_lines(op, present)
                )
                if records:
                    self._run(repo, "update-index", "-z", "--index-info", stdin=records, env=env)
                tree = self._out(repo, "write-tree", env=env).strip()
                if tree == self.commit_tree(repo, head):
                    return head, False
                new = self._out(
                    repo, "commit-tree", tree, "-p", head, stdin=message.encode()
                ).strip()
                self._update_ref(
                    repo, f"refs/heads/{branch}", new, head, HubError(412, STALE_PARENT_MESSAGE)
                )
        return new, True

    @staticmethod
    def _index_lines(op: Operation, present: set[str]) -> Iterator[str]:
        """``update-index -z --index-info`` records for one operation (mode 0 removes a path)."""
        if op.kind in ("file", "lfsFile"):
            # a file replacing a folder, or a folder path replacing a file: drop the old entries
            for old in [p for p in present if p.startswith(f"{op.path}/")]:
                present.discard(old)
                yield f"0 {ZERO_SHA}\t{old}\x00"
            parts = op.path.split("/")
            for i in range(1, len(parts)):
                prefix = "/".join(parts[:i])
                if prefix in present:
                    present.discard(prefix)
                    yield f"0 {ZERO_SHA}\t{prefix}\x00"
            present.add(op.path)
            yield f"100644 {op.blob}\t{op.path}\x00"
        elif op.kind == "deletedFile":
            if op.path not in present:
                raise HubError(
                    404, f"A file with this name doesn't exist: {op.path}", "EntryNotFound"
                )
            present.discard(op.path)
            yield f"0 {ZERO_SHA}\t{op.path}\x00"
        elif op.kind == "deletedFolder":
            prefix = op.path.rstrip("/") + "/"
            doomed = [p for p in present if p.startswith(prefix)]
            if not doomed:
                raise HubError(
                    404, f"A folder with this name doesn't exist: {op.path}", "EntryNotFound"
                )
            for old in doomed:
                present.discard(old)
                yield f"0 {ZERO_SHA}\t{old}\x00"
        else:
            raise HubError(400, f"Unsupported commit operation {op.kind!r}")


def root_served(root: Path) -> bool:
    """Whether a local Hub is serving ``root`` now: one holds ``root/.lock``
    (:meth:`GitStore.lock_root`) while it runs; the kernel drops the lock of a killed one."""
    lock = Path(root) / ".lock"
    if not lock.is_file():
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)            # closing releases a lock taken here
    return False


def root_refs(root: Path) -> dict[str, dict[str, str]]:
    """Every ref of every repository under ``root`` (:meth:`GitStore.all_refs`); ``{}`` when
    ``root`` holds none."""
    if not Path(root).is_dir():
        return {}
    return GitStore(root).all_refs()
