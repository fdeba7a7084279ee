"""``card regenerate`` adds the Diagnostics a published release lacks, without touching its
data: every data file at the new head is byte for byte the release commit's (sha256 of each),
the commit adds only the pictures and ``provenance/diagnostics.json`` besides the manifest and
the regenerated files, and ``verify`` of the head then passes with the ``diagnostics`` check
recomputing every number (SYNTHETIC demo release on the local Hub)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from support.demo_fixture import copy_demo

from rcp_data.checks.verify import verify
from rcp_data.core.hub_client import HubClient
from rcp_data.core.specs import load_spec
from rcp_data.documents.diagnostics_files import DIAGNOSTICS_FILE
from rcp_data.documents.pictures import PICTURE_FILES
from rcp_data.model.layout import BUILD_MANIFEST, REGENERATED_FILES
from rcp_data.release.prepare import prepare_release
from rcp_data.release.publish import publish
from rcp_data.release.regenerate import regenerate

REPO = "rcp-test/regenerate-adds-diagnostics"
ADDED = {DIAGNOSTICS_FILE, *PICTURE_FILES.values()}


def _sha256s(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".cache" not in p.parts
            and p.name != ".gitattributes"}


@pytest.fixture(scope="module")
def regenerated(local_hub, tmp_path_factory, demo_data):
    """The demo release published without Diagnostics, then ``card regenerate`` on it."""
    from rcp_data.model.manifest import record_content

    work = tmp_path_factory.mktemp("regen-diag")
    root = copy_demo(demo_data, work / "release")
    (root / DIAGNOSTICS_FILE).unlink()
    shutil.rmtree(root / "provenance/pictures")
    record_content(root)                       # as a build before the Diagnostics wrote it
    prepare_release(root, load_spec("demo"), REPO, date="2026-11-29")
    assert "## Diagnostics" not in (root / "README.md").read_text(encoding="utf-8")
    client = HubClient(local_hub.url, token=local_hub.token, cache_dir=work / "cache")
    records = work / "records"
    published = publish(root, REPO, client=client, create_repo=True, record_to=records)
    result = regenerate(REPO, "main", client=client)
    return work, client, records, published, result


def test_the_commit_adds_diagnostics_and_leaves_the_data(regenerated):
    work, client, _records, published, result = regenerated
    assert result.parent == published.commit and result.commit
    assert set(result.changed) >= ADDED
    before = _sha256s(client.download(REPO, published.commit, work / "at-release"))
    after = _sha256s(client.download(REPO, result.commit, work / "at-head"))
    assert not ADDED & set(before) and set(after) >= ADDED
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert ADDED | {BUILD_MANIFEST, "README.md"} <= changed
    assert changed <= ADDED | {BUILD_MANIFEST} | set(REGENERATED_FILES)
    data = [p for p in before if p not in {BUILD_MANIFEST, *REGENERATED_FILES}]
    assert any(p.endswith(".parquet") for p in data)
    assert all(after[p] == before[p] for p in data)          # every data file byte for byte
    card = (work / "at-head" / "README.md").read_text(encoding="utf-8")
    assert "## Diagnostics" in card
    assert all(f"]({path})" in card for path in PICTURE_FILES.values())


def test_verify_of_the_head_passes_with_the_diagnostics(regenerated, tmp_path):
    _work, client, records, published, result = regenerated
    head = verify(repo=REPO, revision=result.commit, client=client, histories=records)
    diag = head.check("diagnostics")
    assert diag.ok and diag.status != "absent", head.text()
    assert head.check("pictures").ok
    assert head.check("anchor").ok and head.check("later-commits").ok, head.text()
    assert head.ok, head.text()
    tag = verify(repo=REPO, revision=published.tag, client=client, histories=records)
    assert tag.ok and tag.check("diagnostics").status == "absent", tag.text()


def test_regenerating_again_commits_nothing(regenerated):
    _work, client, _records, _published, result = regenerated
    again = regenerate(REPO, "main", client=client)
    assert again.commit is None and again.parent == result.commit


def test_a_later_commit_that_changes_diagnostics_the_release_had_fails(local_hub, tmp_path,
                                                                       demo_data):
    """The allowance is for Diagnostics a release lacks: changing those its commit holds is a
    change of data that verify names."""
    from huggingface_hub import CommitOperationAdd, HfApi

    root = copy_demo(demo_data, tmp_path / "release")
    repo = "rcp-test/regenerate-keeps-diagnostics"
    prepare_release(root, load_spec("demo"), repo, date="2026-11-29")
    client = HubClient(local_hub.url, token=local_hub.token, cache_dir=tmp_path / "cache")
    records = tmp_path / "records"
    published = publish(root, repo, client=client, create_repo=True, record_to=records)
    picture = next(iter(PICTURE_FILES.values()))
    data = bytearray((root / picture).read_bytes())
    data[-20] ^= 0xFF
    api = HfApi(endpoint=local_hub.url, token=local_hub.token)
    sha = api.create_commit(repo, [CommitOperationAdd(picture, bytes(data))],
                            commit_message="by hand", repo_type="dataset",
                            parent_commit=published.commit).oid
    report = verify(repo=repo, revision=sha, client=client, histories=records)
    assert not report.check("data-since-release").ok
    assert any(picture in d for d in report.check("data-since-release").details)
    assert not report.ok
