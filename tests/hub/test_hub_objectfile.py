"""The local Hub writes an LFS upload to disk as it arrives (``rcp_data.hub.objectfile``):
every byte lands at its offset whatever the sizes, offsets and framing; whole aligned blocks go
past the page cache (``O_DIRECT``) where the filesystem takes it, the rest through it; a body
longer than announced is refused."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import os
from email.message import Message
from pathlib import Path

import pytest

from rcp_data.hub import objectfile
from rcp_data.hub.errors import HubError
from rcp_data.hub.limits import CHUNK, Body
from rcp_data.hub.objectfile import ALIGN, O_DIRECT, ObjectFile, receive_into


def _body(data: bytes, *, chunked: list[int] | None = None) -> Body:
    """A request body of ``data``: with a Content-Length, or chunked in pieces of the sizes
    ``chunked`` gives (repeated)."""
    headers = Message()
    if chunked is None:
        headers["Content-Length"] = str(len(data))
        return Body(io.BytesIO(data), headers, limit=1 << 40)
    headers["Transfer-Encoding"] = "chunked"
    framed, at, i = bytearray(), 0, 0
    while at < len(data):
        piece = data[at:at + chunked[i % len(chunked)]]
        framed += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        at, i = at + len(piece), i + 1
    framed += b"0\r\n\r\n"
    return Body(io.BytesIO(bytes(framed)), headers, limit=1 << 40)


def _direct_io_here(folder: Path) -> bool:
    with ObjectFile(folder / "probe", truncate=True) as probe:
        return probe.direct


SIZES = [0, 1, ALIGN - 1, ALIGN, ALIGN + 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 12_345]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("offset", [0, 64 * ALIGN, 1000])
def test_every_byte_lands_at_its_offset(tmp_path: Path, size: int, offset: int) -> None:
    data = os.urandom(size)
    seen = hashlib.sha256()
    target = tmp_path / "object"
    target.write_bytes(b"\xaa" * offset)   # what an earlier part left before this one
    got = receive_into(_body(data), target, offset=offset, most=size, truncate=False,
                       observe=seen.update, fsync=True)
    assert got == size
    assert target.read_bytes() == b"\xaa" * offset + data
    assert seen.hexdigest() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("pieces", [[1], [4095, 7], [CHUNK + 3, 17]])
def test_a_chunked_body_lands_whole(tmp_path: Path, pieces: list[int]) -> None:
    data = os.urandom(2 * CHUNK + 999 if pieces != [1] else 5000)
    target = tmp_path / "object"
    seen = hashlib.sha256()
    got = receive_into(_body(data, chunked=pieces), target, offset=0, most=len(data),
                       truncate=True, observe=seen.update, fsync=False)
    assert got == len(data) and target.read_bytes() == data
    assert seen.digest() == hashlib.sha256(data).digest()


@pytest.mark.parametrize("chunked", [None, [CHUNK // 3]], ids=["length", "chunked"])
def test_a_body_longer_than_announced_is_refused(tmp_path: Path, chunked) -> None:
    data = os.urandom(CHUNK + 10)
    with pytest.raises(HubError, match=f"Part 3 is longer than {CHUNK} bytes") as err:
        receive_into(_body(data, chunked=chunked), tmp_path / "object", offset=0, most=CHUNK,
                     truncate=True, observe=lambda _: None, fsync=False, what="Part 3")
    assert err.value.status == 400


def test_a_body_shorter_than_its_length_is_refused() -> None:
    headers = Message()
    headers["Content-Length"] = "100"
    body = Body(io.BytesIO(b"x" * 40), headers, limit=1 << 20)
    with pytest.raises(HubError, match="ended before its announced length"):
        body.readinto(memoryview(bytearray(100)))


def test_readinto_fills_the_view_then_ends(tmp_path: Path) -> None:
    body = _body(b"abcdefghij")
    view = memoryview(bytearray(4))
    assert [body.readinto(view) for _ in range(4)] == [4, 4, 2, 0]
    assert body.done


@pytest.fixture
def writes(monkeypatch) -> list[tuple[bool, int, int]]:
    """Every pwrite of the module: (with O_DIRECT, offset, length)."""
    seen: list[tuple[bool, int, int]] = []
    real = os.pwrite

    def spy(fd: int, data, offset: int) -> int:
        direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT) if O_DIRECT else False
        seen.append((direct, offset, len(data)))
        return real(fd, data, offset)

    monkeypatch.setattr(objectfile.os, "pwrite", spy)
    return seen


def test_whole_blocks_go_past_the_page_cache_and_the_tail_through_it(tmp_path, writes):
    if not _direct_io_here(tmp_path):
        pytest.skip(f"the filesystem of {tmp_path} refuses O_DIRECT")
    data = os.urandom(2 * CHUNK + 3 * ALIGN + 5)
    target = tmp_path / "object"
    receive_into(_body(data), target, offset=0, most=len(data), truncate=True,
                 observe=lambda _: None, fsync=True)
    assert target.read_bytes() == data
    assert writes == [(True, 0, CHUNK), (True, CHUNK, CHUNK), (False, 2 * CHUNK, 3 * ALIGN + 5)]


def test_an_unaligned_offset_is_written_through_the_page_cache(tmp_path, writes):
    data = os.urandom(CHUNK)
    target = tmp_path / "object"
    receive_into(_body(data), target, offset=ALIGN + 1, most=len(data), truncate=True,
                 observe=lambda _: None, fsync=False)
    assert target.read_bytes()[ALIGN + 1:] == data
    assert writes == [(False, ALIGN + 1, CHUNK)]


def test_a_refused_direct_write_is_written_through_the_page_cache(tmp_path, monkeypatch):
    """A filesystem that opens with O_DIRECT but refuses the write (EINVAL) gets the same
    bytes, and the file stays in buffered mode."""
    real = os.pwrite
    refused = []

    def refuse_direct(fd: int, data, offset: int) -> int:
        if O_DIRECT and fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT:
            refused.append(offset)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, data, offset)

    monkeypatch.setattr(objectfile.os, "pwrite", refuse_direct)
    data = os.urandom(3 * CHUNK)
    target = tmp_path / "object"
    with ObjectFile(target, truncate=True) as sink:
        direct_at_first = sink.direct
        for at in range(0, len(data), CHUNK):
            sink.write_at(memoryview(data)[at:at + CHUNK], at)
        assert not sink.direct
    assert target.read_bytes() == data
    assert refused == ([0] if direct_at_first else [])


def test_another_error_of_a_direct_write_is_raised(tmp_path, monkeypatch):
    if not _direct_io_here(tmp_path):
        pytest.skip(f"the filesystem of {tmp_path} refuses O_DIRECT")

    def full(fd: int, data, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(objectfile.os, "pwrite", full)
    with ObjectFile(tmp_path / "object", truncate=True) as sink, \
            pytest.raises(OSError, match="No space left"):
        sink.write_at(memoryview(bytes(CHUNK)), 0)


def test_a_filesystem_without_direct_io_is_written_through_the_page_cache(tmp_path,
                                                                         monkeypatch):
    real_open = os.open

    def no_direct(path, flags, mode=0o777):
        if O_DIRECT and flags & O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, mode)

    monkeypatch.setattr(objectfile.os, "open", no_direct)
    data = os.urandom(CHUNK + 1)
    with ObjectFile(tmp_path / "object", truncate=True) as sink:
        assert not sink.direct
        sink.write_at(memoryview(data), 0)
    assert (tmp_path / "object").read_bytes() == data
