"""A local, git-backed server speaking the subset of the Hugging Face Hub HTTP API that the
unmodified ``huggingface_hub`` and ``datasets`` clients use (see ``docs/concepts/local-hub.md``).

Use it in-process::

    with LocalHub(root) as hub:          # binds 127.0.0.1 on a free port
        api = HfApi(endpoint=hub.url)   # pass the endpoint explicitly ...
        hf_hub_download(repo, name, repo_type="dataset", endpoint=hub.url)

``huggingface_hub`` reads ``HF_ENDPOINT`` when it is imported and ``datasets`` fixes its Hub URL
at its own import. Code that cannot pass ``endpoint=`` (``datasets.load_dataset``) must therefore
either set ``os.environ["HF_ENDPOINT"]`` to the hub's URL *before* importing ``datasets`` or
``huggingface_hub`` (choose the port up front: ``LocalHub(root, port=N)``), or run in a
subprocess whose environment carries ``HF_ENDPOINT``.

Files go where the real Hub puts them: preupload answers ``lfs`` for tables, images, binaries
and anything over 10 MiB (the rule: ``rcp_data.hub.lfs``) and ``regular`` for the rest. LFS
content travels through the git-LFS batch API (``rcp_data.hub.lfs_api``), so clients must run
with ``HF_HUB_DISABLE_XET=1``: a local Hub has no Xet storage, and a Xet token request is
answered 501 saying so.

Endpoints (``{t}s`` is ``datasets``, ``spaces`` or ``models``; model URLs have no prefix):
``POST /api/repos/create``, ``DELETE /api/repos/delete``, ``POST /api/validate-yaml``;
under ``/api/{t}s/{repo}``: ``GET`` (info), ``GET revision/{rev}``, ``GET refs``,
``GET commits/{rev}``, ``GET tree/{rev}[/{path}]``, ``POST paths-info/{rev}``,
``POST preupload/{rev}``, ``POST commit/{rev}`` (NDJSON with ``file``, ``lfsFile``,
``deletedFile``, ``deletedFolder`` lines), ``POST|DELETE tag/{rev}``,
``POST|DELETE branch/{name}``, ``GET xet-{read,write}-token/{rev}`` (501);
``HEAD|GET /{prefix}{repo}/resolve/{rev}/{path}`` (ranges; LFS files with ``X-Linked-Etag``
and ``X-Linked-Size``); ``/{prefix}{repo}.git/info/lfs/objects/...`` (the LFS API);
``GET /{prefix}{repo}.git/info/refs?service=git-upload-pack`` and ``POST
/{prefix}{repo}.git/git-upload-pack`` (git's smart HTTP, read-only: ``git clone`` works, a push
is refused 403; ``rcp_data.hub.git_http``).

Hardening: request bodies are streamed with a size limit (``max_body_bytes``, 413 above it;
``rcp-data hub serve --max-body-bytes``) and commit bodies are decoded from disk a piece at a
time; malformed requests get 400 and error messages never carry a server path; branch and tag
names follow ``git check-ref-format`` and may not shadow one another; README metadata is read
with an alias budget (``rcp_data.hub.cards``); start-up removes temporary files and stale git
locks of a killed server, and one server at a time serves a root.

Auth (``rcp_data.hub.auth``), the real Hub's path: reads are open (public datasets); every
write needs ``Authorization: Bearer <token>`` (401 with the real Hub's JSON error otherwise) and
a read-only server refuses writes (403). The token comes from ``token=`` or ``token_file=``, else
a new one is generated into ``<root>/.hub-token`` (mode 0600) at start. Clients pass it the
usual ``huggingface_hub`` way (``HfApi(token=...)``, ``$HF_TOKEN``, ``HubClient(token=...)``).
The ``Authorization`` header is compared and never logged or stored.
Deadlines on slow headers and bodies: ``rcp_data.hub.limits.Deadlines``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import logging
import re
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlencode

from rcp_data.hub.auth import generate_token_file, read_token_file
from rcp_data.hub.cards import MAX_CARD_BYTES, card_errors, parse_front_matter
from rcp_data.hub.errors import HubError, entry_not_found, shorten
from rcp_data.hub.git_http import is_git_route, route_git
from rcp_data.hub.gitstore import DEFAULT_BRANCH, REPO_TYPES, GitStore, TreeEntry
from rcp_data.hub.lfs import DEFAULT_CHUNK_SIZE, upload_mode
from rcp_data.hub.lfs_api import refuse_xet, route_lfs
from rcp_data.hub.limits import DEFAULT_MAX_BODY_BYTES, Deadlines, Limits
from rcp_data.hub.names import validate_path
from rcp_data.hub.payload import read_commit_payload
from rcp_data.hub.transport import Handler, HubHTTPServer, Request, ServerOptions

log = logging.getLogger(__name__)

_TYPE_PREFIX = {f"{t}s": t for t in REPO_TYPES}
_URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_PARENT_RE = re.compile(r"^[0-9a-fA-F]{4,40}$")
MAX_PATHS_INFO = 10_000
MAX_PATHS_INFO_EXPANDED = 1_000
MAX_PREUPLOAD_FILES = 1_000


def _not_found(req: Request) -> HubError:
    return HubError(404, f"No such endpoint: {req.method} {shorten(req.raw_path)}")


# -- routing ------------------------------------------------------------------------------------


_READ_POSTS = ("validate-yaml", "paths-info")  # POSTs that change nothing


def _route(h: Handler, req: Request) -> None:
    seg, method = req.segments, req.method
    if seg[:1] == ["api"]:
        action = seg[1] if len(seg) == 2 else seg[4] if len(seg) >= 5 else ""
        if method in ("POST", "PUT", "DELETE") and action not in _READ_POSTS:
            h.authorize_write()
        if seg[1:] == ["repos", "create"] and method == "POST":
            return _create_repo(h, req)
        if seg[1:] == ["repos", "delete"] and method == "DELETE":
            return _delete_repo(h, req)
        if seg[1:] == ["validate-yaml"] and method == "POST":
            return _validate_yaml(h, req)
        if len(seg) >= 4 and seg[1] in _TYPE_PREFIX:
            return _repo_api(h, req, _TYPE_PREFIX[seg[1]], f"{seg[2]}/{seg[3]}", seg[4:])
        raise _not_found(req)
    typed = len(seg) >= 1 and seg[0] in ("datasets", "spaces")
    rtype, rest = (_TYPE_PREFIX[seg[0]], seg[1:]) if typed else ("model", seg)
    if len(rest) >= 5 and rest[1].endswith(".git") and rest[2:4] == ["info", "lfs"]:
        if rest[4:5] != ["objects"]:
            raise _not_found(req)
        repo_id = f"{rest[0]}/{rest[1].removesuffix('.git')}"
        repo = h.server.store.existing(rtype, repo_id)
        base = f"{h.base_url()}/{_URL_PREFIX[rtype]}{repo_id}.git/info/lfs/objects"
        return route_lfs(h, req, repo, base, rest[5:])
    if is_git_route(rest):   # git's smart HTTP, read-only (rcp_data.hub.git_http)
        repo = h.server.store.existing(rtype, f"{rest[0]}/{rest[1].removesuffix('.git')}")
        return route_git(h, req, repo, rest)
    if method in ("GET", "HEAD") and len(rest) >= 5 and rest[2] == "resolve":
        return _resolve(h, req, rtype, f"{rest[0]}/{rest[1]}", rest[3], rest[4:])
    raise _not_found(req)


def _repo_api(h: Handler, req: Request, rtype: str, repo_id: str, rest: list[str]) -> None:
    store = h.server.store
    repo = store.existing(rtype, repo_id)
    action, args, method = (rest[0] if rest else ""), rest[1:], req.method
    rev = "/".join(args)  # clients quote '/' in revisions; accept it unquoted too
    if action == "" and method == "GET":
        return h.send_json(200, _repo_info(h, rtype, repo_id, repo, DEFAULT_BRANCH))
    if action == "refs" and method == "GET":
        return h.send_json(200, _refs(store, repo))
    if action in ("xet-write-token", "xet-read-token"):
        return refuse_xet()
    if action == "tree" and args and method == "GET":
        return _tree(h, req, repo, args[0], "/".join(args[1:]))
    if not rev:
        raise _not_found(req)
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
    raise _not_found(req)


# -- repositories -------------------------------------------------------------------------------


def _repo_url(h: Handler, rtype: str, repo_id: str) -> str:
    return f"{h.base_url()}/{_URL_PREFIX[rtype]}{repo_id}"


def _repo_from_body(h: Handler, body: dict) -> tuple[str, str]:
    rtype = body.get("type") or "model"
    if rtype not in REPO_TYPES:
        raise HubError(400, "Invalid repo type")
    name = body.get("name")
    namespace = body.get("organization") or h.server.options.namespace
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        raise HubError(400, "Missing or invalid repository name")
    repo_id = f"{namespace}/{name}"
    h.server.store.repo_path(rtype, repo_id)  # validates both parts (400)
    return rtype, repo_id


def _create_repo(h: Handler, req: Request) -> None:
    rtype, repo_id = _repo_from_body(h, req.json())
    url = _repo_url(h, rtype, repo_id)
    if not h.server.store.create_repo(rtype, repo_id):
        message = f"You already created this {rtype} repo"
        return h.send_json(409, {"error": message, "url": url}, {"X-Error-Message": message})
    log.info("created %s repo %s", rtype, repo_id)
    h.send_json(200, {"url": url, "name": repo_id, "id": repo_id})


def _delete_repo(h: Handler, req: Request) -> None:
    rtype, repo_id = _repo_from_body(h, req.json())
    h.server.store.delete_repo(rtype, repo_id)
    log.info("deleted %s repo %s", rtype, repo_id)
    h.send_json(200, {})


def _validate_yaml(h: Handler, req: Request) -> None:
    content = req.json().get("content", "")
    if not isinstance(content, str):
        raise HubError(400, "'content' must be a string")
    try:
        card = parse_front_matter(content)
    except HubError as err:
        return h.send_json(400, {"errors": [{"message": err.message}], "warnings": []})
    errors = card_errors(card or {})
    status = 400 if errors else 200
    h.send_json(status, {"errors": [{"message": e} for e in errors], "warnings": []})


def _card(store: GitStore, repo: Path, files: list[TreeEntry]) -> dict | None:
    """The README's metadata, None when absent, too large, stored in LFS or invalid."""
    readme = next((f for f in files if f.path == "README.md"), None)
    if readme is None or readme.lfs is not None or readme.size > MAX_CARD_BYTES:
        return None
    with contextlib.suppress(HubError, UnicodeDecodeError):
        return parse_front_matter(store.read_blob(repo, readme.oid).decode())
    return None


def _sibling(entry: TreeEntry) -> dict:
    data = {"rfilename": entry.path, "size": entry.size, "blobId": entry.oid}
    if entry.lfs is not None:
        lfs = entry.lfs
        data["lfs"] = {"sha256": lfs.oid, "size": lfs.size, "pointerSize": lfs.pointer_size}
    return data


def _repo_info(h: Handler, rtype: str, repo_id: str, repo: Path, revision: str) -> dict:
    store = h.server.store
    commit = store.resolve(repo, revision)
    files = store.files(repo, commit)
    head = store.log_head(repo, commit)
    card = _card(store, repo, files)
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
        "siblings": [_sibling(f) for f in files],
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
    h: Handler, req: Request, items: list, per_page: int, render: Callable = lambda x: x
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


def _entry_json(h: Handler, repo: Path, commit: str, entry: TreeEntry, expand: bool) -> dict:
    data: dict = {"type": entry.kind, "oid": entry.oid, "size": entry.size, "path": entry.path}
    if entry.lfs is not None:
        lfs = entry.lfs
        data["lfs"] = {"oid": lfs.oid, "size": lfs.size, "pointerSize": lfs.pointer_size}
    if expand:
        last = h.server.store.last_commit(repo, commit, entry.path)
        if last is not None:
            data["lastCommit"] = {"id": last.sha, "title": last.title, "date": last.date}
    return data


def _commits(h: Handler, req: Request, repo: Path, revision: str) -> None:
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
    _paginate(h, req, items, h.server.options.page_size)


def _tree(h: Handler, req: Request, repo: Path, revision: str, path: str) -> None:
    store = h.server.store
    commit = store.resolve(repo, revision)
    expand = req.flag("expand")
    entries = store.list_tree(repo, commit, path, req.flag("recursive"))
    per_page = 50 if expand else h.server.options.page_size
    # expanding costs one `git log` per entry: only the page being sent is rendered
    _paginate(h, req, entries, per_page, lambda e: _entry_json(h, repo, commit, e, expand))


def _paths_info(h: Handler, req: Request, repo: Path, revision: str) -> None:
    store = h.server.store
    if req.content_type.startswith("application/json"):
        body = req.json()
        paths, expand = body.get("paths", []), body.get("expand", False) is True
    else:
        form = req.form()
        paths, expand = form.get("paths", []), req.flag("expand") or _form_flag(form, "expand")
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise HubError(400, "'paths' must be a list of strings")
    wanted = [p for p in dict.fromkeys(p.strip("/") for p in paths) if p]
    limit = MAX_PATHS_INFO_EXPANDED if expand else MAX_PATHS_INFO
    if len(wanted) > limit:
        raise HubError(400, f"At most {limit} paths per paths-info request")
    commit = store.resolve(repo, revision)
    if len(wanted) > 20:  # one listing instead of one git call per path
        listing = {e.path: e for e in store.list_tree(repo, commit, "", recursive=True)}
        entries = [listing.get(p) for p in wanted]
    else:
        entries = [store.entry(repo, commit, p) for p in wanted]
    h.send_json(200, [_entry_json(h, repo, commit, e, expand) for e in entries if e is not None])


def _form_flag(form: dict[str, list[str]], name: str) -> bool:
    return form.get(name, ["false"])[-1].lower() in ("1", "true", "yes")


# -- writing ------------------------------------------------------------------------------------


def _preupload(h: Handler, req: Request, repo: Path, revision: str) -> None:
    store = h.server.store
    files = req.json().get("files", [])
    if not isinstance(files, list) or len(files) > MAX_PREUPLOAD_FILES:
        raise HubError(400, f"'files' must be a list of at most {MAX_PREUPLOAD_FILES} entries")
    commit = store.resolve(repo, revision)
    existing = {f.path: f for f in store.files(repo, commit)}
    answer = []
    for f in files:
        if not isinstance(f, dict):
            raise HubError(400, "Each preupload file must be an object")
        path, size, sample = validate_path(f.get("path")), f.get("size"), f.get("sample", "")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise HubError(400, f"Invalid size for {shorten(path)!r}")
        if not isinstance(sample, str) or len(sample) > 4096:
            raise HubError(400, f"Invalid sample for {shorten(path)!r}")
        try:
            head = base64.b64decode(sample, validate=True)
        except (binascii.Error, ValueError):
            raise HubError(400, f"Invalid base64 sample for {shorten(path)!r}") from None
        current = existing.get(path)
        oid = None
        if current is not None:
            oid = current.lfs.oid if current.lfs is not None else current.oid
        answer.append(
            {
                "path": path,
                "uploadMode": upload_mode(path, size, head),
                "shouldIgnore": False,
                "oid": oid,
            }
        )
    h.send_json(200, {"files": answer, "commitOid": commit})


def _header_text(header: dict, key: str) -> str:
    value = header.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise HubError(400, f"Commit header '{key}' must be a string")
    return _message_text(value, f"Commit header '{key}'")


def _message_text(value: str, what: str) -> str:
    """A commit or tag message: UTF-8 text without NUL (git refuses one)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise HubError(400, f"{what} is not valid Unicode") from None
    if "\x00" in value:
        raise HubError(400, f"{what} holds a NUL character")
    return value


def _commit(h: Handler, req: Request, rtype: str, repo_id: str, repo: Path, rev: str) -> None:
    if req.flag("create_pr"):
        raise HubError(400, "Pull requests are not supported by the local Hub")
    store = h.server.store
    branch = rev.removeprefix("refs/heads/")
    with store.workdir("commit") as work:
        header, ops = read_commit_payload(req.body, work)
        parent = header.get("parentCommit")
        if parent is not None and (not isinstance(parent, str) or not _PARENT_RE.match(parent)):
            raise HubError(400, "Commit header 'parentCommit' must be a commit sha")
        sha, made = store.commit(
            repo,
            branch,
            ops,
            summary=_header_text(header, "summary"),
            description=_header_text(header, "description"),
            parent_commit=parent,
        )
    h.server.count("commits" if made else "noop_commits")
    log.info(
        "%s %s@%s: %s (%d operations, %d via LFS)",
        "committed" if made else "no-op commit on",
        repo_id,
        branch,
        sha,
        len(ops),
        sum(op.kind == "lfsFile" for op in ops),
    )
    url = f"{_repo_url(h, rtype, repo_id)}/commit/{sha}"
    h.send_json(200, {"success": True, "commitOid": sha, "commitUrl": url, "pullRequestUrl": None})


def _tag(h: Handler, req: Request, repo: Path, rev: str) -> None:
    store = h.server.store
    if req.method == "DELETE":
        store.delete_ref(repo, f"refs/tags/{rev}")
        log.info("deleted tag %s in %s", rev, repo.name)
        return h.send_json(200, {})
    body = req.json()
    tag, message = body.get("tag"), body.get("message")
    if message is not None and not isinstance(message, str):
        raise HubError(400, "Tag 'message' must be a string")
    if message is not None:
        _message_text(message, "Tag 'message'")
    target = store.create_tag(repo, tag, rev, message)
    log.info("tagged %s as %s in %s", target, tag, repo.name)
    h.send_json(200, {"name": tag, "ref": f"refs/tags/{tag}", "targetCommit": target})


def _branch(h: Handler, req: Request, repo: Path, branch: str) -> None:
    store = h.server.store
    if req.method == "DELETE":
        if branch == DEFAULT_BRANCH:
            raise HubError(403, "Cannot delete the default branch")
        store.delete_ref(repo, f"refs/heads/{branch}")
        return h.send_json(200, {})
    body = req.json()
    if body.get("emptyBranch"):
        raise HubError(400, "Empty branches are not supported by the local Hub")
    start = body.get("startingPoint")
    if start is not None and not isinstance(start, str):
        raise HubError(400, "'startingPoint' must be a revision")
    target = store.create_branch(repo, branch, start)
    h.send_json(200, {"name": branch, "ref": f"refs/heads/{branch}", "targetCommit": target})


# -- downloads ----------------------------------------------------------------------------------


def _resolve(h: Handler, req: Request, rtype: str, repo_id: str, rev: str, parts: list) -> None:
    store = h.server.store
    repo = store.existing(rtype, repo_id)
    commit = store.resolve(repo, rev)
    path = "/".join(parts)
    entry = store.entry(repo, commit, path) if path else None
    if entry is None or entry.kind != "file":
        err = entry_not_found(path)
        err.headers["X-Repo-Commit"] = commit
        raise err
    headers = {"X-Repo-Commit": commit}
    if entry.lfs is not None:
        etag = f'"{entry.lfs.oid}"'
        headers.update({"ETag": etag, "X-Linked-Etag": etag, "X-Linked-Size": str(entry.size)})
    else:
        headers["ETag"] = f'"{entry.oid}"'
    # the content file is materialised before any header goes out, so a failure can still answer
    content = store.content_file(repo, entry) if req.method != "HEAD" and entry.size else None
    h.send_file(content, entry.size, headers, h.headers.get("Range"))


# -- lifecycle ----------------------------------------------------------------------------------


class LocalHub:
    """A local Hub serving the repositories under ``root`` (see the module docstring).

    ``start()`` binds ``host:port`` (port 0: a free one), serves from a background thread and
    returns the URL; ``stop()`` closes it. Also a context manager. ``max_body_bytes`` bounds
    one request body (413 above); ``lfs_chunk_size`` is the part size of multipart LFS uploads
    (at most ``max_body_bytes``).

    Writes need the bearer token: ``token``, else the first line of ``token_file``, else one
    generated into ``<root>/.hub-token`` (0600) at ``start()``; ``.token`` and ``.token_file``
    say which. ``read_only`` refuses every write (403). ``deadlines`` bound slow clients.
    """

    def __init__(
        self,
        root: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        page_size: int = 1000,
        default_namespace: str = "local",
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        lfs_chunk_size: int | None = None,
        token: str | None = None,
        token_file: Path | None = None,
        read_only: bool = False,
        deadlines: Deadlines | None = None,
    ) -> None:
        self.root = Path(root)
        self.host = host
        self.port = port
        if token is not None and not token.strip():
            raise ValueError("the local Hub's token must not be empty")
        self._token = token
        self.token_file = Path(token_file) if token_file is not None else None
        if token is None and self.token_file is not None:
            self._token = read_token_file(self.token_file)
        self.read_only = read_only
        self.options = ServerOptions(page_size, default_namespace, Limits(max_body_bytes),
                                     deadlines or Deadlines())
        chunk = lfs_chunk_size or min(DEFAULT_CHUNK_SIZE, max_body_bytes)
        if not 0 < chunk <= max_body_bytes:
            raise ValueError("lfs_chunk_size must be positive and at most max_body_bytes")
        self.lfs_chunk_size = chunk
        self._server: HubHTTPServer | None = None
        self._store: GitStore | None = None
        self._thread: threading.Thread | None = None

    @property
    def token(self) -> str:
        """The bearer token writes need (generated at ``start()`` when none was given)."""
        if self._token is None:
            raise RuntimeError("the local Hub has no token before it starts")
        return self._token

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the local Hub is not running")
        host, port = self._server.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}"

    @property
    def stats(self) -> dict[str, int]:
        """Counters since start: ``commits``, ``lfs_batch_requests``, ``lfs_objects_stored``,
        ``lfs_multipart_objects``, ``lfs_parts_received``, ``lfs_bytes_stored``, ..."""
        if self._server is None:
            return {}
        with self._server._stats_guard:
            return dict(self._server.stats)

    def start(self) -> str:
        if self._server is not None:
            return self.url
        store = GitStore(self.root, lfs_chunk_size=self.lfs_chunk_size)
        store.lock_root()
        try:
            store.recover()
            if self._token is None:
                self._token, self.token_file = generate_token_file(self.root)
            options = dataclasses.replace(self.options, token=self._token, read_only=self.read_only)
            server = HubHTTPServer((self.host, self.port), store, options, _route)
        except BaseException:
            store.unlock_root()
            raise
        self._store, self._server = store, server
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"local-hub-{self.port}", daemon=True
        )
        self._thread.start()
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
        if self._store is not None:
            self._store.unlock_root()
            self._store = None
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
def embedded_hub(root: Path | None = None, *, port: int = 0,
                 token: str | None = None) -> Iterator[str]:
    """Run a LocalHub on loopback for the duration of the block and yield its URL.

    ``root`` None stores repositories in a temporary folder removed afterwards. Writes need
    ``token`` (None: one is generated into ``<root>/.hub-token``). Clients must be
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
    hub = LocalHub(root, port=port, token=token)
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
    on_ready: Callable[[LocalHub], None] | None = None,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    token_file: Path | None = None,
    read_only: bool = False,
    deadlines: Deadlines | None = None,
) -> int:
    """Serve until SIGINT or SIGTERM, then stop cleanly (call from the main thread);
    ``on_ready`` gets the started hub (its ``url``, ``token_file``). Returns the signal that
    stopped it."""
    stop = threading.Event()
    stopped_by: list[int] = []
    previous = {}

    def on_signal(sig: int, _frame) -> None:
        stopped_by.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    hub = LocalHub(root, host, port, max_body_bytes=max_body_bytes, token_file=token_file,
                   read_only=read_only, deadlines=deadlines)
    try:
        hub.start()
        if on_ready is not None:
            on_ready(hub)
        while not stop.wait(0.5):
            pass
    finally:
        hub.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return stopped_by[0] if stopped_by else 0


__all__ = ["LocalHub", "embedded_hub", "free_port", "serve_forever", "parse_front_matter"]
