"""How a refit changes the gains of an existing release (the diff of a recalibration release).

Given a release directory and a refit's item parameters and theta table, recompute every qrels
row's gain (``gain(theta)`` under the release's link; 0 where the refit has no theta) and compare
it with the published ``gain`` (null read as 0). Printed-table cells need the replay and are
compared by the release stage, not here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.errors import InputError
from rcp_data.gains import DEFAULT_LINK, ItemParams, gain
from rcp_data.layout import ReleaseDir, detect_suite
from rcp_data.specs import load_spec

log = logging.getLogger(__name__)

SUMMARY_COLUMNS = ["subset", "rows", "scored_before", "scored_after", "changed",
                   "max_abs_change", "mean_abs_change"]


@dataclass
class GainDiff:
    """Per-row and per-subset changes of the gains between a release and a refit."""

    rows: pd.DataFrame  # subset, query-id, corpus-id, gain_before, gain_after, theta_*, change
    summary: pd.DataFrame  # SUMMARY_COLUMNS, one row per subset
    tolerance: float

    @property
    def n_changed(self) -> int:
        return int(self.summary["changed"].sum())

    @property
    def max_abs_change(self) -> float:
        return float(self.summary["max_abs_change"].max()) if len(self.summary) else 0.0


def new_gains(qrels: pd.DataFrame, params: ItemParams, thetas: pd.DataFrame,
              link: str = DEFAULT_LINK) -> pd.DataFrame:
    """``qrels`` rows with ``theta_after`` (from ``thetas``) and ``gain_after`` (0 if none)."""
    merged = qrels[["query-id", "corpus-id", "gain", "theta"]].merge(
        thetas[["query-id", "corpus-id", "theta"]].rename(columns={"theta": "theta_after"}),
        how="left", on=["query-id", "corpus-id"], validate="many_to_one")
    t = merged["theta_after"].to_numpy(dtype=np.float64)
    g = np.zeros(len(t))
    ok = np.isfinite(t)
    g[ok] = gain(t[ok], params, link)
    return merged.rename(columns={"gain": "gain_before", "theta": "theta_before"}).assign(
        gain_before=lambda d: d["gain_before"].astype("float64").fillna(0.0), gain_after=g)


def gain_changes(release: str | Path, params: ItemParams, thetas: pd.DataFrame, *,
                 suite: str | None = None, link: str = DEFAULT_LINK,
                 tolerance: float = 1e-12) -> GainDiff:
    """Compare the gains of every subset of ``release`` with those of a refit."""
    root = Path(release)
    suite = suite or detect_suite(root)
    if suite is None:
        raise InputError("cannot tell the suite of this release (no build manifest or card tag)",
                         path=str(root))
    rel = ReleaseDir(root, load_spec(suite))
    frames, summary = [], []
    for subset in rel.spec.subset_names:
        if not rel.has(subset, "qrels"):
            continue
        d = new_gains(rel.table(subset, "qrels"), params, thetas, link)
        d.insert(0, "subset", subset)
        d["change"] = d["gain_after"] - d["gain_before"]
        absd = d["change"].abs()
        summary.append({
            "subset": subset, "rows": len(d),
            "scored_before": int(d["theta_before"].notna().sum()),
            "scored_after": int(d["theta_after"].notna().sum()),
            "changed": int((absd > tolerance).sum()),
            "max_abs_change": float(absd.max()) if len(d) else 0.0,
            "mean_abs_change": float(absd.mean()) if len(d) else 0.0,
        })
        frames.append(d)
    if not frames:
        raise InputError("the release has no qrels tables", path=str(root))
    out = GainDiff(pd.concat(frames, ignore_index=True),
                   pd.DataFrame(summary, columns=SUMMARY_COLUMNS), tolerance)
    log.info("recalibration diff: %s of %s gains changed (max |change| %.4g)",
             f"{out.n_changed:,}", f"{len(out.rows):,}", out.max_abs_change)
    return out
