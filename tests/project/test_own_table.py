"""`suite init` on files as teams keep them (issue 42, item 1): one table of (query, document,
grade) rows with sub-grades and no ids; a TREC folder that holds a corpus.jsonl.

Every benchmark here is SYNTHETIC, written by the test.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from rcp_data.cli.main import main
from rcp_data.core.specs import load_spec_file
from rcp_data.sources.registry import read_suite

DOCS = Path(__file__).resolve().parents[2] / "docs" / "jobs" / "own-benchmark.md"
SUBGRADES = ["0.0", "1.1", "1.2", "2.1", "2.2", "2.3"]
MAP = "0.0=0,1.1=1,1.2=1,2.1=2,2.2=2,2.3=2"


def _rows() -> pd.DataFrame:
    """SYNTHETIC: 2 grammars x 6 paragraphs, one query each; a paragraph per grammar written
    with a decomposed accent (NFD), to show ids are made from NFC text."""
    rows = []
    for g in (1, 2):
        query = f"How does SYNTHETIC language {g} mark the plural?"
        for p in range(6):
            text = f"SYNTHETIC paragraph {p} of grammar {g}: the plural takes -{'ak' * (p + 1)}."
            if p == 5:
                text = f"Cafe\u0301 {g} ne\u0301e"   # shares no term with the query
            rows.append({"grammar": f"lang {g}", "query": query, "paragraph": text,
                         "grade": SUBGRADES[p]})
    return pd.DataFrame(rows)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _sha_id(prefix: str, text: str) -> str:
    nfc = unicodedata.normalize("NFC", text)
    return f"{prefix}-{hashlib.sha256(nfc.encode('utf-8')).hexdigest()[:12]}"


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        frame.to_parquet(path)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    else:
        frame.to_csv(path, sep="\t" if path.suffix == ".tsv" else ",", index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet"])
def test_a_table_with_sub_grades_and_no_ids_becomes_a_suite(tmp_path, capsys, caplog, suffix):
    frame = _rows()
    table = _write(frame, tmp_path / f"grades{suffix}")
    spec_file = tmp_path / "grammars.toml"
    code, out, err = _run(capsys, "suite", "init", "grammars", "--from", str(table),
                          "--doc-column", "paragraph", "--subset-column", "grammar",
                          "--grade-map", MAP, "--grade-positive", "2", "--out", str(spec_file),
                          "--no-input", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert (got["format"], got["subsets"], got["grades"]) == ("table", ["lang_1", "lang_2"],
                                                              [0, 2])
    assert got["grade_counts"] == {"0": 2, "1": 4, "2": 6}
    assert got["detected"] is True
    assert ("format table (found from the file names; --format beir|trec|csv|table chooses "
            "another)") in caplog.messages
    spec = load_spec_file(spec_file)
    assert spec.source.format == "table" and spec.source.table == table.name
    assert spec.source.columns == {"query": "query", "document": "paragraph", "grade": "grade"}
    assert spec.source.grade_map["2.3"] == 2
    source = read_suite(spec)
    sub = source.subsets["lang_2"]
    texts = frame[frame.grammar == "lang 2"].paragraph.tolist()
    assert sub.corpus.to_frame()["id"].tolist() == [_sha_id("d", t) for t in texts]
    query = frame[frame.grammar == "lang 2"].iloc[0].query
    assert sub.queries.values.tolist() == [[_sha_id("q", query), query]]
    assert sub.qrels["score"].tolist() == [0, 1, 1, 2, 2, 2]
    # the NFD paragraph gets the id of its NFC spelling
    assert sub.corpus.to_frame()["id"].tolist()[5] == _sha_id("d", "Caf\u00e9 2 n\u00e9e")


def test_a_sub_grade_without_a_map_is_refused_with_file_row_and_value(tmp_path, capsys):
    table = _write(_rows(), tmp_path / "grades.csv")
    code, out, err = _run(capsys, "suite", "init", "grammars", "--from", str(table),
                          "--doc-column", "paragraph", "--grade-map", "0.0=0,1.1=1,1.2=1",
                          "--grade-positive", "2", "--out", str(tmp_path / "g.toml"),
                          "--no-input")
    assert code == 2
    lines = err.strip().splitlines()
    assert lines == [f"rcp-data suite: error: {table}, row 5, field 'grade': grade '2.1' is "
                     "not an integer; map it with --grade-map (e.g. 2.1=N) or [source] "
                     "grade_map"], err
    assert not (tmp_path / "g.toml").exists()


def test_a_missing_column_names_the_flag(tmp_path, capsys):
    table = _write(_rows().rename(columns={"paragraph": "body"}), tmp_path / "grades.csv")
    code, _, err = _run(capsys, "suite", "init", "grammars", "--from", str(table),
                        "--grade-map", MAP, "--grade-positive", "2", "--out", str(tmp_path / "g.toml"), "--no-input")
    assert code == 2
    assert err.strip().splitlines() == [
        f"rcp-data suite: error: {table}, row 1: no document column found among grammar, "
        "query, body, grade; name it with --doc-column"]


def test_a_trec_folder_with_a_jsonl_corpus_is_trec(tmp_path, capsys, caplog):
    trec = tmp_path / "trec"
    trec.mkdir()
    (trec / "topics.tsv").write_text("301\tword order\n", encoding="utf-8")
    (trec / "qrels.txt").write_text("301 0 D1 3\n301 0 D2 0\n", encoding="utf-8")
    (trec / "corpus.jsonl").write_text('{"_id": "D1", "text": "subject verb object"}\n'
                                       '{"_id": "D2", "text": "vowel harmony"}\n',
                                       encoding="utf-8")
    code, out, err = _run(capsys, "suite", "init", "t", "--from", str(trec), "--grade-positive",
                          "2", "--out", str(tmp_path / "t.toml"), "--no-input", "--json")
    assert code == 0, err
    assert json.loads(out)["format"] == "trec"
    assert caplog.messages[0].startswith("format trec (found from the file names")
    code, _, err = _run(capsys, "suite", "init", "t", "--from", str(trec), "--format", "beir",
                        "--grade-positive", "2", "--out", str(tmp_path / "b.toml"),
                        "--no-input")
    assert code == 2
    assert err.strip().splitlines() == [
        f"rcp-data suite: error: {trec}: no queries (queries.jsonl) for BEIR, but TREC "
        "topics: give --format trec"]


def test_the_documented_table_command_runs_as_written(tmp_path, capsys, monkeypatch):
    block = re.search(r"```bash\n(rcp-data suite init grammars --from grades\.csv.*?)```",
                      DOCS.read_text(encoding="utf-8"), flags=re.S).group(1)
    argv = shlex.split(block.replace("\\\n", " "))
    monkeypatch.chdir(tmp_path)
    _write(_rows(), tmp_path / "grades.csv")
    code, _, err = _run(capsys, *argv[1:], "--no-input")
    assert code == 0, err
    spec = load_spec_file(tmp_path / "specs" / "grammars.toml")
    assert spec.grade_positive == 2
    assert spec.source.grade_map == {k: int(v) for k, v in (p.split("=") for p in
                                                             MAP.split(","))}
    assert [s.name for s in spec.subsets] == ["lang_1", "lang_2"]
