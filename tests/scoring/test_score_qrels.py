"""``rcp-data score --qrels``: nDCG@k on any graded qrels, against pytrec_eval (trec_eval),
ir-measures, scipy and statsmodels, on the real TREC-DL qrels and a synthetic 0-5 benchmark."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rcp_data.runs.qrels_files import read_qrels
from rcp_data.scoring.qrels_score import (
    adjust_pvalues,
    bootstrap_interval,
    measure_name,
    score_qrels,
)

pytrec_eval = pytest.importorskip("pytrec_eval")

TOL = 1e-12


def _cli(*argv: str) -> tuple[int, str, str]:
    from rcp_data import cli

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["score", *argv])
    return rc, out.getvalue(), err.getvalue()


def _write_run(path: Path, run: pd.DataFrame) -> Path:
    """A TREC run file whose tag (which names the run) is the file's stem."""
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s!r} {path.stem}\n" for i, (q, d, s) in enumerate(
        run[["query-id", "corpus-id", "score"]].itertuples(index=False))), encoding="utf-8")
    return path


def _generated_run(qrels: pd.DataFrame, seed: int, *, depth: int = 40, unjudged: int = 10
                   ) -> pd.DataFrame:
    """Judged and unjudged documents per query, scores rounded so that many tie; the first
    query (sorted) is missing."""
    rng = np.random.default_rng(seed)
    all_docs = qrels["corpus-id"].unique()
    rows = []
    for qid, part in sorted(qrels.groupby("query-id"))[1:]:
        docs = part["corpus-id"].to_numpy()
        pick = rng.choice(docs, size=min(depth, len(docs)), replace=False)
        extra = [f"unjudged-{qid}-{i}" for i in range(unjudged // 2)] + \
            list(rng.choice(all_docs, unjudged // 2))
        ids = list(dict.fromkeys([*pick, *extra]))
        scores = np.round(rng.normal(size=len(ids)), 1)
        rows += [(qid, d, float(s)) for d, s in zip(ids, scores, strict=True)]
    return pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])


def _pytrec(qrels: pd.DataFrame, run: pd.DataFrame, k: int, grade=lambda g: int(g)) -> dict:
    qrel: dict = {}
    for q, d, g in qrels[["query-id", "corpus-id", "grade"]].itertuples(index=False):
        qrel.setdefault(q, {})[d] = grade(g)
    rd: dict = {}
    for q, d, s in run.itertuples(index=False):
        rd.setdefault(q, {})[d] = float(s)
    ev = pytrec_eval.RelevanceEvaluator(qrel, {f"ndcg_cut.{k}"})
    return {q: v[f"ndcg_cut_{k}"] for q, v in ev.evaluate(rd).items()}


def _judged(qrels: pd.DataFrame, run: pd.DataFrame) -> pd.DataFrame:
    keys = set(zip(qrels["query-id"], qrels["corpus-id"], strict=True))
    return run[[k in keys for k in zip(run["query-id"], run["corpus-id"], strict=True)]]


def _per_query(result, run: str, measure: str) -> dict[str, float]:
    return dict(zip(result.queries, result.per_query[run][measure], strict=True))


def _grammar_qrels(seed: int = 3) -> pd.DataFrame:
    """SYNTHETIC: 14 grammars x 50 paragraphs graded 0-5 with the benchmark's grade counts,
    one query per grammar."""
    counts = {0: 272, 1: 202, 2: 51, 3: 44, 4: 41, 5: 90}
    grades = np.repeat(list(counts), list(counts.values()))
    np.random.default_rng(seed).shuffle(grades)
    return pd.DataFrame({"query-id": np.repeat([f"grammar{g:02d}" for g in range(14)], 50),
                         "corpus-id": [f"g{i // 50:02d}-p{i % 50:02d}" for i in range(700)],
                         "grade": grades})


def _grammar_run(qrels: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    noisy = qrels["grade"].to_numpy() + rng.normal(scale=2.0, size=len(qrels))
    run = qrels[["query-id", "corpus-id"]].assign(score=np.round(noisy, 0))
    return run.drop(index=run.index[::17]).reset_index(drop=True)     # some paragraphs unranked


# -- trec_eval ---------------------------------------------------------------------------------
@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_equals_pytrec_eval_on_trec_dl(trecdl_data, tmp_path, year):
    qrels_path = trecdl_data / f"qrels.{year}-passage.txt"
    qrels = read_qrels(qrels_path)
    run = _generated_run(qrels, seed=7)
    assert run.duplicated(["query-id", "score"]).any()                # ties
    result = score_qrels(qrels_path, [_write_run(tmp_path / "gen.trec", run)], k=[10, 20])
    missing = sorted(qrels.loc[qrels["grade"] > 0, "query-id"].unique())[0]
    assert missing not in set(run["query-id"])
    for k in (10, 20):
        ours = _per_query(result, "gen", f"nDCG@{k}")
        ref = _pytrec(qrels, run, k)
        assert set(ref) <= set(ours) and set(ours) - set(ref) == {missing}
        assert ours[missing] == 0.0
        assert max(abs(ours[q] - ref[q]) for q in ref) < TOL
        assert sum(v > 0 for v in ref.values()) > len(ref) / 2       # not a trivial run


def test_synthetic_grammar_benchmark_equals_pytrec_eval(tmp_path):
    qrels = _grammar_qrels()
    assert qrels["grade"].value_counts().sort_index().tolist() == [272, 202, 51, 44, 41, 90]
    run = _grammar_run(qrels, seed=1)
    for gain, grade in (("linear", int), ("exp", lambda g: 2 ** int(g) - 1)):
        result = score_qrels(qrels, {"bm25": run}, k=20, gain=gain)
        ours = _per_query(result, "bm25", measure_name(20, gain))
        ref = _pytrec(qrels, run, 20, grade)
        assert len(ours) == 14 and set(ref) == set(ours)
        assert max(abs(ours[q] - ref[q]) for q in ref) < TOL


# -- ir-measures -------------------------------------------------------------------------------
def test_measure_names_are_ir_measures_names():
    ir_measures = pytest.importorskip("ir_measures")
    for k, gain, judged in [(10, "linear", False), (20, "exp", False), (10, "linear", True),
                            (20, "exp", True)]:
        dcg = {"dcg": "exp-log2"} if gain == "exp" else {}
        judged_kw = {"judged_only": True} if judged else {}
        expected = str(ir_measures.nDCG(**dcg, **judged_kw) @ k)
        assert measure_name(k, gain, judged) == expected


def _ir_calc(measure, qrels: pd.DataFrame, run: pd.DataFrame) -> dict[str, float]:
    import ir_measures

    qr = [ir_measures.Qrel(q, d, int(g)) for q, d, g in
          qrels[["query-id", "corpus-id", "grade"]].itertuples(index=False)]
    sd = [ir_measures.ScoredDoc(q, d, float(s)) for q, d, s in run.itertuples(index=False)]
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qr, sd)}


@pytest.mark.parametrize("k", [10, 20])
def test_judged_only_equals_ir_measures(trecdl_data, k):
    ir_measures = pytest.importorskip("ir_measures")
    qrels = read_qrels(trecdl_data / "qrels.dl19-passage.txt")
    run = _generated_run(qrels, seed=11)
    measure = ir_measures.nDCG(judged_only=True) @ k
    result = score_qrels(qrels, {"r": run}, k=k, judged_only=True)
    ours = _per_query(result, "r", str(measure))
    ref = _ir_calc(measure, qrels, run)
    assert max(abs(ours[q] - ref[q]) for q in ref) < TOL
    # judged_only changes the values: unjudged documents no longer take ranks
    plain = _per_query(score_qrels(qrels, {"r": run}, k=k), "r", f"nDCG@{k}")
    assert any(abs(plain[q] - ours[q]) > 1e-3 for q in ref)


@pytest.mark.parametrize("data", ["trec-dl", "grammar"])
@pytest.mark.parametrize("k", [10, 20])
def test_exp_gain_judged_only(trecdl_data, data, k):
    """``nDCG(dcg='exp-log2', judged_only=True)``: ir-measures 0.4.3 has no provider for the
    pair, so (1) pytrec_eval with the grades replaced by 2^g - 1 on the judged rows, to 1e-12,
    and (2) on TREC-DL ir-measures' gdeval ``nDCG(dcg='exp-log2')`` on the judged rows, which
    prints five decimals."""
    ir_measures = pytest.importorskip("ir_measures")
    if data == "trec-dl":
        qrels = read_qrels(trecdl_data / "qrels.dl20-passage.txt")
        run = _generated_run(qrels, seed=5)
    else:
        qrels = _grammar_qrels()
        run = pd.concat([_grammar_run(qrels, seed=2),
                         pd.DataFrame({"query-id": ["grammar03"] * 3, "corpus-id": ["x", "y", "z"],
                                       "score": [9.0, 9.0, 8.0]})], ignore_index=True)
    measure = ir_measures.nDCG(dcg="exp-log2", judged_only=True) @ k
    result = score_qrels(qrels, {"r": run}, k=k, gain="exp", judged_only=True)
    assert result.measures == (str(measure),)
    ours = _per_query(result, "r", str(measure))
    judged = _judged(qrels, run)
    ref = _pytrec(qrels, judged, k, lambda g: 2 ** max(int(g), 0) - 1)
    assert max(abs(ours[q] - ref[q]) for q in ref) < TOL
    if data == "trec-dl":             # gdeval.pl reads numeric topic ids only
        gd = _ir_calc(ir_measures.nDCG(dcg="exp-log2") @ k, qrels, judged)
        assert len(gd) == len(ours) and max(abs(ours[q] - gd[q]) for q in gd) < 1e-5


# -- tie rules ---------------------------------------------------------------------------------
def test_tie_rules_on_a_hand_example():
    qrels = pd.DataFrame({"query-id": ["q"] * 3, "corpus-id": ["a", "b", "c"],
                          "grade": [3, 0, 1]})
    run = pd.DataFrame({"query-id": ["q"] * 3, "corpus-id": ["a", "b", "c"],
                        "score": [1.0, 1.0, 1.0]})
    d = 1 / np.log2([2, 3, 4])
    ideal = 3 * d[0] + 1 * d[1]
    got = {rule: score_qrels(qrels, {"r": run}, k=2, tie_rule=rule).mean("r")
           for rule in ("doc-id", "pool-order", "group-mean")}
    assert got["doc-id"] == pytest.approx((1 * d[0] + 0 * d[1]) / ideal, abs=TOL)   # c, b
    assert got["pool-order"] == pytest.approx((3 * d[0] + 0 * d[1]) / ideal, abs=TOL)  # a, b
    assert got["group-mean"] == pytest.approx((4 / 3) * (d[0] + d[1]) / ideal, abs=TOL)


# -- output ------------------------------------------------------------------------------------
def test_per_query_tsv_format(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 a 2\nq1 0 b 1\nq2 0 c 1\nq3 0 d 0\n", encoding="utf-8")
    run = tmp_path / "mine.trec"
    run.write_text("q1 Q0 b 1 2.0 mine\nq1 Q0 a 2 1.0 mine\nq2 Q0 x 1 5.0 mine\n"
                   "q2 Q0 c 2 4.0 mine\n",
                   encoding="utf-8")
    rc, out, _ = _cli("--qrels", str(qrels), str(run), "--k", "1", "--k", "2", "--per-query",
                      "--format", "tsv", "--no-header")
    assert rc == 0
    d2 = 1 / np.log2(3)
    q1_1, q2_1 = 1 / 2, 0.0
    q1_2, q2_2 = (1 + 2 * d2) / (2 + d2), d2
    expected = [("mine", "nDCG@1", "q1", q1_1), ("mine", "nDCG@1", "q2", q2_1),
                ("mine", "nDCG@1", "all", (q1_1 + q2_1) / 2),
                ("mine", "nDCG@2", "q1", q1_2), ("mine", "nDCG@2", "q2", q2_2),
                ("mine", "nDCG@2", "all", (q1_2 + q2_2) / 2)]
    rows = [line.split("\t") for line in out.splitlines()]
    assert [tuple(r[:3]) for r in rows] == [e[:3] for e in expected]
    assert all(len(r) == 4 for r in rows)
    for r, e in zip(rows, expected, strict=True):
        assert float(r[3]) == pytest.approx(e[3], abs=TOL)
    rc, out, _ = _cli("--qrels", str(qrels), str(run), "--k", "10", "--gain", "exp",
                      "--judged-only", "--format", "tsv")
    assert out.splitlines()[0] == "run\tmeasure\tquery\tvalue"
    assert out.splitlines()[1].split("\t")[:3] == [
        "mine", "nDCG(dcg='exp-log2',judged_only=True)@10", "all"]
    rc, out, _ = _cli("--qrels", str(qrels), str(run), "--format", "csv", "--per-query")
    assert out.splitlines()[0] == "run,measure,query-id,value"
    assert len(out.splitlines()) == 4


# -- paired comparisons ------------------------------------------------------------------------
def test_paired_comparisons_equal_scipy_and_statsmodels():
    qrels = _grammar_qrels()
    runs = {f"r{i}": _grammar_run(qrels, seed=10 + i) for i in range(4)}
    for correction in ("holm", "bonferroni"):
        result = score_qrels(qrels, runs, k=[10, 20], correction=correction)
        assert len(result.comparisons) == 2 * 6
        for measure in result.measures:
            cmp = [c for c in result.comparisons if c.measure == measure]
            pvals = []
            for c in cmp:
                a, b = result.per_query[c.a][measure], result.per_query[c.b][measure]
                ref = stats.ttest_rel(a, b)
                assert c.t == pytest.approx(ref.statistic, rel=1e-12)
                assert c.p == pytest.approx(ref.pvalue, rel=1e-12)
                assert c.diff == pytest.approx(float(np.mean(a - b)), abs=TOL)
                d = a - b
                draws = np.random.default_rng(0).integers(0, len(d), size=(2000, len(d)))
                lo, hi = np.percentile(d[draws].mean(axis=1), [2.5, 97.5])
                assert c.ci95 == pytest.approx((lo, hi), abs=1e-12)
                pvals.append(c.p)
            multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
            ref_adj = multipletests(pvals, method=correction)[1]
            np.testing.assert_allclose([c.p_adjusted for c in cmp], ref_adj, rtol=1e-12)


def test_holm_and_bonferroni_by_hand():
    p = [0.01, 0.04, 0.03, 0.5]
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 1.0])
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [0.04, 0.09, 0.09, 0.5])
    assert bootstrap_interval(np.zeros((1, 5))).tolist() == [[0.0, 0.0]]


def test_table_and_json_show_comparisons(tmp_path):
    import json

    qrels = tmp_path / "q.csv"
    _grammar_qrels().to_csv(qrels, index=False)
    paths = [_write_run(tmp_path / f"run{i}.trec", _grammar_run(_grammar_qrels(), seed=i))
             for i in range(2)]
    rc, out, _ = _cli("--qrels", str(qrels), *map(str, paths), "--k", "20",
                      "--correction", "holm")
    assert rc == 0 and "run0 - run1" in out and "holm" in out and "nDCG@20" in out
    rc, out, _ = _cli("--qrels", str(qrels), *map(str, paths), "--format", "json")
    data = json.loads(out)
    assert data["queries"] == 14 and data["comparisons"][0]["a"] == "run0"
    assert data["runs"]["run0"]["nDCG@10"]["all"] == pytest.approx(
        score_qrels(qrels, paths).mean("run0"), abs=TOL)


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["trec", "csv"])
def test_non_integer_grade_names_file_row_and_field(tmp_path, kind):
    run = _write_run(tmp_path / "r.trec", pd.DataFrame(
        {"query-id": ["q1"], "corpus-id": ["a"], "score": [1.0]}))
    if kind == "trec":
        qrels = tmp_path / "q.txt"
        qrels.write_text("q1 0 a 1\nq1 0 b high\n", encoding="utf-8")
    else:
        qrels = tmp_path / "q.csv"
        qrels.write_text("query-id,corpus-id,grade\nq1,a,1\nq1,b,1.5\n", encoding="utf-8")
    rc, out, err = _cli("--qrels", str(qrels), str(run))
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert str(qrels) in err and ("row 2" if kind == "trec" else "row 3") in err
    assert "field 'grade'" in err and "not an integer" in err


def test_bad_run_line_names_file_row_and_field(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 a 1\n", encoding="utf-8")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 oops t\n", encoding="utf-8")
    rc, out, err = _cli("--qrels", str(qrels), str(run))
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert str(run) in err and "row 2" in err and "field 'score'" in err


def test_release_only_options_are_refused_with_qrels(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 a 1\n", encoding="utf-8")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 a 1 1.0 t\n", encoding="utf-8")
    rc, _, err = _cli("--qrels", str(qrels), str(run), "--against", "all")
    assert rc == 2 and "--dataset" in err


def test_public_api_exports_score_qrels():
    import rcp_data

    assert rcp_data.score_qrels is score_qrels
    assert "score_qrels" in rcp_data.__all__ and "QrelsScore" in rcp_data.__all__


# -- the byte reader and the candidates' paths ---------------------------------------------------
@pytest.mark.parametrize("tie_rule", ["doc-id", "group-mean"])
def test_file_order_changes_no_score(trecdl_data, tmp_path, tie_rule):
    """A run sorted as run files are (the sorted fast path), shuffled, and with its queries
    interleaved and rows of a query without qrels: the same nDCG per query, and pytrec_eval's
    under trec_eval's ties."""
    qrels = read_qrels(trecdl_data / "qrels.dl19-passage.txt")
    run = _generated_run(qrels, seed=11)
    ranked = run.sort_values(["query-id", "score"], ascending=[True, False], kind="stable")
    stranger = pd.DataFrame({"query-id": "no-such-query", "corpus-id": ["a", "b"],
                             "score": [1.0, 0.5]})
    orders = {"sorted": pd.concat([ranked, stranger]),
              "shuffled": pd.concat([run, stranger]).sample(frac=1.0, random_state=2),
              "interleaved": pd.concat([ranked.iloc[::2], stranger, ranked.iloc[1::2]])}
    paths = {name: _write_run(tmp_path / f"{name}.trec", frame) for name, frame in orders.items()}
    for judged_only in (False, True):
        result = score_qrels(qrels, paths, k=[10, 20], tie_rule=tie_rule,
                             judged_only=judged_only, compare=False)
        assert result.ignored_rows == dict.fromkeys(paths, 2)
        for m in result.measures:
            base = result.per_query["sorted"][m]
            for name in ("shuffled", "interleaved"):
                assert np.abs(result.per_query[name][m] - base).max() < TOL, (name, m)
        if tie_rule == "doc-id":
            for k in (10, 20):
                ours = _per_query(result, "sorted", measure_name(k, judged_only=judged_only))
                ref = _pytrec(qrels, _judged(qrels, run) if judged_only else run, k)
                assert max(abs(ours[q] - ref[q]) for q in ref) < TOL


def test_a_document_ranked_twice_names_its_row(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 a 1\nq2 0 a 2\n", encoding="utf-8")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 a 1 1.0 t\nq2 Q0 a 1 1.0 t\nq1 Q0 b 2 0.5 t\nq1 Q0 a 3 0.2 t\n",
                   encoding="utf-8")
    rc, out, err = _cli("--qrels", str(qrels), str(run))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(run) in err and "row 4" in err and "field 'corpus-id'" in err
    assert "'a' is ranked twice for query 'q1'" in err


@pytest.mark.parametrize("tie_rule", ["doc-id", "group-mean", "pool-order"])
def test_long_ties_at_the_cutoff(trecdl_data, tmp_path, tie_rule):
    """Ties reaching past the cutoff, short (a few rows) and long (every row of a query tied):
    a ranked file scores as its shuffled copy, and as pytrec_eval under trec_eval's ties."""
    qrels = read_qrels(trecdl_data / "qrels.dl19-passage.txt")
    run = _generated_run(qrels, seed=5, depth=120, unjudged=40)
    flat = run["query-id"].isin(sorted(run["query-id"].unique())[::2])
    run.loc[flat, "score"] = 0.0                          # every row of half the queries ties
    ranked = run.sort_values(["query-id", "score"], ascending=[True, False], kind="stable")
    assert ranked.groupby("query-id")["score"].apply(lambda s: (s == s.iloc[9]).sum()).max() > 32
    paths = {"ranked": _write_run(tmp_path / "ranked.trec", ranked),
             "shuffled": _write_run(tmp_path / "shuffled.trec",
                                    ranked.sample(frac=1.0, random_state=4))}
    result = score_qrels(qrels, paths, k=[10, 20], tie_rule=tie_rule, compare=False)
    for m in result.measures:
        a, b = result.per_query["ranked"][m], result.per_query["shuffled"][m]
        if tie_rule != "pool-order":                     # pool order is the file's
            assert np.abs(a - b).max() < TOL
    if tie_rule == "doc-id":
        ours = _per_query(result, "ranked", "nDCG@10")
        ref = _pytrec(qrels, run, 10)
        assert max(abs(ours[q] - ref[q]) for q in ref) < TOL
    if tie_rule == "pool-order":                         # the file's order, by hand
        first = ranked.groupby("query-id").head(10)
        grade = dict(zip(zip(qrels["query-id"], qrels["corpus-id"], strict=True),
                         qrels["grade"], strict=True))
        disc = 1 / np.log2(np.arange(2, 12))
        ideal = dict.fromkeys(result.queries)
        for q, part in first.groupby("query-id"):
            g = np.array([max(grade.get((q, d), 0), 0) for d in part["corpus-id"]], float)
            best = np.sort(np.maximum(qrels.loc[qrels["query-id"] == q, "grade"], 0))[::-1][:10]
            ideal[q] = (g @ disc[:len(g)]) / (best @ disc[:len(best)])
        ours = _per_query(result, "ranked", "nDCG@10")
        assert max(abs(ours[q] - ideal[q]) for q in ideal if ideal[q] is not None) < TOL
