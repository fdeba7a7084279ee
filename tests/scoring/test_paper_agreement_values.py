"""``provenance/paper_values.json``'s agreement entries equal the paper's text
(``../shared/reference/paper-rcp-ndcg.txt``): each quote is the paper's, holds the printed
value, and the value is the printed number."""

from __future__ import annotations

import json
import re

import pytest

from rcp_data import resources


def _norm(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def paper(reference_dir) -> str:
    path = reference_dir / "paper-rcp-ndcg.txt"
    if not path.exists():
        pytest.skip(f"needs {path}")
    return _norm(path.read_text(encoding="utf-8"))


def _entries() -> list[dict]:
    raw = json.loads((resources.provenance_dir() / "paper_values.json").read_text())
    return raw["agreement"]["entries"]


def test_every_section_the_issue_names_is_there():
    entries = _entries()
    assert {e["section"] for e in entries} == {"E.4", "C.6", "Table 20", "G.1", "H.1"}
    table20 = [e for e in entries if e["section"] == "Table 20"]
    assert len(table20) == 7 * 4                       # 7 rows x (2 years x 2 panels)
    exp = {(e["subset"], e["statistic"]): e["value"] for e in table20
           if e["statistic"].startswith("separated_qrel_exp")}
    assert exp == {("dl19", "separated_qrel_exp:pool"): 18,
                   ("dl19", "separated_qrel_exp:top-150"): 14,
                   ("dl20", "separated_qrel_exp:pool"): 36,
                   ("dl20", "separated_qrel_exp:top-150"): 35}
    keys = [(e["section"], e["suite"], e["subset"], e["statistic"]) for e in entries]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("entry", _entries(),
                         ids=lambda e: f"{e['section']}-{e['suite']}-{e['subset']}-"
                                       f"{e['statistic']}")
def test_entry_is_the_papers_text(entry, paper):
    quote = _norm(entry["quote"])
    assert quote in paper, f"quote not in the paper: {quote!r}"
    printed = entry["printed"]
    assert re.search(rf"(?<![\d.]){re.escape(printed)}(?![\d])", quote), printed
    if "/" in printed:
        assert entry["value"] == printed
    else:
        assert entry["value"] == float(printed)
    if entry.get("recomputable", True) is False:
        assert entry.get("note"), "say why it cannot be recomputed"


def test_table_20_rows_in_column_order(paper):
    # the row quote lists DL19 pool, DL19 top-150, DL20 pool, DL20 top-150 in that order
    by_row: dict[str, list] = {}
    for e in _entries():
        if e["section"] == "Table 20":
            by_row.setdefault(e["quote"], []).append((e["subset"], e["statistic"].split(":")[1],
                                                      e["printed"]))
    for quote, cells in by_row.items():
        assert [c[:2] for c in cells] == [("dl19", "pool"), ("dl19", "top-150"),
                                          ("dl20", "pool"), ("dl20", "top-150")]
        assert quote.split("\t")[1:] == [c[2] for c in cells]
