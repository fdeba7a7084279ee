"""The command's output conventions, in one place.

- Results go to stdout: tables, reports, and JSON (only with ``--json``, and then nothing else).
- A command's status lines ("built ...", "wrote ...") go to stdout too, and ``-q`` hides them.
- Logs go to stderr: INFO by default, DEBUG with ``-v``, errors only with ``-q``.
- Progress bars (ours, the Hugging Face libraries') only on a terminal and never with ``-q``
  (see :mod:`rcp_data.core.progress`).

Exit codes: 0 done (verified), 1 a check failed or an operation was refused, 2 the command could
not run (bad usage or input, a missing extra, the Hub unreachable), 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

EXIT_CODES = """exit codes:
  0    it ran, and every check it made passed
  1    a check failed, or an operation was refused on purpose (e.g. the Hub branch moved
       since the publish was planned, a tag exists elsewhere, a release fails verification)
  2    it could not run: bad input or usage (each named by file, row and field where it has
       them), an output that would overwrite user data, a file or the Hub unreachable
  130  interrupted (Ctrl-C)
Errors are one line on stderr ('rcp-data COMMAND: error: ...'); -v adds the traceback. A
closed stdout (e.g. '| head') ends the output quietly; the code is the command's own."""
NOISY_LOGGERS = ("httpx", "httpcore", "urllib3", "filelock", "fsspec")


def configure(args: argparse.Namespace) -> None:
    """Logging to stderr at the level ``-v``/``-q`` ask for; progress bars only where they
    belong (a terminal, not ``-q``)."""
    verbose, quiet = getattr(args, "verbose", False), getattr(args, "quiet", False)
    level = logging.DEBUG if verbose else logging.ERROR if quiet else logging.INFO
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    if not verbose:  # the HTTP clients log every request at INFO
        for noisy in NOISY_LOGGERS:
            logging.getLogger(noisy).setLevel(logging.WARNING if not quiet else logging.ERROR)
    from rcp_data.core.progress import show_bars

    show_bars(not quiet)      # library calls show none; the CLI's do, on a terminal
    if quiet or not sys.stderr.isatty():
        _silence_library_bars()


def _silence_library_bars() -> None:
    """huggingface_hub's and datasets' bars print into pipes and logs: turn them off. A library
    not imported yet is told by its environment variable, which it reads when it is imported
    (importing it here would cost every command its import time, used or not); one the user
    set is left as it is."""
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    else:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    else:
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def say(args: argparse.Namespace, text: str) -> None:
    """A status line on stdout, unless ``-q`` (or ``--json``: then stdout is the JSON only)."""
    if not getattr(args, "quiet", False) and not getattr(args, "json", False):
        print(text)


__all__ = ["EXIT_CODES", "configure", "say"]
