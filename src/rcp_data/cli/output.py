"""The command's output conventions, in one place.

- Results go to stdout: tables, reports, the commit a publish made, and JSON (only with
  ``--json``, and then nothing else). ``-q`` never hides a result.
- Status lines ("built ...", "published ..."): one short line per step, on stderr, and only
  when stderr is a terminal; ``-q`` hides them, and so does ``-v``, whose INFO log says each
  step (:func:`say`).
- Logs go to stderr: WARNING by default, DEBUG with ``-v``, errors only with ``-q``. The
  libraries the toolkit calls (ir_datasets, huggingface_hub, datasets, transformers,
  sentence-transformers, torch, the HTTP clients) log at that level too.
- Progress bars (ours, the libraries') only when stderr is a terminal and never with ``-q``
  (see :mod:`rcp_data.core.progress`).
- No message names a temporary folder of an atomic write (gone after the command): each is
  named as the file or folder it becomes (:func:`rcp_data.core.io.as_user_sees`).

Exit codes: 0 done (verified), 1 a check failed or an operation was refused, 2 the command could
not run (bad usage or input, a missing extra, the Hub unreachable), 3 verified but not anchored,
130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from rcp_data.core.io import as_user_sees
from rcp_data.core.redact import RedactFilter

EXIT_CODES = """exit codes:
  0    it ran, and every check it made passed
  1    a check failed, or an operation was refused on purpose (e.g. the Hub branch moved
       since the publish was planned, a tag exists elsewhere, a release fails verification)
  2    it could not run: bad input or usage (each named by file, row and field where it has
       them), an output that would overwrite user data, a file or the Hub unreachable
  3    verify: every check passed, but nothing outside the repository anchors the revision
       (pass --digest or --histories)
  130  interrupted (Ctrl-C), hub serve included
Errors are one line on stderr ('rcp-data COMMAND: error: ...'); -v adds the traceback. A
closed stdout (e.g. '| head') ends the output quietly; the code is the command's own."""
# loggers of libraries the toolkit calls: they log at the CLI's level (the HTTP clients log every
# request at INFO; ir_datasets sets its own logger to INFO, with its own handler, when first used)
LIBRARY_LOGGERS = ("httpx", "httpcore", "urllib3", "filelock", "fsspec", "ir_datasets",
                   "huggingface_hub", "datasets", "transformers", "sentence_transformers",
                   "torch", "mteb", "faiss")


def log_level(args: argparse.Namespace) -> int:
    """The level ``-v``/``-q`` ask for: DEBUG, ERROR, else WARNING."""
    if getattr(args, "verbose", False):
        return logging.DEBUG
    return logging.ERROR if getattr(args, "quiet", False) else logging.WARNING


def on_terminal() -> bool:
    """Whether stderr (where status lines and bars go) is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _AsUserSees(logging.Filter):
    """Names each temporary of an atomic write in a log line as what it becomes."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        shown = as_user_sees(text)
        if shown != text:
            record.msg, record.args = shown, None
        return True


class _AtLeast(logging.Filter):
    """Drops records below a level, whatever level a library set on its own logger."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level


def configure(args: argparse.Namespace) -> None:
    """Logging to stderr at the level ``-v``/``-q`` ask for, libraries included; progress bars
    only where they belong (a terminal, not ``-q``)."""
    level = log_level(args)
    quiet = getattr(args, "quiet", False)
    root = logging.getLogger()
    ours = [h for h in root.handlers if getattr(h, "_rcp_data_cli", False)]
    if ours or not root.handlers:  # as logging.basicConfig: a host's own logging is left alone
        for old in ours:
            root.removeHandler(old)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler.addFilter(_AsUserSees())
        handler.addFilter(RedactFilter())
        handler._rcp_data_cli = True  # type: ignore[attr-defined]
        root.addHandler(handler)
        root.setLevel(level)
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(level)
        for old in [f for f in logger.filters if isinstance(f, _AtLeast)]:
            logger.removeFilter(old)
        logger.addFilter(_AtLeast(level))   # stays when a library resets the level
    from rcp_data.core.progress import show_bars

    show_bars(not quiet)      # library calls show none; the CLI's do, on a terminal
    if quiet or not on_terminal():
        _silence_library_bars()
    if quiet:
        _quiet_library_logs()


def _quiet_library_logs() -> None:
    """Libraries that read their verbosity from the environment when imported (one the user
    set is left as it is)."""
    for var in ("HF_HUB_VERBOSITY", "DATASETS_VERBOSITY", "TRANSFORMERS_VERBOSITY"):
        os.environ.setdefault(var, "error")
    if "transformers" in sys.modules:
        sys.modules["transformers"].logging.set_verbosity_error()
    if "datasets" in sys.modules:
        sys.modules["datasets"].logging.set_verbosity_error()


def _silence_library_bars() -> None:
    """Bars of huggingface_hub, datasets and any library's tqdm (ir_datasets' ``docs_iter``)
    print into pipes and logs: turn them off. A library not imported yet is told by its
    environment variable, which it reads when it is imported (importing it here would cost every
    command its import time, used or not); one the user set is left as it is."""
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    else:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    else:
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    # tqdm reads TQDM_* defaults when imported: a library's bar stays off; the toolkit's own
    # bars are off here anyway (rcp_data.core.progress)
    if "tqdm" not in sys.modules:
        os.environ.setdefault("TQDM_DISABLE", "1")


def status_lines_wanted(args: argparse.Namespace) -> bool:
    """Whether status lines show: on a terminal (stderr), unless ``-q``, or ``-v`` (then the
    INFO log says each step, and a status line would say it twice)."""
    if getattr(args, "quiet", False) or getattr(args, "verbose", False):
        return False
    return on_terminal()


def say(args: argparse.Namespace, text: str) -> None:
    """A status line on stderr, only on a terminal and never with ``-q``."""
    if status_lines_wanted(args):
        print(as_user_sees(text), file=sys.stderr, flush=True)


def result(text: str) -> None:
    """A result line on stdout (``-q`` never hides it)."""
    print(as_user_sees(text))


__all__ = ["EXIT_CODES", "LIBRARY_LOGGERS", "configure", "log_level", "on_terminal", "result",
           "say", "status_lines_wanted"]
