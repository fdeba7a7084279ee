"""A commit of a Hub repository fetched over git's smart HTTP, every object id recomputed by git.

``fetch_tree(url, sha, token=...)`` fetches commit ``sha`` (and everything it reaches) from the
repository at ``url`` into a private temporary bare repository, with git's own code: index-pack
recomputes the id of every object from its bytes (``transfer.fsckObjects``), and ``git fsck
--strict`` then checks the whole graph. The commit id therefore proves the tree, and the tree
every file's blob: the files the Hub serves can be compared with the blob ids (and, for LFS
files, the pointers' sha256 and size) of the tree the pinned commit names. The temporary
repository is removed before the function returns.

Credentials never reach a command line or a URL git writes: the URL's userinfo is taken out,
and a token goes to git as ``http.extraHeader`` through ``GIT_CONFIG_*`` environment variables.
No user or system git configuration is read, and git never prompts.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit, urlunsplit

from rcp_data.core.errors import GitUnavailable  # defined in core.errors; kept importable here

#: A blob this small may be a git-lfs pointer (the spec's limit is 1024 bytes).
POINTER_MAX_SIZE = 1024
_POINTER_VERSION = b"version https://git-lfs.github.com/spec/v1\n"
_POINTER = re.compile(rb"^version https://git-lfs\.github\.com/spec/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*$")
_OID = re.compile(rb"^oid sha256:([0-9a-f]{64})$", re.MULTILINE)
_SIZE = re.compile(rb"^size ([0-9]{1,19})$", re.MULTILINE)
_OBJECT_ID = re.compile(r"\b[0-9a-f]{40}\b")
#: git's wire protocol version asked for (v2 lets a client want any commit a ref reaches).
PROTOCOL_VERSION = "2"
#: What git says when a server will not send a commit asked for by its sha alone.
_UNADVERTISED = ("unadvertised object", "not our ref", "couldn't find remote ref")


@dataclass(frozen=True)
class GitFile:
    """One file of the fetched tree: its mode and blob id, and the LFS object a pointer names."""

    path: str
    mode: str
    blob_id: str
    size: int
    lfs_sha256: str | None = None
    lfs_size: int | None = None


@dataclass(frozen=True)
class FetchedTree:
    """What the fetch proved: the commit fetched, its files, the objects recomputed; or, when
    git refused the objects served, ``errors`` (git's lines, credentials redacted)."""

    sha: str
    files: dict[str, GitFile] = field(default_factory=dict)
    objects: int = 0
    others: list[str] = field(default_factory=list)   # entries neither blob nor tree
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def object_ids(self) -> set[str]:
        """The 40-hex object ids git named in its errors."""
        return {m for line in self.errors for m in _OBJECT_ID.findall(line)}


def repo_git_url(endpoint: str, repo: str, repo_type: str = "dataset") -> str:
    """The URL ``git clone`` reads a Hub repository from (``/datasets/OWNER/NAME.git``)."""
    prefix = {"dataset": "datasets/", "space": "spaces/", "model": ""}[repo_type]
    return f"{endpoint.rstrip('/')}/{prefix}{repo}.git"


def _credentials(url: str, token: str | None) -> tuple[str, str | None]:
    """The URL without userinfo, and the Authorization header to send (None: none)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    if token:
        return bare, f"Authorization: Bearer {token}"
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        basic = base64.b64encode(unquote(userinfo).encode()).decode()
        return bare, f"Authorization: Basic {basic}"
    return bare, None


def _environment(home: str, header: str | None) -> dict[str, str]:
    config = [("transfer.fsckObjects", "true"), ("fetch.fsckObjects", "true"),
              ("protocol.version", PROTOCOL_VERSION), ("core.askPass", "")]
    if header is not None:
        config.append(("http.extraHeader", header))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": home,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1", "GIT_ASKPASS": "",
           "GIT_CONFIG_COUNT": str(len(config))}
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                 "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO"):
        if name in os.environ:
            env[name] = os.environ[name]
    for i, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def _lines(stderr: bytes, secrets: tuple[str, ...]) -> list[str]:
    out = []
    for line in stderr.decode(errors="replace").splitlines():
        line = line.strip()
        for secret in secrets:
            if secret:
                line = line.replace(secret, "***")
        line = re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"<>]*@", r"\1***@", line)
        if line:
            out.append(line)
    return out


def fetch_tree(url: str, sha: str, *, token: str | None = None, git: str = "git",
               timeout: float = 3600.0) -> FetchedTree:
    """Fetch commit ``sha`` of the repository at ``url`` (see the module doc) and list its tree.

    Raises :class:`GitUnavailable` when git cannot read the repository at all (no git on this
    machine, the endpoint answers no smart HTTP, 404, unreachable); objects that do not hold up
    (an id git recomputes otherwise, a missing object, a failed fsck) are a
    :class:`FetchedTree` with ``errors``."""
    exe = shutil.which(git)
    if exe is None:
        raise GitUnavailable("--git needs git on this machine: no 'git' on PATH")
    bare_url, header = _credentials(url, token)
    secrets = tuple(s for s in (token, header) if s)
    try:
        return _fetch(exe, bare_url, sha, header, secrets, timeout)
    except subprocess.TimeoutExpired:
        raise GitUnavailable(f"--git: fetching {_shown(bare_url)} took longer than "
                             f"{timeout:.0f} s") from None
    except subprocess.CalledProcessError as exc:
        return FetchedTree(sha, errors=_lines(exc.stderr or b"", secrets)
                           or [f"git {exc.cmd[3] if len(exc.cmd) > 3 else ''} failed"])


def _fetch(exe: str, bare_url: str, sha: str, header: str | None, secrets: tuple[str, ...],
           timeout: float) -> FetchedTree:
    with tempfile.TemporaryDirectory(prefix="rcp-verify-git-") as tmp:
        env = _environment(tmp, header)
        repo = os.path.join(tmp, "fetched.git")

        def run(*args: str, check: bool = False,
                stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run([exe, "--git-dir", repo, *args], capture_output=True,
                                  input=stdin, env=env, check=check, timeout=timeout)

        subprocess.run([exe, "init", "--bare", "--quiet", repo], capture_output=True, env=env,
                       check=True)
        probe = run("ls-remote", "--", bare_url)
        if probe.returncode != 0:
            why = (_lines(probe.stderr, secrets) or ["git ls-remote failed"])[-1]
            raise GitUnavailable(f"--git: the Hub does not serve {_shown(bare_url)} over git's "
                                 f"smart HTTP ({why})")
        fetched = run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", bare_url,
                      f"+{sha}:refs/rcp-verify/pinned")
        if fetched.returncode != 0 and any(m in fetched.stderr.decode(errors="replace")
                                           for m in _UNADVERTISED):
            # a server that sends only what its refs name: every branch and tag, then the commit
            fetched = run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--",
                          bare_url, "+refs/heads/*:refs/rcp-verify/heads/*",
                          "+refs/tags/*:refs/rcp-verify/tags/*")
        if fetched.returncode != 0:
            return FetchedTree(sha, errors=_lines(fetched.stderr, secrets)
                               or [f"git fetch exited {fetched.returncode}"])
        kind = run("cat-file", "-t", sha)
        if kind.stdout.strip() != b"commit":
            return FetchedTree(sha, errors=[f"{sha} is not a commit the Hub's git refs reach"])
        fsck = run("fsck", "--strict", "--no-dangling", "--no-progress")
        if fsck.returncode != 0:
            return FetchedTree(sha, errors=_lines(fsck.stderr + fsck.stdout, secrets)
                               or [f"git fsck exited {fsck.returncode}"])
        files, others = _tree(run, sha)
        count = run("count-objects", "-v").stdout.decode()
        objects = sum(int(v) for k, v in re.findall(r"^(count|in-pack): (\d+)$", count,
                                                    re.MULTILINE))
    return FetchedTree(sha, files, objects, others)


def _shown(url: str) -> str:
    return url.removesuffix(".git")


def _tree(run, sha: str) -> tuple[dict[str, GitFile], list[str]]:
    """Every entry of the commit's tree: files (with the LFS pointers read) and the others."""
    out = run("ls-tree", "-r", "-l", "-z", "--full-tree", sha, check=True).stdout
    files: dict[str, GitFile] = {}
    others: list[str] = []
    small: list[str] = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, oid, size = meta.decode().split()
        path = raw_path.decode("utf-8", errors="surrogateescape")
        if kind != "blob" or mode not in ("100644", "100755"):
            others.append(f"{path} ({'symbolic link' if mode == '120000' else kind}, mode "
                          f"{mode})")
            continue
        files[path] = GitFile(path, mode, oid, int(size))
        if int(size) <= POINTER_MAX_SIZE:
            small.append(path)
    if small:
        batch = _cat_batch(run, [files[p].blob_id for p in small])
        for path in small:
            pointer = parse_pointer(batch.get(files[path].blob_id, b""))
            if pointer is not None:
                f = files[path]
                files[path] = GitFile(f.path, f.mode, f.blob_id, f.size, *pointer)
    return files, others


def _cat_batch(run, oids: list[str]) -> dict[str, bytes]:
    """The contents of the blobs ``oids`` (one ``git cat-file --batch``)."""
    out = run("cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode(),
              check=True).stdout
    found: dict[str, bytes] = {}
    pos = 0
    for oid in oids:
        end = out.index(b"\n", pos)
        head = out[pos:end].split()
        pos = end + 1
        if len(head) != 3:   # "<oid> missing"
            continue
        size = int(head[2])
        found[oid] = out[pos:pos + size]
        pos += size + 1
    return found


def parse_pointer(data: bytes) -> tuple[str, int] | None:
    """``(sha256, size)`` of a git-lfs pointer file (None when ``data`` is not one)."""
    if not data.startswith(_POINTER_VERSION) or not _POINTER.match(data):
        return None
    oid, size = _OID.search(data), _SIZE.search(data)
    if oid is None or size is None:
        return None
    return oid.group(1).decode(), int(size.group(1))


__all__ = ["FetchedTree", "GitFile", "GitUnavailable", "fetch_tree", "parse_pointer",
           "repo_git_url"]
