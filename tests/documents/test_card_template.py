"""The card rendered from typed facts through ``templates/card.md.j2``: byte-identical on a
second render for the demo and the SYNTHETIC NanoBEIR and ViDoRe v3 releases, its tables
titled and headed by the one card format (``rcp_data.model.card_format``) that replay and
compare also use, and the fit settings it states read from the fit's own settings record.

Data: the session's SYNTHETIC demo release; NanoBEIR from SYNTHETIC nano-beir cache files
(tests/fixtures_nanobeir.py) and ViDoRe v3 from a local mirror of SYNTHETIC pages
(tests/vidore_fixtures.py), each with SYNTHETIC judge inputs, built once for this module.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest
from support.demo_fixture import copy_demo

from rcp_data.calibration.bt_settings import BT_SETTINGS, BtSettings
from rcp_data.core.specs import load_spec
from rcp_data.model.card_format import (
    CARD_K,
    CARD_METRICS,
    NATIVE_VIEW_HEADING,
    card_body,
    metric_label,
    parse_card_tables,
    table_title,
    tables_rule,
    view_heading,
)
from rcp_data.model.layout import CARD_FILE, TASK_FILE

TEMPLATE = (Path(__file__).resolve().parents[2] / "src" / "rcp_data" / "documents"
            / "templates" / "card.md.j2")


@pytest.fixture(scope="module")
def demo(demo_data, tmp_path_factory) -> Path:
    return copy_demo(demo_data, tmp_path_factory.mktemp("card-template") / "demo")


@pytest.fixture(scope="module")
def nanobeir(irds_home, tmp_path_factory) -> Path:
    from support.nanobeir_fixtures import make_all, stage

    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.release.prepare import prepare_release
    from rcp_data.sources.nanobeir import read_suite

    work = tmp_path_factory.mktemp("card-template-nanobeir")
    stage(make_all())
    spec = load_spec("nanobeir")
    source = read_suite(spec, {"allow_download": "0"})
    inputs = write_synthetic_inputs(spec, source, work / "inputs")
    build_release(spec, source, read_inputs(inputs), work / "release")
    prepare_release(work / "release", spec, "rcp-test/nanobeir-synthetic", date="2026-11-30")
    return work / "release"


@pytest.fixture(scope="module")
def vidore(tmp_path_factory) -> Path:
    from support.vidore_fixtures import write_domain

    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.release.prepare import prepare_release
    from rcp_data.sources.vidore import read_suite

    work = tmp_path_factory.mktemp("card-template-vidore")
    spec = load_spec("vidore_v3")
    for i, d in enumerate(spec.domains):
        write_domain(work / "upstream", d.name, d.task.removeprefix("Vidore3"), seed=i)
    source = read_suite(spec, {"root": str(work / "upstream")})
    inputs = write_synthetic_inputs(spec, source, work / "inputs", seed=5)
    build_release(spec, source, read_inputs(inputs), work / "release")
    prepare_release(work / "release", spec, "rcp-test/rcp-ndcg-vidore-v3", date="2026-11-29")
    return work / "release"


@pytest.fixture(scope="module")
def releases(request) -> dict[str, Path]:
    """The built releases, by suite (each built when a test first asks for it)."""
    return {"demo": lambda: request.getfixturevalue("demo"),
            "nanobeir": lambda: request.getfixturevalue("nanobeir"),
            "vidore_v3": lambda: request.getfixturevalue("vidore")}


# the NanoBEIR and ViDoRe releases take a minute to build
SUITES = ["demo", pytest.param("nanobeir", marks=pytest.mark.slow),
          pytest.param("vidore_v3", marks=pytest.mark.slow)]


def _texts(root: Path) -> dict[str, str]:
    from rcp_data.documents.card import render_release_texts

    return render_release_texts(root)


# -- deterministic ---------------------------------------------------------------------------
@pytest.mark.parametrize("suite", SUITES)
def test_rendering_twice_is_byte_identical(releases, suite, tmp_path):
    from rcp_data.documents.card import write_release_files

    built = releases[suite]()
    first, second = _texts(built), _texts(built)
    assert set(first) == {CARD_FILE, TASK_FILE}
    assert first == second
    card = first[CARD_FILE]
    assert card.endswith("\n") and not card.endswith("\n\n")
    assert not re.search(r"\{%|%\}|\{\{ | \}\}", card)  # no template syntax leaks out
    # every paragraph block of the template became one line: no line ends in a space
    assert not [line for line in card.splitlines() if line != line.rstrip()]
    # the written files are the rendered texts, byte for byte
    root = tmp_path / suite
    shutil.copytree(built, root)
    for path in write_release_files(root):
        assert path.read_text(encoding="utf-8") == first[path.name]


# -- one card format -------------------------------------------------------------------------
@pytest.mark.parametrize("suite", SUITES)
def test_tables_parse_back_with_the_card_format(releases, suite):
    """Each view heading and table title of the card is the card format's, and parsing the
    card back gives every table at the card's k in its view."""
    card = _texts(releases[suite]())[CARD_FILE]
    spec = load_spec(suite)
    tables = parse_card_tables(card)
    shown = {(t.metric, t.k, t.tie_rule, t.view) for t in tables}
    views = [v if view_heading(spec, v) else None for v in spec.card_views]
    assert spec.card_k == (CARD_K,)
    assert shown == {(m, CARD_K, tables_rule(spec), v) for m in ("rcp_ndcg", "qrel_ndcg")
                     for v in views}
    for m, k, r, _v in shown:
        assert f"\n**{table_title(m, k, r)}**\n" in card
    for v in spec.card_views:
        heading = view_heading(spec, v)
        if heading:
            assert f"\n### {heading}\n" in card


@pytest.mark.slow
def test_replay_and_card_head_the_native_view_alike(vidore):
    """The disagreement this format ended: ``rcp-data replay``'s Markdown and the card printed
    two different headings above the native view."""
    from rcp_data.documents.card import replay_results

    root = vidore
    spec = load_spec("vidore_v3")
    card = _texts(root)[CARD_FILE]
    replayed = replay_results(root, spec)[("native", "group-mean", spec.main_k)].markdown()
    heading = replayed.splitlines()[0]
    assert heading == f"**{NATIVE_VIEW_HEADING}**"
    assert f"\n### {NATIVE_VIEW_HEADING}\n" in card
    # the replay's tables of the card's metrics are the card's, byte for byte (replay also
    # prints Count-nDCG and Raw-BT-nDCG, which the card shows in its Diagnostics)
    blocks = replayed.split("\n\n")[1:]
    shown = [(title, table) for title, table in zip(blocks[::2], blocks[1::2], strict=True)
             if any(title.startswith(f"**{metric_label(m)}") for m in CARD_METRICS)]
    assert len(shown) == len(CARD_METRICS)
    for title, table in shown:
        assert title.strip() in card and table.strip() in card
    assert [t.view for t in parse_card_tables(replayed)] == ["native"] * len(CARD_METRICS)


# -- numbers from typed records --------------------------------------------------------------
def test_fit_settings_in_the_prose_come_from_the_settings_record(demo, monkeypatch):
    import rcp_data.documents.card as card_module

    text = card_module.render_card(demo)
    assert ("weight 2/w; ridge 1e-4; L-BFGS, at most 250 iterations per query"
            in text) == (BtSettings() == BT_SETTINGS)
    assert f"at most {BT_SETTINGS.max_iter} iterations per query" in text
    other = dataclasses.replace(BT_SETTINGS, ridge=3e-5, max_iter=99, soft_weight=4.0,
                                fallback_weight=0.5)
    monkeypatch.setattr(card_module, "BT_SETTINGS", other)
    changed = card_module.render_card(demo)
    assert "weight 4/w; ridge 3e-5; L-BFGS, at most 99 iterations per query" in changed
    assert "as hard preferences of weight 0.5." in changed
    assert "at most 250 iterations" not in changed


def test_template_holds_no_typed_in_setting():
    """The card's k, the main score and the Stage A settings are values, not literals."""
    source = TEMPLATE.read_text(encoding="utf-8")
    for literal in ("@10", "_at_10", "1e-4", "250", "2/w", "[-5, 5]", "weight 1"):
        assert literal not in source, literal
    code = (TEMPLATE.parents[1] / "card.py").read_text(encoding="utf-8")
    # no sentence of the card is composed in the module: no bold lead-ins, no "points on"
    assert not re.search(r'f?"\*\*[A-Z][^"]*\.\*\*', code)
    assert "points on average" not in code


def test_paper_rule_sentence_follows_the_spec(demo):
    """The reference-rule sentence for each rule; pool order states its distance to (b)."""
    from rcp_data.documents.card import render_card

    spec = load_spec("demo")
    texts = {rule: card_body(render_card(demo, spec=dataclasses.replace(
        spec, paper_tie_rule=rule))) for rule in ("doc-id", "group-mean", "pool-order")}
    lead = "The suite's reference rule (the one its paper tables use) is "
    assert lead + "(a), the document-id tie-break. Mean is the" in texts["doc-id"]
    assert lead + "(b), group-mean gains for ties. Mean is the" in texts["group-mean"]
    m = re.search(re.escape(lead) + r"\(c\), pool order \(ties keep their `top_ranked` order\), "
                  r"whose tables are not shown here; per cell it differs from \(b\) by at most "
                  r"(\d+\.\d\d) points on RCP-nDCG@10 and (\d+\.\d\d) points on qrel-nDCG@10\. "
                  r"Mean is the", texts["pool-order"])
    assert m, texts["pool-order"][:2000]


def test_card_facts_return_records_and_the_template_holds_the_sentences(demo):
    """The facts of one place of the card are frozen records; the sentences are the template's
    macros (``card_prose.md.j2``), which render each record alone as the card does."""
    from rcp_data.documents import card_facts
    from rcp_data.documents.card import render_card
    from rcp_data.documents.card_text import card_sentence
    from rcp_data.model.release import open_release

    rd = open_release(demo)
    spec = rd.spec
    facts = card_facts.CardFacts.of(spec)
    records = [card_facts.first_stage(spec, facts, synthetic=True, has_runs=True),
               card_facts.licence(spec, facts, synthetic=True)]
    assert all(dataclasses.is_dataclass(r) and r.__dataclass_params__.frozen for r in records)
    card = render_card(demo)
    stage = card_sentence("first_stage", records[0])
    assert stage.startswith("**First stage and fusion.**") and f"1. {stage}\n" in card
    assert card_sentence("licence", records[1]) in card
    prose = (TEMPLATE.parent / "card_prose.md.j2").read_text(encoding="utf-8")
    for macro in ("first_stage", "instructions", "examples", "paper_relation", "licence"):
        assert f"macro {macro}(" in prose
