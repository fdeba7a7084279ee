"""SYNTHETIC Stage B verdicts from known 2PL parameters, for recovery tests and benchmarks.

Nothing here is real judge data: every table it makes says ``finish_reason = "synthetic"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.special import expit

DEFAULT_GAMMA = (0.8, 1.1, 1.25, 1.05, 0.8)  # sums to C = 5
DEFAULT_BETA = (-1.6, -0.7, 0.1, 0.7, 1.5)  # mean 0


@dataclass
class Simulation:
    """True parameters and per-document data of a synthetic calibration problem."""

    gamma: np.ndarray
    beta: np.ndarray
    tau: np.ndarray  # per query
    alpha: np.ndarray  # per query
    query_index: np.ndarray  # per document
    theta_bt: np.ndarray  # per document
    n: np.ndarray  # placements per document
    passes: np.ndarray  # (D, C) pass counts
    row_doc: np.ndarray | None = None  # document of each verdict row (simulate_verdicts)

    @property
    def theta(self) -> np.ndarray:
        return self.tau[self.query_index] * self.theta_bt + self.alpha[self.query_index]


def simulate_counts(n_queries: int, docs_per_query: int, placements: int | np.ndarray, *,
                    gamma=DEFAULT_GAMMA, beta=DEFAULT_BETA, seed: int = 0) -> Simulation:
    """Per-document binomial pass counts; ``placements`` a constant or one value per document."""
    rng = np.random.default_rng(seed)
    g, b = np.asarray(gamma, float), np.asarray(beta, float)
    tau = np.exp(rng.normal(np.log(1.4), 0.35, n_queries))
    alpha = rng.normal(-1.5, 1.0, n_queries)
    qi = np.repeat(np.arange(n_queries), docs_per_query)
    bt = rng.normal(0.0, 1.3, qi.size)
    bt -= np.bincount(qi, bt)[qi] / docs_per_query  # BT scores are centered within a query
    n = np.broadcast_to(np.asarray(placements, dtype=np.int64), qi.shape).copy()
    p = expit(g * ((tau[qi] * bt + alpha[qi])[:, None] - b))
    passes = rng.binomial(n[:, None], p).astype(np.int64)
    return Simulation(g, b, tau, alpha, qi, bt, n, passes)


def simulate_verdicts(n_queries: int, docs_per_query: int, windows_per_query: int, *,
                      window_size: int = 10, gamma=DEFAULT_GAMMA, beta=DEFAULT_BETA,
                      seed: int = 0) -> tuple[pa.Table, pd.DataFrame, Simulation]:
    """A synthetic verdict table (balanced windows) and its Stage A theta table.

    Each query's windows take its documents in random permutations, so every document is
    shown ``windows_per_query * window_size / docs_per_query`` times on average.
    """
    rng = np.random.default_rng(seed)
    sim = simulate_counts(n_queries, docs_per_query, 0, gamma=gamma, beta=beta, seed=seed)
    per_query = windows_per_query * window_size
    reps = -(-per_query // docs_per_query)
    order = np.argsort(rng.random((n_queries, reps, docs_per_query)), axis=2)
    local = order.reshape(n_queries, reps * docs_per_query)[:, :per_query]
    doc = (local + (np.arange(n_queries) * docs_per_query)[:, None]).ravel()
    qi = np.repeat(np.arange(n_queries), per_query)
    call = np.tile(np.repeat(np.arange(windows_per_query), window_size), n_queries)
    p = expit(sim.gamma * (sim.theta[doc][:, None] - sim.beta))
    answers = (rng.random(p.shape) < p).astype(np.int8)
    sim.row_doc = doc
    sim.n = np.bincount(doc, minlength=sim.theta_bt.size).astype(np.int64)
    sim.passes = np.stack([np.bincount(doc, answers[:, c], sim.theta_bt.size)
                           for c in range(answers.shape[1])], axis=1).astype(np.int64)
    qnames = pa.array([f"sq{j:06d}" for j in range(n_queries)])
    dnames = pa.array([f"sd{i % docs_per_query:04d}" for i in range(docs_per_query)])
    cols = {
        "query-id": qnames.take(pa.array(qi)),
        "call_index": pa.array(call, pa.int64()),
        "corpus-id": dnames.take(pa.array(doc % docs_per_query)),
    }
    for c in range(answers.shape[1]):
        cols[f"C{c + 1}"] = pa.array(answers[:, c], pa.int8())
    cols["finish_reason"] = pa.array(np.full(qi.size, "synthetic", dtype=object), pa.string())
    table = pa.table(cols)
    thetas = pd.DataFrame({
        "query-id": qnames.take(pa.array(sim.query_index)).to_numpy(zero_copy_only=False),
        "corpus-id": dnames.take(pa.array(np.arange(sim.theta_bt.size) % docs_per_query))
        .to_numpy(zero_copy_only=False),
        "theta_bt": sim.theta_bt,
    })
    return table, thetas, sim
