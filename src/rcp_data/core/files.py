"""The files of a release directory: which they are, and their sizes and sha256s.

Standard library only, so that a command can start hashing before it imports anything else
(``release publish`` hashes every file while huggingface_hub loads). A file is named by its POSIX path relative to the release root;
hidden files and ``__pycache__`` are never part of a release, and the Hub's own
``.gitattributes`` (:data:`HUB_HOUSEKEEPING`) is kept as the Hub's.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rcp_data.core.errors import HashingStopped  # defined in core.errors; kept importable here

_PIECE = 4 << 20   # bytes read and hashed at a time (see digest_file)
_buffers = threading.local()
#: Files the Hub keeps in every repository; never listed, never an extra file.
HUB_HOUSEKEEPING = frozenset({".gitattributes"})


@dataclass(frozen=True)
class FileEntry:
    """One file of a release: POSIX path relative to the root, size in bytes, sha256 (hex)."""

    path: str
    size: int
    sha256: str

    def to_dict(self) -> dict:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


def release_paths(root: str | Path) -> list[str]:
    """POSIX paths of every file of a release directory, sorted (hidden files and
    ``__pycache__`` skipped, except the Hub's ``.gitattributes``)."""
    root = Path(root)
    out = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(root)
        hidden = any(part.startswith(".") or part == "__pycache__" for part in rel.parts)
        if hidden and rel.as_posix() not in HUB_HOUSEKEEPING:
            continue
        out.append(rel.as_posix())
    return out


def digest_file(path: str | Path, digest) -> int:
    """Feed the bytes of ``path`` to ``digest`` (a :mod:`hashlib` object) and return how many
    there were. They are read in pieces of :data:`_PIECE` bytes into one buffer per thread,
    reused: reading and hashing release the GIL, and pieces 16 times ``hashlib.file_digest``'s
    make hashing threads wait for it less often while the main thread runs Python (``release
    publish`` imports huggingface_hub meanwhile): 0.07 s less for 1 GiB on 2 cores."""
    buffer = getattr(_buffers, "piece", None)
    if buffer is None:   # fresh memory would cost page faults for every file
        buffer = _buffers.piece = bytearray(_PIECE)
    view, size = memoryview(buffer), 0
    with Path(path).open("rb", buffering=0) as fh:
        while n := fh.readinto(buffer):
            digest.update(view[:n])
            size += n
    return size


def hash_file(root: str | Path, rel: str, snapshot: Snapshot | None = None) -> FileEntry:
    """The entry of file ``rel`` of ``root``: its size and sha256, from one read of it; with
    a ``snapshot``, the same read also gives the file's git blob id and, for a small file, its
    bytes (:class:`Snapshot`)."""
    if snapshot is not None:
        return snapshot.take(Path(root), rel)
    digest = hashlib.sha256()
    size = digest_file(Path(root) / rel, digest)
    return FileEntry(rel, size, digest.hexdigest())


class Snapshot:
    """What one read of each file of a release proved, kept for the upload: the git blob id
    of every file (what the Hub lists for a regular file), and the bytes themselves of each
    file of at most ``max_file`` bytes while the total held stays within ``max_total``. A
    publisher uploads the bytes held, never the file again, so an edit made after the
    verification cannot reach the Hub; a larger file is uploaded from its path with the sha256
    proved here, which the Hub checks (LFS), and the Hub's listing after the commit is compared
    with ``git_oids`` and the sha256s."""

    def __init__(self, max_file: int = 10 << 20, max_total: int = 512 << 20) -> None:
        self.max_file = max_file
        self.max_total = max_total
        self.held: dict[str, bytes] = {}
        self.git_oids: dict[str, str] = {}
        self._total = 0
        self._guard = threading.Lock()

    def _reserve(self, size: int) -> bool:
        with self._guard:
            if size > self.max_file or self._total + size > self.max_total:
                return False
            self._total += size
            return True

    def take(self, root: Path, rel: str) -> FileEntry:
        path = root / rel
        announced = path.stat().st_size
        sha = hashlib.sha256()
        git = hashlib.sha1(b"blob %d\0" % announced)  # noqa: S324 - git's object id
        hold = self._reserve(announced)
        pieces: list[bytes] = []
        buffer = getattr(_buffers, "piece", None)
        if buffer is None:
            buffer = _buffers.piece = bytearray(_PIECE)
        view, size = memoryview(buffer), 0
        with path.open("rb", buffering=0) as fh:
            while n := fh.readinto(buffer):
                sha.update(view[:n])
                git.update(view[:n])
                if hold:
                    pieces.append(bytes(view[:n]))
                size += n
        with self._guard:
            if size == announced:  # else the file changed while read: nothing is vouched for
                self.git_oids[rel] = git.hexdigest()
                if hold:
                    self.held[rel] = b"".join(pieces)
            elif hold:
                self._total -= announced
        return FileEntry(rel, size, sha.hexdigest())


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file."""
    path = Path(path)
    return hash_file(path.parent, path.name).sha256


def hash_files(root: str | Path, paths: Iterable[str], *,
               stop: threading.Event | None = None,
               snapshot: Snapshot | None = None) -> dict[str, FileEntry]:
    """The entries of ``paths`` under ``root``, hashed on every core (``hashlib`` releases the
    GIL while it hashes); keyed by path, in the order given. ``stop``: once set, no further file
    is started and :class:`HashingStopped` is raised. ``snapshot``: see :func:`hash_file`."""
    paths = list(paths)

    def one(rel: str) -> FileEntry:
        if stop is not None and stop.is_set():
            raise HashingStopped("hashing stopped before " + rel)
        return hash_file(root, rel, snapshot)

    workers = max(1, min(len(paths), os.cpu_count() or 1))
    from rcp_data.core.progress import bars_shown, progress

    bar = None   # a bar of the bytes hashed, on a terminal (tqdm is not imported otherwise)
    if bars_shown():
        bar = progress(total=sum(_size(Path(root) / rel) for rel in paths), leave=False,
                       desc=f"hashing {len(paths)} files", unit="B", unit_scale=True)
    out = {}
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for entry in pool.map(one, paths):
                out[entry.path] = entry
                if bar is not None:
                    bar.update(entry.size)
    finally:
        if bar is not None:
            bar.close()
    return out


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextmanager
def hashing_in_background(root: str | Path, snapshot: Snapshot | None = None
                          ) -> Iterator[Future[dict[str, FileEntry]]]:
    """Every file of ``root`` (:func:`release_paths`, listed when this starts) hashed in the
    background (into ``snapshot`` too, when given); the future's result is
    :func:`hash_files`'s. Leaving the block early stops the hashing after the files at hand."""
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rcp-hash")
    try:
        yield pool.submit(hash_files, root, release_paths(root), stop=stop, snapshot=snapshot)
    finally:
        stop.set()
        pool.shutdown(wait=True)


__all__ = ["HUB_HOUSEKEEPING", "FileEntry", "HashingStopped", "Snapshot", "digest_file",
           "hash_file",
           "hash_files",
           "hashing_in_background", "release_paths", "sha256_file"]
