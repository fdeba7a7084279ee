"""A local, git-backed server speaking the subset of the Hugging Face Hub HTTP API that the
unmodified ``huggingface_hub`` and ``datasets`` clients use (see ``shared/design/hub-api.md``).

Use it in-process::

    with LocalHub(root) as hub:          # binds 127.0.0.1 on a free port
        api = HfApi(endpoint=hub.url)   # pass the endpoint explicitly ...
        hf_hub_download(repo, name, repo_type="dataset", endpoint=hub.url)

``huggingface_hub`` reads ``HF_ENDPOINT`` when it is imported and ``datasets`` fixes its Hub URL
at its own import. Code that cannot pass ``endpoint=`` (``datasets.load_dataset``) must therefore
either set ``os.environ["HF_ENDPOINT"]`` to the hub's URL *before* importing ``datasets`` or
``huggingface_hub`` (choose the port up front: ``LocalHub(root, port=N)``), or run in a
subprocess whose environment carries ``HF_ENDPOINT``. The server answers every preupload with
``uploadMode: "regular"`` (content travels inline in the commit), so clients with or without
``hf_xet`` (``HF_HUB_DISABLE_XET``) need no Xet or LFS transfer.

The server never reads or logs the ``Authorization`` header: it has no accounts, anyone who can
reach the port can write, hence the loopback default.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import yaml

from rcp_data.hub.gitstore import (
    DEFAULT_BRANCH,
    REPO_TYPES,
    GitStore,
    HubError,
    Operation,
    TreeEntry,
    decode_content,
    entry_not_found,
    validate_path,
)

log = logging.getLogger(__name__)

_TYPE_PREFIX = {f"{t}s": t for t in REPO_TYPES}
_URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_FRONT_MATTER = re.compile(r"\A\s*---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_CHUNK = 1 << 20


def parse_front_matter(text: str) -> dict | None:
    """The YAML metadata block of a README (None when absent); HubError 400 when malformed."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return None
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise HubError(400, f"Invalid YAML in README.md metadata: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HubError(400, "README.md metadata must be a YAML mapping")
    return data


def _card_errors(card: dict) -> list[str]:
    """Light checks of the ``configs`` block that the Hub's validator also rejects."""
    configs = card.get("configs")
    if configs is None:
        return []
    if not isinstance(configs, list):
        return ["'configs' must be a list"]
    errors = []
    for i, cfg in enumerate(configs):
        if not isinstance(cfg, dict) or not isinstance(cfg.get("config_name"), str):
            errors.append(f"configs[{i}] must be a mapping with a string 'config_name'")
    return errors


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return query.get(name, ["false"])[-1].lower() in ("1", "true", "yes")


class _Request:
    """A parsed request: repo coordinates plus the remaining path segments."""

    def __init__(self, handler: _Handler, method: str) -> None:
        self.method = method
        split = urlsplit(handler.path)
        self.raw_path = split.path
        self.query = parse_qs(split.query, keep_blank_values=True)
        self.segments = [unquote(s) for s in split.path.split("/")[1:]]
        self.body = handler.read_body()

    def json(self) -> dict:
        if not self.body:
            return {}
        try:
            data = json.loads(self.body)
        except ValueError as exc:
            raise HubError(400, f"Request body is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise HubError(400, "Request body must be a JSON object")
        return data


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rcp-data-local-hub"
    timeout = 300  # idle keep-alive connections are closed after this many seconds
    server: _HubHTTPServer

    # -- plumbing -------------------------------------------------------------------------------

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        # Only the request line and status are ever logged; headers (Authorization) never are.
        log.debug("%s %s", self.address_string(), format % args)

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def base_url(self) -> str:
        return f"http://{self.headers.get('Host') or self.server.authority}"

    def send_json(self, status: int, data, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(data, default=str).encode()  # YAML dates in cardData
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
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
        extra["X-Error-Message"] = one_line.encode("ascii", "replace").decode()
        self.send_json(err.status, {"error": err.message}, extra)

    def _dispatch(self, method: str) -> None:
        try:
            req = _Request(self, method)
            _route(self, req)
        except HubError as err:
            level = logging.WARNING if err.status >= 500 else logging.DEBUG
            log.log(level, "%s %s -> %d %s", method, self.path, err.status, err.message)
            self.send_hub_error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - a server must answer, not die
            log.exception("%s %s failed", method, self.path)
            self.send_hub_error(HubError(500, f"Internal error: {type(exc).__name__}"))

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


class _HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self, address: tuple[str, int], store: GitStore, page_size: int, namespace: str
    ) -> None:
        super().__init__(address, _Handler)
        self.store = store
        self.page_size = page_size
        self.store_namespace = namespace
        host, port = self.server_address[:2]
        self.authority = f"{host}:{port}"
        self._open: set[socket.socket] = set()
        self._open_guard = threading.Lock()

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


# -- routing ------------------------------------------------------------------------------------


def _route(h: _Handler, req: _Request) -> None:
    seg, method = req.segments, req.method
    if seg[:1] == ["api"]:
        if seg[1:] == ["repos", "create"] and method == "POST":
            return _create_repo(h, req)
        if seg[1:] == ["repos", "delete"] and method == "DELETE":
            return _delete_repo(h, req)
        if seg[1:] == ["validate-yaml"] and method == "POST":
            return _validate_yaml(h, req)
        if len(seg) >= 4 and seg[1] in _TYPE_PREFIX:
            return _repo_api(h, req, _TYPE_PREFIX[seg[1]], f"{seg[2]}/{seg[3]}", seg[4:])
    elif method in ("GET", "HEAD"):
        if len(seg) >= 6 and seg[0] in ("datasets", "spaces") and seg[3] == "resolve":
            return _resolve(h, req, _TYPE_PREFIX[seg[0]], f"{seg[1]}/{seg[2]}", seg[4], seg[5:])
        if len(seg) >= 5 and seg[2] == "resolve":
            return _resolve(h, req, "model", f"{seg[0]}/{seg[1]}", seg[3], seg[4:])
    raise HubError(404, f"No such endpoint: {method} {req.raw_path}")


def _repo_api(h: _Handler, req: _Request, rtype: str, repo_id: str, rest: list[str]) -> None:
    store = h.server.store
    repo = store.existing(rtype, repo_id)
    action, args, method = (rest[0] if rest else ""), rest[1:], req.method
    rev = "/".join(args)  # clients quote '/' in revisions; accept it unquoted too
    if action == "" and method == "GET":
        return h.send_json(200, _repo_info(h, rtype, repo_id, repo, DEFAULT_BRANCH))
    if action == "refs" and method == "GET":
        return h.send_json(200, _refs(store, repo))
    if action == "tree" and args and method == "GET":
        return _tree(h, req, repo, args[0], "/".join(args[1:]))
    if not rev:
        raise HubError(404, f"No such endpoint: {method} {req.raw_path}")
    if action == "revision" and method == "GET":
        return h.send_json(200, _repo_info(h, rtype, repo_id, repo, rev))
    if action == "commits" and method == "GET":
        return _commits(h, req, repo, rev)
    if action == "paths-info" and method == "POST":
        return _paths_info(h, req, repo, rev)
    if action == "preupload" and method == "POST":
        return _preupload(h, req, repo, rev)
    if action == "commit" and method == "POST":
        return _commit(h, req, rtype, repo_id, repo, rev)
    if action == "tag" and method in ("POST", "DELETE"):
        return _tag(h, req, repo, rev)
    if action == "branch" and method in ("POST", "DELETE"):
        return _branch(h, req, repo, rev)
    raise HubError(404, f"No such endpoint: {method} {req.raw_path}")


# -- repositories -------------------------------------------------------------------------------


def _repo_url(h: _Handler, rtype: str, repo_id: str) -> str:
    return f"{h.base_url()}/{_URL_PREFIX[rtype]}{repo_id}"


def _repo_from_body(h: _Handler, body: dict) -> tuple[str, str]:
    rtype = body.get("type") or "model"
    if rtype not in REPO_TYPES:
        raise HubError(400, f"Invalid repo type {rtype!r}")
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise HubError(400, "Missing repository name")
    namespace = body.get("organization") or h.server.store_namespace
    return rtype, f"{namespace}/{name}"


def _create_repo(h: _Handler, req: _Request) -> None:
    rtype, repo_id = _repo_from_body(h, req.json())
    url = _repo_url(h, rtype, repo_id)
    if not h.server.store.create_repo(rtype, repo_id):
        message = f"You already created this {rtype} repo"
        return h.send_json(409, {"error": message, "url": url}, {"X-Error-Message": message})
    log.info("created %s repo %s", rtype, repo_id)
    h.send_json(200, {"url": url, "name": repo_id, "id": repo_id})


def _delete_repo(h: _Handler, req: _Request) -> None:
    rtype, repo_id = _repo_from_body(h, req.json())
    h.server.store.delete_repo(rtype, repo_id)
    log.info("deleted %s repo %s", rtype, repo_id)
    h.send_json(200, {})


def _validate_yaml(h: _Handler, req: _Request) -> None:
    content = req.json().get("content", "")
    try:
        card = parse_front_matter(str(content))
    except HubError as err:
        return h.send_json(400, {"errors": [{"message": err.message}], "warnings": []})
    errors = _card_errors(card or {})
    status = 400 if errors else 200
    h.send_json(status, {"errors": [{"message": e} for e in errors], "warnings": []})


def _repo_info(h: _Handler, rtype: str, repo_id: str, repo: Path, revision: str) -> dict:
    store = h.server.store
    commit = store.resolve(repo, revision)
    files = store.files(repo, commit)
    head = store.log_head(repo, commit)
    card = None
    readme = next((f for f in files if f.path == "README.md"), None)
    if readme is not None:
        with contextlib.suppress(HubError, UnicodeDecodeError):
            card = parse_front_matter(store.read_blob(repo, readme.oid).decode())
    info = {
        "_id": repo_id,
        "id": repo_id,
        "author": repo_id.split("/")[0],
        "sha": commit,
        "lastModified": head.date,
        "private": False,
        "gated": False,
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "tags": [],
        "siblings": [{"rfilename": f.path, "size": f.size, "blobId": f.oid} for f in files],
    }
    if card is not None:
        info["cardData"] = card
    if rtype == "model":
        info["modelId"] = repo_id
    return info


def _refs(store: GitStore, repo: Path) -> dict:
    groups: dict[str, list] = {"branches": [], "tags": [], "converts": [], "pullRequests": []}
    prefixes = {
        "refs/heads/": "branches",
        "refs/tags/": "tags",
        "refs/convert/": "converts",
        "refs/pr/": "pullRequests",
    }
    for ref in store.refs(repo):
        for prefix, group in prefixes.items():
            if ref.name.startswith(prefix):
                name = ref.name[len(prefix) :]
                groups[group].append({"name": name, "ref": ref.name, "targetCommit": ref.target})
    return groups


# -- listings -----------------------------------------------------------------------------------


def _paginate(
    h: _Handler, req: _Request, items: list, per_page: int, render: Callable = lambda x: x
) -> None:
    """Send one page of ``items`` (each passed through ``render``) with a GitHub-style
    ``Link: <...>; rel="next"`` header when more follow."""
    try:
        page = max(int(req.query.get("p", ["0"])[-1]), 0)
        per_page = max(min(per_page, int(req.query.get("limit", [str(per_page)])[-1])), 1)
    except ValueError as exc:
        raise HubError(400, "Invalid page parameters") from exc
    start = page * per_page
    chunk = [render(item) for item in items[start : start + per_page]]
    headers = {}
    if start + per_page < len(items):
        query = {k: v[-1] for k, v in req.query.items()}
        query["p"] = str(page + 1)
        headers["Link"] = f'<{h.base_url()}{req.raw_path}?{urlencode(query)}>; rel="next"'
    h.send_json(200, chunk, headers)


def _entry_json(h: _Handler, repo: Path, commit: str, entry: TreeEntry, expand: bool) -> dict:
    data = {"type": entry.kind, "oid": entry.oid, "size": entry.size, "path": entry.path}
    if expand:
        last = h.server.store.last_commit(repo, commit, entry.path)
        if last is not None:
            data["lastCommit"] = {"id": last.sha, "title": last.title, "date": last.date}
    return data


def _commits(h: _Handler, req: _Request, repo: Path, revision: str) -> None:
    store = h.server.store
    records = store.log(repo, store.resolve(repo, revision))
    items = [
        {
            "id": r.sha,
            "title": r.title,
            "message": r.message,
            "date": r.date,
            "authors": [{"user": r.author, "avatar": None}],
        }
        for r in records
    ]
    _paginate(h, req, items, h.server.page_size)


def _tree(h: _Handler, req: _Request, repo: Path, revision: str, path: str) -> None:
    store = h.server.store
    commit = store.resolve(repo, revision)
    expand = _flag(req.query, "expand")
    entries = store.list_tree(repo, commit, path, _flag(req.query, "recursive"))
    per_page = 50 if expand else h.server.page_size
    # expanding costs one `git log` per entry: only the page being sent is rendered
    _paginate(h, req, entries, per_page, lambda e: _entry_json(h, repo, commit, e, expand))


def _paths_info(h: _Handler, req: _Request, repo: Path, revision: str) -> None:
    store = h.server.store
    ctype = h.headers.get("Content-Type", "")
    if ctype.startswith("application/json"):
        body = req.json()
        paths, expand = body.get("paths", []), bool(body.get("expand", False))
    else:
        form = parse_qs(req.body.decode(), keep_blank_values=True)
        paths, expand = form.get("paths", []), _flag(form, "expand")
    commit = store.resolve(repo, revision)
    out = []
    for path in dict.fromkeys(p.strip("/") for p in paths):
        entry = store.entry(repo, commit, path) if path else None
        if entry is not None:
            out.append(_entry_json(h, repo, commit, entry, expand))
    h.send_json(200, out)


# -- writing ------------------------------------------------------------------------------------


def _preupload(h: _Handler, req: _Request, repo: Path, revision: str) -> None:
    store = h.server.store
    commit = store.resolve(repo, revision)
    existing = {f.path: f.oid for f in store.files(repo, commit)}
    files = req.json().get("files", [])
    if not isinstance(files, list):
        raise HubError(400, "'files' must be a list")
    answer = [
        {
            "path": f.get("path"),
            "uploadMode": "regular",
            "shouldIgnore": False,
            "oid": existing.get(f.get("path")),
        }
        for f in files
    ]
    h.send_json(200, {"files": answer, "commitOid": commit})


def _parse_commit_payload(body: bytes) -> tuple[dict, list[Operation]]:
    header: dict | None = None
    ops: list[Operation] = []
    for n, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            key, value = item["key"], item["value"]
        except (ValueError, KeyError, TypeError) as exc:
            raise HubError(400, f"Commit payload line {n} is not a {{key, value}} object") from exc
        if key == "header":
            header = value
        elif key == "file":
            path = validate_path(str(value.get("path", "")))
            ops.append(Operation("file", path, decode_content(value)))
        elif key in ("deletedFile", "deletedFolder"):
            ops.append(Operation(key, str(value.get("path", ""))))
        elif key == "lfsFile":
            raise HubError(
                400,
                "LFS uploads are not supported by the local Hub (it answers uploadMode regular)",
            )
        else:
            raise HubError(400, f"Unsupported commit payload key {key!r} on line {n}")
    if not isinstance(header, dict):
        raise HubError(400, "Commit payload has no header line")
    return header, ops


def _commit(h: _Handler, req: _Request, rtype: str, repo_id: str, repo: Path, rev: str) -> None:
    if _flag(req.query, "create_pr"):
        raise HubError(400, "Pull requests are not supported by the local Hub")
    header, ops = _parse_commit_payload(req.body)
    branch = rev.removeprefix("refs/heads/")
    sha, made = h.server.store.commit(
        repo,
        branch,
        ops,
        summary=str(header.get("summary") or ""),
        description=str(header.get("description") or ""),
        parent_commit=header.get("parentCommit"),
    )
    log.info(
        "%s %s@%s: %s (%d operations)",
        "committed" if made else "no-op commit on",
        repo_id,
        branch,
        sha,
        len(ops),
    )
    url = f"{_repo_url(h, rtype, repo_id)}/commit/{sha}"
    h.send_json(200, {"success": True, "commitOid": sha, "commitUrl": url, "pullRequestUrl": None})


def _tag(h: _Handler, req: _Request, repo: Path, rev: str) -> None:
    store = h.server.store
    if req.method == "DELETE":
        store.delete_ref(repo, f"refs/tags/{rev}")
        log.info("deleted tag %s in %s", rev, repo)
        return h.send_json(200, {})
    body = req.json()
    tag = body.get("tag")
    if not isinstance(tag, str) or not tag:
        raise HubError(400, "Missing 'tag'")
    target = store.create_tag(repo, tag, rev, body.get("message"))
    log.info("tagged %s as %s in %s", target, tag, repo)
    h.send_json(200, {"name": tag, "ref": f"refs/tags/{tag}", "targetCommit": target})


def _branch(h: _Handler, req: _Request, repo: Path, branch: str) -> None:
    store = h.server.store
    if req.method == "DELETE":
        if branch == DEFAULT_BRANCH:
            raise HubError(403, "Cannot delete the default branch")
        store.delete_ref(repo, f"refs/heads/{branch}")
        return h.send_json(200, {})
    body = req.json()
    if body.get("emptyBranch"):
        raise HubError(400, "Empty branches are not supported by the local Hub")
    target = store.create_branch(repo, branch, body.get("startingPoint"))
    h.send_json(200, {"name": branch, "ref": f"refs/heads/{branch}", "targetCommit": target})


# -- downloads ----------------------------------------------------------------------------------


def _resolve(h: _Handler, req: _Request, rtype: str, repo_id: str, rev: str, parts: list) -> None:
    store = h.server.store
    repo = store.existing(rtype, repo_id)
    commit = store.resolve(repo, rev)
    path = "/".join(parts)
    entry = store.entry(repo, commit, path) if path else None
    if entry is None or entry.kind != "file":
        err = entry_not_found(path)
        err.headers["X-Repo-Commit"] = commit
        raise err
    size = entry.size
    start, end, status = 0, size - 1, 200
    requested = h.headers.get("Range")
    if requested:
        match = _RANGE.match(requested.strip())
        if match and (match.group(1) or match.group(2)):
            first, last = match.groups()
            if first:
                start, end = int(first), min(int(last), size - 1) if last else size - 1
            else:
                start, end = max(size - int(last), 0), size - 1
            if start >= size or start > end:
                raise HubError(
                    416,
                    f"Range {requested} not satisfiable for {size} bytes",
                    headers={"Content-Range": f"bytes */{size}"},
                )
            status = 206
    length = max(end - start + 1, 0)
    # materialise the blob before any header goes out, so a failure can still answer 500
    blob = store.blob_file(repo, entry.oid) if req.method != "HEAD" and length else None
    h.send_response(status)
    h.send_header("Content-Type", "application/octet-stream")
    h.send_header("Content-Length", str(length))
    h.send_header("Accept-Ranges", "bytes")
    h.send_header("ETag", f'"{entry.oid}"')
    h.send_header("X-Repo-Commit", commit)
    if status == 206:
        h.send_header("Content-Range", f"bytes {start}-{end}/{size}")
    h.end_headers()
    if blob is None:
        return
    with open(blob, "rb") as fh:
        fh.seek(start)
        remaining = length
        while remaining:
            chunk = fh.read(min(_CHUNK, remaining))
            if not chunk:
                break
            h.wfile.write(chunk)
            remaining -= len(chunk)


# -- lifecycle ----------------------------------------------------------------------------------


class LocalHub:
    """A local Hub serving the repositories under ``root`` (see the module docstring).

    ``start()`` binds ``host:port`` (port 0: a free one), serves from a background thread and
    returns the URL; ``stop()`` closes it. Also a context manager.
    """

    def __init__(
        self,
        root: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        page_size: int = 1000,
        default_namespace: str = "local",
    ) -> None:
        self.root = Path(root)
        self.host = host
        self.port = port
        self.page_size = page_size
        self.default_namespace = default_namespace
        self._server: _HubHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the local Hub is not running")
        host, port = self._server.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}"

    def start(self) -> str:
        if self._server is not None:
            return self.url
        store = GitStore(self.root)
        server = _HubHTTPServer(
            (self.host, self.port), store, self.page_size, self.default_namespace
        )
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"local-hub-{self.port}", daemon=True
        )
        self._thread.start()
        if self.host not in ("127.0.0.1", "localhost", "::1"):
            log.warning("the local Hub has no authentication and listens on %s", self.host)
        log.info("local Hub serving %s at %s", self.root, self.url)
        return self.url

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=10)
        log.info("local Hub at %s:%s stopped", *server.server_address[:2])

    def __enter__(self) -> LocalHub:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now on ``host``: choose it, export ``HF_ENDPOINT``, then start the hub."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def embedded_hub(root: Path | None = None, *, port: int = 0) -> Iterator[str]:
    """Run a LocalHub on loopback for the duration of the block and yield its URL.

    ``root`` None stores repositories in a temporary folder removed afterwards. Clients must be
    pointed at the URL explicitly: ``HfApi(endpoint=url)``, ``hf_hub_download(..., endpoint=url)``.
    ``datasets`` only honours ``HF_ENDPOINT`` read at its import: set ``os.environ["HF_ENDPOINT"]``
    before importing it (or ``huggingface_hub``), or load in a subprocess with that environment::

        port = free_port()
        os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
        os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
        with embedded_hub(port=port) as url:
            import datasets  # first import after the environment is set
    """
    tmp = None
    if root is None:
        tmp = tempfile.mkdtemp(prefix="rcp-local-hub-")
        root = Path(tmp)
    hub = LocalHub(root, port=port)
    try:
        yield hub.start()
    finally:
        hub.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def serve_forever(
    root: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM, then stop cleanly (call from the main thread)."""
    stop = threading.Event()
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, lambda *_: stop.set())
    hub = LocalHub(root, host, port)
    try:
        url = hub.start()
        if on_ready is not None:
            on_ready(url)
        while not stop.wait(0.5):
            pass
    finally:
        hub.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


__all__ = ["LocalHub", "embedded_hub", "free_port", "serve_forever", "parse_front_matter"]
