"""An LFS object's bytes written to disk as they arrive, past the page cache where it can be.

The store writes an object once and reads it back rarely, so it writes with ``O_DIRECT``
(Linux): the bytes go from the request's buffer to the disk and are not first copied into the
page cache. That saves the CPU of the copy (the server hashes every byte besides) and keeps a
multi-GB upload from pushing everything else out of the cache. A write ``O_DIRECT`` cannot take
goes through the page cache as usual, and the file stays in that mode from there on: an offset
or length that is not a multiple of :data:`ALIGN` (an object's last bytes, a part at an odd
offset), a filesystem that refuses direct I/O (e.g. tmpfs), a system without ``O_DIRECT``.
Either way the bytes and the file are the same; only the path through the kernel differs.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
from collections.abc import Callable
from pathlib import Path

from rcp_data.hub.errors import HubError
from rcp_data.hub.limits import CHUNK, Body

#: offsets and lengths of direct writes are multiples of this (covers 512 and 4096-byte sectors)
ALIGN = 4096
O_DIRECT = getattr(os, "O_DIRECT", 0)


class ObjectFile:
    """A file open for writing at chosen offsets, directly when it can (module docstring)."""

    def __init__(self, path: str | Path, *, truncate: bool, direct: bool = True) -> None:
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else 0)
        self.direct = bool(direct and O_DIRECT)
        if self.direct:
            try:
                self.fd = os.open(path, flags | O_DIRECT, 0o644)
                return
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                self.direct = False  # the filesystem refuses direct I/O
        self.fd = os.open(path, flags, 0o644)

    def write_at(self, data: memoryview, offset: int) -> None:
        """Write all of ``data`` at ``offset``."""
        if self.direct and offset % ALIGN == 0 and len(data) % ALIGN == 0:
            try:
                self._write_all(data, offset)
                return
            except OSError as exc:
                if exc.errno != errno.EINVAL:  # EINVAL: this file refuses the direct write
                    raise
        if self.direct:
            self.direct = False
            fcntl.fcntl(self.fd, fcntl.F_SETFL, fcntl.fcntl(self.fd, fcntl.F_GETFL) & ~O_DIRECT)
        self._write_all(data, offset)

    def _write_all(self, data: memoryview, offset: int) -> None:
        while data:
            done = os.pwrite(self.fd, data, offset)
            data, offset = data[done:], offset + done

    def fsync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> ObjectFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def receive_into(body: Body, path: str | Path, *, offset: int, most: int, truncate: bool,
                 observe: Callable[[memoryview], None], fsync: bool,
                 what: str = "The upload") -> int:
    """Write the rest of ``body`` into ``path`` from ``offset`` on and return how many bytes it
    held; ``observe`` sees each piece before it is written. A body longer than ``most`` bytes is
    refused (400, "``what`` is longer than ...") once its first byte past ``most`` arrives.
    ``fsync``: flush the file to disk."""
    # page-aligned, as direct I/O needs; unmapped when the last view of it goes
    buffer = memoryview(mmap.mmap(-1, CHUNK))
    got = 0
    with ObjectFile(path, truncate=truncate) as sink:
        while not body.done:
            n = body.readinto(buffer[: min(CHUNK, most - got)] if got < most else buffer[:1])
            if not n:
                break
            if got + n > most:
                raise HubError(400, f"{what} is longer than {most} bytes")
            piece = buffer[:n]
            observe(piece)
            sink.write_at(piece, offset + got)
            got += n
        if fsync:
            sink.fsync()
    return got
