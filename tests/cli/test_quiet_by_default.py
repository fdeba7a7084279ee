"""What a user sees (issue 30, items 5, 6, 8): quiet by default, results on stdout, status
lines and progress bars on a terminal only, the libraries as quiet as the toolkit, Ctrl-C
exits 130 everywhere, a wrong ``--repo`` is bad input (exit 2)."""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from support.release_dirs import make_release_dir
from support.terminal import BAR_FRAME, cli_env, interrupt_after, run_on_terminal, run_piped

DATE = "2026-11-30"
TEMPORARY = re.compile(r"\.tmp-\d+-[0-9a-f]{8}")


@pytest.mark.slow
def test_a_warm_demo_prints_at_most_40_lines(tmp_path):
    """`make demo` (``rcp-data demo --out demo-out --force``) off a terminal: its results only
    (the release listing, each verification in brief with the reason of what is absent), no
    log or status line, no temporary path; it printed 335 lines before."""
    proc = run_piped("demo", "--out", str(tmp_path / "demo-out"), "--force")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len(lines) <= 40, "\n".join(lines)
    assert proc.stderr == ""
    assert proc.stdout.count("VERIFIED (SYNTHETIC data)") == 2
    # each check that is not ok says why on its line
    assert proc.stdout.count("[skipped] paper-tables — a SYNTHETIC suite has no paper "
                             "numbers") == 2
    assert proc.stdout.count("  anchor   ") == 2
    assert "tags and releases.json agree" in proc.stdout
    assert not TEMPORARY.search(proc.stdout)
    assert f"full reports: {tmp_path / 'demo-out'}/verify-*.txt" in proc.stdout


def _run_file(release, path):
    """One model's run of the release's provenance-runs, as a parquet run file."""
    from rcp_data.core.specs import load_spec
    from rcp_data.model.release import Release

    spec = load_spec("demo")
    rd = Release(release, spec)
    runs = pd.concat([rd.provenance("runs", s) for s in spec.provenance_splits],
                     ignore_index=True)
    model = sorted(runs.loc[~runs["is_judge"], "model"].unique())[0]
    runs.loc[runs["model"] == model, ["query-id", "corpus-id", "score"]].to_parquet(path)
    return path


@pytest.mark.slow
def test_quiet_prints_nothing_but_results(demo_data, tmp_path, local_hub, hub_repo):
    """``-q`` on every kind of command, end to end on the demo release: stderr stays empty
    and stdout holds only the command's results (none for a command that only writes)."""
    inputs, release = demo_data / "inputs", tmp_path / "release"
    build = run_piped("-q", "build", "demo", "--inputs", str(inputs), "--out", str(release),
                      "--date", DATE, "--repo", hub_repo)
    assert (build.returncode, build.stdout, build.stderr) == (0, "", "")
    run = _run_file(release, tmp_path / "run.parquet")
    commands = {
        "calibrate": ["calibrate", "--criteria", str(inputs / "judge/criteria.parquet"),
                      "--tournament", str(inputs / "judge/tournament.parquet"), "--out",
                      str(tmp_path / "fit")],
        "replay": ["replay", str(release)],
        "score": ["score", "--dataset", str(release), str(run)],
        "verify": ["verify", str(release)],
        "card render": ["card", "render", str(release), "--out", str(tmp_path / "card.md")],
        "release check": ["release", "check", str(release)],
        "release publish": ["release", "publish", str(release), "--repo", hub_repo,
                            "--create-repo"],
        "release list": ["release", "list", "--repo", hub_repo],
    }
    results = {}
    for name, argv in commands.items():
        proc = run_piped(*argv, "-q")
        assert proc.returncode == 0, (name, proc.stderr)
        assert proc.stderr == "", (name, proc.stderr)
        assert not BAR_FRAME.search(proc.stdout) and not TEMPORARY.search(proc.stdout), name
        results[name] = proc.stdout
    assert results["card render"] == ""                             # it only writes
    assert results["calibrate"].startswith("Stage A (") and "\nECE " in results["calibrate"]
    assert "RCP-nDCG" in results["replay"] and "RCP-nDCG" in results["score"]
    assert results["verify"].rstrip().endswith("VERIFIED (SYNTHETIC data)")
    assert results["release check"].startswith(f"{release}: release check passed")
    published, digest = results["release publish"].splitlines()      # the commit made
    assert digest.startswith("release digest ")
    sha = published.rsplit(" ", 1)[-1]
    assert published == f"{hub_repo}: published release 1 as v1-rcp-data-synthetic-judge-7b " \
                        f"at {sha}" and re.fullmatch(r"[0-9a-f]{40}", sha)
    assert sha in results["release list"]


def test_library_loggers_and_bars_follow_the_cli(tmp_path):
    """ir_datasets (its own INFO logger and handler, its ``docs_iter`` bars), huggingface_hub,
    datasets, transformers, sentence-transformers and plain tqdm inside a library print nothing
    into a pipe under ``-q``; without ``-q`` only their warnings show."""
    script = textwrap.dedent("""
        import argparse, logging, sys
        from rcp_data.cli.output import configure
        configure(argparse.Namespace(quiet=sys.argv[1] == "-q", verbose=False))
        import ir_datasets
        irds = ir_datasets.log.easy()
        irds.info("[INFO] from ir_datasets")
        list(irds.pbar(range(3), desc="docs_iter"))
        from tqdm import tqdm
        list(tqdm(range(3), desc="a library's bar"))
        from huggingface_hub.utils import tqdm as hf_tqdm
        list(hf_tqdm(range(3), desc="hub bar"))
        for name in ("huggingface_hub.file_download", "datasets.builder",
                     "transformers.modeling_utils", "sentence_transformers.SentenceTransformer",
                     "torch._subclasses.fake_tensor", "httpx"):
            logging.getLogger(name).info("info of %s", name)
        logging.getLogger("sentence_transformers.x").warning("a warning of a library")
        irds.warn("a warning of ir_datasets")
    """)
    for flag in ("-q", ""):
        proc = subprocess.run([sys.executable, "-c", script, flag], capture_output=True,
                              text=True, env=cli_env(), timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""
        if flag == "-q":
            assert proc.stderr == "", proc.stderr
        else:
            assert proc.stderr.splitlines() == [
                "WARNING sentence_transformers.x: a warning of a library",
                "[WARNING] a warning of ir_datasets"], proc.stderr


def test_bars_show_only_on_a_terminal(tmp_path, monkeypatch):
    """The decision: asked for (the CLI, not ``-q``) and stderr a terminal."""
    from rcp_data.core import progress

    master, slave = os.openpty()
    terminal = open(slave, "w")  # noqa: SIM115 - closed below
    try:
        for on, stream, shown in [(True, terminal, True), (True, io.StringIO(), False),
                                  (False, terminal, False)]:
            monkeypatch.setattr(sys, "stderr", stream)
            progress.show_bars(on)
            assert progress.bars_shown() is shown
            bar = progress.progress(range(3), desc="x")
            assert bar.disable is (not shown)
            bar.close()
    finally:
        progress.show_bars(False)
        terminal.close()
        os.close(master)


def test_verify_and_calibrate_show_bars_on_a_terminal_and_never_in_a_pipe(demo_data, tmp_path):
    release = make_release_dir(tmp_path / "release", "rcp-test/bars")
    code, shown = run_on_terminal("verify", str(release))
    assert code == 0, shown[-2000:]
    assert re.search(r"hashing \d+ files: +\d+%\|", shown), shown[-2000:]
    piped = run_piped("verify", str(release))
    assert piped.returncode == 0 and not BAR_FRAME.search(piped.stdout + piped.stderr)
    inputs = demo_data / "inputs"
    argv = ["calibrate", "--criteria", str(inputs / "judge/criteria.parquet"), "--thetas",
            str(inputs / "judge/thetas.parquet"), "--out"]
    code, shown = run_on_terminal(*argv, str(tmp_path / "fit1"))
    assert code == 0, shown[-2000:]
    assert re.search(r"calibration fit \(L-BFGS\): +\d+%\|", shown), shown[-2000:]
    assert f"wrote {tmp_path / 'fit1'}\r\n" in shown                 # its status line
    piped = run_piped(*argv, str(tmp_path / "fit2"))
    assert piped.returncode == 0 and not BAR_FRAME.search(piped.stdout + piped.stderr)
    assert piped.stderr == "" and "wrote" not in piped.stdout
    code, shown = run_on_terminal("-q", *argv, str(tmp_path / "fit3"))
    assert code == 0 and not BAR_FRAME.search(shown) and "wrote" not in shown


def test_ctrl_c_exits_130_for_a_long_command_and_for_hub_serve(demo_data, tmp_path):
    """SIGINT, as Ctrl-C sends it: exit 130 and one line, no traceback, no library's exit-time
    statistics (torch's FakeTensor cache stats); ``hub serve`` said 0 before."""
    release = make_release_dir(tmp_path / "release", "rcp-test/interrupt")
    proc = interrupt_after(["-v", "verify", str(release)], "rcp_data.checks.integrity")
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert proc.stderr.rstrip().endswith("rcp-data verify: interrupted")
    assert "Traceback" not in proc.stderr and "FakeTensor" not in proc.stderr
    proc = interrupt_after(["hub", "serve", "--root", str(tmp_path / "hub")], "http://")
    assert proc.returncode == 130, proc.stderr
    assert proc.stdout.startswith(f"local Hub serving {tmp_path / 'hub'} at http://127.0.0.1:")
    assert "interrupted" in proc.stderr and "Traceback" not in proc.stderr


def test_publishing_to_another_repo_is_bad_input(tmp_path, local_hub, hub_repo):
    """A release built for one repo, published with --repo naming another: exit 2 (was 1),
    one line naming both, nothing uploaded."""
    from huggingface_hub import HfApi

    release = make_release_dir(tmp_path / "release", hub_repo)
    proc = run_piped("release", "publish", str(release), "--repo", f"{hub_repo}-other",
                     "--create-repo")
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("rcp-data release: error: --repo ")
    assert f"{hub_repo}-other" in line and f"--repo {hub_repo}" in line
    api = HfApi(endpoint=local_hub.url)
    assert not api.repo_exists(f"{hub_repo}-other", repo_type="dataset")


def test_status_lines_say_each_step_once_on_a_terminal(demo_data, tmp_path):
    """On a terminal a build says one short line per step (no INFO, no line twice, no
    temporary)."""
    code, shown = run_on_terminal("build", "demo", "--inputs", str(demo_data / "inputs"),
                                  "--out", str(tmp_path / "release"), "--date", DATE)
    assert code == 0, shown
    lines = _screen(shown)
    assert [line.split(" ")[0] for line in lines] == ["built", "prepared"], lines
    assert len(set(lines)) == len(lines) and not TEMPORARY.search(shown)
    assert "INFO" not in shown
    # -v: the log says each step, once (no status line repeats it)
    code, shown = run_on_terminal("-v", "build", "demo", "--inputs", str(demo_data / "inputs"),
                                  "--out", str(tmp_path / "release"), "--date", DATE, "--force")
    assert code == 0, shown[-3000:]
    lines = _screen(shown)
    assert any(line.startswith("INFO rcp_data.building.build: built demo release") for line in lines)
    assert not any(line.startswith(("built ", "prepared ")) for line in lines)
    twice = {line for line in lines if lines.count(line) > 1}
    assert not twice, twice
    assert not TEMPORARY.search(shown)


def _screen(shown: str) -> list[str]:
    """What stays on the screen: each line as its last carriage return left it (a finished bar
    is cleared)."""
    screen = (line.split("\r")[-1].strip() for line in shown.replace("\r\n", "\n").split("\n"))
    return [line for line in screen if line]


def test_publish_shows_its_hashing_and_upload_bars_on_a_terminal(tmp_path, local_hub, hub_repo):
    release = make_release_dir(tmp_path / "release", hub_repo)
    code, shown = run_on_terminal("release", "publish", str(release), "--repo", hub_repo,
                                  "--create-repo")
    assert code == 0, shown[-3000:]
    assert re.search(r"hashing \d+ files: +\d+%\|", shown), shown[-3000:]
    assert re.search(r"Upload \d+ LFS files: +\d+%\|", shown), shown[-3000:]
    assert f"{hub_repo}: published release 1 as " in shown


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"quiet": False, "verbose": False, **kw})


def test_log_levels():
    import logging

    from rcp_data.cli.output import log_level

    assert log_level(_args()) == logging.WARNING
    assert log_level(_args(quiet=True)) == logging.ERROR
    assert log_level(_args(verbose=True)) == logging.DEBUG
