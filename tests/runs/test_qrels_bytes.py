"""The NumPy split of a canonical TREC qrels file gives the pairs and grades the line reader
(``str.split()``, ``int()``) gives, on the real DL19 and DL20 qrels as distributed and with tabs;
any other file is declined (None) and read, with the same scores, by the exact reader."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from rcp_data.runs.qrels_bytes import read_qrels_spans, split_qrels
from rcp_data.runs.qrels_files import read_qrels


def _pairs(spans) -> list[tuple[str, str, int]]:
    index = np.arange(len(spans))
    return list(zip(spans.queries.texts(index), spans.docs.texts(index),
                    spans.grades.tolist(), strict=True))


def _line_reader(text: str) -> list[tuple[str, str, int]]:
    return [(p[0], p[2], int(p[3])) for p in (line.split() for line in text.splitlines()) if p]


@pytest.mark.parametrize("name", ["qrels.dl19-passage.txt", "qrels.dl20-passage.txt"])
def test_real_qrels_split_as_the_line_reader(name: str, trecdl_data: Path, tmp_path: Path
                                             ) -> None:
    text = (trecdl_data / name).read_text()
    spans = read_qrels_spans(trecdl_data / name)
    assert spans is not None and _pairs(spans) == _line_reader(text)
    frame = read_qrels(trecdl_data / name)
    assert _pairs(spans) == list(zip(frame["query-id"], frame["corpus-id"],
                                     frame["grade"].tolist(), strict=True))
    tabs = tmp_path / (name + ".gz")
    tabs.write_bytes(gzip.compress(text.replace(" ", "\t").encode()))
    assert _pairs(read_qrels_spans(tabs)) == _line_reader(text)


def test_grades_and_ids_as_int_and_split_read_them() -> None:
    text = "q1 0 d1 -1\nq1 0 d\u00e92 12\nq\u00e9 Q0 d3 007\nq2 0 d4 123456789012345678"
    assert _pairs(split_qrels(text.encode())) == _line_reader(text)


@pytest.mark.parametrize("text", [
    "q1 0 d1 1\n\nq1 0 d2 0\n",          # a blank line
    "q1  0 d1 1\n",                      # two spaces
    "q1 0 d1 1.0\n",                     # a float grade (int() refuses it, the reader mends)
    "q1 0 d1 +1\n",
    "q1 0 d1 1\r\n",                     # a carriage return
    "q1 0 d1\n",                         # three fields
    "q1 0 d1 1 x\n",                     # five fields
    " q1 0 d1 1\n",
    "query-id\tcorpus-id\tgrade\nq1\td1\t1\n",
    "q1 0 d\u20031 1\n",                 # a wide space: str.split() splits there
    "q1 0 d1 1234567890123456789\n",     # 19 digits
    "",
])
def test_other_files_are_declined(text: str) -> None:
    assert split_qrels(text.encode()) is None


def test_declined_files_score_as_canonical_ones(tmp_path: Path, trecdl_data: Path) -> None:
    from rcp_data.scoring.qrels_score import score_qrels

    src = (trecdl_data / "qrels.dl19-passage.txt").read_text()
    plain = tmp_path / "plain.txt"
    plain.write_text(src)
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(src.replace("\n", "\r\n").encode())
    assert read_qrels_spans(crlf) is None
    lines = [line.split() for line in src.splitlines()]
    run = tmp_path / "run.txt"                  # SYNTHETIC: each query's judged documents
    run.write_text("".join(f"{q} Q0 {d} {i} {-i}.0 r\n" for i, (q, _, d, _) in
                           enumerate(lines[::7])))
    measures = ["nDCG@10", "AP(rel=2)", "P@5"]
    a = score_qrels(plain, [run], measures=measures, compare=False)
    b = score_qrels(crlf, [run], measures=measures, compare=False)
    assert a.queries == b.queries
    for m in measures:
        assert np.array_equal(a.per_query["r"][m], b.per_query["r"][m])


def test_wide_space_is_every_space_str_split_splits_above_ascii() -> None:
    from rcp_data.runs.run_files import WIDE_SPACE

    spaces = {chr(c) for c in range(0x80, 0x110000) if chr(c).isspace()}
    found = {chr(c) for c in range(0x80, 0x110000) if WIDE_SPACE.fullmatch(chr(c))}
    assert found == spaces
