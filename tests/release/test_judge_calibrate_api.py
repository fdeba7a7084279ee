"""``rcp_data.judge`` and ``rcp_data.calibrate``: the library calls behind ``rcp-data judge
run`` and ``rcp-data calibrate`` write the same bytes and report the same numbers as the
commands, and print nothing."""

from __future__ import annotations

import json

import pytest

import rcp_data
from rcp_data.cli.main import main
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge

TABLES = ("tournament.parquet", "criteria.parquet", "judge.json")


def _timeless(value):
    """A JSON document without its timings (keys starting with "seconds")."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if not k.startswith("seconds")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


@pytest.fixture(scope="module")
def server():
    with ServerThread(SimulatedJudge()) as srv:
        yield srv


def test_judge_and_calibrate_as_the_commands(demo_release_v1, server, tmp_path, capsys):
    capsys.readouterr()
    lib = rcp_data.judge(demo_release_v1, tmp_path / "s1", tmp_path / "lib",
                         endpoints=server.url, model=MODEL, context_tokens=4096,
                         limit_queries=2)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert isinstance(lib, rcp_data.JudgeResult) and lib.tables == tmp_path / "lib/judge"
    asked = server.judge.stats["requests"]
    assert main(["-q", "judge", "run", "--pool", str(demo_release_v1), "--store",
                 str(tmp_path / "s2"), "--out", str(tmp_path / "cli"), "--endpoint", server.url,
                 "--model", MODEL, "--context-tokens", "4096", "--limit-queries", "2",
                 "--no-progress"]) == 0
    for name in TABLES:
        assert (tmp_path / "lib/judge" / name).read_bytes() == (
            tmp_path / "cli/judge" / name).read_bytes(), name
    # the command asked as many windows as the library did, and its record counts them
    rec = json.loads((tmp_path / "cli/judge/judging.json").read_text())
    assert lib.windows_new == rec["usage"]["A"]["windows"] + rec["usage"]["B"]["windows"]
    assert server.judge.stats["requests"] - asked >= lib.windows_new
    assert lib.usage["A"]["windows"] == rec["usage"]["A"]["windows"]
    # a rerun of the library call asks nothing
    again = rcp_data.judge(demo_release_v1, tmp_path / "s1", tmp_path / "lib2",
                           endpoints=[server.url], model=MODEL, context_tokens=4096,
                           limit_queries=2)
    assert again.windows_new == 0 and again.windows_stored == lib.windows_new

    judge = tmp_path / "cli/judge"
    cal = rcp_data.calibrate(judge / "criteria.parquet", tmp_path / "cal-lib",
                             tournament=judge / "tournament.parquet")
    assert isinstance(cal, rcp_data.CalibrateResult)
    capsys.readouterr()
    assert main(["calibrate", "--criteria", str(judge / "criteria.parquet"), "--tournament",
                 str(judge / "tournament.parquet"), "--out", str(tmp_path / "cal-cli"),
                 "--no-progress", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert _timeless(printed) == _timeless(json.loads(json.dumps(
        {**cal.to_json(), "out": printed["out"]})))
    assert _timeless(json.loads((tmp_path / "cal-lib/diagnostics.json").read_text())) == \
        _timeless(json.loads((tmp_path / "cal-cli/diagnostics.json").read_text()))
    for name in ("item_params.json", "thetas.parquet"):
        assert (tmp_path / "cal-lib" / name).read_bytes() == (
            tmp_path / "cal-cli" / name).read_bytes(), name
    # with inputs=, the judge run's folder: its judge/ tables in, calibration/ out
    inputs = rcp_data.calibrate(inputs=tmp_path / "cli")
    assert inputs.out == tmp_path / "cli/calibration"
    assert (inputs.out / "thetas.parquet").read_bytes() == (
        tmp_path / "cal-cli/thetas.parquet").read_bytes()


def test_calibrate_without_stage_a_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(rcp_data.UsageError, match="--thetas is required"):
        rcp_data.calibrate(tmp_path / "criteria.parquet", tmp_path / "out")
    assert not (tmp_path / "out").exists()
