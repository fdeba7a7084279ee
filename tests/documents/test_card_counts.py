"""The counts a card states per subset, against plain Python over the rows as id tuples: on the
demo, and on a copy with the edge cases (null ids, repeated queries and excluded pairs, pool rows
and positives of queries of no subset, NaN and null theta, tables of several row groups whose
dictionaries differ, one pool shared by two subsets); and the card rendered from those plain
counts, byte for byte the card rendered from the fast ones."""

from __future__ import annotations

import dataclasses
import math
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.demo_fixture import copy_demo

import rcp_data.documents.card as card
from rcp_data.core.specs import load_spec
from rcp_data.documents.card_counts import (
    Ids,
    PoolIndex,
    SubsetFacts,
    all_subset_facts,
    subset_facts,
)
from rcp_data.documents.card_facts import deep_queries
from rcp_data.model.layout import provenance_file, subset_file
from rcp_data.model.release import Release


def _rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def reference_facts(root: Path, spec, subset: str, pool: list[dict] | None = None
                    ) -> SubsetFacts:
    """One subset's counts from its rows as Python values (``pool``: the pool rows, default
    its provenance pool's)."""
    queries = [r["id"] for r in _rows(root / subset_file(subset, "queries"))]
    qids = {q for q in queries if q is not None}
    pool = _rows(root / provenance_file("pool", spec.provenance_split(subset))) \
        if pool is None else pool
    mine = [r for r in pool if r["query-id"] in qids]
    sizes = Counter(r["query-id"] for r in mine)
    pairs = {(r["query-id"], r["corpus-id"]) for r in mine if r["corpus-id"] is not None}
    excluded = set()
    if (root / subset_file(subset, "excluded")).exists():
        excluded = {(r["query-id"], d) for r in _rows(root / subset_file(subset, "excluded"))
                    for d in r["excluded-corpus-ids"] or []
                    if r["query-id"] is not None and d is not None}
    qrels = _rows(root / subset_file(subset, "qrels"))
    positives = [(r["query-id"], r["corpus-id"]) for r in qrels
                 if r["score"] is not None and r["score"] >= spec.grade_positive
                 and (r["query-id"], r["corpus-id"]) not in excluded]
    per_query = Counter(q for q, _ in positives if q is not None)
    labelled = Counter(r["query-id"] for r in qrels if r["query-id"] is not None
                       and r["score"] is not None and r["score"] >= spec.grade_positive)
    lengths = [len(r["corpus-ids"]) for r in _rows(root / subset_file(subset, "top_ranked"))]
    return SubsetFacts(
        name=subset, queries=len(queries),
        corpus=pq.read_metadata(root / subset_file(subset, "corpus")).num_rows,
        pool_pairs=len(mine), gt_injected=sum(r["gt_injected"] is True for r in mine),
        judged=sum(r["judged"] is True for r in mine),
        pool_min=min(sizes.values(), default=0), pool_max=max(sizes.values(), default=0),
        excluded_docs=len(excluded), queries_with_exclusions=len({q for q, _ in excluded}),
        positives_outside_pool=sum(p not in pairs for p in positives),
        unjudged_rows=sum(r["theta"] is None or math.isnan(r["theta"]) for r in qrels),
        queries_without_positive=len(qids - set(per_query)),
        queries_with_more_positives_than_pool=sum(n > spec.pool.size
                                                  for n in per_query.values()),
        candidates_min=min(lengths, default=0), candidates_max=max(lengths, default=0),
        deep_queries=tuple(sorted(q for q, n in labelled.items() if n > spec.pool.size)))


def reference_deep(root: Path, spec) -> dict[str, list[str]]:
    out = {}
    for s in spec.subset_names:
        counts = Counter(r["query-id"] for r in _rows(root / subset_file(s, "qrels"))
                         if r["query-id"] is not None and r["score"] is not None
                         and r["score"] >= spec.grade_positive)
        deep = sorted(q for q, n in counts.items() if n > spec.pool.size)
        if deep:
            out[s] = deep
    return out


def _append(path: Path, rows: list[dict], *, row_group_size: int | None = None) -> None:
    table = pq.read_table(path)
    more = pa.Table.from_pylist(rows, schema=table.schema)
    pq.write_table(pa.concat_tables([table, more]), path, row_group_size=row_group_size)


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_data) -> Path:
    return copy_demo(demo_data, tmp_path_factory.mktemp("counts") / "release")


@pytest.fixture(scope="module")
def edgy(demo, tmp_path_factory) -> Path:
    """The demo with every edge case the counts must take as the plain count does."""
    root = tmp_path_factory.mktemp("edgy") / "release"
    shutil.copytree(demo, root)
    a = "alpha"
    _append(root / subset_file(a, "queries"), [{"id": "alpha-q000", "text": "repeated"},
                                                {"id": None, "text": "no id"}])
    _append(root / provenance_file("pool", a), [
        {"query-id": None, "corpus-id": "alpha-d0001", "gt_injected": True, "judged": True},
        {"query-id": "alpha-q001", "corpus-id": None, "gt_injected": True, "judged": None},
        {"query-id": "ghost-q", "corpus-id": "alpha-d0002", "gt_injected": True,
         "judged": True}], row_group_size=50)
    _append(root / subset_file(a, "qrels"), [
        {"query-id": "ghost-q", "corpus-id": "alpha-d0002", "score": 2, "theta": None},
        {"query-id": "beta-q000", "corpus-id": "beta-d0159", "score": 2, "theta": 1.0},
        {"query-id": None, "corpus-id": "alpha-d0003", "score": 2, "theta": float("nan")},
        {"query-id": "alpha-q001", "corpus-id": None, "score": 3, "theta": 0.5},
        {"query-id": "alpha-q002", "corpus-id": "alpha-d0004", "score": None, "theta": 0.5}],
        row_group_size=40)
    _append(root / subset_file(a, "excluded"), [
        {"query-id": "alpha-q000", "excluded-corpus-ids": ["alpha-q000", None, "alpha-d0005"]},
        {"query-id": None, "excluded-corpus-ids": ["alpha-d0006"]}])
    return root


@pytest.mark.parametrize("which", ["demo", "edgy"])
def test_subset_counts_equal_a_count_over_id_tuples(which, request):
    root = request.getfixturevalue(which)
    spec = load_spec("demo")
    rd = Release(root, spec)
    expected = [reference_facts(root, spec, s) for s in spec.subset_names]
    assert all_subset_facts(rd) == expected
    assert [subset_facts(rd, s) for s in spec.subset_names] == expected
    if which == "edgy":  # the edge cases are there, and counted as the demo's plus theirs
        was, alpha = reference_facts(request.getfixturevalue("demo"), spec, "alpha"), expected[0]
        assert (alpha.queries, alpha.unjudged_rows, alpha.pool_pairs, alpha.gt_injected) == (
            was.queries + 2, was.unjudged_rows + 2, was.pool_pairs + 1, was.gt_injected + 1)
        assert alpha.positives_outside_pool == was.positives_outside_pool + 4
        assert alpha.excluded_docs == was.excluded_docs + 1


def test_a_pool_shared_by_two_subsets_counts_each_subsets_queries(edgy):
    """Two subsets keyed over one pool (as a domain's pool serves its languages): each counts
    its own queries' rows and pairs; alpha's positive that is a pair of beta's pool is
    outside alpha's pool."""
    spec = load_spec("demo")
    rd = Release(edgy, spec)
    tables = [pq.read_table(edgy / provenance_file("pool", s)) for s in spec.subset_names]
    shared = PoolIndex.of(pa.concat_tables(tables))
    rows = [r for t in tables for r in t.to_pylist()]
    for s in spec.subset_names:
        assert subset_facts(rd, s, pool=shared) == reference_facts(edgy, spec, s, rows)
    assert subset_facts(rd, "alpha", pool=shared) == subset_facts(rd, "alpha")


def test_ids_from_a_dictionary_that_repeats_a_value():
    col = pa.chunked_array([
        pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 1], pa.int32()),
                                       pa.array(["a", "a", "b"])),
        pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["b", "c"]))])
    ids = Ids.of(col)
    counted = dict(zip(ids.values.to_pylist(), ids.per_value().tolist(), strict=True))
    assert counted == {"a": 3, "b": 2, "c": 1}
    assert [ids.values[c].as_py() if c >= 0 else None for c in ids.codes] == [
        "a", "a", "b", None, "a", "b", "c"]


def test_deep_queries_equal_a_count_over_rows(edgy, monkeypatch):
    """Queries with more positive labels than the pool holds (excluded ones counted), and the
    card from plain counts where there are some, byte for byte the card."""
    spec = load_spec("demo")
    small = dataclasses.replace(spec, pool=dataclasses.replace(spec.pool, size=5))
    for s in (spec, small):
        assert deep_queries(Release(edgy, s)) == reference_deep(edgy, s)
    assert reference_deep(edgy, small)      # a pool this small leaves queries deeper
    rd = Release(edgy, small)
    assert all_subset_facts(rd) == [reference_facts(edgy, small, s) for s in small.subset_names]


@pytest.mark.parametrize(("which", "pool_size"), [("demo", None), ("edgy", None), ("edgy", 5)])
def test_the_card_from_plain_counts_is_byte_for_byte_the_card(which, pool_size, request, demo,
                                                             monkeypatch):
    """(A pool of 5 has queries with more positives than it holds: the card lists them.)"""
    root = request.getfixturevalue(which)
    spec = load_spec("demo")
    results = card.replay_results(demo, spec)   # the edge cases do not replay
    if pool_size is not None:
        spec = dataclasses.replace(spec, pool=dataclasses.replace(spec.pool, size=pool_size))
    fast = card.render_card(root, spec=spec, results=results)
    monkeypatch.setattr(card, "all_subset_facts", lambda rd: [
        reference_facts(root, spec, s) for s in spec.subset_names])
    assert card.render_card(root, spec=spec, results=results).encode() == fast.encode()
    if pool_size is not None:
        assert "`alpha-q0" in fast.split("**More positives than the pool holds** (5)", 1)[1]


def test_a_pair_space_too_large_for_a_bitmap_counts_the_same(edgy, monkeypatch):
    """Past ``DENSE_LIMIT`` keys the pool's pairs are looked up as sorted keys instead."""
    import rcp_data.documents.card_counts as counts

    spec = load_spec("demo")
    rd = Release(edgy, spec)
    monkeypatch.setattr(counts, "DENSE_LIMIT", 0)
    assert counts.pool_index(rd, "alpha").pairs.bits is None
    assert all_subset_facts(rd) == [reference_facts(edgy, spec, s) for s in spec.subset_names]
