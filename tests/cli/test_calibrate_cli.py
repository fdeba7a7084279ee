"""``rcp-data calibrate`` end to end, the diagnostics, and the recalibration gain diff."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rcp_data.calibration.diagnostics import expected_calibration_error, yen_q3
from rcp_data.cli import main
from rcp_data.core.gains import ItemParams
from rcp_data.demo.simulate import simulate_verdicts
from rcp_data.model.tables import write_parquet


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("calib")
    table, thetas, _ = simulate_verdicts(30, 40, 24, seed=21)  # SYNTHETIC
    pq.write_table(table, d / "criteria.parquet")
    write_parquet(thetas, d / "thetas.parquet")
    return d


def test_cli_map_fit_writes_outputs(inputs, tmp_path, capsys):
    out = tmp_path / "fit"
    rc = main(["calibrate", "--criteria", str(inputs / "criteria.parquet"),
               "--thetas", str(inputs / "thetas.parquet"), "--out", str(out), "--no-progress"])
    assert rc == 0
    assert "windows used 720, left out 0" in capsys.readouterr().out
    params = ItemParams.read(out / "item_params.json")
    assert params.n_criteria == 5
    meta = json.loads((out / "item_params.json").read_text())
    assert meta["method"] == "2pl-map-bt" and meta["n_responses"] == 30 * 24 * 10
    th = pq.read_table(out / "thetas.parquet")
    assert th.column_names == ["query-id", "corpus-id", "theta", "theta_bt"]
    assert th.num_rows == 30 * 40
    q = pd.read_parquet(out / "queries.parquet")
    assert len(q) == 30 and (q["tau"] > 0).all()
    diag = json.loads((out / "diagnostics.json").read_text())
    assert diag["reading_rule"]["windows_left_out"] == 0
    assert set(diag["q3"]) == {f"C{i}-C{j}" for i in range(1, 6) for j in range(i + 1, 6)}
    assert {"p5", "p95", "p95_over_p5"} <= set(diag["tau"]) and "p50" in diag["alpha"]


def test_cli_rubric_only_and_usage_errors(inputs, tmp_path, capsys):
    out = tmp_path / "rubric"
    rc = main(["calibrate", "--criteria", str(inputs / "criteria.parquet"), "--out", str(out),
               "--rubric-only", "--no-progress"])
    assert rc == 0
    th = pd.read_parquet(out / "thetas.parquet")
    assert list(th.columns) == ["query-id", "corpus-id", "theta", "theta_bt", "theta_sd"]
    assert th["theta_bt"].isna().all() and not (out / "queries.parquet").exists()
    assert json.loads((out / "item_params.json").read_text())["method"] == "2pl-mml-rubric"
    rc = main(["calibrate", "--criteria", str(inputs / "criteria.parquet"),
               "--out", str(tmp_path / "x")])
    assert rc == 2 and "--thetas is required" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_bad_input_names_the_file_and_writes_nothing(inputs, tmp_path, capsys):
    bad = pd.read_parquet(inputs / "thetas.parquet").drop(columns="theta_bt")
    write_parquet(bad, tmp_path / "t.parquet")
    rc = main(["calibrate", "--criteria", str(inputs / "criteria.parquet"),
               "--thetas", str(tmp_path / "t.parquet"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "t.parquet" in err and "theta_bt" in err
    assert not (tmp_path / "o").exists()


def test_ece_hand_worked():
    # bin [0.2, 0.25): two docs, predictions 0.2 (n=1, 1 pass) and 0.2 (n=3, 0 passes)
    # bin [0.9, 0.95): one doc, prediction 0.9, n=2, 2 passes
    pred = np.array([[0.2], [0.2], [0.9]])
    passes = np.array([[1], [0], [2]])
    n = np.array([1, 3, 2])
    # bin 1: weight 4, mean pred 0.2, observed 1/4 -> gap 0.05; bin 2: weight 2, gap 0.1
    assert expected_calibration_error(pred, passes, n) == pytest.approx((4 * 0.05 + 2 * 0.1) / 6)


def test_q3_is_the_correlation_of_residuals():
    rng = np.random.default_rng(0)
    n = rng.integers(1, 6, 200)
    pred = rng.uniform(0.05, 0.95, (200, 3))
    passes = rng.binomial(n[:, None], pred)
    q3 = yen_q3(pred, passes, n)
    resid = passes / n[:, None] - pred
    np.testing.assert_allclose(q3, np.corrcoef(resid, rowvar=False), atol=1e-12)


def test_cuda_without_a_gpu_is_a_usage_error(inputs, tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    rc = main(["calibrate", "--criteria", str(inputs / "criteria.parquet"),
               "--thetas", str(inputs / "thetas.parquet"), "--out", str(tmp_path / "o"),
               "--device", "cuda", "--no-progress"])
    assert rc == 2 and "no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_json_is_the_fit_it_wrote(inputs, tmp_path, capsys):
    """``calibrate --json``: stdout is one JSON document, the item parameters and diagnostics
    the folder holds (read back from the files, not from the command)."""
    out = tmp_path / "fit"
    rc = main(["calibrate", "--criteria", str(inputs / "criteria.parquet"), "--rubric-only",
               "--out", str(out), "--no-progress", "--json"])
    assert rc == 0
    got = json.loads(capsys.readouterr().out)
    assert got["out"] == str(out) and got["method"] == "2pl-mml-rubric"
    params = ItemParams.read(out / "item_params.json")
    assert got["item_params"]["gamma"] == pytest.approx(list(params.gamma), abs=0)
    assert got["item_params"]["beta"] == pytest.approx(
        [list(b) if np.ndim(b) else b for b in params.beta], abs=0)
    diag = json.loads((out / "diagnostics.json").read_text())
    assert got["diagnostics"]["ece"] == diag["ece"]
    assert got["diagnostics"]["n_responses"] == diag["n_responses"]
