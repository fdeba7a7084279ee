"""Rubric-only abilities against a brute-force posterior: EAP and posterior SD on a dense grid
(independent of the fit's quadrature), and the reported SD on the paper's convention."""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from scipy.stats import binom, norm

from rcp_data.calibration.rubric import fit_rubric_arrays


def _grid_posterior(n, passes, gamma, beta, grid):
    """EAP and SD of theta ~ N(0, 1) given binomial pass counts, by a dense Riemann sum."""
    p = expit(gamma[None, :] * (grid[:, None] - beta[None, :]))        # (G, C)
    loglik = np.zeros((len(n), len(grid)))
    for c in range(passes.shape[1]):
        loglik += binom.logpmf(passes[:, c][:, None], n[:, None], p[:, c][None, :])
    logpost = loglik + norm.logpdf(grid)[None, :]
    logpost -= logpost.max(axis=1, keepdims=True)
    w = np.exp(logpost)
    w /= w.sum(axis=1, keepdims=True)
    mean = w @ grid
    sd = np.sqrt(w @ grid**2 - mean**2)
    return mean, sd


def test_eap_and_posterior_sd_equal_a_brute_force_grid():
    rng = np.random.default_rng(7)
    gamma = np.array([0.45, 0.6, 0.75, 0.55])
    beta = np.array([-1.2, -0.3, 0.5, 1.1])
    theta = rng.normal(size=800)
    n = rng.integers(1, 6, size=800)
    passes = rng.binomial(n[:, None], expit(gamma * (theta[:, None] - beta)))
    fit = fit_rubric_arrays(n, passes)
    grid = np.linspace(-9, 9, 18001)
    mean, sd = _grid_posterior(n, passes, fit.gamma_raw, fit.beta_raw, grid)
    np.testing.assert_allclose(fit.theta_raw, mean, atol=1e-6)
    np.testing.assert_allclose(fit.theta_sd_raw, sd, atol=1e-6)
    # the paper's convention: theta' = k (theta - m), so the SD scales by k (and ignores m)
    k = fit.gamma_raw.sum() / len(gamma)
    m = fit.beta_raw.mean()
    np.testing.assert_allclose(fit.theta, k * (mean - m), atol=1e-6)
    np.testing.assert_allclose(fit.theta_sd, k * sd, atol=1e-6)
    assert abs(k - 1.0) > 0.01          # the rescaling is not the identity on this data
