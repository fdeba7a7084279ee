"""On-demand benchmark of ``rcp-data score --qrels`` against pytrec_eval (not a test).

GENERATED runs on the real DL19 passage qrels: ``--runs`` TREC run files of ``--depth``
documents per query (judged and unjudged documents, scores rounded so that many tie, one query
missing), written once to a temp folder. Both sides are timed from the files to per-query
nDCG@10 (linear gain, trec_eval's doc-id ties), file reading included:

- baseline: ``pytrec_eval.parse_qrel`` / ``parse_run`` and ``RelevanceEvaluator(...,
  {"ndcg_cut_10"}).evaluate`` per run (queries the run misses count 0, as ``trec_eval -c``);
- ``rcp_data.score_qrels(qrels, runs)`` (its run reader compiled: ``_run_scan``, built at
  install; the bench says which reader it timed).

The whole jobs are timed ``--repeat`` times a side, alternating: each round times pytrec_eval
and then rcp-data, back to back, so that the machine's speed (which drifts from minute to minute
on a shared host) is nearly the same for both sides of a round's ratio. The issue's number is
the median of the rounds' ratios; the fastest run of each side and their ratio are printed too.
Modules are imported before the clock starts; the pair comparisons that ``score`` adds for two
runs or more (no part of pytrec_eval's work) are left out (``compare=False``). Each timing gives
wall and CPU seconds (CPU: every thread of the process; ``score_qrels`` reads runs in up to
two threads). Besides the whole (files to nDCG), it times each side's two halves apart:

- reading: ``pytrec_eval.parse_run`` of every file, against ``qrels_runs.read_run`` (split on
  the bytes, ranks and scores parsed, blocks of queries, repeats checked);
- computing: ``evaluate`` of the parsed runs (with the qrels' parse and the evaluator), against
  ``score_qrels`` of the read runs (the qrels read before the clock, indexed inside it);

and three floors of any reader of the same bytes: a bare ``read_bytes`` of every file, that
plus one NumPy pass finding the fields' separators (``flatnonzero(bytes <= 32)``), the least a
NumPy reader does, and ``pyarrow.csv`` parsing three columns (one thread per file, two files at
a time), the least a library parser does. The last line, ``RATIO``, is the issue's number
(target >= 20x, the median of the rounds); the lines above it give the two halves' ratios,
each round's ratio and the fastest against the fastest, and the
largest per-query difference (both the whole and the halves, against pytrec_eval) must be
<= 1e-12. About 2 minutes at the default scale.

    PYTHONPATH=src .venv/bin/python bench/score_qrels.py [--runs 100] [--depth 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

QRELS = Path(__file__).resolve().parents[1] / "../shared/data/trec-dl/qrels.dl19-passage.txt"


def write_runs(qrels: Path, folder: Path, n_runs: int, depth: int, seed: int = 0) -> list[Path]:
    """GENERATED TREC runs over the qrels' queries (the first query missing from every run)."""
    rng = np.random.default_rng(seed)
    by_q: dict[str, list[str]] = {}
    for line in qrels.read_text().splitlines():
        q, _, d, _ = line.split()
        by_q.setdefault(q, []).append(d)
    queries = sorted(by_q)[1:]
    paths = []
    for r in range(n_runs):
        lines = []
        for q in queries:
            judged = np.asarray(by_q[q])
            take = rng.choice(judged, size=min(len(judged), depth // 2), replace=False)
            extra = [f"u{q}-{i}" for i in range(depth - len(take))]
            docs = np.concatenate([take, extra])
            scores = np.round(rng.normal(size=len(docs)), 2)
            order = np.argsort(-scores, kind="stable")
            lines += [f"{q} Q0 {docs[i]} {rank + 1} {float(scores[i])!r} run{r}\n"
                      for rank, i in enumerate(order)]
        path = folder / f"run{r:03d}.txt"
        path.write_text("".join(lines))
        paths.append(path)
    return paths


def pytrec_parse(runs: list[Path]) -> list[dict]:
    import pytrec_eval

    out = []
    for path in runs:
        with path.open() as fh:
            out.append(pytrec_eval.parse_run(fh))
    return out


def pytrec_evaluate(qrels: Path, runs: list[Path], parsed: list[dict]
                    ) -> dict[str, dict[str, float]]:
    import pytrec_eval

    with qrels.open() as fh:
        qrel = pytrec_eval.parse_qrel(fh)
    evaluator = pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut_10"})
    scored = [q for q, docs in qrel.items() if any(g > 0 for g in docs.values())]
    out = {}
    for path, run in zip(runs, parsed, strict=True):
        res = evaluator.evaluate(run)
        out[path.stem] = {q: res[q]["ndcg_cut_10"] if q in res else 0.0 for q in scored}
    return out


def with_pytrec_eval(qrels: Path, runs: list[Path]) -> dict[str, dict[str, float]]:
    return pytrec_evaluate(qrels, runs, pytrec_parse(runs))


def rcp_read(runs: list[Path]) -> dict:
    from rcp_data.runs.qrels_runs import read_run

    return {path.stem: read_run(path, str(path)) for path in runs}


def with_rcp_data(qrels, runs) -> dict[str, dict[str, float]]:
    from rcp_data.scoring.qrels_score import score_qrels

    res = score_qrels(qrels, runs, k=10, compare=False)
    return {run: dict(zip(res.queries, values["nDCG@10"].tolist(), strict=True))
            for run, values in res.per_query.items()}


def bare_read(runs: list[Path]) -> int:
    """The floor of any reader: the files' bytes, and one pass that finds every field."""
    total = 0
    for path in runs:
        data = path.read_bytes()
        total += len(data)
    return total


def bare_read_and_find(runs: list[Path]) -> int:
    total = 0
    for path in runs:
        total += len(np.flatnonzero(np.frombuffer(path.read_bytes(), dtype=np.uint8) <= 32))
    return total


def arrow_parse(runs: list[Path]) -> int:
    """A library parser's floor: ``pyarrow.csv`` reading three columns (query, document,
    score) of every file, one thread per file and two files at a time, as ``score_qrels``
    reads runs (no check, no block, no look-up)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    def one(path: Path) -> int:
        data = path.read_bytes()
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=list("qzdrst"), use_threads=False,
                                          block_size=len(data) + 1),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False),
            convert_options=pcsv.ConvertOptions(column_types={"s": pa.float64()},
                                                include_columns=["q", "d", "s"]))
        return table.num_rows

    with ThreadPoolExecutor(max_workers=2) as pool:
        return sum(pool.map(one, runs))


def timed(fn, *args):
    """``fn(*args)``, its wall time and its CPU time (every thread of the process)."""
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--qrels", type=Path, default=QRELS)
    ap.add_argument("--repeat", type=int, default=5,
                    help="whole jobs timed this many times a side, in alternating rounds; the "
                         "median of the rounds' ratios counts")
    args = ap.parse_args()
    import pytrec_eval  # noqa: F401  (both sides' imports stay outside the timings)

    import rcp_data.scoring.qrels_score  # noqa: F401
    from rcp_data.runs.qrels_files import read_qrels

    with tempfile.TemporaryDirectory() as tmp:
        runs = write_runs(args.qrels, Path(tmp), args.runs, args.depth)
        rounds = []
        for _ in range(max(1, args.repeat)):
            base, t_base, c_base = timed(with_pytrec_eval, args.qrels, runs)
            ours, t_ours, c_ours = timed(with_rcp_data, args.qrels, runs)
            rounds.append((t_base, c_base, t_ours, c_ours))
        t_base, c_base = min(r[0] for r in rounds), min(r[1] for r in rounds)
        t_ours, c_ours = min(r[2] for r in rounds), min(r[3] for r in rounds)
        parsed, t_parse, c_parse = timed(pytrec_parse, runs)
        _, t_eval, c_eval = timed(pytrec_evaluate, args.qrels, runs, parsed)
        del parsed
        read, t_read, c_read = timed(rcp_read, runs)
        frame = read_qrels(args.qrels)
        computed, t_comp, c_comp = timed(with_rcp_data, frame, read)
        _, t_bare, c_bare = timed(bare_read, runs)
        _, t_find, c_find = timed(bare_read_and_find, runs)
        _, t_csv, c_csv = timed(arrow_parse, runs)
    diff = max(abs(ours[r][q] - v) for r, by_q in base.items() for q, v in by_q.items())
    diff = max([diff] + [abs(computed[r][q] - v) for r, by_q in base.items()
                         for q, v in by_q.items()])
    same = all(set(ours[r]) == set(by_q) == set(computed[r]) for r, by_q in base.items())
    from rcp_data.runs.run_scan import COMPILED

    reader = "compiled (_run_scan)" if COMPILED is not None else "NumPy (no compiled reader)"
    print(f"{args.runs} runs x {args.depth} documents per query, DL19 qrels; run reader "
          f"{reader}; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; wall s / CPU s")
    rows = [("pytrec_eval: parse_run + evaluate (files -> nDCG)", t_base, c_base),
            ("rcp_data.score_qrels (files -> nDCG)", t_ours, c_ours),
            ("pytrec_eval: parse_run only", t_parse, c_parse),
            ("rcp_data: read_run only (split, checks)", t_read, c_read),
            ("pytrec_eval: evaluate only (parsed runs)", t_eval, c_eval),
            ("rcp_data: score_qrels only (read runs)", t_comp, c_comp),
            ("floor: bare read of the files", t_bare, c_bare),
            ("floor: bare read + one pass finding the fields", t_find, c_find),
            ("floor: pyarrow.csv parse, 3 columns, 2 threads", t_csv, c_csv)]
    for name, t, c in rows:
        print(f"  {name:50s} {t:8.3f} {c:8.3f}")
    print(f"same queries: {same}; largest per-query difference: {diff:.3g} (must be <= 1e-12)")
    print(f"  reading only: {t_parse / t_read:.1f}x wall, {c_parse / c_read:.1f}x CPU; "
          f"computing only: {t_eval / t_comp:.1f}x wall, {c_eval / c_comp:.1f}x CPU")
    per_run = 1000 / args.runs
    print(f"  per run: pytrec_eval {t_base * per_run:.2f} ms wall / {c_base * per_run:.2f} ms CPU; "
          f"rcp_data {t_ours * per_run:.2f} / {c_ours * per_run:.2f}; 20x needs rcp_data <= "
          f"{t_base * per_run / 20:.2f} ms wall; pyarrow.csv alone {t_csv * per_run:.2f} / "
          f"{c_csv * per_run:.2f}")
    wall = [r[0] / r[2] for r in rounds]
    cpu = [r[1] / r[3] for r in rounds]
    print("  each round (pytrec_eval / rcp_data, wall): " + ", ".join(f"{x:.1f}x" for x in wall)
          + f"; fastest against fastest: {t_base / t_ours:.1f}x wall, {c_base / c_ours:.1f}x CPU")
    print(f"RATIO score --qrels vs pytrec_eval, files to per-query nDCG@10: "
          f"{statistics.median(wall):.1f}x wall, {statistics.median(cpu):.1f}x CPU "
          f"(median of {len(rounds)} rounds; target >= 20x)")


if __name__ == "__main__":
    main()
