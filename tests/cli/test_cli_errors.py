"""No tracebacks (issue 14, item 3): one error boundary maps every failure to one line on stderr
and the documented exit code (0 ok, 1 a check failed / refused, 2 could not run or bad input);
``-v`` adds the traceback; a closed stdout ends quietly."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import rcp_data
from rcp_data.cli import build_parser, main

SRC = str(Path(rcp_data.__file__).resolve().parents[1])


def _one_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"rcp-data {command}: error: "), err
    return err[len(f"rcp-data {command}: error: "):-1]


def test_help_documents_the_exit_codes():
    text = build_parser().format_help()
    assert "exit codes:" in text
    for line in ("  0    it ran, and every check it made passed",
                 "  1    a check failed, or an operation was refused on purpose",
                 "  2    it could not run: bad input or usage",
                 "  130  interrupted (Ctrl-C)"):
        assert line in text
    assert "-v adds the traceback" in text


def test_the_command_line_starts_without_the_data_libraries():
    """Parsing the command line imports no table, array or model library: ``rcp-data --help``
    and a mistyped option answer at once, and every command pays only for what it runs."""
    code = ("import sys; from rcp_data.cli.main import build_parser; "
            "build_parser().parse_args(['release', 'publish', 'x', '--repo', 'a/b']); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pandas', "
            "'pyarrow', 'scipy', 'torch', 'huggingface_hub', 'datasets', 'mteb'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": SRC})
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["rcp_data.release.publish", "rcp_data.model.history"])
def test_publishing_starts_before_the_data_libraries_load(module):
    """``release publish`` starts hashing the release as soon as its module is imported; the
    data libraries and huggingface_hub load meanwhile (with the release check), not before."""
    code = (f"import sys, {module}; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pandas', "
            "'pyarrow', 'scipy', 'torch', 'huggingface_hub', 'datasets', 'yaml'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": SRC})
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("imported_first", [False, True])
def test_library_progress_bars_are_off_in_a_pipe(imported_first):
    """With stderr not a terminal, huggingface_hub's and datasets' bars are off, whether the
    library is imported before the logging is configured or after (then by its environment
    variable, so that configuring imports neither)."""
    code = ("import sys, argparse\n"
            + ("import huggingface_hub, datasets\n" if imported_first else "")
            + "from rcp_data.cli.output import configure\n"
            "configure(argparse.Namespace(verbose=False, quiet=False))\n"
            "late = sorted({'huggingface_hub', 'datasets'} - set(sys.modules))\n"
            "from huggingface_hub.utils import are_progress_bars_disabled\n"
            "import datasets\n"
            "print(late, are_progress_bars_disabled(), datasets.is_progress_bar_enabled())\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_DISABLE_PROGRESS_BARS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**env, "PYTHONPATH": SRC})
    late = "[]" if imported_first else "['datasets', 'huggingface_hub']"
    assert out.stdout.strip() == f"{late} True False"


def test_compare_on_a_parquet_file(demo_release_v1, capsys):
    table = demo_release_v1 / "alpha/qrels.parquet"
    code = main(["compare", str(table), "--against", str(demo_release_v1 / "README.md")])
    message = _one_line(capsys, "compare")
    assert code == 2
    assert message.startswith(f"{table}: not UTF-8 text (byte ")
    assert message.endswith("expected a replay JSON, a card or paper values")


def test_compare_on_a_non_utf8_file(demo_release_v1, tmp_path, capsys):
    latin = tmp_path / "card.md"
    latin.write_bytes("R\xe9sultats".encode("latin-1"))
    code = main(["compare", str(latin), "--against", str(demo_release_v1 / "README.md")])
    assert (code, _one_line(capsys, "compare")) == (
        2, f"{latin}: not UTF-8 text (byte 1: invalid continuation byte); expected a replay "
           "JSON, a card or paper values")


def test_verify_with_an_invalid_repo_id(capsys):
    code = main(["verify", "--repo", "../etc", "--revision", "main"])
    message = _one_line(capsys, "verify")
    assert code == 2 and "../etc" in message


def test_replay_with_the_hub_down(monkeypatch, capsys):
    with socket.socket() as s:                 # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    code = main(["replay", "hf://datasets/rcp-test/nowhere@main"])
    message = _one_line(capsys, "replay")
    assert code == 2
    assert message.startswith(f"could not run: the Hub at http://127.0.0.1:{port} is "
                              "unreachable (dataset repo rcp-test/nowhere: ")


def test_text_repair_to_a_folder(tmp_path, capsys):
    src = tmp_path / "in.tsv"
    src.write_text("1\tok\n")
    folder = tmp_path / "out"
    folder.mkdir()
    code = main(["text", "repair", "--input", str(src), "--output", str(folder)])
    assert (code, _one_line(capsys, "text")) == (
        2, f"--output {folder} is a folder; name the file to write (nothing was written)")
    # the folder holding the input: that is said first
    code = main(["text", "repair", "--input", str(src), "--output", str(tmp_path)])
    assert (code, _one_line(capsys, "text")) == (
        2, f"--output {tmp_path} contains the input --input {src}; write the output somewhere "
           "apart from the inputs (nothing was written)")


def _command_raising(monkeypatch, exc: BaseException) -> None:
    import rcp_data.cli.commands.compare as compare

    def boom(args):
        raise exc
    monkeypatch.setattr(compare, "run", boom)


@pytest.mark.parametrize(("exc", "code", "message"), [
    (RuntimeError("a\nb"), 2, "unexpected RuntimeError: a b (this is a bug; run with -v for the "
                              "traceback and report it)"),
    (PermissionError(13, "Permission denied", "/srv/x"), 2, "Permission denied: /srv/x"),
    (OSError(28, "No space left on device"), 2, "No space left on device"),
])
def test_any_failure_is_one_line_and_v_adds_the_traceback(monkeypatch, capsys, exc, code,
                                                          message):
    _command_raising(monkeypatch, exc)
    argv = ["compare", "a", "--against", "b"]
    assert main(argv) == code
    assert _one_line(capsys, "compare") == message
    assert main(["-v", *argv]) == code
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.endswith(f"rcp-data compare: error: {message}\n")


def test_interrupt_is_130(monkeypatch, capsys):
    _command_raising(monkeypatch, KeyboardInterrupt())
    assert main(["compare", "a", "--against", "b"]) == 130
    assert capsys.readouterr().err == "rcp-data compare: interrupted\n"


def _with_closed_stdout(*argv: str) -> subprocess.CompletedProcess:
    """Run rcp-data with a stdout whose reader is gone before anything is written (what
    ``rcp-data ... | head`` becomes once head has exited)."""
    read, write = os.pipe()
    os.close(read)
    try:
        env = {**os.environ, "PYTHONPATH": SRC}
        return subprocess.run([sys.executable, "-m", "rcp_data", *argv], stdout=write,
                              stderr=subprocess.PIPE, env=env, timeout=300)
    finally:
        os.close(write)


@pytest.mark.parametrize("command", ["verify", "replay"])
def test_a_closed_stdout_ends_quietly_with_the_commands_code(tmp_path, command):
    from support.release_dirs import make_release_dir

    release = make_release_dir(tmp_path / "release", "rcp-test/closed-stdout")
    proc = _with_closed_stdout("-q", command, str(release))
    assert (proc.returncode, proc.stderr) == (0, b"")
    failing = tmp_path / "failing"             # verify's own code 1 survives the closed pipe
    make_release_dir(failing, "rcp-test/closed-stdout")
    card = (failing / "README.md").read_text(encoding="utf-8")
    cell = re.search(r"\| Alpha-RR \| (\d+\.\d) \|", card)
    assert cell is not None
    wrong = f"{(float(cell.group(1)) + 7.3) % 100:.1f}"     # one printed cell, wrong
    (failing / "README.md").write_text(card[:cell.start(1)] + wrong + card[cell.end(1):],
                                       encoding="utf-8")
    if command == "verify":
        proc = _with_closed_stdout("-q", command, str(failing))
        assert (proc.returncode, proc.stderr) == (1, b"")
