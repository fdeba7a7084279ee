"""Measures by their ir-measures names, computed in NumPy, equal ir-measures' pytrec_eval
provider per query on the REAL DL19 and DL20 qrels, with SYNTHETIC runs: long score ties,
unjudged documents, a query the run misses and queries the qrels lack; judged-only both ways."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rcp_data.core.errors import UsageError
from rcp_data.runs.qrels_files import read_qrels
from rcp_data.scoring.measures import compute, parse_measure, trec_order

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")

NAMES = ["nDCG@10", "nDCG@20", "nDCG", "P@10", "P(rel=2)@10",
         "R@100", "R(rel=2)@100", "RR", "RR@10", "RR(rel=2)@10", "AP", "AP(rel=2)",
         "AP@100", "AP(rel=2)@10", "Success@10", "Success(rel=2)@5",
         "nDCG(judged_only=True)@10", "P(rel=2,judged_only=True)@10",
         "RR(rel=2,judged_only=True)@10", "AP(rel=2,judged_only=True)"]
TOL = 1e-9


def _run(qrels: pd.DataFrame, seed: int) -> pd.DataFrame:
    """SYNTHETIC: judged and unjudged documents, scores rounded to one decimal (long ties),
    the first query missing, two queries the qrels lack."""
    rng = np.random.default_rng(seed)
    rows = []
    for qid, part in sorted(qrels.groupby("query-id"))[1:]:
        docs = part["corpus-id"].to_numpy()
        pick = list(rng.choice(docs, size=min(120, len(docs)), replace=False))
        ids = pick + [f"unjudged-{qid}-{i}" for i in range(40)]
        scores = np.round(rng.normal(size=len(ids)), 1)
        rows += [(qid, d, float(s)) for d, s in zip(ids, scores, strict=True)]
    rows += [("not-in-qrels", f"x{i}", 1.0) for i in range(5)]
    return pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])


def _reference(name: str, qrel_dict: dict, run_dict: dict) -> dict[str, float]:
    """ir-measures' pytrec_eval provider; RR@k, which it does not take, as its RR of each
    query's top k in trec_eval's order (score descending, corpus-id descending)."""
    measure = ir_measures.parse_measure(name)
    if not ir_measures.pytrec_eval.supports(measure) and name.startswith("RR") and "@" in name:
        k = int(name.rsplit("@", 1)[1])
        if "judged_only=True" in name:                   # unjudged documents out first
            run_dict = {q: {d: v for d, v in docs.items() if d in qrel_dict.get(q, {})}
                        for q, docs in run_dict.items()}
        run_dict = {q: dict(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k])
                    for q, docs in run_dict.items()}
        measure = ir_measures.parse_measure(name.rsplit("@", 1)[0])
    return {m.query_id: m.value
            for m in ir_measures.pytrec_eval.iter_calc([measure], qrel_dict, run_dict)}


def _ours(qrels: pd.DataFrame, run: pd.DataFrame, name: str) -> dict[str, float]:
    qids = sorted(qrels["query-id"].unique())
    position = {q: i for i, q in enumerate(qids)}
    run = run[run["query-id"].isin(position)]
    q = run["query-id"].map(position).to_numpy()
    order = trec_order(q, run["corpus-id"].to_numpy(), run["score"].to_numpy())
    graded = dict(zip(zip(qrels["query-id"], qrels["corpus-id"], strict=True),
                      qrels["grade"], strict=True))
    grades = np.array([graded.get(k, -1) for k in zip(run["query-id"], run["corpus-id"],
                                                       strict=True)], dtype=np.int64)
    judged = [g["grade"].to_numpy() for _, g in sorted(qrels.groupby("query-id"))]
    values = compute(parse_measure(name), q[order], grades[order], judged, len(qids))
    return dict(zip(qids, values.tolist(), strict=True))


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_every_measure_equals_ir_measures_per_query(trecdl_data: Path, year: str) -> None:
    qrels = read_qrels(trecdl_data / f"qrels.{year}-passage.txt")
    run = _run(qrels, seed=len(year) + (19 if year == "dl19" else 20))
    qrel_dict: dict = {}
    for q, d, g in qrels.itertuples(index=False):
        qrel_dict.setdefault(q, {})[d] = int(g)
    run_dict: dict = {}
    for q, d, s in run.itertuples(index=False):
        run_dict.setdefault(q, {})[d] = float(s)
    known = set(qrel_dict)
    for name in NAMES:
        ref = {q: v for q, v in _reference(name, qrel_dict, run_dict).items() if q in known}
        ours = _ours(qrels, run, name)
        missing = sorted(qrels["query-id"].unique())[0]
        assert ours[missing] == ref.get(missing, 0.0) == 0.0      # a query the run misses
        assert len(ref) >= qrels["query-id"].nunique() - 1, name
        for qid, value in ref.items():
            assert ours[qid] == pytest.approx(value, abs=TOL), (name, qid)


@pytest.mark.parametrize("name", NAMES)
def test_names_print_as_ir_measures_prints_them(name: str) -> None:
    assert str(parse_measure(name)) == str(ir_measures.parse_measure(name))


@pytest.mark.parametrize("bad", ["MAP@10", "P", "nDCG(rel=2)@10", "P@0", "AP(rel=x)"])
def test_bad_names_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_measure(bad)


def _nist_file(path: Path, run: pd.DataFrame) -> Path:
    """The run in NIST's shape: gzip, tab-separated, ranks from 0, one tag."""
    import gzip

    lines = []
    for _, part in run.groupby("query-id", sort=False):
        part = part.sort_values("score", ascending=False, kind="stable")
        lines += [f"{q}\tQ0\t{d}\t{r}\t{s}\tsynthetic-{path.stem}\n"
                  for r, (q, d, s) in enumerate(part.itertuples(index=False))]
    path.write_bytes(gzip.compress("".join(lines).encode("ascii")))
    return path


@pytest.mark.parametrize("judged_only", [False, True])
def test_cli_measures_on_a_nist_file_equal_ir_measures(trecdl_data: Path, tmp_path: Path,
                                                        judged_only: bool) -> None:
    import io
    from contextlib import redirect_stdout

    from rcp_data import cli

    qrels_path = trecdl_data / "qrels.dl20-passage.txt"
    qrels = read_qrels(qrels_path)
    run = _run(qrels, seed=5)
    path = _nist_file(tmp_path / "a.gz", run)
    names = ["nDCG@10", "P(rel=2)@10", "RR(rel=2)@10", "R(rel=2)@100", "AP(rel=2)"]
    out = io.StringIO()
    with redirect_stdout(out):
        rc = cli.main(["score", "--qrels", str(qrels_path), str(path), "--measure",
                       ",".join(names[:3]), "--measure", names[3], "--measure", names[4],
                       "--format", "tsv", "--per-query"]
                      + (["--judged-only"] if judged_only else []))
    assert rc == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "run\tmeasure\tquery\tvalue"
    got = {(m, q): float(v) for r, m, q, v in (line.split("\t") for line in lines[1:])}
    assert {r for r, *_ in (line.split("\t") for line in lines[1:])} == {"synthetic-a"}  # tag
    qrel_dict: dict = {}
    for q, d, g in qrels.itertuples(index=False):
        qrel_dict.setdefault(q, {})[d] = int(g)
    run_dict: dict = {}
    for q, d, s in run.itertuples(index=False):
        run_dict.setdefault(q, {})[d] = float(s)
    if judged_only:
        run_dict = {q: {d: s for d, s in docs.items() if d in qrel_dict.get(q, {})}
                    for q, docs in run_dict.items()}
    for name in names:
        shown = str(replace(parse_measure(name), judged_only=judged_only))
        ref = _reference(name, qrel_dict, run_dict)
        ref.pop("not-in-qrels", None)
        assert len(ref) >= 40
        for qid, value in ref.items():
            assert got[(shown, qid)] == pytest.approx(value, abs=TOL), (name, qid)
