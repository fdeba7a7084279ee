"""The acceptance gate of a new judge: old and new agreement with the human labels side by
side in the release diff, and a WARNING (and ``agrees_less`` in the JSON) when the new release
agrees less. SYNTHETIC demo release; numbers cross-checked with scipy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats
from support.demo_fixture import copy_demo

from rcp_data.core.specs import load_spec
from rcp_data.release.agreement_gate import agreement_gate
from rcp_data.release.recalibrate import diff_releases


@pytest.fixture(scope="module")
def pair(tmp_path_factory, demo_data) -> tuple[Path, Path]:
    """Release A (the demo) and B: A with each query's theta values reversed in grade order
    (a judge that agrees less by construction; gains left alone)."""
    work = tmp_path_factory.mktemp("gate")
    a, b = copy_demo(demo_data, work / "a"), copy_demo(demo_data, work / "b")
    for subset in ("alpha", "beta"):
        path = b / subset / "qrels.parquet"
        table = pq.read_table(path)
        frame = table.to_pandas()
        judged = frame["theta"].notna()
        rng = np.random.default_rng(0)
        for _, rows in frame[judged].groupby("query-id").groups.items():
            idx = np.asarray(rows)
            frame.loc[idx, "theta"] = rng.permutation(frame.loc[idx, "theta"].to_numpy())
        pq.write_table(pa.Table.from_pandas(frame, schema=table.schema, preserve_index=False),
                       path)
    return a, b


def _pooled(root: Path) -> pd.DataFrame:
    """The judged qrels rows of both subsets, those on a query's excluded list left out (the
    rule of every agreement figure)."""
    parts = []
    for s in ("alpha", "beta"):
        q = pq.read_table(root / s / "qrels.parquet").to_pandas().dropna(subset=["theta"])
        ex_file = root / s / "excluded.parquet"
        if ex_file.exists():
            ex = pd.read_parquet(ex_file).explode("excluded-corpus-ids")
            gone = set(zip(ex["query-id"], ex["excluded-corpus-ids"], strict=True))
            q = q[[k not in gone for k in zip(q["query-id"], q["corpus-id"], strict=True)]]
        parts.append(q)
    return pd.concat(parts)


def test_gate_numbers_equal_scipy(pair):
    a, b = pair
    gate = agreement_gate(a, b, load_spec("demo"))
    for root, numbers in ((a, gate.old), (b, gate.new)):
        q = _pooled(root)
        assert numbers["rcp"]["spearman"] == pytest.approx(
            stats.spearmanr(q["theta"], q["score"]).statistic, abs=1e-12)
        pos = q["score"] >= 1
        u = stats.mannwhitneyu(q.loc[pos, "theta"], q.loc[~pos, "theta"]).statistic
        assert numbers["rcp"]["auc"] == pytest.approx(u / (pos.sum() * (~pos).sum()), abs=1e-12)
    # Count and raw BT come from the verdicts and judge_bt, which B shares with A
    assert gate.old["count"] == gate.new["count"] and gate.old["raw_bt"] == gate.new["raw_bt"]


def test_a_release_that_agrees_less_says_so(pair):
    a, b = pair
    diff = diff_releases(a, b, load_spec("demo"))
    assert diff.agrees_less and set(diff.gate.worse) == {"concordance", "auc", "spearman"}
    text = diff.text()
    assert "agreement with the human labels" in text
    warning = [line for line in text.splitlines() if line.startswith("WARNING:")]
    assert len(warning) == 1 and "agrees less" in warning[0]
    js = json.loads(json.dumps(diff.to_dict()))
    assert js["agrees_less"] is True and js["agreement"]["agrees_less"] is True
    assert js["agreement"]["old"]["rcp"]["concordance"] == diff.gate.old["rcp"]["concordance"]


def test_the_same_release_passes_the_gate(pair):
    a, _ = pair
    diff = diff_releases(a, a, load_spec("demo"))
    assert not diff.agrees_less and diff.gate.worse == ()
    assert "WARNING" not in diff.text()
    assert diff.to_dict()["agreement"]["warning"] is None
