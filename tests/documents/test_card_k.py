"""The card's cutoffs come from the suite spec (``[suite] card_k``), issue 42 item 6.

The SYNTHETIC demo suite is built from a copy of its spec with ``card_k = [20]`` and with
``card_k = [5, 20]``: the card's tables are headed at those cutoffs, their cells equal an
independent computation (pytrec_eval's ``ndcg_cut_k`` for qrel-nDCG on the integer labels, a
plain loop for RCP-nDCG on the gains), the task file's main score is at the first cutoff, verify
passes, and verify fails once the card's k is changed by hand. The default ``[10]`` leaves the
demo's files as they were: the reference and task-file tests pin them.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from support.independent_ndcg import card_tables as _card_tables
from support.independent_ndcg import expected_tables as _expected

from rcp_data.core.errors import InputError
from rcp_data.core.specs import load_spec, load_spec_file
from rcp_data.model.layout import CARD_FILE, TASK_FILE

DEMO_SPEC = Path(load_spec("demo").path)
REPO = "rcp-test/demo-card-k"


def _spec_file(folder: Path, card_k: str | None) -> Path:
    """The demo's spec with ``card_k`` written into its ``[suite]`` table (None: left out)."""
    text = DEMO_SPEC.read_text(encoding="utf-8")
    if card_k is not None:
        text = text.replace("[suite]\n", f"[suite]\ncard_k = {card_k}\n", 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "demo.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _build(folder: Path, card_k: str) -> Path:
    from rcp_data.demo.suite import write_inputs
    from rcp_data.release.cut import build_release_dir
    from rcp_data.sources.synthetic import SEED, make_sources

    spec = load_spec_file(_spec_file(folder / "spec", card_k))
    source, latents = make_sources(spec, SEED)
    write_inputs(spec, source, latents, folder / "inputs", seed=SEED)
    out = folder / "release"
    build_release_dir(spec, folder / "inputs", out, source=source, repo=REPO,
                      date="2026-12-01", prepare=True, parameters={"synthetic": True})
    return out


@pytest.fixture(scope="module", params=["[20]", "[5, 20]"])
def built(request, tmp_path_factory) -> tuple[Path, tuple[int, ...]]:
    folder = tmp_path_factory.mktemp("card-k")
    root = _build(folder, request.param)
    return root, tuple(int(k) for k in re.findall(r"\d+", request.param))


# -- the spec ----------------------------------------------------------------------------------
def test_the_default_is_ten_and_the_first_cutoff_is_the_main_one(tmp_path):
    assert load_spec("demo").card_k == (10,) and load_spec("demo").main_k == 10
    spec = load_spec_file(_spec_file(tmp_path, "[20, 5]"))
    assert spec.card_k == (20, 5) and spec.main_k == 20


@pytest.mark.parametrize(("value", "field", "says"), [
    ("[]", "suite.card_k", "at least one cutoff"),
    ("[0]", "suite.card_k[0]", "positive integer, got 0"),
    ("[10, -5]", "suite.card_k[1]", "positive integer, got -5"),
    ("[20, 20]", "suite.card_k", "lists a cutoff twice"),
    ('["20"]', "suite.card_k[0]", "integer"),
    ("20", "suite.card_k", ""),
])
def test_a_bad_card_k_names_the_file_and_the_key(tmp_path, value, field, says):
    path = _spec_file(tmp_path, value)
    with pytest.raises(InputError) as err:
        load_spec_file(path)
    assert err.value.field == field and says in err.value.message
    assert str(path) in str(err.value)


def test_the_card_shows_the_spec_cutoffs_with_independently_computed_values(built):
    root, ks = built
    spec = load_spec_file(root / "provenance" / "suite_spec.toml")
    assert spec.card_k == ks
    text = (root / CARD_FILE).read_text(encoding="utf-8")
    tables = _card_tables(text)
    rule = "rule (a): document-id tie-break"
    assert sorted(tables) == sorted(f"{m}-nDCG@{k} (%), {rule}" for m in ("RCP", "qrel")
                                    for k in ks)
    assert "@10" not in text.split("## Results", 1)[1].split("## Checks", 1)[0] or 10 in ks
    for k in ks:
        expected = _expected(root, spec, k)
        for metric, title in (("rcp", "RCP"), ("qrel", "qrel")):
            got = tables[f"{title}-nDCG@{k} (%), {rule}"]
            assert set(got) == set(expected[metric]) == set(spec.rerankers)
            for model, cols in expected[metric].items():
                assert set(got[model]) == set(cols)
                for col, value in cols.items():
                    # one printed decimal; the Mean column is the mean of the unrounded cells
                    assert abs(got[model][col] - value) <= 0.05 + 1e-9, (k, metric, model, col)
    main = ks[0]
    assert f"nDCG@{', nDCG@'.join(map(str, ks))} in %, replayed" in text
    assert f"**Ranking layer** (nDCG@{main} %" in text
    assert f"| System | RCP-nDCG@{main} | qrel-nDCG@{main} |" in text
    assert f"- RCP-nDCG@{main}: (a) and (b) differ" in text
    assert f"`ndcg_float_at_{main}` (main score)" in text


def test_the_task_file_scores_at_the_cards_main_k(built):
    root, ks = built
    text = (root / TASK_FILE).read_text(encoding="utf-8")
    mains = set(re.findall(r'"main_score": "([^"]+)"', text))
    assert mains == {f"ndcg_float_at_{ks[0]}"}
    cutoffs = re.search(r"^_CUTOFFS = \(([^)]*)\)$", text, re.M)
    assert cutoffs and set(ks) <= {int(c) for c in cutoffs.group(1).split(",")}


def test_verify_passes_and_fails_once_the_cards_k_is_changed_by_hand(built, tmp_path):
    import shutil

    from rcp_data.checks.verify import verify

    root, ks = built
    report = verify(path=root)
    assert report.ok, [(c.name, c.found, c.details[:3]) for c in report.failed]
    shown = report.check("card-tables-shown")
    assert shown.ok and f"card_k {', '.join(map(str, ks))}" in shown.what
    # the card's k changed by hand (titles and the sentence above them), the cells left as they
    # are: the tables at the spec's cutoff are missing, the stray cutoff is named
    copy = tmp_path / "release"
    shutil.copytree(root, copy)
    card = copy / CARD_FILE
    main = ks[0]
    text = card.read_text(encoding="utf-8")
    card.write_text(text.replace(f"-nDCG@{main} (%)", "-nDCG@10 (%)"), encoding="utf-8")
    bad = verify(path=copy)
    assert not bad.ok and bad.exit_code == 1
    shown = bad.check("card-tables-shown")
    assert not shown.ok
    assert any(f"nDCG@{main} rule (a)" in d for d in shown.details)
    assert any(d.startswith("@10: a cutoff the suite spec's card_k") for d in shown.details)
    assert not bad.check("card-tables").ok
    assert not bad.check("card-regenerated").ok


def test_replay_defaults_to_the_cards_main_k(built, capsys):
    from rcp_data.cli.main import main

    root, ks = built
    assert main(["replay", str(root), "--tie-rule", "doc-id"]) == 0
    out = capsys.readouterr().out
    assert f"**RCP-nDCG@{ks[0]} (%), rule (a)" in out
    card = (root / CARD_FILE).read_text(encoding="utf-8")
    table = out.split(f"**RCP-nDCG@{ks[0]} (%), rule (a): document-id tie-break**", 1)[1]
    first_rows = table.strip().split("\n\n", 1)[0]
    for row in first_rows.splitlines()[2:]:
        assert row in card   # the card's rows are ranked; each replayed row is one of them


def test_suite_init_writes_the_cards_cutoffs(tmp_path, capsys):
    from support.byob_fixtures import write_grammar_benchmark

    from rcp_data.cli.main import main

    data = write_grammar_benchmark(tmp_path / "data")
    base = ["suite", "init", "grammars", "--from", str(data), "--grade-positive", "3",
            "--no-input"]
    out = tmp_path / "specs" / "grammars.toml"
    assert main([*base, "--out", str(out), "--card-k", "20,5"]) == 0
    assert load_spec_file(out).card_k == (20, 5)
    default = tmp_path / "specs" / "default.toml"
    assert main([*base, "--out", str(default)]) == 0
    assert load_spec_file(default).card_k == (10,)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--out", str(tmp_path / "bad.toml"), "--card-k", "20,20"])
    assert exit_.value.code == 2
    assert "--card-k '20,20': expected positive integers, none twice" in capsys.readouterr().err
    assert not (tmp_path / "bad.toml").exists()


def test_a_cutoff_mteb_does_not_list_is_reported_by_the_tasks(tmp_path):
    """card_k = [15]: the tasks report ndcg_float_at_15 (beside their usual cutoffs) and make it
    their main score; its value is the plain loop's on a hand-built query."""
    import dataclasses

    from support.mteb_helpers import load_task_module

    from rcp_data.documents.taskfile import CUTOFFS, render_task_file

    spec = dataclasses.replace(load_spec("demo"), card_k=(15,))
    releases = [{"release": 1, "tag": "v1-judge", "status": "current", "revision": None,
                 "superseded_by": None, "judge": {"model": "org/Judge"}}]
    text = render_task_file(spec, releases, repo=spec.repo)
    rcp = load_task_module(text, tmp_path, "rcp_ndcg_tasks_k15")
    cutoffs = rcp._CUTOFFS
    assert cutoffs == (1, 3, 5, 10, 15, 20, 100, 1000) and set(CUTOFFS) < set(cutoffs)
    (task,) = rcp.get_tasks(["alpha"])
    assert task.metadata.main_score == "ndcg_float_at_15"
    gains = {f"d{i:02d}": 1.0 / (1 + i) for i in range(20)}
    ranked = {d: float(-i) for i, d in enumerate(reversed(list(gains)))}   # worst first
    order = sorted(ranked, key=lambda d: -ranked[d])
    dcg = sum(gains[d] / math.log2(i + 2) for i, d in enumerate(order[:15]))
    ideal = sum(g / math.log2(i + 2) for i, g in
                enumerate(sorted(gains.values(), reverse=True)[:15]))
    assert rcp._ndcg_float(ranked, gains, rcp._CUTOFFS)[15] == pytest.approx(dcg / ideal,
                                                                               abs=1e-12)


def test_the_default_cutoff_has_one_value():
    # model.cells keeps its own literal (score --qrels imports no spec machinery): it is the
    # spec's default main k
    from rcp_data.core.specs import DEFAULT_CARD_K
    from rcp_data.model.cells import CARD_K

    assert DEFAULT_CARD_K[0] == CARD_K
