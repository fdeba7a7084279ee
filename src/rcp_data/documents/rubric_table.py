"""The card's rubric table: what each criterion C1..Cn asks, beside its fitted item parameters.

The questions are the rubric the judge was asked with: the build manifest records its sha256
(``parameters.judging.rubric_sha256``); when that is the project's default rubric (or a release
records none, as the SYNTHETIC demo), the default rubric's words are shown; a custom rubric the
release does not ship is shown by its ids and sha256 only.
"""

from __future__ import annotations

from dataclasses import dataclass

from rcp_data.core.gains import ItemParams
from rcp_data.judging.prompts import load_rubric


@dataclass(frozen=True)
class RubricRow:
    """One criterion: id, name and question (empty when unknown), discrimination, difficulty."""

    id: str
    name: str
    question: str
    gamma: float
    beta: float


@dataclass(frozen=True)
class RubricTable:
    rows: tuple[RubricRow, ...]
    source: str             # "default" (the project's rubric) or "custom"
    sha256: str | None      # the recorded rubric sha256, when the manifest has one

    def markdown(self) -> str:
        """``| criterion | asks | γ | β |`` (γ, β to three decimals): the template's
        ``rubric_table`` macro."""
        from rcp_data.documents.card_text import card_sentence

        return card_sentence("rubric_table", self)


def rubric_table(params: ItemParams, judging: dict | None) -> RubricTable:
    """The rubric rows of a release: its item parameters and, where known, the questions."""
    default = load_rubric()
    recorded = (judging or {}).get("rubric_sha256")
    known = recorded in (None, default.sha256) and len(default.criteria) == params.n_criteria
    words = {c.id: c for c in default.criteria} if known else {}
    rows = []
    for cid, g, b in zip(params.criteria, params.gamma, params.beta, strict=True):
        c = words.get(cid)
        rows.append(RubricRow(cid, c.name if c else "", c.question if c else "", float(g),
                              float(b)))
    return RubricTable(tuple(rows), "default" if known else "custom", recorded)


__all__ = ["RubricRow", "RubricTable", "rubric_table"]
