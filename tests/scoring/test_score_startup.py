"""``rcp-data score --qrels`` imports only what it uses: ``python -X importtime`` of the command
on a small SYNTHETIC gzip run and qrels shows none of pandas, torch, datasets, huggingface_hub,
matplotlib (nor scipy, which only the paired comparisons of two runs or more need)."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import rcp_data

HEAVY = ("pandas", "torch", "datasets", "huggingface_hub", "matplotlib", "scipy")
_LINE = re.compile(r"^import time:\s*(\d+)\s*\|\s*(\d+)\s*\|(\s*)(\S+)\s*$")


def _importtime(*argv: str, tmp: Path) -> tuple[subprocess.CompletedProcess, list[tuple]]:
    env = dict(os.environ)
    src = str(Path(rcp_data.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "rcp_data", *argv],
                          capture_output=True, text=True, env=env, cwd=tmp, timeout=300)
    rows = [(m.group(4), int(m.group(2)), len(m.group(3)))
            for m in map(_LINE.match, proc.stderr.splitlines()) if m]
    return proc, rows


def test_score_qrels_imports_no_heavy_module(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(5) for d in range(8)))
    run = tmp_path / "run.txt.gz"
    with gzip.open(run, "wt") as fh:       # SYNTHETIC: NIST's shape (tabs, ranks from 0, tag)
        fh.write("".join(f"q{q}\tQ0\td{d}\t{d}\t{10 - d}.0\tsynthetic\n"
                         for q in range(5) for d in range(10)))
    proc, rows = _importtime("score", "--qrels", str(qrels), str(run), "--measure",
                             "nDCG@10,P(rel=2)@10,AP(rel=2)", "--format", "tsv", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == "run\tmeasure\tquery\tvalue"
    assert proc.stdout.splitlines()[1].startswith("synthetic\tnDCG@10\tall\t0.")  # its tag
    assert rows, "no -X importtime output"
    heavy = sorted({name for name, _, _ in rows if name.split(".")[0] in HEAVY})
    total = sum(cum for _, cum, depth in rows if depth <= 1) / 1e6
    assert heavy == [], f"score --qrels imported {heavy} (imports took {total:.2f} s)"
    # the cumulative import time is stated, not asserted (a shared machine's speed varies)
    print(f"score --qrels imports: {total:.2f} s cumulative (-X importtime, top level)")


def test_the_docs_qrels_command_runs_as_written(tmp_path: Path) -> None:
    """The ``score --qrels`` command of docs/jobs/score.md, run exactly as written on SYNTHETIC
    files of those names; its means equal pytrec_eval's."""
    import shlex

    import pytest

    pytrec_eval = pytest.importorskip("pytrec_eval")
    page = (Path(__file__).resolve().parents[2] / "docs" / "jobs" / "score.md").read_text()
    command = next(line for line in page.splitlines() if line.startswith("rcp-data score --qrels"))
    argv = shlex.split(command)
    qrels = {f"q{q}": {f"d{d}": (q * d) % 4 for d in range(12)} for q in range(6)}
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                                for d, g in docs.items()))
    runs = {}
    for r in (1, 2):
        run = {f"q{q}": {f"d{d}": float((d * (r + 2) + q) % 5) for d in range(15)}
               for q in range(6)}
        runs[f"synthetic{r}"] = run                        # each file's tag names its run
        with gzip.open(tmp_path / f"run{r}.gz", "wt") as fh:
            fh.write("".join(f"{q}\tQ0\t{d}\t{i}\t{s}\tsynthetic{r}\n" for q, docs in run.items()
                             for i, (d, s) in enumerate(docs.items())))
    proc, _ = _importtime(*argv[1:], tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "run\tmeasure\tquery\tvalue" and len(lines) == 7
    got = {(r, m): float(v) for r, m, _, v in (line.split("\t") for line in lines[1:])}
    for name, run in runs.items():
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
        ev2 = pytrec_eval.RelevanceEvaluator(qrels, {"P_10", "map"}, relevance_level=2)
        a, b = ev.evaluate(run), ev2.evaluate(run)
        scored = [q for q, docs in qrels.items() if any(g > 0 for g in docs.values())]
        for measure, res, key in (("nDCG@10", a, "ndcg_cut_10"), ("P(rel=2)@10", b, "P_10"),
                                  ("AP(rel=2)", b, "map")):
            want = sum(res[q][key] for q in scored) / len(scored)
            assert abs(got[(name, measure)] - want) < 1e-12, (name, measure)
