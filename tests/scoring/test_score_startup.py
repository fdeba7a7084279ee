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
    assert proc.stdout.splitlines()[1].startswith("run\tnDCG@10\tall\t0.")
    assert rows, "no -X importtime output"
    heavy = sorted({name for name, _, _ in rows if name.split(".")[0] in HEAVY})
    total = sum(cum for _, cum, depth in rows if depth <= 1) / 1e6
    assert heavy == [], f"score --qrels imported {heavy} (imports took {total:.2f} s)"
    # the cumulative import time is stated, not asserted (a shared machine's speed varies)
    print(f"score --qrels imports: {total:.2f} s cumulative (-X importtime, top level)")
