"""MAP calibration fit (paper Eq. 7): recovery, the objective, degenerate input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from rcp_data.calibration.diagnostics import fit_diagnostics
from rcp_data.calibration.fit import (
    MapArrays,
    MapSettings,
    fit_map,
    fit_map_arrays,
    negative_log_posterior,
)
from rcp_data.calibration.pipeline import calibrate
from rcp_data.calibration.verdicts import count_verdicts
from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.demo.simulate import simulate_counts, simulate_verdicts


@pytest.fixture(scope="module")
def issue_size():
    """SYNTHETIC: 400 queries x 150 documents x 7 placements (105 windows of 10 per query)."""
    table, thetas, sim = simulate_verdicts(400, 150, 105, seed=11)
    counts = count_verdicts(table)
    cal = calibrate(counts, thetas, progress=False)
    return table, thetas, sim, counts, cal


def test_recovery_at_issue_size(issue_size):
    _, _, sim, counts, cal = issue_size
    assert counts.n_responses == 400 * 150 * 7
    assert np.array_equal(counts.n, np.full(60_000, 7))
    gamma, beta = np.asarray(cal.params.gamma), np.asarray(cal.params.beta)
    assert np.abs(gamma - sim.gamma).max() <= 0.05
    assert np.abs(beta - sim.beta).max() <= 0.10
    q = cal.queries.set_index("query-id").loc[[f"sq{j:06d}" for j in range(400)]]
    assert np.corrcoef(q["tau"], sim.tau)[0, 1] >= 0.9
    assert np.corrcoef(q["alpha"], sim.alpha)[0, 1] >= 0.9
    assert cal.diagnostics["fit"]["converged"]
    assert cal.diagnostics["difficulties_rising"]
    # constraints of Sec. 3.3
    assert gamma.sum() == pytest.approx(5.0, abs=1e-12)
    assert beta.mean() == pytest.approx(0.0, abs=1e-12)


def test_theta_table_is_tau_bt_plus_alpha(issue_size):
    _, thetas, _, _, cal = issue_size
    t = cal.thetas.merge(cal.queries, on="query-id")
    assert len(t) == len(thetas) == 60_000
    np.testing.assert_allclose(t["theta"], t["tau"] * t["theta_bt"] + t["alpha"], rtol=0,
                               atol=1e-12)
    # order within a query is the Stage A order (Prop. 3.1)
    for _, grp in t[t["query-id"].isin(["sq000000", "sq000123"])].groupby("query-id"):
        assert (np.argsort(grp["theta"].to_numpy()) == np.argsort(grp["theta_bt"].to_numpy())).all()


def test_objective_from_counts_equals_per_row_cross_entropy(issue_size):
    """The count form of Eq. 7 equals the naive sum over every verdict row and criterion."""
    table, thetas, _, counts, cal = issue_size
    df = table.to_pandas().merge(thetas, on=["query-id", "corpus-id"])
    df = df.merge(cal.queries[["query-id", "tau", "alpha"]], on="query-id")
    y = df[[f"C{c}" for c in range(1, 6)]].to_numpy(np.float64)
    theta = (df["tau"] * df["theta_bt"] + df["alpha"]).to_numpy()
    p = expit(np.asarray(cal.params.gamma) * (theta[:, None] - np.asarray(cal.params.beta)))
    bce = -(y * np.log(p) + (1 - y) * np.log1p(-p)).sum()
    tau, alpha = cal.queries["tau"].to_numpy(), cal.queries["alpha"].to_numpy()
    prior = ((tau - 1) ** 2 / 2).sum() + (alpha**2 / 8).sum()
    g = np.asarray(cal.params.gamma)
    u = np.log(g / 5) - np.log(g / 5).mean()
    naive = (bce + prior) / (len(df) * 5) + 0.5e-4 * ((u**2).sum() + (np.asarray(
        cal.params.beta) ** 2).sum())
    qidx = pd.Index(cal.queries["query-id"]).get_indexer(counts.query_id)
    bt = thetas.set_index(["query-id", "corpus-id"]).loc[
        list(zip(counts.query_id, counts.corpus_id, strict=True)), "theta_bt"].to_numpy()
    arrays = MapArrays(g, np.asarray(cal.params.beta), tau, alpha, 0, 0, 0.0, True, 0.0, "cpu")
    agg = negative_log_posterior(arrays, qidx, bt, counts.n, counts.passes)
    assert agg == pytest.approx(naive, rel=1e-10)
    assert cal.diagnostics["fit"]["objective"] == pytest.approx(agg, rel=1e-9)


def test_fit_is_a_minimum_of_the_objective():
    sim = simulate_counts(40, 60, 5, seed=4)
    arr = fit_map_arrays(sim.query_index, sim.theta_bt, sim.n, sim.passes, 40, progress=False)
    args = (sim.query_index, sim.theta_bt, sim.n, sim.passes)
    best = negative_log_posterior(arr, *args)
    rng = np.random.default_rng(0)
    for _ in range(5):
        moved = MapArrays(arr.gamma, arr.beta + rng.normal(0, 0.02, 5) * [1, -1, 1, -1, 0],
                          arr.tau * np.exp(rng.normal(0, 0.02, 40)),
                          arr.alpha + rng.normal(0, 0.02, 40), 0, 0, 0.0, True, 0.0, "cpu")
        moved.beta = moved.beta - moved.beta.mean()
        assert negative_log_posterior(moved, *args) > best
    # the preconditioning is a change of variables: the same optimum without it
    plain = fit_map_arrays(*args[:2], sim.n, sim.passes, 40, progress=False,
                           settings=MapSettings(precondition=False))
    np.testing.assert_allclose(plain.gamma, arr.gamma, atol=1e-4)
    np.testing.assert_allclose(plain.alpha, arr.alpha, atol=1e-3)


def test_query_failing_everything_gets_a_finite_prior_driven_fit():
    sim = simulate_counts(30, 50, 6, seed=5)
    passes = sim.passes.copy()
    passes[sim.query_index == 0] = 0
    arr = fit_map_arrays(sim.query_index, sim.theta_bt, sim.n, passes, 30, progress=False)
    assert np.isfinite(arr.tau).all() and np.isfinite(arr.alpha).all()
    theta = arr.tau[sim.query_index] * sim.theta_bt + arr.alpha[sim.query_index]
    top0 = theta[sim.query_index == 0].max()
    # every document of the failing query sits below the easiest criterion ...
    assert top0 < arr.beta[0]
    # ... and its offset is the lowest, yet bounded by the N(0, 2^2) prior
    assert arr.alpha[0] == arr.alpha.min() and arr.alpha[0] > -30


def test_criterion_nobody_passes_is_finite_and_flagged():
    sim = simulate_counts(30, 50, 6, seed=6)
    passes = sim.passes.copy()
    passes[:, 4] = 0
    arr = fit_map_arrays(sim.query_index, sim.theta_bt, sim.n, passes, 30, progress=False)
    assert np.isfinite(arr.gamma).all() and np.isfinite(arr.beta).all()
    assert arr.beta.argmax() == 4
    params = ItemParams(tuple(arr.gamma), tuple(arr.beta))
    theta = arr.tau[sim.query_index] * sim.theta_bt + arr.alpha[sim.query_index]
    diag = fit_diagnostics(params, theta, sim.n, passes, tau=arr.tau, alpha=arr.alpha)
    assert diag["criteria_never_passed"] == ["C5"] and diag["difficulties_rising"]
    # the ridge holds it: far above the others, predicted pass rate tiny but not zero
    assert arr.beta[4] - arr.beta[3] > 3
    assert 0 < params.pass_probabilities(theta)[:, 4].mean() < 0.01
    # the other criteria keep their spacing (only the origin mean(beta) = 0 moves)
    full = fit_map_arrays(sim.query_index, sim.theta_bt, sim.n, sim.passes, 30, progress=False)
    np.testing.assert_allclose(np.diff(arr.beta[:4]), np.diff(full.beta[:4]), atol=0.15)


def test_missing_criterion_row_leaves_its_window_out_of_the_fit():
    table, thetas, _ = simulate_verdicts(20, 30, 15, seed=8)
    df = table.to_pandas()
    df["C3"] = df["C3"].astype("Int8")
    df.loc[df["call_index"] == 0, "C3"] = None  # the first window of every query
    counts = count_verdicts(df)
    assert counts.stats.windows_left_out == 20 and counts.stats.rows_left_out == 200
    cal = calibrate(counts, thetas, progress=False)
    assert cal.diagnostics["reading_rule"]["windows_left_out"] == 20
    assert cal.diagnostics["n_responses"] == len(df) - 200


def test_judged_document_without_theta_bt_is_an_error():
    table, thetas, _ = simulate_verdicts(5, 20, 6, seed=9)
    counts = count_verdicts(table)
    short = thetas.drop(index=[3])
    with pytest.raises(InputError, match=r"thetas\.parquet.*1 judged documents have no theta_bt"):
        fit_map(counts, short, progress=False, source="thetas.parquet")


def test_queries_without_verdicts_keep_prior_means_and_null_bt_gives_null_theta():
    table, thetas, _ = simulate_verdicts(5, 20, 6, seed=10)
    extra = pd.DataFrame({"query-id": ["zz-unjudged"] * 2, "corpus-id": ["x", "y"],
                          "theta_bt": [0.5, np.nan]})
    fit = fit_map(count_verdicts(table), pd.concat([thetas, extra], ignore_index=True),
                  progress=False)
    q = fit.queries.set_index("query-id").loc["zz-unjudged"]
    assert q["tau"] == pytest.approx(1.0, abs=1e-9) and q["alpha"] == pytest.approx(0, abs=1e-9)
    assert q["n_responses"] == 0
    rows = fit.thetas.set_index("corpus-id").loc[["x", "y"]]
    assert rows["theta"].iloc[0] == pytest.approx(0.5, abs=1e-9)
    assert np.isnan(rows["theta"].iloc[1])
    assert any("no verdicts" in n for n in fit.notes)
