"""Recalibration releases (issue 9 item 4): release N+1 from a refit, and the diff report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.demo_fixture import copy_demo
from support.reference_links import weighted_discrimination

from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import SHOWN_TIE_RULES, load_spec
from rcp_data.model.history import read_history
from rcp_data.model.release import Release
from rcp_data.release.prepare import prepare_release
from rcp_data.release.recalibrate import diff_releases, recalibrate_release, refit_from_release
from rcp_data.scoring.compare import load_tables
from rcp_data.scoring.replay import replay_release

SHA1 = "1" * 40


@pytest.fixture(scope="module")
def v1(tmp_path_factory, demo_data) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("recal")
    copy_demo(demo_data, work / "v1", work=work / "inputs")
    prepare_release(work / "v1", load_spec("demo"), "rcp-data/rcp-ndcg-demo", date="2026-11-29")
    return work / "v1", work / "inputs"


@pytest.fixture(scope="module")
def refit(v1):
    """Release 1's own answers re-read with the complete rule (release 1 read hard-fallback)."""
    return refit_from_release(v1[0], load_spec("demo"), stage_a_rule="complete")


@pytest.fixture(scope="module")
def v2(v1, refit, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("recal2") / "v2"
    recalibrate_release(v1[0], out, load_spec("demo"), refit.params, thetas=refit.thetas,
                        previous_revision=SHA1, date="2026-11-30",
                        reading_rules=refit.reading_rules)
    return out


def test_new_release_has_the_refit_gains_and_same_data(v1, v2, refit):
    spec = load_spec("demo")
    a, b = Release(v1[0], spec), Release(v2, spec)
    params = ItemParams.read(v2 / "provenance/item_params.synth.json")
    assert params.gamma == pytest.approx(refit.params.gamma)
    for s in spec.subset_names:
        qa, qb = a.table(s, "qrels"), b.table(s, "qrels")
        assert qa[["query-id", "corpus-id", "score"]].equals(qb[["query-id", "corpus-id", "score"]])
        judged = qb["theta"].notna()
        np.testing.assert_allclose(qb.loc[judged, "gain"], weighted_discrimination(qb.loc[judged, "theta"], params),
                                   atol=1e-15)
        th = refit.thetas.set_index(["query-id", "corpus-id"])["theta"]
        keys = list(zip(qb.loc[judged, "query-id"], qb.loc[judged, "corpus-id"], strict=True))
        np.testing.assert_allclose(qb.loc[judged, "theta"], th.loc[keys].to_numpy())
        assert (qb.loc[~judged, "gain"] == 0).all()
        for kind in ("top_ranked", "corpus", "queries"):
            assert a.table(s, kind).equals(b.table(s, kind))
    # the card and the task file are rendered for release 2, not carried over from release 1
    tag2 = json.loads((v2 / "provenance/releases.json").read_text())["releases"][-1]["tag"]
    for name in ("README.md", "rcp_ndcg_tasks.py"):
        assert (v2 / name).read_text() != (v1[0] / name).read_text()
        assert tag2 in (v2 / name).read_text() and tag2 not in (v1[0] / name).read_text()


def test_history_marks_the_previous_release_superseded(v2):
    h = read_history(v2 / "provenance/releases.json", for_commit=True)
    r1, r2 = h.releases
    assert (r1.status, r1.superseded_by, r1.revision) == ("superseded", 2, SHA1)
    assert (r2.status, r2.revision, r2.tag) == ("current", None, "v2-rcp-data-synthetic-judge-7b")
    manifest = json.loads((v2 / "provenance/build_manifest.json").read_text())
    assert manifest["recalibration"]["from_release"] == 1


def test_diff_report_counts_gains_and_cells(v1, v2):
    spec = load_spec("demo")
    d = diff_releases(v1[0], v2, spec)
    qa = pd.concat([Release(v1[0], spec).table(s, "qrels") for s in spec.subset_names])
    qb = pd.concat([Release(v2, spec).table(s, "qrels") for s in spec.subset_names])
    delta = (qb["gain"].to_numpy() - qa["gain"].to_numpy())[qa["theta"].notna().to_numpy()]
    assert d.judged_pairs == len(delta)
    assert d.gains_changed == int((np.abs(delta) > 1e-12).sum()) > 0
    assert d.gain_max_abs == pytest.approx(np.abs(delta).max())
    # cells: 2 metrics x 2 tie rules x models x (2 subsets + mean); qrel cells never move
    models = replay_release(v1[0], tie_rule="doc-id").models
    assert d.cells == 2 * 2 * len(models) * 3
    assert all(m["metric"] == "rcp_ndcg" for m in d.moved)
    assert d.cells_moved == len(d.moved) > 0
    assert d.cell_max_points == pytest.approx(max(abs(m["after"] - m["before"]) for m in d.moved))


def test_refit_missing_a_judged_pair_is_refused(v1, refit, tmp_path):
    short = refit.thetas.iloc[3:]
    with pytest.raises(InputError, match="no theta for 3 judged pair"):
        recalibrate_release(v1[0], tmp_path / "v2", load_spec("demo"), refit.params,
                            thetas=short, previous_revision=SHA1)
    assert not (tmp_path / "v2").exists()


def test_cli_calibrate_then_recalibrate(v1, tmp_path, capsys):
    from rcp_data.cli import main

    release, inputs = v1
    assert main(["calibrate", "--criteria", str(inputs / "judge/criteria.parquet"),
                 "--tournament", str(inputs / "judge/tournament.parquet"), "--rule", "complete",
                 "--out", str(tmp_path / "fit")]) == 0
    capsys.readouterr()
    assert main(["recalibrate", str(release), "--fit", str(tmp_path / "fit"), "--out",
                 str(tmp_path / "v2"), "--previous-revision", SHA1, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["release"]["release"] == 2 and report["diff"]["gains_changed"] > 0
    assert read_history(tmp_path / "v2/provenance/releases.json").current.release == 2


def test_diff_report_equals_the_cells_the_two_cards_print(v1, v2, tmp_path):
    """Independent of the diff's own replay: parse the printed tables of both releases' cards
    and diff them cell by cell."""
    from rcp_data.cli import main

    spec = load_spec("demo")
    d = diff_releases(v1[0], v2, spec)
    cards = tmp_path / "v1.md", tmp_path / "v2.md"
    for release, card in zip((v1[0], v2), cards, strict=True):
        assert main(["card", "render", str(release), "--out", str(card)]) == 0
    before = load_tables(cards[0], spec).cells
    after = load_tables(cards[1], spec).cells
    # the cards tabulate one tie rule of the two the diff covers
    rules = {c.tie_rule for c in before}
    assert before.keys() == after.keys() and len(rules) == 1
    assert len(before) * len(SHOWN_TIE_RULES) == d.cells
    printed = {(c.metric, c.tie_rule, c.view, spec.hub_id(c.model), spec.column_key(c.column))
               for c in before if before[c] != after[c]}
    reported = {(m["metric"], m["tie_rule"], m["view"], spec.hub_id(m["model"]),
                 spec.column_key(m["column"])) for m in d.moved if m["tie_rule"] in rules}
    assert reported == printed and len(printed) > 0
    largest = max(abs(after[c] - before[c]) for c in before)
    assert d.cell_max_points >= largest - 1e-9


def test_rubric_only_calibrate_recalibrate_verify_end_to_end(v1, tmp_path, capsys):
    """Rubric-only fit of the verdicts alone -> release 2 -> verify passes; its gains are the
    hand-written link of its thetas under the refit parameters."""
    from rcp_data.cli import main

    release, inputs = v1
    assert main(["calibrate", "--criteria", str(inputs / "judge/criteria.parquet"),
                 "--rubric-only", "--out", str(tmp_path / "fit")]) == 0
    assert main(["recalibrate", str(release), "--fit", str(tmp_path / "fit"), "--out",
                 str(tmp_path / "v2"), "--previous-revision", SHA1]) == 0
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "v2")]) == 0
    assert "VERIFIED" in capsys.readouterr().out
    spec = load_spec("demo")
    params = ItemParams.read(tmp_path / "fit" / "item_params.json")
    fitted = pd.read_parquet(tmp_path / "fit" / "thetas.parquet")
    for s in spec.subset_names:
        q = Release(tmp_path / "v2", spec).table(s, "qrels")
        judged = q["theta"].notna()
        assert judged.any()
        np.testing.assert_allclose(q.loc[judged, "gain"],
                                   weighted_discrimination(q.loc[judged, "theta"], params),
                                   rtol=0, atol=1e-12)
        merged = q[judged].merge(fitted, on=["query-id", "corpus-id"], suffixes=("", "_fit"))
        assert len(merged) == int(judged.sum())
        np.testing.assert_allclose(merged["theta"], merged["theta_fit"], rtol=0, atol=1e-12)


def test_diff_counts_exactly_the_cells_a_multi_view_card_prints(tmp_path):
    """ViDoRe's card prints the native and languages views, not the per-subset view: the
    'printed cells moved' count covers those views under the card's tie rules, no others."""
    import dataclasses

    from support.vidore_fixtures import write_domain

    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.core.specs import SHOWN_TIE_RULES
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.documents.card import views_shown
    from rcp_data.model.history import write_history
    from rcp_data.model.layout import RELEASES_JSON
    from rcp_data.release.prepare import new_release_history
    from rcp_data.sources.vidore import read_suite

    full = load_spec("vidore_v3")
    domains = ("hr", "energy")
    spec = dataclasses.replace(      # ViDoRe with two of its eight domains
        full, domains=tuple(d for d in full.domains if d.name in domains),
        subsets=tuple(s for s in full.subsets if s.domain in domains))
    for i, (d, task) in enumerate((("hr", "Hr"), ("energy", "Energy"))):
        write_domain(tmp_path / "upstream", d, task, seed=i)
    source = read_suite(spec, {"root": str(tmp_path / "upstream"), "domains": ",".join(domains)})
    inputs = write_synthetic_inputs(spec, source, tmp_path / "inputs", seed=3)
    v1 = tmp_path / "v1"
    build_release(spec, source, read_inputs(inputs), v1)
    write_history(new_release_history(v1, spec, spec.repo, None, date="2026-11-29"),
                  v1 / RELEASES_JSON)
    params = ItemParams.read(inputs / "judge/item_params.json")
    refit = ItemParams(tuple(1.5 * g for g in params.gamma), params.beta)
    recalibrate_release(v1, tmp_path / "v2", spec, refit, previous_revision=SHA1)

    d = diff_releases(v1, tmp_path / "v2", spec)
    card_views = [v for v, _ in views_shown(spec)]
    assert card_views == list(spec.card_views) == ["native", "languages"]
    models = replay_release(v1, spec, view="native").models
    # per view: one column per domain built, and the mean
    assert d.cells == 2 * len(SHOWN_TIE_RULES) * len(card_views) * len(models) * (len(domains) + 1)
    assert d.cells_moved == len(d.moved) > 0
    assert {m["view"] for m in d.moved} <= set(card_views)
    assert {m["tie_rule"] for m in d.moved} <= set(SHOWN_TIE_RULES)


def test_rule_left_out_is_the_recorded_rule_and_the_date_is_today(v1, tmp_path, capsys):
    """``--rule`` left out refits under the rule release N recorded (its help's default), the
    same release as naming that rule; a release without --date is dated today."""
    import datetime as dt

    from rcp_data.cli import main

    release = v1[0]
    recorded = read_history(release / "provenance/releases.json").current.calibration
    rule = recorded["reading_rules"]["stage_a"]
    for name, extra in (("default", []), ("named", ["--rule", rule])):
        assert main(["recalibrate", str(release), "--out", str(tmp_path / name),
                     "--previous-revision", SHA1, "--json", *extra]) == 0
    capsys.readouterr()
    spec = load_spec("demo")
    for subset in spec.subset_names:
        a = Release(tmp_path / "default", spec).table(subset, "qrels")
        b = Release(tmp_path / "named", spec).table(subset, "qrels")
        pd.testing.assert_frame_equal(a, b)
    new = read_history(tmp_path / "default/provenance/releases.json").current
    assert new.date == dt.date.today().isoformat()
    assert new.calibration["reading_rules"]["stage_a"] == rule


def test_recalibrate_takes_a_hub_revision(tmp_path, demo_data, local_hub, capsys):
    """``recalibrate hf://datasets/OWNER/NAME@REV``: the release is read from the Hub and the
    commit REV resolves to is release N's revision (no --previous-revision)."""
    import uuid

    from huggingface_hub import HfApi

    from rcp_data.cli import main
    from rcp_data.release.publish import publish

    repo = f"rcp-test/recal-{uuid.uuid4().hex[:8]}"
    copy_demo(demo_data, tmp_path / "v1")
    prepare_release(tmp_path / "v1", load_spec("demo"), repo, date="2026-11-29")
    result = publish(tmp_path / "v1", repo, create_repo=True)
    tags = {t.name: t.target_commit for t in HfApi().list_repo_refs(
        repo, repo_type="dataset").tags}
    assert tags[result.tag] == result.commit
    capsys.readouterr()
    assert main(["recalibrate", f"hf://datasets/{repo}@{result.tag}", "--out",
                 str(tmp_path / "v2"), "--json"]) == 0
    capsys.readouterr()
    first, second = read_history(tmp_path / "v2/provenance/releases.json").releases
    assert first.revision == result.commit and first.status == "superseded"
    assert second.release == 2 and second.date
