"""A user's run against the published rerankers, as the paper separates reranker pairs.

Per view column (subset, or domain for the native/languages views) and per metric, over the
queries of that column (qrel-nDCG: those with a positive label):

- ``diff``: mean of run minus reranker, in nDCG fractions;
- ``t``, ``p``: the two-sided paired t-test over queries (``scipy.stats.ttest_rel``), the
  paper's test for separating two rerankers on a dataset (p < 0.05);
- ``ci95``: a 95% percentile interval of ``diff`` from a bootstrap over queries (``RESAMPLES``
  resamples, ``SEED`` fixed).

The ``mean`` column is the table's Mean: the difference of the unweighted means over the
columns, its interval from the same resamples (each subset's queries resampled within the
subset), and its t-test over every query of the view pooled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import SuiteSpec
from rcp_data.scoring.replay import METRICS, model_order
from rcp_data.scoring.resampling import RESAMPLES, SEED

ALPHA = 0.05


@dataclass(frozen=True)
class PairedDiff:
    """One run-vs-reranker comparison on one column."""

    diff: float
    t: float | None
    p: float | None
    ci95: tuple[float, float]
    queries: int
    interval_queries: int          # the interval's smallest subset (queries resampled within)

    def to_json(self) -> dict:
        return {"diff": self.diff, "t": self.t, "p": self.p, "ci95": list(self.ci95),
                "queries": self.queries, "interval_queries": self.interval_queries,
                "separated": self.p is not None and self.p < ALPHA}


def paired_test(a: np.ndarray, b: np.ndarray) -> tuple[float | None, float | None]:
    """Two-sided paired t-test of ``a`` vs ``b``; None where it is undefined (all equal)."""
    if len(a) < 2:
        return None, None
    with np.errstate(invalid="ignore", divide="ignore"):
        res = stats.ttest_rel(a, b)
    t, p = float(res.statistic), float(res.pvalue)
    return (None if np.isnan(t) else t), (None if np.isnan(p) else p)


def resolve_models(spec: SuiteSpec, available: Sequence[str], wanted: Sequence[str]
                   ) -> list[str]:
    """Hub ids of ``wanted`` (short names or hub ids; ``all``: every published reranker)."""
    if list(wanted) == ["all"]:
        return model_order(spec, list(available))
    out = []
    for name in wanted:
        hub = spec.hub_id(name)
        if hub not in available:
            known = ", ".join(spec.short_name(m) for m in model_order(spec, list(available)))
            raise UsageError(f"--against {name!r}: no such published reranker in this release "
                             f"(known: {known}, or all)")
        if hub not in out:
            out.append(hub)
    return out


def _wide(per_query: pd.DataFrame, metric: str, model: str) -> pd.Series:
    part = per_query[per_query["model"] == model]
    return part.set_index(["subset", "query-id"])[metric]


def compare_run(run_pq: pd.DataFrame, ref_pq: pd.DataFrame, spec: SuiteSpec, run: str,
                model: str, *, view: str = "subsets", resamples: int = RESAMPLES,
                seed: int = SEED) -> dict[str, dict[str, PairedDiff]]:
    """``{metric: {column: PairedDiff}}`` of ``run`` (in ``run_pq``) vs ``model``
    (in ``ref_pq``); both long per-query tables of one tie rule."""
    columns = spec.view_columns(view)
    out: dict[str, dict[str, PairedDiff]] = {}
    for metric in METRICS:
        joined = pd.concat({"a": _wide(run_pq, metric, run), "b": _wide(ref_pq, metric, model)},
                           axis=1, join="inner").dropna()
        rng = np.random.default_rng(seed)
        boot: dict[str, np.ndarray] = {}
        diffs: dict[str, np.ndarray] = {}
        for subset in dict.fromkeys(s for _, _, members in columns for s in members):
            if subset not in joined.index.get_level_values(0):
                continue
            part = joined.loc[subset]
            d = (part["a"] - part["b"]).to_numpy(dtype=np.float64)
            diffs[subset] = d
            draws = rng.integers(0, len(d), size=(resamples, len(d)))
            boot[subset] = d[draws].mean(axis=1)
        cells: dict[str, PairedDiff] = {}
        col_boot, col_diff, col_n = [], [], []
        for key, _label, members in columns:
            present = [m for m in members if m in diffs and len(diffs[m])]
            if not present:
                continue
            a = np.concatenate([joined.loc[m, "a"].to_numpy() for m in present])
            b = np.concatenate([joined.loc[m, "b"].to_numpy() for m in present])
            t, p = paired_test(a, b)
            diff = float(np.mean([diffs[m].mean() for m in present]))
            draws = np.mean([boot[m] for m in present], axis=0)
            fewest = min(len(diffs[m]) for m in present)
            cells[key] = PairedDiff(diff, t, p, _interval(draws), len(a), fewest)
            col_diff.append(diff)
            col_boot.append(draws)
            col_n.append(fewest)
        if cells:
            a = joined["a"].to_numpy()
            b = joined["b"].to_numpy()
            t, p = paired_test(a, b)
            cells["mean"] = PairedDiff(float(np.mean(col_diff)), t, p,
                                       _interval(np.mean(col_boot, axis=0)), len(a),
                                       min(col_n))
        out[metric] = cells
    return out


def _interval(draws: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return float(lo), float(hi)


def _points(v: float) -> str:
    return f"{100 * v:+.2f}"


def against_json(results: dict[str, dict[str, dict[str, dict[str, PairedDiff]]]],
                 spec: SuiteSpec) -> dict:
    """``{run: {reranker short name: {metric: {column: {...}}}}}`` for ``--json``."""
    return {run: {spec.short_name(model): {metric: {c: v.to_json() for c, v in cols.items()}
                                          for metric, cols in by_metric.items()}
                  for model, by_metric in by_model.items()}
            for run, by_model in results.items()}


def against_markdown(results: dict[str, dict[str, dict[str, dict[str, PairedDiff]]]],
                     spec: SuiteSpec, *, resamples: int = RESAMPLES, seed: int = SEED) -> str:
    """One table per metric: run vs reranker on the Mean column (points, CI, p)."""
    from rcp_data.model.card_format import METRIC_TITLES, escape_cell
    from rcp_data.scoring.agreement.bootstrap import interval_text

    parts = []
    for metric in METRICS:
        lines = [f"**{METRIC_TITLES[metric]}: run minus reranker, mean over the columns "
                 f"(points; 95% CI from {resamples} query-bootstrap resamples, seed {seed}; "
                 "paired t-test)**", "",
                 "| Run | Reranker | diff | 95% CI | p | separated (p < 0.05) |",
                 "|---|---|---:|---:|---:|---|"]
        for run, by_model in results.items():
            for model, by_metric in by_model.items():
                cell = by_metric[metric].get("mean")
                if cell is None:
                    continue
                p = "–" if cell.p is None else f"{cell.p:.3g}"
                sep = "yes" if cell.p is not None and cell.p < ALPHA else "no"
                lines.append(f"| {escape_cell(run)} | {escape_cell(spec.short_name(model))} | "
                             f"{100 * cell.diff:+.2f} | "
                             f"{interval_text(*cell.ci95, cell.interval_queries, _points)}"
                             f" | {p} | "
                             f"{sep} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


__all__ = ["ALPHA", "RESAMPLES", "SEED", "PairedDiff", "against_json", "against_markdown",
           "compare_run", "paired_test", "resolve_models"]
