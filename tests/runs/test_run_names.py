"""Run names: the file's stem without its compression suffix, or, where two runs share a stem,
each TREC run's tag (its sixth field) when each file holds one distinct tag; two runs with
one name exit 2 naming both files."""

from __future__ import annotations

import gzip
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from rcp_data.core.errors import UsageError
from rcp_data.runs.runs_in import default_name, run_names, run_tag

LINES = "1 Q0 d1 0 2.0 {tag}\n1 Q0 d2 1 1.0 {tag}\n2 Q0 d1 0 3.0 {tag}\n"


def _write(path: Path, tag: str, *, gz: bool = False, sep: str = " ") -> Path:
    text = LINES.format(tag=tag).replace(" ", sep).encode("ascii")
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def test_name_is_the_tag(tmp_path: Path) -> None:
    a = _write(tmp_path / "dl-19-official-input.bm25.gz", "bm25_base", gz=True, sep="\t")
    b = _write(tmp_path / "dl-19-official-input.dense.gz", "dense_v2", gz=True)
    assert run_tag(a) == "bm25_base" and default_name(a) == "dl-19-official-input"
    assert run_names([a, b], None) == ["bm25_base", "dense_v2"]     # one stem: the tags


def test_two_tags_or_shared_tags_fall_back_to_the_file_name(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.txt.gz"
    mixed.write_bytes(gzip.compress(b"1 Q0 d1 0 2.0 a\n1 Q0 d2 1 1.0 b\n"))
    assert run_tag(mixed) is None and default_name(mixed) == "mixed"
    a, b = _write(tmp_path / "one.txt", "t"), _write(tmp_path / "two.txt.xz", "t")
    assert run_names([a, b], None) == ["one", "two"]


def test_same_name_is_an_error_naming_both_files(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    a = _write(tmp_path / "run.txt", "same")
    b = _write(tmp_path / "x" / "run.txt.gz", "same", gz=True)
    with pytest.raises(UsageError, match=r"two runs are named 'run' \(.*run\.txt and "
                                         r".*run\.txt\.gz\)"):
        run_names([a, b], None)
    with pytest.raises(UsageError, match="two runs are named 'n'"):
        run_names([a, b], ["n", "n"])


def test_cli_collision_exits_2_with_one_line(tmp_path: Path, trecdl_data: Path) -> None:
    from rcp_data import cli

    (tmp_path / "x").mkdir()
    a = _write(tmp_path / "run.txt", "same")
    b = _write(tmp_path / "x" / "run.txt", "same")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["score", "--qrels", str(trecdl_data / "qrels.dl19-passage.txt"),
                       str(a), str(b)])
    assert rc == 2 and out.getvalue() == ""
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "two runs are named 'run'" in lines[0] and str(b) in lines[0]
