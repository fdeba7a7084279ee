"""Integrity checks catch and name each kind of damage to a release directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rcp_data.checks.integrity import run_integrity
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import load_spec
from rcp_data.model.release import Release
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.tables import write_parquet

LINK = "weighted_discrimination"


@pytest.fixture(scope="module")
def pristine(demo_release_v1) -> Path:
    return demo_release_v1


@pytest.fixture
def release(pristine, tmp_path) -> Path:
    copy = tmp_path / "release"
    shutil.copytree(pristine, copy)
    return copy


def _run(root: Path):
    rel = Release(root, load_spec("demo"))
    params = ItemParams.read(root / "provenance/item_params.synth.json")
    checks, _ = run_integrity(rel, params, LINK)
    return {c.name: c for c in checks if not c.ok}, checks


def test_pristine_release_passes(pristine):
    failed, checks = _run(pristine)
    assert failed == {}
    assert {"gains", "fusion", "pool-rule", "top-ranked-in-corpus", "counts"} <= {
        c.name for c in checks}


def test_changed_gain_is_named(release):
    path = release / "beta/qrels.parquet"
    q = pd.read_parquet(path)
    i = q.index[q["theta"].notna()][7]
    q.loc[i, "gain"] = q.loc[i, "gain"] + 1e-9
    write_parquet(q, path, SCHEMAS["qrels"])
    failed, _ = _run(release)
    # the gain is no link of its theta, and beta-gains is no longer the qrels' gains
    assert set(failed) == {"gains", "gains-derived"}
    assert failed["gains-derived"].where == f"beta/gains.parquet, row {i}, field gain"
    detail = failed["gains"].details[0]
    assert f"query {q.loc[i, 'query-id']}" in detail and f"document {q.loc[i, 'corpus-id']}" in detail
    assert "subset beta" in detail


def test_gain_link_not_recomputed_when_already_checked(release):
    """Before a publish the release check has proved gain = link(theta) for every qrels row;
    verify then checks only that every judged document has a theta and a gain in (0, 1)."""
    path = release / "beta/qrels.parquet"
    q = pd.read_parquet(path)
    judged = q.index[q["theta"].notna()]
    q.loc[judged[7], "gain"] += 1e-9        # off the link: only the link check sees it
    write_parquet(q, path, SCHEMAS["qrels"])
    rel = Release(release, load_spec("demo"))
    params = ItemParams.read(release / "provenance/item_params.synth.json")
    checks, _ = run_integrity(rel, params, LINK, link_checked=True)
    gains = [c for c in checks if c.name == "gains"]
    assert gains and all(c.ok for c in gains)
    assert "per the release check" in gains[0].what
    q.loc[judged[3], "gain"] = 1.5          # outside (0, 1): still caught
    write_parquet(q, path, SCHEMAS["qrels"])
    checks, _ = run_integrity(rel, params, LINK, link_checked=True)
    (bad,) = [c for c in checks if c.name == "gains" and not c.ok]
    assert bad.details == [f"subset beta, query {q.loc[judged[3], 'query-id']}, document "
                           f"{q.loc[judged[3], 'corpus-id']}: theta="
                           f"{float(q.loc[judged[3], 'theta'])!r}, gain=1.5"]


def test_deleted_pooled_document_is_named(release):
    path = release / "alpha/corpus.parquet"
    c = pd.read_parquet(path)
    top = pd.read_parquet(release / "alpha/top_ranked.parquet")
    victim = top["corpus-ids"].iloc[4][0]
    write_parquet(c[c["id"] != victim], path, SCHEMAS["corpus"])
    failed, _ = _run(release)
    assert "top-ranked-in-corpus" in failed
    assert any(victim in d for d in failed["top-ranked-in-corpus"].details)


def test_excluded_document_in_top_ranked_is_caught(release):
    path = release / "alpha/top_ranked.parquet"
    top = pd.read_parquet(path)
    top.at[0, "corpus-ids"] = ["alpha-q000", *list(top.at[0, "corpus-ids"])]
    write_parquet(top, path, SCHEMAS["top_ranked"])
    failed, _ = _run(release)
    assert "no-excluded-in-top-ranked" in failed
    assert "alpha-q000" in failed["no-excluded-in-top-ranked"].details[0]


def test_changed_rrf_score_breaks_fusion(release):
    path = release / "provenance/pool/beta.parquet"
    p = pd.read_parquet(path)
    p.loc[0, "rrf_score"] += 1e-9
    write_parquet(p, path, SCHEMAS["pool"])
    failed, _ = _run(release)
    assert "fusion" in failed


def test_reordered_fused_run_is_caught(release):
    path = release / "provenance/first_stage/alpha.parquet"
    fs = pd.read_parquet(path)
    idx = fs.index[fs["retriever"] == "rrf_fused"][:2]
    a, b = fs.loc[idx[0], "corpus-id"], fs.loc[idx[1], "corpus-id"]
    fs.loc[idx[0], "corpus-id"], fs.loc[idx[1], "corpus-id"] = b, a
    write_parquet(fs, path, SCHEMAS["first_stage"])
    failed, _ = _run(release)
    assert "fusion" in failed and "order differs" in failed["fusion"].details[0]


def test_positive_dropped_from_pool_is_caught(release):
    path = release / "provenance/pool/alpha.parquet"
    p = pd.read_parquet(path)
    q = pd.read_parquet(release / "alpha/qrels.parquet")
    pos = q[(q["score"] > 0) & q["theta"].notna()].iloc[0]
    keep = ~((p["query-id"] == pos["query-id"]) & (p["corpus-id"] == pos["corpus-id"]))
    write_parquet(p[keep], path, SCHEMAS["pool"])
    failed, _ = _run(release)
    assert "positives-accounted" in failed


def test_pool_out_of_fused_order_is_caught(release):
    path = release / "provenance/pool/beta.parquet"
    p = pd.read_parquet(path)
    rows = p.index[(p["query-id"] == p["query-id"].iloc[0]) & ~p["gt_injected"]][:2]
    a, b = rows
    for col in ("corpus-id", "rrf_score"):
        p.loc[a, col], p.loc[b, col] = p.loc[b, col], p.loc[a, col]
    write_parquet(p, path, SCHEMAS["pool"])
    top_path = release / "beta/top_ranked.parquet"
    top = pd.read_parquet(top_path)
    i = top.index[top["query-id"] == p.loc[a, "query-id"]][0]
    ids = list(top.at[i, "corpus-ids"])
    ia, ib = ids.index(p.loc[a, "corpus-id"]), ids.index(p.loc[b, "corpus-id"])
    ids[ia], ids[ib] = ids[ib], ids[ia]
    top.at[i, "corpus-ids"] = ids
    write_parquet(top, top_path, SCHEMAS["top_ranked"])
    failed, _ = _run(release)
    assert set(failed) == {"fusion"}
    (detail,) = failed["fusion"].details
    assert f"document {p.loc[b, 'corpus-id']} (pool_rank {p.loc[b, 'pool_rank']})" in detail
    assert "out of the fused order" in detail


def test_injected_document_above_fused_ones_breaks_the_pool_rule(release):
    path = release / "provenance/pool/alpha.parquet"
    p = pd.read_parquet(path)
    q = p.loc[p["gt_injected"], "query-id"].iloc[0]
    grp = p.index[p["query-id"] == q]
    inj = grp[p.loc[grp, "gt_injected"].to_numpy()][0]
    order = [inj, *[i for i in grp if i != inj]]          # the injected row first
    moved = p.loc[order].copy()
    moved["pool_rank"] = range(1, len(order) + 1)
    p = pd.concat([p[p["query-id"] != q], moved]).reset_index(drop=True)
    write_parquet(p, path, SCHEMAS["pool"])
    failed, _ = _run(release)
    assert "pool-rule" in failed
    assert failed["pool-rule"].details == [
        f"query {q}: injected documents are not at the bottom"]


def test_top_ranked_out_of_pool_order_is_caught(release):
    path = release / "beta/top_ranked.parquet"
    top = pd.read_parquet(path)
    ids = list(top.at[5, "corpus-ids"])
    ids[2], ids[7] = ids[7], ids[2]
    top.at[5, "corpus-ids"] = ids
    write_parquet(top, path, SCHEMAS["top_ranked"])
    failed, _ = _run(release)
    assert set(failed) == {"top-ranked-order"}
    assert failed["top-ranked-order"].details[0].startswith(f"query {top.at[5, 'query-id']}:")


def test_unflagged_injected_document_breaks_the_pool_rule(release):
    # an rrf_score-0 document can only be an injected positive under top-k-inject
    path = release / "provenance/pool/alpha.parquet"
    p = pd.read_parquet(path)
    per_q = p[p["gt_injected"]].groupby("query-id").size()
    q = per_q.index[per_q == 1][0]             # one injected row: "at the bottom" still holds
    row = p.index[(p["query-id"] == q) & p["gt_injected"]][0]
    p.loc[row, "gt_injected"] = False
    write_parquet(p, path, SCHEMAS["pool"])
    failed, _ = _run(release)
    assert failed["pool-rule"].details == [
        f"query {q}: a document with rrf_score 0 is not gt_injected"]


def test_excluded_flag_without_an_exclusion_is_caught(release):
    # flag a pooled document excluded (and drop it from top_ranked) though no exclusion names it
    path = release / "provenance/pool/alpha.parquet"
    p = pd.read_parquet(path)
    row = p.index[~p["excluded"]][3]
    q, d = p.loc[row, "query-id"], p.loc[row, "corpus-id"]
    p.loc[row, "excluded"] = True
    write_parquet(p, path, SCHEMAS["pool"])
    top_path = release / "alpha/top_ranked.parquet"
    top = pd.read_parquet(top_path)
    i = top.index[top["query-id"] == q][0]
    top.at[i, "corpus-ids"] = [x for x in top.at[i, "corpus-ids"] if x != d]
    write_parquet(top, top_path, SCHEMAS["top_ranked"])
    failed, _ = _run(release)
    assert set(failed) == {"excluded-flag"}
    assert failed["excluded-flag"].details == [f"query {q}, document {d}"]


def _value_counts_repeated(ids: pa.Array) -> list[tuple[str, int]]:
    counts = pc.value_counts(ids)
    many = counts.filter(pc.greater(counts.field("counts"), 1))
    return sorted(zip(many.field("values").to_pylist(), many.field("counts").to_pylist(),
                      strict=True))


@pytest.mark.parametrize("extra", [[], ["5", "5", "17"], ["07"], ["+7", "7"], ["-3", "-3"],
                                   ["abc", "abc"], [None, "9"], ["99999999999999999999999"]],
                         ids=repr)
def test_repeated_ids_match_an_independent_count(monkeypatch, extra):
    """The integer fast path (sorting int64s) and the fallback (hashing the strings) find
    exactly the repeats an independent ``value_counts`` finds; "07" and "7" stay distinct."""
    from rcp_data.checks import integrity

    monkeypatch.setattr(integrity, "_SORT_FROM", 10)
    base = [str(i) for i in np.random.default_rng(3).permutation(500)]
    ids = pa.array(base + extra, pa.string())
    assert sorted(integrity._repeated(ids)) == _value_counts_repeated(ids)


def test_in_corpus_equals_is_in():
    from rcp_data.checks.integrity import _in_corpus

    corpus = pa.array(["a", "b", None, "d", "b"], pa.string())
    docs = pa.array(["b", "x", None, "d", "d", "a"], pa.string())
    assert _in_corpus(docs, corpus).tolist() == \
        pc.is_in(docs, value_set=corpus).to_numpy(zero_copy_only=False).tolist()
    no_null = pa.array(["a"], pa.string())
    assert _in_corpus(docs, no_null).tolist() == [False, False, False, False, False, True]
    assert _in_corpus(pa.array([], pa.string()), corpus).tolist() == []


def test_fused_rank_off_by_one_breaks_fusion(release):
    path = release / "provenance/first_stage/alpha.parquet"
    fs = pd.read_parquet(path)
    i = fs.index[fs["retriever"] == "rrf_fused"][4]          # rank 5 of the first query
    fs.loc[i, "rank"] += 1
    write_parquet(fs, path, SCHEMAS["first_stage"])
    failed, _ = _run(release)
    assert set(failed) == {"fusion"}
    q, rank = fs.loc[i, "query-id"], fs.loc[i, "rank"]            # two rows of rank 6 now
    assert failed["fusion"].details[:2] == [
        f"query {q}, rank {rank}: document {fs.loc[j, 'corpus-id']}: rrf_fused order differs "
        "from the fusion (score descending, ties by first appearance, ranks 1..n)"
        for j in (i, i + 1)]


def test_fused_score_off_by_more_than_the_tolerance_breaks_fusion(release):
    from rcp_data.checks.integrity import RRF_TOLERANCE

    path = release / "provenance/first_stage/beta.parquet"
    fs = pd.read_parquet(path)
    i = fs.index[fs["retriever"] == "rrf_fused"][10]
    fs.loc[i, "score"] += 2 * RRF_TOLERANCE
    write_parquet(fs, path, SCHEMAS["first_stage"])
    failed, _ = _run(release)
    assert "fusion" in failed
    assert f"it stores {float(fs.loc[i, 'score'])!r}" in failed["fusion"].details[0]


def test_a_gain_one_ulp_off_fails_the_row_for_row_gains_table_only(release):
    """gain = link(theta) holds within GAIN_TOLERANCE (a float one ulp away passes it), but the
    gains table must be the qrels' gains bit for bit."""
    from rcp_data.core.gains import GAIN_TOLERANCE

    path = release / "beta/qrels.parquet"
    q = pd.read_parquet(path)
    i = q.index[q["theta"].notna()][5]
    q.loc[i, "gain"] = np.nextafter(q.loc[i, "gain"], 2.0)
    write_parquet(q, path, SCHEMAS["qrels"])
    failed, _ = _run(release)
    assert set(failed) == {"gains-derived"}
    assert failed["gains-derived"].where == f"beta/gains.parquet, row {i}, field gain"
    q.loc[i, "gain"] += 2 * GAIN_TOLERANCE
    write_parquet(q, path, SCHEMAS["qrels"])
    failed, _ = _run(release)
    assert set(failed) == {"gains", "gains-derived"}
    assert failed["gains"].details[0].startswith(
        f"subset beta, query {q.loc[i, 'query-id']}, document {q.loc[i, 'corpus-id']}: theta=")


def test_tables_with_their_rows_reordered_still_pass(release):
    """The checks join on ids, not on row order, where the layout does not fix the order: the
    first-stage runs, qrels (with their gains table) and top_ranked's queries, shuffled."""
    from rcp_data.model.tables import gains_table

    rng = np.random.default_rng(3)
    for path, kind in [(release / "provenance/first_stage/alpha.parquet", "first_stage"),
                       (release / "provenance/first_stage/beta.parquet", "first_stage"),
                       (release / "alpha/qrels.parquet", "qrels"),
                       (release / "beta/top_ranked.parquet", "top_ranked")]:
        df = pd.read_parquet(path)
        write_parquet(df.iloc[rng.permutation(len(df))].reset_index(drop=True), path,
                      SCHEMAS[kind])
    qrels = pa.Table.from_pandas(pd.read_parquet(release / "alpha/qrels.parquet"),
                                 preserve_index=False)
    write_parquet(gains_table(qrels).to_pandas(), release / "alpha/gains.parquet",
                  SCHEMAS["gains"])
    failed, checks = _run(release)
    assert failed == {}
    assert any(c.name == "fusion" and c.ok for c in checks)


def test_walk_shortcut_and_sort_helpers_match_references():
    """The fusion walk is taken in file order only when each query's rows are in (retriever,
    rank) order already; the helpers agree with lexsort and pandas on random inputs."""
    from rcp_data.checks.integrity import _first_seen, _grouped_in_order
    from rcp_data.model.orders import lexsort_order

    rng = np.random.default_rng(9)
    for trial in range(400):
        n = int(rng.integers(0, 30))
        g, r, k = (rng.integers(0, int(rng.integers(1, 5)), n) for _ in range(3))
        if trial % 2 and n:      # each group's rows in order, the groups interleaved
            o = np.lexsort((k, r, g))
            slots = rng.permutation(g[o])
            pos = {v: list(np.flatnonzero(g[o] == v)) for v in set(g.tolist())}
            at = np.array([o[pos[v].pop(0)] for v in slots.tolist()], dtype=np.int64)
            g, r, k = g[at], r[at], k[at]
        want = all(
            [(r[j], k[j]) for j in np.flatnonzero(g == v)]
            == sorted((r[j], k[j]) for j in np.flatnonzero(g == v)) for v in set(g.tolist()))
        assert _grouped_in_order(g, r, k) == want
        assert lexsort_order(g, r, k).tolist() == np.lexsort((k, r, g)).tolist()
        codes = rng.integers(-1, 6, n)
        if trial % 3 == 0:
            codes = np.maximum.accumulate(codes) if n else codes
        for nulls in (False, True):
            assert _first_seen(codes, nulls=nulls).tolist() == \
                pd.unique(codes if nulls else codes[codes >= 0]).tolist()
