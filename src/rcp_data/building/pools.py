"""First-stage fusion and judged pools (paper App. C.1; docs/concepts "Pools").

- :func:`rrf_fuse`: unweighted reciprocal rank fusion in a fixed retriever order. Equal fused
  scores keep the order in which documents first appear when the runs are walked in that order.
- :func:`build_pools`: the judged pool per query, under the suite's rule:
  ``top-k-inject`` (fused top k; each missed qrel-positive replaces the lowest-ranked
  non-relevant candidate), ``top-k-union-judged`` (fused top k UNION every judged document) or
  ``candidates`` (the suite's fixed candidate list, whole and in its order, nothing added).
- :func:`graded_outside`: per query, the graded documents a pool leaves out.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError, shown
from rcp_data.core.specs import CANDIDATES, POOL_RULES, positive_mask

log = logging.getLogger(__name__)

FUSED = "rrf_fused"
RUN_COLUMNS = ["retriever", "query-id", "corpus-id", "rank", "score"]


def normalize_run(run: pd.DataFrame, retriever: str, *, source: str = "<run>") -> pd.DataFrame:
    """Validate one first-stage run and give it 1-based ranks per query.

    Accepts ``query-id, corpus-id, score[, rank]``. Without ``rank``, ranks follow score
    descending, ties by corpus-id descending (trec_eval's order). Duplicate (query, document)
    rows and non-finite scores are errors naming the file and row.
    """
    for col in ("query-id", "corpus-id", "score"):
        if col not in run.columns:
            raise InputError(f"missing column {col!r}", path=source, field=col)
    # file lines (TREC) or rows of the table as read (parquet: a filtered frame keeps its labels)
    if "_line" in run.columns:
        lines = run["_line"].to_numpy()
    elif pd.api.types.is_integer_dtype(run.index.dtype):
        lines = run.index.to_numpy(dtype=np.int64) + 1
    else:
        lines = np.arange(1, len(run) + 1)
    frame = run[["query-id", "corpus-id", "score"] + (["rank"] if "rank" in run.columns else [])]
    frame = frame.astype({"query-id": str, "corpus-id": str})
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"score {shown(run['score'].iloc[i])} is not a finite number",
                         path=source, row=int(lines[i]), field="score")
    dup = frame.duplicated(["query-id", "corpus-id"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(
            f"duplicate line for query {frame['query-id'].iloc[i]!r}, "
            f"document {frame['corpus-id'].iloc[i]!r}", path=source, row=int(lines[i]))
    out = pd.DataFrame({
        "retriever": retriever,
        "query-id": frame["query-id"].to_numpy(),
        "corpus-id": frame["corpus-id"].to_numpy(),
        "score": scores,
    })
    if "rank" in frame.columns:
        # ranks count from 1 (RRF adds 1 / (k + rank)); a 0-based or repeated rank would
        # silently change the fused scores
        rank = pd.to_numeric(frame["rank"], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(rank) | (rank < 1) | (rank != np.floor(rank))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"rank {shown(run['rank'].iloc[i])} is not an integer >= 1 (ranks "
                             "count from 1)", path=source, row=int(lines[i]), field="rank")
        out["rank"] = rank.astype(np.int64)
        rep = out.duplicated(["query-id", "rank"])
        if rep.any():
            i = int(np.flatnonzero(rep.to_numpy())[0])
            raise InputError(f"rank {int(out['rank'].iloc[i])} repeats within query "
                             f"{out['query-id'].iloc[i]!r}", path=source, row=int(lines[i]),
                             field="rank")
        out = out.sort_values(["query-id", "rank"], kind="stable")
    else:
        # score desc, then corpus-id desc (byte-wise): sort ascending on (-score) then reverse id
        q_key = pd.factorize(out["query-id"], sort=True)[0]
        order = np.lexsort((_desc_str_key(out["corpus-id"].to_numpy()), -out["score"].to_numpy(),
                            q_key))
        out = out.iloc[order]
        out["rank"] = out.groupby("query-id", sort=False).cumcount().to_numpy(dtype=np.int64) + 1
    return out[RUN_COLUMNS].reset_index(drop=True)


def check_known_ids(run: pd.DataFrame, corpus, *, source: str = "<run>") -> None:
    """Refuse a run that names a document outside the corpus (error naming file and line).

    ``corpus`` is a :class:`~rcp_data.sources.base.CorpusReader` (its ``known`` mask); ``run``
    has ``corpus-id`` and, for TREC files, ``_line`` (else rows count from 1).
    """
    if len(run) == 0:
        return
    ids = run["corpus-id"].astype(str)
    uniq = pd.unique(ids)
    unknown = set(uniq[~corpus.known(uniq)])
    if not unknown:
        return
    bad = ids.isin(unknown).to_numpy()
    i = int(np.flatnonzero(bad)[0])
    lines = run["_line"].to_numpy() if "_line" in run.columns else np.arange(1, len(run) + 1)
    raise InputError(f"unknown document {ids.iloc[i]!r} (not in the corpus; {len(unknown)} "
                     "unknown in all)", path=source, row=int(lines[i]), field="corpus-id")


def _desc_str_key(values: np.ndarray) -> np.ndarray:
    """An integer key whose ascending order is the strings' descending byte-wise order."""
    codes, uniq = pd.factorize(pd.Series(values, dtype=object).astype(str), sort=True)
    return (len(uniq) - 1 - codes).astype(np.int64)


def rrf_fuse(runs: pd.DataFrame, retrievers: Sequence[str], *, k: int = 60,
             depth: int | None = None) -> pd.DataFrame:
    """Unweighted RRF of first-stage runs, returned as ``retriever = rrf_fused`` rows.

    ``runs`` has :data:`RUN_COLUMNS` (see :func:`normalize_run`). The score of a document is
    ``sum_r 1 / (k + rank_r)``, summed in retriever order; the fused ranking is score
    descending, ties in order of first appearance when the runs are walked in ``retrievers``
    order. ``depth`` keeps the top ``depth`` per query.
    """
    present = {str(r) for r in pd.unique(runs["retriever"])}
    known = [r for r in retrievers if r in present]
    unknown = sorted(present - set(retrievers) - {FUSED})
    if unknown:
        raise InputError(f"unknown first-stage retriever(s) {unknown}; expected {list(retrievers)}")
    parts = runs[runs["retriever"].isin(known)]
    order = {r: i for i, r in enumerate(known)}
    # integer codes: query codes in sorted (string) order, documents by first sight
    q_code, q_uniq = pd.factorize(parts["query-id"].astype(str), sort=True)
    d_code, d_uniq = pd.factorize(parts["corpus-id"].astype(str))
    r_code = parts["retriever"].map(order).to_numpy(dtype=np.int64)
    rank = parts["rank"].to_numpy(dtype=np.int64)
    # the walk: per query, retrievers in the given order, each by rank
    walk = np.lexsort((rank, r_code, q_code))
    q_w, d_w = q_code[walk].astype(np.int64), d_code[walk].astype(np.int64)
    contrib = 1.0 / (k + rank[walk].astype(np.float64))
    key = q_w * max(len(d_uniq), 1) + d_w
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    # np.bincount adds the weights in array order: contributions summed in retriever order
    score = np.bincount(inv, weights=contrib, minlength=len(uniq))
    fq = q_w[first]
    ordered = np.lexsort((first, -score, fq))
    fq, fd, fs = fq[ordered], d_w[first][ordered], score[ordered]
    starts = np.r_[0, np.flatnonzero(np.diff(fq)) + 1]
    fused_rank = np.arange(len(fq), dtype=np.int64) - np.repeat(starts, np.diff(
        np.r_[starts, len(fq)])) + 1
    fused = pd.DataFrame({
        "retriever": FUSED,
        "query-id": np.asarray(q_uniq, dtype=object)[fq],
        "corpus-id": np.asarray(d_uniq, dtype=object)[fd],
        "rank": fused_rank,
        "score": fs,
    })
    if depth is not None:
        fused = fused[fused["rank"] <= depth]
    return fused[RUN_COLUMNS].reset_index(drop=True)


def _added_order(docs: Iterable[str], fused_rank: dict[str, int]) -> list[str]:
    """Order documents by their own fused rank; never-retrieved last, by corpus-id."""
    docs = list(docs)
    big = 1 << 62
    return sorted(docs, key=lambda d: (fused_rank.get(d, big), d if d not in fused_rank else ""))


def build_pools(
    fused: pd.DataFrame,
    qrels: pd.DataFrame,
    query_ids: Sequence[str],
    *,
    rule: str,
    size: int,
    grade_positive: int,
    excluded: dict[str, set[str]] | None = None,
    never_pool: set[str] | None = None,
) -> pd.DataFrame:
    """The judged pool of every query in ``query_ids``, in pool order.

    Returns ``query-id, corpus-id, pool_rank, rrf_score, gt_injected, excluded, judged``
    (``judged`` False here; the judge stage sets it). ``fused`` is the full fused ranking
    (not cut at ``size``) so that added documents can be ordered by their own fused rank.
    ``never_pool`` documents (e.g. empty upstream) enter no pool. A positive is a qrel whose
    grade the suite counts as one (``grade_positive``, :func:`rcp_data.core.specs.positive_mask`).
    """
    if rule not in POOL_RULES:
        raise InputError(f"unknown pool rule {rule!r}")
    excluded = excluded or {}
    never_pool = never_pool or set()
    fused_by_q = {q: g for q, g in fused.groupby("query-id", sort=False)}
    qrels_by_q = {q: g for q, g in qrels.groupby("query-id", sort=False)}
    rows: list[tuple] = []
    for qid in query_ids:
        f = fused_by_q.get(qid)
        if f is None:
            f = fused.iloc[:0]
        f = f[~f["corpus-id"].isin(never_pool)]
        ids = f["corpus-id"].tolist()
        scores = f["score"].tolist()
        fused_rank = {d: i for i, d in enumerate(ids)}
        rrf = dict(zip(ids, scores, strict=True))
        top = ids[:size]
        q = qrels_by_q.get(qid)
        labelled = q["corpus-id"].tolist() if q is not None else []
        labelled_pos = ({d for d, p in zip(labelled, positive_mask(q["score"], grade_positive),
                                           strict=True) if p} if q is not None else set())
        positives = labelled_pos - never_pool
        exc = excluded.get(qid, set())
        if rule == CANDIDATES:   # the list as given: every candidate, in order, nothing added
            members = [(d, rrf[d], False) for d in ids]
        elif rule == "top-k-inject":
            top_set = set(top)
            missing = _added_order(positives - top_set, fused_rank)
            n_pos_in = sum(1 for d in top if d in positives)
            room = (len(top) - n_pos_in) if len(top) >= size else (size - n_pos_in)
            inject = missing[: max(0, min(len(missing), room))]
            if len(top) < size:  # short fused list: fill free places first, then replace
                free = size - len(top)
                keep = top
                n_replace = max(0, len(inject) - free)
            else:
                keep = top
                n_replace = len(inject)
            if n_replace:
                removable = [d for d in reversed(keep) if d not in positives]
                drop = set(removable[:n_replace])
                keep = [d for d in keep if d not in drop]
            members = [(d, rrf[d], False) for d in keep] + [(d, 0.0, True) for d in inject]
            if len(missing) > len(inject):
                log.info("query %s: %d positives stay outside the pool of %d", qid,
                         len(missing) - len(inject), size)
        else:
            top_set = set(top)
            judged = [d for d in dict.fromkeys(labelled) if d not in top_set
                      and d not in never_pool]
            added = _added_order(judged, fused_rank)
            members = [(d, rrf[d], False) for d in top]
            members += [(d, 0.0, d in labelled_pos) for d in added]
        for rank, (doc, score, injected) in enumerate(members, start=1):
            rows.append((qid, doc, rank, float(score), injected, doc in exc, False))
    pool = pd.DataFrame(rows, columns=["query-id", "corpus-id", "pool_rank", "rrf_score",
                                       "gt_injected", "excluded", "judged"])
    return pool.astype({"pool_rank": np.int64, "rrf_score": np.float64})


def graded_outside(pool: pd.DataFrame, qrels: pd.DataFrame, query_ids: Sequence[str],
                   never_pool: set[str] | None = None) -> dict[str, int]:
    """Per query of ``query_ids`` (in that order), how many of its graded documents (qrels
    rows, any grade) its pool leaves out; only queries leaving some out. Documents that may
    enter no pool (``never_pool``, e.g. empty upstream) are not counted."""
    never_pool = never_pool or set()
    graded = qrels[["query-id", "corpus-id"]].astype(str).drop_duplicates()
    graded = graded[~graded["corpus-id"].isin(never_pool)]
    pooled = pool[["query-id", "corpus-id"]].astype(str)
    left = graded.merge(pooled, how="left", indicator=True)
    per_query = left[left["_merge"] == "left_only"].groupby("query-id").size()
    return {q: int(per_query[q]) for q in query_ids if per_query.get(q, 0)}
