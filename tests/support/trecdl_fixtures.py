"""TREC-DL test data: an offline ir_datasets cache and SYNTHETIC builder inputs.

REAL: the NIST qrels and topics of ``../shared/data/trec-dl/`` (placed at ir_datasets' cache
paths). SYNTHETIC (labelled so, shaped to reproduce no published number): the passage texts
(``rcp_data.demo.synthetic_corpus``, with the MS MARCO double-encoding fault in the raw text), the
passages outside the NIST judgments, the first-stage runs, the judge's thetas and verdicts, the
reranker runs and a handful of stand-ins for the judge's extra MS MARCO dev queries.

The corpus covers every NIST-judged passage and every passage a synthetic run retrieves. Also
here: a brute-force pool computation (plain Python loops, written independently of
``rcp_data.building.pools``) that the tests compare the library against.
"""

from __future__ import annotations

import io
import math
import tarfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 6_2026
N_NOISE = 12_000          # SYNTHETIC passages outside the NIST judgments
FS_DEPTH = 240            # depth of the synthetic first-stage runs
N_DEV = 25                # stand-ins for the judge's extra MS MARCO dev/small queries
MSMARCO_SIZE = 8_841_823  # ids are drawn below this, like real passage ids
RETRIEVERS = ("embed_v4", "bm25", "octen")
K = 60
POOL = 150


@dataclass
class RealTrecDL:
    """The REAL topics and qrels of both years and the dev subset (from ../shared)."""

    topics: dict[int, pd.DataFrame]
    qrels: dict[int, pd.DataFrame]
    dev_topics: pd.DataFrame
    dev_qrels_path: Path
    dev_topics_path: Path
    paths: dict[int, tuple[Path, Path]]


def read_real(trecdl_data: Path) -> RealTrecDL:
    paths = {2019: (trecdl_data / "topics.dl19-passage.txt", trecdl_data / "qrels.dl19-passage.txt"),
             2020: (trecdl_data / "topics.dl20.txt", trecdl_data / "qrels.dl20-passage.txt")}
    topics, qrels = {}, {}
    for year, (t, q) in paths.items():
        topics[year] = pd.read_csv(t, sep="\t", header=None, names=["id", "text"], dtype=str,
                                   quoting=3, keep_default_na=False)
        qrels[year] = pd.read_csv(q, sep=r"\s+", header=None,
                                  names=["query-id", "it", "corpus-id", "score"],
                                  dtype={"query-id": str, "it": str, "corpus-id": str,
                                         "score": np.int64})[["query-id", "corpus-id", "score"]]
    dev_t = trecdl_data / "topics.msmarco-passage.dev-subset.txt"
    dev = pd.read_csv(dev_t, sep="\t", header=None, names=["id", "text"], dtype=str, quoting=3,
                      keep_default_na=False)
    return RealTrecDL(topics, qrels, dev, trecdl_data / "qrels.msmarco-passage.dev-subset.txt",
                      dev_t, paths)


# -- brute force -----------------------------------------------------------------------------
def brute_force_fuse(runs: dict[str, list[tuple[str, int]]]) -> list[tuple[str, float]]:
    """RRF of one query: ``runs[retriever] = [(doc, rank), ...]``; walk-order tie rule."""
    score: dict[str, float] = {}
    first: dict[str, int] = {}
    walk = 0
    for retriever in RETRIEVERS:
        for doc, rank in sorted(runs.get(retriever, []), key=lambda x: x[1]):
            score[doc] = score.get(doc, 0.0) + 1.0 / (K + rank)
            if doc not in first:
                first[doc] = walk
            walk += 1
    order = sorted(score, key=lambda d: (-score[d], first[d]))
    return [(d, score[d]) for d in order]


def brute_force_pool(fused: list[tuple[str, float]], grades: dict[str, int]) -> list[tuple]:
    """TREC-DL pool of one query: ``(doc, pool_rank, rrf_score, gt_injected)`` rows."""
    position = {d: i for i, (d, _) in enumerate(fused)}
    top = fused[:POOL]
    in_top = {d for d, _ in top}
    added = [d for d in grades if d not in in_top]
    added.sort(key=lambda d: (position[d], "") if d in position else (math.inf, d))
    rows = [(d, i + 1, s, False) for i, (d, s) in enumerate(top)]
    rows += [(d, POOL + i + 1, 0.0, grades[d] >= 1) for i, d in enumerate(added)]
    return rows


def brute_force_pools(first_stage: pd.DataFrame, qrels: pd.DataFrame,
                      query_ids: list[str]) -> pd.DataFrame:
    runs: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r, q, d, k in zip(first_stage["retriever"], first_stage["query-id"],
                          first_stage["corpus-id"], first_stage["rank"], strict=True):
        runs[q][r].append((d, int(k)))
    grades: dict[str, dict[str, int]] = defaultdict(dict)
    for q, d, g in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"], strict=True):
        grades[q][d] = int(g)
    rows = []
    for q in query_ids:
        for d, rank, s, inj in brute_force_pool(brute_force_fuse(runs[q]), grades[q]):
            rows.append((q, d, rank, s, inj))
    return pd.DataFrame(rows, columns=["query-id", "corpus-id", "pool_rank", "rrf_score",
                                       "gt_injected"])


# -- SYNTHETIC corpus and cache ----------------------------------------------------------------
def corpus_ids(real: RealTrecDL, seed: int = SEED) -> tuple[list[str], list[str]]:
    """All corpus ids (judged + SYNTHETIC noise), sorted numerically; and the noise ids."""
    judged = set(real.qrels[2019]["corpus-id"]) | set(real.qrels[2020]["corpus-id"])
    rng = np.random.default_rng(seed)
    noise: set[str] = set()
    while len(noise) < N_NOISE:
        for x in rng.integers(0, MSMARCO_SIZE, size=N_NOISE):
            s = str(int(x))
            if s not in judged:
                noise.add(s)
            if len(noise) >= N_NOISE:
                break
    ids = sorted(judged | noise, key=int)
    return ids, sorted(noise, key=int)


def write_collection(ids: list[str], raw_path: Path, clean_path: Path, seed: int = SEED) -> dict:
    """Write raw (faulty) and clean ``id<TAB>text`` files of SYNTHETIC passages."""
    from rcp_data.demo.synthetic_corpus import generate_batches

    changed = 0
    with open(raw_path, "wb") as raw, open(clean_path, "wb") as clean:
        for batch in generate_batches(ids, seed=seed, batch_size=20_000):
            b_ids = batch.column("id").to_pylist()
            r = batch.column("raw").to_pylist()
            c = batch.column("clean").to_pylist()
            changed += sum(1 for a, b in zip(r, c, strict=True) if a != b)
            raw.write("".join(f"{i}\t{t}\n" for i, t in zip(b_ids, r, strict=True)).encode())
            clean.write("".join(f"{i}\t{t}\n" for i, t in zip(b_ids, c, strict=True)).encode())
    return {"documents": len(ids), "changed": changed}


def make_tarball(raw_collection: Path, real: RealTrecDL, out: Path) -> Path:
    """``collectionandqueries.tar.gz`` as upstream lays it out (raw collection, dev/small)."""
    with tarfile.open(out, "w:gz") as tar:
        for name, path in (("collection.tsv", raw_collection),
                           ("queries.dev.small.tsv", real.dev_topics_path),
                           ("qrels.dev.small.tsv", real.dev_qrels_path)):
            data = Path(path).read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return out


@dataclass
class StagedCache:
    """What was placed in the ir_datasets cache (and the files beside it)."""

    home: Path
    ids: list[str]
    noise: list[str]
    raw: Path
    clean: Path
    counts: dict
    real: RealTrecDL


def stage_cache(work: Path, trecdl_data: Path, *, seed: int = SEED) -> StagedCache:
    """Place the REAL topics/qrels and a SYNTHETIC tarball in the ir_datasets cache."""
    from rcp_data.sources import trecdl
    from rcp_data.sources.irds_cache import irds_home

    real = read_real(trecdl_data)
    work.mkdir(parents=True, exist_ok=True)
    ids, noise = corpus_ids(real, seed)
    raw, clean = work / "collection.raw.tsv", work / "collection.clean.tsv"
    counts = write_collection(ids, raw, clean, seed)
    trecdl.stage_tarball(make_tarball(raw, real, work / "collectionandqueries.tar.gz"))
    for year, (t, q) in real.paths.items():
        trecdl.stage_topics(year, t, q)
    return StagedCache(irds_home(), ids, noise, raw, clean, counts, real)


# -- SYNTHETIC builder inputs ------------------------------------------------------------------
def synthetic_first_stage(real: RealTrecDL, noise: list[str], query_ids: dict[int, list[str]],
                          dev_ids: list[str], seed: int = SEED) -> dict[str, pd.DataFrame]:
    """SYNTHETIC runs ``query-id, corpus-id, score`` (no rank) of each retriever.

    Each retriever sees a query's judged passages (score rising with the NIST grade) and random
    noise passages; scores are rounded to 2 decimals so that ties occur.
    """
    rng = np.random.default_rng(seed + 1)
    grades = {y: real.qrels[y].groupby("query-id") for y in real.qrels}
    out: dict[str, list] = {r: [] for r in RETRIEVERS}
    noise_arr = np.asarray(noise, dtype=object)
    all_queries = [(q, y) for y, qs in query_ids.items() for q in qs] + [(q, None) for q in dev_ids]
    for q, year in all_queries:
        if year is not None:
            g = grades[year].get_group(q)
            judged = g["corpus-id"].to_numpy(dtype=object)
            rel = g["score"].to_numpy(dtype=np.float64)
        else:
            judged, rel = np.asarray([], dtype=object), np.asarray([])
        for i, r in enumerate(RETRIEVERS):
            take = rng.random(len(judged)) < 0.7
            docs = np.concatenate([judged[take],
                                   rng.choice(noise_arr, size=FS_DEPTH, replace=False)])
            base = np.concatenate([rel[take], np.zeros(FS_DEPTH)])
            keep = np.sort(np.unique(docs, return_index=True)[1])
            docs, base = docs[keep], base[keep]
            score = np.round(base * (0.8 + 0.1 * i) + rng.normal(0, 1.0, size=len(docs)), 2)
            top = np.argsort(-score, kind="stable")[:FS_DEPTH]
            docs, score = docs[top], score[top]
            out[r].append(pd.DataFrame({"query-id": q, "corpus-id": docs, "score": score}))
    return {r: pd.concat(v, ignore_index=True) for r, v in out.items()}


def write_inputs(root: Path, staged: StagedCache, *, spec, give_bm25: bool = True,
                 seed: int = SEED) -> dict:
    """Write SYNTHETIC builder inputs (judge/, first_stage/, runs/) for both years.

    Thetas, verdicts and runs cover the brute-force pool of every released query, plus the
    dev stand-in queries (which the build must ignore). Returns the brute-force pools.
    """
    from rcp_data.building.pools import normalize_run
    from rcp_data.core.gains import ItemParams
    from rcp_data.core.io import write_json
    from rcp_data.model.tables import write_parquet

    real = staged.real
    rng = np.random.default_rng(seed + 2)
    qids = {y: sorted(set(real.qrels[y]["query-id"]) & set(real.topics[y]["id"]),
                      key=lambda q: list(real.topics[y]["id"]).index(q)) for y in real.qrels}
    dev_pool = sorted(set(real.dev_topics["id"]) - set(qids[2019]) - set(qids[2020]))
    dev_ids = list(rng.choice(np.asarray(dev_pool, dtype=object), size=N_DEV, replace=False))
    fs = synthetic_first_stage(real, staged.noise, qids, dev_ids, seed)
    root = Path(root)
    (root / "first_stage").mkdir(parents=True, exist_ok=True)
    norm = {r: normalize_run(f, r) for r, f in fs.items()}
    if not give_bm25:
        norm.pop("bm25")
    for r, frame in fs.items():
        if r == "bm25" and not give_bm25:
            continue
        if r == "octen":  # TREC format with ranks
            n = norm[r]
            lines = [f"{q} Q0 {d} {k} {s:.2f} synthetic-octen\n" for q, d, k, s in
                     zip(n["query-id"], n["corpus-id"], n["rank"], n["score"], strict=True)]
            (root / "first_stage" / "octen.trec").write_text("".join(lines))
        else:
            write_parquet(frame, root / "first_stage" / f"{r}.parquet")
    pools = {}
    for y in (2019, 2020):
        if "bm25" not in norm:
            from rcp_data.building.bm25 import bm25_run
            from rcp_data.sources.base import CorpusReader

            corpus = CorpusReader.from_frame(read_tsv(staged.clean))
            runs = dict(norm)
            runs["bm25"] = bm25_run(corpus, real.topics[y][real.topics[y]["id"].isin(qids[y])],
                                    POOL)
        else:
            runs = norm
        frame = pd.concat(runs.values(), ignore_index=True)
        frame = frame[frame["query-id"].isin(set(qids[y]))]
        pools[y] = brute_force_pools(frame, real.qrels[y], qids[y])
    dev_fs = pd.concat(norm.values(), ignore_index=True)
    dev_fs = dev_fs[dev_fs["query-id"].isin(set(dev_ids))]
    dev_pool_frame = brute_force_pools(dev_fs, real.qrels[2019].iloc[:0], dev_ids)
    everything = pd.concat([pools[2019], pools[2020], dev_pool_frame], ignore_index=True)
    grade = pd.concat([real.qrels[2019], real.qrels[2020]], ignore_index=True)
    everything = everything.merge(grade, how="left", on=["query-id", "corpus-id"])
    g = everything["score"].fillna(0).to_numpy()
    theta = np.round(g * 1.1 - 1.0 + rng.normal(0, 0.7, size=len(everything)), 6)
    judge = root / "judge"
    write_json({"model": "synthetic/judge-for-tests", "revision": "test", "short": "synthtest"},
               judge / "judge.json")
    ItemParams(gamma=(1.2, 1.0, 0.9, 0.8, 0.7), beta=(-1.5, -0.5, 0.3, 1.1, 2.0),
               extra={"note": "SYNTHETIC item parameters for tests"}).write(
        judge / "item_params.json")
    write_parquet(pd.DataFrame({"query-id": everything["query-id"],
                                "corpus-id": everything["corpus-id"], "theta": theta,
                                "theta_bt": np.round(theta / 1.3, 6)}), judge / "thetas.parquet")
    crit = pd.DataFrame({"query-id": everything["query-id"],
                         "call_index": everything.groupby("query-id").cumcount() // 10,
                         "corpus-id": everything["corpus-id"]})
    for c in range(5):
        crit[f"C{c + 1}"] = (rng.random(len(crit)) < 1 / (1 + np.exp(-(theta - c + 2)))).astype(
            np.int8)
    crit["finish_reason"] = "stop"
    write_parquet(crit.astype({"call_index": np.int64}), judge / "criteria.parquet")
    runs_dir = root / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    models = list(spec.rerankers.values())[:2]
    entries = []
    for i, model in enumerate(models):
        score = np.round(g + rng.normal(0, 0.8 + 0.4 * i, size=len(everything)), 3)
        frame = pd.DataFrame({"query-id": everything["query-id"],
                              "corpus-id": everything["corpus-id"], "score": score})
        if i == 0:
            name = f"{model}.trec"
            frame = frame.assign(rank=frame.groupby("query-id")["score"].rank(
                method="first", ascending=False).astype(int))
            (runs_dir / name).write_text("".join(
                f"{q} Q0 {d} {k} {s} synthetic\n" for q, d, k, s in
                zip(frame["query-id"], frame["corpus-id"], frame["rank"], frame["score"],
                    strict=True)))
        else:
            name = f"{model}.parquet"
            write_parquet(frame, runs_dir / name)
        entries.append({"file": name, "model": model, "short": spec.short_name(model),
                        "is_judge": False})
    write_parquet(pd.DataFrame({"query-id": everything["query-id"],
                                "corpus-id": everything["corpus-id"], "score": theta}),
                  runs_dir / "judge-theta.parquet")
    entries.append({"file": "judge-theta.parquet", "model": "synthetic/judge-for-tests:theta",
                    "short": "judge-theta", "is_judge": True})
    write_json(entries, runs_dir / "runs.json")
    return {"pools": pools, "dev_ids": dev_ids, "query_ids": qids}


def read_tsv(path: Path) -> pd.DataFrame:
    ids, texts = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            pid, _, text = line.rstrip("\n").partition("\t")
            ids.append(pid)
            texts.append(text)
    return pd.DataFrame({"id": ids, "title": "", "text": texts})


__all__ = ["brute_force_fuse", "brute_force_pool", "brute_force_pools", "stage_cache",
           "write_inputs", "read_real", "read_tsv"]
