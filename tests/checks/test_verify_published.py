"""Verifying a repo published before the release policy: no releases.json, no build manifest.

The published RCP-nDCG repos carry neither file; the project's ``release/<suite>.json`` is the
record of their releases, and verify checks the pinned revision against it instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.demo_fixture import copy_demo
from support.tamper import publish_by_hand

from rcp_data.checks.verify import verify
from rcp_data.core.specs import load_spec
from rcp_data.release.prepare import prepare_release

REPO = "rcp-test/published-before-policy"


def _before_diagnostics(root: Path) -> Path:
    """A release as published before the release policy: no Diagnostics either (a build writes
    them now; their numbers need the release history that such a revision lacks)."""
    import shutil

    (root / "provenance/diagnostics.json").unlink()
    shutil.rmtree(root / "provenance/pictures")
    from rcp_data.model.manifest import record_content

    record_content(root)  # the build manifest lists what is left
    return root


@pytest.fixture(scope="module")
def published(local_hub, tmp_path_factory, demo_data):
    from huggingface_hub import HfApi

    work = tmp_path_factory.mktemp("published")
    root = _before_diagnostics(copy_demo(demo_data, work / "release"))
    history = prepare_release(root, load_spec("demo"), REPO, date="2026-11-29")
    (root / "provenance/releases.json").unlink()
    (root / "provenance/build_manifest.json").unlink()
    tag = history.current.tag
    sha = publish_by_hand(HfApi(endpoint=local_hub.url), REPO, root, tag)
    return work, history, tag, sha


def _histories(work: Path, history, sha: str) -> Path:
    folder = work / "histories"
    folder.mkdir(exist_ok=True)
    data = history.to_dict()
    data["releases"][0]["revision"] = sha
    (folder / "demo.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_verified_against_the_project_history(published, tmp_path):
    work, history, tag, sha = published
    report = verify(repo=REPO, revision=tag, cache_dir=tmp_path / "cache",
                    histories=_histories(work, history, sha))
    assert report.ok, report.text()
    assert report.check("releases-json").status == "absent"
    assert report.check("tag").ok and sha in report.check("tag").found
    assert report.check("counts").status == "absent"        # no build manifest either
    assert report.check("card-tables").ok


def test_recorded_sha_that_differs_fails(published, tmp_path):
    work, history, tag, _sha = published
    report = verify(repo=REPO, revision=tag, cache_dir=tmp_path / "cache",
                    histories=_histories(work, history, "0" * 40))
    assert report.exit_code == 1
    assert "tag no longer matches" in report.check("tag").details[0]


def test_without_any_record_the_history_check_fails(published, tmp_path):
    _work, _history, tag, _sha = published
    empty = tmp_path / "none"
    empty.mkdir()
    report = verify(repo=REPO, revision=tag, cache_dir=tmp_path / "cache", histories=empty)
    assert report.check("releases-json").status == "failed"
    assert not report.ok and report.exit_code == 1


def test_pre_policy_card_without_tables_is_absent_not_failed(local_hub, tmp_path, demo_data):
    """TREC-DL's published card prints no result tables: reported absent for such a repo."""
    from huggingface_hub import HfApi

    root = _before_diagnostics(copy_demo(demo_data, tmp_path / "release"))
    repo = "rcp-test/published-no-tables"
    history = prepare_release(root, load_spec("demo"), repo, date="2026-11-29")
    (root / "provenance/releases.json").unlink()
    card = (root / "README.md").read_text(encoding="utf-8")
    (root / "README.md").write_text(card[:card.index("## Results")], encoding="utf-8")
    api = HfApi(endpoint=local_hub.url)
    api.create_repo(repo, repo_type="dataset")
    from huggingface_hub import CommitOperationAdd

    ops = [CommitOperationAdd(str(p.relative_to(root)), str(p))
           for p in sorted(root.rglob("*")) if p.is_file()]
    sha = api.create_commit(repo, ops, commit_message="by hand", repo_type="dataset").oid
    api.create_tag(repo, tag=history.current.tag, revision=sha, repo_type="dataset")
    folder = tmp_path / "histories"
    folder.mkdir()
    data = history.to_dict()
    data["releases"][0]["revision"] = sha
    (folder / "demo.json").write_text(json.dumps(data), encoding="utf-8")
    report = verify(repo=repo, revision=history.current.tag, cache_dir=tmp_path / "cache",
                    histories=folder)
    assert report.check("card-tables").status == "absent"
    assert report.ok, report.text()
