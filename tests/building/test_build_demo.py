"""The shared build on the SYNTHETIC demo suite: layout, cases covered, determinism, atomicity."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.reference_links import weighted_discrimination

from rcp_data.building.build import build_release
from rcp_data.building.contract import read_inputs
from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import load_spec
from rcp_data.demo.suite import make_demo_release, make_sources, write_inputs
from rcp_data.model.release import Release


@pytest.fixture(scope="module")
def demo_release(demo_release_v1) -> Path:
    return demo_release_v1


def _demo_inputs(tmp_path: Path):
    """The demo suite's spec, sources and a fresh copy of its builder inputs to damage."""
    spec = load_spec("demo")
    source, latents = make_sources(spec)
    return spec, source, write_inputs(spec, source, latents, tmp_path / "inputs")


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_layout_files(demo_release):
    files = set(_digest(demo_release))
    for sub in ("alpha", "beta"):
        for kind in ("corpus", "queries", "qrels", "top_ranked"):
            assert f"{sub}/{kind}.parquet" in files
        for kind in ("pool", "first_stage", "runs", "judge_criteria"):
            assert f"provenance/{kind}/{sub}.parquet" in files
    assert "alpha/excluded.parquet" in files and "beta/excluded.parquet" not in files
    assert "provenance/item_params.synth.json" in files
    assert "provenance/build_manifest.json" in files


def test_gains_equal_the_link_of_theta(demo_release):
    rel = Release(demo_release, load_spec("demo"))
    params = ItemParams.read(demo_release / "provenance/item_params.synth.json")
    for sub in ("alpha", "beta"):
        q = rel.table(sub, "qrels")
        judged = q["theta"].notna()
        np.testing.assert_allclose(q.loc[judged, "gain"], weighted_discrimination(q.loc[judged, "theta"], params),
                                   rtol=0, atol=1e-15)
        assert (q.loc[~judged, "gain"] == 0).all()


def test_demo_covers_the_hard_cases(demo_release):
    rel = Release(demo_release, load_spec("demo"))
    # exclusions: self-documents leave top_ranked but stay in the pool, flagged
    exc = rel.table("alpha", "excluded")
    assert exc["query-id"].tolist() == ["alpha-q000", "alpha-q001", "alpha-q002"]
    assert sorted(exc["excluded-corpus-ids"].iloc[0]) == ["alpha-copy-of-alpha-q000", "alpha-q000"]
    top = rel.table("alpha", "top_ranked").set_index("query-id")["corpus-ids"]
    pool = rel.provenance("pool", "alpha")
    for q, ids in zip(exc["query-id"], exc["excluded-corpus-ids"], strict=True):
        assert not set(ids) & set(top[q])
        flagged = set(pool.loc[(pool["query-id"] == q) & pool["excluded"], "corpus-id"])
        assert flagged and flagged <= set(ids)
    # pools hold exactly `size` documents per query
    size = load_spec("demo").pool.size
    assert (pool.groupby("query-id").size() == size).all()
    # beta: a query without positives, and positives outside the pool (theta null, gain 0)
    qrels = rel.table("beta", "qrels")
    pos = qrels[qrels["score"] > 0]
    assert "beta-q000" not in set(pos["query-id"])
    outside = pos[pos["theta"].isna()]
    assert len(outside) > 0 and (outside["gain"] == 0).all()
    assert set(outside["query-id"]) >= {"beta-q001"}
    # ties: the coarse reranker gives many equal scores within a query
    runs = rel.provenance("runs", "beta")
    coarse = runs[runs["model"] == "demo/coarse-reranker"]
    assert coarse.duplicated(["query-id", "score"]).sum() > 50
    # judge strategies are flagged
    assert runs.loc[runs["is_judge"], "model"].unique().tolist() == [
        "rcp-data/synthetic-judge-7b:theta"]


def test_runs_rank_by_score_and_stored_position(demo_release):
    runs = Release(demo_release, load_spec("demo")).provenance("runs", "alpha")
    for (_, _), grp in runs.groupby(["model", "query-id"]):
        assert grp["stored_position"].tolist() == list(range(len(grp)))
        by_score = grp.sort_values("score", ascending=False, kind="stable")
        assert by_score["rank_by_score"].tolist() == list(range(1, len(grp) + 1))


def test_rebuild_is_byte_identical(demo_release, tmp_path):
    again = tmp_path / "again"
    make_demo_release(again)
    assert _digest(again) == _digest(demo_release)


def test_bad_theta_table_leaves_no_output(tmp_path):
    spec, source, inputs_dir = _demo_inputs(tmp_path)
    thetas = pd.read_parquet(inputs_dir / "judge/thetas.parquet")
    thetas.iloc[5:].to_parquet(inputs_dir / "judge/thetas.parquet")  # drop some pool docs
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r"thetas.parquet.*pool document\(s\) have no theta"):
        build_release(spec, source, read_inputs(inputs_dir), out)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_run_with_unknown_document_is_refused(tmp_path):
    spec, source, inputs_dir = _demo_inputs(tmp_path)
    path = inputs_dir / "runs/demo__alpha-reranker.parquet"
    run = pd.read_parquet(path)
    run.loc[3, "corpus-id"] = "no-such-doc"
    run.to_parquet(path)
    with pytest.raises(InputError, match="outside the pool") as exc:
        build_release(spec, source, read_inputs(inputs_dir), tmp_path / "out")
    assert "demo__alpha-reranker.parquet" in str(exc.value) and "row 4" in str(exc.value)


def test_item_params_not_matching_the_verdict_table_are_refused(tmp_path):
    spec, source, inputs_dir = _demo_inputs(tmp_path)
    ItemParams(gamma=(1.0,) * 4, beta=(-1.0, 0.0, 1.0, 2.0)).write(
        inputs_dir / "judge/item_params.json")
    with pytest.raises(InputError, match=r"criteria \['C1', 'C2', 'C3', 'C4', 'C5'\] but the "
                                         r"item parameters have 4") as exc:
        read_inputs(inputs_dir)
    assert "criteria.parquet" in str(exc.value)


def test_theta_for_a_document_outside_the_pool_is_refused(tmp_path):
    spec, source, inputs_dir = _demo_inputs(tmp_path)
    path = inputs_dir / "judge/thetas.parquet"
    thetas = pd.read_parquet(path)
    extra = thetas.iloc[:1].assign(**{"corpus-id": "beta-d0239-not-pooled"})
    pd.concat([thetas, extra], ignore_index=True).to_parquet(path)
    out = tmp_path / "out"
    with pytest.raises(InputError, match="name documents outside the pool") as exc:
        build_release(spec, source, read_inputs(inputs_dir), out)
    assert "thetas.parquet" in str(exc.value) and "beta-d0239-not-pooled" in str(exc.value)
    assert not out.exists()


def test_duplicate_theta_names_its_row_in_the_file(tmp_path):
    spec, source, inputs_dir = _demo_inputs(tmp_path)
    path = inputs_dir / "judge/thetas.parquet"
    thetas = pd.read_parquet(path)
    last = thetas[thetas["query-id"].str.startswith("beta")].iloc[[-1]]
    pd.concat([thetas, last], ignore_index=True).to_parquet(path)  # file row len + 1
    with pytest.raises(InputError, match="duplicate theta") as exc:
        build_release(spec, source, read_inputs(inputs_dir), tmp_path / "out")
    assert f"thetas.parquet, row {len(thetas) + 1}:" in str(exc.value)


def test_query_without_candidates_keeps_its_labelled_documents():
    # SYNTHETIC: q2 has no first-stage candidate and only a grade-0 label, so its pool is
    # empty; its human-labelled document is still a qrels row (theta null, gain 0)
    from rcp_data.building.judge import attach_gains
    from rcp_data.building.pools import build_pools, rrf_fuse

    runs = pd.DataFrame({"retriever": "bm25", "query-id": "q1", "corpus-id": ["a", "b"],
                         "rank": [1, 2], "score": [2.0, 1.0]})
    upstream = pd.DataFrame({"query-id": ["q1", "q2"], "corpus-id": ["b", "x"], "score": [1, 0]})
    pool = build_pools(rrf_fuse(runs, ["bm25"]), upstream, ["q1", "q2"], rule="top-k-inject",
                       size=3, grade_positive=1)
    assert pool["query-id"].tolist() == ["q1", "q1"]
    thetas = pd.DataFrame({"query-id": "q1", "corpus-id": ["a", "b"], "theta": [0.5, 1.5]})
    params = ItemParams(gamma=(1.0, 2.0), beta=(0.0, 1.0))
    qrels, _ = attach_gains(pool, upstream, thetas, params, query_ids=["q1", "q2"])
    assert qrels[["query-id", "corpus-id", "score"]].values.tolist() == [
        ["q1", "a", 0], ["q1", "b", 1], ["q2", "x", 0]]
    assert qrels["gain"].iloc[2] == 0.0 and np.isnan(qrels["theta"].iloc[2])
    np.testing.assert_allclose(qrels["gain"].iloc[:2], weighted_discrimination(np.array([0.5, 1.5]), params))


def test_verdicts_naming_documents_outside_the_pool_are_refused(tmp_path):
    spec, source, inputs_dir = _demo_inputs(tmp_path)
    path = inputs_dir / "judge/criteria.parquet"
    crit = pd.read_parquet(path)
    crit.loc[0, "corpus-id"] = "alpha-d9999-never-pooled"
    crit.to_parquet(path)
    with pytest.raises(InputError, match="verdict row.*outside the pool") as exc:
        build_release(spec, source, read_inputs(inputs_dir), tmp_path / "out")
    assert "criteria.parquet" in str(exc.value)
    assert not (tmp_path / "out").exists()


def test_a_model_listed_twice_in_runs_json_is_refused(tmp_path):
    import json

    spec, source, inputs_dir = _demo_inputs(tmp_path)
    path = inputs_dir / "runs/runs.json"
    runs = json.loads(path.read_text())
    path.write_text(json.dumps([*runs, runs[0]]))
    with pytest.raises(InputError, match="listed twice") as exc:
        read_inputs(inputs_dir)
    assert f"row {len(runs) + 1}" in str(exc.value)


def test_corpus_shorter_than_declared_is_refused(tmp_path):
    from rcp_data.building.build import write_corpus
    from rcp_data.sources.base import CorpusReader

    frame = pd.DataFrame({"id": ["a", "b"], "title": "", "text": ["x", "y"]})
    reader = CorpusReader.from_frame(frame)
    reader.size = 3
    with pytest.raises(InputError, match="gave 2 documents but the reader declared 3"):
        write_corpus(reader, tmp_path / "c", single_file=tmp_path / "c/corpus.parquet")
