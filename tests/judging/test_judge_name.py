"""``rcp-data judge run --judge-name`` (issue 38): a served model id that is a file path or no
Hub id is refused (exit 2) before any call unless the judge is named; the name makes the tag,
the served id stays in the provenance. Against the SIMULATED server serving a path-like id."""

from __future__ import annotations

import json

import pytest

from rcp_data.cli.main import main
from rcp_data.core.errors import UsageError
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge
from rcp_data.model.judge_name import check_judge_name, judge_name, served_id_problem

SERVED = "/tmp/models/SIMULATED-judge-135m-instruct.q4_1.gguf"  # as llama.cpp's server names it
NAME = "simulated-135m-q4"


@pytest.mark.parametrize(("model", "problem"), [
    (SERVED, "looks like a file path"),
    ("./models/judge", "looks like a file path"),
    ("~/judge", "looks like a file path"),
    ("org/team/judge", "looks like a file path"),
    ("smollm2-135m-instruct.q4_1.gguf", "names a weights file"),
    ("org/model.safetensors", "names a weights file"),
    ("qwen3.5-397b", "is not a Hub model id (OWNER/NAME)"),
    ("org/bad name", "is not a Hub model id (OWNER/NAME)"),
    ("org/a--b", "is not a Hub model id (OWNER/NAME)"),
    ("nvidia/Qwen3.5-397B-A17B-NVFP4", None),
    (MODEL, None),
])
def test_served_ids(model, problem):
    assert served_id_problem(model) == problem


@pytest.mark.parametrize("name", ["Upper", "two words", "a..b", "-x", "x.", "a/b", "x.lock",
                                  "v1-é", "", "x" * 65])
def test_invalid_names_are_refused(name):
    with pytest.raises(UsageError, match="cannot be part of a release tag"):
        check_judge_name(name)


def test_names_kept():
    assert check_judge_name(NAME) == NAME and check_judge_name("x" * 64) == "x" * 64
    assert judge_name(MODEL, None) == MODEL          # a Hub id names itself
    assert judge_name(SERVED, NAME) == NAME
    with pytest.raises(UsageError, match="Pass --judge-name NAME"):
        judge_name(SERVED, None)


@pytest.fixture(scope="module")
def server():
    with ServerThread(SimulatedJudge(model=SERVED)) as srv:
        yield srv


def _run(pool, server, tmp_path, *extra):
    return main(["-q", "judge", "run", "--pool", str(pool), "--store", str(tmp_path / "store"),
                 "--out", str(tmp_path / "out"), "--endpoint", server.url, "--model", SERVED,
                 "--limit-queries", "2", "--no-progress", "--context-tokens", "4096", *extra])


@pytest.mark.parametrize("extra", [(), ("--judge-name", "Not A Tag")])
def test_path_like_id_without_a_valid_name_is_refused(demo_release_v1, server, tmp_path,
                                                      capsys, extra):
    before = server.judge.stats["requests"]
    capsys.readouterr()
    assert _run(demo_release_v1, server, tmp_path, *extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ("--judge-name" in err) and (SERVED in err if not extra else "'Not A Tag'" in err)
    assert server.judge.stats["requests"] == before       # no call was made
    assert not (tmp_path / "store").exists() and not (tmp_path / "out").exists()


def test_named_judge_to_a_published_release(demo_data, server, tmp_path, capsys, hub_repo):
    """The whole chain: the tag is v1-NAME, releases.json and judge.json name the judge NAME
    and keep the served id; the store's identity is the served id."""
    from support.judge_pipeline import judged_release

    r = judged_release(demo_data, tmp_path, capsys, endpoint=server.url, model=SERVED,
                       repo=hub_repo, run_args=("--context-tokens", "4096", "--judge-name",
                                                NAME))
    assert r["built"]["tag"] == f"v1-{NAME}"
    info = json.loads((r["judge"] / "judge.json").read_text())
    assert (info["model"], info["served_model"], info["synthetic"]) == (NAME, SERVED, True)
    rec = json.loads((r["judge"] / "judging.json").read_text())
    assert rec["identity"]["judge"]["model"] == SERVED
    history = json.loads((r["release"] / "provenance/releases.json").read_text())
    entry = history["releases"][-1]
    assert (entry["tag"], entry["judge"]["model"], entry["judge"]["served_model"]) == (
        f"v1-{NAME}", NAME, SERVED)
