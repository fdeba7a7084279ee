"""MkDocs hook: fills ``reference/cli.md`` with every subcommand's ``--help``, generated from the
parsers themselves at build time (so the reference cannot drift from the code)."""

from __future__ import annotations

import os

MARKER = "<!-- cli-reference -->"


def _helps() -> str:
    os.environ["COLUMNS"] = "100"   # argparse wraps to the terminal: fix it for a stable page
    from rcp_data.cli.main import build_parser, subcommand_parsers

    parser = build_parser()
    parts = [f"## `{parser.prog}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"]
    for command in subcommand_parsers(parser):
        parts.append(f"## `{command.prog}`\n\n```text\n{command.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (mkdocs API)
    if MARKER in markdown:
        return markdown.replace(MARKER, _helps())
    return markdown
