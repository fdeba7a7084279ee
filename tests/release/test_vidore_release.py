"""A whole ViDoRe v3 release (8 domains x 6 languages, SYNTHETIC pages) through the local Hub.

The upstream datasets are uploaded to the local Hub under their upstream names and read back
with ``datasets`` exactly as the builder reads the real Hub; the release is published (the
session fixture ``vidore_published`` of tests/vidore_hub.py), and its page images load and
decode at the tag and at the sha.
"""

from __future__ import annotations

import pytest
from support.vidore_fixtures import LANGS, N_QUESTIONS
from support.vidore_hub import VIDORE_REPO as REPO


@pytest.fixture(scope="module")
def published(vidore_published):
    return vidore_published.result, vidore_published.root, vidore_published.source


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


def test_card_has_both_views_under_its_rule(published):
    _, release, _ = published
    card = (release / "README.md").read_text(encoding="utf-8")
    from rcp_data.model.card_format import parse_card_tables

    tables = parse_card_tables(card)
    views = {(t.view, t.tie_rule, t.metric) for t in tables}
    # both views, both metrics, one tabulated tie rule (the other summarised below them)
    from rcp_data.core.specs import load_spec
    from rcp_data.model.card_format import tables_rule

    rule = tables_rule(load_spec("vidore_v3"))
    assert views == {(v, rule, m) for v in load_spec("vidore_v3").card_views
                     for m in ("rcp_ndcg", "qrel_ndcg")}
    assert "**Effect of the tie rule.**" in card
    # data notes computed from the upstream data (one empty-OCR page and one identical-text
    # group with different qrels per generated domain)
    assert "8 pages have empty OCR text" in card
    assert "8 groups (16 pages) have byte-identical OCR text; in 8 of them" in card
