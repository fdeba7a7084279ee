"""Rubric-only calibration: 2PL marginal maximum likelihood without tournament scores.

Each document is a respondent whose answers are its pass counts ``S_c`` over its ``n``
placements (binomial), with ability ``theta ~ N(0, 1)``. The marginal likelihood is maximized
directly over (log gamma_c, beta_c) with L-BFGS-B and the analytic gradient; a weak N(0, 100^2) prior on both (a ridge of 1e-4 on the summed
log-likelihood) is negligible but keeps near-degenerate criteria finite. A criterion that
nobody (or everybody) passes has no finite estimate: an error names it. Documents with the same counts are the same respondent, so the fit runs on the distinct
count patterns. Ability is the posterior mean (EAP) under the fitted items.

The integral over ability. Real rubrics are steep (raw gamma near 10 on the NanoBEIR sample):
a pass probability then turns from 0 to 1 within 0.2 of ability, which a fixed Gauss-Hermite
rule (61 nodes, 0.3 apart at the centre) cannot resolve. The integral is taken instead by the
trapezoid rule on a uniform grid whose spacing follows the steepest item: ``h <= slope_step /
max(gamma)`` over ``[-L, L]``, ``L >= max|beta| + margin``. For an integrand analytic in a strip
(a logistic in ``gamma x`` has its poles at distance ``pi / gamma``) the trapezoid rule's error
falls like ``exp(-2 pi^2 / (gamma h))``: below 1e-17 at ``gamma h = 0.5``. The grid depends on
the estimates, so the fit is repeated on the grid its estimates call for until they need no
finer one; the estimates are then those of the converged marginal likelihood (refining the grid
further moves none of them by more than the optimizer's tolerance).

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

from rcp_data.calibration.verdicts import VerdictCounts
from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RubricSettings:
    slope_step: float = 0.5  # grid spacing times the largest raw discrimination, at most
    max_step: float = 0.25  # grid spacing, at most
    half_width: float = 10.0  # the grid covers [-L, L], L >= half_width
    beta_margin: float = 8.0  # and L >= max |beta| + beta_margin
    max_rounds: int = 8  # fits on ever finer grids, at most
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
    grid_step: float = 0.0
    grid_points: int = 0
    grid_rounds: int = 0


@dataclass
class RubricFit:
    params: ItemParams
    thetas: pd.DataFrame  # query-id, corpus-id, theta, theta_sd, theta_bt (null)
    doc_theta: np.ndarray
    info: RubricArrays
    notes: list[str] = field(default_factory=list)


def ability_grid(step: float, half_width: float) -> tuple[np.ndarray, np.ndarray]:
    """Trapezoid nodes on ``[-L, L]`` (spacing at most ``step``) and their N(0, 1) weights."""
    n = int(np.ceil(2 * half_width / step)) + 1
    x = np.linspace(-half_width, half_width, n)
    w = np.exp(-0.5 * x * x)
    w[[0, -1]] *= 0.5
    return x, w / w.sum()


def grid_needed(gamma: np.ndarray, beta: np.ndarray, s: RubricSettings) -> tuple[float, float]:
    """``(spacing, half-width)`` the items ``gamma``, ``beta`` (raw scale) call for."""
    step = min(s.max_step, s.slope_step / float(np.max(gamma)))
    return step, max(s.half_width, float(np.max(np.abs(beta))) + s.beta_margin)


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
    norm = 1.0 / (float(n.sum()) * n_crit)
    x = logw = np.zeros(0)

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
    step, half = grid_needed(np.exp(start[:n_crit]), start[n_crit:], s)
    iterations = rounds = 0
    settled = False
    while not settled and rounds < s.max_rounds:
        rounds += 1
        x, qw = ability_grid(step, half)
        logw = np.log(qw)
        res = minimize(objective, start, jac=True, method="L-BFGS-B",
                       options={"maxiter": s.max_iter, "ftol": s.tolerance_change,
                                "gtol": s.tolerance_grad})
        iterations += int(res.nit)
        start = res.x
        need_step, need_half = grid_needed(np.exp(res.x[:n_crit]), res.x[n_crit:], s)
        # within 10% of the spacing asked for: error ~ exp(-2 pi^2 / 0.55) ~ 1e-16
        settled = need_step >= 0.9 * step and need_half <= half + 1.0
        if not settled:
            step, half = min(step, 0.9 * need_step), max(half, need_half + 1.0)
    if not settled:
        log.warning("rubric-only fit: the grid was still being refined after %d rounds",
                    s.max_rounds)
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
        theta_sd=k * sd_raw, scale=k, shift=m, iterations=iterations,
        objective=float(res.fun), converged=bool(res.success),
        seconds=time.perf_counter() - t0, n_patterns=int(patterns.shape[0]),
        grid_step=step, grid_points=len(x), grid_rounds=rounds,
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
