"""Honest intervals: one computed from fewer than 5 queries (the smallest subset resampled)
is shown as ``n too small (n=K)`` in the card, ``agree`` and ``score --against``; 5 or more
queries show ``[lo, hi]``. On the SYNTHETIC demo release, and on a copy of it whose subset
``alpha`` keeps one query (every table of that subset cut to it)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
from support.demo_fixture import copy_demo

import rcp_data
from rcp_data.core.specs import load_spec
from rcp_data.documents.card_text import card_sentence
from rcp_data.documents.diagnostics_files import diagnostics_card, expected_record
from rcp_data.model.card_format import METRIC_TITLES
from rcp_data.model.release import Release
from rcp_data.scoring.agreement.analysis import render_table
from rcp_data.scoring.agreement.bootstrap import MIN_QUERIES, interval_text
from rcp_data.scoring.replay import METRICS

ALPHA = "demo/alpha-reranker"


def _one_query_alpha(root: Path) -> str:
    """Cut subset ``alpha`` of the release at ``root`` to its first query; returns its id."""
    ids = sorted(pd.read_parquet(root / "alpha/queries.parquet")["id"].astype(str))
    drop = set(ids[1:])
    for path in root.rglob("*.parquet"):
        table = pd.read_parquet(path)
        col = "query-id" if "query-id" in table.columns else (
            "id" if path.parent.name == "alpha" and "id" in table.columns else None)
        if col is not None:
            table[~table[col].astype(str).isin(drop)].to_parquet(path, index=False)
    return ids[0]


@pytest.fixture(scope="module")
def one_query(demo_data, tmp_path_factory) -> Path:
    root = copy_demo(demo_data, tmp_path_factory.mktemp("one-query") / "release")
    _one_query_alpha(root)
    return root


def _queries(root: Path, subset: str, metric: str = "rcp_ndcg") -> int:
    """The queries of ``subset`` where every system has a ``metric`` value (replayed)."""
    from rcp_data.scoring.replay import load_release, score_queries

    pq = score_queries(load_release(root), tie_rules=("doc-id",))
    wide = pq[pq["subset"] == subset].pivot(index="query-id", columns="model", values=metric)
    return int(wide.notna().all(axis=1).sum())


def test_the_rule_is_five_queries():
    assert MIN_QUERIES == 5
    assert interval_text(0.1, 0.2, 4) == "n too small (n=4)"
    assert interval_text(0.1, 0.2, 5) == "[0.100, 0.200]"


def test_card_flags_the_one_query_subset(one_query, demo_data):
    def section(root):
        record = expected_record(root)
        return record, card_sentence("diagnostics", diagnostics_card(
            record, metric_titles=METRIC_TITLES, names={ALPHA: "Alpha-RR"}))

    record, text = section(one_query)
    assert set(record["numbers"]["interval_queries"].values()) == {1}
    row = next(x for x in text.splitlines() if x.startswith("| Alpha-RR |"))
    mean = record["numbers"]["leaderboards"]["rcp_ndcg"][ALPHA]
    assert f"{100 * mean:.1f} n too small (n=1)" in row
    assert "[" not in row
    full, text = section(demo_data / "release")
    for metric, fewest in full["numbers"]["interval_queries"].items():
        assert fewest == min(_queries(demo_data / "release", s, metric)
                             for s in ("alpha", "beta")) >= MIN_QUERIES
    row = next(x for x in text.splitlines() if x.startswith("| Alpha-RR |"))
    lo, hi = full["numbers"]["intervals"]["rcp_ndcg"][ALPHA]
    assert f"[{100 * lo:.1f}, {100 * hi:.1f}]" in row and "too small" not in row


def test_agree_flags_the_one_query_subset(one_query):
    doc = rcp_data.agree(one_query, resamples=50).to_json()
    assert doc["subsets"]["alpha"]["queries"] == 1
    assert doc["subsets"]["beta"]["queries"] == _queries(one_query, "beta") >= MIN_QUERIES
    text = render_table(doc)
    alpha, beta = text.split("== beta:")
    alpha, pooled = alpha.split("== alpha:")[1], beta.split("All subsets:")[1]
    assert "n too small (n=1)" in alpha and " [" not in alpha.split("Leaderboards")[0]
    assert "n too small" not in beta.split("All subsets:")[0]
    assert " [" in beta.split("Leaderboards")[0]
    assert "n too small (n=1)" in pooled


def _score(*argv: str) -> tuple[int, str]:
    from rcp_data import cli

    out = io.StringIO()
    with redirect_stdout(out):
        rc = cli.main(["score", *argv])
    return rc, out.getvalue()


def _run_file(root: Path, tmp_path: Path) -> Path:
    rd = Release(root, load_spec("demo"))
    runs = pd.concat([rd.provenance("runs", s) for s in ("alpha", "beta")], ignore_index=True)
    path = tmp_path / "mine.parquet"
    runs[runs["model"] == "demo/beta-reranker"][["query-id", "corpus-id", "score"]].to_parquet(
        path, index=False)
    return path


def test_score_against_flags_the_one_query_subset(one_query, demo_data, tmp_path):
    from rcp_data.documents.card import write_release_files

    write_release_files(one_query)
    path = _run_file(one_query, tmp_path)
    rc, out = _score("--dataset", str(one_query), str(path), "--json", "--against", "Alpha-RR")
    assert rc == 0
    cells = json.loads(out)["against"]["mine"]["Alpha-RR"]["rcp_ndcg"]
    assert (cells["alpha"]["queries"], cells["alpha"]["interval_queries"]) == (1, 1)
    assert cells["beta"]["interval_queries"] == _queries(one_query, "beta")
    assert cells["mean"]["interval_queries"] == 1
    rc, text = _score("--dataset", str(one_query), str(path), "--against", "Alpha-RR")
    rows = [x for x in text.splitlines() if x.startswith("| mine | Alpha-RR |")]
    assert len(rows) == len(METRICS) and all("| n too small (n=1) |" in r for r in rows)
    full = copy_demo(demo_data, tmp_path / "full")
    write_release_files(full)
    rc, text = _score("--dataset", str(full), str(_run_file(full, tmp_path)), "--against",
                      "Alpha-RR")
    rows = [x for x in text.splitlines() if x.startswith("| mine | Alpha-RR |")]
    assert len(rows) == len(METRICS) and all("too small" not in r and "| [" in r for r in rows)
