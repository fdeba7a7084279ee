"""A release's diagnostics on its own labels: the numbers behind the card's Diagnostics section
and its pictures (:mod:`rcp_data.documents.pictures`), computed in one place.

- label layer, for each score (``rcp``: the calibrated theta of ``qrels.theta``; ``raw_bt``:
  ``provenance/judge_bt``; ``count``: Count-nDCG's gain, Eq. 5), over the qrels rows of judged
  pool documents (a finite theta) but those on a query's excluded list (the one rule of every
  agreement figure, :mod:`rcp_data.scoring.agreement.judged`): within-query concordance with
  the grade, AUC at the suite's ``grade_positive``, pooled Spearman with its ceiling and floor
  (:mod:`rcp_data.scoring.agreement.labels`, the statistics of ``rcp-data agree``);
- ranking layer, from the replay of the release's runs (the suite's paper tie rule): each
  metric's leaderboard (the Mean column) with 95% query-bootstrap intervals stratified by
  subset, Kendall tau-b between the RCP and qrel leaderboards, each metric's sensitivity (the
  share of system pairs a paired t-test separates, mean over subsets) and the failure-mode
  shares of qrel-nDCG@10 (G.1, pooled over subsets)
  (:mod:`rcp_data.scoring.agreement.rankings`);
- the calibration's reliability diagram: the ECE's bins of the 2PL pass probabilities at the
  calibrated theta against the judge's Stage B answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.gains import DEFAULT_LINK, ItemParams, link_name
from rcp_data.core.specs import DEFAULT_CARD_K, SuiteSpec
from rcp_data.scoring.agreement import labels as lab
from rcp_data.scoring.agreement import rankings as rk
from rcp_data.scoring.agreement.judged import EXCLUSION_RULE, excluded_mask, read_excluded

SCORES = ("rcp", "raw_bt", "count")
SCORE_LABELS = {"rcp": "RCP theta", "raw_bt": "raw BT", "count": "Count"}
ECE_BINS = 20


def _defined(value: float) -> float | None:
    """``value``, or None where a statistic is undefined (NaN)."""
    return None if value is None or not np.isfinite(value) else float(value)


@dataclass(frozen=True)
class SpearmanBounds:
    """Pooled Spearman of a score with the grade, with its ceiling and floor (E.4)."""

    rho: float | None
    ceiling: float | None
    floor: float | None

    def to_json(self) -> dict:
        return {"rho": self.rho, "ceiling": self.ceiling, "floor": self.floor}


@dataclass(frozen=True)
class FailureModes:
    """Shares of queries on which nDCG@10 saturates, floors, compresses, or any of these."""

    saturates: float
    floors: float
    compresses: float
    any: float
    queries: int

    def to_json(self) -> dict:
        return {"saturates": self.saturates, "floors": self.floors,
                "compresses": self.compresses, "any": self.any, "queries": self.queries}


def failure_modes(values: np.ndarray) -> FailureModes:
    """G.1 shares (:func:`rcp_data.scoring.agreement.rankings.failure_modes`) of ``values``
    ``(queries, systems)`` of nDCG@10."""
    modes = rk.failure_modes(values)
    n_q = int(modes["kept"].sum())
    if not n_q:
        return FailureModes(0.0, 0.0, 0.0, 0.0, 0)
    shares = rk.failure_shares(modes)
    return FailureModes(*(shares[m].value for m in (*rk.FAILURE_MODES, "any")), n_q)


@dataclass(frozen=True)
class LabelAgreement:
    """One score against the release's grades."""

    concordance: float | None
    auc: float | None
    spearman: SpearmanBounds
    documents: int

    def to_json(self) -> dict:
        return {"concordance": self.concordance, "auc": self.auc,
                "spearman": self.spearman.to_json(), "documents": self.documents}


@dataclass(frozen=True)
class Reliability:
    """The reliability diagram's bins (weight, mean prediction, observed pass rate)."""

    weight: tuple[float, ...]
    predicted: tuple[float | None, ...]
    observed: tuple[float | None, ...]
    ece: float


@dataclass(frozen=True)
class ReleaseDiagnostics:
    """Label-layer and ranking-layer numbers of one release (see the module docstring)."""

    auc_threshold: int
    tie_rule: str
    label: dict[str, LabelAgreement]
    leaderboards: dict[str, dict[str, float]]                 # metric -> model -> mean
    intervals: dict[str, dict[str, tuple[float, float]]]      # metric -> model -> 95% CI
    kendall_rcp_qrel: float | None
    sensitivity: dict[str, float | None]
    failure_modes: FailureModes
    reliability: Reliability | None = None
    #: metric -> the fewest queries of a subset its intervals resampled (below MIN_QUERIES:
    #: the card shows "n too small")
    interval_queries: dict[str, int] = field(default_factory=dict)
    # the data behind the pictures (not in the JSON)
    graded: pd.DataFrame = field(default_factory=pd.DataFrame, compare=False, repr=False)
    pool_theta: np.ndarray = field(default_factory=lambda: np.zeros(0), compare=False,
                                   repr=False)
    item_params: ItemParams | None = field(default=None, compare=False, repr=False)
    link: str = DEFAULT_LINK
    k: int = DEFAULT_CARD_K[0]         # the cutoff of the ranking layer: the card's main k

    def to_json(self) -> dict:
        out = {"auc_threshold": self.auc_threshold, "tie_rule": self.tie_rule,
               "label": {k: v.to_json() for k, v in self.label.items()},
               "leaderboards": self.leaderboards,
               "intervals": {m: {k: list(v) for k, v in by.items()}
                             for m, by in self.intervals.items()},
               "kendall_rcp_qrel": self.kendall_rcp_qrel, "sensitivity": self.sensitivity,
               "failure_modes": self.failure_modes.to_json(),
               "interval_queries": self.interval_queries}
        if self.reliability is not None:
            out["reliability"] = {"weight": list(self.reliability.weight),
                                  "predicted": list(self.reliability.predicted),
                                  "observed": list(self.reliability.observed),
                                  "ece": self.reliability.ece, "bins": ECE_BINS}
        return out


def label_agreement(query: np.ndarray, score: np.ndarray, grade: np.ndarray, threshold: int
                    ) -> LabelAgreement:
    """The label-layer numbers of one score (rows with a NaN score left out)."""
    score = np.asarray(score, dtype=np.float64)
    keep = ~np.isnan(score)
    q = pd.factorize(np.asarray(query)[keep])[0]
    s, g = score[keep], np.asarray(grade, dtype=np.float64)[keep]
    rho = lab.pooled_spearman(s, g, q)
    return LabelAgreement(_defined(lab.concordance(s, g, q).rate),
                          _defined(lab.pooled_auc(s, g >= threshold, q).value),
                          SpearmanBounds(_defined(rho.observed.value), _defined(rho.ceiling),
                                         _defined(rho.floor)), int(keep.sum()))


def _graded_rows(root: Path, spec: SuiteSpec) -> pd.DataFrame:
    """``split, subset, query, query-id, corpus-id, grade, theta, excluded`` of the judged pool
    rows (``excluded``: the exclusion rule leaves the row out of every agreement figure,
    :func:`rcp_data.scoring.agreement.judged.excluded_mask`; the calibration's own pictures
    keep it, as the calibration does)."""
    from rcp_data.model.layout import subset_file
    from rcp_data.model.tables import read_release_table

    parts = []
    for s in spec.subset_names:
        t = read_release_table(root / subset_file(s, "qrels"), "qrels",
                               ["query-id", "corpus-id", "score", "theta"]).to_pandas()
        t = t[t["theta"].notna()]
        excluded = excluded_mask(t["query-id"], t["corpus-id"], read_excluded(root, s))
        parts.append(pd.DataFrame({
            "split": spec.provenance_split(s), "subset": s,
            "query": s + "\x1f" + t["query-id"].astype(str),
            "query-id": t["query-id"].astype(str).to_numpy(),
            "corpus-id": t["corpus-id"].astype(str).to_numpy(),
            "grade": t["score"].to_numpy(dtype=np.float64),
            "theta": t["theta"].to_numpy(dtype=np.float64), "excluded": excluded}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _with_baselines(rows: pd.DataFrame, root: Path, spec: SuiteSpec) -> pd.DataFrame:
    """``rows`` with ``raw_bt`` (theta_bt) and ``count`` (Eq. 5) columns (NaN where absent)."""
    from rcp_data.calibration.reading import DEFAULT_RULE
    from rcp_data.calibration.refit import read_release_answers, split_keys
    from rcp_data.calibration.verdicts import count_verdicts
    from rcp_data.scoring.baseline_gains import KEYS, count_gains_frame

    answers = read_release_answers(root, spec)
    out = rows.assign(raw_bt=np.nan, count=np.nan)
    if answers.theta_bt is not None and len(answers.theta_bt):
        bt = answers.theta_bt.astype({"split": str, "query-id": str, "corpus-id": str})
        out = out.drop(columns="raw_bt").merge(
            bt[[*KEYS, "theta_bt"]].rename(columns={"theta_bt": "raw_bt"}), on=KEYS, how="left")
    if answers.criteria is not None and answers.criteria.num_rows:
        counts = count_verdicts(answers.criteria, source="provenance/judge_criteria",
                                rule=answers.rules.get("stage_b") or DEFAULT_RULE)
        frame = split_keys(count_gains_frame(counts)).rename(columns={"count_ndcg": "count"})
        out = out.drop(columns="count").merge(frame, on=KEYS, how="left")
        out.attrs["counts"] = counts
    out.attrs["item_params"] = answers.item_params
    return out


def _reliability(rows: pd.DataFrame) -> Reliability | None:
    from rcp_data.calibration.diagnostics import (
        expected_calibration_error,
        reliability_bins,
    )
    from rcp_data.calibration.refit import split_keys

    counts, params = rows.attrs.get("counts"), rows.attrs.get("item_params")
    if counts is None or params is None:
        return None
    keys = split_keys(pd.DataFrame({"query-id": counts.query_id, "corpus-id": counts.corpus_id,
                                    "i": np.arange(counts.n_docs)}))
    theta = keys.merge(rows[["split", "query-id", "corpus-id", "theta"]],
                       on=["split", "query-id", "corpus-id"], how="inner")
    if not len(theta):
        return None
    i = theta["i"].to_numpy()
    pred = params.pass_probabilities(theta["theta"].to_numpy())
    weight, mean_pred, observed = reliability_bins(pred, counts.passes[i], counts.n[i], ECE_BINS)
    nan = lambda v: None if np.isnan(v) else float(v)  # noqa: E731
    return Reliability(tuple(map(float, weight)), tuple(map(nan, mean_pred)),
                       tuple(map(nan, observed)),
                       expected_calibration_error(pred, counts.passes[i], counts.n[i], ECE_BINS))


def _ranking(data, tie_rule: str, k: int
             ) -> tuple[dict, dict, float | None, dict, FailureModes, dict[str, int]]:
    from rcp_data.scoring.replay import replay_loaded

    result = replay_loaded(data, k=k, tie_rule=tie_rule)
    pq_ = result.per_query
    boards, intervals, sens = {}, {}, {}
    fewest: dict[str, int] = {}
    models = result.models
    for metric, table in result.tables.items():
        boards[metric] = {m: float(table.at[m, "mean"]) for m in models}
        strata, per_subset = [], []
        for _subset, part in pq_.groupby("subset", sort=False):
            wide = part.pivot(index="model", columns="query-id", values=metric).reindex(models)
            wide = wide.loc[:, wide.notna().all(axis=0)]
            if wide.shape[1]:
                strata.append(wide.to_numpy().T)                   # (queries, systems)
                sep = rk.separation(strata[-1])
                if len(sep.separated):
                    per_subset.append(rk.sensitivity(sep).value)
        ci = rk.leaderboard_intervals(strata)
        fewest[metric] = min((len(v) for v in strata), default=0)
        intervals[metric] = {m: (float(ci[i, 0]), float(ci[i, 1])) for i, m in
                             enumerate(models)} if len(ci) else {}
        sens[metric] = float(np.mean(per_subset)) if per_subset else None
    tau = _defined(rk.kendall_tau_b(np.array([boards["rcp_ndcg"][m] for m in models]),
                                    np.array([boards["qrel_ndcg"][m] for m in models])))
    qrel = [part.pivot(index="model", columns="query-id", values="qrel_ndcg").reindex(models)
            for _, part in pq_.groupby("subset", sort=False)]
    qrel = [w.loc[:, w.notna().all(axis=0)].to_numpy().T for w in qrel]
    fm = failure_modes(np.concatenate(qrel) if qrel else np.zeros((0, len(models))))
    return boards, intervals, tau, sens, fm, fewest


def judged(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`_graded_rows` every agreement figure counts (the exclusion rule's)."""
    return rows[~rows["excluded"].to_numpy(bool)] if len(rows) else rows


def _label_layer(rows: pd.DataFrame, threshold: int) -> dict[str, LabelAgreement]:
    """The label layer of the rows the exclusion rule keeps."""
    rows = judged(rows)
    if not len(rows):
        return {}
    return {name: label_agreement(rows["query"].to_numpy(), rows[col].to_numpy(),
                                  rows["grade"].to_numpy(), threshold)
            for name, col in (("rcp", "theta"), ("raw_bt", "raw_bt"), ("count", "count"))
            if rows[col].notna().any()}


def label_layer(root: str | Path, spec: SuiteSpec) -> dict[str, LabelAgreement]:
    """The label-layer numbers alone (no replay): ``{score: LabelAgreement}``."""
    root = Path(root)
    rows = _with_baselines(_graded_rows(root, spec), root, spec)
    return _label_layer(rows, int(spec.grade_positive))


#: The rows every label-layer figure counts, as the outputs name them.
LABEL_RULE = EXCLUSION_RULE

#: The label-layer measures an acceptance gate compares, with their names in a report.
GATE_MEASURES = (("concordance", "concordance"), ("auc", "AUC"), ("spearman", "Spearman"))


def measure_values(agreement: LabelAgreement) -> dict[str, float | None]:
    """``{concordance, auc, spearman}`` of one score (Spearman: the pooled rho)."""
    return {"concordance": agreement.concordance, "auc": agreement.auc,
            "spearman": agreement.spearman.rho}


def release_diagnostics(root: str | Path, spec: SuiteSpec | str | None = None, *,
                        tie_rule: str | None = None) -> ReleaseDiagnostics:
    """Every Diagnostics number of the release directory at ``root``."""
    from rcp_data.calibration.refit import release_calibration
    from rcp_data.model.suite import suite_spec
    from rcp_data.scoring.replay import default_tie_rule, load_release

    root = Path(root)
    spec, known = suite_spec(root, spec, adhoc=True)
    rows = _with_baselines(_graded_rows(root, spec), root, spec)
    threshold = int(spec.grade_positive)
    label = _label_layer(rows, threshold)
    rule = tie_rule or default_tie_rule(spec, known)
    data = load_release(root, spec, known=known)
    boards, intervals, tau, sens, fm, fewest = _ranking(data, rule, spec.main_k)
    pool_theta = rows["theta"].to_numpy()
    return ReleaseDiagnostics(
        auc_threshold=threshold, tie_rule=rule, label=label, leaderboards=boards,
        intervals=intervals, kendall_rcp_qrel=tau, sensitivity=sens, failure_modes=fm,
        interval_queries=fewest, reliability=_reliability(rows), graded=judged(rows),
        pool_theta=pool_theta,
        item_params=rows.attrs.get("item_params"), link=link_name(release_calibration(root)),
        k=spec.main_k)


__all__ = ["LABEL_RULE", "FailureModes", "SpearmanBounds", "failure_modes", "GATE_MEASURES", "SCORES", "SCORE_LABELS", "LabelAgreement", "label_layer",
           "measure_values", "ReleaseDiagnostics", "Reliability",
           "label_agreement", "release_diagnostics"]
