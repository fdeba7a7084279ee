"""Replay of tiny hand-built release directories (demo spec) and of the demo release."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rcp_data.cli import main
from rcp_data.core.errors import InputError, SchemaError
from rcp_data.core.io import write_json
from rcp_data.core.specs import load_spec
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.tables import write_parquet
from rcp_data.scoring.replay import load_release, replay_release, score_queries

K = 3


def d(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


# Subset alpha, query q1: pool order [c3, c1, c2, c10, c9]; its own document q1 is excluded (the
# run still scores it, highest); cX is a positive outside the pool. q2 has no positive qrel;
# q3's only candidate has gain 0 (RCP ideal 0) but a positive grade.
ALPHA_QRELS = [
    ("q1", "c1", 1, 0.9), ("q1", "c2", 0, 0.5), ("q1", "c3", 0, 0.1), ("q1", "c10", 0, None),
    ("q1", "c9", 2, 0.2), ("q1", "cX", 1, None), ("q1", "q1", 0, 0.95),
    ("q2", "e1", 0, 0.3), ("q2", "e2", 0, 0.0),
    ("q3", "f1", 1, 0.0),
]
ALPHA_TOP = {"q1": ["c3", "c1", "c2", "c10", "c9"], "q2": ["e1", "e2"], "q3": ["f1"]}
ALPHA_EXCL = {"q1": ["q1"]}
A_SCORES = {"q1": {"c3": 0.5, "c1": 0.9, "c2": 0.9, "c10": 0.1, "c9": 0.5, "q1": 1.0},
            "q2": {"e1": 0.2, "e2": 0.7}, "q3": {"f1": 0.4}}
BETA_QRELS = [("b1", "g1", 1, 0.8), ("b1", "g2", 0, 0.4)]
BETA_TOP = {"b1": ["g1", "g2"]}
B_SCORES = {"b1": {"g1": 0.1, "g2": 0.2}}


def _runs(model: str, judge: bool, scores: dict) -> list[dict]:
    rows = []
    for q, docs in scores.items():
        order = sorted(docs, key=lambda x: -docs[x])
        for pos, (doc, s) in enumerate(docs.items()):
            rows.append({"model": model, "is_judge": judge, "query-id": q, "corpus-id": doc,
                         "score": s, "rank_by_score": order.index(doc) + 1,
                         "stored_position": pos})
    return rows


def _qrels_df(rows) -> pa.Table:
    """Qrels as an Arrow table (None -> null; NaN stays NaN, as a writer might leave it)."""
    q, c, s, g = (list(x) for x in zip(*rows, strict=True))
    return pa.table({"query-id": q, "corpus-id": c, "score": pa.array(s, pa.int64()),
                     "gain": pa.array(g, pa.float64()),
                     "theta": pa.array([None if x is None else 0.0 for x in g], pa.float64())})


def make_release(root: Path, *, alpha_qrels=ALPHA_QRELS, alpha_runs=None, drop: tuple = (),
                 beta_runs=None) -> Path:
    """A tiny release of the demo suite (hand-built, not real data)."""
    write_json({"suite": "demo"}, root / "provenance" / "build_manifest.json")
    subsets = {
        "alpha": (alpha_qrels, ALPHA_TOP, ALPHA_EXCL,
                  alpha_runs if alpha_runs is not None else
                  _runs("demo/alpha-reranker", False, A_SCORES)
                  + _runs("demo/judge", True, {q: {x: -v for x, v in s.items()}
                                               for q, s in A_SCORES.items()})),
        "beta": (BETA_QRELS, BETA_TOP, None,
                 beta_runs if beta_runs is not None else
                 _runs("demo/alpha-reranker", False, B_SCORES)
                 + _runs("demo/judge", True, B_SCORES)),
    }
    for name, (qrels, top, excl, runs) in subsets.items():
        qdf = _qrels_df(qrels).drop_columns(list(drop))
        (root / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(qdf, root / name / "qrels.parquet")
        write_parquet(pd.DataFrame({"query-id": list(top), "corpus-ids": list(top.values())}),
                      root / name / "top_ranked.parquet", SCHEMAS["top_ranked"])
        if excl:
            write_parquet(pd.DataFrame({"query-id": list(excl),
                                        "excluded-corpus-ids": list(excl.values())}),
                          root / name / "excluded.parquet", SCHEMAS["excluded"])
        write_parquet(pd.DataFrame(runs), root / "provenance" / "runs" / f"{name}.parquet",
                      SCHEMAS["runs"])
    return root


# expected per-query values at k = 3 (hand-worked)
RCP_IDEAL_Q1 = 0.9 * d(1) + 0.5 * d(2) + 0.2 * d(3)        # q1's own document left out
QREL_IDEAL_Q1 = 2 * d(1) + 1 * d(2) + 1 * d(3)             # cX (outside the pool) counts
EXPECTED = {
    "doc-id": {   # c2, c1, c9, c3, c10
        "q1": ((0.5 * d(1) + 0.9 * d(2) + 0.2 * d(3)) / RCP_IDEAL_Q1,
               (0 * d(1) + 1 * d(2) + 2 * d(3)) / QREL_IDEAL_Q1),
    },
    "pool-order": {   # c1, c2, c3, c9, c10
        "q1": ((0.9 * d(1) + 0.5 * d(2) + 0.1 * d(3)) / RCP_IDEAL_Q1,
               (1 * d(1)) / QREL_IDEAL_Q1),
    },
    "group-mean": {   # {c1, c2} ranks 1-2, {c3, c9} ranks 3-4 straddling k = 3
        "q1": ((0.7 * d(1) + 0.7 * d(2) + 0.15 * d(3)) / RCP_IDEAL_Q1,
               (0.5 * d(1) + 0.5 * d(2) + 1.0 * d(3)) / QREL_IDEAL_Q1),
    },
}
Q2_RCP = (0.0 * d(1) + 0.3 * d(2)) / (0.3 * d(1))           # e2 (0.7) before e1 (0.2)


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return make_release(tmp_path / "rel")


@pytest.mark.parametrize("rule", ["doc-id", "group-mean", "pool-order"])
def test_hand_worked_per_query_values(release: Path, rule: str):
    result = replay_release(release, k=K, tie_rule=rule)
    pq_ = result.per_query.set_index(["subset", "query-id"])
    assert list(pq_["model"].unique()) == ["demo/alpha-reranker"]        # judge left out
    rcp, qrel = EXPECTED[rule]["q1"]
    assert pq_.loc[("alpha", "q1"), "rcp_ndcg"] == pytest.approx(rcp, abs=1e-14)
    assert pq_.loc[("alpha", "q1"), "qrel_ndcg"] == pytest.approx(qrel, abs=1e-14)
    assert pq_.loc[("alpha", "q2"), "rcp_ndcg"] == pytest.approx(Q2_RCP, abs=1e-14)
    assert math.isnan(pq_.loc[("alpha", "q2"), "qrel_ndcg"])             # no positive qrel
    assert pq_.loc[("alpha", "q3"), "rcp_ndcg"] == 0.0                   # ideal 0: scores 0
    assert pq_.loc[("alpha", "q3"), "qrel_ndcg"] == 1.0
    # means: RCP over all 3 queries, qrel over q1 and q3; then the unweighted subset mean
    alpha_rcp = (rcp + Q2_RCP + 0.0) / 3
    alpha_qrel = (qrel + 1.0) / 2
    beta_rcp = (0.4 * d(1) + 0.8 * d(2)) / (0.8 * d(1) + 0.4 * d(2))
    beta_qrel = d(2) / d(1)
    js = result.to_json()
    assert js["k"] == K and js["tie_rule"] == rule and js["view"] == "subsets"
    row = js["metrics"]["rcp_ndcg"]["demo/alpha-reranker"]
    assert row == pytest.approx({"alpha": alpha_rcp, "beta": beta_rcp,
                                 "mean": (alpha_rcp + beta_rcp) / 2}, abs=1e-14)
    row = js["metrics"]["qrel_ndcg"]["demo/alpha-reranker"]
    assert row == pytest.approx({"alpha": alpha_qrel, "beta": beta_qrel,
                                 "mean": (alpha_qrel + beta_qrel) / 2}, abs=1e-14)


def test_default_rule_is_the_suites_paper_rule_and_judges_on_request(release: Path):
    result = replay_release(release, k=K)
    assert result.tie_rule == load_spec("demo").paper_tie_rule
    with_judge = replay_release(release, k=K, include_judge=True)
    assert set(with_judge.models) == {"demo/alpha-reranker", "demo/judge"}
    # unknown suite (no manifest): doc-id, subsets found as folders
    (release / "provenance" / "build_manifest.json").unlink()
    plain = replay_release(release, k=K)
    assert plain.tie_rule == "doc-id" and plain.spec.name == "unknown"


def test_markdown_table_like_the_cards(release: Path):
    text = replay_release(release, k=K, tie_rule="group-mean").markdown()
    lines = text.splitlines()
    assert lines[0] == "**RCP-nDCG@3 (%), rule (b): group-mean gain for ties**"
    assert lines[2] == "| Reranker | Alpha | Beta | Mean |"
    assert lines[3] == "|---|---:|---:|---:|"
    assert lines[4].startswith("| Alpha-RR | ")                         # short name from spec
    cells = lines[4].strip("| ").split(" | ")[1:]
    assert all(len(c.split(".")[1]) == 1 for c in cells)
    assert "**qrel-nDCG@3 (%), rule (b): group-mean gain for ties**" in lines


def test_cli_replay_json_and_exit_codes(release: Path, capsys):
    assert main(["replay", str(release), "--k", "3", "--tie-rule", "pool-order", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"k", "tie_rule", "view", "queries_without_positives", "metrics"}
    assert set(out["metrics"]) == {"rcp_ndcg", "qrel_ndcg"}
    assert out["metrics"]["rcp_ndcg"]["demo/alpha-reranker"]["alpha"] == pytest.approx(
        (EXPECTED["pool-order"]["q1"][0] + Q2_RCP) / 3, abs=1e-14)
    assert main(["replay", str(release), "--view", "native"]) == 2
    assert "needs a suite with languages" in capsys.readouterr().err
    assert main(["replay", str(release / "nope")]) == 2


# -- bad input -----------------------------------------------------------------------------------
def _error(root: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_release(root)
    return info.value


def test_missing_column_names_file_and_column(tmp_path: Path):
    err = _error(make_release(tmp_path / "r", drop=("gain",)))
    assert isinstance(err, SchemaError)
    assert "alpha/qrels.parquet" in err.message and "'gain'" in err.message


def test_duplicate_qrels_with_different_grades(tmp_path: Path):
    rows = [*ALPHA_QRELS, ("q1", "c1", 2, 0.9)]
    err = _error(make_release(tmp_path / "r", alpha_qrels=rows))
    assert "alpha/qrels.parquet" in err.message and "'score'" in err.message
    assert "'q1', 'c1'" in err.message
    # an identical duplicate row is harmless
    same = replay_release(make_release(tmp_path / "s", alpha_qrels=[*ALPHA_QRELS, ALPHA_QRELS[0]]),
                          k=K, tie_rule="doc-id")
    assert same.per_query.set_index("query-id").loc["q1", "rcp_ndcg"] == pytest.approx(
        EXPECTED["doc-id"]["q1"][0], abs=1e-14)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_gain_or_score(tmp_path: Path, bad: float):
    rows = [(q, c, s, (bad if c == "c2" else g)) for q, c, s, g in ALPHA_QRELS]
    err = _error(make_release(tmp_path / "g", alpha_qrels=rows))
    assert "alpha/qrels.parquet" in err.message and "'gain'" in err.message and "row 1" in err.message
    runs = _runs("demo/alpha-reranker", False, A_SCORES)
    runs[2]["score"] = bad
    err = _error(make_release(tmp_path / "s", alpha_runs=runs))
    assert "runs/alpha.parquet" in err.message and "'score'" in err.message and "row 2" in err.message


def test_run_omitting_a_candidate(tmp_path: Path):
    runs = [r for r in _runs("demo/alpha-reranker", False, A_SCORES)
            if not (r["query-id"] == "q2" and r["corpus-id"] == "e2")]
    err = _error(make_release(tmp_path / "r", alpha_runs=runs))
    assert "runs/alpha.parquet" in err.message
    assert "demo/alpha-reranker" in err.message and "'e2'" in err.message and "'q2'" in err.message


def test_run_naming_a_document_outside_the_pool(tmp_path: Path):
    runs = _runs("demo/alpha-reranker", False, {**A_SCORES, "q3": {"f1": 0.4, "cX": 0.9}})
    err = _error(make_release(tmp_path / "r", alpha_runs=runs))
    assert "runs/alpha.parquet" in err.message and "'cX'" in err.message
    assert "not a candidate" in err.message


def test_run_scoring_a_candidate_twice_and_a_missing_model(tmp_path: Path):
    runs = _runs("demo/alpha-reranker", False, A_SCORES)
    err = _error(make_release(tmp_path / "r", alpha_runs=runs + runs[:1]))
    assert "twice" in err.message
    beta = _runs("demo/other-reranker", False, B_SCORES)
    err = _error(make_release(tmp_path / "m", beta_runs=beta))
    assert "runs/" in err.message and "no run of model" in err.message


# -- the demo release against a straightforward per-query implementation ------------------------
def _naive(qrels: pd.DataFrame, top: pd.DataFrame, excluded: pd.DataFrame | None,
           runs: pd.DataFrame, model: str, k: int) -> dict[str, tuple[float, float | None]]:
    """Plain-Python replay of one model, doc-id ties (an independent cross-check)."""
    excl = set()
    if excluded is not None:
        for q, ids in zip(excluded["query-id"], excluded["excluded-corpus-ids"], strict=True):
            excl |= {(q, x) for x in ids}
    grade, gain = {}, {}
    for q, c, s, g in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"], qrels["gain"],
                          strict=True):
        if (q, c) not in excl:
            grade[(q, c)] = max(int(s), 0)
            gain[(q, c)] = 0.0 if g is None or (isinstance(g, float) and math.isnan(g)) else g
    scores = {(q, c): s for m, q, c, s in zip(runs["model"], runs["query-id"], runs["corpus-id"],
                                              runs["score"], strict=True) if m == model}
    out = {}
    for q, cands in zip(top["query-id"], top["corpus-ids"], strict=True):
        ranking = sorted(cands, key=lambda c: c.encode(), reverse=True)
        ranking = sorted(ranking, key=lambda c: -scores[(q, c)])          # stable
        vals = []
        for table in (gain, grade):
            dcg = sum(table.get((q, c), 0) * d(r + 1) for r, c in enumerate(ranking[:k]))
            ideal_g = sorted((v for (qq, _), v in table.items() if qq == q), reverse=True)[:k]
            ideal = sum(v * d(r + 1) for r, v in enumerate(ideal_g))
            vals.append(dcg / ideal if ideal > 0 else None)
        out[q] = (vals[0] or 0.0, vals[1])
    return out


def test_demo_release_equals_naive_replay(demo_release_v1: Path):
    root = demo_release_v1
    data = load_release(root)
    per_query = score_queries(data, k=10, tie_rules=("doc-id",))
    assert per_query["rcp_ndcg"].notna().all()

    n_checked = 0
    for subset in data.spec.subset_names:
        qrels = pq.read_table(root / subset / "qrels.parquet").to_pandas()
        top = pq.read_table(root / subset / "top_ranked.parquet").to_pylist()
        top = pd.DataFrame(top)
        ex_path = root / subset / "excluded.parquet"
        excluded = pd.DataFrame(pq.read_table(ex_path).to_pylist()) if ex_path.exists() else None
        runs = pq.read_table(root / "provenance" / "runs" / f"{subset}.parquet").to_pandas()
        for model in data.subsets[subset].models:
            naive = _naive(qrels, top, excluded, runs, model, 10)
            mine = per_query[(per_query["subset"] == subset) & (per_query["model"] == model)]
            for q, rcp, qrel in zip(mine["query-id"], mine["rcp_ndcg"], mine["qrel_ndcg"],
                                    strict=True):
                assert rcp == pytest.approx(naive[q][0], abs=1e-12)
                if naive[q][1] is None:
                    assert math.isnan(qrel)
                else:
                    assert qrel == pytest.approx(naive[q][1], abs=1e-12)
                n_checked += 1
    assert n_checked == len(per_query)
    assert np.isnan(per_query["qrel_ndcg"]).any()           # the demo has a query w/o positives


# -- views of a suite with languages (runs stored per domain) ------------------------------------
def test_vidore_layout_views_native_and_languages(tmp_path: Path):
    """A tiny hand-built release in the ViDoRe layout (NOT real data): 48 subsets, runs per
    domain. Query of subset i: candidates [a, b]; a is the positive. The model ranks a first on
    subsets with odd index, else b first (nDCG 1/log2(3))."""
    spec = load_spec("vidore_v3")
    root = tmp_path / "vidore"
    write_json({"suite": "vidore_v3"}, root / "provenance" / "build_manifest.json")
    runs: dict[str, list[dict]] = {}
    value = {}
    for i, sub in enumerate(spec.subsets):
        q = f"{sub.name}-q0"
        write_parquet(_qrels_df([(q, f"{sub.domain}-a", 1, 1.0), (q, f"{sub.domain}-b", 0, 0.0)])
                      .to_pandas(), root / sub.name / "qrels.parquet", SCHEMAS["qrels"])
        write_parquet(pd.DataFrame({"query-id": [q], "corpus-ids": [[f"{sub.domain}-a",
                                                                     f"{sub.domain}-b"]]}),
                      root / sub.name / "top_ranked.parquet", SCHEMAS["top_ranked"])
        a_first = i % 2 == 1
        runs.setdefault(sub.domain, []).extend(_runs("m1", False, {q: {
            f"{sub.domain}-a": 1.0 if a_first else 0.0, f"{sub.domain}-b": 0.5}}))
        value[sub.name] = 1.0 if a_first else 1 / math.log2(3)
    for domain, rows in runs.items():
        write_parquet(pd.DataFrame(rows), root / "provenance" / "runs" / f"{domain}.parquet",
                      SCHEMAS["runs"])
    data = load_release(root)
    assert len(data.subsets) == 48
    from rcp_data.scoring.replay import replay_loaded

    subsets = replay_loaded(data, tie_rule="group-mean", view="subsets").to_json()
    assert subsets["metrics"]["rcp_ndcg"]["m1"]["mean"] == pytest.approx(
        np.mean(list(value.values())), abs=1e-14)
    native = replay_loaded(data, tie_rule="group-mean", view="native")
    langs = replay_loaded(data, tie_rule="group-mean", view="languages")
    for dom in spec.domains:
        nat = value[f"{dom.name}__{dom.native}"]
        mean6 = np.mean([value[f"{dom.name}__{lang}"] for lang in spec.view_languages])
        assert native.to_json()["metrics"]["rcp_ndcg"]["m1"][dom.name] == pytest.approx(nat)
        assert native.to_json()["metrics"]["qrel_ndcg"]["m1"][dom.name] == pytest.approx(nat)
        assert langs.to_json()["metrics"]["rcp_ndcg"]["m1"][dom.name] == pytest.approx(mean6)
    text = native.markdown()
    assert text.startswith("**Native-language questions")
    assert "| Reranker | Comp. Sci. | Energy | Finance (en) |" in text
    # the default rule of this suite is its paper rule
    assert replay_release(root, view="native").tie_rule == "group-mean"
    # our Markdown reads back as the native view and matches the unrounded JSON
    from rcp_data.scoring.compare import compare_files

    (tmp_path / "README.md").write_text(text, encoding="utf-8")
    (tmp_path / "native.json").write_text(json.dumps(native.to_json()), encoding="utf-8")
    result = compare_files(tmp_path / "native.json", tmp_path / "README.md")
    assert result.ok and len(result.rows) == 2 * 9
    assert {r["view"] for r in result.rows} == {"native"}


@pytest.mark.parametrize("rule", ["doc-id", "group-mean", "pool-order"])
def test_exponential_gain_from_the_same_pass_hand_worked(release: Path, rule: str):
    # q1 with gain 2^grade - 1 (c9 grade 2 -> 3, c1 and cX grade 1 -> 1): hand-worked at k = 3,
    # the linear columns unchanged, q2 (no positive) NaN, q3 (its one candidate positive) 1
    data = load_release(release)
    plain = score_queries(data, k=K, tie_rules=[rule])
    both = score_queries(data, k=K, tie_rules=[rule], exp_gain=True)
    pd.testing.assert_frame_equal(both.drop(columns="qrel_exp_ndcg"), plain)
    ideal = 3 * d(1) + 1 * d(2) + 1 * d(3)
    numerator = {"doc-id": 0 * d(1) + 1 * d(2) + 3 * d(3),        # c2, c1, c9
                 "pool-order": 1 * d(1),                          # c1, c2, c3
                 "group-mean": 0.5 * d(1) + 0.5 * d(2) + 1.5 * d(3)}[rule]
    exp = both.set_index(["subset", "query-id"])["qrel_exp_ndcg"]
    assert exp[("alpha", "q1")] == pytest.approx(numerator / ideal, abs=1e-14)
    assert math.isnan(exp[("alpha", "q2")])
    assert exp[("alpha", "q3")] == 1.0
