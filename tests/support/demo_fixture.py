"""The SYNTHETIC demo release, built once per test session.

``demo_data`` holds ``release/`` (the demo's release 1 data) and ``inputs/`` (its builder
inputs). It is shared by every test: never change it, copy it (``copy_demo``) first.
"""

from __future__ import annotations

import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest


@cache
def session_demo_data() -> Path:
    """Build the demo release and its inputs once per test process."""
    from rcp_data.demo.suite import make_demo_release

    root = Path(tempfile.mkdtemp(prefix="rcp-demo-session-"))
    make_demo_release(root / "release", work=root / "inputs")
    return root


@pytest.fixture(scope="session")
def demo_data() -> Path:
    root = session_demo_data()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def demo_release_v1(demo_data) -> Path:
    """The session's demo release 1 folder (read-only by convention)."""
    return demo_data / "release"


def copy_demo(demo_data: Path, out: Path, *, work: Path | None = None) -> Path:
    """A private copy of the session's demo release in ``out`` (and of its builder inputs in
    ``work`` when given)."""
    shutil.copytree(demo_data / "release", out)
    if work is not None:
        shutil.copytree(demo_data / "inputs", work)
    return out


def refit_release_2(v1: Path, v2: Path, spec, previous_revision: str) -> None:
    """Release 2 of a demo release ``v1`` into ``v2``: the same SYNTHETIC answers re-read with
    the `complete` rule and refitted, so its item parameters and thetas are what a refit from
    the release reproduces."""
    from rcp_data.calibration.pipeline import fitted_item_params
    from rcp_data.release.recalibrate import recalibrate_release, refit_from_release

    cal = refit_from_release(v1, spec, stage_a_rule="complete")
    refit = fitted_item_params(cal)
    rules = refit.extra.get("reading_rules")
    recalibrate_release(v1, v2, spec, refit, thetas=cal.thetas,
                        previous_revision=previous_revision, date="2026-11-30",
                        summary="SYNTHETIC recalibration",
                        reading_rules=rules if isinstance(rules, dict) else None)
