"""The local Hub's auth path and deadlines: writes need the bearer token (401 otherwise, with the
real Hub's error body), a read-only Hub refuses writes (403), reads stay open, LFS upload URLs
are signed, and slow headers or bodies are cut off."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError
from support.hub_fixture import HUB_TOKEN

from rcp_data.hub.auth import BAD_TOKEN, MISSING_TOKEN, TOKEN_FILE
from rcp_data.hub.limits import Deadlines
from rcp_data.hub.server import LocalHub

DS = "dataset"


def _http(url: str, method: str = "GET", body: bytes | None = None,
          token: str | None = None) -> tuple[int, dict, bytes]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _writes(url: str, repo: str, head: str) -> list[tuple[str, str, dict | bytes]]:
    """Every mutating endpoint, with a body that would succeed with the token."""
    api = f"{url}/api/datasets/{repo}"
    commit = b"".join(json.dumps(x).encode() + b"\n" for x in [
        {"key": "header", "value": {"summary": "forged"}},
        {"key": "file", "value": {"path": "x.txt", "content": "eA==", "encoding": "base64"}}])
    oid = "a" * 64
    return [
        ("POST", f"{url}/api/repos/create", {"name": "other", "organization": "o", "type": DS}),
        ("DELETE", f"{url}/api/repos/delete", {"name": repo.split("/")[1],
                                               "organization": repo.split("/")[0], "type": DS}),
        ("POST", f"{api}/preupload/main", {"files": [{"path": "x.txt", "size": 1,
                                                      "sample": "eA=="}]}),
        ("POST", f"{api}/commit/main", commit),
        ("POST", f"{api}/tag/{head}", {"tag": "forged-tag"}),
        ("DELETE", f"{api}/tag/v1", {}),
        ("POST", f"{api}/branch/forged-branch", {"startingPoint": head}),
        ("DELETE", f"{api}/branch/side", {}),
        ("POST", f"{url}/datasets/{repo}.git/info/lfs/objects/batch",
         {"operation": "upload", "objects": [{"oid": oid, "size": 1}]}),
    ]


def _body(payload: dict | bytes) -> bytes:
    return payload if isinstance(payload, bytes) else json.dumps(payload).encode()


def _seed(hub: LocalHub, repo: str) -> str:
    api = HfApi(endpoint=hub.url, token=hub.token)
    api.create_repo(repo, repo_type=DS)
    head = api.create_commit(repo, [CommitOperationAdd("a.txt", b"a")], commit_message="m",
                             repo_type=DS).oid
    api.create_tag(repo, tag="v1", revision=head, repo_type=DS)
    api.create_branch(repo, branch="side", revision=head, repo_type=DS)
    return head


def _state(hub: LocalHub, repo: str) -> tuple:
    api = HfApi(endpoint=hub.url, token=False)
    refs = api.list_repo_refs(repo, repo_type=DS)
    return (sorted((b.name, b.target_commit) for b in refs.branches),
            sorted((t.name, t.target_commit) for t in refs.tags),
            sorted(s.rfilename for s in api.dataset_info(repo).siblings),
            sorted(p.name for p in (hub.root / "datasets" / "o").iterdir()))


def test_writes_without_the_token_get_401(tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub", token=HUB_TOKEN) as hub:
        head = _seed(hub, "o/r")
        before = _state(hub, "o/r")
        for method, url, payload in _writes(hub.url, "o/r", head):
            for token, message in ((None, MISSING_TOKEN), ("hf_wrong", BAD_TOKEN)):
                status, headers, body = _http(url, method, _body(payload), token)
                assert status == 401, (method, url, token, body)
                assert json.loads(body) == {"error": message}
                assert headers["X-Error-Message"] == message
        assert _state(hub, "o/r") == before      # nothing changed
        # the unmodified client without a token gets the 401 as an HfHubHTTPError
        with pytest.raises(HfHubHTTPError) as err:
            HfApi(endpoint=hub.url, token=False).create_tag("o/r", tag="v9", revision=head,
                                                            repo_type=DS)
        assert err.value.response.status_code == 401
        # reads stay open: info, tree, a download, paths-info, validate-yaml, an LFS download batch
        assert _http(f"{hub.url}/api/datasets/o/r")[0] == 200
        assert _http(f"{hub.url}/api/datasets/o/r/tree/main")[0] == 200
        assert _http(f"{hub.url}/datasets/o/r/resolve/main/a.txt")[2] == b"a"
        assert _http(f"{hub.url}/api/datasets/o/r/paths-info/main", "POST",
                     json.dumps({"paths": ["a.txt"]}).encode())[0] == 200
        assert _http(f"{hub.url}/api/validate-yaml", "POST", b'{"content": "x"}')[0] == 200
        batch = {"operation": "download", "objects": [{"oid": "a" * 64, "size": 1}]}
        assert _http(f"{hub.url}/datasets/o/r.git/info/lfs/objects/batch", "POST",
                     json.dumps(batch).encode())[0] == 200
        # and every write goes through with it
        for method, url, payload in _writes(hub.url, "o/r", head)[2:8]:
            assert _http(url, method, _body(payload), HUB_TOKEN)[0] == 200, (method, url)


def test_lfs_upload_urls_are_signed(tmp_path: Path) -> None:
    data = os.urandom(3000)
    import hashlib

    oid = hashlib.sha256(data).hexdigest()
    with LocalHub(tmp_path / "hub", token=HUB_TOKEN) as hub:
        HfApi(endpoint=hub.url, token=hub.token).create_repo("o/r", repo_type=DS)
        base = f"{hub.url}/datasets/o/r.git/info/lfs/objects"
        # a PUT on an unsigned URL (as an attacker would write it) is refused
        assert _http(f"{base}/{oid}?size=3000", "PUT", data)[0] == 403
        batch = {"operation": "upload", "objects": [{"oid": oid, "size": 3000}]}
        status, _, answer = _http(f"{base}/batch", "POST", json.dumps(batch).encode(), HUB_TOKEN)
        href = json.loads(answer)["objects"][0]["actions"]["upload"]["href"]
        assert "sig=" in href and "expires=" in href
        # the signature covers the size and the object
        assert _http(href.replace("size=3000", "size=2999"), "PUT", data[:-1])[0] == 403
        assert _http(href.replace(oid, "b" * 64), "PUT", data)[0] == 403
        assert _http(href, "PUT", data)[0] == 200        # what the client does, no token


def test_read_only_refuses_every_write(tmp_path: Path) -> None:
    root = tmp_path / "hub"
    with LocalHub(root, token=HUB_TOKEN) as hub:
        head = _seed(hub, "o/r")
    with LocalHub(root, token=HUB_TOKEN, read_only=True) as hub:
        before = _state(hub, "o/r")
        for method, url, payload in _writes(hub.url, "o/r", head):
            status, _, body = _http(url, method, _body(payload), HUB_TOKEN)
            assert status == 403 and b"read-only" in body, (method, url)
        assert _state(hub, "o/r") == before
        assert _http(f"{hub.url}/datasets/o/r/resolve/v1/a.txt")[2] == b"a"


def test_generated_token_file(tmp_path: Path) -> None:
    root = tmp_path / "hub"
    with LocalHub(root) as hub:
        path = root / TOKEN_FILE
        assert hub.token_file == path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text().strip() == hub.token and len(hub.token) >= 32
        assert HfApi(endpoint=hub.url, token=hub.token).create_repo("o/r", repo_type=DS)
    with LocalHub(root, token_file=path) as hub:     # --token-file: read, not generated
        assert hub.token == path.read_text().strip()


def test_cli_says_where_the_token_is_and_never_prints_it(tmp_path: Path) -> None:
    root = tmp_path / "hub"
    env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
    proc = subprocess.Popen([sys.executable, "-m", "rcp_data.cli", "hub", "serve", "--root",
                             str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert "http://" in proc.stdout.readline()
        line = next(x for x in iter(proc.stderr.readline, "") if "writes need" in x)
        token = (root / TOKEN_FILE).read_text().strip()
        assert str(root / TOKEN_FILE) in line and token not in line
        assert stat.S_IMODE((root / TOKEN_FILE).stat().st_mode) == 0o600
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert token not in out + err
    bad = subprocess.run([sys.executable, "-m", "rcp_data.cli", "hub", "serve", "--root",
                          str(root), "--token-file", str(tmp_path / "missing")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "--token-file" in bad.stderr


# -- deadlines ----------------------------------------------------------------------------------
FAST = Deadlines(idle_seconds=5, header_seconds=1.0, body_grace_seconds=1.0, body_min_rate=1000)


def _dribble(url: str, first: bytes, byte: bytes, seconds: float) -> tuple[float, bytes]:
    """Send ``first``, then one ``byte`` every 0.1 s; when the server hangs up (seconds after
    the start) and what it answered."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        start = time.monotonic()
        sock.sendall(first)
        sock.settimeout(0.1)
        received = b""
        while time.monotonic() - start < seconds:
            try:
                sock.sendall(byte)
            except OSError:
                break
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            received += data
        return time.monotonic() - start, received


def test_slow_headers_are_cut_off(tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub", token=HUB_TOKEN, deadlines=FAST) as hub:
        took, answer = _dribble(hub.url, b"GET /api/datasets/o/r HTTP/1.1\r\nHost: x\r\n",
                                b"X", seconds=10)
        assert 0.9 < took < 3, took           # header_seconds=1, however the bytes dribble
        assert answer == b""
        # a request sent at once is unaffected
        assert _http(f"{hub.url}/api/datasets/o/none")[0] == 404


def test_slow_body_is_cut_off_with_408(tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub", token=HUB_TOKEN, deadlines=FAST) as hub:
        HfApi(endpoint=hub.url, token=hub.token).create_repo("o/r", repo_type=DS)
        head = (f"POST /api/datasets/o/r/commit/main HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer {HUB_TOKEN}\r\nContent-Length: 100000\r\n\r\n")
        took, answer = _dribble(hub.url, head.encode(), b"x", seconds=10)
        # 1 s of grace, then 1000 bytes/s: ten bytes a second fall behind at once
        assert 0.9 < took < 5, took
        assert answer.startswith(b"HTTP/1.1 408") and b"too slowly" in answer
        assert HfApi(endpoint=hub.url).list_repo_commits("o/r", repo_type=DS)[0].title
