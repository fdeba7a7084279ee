"""A byte-order mark at the start of a local benchmark's text file (BEIR JSONL and TSV, TREC
topics/qrels/corpus, CSV) is dropped by every reader (issue 28): each file reads exactly as
the same file without one, first row included. The tiny benchmark here is SYNTHETIC."""

from __future__ import annotations

from pathlib import Path

import pytest

from rcp_data.core.io import BOM, read_json
from rcp_data.sources.local_files import subset_tables

FILES = {
    "beir": {
        "corpus.jsonl": '{"_id": "d1", "title": "T1", "text": "one"}\n'
                        '{"_id": "d2", "title": "", "text": "two"}\n',
        "queries.jsonl": '{"_id": "q1", "text": "first query"}\n',
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\n",
    },
    "trec": {
        "topics.tsv": "q1\tfirst query\n",
        "qrels.txt": "q1 0 d1 2\nq1 0 d2 0\n",
        "corpus.tsv": "d1\tT1\tone\nd2\t\ttwo\n",
    },
    "csv": {
        "corpus.csv": "id,title,text\nd1,T1,one\nd2,,two\n",
        "queries.csv": "id,text\nq1,first query\n",
        "qrels.csv": "query-id,corpus-id,score\nq1,d1,2\nq1,d2,0\n",
    },
}


def _write(folder: Path, files: dict[str, str], *, bom: bool) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((BOM if bom else b"") + text.encode("utf-8"))
    return folder


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_a_bom_changes_nothing_read(tmp_path, fmt):
    plain = subset_tables(_write(tmp_path / "plain", FILES[fmt], bom=False), fmt, "test")
    marked = subset_tables(_write(tmp_path / "bom", FILES[fmt], bom=True), fmt, "test")
    for a, b in zip(plain, marked, strict=True):
        assert a.rows == b.rows
    corpus, queries, qrels = marked
    assert [r.fields["id"] for r in corpus.rows] == ["d1", "d2"]
    assert [(r.fields["id"], r.fields["text"]) for r in queries.rows] == [("q1", "first query")]
    assert [(r.fields["query-id"], r.fields["corpus-id"], r.fields["score"])
            for r in qrels.rows] == [("q1", "d1", "2"), ("q1", "d2", "0")]


def test_json_with_a_bom_reads(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(BOM + b'{"a": [1, 2]}\n')
    assert read_json(path) == {"a": [1, 2]}
