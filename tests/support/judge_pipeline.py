"""A judged demo release end to end on the local Hub: demo pools of one query per subset
(``build --until pools --source-option queries=1``) -> ``judge run`` against an
OpenAI-compatible endpoint -> ``calibrate`` -> ``build`` -> ``release publish --record-to``
-> ``verify --histories``. Each step's exit code is asserted 0 (with its stderr).

The steps chain through one folder as the commands write it, nothing carried by hand: the
pools folder holds the demo's first-stage and reranker runs, ``judge run --out`` it adds
``judge/``, ``calibrate --inputs`` it adds ``calibration/``, and ``build --inputs`` reads it.
:func:`judged_inputs` is the older hand-carried layout (tables and calibration copied into a
copy of the demo's inputs), kept for the tests that judge a whole release."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from rcp_data.cli.main import main

SMALL = ["--source-option", "queries=1"]


def _ok(capsys, *argv: str) -> str:
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, (argv[:3], code, out.err[-2000:])
    return out.out


def judged_inputs(demo_data: Path, judge: Path, cal: Path, inputs: Path) -> Path:
    """The demo's builder inputs in ``inputs`` with a judge run's tables (``judge``) and their
    calibration (``cal``): the judge strategy's run becomes the new thetas."""
    shutil.copytree(demo_data / "inputs", inputs)
    for name in ("criteria.parquet", "tournament.parquet", "judge.json", "judging.json"):
        shutil.copy(judge / name, inputs / "judge" / name)
    for name in ("item_params.json", "thetas.parquet"):
        shutil.copy(cal / name, inputs / "judge" / name)
    runs = json.loads((inputs / "runs/runs.json").read_text())
    entry = next(r for r in runs if r["is_judge"])
    th = pd.read_parquet(cal / "thetas.parquet")
    th[["query-id", "corpus-id"]].assign(score=th["theta"]).to_parquet(
        inputs / "runs" / entry["file"], index=False)
    return inputs


def judged_release(demo_data: Path, work: Path, capsys, *, endpoint: str, model: str,
                   repo: str, run_args: tuple[str, ...] = (), calibrate_args: tuple[str, ...] = ()
                   ) -> dict:
    """Run the whole chain in ``work``; returns its folders, the build's JSON and the tag."""
    pools = work / "inputs"
    _ok(capsys, "-q", "build", "demo", "--inputs", str(demo_data / "inputs"), "--out",
        str(pools), "--until", "pools", *SMALL)
    _ok(capsys, "-q", "judge", "run", "--pool", str(pools), "--store", str(work / "store"),
        "--out", str(pools), "--endpoint", endpoint, "--model", model, "--no-progress",
        *run_args)
    _ok(capsys, "-q", "calibrate", "--inputs", str(pools), "--no-progress", *calibrate_args)
    judge, inputs = pools / "judge", pools
    release = work / "release"
    built = json.loads(_ok(capsys, "build", "demo", "--inputs", str(inputs), "--out",
                           str(release), "--repo", repo, "--json", *SMALL))
    histories = work / "histories"
    _ok(capsys, "-q", "release", "publish", str(release), "--repo", repo, "--create-repo",
        "--record-to", str(histories))
    _ok(capsys, "-q", "verify", "--repo", repo, "--revision", built["tag"], "--cache-dir",
        str(work / "verify-cache"), "--histories", str(histories))
    return {"release": release, "judge": judge, "built": built, "histories": histories,
            "store": work / "store"}
