"""Request bodies, streamed and bounded.

``Body`` reads a request body in chunks (``Content-Length`` or ``Transfer-Encoding: chunked``)
and never holds more than the caller asks for. Framing is checked before anything is read: a
malformed or ambiguous length is 400, a length over ``Limits.max_body_bytes`` is 413 (answered
without reading the body, and the connection is closed), a body that ends early is 400.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message
from typing import BinaryIO

from rcp_data.hub.errors import ClientGone, HubError

CHUNK = 1 << 20
DEFAULT_MAX_BODY_BYTES = 1 << 30  # 1 GiB: an LFS part or a commit with many small inline files
JSON_BODY_BYTES = 8 << 20  # API bodies parsed in memory (preupload, paths-info, batch, ...)

_LENGTH = re.compile(r"^[0-9]{1,19}$")
_CHUNK_SIZE = re.compile(rb"^[0-9A-Fa-f]{1,15}$")
_MAX_LINE = 8192
_MAX_TRAILERS = 64


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may send."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    json_body_bytes: int = JSON_BODY_BYTES

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1 or self.json_body_bytes < 1:
            raise ValueError("body limits must be positive")

    @property
    def json_limit(self) -> int:
        return min(self.max_body_bytes, self.json_body_bytes)


@dataclass(frozen=True)
class Deadlines:
    """How long a client may take (the slow-loris bounds; ``rcp_data.hub.transport`` applies
    them to every read of the connection, not per ``recv``):

    - ``idle_seconds``: a keep-alive connection waiting for its next request is closed after it;
    - ``header_seconds``: the request line and headers must arrive within it of their first
      byte (else the connection is closed);
    - ``body_grace_seconds`` and ``body_min_rate``: a body must have arrived at
      ``body_min_rate`` bytes a second on average, after ``body_grace_seconds`` of grace (a body
      that falls behind is answered 408 and the connection closed);
    - ``send_seconds``: one write of an answer to a client that stopped reading.
    """

    idle_seconds: float = 300.0
    header_seconds: float = 30.0
    body_grace_seconds: float = 60.0
    body_min_rate: float = 64 << 10
    send_seconds: float = 300.0

    def __post_init__(self) -> None:
        values = (self.idle_seconds, self.header_seconds, self.body_grace_seconds,
                  self.body_min_rate, self.send_seconds)
        if any(not v > 0 for v in values):
            raise ValueError("deadlines must be positive")


class DeadlinePassed(TimeoutError):
    """A client took longer than its deadline (``Deadlines``) to send a request's headers or
    body."""


def too_large(limit: int) -> HubError:
    return HubError(413, f"Request body too large: the limit is {limit} bytes")


def too_slow() -> HubError:
    return HubError(408, "Request body not received in time: the client sent it too slowly")


class Body:
    """The body of one request, read on demand within ``limit`` bytes."""

    def __init__(self, rfile: BinaryIO, headers: Message, limit: int) -> None:
        self._rfile = rfile
        self.limit = limit
        self.received = 0
        self._chunk_left = 0
        self._finished = False
        encodings = headers.get_all("Transfer-Encoding") or []
        lengths = headers.get_all("Content-Length") or []
        if encodings:
            if lengths:
                raise HubError(400, "Both Content-Length and Transfer-Encoding were sent")
            if [e.strip().lower() for e in encodings] != ["chunked"]:
                raise HubError(400, "Unsupported Transfer-Encoding (only chunked)")
            self.length: int | None = None
            return
        values = {v.strip() for v in lengths}
        if len(values) > 1 or any(not _LENGTH.match(v) for v in values):
            raise HubError(400, "Invalid Content-Length header")
        self.length = int(values.pop()) if values else 0
        if self.length > limit:
            raise too_large(limit)
        self._finished = self.length == 0

    @property
    def chunked(self) -> bool:
        return self.length is None

    @property
    def done(self) -> bool:
        """Whether the whole body has been read (the connection can serve another request)."""
        return self._finished

    def _raw(self, size: int) -> bytes:
        try:
            data = self._rfile.read(size)
        except DeadlinePassed:
            raise too_slow() from None
        except OSError as exc:  # a timeout or a reset while reading
            raise ClientGone(str(exc)) from None
        if len(data) < size:
            raise HubError(400, "Request body ended before its announced length")
        return data

    def readinto(self, view: memoryview) -> int:
        """Fill ``view`` with the next bytes of the body: all of it, or less at the body's end
        (0 there). A body with a length is read straight into ``view``, without a copy."""
        filled = 0
        while filled < len(view) and not self._finished:
            if self.length is None:
                data = self.read(len(view) - filled)
                view[filled:filled + len(data)] = data
                filled += len(data)
                continue
            want = min(len(view) - filled, self.length - self.received)
            try:
                n = self._rfile.readinto(view[filled:filled + want]) or 0
            except DeadlinePassed:
                raise too_slow() from None
            except OSError as exc:  # a timeout or a reset while reading
                raise ClientGone(str(exc)) from None
            if n < want:
                raise HubError(400, "Request body ended before its announced length")
            filled += n
            self.received += n
            self._finished = self.received >= self.length
        return filled

    def _line(self) -> bytes:
        try:
            line = self._rfile.readline(_MAX_LINE + 1)
        except DeadlinePassed:
            raise too_slow() from None
        except OSError as exc:
            raise ClientGone(str(exc)) from None
        if not line.endswith(b"\n") or len(line) > _MAX_LINE:
            raise HubError(400, "Malformed chunked request body")
        return line.rstrip(b"\r\n")

    def read(self, size: int = CHUNK) -> bytes:
        """Up to ``size`` bytes (b"" at the end); 413 past the limit, 400 if malformed."""
        if self._finished or size <= 0:
            return b""
        if self.length is not None:
            data = self._raw(min(size, self.length - self.received))
            self.received += len(data)
            self._finished = self.received >= self.length
            return data
        if self._chunk_left == 0:
            size_field = self._line().split(b";", 1)[0].strip()
            if not _CHUNK_SIZE.match(size_field):
                raise HubError(400, "Malformed chunked request body")
            self._chunk_left = int(size_field, 16)
            if self._chunk_left == 0:
                self._read_trailers()
                self._finished = True
                return b""
            if self.received + self._chunk_left > self.limit:
                raise too_large(self.limit)
        data = self._raw(min(size, self._chunk_left))
        self._chunk_left -= len(data)
        self.received += len(data)
        if self._chunk_left == 0 and self._line() != b"":
            raise HubError(400, "Malformed chunked request body")
        return data

    def _read_trailers(self) -> None:
        for _ in range(_MAX_TRAILERS):
            if self._line() == b"":
                return
        raise HubError(400, "Malformed chunked request body: too many trailers")

    def read_all(self, limit: int) -> bytes:
        """The whole body, at most ``min(limit, self.limit)`` bytes (413 above)."""
        limit = min(limit, self.limit)
        if self.length is not None and self.length > limit:
            raise too_large(limit)
        parts, total = [], 0
        while chunk := self.read(CHUNK):
            total += len(chunk)
            if total > limit:
                raise too_large(limit)
            parts.append(chunk)
        return b"".join(parts)

    def copy_to(self, sink: BinaryIO) -> int:
        """Stream the rest of the body into ``sink``; bytes read."""
        total = 0
        while chunk := self.read(CHUNK):
            sink.write(chunk)
            total += len(chunk)
        return total

    def drain(self, at_most: int) -> bool:
        """Discard up to ``at_most`` unread bytes; True when the body is then fully read."""
        if self._finished:
            return True
        if self.length is not None and self.length - self.received > at_most:
            return False
        budget = at_most
        while not self._finished and budget > 0:
            budget -= len(self.read(min(CHUNK, budget)))
        return self._finished
