"""A calibration as a library call (``rcp_data.calibrate``; ``rcp-data calibrate`` parses,
calls this and prints): the 2PL fit of a judge's Stage B verdicts against its Stage A scores
(or its raw tournament answers, read under a reading rule and fitted first), written as a
calibration folder (``item_params.json``, ``thetas.parquet``, ``queries.parquet``,
``stage_a_queries.parquet``, ``diagnostics.json``).

Given ``inputs`` (a builder-inputs folder holding a judge run's tables, ``judge/``), the
verdicts and the tournament are read from there and the calibration is written to
``inputs/calibration/``, where ``rcp-data build --inputs`` reads the item parameters and
thetas: the folder goes on to the build as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.building.contract import CALIBRATION_DIR, CRITERIA_FILE, JUDGE_DIR, TOURNAMENT_FILE
from rcp_data.core.errors import UsageError

if TYPE_CHECKING:
    from rcp_data.core.gains import ItemParams

DEFAULT_RULE = "complete"  # the reading rule of rcp_data.calibration.reading's default


@dataclass(frozen=True)
class CalibrateResult:
    """What :func:`calibrate` wrote: the folder, the fit's method (``2pl-map-bt`` or
    ``2pl-mml-rubric``), its item parameters and diagnostics (``diagnostics.json``)."""

    out: Path
    method: str
    params: ItemParams
    diagnostics: dict = field(repr=False)

    def to_json(self) -> dict:
        """The JSON object of ``rcp-data calibrate --json``."""
        return {"out": str(self.out), "method": self.method,
                "item_params": self.params.to_dict(), "diagnostics": self.diagnostics}


def calibrate(criteria: str | Path | None = None, out: str | Path | None = None, *,
              inputs: str | Path | None = None, thetas: str | Path | None = None,
              tournament: str | Path | None = None, rule: str = DEFAULT_RULE,
              rubric_only: bool = False, device: str = "cpu", force: bool = False,
              progress: bool = False) -> CalibrateResult:
    """Fit the 2PL calibration, as ``rcp-data calibrate`` does, and write it to ``out`` (new
    or empty; ``force``: or a calibration folder written earlier).

    ``criteria``: the Stage B verdict table; Stage A is ``thetas`` (finished Bradley-Terry
    scores) or ``tournament`` (the raw answers, fitted first under ``rule``), or neither with
    ``rubric_only``. With ``inputs`` (a judge run's ``--out``), ``criteria`` and
    ``tournament`` default to its ``judge/`` tables and ``out`` to ``inputs/calibration``.
    """
    if inputs is not None:
        judge_dir = Path(inputs) / JUDGE_DIR
        criteria = criteria if criteria is not None else judge_dir / CRITERIA_FILE
        if thetas is None and tournament is None and not rubric_only:
            tournament = judge_dir / TOURNAMENT_FILE
        out = out if out is not None else Path(inputs) / CALIBRATION_DIR
    if criteria is None or out is None:
        raise UsageError("give the verdict table (--criteria) and --out, or --inputs")
    if thetas is None and tournament is None and not rubric_only:
        raise UsageError("--thetas is required for the MAP fit (or --tournament to fit Stage A "
                         "from the raw answers, or --rubric-only)")
    from rcp_data.calibration.pipeline import calibrate_files
    from rcp_data.core.outputs import CALIBRATION, check_output_dir

    criteria, out = Path(criteria), Path(out)
    # before the fit: a refused --out costs nothing
    check_output_dir(out, CALIBRATION, force=force,
                     inputs={"--criteria": criteria, "--thetas": thetas,
                             "--tournament": tournament})
    cal = calibrate_files(criteria, thetas, out, rubric_only=rubric_only, device=device,
                          progress=progress, force=force, tournament=tournament, rule=rule)
    return CalibrateResult(out, cal.method, cal.params, cal.diagnostics)


__all__ = ["CalibrateResult", "calibrate"]
