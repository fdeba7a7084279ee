"""On-demand benchmark of ``rcp-data score --qrels`` against pytrec_eval, whole processes
(not a test).

SYNTHETIC runs in NIST's format, generated from the real DL19 passage qrels: ``--runs`` gzip
files, TAB separated, ``--queries`` queries (the qrels' DL19 ids, then made-up ids the qrels
lack) x ``--depth`` rows each, judged and unjudged documents, scores rounded so that long ties
form, ranks from 0, the run's tag in column 6; written once to a temp folder.

Each side is a whole process, started as a user starts it, timed from start to exit:

- rcp-data: ``python -m rcp_data score --qrels QRELS RUN1.gz ... --measure nDCG@10,
  P(rel=2)@10,RR(rel=2)@10,R(rel=2)@100,AP(rel=2) --format tsv``;
- pytrec_eval: one Python process that reads the same ``.gz`` files with ``gzip``, parses
  them with ``pytrec_eval.parse_qrel`` / ``parse_run`` and evaluates ``ndcg_cut_10``,
  ``P_10`` / ``recip_rank`` / ``recall_100`` / ``map`` at ``relevance_level=2`` (RR@10 from
  a run cut to each query's 10 best, as ir_measures does).

Rounds alternate (pytrec_eval, then rcp-data) ``--repeat`` times; the best wall of each side
counts. Peak RSS is each child's own (``os.wait4``). The last line, ``RATIO``, is the issue's
number (targets: >= 4x pytrec_eval's wall, rcp-data's peak RSS <= 200 MB). Means of both sides
are compared (largest difference printed, must be <= 1e-9). About a minute at the defaults.

    PYTHONPATH=src .venv/bin/python bench/score_qrels.py [--runs 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

QRELS = Path(__file__).resolve().parents[1] / "../shared/data/trec-dl/qrels.dl19-passage.txt"
MEASURES = "nDCG@10,P(rel=2)@10,RR(rel=2)@10,R(rel=2)@100,AP(rel=2)"

PYTREC_SCRIPT = r"""
import gzip, json, sys
import pytrec_eval

qrels_path, runs = sys.argv[1], sys.argv[2:]
with open(qrels_path) as fh:
    qrel = pytrec_eval.parse_qrel(fh)
ev1 = pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut_10"})
ev2 = pytrec_eval.RelevanceEvaluator(qrel, {"P_10", "recall_100", "map"}, relevance_level=2)
ev3 = pytrec_eval.RelevanceEvaluator(qrel, {"recip_rank"}, relevance_level=2)
queries = [q for q, d in qrel.items() if any(g > 0 for g in d.values())]
out = {}
for path in runs:
    with gzip.open(path, "rt") as fh:
        run = pytrec_eval.parse_run(fh)
    top10 = {q: dict(sorted(d.items(), key=lambda x: (x[1], x[0]), reverse=True)[:10])
             for q, d in run.items()}
    a, b, c = ev1.evaluate(run), ev2.evaluate(run), ev3.evaluate(top10)
    def mean(res, key):
        return sum(res[q][key] if q in res else 0.0 for q in queries) / len(queries)
    out[path] = [mean(a, "ndcg_cut_10"), mean(b, "P_10"), mean(c, "recip_rank"),
                 mean(b, "recall_100"), mean(b, "map")]
json.dump(out, sys.stdout)
"""


def write_runs(qrels: Path, folder: Path, n_runs: int, n_queries: int, depth: int,
               seed: int = 0) -> list[Path]:
    """SYNTHETIC NIST-format runs (gzip, tabs, 0-based ranks, ties, tag in column 6)."""
    rng = np.random.default_rng(seed)
    by_q: dict[str, list[str]] = {}
    for line in qrels.read_text().splitlines():
        q, _, d, _ = line.split()
        by_q.setdefault(q, []).append(d)
    real = sorted(by_q)
    queries = real + [f"9{i:06d}" for i in range(max(0, n_queries - len(real)))]
    paths = []
    for r in range(n_runs):
        lines = []
        tag = f"synthetic-run-{r}"
        for q in queries[:n_queries]:
            judged = np.asarray(by_q.get(q, []), dtype=object)
            take = rng.choice(judged, size=min(len(judged), depth // 3), replace=False) \
                if len(judged) else judged
            extra = [f"{9000000 + i + 1000 * (r % 3)}" for i in range(depth - len(take))]
            docs = np.concatenate([take, np.asarray(extra, dtype=object)])
            scores = np.round(rng.normal(size=len(docs)), 1)      # long ties
            order = np.argsort(-scores, kind="stable")
            lines += [f"{q}\tQ0\t{docs[i]}\t{rank}\t{float(scores[i]):.4f}\t{tag}\n"
                      for rank, i in enumerate(order)]
        path = folder / f"dl-19-official-input.synthetic{r}.gz"
        with gzip.open(path, "wt", compresslevel=6) as fh:
            fh.write("".join(lines))
        paths.append(path)
    return paths


def child(cmd: list[str], env: dict) -> tuple[float, int, str]:
    """Run ``cmd``; its wall seconds, its peak RSS (bytes) and its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}):\n{err.decode()[-2000:]}")
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return wall, rss, out.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--qrels", type=Path, default=QRELS)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        runs = write_runs(args.qrels, Path(tmp), args.runs, args.queries, args.depth)
        script = Path(tmp) / "pytrec_side.py"
        script.write_text(PYTREC_SCRIPT)
        ours_cmd = [sys.executable, "-m", "rcp_data", "score", "--qrels", str(args.qrels),
                    *map(str, runs), "--measure", MEASURES, "--format", "tsv"]
        base_cmd = [sys.executable, str(script), str(args.qrels), *map(str, runs)]
        rounds = []
        for _ in range(max(1, args.repeat)):
            tb, rb, ob = child(base_cmd, env)
            to, ro, oo = child(ours_cmd, env)
            rounds.append((tb, rb, to, ro))
    base = json.loads(ob)
    means = {}
    for line in oo.splitlines()[1:]:
        run, measure, query, value = line.split("\t")
        means.setdefault(run, {})[measure] = float(value)
    tags = [f"synthetic-run-{r}" for r in range(args.runs)]
    diff = max(abs(means[t][m] - v) for t, (_, vals) in zip(tags, base.items(), strict=True)
               for m, v in zip(MEASURES.split(","), vals, strict=True))
    t_base, t_ours = min(r[0] for r in rounds), min(r[2] for r in rounds)
    rss_base, rss_ours = max(r[1] for r in rounds), max(r[3] for r in rounds)
    print(f"{args.runs} SYNTHETIC NIST-format runs (gzip, tabs) x {args.queries} queries x "
          f"{args.depth} rows, DL19 qrels; measures {MEASURES}; load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("  rounds (wall s, pytrec_eval / rcp-data): " +
          ", ".join(f"{r[0]:.2f}/{r[2]:.2f}" for r in rounds))
    print(f"  pytrec_eval script: best {t_base:.2f} s, peak RSS {rss_base / 2**20:.0f} MB")
    print(f"  rcp-data score:     best {t_ours:.2f} s, peak RSS {rss_ours / 2**20:.0f} MB "
          f"(target <= 200 MB)")
    print(f"  largest difference of the means: {diff:.3g} (must be <= 1e-9)")
    print(f"RATIO rcp-data score --qrels vs pytrec_eval, whole processes, files to five "
          f"measures: {t_base / t_ours:.2f}x wall (best of {len(rounds)}; target >= 4x)")


if __name__ == "__main__":
    main()
