"""Benchmark: ``rcp-data verify`` of a ViDoRe-scale release after download (SYNTHETIC data).

On demand, not a test:

    .venv/bin/python bench/verify.py                      # 306 queries x 48 subsets: 2.2M pairs
    .venv/bin/python bench/verify.py --queries 60         # smaller
    .venv/bin/python bench/verify.py --keep /tmp/vidore   # keep (and reuse) the generated release
    .venv/bin/python bench/verify.py --queries 60 --repeat 3   # a fifth of the scale, 3 runs

Generates, with numpy/pyarrow directly, a SYNTHETIC release in the ViDoRe v3 layout (suite spec
``vidore_v3``: 8 domains x 6 languages, per-domain corpus and provenance): corpora of ids with
empty text (no images), queries, first-stage runs of three retrievers and their RRF fusion
(``rcp_data.building.pools.rrf_fuse``), pools of the fused top 150 with a few injected positives, gains
from SYNTHETIC item parameters, 14 reranker runs with ties, releases.json, a build manifest with
its content list (every file's size and sha256), and the task file and card rendered by
``rcp_data.documents.card``. Nothing here is real data.

Then times, in the same run, alternating (``--repeat`` runs of each; the fastest counts):

- baseline: the replay alone (load ``provenance-runs`` and score both tie rules), the least any
  verification that reproduces the card's tables must do;
- ``verify``: every check of ``rcp_data.checks.verify.verify_release_dir`` (the download excluded)
  against a listing of the revision as the Hub gives it (the ``listing`` stage: every file read
  once against its git blob id, from ``git hash-object``, or, for a parquet file, its LFS
  sha256, from coreutils ``sha256sum``), hashing every listed file against the manifest, the
  integrity checks, the replay and the card and task file rendered again.

verify runs its integrity checks in a second thread while it replays (2 cores), so its
CPU seconds exceed its wall seconds; each stage's CPU is its own thread's.

Targets: verify <= 2x the baseline on the same release (issue 28; wall time, CPU time shown
too: on a loaded machine it is the steadier ratio), and < 60 s on 2 cores at full scale
(2.2M pool pairs, 14 runs). Prints each stage's seconds (wall, and this process's CPU), the
share of the byte checks, and the ratio in one line: ``RATIO verify / replay alone: X CPU,
Y wall``.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.building.pools import rrf_fuse
from rcp_data.core.gains import ItemParams, gain
from rcp_data.core.io import write_json
from rcp_data.core.specs import SuiteSpec, load_spec
from rcp_data.model.history import History, ReleaseRecord, release_tag, write_history
from rcp_data.model.layout import (
    BUILD_MANIFEST,
    CARD_FILE,
    MANIFEST_SCHEMA,
    RELEASES_JSON,
    provenance_file,
    shard_name,
    subset_file,
)
from rcp_data.model.manifest import record_content
from rcp_data.model.schemas import SCHEMAS

TARGET_S = 60.0               # verify at full scale (issue 20)
TARGET_RATIO = 2.0            # verify / replay alone on the same release (issue 28)
FULL_QUERIES = 306             # x 48 subsets x 150 = 2,203,200 pool pairs
N_RUNS = 14
DOCS_PER_DOMAIN = 1500
DEPTH = 150
SEED = 20261130
JUDGE = {"model": "rcp-data/synthetic-judge-7b", "revision": "bench"}
PARAMS = ItemParams(gamma=(1.3, 1.0, 0.9, 0.7, 0.6), beta=(-1.5, -0.5, 0.2, 1.1, 2.0),
                    extra={"note": "SYNTHETIC benchmark item parameters"})
ITEM_PARAMS = "provenance/item_params.synth.json"
REPO = "bench/synthetic-vidore-scale"


def _write(frame: pd.DataFrame | pa.Table, path: Path, kind: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(
        frame, schema=SCHEMAS[kind] if kind else None, preserve_index=False)
    pq.write_table(table, path, compression="zstd")


def _domain(spec: SuiteSpec, domain: str, n_queries: int, models: list[str],
            rng: np.random.Generator, root: Path) -> dict[str, dict]:
    """Write one domain (its corpus, 6 language subsets and provenance); return counts."""
    docs = np.array([f"{domain}-p{i:05d}" for i in range(DOCS_PER_DOMAIN)], dtype=object)
    n_inj_docs = 64                               # never retrieved: injected positives
    _write(pd.DataFrame({"id": docs, "title": "", "text": ""}),
           root / "corpus" / domain / shard_name(0, 1), "corpus")
    subsets = [s for s in spec.subsets if s.domain == domain]
    qids_all, fs_parts = [], []
    counts = {}
    pool_parts, run_parts = [], []
    for sub in subsets:
        qids = np.array([f"{sub.name}-q{i:04d}" for i in range(n_queries)], dtype=object)
        qids_all.append(qids)
        _write(pd.DataFrame({"id": qids, "text": "SYNTHETIC"}), root / subset_file(sub.name,
                                                                                   "queries"),
               "queries")
        base = rng.normal(size=(n_queries, DOCS_PER_DOMAIN - n_inj_docs))
        runs = []
        for r_i, retriever in enumerate(spec.pool.retrievers):
            score = base + rng.normal(scale=0.6 + 0.2 * r_i, size=base.shape)
            top = np.argsort(-score, axis=1, kind="stable")[:, :DEPTH]
            runs.append(pd.DataFrame({
                "retriever": retriever,
                "query-id": np.repeat(qids, DEPTH),
                "corpus-id": docs[top.reshape(-1)],
                "rank": np.tile(np.arange(1, DEPTH + 1, dtype=np.int64), n_queries),
                "score": np.round(np.take_along_axis(score, top, 1).reshape(-1), 6),
            }))
        first = pd.concat(runs, ignore_index=True)
        fused = rrf_fuse(first, spec.pool.retrievers, k=spec.pool.rrf_k)
        fs_parts.append(pd.concat([first, fused], ignore_index=True))
        pool = fused[fused["rank"] <= spec.pool.size].copy()
        pool = pool.rename(columns={"rank": "pool_rank", "score": "rrf_score"})
        pool["gt_injected"] = False
        # every 10th query: one positive nobody retrieved replaces the lowest-ranked candidate
        inj_q = qids[::10]
        last = pool["query-id"].isin(inj_q).to_numpy() & (pool["pool_rank"] == spec.pool.size)
        inj_docs = docs[DOCS_PER_DOMAIN - n_inj_docs + rng.integers(0, n_inj_docs, last.sum())]
        pool.loc[last, "corpus-id"] = inj_docs
        pool.loc[last, "rrf_score"] = 0.0
        pool.loc[last, "gt_injected"] = True
        pool["excluded"] = False
        pool["judged"] = True
        pool = pool[["query-id", "corpus-id", "pool_rank", "rrf_score", "gt_injected",
                     "excluded", "judged"]].reset_index(drop=True)
        pool_parts.append(pool)
        # qrels: 3 positives among pool ranks 1..100 per query, plus the injected ones
        n = len(pool)
        score = np.zeros(n, dtype=np.int64)
        pick = (np.arange(n_queries)[:, None] * spec.pool.size
                + rng.integers(0, 100, size=(n_queries, 3))).reshape(-1)
        score[pick] = rng.integers(1, 3, size=len(pick))
        score[pool["gt_injected"].to_numpy()] = 1
        theta = np.round(rng.normal(0, 1.5, n) + score, 6)
        qrels = pd.DataFrame({"query-id": pool["query-id"], "corpus-id": pool["corpus-id"],
                              "score": score, "gain": gain(theta, PARAMS), "theta": theta})
        _write(qrels, root / subset_file(sub.name, "qrels"), "qrels")
        top = pool.groupby("query-id", sort=False)["corpus-id"].agg(list).reset_index()
        _write(top.rename(columns={"corpus-id": "corpus-ids"}),
               root / subset_file(sub.name, "top_ranked"), "top_ranked")
        for m_i, model in enumerate(models):
            s = np.round(theta + rng.normal(0, 0.5 + 0.1 * m_i, n), 2 if m_i % 3 == 0 else 4)
            run_parts.append((model, pool["query-id"].to_numpy(), pool["corpus-id"].to_numpy(),
                              s))
        counts[sub.name] = {"queries": n_queries, "pool_pairs": n,
                            "gt_injected": int(pool["gt_injected"].sum())}
    _write(pd.concat(pool_parts, ignore_index=True), root / provenance_file("pool", domain),
           "pool")
    _write(pd.concat(fs_parts, ignore_index=True), root / provenance_file("first_stage", domain),
           "first_stage")
    _write(_runs_table(run_parts, rng), root / provenance_file("runs", domain))
    return counts


def _runs_table(parts: list, rng: np.random.Generator) -> pa.Table:
    """One runs table: rank_by_score (1-based, score desc within model and query) and
    stored_position (0-based position in the model's stored, shuffled ranking)."""
    model = np.concatenate([np.full(len(p[1]), p[0], dtype=object) for p in parts])
    q = np.concatenate([p[1] for p in parts])
    d = np.concatenate([p[2] for p in parts])
    s = np.concatenate([p[3] for p in parts])
    frame = pd.DataFrame({"model": model, "is_judge": False, "query-id": q, "corpus-id": d,
                          "score": s})
    frame["rank_by_score"] = frame.groupby(["model", "query-id"], sort=False)["score"].rank(
        method="first", ascending=False).astype(np.int64)
    frame["_k"] = rng.random(len(frame))
    frame["stored_position"] = frame.groupby(["model", "query-id"], sort=False)["_k"].rank(
        method="first").astype(np.int64) - 1
    return pa.Table.from_pandas(frame.drop(columns="_k"), schema=SCHEMAS["runs"],
                                preserve_index=False)


def generate(root: Path, n_queries: int) -> Path:
    """Write the SYNTHETIC ViDoRe-scale release into ``root``."""
    spec = load_spec("vidore_v3")
    rng = np.random.default_rng(SEED)
    models = list(dict.fromkeys(spec.rerankers.values()))[:N_RUNS]
    if len(models) < N_RUNS:
        models += [f"bench/synthetic-reranker-{i}" for i in range(N_RUNS - len(models))]
    counts = {}
    for d in spec.domains:
        counts.update(_domain(spec, d.name, n_queries, models, rng, root))
        print(f"  generated domain {d.name}", file=sys.stderr)
    PARAMS.write(root / ITEM_PARAMS)
    history = History(repo=REPO, releases=(ReleaseRecord(
        release=1, tag=release_tag(1, JUDGE["model"]), revision=None, data_revision=None,
        judge=dict(JUDGE), calibration={"method": "2pl-irt", "item_params": ITEM_PARAMS,
                                        "link": "weighted_discrimination"},
        status="current", summary="SYNTHETIC benchmark release"),))
    write_history(history, root / RELEASES_JSON)
    write_json({"schema": MANIFEST_SCHEMA, "suite": spec.name, "synthetic": True,
                "judge": JUDGE, "calibration": {"item_params": ITEM_PARAMS,
                                                "link": "weighted_discrimination"},
                "counts": counts}, root / BUILD_MANIFEST)
    record_content(root)  # every data file, hashed: the content manifest verify proves
    from rcp_data.core.outputs import record_written
    from rcp_data.documents.card import write_release_files

    # the card and task file, remembered as rcp-data's own (a later card render replaces them)
    record_written(write_release_files(root, spec=spec, history=history, repo=REPO))
    return root


def _replay_only(root: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the baseline: load the release, score both tie rules."""
    from rcp_data.scoring.replay import load_release, score_queries

    t0, c0 = time.perf_counter(), time.process_time()
    data = load_release(root, load_spec("vidore_v3"))
    score_queries(data, k=10, tie_rules=("doc-id", "group-mean"))
    return time.perf_counter() - t0, time.process_time() - c0


def _listing(root: Path) -> tuple[dict, dict]:
    """The revision as the Hub lists it (:func:`_hub_listing`), and as verify's byte checks
    take it (size, an LFS file's sha256: the data files)."""
    from rcp_data.checks.manifest import HostedFile

    listing = _hub_listing(root)
    return listing, {p: HostedFile(p, f.size, f.lfs_sha256) for p, f in listing.items()}


def _verify(root: Path, listing: dict, hosted: dict):
    from rcp_data.checks.verify import verify_release_dir

    t0, c0 = time.perf_counter(), time.process_time()
    report = verify_release_dir(root, listing=listing, hosted=hosted)
    return time.perf_counter() - t0, time.process_time() - c0, report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=FULL_QUERIES,
                    help=f"queries per subset (default {FULL_QUERIES}: 2.2M pool pairs)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="write the release here and keep it (reused when it exists)")
    ap.add_argument("--repeat", type=int, default=2,
                    help="runs of each, alternating; the fastest counts (default 2)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    tmp = None
    if args.keep is not None:
        root = args.keep
    else:
        tmp = Path(tempfile.mkdtemp(prefix="rcp-bench-verify-"))
        root = tmp / "release"
    try:
        if not (root / CARD_FILE).exists():
            t0 = time.perf_counter()
            root.mkdir(parents=True, exist_ok=True)
            generate(root, args.queries)
            print(f"generated SYNTHETIC release in {time.perf_counter() - t0:.1f} s: {root}")
        pairs = sum(pq.read_metadata(p).num_rows for p in root.glob("provenance/pool/*.parquet"))
        runs = sum(pq.read_metadata(p).num_rows for p in root.glob("provenance/runs/*.parquet"))
        print(f"scale: {pairs:,} pool pairs, {runs:,} run rows ({runs // max(pairs, 1)} runs)")
        listing, hosted = _listing(root)
        # alternate, so that both see the same machine; the first of each pays its imports
        base, ver = [], []
        for _ in range(max(args.repeat, 1)):
            base.append(_replay_only(root))
            ver.append(_verify(root, listing, hosted))
        baseline, base_cpu = min(b[0] for b in base), min(b[1] for b in base)
        elapsed, ver_cpu, report = min(ver, key=lambda v: v[0])
        ver_cpu = min(v[1] for v in ver)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        failed = [c for c in report.checks if not c.ok]
        ratio, cpu_ratio = elapsed / baseline, ver_cpu / base_cpu
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; fastest of "
              f"{len(ver)} runs each")
        print(f"baseline (replay alone, both tie rules): {baseline:6.1f} s  ({base_cpu:.1f} s CPU)")
        stages = ", ".join(f"{k} {v:.1f} s ({report.cpu_seconds.get(k, 0.0):.1f} CPU)"
                           for k, v in report.seconds.items())
        hashing = report.seconds.get("content", 0.0) + report.seconds.get("listing", 0.0)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        print(f"verify (all checks, byte checks included): {elapsed:6.1f} s  ({ver_cpu:.1f} s "
              f"CPU)   ({stages})")
        print(f"byte checks (listing and content stages, {size / 1e6:,.0f} MB): {hashing:.1f} s = "
              f"{100 * hashing / elapsed:.1f}% of verify")
        print(f"peak RSS {rss:.2f} GiB; {len(report.checks)} checks, {len(failed)} failed")
        for c in failed:
            print(f"  FAILED {c.name}: {c.found} ({c.where})")
        ok = ratio <= TARGET_RATIO and not failed
        print(f"RATIO verify / replay alone: {cpu_ratio:.2f}x CPU, {ratio:.2f}x wall "
              f"(target <= {TARGET_RATIO:.0f}x wall; {len(failed)} checks failed): "
              f"{'MET' if ok else 'NOT MET'}")
        scale = pairs / (FULL_QUERIES * 48 * 150)
        if scale < 0.99:
            print(f"this run is {scale:.2f} of full scale (linear estimate of verify "
                  f"{elapsed / scale:.0f} s; < {TARGET_S:.0f} s asked at full scale)")
        else:
            print(f"verify < {TARGET_S:.0f} s at full scale: "
                  f"{'MET' if elapsed < TARGET_S else 'NOT MET'}")
            ok = ok and elapsed < TARGET_S
        return 0 if ok else 1
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _hub_listing(root: Path) -> dict:
    """The Hub's listing of the release as the Hub would give it (parquet through LFS), made
    with git and coreutils, not with the code under test."""
    import subprocess

    from rcp_data.core.files import release_paths
    from rcp_data.core.hub_client import RemoteFile

    paths = release_paths(root)
    lfs = [p for p in paths if p.endswith(".parquet")]
    regular = [p for p in paths if p not in set(lfs)]
    blobs = subprocess.run(["git", "hash-object", "--no-filters", "--stdin-paths"],
                           input="\n".join(str(root / p) for p in regular) + "\n", text=True,
                           capture_output=True, check=True).stdout.split()
    sums = subprocess.run(["sha256sum", *[str(root / p) for p in lfs]], text=True,
                          capture_output=True, check=True).stdout.split("\n")
    out = {p: RemoteFile(p, (root / p).stat().st_size, b)
           for p, b in zip(regular, blobs, strict=True)}
    for p, line in zip(lfs, sums, strict=False):
        out[p] = RemoteFile(p, (root / p).stat().st_size, "0" * 40, line.split()[0])
    return out


if __name__ == "__main__":
    sys.exit(main())
