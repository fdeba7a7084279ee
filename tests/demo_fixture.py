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
