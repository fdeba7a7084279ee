"""Count-nDCG and Raw-BT-nDCG (paper B.1, Eq. 5 and Eq. 4 on raw BT) in replay and score,
against a from-the-definition computation in plain numpy / Python on the SYNTHETIC demo
release (its verdicts, Bradley-Terry scores and item parameters)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rcp_data.core.gains import count_gain
from rcp_data.scoring.replay import load_release, replay_loaded, score_queries


def _excluded(root: Path, subset: str) -> set[tuple[str, str]]:
    path = root / subset / "excluded.parquet"
    if not path.exists():
        return set()
    table = pq.read_table(path).to_pylist()
    return {(r["query-id"], d) for r in table for d in r["excluded-corpus-ids"]}


def _count_share(root: Path, split: str) -> dict[tuple[str, str], float]:
    """Eq. 5 from the verdict rows: windows with any missing answer left out (rule complete)."""
    crit = pq.read_table(root / "provenance" / "judge_criteria" / f"{split}.parquet").to_pandas()
    cols = [c for c in crit.columns if c.startswith("C") and c[1:].isdigit()]
    windows = crit.groupby(["query-id", "call_index"])[cols].apply(lambda w: w.isna().any().any())
    passed: dict[tuple[str, str], list[int]] = {}
    for q, call, d, *answers in crit[["query-id", "call_index", "corpus-id", *cols]].itertuples(
            index=False):
        if not windows[(q, call)]:
            passed.setdefault((q, d), []).append(sum(int(a) for a in answers))
    return {k: sum(v) / (len(cols) * len(v)) for k, v in passed.items()}


def _raw_bt_gain(root: Path, split: str) -> dict[tuple[str, str], float]:
    """Eq. 4 (weighted discrimination) on the published, per-query centred theta_bt."""
    params = json.loads(next((root / "provenance").glob("item_params.*.json")).read_text())
    g, b = np.asarray(params["gamma"]), np.asarray(params["beta"])
    bt = pq.read_table(root / "provenance" / "judge_bt" / f"{split}.parquet").to_pandas()
    out = {}
    for q, d, t in zip(bt["query-id"], bt["corpus-id"], bt["theta_bt"], strict=True):
        out[(q, d)] = float(sum(gc / (1 + math.exp(-gc * (t - bc))) for gc, bc in
                                zip(g, b, strict=True)) / g.sum())
    return out


def _naive_ndcg(cands: list[str], scores: dict[str, float], gains: dict[str, float],
                k: int = 10) -> float:
    ranking = sorted(cands, key=lambda c: c.encode(), reverse=True)
    ranking = sorted(ranking, key=lambda c: -scores[c])                 # doc-id ties
    dcg = sum(gains.get(c, 0.0) / math.log2(r + 2) for r, c in enumerate(ranking[:k]))
    ideal = sorted((gains.get(c, 0.0) for c in cands), reverse=True)[:k]
    idcg = sum(v / math.log2(r + 2) for r, v in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def test_count_and_raw_bt_ndcg_equal_the_definition(demo_release_v1: Path) -> None:
    root = demo_release_v1
    data = load_release(root)
    per_query = score_queries(data, k=10, tie_rules=("doc-id",))
    assert {"count_ndcg", "raw_bt_ndcg"} <= set(per_query.columns)
    checked = 0
    for subset in data.spec.subset_names:
        split = data.spec.provenance_split(subset)
        count, raw = _count_share(root, split), _raw_bt_gain(root, split)
        excl = _excluded(root, subset)
        top = pq.read_table(root / subset / "top_ranked.parquet").to_pylist()
        runs = pq.read_table(root / "provenance" / "runs" / f"{split}.parquet").to_pandas()
        for model in data.subsets[subset].models:
            mine = per_query[(per_query["subset"] == subset) & (per_query["model"] == model)]
            mine = mine.set_index("query-id")
            part = runs[runs["model"] == model]
            for row in top:
                q = row["query-id"]
                cands = [c for c in row["corpus-ids"] if (q, c) not in excl]
                sc = dict(zip(part.loc[part["query-id"] == q, "corpus-id"],
                              part.loc[part["query-id"] == q, "score"], strict=True))
                for metric, table in (("count_ndcg", count), ("raw_bt_ndcg", raw)):
                    gains = {c: table[(q, c)] for c in cands if (q, c) in table}
                    assert mine.at[q, metric] == pytest.approx(_naive_ndcg(cands, sc, gains),
                                                               abs=1e-12)
                    checked += 1
    assert checked == 2 * len(per_query)
    # the two baselines are real, different metrics on this release
    assert not np.allclose(per_query["count_ndcg"], per_query["raw_bt_ndcg"])


def test_count_gain_is_the_pass_share() -> None:
    passes = np.array([[2, 1, 0], [0, 0, 0], [3, 3, 3]])
    n = np.array([3, 0, 3])
    assert count_gain(passes, n).tolist() == [3 / 9, 0.0, 1.0]


def test_replay_json_and_markdown_show_the_four_metrics(demo_release_v1: Path) -> None:
    result = replay_loaded(load_release(demo_release_v1))
    assert list(result.tables) == ["rcp_ndcg", "qrel_ndcg", "count_ndcg", "raw_bt_ndcg"]
    js = result.to_json()
    assert set(js["metrics"]) == set(result.tables)
    md = result.markdown()
    assert "**Count-nDCG@10 (%)" in md and "**Raw-BT-nDCG@10 (%)" in md
    mean = result.per_query.groupby(["model", "subset"])["count_ndcg"].mean()
    model = result.models[0]
    expected = mean.loc[model].mean()
    assert js["metrics"]["count_ndcg"][model]["mean"] == pytest.approx(expected, abs=1e-15)


def test_without_their_sources_the_baselines_are_absent(demo_release_v1: Path) -> None:
    data = load_release(demo_release_v1, baselines=False)
    per_query = score_queries(data, k=10)
    assert "count_ndcg" not in per_query.columns
    assert list(replay_loaded(data).tables) == ["rcp_ndcg", "qrel_ndcg"]


def test_score_shows_the_baselines_for_a_users_run(demo_release_v1: Path, tmp_path: Path
                                                   ) -> None:
    from rcp_data.scoring.score import score_runs

    data = load_release(demo_release_v1)
    model = data.subsets["alpha"].models[0]
    frames = [pq.read_table(demo_release_v1 / "provenance" / "runs" / f"{s}.parquet")
              .to_pandas() for s in data.spec.subset_names]
    mine = pd.concat(frames)
    mine = mine[mine["model"] == model][["query-id", "corpus-id", "score"]]
    result = score_runs(data, {"copy": mine})
    published = replay_loaded(data)
    for metric in ("count_ndcg", "raw_bt_ndcg"):
        assert result.tables[metric].at["copy", "mean"] == pytest.approx(
            published.tables[metric].at[model, "mean"], abs=1e-12)
    assert "count_ndcg" in result.to_json()["metrics"]
