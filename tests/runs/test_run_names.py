"""Run names: each TREC run's tag (its sixth field) where its file holds one tag on every line,
as trec_eval names a run, else the file's stem without its compression suffix; runs whose
tags are one fall back to their file names; two runs with one name exit 2 naming both files.
The tag comes from the bytes the run is read from (a compressed file is decompressed once)."""

from __future__ import annotations

import gzip
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from rcp_data.core.errors import UsageError
from rcp_data.runs import qrels_runs, runs_in, trec_run_bytes
from rcp_data.runs.qrels_runs import read_run
from rcp_data.runs.run_tags import tag_of
from rcp_data.runs.runs_in import default_name, run_names, run_tag

LINES = "1 Q0 d1 0 2.0 {tag}\n1 Q0 d2 1 1.0 {tag}\n2 Q0 d1 0 3.0 {tag}\n"


def _write(path: Path, tag: str, *, gz: bool = False, sep: str = " ") -> Path:
    text = LINES.format(tag=tag).replace(" ", sep).encode("ascii")
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def test_name_is_the_tag(tmp_path: Path) -> None:
    a = _write(tmp_path / "dl-19-official-input.bm25.gz", "bm25_base", gz=True, sep="\t")
    b = _write(tmp_path / "dl-19-official-input.dense.gz", "dense_v2", gz=True)
    c = _write(tmp_path / "mine.txt", "my_tag")
    assert run_tag(a) == "bm25_base" and default_name(a) == "dl-19-official-input.bm25"
    assert run_names([a, b], None) == ["bm25_base", "dense_v2"]
    assert run_names([c], None) == ["my_tag"]                 # one run: its tag too
    assert run_names([c, a], ["x", "y"]) == ["x", "y"]        # --name wins


def test_two_tags_or_shared_tags_fall_back_to_the_file_name(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.txt.gz"
    mixed.write_bytes(gzip.compress(b"1 Q0 d1 0 2.0 a\n1 Q0 d2 1 1.0 b\n"))
    assert run_tag(mixed) is None and default_name(mixed) == "mixed.txt"
    assert run_names([mixed], None) == ["mixed.txt"]
    a, b = _write(tmp_path / "one.txt", "t"), _write(tmp_path / "two.txt.xz", "t")
    c = _write(tmp_path / "three.txt", "other")
    assert run_names([a, b, c], None) == ["one.txt", "two.txt", "other"]


def test_same_name_is_an_error_naming_both_files(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    a = _write(tmp_path / "run.txt", "same")
    b = _write(tmp_path / "x" / "run.txt.gz", "same", gz=True)
    with pytest.raises(UsageError, match=r"two runs are named 'run\.txt' \(.*run\.txt and "
                                         r".*run\.txt\.gz\)"):
        run_names([a, b], None)
    with pytest.raises(UsageError, match="two runs are named 'n'"):
        run_names([a, b], ["n", "n"])
    # a tag equal to another run's file name
    c = _write(tmp_path / "bm25.txt", "bm25")
    d = tmp_path / "bm25"   # two tags: named by its file
    d.write_bytes(b"1 Q0 d1 0 2.0 a\n1 Q0 d2 1 1.0 b\n")
    # the tag equals the other's file name: the tagged run falls back to its own file name
    assert run_names([c, d], None) == ["bm25.txt", "bm25"]
    e = tmp_path / "x" / "bm25.txt"   # two tags, and its file name is another file's
    e.write_bytes(b"1 Q0 d1 0 2.0 a\n1 Q0 d2 1 1.0 b\n")
    with pytest.raises(UsageError, match=r"two runs are named 'bm25\.txt' \(.*bm25\.txt and "
                                         r".*x/bm25\.txt\)"):
        run_names([c, d, e], None)


def test_the_tag_is_read_with_the_rows_both_passes(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled scan and the NumPy fallback find the tag the bytes' own count finds."""
    cases = {"one": (LINES.format(tag="tag_1"), "tag_1"),
             "differ": ("1 Q0 d1 0 2.0 a\n1 Q0 d2 1 1.0 ab\n", None),
             "suffix": ("1 Q0 d1 0 2.0 xab\n1 Q0 d2 1 1.0 ab\n", None),
             "utf8": (LINES.format(tag="t\u00e9"), "t\u00e9")}
    for name, (text, want) in cases.items():
        path = tmp_path / f"{name}.txt"
        path.write_text(text, encoding="utf-8")
        assert tag_of(path.read_bytes()) == want, name
        assert read_run(path, str(path)).tag == want, name
        with monkeypatch.context() as m:
            m.setattr(trec_run_bytes, "COMPILED", None)
            assert read_run(path, str(path)).tag == want, name
    tabs = _write(tmp_path / "tabs.txt", "nist", sep="\t")
    assert read_run(tabs, str(tabs)).tag == "nist"
    # a file the fast readers decline (a blank line) still names its run by its tag
    blank = tmp_path / "blank.txt"
    blank.write_text(LINES.format(tag="kept") + "\n", encoding="utf-8")
    assert trec_run_bytes.read_trec_run_spans(blank) is None
    assert read_run(blank, str(blank)).tag == "kept"


def test_score_reads_each_compressed_run_once(tmp_path: Path, trecdl_data: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from rcp_data.scoring.qrels_score import score_qrels

    runs = [_write(tmp_path / f"dl-19-official-input.r{i}.gz", f"tag{i}", gz=True, sep="\t")
            for i in range(3)]
    reads: list[str] = []
    for module in (trec_run_bytes, runs_in, qrels_runs):
        if hasattr(module, "read_bytes"):
            real = module.read_bytes
            monkeypatch.setattr(module, "read_bytes",
                                lambda p, _real=real: reads.append(str(p)) or _real(p))
    qrels = trecdl_data / "qrels.dl19-passage.txt"
    for measures in (None, ["P@10"]):
        reads.clear()
        result = score_qrels(qrels, runs, measures=measures, compare=False)
        assert result.runs == ("tag0", "tag1", "tag2")
        assert sorted(reads) == sorted(map(str, runs)), reads


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
    assert len(lines) == 1 and "two runs are named 'run.txt'" in lines[0] and str(b) in lines[0]
