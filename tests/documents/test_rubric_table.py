"""The card's rubric table: each criterion's question beside its fitted item parameters."""

from __future__ import annotations

import json
from importlib import resources

from rcp_data.core.gains import ItemParams
from rcp_data.documents.rubric_table import rubric_table

PARAMS = ItemParams(gamma=(1.5, 2.0, 0.8, 1.1, 2.5), beta=(-1.0, -0.25, 0.0, 0.5, 1.25))


def _default_rubric() -> list[dict]:
    path = resources.files("rcp_data.judging").joinpath("templates",
                                                               "rubric_default.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_default_rubric_is_shown_with_its_parameters():
    table = rubric_table(PARAMS, None)          # a release that records no rubric: the default
    assert table.source == "default"
    lines = table.markdown().splitlines()
    assert lines[0] == "| criterion | asks | γ (discrimination) | β (difficulty) |"
    for line, item, g, b in zip(lines[2:], _default_rubric(), PARAMS.gamma, PARAMS.beta,
                                strict=True):
        assert line == (f"| {item['id']} | **{item['name']}**: {item['question']} | "
                        f"{g:.3f} | {b:.3f} |")


def test_a_custom_rubric_is_shown_by_ids_only():
    table = rubric_table(PARAMS, {"rubric_sha256": "0" * 64})
    assert table.source == "custom" and table.sha256 == "0" * 64
    assert [r.name for r in table.rows] == [""] * 5
    assert "| C3 | *not shipped with the release* | 0.800 | 0.000 |" in table.markdown()
