"""The per-subset counts a card states (:class:`SubsetFacts`), computed from the tables.

Arrow and numpy throughout (no DataFrame). Each provenance pool is keyed once for all the
subsets it holds (:class:`PoolIndex`: a domain's pool serves its language subsets); ids are read
as the dictionaries parquet stores (``read_dictionary``), so that an id is looked up once per
distinct value, not once per row; every table is read through
:func:`rcp_data.core.io.read_parquet`, so that within ``verify`` a column another stage read
already (the replay reads the qrels ids so) is not read again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.io import read_parquet
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.keys import DENSE_LIMIT, PairKeys, contains, positions, strings, vocabulary
from rcp_data.model.layout import provenance_file, subset_file
from rcp_data.model.release import Release, corpus_file_facts
from rcp_data.model.tables import read_release_table

ID_COLUMNS = ("query-id", "corpus-id")     # read dictionary-encoded
POOL_COLUMNS = [*ID_COLUMNS, "gt_injected", "judged"]   # judged is optional
QRELS_COLUMNS = [*ID_COLUMNS, "score", "theta"]


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
    # queries with more positive labels than the pool holds, excluded documents counted
    deep_queries: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ids:
    """A column of ids as codes into its distinct values (code -1: a null)."""

    codes: np.ndarray
    values: pa.Array

    @classmethod
    def of(cls, col: pa.ChunkedArray) -> Ids:
        """From the dictionary the file stores (read with ``read_dictionary``), each chunk's
        unified; a column of plain strings is encoded first."""
        if not pa.types.is_dictionary(col.type):
            col = pc.dictionary_encode(col)
        col = pa.table({"c": col}).unify_dictionaries().column("c")
        if col.num_chunks == 0:
            return cls(np.zeros(0, np.int64), pa.array([], pa.string()))
        values = strings(col.chunk(0).dictionary)
        if len(pc.unique(values)) < len(values):   # a writer that repeats a dictionary value
            return cls.of(pa.chunked_array([strings(c.dictionary.take(c.indices))
                                            for c in col.chunks], pa.string()))
        codes = [c.indices.fill_null(-1).to_numpy(zero_copy_only=False) for c in col.chunks]
        return cls(codes[0] if len(codes) == 1 else np.concatenate(codes), values)

    def per_value(self, rows: np.ndarray | None = None) -> np.ndarray:
        """How many rows (of ``rows``, a mask) hold each distinct value."""
        codes = self.codes if rows is None else self.codes[rows]
        if self.nulls:
            codes = codes[codes >= 0]
        return np.bincount(codes, minlength=len(self.values))

    @property
    def nulls(self) -> bool:
        """Whether a row holds no id (null)."""
        return bool(len(self.codes)) and int(self.codes.min()) < 0

    def holding(self, counts: np.ndarray) -> pa.Array:
        """The distinct values whose count (:meth:`per_value`) is not 0."""
        return self.values.filter(pa.array(counts > 0))

    def recoded(self, codes_of_values: np.ndarray, null: int = -1) -> np.ndarray:
        """Each row's code in another vocabulary, given each distinct value's code there
        (``null`` for a null)."""
        return np.append(codes_of_values, null)[self.codes]


def _true(col: pa.ChunkedArray) -> np.ndarray:
    """A boolean column as numpy (a null is false)."""
    return pc.fill_null(col, False).to_numpy(zero_copy_only=False).astype(bool)


class _PairSet:
    """Which keys of a :class:`PairKeys` space a set of pairs holds: a bitmap when the space is
    small (``DENSE_LIMIT``), else the sorted keys."""

    def __init__(self, keys: np.ndarray, space: int):
        self.bits: np.ndarray | None = None
        if space <= DENSE_LIMIT:
            self.bits = np.zeros(space, dtype=bool)
            self.bits[keys] = True
        else:
            self.sorted = np.unique(keys)

    def has(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key (>= 0) is in the set."""
        return self.bits[keys] if self.bits is not None else contains(keys, self.sorted)


@dataclass(frozen=True)
class PoolIndex:
    """A provenance pool table keyed once for every subset it holds: its query and document ids
    (:class:`PairKeys`), which (query, document) pairs it has, and per query code its rows, its
    injected pairs and its judged pairs (None: no ``judged`` column, every pair judged). A row
    with a null query id belongs to no query; one with a null document id counts for its query
    but is no pair."""

    keys: PairKeys
    pairs: _PairSet
    rows: np.ndarray
    injected: np.ndarray
    judged: np.ndarray | None

    @classmethod
    def of(cls, pool: pa.Table) -> PoolIndex:
        q, d = Ids.of(pool.column("query-id")), Ids.of(pool.column("corpus-id"))
        keys = PairKeys(q.values, d.values)
        qc, dc = q.codes, d.codes
        if q.nulls or d.nulls:
            pair = (qc >= 0) & (dc >= 0)
            qc, dc = qc[pair], dc[pair]
        judged = (q.per_value(_true(pool.column("judged")))
                  if "judged" in pool.column_names else None)
        return cls(keys=keys,
                   pairs=_PairSet(keys.of_codes(qc, dc), max(len(q.values), 1) * keys.width),
                   rows=q.per_value(), injected=q.per_value(_true(pool.column("gt_injected"))),
                   judged=judged)

    def query_codes(self, ids: pa.Array) -> np.ndarray:
        """The distinct codes of the (non-null) ``ids`` that are queries of the pool."""
        codes = positions(ids, self.keys.queries)
        codes = np.unique(codes[codes >= 0])
        return codes[self.rows[codes] > 0]

    def has(self, q: Ids, d: Ids, *, among: np.ndarray) -> np.ndarray:
        """Whether each pair ``(q[i], d[i])`` is a pool pair of one of the queries ``among``
        (codes)."""
        qc = q.recoded(positions(q.values, self.keys.queries))
        dc = d.recoded(self.keys.doc_codes(d.values), null=self.keys.width - 1)
        member = np.zeros(len(self.rows) + 1, dtype=bool)   # the last slot: code -1, no query
        member[among] = True
        return member[qc] & self.pairs.has(self.keys.of_codes(np.maximum(qc, 0), dc))


def pool_index(rd: Release, split: str) -> PoolIndex:
    """The :class:`PoolIndex` of the provenance pool of ``split``."""
    return PoolIndex.of(read_release_table(rd.root / provenance_file("pool", split), "pool",
                                           POOL_COLUMNS, read_dictionary=ID_COLUMNS))


def corpus_key(spec: SuiteSpec, subset: str) -> tuple[str | None, str | None]:
    """Which corpus a subset reads: ``(group, None)`` for a shared one, ``(None, subset)`` for
    its own."""
    group = spec.corpus_group(subset)
    return (group, None) if group is not None else (None, subset)


def corpus_rows(rd: Release, subset: str) -> int:
    """Rows of the corpus a subset reads (:func:`corpus_file_facts`)."""
    return sum(f.rows for f in corpus_file_facts(rd.root, rd.spec, subset))


def all_subset_facts(rd: Release) -> list[SubsetFacts]:
    """Facts of every subset, keying each provenance pool once and counting each shared
    corpus once."""
    pools: dict[str, PoolIndex] = {}
    corpora: dict[tuple[str | None, str | None], int] = {}
    out = []
    for s in rd.spec.subset_names:
        split = rd.spec.provenance_split(s)
        if split not in pools:
            pools = {split: pool_index(rd, split)}
        group = corpus_key(rd.spec, s)
        if group not in corpora:
            corpora[group] = corpus_rows(rd, s)
        out.append(subset_facts(rd, s, pool=pools[split], corpus=corpora[group]))
    return out


def _table(rd: Release, subset: str, kind: str, columns: list[str] | None = None,
           read_dictionary: tuple[str, ...] = ()) -> pa.Table:
    return read_release_table(rd.root / subset_file(subset, kind), kind, columns,
                              read_dictionary=read_dictionary)


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


def _excluded(qrels: pa.Table, ex_q: pa.Array, ex_d: pa.Array) -> tuple[int, np.ndarray]:
    """How many distinct pairs the excluded lists hold, and which qrels rows are one of them
    (pair keys over one vocabulary of both tables' ids)."""
    if not len(ex_q):
        return 0, np.zeros(qrels.num_rows, dtype=bool)
    qrel_q, qrel_d = strings(qrels.column("query-id")), strings(qrels.column("corpus-id"))
    keys = PairKeys(vocabulary(qrel_q, ex_q), vocabulary(qrel_d, ex_d))
    ex_keys = keys(ex_q, ex_d)
    ex_pairs = np.unique(ex_keys[ex_keys >= 0])
    qrel_keys = keys(qrel_q, qrel_d)
    return len(ex_pairs), contains(qrel_keys, ex_pairs) & (qrel_keys >= 0)


def _span(values: np.ndarray) -> tuple[int, int]:
    return (int(values.min()), int(values.max())) if len(values) else (0, 0)


def subset_facts(rd: Release, subset: str, *, pool: PoolIndex | None = None,
                 corpus: int | None = None) -> SubsetFacts:
    """Counts of one subset, computed from its tables (``pool``: the index of its provenance
    pool, :func:`pool_index`; ``corpus``: the rows of its corpus, :func:`corpus_rows`)."""
    spec = rd.spec
    pool = pool if pool is not None else pool_index(rd, spec.provenance_split(subset))
    corpus = corpus if corpus is not None else corpus_rows(rd, subset)
    queries = strings(_table(rd, subset, "queries", ["id"]).column("id"))
    qrels = _table(rd, subset, "qrels", QRELS_COLUMNS, read_dictionary=ID_COLUMNS)
    qrel_q, qrel_d = Ids.of(qrels.column("query-id")), Ids.of(qrels.column("corpus-id"))
    ex_q, ex_d = _excluded_pairs(rd, subset)
    excluded_docs, is_excluded = _excluded(qrels, ex_q, ex_d)
    # the subset's pool: the rows of its queries
    among = pool.query_codes(queries)
    sizes = pool.rows[among]
    outside = ~pool.has(qrel_q, qrel_d, among=among)
    grades = qrels.column("score").cast(pa.float64()).to_numpy(zero_copy_only=False)
    labelled = spec.positive_mask(grades)
    deep = qrel_q.holding(qrel_q.per_value(labelled) > spec.pool.size)
    pos = labelled & ~is_excluded
    n_pos = qrel_q.per_value(pos)                  # positives per distinct query id
    distinct = pc.unique(queries.drop_null())
    with_pos = pc.is_in(distinct, value_set=qrel_q.holding(n_pos))
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
        corpus=int(corpus),
        pool_pairs=pool_pairs,
        gt_injected=int(pool.injected[among].sum()),
        judged=int(pool.judged[among].sum()) if pool.judged is not None else pool_pairs,
        pool_min=pool_min,
        pool_max=pool_max,
        excluded_docs=excluded_docs,
        queries_with_exclusions=len(pc.unique(ex_q)),
        positives_outside_pool=int((pos & outside).sum()),
        unjudged_rows=int(unjudged),
        queries_without_positive=len(distinct) - int(pc.sum(with_pos).as_py() or 0),
        queries_with_more_positives_than_pool=int((n_pos > spec.pool.size).sum()),
        candidates_min=candidates_min,
        candidates_max=candidates_max,
        deep_queries=tuple(sorted(deep.to_pylist())),
    )


__all__ = ["ID_COLUMNS", "POOL_COLUMNS", "QRELS_COLUMNS", "Ids", "PoolIndex", "SubsetFacts",
           "all_subset_facts", "corpus_key", "corpus_rows", "pool_index", "subset_facts"]
