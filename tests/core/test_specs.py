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
    from rcp_data.model.suite import release_spec, which_suite

    assert which_suite(tmp_path) is None
    with pytest.raises(InputError, match="cannot tell the suite of this release"):
        release_spec(tmp_path)
    # a published repo whose card names no suite: known by the repo it came from
    repo = load_spec("vidore_v3").repo
    assert which_suite(tmp_path, repo=repo) == "vidore_v3"
    assert release_spec(tmp_path, repo=repo) is load_spec("vidore_v3")
    assert release_spec(tmp_path, "trec-dl") is load_spec("trecdl")
    # the card's tags, in any spelling
    card = "---\ntags:\n- mteb\n- rcp-ndcg\n- vidore-v3\n---\n\nbody\n"
    assert which_suite(card_text=card) == "vidore_v3"
    assert which_suite(card_text="---\ntags: [trec-dl]\n---\n") == "trecdl"
    assert which_suite(card_text="no front matter") is None and which_suite(card_text="---\n: [\n---\n") is None
    (tmp_path / "README.md").write_text(card, encoding="utf-8")
    assert which_suite(tmp_path) == "vidore_v3"
    # the build manifest comes first
    write_json({"suite": "trec-dl"}, tmp_path / "provenance" / "build_manifest.json")
    assert which_suite(tmp_path) == "trecdl"


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


# -- typed specs, checked on load -----------------------------------------------------------------
def _spec_file(tmp_path, suite: str, old: str = "", new: str = "", *, shared: bool = False):
    """A copy of ``builders/<suite>.toml`` in ``tmp_path`` with ``old`` replaced by ``new``
    (and the shared files it names)."""
    from rcp_data import resources

    src = resources.builders_dir()
    text = (src / f"{suite}.toml").read_text(encoding="utf-8")
    if old:
        assert old in text, old
        text = text.replace(old, new, 1)
    if shared:
        for name in ("_card.toml", "_rerankers.toml"):
            (tmp_path / name).write_text((src / name).read_text(encoding="utf-8"),
                                         encoding="utf-8")
    path = tmp_path / f"{suite}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path) -> str:
    from rcp_data.core.errors import InputError
    from rcp_data.core.specs import load_spec_file

    with pytest.raises(InputError) as err:
        load_spec_file(path)
    return str(err.value)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("size = 20", "sise = 20",
     "field 'pool.sise': unknown key (known: dense, retrievers, rrf_k, rule, size)"),
    ("synthetic = true", "synthetic = true\nsynthetc = true", "field 'suite.synthetc': unknown key"),
    ("grade_positive = 1", "grade_positive = 1\ngrade_postive = 2",
     "field 'source.grade_postive': unknown key"),
    ('task = "DemoBeta"', 'task = "DemoBeta"\ntitle = "Beta"', "field 'subsets[1].title': unknown key"),
    ("[corpus]", "[corpus]\nshards = 3", "field 'corpus.shards': unknown key"),
    ("[pool]", "[views]\nlanguage = []\n\n[pool]", "field 'views.language': unknown key"),
    ("[pool]", "[upstream]\nquery = 3\n\n[pool]",
     "field 'upstream.query': unknown key (known: queries, qrels)"),
    ("[pool]", "[sources]\nread = 'x'\n\n[pool]", "field 'sources': unknown table"),
    ("[pool]", "[card]\nsecond_jugde = 'x'\n\n[pool]", "field 'card.second_jugde': unknown key"),
    ("[pool]", "[card.upstream]\nname = 'n'\nlicense = 'l'\ndeclared_in = 'd'\nlicence = 'x'\n\n"
     "[pool]", "field 'card.upstream.licence': unknown key"),
])
def test_an_unknown_key_is_refused_naming_file_and_key(tmp_path, old, new, message):
    path = _spec_file(tmp_path, "demo", old, new)
    assert _refused(path).startswith(f"{path}, {message}")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("size = 20", 'size = "abc"', "field 'pool.size': expected an integer, got 'abc'"),
    ("size = 20", "size = 20.5", "field 'pool.size': expected an integer, got 20.5"),
    ("synthetic = true", 'synthetic = "yes"', "field 'suite.synthetic': expected true or false"),
    ('retrievers = ["embed_v4", "bm25", "octen"]', 'retrievers = "bm25"',
     "field 'pool.retrievers': expected a list of strings, got 'bm25'"),
    ('retrievers = ["embed_v4", "bm25", "octen"]', 'retrievers = ["bm25", 3]',
     "field 'pool.retrievers[1]': expected a string, got 3"),
    ("grade_positive = 1", 'grade_positive = "1"',
     "field 'source.grade_positive': expected an integer, got '1'"),
    ("grades = [0, 2]", "grades = [0, 1, 2]",
     "field 'source.grades': expected a list of 2 integers, got [0, 1, 2]"),
    ("grades = [0, 2]", "grades = [2, 0]", "field 'source.grades': expected [lowest, highest]"),
    ("grade_positive = 1", "grade_positive = 3", "field 'source.grade_positive': the positive "
     "grade must be at least 1 (0 is a pooled document without a label) and at most the highest "
     "grade 2, got 3"),
    ("grade_positive = 1", "grade_positive = 0", "field 'source.grade_positive': the positive "
     "grade must be at least 1"),
    ('"Alpha-RR" = "demo/alpha-reranker"', '"Alpha-RR" = 1',
     "field 'rerankers.Alpha-RR': expected a string, got 1"),
    ('label = "Beta"\n', "", "field 'subsets[1].label': missing (required)"),
    ('paper_tie_rule = "doc-id"', 'paper_tie_rule = "doc_id"', "field 'suite.paper_tie_rule': "
     "must be one of"),
    ("[pool]", "[source.prompts]\nDemoAlpha = 3\n\n[pool]",
     "field 'source.prompts.DemoAlpha': expected a string, got 3"),
    ("[pool]", "[upstream]\nqueries = 'many'\n\n[pool]",
     "field 'upstream.queries': expected an integer, got 'many'"),
    ("[pool]", "[card]\ncitations = 'x'\n\n[pool]",
     "field 'card.citations': expected a list of strings, got 'x'"),
    ("[pool]", "[card.mteb]\npr = '5516'\n\n[pool]",
     "field 'card.mteb.pr': expected an integer, got '5516'"),
    ("[pool]", "[card.retrievers.bm25]\nurl = 'u'\n\n[pool]",
     "field 'card.retrievers.bm25.name': missing (required)"),
    ("[pool]", "[card.reference]\ngt_injected = { alpha = 'x' }\n\n[pool]",
     "field 'card.reference.gt_injected.alpha': expected an integer, got 'x'"),
    ("[pool]", "[card.reference]\nruns = [1]\n\n[pool]", "field 'card.reference.runs': "
     "expected an integer or a number or a string or a table, got [1]"),
    ("[suite]", "views = 3\n\n[suite]", "field 'views': expected a table, got 3"),
])
def test_a_wrong_type_is_refused_naming_file_and_key(tmp_path, old, new, message):
    path = _spec_file(tmp_path, "demo", old, new)
    assert _refused(path).startswith(f"{path}, {message}")


def test_a_shared_file_names_itself(tmp_path):
    path = _spec_file(tmp_path, "nanobeir", shared=True)
    card = tmp_path / "_card.toml"
    card.write_text(card.read_text(encoding="utf-8").replace('kind = "lexical"',
                                                             "kind = 2"), encoding="utf-8")
    assert _refused(path) == (f"{card}, field 'card.retrievers.bm25.kind': expected a string, "
                              "got 2")
    rr = tmp_path / "_rerankers.toml"
    card.write_text((tmp_path / "_card.toml").read_text(encoding="utf-8").replace(
        "kind = 2", 'kind = "lexical"'), encoding="utf-8")
    rr.write_text("[rerankers]\nx = 1\n", encoding="utf-8")
    assert _refused(path) == f"{rr}, field 'rerankers.x': expected a string, got 1"


def test_source_and_card_are_typed():
    from rcp_data.core.specs import (
        CardSpec,
        InstructionsCard,
        MtebCard,
        RestrictedSource,
        RetrieverCard,
        SourceSpec,
    )

    trec = load_spec("trecdl")
    assert trec.source == SourceSpec(
        read="trecdl", reader="ir_datasets",
        corpus="msmarco-passage", grade_positive=1, grades=(0, 3),
        extra_judged_queries="msmarco-passage/dev/small",
        raw_collection_hint="collectionandqueries.tar.gz")
    assert trec.grades == (0, 3) and trec.grade_positive == 1
    assert trec.is_positive(1) and not trec.is_positive(0)
    assert trec.positive_mask([0, 1, 3]).tolist() == [False, True, True]
    assert isinstance(trec.card, CardSpec)
    assert trec.card.reference["gt_injected"] == {"trec_dl_2019": 1844, "trec_dl_2020": 1566}
    assert trec.card.reference["pool_size_mean"] == 287.4
    assert trec.card.upstream.restricted == (RestrictedSource(
        source="MS MARCO", terms="non-commercial research only",
        subsets=("trec_dl_2019", "trec_dl_2020")),)
    assert trec.subset("trec_dl_2019").upstream == {"queries": 43, "qrels": 9260}
    nano = load_spec("nanobeir")
    # card_shared (_card.toml) merged under the suite's own [card]
    assert nano.card.retrievers["octen"] == RetrieverCard(
        name="Octen-Embedding-8B", url="https://huggingface.co/Octen/Octen-Embedding-8B",
        kind="dense")
    assert nano.card.mteb == MtebCard(pr=5516, pr_url="https://github.com/embeddings-benchmark/"
                                      "mteb/pull/5516", renamed="October 2026")
    assert nano.card.instructions == InstructionsCard(source="mteb", checked=13)
    assert nano.card.citations == ("muennighoff2023mteb", "thakur2021beir")
    assert nano.source.allow_empty_documents is True and nano.allows_empty_documents(
        "NanoSCIDOCSRetrieval")
    assert load_spec("bright").source.gold == "gold_ids"
    demo = load_spec("demo")
    assert demo.card == CardSpec() and demo.card.upstream is None
    assert demo.source.allow_empty_documents is False
    assert load_spec("vidore_v3").upstream == {} and load_spec("bright").upstream == {
        "queries": 1384}


def test_allow_empty_documents_names_subsets(tmp_path):
    path = _spec_file(tmp_path, "demo", "grades = [0, 2]",
                      'grades = [0, 2]\nallow_empty_documents = ["beta"]')
    from rcp_data.core.specs import load_spec_file

    spec = load_spec_file(path)
    assert spec.source.allow_empty_documents == ("beta",)
    assert spec.allows_empty_documents("beta") and not spec.allows_empty_documents("alpha")
    path = _spec_file(tmp_path, "demo", "grades = [0, 2]",
                      'grades = [0, 2]\nallow_empty_documents = ["gamma"]')
    assert _refused(path) == (f"{path}, field 'source.allow_empty_documents': names unknown "
                              "subsets ['gamma']")
