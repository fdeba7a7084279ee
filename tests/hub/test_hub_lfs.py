"""The local Hub's LFS path against unmodified huggingface_hub (HF_HUB_DISABLE_XET=1, set by
conftest) and raw HTTP: the preupload rule, the batch API (basic and multipart), pointers in git,
reads back through hf_hub_download, snapshot_download and HfFileSystem. Synthetic bytes only."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationCopy,
    HfApi,
    HfFileSystem,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import HfHubHTTPError
from support.hub_fixture import HUB_TOKEN

from rcp_data.hub.lfs import pointer_bytes
from rcp_data.hub.server import LocalHub

DS = "dataset"


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parquet(n: int) -> bytes:
    buf = io.BytesIO()
    pd.DataFrame({"id": [f"d{i}" for i in range(n)], "score": [i / 7 for i in range(n)]}).to_parquet(
        buf, index=False
    )
    return buf.getvalue()


def _http(url: str, method: str = "GET", body: bytes | None = None,
          headers: dict | None = None) -> tuple[int, dict, bytes]:
    headers = {"Authorization": f"Bearer {HUB_TOKEN}", **(headers or {})}  # a writer's client
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _json(url: str, payload: object, method: str = "POST") -> tuple[int, dict]:
    status, _, body = _http(url, method, json.dumps(payload).encode(),
                            {"Content-Type": "application/json"})
    return status, json.loads(body) if body else {}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True)


def test_preupload_rule(local_hub: LocalHub, hub_repo: str) -> None:
    HfApi(endpoint=local_hub.url).create_repo(hub_repo, repo_type=DS)
    text = base64.b64encode(b"plain text\n").decode()
    binary = base64.b64encode(b"\x00\x01binary").decode()
    files = [
        ("corpus/test.parquet", 100, text, "lfs"),
        ("pages/p1.PNG", 100, text, "lfs"),
        ("images/x.jpeg", 100, text, "lfs"),
        ("model/w.safetensors", 100, text, "lfs"),
        ("archive.tar.zst", 100, text, "lfs"),
        ("backup.tar.part1", 100, text, "lfs"),
        ("README.md", 2000, text, "regular"),
        ("provenance/releases.json", 100, text, "regular"),
        ("at-the-limit.jsonl", 10 * 1024 * 1024, text, "regular"),
        ("over-the-limit.jsonl", 10 * 1024 * 1024 + 1, text, "lfs"),
        ("blob.dat", 10, binary, "lfs"),
    ]
    status, answer = _json(
        f"{local_hub.url}/api/datasets/{hub_repo}/preupload/main",
        {"files": [{"path": p, "size": s, "sample": smp} for p, s, smp, _ in files]},
    )
    assert status == 200
    assert [(f["path"], f["uploadMode"], f["oid"]) for f in answer["files"]] == [
        (p, mode, None) for p, _, _, mode in files
    ]


def test_parquet_through_lfs(local_hub: LocalHub, hub_repo: str, tmp_path: Path) -> None:
    api = HfApi(endpoint=local_hub.url)
    api.create_repo(hub_repo, repo_type=DS)
    first = api.dataset_info(hub_repo).sha
    table, notes = _parquet(300), b'{"release": 1}\n'
    before = local_hub.stats
    c1 = api.create_commit(
        hub_repo,
        [CommitOperationAdd("corpus/test.parquet", table), CommitOperationAdd("notes.json", notes)],
        commit_message="lfs release",
        repo_type=DS,
        parent_commit=first,
    )
    after = local_hub.stats
    assert after.get("lfs_batch_requests", 0) - before.get("lfs_batch_requests", 0) == 1
    assert after.get("lfs_objects_stored", 0) - before.get("lfs_objects_stored", 0) == 1
    assert after.get("lfs_bytes_stored", 0) - before.get("lfs_bytes_stored", 0) == len(table)

    # git holds the pointer; the object sits beside the repository, addressed by sha256
    repo = local_hub.root / "datasets" / f"{hub_repo}.git"
    sha = _sha256(table)
    pointer = pointer_bytes(sha, len(table))
    assert _git(repo, "cat-file", "blob", f"{c1.oid}:corpus/test.parquet").stdout == pointer
    assert _git(repo, "cat-file", "blob", f"{c1.oid}:notes.json").stdout == notes
    obj = repo / "lfs" / "objects" / sha[:2] / sha[2:4] / sha
    assert obj.read_bytes() == table
    fsck = _git(repo, "fsck", "--strict", "--no-dangling")
    assert fsck.returncode == 0, fsck.stderr

    # listings report the LFS object; the blob id is the pointer's
    tree = {e.path: e for e in api.list_repo_tree(hub_repo, repo_type=DS, recursive=True)}
    entry = tree["corpus/test.parquet"]
    assert (entry.size, entry.blob_id) == (len(table), _git_blob_sha(pointer))
    assert (entry.lfs.sha256, entry.lfs.size, entry.lfs.pointer_size) == (
        sha, len(table), len(pointer))
    assert tree["notes.json"].lfs is None and tree["notes.json"].blob_id == _git_blob_sha(notes)
    (info,) = api.get_paths_info(hub_repo, ["corpus/test.parquet"], repo_type=DS)
    assert info.lfs.sha256 == sha and info.size == len(table)
    sibling = {s.rfilename: s for s in api.dataset_info(hub_repo).siblings}["corpus/test.parquet"]
    assert sibling.lfs.sha256 == sha and sibling.lfs.size == len(table) == sibling.size

    # a stale parent is still 412, and changes nothing
    with pytest.raises(HfHubHTTPError) as err:
        api.create_commit(hub_repo, [CommitOperationAdd("x.parquet", _parquet(3))],
                          commit_message="stale", repo_type=DS, parent_commit=first)
    assert err.value.response.status_code == 412
    api.create_tag(hub_repo, tag="v1", revision=c1.oid, repo_type=DS)
    with pytest.raises(HfHubHTTPError) as err:
        api.create_tag(hub_repo, tag="v1", revision=c1.oid, repo_type=DS)
    assert err.value.response.status_code == 409

    # the same bytes again: nothing is uploaded and no commit is made
    stored = local_hub.stats.get("lfs_objects_stored", 0)
    same = api.create_commit(hub_repo, [CommitOperationAdd("corpus/test.parquet", table)],
                             commit_message="same", repo_type=DS, parent_commit=c1.oid)
    assert same.oid == c1.oid and local_hub.stats.get("lfs_objects_stored", 0) == stored

    # read back by tag and by sha, whole and in ranges
    kw = {"repo_type": DS, "endpoint": local_hub.url}
    for rev in ("v1", c1.oid):
        got = hf_hub_download(hub_repo, "corpus/test.parquet", revision=rev, **kw)
        assert Path(got).read_bytes() == table
    folder = Path(snapshot_download(hub_repo, revision="v1", local_dir=tmp_path / "snap", **kw))
    assert (folder / "corpus" / "test.parquet").read_bytes() == table
    assert (folder / "notes.json").read_bytes() == notes
    fs = HfFileSystem(endpoint=local_hub.url)
    remote = f"datasets/{hub_repo}@{c1.oid}/corpus/test.parquet"
    assert fs.info(remote)["size"] == len(table)
    with fs.open(remote, "rb", block_size=64) as fh:
        fh.seek(100)
        assert fh.read(50) == table[100:150]
    frame = pd.read_parquet(io.BytesIO(fs.cat_file(remote)))
    assert frame["id"].tolist()[:3] == ["d0", "d1", "d2"] and len(frame) == 300


def test_copy_of_an_lfs_file(local_hub: LocalHub, hub_repo: str) -> None:
    api = HfApi(endpoint=local_hub.url)
    api.create_repo(hub_repo, repo_type=DS)
    table = _parquet(50)
    api.create_commit(hub_repo, [CommitOperationAdd("a/t.parquet", table)],
                      commit_message="one", repo_type=DS)
    api.create_commit(hub_repo, [CommitOperationCopy("a/t.parquet", "b/t.parquet")],
                      commit_message="copy", repo_type=DS)
    got = hf_hub_download(hub_repo, "b/t.parquet", repo_type=DS, endpoint=local_hub.url)
    assert Path(got).read_bytes() == table
    (entry,) = api.get_paths_info(hub_repo, ["b/t.parquet"], repo_type=DS)
    assert entry.lfs.sha256 == _sha256(table)


def test_multipart_upload(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 12345)
    with LocalHub(tmp_path / "hub", lfs_chunk_size=1024 * 1024, token=HUB_TOKEN) as hub:
        api = HfApi(endpoint=hub.url)
        api.create_repo("o/multi", repo_type=DS)
        c = api.create_commit("o/multi", [CommitOperationAdd("big.bin", data)],
                              commit_message="parts", repo_type=DS)
        stats = hub.stats
        assert stats["lfs_multipart_objects"] == 1 and stats["lfs_parts_received"] == 4
        got = hf_hub_download("o/multi", "big.bin", repo_type=DS, revision=c.oid,
                              endpoint=hub.url, cache_dir=tmp_path / "cache")
        assert Path(got).read_bytes() == data
        sha = _sha256(data)
        assert not list((tmp_path / "hub" / ".tmp").glob("hub-*"))  # the partial file moved in
        obj = tmp_path / "hub" / "datasets" / "o" / "multi.git" / "lfs" / "objects" / sha[:2]
        assert (obj / sha[2:4] / sha).stat().st_size == len(data)


def test_lfs_api_checks_content(local_hub: LocalHub, hub_repo: str) -> None:
    HfApi(endpoint=local_hub.url).create_repo(hub_repo, repo_type=DS)
    data = b"synthetic lfs object\n" * 100
    oid, size = _sha256(data), len(data)
    base = f"{local_hub.url}/datasets/{hub_repo}.git/info/lfs/objects"
    api = f"{local_hub.url}/api/datasets/{hub_repo}"
    head = HfApi(endpoint=local_hub.url).dataset_info(hub_repo).sha
    status, batch = _json(f"{base}/batch", {"operation": "upload", "transfers": ["basic"],
                                            "objects": [{"oid": oid, "size": size},
                                                        {"oid": "xyz", "size": 1}]})
    assert status == 200 and batch["transfer"] == "basic"
    good, bad = batch["objects"]
    assert bad["error"]["code"] == 422 and "sha256" in bad["error"]["message"]
    put = good["actions"]["upload"]["href"]
    verify = good["actions"]["verify"]["href"]

    # wrong bytes, or too many, are refused and nothing is stored
    tampered = data[:-1] + b"?"
    assert _http(put, "PUT", tampered)[0] == 400
    assert _http(put, "PUT", data + b"x")[0] == 400
    assert _json(verify, {"oid": oid, "size": size})[0] == 404
    line = {"key": "lfsFile", "value": {"path": "x.bin", "algo": "sha256", "oid": oid,
                                        "size": size}}
    commit_body = b"".join(json.dumps(x).encode() + b"\n" for x in
                           [{"key": "header", "value": {"summary": "s"}}, line])
    status, _, body = _http(f"{api}/commit/main", "POST", commit_body)
    assert status == 400 and b"was not uploaded" in body
    assert HfApi(endpoint=local_hub.url).dataset_info(hub_repo).sha == head

    assert _http(put, "PUT", data)[0] == 200
    assert _json(verify, {"oid": oid, "size": size})[0] == 200
    assert _json(verify, {"oid": oid, "size": size + 1})[0] == 404
    status, again = _json(f"{base}/batch", {"operation": "upload",
                                            "objects": [{"oid": oid, "size": size}]})
    assert "actions" not in again["objects"][0]  # already stored
    status, down = _json(f"{base}/batch", {"operation": "download",
                                           "objects": [{"oid": oid, "size": size}]})
    assert _http(down["objects"][0]["actions"]["download"]["href"])[2] == data

    wrong_size = dict(line, value=dict(line["value"], size=size + 1))
    body = b"".join(json.dumps(x).encode() + b"\n" for x in
                    [{"key": "header", "value": {"summary": "s"}}, wrong_size])
    assert _http(f"{api}/commit/main", "POST", body)[0] == 400
    status, _, answer = _http(f"{api}/commit/main", "POST", commit_body)
    assert status == 200
    sha = json.loads(answer)["commitOid"]
    got = hf_hub_download(hub_repo, "x.bin", repo_type=DS, revision=sha, endpoint=local_hub.url)
    assert Path(got).read_bytes() == data


def _multipart_batch(base: str, oid: str, size: int) -> dict:
    """The batch answer for uploading one object, multipart offered."""
    status, batch = _json(f"{base}/batch", {"operation": "upload",
                                            "transfers": ["basic", "multipart"],
                                            "objects": [{"oid": oid, "size": size}]})
    assert status == 200
    return batch


def test_multipart_completion_checks_parts(tmp_path: Path) -> None:
    data = os.urandom(2500)
    oid, size = _sha256(data), len(data)
    with LocalHub(tmp_path / "hub", lfs_chunk_size=1000, token=HUB_TOKEN) as hub:
        HfApi(endpoint=hub.url).create_repo("o/p", repo_type=DS)
        base = f"{hub.url}/datasets/o/p.git/info/lfs/objects"
        batch = _multipart_batch(base, oid, size)
        assert batch["transfer"] == "multipart"
        upload = batch["objects"][0]["actions"]["upload"]
        header = upload["header"]
        assert header["chunk_size"] == "1000" and sorted(k for k in header if k.isdigit()) == [
            "1", "2", "3"]
        # a part of the wrong length is refused
        assert _http(header["1"], "PUT", data[:999])[0] == 400
        etags = []
        for n in (1, 2):
            status, headers, _ = _http(header[str(n)], "PUT", data[(n - 1) * 1000 : n * 1000])
            assert status == 200
            etags.append(headers["ETag"])
        parts = [{"partNumber": n + 1, "etag": e} for n, e in enumerate(etags)]
        status, answer = _json(upload["href"], {"oid": oid, "parts": parts})
        assert status == 400 and "parts 1 to 3" in answer["error"]
        status, headers, _ = _http(header["3"], "PUT", data[2000:])
        parts.append({"partNumber": 3, "etag": headers["ETag"]})
        forged = [dict(parts[0], etag='"00"'), *parts[1:]]
        status, answer = _json(upload["href"], {"oid": oid, "parts": forged})
        assert status == 400 and "etag" in answer["error"]
        assert _json(upload["href"], {"oid": oid, "parts": parts})[0] == 200
        verify = batch["objects"][0]["actions"]["verify"]["href"]
        assert _json(verify, {"oid": oid, "size": size})[0] == 200


@pytest.mark.parametrize("order", [(1, 2, 3), (3, 1, 2), (1, 2, 1, 3), (1, 2, 3, 2)],
                         ids=lambda o: "-".join(map(str, o)))
def test_multipart_parts_in_any_order_or_sent_again(tmp_path: Path, order) -> None:
    """Parts in order are hashed on the way in; out of order or sent again, the completion
    hashes the object it holds. Either way only the right bytes are stored, and a part sent
    again with other bytes (the last upload of each part counts) is refused by the sha256."""
    data = os.urandom(2500)
    oid, size = _sha256(data), len(data)
    with LocalHub(tmp_path / "hub", lfs_chunk_size=1000, token=HUB_TOKEN) as hub:
        HfApi(endpoint=hub.url).create_repo("o/p", repo_type=DS)
        base = f"{hub.url}/datasets/o/p.git/info/lfs/objects"
        upload = _multipart_batch(base, oid, size)["objects"][0]["actions"]["upload"]
        etags: dict[int, str] = {}
        for n in order:
            status, headers, _ = _http(upload["header"][str(n)], "PUT",
                                       data[(n - 1) * 1000 : n * 1000])
            assert status == 200
            etags[n] = headers["ETag"]
        parts = [{"partNumber": n, "etag": etags[n]} for n in (1, 2, 3)]
        assert _json(upload["href"], {"oid": oid, "parts": parts})[0] == 200
        status, down = _json(f"{base}/batch", {"operation": "download",
                                               "objects": [{"oid": oid, "size": size}]})
        assert _http(down["objects"][0]["actions"]["download"]["href"])[2] == data
        # a second object whose last part is sent again with other bytes is refused
        other = os.urandom(2500)
        oid2 = _sha256(other)
        upload = _multipart_batch(base, oid2, 2500)["objects"][0]["actions"]["upload"]
        for n, chunk in ((1, other[:1000]), (2, other[1000:2000]), (3, other[2000:]),
                         (3, bytes(500))):
            status, headers, _ = _http(upload["header"][str(n)], "PUT", chunk)
            etags[n] = headers["ETag"]
        parts = [{"partNumber": n, "etag": etags[n]} for n in (1, 2, 3)]
        status, answer = _json(upload["href"], {"oid": oid2, "parts": parts})
        assert status == 400 and "sha256" in answer["error"]
        assert not list((tmp_path / "hub" / ".tmp").glob("hub-lfs-multipart-*"))


def test_xet_is_refused_with_the_fix(
    local_hub: LocalHub, hub_repo: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    HfApi(endpoint=local_hub.url).create_repo(hub_repo, repo_type=DS)
    status, headers, body = _http(f"{local_hub.url}/api/datasets/{hub_repo}/xet-write-token/main")
    assert status == 501 and "HF_HUB_DISABLE_XET=1" in json.loads(body)["error"]
    assert "HF_HUB_DISABLE_XET=1" in headers["X-Error-Message"]
    # an unmodified client with Xet enabled fails on the token request when it uploads a table;
    # hf_xet reports only the status and the URL, so the server's log carries the fix
    caplog.set_level(logging.WARNING, logger="rcp_data.hub")
    caplog.clear()
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_XET"}
    env["HF_HOME"] = str(tmp_path / "hf")
    script = (
        "import sys\n"
        "from huggingface_hub import HfApi, CommitOperationAdd\n"
        "api = HfApi(endpoint=sys.argv[1])\n"
        "try:\n"
        "    api.create_commit(sys.argv[2], [CommitOperationAdd('t.parquet', b'PAR1' * 10)],\n"
        "                      commit_message='m', repo_type='dataset')\n"
        "except Exception as exc:\n"
        "    print('FAILED', exc)\n"
        "else:\n"
        "    print('UPLOADED')\n"
    )
    out = subprocess.run([sys.executable, "-c", script, local_hub.url, hub_repo], env=env,
                         capture_output=True, text=True, timeout=120)
    assert "FAILED" in out.stdout and "501" in out.stdout and "xet-write-token" in out.stdout, out
    assert f"/api/datasets/{hub_repo}/xet-write-token/main -> 501" in caplog.text
    assert "set HF_HUB_DISABLE_XET=1" in caplog.text
    assert HfApi(endpoint=local_hub.url).dataset_info(hub_repo).siblings == []
