"""From raw answers to a release anyone can refit (issue 17): demo inputs with a SYNTHETIC
tournament -> calibrate -> build -> the refit checks pass; a flipped score fails them;
recalibrate re-reads the answers with another rule into release N+1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from support.demo_fixture import copy_demo

from rcp_data.building.build import build_release
from rcp_data.building.contract import read_inputs
from rcp_data.checks.integrity import run_integrity
from rcp_data.checks.refit import BT_TOLERANCE, refit_checks
from rcp_data.checks.release_check import check_release_dir
from rcp_data.cli import main
from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import load_spec
from rcp_data.demo.suite import make_sources
from rcp_data.model.card_format import card_configs
from rcp_data.model.history import read_history
from rcp_data.model.release import Release
from rcp_data.model.tables import write_parquet
from rcp_data.release.prepare import prepare_release

SHA1 = "1" * 40
REPO = "rcp-data/rcp-ndcg-demo"


@pytest.fixture(scope="module")
def built(tmp_path_factory, demo_data) -> dict:
    """``rcp-data calibrate --tournament --criteria`` on the demo's raw answers, its output
    as the builder inputs' judge files, then build and prepare release 1."""
    work = tmp_path_factory.mktemp("stage-a")
    inputs = work / "inputs"
    shutil.copytree(demo_data / "inputs", inputs)
    judge = inputs / "judge"
    assert main(["calibrate", "--tournament", str(judge / "tournament.parquet"), "--criteria",
                 str(judge / "criteria.parquet"), "--rule", "hard-fallback", "--out",
                 str(work / "fit"), "--no-progress"]) == 0
    shutil.copy(work / "fit" / "item_params.json", judge / "item_params.json")
    shutil.copy(work / "fit" / "thetas.parquet", judge / "thetas.parquet")
    spec = load_spec("demo")
    release = work / "release"
    build_release(spec, make_sources(spec)[0], read_inputs(inputs), release)
    prepare_release(release, spec, REPO, date="2026-11-30")
    return {"work": work, "release": release, "fit": work / "fit", "inputs": inputs}


def _by_name(checks) -> dict:
    return {c.name: c for c in checks}


def test_calibrate_from_raw_answers_writes_the_stage_a_record(built, demo_data):
    fit = built["fit"]
    params = json.loads((fit / "item_params.json").read_text())
    assert params["reading_rules"] == {"stage_a": "hard-fallback", "stage_b": "complete"}
    a = params["reading"]["stage_a"]
    assert a["windows_fallback"] > 0 and a["windows_left_out_by_cause"]["partial"] > 0
    diag = json.loads((fit / "diagnostics.json").read_text())
    assert diag["stage_a"]["fit"]["not_converged_queries"] == 0
    queries = pd.read_parquet(fit / "stage_a_queries.parquet")
    assert len(queries) == 24 and queries["windows_fallback"].sum() == a["windows_fallback"]
    # the demo's own inputs were fitted the same way (in process): same numbers
    same = ItemParams.read(demo_data / "inputs/judge/item_params.json")
    np.testing.assert_allclose(params["gamma"], same.gamma, atol=1e-12)
    th = pd.read_parquet(fit / "thetas.parquet")
    demo = pd.read_parquet(demo_data / "inputs/judge/thetas.parquet")
    m = th.merge(demo, on=["query-id", "corpus-id"])
    assert len(m) == len(demo) == 480
    np.testing.assert_allclose(m["theta_bt_x"], m["theta_bt_y"], atol=1e-12)


def test_release_ships_the_answers_and_records_the_rules(built):
    release = built["release"]
    spec = load_spec("demo")
    rd = Release(release, spec)
    for split in spec.provenance_splits:
        t = rd.provenance("judge_tournament", split)
        assert list(t.columns) == ["query-id", "call_index", "phase", "position", "corpus-id",
                                   "judge_rank", "score", "finish_reason"]
        bt = rd.provenance("judge_bt", split)
        pool = rd.provenance("pool", split)
        assert len(bt) == len(pool) and set(t["corpus-id"]) <= set(pool["corpus-id"])
    raw = pd.read_parquet(built["inputs"] / "judge/tournament.parquet")
    shipped = pd.concat([rd.provenance("judge_tournament", s) for s in spec.provenance_splits])
    assert len(shipped) == len(raw)
    history = read_history(release / "provenance/releases.json")
    assert history.current.calibration["reading_rules"] == {"stage_a": "hard-fallback",
                                                            "stage_b": "complete"}
    manifest = rd.manifest
    assert manifest.calibration.reading_rules["stage_a"] == "hard-fallback"
    assert "judge/tournament.parquet" in [i.path for i in manifest.inputs]
    card = (release / "README.md").read_text()
    names = [c["config_name"] for c in card_configs(card)]
    assert {"provenance-judge-tournament", "provenance-judge-bt"} <= set(names)
    assert "`provenance-judge-tournament`" in card and "`hard-fallback` rule" in card
    assert "(Stage A read hard-fallback)" in card
    assert check_release_dir(release).ok
    params = ItemParams.read(release / "provenance/item_params.synth.json")
    checks, _ = run_integrity(rd, params, "weighted_discrimination", card_configs(card))
    assert [c.name for c in checks if not c.ok] == []


def test_refit_checks_pass_on_the_built_release(built):
    checks = _by_name(refit_checks(built["release"]))
    assert set(checks) == {"refit-theta-bt", "refit-thetas", "refit-item-params"}
    assert all(c.status == "ok" for c in checks.values()), checks
    assert "over 480 documents" in checks["refit-theta-bt"].found


def test_flipping_one_tournament_score_fails_the_refit(built, tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(built["release"], copy)
    path = copy / "provenance/judge_tournament/beta.parquet"
    t = pd.read_parquet(path)
    # a row of an entered window (every score of the window readable)
    full = t.groupby("call_index")["score"].transform(lambda s: s.notna().all())
    i = t.index[full & t["query-id"].eq("beta-q004")][3]
    t.loc[i, "score"] = -t.loc[i, "score"] if t.loc[i, "score"] else 4.0
    write_parquet(t, path, pq.read_schema(path))
    checks = _by_name(refit_checks(copy))
    bt = checks["refit-theta-bt"]
    assert bt.status == "failed" and float(bt.found.split()[2]) > 100 * BT_TOLERANCE
    assert any("beta-q004" in d for d in bt.details)
    assert checks["refit-thetas"].status == "failed"


def test_recalibrate_rereads_the_answers_with_another_rule(built, tmp_path, capsys):
    v1, v2 = built["release"], tmp_path / "v2"
    rc = main(["recalibrate", str(v1), "--rule", "complete", "--out", str(v2),
               "--previous-revision", SHA1, "--date", "2026-12-01", "--json"])
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    assert report["release"]["calibration"]["reading_rules"] == {"stage_a": "complete",
                                                                 "stage_b": "complete"}
    assert report["diff"]["gains_changed"] > 0
    spec = load_spec("demo")
    a, b = Release(v1, spec), Release(v2, spec)
    for split in spec.provenance_splits:
        assert a.provenance("judge_tournament", split).equals(
            b.provenance("judge_tournament", split))
        bt_a, bt_b = a.provenance("judge_bt", split), b.provenance("judge_bt", split)
        assert (bt_a[["query-id", "corpus-id"]] == bt_b[["query-id", "corpus-id"]]).all().all()
        assert np.abs(bt_a["theta_bt"] - bt_b["theta_bt"]).max() > 1e-3
    params = ItemParams.read(v2 / "provenance/item_params.synth.json")
    assert params.extra["reading_rules"]["stage_a"] == "complete"
    assert b.manifest.recalibration["reading_rules"]["stage_a"] == "complete"
    prepare_release(v2, spec, REPO)
    assert all(c.status == "ok" for c in refit_checks(v2)), refit_checks(v2)


def test_recalibrate_needs_one_source_of_the_refit(built, tmp_path, capsys):
    """Without --fit the refit runs from the release's answers under its recorded rule (once
    the previous commit is known); --fit and --rule together are two sources: refused."""
    rc = main(["recalibrate", str(built["release"]), "--out", str(tmp_path / "x")])
    assert rc == 2 and "--previous-revision" in capsys.readouterr().err
    rc = main(["recalibrate", str(built["release"]), "--fit", str(built["fit"]), "--rule",
               "complete", "--out", str(tmp_path / "x")])
    assert rc == 2 and not (tmp_path / "x").exists()


def test_a_release_without_answers_is_reported_absent(demo_data, tmp_path):
    release = copy_demo(demo_data, tmp_path / "release")
    for kind in ("judge_tournament", "judge_bt"):
        shutil.rmtree(release / "provenance" / kind)
    (check,) = refit_checks(release)
    assert (check.name, check.status) == ("refit", "absent")


def test_build_refuses_a_tournament_outside_the_pool(demo_data, tmp_path):
    inputs = tmp_path / "inputs"
    shutil.copytree(demo_data / "inputs", inputs)
    path = inputs / "judge/tournament.parquet"
    t = pd.read_parquet(path).astype({"query-id": str, "corpus-id": str})
    mine = t["query-id"] == "alpha-q003"
    doc = t.loc[mine, "corpus-id"].iloc[0]
    t.loc[mine & (t["corpus-id"] == doc), "corpus-id"] = "nowhere"
    write_parquet(t, path)
    spec = load_spec("demo")
    with pytest.raises(InputError, match=r"tournament.parquet.*outside the pool.*alpha-q003"):
        build_release(spec, make_sources(spec)[0], read_inputs(inputs), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_demo_release_itself_refits(demo_release_v1):
    """The demo's release 1 (as every test builds it) passes the refit checks."""
    assert all(c.status == "ok" for c in refit_checks(Path(demo_release_v1)))


def test_published_release_refits_from_its_snapshot(built, local_hub, tmp_path):
    """Publish to the local Hub, download strictly by sha, refit from the snapshot alone."""
    import uuid

    from rcp_data.core.hub_client import HubClient
    from rcp_data.release.publish import publish

    repo = f"rcp-test/stage-a-{uuid.uuid4().hex[:8]}"
    release = tmp_path / "release"
    shutil.copytree(built["release"], release)
    for stale in ("README.md", "rcp_ndcg_tasks.py", "provenance/releases.json"):
        (release / stale).unlink()
    prepare_release(release, load_spec("demo"), repo, date="2026-11-30")
    client = HubClient(local_hub.url, cache_dir=tmp_path / "cache")
    result = publish(release, repo, client=client, create_repo=True)
    snapshot = client.download(repo, result.commit)
    assert (snapshot / "provenance/judge_tournament/alpha.parquet").exists()
    checks = _by_name(refit_checks(snapshot))
    assert all(c.status == "ok" for c in checks.values()), checks
