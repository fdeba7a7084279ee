"""On-demand benchmark of ``rcp-data agree`` at ViDoRe scale (SYNTHETIC tables; not a test).

Part 1, the analysis: 14 runs x 14,514 queries x 150 candidates (2.2M pool pairs) laid out
like ViDoRe v3 (8 domains x 6 language subsets, the tables of ``bench/replay.py``), aligned as
agree aligns them, then per subset what agree computes on the release's own labels
(``analysis.subset_stats``, the function ``agree`` runs per subset, then ``_pooled``): the label
layer for three scores (concordance, AUC with its query x query pair matrix, pooled Spearman
with ceiling and floor) and the ranking layer (nDCG@10 under the labels, leaderboards,
t-tests, sensitivity, decisive pairs, failure modes, Kendall / Spearman / both RBOs), every
rate with 2,000 query-bootstrap resamples, BLAS on one thread as ``agree`` runs it. Target:
< 60 s on 2 cores, and <= 30 s CPU (process time: what the run costs on a loaded machine).
One line gives the total wall and CPU time and each stage's: ``align`` (the runs and qrels
into per-subset arrays, as ``load_release`` builds them), ``inputs`` (candidates and the
SYNTHETIC scores) and ``statistics`` (``subset_stats`` of every subset and ``_pooled``).
Baseline in the same run: the bootstrap of one subset's sensitivity done the plain way (scipy
``ttest_rel`` on each resample's repeated queries), scaled to all subsets.

Part 2, label variation: 10,000 draws over 43 topics x 14 systems x 3 assessors. Target:
< 10 s. Baseline: a plain loop (scipy ``kendalltau`` / ``spearmanr``, the ``rbo`` package) over
a few hundred draws, scaled to 10,000.

    .venv/bin/python bench/agree.py [--queries 14514] [--models 14] [--resamples 2000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd
from replay import POOL, make_tables
from scipy import stats

from rcp_data.scoring.agreement import analysis as an
from rcp_data.scoring.agreement import rankings as rk
from rcp_data.scoring.agreement.bootstrap import query_weights
from rcp_data.scoring.agreement.labelsets import RELEASE_LABELS, LabelSet
from rcp_data.scoring.agreement.variation import DRAWS, label_variation
from rcp_data.scoring.replay import build_split_runs


def _inputs(sub, qrels, i: int) -> tuple:
    """SYNTHETIC scores for the three score kinds and the subset's own label set."""
    cand = an._candidates(sub)
    rng = np.random.default_rng(i)
    theta = np.log(sub.gains[0] + 1e-3)
    ids = cand[["query-id", "corpus-id"]]
    scores = {"rcp_theta": ids.assign(value=theta),
              "raw_bt": ids.assign(value=theta + rng.normal(0, 0.5, len(theta))),
              "count": ids.assign(value=np.round(sub.gains[0] * 5) / 5)}
    own = LabelSet(RELEASE_LABELS, "<qrels>", pd.DataFrame({
        "query-id": qrels.column("query-id").to_numpy(zero_copy_only=False),
        "corpus-id": qrels.column("corpus-id").to_numpy(zero_copy_only=False),
        "grade": qrels.column("score").to_numpy().astype(np.float64)}))
    return cand, scores, own


def analysis(tables: dict, resamples: int) -> dict:
    """Per stage, (wall, CPU) seconds of agree's analysis on every subset, and the first
    subset's qrel values and weights (for the baseline)."""
    clock = {"align": [0.0, 0.0], "inputs": [0.0, 0.0], "statistics": [0.0, 0.0]}

    def tick(stage: str, since: tuple[float, float]) -> tuple[float, float]:
        now = (time.perf_counter(), time.process_time())
        clock[stage][0] += now[0] - since[0]
        clock[stage][1] += now[1] - since[1]
        return now

    t = (time.perf_counter(), time.process_time())
    built, qrels = {}, {}
    for _dom, (subsets, runs) in tables.items():
        built.update(build_split_runs(subsets, runs))
        qrels.update({s: v[0] for s, v in subsets.items()})
    t = tick("align", t)
    parts, first = [], None
    for i, (name, sub) in enumerate(built.items()):
        cand, scores, own = _inputs(sub, qrels[name], i)
        t = tick("inputs", t)
        out, part = an.subset_stats(sub, cand, scores, [own], [], RELEASE_LABELS, excluded=None,
                                    positive=1, k=10, rule="group-mean", gain="linear", thr=1,
                                    p=0.9, seed=i, resamples=resamples, draws=DRAWS)
        parts.append(part)
        t = tick("statistics", t)
        if first is None:
            first = (an.qrel_values(sub, rule="group-mean"),
                     query_weights(sub.n_queries, resamples=resamples, seed=i))
            t = (time.perf_counter(), time.process_time())          # the baseline's, untimed
    an._pooled(parts, resamples, 0)
    tick("statistics", t)
    return {"clock": clock, "first": first, "subsets": len(built)}


def plain_sensitivity(values: np.ndarray, weights: np.ndarray, n: int) -> float:
    """Seconds for ``n`` resamples of one subset's sensitivity, the plain way."""
    keep = rk.kept(values)
    idx = rk.pair_index(values.shape[1])
    t0 = time.perf_counter()
    for b in range(n):
        rows = np.repeat(np.flatnonzero(keep), weights[b, keep].astype(int))
        v = values[rows]
        np.mean([stats.ttest_rel(v[:, i], v[:, j]).pvalue < 0.05 for i, j in idx])
    return time.perf_counter() - t0


def variation(draws: int) -> tuple[float, float, int]:
    rng = np.random.default_rng(0)
    base = rng.random((14, 43)) + np.linspace(0, 0.3, 14)[:, None]
    values = np.stack([base, base + rng.normal(0, 0.1, base.shape),
                       base + rng.normal(0, 0.2, base.shape)])
    ref = values[0].mean(axis=1)
    t0 = time.perf_counter()
    label_variation(values, ref, draws=draws)
    t_ours = time.perf_counter() - t0
    import rbo

    n = 300
    t0 = time.perf_counter()
    for _ in range(n):
        who = rng.integers(0, 3, 43)
        board = values[who, :, np.arange(43)].mean(axis=0)
        stats.kendalltau(board, ref)
        stats.spearmanr(board, ref)
        rbo.RankingSimilarity(list(np.argsort(-board)), list(np.argsort(-ref))).rbo(p=0.9)
    return t_ours, (time.perf_counter() - t0) * draws / n, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=14514)
    ap.add_argument("--models", type=int, default=14)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--baseline-resamples", type=int, default=100)
    args = ap.parse_args()
    tables = make_tables(args.queries, args.models)
    pairs = args.queries * POOL
    print(f"SYNTHETIC tables: {args.models} runs x {args.queries} queries x {POOL} candidates "
          f"= {pairs:,} pool pairs; {args.resamples} bootstrap resamples")
    with an.one_blas_thread():                       # as agree runs it
        res = analysis(tables, args.resamples)
    clock = res["clock"]
    wall = sum(v[0] for v in clock.values())
    cpu = sum(v[1] for v in clock.values())
    full = args.queries >= 14514
    if full:
        verdict = (f"< 60 s wall {'met' if wall < 60 else 'MISSED'}, <= 30 s CPU "
                   f"{'met' if cpu <= 30 else 'MISSED'}")
    else:
        verdict = f"targets not judged: reduced scale {pairs / 2.18e6:.2f}x"
    stages = ", ".join(f"{k} {v[0]:.1f} / {v[1]:.1f}" for k, v in clock.items())
    print(f"agree: total {wall:.1f} s wall, {cpu:.1f} s CPU ({verdict}); stages, wall / CPU "
          f"s: {stages}; load average {os.getloadavg()[0]:.1f}")
    values, w = res["first"]
    t_plain = plain_sensitivity(values, w, args.baseline_resamples)
    scaled = t_plain * args.resamples / args.baseline_resamples * res["subsets"]
    print(f"baseline: sensitivity bootstrap with scipy ttest_rel per resample, "
          f"{args.baseline_resamples} resamples of one subset in {t_plain:.2f} s -> "
          f"{scaled:.0f} s for {args.resamples} x {res['subsets']} subsets (that one statistic "
          f"alone)")
    t_var, t_var_plain, n = variation(args.draws)
    print(f"label variation: {args.draws:,} draws, 43 topics x 14 systems x 3 assessors: "
          f"{t_var:.2f} s (target < 10 s: {'met' if t_var < 10 else 'MISSED'}); plain loop "
          f"({n} draws, scaled): {t_var_plain:.1f} s; ratio {t_var_plain / t_var:.0f}x")


if __name__ == "__main__":
    main()
