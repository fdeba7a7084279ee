"""A SIMULATED judge run for tests: a generated pool with planted relevance, judged through
the SIMULATED OpenAI-compatible server (rcp_data.demo.simulated_judge)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np

from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge
from rcp_data.judging.budget import TokenCounter
from rcp_data.judging.client import ChatClient, ClientSettings
from rcp_data.judging.driver import RunSettings, judge_identity, judge_pool
from rcp_data.judging.pool_input import JudgePool, PoolQuery
from rcp_data.judging.prompts import load_prompts
from rcp_data.judging.settings import make_schedule
from rcp_data.judging.tables import export_tables


def make_pool(n_queries: int, n_docs: int, seed: int = 0) -> tuple[JudgePool, dict, dict]:
    """A pool of SIMULATED texts and its planted relevance (per query: doc id -> value)."""
    rng = np.random.default_rng(seed)
    queries, texts, planted, truth = [], {"g": {}}, {}, {}
    for i in range(n_queries):
        qtext = f"SIMULATED query {i}"
        docs = tuple(f"q{i}d{j:03d}" for j in range(n_docs))
        rel = rng.normal(0, 1.5, n_docs)
        for d, r in zip(docs, rel, strict=True):
            texts["g"][d] = f"{d}: SIMULATED passage text of {d}."
            planted[(qtext, f"{d}: SIMULATED passage text of {d}.")] = float(r)
        truth[f"q{i}"] = dict(zip(docs, rel, strict=True))
        queries.append(PoolQuery("test", f"q{i}", qtext, docs, "g"))
    return JudgePool(queries, texts, "SIMULATED"), planted, truth


def run_simulated(pool: JudgePool, url: str, store: Path, out: Path, *, preset: str = "full",
                  concurrency: int = 32, max_calls: int | None = None, timeout: float = 5.0,
                  model: str = MODEL, prompts=None, urls: list[str] | None = None,
                  revision: str = ""):
    prompts = prompts or load_prompts()
    schedule = make_schedule(preset)
    run = RunSettings(concurrency=concurrency, max_calls=max_calls, context_tokens=8192,
                      max_output_tokens=512, show_progress=False)
    client = ChatClient(ClientSettings(model=model, urls=urls or [url], timeout=timeout,
                                       retries=6, backoff_base=0.02, park_min=0.05,
                                       park_max=0.2, outage_wait=30))
    for r in client.replicas:
        r.backoff = 0.05
    identity = judge_identity(model, revision, prompts, schedule, pool, run, 1.0)
    summary = asyncio.run(judge_pool(pool, prompts, schedule, store, identity, client,
                                     TokenCounter(None), run))
    if summary.complete:  # tables only from a store that holds every planned window
        export_tables(store, out, [q.key for q in pool.queries])
    return summary


if __name__ == "__main__":  # the kill test's child: judge until done (or killed)
    n_q, n_d, store, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), Path(
        sys.argv[4])
    pool, planted, _ = make_pool(n_q, n_d)
    with ServerThread(SimulatedJudge(planted, malformed=0.05, latency=0.03)) as srv:
        run_simulated(pool, srv.url, store, out, concurrency=4)
