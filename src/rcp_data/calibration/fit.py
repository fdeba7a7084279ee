"""MAP fit of the 2PL calibration with Bradley-Terry abilities (paper Sec. 3.3, App. C.3).

    P(document d of query j passes criterion c) = sigmoid(gamma_c * (theta_jd - beta_c)),
    theta_jd = tau_j * theta_BT_jd + alpha_j,
    gamma_c = C softmax(u)_c, beta_c = v_c - mean(v), tau_j = softplus(t_j).

The objective is Eq. 7: the mean binary cross-entropy over all N responses x C criteria plus the
priors tau ~ N(1, 1), alpha ~ N(0, 2^2) (both inside the 1/(NC) factor) plus the ridge
lambda/2 * sum(u^2 + v^2), minimized by L-BFGS (strong Wolfe line search, at most 500 iterations)
from tau = 1, alpha = 0 and equal criterion parameters. The cross-entropy of a document's
``n`` responses with ``S_c`` passes is ``n * softplus(z) - S_c * z``, so the fit reads counts.

L-BFGS is run on per-query variables scaled by ``sqrt(N / n_j)`` (``n_j`` the query's
responses): a change of variables that leaves the optimum unchanged and gives the query and
criterion parameters curvatures of one order, which L-BFGS needs to converge on 14,514 queries.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from rcp_data.calibration.verdicts import VerdictCounts
from rcp_data.core.errors import InputError, SchemaError, UsageError
from rcp_data.core.gains import ItemParams
from rcp_data.core.io import read_parquet, read_parquet_schema
from rcp_data.core.progress import progress as progress_bar

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MapSettings:
    """Hyperparameters of Eq. 7 (paper Table 2)."""

    tau_prior_mean: float = 1.0
    tau_prior_sd: float = 1.0
    alpha_prior_sd: float = 2.0
    ridge: float = 1e-4
    max_iter: int = 500
    history_size: int = 20
    tolerance_grad: float = 1e-9
    tolerance_change: float = 1e-12
    precondition: bool = True


@dataclass
class MapArrays:
    """A fit's estimates as arrays: criterion parameters and per-query tau, alpha."""

    gamma: np.ndarray
    beta: np.ndarray
    tau: np.ndarray
    alpha: np.ndarray
    iterations: int
    evaluations: int
    objective: float
    converged: bool
    seconds: float
    device: str


@dataclass
class MapFit:
    """A MAP calibration: item parameters, per-query scale and offset, the theta table."""

    params: ItemParams
    queries: pd.DataFrame  # query-id, tau, alpha, n_docs, n_responses
    thetas: pd.DataFrame  # query-id, corpus-id, theta, theta_bt
    doc_theta: np.ndarray  # calibrated theta of each document of the counts (counts order)
    info: MapArrays
    notes: list[str] = field(default_factory=list)


def resolve_device(device: str) -> torch.device:
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: no CUDA device is available (this torch build: "
                             f"{torch.__version__})")
        return torch.device("cuda")
    raise UsageError(f"unknown device {device!r}; choose cpu or cuda")


def _inv_softplus(x: float) -> float:
    return x + math.log(-math.expm1(-x))


def fit_map_arrays(
    query_index: np.ndarray,
    theta_bt: np.ndarray,
    n: np.ndarray,
    passes: np.ndarray,
    n_queries: int,
    *,
    settings: MapSettings | None = None,
    device: str = "cpu",
    progress: bool = True,
) -> MapArrays:
    """Fit Eq. 7 on per-document counts. ``query_index[d]`` in ``[0, n_queries)``."""
    s = settings or MapSettings()
    dev = resolve_device(device)
    n_docs, n_crit = passes.shape
    if not (query_index.shape == theta_bt.shape == n.shape == (n_docs,)):
        raise ValueError("query_index, theta_bt and n must have one entry per document")
    if n_docs and (not np.isfinite(theta_bt).all()):
        raise InputError("theta_bt has a non-finite value for a document with verdicts")
    total = float(n.sum())
    if total <= 0:
        raise InputError("no responses to fit")
    t0 = time.perf_counter()
    f64 = torch.float64
    q = torch.tensor(np.asarray(query_index, dtype=np.int64), device=dev)
    bt = torch.tensor(np.asarray(theta_bt, dtype=np.float64), device=dev)
    nn = torch.tensor(np.asarray(n, dtype=np.float64), device=dev)
    ss = torch.tensor(np.asarray(passes, dtype=np.float64), device=dev)
    n_q = np.bincount(query_index, weights=n, minlength=n_queries)
    scale_np = np.sqrt(total / np.maximum(n_q, 1.0)) if s.precondition else np.ones(n_queries)
    scale = torch.as_tensor(scale_np, dtype=f64, device=dev)
    norm = 1.0 / (total * n_crit)

    u = torch.zeros(n_crit, dtype=f64, device=dev, requires_grad=True)
    v = torch.zeros(n_crit, dtype=f64, device=dev, requires_grad=True)
    a = torch.zeros(n_queries, dtype=f64, device=dev, requires_grad=True)  # alpha / scale
    b = torch.zeros(n_queries, dtype=f64, device=dev, requires_grad=True)  # (t - t0) / scale
    t_start = _inv_softplus(1.0)  # the fit starts from tau = 1, alpha = 0

    def unpack() -> tuple[torch.Tensor, ...]:
        gamma = n_crit * torch.softmax(u, 0)
        beta = v - v.mean()
        tau = torch.nn.functional.softplus(t_start + b * scale)
        alpha = a * scale
        return gamma, beta, tau, alpha

    def objective() -> torch.Tensor:
        gamma, beta, tau, alpha = unpack()
        theta = tau[q] * bt + alpha[q]
        z = gamma * (theta[:, None] - beta)
        nll = (nn[:, None] * torch.nn.functional.softplus(z, threshold=30) - ss * z).sum()
        prior = (((tau - s.tau_prior_mean) ** 2).sum() / (2 * s.tau_prior_sd**2)
                 + (alpha**2).sum() / (2 * s.alpha_prior_sd**2))
        return norm * (nll + prior) + 0.5 * s.ridge * ((u**2).sum() + (v**2).sum())

    opt = torch.optim.LBFGS(
        [u, v, a, b], lr=1.0, max_iter=s.max_iter, max_eval=int(s.max_iter * 1.25) + 10,
        tolerance_grad=s.tolerance_grad, tolerance_change=s.tolerance_change,
        history_size=s.history_size, line_search_fn="strong_wolfe",
    )
    bar = progress_bar(total=s.max_iter, desc="calibration fit (L-BFGS)", unit="it",
                       disable=not progress, leave=False)
    evals = 0

    def closure() -> torch.Tensor:
        nonlocal evals
        opt.zero_grad()
        loss = objective()
        loss.backward()
        evals += 1
        it = opt.state[u].get("n_iter", 0)
        if it > bar.n:
            bar.update(it - bar.n)
            bar.set_postfix(objective=f"{loss.item():.6g}")
        return loss

    opt.step(closure)
    bar.close()
    state = opt.state[u]
    iters = int(state.get("n_iter", 0))
    with torch.no_grad():
        final = float(objective().item())
        gamma, beta, tau, alpha = unpack()
        grad_norm = max(float(p.grad.abs().max()) if p.grad is not None and p.grad.numel() else 0.0
                        for p in (u, v, a, b))
    converged = iters < s.max_iter
    if not converged:
        log.warning("calibration fit stopped at the iteration limit (%d); max |grad| %.3g",
                    s.max_iter, grad_norm)
    out = MapArrays(
        gamma=gamma.cpu().numpy(), beta=beta.cpu().numpy(), tau=tau.cpu().numpy(),
        alpha=alpha.cpu().numpy(), iterations=iters, evaluations=evals, objective=final,
        converged=converged, seconds=time.perf_counter() - t0, device=str(dev),
    )
    log.info("fit: %d iterations, %d evaluations, objective %.8g, %.1f s on %s",
             iters, evals, final, out.seconds, dev)
    return out


def negative_log_posterior(
    arrays: MapArrays, query_index: np.ndarray, theta_bt: np.ndarray, n: np.ndarray,
    passes: np.ndarray, settings: MapSettings | None = None,
) -> float:
    """Eq. 7 at given estimates, evaluated in numpy from the counts (for checks).

    ``u`` and ``v`` are recovered as ``log(gamma / C)`` centred and ``beta``: at the optimum the
    ridge makes both have mean 0 (the constraints leave their means free).
    """
    s = settings or MapSettings()
    gamma = arrays.gamma
    u = np.log(gamma / len(gamma))
    u = u - u.mean()
    v = arrays.beta
    theta = arrays.tau[query_index] * theta_bt + arrays.alpha[query_index]
    z = gamma * (theta[:, None] - arrays.beta)
    nll = float((n[:, None] * np.logaddexp(0.0, z) - passes * z).sum())
    prior = (((arrays.tau - s.tau_prior_mean) ** 2).sum() / (2 * s.tau_prior_sd**2)
             + (arrays.alpha**2).sum() / (2 * s.alpha_prior_sd**2))
    norm = 1.0 / (n.sum() * passes.shape[1])
    return norm * (nll + prior) + 0.5 * s.ridge * float((u**2).sum() + (v**2).sum())


def read_thetas(path: str | Path) -> pd.DataFrame:
    """The Stage A table: query-id, corpus-id, theta_bt (other columns dropped)."""
    path = Path(path)
    what = "the theta table with theta_bt"
    names = read_parquet_schema(path, what=what).names
    for col in ("query-id", "corpus-id", "theta_bt"):
        if col not in names:
            hint = " (a refit needs the Stage A Bradley-Terry scores)" if col == "theta_bt" else ""
            raise SchemaError(f"missing column {col!r}{hint}; has {', '.join(names)}",
                              path=str(path), field=col)
    df = read_parquet(path, ["query-id", "corpus-id", "theta_bt"], what=what).to_pandas()
    df["theta_bt"] = df["theta_bt"].astype("float64")
    dup = df.duplicated(["query-id", "corpus-id"])
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{int(dup.sum())} duplicate (query-id, corpus-id) rows", path=str(path),
                         row=row, field="corpus-id")
    bad = ~np.isfinite(df["theta_bt"].to_numpy()) & df["theta_bt"].notna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError("theta_bt is not finite", path=str(path), row=row, field="theta_bt")
    log.info("read %s Stage A scores from %s", f"{len(df):,}", path)
    return df


def fit_map(counts: VerdictCounts, thetas: pd.DataFrame, *, settings: MapSettings | None = None,
            device: str = "cpu", progress: bool = True, source: str = "<thetas>") -> MapFit:
    """Fit Eq. 7 on verdict counts and Stage A scores; theta for every row of ``thetas``."""
    keys = pd.DataFrame({"query-id": counts.query_id, "corpus-id": counts.corpus_id,
                         "_doc": np.arange(counts.n_docs)})
    merged = keys.merge(thetas[["query-id", "corpus-id", "theta_bt"]], how="left",
                        on=["query-id", "corpus-id"], sort=False).sort_values("_doc")
    bt = merged["theta_bt"].to_numpy(dtype=np.float64)
    missing = ~np.isfinite(bt)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(
            f"{int(missing.sum()):,} judged documents have no theta_bt, e.g. query "
            f"{counts.query_id[i]!r} document {counts.corpus_id[i]!r}; every document with "
            "verdicts needs its Stage A score", path=source, field="theta_bt",
        )
    all_queries = pd.Index(pd.unique(np.concatenate(
        [counts.query_id, thetas["query-id"].to_numpy(dtype=object)]))).sort_values()
    qidx = all_queries.get_indexer(counts.query_id)
    arrays = fit_map_arrays(qidx, bt, counts.n, counts.passes, len(all_queries),
                            settings=settings, device=device, progress=progress)
    notes = []
    n_q = np.bincount(qidx, weights=counts.n, minlength=len(all_queries))
    no_verdicts = int((n_q == 0).sum())
    if no_verdicts:
        notes.append(f"{no_verdicts} queries have Stage A scores but no verdicts: their tau and "
                     "alpha are the prior means (1, 0)")
        log.warning(notes[-1])
    queries = pd.DataFrame({
        "query-id": all_queries.to_numpy(dtype=object),
        "tau": arrays.tau, "alpha": arrays.alpha,
        "n_docs": np.bincount(qidx, minlength=len(all_queries)).astype(np.int64),
        "n_responses": n_q.astype(np.int64),
    })
    tq = all_queries.get_indexer(thetas["query-id"])
    tb = thetas["theta_bt"].to_numpy(dtype=np.float64)
    table = pd.DataFrame({
        "query-id": thetas["query-id"].to_numpy(), "corpus-id": thetas["corpus-id"].to_numpy(),
        "theta": arrays.tau[tq] * tb + arrays.alpha[tq], "theta_bt": tb,
    }).sort_values(["query-id", "corpus-id"], kind="stable", ignore_index=True)
    doc_theta = arrays.tau[qidx] * bt + arrays.alpha[qidx]
    params = ItemParams(tuple(map(float, arrays.gamma)), tuple(map(float, arrays.beta)))
    return MapFit(params, queries, table, doc_theta, arrays, notes)
