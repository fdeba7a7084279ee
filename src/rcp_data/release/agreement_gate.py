"""The acceptance gate of a new judge (or a new calibration): does release N+1 agree with the
release's human labels (the qrels grades) as well as release N did?

For each score of the label layer (:func:`rcp_data.scoring.release_diagnostics.label_layer`:
RCP theta, raw BT, Count; the rows of the one exclusion rule of every agreement figure, named in
the report with the documents counted) the gate puts the old and new release's within-query concordance, AUC
at the suite's positive grade and pooled Spearman side by side. The new release *agrees less*
when a measure of its RCP theta (the score the new gains come from) is lower than the old one's
by more than :data:`TOLERANCE`; the report then carries a WARNING line and ``agrees_less`` in
its JSON, before anyone publishes the release.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rcp_data.core.specs import SuiteSpec

TOLERANCE = 1e-9
GATED_SCORE = "rcp"


@dataclass(frozen=True)
class AgreementGate:
    """Old and new release's agreement numbers: ``{score: {measure: value}}`` each."""

    old: dict[str, dict[str, float | None]]
    new: dict[str, dict[str, float | None]]
    worse: tuple[str, ...]                  # gated measures that fell, e.g. ("concordance",)
    #: the documents RCP theta's numbers count in the old and new release (the exclusion
    #: rule's, :data:`rcp_data.scoring.release_diagnostics.LABEL_RULE`)
    documents: tuple[int | None, int | None] = (None, None)

    @property
    def agrees_less(self) -> bool:
        return bool(self.worse)

    def warning(self) -> str | None:
        if not self.worse:
            return None
        moves = ", ".join(f"{m} {self.old[GATED_SCORE][m]:.3f} -> {self.new[GATED_SCORE][m]:.3f}"
                          for m in self.worse)
        return (f"WARNING: the new release agrees less with the human labels than the previous "
                f"one (RCP theta: {moves}); check it before publishing")

    def to_dict(self) -> dict:
        from rcp_data.scoring.release_diagnostics import LABEL_RULE

        return {"old": self.old, "new": self.new, "gated_score": GATED_SCORE,
                "label_rule": LABEL_RULE,
                "documents": {"old": self.documents[0], "new": self.documents[1]},
                "worse": list(self.worse), "agrees_less": self.agrees_less,
                "warning": self.warning()}

    def text(self) -> str:
        from rcp_data.scoring.release_diagnostics import GATE_MEASURES, LABEL_RULE, SCORE_LABELS

        old, new = (_n(d) for d in self.documents)
        lines = [f"agreement with the human labels (qrels grades; {LABEL_RULE}; n = {old} -> "
                 f"{new} documents), previous -> new release:"]
        for score in [s for s in SCORE_LABELS if s in self.old or s in self.new]:
            for key, name in GATE_MEASURES:
                a = self.old.get(score, {}).get(key)
                b = self.new.get(score, {}).get(key)
                lines.append(f"  {SCORE_LABELS[score]:<10} {name:<12} {_f(a):>7} {_f(b):>7}")
        warn = self.warning()
        if warn:
            lines.append(warn)
        return "\n".join(lines)


def _n(v: int | None) -> str:
    return "–" if v is None else f"{v:,}"


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def agreement_gate(old: Path, new: Path, spec: SuiteSpec) -> AgreementGate:
    """Compare the label-layer agreement of release ``new`` with that of ``old``."""
    from rcp_data.scoring.release_diagnostics import GATE_MEASURES, label_layer, measure_values

    la, lb = label_layer(Path(old), spec), label_layer(Path(new), spec)
    a = {s: measure_values(v) for s, v in la.items()}
    b = {s: measure_values(v) for s, v in lb.items()}
    worse = tuple(key for key, _ in GATE_MEASURES
                  if a.get(GATED_SCORE, {}).get(key) is not None
                  and b.get(GATED_SCORE, {}).get(key) is not None
                  and b[GATED_SCORE][key] < a[GATED_SCORE][key] - TOLERANCE)
    documents = tuple(x[GATED_SCORE].documents if GATED_SCORE in x else None for x in (la, lb))
    return AgreementGate(old=a, new=b, worse=worse, documents=documents)


__all__ = ["AgreementGate", "TOLERANCE", "agreement_gate"]
