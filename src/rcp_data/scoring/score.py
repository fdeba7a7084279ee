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
  qrel-nDCG still leaves out queries without a positive label, as the card's tables do (with
  ``without_positives="zero"`` it counts them, as mteb does).

Nothing here prints: the result (:class:`ScoreResult`, frozen) renders itself as the card's
tables (:meth:`ScoreResult.text`) or as ``rcp-data score --json`` (:meth:`ScoreResult.to_json`);
what a run lacks is logged (``rcp_data.scoring.score``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.specs import DEFAULT_WITHOUT_POSITIVES, TIE_RULES, SuiteSpec
from rcp_data.model.card_format import CARD_K, escape_cell, render_markdown_table, table_title
from rcp_data.scoring.replay import (
    ReleaseRuns,
    SubsetRuns,
    default_tie_rule,
    score_queries,
    summarize,
)

if TYPE_CHECKING:
    from rcp_data.scoring.against import PairedDiff

    # {run: {reranker hub id: {metric: {column: PairedDiff}}}}
    Against = dict[str, dict[str, dict[str, dict[str, PairedDiff]]]]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
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

    def line(self, name: str) -> str:
        """``NAME: 9 of 10 queries scored (1 count 0); 3 rows outside the candidates
        ignored``, as ``rcp-data score`` prints it below the tables."""
        return (f"{escape_cell(name, markdown=False)}: {self.queries_scored} of "
                f"{self.queries} queries scored"
                + (f" ({self.queries_missing} count 0)" if self.queries_missing else "")
                + (f"; {self.ignored_rows} rows outside the candidates ignored"
                   if self.ignored_rows else ""))

    def to_json(self) -> dict:
        return {"source": self.source, "queries": self.queries,
                "queries_scored": self.queries_scored, "queries_missing": self.queries_missing,
                "candidates": self.candidates, "candidates_scored": self.candidates_scored,
                "ignored_rows": self.ignored_rows, "unknown_queries": self.unknown_queries}


@dataclass(frozen=True)
class ScoreResult:
    """The tables of the user's runs (fractions) and their per-query values.

    ``tables[metric]`` has one row per run (``names``) and one column per view column plus
    ``mean`` (unrounded fractions: ``tables["rcp_ndcg"].at[name, "mean"]`` is the run's
    RCP-nDCG@k); ``against`` holds the paired comparisons with published rerankers when they
    were asked for (``{run: {reranker hub id: {metric: {column: PairedDiff}}}}``).
    """

    k: int
    tie_rule: str
    view: str
    depth: int | None
    spec: SuiteSpec
    names: list[str]
    per_query: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    coverage: dict[str, RunCoverage]
    against: Against | None = None
    without_positives: str = DEFAULT_WITHOUT_POSITIVES
    dataset: str | None = None          # what the release was named by (path or hf:// ref)
    revision: str | None = None         # the commit sha it resolved to (None: a local folder)

    def mean(self, name: str | None = None, metric: str = "rcp_ndcg") -> float:
        """The Mean column of one run (default: the only or first run), as a fraction."""
        return float(self.tables[metric].at[name or self.names[0], "mean"])

    def to_json(self) -> dict:
        """Replay's shape (``k``, ``tie_rule``, ``view``, ``metrics``) plus ``depth`` and
        ``runs`` (coverage of each run); with ``against``, also ``against`` and ``bootstrap``."""
        metrics = {m: {n: {str(c): _num(self.tables[m].at[n, c])
                           for c in self.tables[m].columns} for n in self.names}
                   for m in self.tables}
        out = {"dataset": self.dataset, "revision": self.revision,
               "k": self.k, "tie_rule": self.tie_rule, "view": self.view, "depth": self.depth,
               "queries_without_positives": self.without_positives, "metrics": metrics,
               "runs": {n: self.coverage[n].to_json() for n in self.names}}
        if self.against is not None:
            from rcp_data.scoring.against import RESAMPLES, SEED, against_json

            out["against"] = against_json(self.against, self.spec)
            out["bootstrap"] = {"resamples": RESAMPLES, "seed": SEED, "interval": "95% percentile"}
        return out

    def text(self) -> str:
        """What ``rcp-data score`` prints: the tables, a coverage line per run and, with
        ``against``, the comparison tables."""
        out = self.markdown()
        for name in self.names:
            out += f"\n{self.coverage[name].line(name)}\n"
        if self.against is not None:
            from rcp_data.scoring.against import against_markdown

            out += "\n" + against_markdown(self.against, self.spec)
        return out

    def markdown(self) -> str:
        """The card's table layout, one row per run."""
        parts = [render_markdown_table(self.tables[m].loc[self.names], self.spec,
                                       title=table_title(m, self.k, self.tie_rule),
                                       first_header="Run")
                 for m in self.tables]
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
    counts = {n: dict.fromkeys(("queries", "queries_scored", "candidates", "candidates_scored",
                                "ignored_rows", "unknown_queries"), 0) for n in names}
    missing: dict[str, dict[str, list[str]]] = {n: {} for n in names}
    with_subset = {n: assign_subsets(r, data, sources[n]) for n, r in runs.items()}
    for n, r in with_subset.items():
        counts[n]["unknown_queries"] = int(r.loc[r["subset"].isna(), "query-id"].nunique())
        counts[n]["ignored_rows"] += int(r["subset"].isna().sum())
    subsets: dict[str, SubsetRuns] = {}
    for s, sub in data.subsets.items():
        stacked = []
        for n in names:
            r = with_subset[n]
            scores, scored_q, ignored = align_run(sub, r[r["subset"] == s], depth=depth,
                                                  source=sources[n])
            c = counts[n]
            c["queries"] += sub.n_queries
            c["queries_scored"] += int(scored_q.sum())
            c["candidates"] += len(scores)
            c["candidates_scored"] += int((~np.isnan(scores)).sum())
            c["ignored_rows"] += ignored
            if not scored_q.all():
                missing[n][s] = [str(q) for q in sub.query_ids[~scored_q]]
            stacked.append(_fill_unscored(scores))
        n_cand = int(sub.offsets[-1])
        subsets[s] = replace(sub, models=list(names),
                             is_judge=np.zeros(len(names), dtype=bool),
                             scores=np.vstack(stacked) if stacked else np.zeros((0, n_cand)))
    coverage = {n: RunCoverage(source=sources[n], missing=missing[n], **counts[n])
                for n in names}
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
               sources: dict[str, str] | None = None, k: int = CARD_K,
               tie_rule: str | None = None, view: str = "subsets",
               depth: int | None = None, against: Sequence[str] | None = None,
               without_positives: str = DEFAULT_WITHOUT_POSITIVES) -> ScoreResult:
    """Score the user's ``runs`` (``{name: long table}``) on the loaded release ``data``;
    ``against``: published rerankers (short names or hub ids, or ``["all"]``) to compare each
    run with (:mod:`rcp_data.scoring.against`); ``without_positives``: ``"skip"`` (the
    paper's) or ``"zero"`` (mteb's) for queries without a positive label in qrel-nDCG."""
    rule = tie_rule or default_tie_rule(data.spec, data.suite_known)
    if rule not in TIE_RULES:
        raise UsageError(f"unknown tie rule {rule!r}; choose one of {', '.join(TIE_RULES)}")
    data.spec.view_columns(view)                     # refuse a bad view before scoring
    if not runs:
        raise UsageError("name at least one run")
    from rcp_data.runs.runs_in import check_run_name

    for name in runs:
        check_run_name(name)
    sources = sources or {n: n for n in runs}
    aligned, coverage = align_runs(data, runs, sources, depth=depth)
    per_query = _zero_missing(score_queries(aligned, k=k, tie_rules=(rule,),
                                            without_positives=without_positives), coverage)
    tables = summarize(per_query, data.spec, view=view, tie_rule=rule)
    names = list(runs)
    tables = {m: t.reindex(names) for m, t in tables.items()}
    compared = _against(data, per_query, names, against, k=k, tie_rule=rule, view=view,
                        without_positives=without_positives) if against else None
    return ScoreResult(k=k, tie_rule=rule, view=view, depth=depth, spec=data.spec, names=names,
                       per_query=per_query, tables=tables, coverage=coverage, against=compared,
                       without_positives=without_positives)


def _against(data: ReleaseRuns, per_query: pd.DataFrame, names: list[str],
             wanted: Sequence[str], *, k: int, tie_rule: str, view: str,
             without_positives: str) -> Against:
    """Each run vs each of the ``wanted`` published rerankers (paired, per view column)."""
    from rcp_data.scoring.against import compare_run, resolve_models

    models = resolve_models(data.spec, data.models, wanted)
    published = score_queries(data, k=k, tie_rules=(tie_rule,),
                              without_positives=without_positives)
    return {name: {m: compare_run(per_query, published, data.spec, name, m, view=view)
                   for m in models} for name in names}


def score_files(data: ReleaseRuns, paths: Sequence[str | Path] | Mapping[str, str | Path],
                names: Sequence[str] | None = None, **kwargs) -> ScoreResult:
    """Read the run files (TREC, parquet, mteb predictions) and score them; ``paths`` may be
    ``{name: path}`` instead of ``names``. ``kwargs`` as :func:`score_runs`'."""
    from rcp_data.runs.run_files import TAG_ATTR
    from rcp_data.runs.runs_in import check_name_count, read_ranking, run_names

    if isinstance(paths, Mapping):
        names, paths = list(paths), list(paths.values())
    elif isinstance(paths, str | Path):
        paths = [paths]
    paths = list(paths)
    check_name_count(paths, names)
    frames = [read_ranking(p, split=data.spec.split) for p in paths]
    names = run_names(paths, names, tags=[f.attrs.get(TAG_ATTR) for f in frames])
    runs = dict(zip(names, frames, strict=True))
    sources = {n: str(p) for n, p in zip(names, paths, strict=True)}
    return score_runs(data, runs, sources=sources, **kwargs)


__all__ = ["RunCoverage", "ScoreResult", "align_run", "align_runs", "score_files", "score_runs"]
