"""Pytest plugin: one whole ViDoRe v3 release (8 domains x 6 languages, SYNTHETIC pages)
published to the session's local Hub, shared by the modules that read it.

Loaded from conftest.py (``pytest_plugins``). The upstream datasets are uploaded to the local
Hub under their upstream names and read back with ``datasets`` exactly as the builder reads the
real Hub; the release is built, prepared and published as ``VIDORE_REPO``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

VIDORE_REPO = "rcp-test/rcp-ndcg-vidore-v3"


@dataclass
class PublishedVidore:
    """The published release: publish result (``.tag``, ``.commit``), its directory, sources."""

    result: object
    root: Path
    source: object
    repo: str = VIDORE_REPO


def _upload_folder(api, repo: str, folder: Path) -> None:
    from huggingface_hub import CommitOperationAdd

    api.create_repo(repo, repo_type="dataset", exist_ok=True)
    ops = [CommitOperationAdd(str(p.relative_to(folder)), str(p))
           for p in sorted(folder.rglob("*")) if p.is_file()]
    api.create_commit(repo, ops, commit_message="SYNTHETIC upstream fixture", repo_type="dataset")


def publish_vidore(local_hub, work: Path) -> PublishedVidore:
    """Upload the generated upstream datasets, build, prepare and publish the release."""
    from huggingface_hub import HfApi

    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.core.hub_client import HubClient
    from rcp_data.core.specs import load_spec
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.release.prepare import prepare_release
    from rcp_data.release.publish import publish
    from rcp_data.sources.vidore import read_suite
    from support.vidore_fixtures import write_domain

    spec = load_spec("vidore_v3")
    api = HfApi(endpoint=local_hub.url)
    up = work / "upstream"
    for i, d in enumerate(spec.domains):
        write_domain(up, d.name, d.task.removeprefix("Vidore3"), seed=i)
        _upload_folder(api, d.source, up / f"vidore_v3_{d.name}_mteb_format")
        _upload_folder(api, d.ocr_source, up / f"{d.ocr_source.split('/')[1]}")
    source = read_suite(spec, {})            # no root: read the (local) Hub with `datasets`
    inputs = write_synthetic_inputs(spec, source, work / "inputs", seed=5)
    build_release(spec, source, read_inputs(inputs), work / "release")
    prepare_release(work / "release", spec, VIDORE_REPO, date="2026-11-29")
    result = publish(work / "release", VIDORE_REPO, client=HubClient(local_hub.url),
                     create_repo=True)
    assert result.status == "published"
    return PublishedVidore(result, work / "release", source)


@pytest.fixture(scope="session")
def vidore_published(local_hub, tmp_path_factory) -> PublishedVidore:
    """The whole ViDoRe v3 release on the local Hub (built once per session)."""
    return publish_vidore(local_hub, tmp_path_factory.mktemp("vidore"))
