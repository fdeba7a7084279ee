"""``rcp-data release cut`` (issue 38): pools -> judge -> calibrate -> build -> release check in
one work folder, against the SIMULATED judge server on the demo suite, resumable.

The release it builds is checked by ``release check`` (publish's checks) and compared with the
release the same steps make when run one by one as their own commands (each output the next
one's input as written): the same data, byte for byte. A run stopped after the judge resumes at
the calibration without a judge call; a run after the end calls no judge and builds nothing.
"""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from rcp_data.cli.main import main
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge

REPO = "me/demo-judged"
SMALL = ("--source-option", "queries=1")
DATE = ("--date", "2026-12-01")


@pytest.fixture(scope="module")
def server():
    with ServerThread(SimulatedJudge()) as srv:
        yield srv


def _cut(demo_data, work, server, capsys):
    code = main(["-q", "release", "cut", "demo", "--inputs", str(demo_data / "inputs"),
                 "--work", str(work), "--repo", REPO, "--endpoint", server.url, "--model",
                 MODEL, "--no-progress", "--context-tokens", "4096", *SMALL, *DATE])
    out = capsys.readouterr()
    return code, out.out, out.err


def _ok(capsys, *argv: str) -> str:
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, (argv[:3], code, out.err[-2000:])
    return out.out


def _data_files(release):
    """Every table of a release (the manifest and card also hold the judge run's timings)."""
    return {p.relative_to(release).as_posix(): p.read_bytes() for p in sorted(release.rglob("*"))
            if p.is_file() and p.suffix == ".parquet"}


def test_cut_stopped_after_judging_resumes_at_calibrate_then_does_nothing(
        demo_data, server, tmp_path, capsys, monkeypatch):
    work = tmp_path / "cut"
    import rcp_data.release.calibrate_run as calibrate_run

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(calibrate_run, "calibrate", killed)
    code, _, _ = _cut(demo_data, work, server, capsys)
    assert code == 130
    asked = server.judge.stats["requests"]
    assert asked > 0
    assert (work / "inputs/judge/judging.json").is_file()
    assert not (work / "inputs/calibration").exists() and not (work / "release").exists()
    monkeypatch.undo()

    code, out, err = _cut(demo_data, work, server, capsys)
    assert code == 0, err
    assert server.judge.stats["requests"] == asked      # the judge was not asked again
    release = work / "release"
    lines = out.strip().splitlines()
    assert lines[-1] == f"rcp-data release publish {release} --repo {REPO}"
    tag = json.loads((release / "provenance/releases.json").read_text())["releases"][-1]["tag"]
    assert lines[-2] == f"release {tag} of {REPO} is ready; publish it with:"
    assert tag.startswith("v1-")
    # publish's own checks pass on it, as a command of its own
    assert "release check passed" in _ok(capsys, "release", "check", str(release))
    # the release's thetas are the calibration's, its judge the served model
    cal = pd.read_parquet(work / "inputs/calibration/thetas.parquet")
    manifest = json.loads((release / "provenance/build_manifest.json").read_text())
    assert manifest["judge"]["model"] == MODEL
    assert any(f["path"] == "calibration/thetas.parquet" for f in manifest["inputs"])
    qrels = pd.concat([pd.read_parquet(release / s / "qrels.parquet") for s in ("alpha", "beta")])
    judged = qrels[qrels["theta"].notna()]
    merged = judged.merge(cal, on=["query-id", "corpus-id"], suffixes=("", "_c"))
    assert len(merged) == len(judged) > 0
    assert (merged["theta"] - merged["theta_c"]).abs().max() < 1e-9
    assert (release / "provenance/diagnostics.json").is_file()
    assert len(list((release / "provenance/pictures").glob("*.png"))) == 4

    # after the end: no judge call, nothing built again, the same command printed
    built = (release / "provenance/build_manifest.json").stat().st_mtime_ns
    code, again, err = _cut(demo_data, work, server, capsys)
    assert code == 0, err
    assert server.judge.stats["requests"] == asked
    assert (release / "provenance/build_manifest.json").stat().st_mtime_ns == built
    assert again.strip().splitlines()[-2:] == lines[-2:]

    # the same steps, each its own command, each output the next one's input as written
    steps = tmp_path / "steps"
    _ok(capsys, "-q", "build", "demo", "--inputs", str(demo_data / "inputs"), "--out",
        str(steps / "inputs"), "--until", "pools", *SMALL)
    shutil.copytree(work / "store", steps / "store")  # the answers: asked once, above
    _ok(capsys, "-q", "judge", "run", "--pool", str(steps / "inputs"), "--store",
        str(steps / "store"), "--out", str(steps / "inputs"), "--endpoint", server.url,
        "--model", MODEL, "--no-progress", "--context-tokens", "4096")
    _ok(capsys, "-q", "calibrate", "--inputs", str(steps / "inputs"), "--no-progress")
    _ok(capsys, "-q", "build", "demo", "--inputs", str(steps / "inputs"), "--out",
        str(steps / "release"), "--repo", REPO, *SMALL, *DATE)
    assert server.judge.stats["requests"] == asked
    assert _data_files(steps / "release") == _data_files(release)
    # the card differs only in the judge run's wall times
    for name in ("rcp_ndcg_tasks.py", "provenance/releases.json", "provenance/diagnostics.json"):
        assert (steps / "release" / name).read_bytes() == (release / name).read_bytes(), name


def test_another_judge_in_a_finished_work_folder_is_refused(demo_data, server, tmp_path,
                                                             capsys):
    work = tmp_path / "cut"
    (work / "inputs/judge").mkdir(parents=True)
    (work / "inputs/provenance").mkdir()
    (work / "inputs/provenance/pools_only.json").write_text('{"suite": "demo"}')
    (work / "inputs/judge/judging.json").write_text("{}")
    (work / "inputs/judge/judge.json").write_text(json.dumps({"model": "org/other-judge"}))
    before = server.judge.stats["requests"]
    code, _, err = _cut(demo_data, work, server, capsys)
    assert code == 2 and "org/other-judge" in err and "another --work" in err
    assert len(err.strip().splitlines()) == 1
    assert server.judge.stats["requests"] == before
