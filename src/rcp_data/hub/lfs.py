"""Git LFS for the local Hub: which files go to LFS, pointer files, and the object store.

**The rule** (``upload_mode``): a file is stored in LFS when
  - its size is over ``LFS_SIZE_THRESHOLD`` (10 MiB), or
  - its name ends in one of ``LFS_EXTENSIONS`` (tables: parquet, arrow, feather; images; audio
    and video; archives and compressed files; model and array binaries), or has ``.tar.`` in it,
  - or its first 512 bytes (the ``sample`` of the preupload request) hold a NUL byte (binary);
everything else is a regular git blob, sent inline in the commit. This follows what the real Hub
answers for a dataset repository (its default ``.gitattributes`` plus its size and binary checks).

**Storage**: an object is the file's content, addressed by its sha256, beside the git
repository at ``<repo>.git/lfs/objects/<oid[0:2]>/<oid[2:4]>/<oid>`` (git-lfs's own layout). The
git tree holds a git-lfs pointer file in its place, so history, ``git clone`` and ``git fsck``
work as for any git-lfs repository. Uploads stream into a temporary file under the store's
``.tmp`` folder while their sha256 and size are computed (written past the page cache where the
filesystem allows: :mod:`rcp_data.hub.objectfile`), and only a verified object is moved in.
Large objects arrive in parts (the Hub's ``multipart`` transfer): each part is written at its
offset in one temporary file and answered with an etag naming that upload of the part; the
completion request checks every part's etag, the size and the sha256 before the object is moved
in. Each byte is hashed once: on the way in when the parts come in order, else at completion.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from rcp_data.hub.errors import HubError
from rcp_data.hub.limits import Body
from rcp_data.hub.objectfile import receive_into

LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
LFS_EXTENSIONS = frozenset(
    {
        *("parquet", "arrow", "feather"),  # tables
        *("png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff", "webp"),  # images
        *("wav", "mp3", "flac", "ogg", "aac", "mp4", "webm"),  # audio and video
        *("zip", "gz", "tgz", "tar", "bz2", "xz", "zst", "7z", "rar", "lz4"),  # archives
        *("bin", "npy", "npz", "pt", "pth", "ckpt", "safetensors", "onnx", "h5"),  # binaries
        *("pkl", "pickle", "joblib", "msgpack", "pb", "tflite", "wasm"),
    }
)
DEFAULT_CHUNK_SIZE = 64 << 20  # objects larger than one part go through multipart
MAX_OBJECT_SIZE = 50 << 30
MAX_RUNNING_HASHES = 64  # multipart uploads hashed on the way in at once (the rest: at completion)  # the Hub's limit for one file
POINTER_VERSION = "https://git-lfs.github.com/spec/v1"
POINTER_MAX_SIZE = 1024
OID_RE = re.compile(r"^[0-9a-f]{64}$")
_POINTER_RE = re.compile(
    rb"^version https://git-lfs\.github\.com/spec/v1\noid sha256:([0-9a-f]{64})\nsize (0|[1-9][0-9]{0,15})\n$"
)


def upload_mode(path: str, size: int, sample: bytes) -> str:
    """``"lfs"`` or ``"regular"`` for a file to upload (the rule in the module docstring)."""
    name = path.rsplit("/", 1)[-1].lower()
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    if size > LFS_SIZE_THRESHOLD or suffix in LFS_EXTENSIONS or ".tar." in name:
        return "lfs"
    return "lfs" if b"\x00" in sample else "regular"


@dataclass(frozen=True)
class LfsPointer:
    """What a git-lfs pointer file names: the object's sha256 and size, and its own size."""

    oid: str
    size: int
    pointer_size: int


def pointer_bytes(oid: str, size: int) -> bytes:
    """The canonical git-lfs pointer file for an object."""
    return f"version {POINTER_VERSION}\noid sha256:{oid}\nsize {size}\n".encode()


def parse_pointer(data: bytes) -> LfsPointer | None:
    """The pointer ``data`` holds, when it is a canonical git-lfs pointer file; else None."""
    match = _POINTER_RE.match(data) if len(data) < POINTER_MAX_SIZE else None
    if match is None:
        return None
    return LfsPointer(match.group(1).decode(), int(match.group(2)), len(data))


def check_oid(oid: object) -> str:
    if not isinstance(oid, str) or not OID_RE.match(oid):
        raise HubError(400, "Invalid LFS object id: expected 64 lowercase hex digits (sha256)")
    return oid


def check_size(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_OBJECT_SIZE:
        raise HubError(400, f"Invalid LFS object size: expected 0 to {MAX_OBJECT_SIZE} bytes")
    return size


def _ignore(_piece: memoryview) -> None:
    """A part that arrives out of order is hashed at the completion instead."""


class LfsStore:
    """The LFS objects of every repository, uploaded through ``tmp`` (see the module docstring)."""

    def __init__(self, tmp: Path, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be positive")
        self.tmp = Path(tmp)
        self.chunk_size = chunk_size
        self._locks: dict[Path, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        # multipart uploads received in order so far: partial file -> (next part, sha256 so far)
        self._running: dict[Path, tuple[int, hashlib._Hash]] = {}

    @staticmethod
    def object_path(repo: Path, oid: str) -> Path:
        return repo / "lfs" / "objects" / oid[:2] / oid[2:4] / oid

    def stored_size(self, repo: Path, oid: str) -> int | None:
        """The size of object ``oid`` in ``repo``, None when it is not stored."""
        try:
            return self.object_path(repo, oid).stat().st_size
        except OSError:
            return None

    def parts(self, size: int) -> int:
        """How many parts an object of ``size`` bytes is uploaded in (1: a single PUT)."""
        return max(1, -(-size // self.chunk_size))

    def receive(self, repo: Path, oid: str, size: int, body: Body) -> bool:
        """Store a single-PUT upload after checking its size and sha256; False if already there."""
        if body.length is not None and body.length != size:
            raise HubError(400, f"Upload size {body.length} does not match the object size {size}")
        if self.stored_size(repo, oid) == size:
            body.drain(size)
            return False
        fd, tmp = tempfile.mkstemp(prefix="hub-lfs-", dir=self.tmp)
        os.close(fd)
        try:
            digest = hashlib.sha256()
            got = receive_into(body, tmp, offset=0, most=size, truncate=True,
                               observe=digest.update, fsync=True)
            self._check(oid, size, digest.hexdigest(), got)
            self._move_in(repo, oid, Path(tmp))
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return True

    def _partial(self, repo: Path, oid: str) -> Path:
        key = hashlib.sha256(str(repo).encode()).hexdigest()[:16]
        return self.tmp / f"hub-lfs-multipart-{key}-{oid}"

    def _upload_lock(self, partial: Path) -> threading.Lock:
        """The lock of one multipart upload: its parts and its completion never interleave."""
        with self._locks_lock:
            return self._locks.setdefault(partial, threading.Lock())

    def receive_part(self, repo: Path, oid: str, size: int, number: int, body: Body) -> str:
        """Write part ``number`` (1-based) of a multipart upload at its offset; its etag.

        The etag names this upload of the part (a fresh token, kept beside the partial file
        until the completion), so a completion can only list parts as last received. Parts that
        arrive in order (as huggingface_hub sends them) also feed a running sha256 of the whole
        object, so the completion need not read the object again."""
        count = self.parts(size)
        if not 1 <= number <= count:
            raise HubError(400, f"Invalid part number {number}: the object has {count} parts")
        start = (number - 1) * self.chunk_size
        expected = min(self.chunk_size, size - start)
        if body.length is not None and body.length != expected:
            raise HubError(400, f"Part {number} must be {expected} bytes, got {body.length}")
        partial = self._partial(repo, oid)
        with self._upload_lock(partial):
            running = self._running.pop(partial, None)
            if number == 1:
                running = (1, hashlib.sha256())
            elif running is not None and running[0] != number:
                running = None  # out of order or sent again: the completion reads the object
            Path(f"{partial}.part{number}").unlink(missing_ok=True)
            observe = running[1].update if running is not None else _ignore
            got = receive_into(body, partial, offset=start, most=expected, truncate=False,
                               observe=observe, fsync=False, what=f"Part {number}")
            if got != expected:
                raise HubError(400, f"Part {number} must be {expected} bytes, got {got}")
            if running is not None:
                self._running[partial] = (number + 1, running[1])
                while len(self._running) > MAX_RUNNING_HASHES:  # abandoned uploads: oldest first
                    self._running.pop(next(iter(self._running)))
            etag = uuid.uuid4().hex
            Path(f"{partial}.part{number}").write_text(etag, encoding="ascii")
        return etag

    def complete(self, repo: Path, oid: str, size: int, etags: dict[int, str]) -> bool:
        """Check the parts' etags, the size and the sha256 and move the object in."""
        count = self.parts(size)
        if sorted(etags) != list(range(1, count + 1)):
            raise HubError(400, f"The completion must list parts 1 to {count} exactly once")
        partial = self._partial(repo, oid)
        with self._upload_lock(partial):
            if self.stored_size(repo, oid) == size:
                self._discard(partial, count)
                return False
            if not partial.is_file() or partial.stat().st_size != size:
                raise HubError(400, "The upload is incomplete: send every part before completing")
            for number in range(1, count + 1):
                sent = Path(f"{partial}.part{number}")
                known = sent.read_text(encoding="ascii") if sent.is_file() else None
                if known is None or known != etags[number].strip('"'):
                    raise HubError(400, f"Part {number} does not match its etag: send it again")
            # every part is in: from here on the upload ends, moved in or refused
            try:
                running = self._running.get(partial)
                with open(partial, "rb") as fh:
                    whole = (running[1] if running is not None and running[0] == count + 1
                             else hashlib.file_digest(fh, "sha256")).hexdigest()
                    os.fsync(fh.fileno())
                self._check(oid, size, whole, size)
                self._move_in(repo, oid, partial)
            finally:
                self._discard(partial, count)
        return True

    def _discard(self, partial: Path, count: int) -> None:
        """Remove what an ended multipart upload left: the partial file, the parts' etags."""
        self._running.pop(partial, None)
        partial.unlink(missing_ok=True)
        for number in range(1, count + 1):
            Path(f"{partial}.part{number}").unlink(missing_ok=True)

    @staticmethod
    def _check(oid: str, size: int, sha: str, got: int) -> None:
        if got != size:
            raise HubError(400, f"Uploaded {got} bytes for an object of {size} bytes")
        if sha != oid:
            raise HubError(400, "Uploaded content does not match its sha256 oid")

    def _move_in(self, repo: Path, oid: str, source: Path) -> None:
        target = self.object_path(repo, oid)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(source, 0o444)
        os.replace(source, target)
