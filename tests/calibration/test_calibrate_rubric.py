"""Rubric-only 2PL MML: agreement with girth, the real Stage B sample, degenerate input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from rcp_data.calibration.pipeline import calibrate
from rcp_data.calibration.rubric import RubricSettings, fit_rubric_arrays
from rcp_data.calibration.verdicts import count_verdicts
from rcp_data.core.errors import InputError

# Stated tolerance against girth's MML (its EM stops at a 1e-3 change in discrimination and
# uses 41 quadrature points on [-4.5, 4.5]; ours maximizes the marginal likelihood directly).
GIRTH_TOL = 0.01


def sample_verdicts(path) -> pd.DataFrame:
    """The REAL NanoBEIR Stage B sample as a verdict table (one window = one call_index)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for key, q in data["queries"].items():
        for call, window in enumerate(q["windows"]):
            for doc, *answers in window:
                rows.append((key, call, doc, *answers, "stop"))
    df = pd.DataFrame(rows, columns=["query-id", "call_index", "corpus-id", "C1", "C2", "C3",
                                     "C4", "C5", "finish_reason"])
    return df.astype({f"C{i}": "int8" for i in range(1, 6)})


@pytest.fixture(scope="module")
def real_sample(shared_dir):
    from conftest import _require

    return sample_verdicts(_require(
        shared_dir / "data" / "calibration" / "stage-b-verdicts-nanobeir-sample.json"))


def test_agrees_with_girth_twopl_mml():
    import girth  # a test dependency: its absence is a failure
    rng = np.random.default_rng(3)
    a = np.array([0.8, 1.5, 2.0, 1.2, 2.5])  # inside girth's (0.2, 5) bounds
    b = np.array([-1.0, -0.2, 0.4, 1.0, 1.6])
    theta = rng.normal(size=2000)
    y = (rng.random((2000, 5)) < expit(a * (theta[:, None] - b))).astype(np.int64)
    ours = fit_rubric_arrays(np.ones(2000, dtype=np.int64), y)
    ref = girth.twopl_mml(y.T, {"max_iteration": 500, "use_LUT": False})
    np.testing.assert_allclose(ours.gamma_raw, ref["Discrimination"], atol=GIRTH_TOL)
    np.testing.assert_allclose(ours.beta_raw, ref["Difficulty"], atol=GIRTH_TOL)
    # and both are near the truth the data came from
    assert np.abs(ours.gamma_raw - a).max() < 0.35 and np.abs(ours.beta_raw - b).max() < 0.25


def test_convention_keeps_every_pass_probability():
    rng = np.random.default_rng(1)
    n = rng.integers(1, 8, 500)
    theta = rng.normal(size=500)
    p = expit(np.array([1.0, 2.0, 0.7]) * (theta[:, None] - np.array([-0.5, 0.3, 1.2])))
    s = rng.binomial(n[:, None], p)
    r = fit_rubric_arrays(n, s)
    assert r.gamma.sum() == pytest.approx(3.0, abs=1e-12)
    assert r.beta.mean() == pytest.approx(0.0, abs=1e-12)
    raw = expit(r.gamma_raw * (r.theta_raw[:, None] - r.beta_raw))
    conv = expit(r.gamma * (r.theta[:, None] - r.beta))
    np.testing.assert_allclose(conv, raw, atol=1e-12)
    # EAP is monotone in the discrimination-weighted pass share at equal placements
    five = n == 5
    order = np.argsort((s[five] @ r.gamma_raw), kind="stable")
    assert np.all(np.diff(r.theta[five][order]) >= -1e-12)


def test_real_stage_b_sample_fits_with_rising_difficulties(real_sample):
    counts = count_verdicts(real_sample)
    assert counts.stats.windows_total == 120 and counts.stats.windows_left_out == 0
    assert counts.n_docs == 747 and counts.n_responses == 1200
    cal = calibrate(counts, None, rubric_only=True)
    beta = np.asarray(cal.params.beta)
    assert np.all(np.diff(beta) > 0), beta
    assert cal.diagnostics["difficulties_rising"]
    assert cal.diagnostics["difficulty_order"] == ["C1", "C2", "C3", "C4", "C5"]
    assert len(cal.thetas) == 747 and np.isfinite(cal.thetas["theta"]).all()
    # documents that fail everything (most of the pool) all share the lowest ability
    fail = counts.passes.sum(1) == 0
    lowest = cal.thetas["theta"].to_numpy()[fail]
    assert np.ptp(lowest[counts.n[fail] == 1]) == 0
    assert cal.thetas["theta"].min() == pytest.approx(lowest.min())


def test_criterion_nobody_or_everybody_passes_is_a_clear_error():
    rng = np.random.default_rng(2)
    theta = rng.normal(size=300)
    p = expit(np.array([1.2, 1.0, 1.4, 0.9]) * (theta[:, None] - np.array([-1, 0, 0.7, 1.5])))
    s = rng.binomial(np.full((300, 1), 4), p)
    s[:, 3] = 0
    with pytest.raises(InputError, match="C4: nobody passes it"):
        fit_rubric_arrays(np.full(300, 4), s)
    s[:, 3] = 4
    with pytest.raises(InputError, match="C4: every document passes it"):
        fit_rubric_arrays(np.full(300, 4), s)


def test_documents_failing_everything_get_a_finite_prior_driven_ability():
    rng = np.random.default_rng(5)
    theta = rng.normal(size=400)
    p = expit(1.3 * (theta[:, None] - np.array([-0.8, 0.0, 0.9])))
    s = rng.binomial(np.full((400, 1), 3), p)
    s[:50] = 0
    r = fit_rubric_arrays(np.full(400, 3), s)
    assert np.isfinite(r.theta).all()
    assert np.ptp(r.theta[:50]) == 0 and r.theta[:50].max() == r.theta.min()
    # the posterior mean of an all-fail document under N(0, 1) lies below the prior mean
    assert r.theta_raw[0] < 0


# -- the integral over ability is converged ----------------------------------------------------
REFINED = RubricSettings(slope_step=0.125, max_step=0.0625, half_width=14.0, beta_margin=12.0)
COARSE = RubricSettings(slope_step=3.0, max_step=0.3)  # about the old 61-node rule's spacing


def _moved(a, b) -> float:
    """The largest change of any estimate between two fits (raw and reported scale)."""
    return max(float(np.abs(getattr(a, k) - getattr(b, k)).max())
               for k in ("gamma_raw", "beta_raw", "gamma", "beta", "theta", "theta_sd"))


def test_real_sample_estimates_are_those_of_the_converged_integral(real_sample):
    counts = count_verdicts(real_sample)
    fit = fit_rubric_arrays(counts.n, counts.passes)
    assert fit.gamma_raw.max() > 8  # steep criteria: the case a fixed rule could not resolve
    assert fit.grid_step * fit.gamma_raw.max() <= 0.5 + 1e-9
    finer = fit_rubric_arrays(counts.n, counts.passes, settings=REFINED)
    assert finer.grid_points > 2 * fit.grid_points
    assert _moved(fit, finer) <= 1e-4
    # a grid as coarse as the old Gauss-Hermite rule's moves the estimates by far more
    assert _moved(fit, fit_rubric_arrays(counts.n, counts.passes, settings=COARSE)) > 1e-2


def test_simulated_steep_items_are_converged_and_recovered():
    rng = np.random.default_rng(9)
    gamma = np.array([12.0, 9.0, 6.0, 3.0, 1.5])
    beta = np.array([-1.2, -0.3, 0.4, 1.0, 1.7])
    theta = rng.normal(size=4000)
    n = rng.integers(1, 5, 4000)
    passes = rng.binomial(n[:, None], expit(gamma * (theta[:, None] - beta)))  # SYNTHETIC
    fit = fit_rubric_arrays(n, passes)
    finer = fit_rubric_arrays(n, passes, settings=REFINED)
    assert _moved(fit, finer) <= 1e-4
    assert fit.converged and fit.grid_step <= 0.5 / fit.gamma_raw.max() + 1e-12
    np.testing.assert_allclose(fit.beta_raw, beta, atol=0.08)
    assert np.abs(np.log(fit.gamma_raw / gamma)).max() < 0.25
