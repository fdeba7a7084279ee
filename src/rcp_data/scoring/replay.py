"""Replay a release directory's result tables: per-query nDCG@k, subset means, view tables.

Follows the docs/concepts (``release-layout.md``, *Replaying the tables*):

- candidates = ``{subset}/top_ranked`` (pool order, exclusions removed); every run in
  ``provenance/runs/{split}`` must score every candidate of every query of the subset exactly
  once; a run naming a document outside the pool is an error; rows of excluded documents are
  dropped;
- RCP-nDCG: gains from ``qrels.gain`` (null reads as 0), ideal over all gains of the query's
  qrels rows (the judged pool), exclusions removed; a query whose ideal is 0 scores 0 and stays
  in the mean;
- qrel-nDCG: gains = ``qrels.score`` (negative grades count 0), ideal over all positive qrels
  of the query, also outside the pool; a query without a positive qrel (a grade the suite counts
  as positive, :meth:`~rcp_data.core.specs.SuiteSpec.positive_mask`; exclusions removed) is left
  out of the mean (the paper's convention, ``without_positives="skip"``), or counted with the
  value its grades give, 0 where no document has a grade above 0 (``"zero"``: what mteb's
  ``ndcg_at_k`` does, through pytrec_eval, in every mteb 2.x the task file supports);
- mean over queries per subset, then the unweighted mean over subsets or view columns.

Loading (:func:`load_release`) and scoring (:func:`score_queries`) are separate, so one load
serves several tie rules and views; :func:`replay_release` does both for one table set.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.errors import InputError, SchemaError, UsageError, shown
from rcp_data.core.progress import progress
from rcp_data.core.specs import (
    DEFAULT_WITHOUT_POSITIVES,
    TIE_RULES,
    WITHOUT_POSITIVES,
    SuiteSpec,
    positive_mask,
)
from rcp_data.model.card_format import CARD_K, render_markdown_table, table_title, view_heading
from rcp_data.model.keys import (
    PairIndex,
    PairKeys,
    checked_floats,
    dictionary_codes,
    positions,
)
from rcp_data.model.layout import provenance_file, subset_file
from rcp_data.model.release import open_release
from rcp_data.model.suite import suite_spec
from rcp_data.model.tables import read_release_table
from rcp_data.scoring.baseline_gains import BASELINE_METRICS, read_baseline_gains
from rcp_data.scoring.metrics import (
    byte_order_key,
    ideal_dcg,
    ndcg_at_k_blocks,
    ndcg_at_k_rules,
)

log = logging.getLogger(__name__)

METRICS = ("rcp_ndcg", "qrel_ndcg")
#: Every metric a replay can show: the card's two, then Count-nDCG and Raw-BT-nDCG where the
#: release ships the Stage B verdicts and the Bradley-Terry scores (:mod:`.baseline_gains`).
ALL_METRICS = (*METRICS, *BASELINE_METRICS)


# -- loaded data ---------------------------------------------------------------------------------
@dataclass
class SubsetRuns:
    """One subset, aligned for the engine: candidates, gains, ideals and every run's scores."""

    subset: str
    query_ids: np.ndarray            # (Q,) str
    offsets: np.ndarray              # (Q + 1,) candidates of query q: [offsets[q], offsets[q+1])
    corpus_ids: pa.Array             # (n,) str, pool order within each query
    doc_key: np.ndarray              # (n,) byte-wise order rank of corpus_ids
    gains: np.ndarray                # (2, n): RCP gain, qrel grade (negative -> 0)
    ideal_offsets: np.ndarray        # (Q + 1,) ragged qrels rows per query (exclusions removed)
    ideal_gains: np.ndarray          # (2, m): RCP gains, qrel grades of those rows
    has_positive: np.ndarray         # (Q,) bool: a positive qrel among those rows
    models: list[str]
    is_judge: np.ndarray             # (R,) bool
    scores: np.ndarray               # (R, n)
    # Count-nDCG / Raw-BT-nDCG gains of the candidates, where the release ships their sources
    baselines: dict[str, np.ndarray] = field(default_factory=dict)   # {metric: (n,)}

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def candidate_query_ids(self) -> np.ndarray:
        """``(n,)`` the query id of each candidate."""
        return np.repeat(self.query_ids, np.diff(self.offsets))


@dataclass(frozen=True)
class ReleaseRuns:
    """A loaded release: its spec and every subset's aligned data."""

    root: Path | None
    spec: SuiteSpec
    subsets: dict[str, SubsetRuns]
    suite_known: bool = True

    @property
    def models(self) -> list[str]:
        seen: list[str] = []
        for s in self.subsets.values():
            for m in s.models:
                if m not in seen:
                    seen.append(m)
        return seen


# -- small helpers -------------------------------------------------------------------------------
def _arrow(table: pa.Table | pd.DataFrame) -> pa.Table:
    if isinstance(table, pd.DataFrame):
        return pa.Table.from_pandas(table, preserve_index=False)
    return table


def _require(table: pa.Table, columns: list[str], path: str) -> None:
    for c in columns:
        if c not in table.column_names:
            raise SchemaError(f"missing column {c!r} (has {', '.join(table.column_names)})",
                              path=path, field=c)


def _take(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    return values if rows is None else values[rows]


def _read(root: Path, rel: str, kind: str, columns: list[str],
          dictionary: Sequence[str] = ()) -> pa.Table:
    """Read the columns of a release table, checking the schema first (names file and column)."""
    return read_release_table(root / rel, kind, columns, read_dictionary=tuple(dictionary))


# -- building one subset from plain tables -------------------------------------------------------
@dataclass
class _Candidates:
    query_ids: pa.Array
    offsets: np.ndarray
    doc_ids: pa.Array                # (n,)
    qidx: np.ndarray                 # (n,)
    docs: pa.Array                   # extended document dictionary: candidates, then excluded
    dcode: np.ndarray                # (n,) candidate document codes
    pairs: PairIndex                # -> candidate index, or -2 for an excluded pair
    excluded_pairs: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (
        np.zeros(0, np.int64), np.zeros(0, np.int64)))


def _candidates(top_ranked: pa.Table, excluded: pa.Table | None, path_top: str,
                path_excl: str) -> _Candidates:
    _require(top_ranked, ["query-id", "corpus-ids"], path_top)
    qcol = top_ranked.column("query-id")
    if qcol.null_count:
        dictionary_codes(qcol, "query-id", path_top)
    qids = qcol.combine_chunks().cast(pa.string())
    if len(pc.unique(qids)) != len(qids):
        dup = pd.Series(qids.to_pylist()).duplicated()
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"duplicate query {qids[row].as_py()!r}", path=path_top, row=row,
                         field="query-id")
    lists = top_ranked.column("corpus-ids").combine_chunks()
    if lists.null_count:
        row = int(np.flatnonzero(lists.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError("null candidate list", path=path_top, row=row, field="corpus-ids")
    if isinstance(lists, pa.LargeListArray):
        lists = lists.cast(pa.list_(pa.string()))
    offsets = lists.offsets.to_numpy().astype(np.int64)
    offsets = offsets - offsets[0]
    values = lists.flatten().cast(pa.string())
    if values.null_count:
        raise InputError("null corpus id in a candidate list", path=path_top, field="corpus-ids")
    n_q = len(qids)
    qidx = np.repeat(np.arange(n_q, dtype=np.int64), np.diff(offsets))

    # excluded pairs (query code, excluded id)
    ex_q = np.zeros(0, dtype=np.int64)
    ex_ids = pa.array([], type=pa.string())
    if excluded is not None and excluded.num_rows:
        _require(excluded, ["query-id", "excluded-corpus-ids"], path_excl)
        eq = positions(excluded.column("query-id").combine_chunks().cast(pa.string()), qids)
        elists = excluded.column("excluded-corpus-ids").combine_chunks()
        if isinstance(elists, pa.LargeListArray):
            elists = elists.cast(pa.list_(pa.string()))
        elists = elists.fill_null(pa.scalar([], type=elists.type)) if elists.null_count else elists
        eoff = elists.offsets.to_numpy().astype(np.int64)
        ex_q = np.repeat(eq, np.diff(eoff))
        ex_ids = elists.flatten().cast(pa.string())
        keep = ex_q >= 0                      # exclusions of queries outside the subset: ignore
        ex_q, ex_ids = ex_q[keep], ex_ids.filter(pa.array(keep))

    docs = pc.unique(pa.concat_arrays([values, ex_ids]))
    keys = PairKeys(qids, docs)
    dcode = positions(values, docs)
    ex_d = positions(ex_ids, docs)
    if len(ex_q):
        probe = PairIndex(keys, ex_q, ex_d, np.full(len(ex_q), -2))
        hit = probe.get(qidx, dcode) == -2
        if hit.any():
            log.warning("%s: %d excluded candidates dropped from top_ranked", path_top,
                        int(hit.sum()))
            keep = ~hit
            counts = np.bincount(qidx[keep], minlength=n_q)
            offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            values = values.filter(pa.array(keep))
            qidx, dcode = qidx[keep], dcode[keep]
    n = len(values)
    all_q = np.concatenate([qidx, ex_q])
    all_d = np.concatenate([dcode, ex_d])
    all_v = np.concatenate([np.arange(n, dtype=np.int64), np.full(len(ex_q), -2)])
    pairs = PairIndex(keys, all_q, all_d, all_v)
    back = pairs.get(qidx, dcode)
    if not np.array_equal(back, np.arange(n)):
        i = int(np.flatnonzero(back != np.arange(n))[0])
        raise InputError(
            f"query {qids[int(qidx[i])].as_py()!r} lists candidate {values[i].as_py()!r} twice",
            path=path_top, row=int(qidx[i]), field="corpus-ids")
    return _Candidates(qids, offsets, values, qidx, docs, dcode, pairs, (ex_q, ex_d))


def _qrels(qrels: pa.Table, cand: _Candidates, path: str, grade_positive: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Candidate gains ``(2, n)``, ideal offsets, ideal gains ``(2, m)`` and which queries have
    a positive qrel ``(Q,)``, from the qrels."""
    _require(qrels, ["query-id", "corpus-id", "score", "gain"], path)
    q_idx, q_dict = dictionary_codes(qrels.column("query-id"), "query-id", path)
    d_idx, d_dict = dictionary_codes(qrels.column("corpus-id"), "corpus-id", path)
    score_col = qrels.column("score")
    if score_col.null_count:
        row = int(np.flatnonzero(score_col.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError("null grade", path=path, row=row, field="score")
    grade = checked_floats(score_col, "score", path, null_as=None)
    gain = checked_floats(qrels.column("gain"), "gain", path, null_as=0.0)
    if (gain < 0).any():
        row = int(np.flatnonzero(gain < 0)[0])
        raise InputError(f"negative gain {shown(gain[row])}", path=path, row=row, field="gain")
    if (gain > 1).any():
        row = int(np.flatnonzero(gain > 1)[0])
        raise InputError(f"gain {shown(gain[row])} above 1 (a gain is a fraction in [0, 1])",
                         path=path, row=row, field="gain")
    q = positions(q_dict, cand.query_ids)[q_idx]
    inside = q >= 0                                   # rows of queries in this subset
    d_ext = cand.pairs.keys.doc_codes(d_dict)[d_idx]
    target = np.full(len(q), -1, dtype=np.int64)     # candidate index, -2 excluded, -1 outside
    target[inside] = cand.pairs.get(q[inside], d_ext[inside])
    rows = np.flatnonzero(inside & (target != -2))
    # duplicates (query, document): same grade and gain -> one row; different -> error
    d_key = d_idx[rows]
    key = q[rows] * (len(d_dict) + 1) + d_key
    order = np.lexsort((key,))
    sk = key[order]
    same = sk[1:] == sk[:-1]
    if same.any():
        a, b = rows[order[:-1][same]], rows[order[1:][same]]
        diff = (grade[a] != grade[b]) | (gain[a] != gain[b])
        if diff.any():
            i = int(np.flatnonzero(diff)[0])
            fld = "score" if grade[a[i]] != grade[b[i]] else "gain"
            raise InputError(
                f"duplicate (query, document) rows with different values: "
                f"({q_dict[int(q_idx[a[i]])].as_py()!r}, {d_dict[int(d_idx[a[i]])].as_py()!r}) "
                f"rows {int(min(a[i], b[i]))} and {int(max(a[i], b[i]))}",
                path=path, row=int(max(a[i], b[i])), field=fld)
        drop = np.zeros(len(rows), dtype=bool)
        drop[order[1:][same]] = True
        rows = rows[~drop]
    n = len(cand.doc_ids)
    gains = np.zeros((2, n), dtype=np.float64)
    t = target[rows]
    on = t >= 0
    gains[0, t[on]] = gain[rows[on]]
    gains[1, t[on]] = np.maximum(grade[rows[on]], 0.0)
    missing = n - int(on.sum())
    if missing:
        log.info("%s: %d candidates without a qrels row (gain 0)", path, missing)
    # ragged ideal rows grouped by query
    rq = q[rows]
    order = np.argsort(rq, kind="stable")
    counts = np.bincount(rq, minlength=len(cand.query_ids))
    ideal_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    ideal_gains = np.vstack([gain[rows][order], np.maximum(grade[rows][order], 0.0)])
    has_positive = np.bincount(rq[positive_mask(grade[rows], grade_positive)],
                               minlength=len(cand.query_ids)) > 0
    return gains, ideal_offsets, ideal_gains, has_positive


def _runs(runs: pa.Table, cands: dict[str, _Candidates], path: str, *,
          include_judge: bool) -> dict[str, tuple[list[str], np.ndarray, np.ndarray]]:
    """Scores ``(R, n)`` per subset sharing one runs file: ``{subset: (models, is_judge, S)}``."""
    _require(runs, ["model", "query-id", "corpus-id", "score"], path)
    m_idx, m_dict = dictionary_codes(runs.column("model"), "model", path)
    q_idx, q_dict = dictionary_codes(runs.column("query-id"), "query-id", path)
    d_idx, d_dict = dictionary_codes(runs.column("corpus-id"), "corpus-id", path)
    score = checked_floats(runs.column("score"), "score", path, null_as=None)
    models = [str(m) for m in m_dict.to_pylist()]
    if "is_judge" in runs.column_names:
        jcol = runs.column("is_judge")
        jv = jcol.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
        n_true = np.bincount(m_idx, weights=jv, minlength=len(models))
        n_all = np.bincount(m_idx, minlength=len(models))
        mixed = (n_true > 0) & (n_true < n_all)
        if mixed.any():
            raise InputError(f"model {models[int(np.flatnonzero(mixed)[0])]!r} has rows with "
                             "is_judge true and false", path=path, field="is_judge")
        judge = n_true > 0
    else:
        judge = np.zeros(len(models), dtype=bool)
    # which subset (and local query) each run query belongs to
    names = list(cands)
    starts = np.cumsum([0] + [len(cands[s].query_ids) for s in names])
    all_q = pa.concat_arrays([cands[s].query_ids for s in names]) if names else pa.array([])
    if len(pc.unique(all_q)) != len(all_q):
        raise InputError("a query id belongs to two subsets sharing this runs file", path=path)
    qpos = positions(q_dict, all_q)
    unknown = np.flatnonzero(qpos < 0)
    row_qpos = qpos[q_idx]
    if len(unknown):
        bad_rows = np.flatnonzero(row_qpos < 0)
        if len(bad_rows):
            r = int(bad_rows[0])
            raise InputError(
                f"run of model {models[int(m_idx[r])]!r} scores query "
                f"{q_dict[int(q_idx[r])].as_py()!r}, which is in no top_ranked of "
                f"{', '.join(names)}", path=path, row=r, field="query-id")
    keep_model = np.ones(len(models), dtype=bool) if include_judge else ~judge
    wanted = np.flatnonzero(keep_model)
    local = np.full(len(models), -1, dtype=np.int64)
    local[wanted] = np.arange(len(wanted))
    if len(names) == 1 and keep_model.all():
        groups = [None]                                     # every row, no copy
    else:
        sub_of = np.repeat(np.arange(len(names), dtype=np.int16), np.diff(starts))
        row_sub = np.where(keep_model[m_idx], sub_of[row_qpos], len(names)).astype(np.int16)
        grouped = np.argsort(row_sub, kind="stable")         # radix sort of small ints
        bounds = np.searchsorted(row_sub[grouped], np.arange(len(names) + 1))
        groups = [grouped[bounds[i]:bounds[i + 1]] for i in range(len(names))]
    out: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
    for si, s in enumerate(names):
        cand = cands[s]
        rows = groups[si]
        lq = _take(row_qpos, rows) - starts[si]
        ld = cand.pairs.keys.doc_codes(d_dict)[_take(d_idx, rows)]
        target = cand.pairs.get(lq, ld)
        if (target < 0).any():
            outside = np.flatnonzero(target == -1)
            if len(outside):
                r = int(outside[0] if rows is None else rows[outside[0]])
                raise InputError(
                    f"run of model {models[int(m_idx[r])]!r} names document "
                    f"{d_dict[int(d_idx[r])].as_py()!r} for query "
                    f"{q_dict[int(q_idx[r])].as_py()!r}, which is not a candidate (top_ranked) "
                    f"of subset {s!r}", path=path, row=r, field="corpus-id")
            inpool = np.flatnonzero(target >= 0)             # drop rows of excluded documents
            rows = inpool if rows is None else rows[inpool]
            target = target[inpool]
        n = len(cand.doc_ids)
        mr = local[_take(m_idx, rows)]
        flat = mr * n + target
        counts = np.bincount(flat, minlength=len(wanted) * n).reshape(len(wanted), n)
        if (counts != 1).any():
            if (counts > 1).any():
                mi, ci = np.argwhere(counts > 1)[0]
                raise InputError(
                    f"run of model {models[int(wanted[mi])]!r} scores document "
                    f"{cand.doc_ids[int(ci)].as_py()!r} of query "
                    f"{cand.query_ids[int(cand.qidx[ci])].as_py()!r} twice", path=path,
                    field="corpus-id")
            mi, ci = np.argwhere(counts == 0)[0]
            n_miss = int((counts[mi] == 0).sum())
            raise InputError(
                f"run of model {models[int(wanted[mi])]!r} omits candidate "
                f"{cand.doc_ids[int(ci)].as_py()!r} of query "
                f"{cand.query_ids[int(cand.qidx[ci])].as_py()!r} (subset {s!r}; {n_miss} "
                "candidates missing in all); every run must score every candidate",
                path=path, field="corpus-id")
        scores = np.empty((len(wanted), n), dtype=np.float64)
        scores.reshape(-1)[flat] = _take(score, rows)
        out[s] = ([models[i] for i in wanted], judge[wanted], scores)
    return out


def build_split_runs(subsets: dict[str, tuple], runs: pa.Table | pd.DataFrame, *,
                     include_judge: bool = False, runs_name: str = "runs",
                     names: dict[str, dict[str, str]] | None = None,
                     grade_positive: int = 1) -> dict[str, SubsetRuns]:
    """Align the subsets that share one runs table, from in-memory tables.

    ``subsets`` maps a subset name to ``(qrels, top_ranked, excluded or None)`` (columns as in
    the published layout; string ids plain or dictionary-encoded). ``names`` labels the tables
    in error messages (``{subset: {"qrels": path, ...}}``). ``grade_positive``: the suite's
    lowest positive grade (``[source] grade_positive``).
    """
    names = names or {}
    cands: dict[str, _Candidates] = {}
    qrel_parts = {}
    for s, (qrels, top_ranked, excluded) in subsets.items():
        lab = names.get(s, {})
        cands[s] = _candidates(_arrow(top_ranked),
                               None if excluded is None else _arrow(excluded),
                               lab.get("top_ranked", f"{s}/top_ranked"),
                               lab.get("excluded", f"{s}/excluded"))
        qrel_parts[s] = _qrels(_arrow(qrels), cands[s], lab.get("qrels", f"{s}/qrels"),
                               grade_positive)
    scored = _runs(_arrow(runs), cands, runs_name, include_judge=include_judge)
    return {s: _assemble(s, cands[s], *qrel_parts[s], scored[s]) for s in subsets}


def build_subset_runs(subset: str, qrels: pa.Table | pd.DataFrame,
                      top_ranked: pa.Table | pd.DataFrame, runs: pa.Table | pd.DataFrame,
                      excluded: pa.Table | pd.DataFrame | None = None, *,
                      include_judge: bool = False, grade_positive: int = 1) -> SubsetRuns:
    """Align one subset from in-memory tables; ``runs`` may hold only this subset's queries."""
    return build_split_runs({subset: (qrels, top_ranked, excluded)}, runs,
                            include_judge=include_judge, grade_positive=grade_positive)[subset]


def _assemble(subset: str, cand: _Candidates, gains: np.ndarray, ideal_off: np.ndarray,
              ideal_g: np.ndarray, has_positive: np.ndarray,
              scored: tuple[list[str], np.ndarray, np.ndarray]) -> SubsetRuns:
    models, judge, scores = scored
    return SubsetRuns(
        subset=subset,
        query_ids=np.asarray(cand.query_ids.to_pylist(), dtype=object),
        offsets=cand.offsets,
        corpus_ids=cand.doc_ids,
        doc_key=byte_order_key(cand.doc_ids),
        gains=gains,
        ideal_offsets=ideal_off,
        ideal_gains=ideal_g,
        has_positive=has_positive,
        models=models,
        is_judge=np.asarray(judge, dtype=bool),
        scores=scores,
    )


# -- loading a release directory -----------------------------------------------------------------
def load_release(root: str | Path, spec: SuiteSpec | str | None = None, *,
                 include_judge: bool = False, known: bool | None = None,
                 baselines: bool = True) -> ReleaseRuns:
    """Read and align every subset of a release directory (see module docstring); ``known``:
    whether its suite is a known one (default: whether ``spec`` or the release names one).
    ``baselines``: also attach the Count-nDCG and Raw-BT-nDCG gains where the release ships
    their sources."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("not a directory", path=str(root))
    release = open_release(root, suite=spec, adhoc=True)
    spec, known = release.spec, release.known if known is None else known
    by_split: dict[str, list[str]] = {}
    for s in spec.subset_names:
        by_split.setdefault(spec.provenance_split(s), []).append(s)
    subsets: dict[str, SubsetRuns] = {}
    for split, names in progress(by_split.items(), desc="replay", unit="split", leave=False,
                             disable=len(by_split) < 4):
        tables, labels = {}, {}
        for s in names:
            excl = None
            if release.has(s, "excluded"):
                excl = _read(root, subset_file(s, "excluded"), "excluded",
                             ["query-id", "excluded-corpus-ids"])
            tables[s] = (
                _read(root, subset_file(s, "qrels"), "qrels",
                      ["query-id", "corpus-id", "score", "gain"], ["query-id", "corpus-id"]),
                _read(root, subset_file(s, "top_ranked"), "top_ranked",
                      ["query-id", "corpus-ids"]),
                excl,
            )
            labels[s] = {kind: str(root / subset_file(s, kind))
                         for kind in ("qrels", "top_ranked", "excluded")}
        rel = provenance_file("runs", split)
        runs = _read(root, rel, "runs", ["model", "is_judge", "query-id", "corpus-id", "score"],
                     ["model", "query-id", "corpus-id"])
        log.info("read %s: %d rows", rel, runs.num_rows)
        built = build_split_runs(tables, runs, include_judge=include_judge,
                                 runs_name=str(root / rel), names=labels,
                                 grade_positive=spec.grade_positive)
        for s in names:
            subsets[s] = built[s]
            log.info("subset %s: %d queries, %d candidates, %d runs", s,
                     subsets[s].n_queries, len(subsets[s].corpus_ids), len(subsets[s].models))
    _check_models(subsets, root, spec)
    if baselines:
        attach_baselines(subsets, root, spec)
    return ReleaseRuns(root=root, spec=spec, subsets=subsets, suite_known=known)


def attach_baselines(subsets: dict[str, SubsetRuns], root: Path, spec: SuiteSpec) -> None:
    """Set each subset's ``baselines`` gains from the release's verdicts and BT scores (a
    verdict or BT table that cannot be read leaves them out, with a warning: ``verify``
    names its problem)."""
    try:
        found = read_baseline_gains(root, spec)
    except InputError as exc:
        log.warning("Count-nDCG and Raw-BT-nDCG left out: %s", exc)
        return
    if found is None:
        return
    for name, sub in subsets.items():
        sub.baselines = found.for_candidates(spec.provenance_split(name),
                                             sub.candidate_query_ids,
                                             np.asarray(sub.corpus_ids.to_pylist(), dtype=object))
        log.info("subset %s: %s gains attached", name, ", ".join(sub.baselines))


def _check_models(subsets: dict[str, SubsetRuns], root: Path, spec: SuiteSpec) -> None:
    every: list[str] = []
    for s in subsets.values():
        every += [m for m in s.models if m not in every]
    for name, s in subsets.items():
        missing = [m for m in every if m not in s.models]
        if missing and s.n_queries:
            raise InputError(
                f"no run of model {missing[0]!r} for subset {name!r} (every run must score "
                "every candidate of every query)",
                path=str(root / provenance_file("runs", spec.provenance_split(name))),
                field="model")


# -- scoring -------------------------------------------------------------------------------------
def _check_without_positives(value: str) -> None:
    if value not in WITHOUT_POSITIVES:
        raise UsageError(f"unknown --queries-without-positives {value!r}; choose one of "
                         f"{', '.join(WITHOUT_POSITIVES)}")


def exp_gains(grades: np.ndarray) -> np.ndarray:
    """The exponential gain ``2^g - 1`` of grades already clipped at 0 (``SubsetRuns.gains[1]``,
    ``ideal_gains[1]``): :func:`rcp_data.scoring.qrels_score.gain_of`'s ``"exp"``."""
    return np.exp2(grades) - 1.0


def score_subset(data: SubsetRuns, *, k: int = CARD_K,
                 tie_rules: Sequence[str] = ("doc-id",),
                 without_positives: str = DEFAULT_WITHOUT_POSITIVES,
                 exp_gain: bool = False,
                 ) -> dict[str, dict[str, np.ndarray]]:
    """Per-query values ``{tie_rule: {"rcp_ndcg": (R, Q), "qrel_ndcg": (R, Q)}}``, plus
    ``count_ndcg`` / ``raw_bt_ndcg`` where the subset has their gains (ideal over the
    candidates; a query whose ideal is 0 scores 0), and with ``exp_gain`` ``qrel_exp_ndcg``:
    qrel-nDCG with the exponential gain ``2^grade - 1``, from the same sort of each run.

    qrel-nDCG is NaN for queries without a positive qrel (left out of means) under
    ``without_positives="skip"``; under ``"zero"`` it is what their grades give (mteb's).
    """
    if k < 1:
        raise UsageError(f"--k must be at least 1 (got {k})")
    _check_without_positives(without_positives)
    ideal = ideal_dcg(data.ideal_offsets, data.ideal_gains, k)           # (2, Q)
    key = data.doc_key if "doc-id" in tie_rules else None
    extra = [m for m in BASELINE_METRICS if m in data.baselines]
    if data.scores.shape[0] == 0:
        empty = np.zeros((0, data.n_queries))
        names = ["rcp_ndcg", "qrel_ndcg", *(["qrel_exp_ndcg"] if exp_gain else []), *extra]
        return {r: dict.fromkeys(names, empty) for r in tie_rules}
    blocks = [(data.gains, ideal)]
    if exp_gain:   # its own block: the values a separate call on these gains gives
        blocks.append((exp_gains(data.gains[1]),
                       ideal_dcg(data.ideal_offsets, exp_gains(data.ideal_gains[1]), k)))
    found = ndcg_at_k_blocks(data.offsets, data.scores, blocks, k=k,
                             tie_rules=list(tie_rules), doc_key=key)
    res = found[0]                                                       # (R, 2, Q)
    no_pos = ~data.has_positive if without_positives == "skip" \
        else np.zeros(data.n_queries, dtype=bool)
    out = {}
    for rule, v in res.items():
        qrel = v[:, 1, :].copy()
        qrel[:, no_pos] = np.nan
        out[rule] = {"rcp_ndcg": v[:, 0, :], "qrel_ndcg": qrel}
        if exp_gain:
            exp = found[1][rule].copy()                                  # (R, Q)
            exp[:, no_pos] = np.nan
            out[rule]["qrel_exp_ndcg"] = exp
    if extra:
        gains = np.stack([data.baselines[m] for m in extra])                # (B, n)
        res = ndcg_at_k_rules(data.offsets, data.scores, gains,
                              ideal_dcg(data.offsets, gains, k), k=k,
                              tie_rules=list(tie_rules), doc_key=key)      # (R, B, Q)
        for rule, v in res.items():
            out[rule].update({m: v[:, i, :] for i, m in enumerate(extra)})
    return out


def score_queries(data: ReleaseRuns, *, k: int = CARD_K,
                  tie_rules: Sequence[str] = ("doc-id",),
                  without_positives: str = DEFAULT_WITHOUT_POSITIVES,
                  exp_gain: bool = False) -> pd.DataFrame:
    """Long table of per-query values: ``tie_rule, subset, model, query-id, rcp_ndcg,
    qrel_ndcg`` (qrel NaN where the query has no positive qrel, under ``"skip"``), then
    ``count_ndcg`` and ``raw_bt_ndcg`` when some subset has their gains (NaN in a subset
    without them), then, with ``exp_gain``, ``qrel_exp_ndcg`` (:func:`score_subset`)."""
    for r in tie_rules:
        if r not in TIE_RULES:
            raise UsageError(f"unknown tie rule {r!r}; choose one of {', '.join(TIE_RULES)}")
    frames = []
    extra = [m for m in BASELINE_METRICS if any(m in s.baselines for s in data.subsets.values())]
    extra += ["qrel_exp_ndcg"] if exp_gain else []
    for name, sub in data.subsets.items():
        res = score_subset(sub, k=k, tie_rules=tie_rules, without_positives=without_positives,
                           exp_gain=exp_gain)
        n_r, n_q = len(sub.models), sub.n_queries
        for rule in tie_rules:
            frame = pd.DataFrame({
                "tie_rule": rule,
                "subset": name,
                "model": np.repeat(np.asarray(sub.models, dtype=object), n_q),
                "query-id": np.tile(sub.query_ids, n_r),
                "rcp_ndcg": res[rule]["rcp_ndcg"].reshape(-1),
                "qrel_ndcg": res[rule]["qrel_ndcg"].reshape(-1),
            })
            for m in extra:
                frame[m] = res[rule][m].reshape(-1) if m in res[rule] else np.nan
            frames.append(frame)
    cols = ["tie_rule", "subset", "model", "query-id", "rcp_ndcg", "qrel_ndcg", *extra]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def model_order(spec: SuiteSpec, models: Sequence[str]) -> list[str]:
    """Rows as in the cards: the spec's reranker order, then unmapped models by name."""
    mapped = [hub for hub in spec.rerankers.values() if hub in models]
    return mapped + sorted(m for m in models if m not in mapped)


def summarize(per_query: pd.DataFrame, spec: SuiteSpec, *, view: str = "subsets",
              tie_rule: str | None = None) -> dict[str, pd.DataFrame]:
    """View tables ``{metric: DataFrame}``: rows = models, columns = view keys + ``mean``;
    unrounded fractions. Means over queries per subset, then unweighted over columns."""
    columns = spec.view_columns(view)
    pq_ = per_query
    if tie_rule is not None:
        pq_ = pq_[pq_["tie_rule"] == tie_rule]
    elif pq_["tie_rule"].nunique() > 1:
        raise UsageError("per-query table holds several tie rules; name one")
    metrics = [m for m in ALL_METRICS if m in pq_.columns]
    sub_means = pq_.groupby(["model", "subset"], sort=False)[metrics].mean()
    models = model_order(spec, list(pd.unique(pq_["model"])))
    have = set(pq_["subset"].unique())
    out = {}
    for metric in metrics:
        wide = sub_means[metric].unstack("subset")
        table = pd.DataFrame(index=pd.Index(models, name="model"))
        for key, _label, members in columns:
            present = [m for m in members if m in have]
            if not present:
                continue
            if len(present) < len(members):
                log.warning("view column %s lacks subsets %s", key,
                            ", ".join(m for m in members if m not in have))
            table[key] = wide.reindex(index=models, columns=present).mean(axis=1, skipna=False)
        table["mean"] = table.mean(axis=1, skipna=False)
        out[metric] = table
    return out


# -- result --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplayResult:
    """One replayed table set: per-query values and the view's tables (fractions).

    ``tables[metric].at[model, column]`` is a model's mean on a view column (``"mean"``: the
    unweighted mean over the columns); :meth:`markdown` renders the card's tables and
    :meth:`to_json` is ``rcp-data replay --json``.
    """

    k: int
    tie_rule: str
    view: str
    spec: SuiteSpec
    per_query: pd.DataFrame                 # tie_rule, subset, model, query-id, rcp_ndcg, qrel_ndcg
    tables: dict[str, pd.DataFrame]         # {metric: models x (columns + mean)}, ALL_METRICS order
    without_positives: str = DEFAULT_WITHOUT_POSITIVES

    @property
    def models(self) -> list[str]:
        return list(self.tables["rcp_ndcg"].index)

    def mean(self, model: str, metric: str = "rcp_ndcg") -> float:
        """A model's Mean column (short name or hub id), as a fraction."""
        return float(self.tables[metric].at[self.spec.hub_id(model), "mean"])

    def to_json(self) -> dict:
        """``{"k", "tie_rule", "view", "metrics": {metric: {model: {column: value}}}}``."""
        metrics = {}
        for metric in self.tables:
            table = self.tables[metric]
            values = table.to_numpy(dtype=np.float64)     # one array, not a lookup a cell
            columns = [str(c) for c in table.columns]
            metrics[metric] = {
                str(m): {c: _num(v) for c, v in zip(columns, row, strict=True)}
                for m, row in zip(table.index, values, strict=True)
            }
        return {"k": self.k, "tie_rule": self.tie_rule, "view": self.view,
                "queries_without_positives": self.without_positives, "metrics": metrics}

    def markdown(self) -> str:
        """Both tables as in the cards (titles, short names, %, one decimal, Mean column)."""
        parts = [render_markdown_table(self.tables[m], self.spec,
                                       title=table_title(m, self.k, self.tie_rule))
                 for m in self.tables]
        heading = view_heading(self.spec, self.view)
        if heading:
            parts.insert(0, f"**{heading}**")
        return "\n\n".join(parts) + "\n"


def _num(v: float) -> float | None:
    v = float(v)
    return None if math.isnan(v) else v


def default_tie_rule(spec: SuiteSpec, known: bool) -> str:
    return spec.paper_tie_rule if known else "doc-id"


def replay_release(root: str | Path, spec: SuiteSpec | str | None = None, *, k: int = CARD_K,
                   tie_rule: str | None = None, view: str = "subsets",
                   include_judge: bool = False,
                   without_positives: str = DEFAULT_WITHOUT_POSITIVES) -> ReplayResult:
    """Replay one table set of a release directory (see module docstring)."""
    spec, known = suite_spec(Path(root), spec, adhoc=True)
    spec.view_columns(view)                            # refuse a bad view before reading
    data = load_release(root, spec, include_judge=include_judge, known=known)
    rule = tie_rule or default_tie_rule(spec, known)
    return replay_loaded(data, k=k, tie_rule=rule, view=view,
                         without_positives=without_positives)


def replay_loaded(data: ReleaseRuns, *, k: int = CARD_K, tie_rule: str = "doc-id",
                  view: str = "subsets",
                  without_positives: str = DEFAULT_WITHOUT_POSITIVES) -> ReplayResult:
    """Score and tabulate an already loaded release (one load, several rules or views)."""
    data.spec.view_columns(view)                       # refuse a bad view before scoring
    per_query = score_queries(data, k=k, tie_rules=(tie_rule,),
                              without_positives=without_positives)
    tables = summarize(per_query, data.spec, view=view, tie_rule=tie_rule)
    return ReplayResult(k=k, tie_rule=tie_rule, view=view, spec=data.spec, per_query=per_query,
                        tables=tables, without_positives=without_positives)


__all__ = [
    "ALL_METRICS", "METRICS", "attach_baselines", "ReleaseRuns", "ReplayResult", "SubsetRuns", "build_split_runs",
    "build_subset_runs",
    "default_tie_rule", "load_release", "model_order",
    "exp_gains", "replay_loaded", "replay_release", "score_queries", "score_subset",
    "summarize",
]
