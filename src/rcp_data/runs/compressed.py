"""Run and qrels files as distributed: plain, or compressed with gzip, bzip2 or xz (the
standard library), or zstd where the ``zstandard`` package is installed. The compression is
told by the file's first bytes (its magic number), not by its name."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from pathlib import Path
from typing import BinaryIO

from rcp_data.core.errors import InputError

# magic bytes -> (name, file suffix)
_MAGIC = ((b"\x1f\x8b", "gzip", ".gz"), (b"BZh", "bzip2", ".bz2"),
          (b"\xfd7zXZ\x00", "xz", ".xz"), (b"\x28\xb5\x2f\xfd", "zstd", ".zst"))
SUFFIXES = tuple(m[2] for m in _MAGIC)


def compression_of(path: str | Path) -> str | None:
    """``gzip``, ``bzip2``, ``xz`` or ``zstd`` by the file's first bytes; None for a plain
    file."""
    with Path(path).open("rb") as fh:
        head = fh.read(6)
    return next((name for magic, name, _ in _MAGIC if head.startswith(magic)), None)


def open_binary(path: str | Path) -> BinaryIO:
    """The file's bytes as a stream, decompressed where it is compressed."""
    kind = compression_of(path)
    if kind is None:
        return Path(path).open("rb")
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "bzip2":
        return bz2.open(path, "rb")
    if kind == "xz":
        return lzma.open(path, "rb")
    try:
        import zstandard
    except ImportError:
        raise InputError("the file is zstd-compressed and the zstandard package is not "
                         "installed: pip install zstandard, or decompress it (unzstd)",
                         path=str(path)) from None
    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(
        Path(path).open("rb"), closefd=True))


def read_bytes(path: str | Path) -> bytes:
    """The file's whole content, decompressed; a corrupt archive is an InputError."""
    try:
        if compression_of(path) == "gzip":
            return _gunzip(Path(path).read_bytes())
        with open_binary(path) as fh:
            return fh.read()
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise InputError(f"cannot decompress: {exc}", path=str(path)) from None


def _gunzip(data: bytes) -> bytes:
    """Every member of a gzip file, decompressed in one zlib call each (the header's and the
    trailer's checks are zlib's); an EOFError where a member is cut short."""
    out = []
    while data:
        inflate = zlib.decompressobj(wbits=31)
        out.append(inflate.decompress(data))
        if not inflate.eof:
            raise EOFError("the gzip file ends inside a member (truncated)")
        data = inflate.unused_data.lstrip(b"\x00")     # padding between members, as gzip
    return b"".join(out) if len(out) != 1 else out[0]


def without_suffix(name: str) -> str:
    """A file name without its compression suffix (``run.txt.gz`` -> ``run.txt``)."""
    for suffix in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return name


__all__ = ["SUFFIXES", "compression_of", "open_binary", "read_bytes", "without_suffix"]
