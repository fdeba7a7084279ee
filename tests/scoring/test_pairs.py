"""TREC-DL pair statistics on SYNTHETIC per-query values against a plain scipy computation."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rcp_data import resources
from rcp_data.scoring.pairs import compare_with_paper, pair_stats, paired_separation, trecdl_pairs


def _synthetic(seed: int, n_q: int = 43, n_m: int = 14) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SYNTHETIC per-query values: rerankers of graded quality, RCP less noisy than qrel."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.55, 0.75, n_m)
    base = rng.normal(0, 0.1, (n_q, 1))
    rcp = np.clip(quality + base + rng.normal(0, 0.04, (n_q, n_m)), 0, 1)
    qrel = np.clip(quality + base + rng.normal(0, 0.2, (n_q, n_m)), 0, 1)
    qrel[:, 3] = qrel[:, 4]                         # two identical rerankers: p is NaN
    models = [f"synthetic-rr-{i:02d}" for i in range(n_m)]
    idx = pd.Index([f"sq{i}" for i in range(n_q)], name="query-id")
    return pd.DataFrame(rcp, idx, models), pd.DataFrame(qrel, idx, models)


def _plain(rcp: pd.DataFrame, qrel: pd.DataFrame) -> dict:
    """The statistics pair by pair, the straightforward way."""
    sep = {"rcp": 0, "qrel": 0}
    agree = decisive = 0
    for a, b in combinations(rcp.columns, 2):
        p_r = stats.ttest_rel(rcp[a], rcp[b]).pvalue
        p_q = stats.ttest_rel(qrel[a], qrel[b]).pvalue
        sep["rcp"] += bool(p_r < 0.05)
        sep["qrel"] += bool(p_q < 0.05)
        if p_q < 0.05:
            decisive += 1
            agree += np.sign((rcp[a] - rcp[b]).mean()) == np.sign((qrel[a] - qrel[b]).mean())
    tau = stats.kendalltau(rcp.mean().to_numpy(), qrel.mean().to_numpy()).statistic
    return {"pairs": len(list(combinations(rcp.columns, 2))), "separated_rcp": sep["rcp"],
            "separated_qrel_linear": sep["qrel"], "agree": agree, "decisive": decisive,
            "tau": tau}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pair_stats_equal_plain_scipy(seed: int):
    rcp, qrel = _synthetic(seed)
    got = pair_stats(rcp, qrel)
    want = _plain(rcp, qrel)
    assert got.pairs == want["pairs"] == 91
    assert got.separated_rcp == want["separated_rcp"]
    assert got.separated_qrel_linear == want["separated_qrel_linear"]
    assert (got.agree, got.decisive) == (want["agree"], want["decisive"])
    assert got.kendall_rcp_vs_nist == pytest.approx(want["tau"], abs=1e-12)
    assert got.separated_rcp > got.separated_qrel_linear       # the synthetic design holds
    assert got.queries == 43


def test_paired_separation_vectorized_equals_loop():
    rcp, _ = _synthetic(9, n_q=20, n_m=5)
    p, diff, sep = paired_separation(rcp.to_numpy())
    for i, (a, b) in enumerate(combinations(range(5), 2)):
        ref = stats.ttest_rel(rcp.iloc[:, a], rcp.iloc[:, b]).pvalue
        assert p[i] == pytest.approx(ref, rel=1e-12)
        assert diff[i] == pytest.approx((rcp.iloc[:, a] - rcp.iloc[:, b]).mean(), abs=1e-15)
        assert sep[i] == (ref < 0.05)


def test_trecdl_pairs_from_long_table_drops_queries_without_positives():
    rows = []
    tables = {}
    for year, seed in (("trec_dl_2019", 4), ("trec_dl_2020", 5)):
        rcp, qrel = _synthetic(seed, n_q=30, n_m=6)
        qrel.iloc[0, :] = np.nan                               # a query without positives
        tables[year] = (rcp, qrel)
        for q in rcp.index:
            for m in rcp.columns:
                rows.append({"tie_rule": "pool-order", "subset": year, "model": m,
                             "query-id": q, "rcp_ndcg": rcp.at[q, m], "qrel_ndcg": qrel.at[q, m]})
    long = pd.DataFrame(rows)
    got = trecdl_pairs(long, subsets={"dl19": "trec_dl_2019", "dl20": "trec_dl_2020"})
    for key, year in (("dl19", "trec_dl_2019"), ("dl20", "trec_dl_2020")):
        rcp, qrel = tables[year]
        want = _plain(rcp, qrel.iloc[1:])
        assert got[key].pairs == 15
        assert got[key].separated_qrel_linear == want["separated_qrel_linear"]
        assert got[key].separated_rcp == _plain(rcp, qrel.fillna(0))["separated_rcp"]
        assert got[key].agree_with_nist == f"{want['agree']}/{want['decisive']}"


def test_compare_with_paper_fields():
    paper = json.loads((resources.provenance_dir() / "paper_values.json").read_text())
    dl19 = paper["trecdl_pairs"]["dl19"]
    assert dl19["pairs"] == 91
    rcp, qrel = _synthetic(11)
    st = pair_stats(rcp, qrel)
    rows = compare_with_paper({"dl19": st}, paper["trecdl_pairs"])
    assert {r["field"] for r in rows} == set(dl19)
    assert next(r for r in rows if r["field"] == "pairs")["status"] == "matched"
    assert next(r for r in rows if r["field"] == "queries")["status"] == "matched"   # 43
    # a field that differs from the paper is marked failed, and only that one
    edited = json.loads(json.dumps(paper["trecdl_pairs"]))
    edited["dl19"]["pairs"] = dl19["pairs"] + 1
    rows = {r["field"]: r for r in compare_with_paper({"dl19": st}, edited)}
    assert rows["pairs"]["status"] == "failed"
    assert (rows["pairs"]["computed"], rows["pairs"]["paper"]) == (91, 92)
    assert rows["queries"]["status"] == "matched"
