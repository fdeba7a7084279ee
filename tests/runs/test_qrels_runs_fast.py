"""``score --qrels`` reads a run file on its bytes when it is canonical, and otherwise with the
line reader: on every tricky file both give the same run (ids, scores bit for bit, query
blocks) or the same one-line error (file, row, field), and the same nDCG per query."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import rcp_data.runs.qrels_runs as qrels_runs
import rcp_data.runs.runs_in as runs_in
import rcp_data.runs.trec_run_bytes as trec_run_bytes
from rcp_data.core.errors import InputError
from rcp_data.runs.qrels_runs import read_run
from rcp_data.runs.trec_run_bytes import read_trec_run_spans
from rcp_data.scoring.qrels_score import score_qrels

pytestmark = pytest.mark.usefixtures("either_run_reader")
COMPILED_ONLY = "compiled only"           # a shape only the compiled pass takes

GOOD = "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 2.5 t\nq1 Q0 d3 3 -1 t\nq2 Q0 d1 1 0.25 t\n"

# (name, file bytes, whether the byte reader takes it)
CASES = [
    ("canonical with ties", GOOD.encode(), True),
    ("no final newline", GOOD.rstrip("\n").encode(), True),
    ("byte-order mark", b"\xef\xbb\xbf" + GOOD.encode(), True),
    ("UTF-8 ids", "q1 Q0 dé 1 0.5 t\nq1 Q0 d€ 2 0.4 t\n".encode(), True),
    ("queries interleaved", b"q1 Q0 d1 1 3 t\nq2 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n", True),
    ("scores rising", b"q1 Q0 d1 1 1 t\nq1 Q0 d2 2 3 t\n", True),
    ("signed and long ranks", b"q1 Q0 d1 -3 0.5 t\nq1 Q0 d2 123456789 0.4 t\n", True),
    ("exponent and signed zero", b"q1 Q0 d1 1 1e-05 t\nq1 Q0 d2 2 -0 t\n", True),
    ("a repeated document", b"q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d1 3 1 t\n", True),
    ("same document, two queries", b"q1 Q0 d1 1 3 t\nq2 Q0 d1 1 2 t\n", True),
    ("long ids sharing their ends", b"q1 Q0 aaaaaaaaXbbbbbbbb 1 3 t\n"
     b"q1 Q0 aaaaaaaaYbbbbbbbb 2 2 t\nq2 Q0 aaaaaaaaXbbbbbbbb 1 1 t\n", True),
    ("a long id repeated", b"q1 Q0 aaaaaaaaXbbbbbbbb 1 3 t\n"
     b"q1 Q0 aaaaaaaaYbbbbbbbb 2 2 t\nq1 Q0 aaaaaaaaXbbbbbbbb 3 1 t\n", True),
    ("NaN score", b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", True),
    ("inf score", b"q1 Q0 d1 1 inf t\n", True),
    ("tabs", GOOD.replace(" ", "\t").encode(), COMPILED_ONLY),
    ("double spaces", GOOD.replace(" Q0 ", "  Q0  ").encode(), COMPILED_ONLY),
    ("an empty Q0 field", b"q1  d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\n", False),
    ("CRLF line ends", GOOD.replace("\n", "\r\n").encode(), COMPILED_ONLY),
    ("a blank line", (GOOD + "\n" + GOOD.replace("q", "p")).encode(), False),
    ("no-break space in an id", "q1 Q0 d\u00a01 1 0.5 t\n".encode(), False),
    ("control byte in an id", b"q1 Q0 d\x011 1 0.5 t\nq1 Q0 d2 2 0.4 t\n", False),
    ("vertical tab in an id", b"q1 Q0 d\x0b1 1 0.5 t\n", False),
    ("not UTF-8", b"q1 Q0 d\xff 1 0.5 t\n", False),
    ("seven fields", b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t x\n", False),
    ("five fields", b"q1 Q0 d1 1 0.5\n", False),
    ("rank in hex", b"q1 Q0 d1 0x1 0.5 t\n", False),
    ("rank with a plus", b"q1 Q0 d1 +1 0.5 t\n", False),
    ("rank with a fraction", b"q1 Q0 d1 1.0 0.5 t\n", False),
    ("score with an underscore", b"q1 Q0 d1 1 1_0 t\n", False),     # float() reads 10.0
    ("score not a number", b"q1 Q0 d1 1 x t\n", False),
]


@contextmanager
def _exact(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``read_run`` with both fast readers off: every file goes to the line reader."""
    with monkeypatch.context() as m:
        m.setattr(qrels_runs, "read_trec_run_spans", lambda path: None)
        m.setattr(runs_in, "read_trec_run_table", lambda path: None)
        yield


def _outcome(path: Path) -> tuple:
    try:
        run = read_run(path, str(path))
    except InputError as exc:
        return ("error", exc.path, exc.row, exc.field)
    rows = np.arange(len(run))
    return ("run", run.query_texts(), run.docs.texts(rows), run.scores.tobytes(),
            run.block_start.tolist(), run.block_query, run.ranked)


@pytest.mark.parametrize(("name", "data", "fast"), CASES, ids=[c[0] for c in CASES])
def test_byte_reader_equals_line_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        name: str, data: bytes, fast: bool) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    if fast is COMPILED_ONLY:             # the compiled pass splits any whitespace; NumPy not
        fast = trec_run_bytes.COMPILED is not None
    assert (read_trec_run_spans(path) is not None) == fast
    got = _outcome(path)
    with _exact(monkeypatch):
        want = _outcome(path)
    assert got == want


def test_expected_errors_and_blocks(tmp_path: Path) -> None:
    """A few outcomes spelled out (the comparison above could pass with both sides wrong)."""
    by_name = {name: data for name, data, _ in CASES}

    def outcome(name: str) -> tuple:
        path = tmp_path / "run.txt"
        path.write_bytes(by_name[name])
        return _outcome(path)

    path = str(tmp_path / "run.txt")
    assert outcome("a repeated document") == ("error", path, 3, "corpus-id")
    assert outcome("NaN score") == ("error", path, 2, "score")
    assert outcome("a long id repeated") == ("error", path, 3, "corpus-id")
    assert outcome("long ids sharing their ends")[0] == "run"
    assert outcome("rank in hex") == ("error", path, 1, "rank")
    assert outcome("an empty Q0 field") == ("error", path, 1, None)
    assert outcome("seven fields") == ("error", path, 2, None)
    ties = outcome("canonical with ties")
    assert ties[1:3] == (["q1", "q1", "q1", "q2"], ["d1", "d2", "d3", "d1"])
    assert ties[4:] == ([0, 3], ("q1", "q2"), True)
    assert outcome("queries interleaved")[4:] == ([0, 1, 2], ("q1", "q2", "q1"), False)
    assert outcome("control byte in an id")[2] == ["d\x011", "d2"]
    assert outcome("score with an underscore")[3] == np.array([10.0]).tobytes()


def test_scores_equal_whichever_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ties, unjudged documents and a query the run misses: nDCG@1..3 per query are the same
    read on the bytes or by the line reader (and the same file with tabs, which only the line
    reader and the compiled pass both take)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 1\nq1 0 d9 3\nq2 0 d1 1\nq3 0 d4 2\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d2 1 2.5 t\nq1 Q0 u7 2 2.5 t\nq1 Q0 d1 3 2.5 t\nq1 Q0 d9 4 1 t\n"
                   "q2 Q0 u1 1 0.5 t\nq2 Q0 d1 2 0.5 t\n")
    tabs = tmp_path / "tabs.txt"
    tabs.write_text(run.read_text().replace(" ", "\t"))
    assert read_trec_run_spans(run) is not None
    assert (read_trec_run_spans(tabs) is not None) == (trec_run_bytes.COMPILED is not None)
    fast = score_qrels(qrels, {"a": run, "b": tabs}, k=[1, 2, 3], compare=False)
    with _exact(monkeypatch):
        slow = score_qrels(qrels, {"a": run, "b": tabs}, k=[1, 2, 3], compare=False)
    assert fast.queries == slow.queries == ("q1", "q2", "q3")
    for name in ("a", "b"):
        for m in fast.measures:
            assert fast.per_query[name][m].tobytes() == slow.per_query[name][m].tobytes()
            assert fast.per_query[name][m].tobytes() == fast.per_query["a"][m].tobytes()
    assert fast.per_query["a"]["nDCG@3"][2] == 0.0                 # q3: not in the run


@pytest.mark.parametrize("body, line, field", [
    (b"q1 Q0 d1 1 0.5 t\n\n\nq1 Q0 d2 2 nan t\n", 4, "score"),
    (b"\nq1 Q0 d1 1 0.5 t\n  \nq1 Q0 d1 2 0.4 t\n", 4, "corpus-id"),
    (b"q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4 t\nq1 Q0 d1 3 0.3 t\n", 4, "corpus-id"),
])
def test_errors_name_the_file_line_after_blank_lines(tmp_path: Path, body: bytes, line: int,
                                                     field: str):
    """Blank lines are no rows: an error names the line of the file, not the row of the
    table (both readers; the line reader takes a file with blank lines)."""
    path = tmp_path / "run.txt"
    path.write_bytes(body)
    readers = [lambda: read_run(path, str(path))]
    if field == "score":           # read_ranking takes repeats (the scorers refuse them)
        readers.append(lambda: runs_in.read_ranking(path, split=""))
    for reader in readers:
        with pytest.raises(InputError) as err:
            reader()
        assert (err.value.row, err.value.field) == (line, field)
