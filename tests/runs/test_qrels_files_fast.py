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
