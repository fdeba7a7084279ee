"""One spelling of the suites in help texts and error messages: the command line's
(``vidore-v3``), which every spelling :func:`suite_key` accepts reads back (issue 30, item 7)."""

from __future__ import annotations

import pytest

from rcp_data.cli.main import build_parser, subcommand_parsers
from rcp_data.core.errors import UsageError
from rcp_data.core.specs import known_suites, load_spec, shown_suites, suite_key


def test_errors_and_help_list_the_suites_as_the_command_line_spells_them():
    assert shown_suites() == "bright, demo, nanobeir, trecdl, vidore-v3"
    with pytest.raises(UsageError) as err:
        load_spec("vidore-v4")
    assert str(err.value).endswith("known: bright, demo, nanobeir, trecdl, vidore-v3")
    assert all(suite_key(name) in known_suites() for name in shown_suites().split(", "))
    build = next(p for p in subcommand_parsers(build_parser()) if p.prog == "rcp-data build")
    help_text = build.format_help()
    assert "vidore-v3" in help_text and "vidore_v3" not in help_text
