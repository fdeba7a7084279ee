"""On-demand benchmark of replay at ViDoRe scale (SYNTHETIC tables; not a test).

14 models x 14,514 queries x 150 candidates, laid out like ViDoRe v3: 8 domains x 6 language
subsets, runs stored per domain. Timed from the tables in memory (Arrow tables with the id
columns dictionary-encoded, as replay reads them from parquet) to per-query RCP-nDCG@10 and
qrel-nDCG@10 under both tie rules (doc-id, group-mean). The baseline computes the qrel part
(doc-id) with pytrec_eval from the same tables, building its dicts included. Prints both times,
their ratio, and the largest per-query difference (must be <= 1e-12).

    .venv/bin/python bench/replay.py [--queries 14514] [--models 14] [--plain-strings]
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.scoring.replay import build_split_runs, score_subset

DOMAINS = 8
LANGUAGES = 6
POOL = 150
PAGES = 3000


def make_tables(n_queries: int, n_models: int, seed: int = 0, plain: bool = False) -> dict:
    """SYNTHETIC tables per domain: ``{domain: (subsets, runs)}``."""
    rng = np.random.default_rng(seed)
    per_subset = np.full(DOMAINS * LANGUAGES, n_queries // (DOMAINS * LANGUAGES))
    per_subset[: n_queries % (DOMAINS * LANGUAGES)] += 1
    out = {}
    i = 0
    for dom in range(DOMAINS):
        pages = np.array([f"d{dom}-page-{p:05d}" for p in range(PAGES)], dtype=object)
        subsets = {}
        run_q, run_d, run_m, run_s = [], [], [], []
        for lang in range(LANGUAGES):
            n_q = int(per_subset[i])
            i += 1
            name = f"domain{dom}__lang{lang}"
            qids = np.array([f"{name}-q{q:04d}" for q in range(n_q)], dtype=object)
            cands = np.stack([rng.choice(PAGES, POOL, replace=False) for _ in range(n_q)])
            doc = pages[cands].reshape(-1)
            qq = np.repeat(qids, POOL)
            gain = rng.random(n_q * POOL) ** 3
            grade = (rng.random(n_q * POOL) < 0.02).astype(np.int64) * rng.integers(1, 3, n_q * POOL)
            grade[::POOL] = np.maximum(grade[::POOL], 1)                 # every query a positive
            # one positive outside the pool per query
            outside = pages[(cands[:, 0] + PAGES // 2) % PAGES]
            in_pool = set(zip(qq.tolist(), doc.tolist(), strict=True))
            extra = [(q, o) for q, o in zip(qids.tolist(), outside.tolist(), strict=True)
                     if (q, o) not in in_pool]
            qrels = pa.table({
                "query-id": np.concatenate([qq, [q for q, _ in extra]]).astype(str),
                "corpus-id": np.concatenate([doc, [o for _, o in extra]]).astype(str),
                "score": np.concatenate([grade, np.ones(len(extra), dtype=np.int64)]),
                "gain": np.concatenate([gain, np.zeros(len(extra))]),
            })
            top = pa.table({"query-id": qids.astype(str),
                            "corpus-ids": pa.array(list(pages[cands].tolist()),
                                                   type=pa.list_(pa.string()))})
            subsets[name] = (qrels, top, None)
            for m in range(n_models):
                if m % 3 == 0:
                    scores = np.round(rng.random(n_q * POOL), 2)      # many ties
                else:
                    scores = rng.normal(size=n_q * POOL)
                perm = rng.permutation(n_q * POOL)                    # stored in any order
                run_q.append(qq[perm])
                run_d.append(doc[perm])
                run_m.append(np.full(n_q * POOL, f"synthetic-reranker-{m:02d}", dtype=object))
                run_s.append(scores[perm])
        cols = {"model": np.concatenate(run_m), "query-id": np.concatenate(run_q),
                "corpus-id": np.concatenate(run_d)}
        arrays = {}
        for k, v in cols.items():
            arr = pa.array(v, type=pa.string())
            arrays[k] = arr if plain else pc.dictionary_encode(arr)
        arrays["score"] = pa.array(np.concatenate(run_s))
        out[f"domain{dom}"] = (subsets, pa.table(arrays))
    return out


def ours(tables: dict) -> dict:
    result = {}
    for _dom, (subsets, runs) in tables.items():
        built = build_split_runs(subsets, runs)
        for name, data in built.items():
            result[name] = (data, score_subset(data, k=10, tie_rules=("doc-id", "group-mean")))
    return result


def baseline(tables: dict) -> dict:
    import pytrec_eval

    result = {}
    for _dom, (subsets, runs) in tables.items():
        qrels: dict[str, dict[str, int]] = {}
        for _name, (qr, _top, _ex) in subsets.items():
            for q, dd, s in zip(qr.column("query-id").to_pylist(),
                                qr.column("corpus-id").to_pylist(),
                                qr.column("score").to_pylist(), strict=True):
                qrels.setdefault(q, {})[dd] = s
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
        models = runs.column("model").to_pylist()
        qs = runs.column("query-id").to_pylist()
        ds = runs.column("corpus-id").to_pylist()
        ss = runs.column("score").to_pylist()
        per_model: dict[str, dict[str, dict[str, float]]] = {}
        for m, q, dd, s in zip(models, qs, ds, ss, strict=True):
            per_model.setdefault(m, {}).setdefault(q, {})[dd] = s
        del models, qs, ds, ss
        for m, run in per_model.items():
            res = evaluator.evaluate(run)
            result[m] = result.get(m, {})
            result[m].update({q: v["ndcg_cut_10"] for q, v in res.items()})
        del per_model
        gc.collect()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=14514)
    ap.add_argument("--models", type=int, default=14)
    ap.add_argument("--plain-strings", action="store_true",
                    help="ids as plain strings (replay dictionary-encodes them itself)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    tables = make_tables(args.queries, args.models, plain=args.plain_strings)
    n_rows = sum(r.num_rows for _, r in tables.values())
    print(f"SYNTHETIC tables: {args.models} models x {args.queries} queries x {POOL} "
          f"candidates = {n_rows:,} run rows (built in {time.perf_counter() - t0:.1f} s)")

    t0 = time.perf_counter()
    mine = ours(tables)
    t_ours = time.perf_counter() - t0
    print(f"rcp-data replay engine (both tie rules, both metrics): {t_ours:.2f} s")

    t0 = time.perf_counter()
    theirs = baseline(tables)
    t_base = time.perf_counter() - t0
    print(f"pytrec_eval ndcg_cut_10 (qrel part, doc-id ties, dicts included): {t_base:.2f} s")

    worst = 0.0
    n = 0
    for _name, (data, res) in mine.items():
        vals = res["doc-id"]["qrel_ndcg"]
        for r, model in enumerate(data.models):
            ref = np.array([theirs[model][q] for q in data.query_ids])
            worst = max(worst, float(np.max(np.abs(vals[r] - ref))))
            n += len(ref)
    print(f"per-query values compared: {n:,}; largest |difference|: {worst:.2e} "
          f"({'identical' if worst <= 1e-12 else 'DIFFERENT'})")
    print(f"speed-up over pytrec_eval: {t_base / t_ours:.1f}x "
          f"(target >= 10x; engine target < 10 s: {'met' if t_ours < 10 else 'MISSED'})")


if __name__ == "__main__":
    main()
