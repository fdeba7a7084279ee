"""Retrieval measures by their ir-measures names (``nDCG@10``, ``P(rel=2)@10``, ``RR@10``,
``R(rel=2)@100``, ``AP(rel=2)``, ``Success@5``, ``Judged@10``), parsed into frozen records and
computed in NumPy over every query of a run at once, as trec_eval computes them:

- a query's documents are ranked by score, descending, ties by corpus-id, descending
  (trec_eval's order; the caller sorts, :func:`ranked_positions` gives the ranks);
- a document is relevant to P, R, RR, AP and Success when its grade is at least ``rel``
  (default 1); an unjudged document is not relevant (``judged_only=True``: it is removed
  before ranking);
- P@k divides by k; R@k and AP by the query's relevant documents in the qrels; RR is the
  reciprocal rank of the first relevant document (0 when none, within k with a cutoff);
  Success@k is 1 when one is in the top k; Judged@k is the share of the top k that is judged
  (divided by k); nDCG@k is DCG with ``1/log2(rank + 1)`` over the ideal of every judged
  document, gain the grade (``dcg='exp-log2'``: ``2^grade - 1``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from rcp_data.core.errors import UsageError

FAMILIES = ("nDCG", "P", "R", "RR", "AP", "Success", "Judged")
_NEEDS_CUTOFF = {"P", "R", "Success", "Judged"}
_REL = {"P", "R", "RR", "AP", "Success"}
_NAME = re.compile(r"^\s*([A-Za-z]+)\s*(?:\((.*)\))?\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """One measure: its family, cutoff (None: the whole ranking), relevance threshold
    (``rel``), and nDCG's gain and ``judged_only`` (any family with ``judged_only``)."""

    family: str
    cutoff: int | None = None
    rel: int = 1
    judged_only: bool = False
    gain: str = "linear"

    def __str__(self) -> str:
        opts = []
        if self.family == "nDCG" and self.gain == "exp":
            opts.append("dcg='exp-log2'")
        if self.family in _REL and self.rel != 1:
            opts.append(f"rel={self.rel}")
        if self.judged_only:
            opts.append("judged_only=True")
        args = f"({','.join(opts)})" if opts else ""
        return f"{self.family}{args}" + (f"@{self.cutoff}" if self.cutoff else "")


def parse_measure(text: str) -> Measure:
    """The :class:`Measure` an ir-measures name names; a UsageError naming what is wrong."""
    match = _NAME.match(text)
    family = match.group(1) if match else None
    canon = {f.lower(): f for f in FAMILIES}
    if match is None or family.lower() not in canon:
        raise UsageError(f"unknown measure {text!r}; measures: nDCG@k, P@k, R@k, RR, RR@k, AP, "
                         "AP@k, Success@k, Judged@k, with (rel=r) for P, R, RR, AP, Success")
    family = canon[family.lower()]
    cutoff = int(match.group(3)) if match.group(3) else None
    if cutoff is not None and cutoff < 1:
        raise UsageError(f"measure {text!r}: the cutoff must be a positive integer")
    if cutoff is None and family in _NEEDS_CUTOFF:
        raise UsageError(f"measure {text!r} needs a cutoff ({family}@k)")
    fields: dict = {}
    for part in filter(None, (p.strip() for p in (match.group(2) or "").split(","))):
        key, _, value = (s.strip() for s in part.partition("="))
        fields[key] = value.strip("'\"")
    rel, judged, gain = 1, False, "linear"
    for key, value in fields.items():
        if key == "rel" and family in _REL and re.fullmatch(r"-?\d+", value):
            rel = int(value)
        elif key == "judged_only" and value in ("True", "False"):
            judged = value == "True"
        elif key == "dcg" and family == "nDCG" and value in ("log2", "exp-log2"):
            gain = "exp" if value == "exp-log2" else "linear"
        else:
            raise UsageError(f"measure {text!r}: parameter {key}={value!r} is not one this "
                             f"tool computes for {family}")
    return Measure(family, cutoff, rel, judged, gain)


def parse_needs_cutoff(text: str) -> bool:
    """Whether ``text`` names, without a cutoff, a family that needs one (``P``,
    ``P(rel=2)``), which a list of cutoffs then completes."""
    match = _NAME.match(text)
    return bool(match) and match.group(3) is None and \
        match.group(1).lower() in {f.lower() for f in _NEEDS_CUTOFF}


def ranked_positions(qpos: np.ndarray) -> np.ndarray:
    """Each row's 0-based rank within its query, for rows grouped by query in rank order."""
    n = len(qpos)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    head = np.ones(n, dtype=bool)
    head[1:] = qpos[1:] != qpos[:-1]
    starts = np.flatnonzero(head)
    return np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))


def compute(measure: Measure, qpos: np.ndarray, grades: np.ndarray, judged_grades: list,
            n_queries: int, cache: dict | None = None) -> np.ndarray:
    """``measure`` for each of ``n_queries`` queries, from a run's rows grouped by query
    (``qpos``) in rank order with their grades (-1: unjudged); ``judged_grades[q]``: the
    grades the qrels give query ``q`` (an int array). ``cache``: a dict kept over the
    measures of one run (and its qrels), so that what they share is computed once."""
    cache = {} if cache is None else cache
    if measure.judged_only:
        if "judged" not in cache:
            keep = grades >= 0
            cache["judged"] = qpos[keep], grades[keep]
        qpos, grades = cache["judged"]
    if ("rank", measure.judged_only) not in cache:
        cache[("rank", measure.judged_only)] = ranked_positions(qpos)
    rank = cache[("rank", measure.judged_only)]
    top = rank < measure.cutoff if measure.cutoff else np.ones(len(rank), dtype=bool)
    k = measure.cutoff
    fam = measure.family
    if fam == "Judged":
        return np.bincount(qpos[top & (grades >= 0)], minlength=n_queries) / k
    if fam == "nDCG":
        return _ndcg(measure, qpos, grades, rank, top, judged_grades, n_queries)
    hit = top & (grades >= measure.rel)
    hits = np.bincount(qpos[hit], minlength=n_queries).astype(np.float64)
    if fam == "P":
        return hits / k
    if fam == "Success":
        return (hits > 0).astype(np.float64)
    if ("relevant", measure.rel) not in cache:
        cache[("relevant", measure.rel)] = np.array(
            [np.count_nonzero(g >= measure.rel) for g in judged_grades], dtype=np.float64)
    relevant = cache[("relevant", measure.rel)]
    if fam == "R":
        return np.divide(hits, relevant, out=np.zeros(n_queries), where=relevant > 0)
    if fam == "RR":
        first = np.full(n_queries, np.inf)
        np.minimum.at(first, qpos[hit], rank[hit].astype(np.float64))
        return np.where(np.isfinite(first), 1.0 / (first + 1.0), 0.0)
    # AP: precision at each relevant rank, summed, over the query's relevant documents
    cum = np.cumsum(hit)
    start = np.arange(len(rank)) - rank                  # each row's query's first row
    before = cum[start] - hit[start] if len(rank) else cum
    prec = (cum - before) / (rank + 1.0)
    total = np.bincount(qpos[hit], weights=prec[hit], minlength=n_queries)
    return np.divide(total, relevant, out=np.zeros(n_queries), where=relevant > 0)


def _ndcg(measure: Measure, qpos: np.ndarray, grades: np.ndarray, rank: np.ndarray,
          top: np.ndarray, judged_grades: list, n_queries: int) -> np.ndarray:
    def gain(g: np.ndarray) -> np.ndarray:
        g = np.maximum(g.astype(np.float64), 0.0)
        return g if measure.gain == "linear" else np.exp2(g) - 1.0

    disc = 1.0 / np.log2(rank[top] + 2.0)
    dcg = np.bincount(qpos[top], weights=gain(grades[top]) * disc, minlength=n_queries)
    ideal = np.zeros(n_queries)
    for q, g in enumerate(judged_grades):
        best = np.sort(gain(np.asarray(g)))[::-1][:measure.cutoff]
        ideal[q] = float(np.sum(best / np.log2(np.arange(len(best)) + 2.0)))
    return np.divide(dcg, ideal, out=np.zeros(n_queries), where=ideal > 0)




def trec_order(qpos: np.ndarray, doc_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The order of rows that groups them by query and ranks them as trec_eval does: score
    descending, ties by corpus-id descending (code-point order, which is UTF-8 byte order)."""
    doc_rank = np.unique(np.asarray(doc_ids, dtype=str), return_inverse=True)[1]
    return np.lexsort((-doc_rank, -np.asarray(scores, dtype=np.float64), qpos))


__all__ = ["FAMILIES", "Measure", "compute", "parse_measure", "parse_needs_cutoff",
           "ranked_positions", "trec_order"]
