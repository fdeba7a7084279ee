"""The commit payload (NDJSON), read line by line from a spooled body in bounded memory.

The request body is first streamed into a file in the commit's work folder. A line up to
``SMALL_LINE`` bytes is parsed with ``json``; a longer one (a large file sent inline) goes through
a small streaming JSON reader that keeps every long string as a byte range of the spooled file,
and a ``file`` line's content is decoded (JSON escapes, then base64 or UTF-8) from that range into
its own file, a piece at a time. Whatever the size of an inline file, the server holds at most a
few pieces of it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rcp_data.hub.errors import HubError
from rcp_data.hub.gitstore import Operation
from rcp_data.hub.lfs import check_oid, check_size
from rcp_data.hub.limits import CHUNK, Body
from rcp_data.hub.names import validate_path

SMALL_LINE = 1 << 20
LONG_STRING = 64 << 10
MAX_FIELD_BYTES = 1 << 20  # any string but an inline content
MAX_DEPTH = 32
MAX_TOKENS = 10_000
MAX_OPERATIONS = 100_000
_QUOTE_OR_BACKSLASH = re.compile(rb'["\\]')
_SURROGATE = re.compile("[\ud800-\udfff]")
_WS = b" \t\r\n"


@dataclass(frozen=True)
class Span:
    """A long JSON string left in the spooled body: raw bytes ``[start, end)``, without quotes."""

    start: int
    end: int


def _bad(line: int, why: str = "is not a valid {key, value} JSON object") -> HubError:
    return HubError(400, f"Commit payload line {line} {why}")


def read_commit_payload(body: Body, workdir: Path) -> tuple[dict, list[Operation]]:
    """The header and operations of a commit body; contents land in files under ``workdir``."""
    spooled = workdir / "body.ndjson"
    with open(spooled, "wb") as sink:
        body.copy_to(sink)
    header: dict | None = None
    ops: list[Operation] = []
    with open(spooled, "rb") as lines_fh, open(spooled, "rb") as data_fh:
        for number, (start, end) in enumerate(_lines(lines_fh), start=1):
            item = _parse_line(data_fh, start, end, number)
            if item is None:
                continue
            key, value = item
            if key == "header":
                if header is not None:
                    raise _bad(number, "repeats the header")
                header = value
                continue
            if len(ops) >= MAX_OPERATIONS:
                raise HubError(400, f"A commit may hold at most {MAX_OPERATIONS} operations")
            ops.append(_operation(key, value, number, data_fh, workdir / f"op-{len(ops)}"))
    if header is None:
        raise HubError(400, "Commit payload has no header line")
    return header, ops


def _lines(fh: BinaryIO) -> Iterator[tuple[int, int]]:
    """``(start, end)`` byte offsets of each line of ``fh`` (without its newline)."""
    start = pos = 0
    while chunk := fh.read(CHUNK):
        i = 0
        while (j := chunk.find(b"\n", i)) >= 0:
            yield start, pos + j
            start = pos + j + 1
            i = j + 1
        pos += len(chunk)
    if pos > start:
        yield start, pos


def _parse_line(fh: BinaryIO, start: int, end: int, number: int) -> tuple[str, dict] | None:
    if end - start <= SMALL_LINE:
        fh.seek(start)
        raw = fh.read(end - start)
        if not raw.strip(_WS):
            return None
        try:
            item = json.loads(raw)
        except (ValueError, RecursionError):
            raise _bad(number) from None
    else:
        item = _Scanner(fh, start, end, number).document()
        if item is None:
            return None
        item = _materialize(fh, item, number, ())
    if not isinstance(item, dict) or not isinstance(item.get("key"), str):
        raise _bad(number)
    value = item.get("value")
    if not isinstance(value, dict):
        raise _bad(number)
    return item["key"], value


def _materialize(fh: BinaryIO, value: object, number: int, where: tuple[str, ...]) -> object:
    """``value`` with every ``Span`` read back as a string, except a file line's content."""
    if isinstance(value, Span):
        if where == ("value", "content"):
            return value
        if value.end - value.start > MAX_FIELD_BYTES:
            raise _bad(number, f"has a string too long for '{where[-1] if where else ''}'")
        fh.seek(value.start)
        try:
            return json.loads(b'"' + fh.read(value.end - value.start) + b'"')
        except ValueError:
            raise _bad(number, "has an invalid JSON string") from None
    if isinstance(value, dict):
        return {k: _materialize(fh, v, number, (*where, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_materialize(fh, v, number, (*where, "[]")) for v in value]
    return value


def _operation(key: str, value: dict, number: int, fh: BinaryIO, target: Path) -> Operation:
    if key == "file":
        path = validate_path(value.get("path"))
        encoding = value.get("encoding", "utf-8")
        if encoding not in ("base64", "utf-8"):
            raise _bad(number, "has an unknown encoding (base64 or utf-8)")
        content = value.get("content", "")
        with open(target, "wb") as sink:
            if isinstance(content, Span):
                _decode_span(fh, content, encoding, sink, number)
            elif isinstance(content, str):
                sink.write(_decode_text(content, encoding, number))
            else:
                raise _bad(number, "has a content that is not a string")
        return Operation("file", path, source=target)
    if key == "lfsFile":
        path = validate_path(value.get("path"))
        if value.get("algo", "sha256") != "sha256":
            raise _bad(number, "names an LFS algorithm other than sha256")
        size = value.get("size")
        return Operation(
            "lfsFile",
            path,
            oid=check_oid(value.get("oid")),
            size=None if size is None else check_size(size),
        )
    if key in ("deletedFile", "deletedFolder"):
        path = value.get("path")
        if key == "deletedFolder" and isinstance(path, str):
            path = path.rstrip("/")
        return Operation(key, validate_path(path))
    raise _bad(number, f"has an unsupported key {key[:50]!r}")


def _decode_text(text: str, encoding: str, number: int) -> bytes:
    if encoding == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise _bad(number, "has invalid base64 content") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise _bad(number, "has content that is not valid UTF-8") from None


def _safe_cut(raw: bytes, cut: int) -> int:
    """Move ``cut`` left so that ``raw[:cut]`` ends inside neither a UTF-8 sequence nor an
    escape sequence (``\\x`` or ``\\uXXXX``)."""
    while cut > 0 and raw[cut] & 0xC0 == 0x80:
        cut -= 1
    for p in range(cut - 1, max(cut - 6, -1), -1):
        if raw[p] == 0x5C:
            run = 1
            while p - run >= 0 and raw[p - run] == 0x5C:
                run += 1
            if run % 2 == 1:  # this backslash starts an escape
                length = 6 if p + 1 < len(raw) and raw[p + 1] == 0x75 else 2
                if p + length > cut:
                    cut = p
            break
    return cut


def _text_pieces(fh: BinaryIO, span: Span, number: int) -> Iterator[str]:
    """The unescaped text of ``span``, a piece at a time (surrogate pairs kept together)."""
    pos, carry, rest = span.start, "", b""
    while pos < span.end or rest:
        fh.seek(pos)
        fresh = fh.read(min(CHUNK, span.end - pos))
        if pos < span.end and not fresh:
            raise _bad(number, "has an invalid JSON string")
        raw, pos = rest + fresh, pos + len(fresh)
        cut = len(raw) if pos >= span.end else _safe_cut(raw, len(raw) - 1)
        piece, rest = raw[:cut], raw[cut:]
        try:  # json validates escapes, control characters and UTF-8
            text = json.loads(b'"' + piece + b'"')
        except ValueError:
            raise _bad(number, "has an invalid JSON string") from None
        text = carry + text
        carry = ""
        if text and "\ud800" <= text[-1] <= "\udbff" and (pos < span.end or rest):
            text, carry = text[:-1], text[-1]
        if _SURROGATE.search(text):
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
        if text:
            yield text
    if carry:
        yield carry


def _decode_span(fh: BinaryIO, span: Span, encoding: str, sink: BinaryIO, number: int) -> None:
    if encoding == "utf-8":
        for text in _text_pieces(fh, span, number):
            sink.write(_decode_text(text, "utf-8", number))
        return
    pending, ended = "", False
    for text in _text_pieces(fh, span, number):
        data = pending + text
        usable = len(data) - len(data) % 4
        if usable:
            if ended:
                raise _bad(number, "has invalid base64 content")
            sink.write(_decode_text(data[:usable], "base64", number))
            ended = data[usable - 1] == "="
        pending = data[usable:]
    if pending:
        raise _bad(number, "has invalid base64 content")


class _Scanner:
    """A streaming reader of one JSON document in bytes ``[start, end)`` of a file: strings
    over ``LONG_STRING`` bytes are returned as ``Span`` instead of being read."""

    def __init__(self, fh: BinaryIO, start: int, end: int, number: int) -> None:
        self.fh, self.pos, self.end, self.number = fh, start, end, number
        self.buf, self.base, self.tokens = b"", start, 0

    def _fill(self) -> bool:
        if self.base <= self.pos < self.base + len(self.buf):
            return True
        if self.pos >= self.end:
            return False
        self.fh.seek(self.pos)
        self.buf, self.base = self.fh.read(min(CHUNK, self.end - self.pos)), self.pos
        return bool(self.buf)

    def _peek(self) -> int:
        return self.buf[self.pos - self.base] if self._fill() else -1

    def _skip_ws(self) -> None:
        while self._peek() in (0x20, 0x09, 0x0A, 0x0D):
            self.pos += 1

    def _take(self, byte: int) -> None:
        if self._peek() != byte:
            raise _bad(self.number)
        self.pos += 1

    def _slice(self, start: int, end: int) -> bytes:
        self.fh.seek(start)
        return self.fh.read(end - start)

    def document(self) -> object:
        self._skip_ws()
        if self._peek() == -1:
            return None
        value = self._value(0)
        self._skip_ws()
        if self._peek() != -1:
            raise _bad(self.number)
        return value

    def _value(self, depth: int) -> object:
        self.tokens += 1
        if self.tokens > MAX_TOKENS or depth > MAX_DEPTH:
            raise _bad(self.number, "is nested too deeply or holds too many values")
        self._skip_ws()
        first = self._peek()
        if first == 0x7B:  # {
            return self._container(depth, 0x7D, keyed=True)
        if first == 0x5B:  # [
            return self._container(depth, 0x5D, keyed=False)
        if first == 0x22:  # "
            return self._string()
        return self._scalar()

    def _container(self, depth: int, close: int, keyed: bool) -> dict | list:
        self.pos += 1
        out: dict | list = {} if keyed else []
        self._skip_ws()
        if self._peek() == close:
            self.pos += 1
            return out
        while True:
            self._skip_ws()
            if keyed:
                key = self._string()
                if isinstance(key, Span):
                    key = _materialize(self.fh, key, self.number, ("key",))
                self._skip_ws()
                self._take(0x3A)  # :
                out[key] = self._value(depth + 1)
            else:
                out.append(self._value(depth + 1))
            self._skip_ws()
            sep = self._peek()
            self.pos += 1
            if sep == close:
                return out
            if sep != 0x2C:  # ,
                raise _bad(self.number)

    def _scalar(self) -> object:
        start = self.pos
        while self._peek() not in (-1, 0x2C, 0x7D, 0x5D, 0x20, 0x09, 0x0A, 0x0D):
            self.pos += 1
            if self.pos - start > 64:
                raise _bad(self.number)
        try:
            value = json.loads(self._slice(start, self.pos))
        except ValueError:
            raise _bad(self.number) from None
        if isinstance(value, (str, list, dict)):
            raise _bad(self.number)
        return value

    def _string(self) -> str | Span:
        self._take(0x22)
        start = self.pos
        while True:
            if not self._fill():
                raise _bad(self.number, "has an unterminated string")
            found = _QUOTE_OR_BACKSLASH.search(self.buf, self.pos - self.base)
            if found is None:
                self.pos = self.base + len(self.buf)
                continue
            self.pos = self.base + found.start()
            if found.group() == b"\\":
                self.pos += 2
                continue
            end = self.pos
            self.pos += 1
            break
        if end - start > LONG_STRING:
            return Span(start, end)
        try:
            return json.loads(b'"' + self._slice(start, end) + b'"')
        except ValueError:
            raise _bad(self.number, "has an invalid JSON string") from None
