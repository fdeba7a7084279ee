"""Bad input to ``score`` and ``replay`` (issue 28, Deliver 6): a byte-order mark is dropped by
every text reader (the first row is kept); a non-finite gain in a release, a TREC run line
without six fields, mteb predictions of another shape and a run name that could split a table
row are each one line on stderr naming the file (and row and field), exit 2, no file changed.
The demo release is SYNTHETIC."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rcp_data.cli import main
from rcp_data.core.io import BOM

MODEL = "demo/beta-reranker"


def _one_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"rcp-data {command}: error: "), err
    return err[len(f"rcp-data {command}: error: "):-1]


def _digests(*roots: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for root in roots for p in sorted(Path(root).rglob("*")) if p.is_file()}


def _score_json(capsys, *argv: str) -> dict:
    code = main(["-q", "score", *argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out)
    for run in data.get("runs", {}).values():
        run.pop("source", None)              # the file's path: the only thing allowed to differ
    data.pop("qrels", None)
    return data


def _run_lines(release: Path) -> list[str]:
    """The demo's beta reranker as a TREC run, each query's best-scored document first (so the
    first line is the first query's top document: losing it moves the score)."""
    frames = [pq.read_table(p).to_pandas() for p in sorted(release.glob("provenance/runs/*"))]
    runs = pd.concat(frames, ignore_index=True)
    run = runs[runs["model"] == MODEL].sort_values(["query-id", "score"],
                                                   ascending=[True, False])
    return [f"{q} Q0 {d} {i + 1} {s!r} run\n" for i, (q, d, s) in   # the tag names the run
            enumerate(run[["query-id", "corpus-id", "score"]].itertuples(index=False))]


# -- a byte-order mark ---------------------------------------------------------------------------
def test_a_run_with_a_bom_scores_exactly_as_without_one(demo_release_v1, tmp_path, capsys):
    lines = _run_lines(demo_release_v1)
    text = "".join(lines).encode("utf-8")
    for name, data in {"plain": text, "bom": BOM + text,
                       "cut": "".join(lines[1:]).encode("utf-8")}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.txt").write_bytes(data)
    got = {name: _score_json(capsys, "--dataset", str(demo_release_v1),
                             str(tmp_path / name / "run.txt"))
           for name in ("plain", "bom", "cut")}
    assert got["bom"] == got["plain"]
    assert got["plain"]["runs"]["run"]["unknown_queries"] == 0
    # the first row matters: without it the run scores otherwise (what a lost row did)
    assert got["cut"]["metrics"] != got["plain"]["metrics"]


@pytest.mark.parametrize("layout", ["trec", "tsv", "csv"])
def test_qrels_with_a_bom_score_exactly_as_without_one(tmp_path, capsys, layout):
    # q1's one positive is the first row: a reader that lost it would drop the query
    rows = [("q1", "a", 2), ("q1", "b", 0), ("q2", "c", 1), ("q2", "x", 0)]
    if layout == "trec":
        text = "".join(f"{q} 0 {d} {g}\n" for q, d, g in rows)
    else:
        sep = "\t" if layout == "tsv" else ","
        text = sep.join(("query-id", "corpus-id", "grade")) + "\n" + "".join(
            f"{q}{sep}{d}{sep}{g}\n" for q, d, g in rows)
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 b 1 2.0 run\nq1 Q0 a 2 1.0 run\nq2 Q0 x 1 5.0 run\n"
                   "q2 Q0 c 2 4.0 run\n", encoding="utf-8")
    suffix = ".csv" if layout == "csv" else ".txt"
    for name, data in {"plain": text.encode(), "bom": BOM + text.encode()}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / f"qrels{suffix}").write_bytes(data)
    got = {name: _score_json(capsys, "--qrels", str(tmp_path / name / f"qrels{suffix}"),
                             str(run)) for name in ("plain", "bom")}
    assert got["bom"] == got["plain"]
    assert got["plain"]["queries"] == 2
    # q1: the positive at rank 2 -> 1/log2(3); q2: at rank 2 of grade 1 -> the same
    mean = got["plain"]["runs"]["run"][got["plain"]["measures"][0]]["all"]
    assert mean == pytest.approx(1 / np.log2(3))


def test_mteb_predictions_with_a_bom_read_as_without_one(demo_release_v1, tmp_path, capsys):
    frames = [pq.read_table(p).to_pandas() for p in sorted(demo_release_v1.glob(
        "provenance/runs/*"))]
    runs = pd.concat(frames, ignore_index=True)
    part = runs[(runs["model"] == MODEL) & runs["query-id"].str.startswith("alpha")]
    preds: dict = {}
    for q, d, s in part[["query-id", "corpus-id", "score"]].itertuples(index=False):
        preds.setdefault(q, {})[d] = float(s)
    text = json.dumps({"mteb_model_meta": {"model_name": "x", "revision": "1"},
                       "alpha": {"test": preds}}).encode()
    for name, data in {"plain": text, "bom": BOM + text}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "DemoAlphaRCPReranking_predictions.json").write_bytes(data)
    got = {name: _score_json(capsys, "--dataset", str(demo_release_v1), str(tmp_path / name),
                             "--name", "preds") for name in ("plain", "bom")}
    assert got["bom"] == got["plain"]
    assert got["plain"]["runs"]["preds"]["queries_scored"] == 12


# -- a non-finite gain in a release --------------------------------------------------------------
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("command", ["replay", "score"])
def test_a_non_finite_gain_is_refused(demo_release_v1, tmp_path, capsys, value, command):
    root = shutil.copytree(demo_release_v1, tmp_path / "release")
    qrels = root / "alpha" / "qrels.parquet"
    table = pq.read_table(qrels)
    gain = table.column("gain").to_numpy().copy()
    gain[7] = value
    pq.write_table(table.set_column(table.column_names.index("gain"), "gain", pa.array(gain)),
                   qrels)
    run = tmp_path / "run.txt"
    run.write_text("".join(_run_lines(demo_release_v1)), encoding="utf-8")
    before = _digests(root, run)
    argv = [str(root)] if command == "replay" else ["--dataset", str(root), str(run)]
    code = main(["-q", command, *argv])
    assert (code, _one_line(capsys, command)) == (
        2, f"{qrels}, row 7, field 'gain': non-finite value {value}")
    assert _digests(root, run) == before


@pytest.mark.parametrize("command", ["replay", "score"])
def test_a_gain_above_one_is_refused(demo_release_v1, tmp_path, capsys, command):
    root = shutil.copytree(demo_release_v1, tmp_path / "release")
    qrels = root / "alpha" / "qrels.parquet"
    table = pq.read_table(qrels)
    gain = table.column("gain").to_numpy().copy()
    gain[7] = 5.0
    pq.write_table(table.set_column(table.column_names.index("gain"), "gain", pa.array(gain)),
                   qrels)
    run = tmp_path / "run.txt"
    run.write_text("".join(_run_lines(demo_release_v1)), encoding="utf-8")
    before = _digests(root, run)
    argv = [str(root)] if command == "replay" else ["--dataset", str(root), str(run)]
    code = main(["-q", command, *argv])
    assert (code, _one_line(capsys, command)) == (
        2, f"{qrels}, row 7, field 'gain': gain 5.0 above 1 (a gain is a fraction in [0, 1])")
    assert _digests(root, run) == before


# -- a TREC run line of other than six fields -----------------------------------------------------
@pytest.mark.parametrize("extra", [" 1.0", ""])
def test_a_run_line_without_six_fields_is_refused(demo_release_v1, tmp_path, capsys, extra):
    lines = _run_lines(demo_release_v1)
    q, _, d, rank, score, _tag = lines[3].split()
    bad = f"{q} Q0 {d} {rank} {score}{' test' + extra if extra else ''}"
    lines[3] = bad + "\n"
    run = tmp_path / "run.txt"
    run.write_text("".join(lines), encoding="utf-8")
    before = _digests(tmp_path)
    code = main(["-q", "score", "--dataset", str(demo_release_v1), str(run)])
    n = len(bad.split())
    assert (code, _one_line(capsys, "score")) == (
        2, f"{run}, row 4: expected 6 fields 'qid Q0 docid rank score tag', got {n}: {bad!r}")
    assert n in (5, 7) and _digests(tmp_path) == before


# -- mteb predictions of another shape ------------------------------------------------------------
@pytest.mark.parametrize(("alpha", "found"), [
    ({"test": {"alpha-q000": ["alpha-d0001", "alpha-d0002"]}},
     "subset 'alpha', split 'test', query 'alpha-q000' holds a list, not {corpus-id: score}"),
    ({"test": [["alpha-q000", "alpha-d0001", 1.0]]},
     "subset 'alpha', split 'test' holds a list, not {query-id: {corpus-id: score}}"),
    (["test"], "subset 'alpha' holds a list, not {split: predictions}"),
    ({"test": {"alpha-q000": {"alpha-d0001": "high"}}},
     "subset 'alpha', split 'test', query 'alpha-q000', document 'alpha-d0001' has score "
     "\"high\", not a number"),
    ({"test": {"alpha-q000": {"alpha-d0001": [0.5]}}},
     "subset 'alpha', split 'test', query 'alpha-q000', document 'alpha-d0001' has score "
     "a list, not a number"),
    ({"test": {"alpha-q000": {"alpha-d0001": True}}},
     "subset 'alpha', split 'test', query 'alpha-q000', document 'alpha-d0001' has score "
     "true, not a number"),
])
def test_mteb_predictions_of_another_shape_are_one_line(demo_release_v1, tmp_path, capsys,
                                                         alpha, found):
    folder = tmp_path / "preds"
    folder.mkdir()
    file = folder / "DemoAlphaRCPReranking_predictions.json"
    file.write_text(json.dumps({"mteb_model_meta": {"model_name": "x", "revision": "1"},
                                "alpha": alpha}), encoding="utf-8")
    before = _digests(tmp_path)
    code = main(["-q", "score", "--dataset", str(demo_release_v1), str(folder)])
    field = ", field 'score'" if "has score" in found else ""
    assert (code, _one_line(capsys, "score")) == (
        2, f"{file}{field}: not an mteb prediction file: {found}")
    assert _digests(tmp_path) == before


# -- a run name that could split a table row ------------------------------------------------------
@pytest.mark.parametrize("name", ["two\nlines", "tab\there", "a | b", "esc\x1b[31m", "nul\x00"])
@pytest.mark.parametrize("fmt", ["card", "table", "tsv", "csv", "json"])
def test_a_run_name_that_could_split_a_row_is_refused(demo_release_v1, tmp_path, capsys, name,
                                                      fmt):
    run = tmp_path / "run.txt"
    run.write_text("".join(_run_lines(demo_release_v1)), encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("alpha-q000 0 alpha-d0034 2\n", encoding="utf-8")
    before = _digests(tmp_path)
    if fmt == "card":          # the release's Markdown tables
        argv = ["--dataset", str(demo_release_v1), str(run), "--name", name]
    else:
        argv = ["--qrels", str(qrels), str(run), "--name", name, "--format", fmt]
    code = main(["-q", "score", *argv])
    bad = next(c for c in name if c == "|" or ord(c) < 32)
    assert (code, _one_line(capsys, "score")) == (
        2, f"run name {name!r} holds {bad!r}: a run's name labels a table row, so it may hold "
           "no control character or '|'; pass --name")
    assert _digests(tmp_path) == before


def test_a_file_name_that_could_split_a_row_needs_a_name(demo_release_v1, tmp_path, capsys):
    run = tmp_path / "two\nlines.txt"
    lines = _run_lines(demo_release_v1)                  # two tags: named by the file
    run.write_text("".join(lines[:-1] + [lines[-1].replace(" run\n", " other\n")]),
                   encoding="utf-8")
    code = main(["-q", "score", "--dataset", str(demo_release_v1), str(run)])
    assert (code, _one_line(capsys, "score")) == (
        2, "run name 'two\\nlines.txt' (the file's name) holds '\\n': a run's name labels a "
           "table row, so it may hold no control character or '|'; pass --name")
    # named, the same file scores
    assert _score_json(capsys, "--dataset", str(demo_release_v1), str(run),
                       "--name", "ok")["runs"]["ok"]["queries_scored"] == 24


# -- issue 39 item 5: huge numbers, deep JSON, an empty qrels file --------------------------------
BIG = "1" * 23


def _demo_run(tmp_path: Path, demo_release_v1: Path) -> Path:
    run = tmp_path / "run.txt"
    run.write_text("".join(_run_lines(demo_release_v1)), encoding="utf-8")
    return run


@pytest.mark.parametrize("layout", ["trec", "tsv"])
def test_a_grade_of_23_digits_in_score_qrels_is_one_line(demo_release_v1, tmp_path, capsys,
                                                         layout):
    if layout == "trec":
        qrels, row = tmp_path / "qrels.txt", 2
        qrels.write_text(f"alpha-q000 0 alpha-d0034 2\nalpha-q000 0 alpha-d0035 {BIG}\n",
                         encoding="utf-8")
    else:
        qrels, row = tmp_path / "qrels.tsv", 3
        qrels.write_text(f"query-id\tcorpus-id\tscore\nalpha-q000\talpha-d0034\t2\n"
                         f"alpha-q000\talpha-d0035\t{BIG}\n", encoding="utf-8")
    run = _demo_run(tmp_path, demo_release_v1)
    before = _digests(tmp_path)
    code = main(["-q", "score", "--qrels", str(qrels), str(run)])
    assert (code, _one_line(capsys, "score")) == (
        2, f"{qrels}, row {row}, field 'grade': grade {BIG!r} is out of range (at most 19 "
           "digits)")
    assert _digests(tmp_path) == before


def test_a_grade_of_23_digits_in_agree_labels_is_one_line(demo_release_v1, tmp_path, capsys):
    labels = tmp_path / "labels.txt"
    labels.write_text(f"alpha-q000 0 alpha-d0034 {BIG}\n", encoding="utf-8")
    code = main(["-q", "agree", str(demo_release_v1), f"--labels=big={labels}"])
    assert (code, _one_line(capsys, "agree")) == (
        2, f"{labels}, row 1, field 'grade': grade {BIG!r} is out of range (at most 19 digits)")


def test_an_empty_qrels_file_is_refused(demo_release_v1, tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("", encoding="utf-8")
    run = _demo_run(tmp_path, demo_release_v1)
    code = main(["-q", "score", "--qrels", str(qrels), str(run)])
    assert (code, _one_line(capsys, "score")) == (
        2, f"{qrels}: no judged pair (the qrels file is empty)")


def _predictions(tmp_path: Path, alpha_text: str) -> tuple[Path, Path]:
    folder = tmp_path / "preds"
    folder.mkdir()
    file = folder / "DemoAlphaRCPReranking_predictions.json"
    file.write_text('{"mteb_model_meta": {"model_name": "x", "revision": "1"}, "alpha": '
                    + alpha_text + "}", encoding="utf-8")
    return folder, file


def test_a_400_digit_mteb_score_is_one_line(demo_release_v1, tmp_path, capsys):
    folder, file = _predictions(
        tmp_path, '{"test": {"alpha-q000": {"alpha-d0001": ' + "9" * 400 + "}}}")
    code = main(["-q", "score", "--dataset", str(demo_release_v1), str(folder)])
    assert (code, _one_line(capsys, "score")) == (
        2, f"{file}, field 'score': not an mteb prediction file: subset 'alpha', split 'test', "
           "query 'alpha-q000', document 'alpha-d0001' has an integer score beyond a float's "
           "range")


def test_200000_deep_mteb_predictions_are_one_line(demo_release_v1, tmp_path, capsys):
    folder, file = _predictions(tmp_path, "[" * 200_000 + "]" * 200_000)
    code = main(["-q", "score", "--dataset", str(demo_release_v1), str(folder)])
    assert (code, _one_line(capsys, "score")) == (
        2, f"{file}: not an mteb prediction file (JSON nested too deep to read)")


def test_200000_deep_corpus_jsonl_is_one_line(tmp_path):
    from rcp_data.core.errors import InputError
    from rcp_data.sources.local_files import read_jsonl

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "text": "a"}\n' + "[" * 200_000 + "]" * 200_000 + "\n",
                      encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_jsonl(corpus, {"id": ("_id",), "text": ("text",)})
    assert str(info.value) == f"{corpus}, row 2: JSON nested too deep to read"


@pytest.mark.parametrize("raw", [BIG, "1e30", "inf"])
def test_a_huge_grade_in_a_suite_qrels_is_one_line(tmp_path, raw):
    from rcp_data.core.errors import InputError
    from rcp_data.sources.local_files import grade_of

    with pytest.raises(InputError) as info:
        grade_of(raw, tmp_path / "qrels.txt", 3)
    why = "is not an integer" if raw == "inf" else "is out of range (at most 18 digits)"
    assert str(info.value) == f"{tmp_path / 'qrels.txt'}, row 3, field 'score': grade {raw!r} {why}"


# -- a Hub that answers 200 with a body that is not JSON -----------------------------------------
def test_verify_against_a_hub_answering_html_is_one_line(tmp_path):
    import http.server
    import threading

    from support.terminal import run_piped

    class Html(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = b"<html><body>a captive portal</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")   # it says so, but is not
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Html)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        done = run_piped("verify", "hf://datasets/owner/name@" + "a" * 40, timeout=120,
                         HF_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
                         HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="0")
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("rcp-data verify: error: could not run: "), done.stderr
    assert "answered with a body that is not JSON" in done.stderr, done.stderr


# -- a failed fast read leaves no native thread behind ------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("fields", [5, 7])
def test_a_run_of_other_than_six_fields_exits_2_every_time(tmp_path, fields):
    """The Arrow reader that tries such a run first fails; its workers once outlived the error
    and the exit aborted (SIGABRT, exit 134) in about one run in fifteen. Fifteen processes a
    shape, three at a time: each prints its one line and exits 2."""
    import os
    import subprocess
    import sys

    qrels, run = tmp_path / "qrels.txt", tmp_path / f"run{fields}.txt"
    qrels.write_text("".join(f"q{q} 0 d{q}_{d} {d % 4}\n" for q in range(1000)
                             for d in range(5)), encoding="utf-8")
    tail = {5: "", 7: " t x"}[fields]
    run.write_text("".join(f"q{q} Q0 d{q}_{r} {r + 1} {100 - r}{tail}\n" for q in range(1000)
                           for r in range(100)), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    argv = [sys.executable, "-m", "rcp_data", "score", "--qrels", str(qrels), str(run)]
    line = (f"rcp-data score: error: {run}, row 1: expected 6 fields 'qid Q0 docid rank score "
            f"tag', got {fields}: {('q0 Q0 d0_0 1 100' + tail)!r}")
    results = []
    for _ in range(5):
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env) for _ in range(3)]
        results += [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert results == [(2, "", line + "\n")] * 15


# -- issue 39 item 5: a name in a table is one escaped cell ---------------------------------------
def test_a_qrels_file_name_cannot_forge_score_rows(demo_release_v1, tmp_path, capsys):
    """``score --qrels`` names its qrels file in the table's first line: a newline, '|' or ESC
    in that name is shown escaped, so the table has its rows and no terminal control."""
    qrels = tmp_path / "q\nrun  1.0000\x1b[2J|x.txt"
    qrels.write_text("alpha-q000 0 alpha-d0034 2\n", encoding="utf-8")
    run = _demo_run(tmp_path, demo_release_v1)
    code = main(["-q", "score", "--qrels", str(qrels), str(run), "--name", "r"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"qrels {tmp_path}/q\\nrun  1.0000\\x1b[2J|x.txt: 1 queries ")
    assert [line.split()[0] for line in lines[2:4]] == ["run", "r"], out
    assert "\x1b" not in out
