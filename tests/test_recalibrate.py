"""Recalibration releases (issue 9 item 4): release N+1 from a refit, and the diff report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from demo_fixture import copy_demo

from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams, gain
from rcp_data.core.history import read_history
from rcp_data.core.layout import ReleaseDir
from rcp_data.core.specs import load_spec
from rcp_data.release.prepare import prepare_release
from rcp_data.release.recalibrate import diff_releases, recalibrate_release, refit_from_release
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
    a, b = ReleaseDir(v1[0], spec), ReleaseDir(v2, spec)
    params = ItemParams.read(v2 / "provenance/item_params.synth.json")
    assert params.gamma == pytest.approx(refit.params.gamma)
    for s in spec.subset_names:
        qa, qb = a.table(s, "qrels"), b.table(s, "qrels")
        assert qa[["query-id", "corpus-id", "score"]].equals(qb[["query-id", "corpus-id", "score"]])
        judged = qb["theta"].notna()
        np.testing.assert_allclose(qb.loc[judged, "gain"], gain(qb.loc[judged, "theta"], params),
                                   atol=1e-15)
        th = refit.thetas.set_index(["query-id", "corpus-id"])["theta"]
        keys = list(zip(qb.loc[judged, "query-id"], qb.loc[judged, "corpus-id"], strict=True))
        np.testing.assert_allclose(qb.loc[judged, "theta"], th.loc[keys].to_numpy())
        assert (qb.loc[~judged, "gain"] == 0).all()
        for kind in ("top_ranked", "corpus", "queries"):
            assert a.table(s, kind).equals(b.table(s, kind))
    for stale in ("README.md", "rcp_ndcg_tasks.py"):
        assert not (v2 / stale).exists()


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
    qa = pd.concat([ReleaseDir(v1[0], spec).table(s, "qrels") for s in spec.subset_names])
    qb = pd.concat([ReleaseDir(v2, spec).table(s, "qrels") for s in spec.subset_names])
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
