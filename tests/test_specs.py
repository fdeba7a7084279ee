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


# -- one normaliser and one detector of suites ------------------------------------------------------
SPELLINGS = {
    "vidore_v3": ("vidore_v3", "vidore-v3", "vidore", "ViDoRe-V3", " VIDORE "),
    "trecdl": ("trecdl", "trec-dl", "trec_dl", "TREC-DL"),
    "nanobeir": ("nanobeir", "NanoBEIR"),
    "demo": ("demo",),
}


@pytest.mark.parametrize("suite", sorted(SPELLINGS))
def test_every_spelling_names_one_suite(suite):
    from rcp_data.core.specs import suite_key
    from rcp_data.model.history import history_path

    for spelling in SPELLINGS[suite]:
        assert suite_key(spelling) == suite
        assert load_spec(spelling) is load_spec(suite)
        assert history_path(spelling).name == f"{suite}.json"
    with pytest.raises(UsageError, match="unknown suite 'vidore-v4'"):
        load_spec("vidore-v4")


@pytest.mark.parametrize("spelling", ["vidore", "vidore-v3", "TREC-DL"])
def test_cli_suite_options_accept_every_spelling(spelling):
    from rcp_data.cli.main import build_parser
    from rcp_data.core.specs import suite_key

    parser = build_parser()
    want = suite_key(spelling)
    assert parser.parse_args(["build", spelling, "--inputs", "i", "--out", "o"]).suite == want
    assert parser.parse_args(["replay", "r", "--suite", spelling]).suite == want
    assert parser.parse_args(["compare", "a", "--against", "b", "--suite", spelling]).suite == want
    assert parser.parse_args(["card", "render", "r", "--suite", spelling]).suite == want


def test_suite_of_a_release_directory(tmp_path):
    from rcp_data.core.errors import InputError
    from rcp_data.core.io import write_json
    from rcp_data.model.suite import card_suite, detect_suite, release_spec

    assert detect_suite(tmp_path) is None
    with pytest.raises(InputError, match="cannot tell the suite of this release"):
        release_spec(tmp_path)
    # a published repo whose card names no suite: known by the repo it came from
    repo = load_spec("vidore_v3").repo
    assert detect_suite(tmp_path, repo=repo) == "vidore_v3"
    assert release_spec(tmp_path, repo=repo) is load_spec("vidore_v3")
    assert release_spec(tmp_path, "trec-dl") is load_spec("trecdl")
    # the card's tags, in any spelling
    card = "---\ntags:\n- mteb\n- rcp-ndcg\n- vidore-v3\n---\n\nbody\n"
    assert card_suite(card) == "vidore_v3"
    assert card_suite("---\ntags: [trec-dl]\n---\n") == "trecdl"
    assert card_suite("no front matter") is None and card_suite("---\n: [\n---\n") is None
    (tmp_path / "README.md").write_text(card, encoding="utf-8")
    assert detect_suite(tmp_path) == "vidore_v3"
    # the build manifest comes first
    write_json({"suite": "trec-dl"}, tmp_path / "provenance" / "build_manifest.json")
    assert detect_suite(tmp_path) == "trecdl"


def test_tie_rules_and_views_the_card_shows():
    from rcp_data.core.specs import RULE_LETTERS, SHOWN_TIE_RULES, TIE_RULES
    from rcp_data.documents.card import TIE_RULES_SHOWN, views_shown
    from rcp_data.model.card_format import RULE_TITLES

    assert SHOWN_TIE_RULES == ("doc-id", "group-mean") and set(SHOWN_TIE_RULES) < set(TIE_RULES)
    assert [r for r, _, _ in TIE_RULES_SHOWN] == list(SHOWN_TIE_RULES)
    assert RULE_TITLES["pool-order"] == f"rule ({RULE_LETTERS['pool-order']}): pool order for ties"
    assert load_spec("vidore_v3").card_views == ("native", "languages")
    assert load_spec("demo").card_views == ("subsets",)
    for name in ("demo", "vidore_v3"):
        spec = load_spec(name)
        assert tuple(v for v, _ in views_shown(spec)) == spec.card_views
