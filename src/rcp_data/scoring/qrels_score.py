"""Score runs on any graded qrels, without a release (``rcp-data score --qrels``).

nDCG@k (Eq. 1, discount ``1/log2(rank + 1)``) with the engine of :mod:`rcp_data.scoring.metrics`:

- gain ``linear`` (the grade, trec_eval's) or ``exp`` (``2^grade - 1``, ir-measures'
  ``dcg='exp-log2'``); a negative grade gains 0;
- the ideal is over every judged document of the query (trec_eval); an unjudged document a run
  ranks gains 0, or with ``judged_only`` it is removed before ranking (trec_eval ``-J``,
  ir-measures ``judged_only=True``);
- tie rules for equal run scores: ``doc-id`` (trec_eval's: score descending, then corpus-id
  descending, byte-wise), ``group-mean`` (each document of a tie group gets the group's mean
  gain) and ``pool-order`` (ties keep the run file's order);
- queries: every qrels query with a positive grade; a query the run misses scores 0 (trec_eval
  ``-c``); run rows of other queries are ignored.

How it is computed: each run is read by :func:`~rcp_data.runs.qrels_runs.read_run` (a TREC
file split on its bytes; runs in threads), then reduced to its candidates, the rows that can
reach the top k of their query (score at least the k-th best, so the whole tie at the cutoff);
only those are looked up in the qrels (a fingerprint of query and corpus-id, confirmed on the
id's bytes) and ordered by corpus-id; one call of the engine scores every run's candidates, and
each query's ideal DCG is computed once for all runs.

Measures are named as ir-measures names them (``nDCG@10``, ``nDCG(dcg='exp-log2')@20``,
``nDCG(judged_only=True)@10``). Paired comparisons between the runs, per measure and pair: mean
difference, two-sided paired t-test (``scipy.stats.ttest_rel``), a 95% percentile interval from
``RESAMPLES`` query-bootstrap resamples (seed ``SEED``), and optionally p-values adjusted over the
family of pairs (Holm or Bonferroni).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.io import int_values
from rcp_data.core.rules import TIE_RULES
from rcp_data.model.cells import escape_cell
from rcp_data.runs.id_spans import PAD, IdSpans
from rcp_data.runs.qrels_bytes import read_qrels_spans
from rcp_data.runs.qrels_files import read_qrels, read_qrels_table
from rcp_data.runs.qrels_runs import ReadRun, pair_keys, read_run
from rcp_data.runs.run_files import is_frame
from rcp_data.runs.runs_in import check_name_count, check_run_name, run_names
from rcp_data.scoring.agreement.bootstrap import interval_text
from rcp_data.scoring.measures import Measure, compute, parse_measure, parse_needs_cutoff
from rcp_data.scoring.metrics import dcg_at_k, ideal_dcg
from rcp_data.scoring.resampling import RESAMPLES, SEED

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

GAINS = ("linear", "exp")
CORRECTIONS = ("holm", "bonferroni")
FORMATS = ("table", "tsv", "csv", "json")
DEFAULT_TIE_RULE = "doc-id"
MEAN_ID = "all"
MAX_THREADS = 4
_TIE_STEPS = 32
T = TypeVar("T")


def measure_name(k: int, gain: str = "linear", judged_only: bool = False) -> str:
    """The ir-measures name of nDCG@k with these options."""
    opts = ([] if gain == "linear" else ["dcg='exp-log2'"]) + \
        (["judged_only=True"] if judged_only else [])
    return f"nDCG({','.join(opts)})@{k}" if opts else f"nDCG@{k}"


def gain_of(grades: np.ndarray, gain: str) -> np.ndarray:
    g = np.maximum(np.asarray(grades, dtype=np.float64), 0.0)
    return g if gain == "linear" else np.exp2(g) - 1.0


def adjust_pvalues(p: Sequence[float] | np.ndarray, method: str) -> np.ndarray:
    """Family-wise adjusted p-values: ``bonferroni`` (``min(1, m p)``) or ``holm``
    (step-down: the running maximum of ``(m - i) p_(i)`` over the sorted p-values)."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if method == "bonferroni":
        return np.minimum(1.0, m * p)
    if method == "holm":
        order = np.argsort(p, kind="stable")
        stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
        out = np.empty(m)
        out[order] = np.minimum(1.0, stepped)
        return out
    raise UsageError(f"unknown correction {method!r}; choose one of {', '.join(CORRECTIONS)}")


def bootstrap_interval(diffs: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED
                       ) -> np.ndarray:
    """95% percentile intervals of the mean of each row of ``diffs`` (pairs x queries) from
    one set of query resamples (``rng.integers`` draws, as ``d[draws].mean(1)``); shape
    ``(pairs, 2)``. The draws are counted per query, so no (pairs x resamples x queries) array
    is built."""
    diffs = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    n = diffs.shape[1]
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.repeat(np.arange(resamples), n), draws.ravel()), 1.0)
    means = diffs @ counts.T / n                            # (pairs, resamples)
    return np.percentile(means, [2.5, 97.5], axis=1).T


@dataclass(frozen=True)
class PairComparison:
    """Run ``a`` minus run ``b`` on one measure, over the scored queries."""

    measure: str
    a: str
    b: str
    diff: float
    t: float | None
    p: float | None
    p_adjusted: float | None
    ci95: tuple[float, float]
    queries: int

    def to_json(self) -> dict:
        return {"measure": self.measure, "a": self.a, "b": self.b, "diff": self.diff,
                "t": self.t, "p": self.p, "p_adjusted": self.p_adjusted,
                "ci95": list(self.ci95), "queries": self.queries}


@dataclass(frozen=True)
class QrelsScore:
    """Per-query nDCG of each run on a qrels file; ``per_query[run][measure]`` is aligned with
    ``queries``."""

    qrels: str
    queries: tuple[str, ...]
    measures: tuple[str, ...]
    per_query: Mapping[str, Mapping[str, np.ndarray]]
    gain: str
    judged_only: bool
    tie_rule: str
    correction: str | None
    comparisons: tuple[PairComparison, ...] = ()
    ignored_rows: Mapping[str, int] = field(default_factory=dict)
    resamples: int = RESAMPLES
    seed: int = SEED

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(self.per_query)

    def mean(self, run: str, measure: str | None = None) -> float:
        values = self.per_query[run][measure or self.measures[0]]
        return float(values.mean()) if len(values) else 0.0

    def rows(self, *, per_query: bool = False) -> list[tuple[str, str, str, float]]:
        """``(run, measure, query-id, value)``; each run's and measure's queries, then ``all``
        (the mean)."""
        out = []
        for run, by_measure in self.per_query.items():
            for measure in self.measures:
                values = by_measure[measure]
                if per_query:
                    out.extend((run, measure, q, float(v)) for q, v in zip(self.queries, values,
                                                                           strict=True))
                out.append((run, measure, MEAN_ID, self.mean(run, measure)))
        return out

    def render(self, fmt: str = "table", *, per_query: bool = False, header: bool = True
               ) -> str:
        """The result as ``table``, ``tsv`` (a header line ``run measure query value`` unless
        ``header=False``: trec_eval's shape), ``csv`` or ``json``."""
        if fmt == "tsv":
            head = "run\tmeasure\tquery\tvalue\n" if header else ""
            return head + "".join(f"{r}\t{m}\t{escape_cell(q, markdown=False)}\t{v!r}\n"
                                  for r, m, q, v in self.rows(per_query=per_query))
        if fmt == "csv":
            import csv
            import io

            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(["run", "measure", "query-id", "value"])
            writer.writerows((r, m, q, repr(v)) for r, m, q, v in self.rows(per_query=per_query))
            return buf.getvalue()
        if fmt == "json":
            import json

            return json.dumps(self.to_json(per_query=per_query), indent=2) + "\n"
        if fmt == "table":
            return self.table(per_query=per_query)
        raise UsageError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")

    def table(self, *, per_query: bool = False) -> str:
        runs = {r: escape_cell(r, markdown=False) for r in self.runs}
        lines = [f"qrels {escape_cell(str(self.qrels), markdown=False)}: {len(self.queries)} queries with a positive grade; "
                 f"gain {self.gain}{' (2^grade - 1)' if self.gain == 'exp' else ''}; "
                 f"tie rule {self.tie_rule}"
                 f"{'; judged documents only' if self.judged_only else ''}", ""]
        width = max([len(r) for r in runs.values()] + [3])
        cols = [max(len(m), 6) for m in self.measures]
        lines.append("  ".join(["run".ljust(width)] + [m.rjust(c) for m, c in
                                                       zip(self.measures, cols, strict=True)]))
        for run in self.runs:
            lines.append("  ".join([runs[run].ljust(width)] + [
                f"{self.mean(run, m):.4f}".rjust(c) for m, c in zip(self.measures, cols,
                                                                     strict=True)]))
        if per_query:
            lines += ["", "per query:"]
            lines += [f"{runs[r]}  {m}  {escape_cell(q, markdown=False)}  {v:.4f}"
                      for r, m, q, v in self.rows(per_query=True) if q != MEAN_ID]
        if self.comparisons:
            adj = f", p adjusted ({self.correction})" if self.correction else ""
            lines += ["", f"paired comparisons (a minus b; paired t-test{adj}; 95% CI from "
                      f"{self.resamples} query-bootstrap resamples, seed {self.seed}):"]
            for c in self.comparisons:
                p = "–" if c.p is None else f"{c.p:.3g}"
                pa_ = "" if not self.correction else (
                    "  p_adj –" if c.p_adjusted is None else f"  p_adj {c.p_adjusted:.3g}")
                ci = interval_text(*c.ci95, c.queries, "{:+.4f}".format)
                lines.append(f"{c.measure}  {runs.get(c.a, c.a)} - {runs.get(c.b, c.b)}: "
                             f"{c.diff:+.4f} {ci}  p {p}{pa_}")
        ignored = {r: n for r, n in self.ignored_rows.items() if n}
        if ignored:
            lines += ["", "rows of queries without a qrels entry, ignored: " +
                      ", ".join(f"{r} {n}" for r, n in ignored.items())]
        return "\n".join(lines) + "\n"

    def to_json(self, *, per_query: bool = False) -> dict:
        runs = {}
        for run, by_measure in self.per_query.items():
            runs[run] = {}
            for m in self.measures:
                entry: dict = {MEAN_ID: self.mean(run, m)}
                if per_query:
                    entry["per_query"] = dict(zip(self.queries, map(float, by_measure[m]),
                                                  strict=True))
                runs[run][m] = entry
        return {"qrels": self.qrels, "queries": len(self.queries), "gain": self.gain,
                "judged_only": self.judged_only, "tie_rule": self.tie_rule,
                "measures": list(self.measures), "runs": runs,
                "correction": self.correction, "resamples": self.resamples, "seed": self.seed,
                "comparisons": [c.to_json() for c in self.comparisons],
                "ignored_rows": dict(self.ignored_rows)}


@dataclass(frozen=True)
class _Judged:
    """The qrels, indexed: query ids (sorted), grades grouped by query, and the judged pairs'
    keys (a fingerprint of query and document, sorted) for a vectorised look-up."""

    query_ids: np.ndarray
    offsets: np.ndarray
    grades: np.ndarray
    position: Mapping[str, int]      # query id -> its index in query_ids
    docs: IdSpans                    # each pair's document, grouped by query
    doc_words: np.ndarray
    pair_query: np.ndarray           # each pair's query index
    keys: np.ndarray                 # sorted pair keys
    key_pair: np.ndarray             # the pair of each key
    ideals: dict = field(default_factory=dict, compare=False, repr=False)   # (gain, k) -> IDCG

    @classmethod
    def of(cls, table: pa.Table) -> _Judged:
        """From a table ``query-id, corpus-id`` (string) and ``grade`` (integers)."""
        return cls.of_spans(IdSpans.from_arrow(table.column("query-id")),
                            IdSpans.from_arrow(table.column("corpus-id")),
                            int_values(table.column("grade")))

    @classmethod
    def of_spans(cls, queries: IdSpans, docs: IdSpans, grades: np.ndarray) -> _Judged:
        """From each pair's query and corpus id (spans) and grade, in any order."""
        qwords = queries.words()
        by_query = np.argsort(queries.byte_rank(qwords), kind="stable")   # byte-wise, stable
        qlen, qw = queries.lengths[by_query], qwords[by_query]
        new = np.ones(len(by_query), dtype=bool)
        new[1:] = (qlen[1:] != qlen[:-1]) | (qw[1:] != qw[:-1]).any(axis=1)
        heads = np.flatnonzero(new)
        qpos = np.cumsum(new) - 1
        qids = np.array(queries.texts(by_query[heads]), dtype=str)
        offsets = np.append(heads, len(by_query)).astype(np.int64)
        grades = np.asarray(grades, dtype=np.int64)[by_query]
        docs = docs.take(by_query)
        words = docs.words()
        keys = pair_keys(docs.fingerprint(words), qpos)
        by_key = np.argsort(keys, kind="stable")
        if np.any(keys[by_key][1:] == keys[by_key][:-1]):    # two pairs, one fingerprint
            raise InputError("qrels pairs collide in their 64-bit fingerprint; please report")
        return cls(qids, offsets, grades, {q: i for i, q in enumerate(qids.tolist())}, docs,
                   words, qpos, keys[by_key], by_key)

    def ideal(self, gain: str, k: int) -> np.ndarray:
        """Ideal DCG@k per query (computed once per gain and cutoff)."""
        if (gain, k) not in self.ideals:
            self.ideals[(gain, k)] = ideal_dcg(self.offsets, gain_of(self.grades, gain), k)
        return self.ideals[(gain, k)]

    def grades_of(self, qpos: np.ndarray, docs: IdSpans, words: np.ndarray) -> np.ndarray:
        """The grade of each (query index, document), -1 where the pair is not judged; the
        fingerprint's match is confirmed on the words."""
        if len(self.keys) == 0 or len(qpos) == 0:
            return np.full(len(qpos), -1, dtype=np.int64)
        key = pair_keys(docs.fingerprint(words), qpos)
        at = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        pair = self.key_pair[at]
        width = min(words.shape[1], self.doc_words.shape[1])
        hit = (self.keys[at] == key) & (self.pair_query[pair] == qpos) & \
            (self.docs.lengths[pair] == docs.lengths) & \
            (self.doc_words[pair, :width] == words[:, :width]).all(axis=1)
        return np.where(hit, self.grades[pair], -1)


@dataclass(frozen=True)
class _Candidates:
    """The rows of one run that can reach the top k of their query (score at least the k-th
    best), grouped by query in rank order: query index, score, gain, byte rank of the
    corpus-id (within the run)."""

    qpos: np.ndarray
    scores: np.ndarray
    gains: np.ndarray
    doc_rank: np.ndarray


def _candidates(judged: _Judged, run: ReadRun, k: int, gain: str, judged_only: bool
                ) -> tuple[_Candidates, int]:
    """The candidates of one run for cutoffs up to ``k``, and the number of its rows of
    queries without qrels."""
    block_qpos = np.array([judged.position.get(q, -1) for q in run.block_query],
                          dtype=np.int64)
    size = run.block_size
    known_blocks = block_qpos >= 0
    ignored = int(size[~known_blocks].sum())
    fast = None if judged_only or not known_blocks.all() else _sorted_top(run, block_qpos, k)
    if fast is not None:
        rows, q = fast
        s = run.scores[rows]
        docs = run.docs.take(rows)
        words = docs.words()
        grades = judged.grades_of(q, docs, words)
        return _Candidates(q, s, gain_of(np.maximum(grades, 0), gain),
                           docs.byte_rank(words)), ignored
    # rows of known queries, by block (file order)
    rows = np.flatnonzero(np.repeat(known_blocks, size))
    q = np.repeat(block_qpos[known_blocks], size[known_blocks])
    grades = None
    if judged_only:
        docs = run.docs.take(rows)
        grades = judged.grades_of(q, docs, docs.words())
        judged_rows = grades >= 0
        rows, q, grades = rows[judged_rows], q[judged_rows], grades[judged_rows]
    s = run.scores[rows]
    block = np.ones(len(rows), dtype=bool)
    block[1:] = q[1:] != q[:-1]
    heads = q[block]
    ordered = not np.any(~block[1:] & (s[1:] > s[:-1])) and len(np.unique(heads)) == len(heads)
    if not ordered:                     # blocks by query, score descending, file order in ties
        order = np.lexsort((-s, q))
        rows, q, s = rows[order], q[order], s[order]
        grades = None if grades is None else grades[order]
        block[:] = True
        block[1:] = q[1:] != q[:-1]
    first = np.flatnonzero(block)
    size = np.diff(np.append(first, len(rows)))
    kth = s[first + np.minimum(size, k) - 1] if len(first) else s[:0]
    take = s >= np.repeat(kth, size)
    rows, q, s = rows[take], q[take], s[take]
    docs = run.docs.take(rows)
    words = docs.words()
    grades = judged.grades_of(q, docs, words) if grades is None else grades[take]
    return _Candidates(q, s, gain_of(np.maximum(grades, 0), gain), docs.byte_rank(words)), \
        ignored


def _sorted_top(run: ReadRun, block_qpos: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """The candidate rows and their query index of a ranked run (:attr:`ReadRun.ranked`):
    each block's first k rows and the rows after them that tie with the k-th; else None."""
    first, s = run.block_start, run.scores
    if not run.ranked or len(first) == 0:
        return None
    size = run.block_size
    end = first + size
    stop = first + np.minimum(size, k)
    kth = s[stop - 1]
    for _ in range(_TIE_STEPS):                          # the tie at the cutoff, a row a step
        more = (stop < end) & (s[np.minimum(stop, len(s) - 1)] == kth)
        if not more.any():
            break
        stop = stop + more
    else:                                                # a long tie: compare every row
        rows = np.flatnonzero(s >= np.repeat(kth, size))
        return rows, block_qpos[np.searchsorted(first, rows, side="right") - 1]
    counts = stop - first
    starts = np.repeat(first - (np.cumsum(counts) - counts), counts)
    return starts + np.arange(int(counts.sum())), np.repeat(block_qpos, counts)


def _ndcg_runs(judged: _Judged, candidates: Sequence[_Candidates], ks: Sequence[int],
               gain: str, tie_rule: str) -> list[dict[int, np.ndarray]]:
    """nDCG@k per qrels query of every run (queries a run misses: 0), with one call of the
    engine for all runs: each (run, query) is one group of candidates."""
    n_q = len(judged.query_ids)
    group = np.concatenate([r * n_q + c.qpos for r, c in enumerate(candidates)]) \
        if candidates else np.zeros(0, dtype=np.int64)
    order = np.argsort(group, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=len(candidates)
                                                         * n_q))])
    scores = np.concatenate([c.scores for c in candidates])[order]
    gains = np.concatenate([c.gains for c in candidates])[order]
    key = np.concatenate([c.doc_rank for c in candidates])[order] if tie_rule == "doc-id" \
        else None
    out: list[dict[int, np.ndarray]] = [{} for _ in candidates]
    for k in ks:
        dcg = dcg_at_k(offsets, scores, gains, k=k, tie_rules=(tie_rule,),
                       doc_key=key)[tie_rule].reshape(len(candidates), n_q)
        ideal = judged.ideal(gain, k)
        ndcg = np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)
        for r in range(len(candidates)):
            out[r][k] = ndcg[r]
    return out


def score_qrels(qrels: str | Path | pd.DataFrame,
                runs: str | Path | Sequence[str | Path] | Mapping[str, str | Path | pd.DataFrame],
                *, names: Sequence[str] | None = None, k: int | Sequence[int] = 10,
                gain: str = "linear", judged_only: bool = False,
                tie_rule: str = DEFAULT_TIE_RULE, correction: str | None = None,
                resamples: int = RESAMPLES, seed: int = SEED, compare: bool = True,
                measures: Sequence[str] | None = None) -> QrelsScore:
    """Score runs (TREC run files, parquet tables, mteb prediction folders, frames with
    ``query-id, corpus-id, score``, or runs :func:`~rcp_data.runs.qrels_runs.read_run` read)
    on graded ``qrels`` (a file :func:`~rcp_data.runs.qrels_files.read_qrels` reads, or a
    frame with ``query-id, corpus-id, grade``). ``k``: one cutoff or several. With two runs
    or more, every pair is compared on every measure (``compare=False``: none).
    ``measures``: ir-measures names (:mod:`rcp_data.scoring.measures`: ``P(rel=2)@10``,
    ``AP``, ...) instead of nDCG@k; ``judged_only`` then applies to each, ``gain`` to nDCG, and
    each ``k`` to a measure named without the cutoff it needs (``P`` with ``k=[5, 10]``: P@5,
    P@10); they rank as trec_eval (tie rule ``doc-id``). Returns a :class:`QrelsScore`; raises
    :class:`~rcp_data.core.errors.InputError` for a malformed file and
    :class:`~rcp_data.core.errors.UsageError` for a bad option."""
    ks = [int(k)] if isinstance(k, int | np.integer) else [int(x) for x in k]
    if not ks or any(x < 1 for x in ks):
        raise UsageError(f"k must be positive integers, got {ks}")
    ks = list(dict.fromkeys(ks))
    if gain not in GAINS:
        raise UsageError(f"unknown gain {gain!r}; choose one of {', '.join(GAINS)}")
    if tie_rule not in TIE_RULES:
        raise UsageError(f"unknown tie rule {tie_rule!r}; choose one of {', '.join(TIE_RULES)}")
    if correction is not None and correction not in CORRECTIONS:
        raise UsageError(f"unknown correction {correction!r}; choose one of "
                         f"{', '.join(CORRECTIONS)}")
    source = "<frame>" if is_frame(qrels) else str(qrels)
    try:
        judged = _judged(qrels)
    except InputError:                      # one fingerprint: a pair judged twice, named
        if not is_frame(qrels):
            read_qrels(qrels)
        raise
    if measures is not None:
        return _score_measures(judged, runs, names, source,
                               _measures(measures, ks, gain, judged_only, tie_rule),
                               gain=gain, judged_only=judged_only, correction=correction,
                               resamples=resamples, seed=seed, compare=compare)
    measures = {x: measure_name(x, gain, judged_only) for x in ks}
    ideal_any = judged.ideal(gain, max(ks)) > 0
    keep = ideal_any.nonzero()[0]
    run_labels, done = _each_run(runs, names,
                                 lambda read: _candidates(judged, read, max(ks), gain,
                                                          judged_only))
    ignored = {name: rows for name, (_, rows) in zip(run_labels, done, strict=True)}
    named = dict.fromkeys(run_labels)
    values = _ndcg_runs(judged, [c for c, _ in done], ks, gain, tie_rule)
    per_query = {name: {measures[x]: v[x][keep] for x in ks}
                 for name, v in zip(named, values, strict=True)}
    queries = tuple(judged.query_ids[keep].tolist())
    comparisons = _compare(per_query, list(measures.values()), correction, resamples,
                           seed) if compare else ()
    return QrelsScore(qrels=source, queries=queries, measures=tuple(measures.values()),
                      per_query=per_query, gain=gain, judged_only=judged_only,
                      tie_rule=tie_rule, correction=correction, comparisons=comparisons,
                      ignored_rows=ignored, resamples=resamples, seed=seed)


def _judged(qrels: str | Path | pd.DataFrame) -> _Judged:
    """The qrels indexed: a canonical TREC qrels file split by NumPy
    (:func:`~rcp_data.runs.qrels_bytes.read_qrels_spans`), any other read into a table."""
    if is_frame(qrels):
        return _Judged.of(_frame_table(qrels))
    path = Path(qrels)
    spans = read_qrels_spans(path) if path.is_file() and path.suffix not in (
        ".parquet", ".csv") else None
    if spans is not None:
        return _Judged.of_spans(spans.queries, spans.docs, spans.grades)
    return _Judged.of(read_qrels_table(path))


def _frame_table(frame: pd.DataFrame) -> pa.Table:
    """A qrels frame ``query-id, corpus-id, grade`` as the table :class:`_Judged` reads."""
    import pyarrow as pa

    frame = frame.astype({"query-id": str, "corpus-id": str})
    return pa.table({"query-id": pa.array(frame["query-id"].to_numpy(), type=pa.string()),
                     "corpus-id": pa.array(frame["corpus-id"].to_numpy(), type=pa.string()),
                     "grade": frame["grade"].to_numpy(dtype=np.int64)})


def _measures(names: Sequence[str], ks: Sequence[int], gain: str, judged_only: bool,
              tie_rule: str) -> list[Measure]:
    """The measures ``names`` name, with the options that apply to each."""
    from dataclasses import replace

    if tie_rule != DEFAULT_TIE_RULE:
        raise UsageError(f"named measures rank as trec_eval (tie rule {DEFAULT_TIE_RULE}); "
                         f"--tie-rule {tie_rule} applies to nDCG@k without --measure")
    out: list[Measure] = []
    for text in [n.strip() for name in names for n in split_names(name)]:
        bare = parse_measure(text + "@1") if parse_needs_cutoff(text) else None
        for m in ([replace(bare, cutoff=k) for k in ks] if bare else [parse_measure(text)]):
            if judged_only:
                m = replace(m, judged_only=True)
            if gain == "exp" and m.family == "nDCG":
                m = replace(m, gain="exp")
            out.append(m)
    if not out:
        raise UsageError("no measure given")
    return list(dict.fromkeys(out))


def split_names(text: str) -> list[str]:
    """``P@10,AP(rel=2)`` -> its names (commas inside parentheses kept)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p for p in [*parts, cur] if p.strip()]


def _score_measures(judged: _Judged, runs, names: Sequence[str] | None, source: str,
                    measures: Sequence[Measure], *, gain: str, judged_only: bool,
                    correction: str | None, resamples: int, seed: int, compare: bool
                    ) -> QrelsScore:
    """Every run on the named ``measures``, each run's rows ranked as trec_eval ranks them."""
    n_q = len(judged.query_ids)
    per_grades = [judged.grades[judged.offsets[i]:judged.offsets[i + 1]] for i in range(n_q)]
    keep = np.flatnonzero([bool((g > 0).any()) for g in per_grades])    # as nDCG's queries

    def one(read: ReadRun) -> tuple[dict[str, np.ndarray], int]:
        block_qpos = np.array([judged.position.get(q, -1) for q in read.block_query],
                              dtype=np.int64)
        size = read.block_size
        known = np.repeat(block_qpos >= 0, size)
        rows = np.flatnonzero(known)
        q = np.repeat(block_qpos, size)[rows]
        docs = read.docs.take(rows)
        words = docs.words()
        grades = judged.grades_of(q, docs, words)
        order = trec_order(q, read.scores[rows], docs, words,
                           ranked=read.ranked and len(rows) == len(read))
        q, grades, shared = q[order], grades[order], {}
        return ({str(m): compute(m, q, grades, per_grades, n_q, shared)[keep]
                 for m in measures}, int(np.count_nonzero(~known)))

    labels, done = _each_run(runs, names, one)
    per_query = {name: values for name, (values, _) in zip(labels, done, strict=True)}
    ignored = {name: rows for name, (_, rows) in zip(labels, done, strict=True)}
    names = [str(m) for m in measures]
    comparisons = _compare(per_query, names, correction, resamples, seed) if compare else ()
    return QrelsScore(qrels=source, queries=tuple(judged.query_ids[keep].tolist()),
                      measures=tuple(names), per_query=per_query, gain=gain,
                      judged_only=judged_only, tie_rule=DEFAULT_TIE_RULE, correction=correction,
                      comparisons=comparisons, ignored_rows=ignored, resamples=resamples,
                      seed=seed)


def trec_order(qpos: np.ndarray, scores: np.ndarray, docs: IdSpans, words: np.ndarray, *,
               ranked: bool = False) -> np.ndarray:
    """The order of a run's rows that groups them by query and ranks them as trec_eval does:
    score descending, ties by corpus-id descending (byte-wise). ``ranked``: the rows already
    come one block per query, scores not increasing in it (:attr:`ReadRun.ranked`), so only
    each tie's rows are ordered, by one sort of (tie, corpus-id rank)."""
    n = len(qpos)
    doc_rank = _doc_rank(docs, words)
    if not ranked or n == 0:
        return np.lexsort((-doc_rank, -scores, qpos))
    new = np.ones(n, dtype=bool)
    new[1:] = (qpos[1:] != qpos[:-1]) | (scores[1:] != scores[:-1])
    tie = np.cumsum(new) - 1                             # each tie, in rank order
    return np.argsort(tie * n + (n - 1 - doc_rank))      # distinct keys: no order left open


def _doc_rank(docs: IdSpans, words: np.ndarray) -> np.ndarray:
    """Each row's corpus-id rank among the rows, byte-wise (equal ids: one rank, or distinct
    ranks): ids of one word without a zero byte sort as their big-endian word, in one
    ``np.unique``; any others as :meth:`IdSpans.byte_rank` orders them."""
    if words.shape[1] == 1 and len(docs) and not np.any(docs.buf[:-PAD] == 0):
        return np.unique(words[:, 0].byteswap(), return_inverse=True)[1].reshape(-1)
    return docs.byte_rank(words)


def _threads(runs: int) -> int:
    """Runs to read are read and reduced to candidates in threads (NumPy and Arrow release the
    GIL); runs already read, in this one."""
    return max(1, min(runs, os.cpu_count() or 1, MAX_THREADS))


def _each_run(runs, names: Sequence[str] | None, work: Callable[[ReadRun], T]
              ) -> tuple[list[str], list[T]]:
    """``work`` of each run, read (:func:`read_run`, in threads), and the runs' names: the
    mapping's keys, ``names``, or :func:`run_names` from each run's tag as its reader found
    it in the bytes it read (no file is read twice to be named)."""
    if isinstance(runs, Mapping):
        labels: list[str] | None = [check_run_name(n) for n in runs]
        items = list(runs.values())
    else:
        items = [runs] if isinstance(runs, str | Path) else list(runs)
        check_name_count(items, names)
        labels = None

    def one(run) -> tuple[str | None, T]:
        src = run if isinstance(run, str) else str(run) if isinstance(run, Path) else "<frame>"
        read = run if isinstance(run, ReadRun) else read_run(run, src)
        return read.tag, work(read)

    workers = _threads(sum(not isinstance(run, ReadRun) for run in items))
    if workers == 1:
        done = [one(run) for run in items]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(one, items))
    if labels is None:
        labels = run_names(items, names, tags=[tag for tag, _ in done])
    return labels, [value for _, value in done]


def paired_tests(a: np.ndarray, b: np.ndarray) -> list[tuple[float | None, float | None]]:
    """:func:`~rcp_data.scoring.against.paired_test` of each row of ``a`` against the same row
    of ``b`` (pairs x queries), in one ``scipy.stats.ttest_rel`` call."""
    from scipy import stats

    if a.shape[1] < 2:
        return [(None, None)] * a.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        res = stats.ttest_rel(a, b, axis=1)
    t, p = np.atleast_1d(res.statistic), np.atleast_1d(res.pvalue)
    return [(None if np.isnan(x) else float(x), None if np.isnan(y) else float(y))
            for x, y in zip(t, p, strict=True)]


def _compare(per_query: Mapping[str, Mapping[str, np.ndarray]], measures: Sequence[str],
             correction: str | None, resamples: int, seed: int) -> tuple[PairComparison, ...]:
    pairs = list(combinations(per_query, 2))
    if not pairs:
        return ()
    out: list[PairComparison] = []
    for m in measures:
        diffs = np.stack([per_query[a][m] - per_query[b][m] for a, b in pairs])
        if diffs.shape[1] == 0:
            continue
        ci = bootstrap_interval(diffs, resamples=resamples, seed=seed)
        tests = paired_tests(np.stack([per_query[a][m] for a, _ in pairs]),
                             np.stack([per_query[b][m] for _, b in pairs]))
        adjusted: list[float | None] = [None] * len(pairs)
        if correction:
            defined = [i for i, (_, p) in enumerate(tests) if p is not None]
            values = adjust_pvalues([tests[i][1] for i in defined], correction)
            for i, v in zip(defined, values, strict=True):
                adjusted[i] = float(v)
        for i, (a, b) in enumerate(pairs):
            out.append(PairComparison(m, a, b, float(diffs[i].mean()), tests[i][0], tests[i][1],
                                      adjusted[i], (float(ci[i, 0]), float(ci[i, 1])),
                                      diffs.shape[1]))
    return tuple(out)


__all__ = ["CORRECTIONS", "FORMATS", "GAINS", "PairComparison", "QrelsScore", "adjust_pvalues",
           "bootstrap_interval", "measure_name", "score_qrels", "split_names"]
