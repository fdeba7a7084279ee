"""SIGKILL the local Hub (its whole process group, git included) at random points of a bounded
number of publishes, on loopback. After each restart: no temporary files are left, every
repository passes ``git fsck``, every LFS pointer on ``main`` has its object, and the next publish
(with ``parent_commit``) succeeds and reads back. Synthetic bytes only."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from huggingface_hub import HfApi, hf_hub_download
from support.hub_proc import HubProcess

from rcp_data.hub.lfs import parse_pointer

KILLS = 10
SEED = 2026
DS = "dataset"
REPO = "o/killed"

# one publish: an LFS table, a regular file, the previous table deleted, then a tag
_PUBLISH = r"""
import os, sys
from huggingface_hub import HfApi, CommitOperationAdd, CommitOperationDelete
url, i = sys.argv[1], int(sys.argv[2])
api = HfApi(endpoint=url)
head = api.dataset_info(sys.argv[3]).sha
files = {s.rfilename for s in api.dataset_info(sys.argv[3]).siblings}
ops = [CommitOperationAdd(f"data/table-{i}.parquet", os.urandom(6_000_000) + bytes([i])),
       CommitOperationAdd("notes.json", f'{{"publish": {i}}}'.encode())]
ops += [CommitOperationDelete(f) for f in files if f.startswith("data/")]
print("ready", flush=True)
c = api.create_commit(sys.argv[3], ops, commit_message=f"publish {i}", repo_type="dataset",
                      parent_commit=head)
api.create_tag(sys.argv[3], tag=f"v{i}", revision=c.oid, repo_type="dataset")
print("published", c.oid, flush=True)
"""


def _publish(url: str, i: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    return subprocess.Popen([sys.executable, "-c", _PUBLISH, url, str(i), REPO],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True)


def _check_store(root: Path) -> None:
    assert not list((root / ".tmp").glob("hub-*")), "temporary files survived the restart"
    for repo in root.glob("datasets/*/*.git"):
        fsck = _git(repo, "fsck", "--strict", "--no-dangling")
        assert fsck.returncode == 0, fsck.stderr.decode()
        assert not list(repo.glob("refs/**/*.lock"))
        listing = _git(repo, "ls-tree", "-r", "-z", "main").stdout.split(b"\x00")
        for record in filter(None, listing):
            meta, path = record.split(b"\t", 1)
            pointer = parse_pointer(_git(repo, "cat-file", "blob", meta.split()[2].decode()).stdout)
            if pointer is not None:  # the object a committed pointer names is stored
                obj = repo / "lfs" / "objects" / pointer.oid[:2] / pointer.oid[2:4] / pointer.oid
                assert obj.stat().st_size == pointer.size, path


def test_sigkill_during_publishes(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    root = tmp_path / "hub"
    hub = HubProcess(root)
    url = hub.start()
    HfApi(endpoint=url).create_repo(REPO, repo_type=DS)
    try:
        first = _publish(url, 0)
        assert first.stdout.readline().startswith("ready"), first.stderr.read()
        started = time.monotonic()  # kills land between "ready" and the end of a publish
        out, err = first.communicate(timeout=300)
        assert "published" in out, err
        duration = time.monotonic() - started
        outcomes = []
        for i in range(1, KILLS + 1):
            client = _publish(url, i)
            assert client.stdout.readline().startswith("ready"), client.stderr.read()
            time.sleep(rng.uniform(0, duration))
            hub.kill()
            client.kill()
            out, _ = client.communicate(timeout=60)
            outcomes.append("published" in out)
            hub = HubProcess(root)
            url = hub.start()
            _check_store(root)
        # the next publish after the last kill succeeds and reads back
        final = _publish(url, KILLS + 1)
        out, err = final.communicate(timeout=300)
        assert "published" in out, err
        sha = out.split()[-1]
        api = HfApi(endpoint=url)
        assert api.dataset_info(REPO, revision=f"v{KILLS + 1}").sha == sha
        got = hf_hub_download(REPO, f"data/table-{KILLS + 1}.parquet", repo_type=DS,
                              revision=sha, endpoint=url, cache_dir=tmp_path / "cache")
        assert Path(got).stat().st_size == 6_000_001
        assert [s.rfilename for s in api.dataset_info(REPO, revision=sha).siblings] == [
            f"data/table-{KILLS + 1}.parquet", "notes.json"]
        _check_store(root)
        print(f"kills: {KILLS} within {duration:.2f}s of a publish's start; "
              f"publishes complete before their kill: {sum(outcomes)}")
    finally:
        hub.kill()
