"""Reading rules: which of a judge's answers (windows) enter a fit, for Stage A and Stage B.

One vocabulary for both stages (issue 17, docs/concepts "Stage A"):

- ``complete`` (the default; ViDoRe release 2 and later): a window enters only if it answers
  for every document it shows. Stage A: every shown document has a finite score in [-5, 5]
  and a rank. Stage B: every shown document has every criterion.
- ``hard-fallback`` (paper App. C.2; ViDoRe release 1): as ``complete``, plus a Stage A
  window without any readable score but with a complete ranking (every shown document ranked,
  no two on the same place) enters as hard preferences of weight 1. Stage B answers have no
  ranking to fall back on, so the rule is Stage A's only.

Windows left out are counted by cause: ``unreadable`` (no answer at all: no readable score,
resp. no criterion for any document) and ``partial`` (some answers missing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rcp_data.core.errors import UsageError

COMPLETE = "complete"
HARD_FALLBACK = "hard-fallback"
DEFAULT_RULE = COMPLETE
STAGE_A_RULES = (COMPLETE, HARD_FALLBACK)
STAGE_B_RULES = (COMPLETE,)
RULE_TEXT = {
    COMPLETE: "a window enters only if it answers for every document it shows",
    HARD_FALLBACK: "as complete, plus a window without readable scores but with a complete "
                   "ranking enters as hard preferences of weight 1",
}


def check_rule(name: str, stage: str) -> str:
    """``name`` if it is a reading rule of ``stage`` (``"A"`` or ``"B"``), else a UsageError."""
    rules = STAGE_A_RULES if stage == "A" else STAGE_B_RULES
    if name in rules:
        return name
    if name in STAGE_A_RULES:
        raise UsageError(f"reading rule {name!r} reads Stage A rankings; Stage B verdicts have "
                         f"no ranking to fall back on (rules for Stage B: {', '.join(rules)})")
    raise UsageError(f"unknown reading rule {name!r} for Stage {stage}; "
                     f"choose one of {', '.join(rules)}")


@dataclass(frozen=True)
class ReadingStats:
    """What a reading rule let into a fit and what it left out, by cause."""

    rows_total: int
    rows_used: int
    windows_total: int
    windows_used: int
    missing_by_criterion: dict[str, int] = field(default_factory=dict)  # Stage A: by field
    rule: str = DEFAULT_RULE
    windows_unreadable: int = 0
    windows_partial: int = 0
    windows_fallback: int = 0  # entered as hard preferences (hard-fallback only)

    @property
    def windows_left_out(self) -> int:
        return self.windows_total - self.windows_used

    @property
    def rows_left_out(self) -> int:
        return self.rows_total - self.rows_used

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "rows_total": self.rows_total,
            "rows_used": self.rows_used,
            "rows_left_out": self.rows_left_out,
            "windows_total": self.windows_total,
            "windows_used": self.windows_used,
            "windows_left_out": self.windows_left_out,
            "windows_left_out_by_cause": {"unreadable": self.windows_unreadable,
                                          "partial": self.windows_partial},
            "windows_fallback": self.windows_fallback,
            "missing_answers": dict(self.missing_by_criterion),
        }

    def text(self) -> str:
        fb = f" ({self.windows_fallback:,} as hard preferences)" if self.windows_fallback else ""
        return (f"rule {self.rule}: windows used {self.windows_used:,}{fb}, left out "
                f"{self.windows_left_out:,} (unreadable {self.windows_unreadable:,}, partial "
                f"{self.windows_partial:,})")
