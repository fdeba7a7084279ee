"""One definition of "positive": a suite with ``grade_positive = 2`` gives the same positives in
its pools, card, build counts, integrity checks and replay.

The demo suite, its spec copied with ``grade_positive = 2`` (``RCP_DATA_BUILDERS``) and one
query's grade-2 labels made 1 (a query with labels but no positive), is built once; every expected number is computed here from the release's own tables with
``score >= 2``, and each differs from what ``score >= 1`` (or ``score > 0``) would give.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rcp_data import resources
from rcp_data.checks.integrity import run_integrity
from rcp_data.checks.judge_checks import check_judge
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import load_spec, positive_mask
from rcp_data.documents.card_counts import subset_facts
from rcp_data.documents.card_facts import deep_queries
from rcp_data.model.release import Release
from rcp_data.scoring.replay import load_release, score_queries

LINK = "weighted_discrimination"
SUBSETS = ("alpha", "beta")


DOWNGRADED = "alpha-q005"    # its grade-2 labels become 1: a query with labels but no positive


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(spec, release root)`` of the demo built with ``grade_positive = 2`` (and the grade-2
    labels of query DOWNGRADED made 1)."""
    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.demo.suite import make_sources, write_inputs

    tmp = tmp_path_factory.mktemp("grade2")
    builders = tmp / "builders"
    builders.mkdir()
    text = (resources.builders_dir() / "demo.toml").read_text(encoding="utf-8")
    assert "grade_positive = 1\n" in text
    (builders / "demo.toml").write_text(text.replace("grade_positive = 1\n",
                                                     "grade_positive = 2\n"), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RCP_DATA_BUILDERS", str(builders))
        spec = load_spec("demo")
        assert spec.grade_positive == 2 and spec.path == str(builders / "demo.toml")
        source, latents = make_sources(spec)
        qrels = source.subsets["alpha"].qrels
        down = (qrels["query-id"] == DOWNGRADED) & (qrels["score"] == 2)
        assert down.any()
        qrels.loc[down, "score"] = 1
        write_inputs(spec, source, latents, tmp / "inputs")
        build_release(spec, source, read_inputs(tmp / "inputs"), tmp / "release",
                      parameters={"synthetic": True})
    # the variable is unset again before any other test (the session's demo) loads a spec
    return spec, tmp / "release"


def _pairs(frame: pd.DataFrame, doc: str = "corpus-id") -> set[tuple[str, str]]:
    return set(zip(frame["query-id"].astype(str), frame[doc].astype(str), strict=True))


def _tables(root: Path, s: str):
    """Queries, qrels, provenance pool and excluded pairs of subset ``s``, as stored."""
    qids = set(pd.read_parquet(root / s / "queries.parquet")["id"].astype(str))
    qrels = pd.read_parquet(root / s / "qrels.parquet")
    pool = pd.read_parquet(root / "provenance" / "pool" / f"{s}.parquet")
    excluded: set[tuple[str, str]] = set()
    if (root / s / "excluded.parquet").exists():
        ex = pd.read_parquet(root / s / "excluded.parquet").explode("excluded-corpus-ids")
        excluded = _pairs(ex.dropna(), "excluded-corpus-ids")
    return qids, qrels, pool, excluded


def _expected(root: Path, s: str, threshold: int) -> dict:
    """The positives of subset ``s`` at ``score >= threshold``, counted from its tables."""
    qids, qrels, pool, excluded = _tables(root, s)
    pos = qrels[qrels["score"] >= threshold]
    pos_pairs = _pairs(pos)
    kept = pos_pairs - excluded
    in_pool = _pairs(pool)
    per_query = pd.Series([q for q, _ in kept]).value_counts()
    return {
        "positives": len(pos_pairs),
        "outside_pool": len(pos_pairs - in_pool),
        "card_outside_pool": len(kept - in_pool),
        "unjudged_positives": int(pos["theta"].isna().sum()),
        "queries_without_positive": len(qids - {q for q, _ in pos_pairs}),
        "card_queries_without_positive": len(qids - {q for q, _ in kept}),
        "deep": sorted(per_query[per_query > 20].index),
        "injected_not_positive": len(_pairs(pool[pool["gt_injected"]]) - pos_pairs),
    }


def test_the_threshold_changes_every_count(built):
    """The >= 2 numbers differ from the >= 1 ones, so each check below tells them apart."""
    _spec, root = built
    two = {s: _expected(root, s, 2) for s in SUBSETS}
    one = {s: _expected(root, s, 1) for s in SUBSETS}
    for key in ("positives", "outside_pool", "card_outside_pool", "unjudged_positives",
                "queries_without_positive", "card_queries_without_positive"):
        assert sum(v[key] for v in two.values()) != sum(v[key] for v in one.values()), key
    # positive_mask is the threshold itself: grade 1 is not a positive, 2 and 3 are
    assert positive_mask([0, 1, 2, 3, np.nan], 2).tolist() == [False, False, True, True, False]
    assert built[0].is_positive(2) and not built[0].is_positive(1)


def test_pools_inject_only_grade_2(built):
    spec, root = built
    for s in SUBSETS:
        qids, qrels, pool, excluded = _tables(root, s)
        exp = _expected(root, s, 2)
        assert int(pool["gt_injected"].sum()) > 0
        assert exp["injected_not_positive"] == 0                  # every injected doc grades 2
        # no query holds more grade-2 positives than its pool: every one of them is pooled
        assert exp["outside_pool"] == 0
        grade_1 = _pairs(qrels[qrels["score"] == 1]) - _pairs(pool)
        assert grade_1, "grade-1 documents the fusion missed stay outside the pool"


def test_build_counts_count_grade_2(built):
    _spec, root = built
    counts = json.loads((root / "provenance" / "build_manifest.json").read_text())["counts"]
    for s in SUBSETS:
        exp = _expected(root, s, 2)
        _q, _r, pool, _e = _tables(root, s)
        assert counts[s]["positives_outside_pool"] == exp["unjudged_positives"]
        assert counts[s]["queries_without_positive"] == exp["queries_without_positive"]
        assert counts[s]["gt_injected"] == int(pool["gt_injected"].sum())
    assert sum(counts[s]["queries_without_positive"] for s in SUBSETS) == sum(
        _expected(root, s, 2)["queries_without_positive"] for s in SUBSETS) > 1


def test_card_counts_count_grade_2(built):
    spec, root = built
    rd = Release(root, spec)
    deep = deep_queries(rd)
    for s in SUBSETS:
        exp = _expected(root, s, 2)
        facts = subset_facts(rd, s)
        assert facts.positives_outside_pool == exp["card_outside_pool"]
        assert facts.queries_without_positive == exp["card_queries_without_positive"]
        assert facts.queries_with_more_positives_than_pool == len(exp["deep"])
        assert deep.get(s, []) == exp["deep"]
    # at >= 1 beta's query 1 holds more positives than its pool of 20; at >= 2 none does
    assert _expected(root, "beta", 1)["deep"] and not deep


def test_integrity_accounts_for_grade_2_positives(built):
    spec, root = built
    rel = Release(root, spec)
    params = ItemParams.read(root / "provenance" / "item_params.synth.json")
    checks, tables = run_integrity(rel, params, LINK)
    checks += check_judge(rel, params, tables)
    assert [c.name for c in checks if not c.ok] == []
    accounted = {c.where: c for c in checks if c.name == "positives-accounted"}
    for s in SUBSETS:
        exp = _expected(root, s, 2)
        assert accounted[s].found == f"{exp['positives']} positives, {exp['outside_pool']} outside"
    counts = next(c for c in checks if c.name == "judge-counts")
    assert counts.status in ("", "ok") and "0 differ" in counts.found


def test_replay_leaves_out_queries_without_a_grade_2_label(built):
    """qrel-nDCG leaves out a query without a positive (>= 2); its gains stay the grades."""
    spec, root = built
    data = load_release(root, spec)
    per_query = score_queries(data, tie_rules=("doc-id",))
    scored_at_1 = set()
    for s in SUBSETS:
        qids, qrels, _pool, excluded = _tables(root, s)
        kept = _pairs(qrels[qrels["score"] >= 2]) - excluded
        rows = per_query[per_query["subset"] == s]
        left_out = set(rows.loc[rows["qrel_ndcg"].isna(), "query-id"])
        assert left_out == qids - {q for q, _ in kept}
        assert len(left_out) == _expected(root, s, 2)["card_queries_without_positive"]
        # queries left out here that hold grade-1 labels (at >= 1 they would be scored)
        scored_at_1 |= left_out & set(qrels.loc[qrels["score"] == 1, "query-id"].astype(str))
    assert DOWNGRADED in scored_at_1
    # the qrel gain stays the grade itself (grade-1 rows still count 1 in DCG)
    assert sorted(set(data.subsets["alpha"].ideal_gains[1].tolist())) == [0.0, 1.0, 2.0]


def test_the_packaged_demo_still_counts_grade_1(demo_release_v1):
    """Unchanged numbers for grade_positive = 1: the packaged demo's counts are at >= 1."""
    counts = json.loads((demo_release_v1 / "provenance" / "build_manifest.json").read_text(
    ))["counts"]
    for s in SUBSETS:
        exp = _expected(demo_release_v1, s, 1)
        assert counts[s]["positives_outside_pool"] == exp["unjudged_positives"]
        assert counts[s]["queries_without_positive"] == exp["queries_without_positive"]
