"""What a judge run reads: each query's text and its pool's documents, in pool order.

From a release directory (or an ``hf://`` revision, opened by the caller) in the published
layout: ``{subset}/queries.parquet``, the corpus, and ``provenance/pool/{split}.parquet`` (every
pool document, excluded ones too: the calibration keeps them), ordered by ``pool_rank``. A
pools-only build writes the same files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pandas as pd

from rcp_data.core.errors import InputError
from rcp_data.model.layout import provenance_file


@dataclass(frozen=True)
class PoolQuery:
    split: str
    query_id: str
    text: str
    doc_ids: tuple[str, ...]
    group: str  # the corpus the documents' texts come from

    @property
    def key(self) -> str:
        return f"{self.split}\x1f{self.query_id}"


@dataclass
class JudgePool:
    queries: list[PoolQuery]
    texts: dict[str, dict[str, str]] = field(default_factory=dict)  # group -> id -> text
    source: str = ""

    @property
    def needs_split(self) -> bool:
        """Whether query ids repeat across splits (the tables then carry ``split``)."""
        ids = [q.query_id for q in self.queries]
        return len(set(ids)) != len(ids)

    def doc_texts(self, q: PoolQuery) -> list[str]:
        return [self.texts[q.group][d] for d in q.doc_ids]

    def digest(self) -> str:
        """sha256 of every query's id, text and pool (ids and texts, in order)."""
        h = hashlib.sha256()
        for q in self.queries:
            h.update(f"{q.key}\x1e{q.text}\x1e".encode())
            for d in q.doc_ids:
                h.update(f"{d}\x1d{self.texts[q.group][d]}\x1e".encode())
        return h.hexdigest()

    def limit(self, n: int | None) -> JudgePool:
        return self if n is None else JudgePool(self.queries[:n], self.texts, self.source)


def _doc_text(title: object, text: object) -> str:
    t = "" if title is None or (isinstance(title, float) and pd.isna(title)) else str(title)
    body = "" if text is None or (isinstance(text, float) and pd.isna(text)) else str(text)
    return f"{t}\n{body}".strip() if t else body


def read_pool(release) -> JudgePool:
    """The judge's input from a :class:`rcp_data.model.release.Release`."""
    spec, root = release.spec, release.root
    queries: list[PoolQuery] = []
    texts: dict[str, dict[str, str]] = {}
    pools: dict[str, pd.DataFrame] = {}
    for sub in spec.subsets:
        if not release.has(sub.name, "queries"):
            continue
        split = spec.provenance_split(sub.name)
        if split not in pools:
            path = root / provenance_file("pool", split)
            if not path.exists():
                raise InputError("no pool table (a judge run needs each query's pool)",
                                 path=str(path))
            pools[split] = release.provenance("pool", split, ["query-id", "corpus-id",
                                                              "pool_rank"])
        group = spec.corpus_group(sub.name) or sub.name
        if group not in texts:
            corpus = release.table(sub.name, "corpus")
            title = corpus["title"] if "title" in corpus.columns else [None] * len(corpus)
            texts[group] = {str(i): _doc_text(a, b) for i, a, b in zip(
                corpus["id"], title, corpus["text"], strict=True)}
        qs = release.table(sub.name, "queries", ["id", "text"])
        pool = pools[split]
        mine = pool[pool["query-id"].astype(str).isin(set(qs["id"].astype(str)))]
        mine = mine.sort_values(["query-id", "pool_rank"], kind="stable")
        by_query = mine.groupby("query-id", sort=False)["corpus-id"].agg(list)
        for qid, qtext in zip(qs["id"].astype(str), qs["text"], strict=True):
            docs = tuple(str(d) for d in by_query.get(qid, []))
            if not docs:
                continue
            missing = [d for d in docs if not texts[group].get(d, "").strip()]
            if missing:
                raise InputError(f"query {qid!r}: pool document {missing[0]!r} has no text "
                                 f"({len(missing)} of {len(docs)} without)",
                                 path=str(root / sub.name))
            queries.append(PoolQuery(split, qid, str(qtext), docs, group))
    if not queries:
        raise InputError("no query with a pool to judge", path=str(root))
    return JudgePool(queries, texts, str(release.ref or root))
