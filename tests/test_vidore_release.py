"""A whole ViDoRe v3 release (8 domains x 6 languages, SYNTHETIC pages) through the local Hub.

The upstream datasets are uploaded to the local Hub under their upstream names and read back
with ``datasets`` exactly as the builder reads the real Hub; the release is published, and its
page images load and decode at the tag and at the sha.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from vidore_fixtures import LANGS, N_QUESTIONS, write_domain

from rcp_data.build import build_release, read_inputs
from rcp_data.prepare import prepare_release
from rcp_data.specs import load_spec
from rcp_data.synthetic_judge import write_synthetic_inputs

REPO = "rcp-test/rcp-ndcg-vidore-v3"


def _upload_folder(api, repo: str, folder: Path) -> None:
    from huggingface_hub import CommitOperationAdd

    api.create_repo(repo, repo_type="dataset", exist_ok=True)
    ops = [CommitOperationAdd(str(p.relative_to(folder)), str(p))
           for p in sorted(folder.rglob("*")) if p.is_file()]
    api.create_commit(repo, ops, commit_message="SYNTHETIC upstream fixture", repo_type="dataset")


@pytest.fixture(scope="module")
def published(local_hub, tmp_path_factory):
    from huggingface_hub import HfApi

    from rcp_data.release.publish import publish
    from rcp_data.sources.vidore import read_suite

    spec = load_spec("vidore_v3")
    api = HfApi(endpoint=local_hub.url)
    up = tmp_path_factory.mktemp("vidore-up")
    for i, d in enumerate(spec.domains):
        write_domain(up, d.name, d.task.removeprefix("Vidore3"), seed=i)
        _upload_folder(api, d.source, up / f"vidore_v3_{d.name}_mteb_format")
        _upload_folder(api, d.ocr_source, up / f"{d.ocr_source.split('/')[1]}")
    source = read_suite(spec, {})            # no root: read the (local) Hub with `datasets`
    work = tmp_path_factory.mktemp("vidore-rel")
    inputs = write_synthetic_inputs(spec, source, work / "inputs", seed=5)
    build_release(spec, source, read_inputs(inputs), work / "release")
    prepare_release(work / "release", spec, REPO, date="2026-11-29")
    result = publish(work / "release", REPO, api=api, create_repo=True, history_file=False)
    assert result.status == "published"
    return result, work / "release", source


def test_read_from_hub_gives_all_subsets(published):
    _, _, source = published
    assert len(source.subsets) == 48
    assert all(len(s.queries) == N_QUESTIONS for s in source.subsets.values())
    assert source.facts["domains"]["physics"]["questions_per_language"] == dict.fromkeys(
        LANGS, N_QUESTIONS)


@pytest.mark.parametrize("by", ["tag", "sha"])
def test_page_images_load_and_decode_at_tag_and_sha(published, by):
    import datasets

    result, release, _ = published
    rev = result.tag if by == "tag" else result.commit
    ds = datasets.load_dataset(REPO, "hr__german-corpus", split="test", revision=rev)
    assert isinstance(ds.features["image"], datasets.Image)
    assert len(ds) == 40 and ds[0]["image"].size == (96, 128)
    q = datasets.load_dataset(REPO, "energy__french-qrels", split="test", revision=rev)
    assert set(q["query-id"]) == {f"query-test-{n + N_QUESTIONS}" for n in range(N_QUESTIONS)}


def test_card_has_both_views_under_both_rules(published):
    _, release, _ = published
    card = (release / "README.md").read_text(encoding="utf-8")
    from rcp_data.compare import parse_card_tables

    tables = parse_card_tables(card)
    views = {(t.view, t.tie_rule, t.metric) for t in tables}
    assert len(views) == 8
    # data notes computed from the upstream data (one empty-OCR page and one identical-text
    # group with different qrels per generated domain)
    assert "8 pages have empty OCR text" in card
    assert "8 groups (16 pages) have byte-identical OCR text; in 8 of them" in card
