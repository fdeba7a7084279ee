"""The local Hub serves git's smart HTTP read-only: ``git clone`` gives the commit's tree, a push
is refused 403 and changes nothing, a gzip request body is read by git's own code.

The repository is SYNTHETIC: a card and a parquet-named binary (an LFS file), committed with
the real ``huggingface_hub`` client; the clone is made with the real ``git``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi

from rcp_data.hub.git_http import PUSH_REFUSED

CARD = b"---\nlicense: cc-by-4.0\n---\n# SYNTHETIC repository for git clone\n"
DATA = b"PAR1" + bytes(range(256)) * 40 + b"PAR1"   # 10 248 bytes, stored through LFS


@pytest.fixture(scope="module")
def repo(local_hub) -> dict:
    api = HfApi(endpoint=local_hub.url, token=local_hub.token)
    name = "rcp-test/git-clone"
    api.create_repo(name, repo_type="dataset", exist_ok=True)
    info = api.create_commit(name, [CommitOperationAdd("README.md", CARD),
                                    CommitOperationAdd("data/train.parquet", DATA)],
                             commit_message="SYNTHETIC files", repo_type="dataset")
    return {"name": name, "sha": info.oid, "url": f"{local_hub.url}/datasets/{name}",
            "api": api, "root": local_hub.root}


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd or Path.cwd()), "LC_ALL": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"}
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120, check=False)


def _expected_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("suffix", ["", ".git"])
def test_git_clone_gives_the_commit_and_its_tree(repo, tmp_path, suffix):
    clone = tmp_path / "clone"
    done = _git("clone", "--quiet", repo["url"] + suffix, str(clone), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _git("rev-parse", "HEAD", cwd=clone).stdout.strip() == repo["sha"]
    assert (clone / "README.md").read_bytes() == CARD
    pointer = (clone / "data/train.parquet").read_text()   # the LFS pointer, smudging skipped
    assert f"oid sha256:{hashlib.sha256(DATA).hexdigest()}\n" in pointer
    assert f"size {len(DATA)}\n" in pointer
    tree = _git("ls-tree", "-r", "HEAD", cwd=clone).stdout.split("\n")
    assert [line.split("\t")[1] for line in tree if line] == ["README.md", "data/train.parquet"]
    assert tree[0].split()[2] == _expected_blob_id(CARD)
    # the Hub's own listing of the commit names the same blob ids
    listed = {e.path: e.blob_id for e in repo["api"].list_repo_tree(
        repo["name"], revision=repo["sha"], recursive=True, repo_type="dataset")
        if hasattr(e, "blob_id")}
    assert listed == {line.split("\t")[1]: line.split()[2] for line in tree if line}
    assert _git("fsck", "--strict", cwd=clone).returncode == 0


def test_a_commit_is_fetched_by_its_sha(repo, tmp_path):
    bare = tmp_path / "bare.git"
    assert _git("init", "--bare", "--quiet", str(bare)).returncode == 0
    for version in ("0", "2"):
        done = _git("-c", f"protocol.version={version}", "--git-dir", str(bare), "fetch",
                    "--quiet", repo["url"] + ".git", f"+{repo['sha']}:refs/pinned", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert _git("--git-dir", str(bare), "rev-parse", "refs/pinned").stdout.strip() == repo["sha"]


def test_push_is_refused_and_changes_nothing(repo, tmp_path):
    clone = tmp_path / "clone"
    assert _git("clone", "--quiet", repo["url"], str(clone), cwd=tmp_path).returncode == 0
    (clone / "extra.txt").write_text("SYNTHETIC\n")
    _git("add", "extra.txt", cwd=clone)
    assert _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "x",
                cwd=clone).returncode == 0
    before = _git("ls-remote", repo["url"], cwd=tmp_path).stdout
    pushed = _git("push", "origin", "HEAD:main", cwd=clone)
    assert pushed.returncode != 0
    assert f"remote: {PUSH_REFUSED}" in pushed.stderr and "403" in pushed.stderr
    assert _git("ls-remote", repo["url"], cwd=tmp_path).stdout == before
    # the receive-pack endpoint itself refuses too, whatever the client sends
    request = urllib.request.Request(f"{repo['url']}.git/git-receive-pack", data=b"0000",
                                     method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=30)
    assert err.value.code == 403 and PUSH_REFUSED in err.value.read().decode()


def _pkt(line: str) -> bytes:
    return b"%04x%s" % (len(line) + 4, line.encode())


def test_a_gzip_request_body_is_read(repo):
    """git sends large upload-pack bodies gzip-compressed: a v2 ls-refs request, gzipped,
    lists the repository's branch at its commit."""
    body = _pkt("command=ls-refs\n") + b"0001" + _pkt("peel\n") + b"0000"
    request = urllib.request.Request(
        f"{repo['url']}.git/git-upload-pack", data=gzip.compress(body), method="POST",
        headers={"Content-Type": "application/x-git-upload-pack-request",
                 "Content-Encoding": "gzip", "Git-Protocol": "version=2"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.headers["Content-Type"] == "application/x-git-upload-pack-result"
        text = answer.read().decode()
    assert f"{repo['sha']} refs/heads/main" in text


def test_dumb_protocol_and_unknown_repos_are_not_served(repo, local_hub):
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{repo['url']}.git/info/refs", timeout=30)
    assert err.value.code == 403
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{local_hub.url}/datasets/rcp-test/no-such-repo.git/info/refs"
                               "?service=git-upload-pack", timeout=30)
    assert err.value.code == 404
