"""The Arrow reader of canonical TREC run files reads what the line reader reads, and declines
every other file (which the line reader then reads or names)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rcp_data.core.errors import InputError
from rcp_data.runs.run_files import read_run_file, read_trec_run_table
from rcp_data.runs.runs_in import read_ranking, read_ranking_table


def _canonical(path: Path) -> Path:
    rng = np.random.default_rng(3)
    lines = [f"q{q} Q0 d{d}-\"x\" {r + 1} {float(s)!r} tag\n" for q in range(4)
             for r, (d, s) in enumerate(zip(rng.permutation(30), np.round(rng.normal(size=30), 1),
                                            strict=True))]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_fast_reader_equals_line_reader(tmp_path: Path) -> None:
    path = _canonical(tmp_path / "run.txt")
    fast = read_trec_run_table(path)
    slow = read_run_file(path)
    assert fast is not None and fast.num_rows == len(slow) == 120
    assert fast.column("query-id").to_pylist() == slow["query-id"].tolist()
    assert fast.column("corpus-id").to_pylist() == slow["corpus-id"].tolist()
    assert fast.column("rank").to_pylist() == slow["rank"].tolist()
    assert fast.column("score").to_pylist() == slow["score"].tolist()
    table = read_ranking_table(path, split="")
    assert table.to_pandas().equals(read_ranking(path, split="")[["query-id", "corpus-id",
                                                                     "score"]])


@pytest.mark.parametrize("text", [
    "q1 Q0 d1 1 0.5\n",                      # no tag
    "q1\tQ0\td1\t1\t0.5\tt\n",               # tabs
    "q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4 t\n",  # a blank line
    "q1  Q0 d1 1 0.5 t\n",                   # two spaces
    "q1 Q0 d1 one 0.5 t\n",                  # rank not an integer
    "q1 Q0 d1 1 x t\n",                      # score not a number
    "q1 Q0 d1 1 0.5 t\r\n",                  # CRLF
    "q1  d1 1 0.5 t\n",                      # an empty Q0: six Arrow columns, five fields
    "q1 Q0  1 0.5 t x\n",                    # an empty corpus-id
    "q1 Q0 d1 0x1 0.5 t\n",                  # a rank Arrow reads and int() refuses
])
def test_fast_reader_declines_other_shapes(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run.txt"
    path.write_text(text, encoding="utf-8")
    assert read_trec_run_table(path) is None


def test_declined_file_still_read_or_named(tmp_path: Path) -> None:
    good = tmp_path / "tabs.txt"
    good.write_text("q1\tQ0\td1\t1\t0.5\tt\nq1\tQ0\td2\t2\t0.25\tt\n", encoding="utf-8")
    assert read_ranking_table(good, split="").column("score").to_pylist() == [0.5, 0.25]
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 x t\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_ranking_table(bad, split="")
    assert err.value.row == 2 and err.value.field == "score"
    inf = tmp_path / "inf.txt"
    inf.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 inf t\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_ranking_table(inf, split="")
    assert err.value.row == 2 and err.value.field == "score"


@pytest.mark.parametrize("data", [
    "q1 Q0 d\u00a01 1 0.5 t\n".encode(),     # a no-break space: str.split() splits on it
    "q1 Q0 d\u30001 1 0.5 t\n".encode(),     # an ideographic space
    b"q1 Q0 d\x0b1 1 0.5 t\n",               # a control byte inside an id
    b"q1 Q0 d1 1 0.5 t\xff\n",               # not UTF-8 (in the tag)
])
def test_fast_reader_accepts_nothing_the_line_reader_reads_otherwise(tmp_path: Path,
                                                                   data: bytes) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    assert read_trec_run_table(path) is None
    try:
        slow = read_run_file(path)
    except InputError:
        return                                   # refused, naming the line
    table = read_ranking_table(path, split="")   # read as the line reader reads it
    assert table.column("corpus-id").to_pylist() == slow["corpus-id"].tolist()
