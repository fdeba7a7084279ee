"""The git-LFS HTTP API of the local Hub, as huggingface_hub uses it (legacy, non-Xet path).

Under ``/{prefix}{repo}.git/info/lfs/objects`` (prefix ``datasets/``, ``spaces/`` or none):

- ``POST batch`` ``{operation, transfers, objects: [{oid, size}]}`` -> per object nothing (already
  stored), an ``upload`` action (``basic``: one PUT; ``multipart`` when the object is larger than
  one part and the client offers it: ``header`` holds ``chunk_size`` and one PUT URL per part,
  ``href`` is the completion URL) and a ``verify`` action; or a ``download`` action; or an
  ``error`` ``{code, message}``.
- ``PUT {oid}?size=N`` the whole object; ``PUT {oid}/part/{n}?size=N`` one part (answers its
  ``ETag``); ``POST {oid}/complete?size=N`` ``{oid, parts: [{partNumber, etag}]}``. These URLs
  are signed (``expires``, ``sig``: ``rcp_data.hub.auth.UrlSigner``) by the ``upload`` batch,
  which needs the bearer token; an unsigned PUT is 403.
- ``POST verify`` ``{oid, size}`` -> 200 when stored, 404 otherwise.
- ``GET {oid}`` the object's content (ranges supported).

Xet is not offered: a Xet token request is answered 501 with a message naming the fix.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rcp_data.hub.errors import HubError
from rcp_data.hub.lfs import check_oid, check_size
from rcp_data.hub.transport import Handler, Request

log = logging.getLogger("rcp_data.hub.server")

LFS_JSON = "application/vnd.git-lfs+json"
MAX_BATCH_OBJECTS = 1000
MAX_BATCH_PARTS = 10_000
XET_MESSAGE = (
    "Xet storage is not available on a local Hub: set HF_HUB_DISABLE_XET=1 so huggingface_hub "
    "uploads and downloads through git-LFS instead"
)


def refuse_xet() -> None:
    raise HubError(501, XET_MESSAGE)


def _query_size(req: Request) -> int:
    raw = req.query.get("size", [""])[-1]
    if not raw.isdigit() or len(raw) > 16:
        raise HubError(400, "Missing or invalid 'size' query parameter")
    return check_size(int(raw))


def route_lfs(h: Handler, req: Request, repo: Path, base: str, rest: list[str]) -> None:
    """Dispatch ``rest`` (the segments after ``objects``) of an LFS request on ``repo``;
    ``base`` is the public URL of the repository's ``objects`` endpoint."""
    method = req.method
    if rest == ["batch"] and method == "POST":
        return _batch(h, req, repo, base)
    if rest == ["verify"] and method == "POST":
        return _verify(h, req, repo)
    if method in ("PUT", "POST") and rest not in (["batch"], ["verify"]):
        if h.server.options.read_only:
            h.authorize_write()  # 403
        oid = check_oid(rest[0]) if rest else ""
        h.server.signer.check(str(repo), oid, _query_size(req), req.query)
    if len(rest) == 1 and method == "PUT":
        return _put(h, req, repo, check_oid(rest[0]))
    if len(rest) == 1 and method in ("GET", "HEAD"):
        return _download(h, req, repo, check_oid(rest[0]))
    if len(rest) == 3 and rest[1] == "part" and method == "PUT":
        if not rest[2].isdigit() or len(rest[2]) > 6:
            raise HubError(400, "Invalid part number")
        return _put_part(h, req, repo, check_oid(rest[0]), int(rest[2]))
    if len(rest) == 2 and rest[1] == "complete" and method == "POST":
        return _complete(h, req, repo, check_oid(rest[0]))
    raise HubError(404, f"No such LFS endpoint: {method} {req.raw_path[:200]}")


def _object_error(oid: object, size: object, code: int, message: str) -> dict:
    safe_oid = oid if isinstance(oid, str) and len(oid) <= 64 else ""
    safe_size = size if isinstance(size, int) and not isinstance(size, bool) else 0
    return {"oid": safe_oid, "size": safe_size, "error": {"code": code, "message": message}}


def _batch(h: Handler, req: Request, repo: Path, base: str) -> None:
    body = req.json()
    operation = body.get("operation")
    objects = body.get("objects")
    transfers = body.get("transfers") or ["basic"]
    if operation not in ("upload", "download"):
        raise HubError(400, "LFS batch 'operation' must be 'upload' or 'download'")
    if operation == "upload":
        h.authorize_write()
    if not isinstance(objects, list) or not isinstance(transfers, list):
        raise HubError(400, "LFS batch needs an 'objects' list (and 'transfers', a list)")
    if len(objects) > MAX_BATCH_OBJECTS:
        raise HubError(413, f"An LFS batch may name at most {MAX_BATCH_OBJECTS} objects")
    if body.get("hash_algo", "sha256") != "sha256":
        raise HubError(400, "Only sha256 LFS objects are supported")
    store = h.server.store.lfs
    max_body = h.server.options.limits.max_body_bytes
    multipart_ok = "multipart" in transfers
    parts_left = MAX_BATCH_PARTS
    answers, used_multipart = [], False
    for obj in objects:
        oid, size = (obj.get("oid"), obj.get("size")) if isinstance(obj, dict) else (None, None)
        try:
            check_oid(oid)
            check_size(size)
        except HubError as err:
            answers.append(_object_error(oid, size, 422, err.message))
            continue
        stored = store.stored_size(repo, oid)
        if operation == "download":
            if stored != size:
                answers.append(_object_error(oid, size, 404, "Object does not exist"))
            else:
                action = {"download": {"href": f"{base}/{oid}"}}
                answers.append({"oid": oid, "size": size, "authenticated": True, "actions": action})
            continue
        if stored == size:
            answers.append({"oid": oid, "size": size, "authenticated": True})
            continue
        if stored is not None:
            answers.append(_object_error(oid, size, 422, "Size does not match the stored object"))
            continue
        parts = store.parts(size)
        query = f"?{h.server.signer.query(str(repo), oid, size)}"
        if parts > 1 and multipart_ok:
            if parts > parts_left:
                answers.append(
                    _object_error(oid, size, 413, "Too many parts in one batch: send fewer objects")
                )
                continue
            parts_left -= parts
            used_multipart = True
            header = {"chunk_size": str(store.chunk_size)}
            header.update({str(n): f"{base}/{oid}/part/{n}{query}" for n in range(1, parts + 1)})
            upload = {"href": f"{base}/{oid}/complete{query}", "header": header}
        elif size > max_body:
            answers.append(
                _object_error(oid, size, 413, "Object too large for one PUT: offer 'multipart'")
            )
            continue
        else:
            upload = {"href": f"{base}/{oid}{query}"}
        actions = {"upload": upload, "verify": {"href": f"{base}/verify"}}
        answers.append({"oid": oid, "size": size, "authenticated": True, "actions": actions})
    h.server.count("lfs_batch_requests")
    h.server.count("lfs_batch_objects", len(answers))
    transfer = "multipart" if used_multipart else "basic"
    h.send_json(
        200, {"transfer": transfer, "objects": answers, "hash_algo": "sha256"}, content_type=LFS_JSON
    )


def _put(h: Handler, req: Request, repo: Path, oid: str) -> None:
    size = _query_size(req)
    if h.server.store.lfs.receive(repo, oid, size, req.body):
        h.server.count("lfs_objects_stored")
        h.server.count("lfs_bytes_stored", size)
        log.info("lfs: stored object %s (%d bytes) in %s", oid, size, repo.name)
    h.send_json(200, {})


def _put_part(h: Handler, req: Request, repo: Path, oid: str, number: int) -> None:
    size = _query_size(req)
    etag = h.server.store.lfs.receive_part(repo, oid, size, number, req.body)
    h.server.count("lfs_parts_received")
    h.send_json(200, {}, {"ETag": f'"{etag}"'})


def _complete(h: Handler, req: Request, repo: Path, oid: str) -> None:
    size = _query_size(req)
    body = req.json()
    parts = body.get("parts")
    if body.get("oid", oid) != oid or not isinstance(parts, list):
        raise HubError(400, "The completion needs this object's 'oid' and a 'parts' list")
    etags: dict[int, str] = {}
    for part in parts:
        number = part.get("partNumber") if isinstance(part, dict) else None
        etag = part.get("etag") if isinstance(part, dict) else None
        if (
            isinstance(number, bool)
            or not isinstance(number, int)
            or not isinstance(etag, str)
            or len(etag) > 200
            or number in etags
        ):
            raise HubError(400, "Each part needs a unique integer 'partNumber' and an 'etag'")
        etags[number] = etag
    if h.server.store.lfs.complete(repo, oid, size, etags):
        h.server.count("lfs_objects_stored")
        h.server.count("lfs_multipart_objects")
        h.server.count("lfs_bytes_stored", size)
        log.info("lfs: stored object %s (%d bytes, %d parts) in %s", oid, size, len(etags), repo.name)
    h.send_json(200, {})


def _verify(h: Handler, req: Request, repo: Path) -> None:
    body = req.json()
    oid, size = check_oid(body.get("oid")), check_size(body.get("size"))
    if h.server.store.lfs.stored_size(repo, oid) != size:
        raise HubError(404, f"LFS object {oid} of {size} bytes is not stored")
    h.send_json(200, {"oid": oid, "size": size})


def _download(h: Handler, req: Request, repo: Path, oid: str) -> None:
    size = h.server.store.lfs.stored_size(repo, oid)
    if size is None:
        raise HubError(404, f"LFS object {oid} is not stored")
    path = h.server.store.lfs.object_path(repo, oid)
    h.send_file(path, size, {"ETag": f'"{oid}"'}, h.headers.get("Range"))
