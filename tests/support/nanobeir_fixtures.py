"""SYNTHETIC nano-beir cache files for tests: nothing here is real NanoBEIR data.

Each of the 13 ``nano-beir/<ds>`` datasets gets a small generated corpus, queries and qrels in
the upstream layout (``_id, text``; qrels ``query-id, corpus-id, score``). Planted cases, each
with its expected outcome written down by construction (not by running the reader's rule):

- arguana: the query's own argument under its own id; under its own id AND as a copy under
  another id; only as a copy under another id (the own document absent, as for the real
  ``test-religion-grcrgshwbr-pro03a``); an own document whose text differs from the query, with a
  copy of THAT text elsewhere; a copy that is also a qrel positive (kept); two empty documents.
- scidocs: empty documents, one of them a qrel positive.
- nfcorpus: a query with more positives (160) than a pool of 150 holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rcp_data.sources.irds_cache import stage_nanobeir

DATASETS = ["arguana", "climate-fever", "dbpedia-entity", "fever", "fiqa", "hotpotqa", "msmarco",
            "nfcorpus", "nq", "quora", "scidocs", "scifact", "webis-touche2020"]
WORDS = ["synthetic", "alpha", "basin", "cedar", "dune", "ember", "fjord", "grove", "heron",
         "inlet", "juniper", "kestrel", "lagoon", "mesa", "nimbus", "oasis", "prairie", "quarry"]


@dataclass
class NanoFixture:
    """One generated dataset and what a correct reader must find in it."""

    corpus: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame
    excluded: dict[str, list[str]] = field(default_factory=dict)
    empty_ids: list[str] = field(default_factory=list)
    empty_positives: int = 0


def _text(rng: np.random.Generator, tag: str) -> str:
    return f"SYNTHETIC {tag} " + " ".join(rng.choice(WORDS, size=int(rng.integers(6, 20))))


def make_dataset(name: str, seed: int = 7, n_docs: int = 200, n_queries: int = 4) -> NanoFixture:
    """A plain generated dataset: every query has 1-3 positives among the documents."""
    rng = np.random.default_rng(seed + sum(map(ord, name)))
    doc_ids = [f"{name}-d{i:03d}" for i in range(n_docs)]
    corpus = pd.DataFrame({"_id": doc_ids, "text": [_text(rng, d) for d in doc_ids]})
    qids = [f"{name}-q{i}" for i in range(n_queries)]
    queries = pd.DataFrame({"_id": qids, "text": [_text(rng, q) for q in qids]})
    rows = [(q, d) for q in qids
            for d in rng.choice(doc_ids, size=int(rng.integers(1, 4)), replace=False)]
    qrels = pd.DataFrame(rows, columns=["query-id", "corpus-id"])
    qrels["score"] = 1
    return NanoFixture(corpus, queries, qrels)


def make_arguana() -> NanoFixture:
    fx = make_dataset("arguana", n_queries=2)
    q = {f"test-topic-q{i}-pro0{i}a": f"SYNTHETIC argument number {i} with its own words"
         for i in range(6)}
    ids = list(q)
    docs = [
        (ids[0], q[ids[0]]),                        # own id only
        (ids[1], q[ids[1]]),                        # own id ...
        ("test-elsewhere-q1-copy", q[ids[1]]),      # ... and a copy under another id
        ("test-other-topic-q2-pro02a", q[ids[2]]),  # copy only (own document absent)
        (ids[4], "SYNTHETIC own argument stored with different words"),
        ("test-dup-of-q4-own", "SYNTHETIC own argument stored with different words"),
        ("test-positive-copy-q5", q[ids[5]]),       # a copy that the qrels mark relevant
        ("empty-a", ""),
        ("empty-b", ""),
    ]
    # q3 has no self-document at all
    fx.corpus = pd.concat([fx.corpus, pd.DataFrame(docs, columns=["_id", "text"])],
                          ignore_index=True)
    fx.queries = pd.concat([fx.queries, pd.DataFrame(list(q.items()), columns=["_id", "text"])],
                           ignore_index=True)
    extra = pd.DataFrame([(ids[i], f"arguana-d00{i}", 1) for i in range(6)]
                         + [(ids[5], "test-positive-copy-q5", 1)],
                         columns=["query-id", "corpus-id", "score"])
    fx.qrels = pd.concat([fx.qrels, extra], ignore_index=True)
    fx.excluded = {
        ids[0]: [ids[0]],
        ids[1]: [ids[1], "test-elsewhere-q1-copy"],
        ids[2]: ["test-other-topic-q2-pro02a"],
        ids[4]: [ids[4], "test-dup-of-q4-own"],
    }
    fx.empty_ids = ["empty-a", "empty-b"]
    return fx


def make_scidocs() -> NanoFixture:
    fx = make_dataset("scidocs")
    empties = pd.DataFrame({"_id": ["scidocs-empty-1", "scidocs-empty-2", "scidocs-blank"],
                            "text": ["", "", "   "]})
    fx.corpus = pd.concat([fx.corpus, empties], ignore_index=True)
    first = fx.queries["_id"].iloc[0]
    fx.qrels = pd.concat([fx.qrels, pd.DataFrame([(first, "scidocs-empty-1", 1)],
                                                 columns=fx.qrels.columns)], ignore_index=True)
    fx.empty_ids = ["scidocs-empty-1", "scidocs-empty-2", "scidocs-blank"]
    fx.empty_positives = 1
    return fx


MANY_POSITIVES = 160


def make_nfcorpus() -> NanoFixture:
    fx = make_dataset("nfcorpus", n_docs=260)
    deep = fx.queries["_id"].iloc[0]
    many = fx.corpus["_id"].iloc[:MANY_POSITIVES]
    rest = fx.qrels[fx.qrels["query-id"] != deep]
    fx.qrels = pd.concat([pd.DataFrame({"query-id": deep, "corpus-id": many, "score": 1}), rest],
                         ignore_index=True)
    return fx


def make_all() -> dict[str, NanoFixture]:
    special = {"arguana": make_arguana, "scidocs": make_scidocs, "nfcorpus": make_nfcorpus}
    return {name: special.get(name, lambda n=name: make_dataset(n))() for name in DATASETS}


def stage(fixtures: dict[str, NanoFixture]) -> None:
    """Write the fixtures at ir_datasets' nano-beir cache paths."""
    for name, fx in fixtures.items():
        stage_nanobeir(name, corpus=fx.corpus, queries=fx.queries, qrels=fx.qrels)
