"""Data the package carries: suite specs, release histories, the paper's values.

The folders here are links to the checkout's top-level ``builders/``, ``release/`` and
``provenance/`` (their single source of truth); a wheel carries their files. Nothing ever
writes here: a publish records a release only where the user says (``--record-to``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_FOLDERS = {"builders": "builders", "release_history": "release_history",
            "provenance": "provenance"}


def packaged_dir(name: str) -> Path:
    """The packaged folder ``name`` (builders, release_history or provenance)."""
    return Path(str(resources.files(__name__).joinpath(_FOLDERS[name])))


def builders_dir() -> Path:
    """The suite specs (``builders/*.toml``)."""
    return packaged_dir("builders")


def release_history_dir() -> Path:
    """The project's release histories (``release/<suite>.json``), read-only."""
    return packaged_dir("release_history")


def provenance_dir() -> Path:
    """The paper's values and known deviations (``provenance/*.json``)."""
    return packaged_dir("provenance")


__all__ = ["builders_dir", "packaged_dir", "provenance_dir", "release_history_dir"]
