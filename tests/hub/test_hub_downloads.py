"""The Hub's transfer paths on the client side (issue 15, items 1 and 3).

- Uploads to the local Hub run with ``huggingface_hub``'s Xet path off (the legacy LFS path),
  without ``HF_HUB_DISABLE_XET`` in the environment, and leave the setting as it was.
- ``replay hf://`` and ``card render hf://`` (``card regenerate``'s read step) download only the
  tables they read, into the user's Hugging Face cache; ``verify`` downloads everything once.
- ``HF_HUB_OFFLINE=1`` with a full sha in the cache: verify, replay and the card's read step run
  without the Hub (the endpoint is a closed port), in subprocesses as a user runs them.

The release is the SYNTHETIC demo release with its corpus padded to over 100x its other files.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi, constants
from huggingface_hub.hf_api import RepoFile
from huggingface_hub.utils._runtime import is_xet_available
from support.demo_fixture import copy_demo

from rcp_data.core.hub_client import REAL_HUB, HubClient, identifies_as_local_hub
from rcp_data.core.io import write_json
from rcp_data.core.specs import load_spec
from rcp_data.model.layout import BUILD_MANIFEST
from rcp_data.model.manifest import load_manifest
from rcp_data.model.tables import corpus_record
from rcp_data.release.prepare import prepare_release
from rcp_data.release.publish import publish

REPO = "rcp-test/big-corpus-demo"
PAD_DOCS = 120_000   # per subset; ~270 random characters each: over 100x the rest of the
#                      release (its Diagnostics pictures included)


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def pad_corpus(root: Path, n_docs: int = PAD_DOCS, seed: int = 15) -> None:
    """Add SYNTHETIC documents of random (incompressible) text to every subset's corpus, and
    record the corpus files anew in the build manifest."""
    rng = np.random.default_rng(seed)
    for path in sorted(root.glob("*/corpus.parquet")):
        table = pq.read_table(path)
        ids = [f"pad-{path.parent.name}-{i}" for i in range(n_docs)]
        texts = [base64.b64encode(rng.bytes(200)).decode() for _ in range(n_docs)]
        extra = pa.table({"id": ids, "title": [""] * n_docs,
                          "text": [f"SYNTHETIC {t}" for t in texts]}, schema=table.schema)
        pq.write_table(pa.concat_tables([table, extra]), path, compression="zstd")
    manifest = load_manifest(root)
    replace(manifest, corpus_files=corpus_record(root)).write(root)


@pytest.fixture(scope="module")
def big(local_hub, tmp_path_factory, demo_data):
    """The padded demo release, published: ``(root, sha, tag, repo bytes, corpus bytes)``."""
    root = copy_demo(demo_data, tmp_path_factory.mktemp("big") / "release")
    pad_corpus(root)
    from rcp_data.model.manifest import record_content

    record_content(root)   # the padded corpus is what this release lists
    prepare_release(root, load_spec("demo"), REPO, date="2026-11-30")
    result = publish(root, REPO, client=HubClient(local_hub.url), create_repo=True)
    tree = [f for f in HfApi(endpoint=local_hub.url).list_repo_tree(
        REPO, repo_type="dataset", revision=result.commit, recursive=True)
        if isinstance(f, RepoFile)]
    total = sum(f.size for f in tree)
    corpus = sum(f.size for f in tree if f.path.endswith("corpus.parquet"))
    assert corpus >= 100 * (total - corpus), "the fixture's corpus must be 100x the rest"
    return root, result.commit, result.tag, total, corpus


def rcp(args: list[str], hf_home: Path, *, offline: bool = False,
        endpoint: str | None = None) -> subprocess.CompletedProcess:
    """``rcp-data ARGS`` in a subprocess with its own Hugging Face cache (``hf_home``)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_DISABLE_XET", "HF_HUB_OFFLINE", "HF_HUB_CACHE")}
    env["HF_HOME"] = str(hf_home)
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-m", "rcp_data", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def snapshot(hf_home: Path, sha: str) -> Path:
    return hf_home / "hub" / f"datasets--{REPO.replace('/', '--')}" / "snapshots" / sha


def snapshot_bytes(folder: Path) -> tuple[list[str], int]:
    """Files (relative paths) and bytes in a snapshot folder (links to blobs followed)."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return files, sum((folder / f).stat().st_size for f in files)


# -- item 1: the legacy LFS path for the local Hub -----------------------------------------------
def test_publishing_to_the_local_hub_runs_with_xet_off_without_the_variable(
        local_hub, hub_repo, demo_data, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_DISABLE_XET", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", False)  # as imported without it
    assert is_xet_available()  # hf_xet is installed: huggingface_hub would take Xet
    seen = []
    original = HfApi.create_commit

    def spy(self, *args, **kwargs):
        seen.append((is_xet_available(), os.environ.get("HF_HUB_DISABLE_XET")))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(HfApi, "create_commit", spy)
    root = copy_demo(demo_data, tmp_path / "release")
    prepare_release(root, load_spec("demo"), hub_repo, date="2026-11-30")
    result = publish(root, hub_repo, client=HubClient(local_hub.url), create_repo=True)
    assert result.status == "published"
    assert seen == [(False, None)]          # Xet off during the upload; environment untouched
    assert constants.HF_HUB_DISABLE_XET is False and is_xet_available()  # restored after


def test_only_a_local_hub_turns_xet_off(local_hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", False)
    assert identifies_as_local_hub(local_hub.url) is True
    assert HubClient(local_hub.url).is_local_hub
    assert not HubClient(REAL_HUB).is_local_hub
    with HubClient(REAL_HUB).uploads():
        assert is_xet_available()

    class Plain(BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    other = HTTPServer(("127.0.0.1", 0), Plain)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{other.server_address[1]}"
        assert identifies_as_local_hub(url) is False
        assert not HubClient(url).is_local_hub   # loopback, but another server
    finally:
        other.shutdown()
    closed = _closed_port_url()
    assert identifies_as_local_hub(closed) is None
    assert HubClient(closed).is_local_hub      # cannot ask: a loopback host counts as local


# -- item 3: download only what is read -----------------------------------------------------------
def test_replay_downloads_under_5_percent_of_the_repository(big, tmp_path, capsys):
    from rcp_data.cli import main

    root, sha, tag, total, _corpus = big
    hf_home = tmp_path / "hf"
    run = rcp(["replay", f"hf://datasets/{REPO}@{tag}", "--json"], hf_home)
    assert run.returncode == 0, run.stderr
    files, got = snapshot_bytes(snapshot(hf_home, sha))
    assert got < 0.05 * total, (got, total, files)
    assert not [f for f in files if "corpus" in f]
    assert {"alpha/qrels.parquet", "beta/top_ranked.parquet", "provenance/runs/alpha.parquet",
            "alpha/excluded.parquet"} <= set(files)
    assert main(["replay", str(root), "--json"]) == 0
    assert json.loads(run.stdout) == json.loads(capsys.readouterr().out)


def test_card_read_step_skips_the_corpus_and_renders_the_published_card(big, tmp_path):
    root, sha, _tag, total, corpus = big
    hf_home = tmp_path / "hf"
    run = rcp(["card", "render", f"hf://datasets/{REPO}@{sha}", "--out", "-"], hf_home)
    assert run.returncode == 0, run.stderr
    assert run.stdout == (root / "README.md").read_text(encoding="utf-8")
    files, got = snapshot_bytes(snapshot(hf_home, sha))
    assert got == total - corpus and not [f for f in files if f.endswith("corpus.parquet")]


def test_offline_after_one_verify(big, tmp_path, capsys):
    from rcp_data.cli import main
    from rcp_data.core.files import hash_files, release_paths
    from rcp_data.model.manifest import release_digest

    root, sha, tag, total, _corpus = big
    digest = release_digest(hash_files(root, release_paths(root)).values())
    hf_home = tmp_path / "hf"
    online = rcp(["verify", "--repo", REPO, "--revision", tag], hf_home)
    assert online.returncode == 3, online.stdout + online.stderr   # nothing anchors it
    assert "consistent, not anchored: pass --digest or --histories" in online.stdout
    assert snapshot_bytes(snapshot(hf_home, sha))[1] == total   # verify takes everything, once
    dead = _closed_port_url()
    offline = rcp(["verify", "--repo", REPO, "--revision", sha, "--digest", digest], hf_home,
                  offline=True, endpoint=dead)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert "VERIFIED" in offline.stdout and f"  digest   {digest}" in offline.stdout
    replay = rcp(["replay", f"hf://datasets/{REPO}@{sha}", "--json"], hf_home, offline=True,
                 endpoint=dead)
    assert replay.returncode == 0, replay.stderr
    assert main(["replay", str(root), "--json"]) == 0
    assert json.loads(replay.stdout) == json.loads(capsys.readouterr().out)
    card = rcp(["card", "render", f"hf://datasets/{REPO}@{sha}", "--out", "-"], hf_home,
               offline=True, endpoint=dead)
    assert card.returncode == 0, card.stderr
    assert card.stdout == (root / "README.md").read_text(encoding="utf-8")


def test_offline_needs_a_full_sha_and_a_cached_snapshot(big, tmp_path):
    _root, sha, tag, _total, _corpus = big
    dead = _closed_port_url()
    by_tag = rcp(["verify", "--repo", REPO, "--revision", tag], tmp_path / "hf", offline=True,
                 endpoint=dead)
    assert by_tag.returncode == 2
    assert "full 40-hex commit sha" in by_tag.stderr and "Traceback" not in by_tag.stderr
    empty = rcp(["replay", f"hf://datasets/{REPO}@{sha}"], tmp_path / "empty", offline=True,
                endpoint=dead)
    assert empty.returncode == 2
    assert "offline (HF_HUB_OFFLINE=1)" in empty.stderr and "Traceback" not in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1


def test_verify_fails_when_the_recorded_corpus_differs_from_the_data(demo_data, tmp_path):
    """The card states the corpus from the manifest's record when it reads a snapshot without
    the corpus, so verify holds that record to the data."""
    from rcp_data.checks.verify import verify_release_dir

    root = copy_demo(demo_data, tmp_path / "release")
    manifest = json.loads((root / BUILD_MANIFEST).read_text())
    assert load_manifest(root).corpus_files == corpus_record(root)
    assert manifest["corpus_files"]["alpha/corpus.parquet"]["rows"] > 0
    manifest["corpus_files"]["alpha/corpus.parquet"]["rows"] += 1
    write_json(manifest, root / BUILD_MANIFEST)
    report = verify_release_dir(root)
    check = report.check("counts")
    assert report.exit_code == 1 and not check.ok
    assert any("corpus file alpha/corpus.parquet" in d for d in check.details)
