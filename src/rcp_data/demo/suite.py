"""The bundled demo suite: SYNTHETIC sources and judge outputs, built into a real release.

Nothing here is real data. The demo exists so that every job (build, publish, verify, card,
replay) can run end to end on a fresh machine in seconds. It is deterministic (fixed seeds) and
covers the cases the real suites have: tied reranker scores, excluded self-documents (one under
the query's own id, one byte-identical copy), a query with more positives than its pool holds
(positives outside the pool), and a query without any positive label.

The judge's answers are simulated and then fitted as a real run is: a Stage A tournament on the
window schedule of paper App. C.2 (:mod:`rcp_data.stages.calibration.schedule`; some answers
unreadable or cut off), Stage B verdicts from a 2PL, then the Bradley-Terry fit and the 2PL MAP.
Release 1 reads the tournament with the ``hard-fallback`` rule (as ViDoRe release 1); release 2
is a recalibration that re-reads the same answers with ``complete`` (as ViDoRe release 2), so
only ``theta_bt``, ``theta`` and ``gain`` differ.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import SuiteSpec, load_spec
from rcp_data.sources.base import CorpusReader, SubsetSource, SuiteSource
from rcp_data.stages.build import build_release, read_inputs, write_builder_inputs
from rcp_data.stages.calibration.schedule import ScheduleSettings, simulate_tournament
from rcp_data.stages.pools import build_pools, normalize_run, rrf_fuse

log = logging.getLogger(__name__)

SEED = 20261129
N_QUERIES = 12
N_DOCS = 240
FIRST_STAGE_DEPTH = 40
DEMO_JUDGE = {"model": "rcp-data/synthetic-judge-7b", "revision": "demo", "short": "synth"}
RELEASE_1_RULE = "hard-fallback"  # how release 1 reads the Stage A answers
RELEASE_2_RULE = "complete"
# the demo's Stage A schedule: its pools hold 20 documents, so fewer windows than the paper's
DEMO_SCHEDULE = ScheduleSettings(window=10, random_windows=6, stratified_windows=6, batches=3,
                                 batch_windows=2, judge_noise=0.6, unreadable=0.05,
                                 partial=0.04)
TRUE_PARAMS = ItemParams(gamma=(1.4, 1.1, 0.9, 0.8, 0.8), beta=(-1.6, -0.6, 0.2, 1.0, 1.9))
WORDS = ["synthetic", "river", "stone", "lamp", "orbit", "maple", "copper", "signal", "harbor", "violet", "engine", "quartz", "meadow", "cipher", "lantern", "glacier", "pixel", "ember", "falcon", "canyon", "thunder", "willow", "prism", "atlas", "beacon", "cobalt", "delta", "fable", "garnet", "horizon", "ivory", "jasmine", "kelvin", "lumen", "marble", "nectar", "onyx", "pepper", "quill", "raven", "saffron", "tundra", "umbra", "velvet", "walnut", "xenon", "yarrow", "zephyr"]


@dataclass(frozen=True)
class DemoLatent:
    """The hidden truth of one subset: true relevance per (query, document)."""

    queries: list[str]
    docs: list[str]
    relevance: np.ndarray  # (n_queries, n_docs)


def _text(rng: np.random.Generator, n: int) -> str:
    return "SYNTHETIC " + " ".join(rng.choice(WORDS, size=n))


def make_sources(spec: SuiteSpec | None = None, seed: int = SEED) -> tuple[SuiteSource, dict]:
    """Synthetic corpus, queries, qrels and exclusions for every demo subset."""
    spec = spec or load_spec("demo")
    subsets: dict[str, SubsetSource] = {}
    latents: dict[str, DemoLatent] = {}
    for s_idx, sub in enumerate(spec.subsets):
        rng = np.random.default_rng(seed + 101 * s_idx)
        qids = [f"{sub.name}-q{i:03d}" for i in range(N_QUERIES)]
        dids = [f"{sub.name}-d{i:04d}" for i in range(N_DOCS)]
        texts = [_text(rng, int(rng.integers(8, 30))) for _ in dids]
        qtexts = [_text(rng, int(rng.integers(4, 10))) for _ in qids]
        rel = rng.normal(-2.0, 1.0, size=(N_QUERIES, N_DOCS))
        for qi in range(N_QUERIES):
            topical = rng.choice(N_DOCS, size=30, replace=False)
            rel[qi, topical] = rng.normal(1.0, 1.2, size=30)
        grades = np.where(rel > 2.2, 2, np.where(rel > 1.0, 1, 0))
        excluded = None
        if sub.excludes:
            # self-documents: the query's own text under its own id (3 queries) and one
            # byte-identical copy under another id
            for qi in range(3):
                dids.append(qids[qi])
                texts.append(qtexts[qi])
            copy_id = f"{sub.name}-copy-of-{qids[0]}"
            dids.append(copy_id)
            texts.append(qtexts[0])
            extra = rng.normal(3.0, 0.3, size=(N_QUERIES, 4))
            extra[np.arange(N_QUERIES)[:, None] != np.array([0, 1, 2, 0])[None, :]] = -3.0
            rel = np.concatenate([rel, extra], axis=1)
            grades = np.concatenate([grades, np.zeros((N_QUERIES, 4), dtype=grades.dtype)], axis=1)
            excluded = pd.DataFrame({
                "query-id": qids[:3],
                "excluded-corpus-ids": [sorted([qids[0], copy_id]), [qids[1]], [qids[2]]],
            })
        else:
            # a query without any positive label, and one with more positives than fit
            grades[0, :] = 0
            many = rng.choice(N_DOCS, size=spec.pool.size + 3, replace=False)
            grades[1, many] = np.maximum(grades[1, many], 1)
            rel[1, many] = np.maximum(rel[1, many], 0.5)
        rows = [(q, d, int(grades[qi, di])) for qi, q in enumerate(qids)
                for di, d in enumerate(dids) if grades[qi, di] > 0]
        # upstream also labels some documents 0 (judged non-relevant)
        for qi, q in enumerate(qids):
            for di in rng.choice(N_DOCS, size=3, replace=False):
                if grades[qi, di] == 0:
                    rows.append((q, dids[di], 0))
        qrels = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])
        qrels = qrels.drop_duplicates(["query-id", "corpus-id"]).sort_values(
            ["query-id", "corpus-id"], kind="stable").reset_index(drop=True)
        corpus = pd.DataFrame({"id": dids, "title": "", "text": texts})
        queries = pd.DataFrame({"id": qids, "text": qtexts})
        where = f"the SYNTHETIC {{}} of demo subset {sub.name}"
        subsets[sub.name] = SubsetSource(
            sub.name, CorpusReader.from_frame(corpus, source=where.format("corpus")), queries,
            qrels, excluded, notes={"synthetic": True},
            origins={t: where.format(t) for t in ("queries", "qrels", "excluded")})
        latents[sub.name] = DemoLatent(qids, dids, rel)
    facts = {"synthetic": True, "generator": "rcp_data.demo.suite", "seed": seed}
    return SuiteSource(spec.name, subsets, facts), latents


def _first_stage(lat: DemoLatent, rng: np.random.Generator, noise: float, name: str) -> pd.DataFrame:
    scores = lat.relevance + rng.normal(0, noise, size=lat.relevance.shape)
    rows = []
    for qi, q in enumerate(lat.queries):
        top = np.argsort(-scores[qi], kind="stable")[:FIRST_STAGE_DEPTH]
        rows += [(q, lat.docs[di], float(round(scores[qi, di], 6))) for di in top]
    frame = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])
    return normalize_run(frame, name)


def _judge_answers(pools: list[tuple[pd.DataFrame, np.ndarray]], seed: int):
    """SYNTHETIC Stage A answers for every pool, fitted (rule of release 1) with the verdicts."""
    qids, docs, rel = [], [], []
    for pool, true in pools:
        for q, idx in pool.groupby("query-id", sort=False).indices.items():
            qids.append(q)
            docs.append(pool["corpus-id"].to_numpy()[idx].tolist())
            rel.append(true[idx])
    return simulate_tournament(qids, docs, rel, settings=DEMO_SCHEDULE, seed=seed)


def calibrate_demo(tournament, criteria: pd.DataFrame, rule: str):
    """Stage A (under ``rule``) and the 2PL MAP on the demo judge's answers."""
    from rcp_data.stages.calibration.bt import fit_stage_a
    from rcp_data.stages.calibration.pipeline import attach_stage_a, calibrate
    from rcp_data.stages.calibration.tournament import load_tournament
    from rcp_data.stages.calibration.verdicts import count_verdicts

    stage_a = fit_stage_a(load_tournament(tournament, source="judge/tournament.parquet"),
                          rule=rule)
    cal = calibrate(count_verdicts(criteria, source="judge/criteria.parquet"), stage_a.thetas,
                    progress=False, thetas_source="judge/tournament.parquet")
    attach_stage_a(cal, stage_a)
    return cal


def write_inputs(spec: SuiteSpec, source: SuiteSource, latents: dict[str, DemoLatent], out: Path,
                 *, seed: int = SEED) -> Path:
    """Write a synthetic judge run in the builder-input layout (release 1)."""
    from rcp_data.stages.calibration.pipeline import fitted_item_params

    rng = np.random.default_rng(seed + 7)
    out = Path(out)
    fs_parts: dict[str, list[pd.DataFrame]] = {r: [] for r in spec.pool.retrievers}
    verdict_rows, run_rows, pools = [], {}, []
    for name, lat in latents.items():
        sub = source.subsets[name]
        runs = {r: _first_stage(lat, rng, 0.8 + 0.3 * i, r)
                for i, r in enumerate(spec.pool.retrievers)}
        for r, frame in runs.items():
            fs_parts[r].append(frame)
        fused = rrf_fuse(pd.concat(runs.values(), ignore_index=True), spec.pool.retrievers,
                         k=spec.pool.rrf_k)
        excluded = {}
        if sub.excluded is not None:
            excluded = dict(zip(sub.excluded["query-id"],
                                map(set, sub.excluded["excluded-corpus-ids"]), strict=True))
        pool = build_pools(fused, sub.qrels, lat.queries, rule=spec.pool.rule,
                           size=spec.pool.size, grade_positive=spec.grade_positive,
                           excluded=excluded)
        doc_index = {d: i for i, d in enumerate(lat.docs)}
        q_index = {q: i for i, q in enumerate(lat.queries)}
        qi = pool["query-id"].map(q_index).to_numpy()
        di = pool["corpus-id"].map(doc_index).to_numpy()
        true = lat.relevance[qi, di]
        pools.append((pool, true))
        # Stage B: each document seen in 2-3 windows of up to 10 documents
        call = 0
        for q, grp in pool.groupby("query-id", sort=False):
            ids = grp["corpus-id"].tolist()
            th = dict(zip(ids, true[grp.index.to_numpy()], strict=True))
            for _placement in range(2 + int(rng.integers(0, 2))):
                order = rng.permutation(len(ids))
                for start in range(0, len(ids), 10):
                    for j in order[start:start + 10]:
                        p = expit(np.asarray(TRUE_PARAMS.gamma) * (th[ids[j]]
                                                                   - np.asarray(TRUE_PARAMS.beta)))
                        v = (rng.random(5) < p).astype(np.int8)
                        verdict_rows.append((q, call, ids[j], *v.tolist(), "stop"))
                    call += 1
        # rerankers: noisy views of the truth; the coarse one rounds (many ties)
        for m_i, model in enumerate(spec.rerankers.values()):
            score = true + rng.normal(0, 0.5 + 0.25 * m_i, size=len(pool))
            if "coarse" in model:
                score = np.round(score)
            frame = pd.DataFrame({"query-id": pool["query-id"], "corpus-id": pool["corpus-id"],
                                  "score": np.round(score, 6)})
            frame = frame.iloc[rng.permutation(len(frame))].sort_values("query-id", kind="stable")
            run_rows.setdefault(model, []).append(frame)
    crit = pd.DataFrame(verdict_rows, columns=["query-id", "call_index", "corpus-id",
                                               "C1", "C2", "C3", "C4", "C5", "finish_reason"])
    crit = crit.astype({f"C{i}": np.int8 for i in range(1, 6)} | {"call_index": np.int64})
    tournament = _judge_answers(pools, seed + 11)
    cal = calibrate_demo(tournament, crit, RELEASE_1_RULE)
    # the judge itself as a run: its calibrated theta (flagged is_judge)
    thetas = cal.thetas[["query-id", "corpus-id", "theta", "theta_bt"]]
    judge_run = thetas[["query-id", "corpus-id"]].assign(score=thetas["theta"].to_numpy())
    run_rows["rcp-data/synthetic-judge-7b:theta"] = [
        judge_run.iloc[rng.permutation(len(judge_run))].sort_values("query-id", kind="stable")]
    params = fitted_item_params(cal, note="SYNTHETIC demo item parameters (fitted from "
                                "SYNTHETIC answers)")
    columns = ["query-id", "corpus-id", "score", "rank"]
    write_builder_inputs(
        out, spec, judge=DEMO_JUDGE, params=params, thetas=thetas, criteria=crit,
        first_stage={r: pd.concat(parts, ignore_index=True)[columns]
                     for r, parts in fs_parts.items()},
        runs={m: pd.concat(parts, ignore_index=True) for m, parts in run_rows.items()},
        tournament=tournament)
    log.info("wrote SYNTHETIC demo builder inputs to %s", out)
    return out


def make_demo_release(out: Path, *, work: Path | None = None, seed: int = SEED) -> dict:
    """Build the demo's release 1 data into ``out`` (data, provenance, build manifest)."""
    spec = load_spec("demo")
    source, latents = make_sources(spec, seed)
    work = Path(work) if work else Path(out).parent / f".{Path(out).name}-inputs"
    write_inputs(spec, source, latents, work, seed=seed)
    inputs = read_inputs(work)
    return build_release(spec, source, inputs, Path(out), parameters={"synthetic": True})


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Source reader of the demo suite (``[source] read`` in builders/demo.toml)."""
    seed = int((options or {}).get("seed", SEED))
    return make_sources(spec, seed)[0]
