"""The README's "Cut a new judge release" commands, run exactly as written: the SIMULATED judge
started as the README starts it, then ``release cut`` on the demo's builder inputs (those of
``make demo``), in a fresh folder. What it prints ends with the README's ```text block."""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from rcp_data.cli.main import main

CHECKOUT = Path(__file__).resolve().parents[2]


def _section() -> tuple[list[str], list[str]]:
    """The commands (continuation lines joined) and the shown output of the README's job."""
    text = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    part = text[text.index("**Cut a new judge release.**"):]
    bash = re.search(r"```bash\n(.*?)```", part, re.S).group(1)
    shown = re.search(r"```text\n(.*?)```", part, re.S).group(1)
    return bash.replace("\\\n", " ").splitlines(), shown.splitlines()


def _wait_for(port: int, proc: subprocess.Popen, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stderr.read()
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"the SIMULATED judge did not listen on port {port}")


def test_the_readme_cut_runs_as_written(demo_data, tmp_path, monkeypatch, capsys):
    commands, shown = _section()
    assert len(commands) == 2 and commands[0].endswith("&")
    monkeypatch.chdir(tmp_path)
    shutil.copytree(demo_data / "inputs", tmp_path / "demo-out" / "inputs")  # as make demo
    serve = shlex.split(commands[0].rstrip("&"))
    assert serve[0] == "python"
    port = int(serve[serve.index("--port") + 1])
    proc = subprocess.Popen([sys.executable, *serve[1:]], stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(port, proc)
        argv = shlex.split(commands[1])
        assert argv[0] == "rcp-data"
        capsys.readouterr()
        code = main(argv[1:])
        out = capsys.readouterr()
        assert code == 0, out.err[-2000:]
    finally:
        proc.terminate()
        proc.wait(10)
    assert out.out.splitlines()[-len(shown):] == shown
    release = tmp_path / "cut" / "release"
    assert (release / "provenance/build_manifest.json").is_file()
    assert shown[-1] == "rcp-data release publish cut/release --repo me/demo-judged"
