"""``rcp-data judge run`` against servers as they are: the response format learned by a probe,
a server's error shown and a run that cannot go on stopped, an output cap too small refused."""

from __future__ import annotations

import json
import time

import pytest

from rcp_data.cli.main import main
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge
from rcp_data.judging.store import read_records

SMALL = ["--set", "a.random_placements=1", "--set", "a.stratified_placements=0",
         "--set", "a.adaptive_placements=0", "--set", "b.placements=1"]


def _run(release, url, tmp_path, *extra):
    return main(["judge", "run", "--pool", str(release), "--store", str(tmp_path / "store"),
                 "--out", str(tmp_path / "out"), "--endpoint", url, "--model", MODEL,
                 "--limit-queries", "2", "--no-progress", "--context-tokens", "4096",
                 *SMALL, *extra])


@pytest.mark.parametrize("status", [400, 500])
def test_server_refusing_json_schema_gets_json_object(demo_release_v1, tmp_path, caplog,
                                                      status):
    judge = SimulatedJudge(refuse_json_schema=status)
    with ServerThread(judge) as srv:
        assert _run(demo_release_v1, srv.url, tmp_path) == 0
    lines = [m for m in caplog.messages if "judge endpoint" in m]
    assert lines == [f"judge endpoint {srv.url}: json_schema refused; JSON answers "
                     "(json_object)"]
    ident = json.loads((tmp_path / "store/identity.json").read_text())
    assert ident["prompts"]["response_format"] == "json_object"
    recs = read_records(tmp_path / "store")
    assert recs and all(r["status"] == "ok" for r in recs)
    # probe: one json_schema call refused, one json_object call; then one call per window
    assert judge.stats["requests"] == 2 + sum(r["attempts"] for r in recs)


def test_server_taking_json_schema_keeps_it(demo_release_v1, tmp_path, caplog):
    with ServerThread(SimulatedJudge()) as srv:
        assert _run(demo_release_v1, srv.url, tmp_path) == 0
    assert [m for m in caplog.messages if "judge endpoint" in m] == [
        f"judge endpoint {srv.url}: answers constrained by a JSON schema"]
    ident = json.loads((tmp_path / "store/identity.json").read_text())
    assert ident["prompts"]["response_format"] == "json_schema"


def test_500_with_message_is_shown_and_the_run_stops(demo_release_v1, tmp_path, capsys,
                                                     caplog):
    judge = SimulatedJudge(fail_status=500, fail_message="SIMULATED: model crashed (OOM)")
    started = time.monotonic()
    with ServerThread(judge) as srv:
        code = _run(demo_release_v1, srv.url, tmp_path)
    assert code == 1 and time.monotonic() - started < 30
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rcp-data judge: error: {srv.url}: the "
                                               "endpoint answered no probe call")
    assert "HTTP 500: SIMULATED: model crashed (OOM)" in err[0]
    assert not (tmp_path / "out/judge").exists()


def test_500_mid_run_stops_after_outage_wait(demo_release_v1, tmp_path, capsys, caplog):
    # the probe call is answered; then every call fails with a message
    judge = SimulatedJudge(fail_after=1, fail_status=500, fail_message="SIMULATED: gone")
    started = time.monotonic()
    with ServerThread(judge) as srv:
        code = _run(demo_release_v1, srv.url, tmp_path, "--outage-wait", "2",
                    "--concurrency", "2")
    assert code == 1 and time.monotonic() - started < 40
    assert [m for m in caplog.messages if "failed:" in m] == [
        f"judge endpoint {srv.url} failed: HTTP 500: SIMULATED: gone"]  # once
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("rcp-data judge: error:") and "SIMULATED: gone" in last


@pytest.mark.parametrize("retry_after", ["inf", "86400", "1e9",
                                         "Wed, 21 Oct 2099 07:28:00 GMT"])
def test_429_with_a_long_retry_after_ends_within_seconds(demo_release_v1, tmp_path, capsys,
                                                         retry_after):
    judge = SimulatedJudge(fail_after=1, fail_status=429, retry_after=retry_after,
                           fail_message="SIMULATED: slow down")
    started = time.monotonic()
    with ServerThread(judge) as srv:
        code = _run(demo_release_v1, srv.url, tmp_path, "--outage-wait", "5")
    assert code == 1 and time.monotonic() - started < 20
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "Retry-After" in last and "--outage-wait 5" in last


@pytest.mark.parametrize("flag,value", [
    ("--concurrency", "0"), ("--concurrency", "-3"), ("--attempts", "0"),
    ("--limit-queries", "0"), ("--max-calls", "0"), ("--retries", "-1"),
    ("--temperature", "nan"), ("--temperature", "inf"), ("--timeout", "inf"),
    ("--outage-wait", "nan"), ("--outage-wait", "0"), ("--max-output-tokens", "0"),
    ("--context-tokens", "-1"), ("--concurrency", "x")])
def test_each_bad_flag_exit_2_at_parse_time(demo_release_v1, tmp_path, capsys, flag, value):
    with pytest.raises(SystemExit) as exc:
        _run(demo_release_v1, "http://127.0.0.1:9/v1", tmp_path, flag, value)
    assert exc.value.code == 2
    err = [x for x in capsys.readouterr().err.splitlines() if "error:" in x]
    assert len(err) == 1 and f"argument {flag}" in err[0] and repr(value) in err[0]
    assert not (tmp_path / "store").exists()


def test_output_cap_too_small_for_an_answer_is_refused(demo_release_v1, tmp_path, capsys):
    judge = SimulatedJudge()
    with ServerThread(judge) as srv:
        code = _run(demo_release_v1, srv.url, tmp_path, "--max-output-tokens", "200")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and judge.stats["requests"] == 0
    # a Stage B answer of 10 passages x 5 criteria, indented: 863 characters, 432 tokens
    assert err[-1] == ("rcp-data judge: error: --max-output-tokens 200 cannot hold a Stage B "
                       "answer of a window of 10: give at least 432")
    assert not (tmp_path / "store").exists()
