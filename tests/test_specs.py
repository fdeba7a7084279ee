"""Suite specs hold as data what replay and comparison need."""

from __future__ import annotations

import pytest

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import known_suites, load_spec


def test_all_suites_load():
    assert set(known_suites()) == {"demo", "trecdl", "nanobeir", "bright", "vidore_v3"}


def test_subset_counts_and_splits():
    assert len(load_spec("nanobeir").subsets) == 13
    assert load_spec("nanobeir").split == "train"
    assert len(load_spec("bright").subsets) == 12
    assert load_spec("bright").split == "standard"
    assert load_spec("trecdl").subset_names == ["trec_dl_2019", "trec_dl_2020"]
    vid = load_spec("vidore-v3")
    assert len(vid.subsets) == 48 and vid.split == "test"
    assert vid.provenance_splits == [d.name for d in vid.domains]
    assert vid.provenance_split("energy__german") == "energy"


def test_paper_tie_rules_per_suite():
    rules = {s: load_spec(s).paper_tie_rule for s in ("nanobeir", "bright", "vidore_v3", "trecdl")}
    assert rules == {"nanobeir": "doc-id", "bright": "doc-id", "vidore_v3": "group-mean",
                     "trecdl": "pool-order"}


def test_reranker_map_is_shared_and_bidirectional():
    spec = load_spec("nanobeir")
    assert len(spec.rerankers) == 14
    assert spec.short_name("ctxl-rerank-v2-instruct-multilingual-1b") == "CTXL-RR-1B"
    assert spec.hub_id("Voyage2.5-lt") == "rerank-2.5-lite"
    assert spec.short_name("unknown-model") == "unknown-model"


def test_vidore_views():
    spec = load_spec("vidore_v3")
    native = spec.view_columns("native")
    assert [c[2] for c in native if c[0] in ("energy", "hr")] == [["energy__french"],
                                                                  ["hr__english"]]
    langs = spec.view_columns("languages")
    assert all(len(c[2]) == 6 for c in langs) and len(langs) == 8
    with pytest.raises(UsageError, match="needs a suite with languages"):
        load_spec("nanobeir").view_columns("native")


def test_paper_revisions_are_pinned():
    assert load_spec("nanobeir").paper_revision == "4517f2cb9e342479725bf0931a329998b4d35038"
    assert load_spec("demo").synthetic is True
    assert load_spec("demo").paper_revision is None
