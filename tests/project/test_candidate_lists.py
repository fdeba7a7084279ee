"""Fixed candidate sets (issue 42, item 2): a suite whose pools ARE its candidate lists.

A SYNTHETIC own-table benchmark (2 grammars x 6 graded paragraphs, one query each) with a
candidate list per query; one query's list leaves out two graded paragraphs. The build uses
the lists as the pools (nothing computed, nothing injected) and says, per query, how many graded
documents each list leaves out: a log line, the build manifest and the card. The counts are
checked against a plain set difference of the test's own table and lists.
"""

from __future__ import annotations

import hashlib
import json
import logging
import unicodedata
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
         "--repo", "rcp-test/cands", "--synthetic", "--no-input"]
LEFT_OUT = (2, 4)    # paragraphs of grammar 2 its candidate list leaves out (grades 1 and 2)


def _id(prefix: str, text: str) -> str:
    nfc = unicodedata.normalize("NFC", text)
    return f"{prefix}-{hashlib.sha256(nfc.encode('utf-8')).hexdigest()[:12]}"


def _rows() -> pd.DataFrame:
    rows = []
    for g in (1, 2):
        query = f"How does SYNTHETIC language {g} mark the plural?"
        for p in range(6):
            rows.append({"grammar": f"lang {g}", "query": query, "grade": SUBGRADES[p],
                         "paragraph": f"SYNTHETIC paragraph {p} of grammar {g}: plural -{'ak' * (p + 1)}."})
    return pd.DataFrame(rows)


def _candidates(frame: pd.DataFrame) -> pd.DataFrame:
    """Each query's list: its grammar's paragraphs in reverse order, grammar 2 without
    :data:`LEFT_OUT` (the order the pool must keep)."""
    rows = []
    for g in (1, 2):
        mine = frame[frame.grammar == f"lang {g}"].reset_index(drop=True)
        keep = [p for p in reversed(range(6)) if not (g == 2 and p in LEFT_OUT)]
        q = _id("q", mine.loc[0, "query"])
        rows += [(q, _id("d", mine.loc[p, "paragraph"]), float(len(keep) - r), r + 1,
                  f"lang_{g}") for r, p in enumerate(keep)]
    return pd.DataFrame(rows, columns=["query-id", "corpus-id", "score", "rank", "split"])


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _suite(tmp_path: Path, capsys, *flags: str):
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.sources.registry import read_suite

    frame = _rows()
    (tmp_path / "data").mkdir()   # the suite's source folder: outputs go apart from it
    table = tmp_path / "data/grades.csv"
    frame.to_csv(table, index=False)
    spec_file = tmp_path / "data/cands.toml"
    code, _, err = _run(capsys, "suite", "init", "cands", "--from", str(table), "--doc-column",
                        "paragraph", "--subset-column", "grammar", "--grade-map", MAP,
                        "--grade-positive", "2", "--pool-size", "4", "--out", str(spec_file),
                        *flags, *FACTS)
    assert code == 0, err
    spec = load_spec_file(spec_file)
    given = {"candidates": _candidates(frame)} if spec.fixed_candidates else None
    write_synthetic_inputs(spec, read_suite(spec), tmp_path / "inputs", first_stage=given)
    return frame, spec_file


def test_the_pools_are_the_candidate_lists_and_the_left_out_are_counted(tmp_path, capsys,
                                                                         caplog):
    from rcp_data.checks.verify import verify_release_dir

    frame, spec_file = _suite(tmp_path, capsys, "--candidates")
    spec = load_spec_file(spec_file)
    assert spec.fixed_candidates and spec.pool.retrievers == ("candidates",)
    release = tmp_path / "release"
    caplog.set_level(logging.WARNING)
    code, out, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                          str(tmp_path / "inputs"), "--out", str(release), "--json")
    assert code == 0, err
    # independently: the graded paragraphs of each query minus its candidate list
    lists = _candidates(frame)
    expected = {}
    for g in (1, 2):
        mine = frame[frame.grammar == f"lang {g}"]
        q = _id("q", mine.iloc[0]["query"])
        graded = {_id("d", t) for t in mine.paragraph}
        missing = graded - set(lists.loc[lists["query-id"] == q, "corpus-id"])
        expected[f"lang_{g}"] = {q: len(missing)} if missing else {}
    assert expected["lang_2"] and not expected["lang_1"]
    manifest = json.loads((release / "provenance/build_manifest.json").read_text())
    for subset, per_query in expected.items():
        counts = manifest["counts"][subset]
        assert counts["graded_outside_pool_queries"] == per_query
        assert counts["graded_outside_pool"] == sum(per_query.values())
        assert counts["gt_injected"] == 0
    # the pools are the lists, whole and in their order (pool size 4 cuts nothing)
    pool = pd.read_parquet(release / "provenance/pool/lang_2.parquet")
    want = lists[lists["split"] == "lang_2"]
    assert pool["corpus-id"].tolist() == want["corpus-id"].tolist()
    assert len(pool) == 6 - len(LEFT_OUT) and not pool["gt_injected"].any()
    ((q2, n2),) = expected["lang_2"].items()
    assert (f"subset lang_2, query {q2}: the candidate list leaves out {n2} graded "
            "document(s)") in caplog.messages
    assert not [m for m in caplog.messages if "query" in m and "lang_1" in m]
    card = (release / "README.md").read_text(encoding="utf-8")
    flat = " ".join(card.split())
    assert (f"{n2} graded documents are outside the candidate list of 1 query; they have a "
            "`score` but no `theta`") in flat
    assert f"| `lang_2` | `{q2}` | {n2} |" in card.splitlines()
    assert "**Candidate lists.** The pools are the benchmark's own candidate lists, given as a " \
           "file (stored as `candidates`" in flat
    assert "no first stage ran here and nothing was fused" in flat
    report = verify_release_dir(release)
    assert report.ok, [c for c in report.checks if not c.ok]


def test_without_the_declaration_the_pools_are_fused_and_injected_as_before(tmp_path, capsys):
    _frame, spec_file = _suite(tmp_path, capsys)
    spec = load_spec_file(spec_file)
    assert not spec.fixed_candidates and spec.pool.rule == "top-k-inject"
    release = tmp_path / "release"
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                        str(tmp_path / "inputs"), "--out", str(release), "--json")
    assert code == 0, err
    manifest = json.loads((release / "provenance/build_manifest.json").read_text())
    for counts in manifest["counts"].values():
        assert "graded_outside_pool" not in counts
        assert "graded_outside_pool_queries" not in counts
    pool = pd.read_parquet(release / "provenance/pool/lang_2.parquet")
    assert len(pool) == 4     # the fused top 4: the pool size cuts
    card = " ".join((release / "README.md").read_text(encoding="utf-8").split())
    assert "candidate list" not in card and "**First stage and fusion.**" in card


def test_the_candidate_lists_must_be_given(tmp_path, capsys):
    _frame, spec_file = _suite(tmp_path, capsys, "--candidates")
    (tmp_path / "inputs/first_stage/candidates.parquet").unlink()
    code, _, err = _run(capsys, "build", "--spec", str(spec_file), "--inputs",
                        str(tmp_path / "inputs"), "--out", str(tmp_path / "r"), "--no-prepare")
    assert code == 2
    assert err.strip().splitlines() == [
        f"rcp-data build: error: {tmp_path / 'inputs/first_stage'}: no candidate lists: the "
        "pools of suite 'cands' are its candidate lists ([pool] rule = \"candidates\"); give "
        "them as candidates.trec or candidates.parquet (query-id, corpus-id, score or rank)"]
    code, _, err = _run(capsys, "suite", "first-stage", "--spec", str(spec_file), "--out",
                        str(tmp_path / "fs"))
    assert code == 2 and "has no first stage to compute: its pools are its candidate" in err


@pytest.mark.parametrize(("pool", "field"), [
    ('rule = "candidates"\nretrievers = ["a", "b"]', "pool.retrievers"),
    ('rule = "candidates"\nretrievers = ["bm25"]', "pool.retrievers"),
    ('rule = "top-k-everything"', "pool.rule"),
])
def test_a_bad_candidates_declaration_names_the_key(tmp_path, capsys, pool, field):
    _frame, spec_file = _suite(tmp_path, capsys)
    text = spec_file.read_text(encoding="utf-8")
    start = text.index('rule = "top-k-inject"')
    end = text.index("rrf_k = 60")
    spec_file.write_text(text[:start] + pool + "\n" + text[end:], encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_spec_file(spec_file)
    assert err.value.field == field


def test_build_pools_keeps_a_candidate_list_whole_and_counts_what_it_leaves_out():
    from rcp_data.building.pools import build_pools, graded_outside, normalize_run, rrf_fuse

    run = normalize_run(pd.DataFrame({"query-id": ["q"] * 5, "corpus-id": list("edcba"),
                                      "score": [5.0, 4, 3, 2, 1]}), "candidates")
    qrels = pd.DataFrame({"query-id": ["q"] * 4, "corpus-id": ["a", "x", "y", "c"],
                          "score": [3, 3, 0, 1]})
    pool = build_pools(rrf_fuse(run, ["candidates"]), qrels, ["q"], rule="candidates", size=2,
                       grade_positive=2)
    assert pool["corpus-id"].tolist() == list("edcba")
    assert not pool["gt_injected"].any() and (pool["rrf_score"] > 0).all()
    assert graded_outside(pool, qrels, ["q"]) == {"q": 2}                  # x and y
    assert graded_outside(pool, qrels, ["q"], never_pool={"x"}) == {"q": 1}
