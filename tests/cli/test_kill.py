"""SIGKILL at random points (issue 14, checks): 20 builds of the SYNTHETIC demo and 20 publishes
to the local Hub fixture (loopback only), each killed at a seeded random moment of its run.

Afterwards ``release check`` accepts no half-written folder (a folder it accepts is byte for
byte the complete release), the Hub's bare repositories pass ``git fsck``, the Hub holds at most
the one release commit and its tag, and the next build or publish succeeds and leaves nothing
behind.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from support.release_dirs import make_release_dir

import rcp_data
from rcp_data.cli import main
from rcp_data.model.history import release_tag

pytestmark = pytest.mark.slow

SEED = 20261414
RUNS = 20
DATE = "2026-11-30"
SRC = str(Path(rcp_data.__file__).resolve().parents[1])
TAG1 = release_tag(1, "rcp-data/synthetic-judge-7b")


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _start(*argv: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen([sys.executable, "-m", "rcp_data", "-q", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _timed(*argv: str) -> float:
    start = time.monotonic()
    assert _start(*argv).wait(timeout=600) == 0
    return time.monotonic() - start


def _run_and_kill(argv: list[str], delay: float) -> str:
    """Run ``rcp-data argv``; SIGKILL it after ``delay`` seconds unless it ended first."""
    proc = _start(*argv)
    try:
        proc.wait(timeout=delay)
        return f"ended {proc.returncode}"
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return "killed"


def _accepted(folder: Path) -> bool:
    """Whether ``rcp-data release check`` accepts the folder."""
    return main(["-q", "release", "check", str(folder)]) == 0


def test_builds_killed_at_random_points(demo_data, tmp_path, capsys):
    rng = random.Random(SEED)
    inputs = demo_data / "inputs"
    reference = tmp_path / "reference"
    argv = ["build", "demo", "--inputs", str(inputs), "--date", DATE, "--force", "--out"]
    span = _timed(*argv, str(reference))
    complete = _digest(reference)
    work = tmp_path / "work"
    work.mkdir()
    out = work / "release"
    outcomes = []
    for _ in range(RUNS):
        outcomes.append(_run_and_kill([*argv, str(out)], rng.uniform(0.1, 1.1) * span))
        if out.exists():                                   # never a partial release
            assert _digest(out) == complete and _accepted(out)
        for left in work.iterdir():                        # what a killed run left
            if left != out and left.is_dir() and _accepted(left):
                assert _digest(left) == complete, left     # accepted only when complete
    capsys.readouterr()
    assert "killed" in outcomes, outcomes
    assert main(["-q", *argv, str(out)]) == 0
    assert [p.name for p in work.iterdir()] == ["release"]   # every temporary removed
    assert _digest(out) == complete


def _bare_repo(local_hub, repo: str) -> Path:
    owner, name = repo.split("/")
    return Path(local_hub.root) / "datasets" / owner / f"{name}.git"


def test_publishes_killed_at_random_points(local_hub, tmp_path, hub_repo, capsys):
    rng = random.Random(SEED + 1)
    api = HfApi(endpoint=local_hub.url)
    release = make_release_dir(tmp_path / "v1", hub_repo)
    probe = make_release_dir(tmp_path / "probe", f"{hub_repo}-probe")
    api.create_repo(f"{hub_repo}-probe", repo_type="dataset")
    span = _timed("release", "publish", str(probe), "--repo", f"{hub_repo}-probe")
    api.create_repo(hub_repo, repo_type="dataset")
    head = api.list_repo_refs(hub_repo, repo_type="dataset").branches[0].target_commit
    outcomes = []
    for _ in range(RUNS):
        outcomes.append(_run_and_kill(["release", "publish", str(release), "--repo", hub_repo],
                                      rng.uniform(0.1, 1.1) * span))
        fsck = subprocess.run(["git", "--git-dir", str(_bare_repo(local_hub, hub_repo)), "fsck",
                               "--no-progress"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        commits = [c.commit_id for c in api.list_repo_commits(hub_repo, repo_type="dataset")]
        tags = {t.name: t.target_commit
                for t in api.list_repo_refs(hub_repo, repo_type="dataset").tags}
        assert commits[-1] == head and len(commits) <= 2          # at most the one release
        assert tags in ({}, {TAG1: commits[0]}) and (not tags or len(commits) == 2)
    assert "killed" in outcomes, outcomes
    capsys.readouterr()
    assert main(["release", "publish", str(release), "--repo", hub_repo]) == 0
    commits = [c.commit_id for c in api.list_repo_commits(hub_repo, repo_type="dataset")]
    tags = {t.name: t.target_commit for t in api.list_repo_refs(hub_repo, repo_type="dataset").tags}
    assert len(commits) == 2 and commits[1] == head and tags == {TAG1: commits[0]}
    files = set(api.list_repo_files(hub_repo, repo_type="dataset", revision=TAG1))
    assert files == set(_digest(release)) | {".gitattributes"} or files == set(_digest(release))
