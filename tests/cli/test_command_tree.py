"""The command tree, walked: every subcommand and sub-subcommand has a help description and
accepts ``-q``/``-v`` after itself too; ``-`` means stdout for file outputs (issue 30, items 5
and 7)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from rcp_data.cli import main
from rcp_data.cli.main import build_parser, subcommand_parsers

PARSERS = list(subcommand_parsers(build_parser()))


def test_the_walk_reaches_the_sub_subcommands():
    progs = {p.prog for p in PARSERS}
    assert {"rcp-data release publish", "rcp-data release check", "rcp-data card regenerate",
            "rcp-data judge run", "rcp-data text repair", "rcp-data replay"} <= progs


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.prog)
def test_every_command_has_a_description_and_helped_arguments(parser):
    assert parser.description and parser.description.strip(), parser.prog
    unhelped = [a.option_strings or a.dest for a in parser._actions
                if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert not unhelped, f"{parser.prog}: {unhelped}"
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):  # each listed with a one-line help
            helped = {c.dest: c.help for c in action._choices_actions}
            assert all(helped.get(name) for name in action.choices), parser.prog


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.prog)
def test_every_command_takes_the_global_flags_after_itself(parser):
    flags = {s for a in parser._actions for s in a.option_strings}
    assert {"-q", "--quiet", "-v", "--verbose"} <= flags, parser.prog


def test_quiet_after_the_subcommand(tmp_path):
    """On a terminal the status line shows; ``-q`` after the subcommand hides it as before."""
    from support.terminal import run_on_terminal

    out = tmp_path / "RELEASES.md"
    assert run_on_terminal("release", "render-md", "--out", str(out)) == (0, f"wrote {out}\r\n")
    out.unlink()
    assert run_on_terminal("release", "render-md", "--out", str(out), "-q") == (0, "")
    assert out.read_text().startswith("#")
    args = build_parser().parse_args(["replay", "some-dir", "-q"])
    assert (args.quiet, args.verbose, args.path) == (True, False, "some-dir")
    args = build_parser().parse_args(["-q", "score", "--dataset", "d", "r.tsv"])
    assert args.quiet is True           # before the subcommand still works, not undone after
    args = build_parser().parse_args(["verify", "d", "-v"])
    assert (args.quiet, args.verbose) == (False, True)


def test_text_repair_output_dash_is_stdout(tmp_path, capsys, monkeypatch):
    source = tmp_path / "in.tsv"
    source.write_bytes("1\tcaf\u00c3\u00a9\n2\tplain\n".encode())
    monkeypatch.chdir(tmp_path)

    class Out:   # a stdout with a binary buffer, as a real one has
        def __init__(self):
            self.buffer = __import__("io").BytesIO()

        def write(self, text):
            self.buffer.write(text.encode())

        def flush(self):
            pass

    fake = Out()
    monkeypatch.setattr("sys.stdout", fake)
    assert main(["text", "repair", "--input", str(source), "--output", "-", "-q"]) == 0
    assert fake.buffer.getvalue() == "1\tcaf\u00e9\n2\tplain\n".encode()
    assert not Path(tmp_path / "-").exists()
    monkeypatch.undo()
    assert main(["text", "repair", "--input", str(source), "--output", "-", "--json"]) == 2
    assert "--json" in capsys.readouterr().err


def test_render_md_out_dash_is_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["release", "render-md", "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("#")
    assert not (tmp_path / "-").exists()



def test_the_readme_names_every_subcommand():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    start = readme.index("Other subcommands:")
    other = readme[start:readme.index("\n\n", start)].replace("\n", " ")
    named = set()
    for chunk in re.findall(r"`([a-z-]+(?: [a-z|-]+)?)", other):   # `release check`, `judge a|b`
        command, _, actions = chunk.partition(" ")
        named |= {command} | {f"{command} {a}" for a in actions.split("|") if a}
    for parser in PARSERS:
        name = parser.prog.removeprefix("rcp-data ")
        assert name in named or f"rcp-data {name} " in readme, name
