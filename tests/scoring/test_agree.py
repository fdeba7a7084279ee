"""``rcp-data agree`` on the SYNTHETIC demo release with three SYNTHETIC assessors known by
construction: ``copy`` copies the release's qrels, ``noisy`` changes a seeded quarter of the
grades, ``flat`` grades every document 1 (no order at all)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import rcp_data
from rcp_data.scoring.agreement import labels as lab


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from rcp_data import cli

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["-q", "agree", *argv])
    return rc, out.getvalue(), err.getvalue()


def _qrels(release: Path) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(release / s / "qrels.parquet") for s in ("alpha", "beta")],
                     ignore_index=True)


def _write(frame: pd.DataFrame, path: Path, grade: np.ndarray) -> Path:
    with path.open("w") as fh:
        for q, d, g in zip(frame["query-id"], frame["corpus-id"], grade, strict=True):
            fh.write(f"{q} 0 {d} {int(g)}\n")
    return path


@pytest.fixture(scope="module")
def assessors(demo_release_v1, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("assessors")
    q = _qrels(demo_release_v1)
    grade = q["score"].to_numpy()
    rng = np.random.default_rng(7)
    noisy = grade.copy()
    flip = rng.random(len(grade)) < 0.25
    noisy[flip] = rng.integers(0, 3, flip.sum())
    return {"copy": _write(q, root / "copy.txt", grade),
            "noisy": _write(q, root / "noisy.txt", noisy),
            "flat": _write(q, root / "flat.txt", np.ones(len(grade)))}


@pytest.fixture(scope="module")
def result(demo_release_v1, assessors) -> dict:
    rc, out, err = _cli([str(demo_release_v1), *[f"--labels={n}={p}" for n, p in
                                                 assessors.items()],
                         "--aggregate", "max", "--resamples", "300", "--draws", "2000",
                         "--json"])
    assert rc == 0, err
    return json.loads(out)


def test_copy_assessor_agrees_perfectly(result):
    for sub in result["subsets"].values():
        assert sub["labels_vs_reference"]["copy"]["value"] == 1.0
        assert sub["labels_vs_reference"]["flat"]["value"] == 0.5     # all ties: chance
        assert sub["labels_vs_reference"]["noisy"]["value"] < 1.0
        comp = {(c["a"], c["b"]): c for c in sub["comparisons"]}
        same = comp[("copy", "qrels")]
        assert same["kendall_tau_b"]["value"] == 1.0 and same["swapped_pairs"] == 0.0
        assert same["rbo_extrapolated"]["value"] == pytest.approx(1.0, abs=1e-12)
        assert sub["leaderboards"]["copy"] == sub["leaderboards"]["qrels"]
        dec = {(d["metric"], d["reference"]): d for d in sub["decisive"]}
        assert dec[("copy", "qrels")]["agree"] == dec[("copy", "qrels")]["decisive"]
        # the flat assessor's nDCG@10 is 1 wherever the top 10 hold judged documents
        assert sub["variation"]["assessors"] == ["copy", "noisy", "flat"]
        assert 0.0 <= sub["variation"]["swap_max"] <= 0.5


def test_release_labels_equal_replay_and_independent_counts(result, demo_release_v1):
    rep = rcp_data.replay(demo_release_v1, tie_rule=result["tie_rule"])
    pq = rep.per_query
    for s, sub in result["subsets"].items():
        part = pq[pq["subset"] == s]
        for metric, col in (("rcp", "rcp_ndcg"), ("qrels", "qrel_ndcg")):
            means = part.groupby("model")[col].mean()
            for m, v in sub["leaderboards"][metric].items():
                assert v == pytest.approx(means[m], abs=1e-12)
        # concordance of theta with the grades: scipy's Mann-Whitney per query and grade pair
        q = pd.read_parquet(demo_release_v1 / s / "qrels.parquet").dropna(subset=["theta"])
        ex_file = demo_release_v1 / s / "excluded.parquet"
        if ex_file.exists():                       # excluded documents are left out
            ex = pd.read_parquet(ex_file).explode("excluded-corpus-ids")
            gone = set(zip(ex["query-id"], ex["excluded-corpus-ids"], strict=True))
            q = q[[k not in gone for k in zip(q["query-id"], q["corpus-id"], strict=True)]]
        wins = pairs = 0.0
        for _, grp in q.groupby("query-id"):
            levels = sorted(grp["score"].unique())
            for i, a in enumerate(levels):
                for b in levels[:i]:
                    x = grp.loc[grp["score"] == a, "theta"]
                    y = grp.loc[grp["score"] == b, "theta"]
                    wins += stats.mannwhitneyu(x, y).statistic
                    pairs += len(x) * len(y)
        got = sub["labels"]["qrels"]["rcp_theta"]
        assert got["concordance"]["value"] == pytest.approx(wins / pairs, abs=1e-12)
        assert got["spearman"]["observed"]["value"] == pytest.approx(
            stats.spearmanr(q["theta"], q["score"]).statistic, abs=1e-12)
        assert set(sub["labels"]["qrels"]) == {"rcp_theta", "raw_bt", "count"}
        lo, hi = got["concordance"]["lo"], got["concordance"]["hi"]
        assert lo <= got["concordance"]["value"] <= hi
        # sensitivity: scipy's ttest_rel on the replay's per-query qrel-nDCG
        wide = part.pivot_table(index="query-id", columns="model", values="qrel_ndcg").dropna()
        models = sub["systems"]
        seps = [stats.ttest_rel(wide[a], wide[b]).pvalue < 0.05
                for i, a in enumerate(models) for b in models[i + 1:]]
        assert sub["sensitivity"]["qrels"]["separated"] == sum(seps)


def test_count_scores_come_from_the_verdicts(demo_release_v1):
    crit = pd.read_parquet(demo_release_v1 / "provenance/judge_criteria/alpha.parquet")
    share = lab.count_share(crit)
    one = crit[(crit["query-id"] == share["query-id"].iat[0])
               & (crit["corpus-id"] == share["corpus-id"].iat[0])]
    cols = [c for c in crit.columns if c[:1] == "C" and c[1:].isdigit()]
    assert share["count"].iat[0] == (one[cols] == 1).to_numpy().sum() / (len(cols) * len(one))


def test_table_names_the_rbo_variants(demo_release_v1, assessors):
    rc, out, _ = _cli([str(demo_release_v1), f"--labels=copy={assessors['copy']}",
                       "--resamples", "50"])
    assert rc == 0
    assert "RBO extrapolated (Webber 2010)" in out and "RBO package .rbo(p)" in out
    assert "copy grades vs qrels: concordance 1.000" in out


@pytest.mark.parametrize(("line", "field", "row"), [
    ("alpha-q000 0 alpha-d0034 x\n", "grade", 2),
    ("no-such-query 0 alpha-d0034 1\n", "query-id", 2),
    ("alpha-q000 0 no-such-doc 1\n", "corpus-id", 2),
])
def test_bad_label_files(demo_release_v1, tmp_path, line, field, row):
    bad = tmp_path / "bad.txt"
    bad.write_text("alpha-q000 0 alpha-d0034 2\n" + line)
    rc, out, err = _cli([str(demo_release_v1), f"--labels=a={bad}"])
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0]
    assert f"row {row}" in lines[0] and f"field '{field}'" in lines[0]


def test_consensus_needs_two_assessors(demo_release_v1, assessors):
    rc, _, err = _cli([str(demo_release_v1), f"--labels=copy={assessors['copy']}",
                       "--aggregate", "consensus"])
    assert rc == 2
    line = err.strip()
    assert "\n" not in line and str(assessors["copy"]) in line and "field 'grade'" in line
    assert "row 1" in line and "consensus needs two assessors" in line


def test_python_api(demo_release_v1, assessors):
    res = rcp_data.agree(demo_release_v1, {"copy": assessors["copy"]}, resamples=20)
    doc = res.to_json()
    assert doc["label_sets"] == ["qrels", "copy"] and doc["bootstrap"]["resamples"] == 20


def test_label_set_lacking_a_subsets_rows_does_not_crash(demo_release_v1, tmp_path):
    """SYNTHETIC assessor who graded only subset alpha's queries (was an IndexError)."""
    alpha = pd.read_parquet(demo_release_v1 / "alpha" / "qrels.parquet")
    half = _write(alpha, tmp_path / "alpha_only.txt", alpha["score"].to_numpy())
    rc, out, err = _cli([str(demo_release_v1), f"--labels=alpha_only={half}",
                         "--resamples", "50", "--json"])
    assert rc == 0, err
    subs = json.loads(out)["subsets"]
    assert subs["alpha"]["labels_vs_reference"]["alpha_only"]["value"] == 1.0
    assert subs["alpha"]["leaderboards"]["alpha_only"] == subs["alpha"]["leaderboards"]["qrels"]


def test_names_in_the_table_cannot_forge_rows(result):
    """A release, subset or system name holding a newline, '|' or ESC (a release's runs name
    their systems) is one escaped cell: the table has the rows it had, none added."""
    from rcp_data.scoring.agreement.analysis import render_table

    forged = "sys\n| forged | 99.9\x1b[2J"
    doc = json.loads(json.dumps(result))
    first = next(iter(doc["subsets"]))
    sub = doc["subsets"][first]
    old = sub["systems"][0]
    sub["systems"][0] = forged
    for board in sub["leaderboards"].values():
        board[forged] = board.pop(old)
    doc["release"] = "rel\r\n== fake =="
    doc["subsets"] = {"sub\n| x": sub, **{s: d for s, d in doc["subsets"].items() if s != first}}
    before, after = render_table(result), render_table(doc)
    assert len(after.splitlines()) == len(before.splitlines())
    assert "\x1b" not in after and "\r" not in after
    assert "  sys\\n\\| forged \\| 99.9\\x1b[2J" in after
    assert after.startswith("Agreement of rel\\r\\n== fake == (suite ")
    assert "== sub\\n\\| x: " in after
