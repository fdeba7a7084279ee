"""The local Hub as a separate process (``rcp-data hub serve``), for tests that kill it or
measure its memory. Loopback only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path


class HubProcess:
    """``rcp-data hub serve --root ROOT`` in its own process group; ``url`` once it is ready.

    The server's stderr (its log) is collected in ``log_lines``."""

    def __init__(self, root: Path, *extra: str) -> None:
        self.root = Path(root)
        self.extra = extra
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.log_lines: list[str] = []

    def start(self, timeout: float = 60) -> str:
        extra = list(self.extra)
        if "--token-file" not in extra and "HF_TOKEN" in os.environ:
            # the token the tests' clients send (HF_TOKEN), handed over as a user would
            token_file = self.root.parent / f"{self.root.name}.token"
            token_file.write_text(os.environ["HF_TOKEN"] + "\n")
            token_file.chmod(0o600)
            extra += ["--token-file", str(token_file)]
        cmd = [sys.executable, "-m", "rcp_data.cli", "hub", "serve", "--root", str(self.root),
               *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True, env=dict(os.environ))
        threading.Thread(target=self._collect, daemon=True).start()
        ready = threading.Event()
        line: list[str] = []

        def read_first() -> None:
            line.append(self.proc.stdout.readline())
            ready.set()

        threading.Thread(target=read_first, daemon=True).start()
        if not ready.wait(timeout) or "http://" not in line[0]:
            self.kill()
            raise RuntimeError(f"the hub did not start: {line} {self.log_lines[-5:]}")
        self.url = line[0].split()[-1]
        return self.url

    def _collect(self) -> None:
        for line in self.proc.stderr:
            self.log_lines.append(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def status_kib(self, field: str) -> int:
        """A ``/proc/<pid>/status`` field in KiB (``VmHWM``: peak resident set, ``VmRSS``)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
        raise KeyError(field)

    def reset_peak(self) -> bool:
        """Reset ``VmHWM`` to the current RSS (Linux ``clear_refs`` 5); False if refused."""
        try:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        except OSError:
            return False
        return True

    def kill(self) -> None:
        """SIGKILL the whole process group (the server and any git it is running)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> int:
        """SIGTERM and wait; the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def __enter__(self) -> HubProcess:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
