"""Rubric-only calibration: 2PL marginal maximum likelihood without tournament scores.

Each document is a respondent whose answers are its pass counts ``S_c`` over its ``n``
placements (binomial), with ability ``theta ~ N(0, 1)``. The marginal likelihood is integrated
by Gauss-Hermite quadrature and maximized directly over (log gamma_c, beta_c) with L-BFGS; a
weak N(0, 100^2) prior on both (a ridge of 1e-4 on the summed log-likelihood) keeps a criterion
that nobody (or everybody) passes finite and is negligible otherwise. Documents with the same counts are the same respondent, so the fit runs on the distinct
count patterns. Ability is the posterior mean (EAP) under the fitted items.

Reported on the paper's convention sum(gamma) = C, mean(beta) = 0: with ``k = sum(gamma) / C``
and ``m = mean(beta)``, ``theta' = k (theta - m)``, ``beta' = k (beta - m)``, ``gamma' = gamma / k``
leave every pass probability unchanged. The N(0, 1) scale is kept in ``raw``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from rcp_data.calibration.verdicts import VerdictCounts
from rcp_data.errors import InputError
from rcp_data.gains import ItemParams

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RubricSettings:
    quadrature_points: int = 61
    ridge: float = 1e-4
    max_iter: int = 500
    tolerance_grad: float = 1e-10
    tolerance_change: float = 1e-14


@dataclass
class RubricArrays:
    """Estimates on the N(0, 1) ability scale (``raw``) and on the paper's convention."""

    gamma_raw: np.ndarray
    beta_raw: np.ndarray
    theta_raw: np.ndarray  # EAP per document
    theta_sd_raw: np.ndarray  # posterior SD per document
    gamma: np.ndarray
    beta: np.ndarray
    theta: np.ndarray
    theta_sd: np.ndarray
    scale: float  # k: theta = k * (theta_raw - shift)
    shift: float  # m
    iterations: int
    objective: float
    converged: bool
    seconds: float
    n_patterns: int


@dataclass
class RubricFit:
    params: ItemParams
    thetas: pd.DataFrame  # query-id, corpus-id, theta, theta_sd, theta_bt (null)
    doc_theta: np.ndarray
    info: RubricArrays
    notes: list[str] = field(default_factory=list)


def _quadrature(points: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(points)  # weight exp(-x^2 / 2)
    return x, w / w.sum()


def fit_rubric_arrays(n: np.ndarray, passes: np.ndarray, *,
                      settings: RubricSettings | None = None) -> RubricArrays:
    """2PL MML on per-document counts ``n`` (D,) and ``passes`` (D, C)."""
    s = settings or RubricSettings()
    t0 = time.perf_counter()
    n_docs, n_crit = passes.shape
    if n_docs == 0 or n.sum() == 0:
        raise InputError("no responses to fit")
    patterns, inverse, weight = np.unique(
        np.column_stack([n, passes]), axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    f64 = torch.float64
    pn = torch.as_tensor(patterns[:, 0], dtype=f64)
    ps = torch.as_tensor(patterns[:, 1:], dtype=f64)
    pw = torch.as_tensor(weight, dtype=f64)
    x_np, w_np = _quadrature(s.quadrature_points)
    x = torch.as_tensor(x_np, dtype=f64)
    logw = torch.log(torch.as_tensor(w_np, dtype=f64))
    norm = 1.0 / (float(n.sum()) * n_crit)

    loga = torch.zeros(n_crit, dtype=f64, requires_grad=True)
    # start difficulties at the logit of each criterion's failure share
    share = (passes.sum(0) + 0.5) / (n.sum() + 1.0)
    b = torch.as_tensor(-np.log(share / (1 - share)) / 1.7, dtype=f64).requires_grad_(True)

    def log_joint() -> torch.Tensor:
        a = torch.exp(loga)
        z = a[None, :] * (x[:, None] - b[None, :])  # (K, C)
        logp = -torch.nn.functional.softplus(-z)
        log1mp = -torch.nn.functional.softplus(z)
        # (P, K): log P(counts | x_k) + log w_k (binomial coefficients are constant)
        return ps @ logp.T + (pn[:, None] - ps) @ log1mp.T + logw

    def objective() -> torch.Tensor:
        marg = torch.logsumexp(log_joint(), dim=1)
        return -norm * ((pw * marg).sum() - 0.5 * s.ridge * ((loga**2).sum() + (b**2).sum()))

    opt = torch.optim.LBFGS([loga, b], lr=1.0, max_iter=s.max_iter,
                            tolerance_grad=s.tolerance_grad, tolerance_change=s.tolerance_change,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    opt.step(closure)
    iters = int(opt.state[opt._params[0]].get("n_iter", 0))
    with torch.no_grad():
        final = float(objective())
        post = torch.softmax(log_joint(), dim=1)
        eap = (post * x).sum(1)
        sd = torch.sqrt(torch.clamp((post * x**2).sum(1) - eap**2, min=0.0))
        gamma_raw = torch.exp(loga).numpy().copy()
        beta_raw = b.detach().numpy().copy()
    theta_raw = eap.numpy()[inverse]
    sd_raw = sd.numpy()[inverse]
    k = float(gamma_raw.sum() / n_crit)
    m = float(beta_raw.mean())
    out = RubricArrays(
        gamma_raw=gamma_raw, beta_raw=beta_raw, theta_raw=theta_raw, theta_sd_raw=sd_raw,
        gamma=gamma_raw / k, beta=k * (beta_raw - m), theta=k * (theta_raw - m),
        theta_sd=k * sd_raw, scale=k, shift=m, iterations=iters, objective=final,
        converged=iters < s.max_iter, seconds=time.perf_counter() - t0,
        n_patterns=int(patterns.shape[0]),
    )
    log.info("rubric-only fit: %d documents as %d count patterns, %d iterations, %.1f s",
             n_docs, out.n_patterns, iters, out.seconds)
    return out


def fit_rubric(counts: VerdictCounts, *, settings: RubricSettings | None = None) -> RubricFit:
    """Rubric-only 2PL MML fit of verdict counts; theta = EAP on the paper's convention."""
    arr = fit_rubric_arrays(counts.n, counts.passes, settings=settings)
    notes = ["rubric-only: abilities are posterior means under a N(0, 1) prior on the fit's "
             f"own scale, i.e. N({-arr.scale * arr.shift:.4g}, {arr.scale:.4g}^2) on the "
             "reported convention; a document that fails (passes) everything gets a finite, "
             "prior-driven ability"]
    thetas = pd.DataFrame({
        "query-id": counts.query_id, "corpus-id": counts.corpus_id, "theta": arr.theta,
        "theta_sd": arr.theta_sd, "theta_bt": np.full(counts.n_docs, np.nan),
    })
    params = ItemParams(tuple(map(float, arr.gamma)), tuple(map(float, arr.beta)))
    return RubricFit(params, thetas, arr.theta, arr, notes)
