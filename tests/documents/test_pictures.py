"""The release's pictures: valid PNGs of the stated size whose plotted arrays equal an
independent computation from the SYNTHETIC demo release's files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rcp_data.documents.pictures import (
    PICTURE_FILES,
    SIZE,
    picture_data,
    png_size,
    release_pictures,
)
from rcp_data.scoring.release_diagnostics import release_diagnostics
from rcp_data.scoring.replay import replay_release


@pytest.fixture(scope="module")
def drawn(demo_data: Path, tmp_path_factory) -> tuple[Path, object, dict]:
    root = demo_data / "release"
    diag = release_diagnostics(root)
    out = tmp_path_factory.mktemp("pictures")
    return root, diag, (out, release_pictures(diag, out))


def _qrels(root: Path) -> pd.DataFrame:
    return pd.concat([pq.read_table(root / s / "qrels.parquet").to_pandas() for s in
                      ("alpha", "beta")])


def test_every_picture_is_a_png_of_the_stated_size(drawn):
    _, _, (out, data) = drawn
    assert set(data) == set(PICTURE_FILES)
    for name in data:
        path = out / PICTURE_FILES[name]
        assert png_size(path) == SIZE
        image = pytest.importorskip("PIL.Image").open(path)
        image.verify()
        assert image.size == SIZE


def test_gain_curve_data_is_eq4_over_the_pool(drawn):
    root, _, (_, data) = drawn
    curve = data["gain_curve"]
    params = json.loads((root / "provenance" / "item_params.synth.json").read_text())
    g, b = np.asarray(params["gamma"]), np.asarray(params["beta"])
    t = np.asarray(curve.theta)[:, None]
    expected = (g / (1 + np.exp(-g * (t - b)))).sum(axis=1) / g.sum()
    assert np.allclose(curve.gain, expected, atol=1e-12, rtol=0)
    assert curve.difficulties == tuple(b)
    theta = _qrels(root)["theta"].dropna()
    assert sum(curve.hist_counts) == len(theta) == 480


def test_theta_by_grade_data(drawn):
    """The label layer's documents: those on a query's excluded list left out."""
    root, _, (_, data) = drawn
    q = _qrels(root).dropna(subset=["theta"])
    gone = set()
    for s in ("alpha", "beta"):
        if (root / s / "excluded.parquet").exists():
            ex = pd.read_parquet(root / s / "excluded.parquet").explode("excluded-corpus-ids")
            gone |= set(zip(ex["query-id"], ex["excluded-corpus-ids"], strict=True))
    assert gone
    q = q[[k not in gone for k in zip(q["query-id"], q["corpus-id"], strict=True)]]
    by = data["theta_by_grade"]
    assert by.grades == tuple(sorted(q["score"].unique()))
    for grade, values in zip(by.grades, by.theta, strict=True):
        assert values == tuple(np.sort(q.loc[q["score"] == grade, "theta"].to_numpy()))


def test_reliability_data_gives_the_ece(drawn):
    _, diag, (_, data) = drawn
    rel = data["reliability"]
    w, p, o = map(np.asarray, (rel.weight, rel.predicted, rel.observed))
    assert rel.ece == pytest.approx((w * np.abs(p - o)).sum() / w.sum(), abs=1e-12)
    assert np.all((p >= 0) & (p <= 1) & (o >= 0) & (o <= 1))
    assert 0 < rel.ece < 0.2


def test_leaderboard_data_is_the_replay(drawn):
    root, _, (_, data) = drawn
    board = data["leaderboards"]
    replay = replay_release(root)
    assert board.metrics == ("rcp_ndcg", "qrel_ndcg")
    for i, m in enumerate(board.metrics):
        for s, mean, (lo, hi) in zip(board.systems, board.means[i], board.intervals[i],
                                     strict=True):
            assert mean == pytest.approx(replay.tables[m].at[s, "mean"], abs=1e-12)
            assert lo <= mean <= hi


def test_picture_data_recomputes_without_drawing(drawn):
    _, diag, (_, data) = drawn
    assert picture_data(diag) == data
