"""The card's result tables (model/card_format.py): a model name cannot split or add a row, and
the parser reads an escaped cell back as the name (issue 28: row injection). The suite spec is
the packaged demo's; the scores are SYNTHETIC."""

from __future__ import annotations

import pandas as pd
import pytest

from rcp_data.core.specs import load_spec
from rcp_data.model.card_format import escape_cell, parse_card_tables, render_markdown_table


@pytest.mark.parametrize(("text", "markdown", "want"), [
    ("plain/model-7b", True, "plain/model-7b"),
    ("a | b", True, "a \\| b"),
    ("two\nlines", True, "two\\nlines"),
    ("tab\there\r", False, "tab\\there\\r"),
    ("esc\x1b[0m\x7f\x85", False, "esc\\x1b[0m\\x7f\\x85"),
    ("a | b", False, "a | b"),
])
def test_escape_cell(text, markdown, want):
    assert escape_cell(text, markdown=markdown) == want


def test_a_hostile_model_name_stays_one_row_and_reads_back():
    spec = load_spec("demo")
    names = ["x/evil | 99.9 | 99.9 | 99.9 |\n| x/injected", "demo/alpha-reranker"]
    table = pd.DataFrame({"alpha": [0.5, 0.25], "beta": [0.75, 0.125], "mean": [0.625, 0.1875]},
                         index=names)
    text = render_markdown_table(table, spec, title="RCP-nDCG@10 (%), rule (a): document-id "
                                 "tie-break", first_header="Run")
    lines = text.splitlines()
    assert len(lines) == 2 + 2 + len(names)              # title, blank, header, rule, a row each
    assert all(line.count("|") - line.count("\\|") == 5 for line in lines[2:])
    (parsed,) = parse_card_tables(text)
    assert [r[0] for r in parsed.rows] == [
        "x/evil | 99.9 | 99.9 | 99.9 |\\n| x/injected", spec.short_name("demo/alpha-reranker")]
    assert [r[1] for r in parsed.rows] == [[50.0, 75.0, 62.5], [25.0, 12.5, 18.8]]
