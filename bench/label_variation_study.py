"""On-demand benchmark of ``rcp-data agree --qrels`` at the size of Parry et al.'s study (not a
test).

GENERATED (SYNTHETIC) data written to a temp folder: ``--topics`` topics of ``--pool`` judged
documents, a primary assessor and ``--sets - 1`` secondary ones (two per topic, groups of topics
as in the study: each pair of assessors shares a block of topics), ``--runs`` TREC runs of
``--depth`` rows per topic. Timed from the files: the runs read once, then the whole analysis
(agreement once; ceilings, leaderboards and ``--draws`` label-variation draws for each of
four measures, ``--measures``: by default the study's nDCG@10, P@10, RR@10 and R@100). Prints wall seconds and the peak resident memory;
targets: under 30 s and 2 GiB.

    PYTHONPATH=src .venv/bin/python bench/label_variation_study.py [--draws 10000]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rcp_data.runs.qrels_runs import read_run
from rcp_data.scoring.agreement.plain import agree_files
from rcp_data.scoring.qrels_score import split_names

MEASURES = ("nDCG@10", "P(rel=2)@10", "RR(rel=2)@10", "R(rel=2)@100")
"""The study's four (its table's nDCG@10, P@10, MRR@10 and R@100, relevance at
grade 2 as TREC DL counts it)."""


def _write(root: Path, topics: int, sets: int, pool: int, runs: int, depth: int,
           seed: int) -> tuple[Path, dict[str, Path], list[Path]]:
    rng = np.random.default_rng(seed)
    grades = rng.choice(4, size=(topics, pool), p=[0.55, 0.2, 0.15, 0.1])
    lines = [f"q{t} 0 d{t}_{d} {grades[t, d]}\n" for t in range(topics) for d in range(pool)]
    primary = root / "primary.qrels"
    primary.write_text("".join(lines))
    n_sec = sets - 1
    blocks = np.array_split(np.arange(topics), max(1, n_sec // 2))
    labels = {}
    for a in range(n_sec):
        own = blocks[(a // 2) % len(blocks)]
        rows = []
        for t in own:
            g = np.where(rng.random(pool) < 0.6, grades[t], rng.integers(0, 4, size=pool))
            rows += [f"q{t} 0 d{t}_{d} {g[d]}\n" for d in range(pool)]
        labels[f"a{a + 1}"] = root / f"a{a + 1}.qrels"
        labels[f"a{a + 1}"].write_text("".join(rows))
    files = []
    for r in range(runs):
        path = root / f"run{r:02d}.trec"
        with path.open("w") as fh:
            for t in range(topics):
                s = np.sort(rng.random(depth))[::-1]
                docs = rng.permutation(max(depth, pool))[:depth]
                fh.writelines(f"q{t} Q0 d{t}_{d} {i + 1} {s[i]:.6f} r{r}\n"
                              for i, d in enumerate(docs))
        files.append(path)
    return primary, labels, files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=43)
    ap.add_argument("--sets", type=int, default=9, help="label sets, the primary included")
    ap.add_argument("--pool", type=int, default=1200)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--measures", default=",".join(MEASURES),
                    help="comma-separated ir-measures names (default: the study's four)")
    ap.add_argument("--profile", action="store_true",
                    help="cProfile the timed part (not the writing); top 25 to stderr")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        primary, labels, files = _write(Path(tmp), args.topics, args.sets, args.pool, args.runs,
                                        args.depth, args.seed)
        measures = [m.strip() for m in split_names(args.measures)]
        prof = cProfile.Profile() if args.profile else None
        if prof:
            prof.enable()
        start = time.perf_counter()
        cpu = time.process_time()
        read = {p.stem: read_run(p, str(p)) for p in files}
        t_read = time.perf_counter() - start
        t0 = time.perf_counter()
        res = agree_files(primary, labels, read, measure=measures, draws=args.draws,
                          seed=args.seed).to_json()
        for m, sys_ in res["systems_by_measure"].items():
            v = sys_["variation"]
            print(f"{m}: kendall mean {v['kendall']['mean']:.3f}, swap max "
                  f"{v['swap_max']:.3f}")
        print(f"analysis (agreement once, every measure): {time.perf_counter() - t0:.2f} s")
        total = time.perf_counter() - start
        cpu = time.process_time() - cpu
        if prof:
            prof.disable()
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumtime").print_stats(25)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"SYNTHETIC {args.topics} topics, {args.sets} label sets, {args.runs} runs x "
          f"{args.depth} rows, {args.draws} draws, {len(measures)} measures "
          f"({', '.join(measures)})")
    print(f"reading runs {t_read:.2f} s; TOTAL {total:.2f} s wall (target < 30), {cpu:.2f} s "
          f"CPU (this process, every thread); peak RSS {peak:.2f} GiB (target < 2)")


if __name__ == "__main__":
    main()
