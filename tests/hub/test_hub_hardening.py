"""The local Hub against careless or hostile clients (loopback only): YAML alias bombs, body
limits and malformed framing, ref and path names, stale locks, leftovers of a killed server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError
from support.hub_fixture import HUB_TOKEN

from rcp_data.hub.names import check_ref_format
from rcp_data.hub.server import LocalHub

DS = "dataset"

# 395 bytes: nine levels of ten aliases each, 10**8 strings once expanded
BOMB_README = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{x}: &{x} [{','.join([f'*{p}'] * 10)}]\n"
        for p, x in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "---\n# alias bombs!\n"
)


def raw_request(url: str, head: str, body: bytes = b"", read_limit: int = 1 << 20) -> tuple[int, bytes]:
    """Send ``head`` (request line and headers, CRLF-separated, no final blank line) and
    ``body`` on a fresh connection, as a client holding the token (an ``Authorization`` line
    after the request line); the status and the response (at most ``read_limit``)."""
    line, sep, rest = head.partition("\r\n")
    head = f"{line}\r\nAuthorization: Bearer {HUB_TOKEN}{sep}{rest}"
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        try:
            sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server answered (413) and hung up before reading it all
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
            assert total <= read_limit, "response larger than the bound"
    data = b"".join(chunks)
    return int(data.split(b" ", 2)[1]), data


def _commit_lines(*lines: dict) -> bytes:
    head = {"key": "header", "value": {"summary": "raw commit"}}
    return b"".join(json.dumps(x).encode() + b"\n" for x in (head, *lines))


def _post(url: str, path: str, body: bytes, ctype: str = "application/json") -> tuple[int, bytes]:
    return raw_request(
        url, f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}", body)


@pytest.fixture
def small_hub(tmp_path: Path):
    with LocalHub(tmp_path / "hub", max_body_bytes=64 * 1024, token=HUB_TOKEN) as hub:
        HfApi(endpoint=hub.url).create_repo("o/r", repo_type=DS)
        yield hub


def _no_leak(hub: LocalHub, response: bytes) -> None:
    assert str(hub.root).encode() not in response and b"Traceback" not in response
    assert b"/tmp/" not in response and b".git/" not in response.replace(b"a/.git/", b"")


def test_yaml_alias_bomb_stays_small(local_hub: LocalHub, hub_repo: str) -> None:
    assert len(BOMB_README.encode()) == 395
    api = HfApi(endpoint=local_hub.url)
    api.create_repo(hub_repo, repo_type=DS)
    body = _commit_lines({"key": "file", "value": {"path": "README.md", "content": BOMB_README}})
    status, _ = _post(local_hub.url, f"/api/datasets/{hub_repo}/commit/main", body)
    assert status == 200
    status, answer = raw_request(local_hub.url, f"GET /api/datasets/{hub_repo} HTTP/1.1\r\nHost: x",
                                 read_limit=64 * 1024)
    assert status == 200
    info = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert "cardData" not in info and [s["rfilename"] for s in info["siblings"]] == ["README.md"]
    status, answer = _post(local_hub.url, "/api/validate-yaml",
                           json.dumps({"content": BOMB_README, "repoType": DS}).encode())
    assert status == 400 and b"aliases expand it beyond" in answer
    recursive = "---\na: &a [1, *a]\n---\n"
    status, answer = _post(local_hub.url, "/api/validate-yaml",
                           json.dumps({"content": recursive}).encode())
    assert status == 400 and b"a recursive alias" in answer

    # a card with a few aliases and non-string keys is served, expanded and JSON-safe
    card = "---\nbase: &b {license: mit}\nx: *b\ny: *b\n2024-01-02: date key\n1: one\n---\n"
    api.create_commit(hub_repo, [CommitOperationAdd("README.md", card.encode())],
                      commit_message="card", repo_type=DS)
    data = api.dataset_info(hub_repo).card_data.to_dict()
    assert data["x"] == data["y"] == {"license": "mit"}
    assert data["2024-01-02"] == "date key" and data["1"] == "one"


def test_body_limits_and_framing(small_hub: LocalHub) -> None:
    url, repo = small_hub.url, "/api/datasets/o/r"
    big = _commit_lines({"key": "file", "value": {"path": "a.txt", "content": "x" * 70_000}})
    status, answer = _post(url, f"{repo}/commit/main", big, "application/x-ndjson")
    assert status == 413 and b"65536 bytes" in answer
    # a client that sends it all before reading (httpx, under huggingface_hub) reads the 413 too
    import httpx

    sent = httpx.post(f"{url}{repo}/commit/main", content=b"x" * 5_000_000, timeout=60,
                      headers={"Authorization": f"Bearer {HUB_TOKEN}"})
    assert sent.status_code == 413 and "65536 bytes" in sent.json()["error"]
    cases = {
        "Content-Length: 1000000000000": 413,
        "Content-Length: abc": 400,
        "Content-Length: -1": 400,
        "Content-Length: 5\r\nContent-Length: 6": 400,
        "Content-Length: 12\r\nTransfer-Encoding: chunked": 400,
        "Transfer-Encoding: gzip": 400,
    }
    for header, want in cases.items():
        status, answer = raw_request(url, f"POST {repo}/preupload/main HTTP/1.1\r\nHost: x\r\n{header}",
                                     b"{}")
        assert status == want, (header, answer)
        _no_leak(small_hub, answer)
    chunked = "POST {}/preupload/main HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
    for body in (b"zz\r\n{}\r\n0\r\n\r\n", b"2\r\n{}XX0\r\n\r\n", b"5\r\n{}"):
        status, answer = raw_request(url, chunked.format(repo), body)
        assert status == 400, (body, answer)
    good = b"2\r\n{}\r\n0\r\n\r\n"
    assert raw_request(url, chunked.format(repo), good)[0] == 200
    over = b"".join(b"8000\r\n" + b" " * 0x8000 + b"\r\n" for _ in range(3)) + b"0\r\n\r\n"
    assert raw_request(url, chunked.format(repo), over)[0] == 413
    malformed = {
        f"{repo}/preupload/main": [b"{", b"[1, 2]", b'{"files": "x"}', b'{"files": [1]}',
                                   b'{"files": [{"path": "a", "size": "9"}]}',
                                   b'{"files": [{"path": "a", "size": 1, "sample": "!!"}]}',
                                   b"[" * 50_000],
        f"{repo}/commit/main": [b"not json\n", b'{"key": "header"}\n', b"{}\n",
                                b'{"key": "header", "value": {"summary": 5}}\n',
                                b'{"key": "header", "value": {"summary": "s", "parentCommit": 7}}\n',
                                b'{"key": "header", "value": {"summary": "a\\u0000b"}}\n'
                                b'{"key": "file", "value": {"path": "f", "content": "x"}}\n'],
        f"{repo}/tag/main": [b'{"tag": 5}', b'{"tag": "t", "message": []}',
                             b'{"tag": "t", "message": "\\u0000"}'],
        f"{repo}/paths-info/main": [b'{"paths": "a"}', b'{"paths": [1]}'],
        "/api/repos/create": [b'{"name": ["x"]}', b'{"name": "ok", "organization": 3}',
                              b'{"name": "../etc", "type": "dataset"}'],
        "/datasets/o/r.git/info/lfs/objects/batch": [b'{"operation": "upload"}',
                                                     b'{"operation": "x", "objects": []}'],
    }
    for path, bodies in malformed.items():
        for body in bodies:
            status, answer = _post(url, path, body)
            assert status == 400, (path, body[:40], answer)
            _no_leak(small_hub, answer)
    # the server still serves
    assert HfApi(endpoint=url).dataset_info("o/r").id == "o/r"


def test_lfs_upload_over_the_limit_uses_parts(small_hub: LocalHub) -> None:
    """max_body_bytes also bounds LFS parts: a bigger object is offered multipart only."""
    data = os.urandom(200 * 1024)
    api = HfApi(endpoint=small_hub.url)
    api.create_commit("o/r", [CommitOperationAdd("big.bin", data)], commit_message="m",
                      repo_type=DS)
    assert small_hub.stats["lfs_multipart_objects"] == 1
    assert small_hub.stats["lfs_parts_received"] == 4  # 64 KiB parts
    import hashlib

    oid = hashlib.sha256(b"y" * 100_000).hexdigest()
    status, answer = _post(small_hub.url, "/datasets/o/r.git/info/lfs/objects/batch",
                           json.dumps({"operation": "upload", "transfers": ["basic"],
                                       "objects": [{"oid": oid, "size": 100_000}]}).encode())
    assert status == 200 and json.loads(answer.split(b"\r\n\r\n")[1])["objects"][0]["error"][
        "code"] == 413


def test_ref_names_follow_git(small_hub: LocalHub, tmp_path: Path) -> None:
    names = ["v1", "release/2024-01", "a..b", "a.lock", ".hidden", "a/.x", "x/", "/x", "a//b",
             "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a@{1}", "@", "end.", "ü-tag",
             "a\x7fb", "ok.lock.d", "-dash", "a/b.lock/c"]
    for name in names:
        git = subprocess.run(["git", "check-ref-format", f"refs/tags/{name}"], capture_output=True)
        assert check_ref_format(f"refs/tags/{name}") == (git.returncode == 0), name
    api = HfApi(endpoint=small_hub.url)
    head = api.dataset_info("o/r").sha
    for tag, want in [("refs/heads/main", 400), ("main", 409), ("HEAD", 400), ("a..b", 400),
                      (head, 400), ("x" * 256, 400)]:
        with pytest.raises(HfHubHTTPError) as err:
            api.create_tag("o/r", tag=tag, revision=head, repo_type=DS)
        assert err.value.response.status_code == want, tag
    api.create_tag("o/r", tag="v1", revision=head, repo_type=DS)
    with pytest.raises(HfHubHTTPError) as err:
        api.create_branch("o/r", branch="v1", repo_type=DS)
    assert err.value.response.status_code == 409
    refs = api.list_repo_refs("o/r", repo_type=DS)
    assert [t.name for t in refs.tags] == ["v1"] and [b.name for b in refs.branches] == ["main"]
    assert api.dataset_info("o/r", revision="refs/heads/main").sha == head


def test_git_components_refused(small_hub: LocalHub) -> None:
    api = HfApi(endpoint=small_hub.url)
    head = api.dataset_info("o/r").sha
    for path in ["a/.git/config", ".git/HEAD", "A/.GIT/x", "x/.git", "y/.git./z", "GIT~1/h",
                 "a/../b", "/abs", "a//b", "nul\x00byte", "line\nbreak"]:
        body = _commit_lines({"key": "file", "value": {"path": path, "content": "x"}})
        status, answer = _post(small_hub.url, "/api/datasets/o/r/commit/main", body)
        assert status == 400 and b"Invalid path" in answer, path
    assert api.dataset_info("o/r").sha == head and api.dataset_info("o/r").siblings == []


@pytest.mark.parametrize("age", [3600.0, 0.0])
def test_stale_ref_lock_recovered(small_hub: LocalHub, age: float) -> None:
    api = HfApi(endpoint=small_hub.url)
    head = api.dataset_info("o/r").sha
    lock = small_hub.root / "datasets" / "o" / "r.git" / "refs" / "heads" / "main.lock"
    lock.write_text(f"{head}\n")  # what a git killed between lock and rename leaves
    os.utime(lock, (time.time() - age, time.time() - age))
    commit = api.create_commit("o/r", [CommitOperationAdd("f.txt", b"after the kill")],
                               commit_message="m", repo_type=DS, parent_commit=head)
    assert commit.oid != head and not lock.exists()
    assert api.dataset_info("o/r").sha == commit.oid


def test_start_up_removes_leftovers_and_holds_the_root(tmp_path: Path) -> None:
    root = tmp_path / "hub"
    with LocalHub(root, token=HUB_TOKEN) as hub:
        HfApi(endpoint=hub.url).create_repo("o/r", repo_type=DS)
        with pytest.raises(RuntimeError, match="another local Hub"):
            LocalHub(root, token=HUB_TOKEN).start()
    (root / ".tmp" / "hub-commit-x1").mkdir()
    (root / ".tmp" / "hub-commit-x1" / "body.ndjson").write_bytes(b"x" * 1000)
    (root / ".tmp" / "hub-lfs-abc").write_bytes(b"partial")
    (root / ".tmp" / "not-ours.txt").write_text("kept")
    lock = root / "datasets" / "o" / "r.git" / "refs" / "heads" / "main.lock"
    lock.write_text("0" * 40 + "\n")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    with LocalHub(root, token=HUB_TOKEN) as hub:
        assert sorted(p.name for p in (root / ".tmp").iterdir()) == ["not-ours.txt"]
        assert not lock.exists()
        HfApi(endpoint=hub.url).create_commit("o/r", [CommitOperationAdd("a.txt", b"a")],
                                              commit_message="m", repo_type=DS)


def test_cli_max_body_bytes(tmp_path: Path) -> None:
    from support.hub_proc import HubProcess

    with HubProcess(tmp_path / "hub", "--max-body-bytes", "4096") as hub:
        HfApi(endpoint=hub.url).create_repo("o/r", repo_type=DS)
        status, answer = _post(hub.url, "/api/datasets/o/r/preupload/main", b" " * 5000)
        assert status == 413 and b"4096 bytes" in answer
        assert _post(hub.url, "/api/datasets/o/r/preupload/main", b'{"files": []}')[0] == 200
        assert hub.stop() == 0
    bad = subprocess.run([sys.executable, "-m", "rcp_data.cli", "hub", "serve", "--root",
                          str(tmp_path / "hub"), "--max-body-bytes", "10"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--max-body-bytes must be at least 1024" in bad.stderr
    assert "Traceback" not in bad.stderr
