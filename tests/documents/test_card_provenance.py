"""A card that tells the truth (issue 42, item 4): each provenance sentence is true of its own
part (the judge, the first stage, each reranker run), read from that part's record in the build
manifest; and every command that writes a card or a task file refuses TODO markers.

Data: a SYNTHETIC own-table benchmark (2 grammars x 6 graded paragraphs; the spec does not call
the data generated), its BM25 first stage computed by ``suite first-stage``, and builder inputs
from the demo's SYNTHETIC judge (:func:`rcp_data.demo.synthetic_judge.write_synthetic_inputs`).
Each case rewrites what the inputs say of one part (judge.json, runs.json, first_stage/) the way
a team's inputs would say it, and the card's sentences are checked against what was written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from rcp_data.cli.main import main
from rcp_data.core.errors import InputError
from rcp_data.core.specs import load_spec_file

MAP = "0.0=0,1.1=1,1.2=1,2.1=2,2.2=2,2.3=2"
SUBGRADES = ["0.0", "1.1", "1.2", "2.1", "2.2", "2.3"]
FACTS = ["--license", "cc0-1.0", "--citation", "@misc{x, title={SYNTHETIC}, year={2026}}",
         "--description", "SYNTHETIC grammar paragraphs", "--link", "https://example.org/g",
         "--repo", "rcp-test/prov", "--no-input"]
SIMULATED = {"model": "rcp-data/SIMULATED-judge", "revision": "r1", "short": "simjudge",
             "synthetic": True}
REAL = {"model": "example-org/judge-7b", "revision": "r1", "short": "judge7b"}
CROSS = "cross-encoder/ms-marco-MiniLM-L-6-v2"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The spec, the computed BM25 runs and SYNTHETIC builder inputs judged on their pools."""
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.sources.registry import read_suite

    root = tmp_path_factory.mktemp("card-provenance")
    rows = [{"grammar": f"lang {g}", "query": f"How does SYNTHETIC language {g} mark the plural?",
             "paragraph": f"SYNTHETIC paragraph {p} of grammar {g}: the plural takes "
                          f"-{'ak' * (p + 1)}.", "grade": SUBGRADES[p]}
            for g in (1, 2) for p in range(6)]
    (root / "data").mkdir()   # the suite's data folder: every output goes apart from it
    pd.DataFrame(rows).to_csv(root / "data/grades.csv", index=False)
    spec_file = root / "data/prov.toml"
    assert main(["suite", "init", "prov", "--from", str(root / "data/grades.csv"), "--doc-column",
                 "paragraph", "--subset-column", "grammar", "--grade-map", MAP,
                 "--grade-positive", "2", "--pool-size", "5", "--out", str(spec_file),
                 *FACTS]) == 0
    assert main(["suite", "first-stage", "--spec", str(spec_file), "--out",
                 str(root / "given")]) == 0
    spec = load_spec_file(spec_file)
    write_synthetic_inputs(spec, read_suite(spec), root / "inputs", n_rerankers=2,
                           first_stage={"bm25": pd.read_parquet(root / "given/first_stage/"
                                                                "bm25.parquet")})
    return root


def _inputs(base: Path, tmp_path: Path, *, judge: dict | None = None, runs: str = "generated",
            first_stage: str = "computed", computed_run: bool = False) -> Path:
    """A copy of the base inputs saying: the judge (judge.json), the reranker runs' origin
    (``generated`` as written, or ``given``), the first stage (``computed`` by the build,
    ``given`` as a file) and, with ``computed_run``, the last run computed with :data:`CROSS`."""
    inputs = tmp_path / "inputs"
    shutil.copytree(base / "inputs", inputs)
    if judge is not None:
        (inputs / "judge/judge.json").write_text(json.dumps(judge), encoding="utf-8")
    entries = json.loads((inputs / "runs/runs.json").read_text(encoding="utf-8"))
    for e in entries:
        if runs == "given":
            e.pop("origin", None)
    if computed_run:
        last = [e for e in entries if not e["is_judge"]][-1]
        last.update(origin="computed", computed_with=CROSS)
    (inputs / "runs/runs.json").write_text(json.dumps(entries), encoding="utf-8")
    if first_stage == "computed":
        shutil.rmtree(inputs / "first_stage")
    return inputs


def _build(capsys, base: Path, inputs: Path, tmp_path: Path) -> tuple[str, dict, list[str]]:
    release = tmp_path / "release"
    code, _, err = _run(capsys, "build", "--spec", str(base / "data/prov.toml"), "--inputs",
                        str(inputs), "--out", str(release))
    assert code == 0, err
    card = " ".join((release / "README.md").read_text(encoding="utf-8").split())
    manifest = json.loads((release / "provenance/build_manifest.json").read_text())
    models = [e["model"] for e in json.loads((inputs / "runs/runs.json").read_text())
              if not e["is_judge"]]
    return card, manifest, models


def _code(names) -> str:
    return ", ".join(f"`{n}`" for n in names)


def test_every_part_generated_keeps_the_sentences_cards_always_printed(base, tmp_path, capsys):
    card, manifest, models = _build(capsys, base, _inputs(base, tmp_path), tmp_path)
    parts = manifest["parameters"]["provenance"]
    assert parts["judge"] == "generated"
    assert [(r["model"], r["origin"]) for r in parts["rerankers"]] == [(m, "generated")
                                                                       for m in models]
    assert ("Its judge verdicts and reranker scores were generated from fixed random seeds "
            "(judge `rcp-data/SYNTHETIC-judge`), and so are its gains; its first-stage runs "
            "were computed by rcp-data.") in card
    assert "This release is SYNTHETIC: its judge and rerankers are generated, so none" in card
    assert "This release is SYNTHETIC (generated from fixed seeds); see the notice" in card


@pytest.mark.parametrize("first_stage", ["computed", "given"])
def test_a_simulated_judge_with_given_runs_says_only_the_judge_was_simulated(
        base, tmp_path, capsys, first_stage):
    """The issue's case: the SIMULATED judge, the authors' runs given as files (one computed
    here with a named model), BM25 computed here or given as a file."""
    inputs = _inputs(base, tmp_path, judge=SIMULATED, runs="given", first_stage=first_stage,
                     computed_run=True)
    card, manifest, models = _build(capsys, base, inputs, tmp_path)
    parts = manifest["parameters"]["provenance"]
    assert parts["judge"] == "simulated"
    assert [r["origin"] for r in parts["rerankers"]] == ["given"] * (len(models) - 1) + [
        "computed"]
    (fs,) = manifest["parameters"]["first_stage"]
    assert (fs["computed"], fs.get("generated", False)) == (first_stage == "computed", False)
    assert manifest["synthetic"] is True    # a SIMULATED judge makes the release SYNTHETIC
    assert ("Its judge verdicts come from a SIMULATED judge (`rcp-data/SIMULATED-judge`, "
            "rcp-data's stand-in for a served model), and so do its gains.") in card
    said = "were computed by rcp-data" if first_stage == "computed" else "were given as files"
    assert f"Its first-stage runs of `bm25` {said}." in card
    assert (f"The reranker scores of {_code(models[:-1])} were given as files. The reranker "
            f"scores of `{models[-1]}` were computed by rcp-data with the model `{CROSS}`."
            ) in card
    assert "This release is SYNTHETIC: its judge is SIMULATED, so none" in card
    if first_stage == "computed":
        assert "rcp-data computed the runs stored as `bm25` on this data: `bm25` by BM25" in card
    else:
        assert ("The runs stored as `bm25` were given as files (the builder inputs' "
                "`first_stage/`).") in card
    for untrue in ("no retriever ran", "judge and rerankers are generated",
                   "first-stage runs and reranker scores were generated",
                   "Every corpus, query and label", "on this SYNTHETIC data"):
        assert untrue not in card


def test_a_real_judge_with_given_runs_is_no_synthetic_release(base, tmp_path, capsys):
    inputs = _inputs(base, tmp_path, judge=REAL, runs="given", first_stage="given")
    card, manifest, models = _build(capsys, base, inputs, tmp_path)
    parts = manifest["parameters"]["provenance"]
    assert parts["judge"] == "real" and manifest["synthetic"] is False
    assert {r["origin"] for r in parts["rerankers"]} == {"given"}
    for untrue in ("SYNTHETIC DATA. This is not a benchmark", "This release is SYNTHETIC",
                   "SIMULATED", "generated from fixed", "computed the runs"):
        assert untrue not in card
    assert "The runs of `bm25` are fused" in card


def test_a_real_judge_with_a_computed_first_stage_says_it_was_computed(base, tmp_path, capsys):
    inputs = _inputs(base, tmp_path, judge=REAL, runs="given", first_stage="computed")
    card, manifest, _models = _build(capsys, base, inputs, tmp_path)
    assert manifest["synthetic"] is False
    assert ("rcp-data computed the runs stored as `bm25` on this data: `bm25` by BM25 (bm25s). "
            "The runs of `bm25` are fused") in card


def test_a_release_without_part_records_reads_as_cards_always_did():
    from rcp_data.core.specs import load_spec
    from rcp_data.documents.card_provenance import part_origins, relation_parts
    from rcp_data.model.manifest import MANIFEST_SCHEMA, BuildManifest

    spec = load_spec("nanobeir")
    old = BuildManifest.from_dict({
        "schema": MANIFEST_SCHEMA, "suite": "nanobeir", "synthetic": True,
        "judge": {"model": "rcp-data/SYNTHETIC-judge"},
        "calibration": {"item_params": "p.json", "link": "exp"},
        "parameters": {"first_stage": [{"retriever": "bm25", "computed": True,
                                        "method": "bm25"}]}})
    origins = part_origins(spec, old, synthetic=True)
    assert not origins.recorded and origins.legacy_text
    assert [(f.name, f.origin) for f in origins.first_stage] == [
        (r, "computed" if r == "bm25" else "generated") for r in spec.pool.retrievers]
    assert relation_parts(origins) == "its judge and rerankers are generated"


def test_a_bad_run_origin_is_one_line_naming_the_field(base, tmp_path, capsys):
    inputs = _inputs(base, tmp_path)
    entries = json.loads((inputs / "runs/runs.json").read_text())
    entries[0]["origin"] = "computed"     # without the model it was computed with
    (inputs / "runs/runs.json").write_text(json.dumps(entries), encoding="utf-8")
    code, _, err = _run(capsys, "build", "--spec", str(base / "data/prov.toml"), "--inputs",
                        str(inputs), "--out", str(tmp_path / "r"))
    assert code == 2
    assert err.strip().splitlines() == [
        f"rcp-data build: error: {inputs / 'runs/runs.json'}, row 1, field 'computed_with': a "
        "computed run names the model it was computed with (computed_with), and only a "
        "computed run does"]


# -- TODO markers: every writer of a card or a task file refuses them ---------------------------
def _todo_release(base: Path, tmp_path: Path, capsys) -> Path:
    """A prepared release whose spec copy then gets a TODO licence."""
    card, _m, _r = _build(capsys, base, _inputs(base, tmp_path), tmp_path)
    release = tmp_path / "release"
    copy = release / "provenance/suite_spec.toml"
    text = copy.read_text(encoding="utf-8")
    copy.write_text(text.replace('license = "cc0-1.0"', 'license = "TODO: the licence"'),
                    encoding="utf-8")
    return release


def test_recalibrate_refuses_todo_markers_before_writing(base, tmp_path, capsys):
    release = _todo_release(base, tmp_path, capsys)
    out = tmp_path / "r2"
    code, _, err = _run(capsys, "recalibrate", str(release), "--fit", str(tmp_path / "nofit"),
                        "--out", str(out))
    assert code == 2
    assert err.strip().splitlines() == [
        f"rcp-data recalibrate: error: {release}/provenance/suite_spec.toml, field "
        "'suite.license': the spec still holds TODO markers, fill them in before preparing a "
        "release: suite.license"]
    assert not out.exists()


def test_the_card_and_the_task_file_refuse_todo_markers_whoever_writes_them(base, tmp_path,
                                                                            capsys):
    from rcp_data.documents.card import render_card
    from rcp_data.documents.taskfile import render_task_file
    from rcp_data.model.suite import release_spec

    release = _todo_release(base, tmp_path, capsys)
    spec = release_spec(release)
    assert spec.todo == ("suite.license",)
    with pytest.raises(InputError, match="still holds TODO markers.*suite.license"):
        render_card(release, spec=spec)
    with pytest.raises(InputError, match="still holds TODO markers.*suite.license"):
        render_task_file(spec, [], repo="rcp-test/prov")
