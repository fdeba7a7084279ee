"""A bounded, seeded fuzz of the local Hub's HTTP API on loopback: valid requests of every
endpoint, mutated (JSON values, bytes, paths, headers, methods, request lines).

Whatever arrives, the server answers with a 4xx (or 501 for what it does not implement), never
500, never more than ``RESPONSE_BOUND`` bytes, never a server path or a traceback, and keeps
serving; its repository still passes ``git fsck``. (hypothesis is not installed here, hence the
seeded loop.)"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from support.hub_fixture import HUB_TOKEN

from rcp_data.hub.server import LocalHub

SEED = 1515
COUNT = 2000
TIME_BUDGET_S = 120
RESPONSE_BOUND = 1 << 20
ALLOWED_5XX = {501, 505}  # not implemented: unknown methods, Xet; HTTP/2 request lines
REPO = "o/fz"

_DATA = b"fuzzed lfs object\n" * 50
_OID = hashlib.sha256(_DATA).hexdigest()
_README = "---\nlicense: mit\nconfigs:\n- config_name: a\n---\n# card\n"
_POOL = [None, True, False, 0, -1, 2**63, 10**30, 1.5, "", "x" * 3000, [], {}, [[[]]],
         {"a": {"b": None}}, "\u0000", "../..", "refs/heads/main", ".git", "a/.git/b", "main",
         "😀", "\ud800", "0" * 40, _OID, "NaN"]
_SEGMENTS = ["..", ".", "%00", "%2F", "%2e%2e", "a" * 3000, "é", "", ".git", "refs%2Fheads%2Fmain",
             "0" * 40, "main", "o", "fz", "fz.git", "%ZZ", "?", "#"]
_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "BREW"]


def _templates() -> list[tuple[str, str, dict, bytes]]:
    """(method, path, headers, body) of a valid request to every endpoint."""
    ndjson = b"".join(json.dumps(x).encode() + b"\n" for x in [
        {"key": "header", "value": {"summary": "fz", "description": "d"}},
        {"key": "file", "value": {"path": "a.txt", "content": "YWJj", "encoding": "base64"}},
        {"key": "lfsFile", "value": {"path": "o.bin", "algo": "sha256", "oid": _OID,
                                     "size": len(_DATA)}},
        {"key": "deletedFile", "value": {"path": "gone.txt"}},
    ])
    js = {"Content-Type": "application/json"}
    lfs = f"/datasets/{REPO}.git/info/lfs/objects"
    api = f"/api/datasets/{REPO}"
    return [
        ("POST", "/api/repos/create", js, b'{"name": "fz2", "type": "dataset"}'),
        ("POST", "/api/validate-yaml", js, json.dumps({"content": _README}).encode()),
        ("POST", f"{api}/preupload/main", js,
         b'{"files": [{"path": "a.txt", "size": 3, "sample": "YWJj"}]}'),
        ("POST", f"{api}/commit/main", {"Content-Type": "application/x-ndjson"}, ndjson),
        ("POST", f"{api}/tag/main", js, b'{"tag": "t1", "message": "m"}'),
        ("DELETE", f"{api}/tag/t1", {}, b""),
        ("POST", f"{api}/branch/b1", js, b'{"startingPoint": "main"}'),
        ("DELETE", f"{api}/branch/b1", {}, b""),
        ("POST", f"{api}/paths-info/main", {"Content-Type": "application/x-www-form-urlencoded"},
         b"paths=a.txt&paths=README.md&expand=true"),
        ("GET", f"{api}/tree/main?recursive=true&expand=true&p=0&limit=2", {}, b""),
        ("GET", f"{api}/commits/main?p=1&limit=1", {}, b""),
        ("GET", f"{api}/revision/main", {}, b""),
        ("GET", f"{api}/refs", {}, b""),
        ("GET", api, {}, b""),
        ("GET", f"{api}/xet-read-token/main", {}, b""),
        ("GET", f"/datasets/{REPO}/resolve/main/README.md", {"Range": "bytes=2-9"}, b""),
        ("HEAD", f"/datasets/{REPO}/resolve/main/o.bin", {}, b""),
        ("POST", f"{lfs}/batch", js, json.dumps({
            "operation": "upload", "transfers": ["basic", "multipart"], "hash_algo": "sha256",
            "objects": [{"oid": _OID, "size": len(_DATA)}, {"oid": "f" * 64, "size": 200_000}],
        }).encode()),
        ("PUT", f"{lfs}/{_OID}?size={len(_DATA)}", {}, _DATA),
        ("PUT", f"{lfs}/{'f' * 64}/part/2?size=200000", {}, b"p" * 65536),
        ("POST", f"{lfs}/{'f' * 64}/complete?size=200000", js,
         b'{"oid": "' + b"f" * 64 + b'", "parts": [{"partNumber": 1, "etag": "x"}]}'),
        ("POST", f"{lfs}/verify", js, json.dumps({"oid": _OID, "size": len(_DATA)}).encode()),
        ("GET", f"{lfs}/{_OID}", {"Range": "bytes=-10"}, b""),
    ]


def _mutate_json(rng: random.Random, value: object, depth: int = 0) -> object:
    if isinstance(value, dict) and value and depth < 4:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.25:
            out[rng.choice(["", "x" * 200, "key", "value", "path"])] = rng.choice(_POOL)
        else:
            out[key] = _mutate_json(rng, value[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 4:
        out = list(value)
        i = rng.randrange(len(out))
        out[i] = _mutate_json(rng, out[i], depth + 1)
        return out
    return rng.choice(_POOL)


def _mutate_body(rng: random.Random, headers: dict, body: bytes) -> bytes:
    roll = rng.random()
    if body and roll < 0.45:
        lines = body.split(b"\n")
        i = rng.randrange(len(lines))
        try:
            lines[i] = json.dumps(_mutate_json(rng, json.loads(lines[i]))).encode()
            return b"\n".join(lines)
        except ValueError:
            pass
    if body and roll < 0.75:
        data = bytearray(body)
        for _ in range(rng.randrange(1, 6)):
            pos = rng.randrange(len(data))
            op = rng.randrange(3)
            if op == 0:
                data[pos] = rng.randrange(256)
            elif op == 1:
                data.insert(pos, rng.choice(b'{}[]",:\\\n\x00'))
            else:
                del data[pos]
            if not data:
                break
        return bytes(data[: rng.randrange(len(data) + 1)] if rng.random() < 0.2 else data)
    if roll < 0.85:
        return rng.choice([b"", b"[" * 5000, b"{" * 5000, b'"' * 3, rng.randbytes(300),
                           b"\xff\xfe", json.dumps(rng.choice(_POOL)).encode()])
    return body


def _mutate_path(rng: random.Random, path: str) -> str:
    base, _, query = path.partition("?")
    parts = base.split("/")
    i = rng.randrange(1, len(parts))
    parts[i] = rng.choice(_SEGMENTS) if rng.random() < 0.7 else quote(str(rng.choice(_POOL)), errors="surrogatepass")
    out = "/".join(parts)
    if rng.random() < 0.3:
        query = rng.choice(["p=-1", "limit=0", "p=x", "size=-5", "size=99999999999999999",
                            "recursive=true&" * 200, "create_pr=1", "expand=1&p=999"])
    return f"{out}?{query}" if query else out


def _request(rng: random.Random) -> tuple[str, bytes, bool]:
    """A description, the raw request bytes and whether its request line is garbage."""
    method, path, headers, body = rng.choice(_templates())
    headers = dict(headers)
    kinds = rng.sample(["body", "path", "headers", "method", "line"], k=rng.randrange(1, 3))
    if "body" in kinds:
        body = _mutate_body(rng, headers, body)
    if "path" in kinds:
        path = _mutate_path(rng, path)
    if "method" in kinds:
        method = rng.choice(_METHODS)
    length: str | None = str(len(body)) if body or method in ("POST", "PUT") else None
    chunked = False
    if "headers" in kinds:
        choice = rng.randrange(7)
        if choice == 0:
            length = rng.choice(["-1", "abc", "1e3", " ", "10000000000000", str(len(body) + 7),
                                 str(max(len(body) - 3, 0)), "0x10"])
        elif choice == 1:
            chunked, length = True, None
        elif choice == 2:
            headers["Transfer-Encoding"] = rng.choice(["gzip", "chunked, chunked", "identity"])
        elif choice == 3:
            headers["Range"] = rng.choice(["bytes=-", "bytes=5-2", "bytes=0-0,2-3", "items=1-2",
                                           "bytes=99999999999999999999-", "bytes=-0"])
        elif choice == 4:
            headers["Content-Type"] = rng.choice(["application/json", "text/plain",
                                                  "application/x-www-form-urlencoded",
                                                  "multipart/form-data; boundary=x"])
        elif choice == 5:
            headers["Expect"] = "100-continue"
        else:
            headers["Content-Length"] = "5"  # a second, conflicting length
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
        cut = rng.randrange(len(body) + 1)
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:cut], body[cut:]) if p)
        body += rng.choice([b"0\r\n\r\n", b"0\r\n", b"zz\r\n", b""])
    garbage = "line" in kinds and rng.random() < 0.5
    head = "\r\n".join(lines).encode("utf-8", "surrogateescape")
    if garbage:
        head = rng.choice([b"\x00\x01\x02", b"GET", b"GET / HTTP/2.0", b"GET / HTTP/1.1 x",
                           b"GET /" + b"a" * 70000 + b" HTTP/1.1", b" " * 10])
    return f"{method} {path[:120]} [{','.join(kinds)}]", head + b"\r\n\r\n" + body, garbage


def _exchange(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(raw)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer (413) and hang up before reading everything
        chunks, total = [], 0
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            assert total <= RESPONSE_BOUND, "response larger than the bound"
    return b"".join(chunks)


def test_fuzz_hub_api(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rcp_data.hub")
    rng = random.Random(SEED)
    with LocalHub(tmp_path / "hub", max_body_bytes=256 * 1024, lfs_chunk_size=64 * 1024, token=HUB_TOKEN) as hub:
        api = HfApi(endpoint=hub.url)
        api.create_repo(REPO, repo_type="dataset")
        api.create_commit(REPO, [CommitOperationAdd("README.md", _README.encode()),
                                 CommitOperationAdd("gone.txt", b"g"),
                                 CommitOperationAdd("o.bin", _DATA)],
                          commit_message="seed", repo_type="dataset")
        port = int(hub.url.rsplit(":", 1)[1])
        statuses: dict[int, int] = {}
        start, done = time.monotonic(), 0
        for _ in range(COUNT):
            if time.monotonic() - start > TIME_BUDGET_S:
                break
            what, raw, garbage = _request(rng)
            response = _exchange(port, raw)
            done += 1
            if not response.startswith(b"HTTP/1."):  # none, or the stdlib's HTTP/0.9 answer
                assert garbage, f"no HTTP/1.x answer to {what}: {response[:200]!r}"
                continue
            while response.startswith(b"HTTP/1.1 100 "):  # Expect: 100-continue, then the answer
                response = response.split(b"\r\n\r\n", 1)[1]
            status = int(response.split(b" ", 2)[1])
            statuses[status] = statuses.get(status, 0) + 1
            assert status < 500 or status in ALLOWED_5XX, (what, response[:500])
            assert str(hub.root).encode() not in response and b"Traceback" not in response, what
        assert done >= 300, f"only {done} requests in the time budget"
        assert statuses.get(200, 0) > 20 and statuses.get(400, 0) > 50, statuses  # both kinds ran
        # still serving, and nothing was logged as an unexpected failure
        assert api.dataset_info(REPO).id == REPO
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-3000:]
        repo = hub.root / "datasets" / "o" / "fz.git"
        fsck = subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict", "--no-dangling"],
                              capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
    print(f"fuzz: {done} requests, statuses {dict(sorted(statuses.items()))}")
