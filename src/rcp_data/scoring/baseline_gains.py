"""The gains of Count-nDCG and Raw-BT-nDCG (paper B.1) from what a release ships.

- ``count_ndcg``: Eq. 5, a document's share of passed criteria over its Stage B windows
  (:func:`rcp_data.core.gains.count_gain`), from ``provenance/judge_criteria`` read under the
  release's recorded Stage B reading rule (as a refit reads it);
- ``raw_bt_ndcg``: the gain of Eq. 4 (the release's item parameters and link) applied to the
  uncalibrated Bradley-Terry scores of ``provenance/judge_bt``, centred at zero within each
  query as published.

A candidate without verdicts, or without a Bradley-Terry score, gains 0 (as RCP-nDCG gives 0 to
a document without a calibrated score). Like RCP-nDCG, both draw their ideal ranking from the
candidate pool (``top_ranked``, exclusions removed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.gains import count_gain, gain, link_name
from rcp_data.core.specs import SuiteSpec

BASELINE_METRICS = ("count_ndcg", "raw_bt_ndcg")
KEYS = ["split", "query-id", "corpus-id"]


@dataclass(frozen=True)
class BaselineGains:
    """Per-(split, query, document) gains of the baseline metrics a release carries.

    ``table``: ``split, query-id, corpus-id`` and one column per metric of ``metrics`` (NaN
    where the document has no verdicts or no Bradley-Terry score)."""

    table: pd.DataFrame
    metrics: tuple[str, ...]

    def for_candidates(self, split: str, query_ids: np.ndarray, corpus_ids: np.ndarray
                       ) -> dict[str, np.ndarray]:
        """``{metric: (n,)}`` gains of the candidates ``(query_ids[i], corpus_ids[i])``."""
        part = self.table[self.table["split"] == split].drop(columns="split")
        cand = pd.DataFrame({"query-id": np.asarray(query_ids, dtype=object).astype(str),
                             "corpus-id": np.asarray(corpus_ids, dtype=object).astype(str)})
        merged = cand.merge(part, on=["query-id", "corpus-id"], how="left", sort=False)
        return {m: np.nan_to_num(merged[m].to_numpy(dtype=np.float64), nan=0.0)
                for m in self.metrics}


def count_gains_frame(counts) -> pd.DataFrame:
    """``query-id, corpus-id, count_ndcg`` of :class:`~rcp_data.calibration.verdicts.
    VerdictCounts`."""
    return pd.DataFrame({"query-id": counts.query_id, "corpus-id": counts.corpus_id,
                         "count_ndcg": count_gain(counts.passes, counts.n)})


def read_baseline_gains(root: str | Path, spec: SuiteSpec) -> BaselineGains | None:
    """The baseline gains of the release at ``root``; None when it ships neither the verdicts
    nor (with item parameters) the Bradley-Terry scores."""
    from rcp_data.calibration.reading import DEFAULT_RULE
    from rcp_data.calibration.refit import (
        read_release_answers,
        release_calibration,
        split_keys,
    )
    from rcp_data.calibration.verdicts import count_verdicts

    answers = read_release_answers(root, spec)
    parts: list[pd.DataFrame] = []
    metrics: list[str] = []
    if answers.criteria is not None and answers.criteria.num_rows:
        counts = count_verdicts(answers.criteria, source="provenance/judge_criteria",
                                rule=answers.rules.get("stage_b") or DEFAULT_RULE)
        parts.append(split_keys(count_gains_frame(counts)))
        metrics.append("count_ndcg")
    if answers.theta_bt is not None and answers.item_params is not None and len(
            answers.theta_bt):
        bt = answers.theta_bt
        link = link_name(release_calibration(root))
        parts.append(pd.DataFrame({
            "split": bt["split"].astype(str).to_numpy(),
            "query-id": bt["query-id"].astype(str).to_numpy(),
            "corpus-id": bt["corpus-id"].astype(str).to_numpy(),
            "raw_bt_ndcg": gain(bt["theta_bt"].to_numpy(dtype=np.float64), answers.item_params,
                                link)}))
        metrics.append("raw_bt_ndcg")
    if not parts:
        return None
    table = parts[0]
    for p in parts[1:]:
        table = table.merge(p, on=KEYS, how="outer", sort=False)
    return BaselineGains(table=table, metrics=tuple(metrics))


__all__ = ["BASELINE_METRICS", "BaselineGains", "count_gains_frame", "read_baseline_gains"]
