"""HTTP plumbing of the local Hub: the request, the handler, the threaded server.

The handler is the error boundary: a ``HubError`` becomes its status with ``X-Error-Code`` /
``X-Error-Message`` and a JSON ``{"error": ...}`` body; anything else is logged and answered
500 with only the exception's type (no path, no traceback). A request body left unread (an
error raised early, an endpoint without a body) is drained when small, otherwise the connection
is closed (after a short linger, so the client reads the answer, e.g. a 413, rather than a reset),
and a keep-alive connection never reads stale bytes as the next request.

Deadlines (``Deadlines``, slow-loris bounds): every read of a connection goes through a
:class:`DeadlineReader`, which sets the socket's timeout to what is left of the current phase's
deadline before each ``recv``: an idle keep-alive connection is closed after ``idle_seconds``;
the request line and headers must arrive within ``header_seconds`` of their first byte, however
they are dribbled (``http.server`` alone restarts its timeout at every ``recv``, so one byte a
minute held a connection for ever); a body must keep up ``body_min_rate`` after a grace period,
else 408 and the connection is closed. Writes of an answer have ``send_seconds`` each. Header
lines are limited by ``http.server`` (64 KiB a line, 100 headers), bodies by ``Limits``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from rcp_data.hub.auth import UrlSigner, check_write
from rcp_data.hub.errors import ClientGone, HubError
from rcp_data.hub.gitstore import GitStore
from rcp_data.hub.limits import CHUNK, Body, DeadlinePassed, Deadlines, Limits

log = logging.getLogger("rcp_data.hub.server")

DRAIN_BYTES = 1 << 20  # an unread body up to this size is discarded to keep the connection
LINGER_SECONDS = 2.0  # then, before hanging up, what still arrives is read and dropped ...
LINGER_BYTES = 64 << 20  # ... for at most this long and this much


@dataclass(frozen=True)
class ServerOptions:
    """What a server is configured with besides its store."""

    page_size: int = 1000
    namespace: str = "local"
    limits: Limits = field(default_factory=Limits)
    deadlines: Deadlines = field(default_factory=Deadlines)
    token: str | None = field(default=None, repr=False)  # None: writes are open (no auth)
    read_only: bool = False


class DeadlineReader(io.RawIOBase):
    """The reading side of one connection, under the phase's deadline (see the module doc).

    Phases: ``idle`` (waiting for a request; its first byte starts ``headers``), ``headers``
    (one deadline for the request line and headers), ``body`` (a deadline that moves with the
    bytes received: grace plus bytes over the minimum rate).
    """

    def __init__(self, sock: socket.socket, deadlines: Deadlines) -> None:
        super().__init__()
        self._sock = sock
        self._d = deadlines
        self.phase = "idle"
        self._deadline = 0.0
        self._body_start = 0.0
        self._body_bytes = 0

    def readable(self) -> bool:
        return True

    def start_idle(self) -> None:
        self.phase = "idle"

    def start_body(self) -> None:
        self.phase, self._body_start, self._body_bytes = "body", time.monotonic(), 0

    def _timeout(self) -> float:
        if self.phase == "idle":
            return self._d.idle_seconds
        if self.phase == "headers":
            left = self._deadline - time.monotonic()
        else:
            allowed = self._d.body_grace_seconds + self._body_bytes / self._d.body_min_rate
            left = self._body_start + allowed - time.monotonic()
        if left <= 0:
            raise DeadlinePassed(f"the request {self.phase} took too long")
        return left

    def readinto(self, buffer) -> int:
        self._sock.settimeout(self._timeout())
        try:
            n = self._sock.recv_into(buffer)
        except TimeoutError:
            if self.phase == "idle":
                raise
            raise DeadlinePassed(f"the request {self.phase} took too long") from None
        if self.phase == "idle" and n:
            self.phase, self._deadline = "headers", time.monotonic() + self._d.header_seconds
        elif self.phase == "body":
            self._body_bytes += n
        return n


class Request:
    """A parsed request: method, path segments, query and the (unread) body."""

    def __init__(self, handler: Handler, method: str) -> None:
        self.method = method
        split = urlsplit(handler.path)
        self.raw_path = split.path
        try:
            self.query = parse_qs(split.query, keep_blank_values=True, max_num_fields=100)
        except ValueError:
            raise HubError(400, "Too many query parameters") from None
        self.segments = [unquote(s) for s in split.path.split("/")[1:]]
        self.body = Body(handler.rfile, handler.headers, handler.server.options.limits.max_body_bytes)
        self.content_type = handler.headers.get("Content-Type", "")
        self._json_limit = handler.server.options.limits.json_limit

    def json(self) -> dict:
        """The body as a JSON object ({} when empty); 400 when it is not one, 413 if too big."""
        raw = self.body.read_all(self._json_limit)
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise HubError(400, "Request body is not valid JSON") from None
        if not isinstance(data, dict):
            raise HubError(400, "Request body must be a JSON object")
        try:  # JSON escapes can spell lone surrogates, which no UTF-8 text holds
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise HubError(400, "Request body holds invalid Unicode (a lone surrogate)") from None
        return data

    def form(self) -> dict[str, list[str]]:
        """The body as an ``application/x-www-form-urlencoded`` form."""
        raw = self.body.read_all(self._json_limit)
        try:
            return parse_qs(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=100_000)
        except (UnicodeDecodeError, ValueError):
            raise HubError(400, "Request body is not a valid form") from None

    def flag(self, name: str) -> bool:
        return flag(self.query, name)


def flag(query: dict[str, list[str]], name: str) -> bool:
    return query.get(name, ["false"])[-1].lower() in ("1", "true", "yes")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rcp-data-local-hub"
    timeout = 300  # the first wait; then every read has its phase's deadline (DeadlineReader)
    # A response goes out in two writes (headers, then body): with Nagle's algorithm on, the
    # body waits for the client's delayed ACK of the headers (40 ms on Linux), request after
    # request. Measured: 200 LFS uploads of 2.5 MB took 5.1 s with it (both CPUs mostly idle),
    # 1.5-1.7 s without.
    disable_nagle_algorithm = True
    server: HubHTTPServer

    # -- plumbing -------------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        plain, self.reader = self.rfile, DeadlineReader(self.connection, self.server.options.deadlines)
        self.rfile = io.BufferedReader(self.reader, 64 << 10)
        plain.close()  # the socket's own reader, unused: closing it lets the socket close

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        # Only the request line and status are ever logged; headers (Authorization) never are.
        log.debug("%s %s", self.address_string(), format % args)

    def authorize_write(self) -> None:
        """401 without the server's bearer token, 403 on a read-only server (``auth``)."""
        options = self.server.options
        check_write(self.headers, options.token, options.read_only)

    def base_url(self) -> str:
        return f"http://{self.headers.get('Host') or self.server.authority}"

    def send_response(self, code: int, message: str | None = None) -> None:
        self._responded = True
        self.connection.settimeout(self.server.options.deadlines.send_seconds)
        super().send_response(code, message)

    def send_json(
        self,
        status: int,
        data: object,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json; charset=utf-8",
    ) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_hub_error(self, err: HubError) -> None:
        extra = dict(err.headers)
        if err.code:
            extra["X-Error-Code"] = err.code
        one_line = " ".join(err.message.split())
        extra["X-Error-Message"] = one_line.encode("ascii", "replace").decode()[:1000]
        self.send_json(err.status, {"error": err.message}, extra)

    def send_file(
        self, path: Path | None, size: int, headers: dict[str, str], range_header: str | None
    ) -> None:
        """Stream ``path`` (``size`` bytes) from disk in chunks, honouring a ``bytes=`` range
        (``path`` may be None for HEAD or an empty file)."""
        start, end, status = 0, size - 1, 200
        if range_header:
            span = parse_range(range_header, size)
            if span is not None:
                start, end = span
                status = 206
        length = max(end - start + 1, 0)
        reading = path is not None and self.command != "HEAD" and length
        with open(path, "rb") if reading else contextlib.nullcontext() as fh:
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            for key, value in headers.items():
                self.send_header(key, value)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if fh is None:
                return
            fh.seek(start)
            remaining = length
            while remaining:
                chunk = fh.read(min(CHUNK, remaining))
                if not chunk:
                    raise OSError(errno.EIO, "file shorter than expected")
                self.wfile.write(chunk)
                remaining -= len(chunk)

    def _dispatch(self, method: str) -> None:
        self._responded = False
        req: Request | None = None
        self.reader.start_body()
        try:
            req = Request(self, method)
            self.server.route(self, req)
        except ClientGone:
            self.close_connection = True
            return
        except HubError as err:
            level = logging.WARNING if err.status >= 500 else logging.DEBUG
            log.log(level, "%s %s -> %d %s", method, self.path[:200], err.status, err.message)
            self._answer_error(err)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
            return
        except OSError as exc:
            self._log_failure(method, exc)
            if exc.errno == errno.ENOSPC:
                self._answer_error(HubError(507, "The local Hub's disk is full"))
            else:
                self._answer_error(HubError(500, f"Internal error: {type(exc).__name__}"))
        except Exception as exc:  # noqa: BLE001 - a server must answer, not die
            self._log_failure(method, exc)
            self._answer_error(HubError(500, f"Internal error: {type(exc).__name__}"))
        try:
            if req is None or not req.body.drain(DRAIN_BYTES):
                self._linger()
        except (HubError, ClientGone):
            self._linger()
        self.reader.start_idle()

    def _linger(self) -> None:
        """Close a connection whose body was not read: half-close, then discard what the client
        still sends for a moment, so it reads the answer instead of a reset connection."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(LINGER_SECONDS)
            deadline, left = time.monotonic() + LINGER_SECONDS, LINGER_BYTES
            while left > 0 and time.monotonic() < deadline:
                data = self.connection.recv(CHUNK)
                if not data:
                    break
                left -= len(data)
        except OSError:
            pass

    def _log_failure(self, method: str, exc: BaseException) -> None:
        """One line in the server's log; the traceback only at DEBUG (``rcp-data -v``)."""
        log.error("%s %s failed: %s: %s", method, self.path[:200], type(exc).__name__, exc)
        log.debug("traceback of the failure above", exc_info=exc)

    def _answer_error(self, err: HubError) -> None:
        if self._responded:  # the status line is out: all that is left is to hang up
            self.close_connection = True
            return
        try:
            self.send_hub_error(err)
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch("HEAD")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``(first, last)`` byte of a single ``bytes=`` range; None to send everything; 416 when
    it lies outside the file."""
    spec = header.strip()
    if not spec.startswith("bytes=") or "," in spec:
        return None
    first, sep, last = spec[len("bytes=") :].partition("-")
    if not sep or not (first.isdigit() or first == "") or not (last.isdigit() or last == ""):
        return None
    if not first and not last:
        return None
    if first:
        start = int(first)
        end = min(int(last), size - 1) if last else size - 1
    else:
        start, end = max(size - int(last), 0), size - 1
    if start >= size or start > end:
        raise HubError(
            416,
            f"Range {spec[:100]} not satisfiable for {size} bytes",
            headers={"Content-Range": f"bytes */{size}"},
        )
    return start, end


class HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        store: GitStore,
        options: ServerOptions,
        route: Callable[[Handler, Request], None],
    ) -> None:
        super().__init__(address, Handler)
        self.store = store
        self.options = options
        self.route = route
        host, port = self.server_address[:2]
        self.authority = f"{host}:{port}"
        self.signer = UrlSigner()
        self.stats: Counter[str] = Counter()
        self._stats_guard = threading.Lock()
        self._open: set[socket.socket] = set()
        self._open_guard = threading.Lock()

    def count(self, name: str, amount: int = 1) -> None:
        with self._stats_guard:
            self.stats[name] += amount

    def process_request(self, request, client_address) -> None:
        with self._open_guard:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self._open_guard:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Hang up on every open (keep-alive) connection so no handler outlives the server."""
        with self._open_guard:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


__all__ = ["Handler", "HubHTTPServer", "Request", "ServerOptions", "flag", "parse_range"]
