"""The ``rcp-data`` command: one app, a thin layer of subcommands over library functions.

Each subcommand lives in ``rcp_data.cli.commands.<name>`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (taking the parsed args, returning an exit code).
The one Hub client of the run is built here, from the environment (``$HF_ENDPOINT``, the
token's usual places, ``--cache-dir`` where a command has it), and handed to the commands as
``args.hub_client``.

:func:`main` is the one error boundary: every failure of a command becomes one line on stderr,
``rcp-data <command>: error: <message>``, and the exit code of :data:`EXIT_CODES` (``-v`` adds
the traceback). A stdout whose reader has gone (``rcp-data verify ... | head``) swallows the
rest of the output quietly and the command ends with its own code.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
import traceback
from collections.abc import Iterator

from rcp_data.cli.extras import MissingExtra, extra_of
from rcp_data.cli.output import EXIT_CODES, configure
from rcp_data.core.errors import RcpDataError
from rcp_data.core.hub_client import HubClient, redact
from rcp_data.core.io import as_user_sees
from rcp_data.core.version import __version__

COMMAND_MODULES = (
    "demo",
    "build",
    "suite",
    "text",
    "calibrate",
    "judge",
    "recalibrate",
    "replay",
    "score",
    "agree",
    "compare",
    "card",
    "hub",
    "release",
    "verify",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; ``only``: with that one subcommand (the command a run typed,
    so that it imports nothing of the others)."""
    parser = argparse.ArgumentParser(
        prog="rcp-data",
        description="Build, release and verify the RCP-nDCG benchmark datasets.",
        epilog="Results go to stdout (JSON only with --json); logs (WARNING; -v DEBUG, -q "
        "errors only) to stderr; status lines and progress bars only on a terminal.\n\n"
        + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rcp-data {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="errors only: no status lines, logs or progress bars")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only in COMMAND_MODULES else COMMAND_MODULES:
        try:
            module = importlib.import_module(f"rcp_data.cli.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"rcp_data.cli.commands.{name}":
                continue
            raise
        module.register(sub)
    for command in subcommand_parsers(parser):
        _add_global_flags(command)
    return parser


def _command_typed(argv: list[str]) -> str | None:
    """The subcommand in ``argv`` (its first word not a flag: the top-level flags take no
    value), or None (``--help``, ``--version``, none typed)."""
    return next((a for a in argv if not a.startswith("-")), None)


def subcommand_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every subcommand's parser, sub-subcommands included (``release publish``, ...)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in dict.fromkeys(action.choices.values()):  # aliases once
                yield command
                yield from subcommand_parsers(command)


def _add_global_flags(parser: argparse.ArgumentParser) -> None:
    """``-q``/``-v`` after the subcommand too (``rcp-data replay DIR -q``); SUPPRESS keeps the
    value given before it when the flag is not repeated after."""
    taken = {s for a in parser._actions for s in a.option_strings}
    if not taken & {"-v", "--verbose"}:
        parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                            help="debug logging (as before the subcommand)")
    if not taken & {"-q", "--quiet"}:
        parser.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                            help="errors only (as before the subcommand)")


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser(_command_typed(sys.argv[1:] if argv is None else argv))
        args = parser.parse_args(argv)
        configure(args)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        with _quiet_when_stdout_closes():
            return run_command(args)
    except KeyboardInterrupt:  # Ctrl-C before the command ran, or while its output closed
        print("rcp-data: interrupted", file=sys.stderr)
        return 130


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command; every failure becomes one line on stderr and its exit code."""
    try:
        args.hub_client = HubClient.from_env(cache_dir=getattr(args, "cache_dir", None))
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"rcp-data {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the one error boundary: no traceback unless -v
        code, message = describe_error(exc)
        if args.verbose:
            print(redact("".join(traceback.format_exception(exc))), end="", file=sys.stderr)
        print(f"rcp-data {args.command}: error: {redact(message)}", file=sys.stderr)
        return code


def describe_error(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one-line message of a failure."""
    if isinstance(exc, RcpDataError):
        code, message = exc.exit_code, exc.message
    elif isinstance(exc, ModuleNotFoundError) and extra_of(exc.name) is not None:
        code, message = 2, MissingExtra(extra_of(exc.name) or "", exc.name or "").message
    elif isinstance(exc, OSError):
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f)
        code, message = 2, f"{exc.strerror or exc}{f': {where}' if where else ''}"
    elif isinstance(exc, MemoryError):
        code, message = 2, "out of memory"
    else:
        code, message = 2, (f"unexpected {type(exc).__name__}: {exc} (this is a bug; run with "
                            "-v for the traceback and report it)")
    # no message shows credentials: a URL's userinfo (HF_ENDPOINT=http://user:secret@...) is cut;
    # nor a temporary folder gone after the command
    return code, as_user_sees(redact(" ".join(line.strip() for line in str(message).splitlines()
                                              if line.strip())))


class _QuietStdout:
    """``sys.stdout`` for one command: once its reader is gone (EPIPE), output is dropped.

    The descriptor is pointed at /dev/null so that the interpreter's last flush cannot fail
    either; the command goes on and ends with its own exit code.
    """

    def __init__(self, stream) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self.reader_gone = True
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _quiet_when_stdout_closes() -> Iterator[None]:
    stream = sys.stdout
    sys.stdout = _QuietStdout(stream)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _QuietStdout):
            sys.stdout.flush()
        sys.stdout = stream


if __name__ == "__main__":
    sys.exit(main())
