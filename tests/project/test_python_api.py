"""The public Python API (``import rcp_data``): flat names, imported lazily; each call prints
nothing and returns a frozen result whose ``to_json()`` is the CLI's ``--json``; the errors are
also the matching built-ins; the README's example runs against a wheel install."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support.packaging import _env, _venv
from support.packaging import wheel as wheel  # noqa: F401 - the fixture (module scope)

import rcp_data
from rcp_data.cli import main

CHECKOUT = Path(__file__).resolve().parents[2]
SRC = str(CHECKOUT / "src")
ALPHA = "demo/alpha-reranker"


def _alpha_run(demo_data: Path) -> Path:
    return demo_data / "inputs" / "runs" / "demo__alpha-reranker.parquet"


def _cli_json(capture, *argv: str) -> dict:
    """What ``rcp-data ARGV --json`` prints, parsed (run in this process)."""
    capture.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capture.readouterr().out)


# -- the package face ------------------------------------------------------------------------
def test_import_is_cheap_and_every_public_name_resolves():
    code = ("import sys, rcp_data\n"
            "heavy = {'numpy', 'pandas', 'pyarrow', 'scipy', 'tqdm', 'huggingface_hub'}\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
            "missing = [n for n in rcp_data.__all__ if getattr(rcp_data, n, None) is None]\n"
            "print(missing)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": SRC})
    assert out.stdout.splitlines() == ["[]", "[]"]
    assert out.stderr == ""
    assert {"open_release", "replay", "score", "compare", "verify", "build", "publish",
            "InputError", "NotFoundError"} <= set(rcp_data.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        rcp_data.nothing_here  # noqa: B018


def test_errors_inherit_the_builtin_of_their_meaning():
    from rcp_data.core.hub_client import HubNotFound

    assert issubclass(rcp_data.InputError, ValueError)
    assert issubclass(rcp_data.SchemaError, ValueError)
    assert issubclass(rcp_data.UsageError, ValueError)
    assert issubclass(rcp_data.NotFoundError, FileNotFoundError)
    assert issubclass(HubNotFound, FileNotFoundError)
    assert issubclass(rcp_data.RefusedError, PermissionError)
    assert issubclass(rcp_data.VerificationFailed, AssertionError)
    exc = rcp_data.NotFoundError("file not found", path="x/y.json")
    assert (str(exc), exc.message, exc.exit_code, exc.errno) == (
        "x/y.json: file not found", "x/y.json: file not found", 2, None)
    assert rcp_data.RefusedError("no").exit_code == 1


def test_bars_only_when_asked():
    """A library call shows no bar, even with the toolkit's logging at INFO; ``progress=True``
    (:func:`bars`) asks for them; the CLI's :func:`show_bars` does, unless ``-q``."""
    code = ("import logging\n"
            "from rcp_data.core.progress import bars, bars_wanted, show_bars\n"
            "logging.basicConfig(level=logging.INFO)\n"
            "seen = [bars_wanted()]\n"
            "with bars(True):\n"
            "    seen.append(bars_wanted())\n"
            "seen.append(bars_wanted())\n"
            "show_bars(True)\n"
            "seen.append(bars_wanted())\n"
            "show_bars(False)\n"                                        # what -q does
            "seen.append(bars_wanted())\n"
            "print(seen)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": SRC})
    assert out.stdout.strip() == "[False, True, False, True, False]"


# -- calls: typed results, nothing printed -----------------------------------------------------
def test_replay_returns_the_cli_numbers_and_prints_nothing(demo_release_v1, capfd):
    expected = _cli_json(capfd, "replay", str(demo_release_v1))
    release = rcp_data.open_release(demo_release_v1)
    result = rcp_data.replay(release)
    assert capfd.readouterr() == ("", "")
    assert isinstance(result, rcp_data.ReplayResult)
    assert result.to_json() == expected
    assert result.tables["rcp_ndcg"].at[ALPHA, "mean"] == \
        expected["metrics"]["rcp_ndcg"][ALPHA]["mean"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.k = 5
    # a path works as well as an opened release
    assert rcp_data.replay(demo_release_v1, tie_rule="group-mean", k=5).to_json() == \
        _cli_json(capfd, "replay", str(demo_release_v1), "--tie-rule", "group-mean", "--k", "5")


def test_score_of_a_published_run_is_its_replayed_number(demo_data, demo_release_v1, capfd):
    capfd.readouterr()
    release = rcp_data.open_release(demo_release_v1)
    replayed = rcp_data.replay(release)
    result = rcp_data.score(release, {"mine": _alpha_run(demo_data)})
    assert capfd.readouterr() == ("", "")
    assert isinstance(result, rcp_data.ScoreResult)
    assert result.names == ["mine"]
    for metric in ("rcp_ndcg", "qrel_ndcg"):
        pd.testing.assert_series_equal(result.tables[metric].loc["mine"],
                                       replayed.tables[metric].loc[ALPHA], check_names=False)
    assert result.mean() == result.mean("mine") == pytest.approx(
        replayed.tables["rcp_ndcg"].at[ALPHA, "mean"], rel=1e-12)   # two code paths
    cov = result.coverage["mine"]
    assert isinstance(cov, rcp_data.RunCoverage)
    assert (cov.queries, cov.queries_scored, cov.queries_missing) == (24, 24, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cov.queries = 0


def test_score_json_and_text_are_the_clis(demo_data, demo_release_v1, capsys):
    run = str(_alpha_run(demo_data))
    argv = ["score", "--dataset", str(demo_release_v1), run, "--against", "Beta-RR"]
    expected = _cli_json(capsys, *argv)
    assert main(argv) == 0
    text = capsys.readouterr().out
    result = rcp_data.score(demo_release_v1, run, against=["Beta-RR"])
    assert capsys.readouterr() == ("", "")
    assert result.to_json() == expected
    assert result.text() == text
    assert set(expected["against"]["demo__alpha-reranker"]) == {"Beta-RR"}


def test_compare_a_replay_in_memory_with_the_clis_json(demo_release_v1, tmp_path, capfd):
    (tmp_path / "replay.json").write_text(
        json.dumps(_cli_json(capfd, "replay", str(demo_release_v1))), encoding="utf-8")
    result = rcp_data.compare(rcp_data.replay(demo_release_v1), tmp_path / "replay.json")
    assert capfd.readouterr() == ("", "")
    assert isinstance(result, rcp_data.Comparison)
    # 4 metrics (the demo ships the verdicts and BT scores Count and Raw-BT need) x 4 models
    # x (2 subsets + mean)
    assert result.ok and result.count("matched") == len(result.rows) == 4 * 4 * 3
    assert result.to_json()["failed"] == 0


def test_verify_returns_the_report_and_prints_nothing(demo_release_v1, capfd):
    capfd.readouterr()
    report = rcp_data.verify(rcp_data.open_release(demo_release_v1))
    assert capfd.readouterr() == ("", "")
    assert isinstance(report, rcp_data.VerifyReport)
    assert report.target == str(demo_release_v1)
    assert report.suite == "demo"
    # the session's demo release is not prepared: the three files prepare adds are missing
    assert {c.name for c in report.failed} == {"releases-json", "task-file", "card"}
    assert (report.ok, report.exit_code, report.to_json()["ok"]) == (False, 1, False)


def test_missing_things_are_file_not_found(demo_release_v1, tmp_path, capfd):
    capfd.readouterr()
    with pytest.raises(FileNotFoundError, match="release directory not found"):
        rcp_data.replay(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="run not found"):
        rcp_data.score(demo_release_v1, tmp_path / "no-run.trec")
    with pytest.raises(FileNotFoundError, match="release directory not found"):
        rcp_data.publish(tmp_path / "nowhere", "owner/name")
    with pytest.raises(ValueError, match="unknown tie rule"):
        rcp_data.replay(demo_release_v1, tie_rule="coin-flip")
    assert capfd.readouterr() == ("", "")


def test_build_makes_the_demo_release_quietly(demo_data, tmp_path, capfd):
    pytest.importorskip("rcp_data.release.cut")
    capfd.readouterr()
    result = rcp_data.build("demo", demo_data / "inputs", tmp_path / "out", prepare=False)
    assert capfd.readouterr() == ("", "")
    assert isinstance(result, rcp_data.BuildResult)
    assert result.out == tmp_path / "out" and result.suite == "demo"
    assert rcp_data.replay(result.out).to_json() == rcp_data.replay(demo_data / "release").to_json()


# -- the README's example, against a wheel install ---------------------------------------------
def readme_example() -> tuple[str, str]:
    """The first ```python block after the README's "Python API" heading, and the ```text
    block after it (its output)."""
    text = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    section = re.split(r"^## Python API\s*$", text, maxsplit=1, flags=re.M)[1]
    code = re.search(r"^```python\n(.*?)^```$", section, flags=re.M | re.S)
    shown = re.search(r"^```text\n(.*?)^```$", section[code.end():], flags=re.M | re.S)
    return code.group(1), shown.group(1)


@pytest.mark.slow
def test_the_readme_example_runs_against_a_wheel_install(tmp_path, wheel, demo_data):  # noqa: F811
    """The example, run by a core install of the wheel (a fresh venv) with ``python -I`` from
    an unrelated folder holding ``demo-out/`` as ``rcp-data demo --out demo-out``
    leaves it, prints
    exactly the output the README shows, and nothing on stderr."""
    code, shown = readme_example()
    python = _venv(tmp_path / "venv", wheel, core_only=True).parent / "python"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "demo-out").mkdir(parents=True)
    (elsewhere / "demo-out" / "release-v1").symlink_to(demo_data / "release")
    (elsewhere / "demo-out" / "inputs").symlink_to(demo_data / "inputs")
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run([str(python), "-I", str(script)], cwd=elsewhere, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == shown
    where = subprocess.run([str(python), "-I", "-c", "import rcp_data; print(rcp_data.__file__)"],
                           cwd=elsewhere, env=_env(), capture_output=True, text=True, check=True)
    assert str(tmp_path / "venv") in where.stdout and SRC not in where.stdout

