"""Run ``rcp-data`` as a user at a terminal would: under a pseudo-terminal (stdout and stderr a
tty of 120 columns), or piped; and interrupt it as Ctrl-C does (SIGINT)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import rcp_data

SRC = str(Path(rcp_data.__file__).resolve().parents[1])
# a tqdm frame: carriage return, a percentage bar or a rate
BAR_FRAME = re.compile(r"\r(?!\n)|\d+%\||it/s\]|s/it\]|B/s\]")


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a ``rcp-data`` subprocess: this tree's sources first; none of the
    variables the CLI itself sets to silence libraries (so a test sees what the CLI decides)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS",
                        "HF_DATASETS_DISABLE_PROGRESS_BARS", "HF_HUB_VERBOSITY",
                        "DATASETS_VERBOSITY", "TRANSFORMERS_VERBOSITY")}
    env["PYTHONPATH"] = SRC
    env.update(extra)
    return env


def run_piped(*argv: str, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    """``rcp-data argv`` with stdout and stderr pipes (off a terminal)."""
    return subprocess.run([sys.executable, "-m", "rcp_data", *argv], capture_output=True,
                          text=True, env=cli_env(**env), timeout=timeout,
                          stdin=subprocess.DEVNULL)


def run_on_terminal(*argv: str, timeout: float = 600, **env: str) -> tuple[int, str]:
    """``rcp-data argv`` with stdout and stderr on one pseudo-terminal; the exit code and all
    it wrote (carriage returns kept, line ends as the terminal gives them: ``\\r\\n``)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "rcp_data", *argv], stdin=slave,
                            stdout=slave, stderr=slave, env=cli_env(TERM="xterm", **env),
                            close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:          # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
    finally:
        os.close(master)
    code = proc.wait(timeout=60)
    return code, b"".join(chunks).decode("utf-8", "replace")


def interrupt_after(argv: list[str], ready: str, *, timeout: float = 300,
                    grace: float = 0.0) -> subprocess.CompletedProcess:
    """Start ``rcp-data argv`` piped, wait until ``ready`` shows on its stdout or stderr (or
    ``grace`` seconds when ``ready`` is empty), send SIGINT (Ctrl-C), and collect it."""
    proc = subprocess.Popen([sys.executable, "-m", "rcp_data", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=cli_env(PYTHONUNBUFFERED="1"),
                            stdin=subprocess.DEVNULL)
    seen = {proc.stdout: b"", proc.stderr: b""}
    deadline = time.monotonic() + timeout
    while ready and not any(ready.encode() in v for v in seen.values()) \
            and time.monotonic() < deadline and proc.poll() is None:
        readable, _, _ = select.select(list(seen), [], [], 0.5)
        for stream in readable:
            seen[stream] += os.read(stream.fileno(), 65536)
    if grace:
        time.sleep(grace)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       (seen[proc.stdout] + out).decode(),
                                       (seen[proc.stderr] + err).decode())


__all__ = ["BAR_FRAME", "SRC", "cli_env", "interrupt_after", "run_on_terminal", "run_piped"]
