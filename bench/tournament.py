"""Benchmark: the Stage A Bradley-Terry fit at ViDoRe scale on a SYNTHETIC tournament.

On demand, not a test:

    .venv/bin/python bench/tournament.py                  # 14,514 queries x 150 docs, 3,122,771 windows
    .venv/bin/python bench/tournament.py --queries 1000   # smaller (windows scale with it)
    .venv/bin/python bench/tournament.py --device cuda    # the fit on a GPU (when one is lent)

Generates a SYNTHETIC tournament table (``rcp_data.demo.schedule``: per query 40
random and 40 stratified windows of 10, each shown twice reversed, then 7 adaptive batches of
8; the estimate between phases is the mean score, the cheap stand-in at this scale; 0.5% of
the answers unreadable, 0.5% cut off), trimmed to the ViDoRe count of windows (215.16 per
query: 3,122,771 windows, 140M soft pairs), and writes it as parquet (not timed). Then, in a
child process whose wall time and peak RSS (``wait4``) are reported: read the table, check it,
apply the reading rule ``complete``, fit every query, write theta_bt. Target: under 3 minutes
and 8 GiB on 2 CPU cores.

Measured (2026-11-30, the full default run, `--sample 20`, on an idle machine, 2 CPU cores, load
average 1.2-1.4): 139.1M observations -> 43.9M distinct pairs; every query converged (at most 29
iterations, 30 evaluations); 113.8 s wall, 137.4 s CPU, peak RSS 3.90 GiB: target MET. The naive
fit: 99 ms per query, ~1,442 s for all (12.7x the batched fit's wall time, reading included);
largest theta_bt difference on the sample 5.19e-7; recovery: median per-query Spearman 0.9916.
(Earlier, on the same machine shared with other work at load 6.6-7.5: 384 s wall, 148 s CPU.)

Baseline, in the same run: a naive fit, query by query (observations from the rows with Python
loops, then ``scipy.optimize.minimize(method="L-BFGS-B")`` on the same objective), timed on a
sample of queries and extrapolated to all; the ratio, and the largest difference of the two
fits' theta_bt on the sample. Also the recovery of the true scores (Spearman per query).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from scipy.optimize import minimize
from scipy.special import expit

from rcp_data.demo.schedule import ScheduleSettings, simulate_tournament

TARGET_S = 180
TARGET_GIB = 8.0
VIDORE_QUERIES = 14_514
VIDORE_WINDOWS = 3_122_771
SCHEDULE = ScheduleSettings(window=10, random_windows=40, stratified_windows=40, batches=7,
                            batch_windows=8, judge_noise=0.6, unreadable=0.005, partial=0.005,
                            estimator="mean-score")
CHILD = """
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
from rcp_data.model.tables import write_parquet
from rcp_data.calibration.pipeline import stage_a_thetas
t0 = time.perf_counter()
fit = stage_a_thetas(sys.argv[2], rule="complete", device=sys.argv[4])
write_parquet(fit.thetas, __import__("pathlib").Path(sys.argv[3]))
f = fit.summary["fit"]
print(f"child: read+rule+pairs {f['seconds_read']:.1f} s, fit {f['seconds_fit']:.1f} s "
      f"({f['evaluations']} evaluations, iterations max {f['iterations_max']}, median "
      f"{f['iterations_median']:.0f}), converged {f['converged_queries']:,} of "
      f"{fit.summary['queries']:,}; {fit.summary['distinct_pairs']:,} distinct pairs of "
      f"{fit.summary['observations']:,} observations; total {time.perf_counter() - t0:.1f} s")
"""


def generate(n_queries: int, n_docs: int, windows: int, path: Path, seed: int) -> np.ndarray:
    """Write the SYNTHETIC table (chunks of queries); return the true relevance (Q, D)."""
    rng = np.random.default_rng(seed)
    rel = rng.normal(0.0, 1.5, (n_queries, n_docs))
    per_query = 2 * (SCHEDULE.random_windows + SCHEDULE.stratified_windows) + (
        SCHEDULE.batches * SCHEDULE.batch_windows)
    drop = n_queries * per_query - windows  # queries that lose their last adaptive window
    if not 0 <= drop <= n_queries:
        raise SystemExit(f"cannot make {windows:,} windows from {per_query} per query")
    dropped = set(rng.choice(n_queries, size=drop, replace=False).tolist())
    writer = None
    chunk = 1500
    for q0 in range(0, n_queries, chunk):
        q1 = min(n_queries, q0 + chunk)
        qids = [f"sq{j:06d}" for j in range(q0, q1)]
        table = simulate_tournament(qids, [[f"sq{j:06d}-d{i:03d}" for i in range(n_docs)]
                                           for j in range(q0, q1)],
                                    list(rel[q0:q1]), settings=SCHEDULE, seed=seed + q0)
        last = table.column("call_index").to_numpy() == per_query - 1
        qcol = table.column("query-id").combine_chunks()
        qnum = np.asarray(qcol.indices) + q0
        cut = last & np.isin(qnum, list(dropped))
        table = table.filter(pa.array(~cut))
        table = table.cast(pa.schema([(f.name, f.type.value_type if pa.types.is_dictionary(
            f.type) else f.type) for f in table.schema]))
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="zstd")
        writer.write_table(table, row_group_size=1 << 20)
    writer.close()
    return rel


def naive_fit(frame: pd.DataFrame) -> tuple[dict, float]:
    """One query: observations from its rows, then scipy's L-BFGS-B (the baseline)."""
    t0 = time.perf_counter()
    docs = sorted(frame["corpus-id"].unique())
    index = {d: i for i, d in enumerate(docs)}
    win, lose, label, weight = [], [], [], []
    for _, w in frame.groupby("call_index", sort=False):
        w = w.sort_values("position")
        s = w["score"].to_numpy(dtype=float)
        r = w["judge_rank"].to_numpy(dtype=float)
        ids = [index[d] for d in w["corpus-id"]]
        if not (np.isfinite(s).all() and (np.abs(s) <= 5).all() and np.isfinite(r).all()):
            continue  # rule complete
        n = len(ids)
        for i in range(n):
            for j in range(i + 1, n):
                a, b = (ids[i], ids[j]) if s[i] >= s[j] else (ids[j], ids[i])
                win.append(a)
                lose.append(b)
                label.append(min(max(expit(abs(s[i] - s[j])), 0.01), 0.99))
                weight.append(2.0 / n)
    win, lose = np.array(win), np.array(lose)
    y, wt = np.array(label), np.array(weight)
    total = wt.sum()

    def objective(theta):
        d = theta[win] - theta[lose]
        value = (wt * (np.logaddexp(0, d) - y * d)).sum() / total + 0.5e-4 * theta @ theta
        g = wt * (expit(d) - y) / total
        grad = np.bincount(win, g, len(docs)) - np.bincount(lose, g, len(docs)) + 1e-4 * theta
        return value, grad

    res = minimize(objective, np.zeros(len(docs)), jac=True, method="L-BFGS-B",
                   options={"maxiter": 250, "gtol": 1e-10, "ftol": 1e-15})
    theta = res.x - res.x.mean()
    return dict(zip(docs, theta, strict=True)), time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=VIDORE_QUERIES)
    ap.add_argument("--docs", type=int, default=150)
    ap.add_argument("--windows", type=int, help="windows in all (default: ViDoRe's 215.16 per "
                    "query)")
    ap.add_argument("--sample", type=int, default=30, help="queries of the naive baseline")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--threads", type=int, default=2, help="CPU threads of the fit (default 2)")
    ap.add_argument("--work", type=Path, help="folder for the data (default: a temp folder)")
    args = ap.parse_args()
    windows = args.windows or round(VIDORE_WINDOWS * args.queries / VIDORE_QUERIES)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-tournament-"))
    work.mkdir(parents=True, exist_ok=True)
    table_path = work / "tournament.parquet"
    t0 = time.perf_counter()
    rel = generate(args.queries, args.docs, windows, table_path, seed=17)
    meta = pq.read_metadata(table_path)
    print(f"SYNTHETIC tournament: {args.queries:,} queries x {args.docs} docs, "
          f"{meta.num_rows // 10:,} windows, {meta.num_rows:,} rows, "
          f"{meta.num_rows // 10 * 45:,} pairs; generated and written in "
          f"{time.perf_counter() - t0:.0f} s ({table_path.stat().st_size / 2**20:.0f} MiB)")

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    out = work / "theta_bt.parquet"
    t1 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(args.threads), str(table_path),
                             str(out), args.device], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    fit_s = time.perf_counter() - t1
    if os.waitstatus_to_exitcode(status) != 0:
        print("the Stage A fit failed", file=sys.stderr)
        return 1
    peak_gib = usage.ru_maxrss * 1024 / 2**30  # ru_maxrss is in KiB on Linux
    cpu_s = usage.ru_utime + usage.ru_stime
    print(f"Stage A ({args.device}, {args.threads} threads): {fit_s:.1f} s wall, "
          f"{cpu_s:.1f} s CPU (user + system; on a machine shared with other work the wall "
          f"time is longer than the CPU time over the threads), peak RSS {peak_gib:.2f} GiB; "
          f"target < {TARGET_S} s and < {TARGET_GIB} GiB: "
          f"{'MET' if fit_s < TARGET_S and peak_gib < TARGET_GIB else 'MISSED'}")
    with open("/proc/loadavg") as fh:
        print(f"load average during the run (1, 5, 15 min): {' '.join(fh.read().split()[:3])} "
              f"on {os.cpu_count()} CPUs")

    thetas = pd.read_parquet(out)
    by_query = {q: g for q, g in thetas.groupby("query-id", sort=False)}
    rho = []
    for j in range(0, args.queries, max(1, args.queries // 2000)):
        g = by_query[f"sq{j:06d}"]
        truth = rel[j, g["corpus-id"].str[-3:].astype(int).to_numpy()]
        rho.append(pd.Series(g["theta_bt"].to_numpy()).corr(pd.Series(truth), method="spearman"))
    print(f"recovery: median per-query Spearman vs the truth {np.median(rho):.4f} "
          f"(min {np.min(rho):.4f}, {len(rho)} queries)")

    sample = [f"sq{j:06d}" for j in np.linspace(0, args.queries - 1, args.sample, dtype=int)]
    rows = pq.read_table(table_path, filters=[("query-id", "in", sample)]).to_pandas()
    naive_s, worst = 0.0, 0.0
    for q, frame in rows.groupby("query-id"):
        ref, sec = naive_fit(frame)
        naive_s += sec
        ours = by_query[q]
        worst = max(worst, float(np.abs(ours["theta_bt"].to_numpy()
                                        - ours["corpus-id"].map(ref).to_numpy()).max()))
    per_query = naive_s / len(sample)
    naive_all = per_query * args.queries
    print(f"naive per-query scipy fit: {per_query * 1000:.0f} ms per query on {len(sample)} "
          f"queries -> ~{naive_all:.0f} s for all {args.queries:,}; the batched fit is "
          f"{naive_all / fit_s:.1f}x faster (wall, reading included); max |theta_bt diff| on "
          f"the sample {worst:.2e}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
