"""rcp-data: build, release and verify RCP-nDCG datasets.

The public Python API, flat::

    import rcp_data

    release = rcp_data.open_release("path/to/release")      # or "hf://datasets/OWNER/NAME@REV"
    tables = rcp_data.replay(release)                       # the card's tables, replayed
    mine = rcp_data.score(release, "my_run.trec")           # your own ranking, scored
    print(mine.mean())                                      # its RCP-nDCG@10, a fraction

- :func:`open_release` opens a release directory or a pinned Hub revision once;
- :func:`replay`, :func:`score`, :func:`compare` recompute and compare result tables;
- :func:`verify` checks a release end to end; :func:`judge` and :func:`calibrate` judge a pool
  and fit the calibration, :func:`build` and :func:`publish` make a release and put it on the
  Hub;
- the errors (:class:`RcpDataError` and its kinds) also inherit the matching built-in
  (:class:`InputError` is a ``ValueError``, :class:`NotFoundError` a ``FileNotFoundError``,
  ...), so they can be caught by meaning.

Library calls print nothing: what they find is logged under the ``rcp_data`` logger (which has
a ``NullHandler``: configure logging to see it) and progress bars show only with
``progress=True``. Results are frozen dataclasses; ``to_json()`` is what the CLI's ``--json``
prints. ``import rcp_data`` is cheap: each name is imported when it is first used.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

from rcp_data.core.version import __version__

logging.getLogger(__name__).addHandler(logging.NullHandler())

# public name -> the module that defines it (below this package)
_EXPORTS = {
    "open_release": "model.release",
    "Release": "model.release",
    "replay": "scoring.api",
    "score": "scoring.api",
    "score_qrels": "scoring.qrels_score",
    "agree": "scoring.agreement.analysis",
    "AgreeResult": "scoring.agreement.analysis",
    "compare": "scoring.api",
    "verify": "checks.api",
    "build": "release.api",
    "judge": "release.judge_run",
    "JudgeResult": "release.judge_run",
    "calibrate": "release.calibrate_run",
    "CalibrateResult": "release.calibrate_run",
    "publish": "release.api",
    "ReplayResult": "scoring.replay",
    "ScoreResult": "scoring.score",
    "QrelsScore": "scoring.qrels_score",
    "RunCoverage": "scoring.score",
    "Comparison": "scoring.compare",
    "VerifyReport": "checks.reports",
    "BuildResult": "release.cut",
    "PublishResult": "release.publish",
    "HubClient": "core.hub_client",
    "RcpDataError": "core.errors",
    "InputError": "core.errors",
    "SchemaError": "core.errors",
    "NotFoundError": "core.errors",
    "UsageError": "core.errors",
    "RefusedError": "core.errors",
    "VerificationFailed": "core.errors",
    "HubUnavailable": "core.errors",
    "HubNotFound": "core.errors",
    "BranchMoved": "core.errors",
    "HubConflict": "core.errors",
    "GitUnavailable": "core.errors",
    "EndpointError": "core.errors",
    "OutageError": "core.errors",
}

# _EXPORTS is the one list of public names: __all__ (kept literal for linters) and the
# TYPE_CHECKING block below are checked equal to it by tests/project/test_public_names.py
__all__ = [
    "__version__", "agree", "AgreeResult", "BranchMoved", "build", "BuildResult", "calibrate",
    "CalibrateResult", "compare", "Comparison", "EndpointError", "GitUnavailable", "HubClient",
    "HubConflict", "HubNotFound", "HubUnavailable", "InputError", "judge", "JudgeResult",
    "NotFoundError", "open_release", "OutageError", "publish",
    "PublishResult", "QrelsScore", "RcpDataError", "RefusedError", "Release", "replay",
    "ReplayResult", "RunCoverage", "SchemaError", "score", "score_qrels", "ScoreResult",
    "UsageError", "VerificationFailed", "verify", "VerifyReport",
]

if TYPE_CHECKING:  # for type checkers; at run time each name is imported on first use
    from rcp_data.checks.api import verify
    from rcp_data.checks.reports import VerifyReport
    from rcp_data.core.errors import (
        BranchMoved,
        EndpointError,
        GitUnavailable,
        HubConflict,
        HubNotFound,
        HubUnavailable,
        InputError,
        NotFoundError,
        OutageError,
        RcpDataError,
        RefusedError,
        SchemaError,
        UsageError,
        VerificationFailed,
    )
    from rcp_data.core.hub_client import HubClient
    from rcp_data.model.release import Release, open_release
    from rcp_data.release.api import build, publish
    from rcp_data.release.calibrate_run import CalibrateResult, calibrate
    from rcp_data.release.cut import BuildResult
    from rcp_data.release.judge_run import JudgeResult, judge
    from rcp_data.release.publish import PublishResult
    from rcp_data.scoring.agreement.analysis import AgreeResult, agree
    from rcp_data.scoring.api import compare, replay, score
    from rcp_data.scoring.compare import Comparison
    from rcp_data.scoring.qrels_score import QrelsScore, score_qrels
    from rcp_data.scoring.replay import ReplayResult
    from rcp_data.scoring.score import RunCoverage, ScoreResult


def __getattr__(name: str) -> object:
    """Import a public name on first use (PEP 562), so ``import rcp_data`` loads nothing."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rcp_data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
