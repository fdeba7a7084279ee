"""TREC-DL pair statistics (paper Sec. 4.5 and App. C.7; ``trecdl_pairs`` in paper_values.json).

Per year, over the rerankers' per-query nDCG@10 (pool panel, pool-order ties):

- a pair of rerankers is *separated* by a metric when a two-sided paired t-test over the year's
  queries gives p < 0.05 (``scipy.stats.ttest_rel``);
- a pair is *NIST-decisive* when qrel-nDCG (NIST grades as linear gains) separates it; RCP-nDCG
  *agrees with NIST* on it when its mean difference has the same sign as qrel-nDCG's;
- Kendall tau-b (``scipy.stats.kendalltau``) between the two leaderboards (mean per reranker).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from rcp_data.core.errors import InputError

ALPHA = 0.05


@dataclass(frozen=True)
class PairStats:
    """Pair statistics of one year (field names as in ``trecdl_pairs``)."""

    pairs: int
    separated_qrel_linear: int
    separated_rcp: int
    agree: int
    decisive: int
    kendall_rcp_vs_nist: float
    queries: int

    @property
    def agree_with_nist(self) -> str:
        return f"{self.agree}/{self.decisive}"

    def to_json(self, n_models: int | None = None) -> dict:
        d = asdict(self)
        d["agree_with_nist"] = self.agree_with_nist
        if n_models is not None:
            d[f"kendall_rcp_vs_nist_{n_models}"] = d.pop("kendall_rcp_vs_nist")
        return d


def paired_separation(values: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray,
                                                                          np.ndarray]:
    """For every model pair ``(i < j)`` of ``values`` (queries x models): p-value of the
    paired t-test, the mean difference ``i - j`` and whether p < alpha. Pairs whose differences
    are all zero (p is NaN) are not separated."""
    n_models = values.shape[1]
    idx = np.array(list(combinations(range(n_models), 2)), dtype=np.int64).reshape(-1, 2)
    a, b = values[:, idx[:, 0]], values[:, idx[:, 1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        p = stats.ttest_rel(a, b, axis=0).pvalue
    p = np.asarray(p, dtype=np.float64)
    diff = (a - b).mean(axis=0)
    return p, diff, np.nan_to_num(p, nan=1.0) < alpha


def _matrix(per_query: pd.DataFrame, metric: str, models: list[str]) -> pd.DataFrame:
    wide = per_query.pivot_table(index="query-id", columns="model", values=metric,
                                 aggfunc="first", dropna=False)
    missing = [m for m in models if m not in wide.columns]
    if missing:
        raise InputError(f"no per-query {metric} values for model {missing[0]!r}", field=metric)
    return wide[models]


def pair_stats(rcp: pd.DataFrame, qrel: pd.DataFrame, *, alpha: float = ALPHA) -> PairStats:
    """Pair statistics from two (queries x models) tables of per-query values.

    Queries with a missing value under a metric (qrel: no positive qrel) are left out of that
    metric's tests and means.
    """
    if list(rcp.columns) != list(qrel.columns):
        raise InputError("the RCP and qrel tables must have the same models in the same order")
    r = rcp.dropna(axis=0, how="any").to_numpy(dtype=np.float64)
    q = qrel.dropna(axis=0, how="any").to_numpy(dtype=np.float64)
    _, r_diff, r_sep = paired_separation(r, alpha)
    _, q_diff, q_sep = paired_separation(q, alpha)
    agree = int(np.sum(q_sep & (np.sign(r_diff) == np.sign(q_diff))))
    tau = stats.kendalltau(r.mean(axis=0), q.mean(axis=0), variant="b").statistic
    return PairStats(
        pairs=len(r_sep),
        separated_qrel_linear=int(q_sep.sum()),
        separated_rcp=int(r_sep.sum()),
        agree=agree,
        decisive=int(q_sep.sum()),
        kendall_rcp_vs_nist=float(tau),
        queries=int(max(len(rcp), len(qrel))),
    )


def trecdl_pairs(per_query: pd.DataFrame, *, subsets: dict[str, str] | None = None,
                 tie_rule: str | None = "pool-order", alpha: float = ALPHA,
                 models: list[str] | None = None) -> dict[str, PairStats]:
    """Pair statistics per year from a replay's per-query table
    (:func:`rcp_data.scoring.replay.score_queries`: ``tie_rule, subset, model, query-id, rcp_ndcg,
    qrel_ndcg``). ``subsets`` maps output keys to subset names (default: every subset)."""
    table = per_query
    if tie_rule is not None and "tie_rule" in table.columns:
        table = table[table["tie_rule"] == tie_rule]
        if table.empty:
            raise InputError(f"no per-query values under tie rule {tie_rule!r}", field="tie_rule")
    subsets = subsets or {s: s for s in pd.unique(table["subset"])}
    out = {}
    for key, subset in subsets.items():
        part = table[table["subset"] == subset]
        if part.empty:
            raise InputError(f"no per-query values for subset {subset!r}", field="subset")
        names = models or sorted(pd.unique(part["model"]))
        out[key] = pair_stats(_matrix(part, "rcp_ndcg", names), _matrix(part, "qrel_ndcg", names),
                              alpha=alpha)
    return out


TRECDL_YEARS = {"dl19": "trec_dl_2019", "dl20": "trec_dl_2020"}


def compare_with_paper(computed: dict[str, PairStats], paper: dict) -> list[dict]:
    """Rows ``{year, field, computed, paper, status}`` against ``paper_values["trecdl_pairs"]``;
    counts must be equal, Kendall tau within 0.0005 (printed to three decimals)."""
    rows = []
    for year, st in computed.items():
        ref = paper.get(year)
        if ref is None:
            continue
        mine = st.to_json()
        for fld, pv in ref.items():
            if fld.startswith("kendall"):
                cv = mine["kendall_rcp_vs_nist"]
                ok = abs(cv - float(pv)) <= 0.0005 + 1e-9
            else:
                cv = mine.get(fld)
                ok = cv == pv
            rows.append({"year": year, "field": fld, "computed": cv, "paper": pv,
                         "status": "matched" if ok else "failed"})
    return rows
