"""The card's Diagnostics section shows the record's numbers (SYNTHETIC demo release)."""

from __future__ import annotations

from pathlib import Path

from rcp_data.documents.card_text import card_sentence
from rcp_data.documents.diagnostics_files import diagnostics_card, expected_record
from rcp_data.model.card_format import METRIC_TITLES


def _row(text: str, first: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_section_cells_are_the_record(demo_data: Path):
    record = expected_record(demo_data / "release")
    text = card_sentence("diagnostics", diagnostics_card(
        record, metric_titles=METRIC_TITLES, names={"demo/alpha-reranker": "Alpha-RR"}))
    n = record["numbers"]
    rcp = n["label"]["rcp"]
    assert _row(text, "RCP theta")[1:4] == [f"{rcp['concordance']:.3f}", f"{rcp['auc']:.3f}",
                                            f"{rcp['spearman']['rho']:.3f}"]
    alpha = _row(text, "Alpha-RR")
    lo, hi = n["intervals"]["count_ndcg"]["demo/alpha-reranker"]
    mean = n["leaderboards"]["count_ndcg"]["demo/alpha-reranker"]
    assert alpha[3] == f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
    assert _row(text, "Pairs separated (%)")[1] == f"{100 * n['sensitivity']['rcp_ndcg']:.1f}"
    assert text.count("![") == len(record["pictures"]) == 4
