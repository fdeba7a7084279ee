"""The ``rcp-data`` command line: the entry point and one module per subcommand."""

from rcp_data.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
