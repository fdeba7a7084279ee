"""Strict inputs (issue 14, item 1): every bad input of a build is refused before anything is
written, in one line naming file, row and field, with exit 2.

Each case corrupts the REAL builder inputs of the SYNTHETIC demo suite once (or, for the
source tables, what the demo's reader returns) and runs ``rcp-data build``; afterwards nothing
is in ``--out`` or beside it, and ``--inputs`` is byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rcp_data.cli import main
from rcp_data.sources.base import CorpusReader, SuiteSource

DATE = "2026-11-30"
THETAS = "judge/thetas.parquet"
CRITERIA = "judge/criteria.parquet"
RUN = "runs/demo__alpha-reranker.parquet"


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _build(tmp_path: Path, inputs: Path, capsys) -> tuple[int, str]:
    """Run the build; check that it left nothing behind; return (exit code, stderr)."""
    before = _digest(inputs)
    capsys.readouterr()
    out = tmp_path / "out"
    code = main(["-q", "build", "demo", "--inputs", str(inputs), "--out", str(out),
                 "--date", DATE])
    err = capsys.readouterr().err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs"]   # no temporary left
    assert _digest(inputs) == before
    return code, err


@pytest.fixture
def inputs(demo_data, tmp_path) -> Path:
    """A private copy of the demo's builder inputs."""
    return Path(shutil.copytree(demo_data / "inputs", tmp_path / "inputs"))


def _table(path: Path) -> pd.DataFrame:
    return pq.read_table(path).to_pandas()


def _write(frame: pd.DataFrame, path: Path) -> None:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


# -- builder inputs, each corrupted once -----------------------------------------------------------
def _theta(value) -> Callable[[Path], str]:
    def corrupt(root: Path) -> str:
        frame = _table(root / THETAS)
        frame.loc[4, "theta"] = value
        _write(frame, root / THETAS)
        return (f"{root / THETAS}, row 5, field 'theta': theta {value!r} is not a finite "
                "number")
    return corrupt


def _theta_text(root: Path) -> str:
    frame = _table(root / THETAS)
    frame["theta"] = frame["theta"].map(str)
    _write(frame, root / THETAS)
    return f"{root / THETAS}, field 'theta': column 'theta' holds str values, expected numbers"


def _score_text(root: Path) -> str:
    frame = _table(root / RUN)
    frame["score"] = frame["score"].map(lambda v: f"{v:.3f}")
    _write(frame, root / RUN)
    return f"{root / RUN}, field 'score': column 'score' holds str values, expected numbers"


def _score_nan(root: Path) -> str:
    frame = _table(root / RUN)
    frame.loc[9, "score"] = np.nan
    _write(frame, root / RUN)
    return f"{root / RUN}, row 10, field 'score': score nan is not a finite number"


def _first_stage_inf(root: Path) -> str:
    path = root / "first_stage/octen.parquet"
    frame = _table(path)
    frame.loc[2, "score"] = -np.inf
    _write(frame, path)
    return f"{path}, row 3, field 'score': score -inf is not a finite number"


def _truncated(root: Path) -> str:
    data = (root / THETAS).read_bytes()
    (root / THETAS).write_bytes(data[: len(data) // 2])
    return (f"{root / THETAS}: cannot read parquet (Parquet magic bytes not found in footer. "
            "Either the file is corrupted or this is not a parquet file.)")


def _trec_not_utf8(root: Path) -> str:
    frame = _table(root / RUN)
    lines = [f"{q} Q0 {d} {i + 1} {s} run" for i, (q, d, s) in
             enumerate(zip(frame["query-id"], frame["corpus-id"], frame["score"], strict=True))]
    lines[6] = lines[6].replace(" run", " r\xe9sum\xe9")
    trec = root / "runs/alpha.trec"
    trec.write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    (root / RUN).unlink()
    runs = json.loads((root / "runs/runs.json").read_text())
    runs[0]["file"] = "alpha.trec"
    (root / "runs/runs.json").write_text(json.dumps(runs))
    at = lines[6].encode("latin-1").index(b"\xe9")
    return f"{trec}, row 7: not UTF-8 text (invalid continuation byte at byte {at})"


def _theta_duplicate(root: Path) -> str:
    frame = _table(root / THETAS)
    extra = frame.iloc[[3]].assign(theta=frame["theta"].iloc[3] + 1.0)
    _write(pd.concat([frame, extra], ignore_index=True), root / THETAS)
    q, d = frame["query-id"].iloc[3], frame["corpus-id"].iloc[3]
    return (f"{root / THETAS}, row {len(frame) + 1}: duplicate theta for query {q!r}, document "
            f"{d!r} (rows 4 and {len(frame) + 1}, disagreeing on theta)")


def _run_duplicate(root: Path) -> str:
    frame = _table(root / RUN)
    extra = frame.iloc[[0]].assign(score=frame["score"].iloc[0] - 2.0)
    _write(pd.concat([frame.iloc[:5], extra, frame.iloc[5:]], ignore_index=True), root / RUN)
    q, d = frame["query-id"].iloc[0], frame["corpus-id"].iloc[0]
    return (f"{root / RUN}, row 6: duplicate line for query {q!r}, document {d!r} (rows 1 and "
            "6, disagreeing on score)")


def _verdict_duplicate(root: Path) -> str:
    frame = _table(root / CRITERIA)
    extra = frame.iloc[[2]].assign(C1=np.int8(1 - frame["C1"].iloc[2]))
    _write(pd.concat([frame, extra], ignore_index=True), root / CRITERIA)
    q, call, d = frame["query-id"].iloc[2], frame["call_index"].iloc[2], frame["corpus-id"].iloc[2]
    return (f"{root / CRITERIA}, row {len(frame) + 1}: duplicate verdict for query {q!r}, "
            f"call_index {int(call)}, document {d!r} (rows 3 and {len(frame) + 1}, disagreeing on "
            "C1)")


def _no_reranker(root: Path) -> str:
    runs = json.loads((root / "runs/runs.json").read_text())
    (root / "runs/runs.json").write_text(json.dumps([r for r in runs if r["is_judge"]]))
    return (f"{root / 'runs/runs.json'}: no reranker run: a release needs at least one (judge "
            "strategies alone do not make one)")


def _judge_short_slash(root: Path) -> str:
    path = root / "judge/judge.json"
    judge = json.loads(path.read_text())
    judge["short"] = "qwen/35"
    path.write_text(json.dumps(judge))
    return (f"{path}, field 'short': short name 'qwen/35' may hold only letters, digits, '.', "
            "'_' and '-' (it names provenance/item_params.<short>.json)")


def _empty_first_stage(root: Path) -> str:
    for path in (root / "first_stage").iterdir():
        path.unlink()
    return (f"{root / 'first_stage'}: no first-stage run of embed_v4, octen (the folder holds "
            "no run; expected <retriever>.trec or .parquet for embed_v4, bm25, octen, bm25 "
            "computed when absent)")


def _unknown_retriever(root: Path) -> str:
    shutil.copy(root / "first_stage/octen.parquet", root / "first_stage/splade.parquet")
    return (f"{root / 'first_stage/splade.parquet'}: 'splade' is not a first-stage retriever "
            "of suite 'demo' (expected embed_v4, bm25, octen)")


INPUT_CASES = {
    "theta-nan": _theta(float("nan")),
    "theta-inf": _theta(float("inf")),
    "theta-text": _theta_text,
    "run-score-text": _score_text,
    "run-score-nan": _score_nan,
    "first-stage-inf": _first_stage_inf,
    "truncated-parquet": _truncated,
    "trec-not-utf8": _trec_not_utf8,
    "theta-duplicate": _theta_duplicate,
    "run-duplicate": _run_duplicate,
    "verdict-duplicate": _verdict_duplicate,
    "no-reranker-run": _no_reranker,
    "judge-short-slash": _judge_short_slash,
    "empty-first-stage": _empty_first_stage,
    "unknown-retriever": _unknown_retriever,
}


@pytest.mark.parametrize("case", list(INPUT_CASES))
def test_bad_builder_input_exits_2_naming_it(case, inputs, tmp_path, capsys):
    expected = INPUT_CASES[case](inputs)
    code, err = _build(tmp_path, inputs, capsys)
    assert (code, err) == (2, f"rcp-data build: error: {expected}\n")


# -- source tables, each corrupted once (what the demo's reader returns) ---------------------------
ORIGIN = "the SYNTHETIC {} of demo subset {}"


def _frame(corpus: CorpusReader) -> pd.DataFrame:
    return corpus.to_frame()


def _with_corpus(sub, frame: pd.DataFrame) -> None:
    sub.corpus = CorpusReader.from_frame(frame, source=ORIGIN.format("corpus", sub.name))


def _excluded_string(src: SuiteSource) -> str:
    ex = src.subsets["alpha"].excluded
    ex.at[1, "excluded-corpus-ids"] = "alpha-q001"  # a string, not a list
    return (f"{ORIGIN.format('excluded', 'alpha')}, row 2, field 'excluded-corpus-ids': "
            "'alpha-q001' is not a list of document ids (query 'alpha-q001')")


def _excluded_unknown(src: SuiteSource) -> str:
    ex = src.subsets["alpha"].excluded
    ex.at[2, "excluded-corpus-ids"] = ["alpha-q002", "alpha-nowhere"]
    return (f"{ORIGIN.format('excluded', 'alpha')}, row 3, field 'excluded-corpus-ids': "
            "excluded document 'alpha-nowhere' of query 'alpha-q002' is not in the corpus")


def _grade(value) -> Callable[[SuiteSource], str]:
    def corrupt(src: SuiteSource) -> str:
        qrels = src.subsets["beta"].qrels
        qrels["score"] = qrels["score"].astype(np.float64)
        qrels.loc[7, "score"] = value
        return (f"{ORIGIN.format('qrels', 'beta')}, row 8, field 'score': grade {value!r} is "
                "not an integer in 0..2 (the suite's [source] grades)")
    return corrupt


def _duplicate_document(src: SuiteSource) -> str:
    sub = src.subsets["beta"]
    frame = _frame(sub.corpus)
    copy = frame.iloc[[10]].assign(text="SYNTHETIC another text under the same id")
    _with_corpus(sub, pd.concat([frame, copy], ignore_index=True))
    return (f"{ORIGIN.format('corpus', 'beta')}, row {len(frame) + 1}, field 'id': document id "
            f"{frame['id'].iloc[10]!r} appears twice")


def _empty_document(value) -> Callable[[SuiteSource], str]:
    def corrupt(src: SuiteSource) -> str:
        sub = src.subsets["beta"]
        frame = _frame(sub.corpus)
        frame.loc[17, "text"] = value
        _with_corpus(sub, frame)
        return (f"{ORIGIN.format('corpus', 'beta')}, row 18, field 'text': document "
                f"{frame['id'].iloc[17]!r} has empty text (1 empty in all); empty documents are "
                "an error unless the suite's spec allows them ([source] allow_empty_documents)")
    return corrupt


def _duplicate_query(src: SuiteSource) -> str:
    q = src.subsets["alpha"].queries
    src.subsets["alpha"].queries = pd.concat([q, q.iloc[[3]]], ignore_index=True)
    return (f"{ORIGIN.format('queries', 'alpha')}, row {len(q) + 1}: duplicate query id "
            f"'alpha-q003' (rows 4 and {len(q) + 1})")


def _empty_query(src: SuiteSource) -> str:
    src.subsets["alpha"].queries.loc[5, "text"] = "  "
    return f"{ORIGIN.format('queries', 'alpha')}, row 6, field 'text': query 'alpha-q005' has empty text"


def _qrel_disagrees(src: SuiteSource) -> str:
    qrels = src.subsets["beta"].qrels
    row = qrels.iloc[[0]].assign(score=2 if qrels["score"].iloc[0] != 2 else 1)
    src.subsets["beta"].qrels = pd.concat([qrels, row], ignore_index=True)
    return (f"{ORIGIN.format('qrels', 'beta')}, row {len(qrels) + 1}: duplicate qrel for query "
            f"{qrels['query-id'].iloc[0]!r}, document {qrels['corpus-id'].iloc[0]!r} (rows 1 "
            f"and {len(qrels) + 1}, disagreeing on score)")


def _qrel_unknown_document(src: SuiteSource) -> str:
    src.subsets["beta"].qrels.loc[4, "corpus-id"] = "beta-nowhere"
    return (f"{ORIGIN.format('qrels', 'beta')}, row 5, field 'corpus-id': qrel names document "
            "'beta-nowhere', which is not in the corpus")


SOURCE_CASES = {
    "excluded-string": _excluded_string,
    "excluded-unknown-id": _excluded_unknown,
    "grade-1.5": _grade(1.5),
    "grade-nan": _grade(float("nan")),
    "grade-minus-1": _grade(-1.0),
    "grade-above-range": _grade(3.0),
    "duplicate-document-id": _duplicate_document,
    "empty-document": _empty_document(""),
    "null-document": _empty_document(None),
    "duplicate-query-id": _duplicate_query,
    "empty-query": _empty_query,
    "qrels-disagree": _qrel_disagrees,
    "qrel-unknown-document": _qrel_unknown_document,
}


@pytest.mark.parametrize("case", list(SOURCE_CASES))
def test_bad_source_table_exits_2_naming_it(case, inputs, tmp_path, capsys, monkeypatch):
    import rcp_data.sources.synthetic as demo_suite

    real = demo_suite.read_suite
    expected: list[str] = []

    def corrupted(spec, options=None):
        src = real(spec, options)
        expected.append(SOURCE_CASES[case](src))
        return src

    monkeypatch.setattr(demo_suite, "read_suite", corrupted)
    code, err = _build(tmp_path, inputs, capsys)
    assert (code, err) == (2, f"rcp-data build: error: {expected[0]}\n")


def test_empty_documents_allowed_by_the_spec_are_counted_in_the_card(
        demo_data, inputs, tmp_path, capsys, monkeypatch):
    """An explicit per-subset allowance in the spec: the build passes and the card counts the
    empty document (one the first stage retrieves below the pool, so the judge's inputs stay
    valid; that empty documents never enter a pool is tested with the NanoBEIR reader)."""
    import rcp_data.sources.synthetic as demo_suite
    from rcp_data.core import specs

    builders = tmp_path / "builders"
    shutil.copytree(specs.builders_dir(), builders)
    toml = (builders / "demo.toml").read_text()
    (builders / "demo.toml").write_text(toml.replace(
        "grade_positive = 1\n", 'grade_positive = 1\nallow_empty_documents = ["beta"]\n'))
    monkeypatch.setenv("RCP_DATA_BUILDERS", str(builders))
    pooled = set(pq.read_table(demo_data / "release/provenance/pool/beta.parquet")["corpus-id"]
                 .to_pylist())
    retrieved = pq.read_table(inputs / "first_stage/embed_v4.parquet")["corpus-id"].to_pylist()
    doc = next(d for d in retrieved if d.startswith("beta-") and d not in pooled)
    real = demo_suite.read_suite

    def with_empty(spec, options=None):
        src = real(spec, options)
        frame = src.subsets["beta"].corpus.to_frame()
        frame.loc[frame["id"] == doc, "text"] = ""
        src.subsets["beta"].corpus = CorpusReader.from_frame(frame)
        return src

    monkeypatch.setattr(demo_suite, "read_suite", with_empty)
    out = tmp_path / "out"
    assert main(["-q", "build", "demo", "--inputs", str(inputs), "--out", str(out),
                 "--date", DATE]) == 0
    assert doc not in set(pq.read_table(out / "provenance/pool/beta.parquet")["corpus-id"]
                          .to_pylist())
    manifest = json.loads((out / "provenance/build_manifest.json").read_text())
    assert (manifest["counts"]["alpha"]["empty_documents"],
            manifest["counts"]["beta"]["empty_documents"]) == (0, 1)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "**Empty documents.** 1 documents are empty upstream (beta); they enter no pool." in card


def test_a_spec_without_grades_cannot_build(inputs, tmp_path, capsys, monkeypatch):
    from rcp_data.core import specs

    builders = tmp_path / "builders"
    shutil.copytree(specs.builders_dir(), builders)
    toml = (builders / "demo.toml").read_text()
    (builders / "demo.toml").write_text(toml.replace("grades = [0, 2]", ""))
    monkeypatch.setenv("RCP_DATA_BUILDERS", str(builders))
    capsys.readouterr()
    assert main(["-q", "build", "demo", "--inputs", str(inputs), "--out",
                 str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"rcp-data build: error: {builders / 'demo.toml'}, field 'source.grades': the suite "
        "spec declares no grade range ([source] grades = [lowest, highest])\n")
    assert not (tmp_path / "out").exists()


def test_an_all_null_theta_bt_is_allowed_an_all_null_theta_is_not(tmp_path):
    from rcp_data.building.input_checks import check_thetas
    from rcp_data.core.errors import InputError

    path = tmp_path / "thetas.parquet"
    frame = pd.DataFrame({"query-id": ["q1", "q2"], "corpus-id": ["d1", "d1"],
                          "theta": [0.5, -1.0], "theta_bt": [None, None]})
    _write(frame, path)
    check_thetas(_table(path), str(path))                 # theta_bt may be null throughout
    _write(frame.assign(theta=None), path)
    with pytest.raises(InputError) as err:
        check_thetas(_table(path), str(path))
    assert err.value.message == (f"{path}, row 1, field 'theta': theta null is not a finite "
                                 "number")
