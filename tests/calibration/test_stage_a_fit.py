"""The Stage A Bradley-Terry fit: recovery on SYNTHETIC tournaments (App. C.2 schedule),
equality with an independent per-query scipy fit, centring, limits and diagnostics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import spearmanr

from rcp_data.calibration.bt import fit_bt_arrays, fit_stage_a, spearman_rows
from rcp_data.calibration.bt_pairs import pair_statistics
from rcp_data.calibration.bt_settings import BtSettings
from rcp_data.calibration.tournament import classify_windows, load_tournament
from rcp_data.demo.schedule import ScheduleSettings, simulate_tournament


def simulate(n_queries: int, n_docs: int, settings: ScheduleSettings, seed: int):
    rng = np.random.default_rng(seed)
    rel = [rng.normal(0.0, 1.5, n_docs) for _ in range(n_queries)]
    qids = [f"q{i:03d}" for i in range(n_queries)]
    docs = [[f"q{i:03d}-d{j:03d}" for j in range(n_docs)] for i in range(n_queries)]
    table = simulate_tournament(qids, docs, rel, settings=settings, seed=seed)
    return table, qids, rel


@pytest.fixture(scope="module")
def recovery():
    """SYNTHETIC: 24 queries of 60 documents, w = 10: 12 random and 12 stratified windows,
    each shown twice reversed, then 7 adaptive batches of 8 (refitting before each)."""
    s = ScheduleSettings(window=10, random_windows=12, stratified_windows=12, batches=7,
                         batch_windows=8, judge_noise=1.0, unreadable=0.02, partial=0.02)
    table, qids, rel = simulate(24, 60, s, seed=3)
    return table, qids, rel, fit_stage_a(load_tournament(table))


def test_schedule_follows_app_c2(recovery):
    frame = recovery[0].to_pandas()
    one = frame[frame["query-id"] == "q000"]
    windows = one.groupby("call_index").agg(phase=("phase", "first"),
                                            docs=("corpus-id", list))
    assert windows["phase"].value_counts().to_dict() == {"random": 24, "stratified": 24,
                                                         "adaptive": 56}
    assert (windows["docs"].map(len) == 10).all()
    # random and stratified windows come twice, the second time reversed; adaptive once
    for phase in ("random", "stratified"):
        w = windows[windows["phase"] == phase]["docs"].tolist()
        assert all(w[k + 1] == w[k][::-1] for k in range(0, len(w), 2))
    adaptive = windows[windows["phase"] == "adaptive"]["docs"].tolist()
    assert len({tuple(sorted(d)) for d in adaptive}) > 8
    assert set(frame["finish_reason"]) <= {"synthetic", "synthetic-length"}


def test_recovers_the_true_order(recovery):
    _, qids, rel, fit = recovery
    th = fit.thetas
    rho = [spearmanr(th.loc[th["query-id"] == q, "theta_bt"], rel[i]).statistic
           for i, q in enumerate(qids)]
    assert np.median(rho) >= 0.95, rho
    assert fit.queries["converged"].all()
    assert fit.summary["spearman_theta_bt_mean_score"]["median"] > 0.95


def test_centred_per_query_and_zero_without_observations():
    s = ScheduleSettings(window=5, random_windows=2, stratified_windows=2, batches=1,
                         batch_windows=2)
    table, _, _ = simulate(3, 12, s, seed=8)
    frame = table.to_pandas()
    extra = frame[frame["call_index"] == 0].copy()  # a window of documents seen nowhere else
    extra["call_index"] = 99
    extra["corpus-id"] = extra["corpus-id"].astype(str) + "-alone"
    extra["score"] = np.nan
    fit = fit_stage_a(load_tournament(pd.concat([frame, extra], ignore_index=True)))
    th = fit.thetas
    alone = th["corpus-id"].str.endswith("-alone")
    assert alone.sum() == 15 and (th.loc[alone, "theta_bt"] == 0).all()
    means = th[~alone].groupby("query-id")["theta_bt"].mean()
    assert np.abs(means).max() < 1e-12
    q = fit.queries.set_index("query-id")
    assert (q["documents"] - q["documents_observed"]).tolist() == [5, 5, 5]
    assert (q["windows_unreadable"] == 1).all()


def reference_fit(frame: pd.DataFrame, rule: str) -> dict[str, float]:
    """An independent fit of one query: observations written out window by window, the
    design note's objective, scipy's L-BFGS-B; centred over observed documents."""
    docs = sorted(frame["corpus-id"].unique())
    index = {d: i for i, d in enumerate(docs)}
    obs = []
    for _, w in frame.groupby("call_index"):
        w = w.sort_values("position")
        s = w["score"].to_numpy(dtype=float)
        r = w["judge_rank"].to_numpy(dtype=float)
        ids = [index[d] for d in w["corpus-id"]]
        n = len(ids)
        readable = np.isfinite(s) & (np.abs(s) <= 5)
        for i in range(n):
            for j in range(i + 1, n):
                if readable.all() and np.isfinite(r).all():
                    a, b = (ids[i], ids[j]) if s[i] >= s[j] else (ids[j], ids[i])
                    obs.append((a, b, np.clip(expit(abs(s[i] - s[j])), 0.01, 0.99), 2 / n))
                elif (rule == "hard-fallback" and not readable.any() and np.isfinite(r).all()
                      and len(set(r)) == n):
                    a, b = (ids[i], ids[j]) if r[i] < r[j] else (ids[j], ids[i])
                    obs.append((a, b, 1.0, 1.0))
    o = np.array(obs)
    win, lose, y, wt = o[:, 0].astype(int), o[:, 1].astype(int), o[:, 2], o[:, 3]

    def f(theta):
        d = theta[win] - theta[lose]
        p = expit(d)
        bce = -(y * np.log(p) + (1 - y) * np.log1p(-p))
        g = wt * (p - y) / wt.sum()
        grad = (np.bincount(win, g, len(docs)) - np.bincount(lose, g, len(docs))
                + 1e-4 * theta)
        return (wt * bce).sum() / wt.sum() + 0.5e-4 * theta @ theta, grad

    res = minimize(f, np.zeros(len(docs)), jac=True, method="L-BFGS-B",
                   options={"maxiter": 10_000, "gtol": 1e-13, "ftol": 1e-16})
    observed = np.zeros(len(docs), dtype=bool)
    observed[win] = observed[lose] = True
    theta = np.where(observed, res.x - res.x[observed].mean(), 0.0)
    return dict(zip(docs, theta, strict=True))


@pytest.mark.parametrize("rule", ["complete", "hard-fallback"])
def test_equals_an_independent_per_query_scipy_fit(rule):
    s = ScheduleSettings(window=6, random_windows=5, stratified_windows=4, batches=2,
                         batch_windows=3, judge_noise=0.8, unreadable=0.15, partial=0.1)
    table, qids, _ = simulate(5, 24, s, seed=11)
    fit = fit_stage_a(load_tournament(table), rule=rule)
    assert fit.stats.windows_fallback > 0 if rule == "hard-fallback" else True
    frame = table.to_pandas().astype({"query-id": str, "corpus-id": str})
    worst = 0.0
    for q in qids:
        ref = reference_fit(frame[frame["query-id"] == q], rule)
        ours = fit.thetas[fit.thetas["query-id"] == q]
        diff = ours["theta_bt"].to_numpy() - ours["corpus-id"].map(ref).to_numpy()
        worst = max(worst, float(np.abs(diff).max()))
    assert worst < 1e-6


def test_queries_fitted_together_equal_queries_fitted_alone():
    s = ScheduleSettings(window=8, random_windows=4, stratified_windows=4, batches=2,
                         batch_windows=4, unreadable=0.05)
    table, _, _ = simulate(6, 30, s, seed=4)
    t = load_tournament(table)
    stats = pair_statistics(t, classify_windows(t, "complete").status)
    together = fit_bt_arrays(stats, t.query_start)["theta"]
    frame = table.to_pandas()
    for q in ("q002", "q005"):
        alone = fit_stage_a(load_tournament(frame[frame["query-id"] == q]))
        qi = list(t.query_id).index(q)
        part = together[t.query_start[qi]:t.query_start[qi + 1]]
        np.testing.assert_allclose(alone.thetas["theta_bt"].to_numpy(), part, atol=1e-8)


def test_iteration_limit_is_reported():
    s = ScheduleSettings(window=8, random_windows=3, stratified_windows=3, batches=1,
                         batch_windows=2)
    table, _, _ = simulate(3, 30, s, seed=2)
    fit = fit_stage_a(load_tournament(table), settings=BtSettings(max_iter=3))
    q = fit.queries
    assert (q["iterations"] == 3).all() and not q["converged"].any()
    assert fit.summary["fit"]["not_converged_queries"] == 3
    full = fit_stage_a(load_tournament(table))
    assert full.queries["converged"].all() and (full.queries["grad_max"] <= 1e-10).all()
    assert (full.queries["loss"] < q["loss"]).all()


def test_per_query_diagnostics_add_up(recovery):
    _, _, _, fit = recovery
    q = fit.queries
    assert (q["windows"] == q["windows_used"] + q["windows_unreadable"]
            + q["windows_partial"]).all()
    assert (q["windows_used"] == q["windows_soft"] + q["windows_fallback"]).all()
    assert q["windows"].sum() == fit.stats.windows_total
    assert q["windows_partial"].sum() == fit.stats.windows_partial
    assert fit.summary["reading"]["rule"] == "complete"


def test_spearman_rows_matches_scipy_with_ties_and_masks():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 9))
    b = np.round(rng.normal(size=(4, 9)))  # ties
    mask = rng.random((4, 9)) > 0.2
    rho = spearman_rows(a, b, mask)
    for i in range(4):
        assert rho[i] == pytest.approx(spearmanr(a[i, mask[i]], b[i, mask[i]]).statistic)
