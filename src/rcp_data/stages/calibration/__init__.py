"""Calibration fits: the 2PL of paper Sec. 3.3 / App. C.3 from Stage B verdicts.

- :mod:`verdicts`: the reading rule and per-(query, document) pass counts;
- :mod:`fit`: MAP fit with Stage A Bradley-Terry scores (tau_j, alpha_j per query);
- :mod:`rubric`: rubric-only 2PL marginal maximum likelihood (no tournament scores);
- :mod:`diagnostics`: tau/alpha percentiles, ECE, Yen's Q3, difficulty order;
- :mod:`pipeline`: one run from files to an output folder;
- release N+1 from a refit (new gains, diff report) is :mod:`rcp_data.release.recalibrate`;
- :mod:`simulate`: SYNTHETIC verdicts from known parameters (tests, benchmarks).
"""

from rcp_data.stages.calibration.fit import (
    MapFit,
    MapSettings,
    fit_map,
    fit_map_arrays,
    read_thetas,
)
from rcp_data.stages.calibration.pipeline import (
    Calibration,
    calibrate,
    calibrate_files,
    write_calibration,
)
from rcp_data.stages.calibration.rubric import (
    RubricFit,
    RubricSettings,
    fit_rubric,
    fit_rubric_arrays,
)
from rcp_data.stages.calibration.verdicts import (
    ReadingStats,
    VerdictCounts,
    count_verdicts,
    read_verdicts,
)

__all__ = [
    "Calibration", "MapFit", "MapSettings", "ReadingStats", "RubricFit", "RubricSettings",
    "VerdictCounts", "calibrate", "calibrate_files", "count_verdicts", "fit_map",
    "fit_map_arrays", "fit_rubric", "fit_rubric_arrays", "read_thetas", "read_verdicts",
    "write_calibration",
]
