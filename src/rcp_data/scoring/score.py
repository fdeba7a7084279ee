"""Score your own rankings on a release with the engine of the card's tables.

A run is aligned to each subset's candidates exactly as the replay aligns ``provenance-runs``
(:func:`rcp_data.scoring.replay.load_release`: ``top_ranked`` in pool order, excluded documents
removed), then scored by :func:`rcp_data.scoring.replay.score_queries` and tabulated by
:func:`rcp_data.scoring.replay.summarize`. What differs from a published run is only what a
user's run may lack or add:

- rows naming a document outside the query's candidates (outside ``top_ranked``, or excluded
  for that query) are ignored and counted (``ignored_rows``);
- a candidate the run does not score ranks below every candidate it scores; such candidates
  tie at the bottom and the tie rule orders them;
- ``depth``: only the run's ``depth`` highest-scored candidates of a query count as scored;
- a query the run scores no candidate of counts 0 on both metrics (``queries_missing``);
  qrel-nDCG still leaves out queries without a positive label, as the card's tables do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.specs import TIE_RULES
from rcp_data.model.card_format import render_markdown_table, table_title
from rcp_data.scoring.replay import (
    METRICS,
    ReleaseRuns,
    SubsetRuns,
    default_tie_rule,
    score_queries,
    summarize,
)

log = logging.getLogger(__name__)


@dataclass
class RunCoverage:
    """How much of the release one run covers."""

    source: str
    queries: int = 0
    queries_scored: int = 0
    candidates: int = 0
    candidates_scored: int = 0
    ignored_rows: int = 0
    unknown_queries: int = 0
    missing: dict[str, list[str]] = field(default_factory=dict)   # subset -> query ids

    @property
    def queries_missing(self) -> int:
        return self.queries - self.queries_scored

    def to_json(self) -> dict:
        return {"source": self.source, "queries": self.queries,
                "queries_scored": self.queries_scored, "queries_missing": self.queries_missing,
                "candidates": self.candidates, "candidates_scored": self.candidates_scored,
                "ignored_rows": self.ignored_rows, "unknown_queries": self.unknown_queries}


@dataclass
class ScoreResult:
    """The tables of the user's runs (fractions) and their per-query values."""

    k: int
    tie_rule: str
    view: str
    depth: int | None
    spec: object
    names: list[str]
    per_query: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    coverage: dict[str, RunCoverage]

    def to_json(self) -> dict:
        """Replay's shape (``k``, ``tie_rule``, ``view``, ``metrics``) plus ``depth`` and
        ``runs`` (coverage of each run)."""
        metrics = {m: {n: {str(c): _num(self.tables[m].at[n, c])
                           for c in self.tables[m].columns} for n in self.names}
                   for m in METRICS}
        return {"k": self.k, "tie_rule": self.tie_rule, "view": self.view, "depth": self.depth,
                "metrics": metrics,
                "runs": {n: self.coverage[n].to_json() for n in self.names}}

    def markdown(self) -> str:
        """The card's table layout, one row per run."""
        parts = [render_markdown_table(self.tables[m].loc[self.names], self.spec,
                                       title=table_title(m, self.k, self.tie_rule),
                                       first_header="Run")
                 for m in METRICS]
        return "\n\n".join(parts) + "\n"


def _num(v: float) -> float | None:
    v = float(v)
    return None if np.isnan(v) else v


# -- alignment -----------------------------------------------------------------------------
def _candidate_frame(sub: SubsetRuns) -> pd.DataFrame:
    lengths = np.diff(sub.offsets)
    return pd.DataFrame({
        "query-id": np.repeat(sub.query_ids.astype(str), lengths),
        "corpus-id": np.asarray(sub.corpus_ids.to_pylist(), dtype=object),
        "idx": np.arange(int(sub.offsets[-1]), dtype=np.int64),
        "q": np.repeat(np.arange(sub.n_queries, dtype=np.int64), lengths),
    })


def assign_subsets(run: pd.DataFrame, data: ReleaseRuns, source: str) -> pd.DataFrame:
    """Give every row its subset: the run's ``subset`` column, else the one subset whose
    ``top_ranked`` holds its query (rows of queries in no subset are dropped)."""
    if "subset" in run.columns:
        unknown = sorted(set(run["subset"]) - set(data.subsets))
        if unknown:
            raise InputError(f"the run names subset(s) {', '.join(map(repr, unknown))}, which "
                             f"this release does not have ({', '.join(data.subsets)})",
                             path=source, field="subset")
        return run
    owner: dict[str, str] = {}
    for name, sub in data.subsets.items():
        for q in sub.query_ids:
            q = str(q)
            if q in owner:
                raise InputError(
                    f"query {q!r} is in subsets {owner[q]!r} and {name!r}; give the run a "
                    "'subset' column (parquet) or save it with mteb (its predictions name the "
                    "subset)", path=source, field="query-id")
            owner[q] = name
    subset = run["query-id"].map(owner)
    return run.assign(subset=subset)


def align_run(sub: SubsetRuns, rows: pd.DataFrame, *, depth: int | None, source: str
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """Scores ``(n,)`` of a run on one subset's candidates, which queries it scores ``(Q,)``
    and how many of its rows were ignored (documents outside the candidates)."""
    cand = _candidate_frame(sub)
    merged = rows[["query-id", "corpus-id", "score"]].merge(
        cand, on=["query-id", "corpus-id"], how="left")
    ignored = int(merged["idx"].isna().sum())
    merged = merged.dropna(subset=["idx"]).astype({"idx": np.int64, "q": np.int64})
    dup = merged.duplicated(["query-id", "corpus-id"])
    if dup.any():
        r = merged[dup].iloc[0]
        raise InputError(f"the run scores document {r['corpus-id']!r} of query "
                         f"{r['query-id']!r} twice (subset {sub.subset!r})", path=source,
                         field="corpus-id")
    if depth is not None:
        merged = merged.sort_values(["q", "score", "corpus-id"], ascending=[True, False, False],
                                    kind="stable")
        merged = merged[merged.groupby("q").cumcount() < depth]
    n = int(sub.offsets[-1])
    scores = np.full(n, np.nan)
    scores[merged["idx"].to_numpy()] = merged["score"].to_numpy(dtype=np.float64)
    scored_q = np.zeros(sub.n_queries, dtype=bool)
    scored_q[merged["q"].to_numpy()] = True
    return scores, scored_q, ignored


def _fill_unscored(scores: np.ndarray) -> np.ndarray:
    """Unscored candidates tie below every scored one (the engine needs finite scores)."""
    seen = scores[~np.isnan(scores)]
    floor = (float(seen.min()) if len(seen) else 0.0) - 1.0
    return np.where(np.isnan(scores), floor, scores)


def align_runs(data: ReleaseRuns, runs: dict[str, pd.DataFrame], sources: dict[str, str], *,
               depth: int | None = None) -> tuple[ReleaseRuns, dict[str, RunCoverage]]:
    """A :class:`ReleaseRuns` whose runs are the user's (one model per run name)."""
    if depth is not None and depth < 1:
        raise UsageError(f"--depth must be at least 1 (got {depth})")
    names = list(runs)
    coverage = {n: RunCoverage(source=sources[n]) for n in names}
    with_subset = {n: assign_subsets(r, data, sources[n]) for n, r in runs.items()}
    for n, r in with_subset.items():
        coverage[n].unknown_queries = int(r.loc[r["subset"].isna(), "query-id"].nunique())
        coverage[n].ignored_rows += int(r["subset"].isna().sum())
    subsets: dict[str, SubsetRuns] = {}
    for s, sub in data.subsets.items():
        stacked = []
        for n in names:
            r = with_subset[n]
            scores, scored_q, ignored = align_run(sub, r[r["subset"] == s], depth=depth,
                                                  source=sources[n])
            cov = coverage[n]
            cov.queries += sub.n_queries
            cov.queries_scored += int(scored_q.sum())
            cov.candidates += len(scores)
            cov.candidates_scored += int((~np.isnan(scores)).sum())
            cov.ignored_rows += ignored
            if not scored_q.all():
                cov.missing[s] = [str(q) for q in sub.query_ids[~scored_q]]
            stacked.append(_fill_unscored(scores))
        n_cand = int(sub.offsets[-1])
        subsets[s] = replace(sub, models=list(names),
                             is_judge=np.zeros(len(names), dtype=bool),
                             scores=np.vstack(stacked) if stacked else np.zeros((0, n_cand)))
    for n, cov in coverage.items():
        if cov.ignored_rows:
            log.info("%s: %d rows name documents outside the candidates (top_ranked, minus "
                     "excluded documents) or queries of no subset; ignored", n, cov.ignored_rows)
        if cov.queries_missing:
            log.warning("%s: %d of %d queries have no scored candidate; each counts 0", n,
                        cov.queries_missing, cov.queries)
    return replace(data, subsets=subsets), coverage


def _zero_missing(per_query: pd.DataFrame, coverage: dict[str, RunCoverage]) -> pd.DataFrame:
    """Queries a run does not score count 0 (qrel-nDCG: where the query has a positive)."""
    out = per_query.copy()
    for name, cov in coverage.items():
        for subset, qids in cov.missing.items():
            rows = ((out["model"] == name) & (out["subset"] == subset)
                    & out["query-id"].isin(qids))
            out.loc[rows, "rcp_ndcg"] = 0.0
            out.loc[rows & out["qrel_ndcg"].notna(), "qrel_ndcg"] = 0.0
    return out


# -- scoring -------------------------------------------------------------------------------
def score_runs(data: ReleaseRuns, runs: dict[str, pd.DataFrame], *,
               sources: dict[str, str] | None = None, k: int = 10,
               tie_rule: str | None = None, view: str = "subsets",
               depth: int | None = None) -> ScoreResult:
    """Score the user's ``runs`` (``{name: long table}``) on the loaded release ``data``."""
    rule = tie_rule or default_tie_rule(data.spec, data.suite_known)
    if rule not in TIE_RULES:
        raise UsageError(f"unknown tie rule {rule!r}; choose one of {', '.join(TIE_RULES)}")
    data.spec.view_columns(view)                     # refuse a bad view before scoring
    if not runs:
        raise UsageError("name at least one run")
    sources = sources or {n: n for n in runs}
    aligned, coverage = align_runs(data, runs, sources, depth=depth)
    per_query = _zero_missing(score_queries(aligned, k=k, tie_rules=(rule,)), coverage)
    tables = summarize(per_query, data.spec, view=view, tie_rule=rule)
    names = list(runs)
    tables = {m: t.reindex(names) for m, t in tables.items()}
    return ScoreResult(k=k, tie_rule=rule, view=view, depth=depth, spec=data.spec, names=names,
                       per_query=per_query, tables=tables, coverage=coverage)


def score_files(data: ReleaseRuns, paths: list[str | Path], names: list[str] | None = None,
                **kwargs) -> ScoreResult:
    """Read the run files (TREC, parquet, mteb predictions) and score them."""
    from rcp_data.scoring.runs_in import default_name, read_ranking

    names = list(names or [default_name(p) for p in paths])
    if len(names) != len(paths):
        raise UsageError(f"--name was given {len(names)} time(s) for {len(paths)} run(s); "
                         "give one --name per run, in the same order")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UsageError(f"two runs are named {repeated[0]!r}; pass --name to tell them apart")
    runs = {n: read_ranking(p, split=data.spec.split) for n, p in zip(names, paths, strict=True)}
    sources = {n: str(p) for n, p in zip(names, paths, strict=True)}
    return score_runs(data, runs, sources=sources, **kwargs)


__all__ = ["RunCoverage", "ScoreResult", "align_run", "align_runs", "score_files", "score_runs"]
