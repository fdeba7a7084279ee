"""git's smart HTTP protocol, read-only, through git's own implementation (``git http-backend``).

``GET /{prefix}{repo}[.git]/info/refs?service=git-upload-pack`` and ``POST
/{prefix}{repo}[.git]/git-upload-pack`` are handed to ``git http-backend`` as a CGI program, so
the protocol (v0 and v2, ``Git-Protocol``), a gzip request body (``Content-Encoding: gzip``)
and the pack itself are git's own code; this module only bridges the HTTP layer and the CGI:
the request body is read within the server's limits and deadlines (``rcp_data.hub.limits``)
into a temporary file first, and the answer is streamed back chunked as git writes it. A
commit is fetchable by its sha when a ref reaches it (``uploadpack.allowReachableSHA1InWant``).

Reads are open, as a public dataset's are. Pushing (``git-receive-pack``) is refused 403 with a
text message (git shows it as ``remote: ...``): the Hub takes writes only through its commit
API. The dumb protocol (``info/refs`` without ``service``, ``objects/...``) is not served.
"""

from __future__ import annotations

import contextlib
import logging
import re
import subprocess
from pathlib import Path

from rcp_data.hub.errors import HubError
from rcp_data.hub.limits import CHUNK
from rcp_data.hub.transport import Handler, Request

log = logging.getLogger("rcp_data.hub.server")

UPLOAD_PACK = "git-upload-pack"
RECEIVE_PACK = "git-receive-pack"
PUSH_REFUSED = ("The local Hub is read-only over git: it takes writes only through its commit "
                "API (huggingface_hub's HfApi.create_commit or upload_folder); git push is "
                "refused")
_GIT_PROTOCOL = re.compile(r"^[A-Za-z0-9=:._-]{1,100}$")
_CONTENT_TYPE = re.compile(r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+$")
_PASSED_HEADERS = ("content-type", "cache-control", "expires", "pragma")
#: What the served upload-pack is configured with (``GIT_CONFIG_*``): a commit a ref reaches
#: may be fetched by its sha; no push, no dumb-protocol files.
_SERVE_CONFIG = (("uploadpack.allowReachableSHA1InWant", "true"),
                 ("http.receivepack", "false"), ("http.getanyfile", "false"),
                 ("http.uploadpack", "true"))


def is_git_route(rest: list[str]) -> bool:
    """Whether ``rest`` (the path after the repo type prefix) names a git smart-HTTP route:
    ``OWNER/NAME[.git]/info/refs`` or ``.../git-upload-pack`` (``git clone`` of the repo's URL
    without ``.git`` asks the same, as on the real Hub)."""
    return len(rest) >= 3 and (rest[2:] == ["info", "refs"]
                               or rest[2:] in ([UPLOAD_PACK], [RECEIVE_PACK]))


def route_git(h: Handler, req: Request, repo: Path, rest: list[str]) -> None:
    """Answer one git smart-HTTP request for the bare repository ``repo``."""
    tail = "/".join(rest[2:])
    service = req.query.get("service", [""])[-1]
    if tail == RECEIVE_PACK or (tail == "info/refs" and service == RECEIVE_PACK):
        return send_text(h, 403, PUSH_REFUSED)
    if tail == "info/refs":
        if req.method != "GET":
            raise HubError(405, "info/refs is read with GET")
        if service != UPLOAD_PACK:
            raise HubError(403, "The local Hub serves git's smart HTTP protocol only "
                           "(info/refs?service=git-upload-pack)")
        return _run_backend(h, req, repo, "info/refs", f"service={UPLOAD_PACK}", None)
    if req.method != "POST":
        raise HubError(405, f"{UPLOAD_PACK} is called with POST")
    with h.server.store.workdir("git") as work:
        body = work / "request"
        with body.open("wb") as sink:
            size = req.body.copy_to(sink)
        return _run_backend(h, req, repo, UPLOAD_PACK, "", (body, size))


def send_text(h: Handler, status: int, message: str) -> None:
    """A plain-text answer: what git prints of an HTTP error (``remote: <message>``)."""
    data = f"{message}\n".encode()
    h.send_response(status)
    h.send_header("Content-Type", "text/plain; charset=utf-8")
    h.send_header("Content-Length", str(len(data)))
    h.send_header("X-Error-Message", message)
    h.end_headers()
    h.wfile.write(data)


def _environment(h: Handler, req: Request, repo: Path, tail: str, query: str,
                 size: int | None) -> dict[str, str]:
    store = h.server.store
    env = {**store.git_environment(), "GIT_PROJECT_ROOT": str(repo.parent.parent),
           "PATH_INFO": f"/{repo.parent.name}/{repo.name}/{tail}",   # the bare repo's own name
           "REQUEST_METHOD": req.method, "QUERY_STRING": query, "GIT_HTTP_EXPORT_ALL": "1",
           "REMOTE_ADDR": str(h.client_address[0]), "SERVER_PROTOCOL": "HTTP/1.1",
           "GIT_CONFIG_COUNT": str(len(_SERVE_CONFIG))}
    for i, (key, value) in enumerate(_SERVE_CONFIG):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    protocol = h.headers.get("Git-Protocol", "")
    if _GIT_PROTOCOL.match(protocol):
        env["GIT_PROTOCOL"] = protocol
    if size is not None:
        env["CONTENT_LENGTH"] = str(size)
        content_type = req.content_type.split(";")[0].strip()
        if _CONTENT_TYPE.match(content_type):
            env["CONTENT_TYPE"] = content_type
        encoding = (h.headers.get("Content-Encoding") or "").strip().lower()
        if encoding in ("gzip", "x-gzip"):
            env["HTTP_CONTENT_ENCODING"] = encoding
        elif encoding not in ("", "identity"):
            raise HubError(415, "Unsupported Content-Encoding (gzip or none)")
    return env


def _run_backend(h: Handler, req: Request, repo: Path, tail: str, query: str,
                 body: tuple[Path, int] | None) -> None:
    """Run ``git http-backend`` on the request and stream its answer (chunked)."""
    store = h.server.store
    env = _environment(h, req, repo, tail, query, body[1] if body else None)
    with store.workdir("git-err") as work, (work / "stderr").open("w+b") as err, \
            (body[0].open("rb") if body else contextlib.nullcontext()) as stdin:
        proc = subprocess.Popen([store.git, "http-backend"],
                                stdin=subprocess.DEVNULL if stdin is None else stdin,
                                stdout=subprocess.PIPE, stderr=err, env=env)
        try:
            status, headers = _cgi_headers(proc)
            _stream(h, proc, status, headers)
            code = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()
        if code != 0:
            err.seek(0)
            log.warning("git http-backend for %s exited %d: %s", repo.name, code,
                        err.read(2000).decode(errors="replace").strip())
    h.server.count("git_requests")


def _cgi_headers(proc: subprocess.Popen) -> tuple[int, list[tuple[str, str]]]:
    """The status and headers a CGI program wrote before its body (500 when it wrote none)."""
    assert proc.stdout is not None
    status, headers = 200, []
    for _ in range(100):
        line = proc.stdout.readline(8192)
        if not line:
            log.error("git http-backend wrote no answer")
            raise HubError(500, "Internal error: git http-backend failed")
        text = line.decode("latin-1").rstrip("\r\n")
        if not text:
            return status, headers
        key, _, value = text.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "status":
            status = int(value.split()[0]) if value[:3].isdigit() else 500
        elif key in _PASSED_HEADERS:
            headers.append((key.title(), value))
    raise HubError(500, "Internal error: git http-backend wrote too many headers")


def _stream(h: Handler, proc: subprocess.Popen, status: int,
            headers: list[tuple[str, str]]) -> None:
    assert proc.stdout is not None
    h.send_response(status)
    for key, value in headers:
        h.send_header(key, value)
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    while chunk := proc.stdout.read1(CHUNK):
        h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    h.wfile.write(b"0\r\n\r\n")


__all__ = ["PUSH_REFUSED", "is_git_route", "route_git", "send_text"]
