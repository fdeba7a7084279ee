"""The ``rcp-data`` command: one app, a thin layer of subcommands over library functions.

Each subcommand lives in ``rcp_data.cli.commands.<name>`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (taking the parsed args, returning an exit code).
The one Hub client of the run is built here, from the environment (``$HF_ENDPOINT``, the
token's usual places, ``--cache-dir`` where a command has it), and handed to the commands as
``args.hub_client``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from rcp_data import __version__
from rcp_data.cli.extras import MissingExtra, extra_of
from rcp_data.cli.output import EXIT_CODES, configure
from rcp_data.core.errors import RcpDataError
from rcp_data.core.hub_client import HubClient

COMMAND_MODULES = (
    "demo",
    "build",
    "text",
    "calibrate",
    "recalibrate",
    "replay",
    "score",
    "compare",
    "card",
    "hub",
    "release",
    "verify",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rcp-data",
        description="Build, release and verify the RCP-nDCG benchmark datasets.",
        epilog="Results go to stdout (JSON only with --json), logs to stderr; progress bars "
        "only on a terminal.\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rcp-data {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="errors only: no status lines, logs or progress bars")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"rcp_data.cli.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"rcp_data.cli.commands.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure(args)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    args.hub_client = HubClient.from_env(cache_dir=getattr(args, "cache_dir", None))
    try:
        return int(args.func(args) or 0)
    except RcpDataError as exc:
        print(f"rcp-data {args.command}: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        extra = extra_of(exc.name)
        if extra is None:
            raise
        logging.getLogger(__name__).debug("missing module", exc_info=True)
        print(f"rcp-data {args.command}: error: {MissingExtra(extra, exc.name).message}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
