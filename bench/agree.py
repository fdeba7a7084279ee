"""On-demand benchmark of ``rcp-data agree`` at ViDoRe scale (SYNTHETIC tables; not a test).

Part 1, the analysis: 14 runs x 14,514 queries x 150 candidates (2.2M pool pairs) laid out
like ViDoRe v3 (8 domains x 6 language subsets, the tables of ``bench/replay.py``), aligned as
agree aligns them, then per subset what agree computes on the release's own labels: the label
layer for three scores (concordance, AUC with its query x query pair matrix, pooled Spearman
with ceiling and floor) and the ranking layer (nDCG@10 under the labels, leaderboards,
t-tests, sensitivity, decisive pairs, failure modes, Kendall / Spearman / both RBOs), every
rate with 2,000 query-bootstrap resamples. Target: < 60 s. Baseline in the same run: the
bootstrap of one subset's sensitivity done the plain way (scipy ``ttest_rel`` on each
resample's repeated queries), scaled to all subsets.

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
from replay import POOL, make_tables
from scipy import stats

from rcp_data.scoring.agreement import rankings as rk
from rcp_data.scoring.agreement.analysis import (
    _candidates,
    _label_layer,
    _ranking_layer,
    qrel_values,
)
from rcp_data.scoring.agreement.bootstrap import query_weights
from rcp_data.scoring.agreement.variation import label_variation
from rcp_data.scoring.metrics import ideal_dcg, ndcg_at_k_rules
from rcp_data.scoring.replay import build_split_runs


def analysis(tables: dict, resamples: int) -> tuple[float, float, list]:
    """Seconds to align, seconds of the statistics, and the first subset (for the baseline)."""
    t0 = time.perf_counter()
    built = {}
    for _dom, (subsets, runs) in tables.items():
        built.update(build_split_runs(subsets, runs))
    t_align = time.perf_counter() - t0
    t0 = time.perf_counter()
    first = None
    for i, (_name, sub) in enumerate(built.items()):
        cand = _candidates(sub)
        rng = np.random.default_rng(i)
        graded = cand.assign(grade=sub.gains[1])
        theta = np.log(sub.gains[0] + 1e-3)
        scores = {"rcp_theta": cand[["query-id", "corpus-id"]].assign(value=theta),
                  "raw_bt": cand[["query-id", "corpus-id"]].assign(
                      value=theta + rng.normal(0, 0.5, len(theta))),
                  "count": cand[["query-id", "corpus-id"]].assign(
                      value=np.round(sub.gains[0] * 5) / 5)}
        w = query_weights(sub.n_queries, resamples=resamples, seed=i)
        _label_layer(graded, scores, cand, sub.n_queries, w, 1, i)
        ideal = ideal_dcg(sub.ideal_offsets, sub.ideal_gains[0], 10)
        rcp = ndcg_at_k_rules(sub.offsets, sub.scores, sub.gains[0], ideal, k=10,
                              tie_rules=["group-mean"])["group-mean"].T
        values = {"rcp": rcp, "qrels": qrel_values(sub, rule="group-mean")}
        _ranking_layer(values, list(sub.models), "qrels", w, 0.9)
        if first is None:
            first = (values["qrels"], w)
    return t_align, time.perf_counter() - t0, [first, len(built)]


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
    cpu0 = time.process_time()
    t_align, t_stats, (first, n_subsets) = analysis(tables, args.resamples)
    cpu = time.process_time() - cpu0
    total = t_align + t_stats
    full = args.queries >= 14514
    verdict = ("met" if total < 60 else "MISSED") if full else \
        f"not judged: reduced scale {pairs / 2.18e6:.2f}x"
    print(f"agree: align {t_align:.1f} s + statistics {t_stats:.1f} s = {total:.1f} s "
          f"(target < 60 s at 2.2M pairs: {verdict}); CPU {cpu:.1f} s, load average "
          f"{os.getloadavg()[0]:.1f} (on a shared machine the CPU time is the unloaded cost)")
    values, w = first
    t_plain = plain_sensitivity(values, w, args.baseline_resamples)
    scaled = t_plain * args.resamples / args.baseline_resamples * n_subsets
    print(f"baseline: sensitivity bootstrap with scipy ttest_rel per resample, "
          f"{args.baseline_resamples} resamples of one subset in {t_plain:.2f} s -> "
          f"{scaled:.0f} s for {args.resamples} x {n_subsets} subsets (that one statistic alone)")
    t_var, t_var_plain, n = variation(args.draws)
    print(f"label variation: {args.draws:,} draws, 43 topics x 14 systems x 3 assessors: "
          f"{t_var:.2f} s (target < 10 s: {'met' if t_var < 10 else 'MISSED'}); plain loop "
          f"({n} draws, scaled): {t_var_plain:.1f} s; ratio {t_var_plain / t_var:.0f}x")


if __name__ == "__main__":
    main()
