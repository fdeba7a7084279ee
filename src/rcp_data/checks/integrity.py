"""Integrity checks of a release directory (the data half of ``rcp-data verify``).

Each check returns :class:`Check` records a person can read (what, expected, found, where)
and a machine can consume. Checks read plain tables and never modify anything.

Built for real scale (8.8M passages, 2.2M pool pairs): each id column is dictionary-encoded
once (a split's pool once for all its subsets; a column holding the pool's ids row for row
takes the pool's codes) and mapped onto a vocabulary, and every check is a vectorized numpy
operation on ``query * width + document`` keys, computed once per subset
(:class:`SubsetTables`); only the rows named in a failure's details become Python strings.
Rows already in the order a check needs are not sorted again (checked in one pass), and a
lookup goes through a table over the key range where it is small. Tables are read once per
provenance split (pool, first stage) and per corpus.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rcp_data.building.pools import FUSED
from rcp_data.checks.reports import MAX_DETAILS, Check
from rcp_data.core.errors import InputError
from rcp_data.core.gains import GAIN_TOLERANCE, ItemParams, gain_mismatches
from rcp_data.core.io import (
    float_values,
    schema_diff,
)
from rcp_data.model.card_format import config_data_files
from rcp_data.model.keys import (
    KeyIds,
    PairKeys,
    contains,
    positions,
    rows_of,
    strings,
    vocabulary,
)
from rcp_data.model.layout import (
    PROVENANCE_CONFIG,
    SUBSET_KINDS,
    corpus_files,
    provenance_file,
    subset_file,
)
from rcp_data.model.orders import in_order, lexsort_order, pairs_in_order
from rcp_data.model.release import Release
from rcp_data.model.schemas import OPTIONAL_COLUMNS, SCHEMAS, criteria_columns
from rcp_data.model.tables import corpus_record, gains_table, read_release_table

log = logging.getLogger(__name__)

RRF_TOLERANCE = 1e-12

_ok, _fail = Check.passed, Check.failed


# -- configs --------------------------------------------------------------------------------
def kind_of_config(name: str) -> str | None:
    for kind, cfg in PROVENANCE_CONFIG.items():
        if name == cfg:
            return kind
    for kind in SUBSET_KINDS:
        if name.endswith(f"-{kind}"):
            return kind
    return None


def check_configs(root: Path, configs: list[dict]) -> list[Check]:
    """Every config in the card exists, with the layout's columns and types."""
    checks: list[Check] = []
    if not configs:
        return [_fail("configs", "the card declares configs", "a YAML configs: list", "none",
                      "README.md")]
    for cfg in configs:
        name = cfg.get("config_name", "?")
        kind = kind_of_config(name)
        for split, pattern in config_data_files(cfg):
            paths = sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else (
                [root / pattern] if (root / pattern).exists() else [])
            where = f"config {name}, split {split}: {pattern}"
            if not paths:
                checks.append(_fail("config-files", "config file exists", "a parquet file",
                                    "missing", where))
                continue
            if kind is None:
                continue
            for path in paths:
                try:
                    schema = pq.read_schema(path)
                except (pa.ArrowInvalid, OSError) as exc:
                    raise InputError(f"cannot read parquet ({exc})", path=str(path)) from exc
                diff = schema_diff(schema, SCHEMAS[kind], OPTIONAL_COLUMNS.get(kind, ()))
                problems = [f"missing column {c!r}" for c in diff.missing]
                problems += [f"column {c!r} is {have}, expected {want}"
                             for c, have, want in diff.mistyped]
                absent = [f"missing column {c!r}" for c in diff.absent]
                if kind == "judge_criteria" and not criteria_columns(schema.names):
                    problems.append("no C1..Cn criterion columns")
                rel = str(path.relative_to(root))
                if problems:
                    checks.append(_fail("config-columns", "columns and types of the layout",
                                        "design-note schema", "; ".join(problems),
                                        f"config {name}: {rel}"))
                elif absent:
                    checks.append(Check("config-columns", True, "optional columns present",
                                        "present when the release has them", "; ".join(absent),
                                        f"config {name}: {rel}", status="absent"))
    if not any(c.name in ("config-files", "config-columns") and not c.ok for c in checks):
        checks.append(_ok("configs", f"all {len(configs)} configs of the card exist with the "
                          "layout's columns and types", found=f"{len(configs)} configs"))
    return checks


def check_config_coverage(rel: Release, configs: list[dict]) -> list[Check]:
    """The card declares a config for every table the release holds."""
    names = {c.get("config_name") for c in configs}
    want = []
    for s in rel.spec.subset_names:
        if not (rel.root / subset_file(s, "top_ranked")).exists():
            continue
        kinds = ["corpus", "queries", "qrels", "top_ranked"]
        kinds += [k for k in ("gains", "excluded") if rel.has(s, k)]
        want += [f"{s}-{k}" for k in kinds]
    for kind, cfg in PROVENANCE_CONFIG.items():
        if any(rel.has_provenance(kind, split) for split in rel.spec.provenance_splits):
            want.append(cfg)
    missing = [w for w in want if w not in names]
    what = "the card declares a config for every table of the release"
    if missing:
        return [_fail("configs-complete", what, f"{len(want)} configs", f"{len(missing)} missing",
                      "README.md", [f"no config {m!r}" for m in missing])]
    return [_ok("configs-complete", what, f"{len(want)} configs", "README.md")]


# -- vectorized helpers ----------------------------------------------------------------------
def _list_values(col: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """``(row of each value, values)`` of a list<str> column (null lists: no values)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_large_list(arr.type):
        arr = arr.cast(pa.list_(pa.string()))
    if arr.null_count:
        arr = arr.fill_null(pa.scalar([], type=arr.type))
    offsets = arr.offsets.to_numpy().astype(np.int64)
    rows = np.repeat(np.arange(len(arr), dtype=np.int64), np.diff(offsets))
    values = strings(arr.values.slice(offsets[0], offsets[-1] - offsets[0]))
    return rows, values


def _bools(col: pa.ChunkedArray | None, n: int, default: bool) -> np.ndarray:
    if col is None:
        return np.full(n, default, dtype=bool)
    arr = col.combine_chunks()
    return (arr.fill_null(default) if arr.null_count else arr).to_numpy(
        zero_copy_only=False).astype(bool)


def _ints(col: pa.ChunkedArray) -> np.ndarray:
    """An integer column as int64, a null as 0."""
    arr = col.combine_chunks()
    return (arr.fill_null(0) if arr.null_count else arr).to_numpy(
        zero_copy_only=False).astype(np.int64)


def _read(root: Path, rel: str, kind: str, columns: list[str] | None = None) -> pa.Table:
    return read_release_table(Path(root) / rel, kind, columns)


# -- per subset -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolCodes:
    """Dictionary codes of a provenance pool's query and document ids (-1: null), computed
    once per split: each subset takes its rows by query code, never hashing the ids again."""

    query_codes: np.ndarray
    query_dict: pa.Array
    doc_codes: np.ndarray
    doc_dict: pa.Array

    @classmethod
    def of(cls, pool: pa.Table) -> PoolCodes:
        (q, qd), (d, dd) = _codes(pool.column("query-id")), _codes(pool.column("corpus-id"))
        return cls(q, qd, d, dd)

    def rows_of_queries(self, qids: pa.Array) -> np.ndarray:
        """Which pool rows name one of ``qids`` (``pc.is_in``: a null matches a null)."""
        mine = np.append(positions(self.query_dict, qids) >= 0, qids.null_count > 0)
        return mine[self.query_codes]

    @staticmethod
    def first_seen(codes: np.ndarray, dictionary: pa.Array) -> pa.Array:
        """The distinct values that ``codes`` name, in order of first appearance."""
        return dictionary.take(pa.array(_first_seen(codes)))


@dataclass
class SubsetTables:
    """One subset's tables as the checks read them (arrow), and their pair keys
    (:class:`PairKeys` over the subset's vocabularies, computed once in :func:`load_subset`)."""

    name: str
    query_ids: pa.Array
    top_rows: np.ndarray             # query row of each candidate
    top_docs: pa.Array               # candidate ids, flat, pool order
    qrels: pa.Table
    excluded: pa.Table | None
    pool: pa.Table                   # provenance-pool rows of this subset's queries
    corpus_ids: pa.Array
    keys: PairKeys = field(repr=False, default=None)  # type: ignore[assignment]
    top_keys: np.ndarray = field(repr=False, default=None)       # type: ignore[assignment]
    top_doc_codes: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]
    pool_keys: np.ndarray = field(repr=False, default=None)      # type: ignore[assignment]
    pool_query_codes: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]
    qrels_keys: np.ndarray = field(repr=False, default=None)     # type: ignore[assignment]
    excluded_keys: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)


class _Corpora:
    """Corpus ids per corpus (a shared corpus is read once)."""

    def __init__(self, rel: Release):
        self.rel = rel
        self._cache: dict[tuple[str, ...], pa.Array] = {}

    def ids(self, subset: str) -> pa.Array:
        files = tuple(corpus_files(self.rel.root, self.rel.spec, subset))
        if files not in self._cache:
            parts = []
            for f in files:
                try:
                    parts.append(strings(pq.read_table(self.rel.root / f, columns=["id"])
                                          .column("id")))
                except (pa.ArrowInvalid, OSError, KeyError) as exc:
                    raise InputError(f"cannot read the corpus ids ({exc})",
                                     path=str(self.rel.root / f), field="id") from exc
            self._cache = {files: pa.concat_arrays(parts) if parts else pa.array([], pa.string())}
            log.info("read %d corpus ids of %s", len(self._cache[files]), subset)
        return self._cache[files]


def _pair_keys(K: PairKeys, q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Keys of codes ``q`` and ``d`` (-1 where either is -1): what ``K(ids, ids)`` gives."""
    if not len(q) or (q.min() >= 0 and d.min() >= 0):
        return q * K.width + d
    return np.where((q >= 0) & (d >= 0), q * K.width + d, -1)


def load_subset(rel: Release, subset: str, pool: pa.Table, corpora: _Corpora,
                pool_codes: PoolCodes | None = None) -> SubsetTables:
    """One subset's tables, its rows of the split's ``pool`` (``pool_codes``: that pool's
    codes, computed here when not given) and the pair keys of every table, from dictionary
    codes: each id column is hashed once."""
    root = rel.root
    codes = pool_codes or PoolCodes.of(pool)
    top = _read(root, subset_file(subset, "top_ranked"), "top_ranked")
    qids = strings(top.column("query-id"))
    rows, docs = _list_values(top.column("corpus-ids"))
    qrels = _read(root, subset_file(subset, "qrels"), "qrels",
                  ["query-id", "corpus-id", "score", "gain", "theta"])
    excluded = (_read(root, subset_file(subset, "excluded"), "excluded")
                if rel.has(subset, "excluded") else None)
    take = codes.rows_of_queries(qids)
    at = np.flatnonzero(take)
    contiguous = not len(at) or at[-1] - at[0] + 1 == len(at)
    mine = (pool.slice(int(at[0]) if len(at) else 0, len(at)) if contiguous
            else pool.filter(pa.array(take)))
    pool_q, pool_d = codes.query_codes[at], codes.doc_codes[at]
    ex_q = ex_d = pa.array([], pa.string())
    if excluded is not None:
        er, ex_d = _list_values(excluded.column("excluded-corpus-ids"))
        ex_q = strings(excluded.column("query-id")).take(pa.array(er))
    # a column that holds the pool's ids, value for value (qrels and top_ranked are usually
    # written in pool order), takes the pool's codes: the same strings, no hashing again
    mine_q, mine_d = (pool_q, codes.query_dict), (pool_d, codes.doc_dict)
    (top_d, top_dd), (ex_dc, ex_dd) = _codes_as(docs, mine, "corpus-id", mine_d), _codes(ex_d)
    qr_q, qr_qd = _codes_as(qrels.column("query-id"), mine, "query-id", mine_q)
    qr_d, qr_dd = _codes_as(qrels.column("corpus-id"), mine, "corpus-id", mine_d)
    seen = PoolCodes.first_seen
    K = PairKeys(vocabulary(qids, seen(qr_q, qr_qd), ex_q),
                 vocabulary(seen(top_d, top_dd), seen(pool_d, codes.doc_dict),
                            seen(qr_d, qr_dd), seen(ex_dc, ex_dd)))
    top_q = positions(qids, K.queries)[rows]
    top_dc = _recode(top_d, positions(top_dd, K.docs))
    pool_qc = _recode(pool_q, positions(codes.query_dict, K.queries))
    pool_keys = _pair_keys(K, pool_qc, _recode(pool_d, positions(codes.doc_dict, K.docs)))
    qrels_keys = _pair_keys(K, _recode(qr_q, positions(qr_qd, K.queries)),
                            _recode(qr_d, positions(qr_dd, K.docs)))
    ex_keys = (_pair_keys(K, positions(ex_q, K.queries), _recode(ex_dc, positions(ex_dd, K.docs)))
               if len(ex_q) else np.zeros(0, np.int64))
    return SubsetTables(subset, qids, rows, docs, qrels, excluded, mine, corpora.ids(subset),
                        K, top_keys=_pair_keys(K, top_q, top_dc), top_doc_codes=top_dc,
                        pool_keys=pool_keys, pool_query_codes=pool_qc, qrels_keys=qrels_keys,
                        excluded_keys=ex_keys)


def _codes_as(col: pa.ChunkedArray | pa.Array, table: pa.Table, name: str,
              known: tuple[np.ndarray, pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """:func:`_codes` of ``col``; ``known`` (the codes of ``table``'s column ``name``) when the
    two columns hold the same strings, row for row, none null."""
    values, other = strings(col), strings(table.column(name))
    if (len(values) == len(other) and not values.null_count and not other.null_count
            and (not len(values) or pc.all(pc.equal(values, other)).as_py())):
        return known
    return _codes(col)


def _pair_details(t: SubsetTables, keys: np.ndarray, prefix: str = "") -> list[str]:
    out = []
    for k in keys[:MAX_DETAILS]:
        q, d = t.keys.name(int(k))
        out.append(f"{prefix}query {q}, document {d}")
    return out


def check_subset(rel: Release, t: SubsetTables, params: ItemParams, link: str, *,
                 link_checked: bool = False) -> list[Check]:
    """Per-subset checks. ``link_checked``: every gain is known to equal the link of its theta
    (the pre-publish release check proved it), so that is not computed again."""
    s, K = t.name, t.keys
    checks: list[Check] = []
    top_keys, pool_keys = t.top_keys, t.pool_keys
    # top_ranked ids in corpus and pool (each document of the subset probed once)
    in_corpus = np.append(_in_corpus(K.docs, t.corpus_ids),
                          t.corpus_ids.null_count > 0)[t.top_doc_codes]
    miss = top_keys[~in_corpus]
    checks.append(_ok("top-ranked-in-corpus", "every top_ranked id is in the corpus",
                      f"{len(top_keys)} ids", s) if not len(miss) else _fail(
        "top-ranked-in-corpus", "every top_ranked id is in the corpus", "0 missing",
        f"{len(miss)} missing", f"{s}-top_ranked", _pair_details(t, miss)))
    miss = top_keys[~contains(top_keys, pool_keys)]
    checks.append(_ok("top-ranked-in-pool", "every top_ranked id is in provenance-pool",
                      f"{len(top_keys)} pairs", s) if not len(miss) else _fail(
        "top-ranked-in-pool", "every top_ranked id is in provenance-pool", "0 missing",
        f"{len(miss)} missing", f"{s}-top_ranked", _pair_details(t, miss)))
    checks.append(check_top_ranked_order(t, top_keys, pool_keys))
    # exclusions
    if t.excluded is not None:
        ex_keys = t.excluded_keys
        bad = top_keys[contains(top_keys, ex_keys)]
        checks.append(_ok("no-excluded-in-top-ranked", "no excluded id in top_ranked",
                          f"{len(ex_keys)} exclusions", s) if not len(bad) else _fail(
            "no-excluded-in-top-ranked", "no excluded id in top_ranked", "0", str(len(bad)),
            f"{s}-top_ranked", _pair_details(t, bad)))
    # the pool's excluded flag marks exactly the pooled documents of the excluded table
    if "excluded" in t.pool.column_names:
        flagged = _bools(t.pool.column("excluded"), t.pool.num_rows, False)
        odd = pool_keys[flagged != contains(pool_keys, t.excluded_keys)]
        what = "provenance-pool excluded = the document is in the query's excluded list"
        checks.append(_ok("excluded-flag", what, f"{int(flagged.sum())} flagged", s)
                      if not len(odd) else _fail("excluded-flag", what, "0 differences",
                                                 f"{len(odd)} differ", f"provenance-pool {s}",
                                                 _pair_details(t, odd)))
    # gains of the judged pool
    q_keys = t.qrels_keys
    theta_all, gain_all = float_values(t.qrels.column("theta")), float_values(t.qrels.column("gain"))
    n_pool = t.pool.num_rows
    cols = t.pool.column_names
    judged = _bools(t.pool.column("judged") if "judged" in cols else None, n_pool, True)
    if "judged" not in cols:
        judged &= ~_bools(t.pool.column("excluded") if "excluded" in cols else None, n_pool,
                          False)
    jk = pool_keys[judged]
    row = rows_of(q_keys, jk)
    theta = np.where(row >= 0, theta_all[np.maximum(row, 0)], np.nan)
    g = np.where(row >= 0, gain_all[np.maximum(row, 0)], np.nan)
    missing = ~np.isfinite(theta)
    expect = np.full(len(jk), np.nan)
    wrong = np.zeros(len(jk), dtype=bool)
    if not link_checked and (~missing).any():
        wrong[~missing], expect[~missing] = gain_mismatches(theta[~missing], g[~missing],
                                                            params, link)
    outside = ~missing & ~((g > 0) & (g < 1))
    bad = np.flatnonzero(missing | wrong | outside)
    details = []
    for i in bad[:MAX_DETAILS]:
        q, d = K.name(int(jk[i]))
        why = "no qrels row" if row[i] < 0 else f"theta={float(theta[i])!r}, gain={float(g[i])!r}"
        if row[i] >= 0 and not link_checked:
            why += f", expected {float(expect[i])!r}"
        details.append(f"subset {s}, query {q}, document {d}: {why}")
    rule = (f"gain = {link}(theta) within {GAIN_TOLERANCE:g}" if not link_checked else
            f"gain (= {link}(theta) per the release check)")
    checks.append(_ok(
        "gains", f"every judged pool document has a finite theta and {rule}, in (0, 1)",
        f"{len(jk)} documents", s) if not len(bad) else _fail(
        "gains", f"gain = {link}(theta) for every judged pool document", "0 mismatches",
        f"{len(bad)} mismatches", f"{s}-qrels", details))
    # positives in the pool or stated outside it
    pos = np.flatnonzero(rel.spec.positive_mask(float_values(t.qrels.column("score"))))
    out_pool = pos[~contains(q_keys[pos], pool_keys)]
    lost = out_pool[~(np.isnan(theta_all[out_pool]) & (np.nan_to_num(gain_all[out_pool]) == 0))]
    checks.append(_ok("positives-accounted", "every positive qrel is in the pool or stated "
                      "outside it (theta null, gain 0)",
                      f"{len(pos)} positives, {len(out_pool)} outside", s) if not len(lost)
                  else _fail("positives-accounted", "positive qrels outside the pool have theta "
                             "null and gain 0", "0", str(len(lost)), f"{s}-qrels",
                             _pair_details(t, q_keys[lost])))
    return checks


def check_top_ranked_order(t: SubsetTables, top_keys: np.ndarray, pool_keys: np.ndarray
                           ) -> Check:
    """Each query's ``top_ranked`` list is its pool in ``pool_rank`` order, exclusions removed."""
    K = t.keys
    n = t.pool.num_rows
    drop = _bools(t.pool.column("excluded") if "excluded" in t.pool.column_names else None,
                  n, False) | contains(pool_keys, t.excluded_keys)
    ranks = _ints(t.pool.column("pool_rank"))
    keep = np.flatnonzero(~drop)
    pq_, tq = pool_keys[keep] // K.width, top_keys // K.width
    what = "each top_ranked list is the query's pool in pool_rank order, exclusions removed"
    kept_keys = pool_keys[keep]
    if (len(kept_keys) == len(top_keys) and in_order(pq_, ranks[keep]) and in_order(tq)
            and (not len(top_keys) or top_keys.min() >= 0)
            and np.array_equal(kept_keys, top_keys)):
        # both in query order already and equal row for row: every list is its pool
        return _ok("top-ranked-order", what, f"{len(top_keys)} candidates", t.name)
    po = keep[lexsort_order(pq_, ranks[keep])]
    to = lexsort_order(tq)
    pk, tk = pool_keys[po], top_keys[to]
    pqs, tqs = pk // K.width, tk // K.width
    width = int(max(np.bincount(pqs).max(initial=0), np.bincount(tqs).max(initial=0))) + 1

    def slots(qs: np.ndarray) -> np.ndarray:
        _, start_of, _ = _segments(qs)
        return qs * width + (np.arange(len(qs)) - start_of)

    row = rows_of(slots(pqs), slots(tqs))
    bad_q = set(tqs[(row < 0) | (pk[np.maximum(row, 0)] != tk)].tolist()) if len(tk) else set()
    counts_p = np.bincount(pqs, minlength=len(K.queries))
    counts_t = np.bincount(tqs, minlength=len(K.queries))
    bad_q |= set(np.flatnonzero(counts_p != counts_t).tolist())
    if not bad_q:
        return _ok("top-ranked-order", what, f"{len(tk)} candidates", t.name)
    details = [f"query {K.queries[q].as_py()}: top_ranked has {int(counts_t[q])} candidates, "
               f"the pool {int(counts_p[q])} (or another order)" for q in sorted(bad_q)]
    return _fail("top-ranked-order", what, "the pool order", f"{len(bad_q)} queries differ",
                 f"{t.name}-top_ranked", details)


def _segments(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable grouping by ``codes``: ``(order, group start of each sorted row, starts)``."""
    order = lexsort_order(codes)
    sc = codes[order]
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]]) if len(sc) else np.zeros(0, np.int64)
    start_of = np.repeat(starts, np.diff(np.r_[starts, len(sc)]))
    return order, start_of, starts


def check_pool_rule(rel: Release, t: SubsetTables) -> list[Check]:
    """Pool sizes and ground-truth injection follow the suite's rule."""
    spec, s, K = rel.spec, t.name, t.keys
    size, rule = spec.pool.size, spec.pool.rule
    pool = t.pool
    n = pool.num_rows
    qc, keys = t.pool_query_codes, t.pool_keys
    ranks = _ints(pool.column("pool_rank"))
    rrf = float_values(pool.column("rrf_score"))
    inj = _bools(pool.column("gt_injected"), n, False)
    q_keys = t.qrels_keys
    pos_keys = q_keys[spec.positive_mask(float_values(t.qrels.column("score")))]
    positive = contains(keys, pos_keys)
    added = rrf == 0                                    # not from the fused top k
    order, start_of, starts = _segments(qc)
    position = np.arange(n) - start_of                  # 0-based, file order within the query
    sizes = np.diff(np.r_[starts, n])
    problems: dict[int, list[str]] = {}

    def flag(rows: np.ndarray, text: str) -> None:
        for q in np.unique(qc[rows]):
            problems.setdefault(int(q), []).append(text)

    sq = order                                           # rows in query order
    flag(sq[ranks[sq] != position + 1], "pool_rank is not 1..n in order")
    flag(np.flatnonzero(inj & (rrf != 0)), "an injected document has rrf_score != 0")
    flag(np.flatnonzero(inj & ~positive), "an injected document is not a positive qrel")
    if rule == "candidates":
        # the pools are the given candidate lists: nothing injected or added, no size cut
        flag(np.flatnonzero(inj), "a document is gt_injected into a fixed candidate list")
        flag(np.flatnonzero(added), "a document with rrf_score 0 is not from the candidate list")
    elif rule == "top-k-inject":
        flag(np.flatnonzero(added & ~inj), "a document with rrf_score 0 is not gt_injected")
    else:
        # TREC-DL: added (judged) passages with a positive grade are gt_injected; every positive
        # is in the pool (the pool holds every judged passage)
        flag(np.flatnonzero(added & positive & ~inj), "an added positive is not gt_injected")
        outside = pos_keys[(pos_keys >= 0) & ~contains(pos_keys, keys)]
        for q in np.unique(outside // K.width):
            problems.setdefault(int(q), []).append("a positive qrel is outside the pool")
    big = np.iinfo(np.int64).max
    if len(starts):
        inj_s = inj[sq]
        first_inj = np.minimum.reduceat(np.where(inj_s, position, big), starts)
        last_non = np.maximum.reduceat(np.where(~inj_s, position, -1), starts)
        group_q = qc[sq[starts]]
        if rule == "candidates":
            pass
        elif rule == "top-k-inject":
            for q, m in zip(group_q[sizes > size], sizes[sizes > size], strict=True):
                problems.setdefault(int(q), []).append(f"pool of {m} > {size}")
            for q in group_q[last_non > first_inj]:
                problems.setdefault(int(q), []).append("injected documents are not at the "
                                                       "bottom")
        else:
            fused = np.add.reduceat((rrf[sq] > 0).astype(np.int64), starts)
            for q, m in zip(group_q[fused > size], fused[fused > size], strict=True):
                problems.setdefault(int(q), []).append(f"{m} fused documents > {size}")
            add_s = added[sq]
            first_add = np.minimum.reduceat(np.where(add_s, position, big), starts)
            last_fused = np.maximum.reduceat(np.where(~add_s, position, -1), starts)
            for q in group_q[last_fused > first_add]:
                problems.setdefault(int(q), []).append("added documents (rrf_score 0) do not "
                                                       "follow the fused ones")
    details = [f"query {K.queries[q].as_py()}: {'; '.join(p)}"
               for q, p in sorted(problems.items())]
    if details:
        return [_fail("pool-rule", f"pools follow {rule}", "no problem",
                      f"{len(details)} queries with problems", f"provenance-pool {s}", details)]
    return [_ok("pool-rule", f"pools follow {rule} (size {size}), injection flagged",
                f"{len(sizes)} pools, {int(inj.sum())} injected, sizes "
                f"{int(sizes.min()) if len(sizes) else 0}-{int(sizes.max()) if len(sizes) else 0}",
                s)]


# -- fusion -----------------------------------------------------------------------------------
def check_fusion(rel: Release, split: str, pool: pa.Table,
                 pool_codes: PoolCodes | None = None) -> list[Check]:
    """Fusing provenance-first-stage reproduces ``rrf_fused`` and the pool's ``rrf_score``.

    An independent, vectorized reading of the docs/concepts's rule: ``sum_r 1 / (k + rank_r)``
    over the retrievers in the spec's order; ``rrf_fused`` must carry every recomputed score
    (< 1e-12), be ordered by score descending with equal scores in order of first appearance
    when the runs are walked in retriever order, and leave out no document scoring above its
    last one; every pool ``rrf_score`` > 0 must equal the recomputed score.
    """
    spec = rel.spec
    rel_path = provenance_file("first_stage", split)
    what = ("fusing provenance-first-stage reproduces rrf_fused and the pool's rrf_score "
            "(< 1e-12, same order)")
    if not (rel.root / rel_path).exists():
        return [Check("fusion", True, "provenance-first-stage present", "present", "absent",
                      rel_path, status="absent")]
    fs = read_release_table(rel.root / rel_path, "first_stage",
                            read_dictionary=("retriever", "query-id", "corpus-id"))
    names = list(spec.pool.retrievers)
    r_code, r_dict = _codes(fs.column("retriever"))
    r_idx = _recode(r_code, positions(r_dict, pa.array(names + [FUSED], pa.string())))
    problems: list[str] = []
    unknown = [None if c < 0 else r_dict[int(c)].as_py()
               for c in _first_seen(r_code[r_idx < 0], nulls=True)]
    if unknown:
        problems.append(f"unknown retriever(s) {unknown}; expected {names}")
    (fq, fq_dict), (fd, fd_dict) = _codes(fs.column("query-id")), _codes(fs.column("corpus-id"))
    codes = pool_codes or PoolCodes.of(pool)
    seen = PoolCodes.first_seen
    K = PairKeys(vocabulary(seen(fq, fq_dict), seen(codes.query_codes, codes.query_dict)),
                 vocabulary(seen(fd, fd_dict), seen(codes.doc_codes, codes.doc_dict)))
    fq_k, fd_k = _recode(fq, positions(fq_dict, K.queries)), _recode(fd, positions(fd_dict, K.docs))
    keys = _pair_keys(K, fq_k, fd_k)
    rank = _ints(fs.column("rank"))
    score = float_values(fs.column("score"))
    known = not len(keys) or keys.min() >= 0     # every pair's ids are known (no key -1)
    qcode = fq_k if known else keys // K.width
    run = np.flatnonzero((r_idx >= 0) & (r_idx < len(names)))
    stored = np.flatnonzero(r_idx == len(names))
    pk = _pair_keys(K, _recode(codes.query_codes, positions(codes.query_dict, K.queries)),
                    _recode(codes.doc_codes, positions(codes.doc_dict, K.docs)))
    prrf = float_values(pool.column("rrf_score"))
    scored = np.flatnonzero(prrf > 0)
    # the walk: per query, retrievers in order, each by rank (one stable sort of one key, the
    # order lexsort of the three gives). Where each query's rows are in that order in the file
    # already, the file order serves: each pair meets its rows, and each query its pairs, in
    # the order of the walk (the sums and the first appearances below are the walk's).
    q_run, r_run, rank_run = qcode[run], r_idx[run], rank[run]
    if _grouped_in_order(q_run, r_run, rank_run):
        walk, walk_rank = run, rank_run
    else:
        walk = run[lexsort_order(q_run, r_run, rank_run)]
        walk_rank = rank[walk]
    # every pair looked up, numbered in key order; the walk's first row of each
    pool_known = not len(pk) or pk.min() >= 0
    pairs = KeyIds(keys[walk], keys[stored], pk[scored],
                   within=len(K.queries) * K.width if known and pool_known else None)
    walk_id, stored_id, pool_id = pairs.ids
    first = np.full(pairs.n, len(walk), dtype=_index_type(len(walk)))
    np.minimum.at(first, walk_id, np.arange(len(walk), dtype=first.dtype))
    # summed in walk order, as a walk adds them
    fused_score = np.bincount(walk_id, weights=1.0 / (spec.pool.rrf_k + walk_rank),
                              minlength=pairs.n)
    stored_first = first[stored_id]
    found = stored_first < len(walk)               # pairs a first-stage run retrieved

    def name(i: int) -> str:
        q, d = K.name(int(keys[i]))
        return f"query {q}, rank {int(rank[i])}: document {d}"

    for i in stored[~found][:MAX_DETAILS]:
        problems.append(f"{name(i)} is in rrf_fused but no first-stage run retrieved it")
    st, st_id = stored[found], stored_id[found]
    mine = fused_score[st_id]
    st_score, st_rank, st_q = score[st], rank[st], qcode[st]
    off = np.abs(st_score - mine) >= RRF_TOLERANCE
    for i, m in zip(st[off][:MAX_DETAILS], mine[off][:MAX_DETAILS], strict=True):
        problems.append(f"{name(i)}: rrf_fused order differs from the fusion (it stores "
                        f"{float(score[i])!r}, the fusion gives this document {float(m)!r})")
    # order: ranks 1..n, score descending, equal scores by first appearance
    so, fo, q_so, r_so, s_so = st, stored_first[found], st_q, st_rank, st_score
    if not in_order(st_q, st_rank):
        o = np.lexsort((st_rank, st_q))
        so, fo, q_so, r_so, s_so = so[o], fo[o], q_so[o], r_so[o], s_so[o]
    head = np.r_[True, q_so[1:] != q_so[:-1]] if len(so) else np.zeros(0, dtype=bool)
    if len(so) > 1:
        same_q = ~head[1:]
        s0, s1 = s_so[:-1], s_so[1:]
        bad = same_q & ((s1 > s0) | ((s1 == s0) & (fo[1:] < fo[:-1])))
        bad |= same_q & (r_so[1:] != r_so[:-1] + 1)
        for j in np.flatnonzero(bad)[:MAX_DETAILS]:
            problems.append(f"{name(so[j + 1])}: rrf_fused order differs from the fusion "
                            "(score descending, ties by first appearance, ranks 1..n)")
    for i in so[head & (r_so != 1)][:MAX_DETAILS]:
        problems.append(f"{name(i)}: rrf_fused does not start at rank 1")
    # no document left out that scores above a query's last stored one
    if len(st):
        left_out = first < len(walk)
        left_out[st_id] = False
        low = np.full(len(K.queries), np.inf)
        np.minimum.at(low, st_q, mine)
        cand = np.flatnonzero(left_out)          # in key order
        left = cand[fused_score[cand] > low[pairs.key(cand) // K.width] + RRF_TOLERANCE]
        for u in left[:MAX_DETAILS]:
            q, d = K.name(int(pairs.key(u)))
            problems.append(f"query {q}: document {d} fuses to {float(fused_score[u])!r}, above the "
                            "last document of rrf_fused, but is missing from it")
    # the pool's rrf_score
    diff = np.full(len(scored), np.inf)
    fused_pool = first[pool_id] < len(walk)
    diff[fused_pool] = np.abs(prrf[scored][fused_pool] - fused_score[pool_id[fused_pool]])
    bad_pool = scored[~(diff < RRF_TOLERANCE)]
    if len(bad_pool):
        problems.append(f"{len(bad_pool)} pool rrf_score values differ from the fusion")
        for i in bad_pool[:MAX_DETAILS]:
            q, d = K.name(int(pk[i]))
            problems.append(f"pool: query {q}, document {d}: rrf_score {float(prrf[i])!r}")
    # the pool's fused part follows the fused order (a pair's first stored row gives its rank)
    first_stored = np.full(pairs.n, len(st), dtype=_index_type(len(st)))
    np.minimum.at(first_stored, st_id, np.arange(len(st), dtype=first_stored.dtype))
    srow = first_stored[pool_id]
    fused_rank = np.append(st_rank, -1)[srow]
    prank = _ints(pool.column("pool_rank"))
    pq_ = pk[scored] // K.width
    o = lexsort_order(pq_, prank[scored])
    if len(o) > 1:
        same_q = pq_[o][1:] == pq_[o][:-1]
        fr = fused_rank[o]
        back = same_q & (fr[1:] >= 0) & (fr[:-1] >= 0) & (fr[1:] <= fr[:-1])
        for j in np.flatnonzero(back)[:MAX_DETAILS]:
            q, d = K.name(int(pk[scored][o[j + 1]]))
            problems.append(f"pool: query {q}, document {d} (pool_rank "
                            f"{int(prank[scored][o[j + 1]])}) is out of the fused order")
    if problems:
        return [_fail("fusion", what, "identical", f"{len(problems)} problems", rel_path,
                      problems)]
    # no problem: every stored row is in ``so``, each query's rows together
    return [_ok("fusion", what, f"{int(head.sum())} queries, {len(stored)} fused rows",
                rel_path)]


def _index_type(n: int) -> type:
    """The narrowest of int32 and int64 that holds ``0..n``."""
    return np.int32 if n < 2**31 - 1 else np.int64


def _codes(col: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes of a string column (-1: null) and its dictionary (string)."""
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    col = pa.table({"c": col}).unify_dictionaries().column("c")
    if col.num_chunks == 0:
        return np.zeros(0, dtype=np.int32), pa.array([], type=pa.string())
    codes = np.concatenate([_indices(c.indices) for c in col.chunks]) if col.num_chunks > 1 \
        else _indices(col.chunk(0).indices)
    return codes, strings(col.chunk(0).dictionary)


def _indices(indices: pa.Array) -> np.ndarray:
    """Dictionary indices as a signed integer array (arrow's own, no copy), a null as -1."""
    if indices.null_count:
        indices = indices.fill_null(-1)
    codes = indices.to_numpy(zero_copy_only=False)
    return codes if codes.dtype.kind == "i" else codes.astype(np.int64)


def _first_seen(codes: np.ndarray, *, nulls: bool = False) -> np.ndarray:
    """The distinct codes (>= 0, or -1 too with ``nulls``), in order of first appearance."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    low = codes.min()
    if not nulls and low < 0:
        codes = codes[codes >= 0]
        if not len(codes):
            return np.zeros(0, dtype=np.int64)
        low = codes.min()
    # codes that first appear as 0, 1, 2, ... (a dictionary in order of first appearance):
    # the running maximum starts at the lowest code and never rises by more than one
    top = np.maximum.accumulate(codes)
    if top[0] == low and (len(top) < 2 or (np.diff(top) <= 1).all()):
        return np.arange(int(top[0]), int(top[-1]) + 1, dtype=np.int64)
    shifted = codes + 1
    first = np.full(int(shifted.max()) + 1, len(shifted), dtype=np.int64)
    np.minimum.at(first, shifted, np.arange(len(shifted), dtype=np.int64))
    present = np.flatnonzero(first < len(shifted))
    return present[np.argsort(first[present])] - 1


def _recode(codes: np.ndarray, to: np.ndarray) -> np.ndarray:
    """``to[code]`` for each code (int64), -1 staying -1."""
    if np.array_equal(to, np.arange(len(to))):     # the same order: the codes themselves
        return codes.astype(np.int64)
    return np.append(np.asarray(to, dtype=np.int64), -1)[codes]


def _grouped_in_order(group: np.ndarray, *keys: np.ndarray) -> bool:
    """Whether the rows of each value of ``group``, in file order, are in order of ``keys``
    (the first most significant), wherever in the file they lie. One pass over the rows, and
    one over the runs of equal ``group`` values."""
    if len(group) < 2:
        return True
    same = group[1:] == group[:-1]
    if not pairs_in_order(same, [(k[:-1], k[1:]) for k in keys]):
        return False
    starts = np.r_[0, np.flatnonzero(~same) + 1]      # runs of one group value
    ends = np.r_[starts[1:], len(group)] - 1
    o = np.argsort(group[starts], kind="stable")      # each value's runs, in file order
    before, after = ends[o][:-1], starts[o][1:]
    return pairs_in_order(group[starts][o][1:] == group[starts][o][:-1],
                           [(k[before], k[after]) for k in keys])


def _in_corpus(docs: pa.Array, corpus_ids: pa.Array) -> np.ndarray:
    """Whether each of ``docs`` is a corpus id. The corpus (millions of ids) is probed with
    the few distinct ``docs`` rather than hashed itself: ten times faster on MS MARCO."""
    if not len(docs):
        return np.zeros(0, bool)
    wanted = pc.unique(docs)
    present = pc.unique(corpus_ids.filter(pc.is_in(corpus_ids, value_set=wanted)))
    return pc.is_in(docs, value_set=present).to_numpy(zero_copy_only=False)


_SORT_FROM = 100_000  # ids from which the integer fast path of _repeated pays off


def _repeated_integers(ids: pa.Array) -> list[tuple[str, int]] | None:
    """:func:`_repeated` for ids that are all canonical decimal integers (each equal to its
    integer written back), by sorting int64s: 20x faster than hashing millions of strings.
    None when the ids are anything else."""
    if len(ids) < _SORT_FROM or ids.null_count or not pa.types.is_string(ids.type):
        return None
    try:
        numbers = pc.cast(ids, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not pc.all(pc.equal(pc.cast(numbers, pa.string()), ids)).as_py():
        return None  # "007", "+7": distinct strings that parse to one number
    ordered = np.sort(numbers.to_numpy())
    again = ordered[1:][ordered[1:] == ordered[:-1]]
    values, extra = np.unique(again, return_counts=True)
    return [(str(v), int(n) + 1) for v, n in zip(values.tolist(), extra.tolist(), strict=True)]


def _repeated(ids: pa.Array) -> list[tuple[str, int]]:
    """Values that occur more than once, with their counts."""
    fast = _repeated_integers(ids)
    if fast is not None:
        return fast
    counts = pc.value_counts(ids)
    many = counts.filter(pc.greater(counts.field("counts"), 1))
    return list(zip(many.field("values").to_pylist(), many.field("counts").to_pylist(),
                    strict=True))


def check_ids(rel: Release, tables: dict[str, SubsetTables]) -> list[Check]:
    """Corpus ids are unique per corpus; query ids are unique per subset, and the queries
    table and top_ranked name the same queries."""
    problems, seen = [], set()
    for s, t in tables.items():
        files = tuple(corpus_files(rel.root, rel.spec, s))
        if files not in seen:
            seen.add(files)
            problems += [f"{files[0] if len(files) == 1 else 'corpus of ' + s}: id {v!r} "
                         f"{n} times" for v, n in _repeated(t.corpus_ids)[:MAX_DETAILS]]
        queries = strings(_read(rel.root, subset_file(s, "queries"), "queries", ["id"])
                           .column("id"))
        problems += [f"{subset_file(s, 'queries')}: id {v!r} {n} times"
                     for v, n in _repeated(queries)[:MAX_DETAILS]]
        problems += [f"{subset_file(s, 'top_ranked')}: query {v!r} {n} times"
                     for v, n in _repeated(t.query_ids)[:MAX_DETAILS]]
        only_q = set(queries.to_pylist()) ^ set(t.query_ids.to_pylist())
        problems += [f"subset {s}: query {q!r} is in only one of queries and top_ranked"
                     for q in sorted(only_q)[:MAX_DETAILS]]
    what = ("corpus ids are unique per corpus, query ids per subset, and queries and "
            "top_ranked name the same queries")
    if problems:
        return [_fail("ids-unique", what, "no repeated id", f"{len(problems)} problems",
                      "corpus, queries, top_ranked", problems)]
    return [_ok("ids-unique", what, f"{len(seen)} corpora, {len(tables)} subsets")]


def check_gains_derived(rel: Release, subset: str) -> list[Check]:
    """``{subset}-gains`` is its qrels' query-id, corpus-id and gain, row for row
    (:func:`rcp_data.model.tables.gains_table`, recomputed here from the qrels)."""
    path = subset_file(subset, "gains")
    what = "the gains table is the qrels' (query-id, corpus-id, gain), row for row"
    if not rel.has(subset, "gains"):
        return [Check("gains-derived", True, what, "present", "absent", path, status="absent")]
    want = gains_table(read_release_table(rel.root / subset_file(subset, "qrels"), "qrels",
                                          ["query-id", "corpus-id", "gain"]))
    got = read_release_table(rel.root / path, "gains").select(want.column_names)
    if got.num_rows != want.num_rows:
        return [_fail("gains-derived", what, f"{want.num_rows:,} rows", f"{got.num_rows:,} rows",
                      path)]
    for name in want.column_names:
        field_type = want.schema.field(name).type
        va = got.column(name).cast(field_type).to_numpy(zero_copy_only=False)
        vb = want.column(name).to_numpy(zero_copy_only=False)
        differ = np.flatnonzero(va != vb)
        if len(differ):
            row = int(differ[0])
            def shown(v):
                return repr(v.item() if hasattr(v, "item") else v)

            return [_fail("gains-derived", what, f"{shown(vb[row])} (qrels row {row})",
                          shown(va[row]), f"{path}, row {row}, field {name}")]
    return [_ok("gains-derived", what, f"{want.num_rows:,} rows equal", path)]


def check_optional(rel: Release) -> list[Check]:
    """Report optional provenance tables that the release does not carry."""
    out = []
    for kind in ("first_stage", "judge_criteria", "runs"):
        for split in rel.spec.provenance_splits:
            p = provenance_file(kind, split)
            if not (rel.root / p).exists():
                out.append(Check(f"optional-{kind}", True, f"{PROVENANCE_CONFIG[kind]} present",
                                 "present", "absent", p, status="absent"))
    return out


def subset_counts(t: SubsetTables) -> dict[str, int]:
    """The counts a build records (and a card states) for one subset, from the data."""
    return {"queries": t.n_queries, "pool_pairs": t.pool.num_rows,
            "gt_injected": int(_bools(t.pool.column("gt_injected"), t.pool.num_rows,
                                      False).sum())}


def check_manifest_counts(rel: Release, tables: dict[str, SubsetTables]) -> list[Check]:
    """The counts the build recorded (and the card states) equal the data."""
    manifest = rel.manifest
    counts = manifest.counts if manifest else {}
    problems = []
    for s, t in tables.items():
        c = counts.get(s)
        if not c:
            continue
        for k, v in subset_counts(t).items():
            if k in c and int(c[k]) != v:
                problems.append(f"subset {s}: {k} recorded {c[k]}, data has {v}")
    recorded = manifest.corpus_files if manifest else None
    if recorded is not None:  # what a card states about a corpus it did not download
        actual = corpus_record(rel.root)
        problems += [f"corpus file {p}: recorded {recorded.get(p)}, data has {actual.get(p)}"
                     for p in sorted(set(recorded) | set(actual))
                     if recorded.get(p) != actual.get(p)]
    if not counts:
        return [Check("counts", True, "build manifest counts", "present", "absent",
                      "provenance/build_manifest.json", status="absent")]
    if problems:
        return [_fail("counts", "recorded counts equal the data", "equal", f"{len(problems)} "
                      "differences", "provenance/build_manifest.json", problems)]
    return [_ok("counts", "recorded counts (queries, pool pairs, injected) equal the data",
                f"{len(tables)} subsets", "provenance/build_manifest.json")]


def run_integrity(rel: Release, params: ItemParams, link: str,
                  configs: list[dict] | None = None, *, link_checked: bool = False
                  ) -> tuple[list[Check], dict[str, SubsetTables]]:
    """All data checks of a release directory (``link_checked``: see :func:`check_subset`)."""
    checks: list[Check] = []
    if configs is not None:
        checks += check_configs(rel.root, configs)
        checks += check_config_coverage(rel, configs)
    tables: dict[str, SubsetTables] = {}
    corpora = _Corpora(rel)
    by_split: dict[str, list[str]] = {}
    for s in rel.spec.subset_names:
        by_split.setdefault(rel.spec.provenance_split(s), []).append(s)
    for split, subsets in by_split.items():
        present = [s for s in subsets if (rel.root / subset_file(s, "top_ranked")).exists()]
        for s in subsets:
            if s not in present:
                checks.append(_fail("subset-present", "every subset of the suite is present",
                                    "present", "missing", s))
        if not present:
            continue
        pool = _read(rel.root, provenance_file("pool", split), "pool")
        codes = PoolCodes.of(pool)
        for s in present:
            t = load_subset(rel, s, pool, corpora, codes)
            tables[s] = t
            checks += check_subset(rel, t, params, link, link_checked=link_checked)
            checks += check_gains_derived(rel, s)
            checks += check_pool_rule(rel, t)
        checks += check_fusion(rel, split, pool, codes)
        log.info("integrity: split %s checked (%d pool pairs)", split, pool.num_rows)
    checks += check_ids(rel, tables)
    checks += check_optional(rel)
    checks += check_manifest_counts(rel, tables)
    log.info("integrity: %d checks, %d failed", len(checks), sum(not c.ok for c in checks))
    return checks, tables
