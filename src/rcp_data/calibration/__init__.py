"""Calibration fits: Stage A (Bradley-Terry) and the 2PL of paper Sec. 3 / App. C.2-C.3.

- :mod:`reading`: the reading rules (``complete``, ``hard-fallback``) of both stages;
- :mod:`tournament`: the Stage A answers table, its checks, what a rule lets in;
- :mod:`bt_pairs`, :mod:`lbfgs`, :mod:`bt`: the Stage A Bradley-Terry fit, all queries at once;
- :mod:`verdicts`: Stage B verdicts and per-(query, document) pass counts;
- :mod:`fit`: MAP fit with Stage A Bradley-Terry scores (tau_j, alpha_j per query);
- :mod:`rubric`: rubric-only 2PL marginal maximum likelihood (no tournament scores);
- :mod:`diagnostics`: tau/alpha percentiles, ECE, Yen's Q3, difficulty order;
- :mod:`pipeline`: one run from files to an output folder;
- release N+1 from a refit (new gains, diff report) is :mod:`rcp_data.release.recalibrate`;
- the SYNTHETIC generators (tournaments on the schedule of App. C.2, verdicts from known
  parameters) are the demo's: :mod:`rcp_data.demo.schedule`, :mod:`rcp_data.demo.simulate`.

Names are imported on first use, so that reading tables (``tournament``, ``verdicts``,
``reading``) does not load torch, which only the fits need (the ``calibrate`` extra).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Calibration": "pipeline", "calibrate": "pipeline", "calibrate_files": "pipeline",
    "write_calibration": "pipeline",
    "MapFit": "fit", "MapSettings": "fit", "fit_map": "fit", "fit_map_arrays": "fit",
    "read_thetas": "fit",
    "RubricFit": "rubric", "RubricSettings": "rubric", "fit_rubric": "rubric",
    "fit_rubric_arrays": "rubric",
    "ReadingStats": "reading", "VerdictCounts": "verdicts", "count_verdicts": "verdicts",
    "read_verdicts": "verdicts",
    "BtSettings": "bt_settings", "BT_SETTINGS": "bt_settings", "StageAFit": "bt", "fit_stage_a": "bt",
    "Tournament": "tournament", "load_tournament": "tournament",
    "read_tournament": "tournament",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
