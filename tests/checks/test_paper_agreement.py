"""verify's comparison of the paper's agreement numbers, on the SYNTHETIC demo release with
entries computed here independently (scipy, plain loops)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rcp_data.checks.paper_agreement import check_paper_agreement, recompute
from rcp_data.model.suite import suite_spec
from rcp_data.scoring.replay import load_release, score_queries


@pytest.fixture(scope="module")
def demo(demo_release_v1):
    spec, _ = suite_spec(demo_release_v1, None, adhoc=True)
    data = load_release(demo_release_v1, spec)
    per_query = score_queries(data, tie_rules=["doc-id", "group-mean"])
    return demo_release_v1, spec, per_query


def _independent(per_query: pd.DataFrame) -> dict:
    """Failure share and separated pairs over both subsets, by plain loops and ttest_rel."""
    pq = per_query[per_query["tie_rule"] == "doc-id"]
    fails = kept = 0
    seps = []
    for _, part in pq.groupby("subset"):
        wide = part.pivot_table(index="query-id", columns="model", values="qrel_ndcg").dropna()
        models = list(wide.columns)
        for _, row in wide.iterrows():
            v = row.to_numpy()
            pairs = [(a, b) for i, a in enumerate(v) for b in v[i + 1:]]
            ties = sum(abs(a - b) <= 1e-6 for a, b in pairs)
            sat, flo = all(x == 1 for x in v), all(x == 0 for x in v)
            fails += sat or flo or 2 * ties >= len(pairs)
            kept += 1
        seps.append(np.mean([stats.ttest_rel(wide[a], wide[b]).pvalue < 0.05
                             for i, a in enumerate(models) for b in models[i + 1:]]))
    return {"failure_any_pct": 100 * fails / kept,
            "sensitivity_qrel_mean_over_subsets_pct": 100 * float(np.mean(seps))}


def test_recomputed_values_equal_independent_ones(demo):
    root, spec, per_query = demo
    values = recompute(root, spec, per_query)
    for stat, v in _independent(per_query).items():
        assert values[("*", stat)] == pytest.approx(v, abs=1e-9)
    q = pd.concat([pd.read_parquet(root / s / "qrels.parquet") for s in ("alpha", "beta")])
    assert -1 <= values[("*", "spearman_floor")] < values[("*", "spearman_rcp_theta")] \
        <= values[("*", "spearman_ceiling")] <= 1
    assert 0.5 < values[("*", "auc_grade_1_rcp_gain")] <= 1
    assert len(q) > 0


def _entry(stat, value, printed, **extra):
    return {"section": "G.1", "suite": "demo", "subset": "*", "statistic": stat,
            "value": value, "printed": printed, "quote": "SYNTHETIC", **extra}


def test_check_passes_fails_and_diffs(demo):
    root, spec, per_query = demo
    truth = _independent(per_query)
    share = round(truth["failure_any_pct"], 1)
    good = [_entry("failure_any_pct", share, f"{share:.1f}"),
            _entry("separated_count:pool", 3, "3", recomputable=False, note="not packaged")]
    (ok,) = check_paper_agreement(good, root, spec, per_query, True, "the paper's", "x.json")
    assert ok.ok and ok.status == "ok"
    assert "1 equal, 0 differ" in ok.found and "1 the release cannot recompute" in ok.found
    wrong = [_entry("failure_any_pct", share + 0.2, f"{share + 0.2:.1f}")]
    (bad,) = check_paper_agreement(wrong, root, spec, per_query, True, "the paper's", "x.json")
    assert not bad.ok and bad.status == "failed" and "failure_any_pct" in bad.details[0]
    (diff,) = check_paper_agreement(wrong, root, spec, per_query, False, "release 2", "x.json")
    assert diff.ok and diff.status == "diff"
    assert check_paper_agreement([dict(good[0], suite="other")], root, spec, per_query, True,
                                 "", "x.json") == []


def test_integer_join_equals_the_merge_on_id_strings(demo, tmp_path):
    # the label statistics' tables, joined on integer codes, row for row the pandas merges on
    # the id strings; with an excluded pair that has a qrels row, and with a repeated pair
    # (the merge repeats the candidate: the join hands over to the merge)
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from rcp_data.checks import paper_agreement as pa_
    from rcp_data.model.release import Release

    src, spec, _ = demo
    root = tmp_path / "rel"
    shutil.copytree(src, root)
    qrels = pq.read_table(root / "alpha" / "qrels.parquet")
    first = qrels.slice(0, 1)
    excl = root / "alpha" / "excluded.parquet"
    more = pa.table({"query-id": first.column("query-id").cast(pa.string()),
                     "excluded-corpus-ids": pa.array([[first.column("corpus-id")[0].as_py()]])})
    if excl.exists():                                       # the release's own exclusions kept
        had = pq.read_table(excl, columns=["query-id", "excluded-corpus-ids"])
        more = pa.concat_tables([had, more.cast(had.schema)])
    pq.write_table(more, excl)
    data = load_release(root, spec)
    release = Release(root, spec)
    subsets = list(data.subsets)
    frames = [pa_._joined(release, data.subsets[s]) for s in subsets]
    g, p, n = pa_._stacked(frames, [data.subsets[s].n_queries for s in subsets])
    mg, mp, mn = pa_._merged(release, data, subsets)
    assert n == mn and len(g) == len(mg) and len(p) == len(mp) > 0
    for col in ("q", "score", "theta"):
        assert np.array_equal(g[col].to_numpy(float), mg[col].to_numpy(float),
                              equal_nan=True)
    for col in ("q", "score", "gain", "theta"):
        assert np.array_equal(p[col].to_numpy(float), mp[col].to_numpy(float),
                              equal_nan=True)
    excluded = (first.column("query-id")[0].as_py(), first.column("corpus-id")[0].as_py())
    assert excluded not in set(zip(mg["query-id"], mg["corpus-id"], strict=True))
    pq.write_table(pa.concat_tables([qrels, qrels]), root / "alpha" / "qrels.parquet")
    assert pa_._joined(Release(root, spec), data.subsets["alpha"]) is None


def test_per_query_codes_give_what_pivot_table_gives():
    """The ranking statistics' (queries x models) arrays, from integer codes: what
    ``pivot_table(aggfunc="first", dropna=False)`` gives, queries in id order, on a table with
    a repeated (query, model) whose first value is NaN, an all-NaN query, a model missing from
    one subset and rows out of order."""
    from rcp_data.checks.paper_agreement import _PerQuery

    rng = np.random.default_rng(4)
    rows = [(r, s, m, q) for r in ("doc-id", "group-mean") for s in ("a", "b")
            for m in ("m2", "m1", "m3") for q in ("q10", "q2", "q1", "q3")
            if not (s == "b" and m == "m3")]
    frame = pd.DataFrame(rows, columns=["tie_rule", "subset", "model", "query-id"])
    frame["rcp_ndcg"] = rng.random(len(frame))
    frame["qrel_ndcg"] = rng.random(len(frame))
    frame.loc[frame["query-id"] == "q3", "qrel_ndcg"] = np.nan           # a query left out
    extra = frame.iloc[[0, 5]].assign(rcp_ndcg=[0.5, 0.25])             # repeated pairs
    frame.loc[0, "rcp_ndcg"] = np.nan                                    # first value NaN
    frame = pd.concat([frame, extra], ignore_index=True).sample(frac=1, random_state=1)
    frame = frame.astype({c: "str" for c in ("tie_rule", "subset", "model", "query-id")})
    table = _PerQuery(frame)
    for rule in ("doc-id", "group-mean"):
        picked = table.rows(rule, ["a", "b", "absent"])
        sub = frame[(frame["tie_rule"] == rule) & frame["subset"].isin(["a", "b"])]
        assert len(picked) == len(sub)
        models = table.model_names(picked)
        assert models == sorted(sub["model"].unique())
        for s in ("a", "b"):
            part = sub[sub["subset"] == s]
            for metric in ("rcp_ndcg", "qrel_ndcg"):             # m3: NaN in subset b
                want = part.pivot_table(index="query-id", columns="model", values=metric,
                                        aggfunc="first", dropna=False).reindex(columns=models)
                got = table.wide(picked[table.subset[picked] == table.code(s)], metric, models)
                np.testing.assert_array_equal(got, want.to_numpy(dtype=np.float64))
    assert not len(table.rows("trec_eval", ["a"]))
