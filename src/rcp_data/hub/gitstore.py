"""Git-backed storage for the local Hub: one bare repository per Hub repository.

Everything goes through git plumbing run as subprocesses (``hash-object``, ``read-tree``,
``update-index``, ``write-tree``, ``commit-tree``, ``update-ref``), so a repository written here
is an ordinary bare git repository: ``git clone`` and ``git push`` work on it directly.

A commit is atomic: objects are written first, then the branch moves with a compare-and-swap
``git update-ref <ref> <new> <old>`` under a per-repository lock, so concurrent writers on one
``parentCommit`` get exactly one winner.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO_TYPES = ("model", "dataset", "space")
DEFAULT_BRANCH = "main"
ZERO_SHA = "0" * 40
STALE_PARENT_MESSAGE = (
    "The branch was updated since you opened this page. Please refresh and try again."
)
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_-])?$")
_COMMITTER = "local-hub"


class HubError(Exception):
    """An error the HTTP layer turns into a status code and, where set, an ``X-Error-Code``."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = dict(headers or {})


def repo_not_found(repo_id: str) -> HubError:
    return HubError(404, f"Repository {repo_id} not found", "RepoNotFound")


def revision_not_found(revision: str) -> HubError:
    return HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")


def entry_not_found(path: str) -> HubError:
    return HubError(404, f"Entry not found: {path}", "EntryNotFound")


@dataclass(frozen=True)
class TreeEntry:
    """One path in a commit's tree."""

    path: str
    kind: str  # "file" or "directory"
    oid: str
    size: int


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
    """One line of a Hub commit: ``file`` (with content), ``deletedFile`` or ``deletedFolder``."""

    kind: str
    path: str
    content: bytes | None = None
    blob: str | None = field(default=None, repr=False)


def iso_date(timestamp: int) -> str:
    """Seconds since the epoch as the Hub's date format (``2024-01-02T03:04:05.000Z``)."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def validate_repo_name(part: str, what: str) -> None:
    if not _NAME_RE.match(part) or part.endswith(".git") or ".." in part:
        raise HubError(400, f"Invalid {what} {part!r}: use letters, digits, '-', '_' and '.'")


def validate_path(path: str) -> str:
    """A repository path: relative, no ``.``/``..``/empty segments, nothing under ``.git``."""
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
        or parts[0] == ".git"
        or "\x00" in path
        or "\n" in path
    ):
        raise HubError(400, f"Invalid path in repository: {path!r}")
    return path


class GitStore:
    """All repositories under ``root``: ``root/<type>s/<namespace>/<name>.git``."""

    def __init__(self, root: Path, git: str = "git") -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.git = shutil.which(git) or git
        self._blob_cache = self.root / ".blob-cache"
        self._tmp = self.root / ".tmp"
        self._tmp.mkdir(exist_ok=True)
        self._locks: dict[Path, threading.Lock] = {}
        self._locks_guard = threading.Lock()
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

    # -- plumbing -------------------------------------------------------------------------------

    def _run(
        self,
        repo: Path,
        *args: str,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        proc = subprocess.run(
            [self.git, "--git-dir", str(repo), *args],
            input=stdin,
            capture_output=True,
            env={**self._env, **(env or {})},
            check=False,
        )
        if check and proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()
            raise HubError(500, f"git {args[0]} failed: {err}")
        return proc

    def _out(self, repo: Path, *args: str, **kw) -> str:
        return self._run(repo, *args, **kw).stdout.decode()

    def _lock(self, repo: Path) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(repo, threading.Lock())

    # -- repositories ---------------------------------------------------------------------------

    def repo_path(self, repo_type: str, repo_id: str) -> Path:
        if repo_type not in REPO_TYPES:
            raise HubError(400, f"Invalid repo type {repo_type!r}")
        namespace, _, name = repo_id.partition("/")
        validate_repo_name(namespace, "namespace")
        validate_repo_name(name, "repository name")
        return self.root / f"{repo_type}s" / namespace / f"{name}.git"

    def existing(self, repo_type: str, repo_id: str) -> Path:
        try:
            path = self.repo_path(repo_type, repo_id)
        except HubError:
            raise repo_not_found(repo_id) from None
        if not (path / "HEAD").is_file():
            raise repo_not_found(repo_id)
        return path

    def create_repo(self, repo_type: str, repo_id: str) -> bool:
        """Create a bare repo whose ``main`` holds one empty commit; False if it already exists."""
        path = self.repo_path(repo_type, repo_id)
        if (path / "HEAD").is_file():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            subprocess.run(
                [
                    self.git,
                    "init",
                    "--bare",
                    "--quiet",
                    f"--initial-branch={DEFAULT_BRANCH}",
                    str(tmp),
                ],
                capture_output=True,
                env=self._env,
                check=True,
            )
            empty_tree = self._out(tmp, "mktree", stdin=b"").strip()
            first = self._out(tmp, "commit-tree", empty_tree, "-m", "initial commit").strip()
            self._run(tmp, "update-ref", f"refs/heads/{DEFAULT_BRANCH}", first, ZERO_SHA)
            try:
                os.rename(tmp, path)
            except OSError:
                return False
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return True

    def delete_repo(self, repo_type: str, repo_id: str) -> None:
        path = self.existing(repo_type, repo_id)
        with self._lock(path):
            trash = Path(tempfile.mkdtemp(prefix=".deleted.", dir=path.parent))
            os.rename(path, trash / path.name)
            shutil.rmtree(trash, ignore_errors=True)

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
        if _SHA_RE.match(revision):
            proc = self._run(repo, "cat-file", "-t", revision, check=False)
            if proc.returncode == 0 and proc.stdout.strip() == b"commit":
                return revision
        refs = {ref.name: ref.target for ref in self.refs(repo)}
        for candidate in (f"refs/heads/{revision}", f"refs/tags/{revision}", revision):
            if candidate.startswith("refs/") and candidate in refs:
                return refs[candidate]
        raise revision_not_found(revision)

    def branch_head(self, repo: Path, branch: str) -> str:
        target = {r.name: r.target for r in self.refs(repo)}.get(f"refs/heads/{branch}")
        if target is None:
            raise revision_not_found(branch)
        return target

    def _check_ref_name(self, repo: Path, ref: str) -> None:
        if self._run(repo, "check-ref-format", ref, check=False).returncode != 0:
            raise HubError(400, f"Invalid reference name {ref.split('/', 2)[-1]!r}")

    def create_tag(self, repo: Path, tag: str, revision: str, message: str | None) -> str:
        """Tag the commit ``revision`` resolves to; 409 if the tag exists. Returns the commit."""
        ref = f"refs/tags/{tag}"
        self._check_ref_name(repo, ref)
        with self._lock(repo):
            target = self.resolve(repo, revision)
            if any(r.name == ref for r in self.refs(repo)):
                raise HubError(409, f"Tag reference {ref} already exists")
            obj = target
            if message:
                stamp = int(datetime.now(UTC).timestamp())
                body = (
                    f"object {target}\ntype commit\ntag {tag}\n"
                    f"tagger {_COMMITTER} <{_COMMITTER}@localhost> {stamp} +0000\n\n{message}\n"
                )
                obj = self._out(repo, "mktag", stdin=body.encode()).strip()
            if self._run(repo, "update-ref", ref, obj, ZERO_SHA, check=False).returncode:
                raise HubError(409, f"Tag reference {ref} already exists")
        return target

    def delete_ref(self, repo: Path, ref: str) -> None:
        with self._lock(repo):
            current = {r.name for r in self.refs(repo)}
            if ref not in current:
                raise revision_not_found(ref.split("/", 2)[-1])
            self._run(repo, "update-ref", "-d", ref)

    def create_branch(self, repo: Path, branch: str, starting_point: str | None) -> str:
        ref = f"refs/heads/{branch}"
        self._check_ref_name(repo, ref)
        with self._lock(repo):
            target = self.resolve(repo, starting_point or DEFAULT_BRANCH)
            if self._run(repo, "update-ref", ref, target, ZERO_SHA, check=False).returncode:
                raise HubError(409, f"Reference {ref} already exists")
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
        assert record is not None
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
                    path=path.decode(),
                    kind="directory" if kind == "tree" else "file",
                    oid=oid,
                    size=0 if size == "-" else int(size),
                )
            )
        return entries

    def entry(self, repo: Path, commit: str, path: str) -> TreeEntry | None:
        path = path.strip("/")
        if not path:
            return TreeEntry("", "directory", self.commit_tree(repo, commit), 0)
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

    def blob_file(self, repo: Path, oid: str) -> Path:
        """A plain file holding blob ``oid`` (cached, content-addressed) for ranged reads."""
        target = self._blob_cache / oid[:2] / oid[2:]
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                subprocess.run(
                    [self.git, "--git-dir", str(repo), "cat-file", "blob", oid],
                    stdout=fh,
                    stderr=subprocess.PIPE,
                    env=self._env,
                    check=True,
                )
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return target

    # -- writing --------------------------------------------------------------------------------

    def _write_blobs(self, repo: Path, operations: list[Operation]) -> None:
        """Write the added contents as blobs in one ``hash-object`` call."""
        additions = [op for op in operations if op.kind == "file"]
        if not additions:
            return
        with tempfile.TemporaryDirectory(prefix="hub-upload-", dir=self._tmp) as tmp:
            names = []
            for i, op in enumerate(additions):
                name = os.path.join(tmp, str(i))
                with open(name, "wb") as fh:
                    fh.write(op.content or b"")
                names.append(name)
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
        if not summary.strip():
            raise HubError(400, "Commit summary must not be empty")
        message = summary.strip() + (f"\n\n{description.strip()}" if description.strip() else "")
        self._write_blobs(repo, ops)
        with self._lock(repo):
            head = self.branch_head(repo, branch)
            if parent_commit and not head.startswith(parent_commit.lower()):
                raise HubError(412, STALE_PARENT_MESSAGE)
            with tempfile.TemporaryDirectory(prefix="hub-index-", dir=self._tmp) as tmp:
                env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
                self._run(repo, "read-tree", head, env=env)
                present = set(self._out(repo, "ls-files", "-z", env=env).split("\x00")) - {""}
                lines = []
                for op in ops:
                    lines.extend(self._index_lines(op, present))
                if lines:
                    self._run(
                        repo, "update-index", "--index-info", stdin="".join(lines).encode(), env=env
                    )
                tree = self._out(repo, "write-tree", env=env).strip()
            if tree == self.commit_tree(repo, head):
                return head, False
            new = self._out(repo, "commit-tree", tree, "-p", head, stdin=message.encode()).strip()
            moved = self._run(repo, "update-ref", f"refs/heads/{branch}", new, head, check=False)
            if moved.returncode != 0:
                raise HubError(412, STALE_PARENT_MESSAGE)
        return new, True

    @staticmethod
    def _index_lines(op: Operation, present: set[str]) -> Iterator[str]:
        """``update-index --index-info`` lines for one operation (mode 0 removes a path)."""
        if op.kind == "file":
            # a file replacing a folder, or a folder path replacing a file: drop the old entries
            for old in [p for p in present if p.startswith(f"{op.path}/")]:
                present.discard(old)
                yield f"0 {ZERO_SHA}\t{old}\n"
            parts = op.path.split("/")
            for i in range(1, len(parts)):
                prefix = "/".join(parts[:i])
                if prefix in present:
                    present.discard(prefix)
                    yield f"0 {ZERO_SHA}\t{prefix}\n"
            present.add(op.path)
            yield f"100644 {op.blob}\t{op.path}\n"
        elif op.kind == "deletedFile":
            if op.path not in present:
                raise HubError(
                    404, f"A file with this name doesn't exist: {op.path}", "EntryNotFound"
                )
            present.discard(op.path)
            yield f"0 {ZERO_SHA}\t{op.path}\n"
        elif op.kind == "deletedFolder":
            prefix = op.path.rstrip("/") + "/"
            doomed = [p for p in present if p.startswith(prefix)]
            if not doomed:
                raise HubError(
                    404, f"A folder with this name doesn't exist: {op.path}", "EntryNotFound"
                )
            for old in doomed:
                present.discard(old)
                yield f"0 {ZERO_SHA}\t{old}\n"
        else:
            raise HubError(400, f"Unsupported commit operation {op.kind!r}")


def decode_content(value: dict) -> bytes:
    """The bytes of a ``file`` commit line (``encoding`` base64 or utf-8)."""
    content = value.get("content", "")
    if value.get("encoding", "utf-8") == "base64":
        try:
            return base64.b64decode(content, validate=True)
        except ValueError as exc:
            raise HubError(400, f"Invalid base64 content for {value.get('path')!r}") from exc
    return str(content).encode()
