"""The per-subset counts a card states (:class:`SubsetFacts`), computed from the tables.

Arrow and numpy throughout (no DataFrame): each provenance pool is keyed once for all the subsets
it holds (:class:`PoolIndex`: a domain's pool serves its six language subsets), and each table
is read through :func:`rcp_data.core.io.read_parquet`, so that within ``verify`` a column the
integrity checks read already is not read again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.io import read_parquet
from rcp_data.model.keys import PairIndex, PairKeys, contains, positions, strings, vocabulary
from rcp_data.model.layout import provenance_file, subset_file
from rcp_data.model.release import Release, corpus_file_facts
from rcp_data.model.tables import read_release_table

POOL_COLUMNS = ["query-id", "corpus-id", "gt_injected", "judged"]   # judged is optional


@dataclass
class SubsetFacts:
    name: str
    queries: int
    corpus: int
    pool_pairs: int
    gt_injected: int
    judged: int
    pool_min: int
    pool_max: int
    excluded_docs: int
    queries_with_exclusions: int
    positives_outside_pool: int
    unjudged_rows: int
    queries_without_positive: int
    queries_with_more_positives_than_pool: int
    candidates_min: int = 0          # top_ranked list lengths (the pool minus exclusions)
    candidates_max: int = 0


def _per_code(codes: np.ndarray, n: int, values: np.ndarray | None = None) -> np.ndarray:
    """Rows (or true ``values``) per code ``0..n-1``; a code of -1 is left out."""
    known = codes >= 0
    weights = None if values is None else values[known]
    return np.bincount(codes[known], weights=weights, minlength=n).astype(np.int64)


def _true(col: pa.ChunkedArray) -> np.ndarray:
    """A boolean column as numpy (a null is false)."""
    return pc.fill_null(col, False).to_numpy(zero_copy_only=False).astype(bool)


@dataclass(frozen=True)
class PoolIndex:
    """A provenance pool table keyed once for every subset it holds: its query and document ids
    (:class:`PairKeys`), which (query, document) pairs it has (:class:`PairIndex`), and per query
    code its rows, its injected pairs and its judged pairs (None: no ``judged`` column, every
    pair judged). A row with a null query id belongs to no query; one with a null document id
    counts for its query but is no pair."""

    keys: PairKeys
    pairs: PairIndex
    rows: np.ndarray
    injected: np.ndarray
    judged: np.ndarray | None

    @classmethod
    def of(cls, pool: pa.Table) -> PoolIndex:
        q = pc.dictionary_encode(strings(pool.column("query-id")))
        d = pc.dictionary_encode(strings(pool.column("corpus-id")))
        qc = q.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        dc = d.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        keys = PairKeys(q.dictionary, d.dictionary)
        pair = (qc >= 0) & (dc >= 0)
        n = len(q.dictionary)
        judged = (_per_code(qc, n, _true(pool.column("judged")))
                  if "judged" in pool.column_names else None)
        return cls(keys=keys, pairs=PairIndex(keys, qc[pair], dc[pair], np.ones(int(pair.sum()), dtype=np.int64)),
                   rows=_per_code(qc, n), injected=_per_code(qc, n,
                                                             _true(pool.column("gt_injected"))),
                   judged=judged)

    def query_codes(self, ids: pa.Array) -> np.ndarray:
        """The distinct codes of the (non-null) ``ids`` that are pool queries."""
        codes = positions(ids, self.keys.queries)
        return np.unique(codes[codes >= 0])

    def has(self, q: pa.Array, d: pa.Array, *, among: np.ndarray) -> np.ndarray:
        """Whether each pair ``(q[i], d[i])`` is a pool pair of one of the queries ``among``
        (codes)."""
        qc = positions(q, self.keys.queries)
        member = np.zeros(len(self.rows) + 1, dtype=bool)   # the last slot: code -1, no query
        member[among] = True
        found = self.pairs.get(np.maximum(qc, 0), self.keys.doc_codes(d)) >= 0
        return member[qc] & found


def pool_index(rd: Release, split: str) -> PoolIndex:
    """The :class:`PoolIndex` of the provenance pool of ``split``."""
    return PoolIndex.of(read_release_table(rd.root / provenance_file("pool", split), "pool",
                                           POOL_COLUMNS))


def all_subset_facts(rd: Release) -> list[SubsetFacts]:
    """Facts of every subset, keying each provenance pool once."""
    pools: dict[str, PoolIndex] = {}
    out = []
    for s in rd.spec.subset_names:
        split = rd.spec.provenance_split(s)
        if split not in pools:
            pools = {split: pool_index(rd, split)}
        out.append(subset_facts(rd, s, pool=pools[split]))
    return out


def _table(rd: Release, subset: str, kind: str, columns: list[str] | None = None) -> pa.Table:
    return read_release_table(rd.root / subset_file(subset, kind), kind, columns)


def _excluded_pairs(rd: Release, subset: str) -> tuple[pa.Array, pa.Array]:
    """The (query, document) pairs the subset's excluded table lists (pairs with a null id left
    out); none without the table."""
    if not rd.has(subset, "excluded"):
        return pa.array([], pa.string()), pa.array([], pa.string())
    ex = _table(rd, subset, "excluded")
    listed = ex.column("excluded-corpus-ids").combine_chunks()
    ex_d = strings(pc.list_flatten(listed))
    ex_q = strings(ex.column("query-id")).take(pc.list_parent_indices(listed))
    valid = pc.and_(pc.is_valid(ex_q), pc.is_valid(ex_d))
    return ex_q.filter(valid), ex_d.filter(valid)


def _per_query(ids: pa.Array) -> np.ndarray:
    """Rows per distinct (non-null) query id."""
    return pc.value_counts(ids.drop_null()).field("counts").to_numpy(zero_copy_only=False)


def _span(values: np.ndarray) -> tuple[int, int]:
    return (int(values.min()), int(values.max())) if len(values) else (0, 0)


def subset_facts(rd: Release, subset: str, *, pool: PoolIndex | None = None) -> SubsetFacts:
    """Counts of one subset, computed from its tables (``pool``: the index of its provenance
    pool, :func:`pool_index`)."""
    spec = rd.spec
    pool = pool if pool is not None else pool_index(rd, spec.provenance_split(subset))
    queries = strings(_table(rd, subset, "queries", ["id"]).column("id"))
    corpus_rows = sum(f.rows for f in corpus_file_facts(rd.root, spec, subset))
    qrels = _table(rd, subset, "qrels", ["query-id", "corpus-id", "score", "theta"])
    qrel_q, qrel_d = strings(qrels.column("query-id")), strings(qrels.column("corpus-id"))
    ex_q, ex_d = _excluded_pairs(rd, subset)
    # the subset's pool: the rows of its queries (one count per query, pairs looked up)
    among = pool.query_codes(queries)
    sizes = pool.rows[among]
    if len(ex_q):   # pair keys of qrels and excluded pairs over one vocabulary of their ids
        keys = PairKeys(vocabulary(qrel_q, ex_q), vocabulary(qrel_d, ex_d))
        ex_keys = keys(ex_q, ex_d)
        ex_pairs = np.unique(ex_keys[ex_keys >= 0])
        qrel_keys = keys(qrel_q, qrel_d)
        is_excluded = contains(qrel_keys, ex_pairs) & (qrel_keys >= 0)
    else:
        ex_pairs, is_excluded = np.zeros(0, np.int64), np.zeros(len(qrel_q), bool)
    outside = ~pool.has(qrel_q, qrel_d, among=among)
    grades = qrels.column("score").cast(pa.float64()).to_numpy(zero_copy_only=False)
    pos = spec.positive_mask(grades) & ~is_excluded
    positive_q = qrel_q.filter(pa.array(pos))
    with_pos = set(positive_q.drop_null().to_pylist())
    n_pos = _per_query(positive_q)
    theta = qrels.column("theta")
    unjudged = theta.null_count + (int(pc.sum(pc.is_nan(theta)).as_py() or 0)
                                   if pa.types.is_floating(theta.type) else 0)
    top = read_parquet(rd.root / subset_file(subset, "top_ranked"), ["corpus-ids"])
    lengths = pc.list_value_length(top.column("corpus-ids")).to_numpy(zero_copy_only=False)
    pool_min, pool_max = _span(sizes)
    candidates_min, candidates_max = _span(lengths)
    pool_pairs = int(sizes.sum())
    return SubsetFacts(
        name=subset,
        queries=len(queries),
        corpus=int(corpus_rows),
        pool_pairs=pool_pairs,
        gt_injected=int(pool.injected[among].sum()),
        judged=int(pool.judged[among].sum()) if pool.judged is not None else pool_pairs,
        pool_min=pool_min,
        pool_max=pool_max,
        excluded_docs=len(ex_pairs),
        queries_with_exclusions=len(pc.unique(ex_q)),
        positives_outside_pool=int((pos & outside).sum()),
        unjudged_rows=int(unjudged),
        queries_without_positive=len(set(queries.drop_null().to_pylist()) - with_pos),
        queries_with_more_positives_than_pool=int((n_pos > spec.pool.size).sum()),
        candidates_min=candidates_min,
        candidates_max=candidates_max,
    )


__all__ = ["POOL_COLUMNS", "PoolIndex", "SubsetFacts", "all_subset_facts", "pool_index",
           "subset_facts"]
