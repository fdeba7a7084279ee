"""Benchmark: the MAP calibration fit at ViDoRe scale on SYNTHETIC verdicts.

On demand, not a test:

    .venv/bin/python bench/calibrate.py                    # 14,514 queries x 150 docs x 6.67
    .venv/bin/python bench/calibrate.py --queries 1000     # smaller
    .venv/bin/python bench/calibrate.py --device cuda      # the fit on a GPU (when one is lent)

Generates a SYNTHETIC verdict table from known 2PL parameters (``rcp_data.demo.simulate``:
per query 100 windows of 10 of its 150 documents, so 6.67 placements per document and 14.5M
verdict rows) and its Stage A theta table, writes both as parquet (not timed), then runs
``rcp-data calibrate`` in a child process and reports its wall time and peak RSS (the child's
own, from ``wait4``). Target: under 10 minutes and 8 GiB on 2 CPU cores.

Baseline, measured in the same run: one evaluation of the objective (Eq. 7) per verdict row, the
naive form, against one evaluation from the per-(document, criterion) counts the fit uses; the
ratio, and the naive fit time that ratio implies at the fit's number of evaluations. Also prints
the recovery errors against the true parameters.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from rcp_data.calibration.fit import MapArrays, negative_log_posterior
from rcp_data.demo.simulate import simulate_verdicts
from rcp_data.model.tables import write_parquet

TARGET_S = 600
TARGET_GIB = 8.0


def naive_objective(table, bt_row: np.ndarray, q_row: np.ndarray, arr: MapArrays) -> float:
    """Eq. 7 summed over every verdict row and criterion (the baseline)."""
    y = np.stack([table.column(f"C{c + 1}").to_numpy() for c in range(len(arr.gamma))], axis=1)
    theta = arr.tau[q_row] * bt_row + arr.alpha[q_row]
    z = arr.gamma * (theta[:, None] - arr.beta)
    bce = float((np.logaddexp(0.0, z) - y * z).sum())
    prior = ((arr.tau - 1) ** 2).sum() / 2 + (arr.alpha**2).sum() / 8
    u = np.log(arr.gamma / len(arr.gamma))
    u = u - u.mean()
    return (bce + prior) / y.size + 0.5e-4 * float((u**2).sum() + (arr.beta**2).sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=14_514)
    ap.add_argument("--docs", type=int, default=150)
    ap.add_argument("--windows", type=int, default=100)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--threads", type=int, default=2, help="CPU threads of the fit (default 2)")
    ap.add_argument("--work", type=Path, help="folder for the data (default: a temp folder)")
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-calibrate-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    table, thetas, sim = simulate_verdicts(args.queries, args.docs, args.windows, seed=7)
    pq.write_table(table, work / "criteria.parquet")
    write_parquet(thetas, work / "thetas.parquet")
    rows = table.num_rows
    print(f"SYNTHETIC verdicts: {args.queries:,} queries x {args.docs} docs, {rows:,} rows "
          f"({rows / (args.queries * args.docs):.2f} placements per doc); generated and written "
          f"in {time.perf_counter() - t0:.1f} s")

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, "-c", "import sys, torch; torch.set_num_threads(int(sys.argv[1])); "
           "from rcp_data.cli import main; sys.exit(main(sys.argv[2:]))", str(args.threads),
           "-q", "calibrate", "--criteria", str(work / "criteria.parquet"),
           "--thetas", str(work / "thetas.parquet"), "--out", str(work / "fit"),
           "--device", args.device, "--no-progress"]
    t1 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    fit_s = time.perf_counter() - t1
    if os.waitstatus_to_exitcode(status) != 0:
        print("calibrate failed", file=sys.stderr)
        return 1
    peak_gib = usage.ru_maxrss * 1024 / 2**30  # ru_maxrss is in KiB on Linux
    diag = json.loads((work / "fit" / "diagnostics.json").read_text())
    params = json.loads((work / "fit" / "item_params.json").read_text())
    queries = pd.read_parquet(work / "fit" / "queries.parquet").set_index("query-id")
    print(f"calibrate ({args.device}, {args.threads} threads): {fit_s:.1f} s wall "
          f"(fit alone {diag['fit']['seconds']:.1f} s, {diag['fit']['iterations']} iterations, "
          f"{diag['fit']['evaluations']} evaluations), peak RSS {peak_gib:.2f} GiB; "
          f"target < {TARGET_S} s and < {TARGET_GIB} GiB: "
          f"{'MET' if fit_s < TARGET_S and peak_gib < TARGET_GIB else 'MISSED'}")

    gamma, beta = np.asarray(params["gamma"]), np.asarray(params["beta"])
    names = [f"sq{j:06d}" for j in range(args.queries)]
    tau = queries.loc[names, "tau"].to_numpy()
    alpha = queries.loc[names, "alpha"].to_numpy()
    print(f"recovery: max |gamma err| {np.abs(gamma - sim.gamma).max():.4f}, max |beta err| "
          f"{np.abs(beta - sim.beta).max():.4f}, corr(tau) {np.corrcoef(tau, sim.tau)[0, 1]:.4f},"
          f" corr(alpha) {np.corrcoef(alpha, sim.alpha)[0, 1]:.4f}")

    # baseline: the objective per verdict row vs from the counts, same estimates
    arr = MapArrays(gamma, beta, tau, alpha, 0, 0, 0.0, True, 0.0, "cpu")
    q_row = sim.query_index[sim.row_doc]
    bt_row = sim.theta_bt[sim.row_doc]
    t2 = time.perf_counter()
    naive = naive_objective(table, bt_row, q_row, arr)
    naive_s = time.perf_counter() - t2
    t3 = time.perf_counter()
    agg = negative_log_posterior(arr, sim.query_index, sim.theta_bt, sim.n, sim.passes)
    agg_s = time.perf_counter() - t3
    evals = diag["fit"]["evaluations"]
    print(f"objective per row {naive_s:.2f} s vs from counts {agg_s:.2f} s per evaluation: "
          f"{naive_s / agg_s:.1f}x (values {naive:.10f} / {agg:.10f}); a per-row fit would "
          f"take ~{naive_s * evals:.0f} s of objective alone at {evals} evaluations")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
