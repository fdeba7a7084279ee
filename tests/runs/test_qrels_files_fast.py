"""A canonical TREC qrels file is read by Arrow into the very frame the line loop builds; every
other file goes to the loop, which reads it or names its bad line."""

from __future__ import annotations

from pathlib import Path

import pytest

import rcp_data.runs.qrels_files as qrels_files
from rcp_data.core.errors import InputError
from rcp_data.runs.qrels_files import read_qrels

GOOD = "q1 0 d1 2\nq1 0 d2 0\nq2 Q0 d1 -1\nq2 0 dé 007\n"

CASES = [
    ("canonical", GOOD.encode(), True),
    ("no final newline", GOOD.rstrip("\n").encode(), True),
    ("byte-order mark", b"\xef\xbb\xbf" + GOOD.encode(), True),
    ("judged twice", b"q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 0\n", True),
    ("tabs", GOOD.replace(" ", "\t").encode(), False),
    ("double spaces", GOOD.replace(" 0 ", "  0  ").encode(), False),
    ("CRLF", GOOD.replace("\n", "\r\n").encode(), False),
    ("a blank line", (GOOD + "\n" + GOOD.replace("q", "p")).encode(), False),
    ("grade 1.0", b"q1 0 d1 1.0\n", False),
    ("grade +1", b"q1 0 d1 +1\n", False),
    ("grade in hex", b"q1 0 d1 0x1\n", False),
    ("grade not a number", b"q1 0 d1 high\n", False),
    ("five fields", b"q1 0 d1 1 x\n", False),
    ("no-break space in an id", "q1 0 d\u00a01 1\n".encode(), False),
    ("not UTF-8", b"q1 0 d\xff 1\n", False),
]


def _outcome(path: Path) -> tuple:
    try:
        frame = read_qrels(path, keep_rows=True)
    except InputError as exc:
        return ("error", str(exc))
    return ("frame", frame.to_dict("list"), [str(t) for t in frame.dtypes])


@pytest.mark.parametrize(("name", "data", "fast"), CASES, ids=[c[0] for c in CASES])
def test_arrow_qrels_equal_line_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     name: str, data: bytes, fast: bool) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(data)
    assert (qrels_files._read_trec_fields(path) is not None) == fast
    got = _outcome(path)
    with monkeypatch.context() as m:
        m.setattr(qrels_files, "_read_trec_fields", lambda path: None)
        want = _outcome(path)
    assert got == want


def test_real_qrels_and_spelled_out_outcomes(trecdl_data, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = trecdl_data / "qrels.dl19-passage.txt"
    assert qrels_files._read_trec_fields(path) is not None
    fast = read_qrels(path, keep_rows=True)
    with monkeypatch.context() as m:
        m.setattr(qrels_files, "_read_trec_fields", lambda path: None)
        slow = read_qrels(path, keep_rows=True)
    assert fast.equals(slow) and len(fast) == 9260
    assert list(fast.dtypes.astype(str)) == list(slow.dtypes.astype(str))
    good = tmp_path / "good.txt"
    good.write_bytes(GOOD.encode())
    frame = read_qrels(good, keep_rows=True)
    assert frame["corpus-id"].tolist() == ["d1", "d2", "d1", "dé"]
    assert frame["grade"].tolist() == [2, 0, -1, 7] and frame["row"].tolist() == [1, 2, 3, 4]
    twice = tmp_path / "twice.txt"
    twice.write_bytes(b"q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 0\n")
    with pytest.raises(InputError) as err:
        read_qrels(twice)
    assert (err.value.row, err.value.field) == (3, "corpus-id")


@pytest.mark.parametrize(("name", "data", "fast"), CASES, ids=[c[0] for c in CASES])
def test_qrels_table_equals_frame(tmp_path: Path, name: str, data: bytes, fast: bool) -> None:
    """``read_qrels_table`` (score --qrels, no pandas) holds what ``read_qrels`` reads, or
    fails as it does (a pair judged twice is found by score --qrels: see below)."""
    path = tmp_path / "qrels.txt"
    path.write_bytes(data)
    try:
        want = read_qrels(path).to_dict("list")
    except InputError as exc:
        if name == "judged twice":
            assert qrels_files.read_qrels_table(path).num_rows == 3
            return
        with pytest.raises(InputError) as got:
            qrels_files.read_qrels_table(path)
        assert str(got.value) == str(exc)
        return
    table = qrels_files.read_qrels_table(path)
    assert table.column_names == ["query-id", "corpus-id", "grade"]
    assert str(table.schema.field("grade").type) == "int64"
    assert table.to_pydict() == want


def test_score_qrels_names_a_pair_judged_twice(tmp_path: Path) -> None:
    from rcp_data.scoring.qrels_score import score_qrels

    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(b"q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 0\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 t\n")
    with pytest.raises(InputError, match=r"'d1' is judged twice for query 'q1'") as exc:
        score_qrels(qrels, run, measures=["P@1"])
    assert "row 3" in str(exc.value) or ":3" in str(exc.value)
