"""``rcp-data agree --qrels PRIMARY --labels NAME=QRELS RUN...`` on SYNTHETIC plain files, and
the agreement statistics between assessors against statsmodels and by construction."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats import inter_rater as ir

import rcp_data
from rcp_data.scoring.agreement import raters
from rcp_data.scoring.qrels_score import score_qrels


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from rcp_data import cli

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["-q", "agree", *argv])
    return rc, out.getvalue(), err.getvalue()


# -- the statistics --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleiss_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 4, size=(200, 3))
    r[:80, 1] = r[:80, 0]                                     # some agreement
    table, _ = ir.aggregate_raters(r)
    assert raters.fleiss_kappa(r) == pytest.approx(ir.fleiss_kappa(table), abs=1e-12)
    b = (r >= 2).astype(int)
    assert raters.fleiss_kappa(b) == pytest.approx(
        ir.fleiss_kappa(ir.aggregate_raters(b)[0]), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_cohen_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, size=300)
    b = np.where(rng.random(300) < 0.5, a, rng.integers(0, 4, size=300))
    table = np.zeros((4, 4))
    np.add.at(table, (a, b), 1)
    assert raters.cohen_kappa(a, b) == pytest.approx(ir.cohens_kappa(table).kappa, abs=1e-12)


def test_statistics_known_by_construction() -> None:
    # 100 documents; a calls 0..19 relevant (grade 2), b 10..29: Jaccard 10 / 30
    a = np.zeros(100)
    a[:20] = 2
    b = np.zeros(100)
    b[10:30] = 2
    assert raters.overlap(a, b, 2) == pytest.approx(1 / 3)
    assert raters.overlap(a, a, 2) == 1.0
    b2 = a.copy()
    b2[:5] = 3                                                # same set, 5 grades differ
    assert raters.overlap(a, b2, 1, exact=True) == pytest.approx(15 / 20)
    assert raters.overlap(a, b2, 2) == 1.0
    assert raters.cohen_kappa(a, a) == 1.0
    # of 80 primary zeros, 8 move: 6 to 1, 2 to 3
    other = a.copy()
    other[20:26] = 1
    other[26:28] = 3
    t = raters.transitions(a, other)
    assert t.grades == (0.0, 1.0, 2.0, 3.0)
    assert t.counts[0].tolist() == [72, 6, 0, 2]
    assert t.changed[0] == pytest.approx(0.1)
    assert t.changed[2] == 0.0


# -- plain files ------------------------------------------------------------------------------
def _write_qrels(path: Path, rows) -> Path:
    path.write_text("".join(f"{q} 0 {d} {int(g)}\n" for q, d, g in rows))
    return path


@pytest.fixture()
def study(tmp_path: Path) -> dict:
    """SYNTHETIC: 6 topics x 30 documents, a primary, assessors A and B on topics 0-2
    (B misses topic 2), C and D on topics 3-5; C copies the primary; D graded topic 5 all 0;
    three runs."""
    rng = np.random.default_rng(7)
    prim, lab = [], {"A": [], "B": [], "C": [], "D": []}
    for t in range(6):
        g = rng.integers(0, 4, size=30)
        for d in range(30):
            q, doc = f"q{t}", f"d{t}_{d}"
            prim.append((q, doc, g[d]))
            noisy = g[d] if rng.random() < 0.6 else rng.integers(0, 4)
            if t < 3:
                lab["A"].append((q, doc, noisy))
                if t < 2:
                    lab["B"].append((q, doc, g[d] if rng.random() < 0.7 else rng.integers(0, 4)))
            else:
                lab["C"].append((q, doc, g[d]))
                lab["D"].append((q, doc, 0 if t == 5 else noisy))
    files = {"primary": _write_qrels(tmp_path / "primary.txt", prim)}
    for n, rows in lab.items():
        files[n] = _write_qrels(tmp_path / f"{n}.txt", rows)
    runs = []
    for r in range(3):
        path = tmp_path / f"run{r}.trec"
        with path.open("w") as fh:
            for t in range(6):
                s = rng.random(30)
                for i in np.argsort(-s):
                    fh.write(f"q{t} Q0 d{t}_{i} {i} {s[i]:.6f} run{r}\n")
        runs.append(path)
    return {"files": files, "runs": runs, "prim": prim, "lab": lab}


def _labels(study: dict) -> list[str]:
    out = []
    for n in "ABCD":
        out += ["--labels", f"{n}={study['files'][n]}"]
    return out


def test_plain_files_end_to_end(study: dict) -> None:
    rc, out, err = _cli(["--qrels", str(study["files"]["primary"]), *_labels(study),
                         "--draws", "500", "--json", *map(str, study["runs"])])
    assert rc == 0, err
    d = json.loads(out)
    cov = {c["name"]: c for c in d["coverage"]}
    assert cov["B"]["rows"] == 60 and cov["B"]["topics"] == 2       # misses topic 2: no crash
    assert cov["A"]["shared_with_primary"] == 90
    groups = sorted(sorted(g["without_primary"]["members"]) for g in d["groups"])
    assert groups == [["A", "B"], ["C", "D"]]
    ab = next(g for g in d["groups"] if "A" in g["without_primary"]["members"])
    assert ab["without_primary"]["documents"] == 60                  # only what both judged
    pair = {(p["a"], p["b"]): p for p in d["pairs"]}
    assert pair[("primary", "C")]["cohen_kappa"] == 1.0
    assert pair[("primary", "C")]["overlap_binary"] == 1.0
    # Cohen's kappa of primary and A equals statsmodels' on the same documents
    prim = {(q, doc): g for q, doc, g in study["prim"]}
    a = np.array([g for _, _, g in study["lab"]["A"]])
    p = np.array([prim[(q, doc)] for q, doc, _ in study["lab"]["A"]])
    table = np.zeros((4, 4))
    np.add.at(table, (p, a), 1)
    assert pair[("primary", "A")]["cohen_kappa"] == pytest.approx(
        ir.cohens_kappa(table).kappa, abs=1e-12)
    # the leaderboards are score --qrels's means; tau against scipy
    s = d["systems"]
    ref = score_qrels(study["files"]["primary"], study["runs"], k=10, compare=False)
    assert s["leaderboards"]["primary"] == pytest.approx(
        [ref.mean(r) for r in ref.runs], abs=1e-12)
    board_a = np.array(s["leaderboards"]["A"])
    tau = next(c for c in s["against_primary"] if c["labels"] == "A")["kendall"]
    assert tau == pytest.approx(stats.kendalltau(board_a, s["leaderboards"]["primary"])[0])
    v = s["variation"]
    assert v["draws"] == 500 and v["all_zero_drawn"] is True
    assert all(0.0 <= x <= 0.5 for x in v["swap"].values())


def test_rbo_p_one_has_no_extrapolated_value(study: dict) -> None:
    rc, out, _ = _cli(["--qrels", str(study["files"]["primary"]), *_labels(study),
                       "--draws", "50", "--rbo-p", "1.0", "--json", *map(str, study["runs"])])
    assert rc == 0
    s = json.loads(out)["systems"]
    assert all(c["rbo_extrapolated"] is None for c in s["against_primary"])
    assert s["variation"]["rbo_extrapolated"] is None


def test_table_and_api(study: dict) -> None:
    rc, out, _ = _cli(["--qrels", str(study["files"]["primary"]), *_labels(study),
                       "--draws", "50", *map(str, study["runs"])])
    assert rc == 0 and "| primary | C | 90 | 1.000 |" in out
    res = rcp_data.agree(qrels=study["files"]["primary"],
                         labels={n: study["files"][n] for n in "ABCD"}, draws=50)
    assert res.to_json()["systems"] is None
    assert {c["name"] for c in res.to_json()["coverage"]} == {"primary", "A", "B", "C", "D"}


@pytest.mark.parametrize("bad", ["a|b", "a\nb", "x\x1b[31m"])
def test_bad_label_names_exit_2(study: dict, bad: str) -> None:
    rc, out, err = _cli(["--qrels", str(study["files"]["primary"]), "--labels",
                         f"{bad}={study['files']['A']}"])
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_empty_or_uncovering_label_set_exits_2(study: dict, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    rc, _, err = _cli(["--qrels", str(study["files"]["primary"]), "--labels", f"E={empty}"])
    assert rc == 2 and len(err.strip().splitlines()) == 1
    other = _write_qrels(tmp_path / "other.txt", [("q99", "d", 1)])
    rc, _, err = _cli(["--qrels", str(study["files"]["primary"]), "--labels", f"O={other}"])
    assert rc == 2 and "covers no topic" in err and len(err.strip().splitlines()) == 1


def test_ceilings_exact_tie_expectation(study: dict) -> None:
    res = rcp_data.agree(qrels=study["files"]["primary"],
                         labels={n: study["files"][n] for n in "ABCD"}).to_json()["ceilings"]
    assert res["runs"]["C"]["mean"] == 1.0 and res["runs"]["C"]["topics"] == 3
    # A's grades as a run, ties broken by many random orders: the mean tends to the exact one
    rng = np.random.default_rng(3)
    a = pd.DataFrame(study["lab"]["A"], columns=["query-id", "corpus-id", "score"])
    prim = pd.DataFrame(study["prim"], columns=["query-id", "corpus-id", "grade"])
    means = []
    for _ in range(400):
        run = a.assign(score=a["score"] + rng.random(len(a)) * 0.5)
        s = score_qrels(prim, {"r": run}, k=10, compare=False)
        keep = np.isin(s.queries, a["query-id"].unique())
        means.append(s.per_query["r"][s.measures[0]][keep].mean())
    assert res["runs"]["A"]["mean"] == pytest.approx(np.mean(means), abs=4 * np.std(means) /
                                                     np.sqrt(len(means)) + 1e-9)
    assert res["runs"]["A"]["topics"] == 3 and res["runs"]["C"]["half_width"] == 0.0


def test_pictures(study: dict, tmp_path: Path) -> None:
    from rcp_data.documents.pictures import png_size

    rc, _, err = _cli(["--qrels", str(study["files"]["primary"]), *_labels(study), "--draws",
                       "50", "--pictures", str(tmp_path / "pics"), *map(str, study["runs"])])
    assert rc == 0, err
    got = sorted(p.name for p in (tmp_path / "pics").iterdir())
    assert got == ["ceilings.png", "kappa_per_group.png", "rank_changes.png",
                   "swap_probabilities.png"]
    assert png_size(tmp_path / "pics" / "ceilings.png") == (800, 480)
    assert png_size(tmp_path / "pics" / "rank_changes.png") == (800, 480)


def test_a_topic_every_assessor_judged_links_no_groups(study: dict, tmp_path: Path) -> None:
    """SYNTHETIC: A, B, C and D all also grade topic q0 (a shared topic): still two groups."""
    extra = {}
    for n in "ABCD":
        rows = [r for r in study["lab"][n] if r[0] != "q0"] + \
            [(q, d, g) for q, d, g in study["prim"] if q == "q0"]
        extra[n] = _write_qrels(tmp_path / f"{n}_shared.txt", rows)
    res = rcp_data.agree(qrels=study["files"]["primary"], labels=extra).to_json()
    groups = sorted(sorted(g["with_primary"]["members"]) for g in res["groups"])
    assert groups == [["A", "B", "primary"], ["C", "D", "primary"]]
    cd = next(g for g in res["groups"] if "C" in g["with_primary"]["members"])
    assert cd["without_primary"]["topics"] == 4          # q3-q5 and the shared q0


def test_significance_against_scipy_and_statsmodels(study: dict) -> None:
    """Score changes (ttest_rel, Bonferroni / Holm by multipletests) and rank changes
    (wilcoxon) recomputed directly from score_qrels' per-query values."""
    from statsmodels.stats.multitest import multipletests

    res = rcp_data.agree(qrels=study["files"]["primary"],
                         labels={n: study["files"][n] for n in "ABCD"},
                         runs=study["runs"], draws=20).to_json()["systems"]
    sig = res["significance"]
    assert set(sig) == {"A", "B", "C", "D"}
    prim = score_qrels(study["files"]["primary"], study["runs"], k=10, compare=False)
    lab = score_qrels(study["files"]["A"], study["runs"], k=10, compare=False)
    topics = list(lab.queries)                                  # A judged q0-q2
    assert sig["A"]["topics"] == len(topics) == 3
    pv = {q: i for i, q in enumerate(prim.queries)}
    ref = np.array([[prim.per_query[r][prim.measures[0]][pv[q]] for q in topics]
                    for r in prim.runs])
    oth = np.array([lab.per_query[r][lab.measures[0]] for r in lab.runs])
    p = np.array([stats.ttest_rel(oth[i], ref[i]).pvalue for i in range(len(ref))])
    got = sig["A"]["systems"]
    assert [g["p_t"] for g in got] == pytest.approx(p, abs=1e-12)
    assert [g["p_bonferroni"] for g in got] == pytest.approx(
        multipletests(p, method="bonferroni")[1], abs=1e-12)
    assert [g["p_holm"] for g in got] == pytest.approx(
        multipletests(p, method="holm")[1], abs=1e-12)
    r_ref, r_oth = stats.rankdata(-ref, axis=0), stats.rankdata(-oth, axis=0)
    for i, g in enumerate(got):
        if np.any(r_ref[i] != r_oth[i]):
            assert g["p_wilcoxon"] == pytest.approx(stats.wilcoxon(r_oth[i], r_ref[i]).pvalue)
        else:
            assert g["p_wilcoxon"] is None
    # C copies the primary: no score moves, no rank moves
    assert all(g["p_wilcoxon"] is None and not g["changed_holm"]
               for g in sig["C"]["systems"])
    assert sig["C"]["changed_bonferroni"] == 0 and sig["C"]["rank_changed_wilcoxon"] == 0


@pytest.mark.parametrize("p", [0.9, 0.5])
def test_rbo_against_the_rbo_package(study: dict, p: float) -> None:
    """Each leaderboard's RBO against the primary's, both variants, equals the PyPI rbo
    package's on the same system orders (names, best first)."""
    import rbo

    s = rcp_data.agree(qrels=study["files"]["primary"],
                       labels={n: study["files"][n] for n in "ABCD"}, runs=study["runs"],
                       draws=20, rbo_p=p).to_json()["systems"]
    def names(board: list[float]) -> list[str]:
        return [s["systems"][i] for i in np.argsort(-np.array(board), kind="stable")]
    ref = names(s["leaderboards"]["primary"])
    assert s["against_primary"]
    for c in s["against_primary"]:
        mine = names(s["leaderboards"][c["labels"]])
        sim = rbo.RankingSimilarity(mine, ref)
        assert c["rbo_package"] == pytest.approx(sim.rbo(p=p), abs=1e-9)
        assert c["rbo_extrapolated"] == pytest.approx(sim.rbo_ext(p=p), abs=1e-9)


def test_kappa_method_study_is_the_mean_over_topics(study: dict) -> None:
    """SYNTHETIC: --kappa-method study gives per group the mean over topics of statsmodels'
    Fleiss kappa on each topic's documents (the primary counted once per secondary member, as
    the study's join does), per pair the mean of per-topic
    Cohen's kappa and the mean per-topic share of equal grades; textbook pools the documents."""
    labels = {n: study["files"][n] for n in "ABCD"}
    st = rcp_data.agree(qrels=study["files"]["primary"], labels=labels,
                        plain={"kappa_method": "study"}).to_json()
    tb = rcp_data.agree(qrels=study["files"]["primary"], labels=labels).to_json()
    assert st["kappa_method"] == "study" and tb["kappa_method"] == "textbook"
    prim = {(q, d): g for q, d, g in study["prim"]}
    a = {(q, d): g for q, d, g in study["lab"]["A"]}
    b = {(q, d): g for q, d, g in study["lab"]["B"]}
    per_topic, pooled = [], []
    for t in ("q0", "q1"):                                   # the topics A and B both judged
        keys = [k for k in b if k[0] == t]
        r = np.array([[prim[k], prim[k], a[k], b[k]] for k in keys])   # primary per member
        per_topic.append(ir.fleiss_kappa(ir.aggregate_raters(r)[0]))
        pooled.append(r)
    ab = next(g["with_primary"] for g in st["groups"] if "A" in g["with_primary"]["members"])
    assert ab["fleiss_kappa"] == pytest.approx(np.mean(per_topic), abs=1e-12)
    assert ab["undefined_topics"] == 0
    ab_tb = next(g["with_primary"] for g in tb["groups"] if "A" in g["with_primary"]["members"])
    assert ab_tb["fleiss_kappa"] == pytest.approx(
        ir.fleiss_kappa(ir.aggregate_raters(np.vstack(pooled)[:, 1:])[0]), abs=1e-12)
    assert ab_tb["fleiss_kappa"] != pytest.approx(ab["fleiss_kappa"], abs=1e-6)
    pair = next(p for p in st["pairs"] if (p["a"], p["b"]) == ("A", "B"))
    same = [np.mean([a[k] == b[k] for k in b if k[0] == t]) for t in ("q0", "q1")]
    assert pair["overlap"] == pytest.approx(np.mean(same), abs=1e-12)
    cohen = []
    for t in ("q0", "q1"):
        keys = [k for k in b if k[0] == t]
        table = np.zeros((4, 4))
        np.add.at(table, ([a[k] for k in keys], [b[k] for k in keys]), 1)
        cohen.append(ir.cohens_kappa(table).kappa)
    assert pair["cohen_kappa"] == pytest.approx(np.mean(cohen), abs=1e-12)
    # D graded topic q5 all 0 and C copies the primary: binarized C+D+primary on q5 still varies
    # only if the primary does; a topic where every rater gave one grade is counted, not averaged
    cd = next(g["without_primary"] for g in st["groups"] if "C" in g["without_primary"]["members"])
    assert cd["topics"] == 3 and cd["undefined_topics"] == 0


def test_kappa_method_unknown_is_a_usage_error(study: dict) -> None:
    from rcp_data.core.errors import UsageError

    with pytest.raises(UsageError, match="--kappa-method must be one of textbook, study"):
        rcp_data.agree(qrels=study["files"]["primary"], labels={"A": study["files"]["A"]},
                       plain={"kappa_method": "pooled"})


def test_several_measures_in_one_pass_equal_one_at_a_time(study: dict) -> None:
    labels = {n: study["files"][n] for n in "ABCD"}
    both = rcp_data.agree(qrels=study["files"]["primary"], labels=labels, runs=study["runs"],
                          draws=30, plain={"measure": ["nDCG@5", "nDCG@20"]}).to_json()
    assert list(both["systems_by_measure"]) == ["nDCG@5", "nDCG@20"]
    assert both["systems"] == both["systems_by_measure"]["nDCG@5"]
    one = rcp_data.agree(qrels=study["files"]["primary"], labels=labels, runs=study["runs"],
                         draws=30, plain={"measure": "nDCG@20"}).to_json()["systems"]
    assert both["systems_by_measure"]["nDCG@20"] == one
    assert one["leaderboards"]["primary"] != both["systems"]["leaderboards"]["primary"]
    rc, out, _ = _cli(["--qrels", str(study["files"]["primary"]), *_labels(study), "--draws",
                       "30", "--measure", "nDCG@5,nDCG@20", *map(str, study["runs"])])
    assert rc == 0 and "systems under nDCG@5" in out and "systems under nDCG@20" in out


def test_wilcoxon_p_equals_scipy_on_ties_zeros_and_sizes() -> None:
    """SYNTHETIC rank differences (ties, zeros, 3 to 60 topics): scipy's p-value, whichever
    method scipy picks (exact, its permutation test, asymptotic)."""
    from rcp_data.scoring.agreement.significance import wilcoxon_p

    rng = np.random.default_rng(4)
    for n in (3, 5, 8, 11, 13, 14, 30, 60):
        for _ in range(6):
            x = rng.integers(1, 6, size=n).astype(float)
            y = np.where(rng.random(n) < 0.3, x, rng.integers(1, 6, size=n)).astype(float)
            if np.all(x == y):
                continue
            assert wilcoxon_p(x, y) == pytest.approx(stats.wilcoxon(x, y).pvalue, abs=1e-12)
        x = rng.permutation(n).astype(float) + 0.5            # no ties, no zeros
        assert wilcoxon_p(x, np.zeros(n) + 0.25) == pytest.approx(
            stats.wilcoxon(x, np.zeros(n) + 0.25).pvalue, abs=1e-12)
