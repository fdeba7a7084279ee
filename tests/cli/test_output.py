"""Quiet, conventional output: no progress-bar frames in pipes, ``-q`` prints only errors,
results on stdout (JSON only with ``--json``), messages that name the flag to pass, numbers
printed as numbers, exit codes in ``--help``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rcp_data.core.errors import InputError, shown

SRC = Path(__file__).resolve().parents[2] / "src"
BAR_FRAME = re.compile(r"\r|\d+%\||it/s\]|s/it\]")


def _run(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "rcp_data", *argv], capture_output=True,
                          text=True, env=env, timeout=300)


def _build(demo_data: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    return _run(*flags, "build", "demo", "--inputs", str(demo_data / "inputs"), "--out",
                str(out), "--date", "2026-11-30")


def test_build_into_a_pipe_shows_no_progress_bars(demo_data, tmp_path):
    """Off a terminal a build that goes well prints nothing: no bars, no INFO (WARNING is the
    default level), no status line (those are for a terminal), no JSON without --json."""
    proc = _build(demo_data, tmp_path / "release")
    assert proc.returncode == 0, proc.stderr
    assert not BAR_FRAME.search(proc.stdout + proc.stderr)
    assert proc.stdout == "" and proc.stderr == ""
    verbose = _run("-v", "build", "demo", "--inputs", str(demo_data / "inputs"), "--out",
                   str(tmp_path / "release"), "--date", "2026-11-30", "--force")
    assert verbose.returncode == 0, verbose.stderr
    assert "INFO rcp_data" in verbose.stderr          # -v: the logs, on stderr
    assert verbose.stdout == ""
    # no log line names the temporary folder the release was written in (gone by now)
    assert not re.search(r"\.tmp-\d+-[0-9a-f]{8}", verbose.stderr), verbose.stderr
    assert f"wrote {tmp_path / 'release' / 'README.md'} (" in verbose.stderr


def test_quiet_prints_only_errors(demo_data, tmp_path):
    proc = _build(demo_data, tmp_path / "release", "-q")
    assert proc.returncode == 0
    assert proc.stdout == "" and proc.stderr == ""
    bad = _run("-q", "build", "demo", "--inputs", str(tmp_path / "missing"), "--out",
               str(tmp_path / "x"))
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("rcp-data build: error:")


def test_build_json_is_the_only_stdout(demo_data, tmp_path):
    proc = _run("build", "demo", "--inputs", str(demo_data / "inputs"), "--out",
                str(tmp_path / "release2"), "--json", "--date", "2026-11-30")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    result = json.loads(line)
    assert result["suite"] == "demo" and result["synthetic"] is True
    assert result["release"] == 1 and result["queries"] == 24


def test_build_needs_repo_outside_the_demo(tmp_path):
    from rcp_data import cli

    rc = cli.main(["build", "nanobeir", "--inputs", str(tmp_path), "--out",
                   str(tmp_path / "out")])
    assert rc == 2
    proc = _run("build", "nanobeir", "--inputs", str(tmp_path), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "--repo" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_help_documents_exit_codes():
    proc = _run("--help")
    assert proc.returncode == 0
    for code in ("0 ", "1 ", "2 ", "130"):
        assert re.search(rf"^\s+{code}", proc.stdout, re.M), code
    assert "stdout" in proc.stdout and "stderr" in proc.stdout


def test_messages_name_the_flag_not_internals():
    from rcp_data.model.history import History, ReleaseRecord, add_release

    r = ReleaseRecord(release=1, tag="v1-org-judge", revision=None, data_revision=None,
                judge={"model": "org/judge"},
                calibration={"method": "2pl-irt", "item_params": "p.json",
                             "link": "weighted_discrimination"}, status="current")
    with pytest.raises(InputError) as exc:
        add_release(History(repo="o/n", releases=(r,)), judge=r.judge,
                    calibration=r.calibration)
    assert "--previous-revision" in exc.value.message
    assert "fill_known_shas" not in exc.value.message
    assert "previous_revision" not in exc.value.message


def test_numbers_show_as_numbers():
    assert shown(np.float64(1.1672)) == "1.1672"
    assert shown(np.int8(2)) == "2"
    assert shown("a") == "'a'"
    import pandas as pd

    from rcp_data.scoring.replay import build_subset_runs

    qrels = pd.DataFrame({"query-id": ["q"], "corpus-id": ["d"], "score": [1],
                          "gain": [-0.5]})
    top = pd.DataFrame({"query-id": ["q"], "corpus-ids": [["d"]]})
    runs = pd.DataFrame({"model": ["m"], "is_judge": [False], "query-id": ["q"],
                         "corpus-id": ["d"], "score": [1.0]})
    with pytest.raises(InputError) as exc:
        build_subset_runs("s", qrels, top, runs)
    assert "negative gain -0.5" in exc.value.message and "np." not in exc.value.message


def test_quiet_hides_the_status_lines_of_every_writing_command(demo_data, tmp_path):
    """``wrote ...``-style lines of card, text and release are status, not results: they show
    on a terminal (stderr), never in a pipe, and ``-q`` hides them on a terminal too."""
    from support.terminal import run_on_terminal, run_piped

    release = tmp_path / "release"
    assert _build(demo_data, release, "-q").returncode == 0
    tsv = tmp_path / "in.tsv"
    tsv.write_text("1\tcaf\u00c3\u00a9 au lait\n2\tplain\n", encoding="utf-8")
    commands = [
        ("card", "render", str(release)),
        ("text", "repair", "--input", str(tsv), "--output", str(tmp_path / "out.tsv"),
         "--force"),
        ("release", "render-md", "--out", str(tmp_path / "RELEASES.md")),
    ]
    for argv in commands:
        piped = run_piped(*argv)
        assert piped.returncode == 0, (argv, piped.stderr)
        assert piped.stdout == "" and piped.stderr == "", (argv, piped.stdout, piped.stderr)
        code, shown = run_on_terminal(*argv)
        assert code == 0, (argv, shown)
        # what stays on the screen: each line's last carriage-return segment (a progress
        # bar, e.g. the manifest's hashing, is drawn and erased before the status line)
        lines = [line.split("\r")[-1] for line in shown.split("\r\n")[:-1]]
        assert shown.endswith("\r\n") and len(lines) == 1, (argv, shown)   # one status line
        assert lines[0].startswith(("wrote", "repaired")), (argv, shown)
        code, shown = run_on_terminal("-q", *argv)
        assert code == 0 and shown == "", (argv, shown)
