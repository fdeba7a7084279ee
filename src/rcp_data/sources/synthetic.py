"""The demo suite's upstream: a SYNTHETIC corpus, queries, qrels and exclusions, from a seed.

Nothing here is real data. The demo suite's "source" is generated, deterministically (fixed
seeds), so that every job (build, verify ``--sources``) reads it as it reads a real suite's
upstream (``[source] read = "demo"``, :mod:`rcp_data.sources.registry`). It covers the cases
the real suites have: excluded self-documents (one under the query's own id, one
byte-identical copy), a query with more positives than its pool holds (positives outside the
pool), and a query without any positive label. The generated judge run (builder inputs) is
the demo layer's (:mod:`rcp_data.demo.suite`): it needs the hidden truth, :class:`DemoLatent`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError
from rcp_data.core.specs import SuiteSpec, load_spec
from rcp_data.sources.base import CorpusReader, SubsetSource, SuiteSource

SEED = 20261129
N_QUERIES = 12
N_DOCS = 240
WORDS = ["synthetic", "river", "stone", "lamp", "orbit", "maple", "copper", "signal", "harbor", "violet", "engine", "quartz", "meadow", "cipher", "lantern", "glacier", "pixel", "ember", "falcon", "canyon", "thunder", "willow", "prism", "atlas", "beacon", "cobalt", "delta", "fable", "garnet", "horizon", "ivory", "jasmine", "kelvin", "lumen", "marble", "nectar", "onyx", "pepper", "quill", "raven", "saffron", "tundra", "umbra", "velvet", "walnut", "xenon", "yarrow", "zephyr"]


@dataclass(frozen=True)
class DemoLatent:
    """The hidden truth of one subset: true relevance per (query, document)."""

    queries: list[str]
    docs: list[str]
    relevance: np.ndarray  # (n_queries, n_docs)


def _text(rng: np.random.Generator, n: int) -> str:
    return "SYNTHETIC " + " ".join(rng.choice(WORDS, size=n))


def make_sources(spec: SuiteSpec | None = None, seed: int = SEED) -> tuple[SuiteSource, dict]:
    """Synthetic corpus, queries, qrels and exclusions for every demo subset."""
    spec = spec or load_spec("demo")
    subsets: dict[str, SubsetSource] = {}
    latents: dict[str, DemoLatent] = {}
    for s_idx, sub in enumerate(spec.subsets):
        rng = np.random.default_rng(seed + 101 * s_idx)
        qids = [f"{sub.name}-q{i:03d}" for i in range(N_QUERIES)]
        dids = [f"{sub.name}-d{i:04d}" for i in range(N_DOCS)]
        texts = [_text(rng, int(rng.integers(8, 30))) for _ in dids]
        qtexts = [_text(rng, int(rng.integers(4, 10))) for _ in qids]
        rel = rng.normal(-2.0, 1.0, size=(N_QUERIES, N_DOCS))
        for qi in range(N_QUERIES):
            topical = rng.choice(N_DOCS, size=30, replace=False)
            rel[qi, topical] = rng.normal(1.0, 1.2, size=30)
        grades = np.where(rel > 2.2, 2, np.where(rel > 1.0, 1, 0))
        excluded = None
        if sub.excludes:
            # self-documents: the query's own text under its own id (3 queries) and one
            # byte-identical copy under another id
            for qi in range(3):
                dids.append(qids[qi])
                texts.append(qtexts[qi])
            copy_id = f"{sub.name}-copy-of-{qids[0]}"
            dids.append(copy_id)
            texts.append(qtexts[0])
            extra = rng.normal(3.0, 0.3, size=(N_QUERIES, 4))
            extra[np.arange(N_QUERIES)[:, None] != np.array([0, 1, 2, 0])[None, :]] = -3.0
            rel = np.concatenate([rel, extra], axis=1)
            grades = np.concatenate([grades, np.zeros((N_QUERIES, 4), dtype=grades.dtype)], axis=1)
            excluded = pd.DataFrame({
                "query-id": qids[:3],
                "excluded-corpus-ids": [sorted([qids[0], copy_id]), [qids[1]], [qids[2]]],
            })
        else:
            # a query without any positive label, and one with more positives than fit
            grades[0, :] = 0
            many = rng.choice(N_DOCS, size=spec.pool.size + 3, replace=False)
            grades[1, many] = np.maximum(grades[1, many], 1)
            rel[1, many] = np.maximum(rel[1, many], 0.5)
        rows = [(q, d, int(grades[qi, di])) for qi, q in enumerate(qids)
                for di, d in enumerate(dids) if grades[qi, di] > 0]
        # upstream also labels some documents 0 (judged non-relevant)
        for qi, q in enumerate(qids):
            for di in rng.choice(N_DOCS, size=3, replace=False):
                if grades[qi, di] == 0:
                    rows.append((q, dids[di], 0))
        qrels = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])
        qrels = qrels.drop_duplicates(["query-id", "corpus-id"]).sort_values(
            ["query-id", "corpus-id"], kind="stable").reset_index(drop=True)
        corpus = pd.DataFrame({"id": dids, "title": "", "text": texts})
        queries = pd.DataFrame({"id": qids, "text": qtexts})
        where = f"the SYNTHETIC {{}} of demo subset {sub.name}"
        subsets[sub.name] = SubsetSource(
            sub.name, CorpusReader.from_frame(corpus, source=where.format("corpus")), queries,
            qrels, excluded, notes={"synthetic": True},
            origins={t: where.format(t) for t in ("queries", "qrels", "excluded")})
        latents[sub.name] = DemoLatent(qids, dids, rel)
    facts = {"synthetic": True, "generator": "rcp_data.sources.synthetic", "seed": seed}
    return SuiteSource(spec.name, subsets, facts), latents


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Source reader of the demo suite (``[source] read = "demo"`` in builders/demo.toml).

    Options: ``seed``; ``queries=N`` keeps the first N queries of each subset (a small pool to
    judge with a real, slow LLM)."""
    options = options or {}
    seed = int(options.get("seed", SEED))
    source = make_sources(spec, seed)[0]
    if "queries" not in options:
        return source
    try:
        n = int(options["queries"])
    except ValueError:
        n = 0
    if not 1 <= n <= N_QUERIES:
        raise InputError(f"the demo source option queries={options['queries']!r}: expected "
                         f"1 to {N_QUERIES}", field="queries")
    subsets = {}
    for name, sub in source.subsets.items():
        keep = set(sub.queries["id"].iloc[:n])
        excluded = sub.excluded
        if excluded is not None:
            excluded = excluded[excluded["query-id"].isin(keep)].reset_index(drop=True)
        subsets[name] = replace(
            sub, queries=sub.queries[sub.queries["id"].isin(keep)].reset_index(drop=True),
            qrels=sub.qrels[sub.qrels["query-id"].isin(keep)].reset_index(drop=True),
            excluded=excluded)
    return replace(source, subsets=subsets, facts={**source.facts, "queries": n})
