"""One number, one rule: the card's Diagnostics, ``rcp-data agree`` and the recalibrate gate
give the same RCP-theta agreement for one release, counting the same documents (the rule of
:mod:`rcp_data.scoring.agreement.judged`: a document on a query's excluded list is left out),
and every one of them names the rule.

SYNTHETIC demo release (its ``excluded`` tables list judged documents with a theta, so the
rule moves the numbers); the values cross-checked with scipy on the parquet files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rcp_data.core.specs import load_spec
from rcp_data.scoring.agreement.judged import EXCLUSION_RULE, excluded_mask

SUBSETS = ("alpha", "beta")


def _rows(root: Path, *, rule: bool = True) -> pd.DataFrame:
    """The judged qrels rows of every subset, read with pandas (the excluded pairs dropped by
    set membership unless ``rule`` is False); ``q``: one code per (subset, query)."""
    parts = []
    for s in SUBSETS:
        q = pd.read_parquet(root / s / "qrels.parquet").dropna(subset=["theta"])
        ex_file = root / s / "excluded.parquet"
        if rule and ex_file.exists():
            ex = pd.read_parquet(ex_file).explode("excluded-corpus-ids")
            gone = set(zip(ex["query-id"], ex["excluded-corpus-ids"], strict=True))
            q = q[[k not in gone for k in zip(q["query-id"], q["corpus-id"], strict=True)]]
        parts.append(q.assign(q=s + "/" + q["query-id"].astype(str)))
    return pd.concat(parts, ignore_index=True)


def _concordance(rows: pd.DataFrame) -> float:
    """Within-query concordance of theta with the grade: scipy's Mann-Whitney U summed over
    each query's grade pairs, over the pairs compared."""
    wins = pairs = 0.0
    for _, grp in rows.groupby("q"):
        levels = sorted(grp["score"].unique())
        for i, a in enumerate(levels):
            for b in levels[:i]:
                x = grp.loc[grp["score"] == a, "theta"]
                y = grp.loc[grp["score"] == b, "theta"]
                wins += stats.mannwhitneyu(x, y).statistic
                pairs += len(x) * len(y)
    return wins / pairs


@pytest.fixture(scope="module")
def figures(demo_release_v1):
    """The RCP-theta agreement of the demo release as each output computes it."""
    from rcp_data.release.agreement_gate import agreement_gate
    from rcp_data.scoring.agreement.analysis import agree
    from rcp_data.scoring.release_diagnostics import release_diagnostics

    spec = load_spec("demo")
    diag = release_diagnostics(demo_release_v1, spec)
    result = agree(demo_release_v1, resamples=20, draws=10)
    gate = agreement_gate(demo_release_v1, demo_release_v1, spec)
    stored = json.loads((demo_release_v1 / "provenance/diagnostics.json").read_text())
    return diag, result, gate, stored


def test_the_demo_has_an_excluded_judged_document(demo_release_v1):
    """The case the rule decides: without it, the rows and the number differ."""
    kept, every = _rows(demo_release_v1), _rows(demo_release_v1, rule=False)
    assert len(kept) < len(every)
    assert abs(_concordance(kept) - _concordance(every)) > 1e-6


def test_card_agree_and_gate_give_one_number(figures, demo_release_v1):
    diag, result, gate, stored = figures
    rows = _rows(demo_release_v1)
    expected = _concordance(rows)
    card = diag.label["rcp"]
    pooled = result.to_json()["pooled"]
    # card (Diagnostics), agree (all subsets), gate: one value, the rule's documents
    assert card.concordance == pytest.approx(expected, abs=1e-12)
    assert pooled["concordance_rcp_theta_reference"]["value"] == pytest.approx(
        card.concordance, abs=1e-12)
    assert gate.new["rcp"]["concordance"] == card.concordance
    assert stored["numbers"]["label"]["rcp"]["concordance"] == pytest.approx(
        card.concordance, abs=1e-12)                     # what the built release carries
    assert card.documents == len(rows) == pooled["documents_rcp_theta_reference"]
    assert gate.documents == (len(rows), len(rows))
    # the old rule (excluded documents kept) gives another number: this would fail with it
    assert abs(card.concordance - _concordance(_rows(demo_release_v1, rule=False))) > 1e-6
    assert card.spearman.rho == pytest.approx(
        stats.spearmanr(rows["theta"], rows["score"]).statistic, abs=1e-12)
    # agree's per-subset Spearman over the same rows
    for s in SUBSETS:
        part = rows[rows["q"].str.startswith(s + "/")]
        got = result.to_json()["subsets"][s]["labels"]["qrels"]["rcp_theta"]
        assert got["documents"] == len(part)
        assert got["spearman"]["observed"]["value"] == pytest.approx(
            stats.spearmanr(part["theta"], part["score"]).statistic, abs=1e-12)


def test_every_output_names_the_rule(figures, demo_release_v1):
    from rcp_data.documents.card import render_card

    diag, result, gate, _stored = figures
    n = diag.label["rcp"].documents
    assert result.to_json()["exclusion_rule"] == EXCLUSION_RULE
    table = result.table()
    assert EXCLUSION_RULE in table and f"n = {n:,} documents" in table
    assert f"{EXCLUSION_RULE}; n = {n:,} -> {n:,} documents" in gate.text()
    assert gate.to_dict()["label_rule"] == EXCLUSION_RULE
    card = render_card(demo_release_v1)
    label = next(line for line in card.splitlines() if line.startswith("**Label layer**"))
    assert EXCLUSION_RULE in label
    row = next(line for line in card.splitlines() if line.startswith("| RCP theta |"))
    assert f"| {diag.label['rcp'].concordance:.3f} |" in row and f"| {n:,} |" in row


def test_excluded_mask_is_set_membership():
    """The rule's one function against a Python set, ids that look alike included."""
    import pyarrow as pa

    rng = np.random.default_rng(3)
    q = rng.choice(["q1", "q2", "q10", "1"], 400)
    d = rng.choice(["d1", "d2", "d11", "1", "q1"], 400)
    excluded = pa.table({"query-id": ["q1", "q10", "1", "q9"],
                         "excluded-corpus-ids": [["d1", "d11"], ["1"], None, ["d2"]]})
    gone = {("q1", "d1"), ("q1", "d11"), ("q10", "1"), ("q9", "d2")}
    expected = np.array([(a, b) in gone for a, b in zip(q, d, strict=True)])
    assert expected.any()
    assert (excluded_mask(q, d, excluded) == expected).all()
    assert (excluded_mask(q, d, excluded.to_pandas()) == expected).all()
    assert not excluded_mask(q, d, None).any()
