"""The local Hub against the real, unmodified clients (huggingface_hub, datasets); no mocks.

Data here is synthetic (a few hand-written rows), used only to exercise the protocol.
"""

from __future__ import annotations

import http.client
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
import pytest
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from support.hub_fixture import HUB_TOKEN

from rcp_data.hub.server import LocalHub, embedded_hub, free_port

DS = "dataset"


@pytest.fixture
def api(local_hub: LocalHub) -> HfApi:
    return HfApi(endpoint=local_hub.url)


def _add(path: str, data: bytes | str) -> CommitOperationAdd:
    return CommitOperationAdd(path, data.encode() if isinstance(data, str) else data)


def _git_blob_sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def _status(exc: HfHubHTTPError) -> int:
    return exc.response.status_code


def test_create_repo_and_conflict(api: HfApi, hub_repo: str, local_hub: LocalHub) -> None:
    url = api.create_repo(hub_repo, repo_type=DS)
    assert url.repo_id == hub_repo and url.repo_type == DS
    assert (local_hub.root / "datasets" / f"{hub_repo}.git" / "HEAD").is_file()
    with pytest.raises(HfHubHTTPError) as err:
        api.create_repo(hub_repo, repo_type=DS)
    assert _status(err.value) == 409
    assert api.create_repo(hub_repo, repo_type=DS, exist_ok=True).repo_id == hub_repo
    info = api.dataset_info(hub_repo)
    assert info.id == hub_repo and len(info.sha) == 40 and info.siblings == []


def test_commit_delete_parent_and_noop(api: HfApi, hub_repo: str) -> None:
    api.create_repo(hub_repo, repo_type=DS)
    first = api.dataset_info(hub_repo).sha
    c1 = api.create_commit(
        hub_repo,
        [_add("a.txt", "alpha"), _add("dir/b.txt", "beta"), _add("dir/sub/c.txt", "gamma")],
        commit_message="add three",
        repo_type=DS,
        parent_commit=first,
    )
    assert c1.oid != first
    files = {s.rfilename: s for s in api.dataset_info(hub_repo).siblings}
    assert sorted(files) == ["a.txt", "dir/b.txt", "dir/sub/c.txt"]
    assert files["dir/b.txt"].blob_id == _git_blob_sha(b"beta") and files["dir/b.txt"].size == 4

    # a stale parent is refused with the Hub's 412 and changes nothing
    with pytest.raises(HfHubHTTPError) as err:
        api.create_commit(
            hub_repo,
            [_add("x.txt", "x")],
            commit_message="stale",
            repo_type=DS,
            parent_commit=first,
        )
    assert _status(err.value) == 412
    assert "branch was updated" in str(err.value)
    assert api.dataset_info(hub_repo).sha == c1.oid

    # unchanged content: the client skips the commit and gets the old head back
    same = api.create_commit(
        hub_repo, [_add("a.txt", "alpha")], commit_message="same", repo_type=DS
    )
    assert same.oid == c1.oid
    assert len(api.list_repo_commits(hub_repo, repo_type=DS)) == 2

    c2 = api.create_commit(
        hub_repo,
        [CommitOperationDelete("a.txt"), CommitOperationDelete("dir/sub/")],
        commit_message="delete",
        repo_type=DS,
        parent_commit=c1.oid,
    )
    assert [s.rfilename for s in api.dataset_info(hub_repo).siblings] == ["dir/b.txt"]
    with pytest.raises(EntryNotFoundError):
        api.create_commit(
            hub_repo, [CommitOperationDelete("nope.txt")], commit_message="bad", repo_type=DS
        )
    chain = api.list_repo_commits(hub_repo, repo_type=DS)
    assert [c.commit_id for c in chain] == [c2.oid, c1.oid, first]
    assert [c.title for c in chain[:2]] == ["delete", "add three"]


def test_tags_refs_and_revisions(api: HfApi, hub_repo: str, local_hub: LocalHub) -> None:
    api.create_repo(hub_repo, repo_type=DS)
    c1 = api.create_commit(hub_repo, [_add("f.txt", "one")], commit_message="v1", repo_type=DS)
    api.create_tag(hub_repo, tag="v1", revision=c1.oid, repo_type=DS, tag_message="first")
    with pytest.raises(HfHubHTTPError) as err:
        api.create_tag(hub_repo, tag="v1", revision="main", repo_type=DS)
    assert _status(err.value) == 409
    c2 = api.create_commit(hub_repo, [_add("f.txt", "two")], commit_message="v2", repo_type=DS)
    api.create_tag(hub_repo, tag="light", repo_type=DS)  # lightweight, at main
    api.create_branch(hub_repo, branch="old", revision="v1", repo_type=DS)

    refs = api.list_repo_refs(hub_repo, repo_type=DS)
    assert {(r.name, r.target_commit) for r in refs.tags} == {("v1", c1.oid), ("light", c2.oid)}
    assert {(r.name, r.ref, r.target_commit) for r in refs.branches} == {
        ("main", "refs/heads/main", c2.oid),
        ("old", "refs/heads/old", c1.oid),
    }
    assert refs.converts == []

    assert api.dataset_info(hub_repo, revision="v1").sha == c1.oid
    assert api.repo_info(hub_repo, repo_type=DS, revision=c1.oid).sha == c1.oid
    assert api.dataset_info(hub_repo, revision="old").sha == c1.oid

    for rev, want in (("v1", "one"), (c1.oid, "one"), ("main", "two"), ("light", "two")):
        path = hf_hub_download(
            hub_repo, "f.txt", repo_type=DS, revision=rev, endpoint=local_hub.url
        )
        assert Path(path).read_text() == want

    api.delete_tag(hub_repo, tag="v1", repo_type=DS)
    assert [r.name for r in api.list_repo_refs(hub_repo, repo_type=DS).tags] == ["light"]
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(hub_repo, revision="v1")
    with pytest.raises(RevisionNotFoundError):
        api.delete_tag(hub_repo, tag="v1", repo_type=DS)
    # the commit a deleted tag named stays reachable by sha
    assert api.dataset_info(hub_repo, revision=c1.oid).sha == c1.oid


def test_typed_errors(api: HfApi, hub_repo: str, local_hub: LocalHub) -> None:
    api.create_repo(hub_repo, repo_type=DS)
    api.create_commit(hub_repo, [_add("f.txt", "x")], commit_message="f", repo_type=DS)
    kw = {"repo_type": DS, "endpoint": local_hub.url}
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("rcp-test/no-such-repo", "f.txt", **kw)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(hub_repo, "f.txt", revision="no-such-tag", **kw)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(hub_repo, "f.txt", revision="a" * 40, **kw)
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(hub_repo, revision="refs/convert/parquet")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(hub_repo, "missing.txt", **kw)
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("rcp-test/no-such-repo")
    with pytest.raises(RepositoryNotFoundError):
        api.create_commit(
            "rcp-test/no-such-repo", [_add("f.txt", "x")], commit_message="m", repo_type=DS
        )

    # raw HTTP: error codes and headers as the Hub sends them
    req = urllib.request.Request(f"{local_hub.url}/datasets/{hub_repo}/resolve/main/missing.txt")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 404
    assert err.value.headers["X-Error-Code"] == "EntryNotFound"
    assert len(err.value.headers["X-Repo-Commit"]) == 40


def test_tree_paths_info_and_pagination(api: HfApi, hub_repo: str, tmp_path: Path) -> None:
    api.create_repo(hub_repo, repo_type=DS)
    names = ["top.txt", "d/one.txt", "d/two.txt", "d/e/three.txt"]
    c = api.create_commit(
        hub_repo, [_add(n, n) for n in names], commit_message="tree", repo_type=DS
    )
    tree = list(api.list_repo_tree(hub_repo, repo_type=DS, recursive=True))
    assert {(t.path, type(t).__name__) for t in tree} == {
        ("top.txt", "RepoFile"),
        ("d", "RepoFolder"),
        ("d/one.txt", "RepoFile"),
        ("d/two.txt", "RepoFile"),
        ("d/e", "RepoFolder"),
        ("d/e/three.txt", "RepoFile"),
    }
    flat = list(api.list_repo_tree(hub_repo, path_in_repo="d", repo_type=DS, expand=True))
    assert sorted(t.path for t in flat) == ["d/e", "d/one.txt", "d/two.txt"]
    assert all(t.last_commit is not None and t.last_commit.oid == c.oid for t in flat)
    with pytest.raises(EntryNotFoundError):
        list(api.list_repo_tree(hub_repo, path_in_repo="nope", repo_type=DS))

    info = api.get_paths_info(hub_repo, ["top.txt", "d/e", "absent"], repo_type=DS)
    assert [(type(i).__name__, i.path) for i in info] == [
        ("RepoFile", "top.txt"),
        ("RepoFolder", "d/e"),
    ]
    assert info[0].blob_id == _git_blob_sha(b"top.txt") and info[0].size == len("top.txt")

    # a second hub with tiny pages: the client must follow the Link headers
    with LocalHub(tmp_path / "paged", page_size=2, token=HUB_TOKEN) as small:
        small_api = HfApi(endpoint=small.url)
        small_api.create_repo("o/p", repo_type=DS)
        for i in range(4):
            small_api.create_commit(
                "o/p", [_add(f"{i}.txt", str(i))], commit_message=f"c{i}", repo_type=DS
            )
        assert len(small_api.list_repo_commits("o/p", repo_type=DS)) == 5
        paged = list(small_api.list_repo_tree("o/p", repo_type=DS, recursive=True))
        assert sorted(t.path for t in paged) == ["0.txt", "1.txt", "2.txt", "3.txt"]


@pytest.mark.parametrize("name", ["bin/data.bin", "notes/data.txt"])  # LFS and regular
def test_resolve_ranges_and_snapshot(
    api: HfApi, hub_repo: str, local_hub: LocalHub, name: str
) -> None:
    import hashlib

    api.create_repo(hub_repo, repo_type=DS)
    blob = (bytes(range(256)) if name.endswith(".bin") else b"0123456789abcdef" * 16) * 40
    c = api.create_commit(
        hub_repo,
        [_add(name, blob), _add("README.md", "# x\n")],
        commit_message="b",
        repo_type=DS,
    )
    url = f"{local_hub.url}/datasets/{hub_repo}/resolve/main/{name}"
    head = urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10)
    assert head.headers["X-Repo-Commit"] == c.oid
    if name.endswith(".bin"):  # stored in LFS: the etag is the content's sha256
        sha256 = hashlib.sha256(blob).hexdigest()
        assert head.headers["ETag"] == head.headers["X-Linked-Etag"] == f'"{sha256}"'
        assert int(head.headers["X-Linked-Size"]) == len(blob)
    else:
        assert head.headers["ETag"] == f'"{_git_blob_sha(blob)}"'
        assert "X-Linked-Etag" not in head.headers
    assert int(head.headers["Content-Length"]) == len(blob)
    assert head.headers["Accept-Ranges"] == "bytes"
    for spec, want in (("100-199", blob[100:200]), ("10000-", blob[10000:]), ("-5", blob[-5:])):
        resp = urllib.request.urlopen(
            urllib.request.Request(url, headers={"Range": f"bytes={spec}"}), timeout=10
        )
        assert resp.status == 206 and resp.read() == want
        assert resp.headers["Content-Range"].endswith(f"/{len(blob)}")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(urllib.request.Request(url, headers={"Range": "bytes=99999-"}))
    assert err.value.code == 416

    folder = Path(snapshot_download(hub_repo, repo_type=DS, revision=c.oid, endpoint=local_hub.url))
    assert (folder / name).read_bytes() == blob
    assert (folder / "README.md").read_text() == "# x\n"


def test_commit_race_one_winner(api: HfApi, hub_repo: str) -> None:
    api.create_repo(hub_repo, repo_type=DS)
    parent = api.dataset_info(hub_repo).sha
    barrier = threading.Barrier(6)
    results: list = [None] * 6

    def push(i: int) -> None:
        barrier.wait()
        try:
            results[i] = api.create_commit(
                hub_repo,
                [_add(f"racer-{i}.txt", f"racer {i}")],
                commit_message=f"racer {i}",
                repo_type=DS,
                parent_commit=parent,
            ).oid
        except HfHubHTTPError as exc:
            results[i] = _status(exc)

    threads = [threading.Thread(target=push, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1 and sorted(r for r in results if isinstance(r, int)) == [412] * 5
    chain = api.list_repo_commits(hub_repo, repo_type=DS)
    assert [c.commit_id for c in chain] == [winners[0], parent]
    assert len(api.dataset_info(hub_repo).siblings) == 1


def test_concurrent_reads(api: HfApi, hub_repo: str, local_hub: LocalHub) -> None:
    api.create_repo(hub_repo, repo_type=DS)
    contents = {f"f{i}.txt": f"content {i}" * 50 for i in range(8)}
    api.create_commit(
        hub_repo, [_add(k, v) for k, v in contents.items()], commit_message="m", repo_type=DS
    )
    errors: list = []

    def read(name: str) -> None:
        try:
            for _ in range(3):
                url = f"{local_hub.url}/datasets/{hub_repo}/resolve/main/{name}"
                body = urllib.request.urlopen(url, timeout=10).read().decode()
                assert body == contents[name]
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(n,)) for n in contents for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


_CARD = """---
pretty_name: synthetic
created: 2024-01-02
configs:
- config_name: qrels
  data_files:
  - split: test
    path: qrels/test.parquet
- config_name: queries
  data_files:
  - split: test
    path: queries/test.parquet
---
# synthetic test dataset
"""


def test_load_dataset_at_tag_and_sha(api: HfApi, hub_repo: str, local_hub: LocalHub) -> None:
    import datasets

    api.create_repo(hub_repo, repo_type=DS)
    stored = local_hub.stats.get("lfs_objects_stored", 0)
    qrels_v1 = pd.DataFrame(
        {"query-id": ["q1", "q1", "q2"], "corpus-id": ["d1", "d2", "d1"], "score": [0.9, 0.1, 0.5]}
    )
    queries = pd.DataFrame({"_id": ["q1", "q2"], "text": ["first query", "second query"]})
    v1 = api.create_commit(
        hub_repo,
        [
            _add("README.md", _CARD),
            _add("qrels/test.parquet", _parquet(qrels_v1)),
            _add("queries/test.parquet", _parquet(queries)),
        ],
        commit_message="release v1",
        repo_type=DS,
    )
    # both tables went through the LFS batch API: the tree holds pointers to them
    assert local_hub.stats["lfs_objects_stored"] - stored == 2
    tree = {e.path: e for e in api.list_repo_tree(hub_repo, repo_type=DS, recursive=True)}
    assert tree["qrels/test.parquet"].lfs is not None and tree["README.md"].lfs is None
    api.create_tag(hub_repo, tag="v1-test", revision=v1.oid, repo_type=DS)
    assert (
        api.dataset_info(hub_repo, revision="v1-test").card_data["configs"][0]["config_name"]
        == "qrels"
    )

    qrels_v2 = qrels_v1.assign(score=[0.8, 0.2, 0.4])
    v2 = api.create_commit(
        hub_repo,
        [_add("qrels/test.parquet", _parquet(qrels_v2))],
        commit_message="release v2",
        repo_type=DS,
        parent_commit=v1.oid,
    )

    def scores(revision: str) -> list[float]:
        ds = datasets.load_dataset(hub_repo, "qrels", split="test", revision=revision)
        return list(ds["score"])

    assert scores("v1-test") == [0.9, 0.1, 0.5]
    assert scores(v1.oid) == [0.9, 0.1, 0.5]
    assert scores(v2.oid) == [0.8, 0.2, 0.4]
    assert scores("main") == [0.8, 0.2, 0.4]
    q = datasets.load_dataset(hub_repo, "queries", split="test", revision="v1-test")
    assert q["text"] == ["first query", "second query"]


def test_validate_yaml_rejects_bad_card(api: HfApi, hub_repo: str) -> None:
    api.create_repo(hub_repo, repo_type=DS)
    with pytest.raises(ValueError, match="Invalid metadata"):
        api.create_commit(
            hub_repo,
            [_add("README.md", "---\nconfigs: [\n---\n")],
            commit_message="m",
            repo_type=DS,
        )
    assert api.dataset_info(hub_repo).siblings == []


def test_token_never_logged(
    tmp_path: Path, hub_repo: str, caplog: pytest.LogCaptureFixture, capfd
) -> None:
    secret = "hf_localhubSECRETtoken0123456789"
    caplog.set_level(logging.DEBUG, logger="rcp_data")
    with LocalHub(tmp_path / "hub", token=secret) as local_hub:
        _token_never_logged(local_hub, hub_repo, secret, caplog, capfd)


def _token_never_logged(local_hub: LocalHub, hub_repo: str, secret: str, caplog, capfd) -> None:
    api = HfApi(endpoint=local_hub.url, token=secret)
    api.create_repo(hub_repo, repo_type=DS)
    api.create_commit(hub_repo, [_add("f.txt", "x")], commit_message="m", repo_type=DS)
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(hub_repo, "nope", repo_type=DS, token=secret, endpoint=local_hub.url)
    assert any("committed" in r.getMessage() for r in caplog.records)  # the server did log
    out, err = capfd.readouterr()
    assert secret not in caplog.text and secret not in out and secret not in err
    for path in local_hub.root.rglob("*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            assert secret.encode() not in path.read_bytes(), path


def test_embedded_hub_stops() -> None:
    port = free_port()
    with embedded_hub(port=port, token=HUB_TOKEN) as url:
        assert url == f"http://127.0.0.1:{port}"
        api = HfApi(endpoint=url)
        api.create_repo("o/e", repo_type=DS)
        assert api.dataset_info("o/e").id == "o/e"
        kept = http.client.HTTPConnection(urlsplit(url).netloc, timeout=5)  # keep-alive
        kept.request("GET", "/api/datasets/o/e")
        assert kept.getresponse().read()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/api/datasets/o/e", timeout=2)
    with pytest.raises(OSError):  # the open connection was hung up too
        kept.request("GET", "/api/datasets/o/e")
        kept.getresponse()


def test_server_side_noop_commit(api: HfApi, hub_repo: str, local_hub: LocalHub) -> None:
    """A commit whose tree equals the head's makes no commit and answers the old head."""
    api.create_repo(hub_repo, repo_type=DS)
    head = api.create_commit(hub_repo, [_add("f.txt", "same")], commit_message="m", repo_type=DS)
    lines = [
        {"key": "header", "value": {"summary": "again", "parentCommit": head.oid}},
        {"key": "file", "value": {"path": "f.txt", "encoding": "base64", "content": "c2FtZQ=="}},
    ]
    req = urllib.request.Request(
        f"{local_hub.url}/api/datasets/{hub_repo}/commit/main",
        data=b"".join(json.dumps(x).encode() + b"\n" for x in lines),
        headers={"Content-Type": "application/x-ndjson", "Authorization": f"Bearer {HUB_TOKEN}"},
        method="POST",
    )
    answer = json.loads(urllib.request.urlopen(req, timeout=10).read())
    assert answer["commitOid"] == head.oid
    assert len(api.list_repo_commits(hub_repo, repo_type=DS)) == 2


def test_cli_serve_and_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "HF_TOKEN": "hf_cliSECRET987654321"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rcp_data.cli", "hub", "serve", "--root", str(tmp_path / "hub")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = proc.stdout.readline().split()[-1]
        assert url.startswith("http://127.0.0.1:")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{url}/api/datasets/o/missing", timeout=10)
        assert err.value.headers["X-Error-Code"] == "RepoNotFound"
        proc.send_signal(signal.SIGTERM)
        out, errout = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "hf_cliSECRET" not in out + errout


def test_plain_git_push_is_visible(api: HfApi, hub_repo: str, local_hub: LocalHub, tmp_path):
    """Repositories are ordinary bare git repos: a push shows up through the API at once."""
    api.create_repo(hub_repo, repo_type=DS)
    bare = local_hub.root / "datasets" / f"{hub_repo}.git"
    work = tmp_path / "clone"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "clone", "-q", str(bare), str(work)], check=True)
    (work / "pushed.txt").write_text("via git")
    subprocess.run([*git, "-C", str(work), "add", "pushed.txt"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "pushed"], check=True)
    subprocess.run([*git, "-C", str(work), "push", "-q", "origin", "HEAD:main"], check=True)
    sha = subprocess.run(
        ["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert api.dataset_info(hub_repo).sha == sha
    got = hf_hub_download(hub_repo, "pushed.txt", repo_type=DS, endpoint=local_hub.url)
    assert Path(got).read_text() == "via git"
