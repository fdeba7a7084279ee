"""SYNTHETIC builder inputs for any suite's sources (tests, trial builds, benchmarks).

Given a suite's real or generated sources, simulate what a judge run hands the build: first-stage
runs, a judge's thetas (with Stage A scores ``theta_bt``) and Stage B verdicts drawn from a 2PL
model, and reranker runs. Every value is random (seeded) and says so; none is shaped to match
any published number. The judge and the rerankers carry SYNTHETIC names (never a real model's),
and ``judge.json`` says ``"synthetic": true``, so a release built from these inputs is marked
SYNTHETIC in its manifest, releases.json and card.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from rcp_data.building.contract import write_builder_inputs
from rcp_data.building.pools import build_pools, normalize_run, rrf_fuse
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import SuiteSpec
from rcp_data.sources.base import SuiteSource

NOT_FITTED = "none: SYNTHETIC generating values, not a fit of the answers"
JUDGE = {"model": "rcp-data/SYNTHETIC-judge", "revision": "synthetic", "short": "synthjudge",
         "synthetic": True}
JUDGE_RUN = f"{JUDGE['model']}:theta"


def reranker_names(n: int) -> list[str]:
    """SYNTHETIC reranker ids (the last one scores coarsely: many ties)."""
    return [f"rcp-data/SYNTHETIC-reranker-{i + 1}" for i in range(n)]
PARAMS = ItemParams(gamma=(1.3, 1.1, 1.0, 0.8, 0.8), beta=(-1.5, -0.5, 0.3, 1.1, 2.0),
                    extra={"note": "SYNTHETIC item parameters",
                           # the thetas are drawn from these values, not fitted to the verdicts
                           "fit": NOT_FITTED})


def _latent(rng: np.random.Generator, qids: list[str], doc_ids: np.ndarray, qrels: pd.DataFrame,
            depth: int) -> pd.DataFrame:
    """Candidate documents per query with a hidden relevance (positives higher)."""
    grade = {(q, d): int(s) for q, d, s in qrels[["query-id", "corpus-id", "score"]].itertuples(
        index=False)}
    rows = []
    for q in qids:
        n = min(depth, len(doc_ids))
        cand = set(doc_ids[rng.choice(len(doc_ids), size=n, replace=False)].tolist())
        pos = [d for (qq, d), g in grade.items() if qq == q and g > 0]
        # most positives are retrieved; some are missed (ground-truth injection brings them in)
        cand |= {d for d in pos if rng.random() < 0.8}
        for d in sorted(cand):   # a set's order varies with PYTHONHASHSEED
            g = grade.get((q, d), 0)
            rel = rng.normal(0.8 + 0.8 * g, 0.6) if g > 0 else rng.normal(-1.5, 1.0)
            rows.append((q, d, rel))
    return pd.DataFrame(rows, columns=["query-id", "corpus-id", "rel"])


def _graded_latent(rng: np.random.Generator, pairs: pd.DataFrame, qrels: pd.DataFrame
                   ) -> pd.DataFrame:
    """A hidden relevance for given (query, document) pairs (positives higher)."""
    graded = pairs.merge(qrels[["query-id", "corpus-id", "score"]], how="left",
                         on=["query-id", "corpus-id"])
    g = graded["score"].fillna(0).to_numpy(dtype=np.float64)
    rel = np.where(g > 0, rng.normal(0.8 + 0.8 * g, 0.6), rng.normal(-1.5, 1.0, len(g)))
    return pairs.assign(rel=rel)


def write_synthetic_inputs(spec: SuiteSpec, source: SuiteSource, out: Path, *, seed: int = 7,
                           depth: int | None = None,
                           n_rerankers: int = 4, placements: int = 2,
                           first_stage: dict[str, pd.DataFrame] | None = None) -> Path:
    """Write ``out/{judge,first_stage,runs}`` for every subset of ``source``.

    ``first_stage``: real first-stage runs (``query-id, corpus-id, score[, rank, split]`` per
    retriever, e.g. ``rcp-data suite first-stage``'s): the SYNTHETIC judge then judges the pools
    they make, and they are written as they are; without, SYNTHETIC runs are drawn."""
    rng = np.random.default_rng(seed)
    depth = depth or min(spec.pool.size + 20, 2 * spec.pool.size)
    out = Path(out)
    fs: dict[str, list[pd.DataFrame]] = {r: [] for r in spec.pool.retrievers}
    thetas, verdicts = [], []
    models = reranker_names(n_rerankers)
    runs: dict[str, list[pd.DataFrame]] = {m: [] for m in models}
    runs[JUDGE_RUN] = []
    call = 0
    for sub in source.subsets.values():
        split = spec.provenance_split(sub.name)
        qids = sub.queries["id"].astype(str).tolist()
        never = set(sub.notes.get("empty_ids", []))
        doc_ids = np.asarray([d for d in sub.corpus.to_frame(["id"])["id"].astype(str)
                              if d not in never])
        sub_runs = []
        if first_stage is not None:
            for r in spec.pool.retrievers:
                given = first_stage[r]
                if "split" in given.columns:
                    given = given[given["split"].astype(str) == split]
                given = given[given["query-id"].astype(str).isin(set(qids))]
                sub_runs.append(normalize_run(given.drop(columns=["split"], errors="ignore"), r))
                fs[r].append(given.assign(split=split))
            seen = pd.concat(sub_runs)[["query-id", "corpus-id"]].drop_duplicates()
            lat = _graded_latent(rng, seen, sub.qrels.astype({"query-id": str,
                                                              "corpus-id": str}))
        else:
            lat = _latent(rng, qids, doc_ids, sub.qrels, depth)
        for i, r in enumerate(spec.pool.retrievers if first_stage is None else ()):
            noisy = lat.assign(score=np.round(lat["rel"] + rng.normal(0, 0.7 + 0.2 * i, len(lat)),
                                              6))
            run = normalize_run(noisy[["query-id", "corpus-id", "score"]], r)
            sub_runs.append(run)
            fs[r].append(run.assign(split=split))
        fused = rrf_fuse(pd.concat(sub_runs, ignore_index=True), spec.pool.retrievers,
                         k=spec.pool.rrf_k)
        excluded = {}
        if sub.excluded is not None:
            excluded = {str(q): set(map(str, ids)) for q, ids in zip(
                sub.excluded["query-id"], sub.excluded["excluded-corpus-ids"], strict=True)}
        pool = build_pools(fused, sub.qrels.astype({"query-id": str, "corpus-id": str}), qids,
                           rule=spec.pool.rule, size=spec.pool.size,
                           grade_positive=spec.grade_positive, excluded=excluded,
                           never_pool=never)
        rel = pool.merge(lat, on=["query-id", "corpus-id"], how="left")["rel"]
        true = rel.fillna(pd.Series(rng.normal(1.0, 0.7, len(rel)))).to_numpy()
        tau = dict(zip(qids, rng.uniform(0.7, 1.4, len(qids)), strict=True))
        alpha = dict(zip(qids, rng.normal(0, 0.6, len(qids)), strict=True))
        t = pool["query-id"].map(tau).to_numpy()
        a = pool["query-id"].map(alpha).to_numpy()
        theta_bt = (true - a) / t + rng.normal(0, 0.1, len(pool))
        thetas.append(pd.DataFrame({"query-id": pool["query-id"], "corpus-id": pool["corpus-id"],
                                    "theta": np.round(t * theta_bt + a, 6),
                                    "theta_bt": theta_bt, "split": split}))
        p = expit(np.asarray(PARAMS.gamma) * (true[:, None] - np.asarray(PARAMS.beta)))
        for _ in range(placements):
            v = (rng.random(p.shape) < p).astype(np.int8)
            frame = pd.DataFrame(v, columns=PARAMS.criteria)
            frame.insert(0, "corpus-id", pool["corpus-id"].to_numpy())
            frame.insert(0, "call_index", call + np.arange(len(pool)) // 10)
            frame.insert(0, "query-id", pool["query-id"].to_numpy())
            frame["finish_reason"] = "stop"
            frame["split"] = split
            call += len(pool) // 10 + 1
            verdicts.append(frame)
        for i, m in enumerate(models):
            score = true + rng.normal(0, 0.4 + 0.3 * i, len(pool))
            if i == len(models) - 1:
                score = np.round(score)  # a coarse reranker: many tied scores
            runs[m].append(pd.DataFrame({"query-id": pool["query-id"],
                                         "corpus-id": pool["corpus-id"],
                                         "score": np.round(score, 6), "split": split}))
        runs[JUDGE_RUN].append(thetas[-1][["query-id", "corpus-id",
                                                                  "theta", "split"]].rename(
            columns={"theta": "score"}))
    columns = ["query-id", "corpus-id", "score", "rank", "split"]
    return write_builder_inputs(
        out, spec, judge=JUDGE, params=PARAMS, thetas=pd.concat(thetas, ignore_index=True),
        criteria=pd.concat(verdicts, ignore_index=True).astype({"call_index": np.int64}),
        first_stage={r: pd.concat(parts, ignore_index=True)[columns] for r, parts in fs.items()},
        runs={m: pd.concat(parts, ignore_index=True) for m, parts in runs.items()},
        generated=("runs",) if first_stage is not None else ("first_stage", "runs"))
