"""Rubric-only calibration: 2PL marginal maximum likelihood without tournament scores.

Each document is a respondent whose answers are its pass counts ``S_c`` over its ``n``
placements (binomial), with ability ``theta ~ N(0, 1)``. The marginal likelihood is integrated
by Gauss-Hermite quadrature and maximized directly over (log gamma_c, beta_c) with L-BFGS-B and
the analytic gradient; a weak N(0, 100^2) prior on both (a ridge of 1e-4 on the summed
log-likelihood) is negligible but keeps near-degenerate criteria finite. A criterion that
nobody (or everybody) passes has no finite estimate: an error names it. Documents with the same counts are the same respondent, so the fit runs on the distinct
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
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.stages.calibration.verdicts import VerdictCounts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RubricSettings:
    quadrature_points: int = 61
    ridge: float = 1e-4
    max_iter: int = 500
    tolerance_grad: float = 1e-10
    tolerance_change: float = 1e-15


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
    n = np.asarray(n, dtype=np.int64)
    passes = np.asarray(passes, dtype=np.int64)
    n_docs, n_crit = passes.shape
    if n_docs == 0 or n.sum() == 0:
        raise InputError("no responses to fit")
    total = passes.sum(0)
    for c in range(n_crit):
        if total[c] in (0, n.sum()):
            what = "nobody passes" if total[c] == 0 else "every document passes"
            raise InputError(
                f"criterion C{c + 1}: {what} it, so its difficulty has no finite rubric-only "
                "estimate; drop the criterion or fit with tournament scores (MAP)",
                field=f"C{c + 1}")
    patterns, inverse, weight = np.unique(
        np.column_stack([n, passes]), axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    pn = patterns[:, 0].astype(np.float64)
    ps = patterns[:, 1:].astype(np.float64)
    pf = pn[:, None] - ps
    w = weight.astype(np.float64)
    x, qw = _quadrature(s.quadrature_points)
    logw = np.log(qw)
    norm = 1.0 / (float(n.sum()) * n_crit)

    def log_joint(loga: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = np.exp(loga) * (x[:, None] - b)  # (K, C)
        # (P, K): log P(counts | x_k) + log w_k (binomial coefficients are constant)
        ll = -(ps @ np.logaddexp(0.0, -z).T) - (pf @ np.logaddexp(0.0, z).T) + logw
        return ll, expit(z)

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        loga, b = params[:n_crit], params[n_crit:]
        a = np.exp(loga)
        ll, p = log_joint(loga, b)
        marg = logsumexp(ll, axis=1)
        post = np.exp(ll - marg[:, None])  # (P, K)
        g = post.T @ (w[:, None] * ps) - (post.T @ (w * pn))[:, None] * p  # d/dz, (K, C)
        grad_loga = a * (g * (x[:, None] - b)).sum(0)
        grad_b = -a * g.sum(0)
        value = -(w @ marg) + 0.5 * s.ridge * (params @ params)
        grad = -np.concatenate([grad_loga, grad_b]) + s.ridge * params
        return norm * value, norm * grad

    # start: equal discriminations, difficulties at the logit of each criterion's failure share
    share = (total + 0.5) / (n.sum() + 1.0)
    start = np.concatenate([np.zeros(n_crit), -np.log(share / (1 - share)) / 1.7])
    res = minimize(objective, start, jac=True, method="L-BFGS-B",
                   options={"maxiter": s.max_iter, "ftol": s.tolerance_change,
                            "gtol": s.tolerance_grad})
    gamma_raw, beta_raw = np.exp(res.x[:n_crit]), res.x[n_crit:].copy()
    ll, _ = log_joint(res.x[:n_crit], beta_raw)
    post = np.exp(ll - logsumexp(ll, axis=1)[:, None])
    eap = post @ x
    sd = np.sqrt(np.clip(post @ x**2 - eap**2, 0.0, None))
    theta_raw, sd_raw = eap[inverse], sd[inverse]
    k = float(gamma_raw.sum() / n_crit)
    m = float(beta_raw.mean())
    out = RubricArrays(
        gamma_raw=gamma_raw, beta_raw=beta_raw, theta_raw=theta_raw, theta_sd_raw=sd_raw,
        gamma=gamma_raw / k, beta=k * (beta_raw - m), theta=k * (theta_raw - m),
        theta_sd=k * sd_raw, scale=k, shift=m, iterations=int(res.nit),
        objective=float(res.fun), converged=bool(res.success),
        seconds=time.perf_counter() - t0, n_patterns=int(patterns.shape[0]),
    )
    if not out.converged:
        log.warning("rubric-only fit did not converge: %s", res.message)
    log.info("rubric-only fit: %d documents as %d count patterns, %d iterations, %.1f s",
             n_docs, out.n_patterns, out.iterations, out.seconds)
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
