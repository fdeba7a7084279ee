"""``rcp-data agree --qrels`` with the shared measures (P, RR, R, AP, judged-only) against
ir-measures; group overlap and the aggregate ceilings on SYNTHETIC assessors whose values are
known by construction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rcp_data
from rcp_data.core.errors import UsageError
from rcp_data.scoring.agreement import raters
from rcp_data.scoring.qrels_score import score_qrels

MEASURES = ["P(rel=2)@10", "RR(rel=2)@10", "R@20", "AP", "nDCG(judged_only=True)@10"]


def _write(path: Path, rows) -> Path:
    path.write_text("".join(f"{q} 0 {d} {int(g)}\n" for q, d, g in rows))
    return path


@pytest.fixture()
def study(tmp_path: Path) -> dict:
    """SYNTHETIC: 4 topics x 40 documents, a primary; A and B grade topics 0-1 (A copies the
    primary on topic 0), C grades topics 2-3; two runs that rank unjudged documents too."""
    rng = np.random.default_rng(11)
    prim, lab = [], {"A": [], "B": [], "C": []}
    for t in range(4):
        g = rng.integers(0, 4, size=40)
        for d in range(40):
            q, doc = f"q{t}", f"d{t}_{d}"
            prim.append((q, doc, g[d]))
            noisy = g[d] if rng.random() < 0.5 else rng.integers(0, 4)
            if t < 2:
                lab["A"].append((q, doc, g[d] if t == 0 else noisy))
                lab["B"].append((q, doc, rng.integers(0, 4)))
            else:
                lab["C"].append((q, doc, noisy))
    files = {"primary": _write(tmp_path / "primary.txt", prim)}
    files.update({n: _write(tmp_path / f"{n}.txt", rows) for n, rows in lab.items()})
    runs = []
    for r in range(2):
        path = tmp_path / f"run{r}.trec"
        with path.open("w") as fh:
            for t in range(4):
                ids = [f"d{t}_{i}" for i in range(40)] + [f"u{t}_{i}" for i in range(10)]
                s = rng.random(len(ids))
                for i in np.argsort(-s):
                    fh.write(f"q{t} Q0 {ids[i]} {i} {s[i]:.6f} run{r}\n")
        runs.append(path)
    return {"files": files, "runs": runs, "prim": prim, "lab": lab}


def _agree(study: dict, **plain) -> dict:
    return rcp_data.agree(qrels=study["files"]["primary"],
                          labels={n: study["files"][n] for n in "ABC"}, runs=study["runs"],
                          draws=40, plain=plain).to_json()


def test_every_measure_of_the_leaderboards_equals_ir_measures(study: dict) -> None:
    """Each label set's leaderboard under each measure is the mean over its topics of
    ir-measures' (pytrec_eval) per-query values of the run on that label set."""
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("pytrec_eval")
    res = _agree(study, measure=MEASURES)
    assert list(res["systems_by_measure"]) == MEASURES
    runs = {}
    for i, path in enumerate(study["runs"]):
        for line in path.read_text().splitlines():
            q, _, d, _, s, _ = line.split()
            runs.setdefault(f"run{i}", {}).setdefault(q, {})[d] = float(s)
    for name in ("primary", "A", "C"):
        rows = study["prim"] if name == "primary" else study["lab"][name]
        qrels: dict = {}
        for q, d, g in rows:
            qrels.setdefault(q, {})[d] = int(g)
        for m in MEASURES:
            if m.startswith("RR") and "@" in m:              # RR@k: RR of the top k
                k = int(m.rsplit("@", 1)[1])
                measure = ir_measures.parse_measure(m.rsplit("@", 1)[0])
                cut = {r: {q: dict(sorted(docs.items(), key=lambda x: -x[1])[:k])
                           for q, docs in v.items()} for r, v in runs.items()}
            else:
                measure, cut = ir_measures.parse_measure(m), runs
            board = res["systems_by_measure"][m]["leaderboards"][name]
            for i, r in enumerate(res["systems_by_measure"][m]["systems"]):
                per_q = [x.value for x in
                         ir_measures.pytrec_eval.iter_calc([measure], qrels, cut[r])]
                assert board[i] == pytest.approx(np.mean(per_q), abs=1e-9), (name, m, r)


def test_measures_share_one_pass_and_keep_ndcg_identical(study: dict) -> None:
    both = _agree(study, measure=["nDCG@10", "P(rel=2)@10"])
    alone = _agree(study, measure="nDCG@10")
    assert both["systems"] == alone["systems"]
    assert both["ceilings"] == alone["ceilings"]
    assert "ceilings_by_measure" not in alone
    assert list(both["ceilings_by_measure"]) == ["nDCG@10", "P(rel=2)@10"]
    p = _agree(study, measure="P(rel=2)@10")
    assert both["systems_by_measure"]["P(rel=2)@10"] == p["systems"]


def test_unknown_measure_is_a_usage_error(study: dict) -> None:
    with pytest.raises(UsageError, match="unknown measure"):
        _agree(study, measure="MAP@x")
    with pytest.raises(UsageError, match="needs a cutoff"):
        _agree(study, measure="P")


def test_ceiling_under_a_measure_is_the_mean_over_random_tie_orders(study: dict) -> None:
    """A's grades as a run on the primary, P(rel=2)@10 and RR(rel=2)@10 exact over tie orders,
    against score --qrels (itself checked against ir-measures) averaged over many random tie
    breaks; nDCG@10 through the tied measures equals score's group-mean tie rule."""
    res = _agree(study, measure=["P(rel=2)@10", "RR(rel=2)@10",
                                 "nDCG(judged_only=True)@10"])["ceilings_by_measure"]
    a = pd.DataFrame(study["lab"]["A"], columns=["query-id", "corpus-id", "score"])
    prim = pd.DataFrame(study["prim"], columns=["query-id", "corpus-id", "grade"])
    rng = np.random.default_rng(5)
    draws = {"P(rel=2)@10": [], "RR(rel=2)@10": []}
    for _ in range(150):
        run = a.assign(score=a["score"] + rng.random(len(a)) * 0.5)
        s = score_qrels(prim, {"r": run}, measures=list(draws), compare=False)
        keep = np.isin(s.queries, a["query-id"].unique())
        for m in draws:
            draws[m].append(s.per_query["r"][m][keep].mean())
    for m, values in draws.items():
        got = res[m]["runs"]["A"]
        assert got["topics"] == 2
        assert got["mean"] == pytest.approx(np.mean(values), abs=4 * np.std(values) /
                                            np.sqrt(len(values)) + 1e-9)
    # judged-only changes nothing for a run of judged documents: it equals plain nDCG@10
    assert res["nDCG(judged_only=True)@10"]["runs"]["B"]["mean"] == pytest.approx(
        res["nDCG@10"]["runs"]["B"]["mean"], abs=1e-12)
    assert res["nDCG(judged_only=True)@10"]["runs"]["aggregate min"]["mean"] == pytest.approx(
        res["nDCG@10"]["runs"]["aggregate min"]["mean"], abs=1e-12)


# -- aggregates and overlap known by construction --------------------------------------------
def test_aggregate_ceilings_known_by_construction(tmp_path: Path) -> None:
    """SYNTHETIC: one topic of 30 documents; X copies the primary, Z grades everything 0.
    max(X, Z) and mean(X, Z) order the documents as the primary does (nDCG@10 = 1); min(X, Z)
    ties every document, so nDCG@10 is the mean gain times the top-10 discounts over the ideal
    and P(rel=2)@10 the share of documents graded 2 or more."""
    g = np.array([3, 3, 2, 2, 2, 1, 1, 1, 1, 1] + [0] * 20)
    prim = [("q", f"d{i}", x) for i, x in enumerate(g)]
    files = {"X": _write(tmp_path / "x.txt", prim),
             "Z": _write(tmp_path / "z.txt", [(q, d, 0) for q, d, _ in prim])}
    res = rcp_data.agree(qrels=_write(tmp_path / "p.txt", prim), labels=files,
                         plain={"measure": ["nDCG@10", "P(rel=2)@10"]}).to_json()
    c = res["ceilings_by_measure"]
    disc = 1.0 / np.log2(np.arange(10) + 2.0)
    ideal = float(np.sort(g)[::-1][:10] @ disc)
    assert c["nDCG@10"]["runs"]["aggregate max"]["mean"] == pytest.approx(1.0, abs=1e-12)
    assert c["nDCG@10"]["runs"]["aggregate mean"]["mean"] == pytest.approx(1.0, abs=1e-12)
    assert c["nDCG@10"]["runs"]["X"]["mean"] == pytest.approx(1.0, abs=1e-12)
    tied = g.mean() * disc.sum() / ideal
    assert c["nDCG@10"]["runs"]["aggregate min"]["mean"] == pytest.approx(tied, abs=1e-12)
    assert c["nDCG@10"]["runs"]["Z"]["mean"] == pytest.approx(tied, abs=1e-12)
    assert c["P(rel=2)@10"]["runs"]["aggregate min"]["mean"] == pytest.approx(5 / 30)
    assert c["P(rel=2)@10"]["runs"]["aggregate max"]["mean"] == pytest.approx(5 / 10)
    assert set(c["P(rel=2)@10"]["runs"]) == {"X", "Z", "aggregate max", "aggregate min",
                                             "aggregate mean"}


def test_group_overlap_with_and_without_primary_known_by_construction(tmp_path: Path) -> None:
    """SYNTHETIC: 40 documents of one topic. The primary grades 0-9 relevant (2), 10-39 0;
    A: 0-9 as 2 but 0-1 as 3, 10-14 as 2; B: 0-7 as 2, 10-11 as 2. Without the primary, A and
    B call 0-7 and 10-11 relevant together of 0-14: binary 10/15; four-grade (same grade) 8/15
    (0-1 differ). With the primary: all three call 0-7 relevant of 0-14: 8/15; same grade
    2..7: 6/15. The pairs agree with raters.overlap and the groups' kappa with statsmodels."""
    from statsmodels.stats import inter_rater as ir

    prim = np.zeros(40)
    prim[:10] = 2
    a = prim.copy()
    a[:2] = 3
    a[10:15] = 2
    b = np.zeros(40)
    b[:8] = 2
    b[10:12] = 2
    rows = {n: [("q", f"d{i}", x) for i, x in enumerate(v)]
            for n, v in (("p", prim), ("A", a), ("B", b))}
    res = rcp_data.agree(qrels=_write(tmp_path / "p.txt", rows["p"]),
                         labels={n: _write(tmp_path / f"{n}.txt", rows[n]) for n in "AB"}
                         ).to_json()
    (g,) = res["groups"]
    assert g["without_primary"]["overlap_binary"] == pytest.approx(10 / 15)
    assert g["without_primary"]["overlap"] == pytest.approx(8 / 15)
    assert g["with_primary"]["overlap_binary"] == pytest.approx(8 / 15)
    assert g["with_primary"]["overlap"] == pytest.approx(6 / 15)
    assert g["with_primary"]["fleiss_kappa"] == pytest.approx(
        ir.fleiss_kappa(ir.aggregate_raters(np.column_stack([prim, a, b]))[0]), abs=1e-12)
    pair = {(p["a"], p["b"]): p for p in res["pairs"]}
    assert pair[("A", "B")]["overlap_binary"] == pytest.approx(raters.overlap(a, b, 2))
    assert pair[("A", "B")]["overlap_binary"] == g["without_primary"]["overlap_binary"]
    assert pair[("primary", "A")]["overlap"] == pytest.approx(8 / 15)   # 2..9 same of 0..14
    table = rcp_data.agree(qrels=_write(tmp_path / "p.txt", rows["p"]),
                           labels={n: tmp_path / f"{n}.txt" for n in "AB"}).table()
    row = next(line for line in table.splitlines() if line.startswith("| A + B | no | 1 | 40 |"))
    assert row.endswith("| 0.533 | 0.667 |")


def test_overlap_all_known_by_construction() -> None:
    r = np.zeros((20, 3))
    r[:6, 0] = 2
    r[2:8, 1] = 2
    r[3:6, 2] = 3
    r[6:10, 2] = 1
    assert raters.overlap_all(r, 1) == pytest.approx(3 / 10)      # 3..5 of 0..9
    assert raters.overlap_all(r, 2) == pytest.approx(3 / 8)       # 3..5 of 0..7
    assert raters.overlap_all(r, 1, exact=True) == 0.0             # no grade shared by all
    assert raters.overlap_all(r[:, :2], 1, exact=True) == pytest.approx(4 / 8)   # 2..5
    assert np.isnan(raters.overlap_all(np.zeros((5, 3)), 1))
    assert raters.overlap_all(r[:, :2], 1) == raters.overlap(r[:, 0], r[:, 1], 1)


def test_top_rows_scores_every_cutoff_measure_as_the_whole_run(tmp_path: Path) -> None:
    """SYNTHETIC: a run of long score ties and queries split over blocks; its top-k rows in
    trec_eval's order score every measure with a cutoff up to k as the whole run does."""
    from rcp_data.runs.qrels_runs import read_run, top_rows

    rng = np.random.default_rng(2)
    qrels = pd.DataFrame([(f"q{t}", f"d{i}", int(rng.integers(0, 4))) for t in range(5)
                          for i in range(60)], columns=["query-id", "corpus-id", "grade"])
    rows = [(f"q{t}", f"d{i}", float(np.round(rng.random(), 1))) for t in range(5)
            for i in rng.permutation(80)]
    rows = rows[::2] + rows[1::2]                           # every query in two blocks
    whole = read_run(pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"]), "<run>")
    top = top_rows(whole, 20)
    assert len(top) == 5 * 20 and len(top.block_query) == 5 and top.ranked
    names = ["P(rel=2)@10", "RR(rel=2)@10", "R@20", "nDCG@20", "Success@5"]
    a = score_qrels(qrels, {"r": whole}, measures=names, compare=False)
    b = score_qrels(qrels, {"r": top}, measures=names, compare=False)
    for m in names:
        assert b.per_query["r"][m] == pytest.approx(a.per_query["r"][m], abs=1e-12), m
    a = score_qrels(qrels, {"r": whole}, k=[10, 20], compare=False)
    b = score_qrels(qrels, {"r": top}, k=[10, 20], compare=False)
    for m in a.measures:
        assert b.per_query["r"][m] == pytest.approx(a.per_query["r"][m], abs=1e-12), m
