"""The byte splitter of canonical TREC run files reads what the line reader reads, and declines
every other file (which the line reader then reads or names); ids as packed words compare,
look up and order as their strings do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rcp_data.runs.id_spans import IdSpans
from rcp_data.runs.qrels_runs import read_run
from rcp_data.runs.run_files import read_run_file
from rcp_data.runs.trec_run_bytes import read_trec_run_spans, split_trec_run
from rcp_data.scoring.metrics import byte_order_key

IDS = ["d1", "d10", "d2", "", "a" * 8, "a" * 9, "a" * 8 + "\x00", "é", "e", "\u00e9x" * 7,
       "q-104861", "q-1048610", "Z", "zz"]


def _run(path: Path) -> Path:
    rng = np.random.default_rng(3)
    lines = [f"q{q}é Q0 d{d}-\"x\"{'ü' * (d % 3)} {r + 1} {float(s)!r} tag\n" for q in range(5)
             for r, (d, s) in enumerate(zip(rng.permutation(40), np.round(rng.normal(size=40), 1),
                                            strict=True))]
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.usefixtures("either_run_reader")
def test_split_equals_line_reader(tmp_path: Path) -> None:
    path = _run(tmp_path / "run.txt")
    spans = read_trec_run_spans(path)
    slow = read_run_file(path)
    assert spans is not None and len(spans) == len(slow) == 200
    rows = np.arange(len(slow))
    assert read_run(path, str(path)).query_texts() == slow["query-id"].tolist()
    assert spans.docs.texts(rows) == slow["corpus-id"].tolist()
    assert spans.scores.tolist() == slow["score"].tolist()
    data = path.read_bytes()
    for variant in (b"\xef\xbb\xbf" + data, data[:-1]):        # a BOM; no final newline
        other = split_trec_run(variant)
        assert other is not None and other.scores.tolist() == slow["score"].tolist()
        assert other.docs.texts(rows) == slow["corpus-id"].tolist()


@pytest.mark.usefixtures("either_run_reader")
@pytest.mark.parametrize("text", [
    "q1 Q0 d1 1 0.5\n",                      # no tag
    "q1 Q0 d1 1 0.5 t x\n",                  # seven fields
    "q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4 t\n",  # a blank line
    "\nq1 Q0 d1 1 0.5 t\n",                  # a leading blank line
    "q1 Q0 d1 one 0.5 t\n",                  # rank not an integer
    "q1 Q0 d1 1.0 0.5 t\n",                  # rank not an integer
    "q1 Q0 d1 1 x t\n",                      # score not a number
    "q1 Q0 d1 0x1 0.5 t\n",                  # a rank Arrow reads and int() refuses
    "q1 Q0 d1 -0x1 0.5 t\n",
    "q1 Q0  1 0.5 t x\n",                    # an empty corpus-id
    "q1 Q0 d\u00a01 1 0.5 t\n",              # a no-break space str.split() splits on
    "q1 Q0 d\x0b1 1 0.5 t\n",                # a control byte str.split() splits on: 7 fields
    "q1 Q0 d\x011 1 0.5 t\n",                # a control byte it does not split on
    "",
])
def test_split_declines_other_shapes(text: str) -> None:
    assert split_trec_run(text.encode("utf-8")) is None


@pytest.mark.parametrize("text", [
    "q1\tQ0\td1\t0\t0.5\tt\nq1\tQ0\td2\t1\t0.25\tt\n",  # tabs, ranks from 0
    "q1  Q0 d1 1 0.5 t\nq1 \t Q0\td2 2 .25 t\n",          # runs of spaces and tabs
    " q1 Q0 d1 1 0.5 t\n",                               # a leading space
    "q1 Q0 d1 1 0.5 t \n",                               # a trailing space
    "q1 Q0 d1 1 0.5 t\r\nq1 Q0 d2 2 4E-1 t\r\n",          # CRLF, an exponent
    "q1 x d1 1 +5 t\nq1 Q1 d2 2 -inf t\n",                 # any second field, float() forms
])
def test_compiled_split_reads_any_whitespace(tmp_path: Path, text: str) -> None:
    """The compiled pass splits fields as ``str.split()`` does (what trec_eval takes), so the
    distributed shapes (tabs, runs of spaces, CRLF) stay on the fast path and read as the line
    reader reads them."""
    path = tmp_path / "run.txt"
    path.write_bytes(text.encode("utf-8"))
    spans = read_trec_run_spans(path)
    slow = read_run_file(path)
    assert spans is not None
    rows = np.arange(len(slow))
    assert spans.docs.texts(rows) == slow["corpus-id"].tolist()
    assert spans.scores.tolist() == slow["score"].tolist()
    starts = spans.checks.block_start
    assert spans.block_queries.texts(np.arange(len(starts))) == \
        slow["query-id"].iloc[starts].tolist()


@pytest.mark.usefixtures("either_run_reader")
def test_split_declines_bad_utf8_and_accepts_signed_ranks() -> None:
    assert split_trec_run(b"q1 Q0 d\xff 1 0.5 t\n") is None
    got = split_trec_run(b"q1 Q0 d1 -3 0.5 t\nq1 Q0 d2 123456789 -1e-05 t\n")
    assert got is not None and got.scores.tolist() == [0.5, -1e-05]


def test_words_and_fingerprints_are_exact_equality() -> None:
    spans = IdSpans.of(IDS + IDS[::-1])
    words = spans.words()
    n = len(IDS)
    same = (spans.lengths[:, None] == spans.lengths[None, :]) & \
        (words[:, None, :] == words[None, :, :]).all(axis=2)
    truth = np.array([[a == b for b in IDS + IDS[::-1]] for a in IDS + IDS[::-1]])
    assert (same == truth).all()
    fp = spans.fingerprint()
    assert (fp[:n] == fp[n:][::-1]).all()
    assert len(set(fp[:n].tolist())) == n
    wide = spans.words(width=words.shape[1] + 2)                # width does not matter
    assert (spans.fingerprint(wide) == fp).all()
    short = IdSpans.of(["d1", "e"])
    assert (short.fingerprint() == fp[[0, 8]]).all()


def test_byte_rank_orders_as_strcmp() -> None:
    spans = IdSpans.of(IDS)
    rank = spans.byte_rank()
    assert np.argsort(rank).tolist() == np.argsort(byte_order_key(IDS)).tolist()
    assert [IDS[i] for i in np.argsort(rank)] == sorted(IDS, key=lambda s: s.encode("utf-8"))


def test_spans_of_a_sliced_arrow_column() -> None:
    arr = pa.chunked_array([pa.array(IDS[:5]), pa.array(IDS[5:])]).combine_chunks()[3:11]
    spans = IdSpans.from_arrow(arr)
    assert spans.texts(np.arange(len(spans))) == IDS[3:11]
    large = IdSpans.from_arrow(pa.array(IDS, type=pa.large_string()))
    assert (large.fingerprint() == IdSpans.of(IDS).fingerprint()).all()


def test_quick_keys_equal_for_equal_ids() -> None:
    spans = IdSpans.of(IDS + IDS[::-1])
    key = spans.quick_key()
    n = len(IDS)
    assert (key[:n] == key[n:][::-1]).all()
    assert len(set(key[:n].tolist())) == n                     # these distinct ids: distinct
    ends = IdSpans.of(["a" * 8 + "X" + "b" * 8, "a" * 8 + "Y" + "b" * 8])
    assert ends.quick_key()[0] == ends.quick_key()[1]           # shared: callers confirm
